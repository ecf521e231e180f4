//! Scenario files: the simulated machine, the emulated OS's timing, the PEP's configuration,
//! the load over time and the events to inject, read from TOML and validated.
//!
//! The schema (unknown keys are errors; times are integer milliseconds from the moment the
//! runtime starts, after every processor was started):
//!
//! ```toml
//! name = "turbo-burst"                 # required
//! description = "…"                    # optional
//! [platform]
//! processors = 8                       # required, 1..=2048, 64 per processor group
//! cpu = "intel-hwp"                    # intel-hwp (default) | amd-cppc | intel-legacy
//! counter_source = "aperf-mperf"       # aperf-mperf (default) | none | aperf-mperf-zeros
//!                                      # | aperf-mperf-faulting | fixed-pmc (Intel only:
//!                                      # no APERF/MPERF; CPUID.0AH announces PMU version 4,
//!                                      # 8 general and 3 fixed counters)
//! pmu = true                           # Intel: CPUID.0AH announces the architectural PMU
//!                                      # (default on Intel unless counter_source = none;
//!                                      # false: a hypervisor hides it)
//! pmc_width = 48                       # with the PMU: fixed-counter width, 32..=64
//! pmu_busy = false                     # with the PMU: another owner holds it, so
//!                                      # HalAllocateHardwareCounters refuses the reservation
//! nominal_mhz = 2000                   # required: MPERF's rate in C0 (Intel: a multiple of 100)
//! hypervisor = false                   # CPUID.1:ECX[31]
//! hwp_enabled = true                   # intel-hwp: IA32_PM_ENABLE bit 0
//! device_id_style = "sb-cpu"           # sb-cpu | pr-cpu (≤ 16) | sb-pr (≤ 256) | sb-p | pr-p
//!                                      # | sb-c | sb-pltf | sb-cpus | sb-sck (≤ 1024);
//!                                      # default sb-cpu up to 16 processors, sb-c above
//! other_devices = ["\\_SB.PCI0"]       # replaces the CPU flavour's non-processor devices
//! [platform.perf]                      # hardware perf levels (HWP_CAPABILITIES, CPPC_CAP1,
//! highest = 40                         # ratios), each 0..=255; default derived from
//! nominal = 20                         # nominal_mhz and the fastest phase
//! lowest_nonlinear = 8
//! lowest = 4
//! [pofx]
//! duration_ms = 1000                   # required
//! sample_interval_ms = 15              # default 15
//! threads = "single"                   # single (default) | per-processor: one OS thread per
//!                                      # processor (at most 64, then each of 64 workers owns
//!                                      # a fixed set) reads concurrently while another thread
//!                                      # registers and unregisters devices
//! nested_notifications = false         # true: wherever interrupts are not masked during a
//!                                      # FEEDBACK_READ, a nested FEEDBACK_READ (same handle,
//!                                      # another processor's handle), QUERY_CAPABILITIES and
//!                                      # PERF_CHECK_COMPLETE arrive on the same processor
//! [config]                             # the PEP's configuration (registry values)
//! feedback_counters = "enabled"        # enabled | disabled
//! counter_source = "auto"              # auto | aperf-mperf | fixed-pmc | prefer-fixed-pmc
//!                                      # | none
//! pmu_reservation = "exclusive-pmu"    # exclusive-pmu | all-counter-indexes (PmuReservation)
//! performance_counter_view = false
//! nominal_mhz = 2000                   # override
//! perf_capabilities = { highest = 40, nominal = 20, lowest_nonlinear = 8, lowest = 4 }
//! device_id_patterns = ["\\_SB.CPU#"]
//! transition_latency_100ns = 0
//! [registry]                           # raw Parameters values (see `boot`): integer =
//! SkipRegistration = 1                 # REG_DWORD, string = REG_SZ, list = REG_MULTI_SZ,
//!                                      # { type = "REG_…", bytes = […] } = raw
//! [install]                            # the DriverEntry of a fresh install, mid-session:
//! pending = true                       # a volatile Parameters\InstallPending key exists
//! [[fault]]                            # one kernel service fails in DriverEntry (see `boot`)
//! step = "register-plugin"
//! status = "STATUS_INVALID_PEP_INFO_VERSION"
//! [[phase]]                            # piecewise-constant load
//! start_ms = 0
//! end_ms = 500                         # optional: until the end of the run
//! processors = "all"                   # or a list of indexes
//! frequency_mhz = 3200                 # delivered frequency in C0
//! busy_percent = 100                   # C0 residency, 0..=100
//! [[event]]
//! at_ms = 500
//! kind = "counter-reset"               # counter-reset | counter-near-wrap | msr-fault
//!                                      # | wrong-processor-read | pmu-reprogrammed
//!                                      # | counters-zero | hot-add | hot-remove | sleep
//! processors = [2]                     # or "all" (hot-add, hot-remove: a list; sleep: "all"
//!                                      # or left out)
//! duration_ms = 100                    # msr-fault, counters-zero (default: until the end);
//!                                      # pmu-reprogrammed: how long the counters stay
//!                                      # disabled (default 0);
//!                                      # sleep (required, >= 10): until the resume, at least
//!                                      # one sample interval before the run ends
//! state = "s3"                         # sleep only, required: s3 (PowerSystemSleeping3) | s4
//!                                      # (PowerSystemHibernate)
//! values = [0, 0]                      # pmu-reprogrammed only: written to IA32_FIXED_CTR1/2
//! on_processor = 3                     # wrong-processor-read only (default: the next one)
//! ```
//!
//! Where phases overlap, the one that started last wins (the later one in the file on a tie);
//! a processor no phase covers is idle (busy 0 %) at the nominal frequency. Events take effect
//! after the reads the emulated OS makes at the same instant (1 ns later on the processor's
//! clock).
//!
//! Lifecycle events ([`EventKind`] documents each kind):
//! - `counters-zero`: from `at_ms` on (for `duration_ms`, default: for good) the processors'
//!   counters read 0 (a hypervisor that stops exposing them after initialisation). The reads
//!   stay served and their totals stop growing; the checks expect no counts for that time and
//!   account no true activity for it (nothing can be measured), rather than expecting a PEP
//!   to guess; when the counters come back, that interval may be lost, never be a spike.
//!   Only where the platform has APERF/MPERF.
//! - `hot-add` / `hot-remove`: a processor whose first such event is a `hot-add` is not offered
//!   at boot; they alternate per processor (added only while absent, removed only while
//!   present); some processor is present at every moment; a hot-added processor is read at
//!   least once before it leaves; an explicit `on_processor` must be present when its read
//!   happens (by default the next present processor is used).
//! - `sleep`: nothing else may happen while the system sleeps (an event at the sleep's own
//!   `at_ms` must come earlier in the file); a `counter-near-wrap` overflows no later than
//!   the first sleep.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::RangeInclusive;

use ppm_engine::abi::{PowerSystemHibernate, PowerSystemSleeping3, SYSTEM_POWER_STATE};
use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy, MAX_NOMINAL_MHZ};
use ppm_engine::device_id::{DeviceIdPatterns, MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS};
use ppm_engine::driver::registry::{MAX_PERFORMANCE_LEVEL, MAX_TRANSITION_LATENCY_100NS};
use ppm_engine::perf::PerfCapabilities;
use ppm_engine::pmc::ReservationPolicy;
use toml::{Table, Value};

pub mod boot;
pub mod timeline;
pub use boot::{BootFault, BootSpec, RegistryValue};
use timeline::{NS_PER_MS, Timeline};

/// The most processors a scenario may simulate (32 groups of 64).
pub const MAX_PROCESSORS: u32 = 2048;
/// Processors per processor group (`group = index / 64`, `number = index % 64`).
pub const PROCESSORS_PER_GROUP: u32 = 64;
/// The fastest frequency a phase may set, in MHz.
pub const MAX_FREQUENCY_MHZ: u32 = 10_000;
/// The longest run, in milliseconds (one hour of simulated time).
pub const MAX_DURATION_MS: u32 = 3_600_000;
/// The most counter reads a run may make (processors × samples), to bound its time (memory no
/// longer grows with reads: they are digested as they are made).
pub const MAX_READS: u64 = 50_000_000;
/// The longest `smi`, in microseconds (real ones take tens to hundreds).
pub const MAX_SMI_US: u32 = 100_000;
/// The longest `[platform] msr_read_ns`: 20 µs.
///
/// That is a hypervisor that exits to a user-mode VMM to emulate the MSR. The checks take a pair's nominal read as the instant of an interval's
/// bounds; far slower reads would move the truth, not test the PEP (every built-in scenario
/// passes at this bound).
pub const MAX_MSR_READ_NS: u32 = 20_000;
/// `msr_read_ns = "bare-metal"` (the default): an `RDMSR` of about 200 cycles at 2–3 GHz.
pub const BARE_METAL_MSR_READ_NS: u32 = 100;
/// `msr_read_ns = "hypervisor"`: an `RDMSR` the hypervisor intercepts (a VM exit and entry).
pub const HYPERVISOR_MSR_READ_NS: u32 = 1_500;
/// The shortest `sleep`, in milliseconds.
pub const MIN_SLEEP_MS: u32 = 10;
/// The default `pofx.sample_interval_ms`.
pub const DEFAULT_SAMPLE_INTERVAL_MS: u32 = 15;
/// The Intel bus clock: Intel ratios are multiples of it.
pub const INTEL_BUS_MHZ: u32 = 100;
/// The narrowest `platform.pmc_width`.
pub const MIN_PMC_WIDTH: u32 = 32;
/// The widest `platform.pmc_width`.
pub const MAX_PMC_WIDTH: u32 = 64;
/// The default `platform.pmc_width` (the fixed counters' width, `CPUID.0AH:EDX[12:5]`).
pub const DEFAULT_PMC_WIDTH: u32 = 48;

/// A validated scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// `[platform]`.
    pub platform: PlatformSpec,
    /// `[pofx]`.
    pub pofx: PofxSpec,
    /// `[config]`.
    pub config: ConfigSpec,
    /// `[[phase]]`, in file order.
    pub phases: Vec<Phase>,
    /// `[[event]]`, in file order.
    pub events: Vec<Event>,
    /// `[registry]` (with `[config]`'s values) and `[[fault]]`: how `DriverEntry` boots.
    pub boot: BootSpec,
}

/// The simulated processor family: what CPUID announces and which MSRs exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuKind {
    /// GenuineIntel family 6 (Tiger Lake-like): APERF/MPERF, turbo, HWP, CPUID leaf 16h,
    /// `MSR_PLATFORM_INFO` and `MSR_TURBO_RATIO_LIMIT`.
    IntelHwp,
    /// AuthenticAMD family 19h (Zen 3-like): APERF/MPERF and their read-only copies
    /// (`8000_0007h` `EDX[10]`), MSR-based CPPC (`8000_0008h` `EBX[27]`).
    AmdCppc,
    /// GenuineIntel family 6 (Haswell-like): APERF/MPERF, turbo, no HWP, no leaf 16h;
    /// `MSR_PLATFORM_INFO` and `MSR_TURBO_RATIO_LIMIT`.
    IntelLegacy,
    /// An ARM64 (AArch64) SoC: no CPUID, no MSRs; the Activity Monitors (`counter_source =
    /// "amu"`) or nothing (`"none"`), the generic timer at `cntfrq_hz`.
    Arm64,
}

impl CpuKind {
    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::IntelHwp => "intel-hwp",
            Self::AmdCppc => "amd-cppc",
            Self::IntelLegacy => "intel-legacy",
            Self::Arm64 => "arm64",
        }
    }

    /// Whether the vendor is Intel.
    #[must_use]
    pub const fn is_intel(self) -> bool {
        matches!(self, Self::IntelHwp | Self::IntelLegacy)
    }

    /// Whether the CPU is ARM64.
    #[must_use]
    pub const fn is_arm64(self) -> bool {
        matches!(self, Self::Arm64)
    }
}

/// What the hardware's activity counters do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterSourceKind {
    /// APERF/MPERF announced by CPUID and counting.
    AperfMperf,
    /// No counters: `CPUID.06H:ECX[0]` clear and the MSRs fault.
    None,
    /// Announced, but every read returns 0 (a hypervisor exposing zeros).
    AperfMperfZeros,
    /// Announced, but every read faults (a hypervisor that raises #GP).
    AperfMperfFaulting,
    /// No APERF/MPERF (`CPUID.06H:ECX[0]` clear); the architectural fixed counters
    /// `IA32_FIXED_CTR1`/`IA32_FIXED_CTR2` of `pmc_width` bits, counting only while enabled
    /// (Intel only).
    FixedPmc,
    /// ARM64's Activity Monitors: `ID_AA64PFR0_EL1.AMU` = 1, four group-0 counters; counter 0
    /// counts processor cycles, counter 1 constant-frequency cycles at `cntfrq_hz`, in the
    /// active state (ARM64 only).
    Amu,
}

impl CounterSourceKind {
    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::AperfMperf => "aperf-mperf",
            Self::None => "none",
            Self::AperfMperfZeros => "aperf-mperf-zeros",
            Self::AperfMperfFaulting => "aperf-mperf-faulting",
            Self::FixedPmc => "fixed-pmc",
            Self::Amu => "amu",
        }
    }

    /// Whether CPUID announces APERF/MPERF.
    #[must_use]
    pub const fn announced(self) -> bool {
        matches!(self, Self::AperfMperf | Self::AperfMperfZeros | Self::AperfMperfFaulting)
    }

    /// Whether the counters can be used: announced, readable and advancing (the fixed
    /// counters once reserved and enabled).
    #[must_use]
    pub const fn usable(self) -> bool {
        matches!(self, Self::AperfMperf | Self::FixedPmc | Self::Amu)
    }
}

/// How the processor device ids PoFx offers are spelled.
///
/// Every segment of an ACPI path is a four-character `NameSeg`, so each style names a bounded
/// number of processors: `\_SB.CPUF` is the 16th `CPU#` processor and there is no
/// `\_SB.CPU10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceIdStyle {
    /// `\_SB.CPU0` … `\_SB.CPUF` (one hexadecimal digit: at most 16 processors).
    SbCpu,
    /// `\_PR.CPU0` … `\_PR.CPUF` (ACPI 1.0 processor scope, at most 16 processors).
    PrCpu,
    /// `\_SB.PR00`, … (two hexadecimal digits: at most 256 processors).
    SbPr,
    /// `\_SB.P000`, … (three hexadecimal digits, as AMD firmware numbers them).
    SbP,
    /// `\_PR.P000`, … `\_PR.P00A`, … (AMD's ACPI 1.0 processor objects, hexadecimal).
    PrP,
    /// `\_SB.C000`, … (AMD style, three hexadecimal digits).
    SbC,
    /// `\_SB.SCK0.CP00`, … (socket = processor group of 64, one hexadecimal socket digit: at
    /// most 16 sockets, 1024 processors).
    SbSocket,
    /// `\_SB.PLTF.C000`, … (AMD's platform container, three hexadecimal digits).
    SbPltf,
    /// `\_SB.CPUS.C000`, … (QEMU's processor container, three hexadecimal digits).
    SbCpus,
}

impl DeviceIdStyle {
    const CHOICES: [(&'static str, Self); 9] = [
        ("sb-cpu", Self::SbCpu),
        ("pr-cpu", Self::PrCpu),
        ("sb-pr", Self::SbPr),
        ("sb-p", Self::SbP),
        ("sb-c", Self::SbC),
        ("sb-sck", Self::SbSocket),
        ("pr-p", Self::PrP),
        ("sb-pltf", Self::SbPltf),
        ("sb-cpus", Self::SbCpus),
    ];

    /// The name used in scenario files.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::CHOICES.iter().find(|(_, style)| *style == self).map_or("?", |(name, _)| name)
    }

    /// The most processors the style can name.
    #[must_use]
    pub const fn capacity(self) -> u32 {
        match self {
            Self::SbCpu | Self::PrCpu => 16,
            Self::SbPr => 256,
            Self::SbSocket => 16 * PROCESSORS_PER_GROUP,
            Self::SbP | Self::PrP | Self::SbC | Self::SbPltf | Self::SbCpus => MAX_PROCESSORS,
        }
    }

    /// The device id of processor `index`.
    #[must_use]
    pub fn device_id(self, index: u32) -> String {
        match self {
            Self::SbCpu => format!("\\_SB.CPU{index:X}"),
            Self::PrCpu => format!("\\_PR.CPU{index:X}"),
            Self::SbPr => format!("\\_SB.PR{index:02X}"),
            Self::SbP => format!("\\_SB.P{index:03X}"),
            Self::SbC => format!("\\_SB.C{index:03X}"),
            Self::PrP => format!("\\_PR.P{index:03X}"),
            Self::SbPltf => format!("\\_SB.PLTF.C{index:03X}"),
            Self::SbCpus => format!("\\_SB.CPUS.C{index:03X}"),
            Self::SbSocket => format!(
                "\\_SB.SCK{:X}.CP{:02X}",
                index / PROCESSORS_PER_GROUP,
                index % PROCESSORS_PER_GROUP
            ),
        }
    }
}

/// The hardware's perf levels, as the CPU flavour's MSRs encode them (8-bit fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HardwarePerf {
    /// Highest (turbo) performance.
    pub highest: u8,
    /// Nominal (guaranteed) performance.
    pub nominal: u8,
    /// Lowest nonlinear (most efficient) performance.
    pub lowest_nonlinear: u8,
    /// Lowest performance.
    pub lowest: u8,
}

/// `[platform]`: the simulated machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformSpec {
    /// `processors`.
    pub processors: u32,
    /// `cpu`.
    pub cpu: CpuKind,
    /// `counter_source`.
    pub counter_source: CounterSourceKind,
    /// `nominal_mhz`: MPERF's rate in C0.
    pub nominal_mhz: u32,
    /// `hypervisor`: `CPUID.1:ECX[31]`.
    pub hypervisor: bool,
    /// `hwp_enabled`: `IA32_PM_ENABLE` bit 0 (intel-hwp only).
    pub hwp_enabled: bool,
    /// `device_id_style`.
    pub device_id_style: DeviceIdStyle,
    /// `other_devices`: the non-processor device ids, replacing the flavour's defaults.
    pub other_devices: Option<Vec<String>>,
    /// `[platform.perf]`, or derived from the nominal rate and the fastest phase.
    pub perf: HardwarePerf,
    /// `pmc_width`: the fixed counters' width (`Some` exactly with `counter_source = "fixed-pmc"`).
    pub pmc_width: Option<u32>,
    /// `pmu_busy`: another owner holds the PMU; the HAL refuses a reservation.
    pub pmu_busy: bool,
    /// `msr_read_ns`: how long one `RDMSR` (on ARM64 one `MRS`) takes on the processor.
    pub msr_read_ns: u32,
    /// ARM64: the generic timer and the Activity Monitors.
    pub arm: Option<ArmSpec>,
}

/// `[platform]` of an ARM64 SoC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArmSpec {
    /// `cntfrq_hz`: the system counter's frequency (`CNTFRQ_EL0`), the constant-frequency
    /// counter's rate.
    pub cntfrq_hz: u32,
    /// `amu_enabled`: firmware enabled group-0 counters 0 and 1 (`AMCNTENSET0_EL0`).
    pub amu_enabled: bool,
}

/// The default `cntfrq_hz`: 19.2 MHz, as on Qualcomm SoCs.
pub const DEFAULT_CNTFRQ_HZ: u32 = 19_200_000;

/// `[pofx]`: the emulated OS's timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PofxSpec {
    /// `duration_ms`: how long the runtime runs.
    pub duration_ms: u32,
    /// `sample_interval_ms`: how often every processor's counters are read.
    pub sample_interval_ms: u32,
    /// `threads`: how the runtime is spread over OS threads.
    pub threads: ThreadMode,
    /// `nested_notifications`: a `FEEDBACK_READ` is interrupted, wherever interrupts are not
    /// masked, by nested notifications on the same processor.
    pub nested_notifications: bool,
}

/// The most OS threads a `threads = "per-processor"` runtime uses for the processors (beyond
/// that, each worker owns a fixed set of processors).
pub const MAX_PROCESSOR_THREADS: u32 = 64;

/// `[pofx] threads`: how the emulated OS runs the runtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThreadMode {
    /// `single`: one thread makes every call, in time order.
    #[default]
    Single,
    /// `per-processor`: one OS thread per simulated processor (at most
    /// [`MAX_PROCESSOR_THREADS`]; beyond that worker `w` owns the processors `i` with
    /// `i % MAX_PROCESSOR_THREADS == w`) reads concurrently, while another thread registers
    /// and unregisters devices. Every processor's calls stay on its one thread.
    PerProcessor,
}

impl ThreadMode {
    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::PerProcessor => "per-processor",
        }
    }

    /// How many processor threads a run of `processors` processors uses (0: the single
    /// thread does everything).
    #[must_use]
    pub fn processor_threads(self, processors: u32) -> u32 {
        match self {
            Self::Single => 0,
            Self::PerProcessor => processors.min(MAX_PROCESSOR_THREADS),
        }
    }
}

/// `[config]`: the PEP's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigSpec {
    /// `feedback_counters`.
    pub feedback_counters: FeedbackCounterPolicy,
    /// `counter_source`.
    pub counter_source: CounterSourcePreference,
    /// `performance_counter_view`.
    pub performance_counter_view: bool,
    /// `nominal_mhz`.
    pub nominal_mhz: Option<u32>,
    /// `perf_capabilities`.
    pub perf_capabilities: Option<PerfCapabilities>,
    /// `device_id_patterns` (`None`: the engine's defaults).
    pub device_id_patterns: Option<Vec<String>>,
    /// `transition_latency_100ns`.
    pub transition_latency_100ns: u32,
    /// `pmu_reservation`: how the driver reserves the PMU for the fixed counters.
    pub pmu_reservation: ReservationPolicy,
}

impl Default for ConfigSpec {
    fn default() -> Self {
        Self {
            feedback_counters: FeedbackCounterPolicy::Enabled,
            counter_source: CounterSourcePreference::Auto,
            performance_counter_view: false,
            nominal_mhz: None,
            perf_capabilities: None,
            device_id_patterns: None,
            transition_latency_100ns: 0,
            pmu_reservation: ReservationPolicy::ExclusivePmu,
        }
    }
}

impl ConfigSpec {
    /// The engine configuration these settings describe.
    #[must_use]
    pub fn to_engine_config(&self) -> ppm_engine::Config {
        let mut config = ppm_engine::Config::new();
        config.feedback_counters = self.feedback_counters;
        config.counter_source = self.counter_source;
        config.performance_counter_view = self.performance_counter_view;
        config.nominal_mhz = self.nominal_mhz;
        config.perf_capabilities = self.perf_capabilities;
        config.transition_latency_100ns = self.transition_latency_100ns;
        config.pmu_reservation = self.pmu_reservation;
        if let Some(patterns) = &self.device_id_patterns {
            let mut set = DeviceIdPatterns::empty();
            for pattern in patterns {
                // Validated when the scenario was read (ASCII, length, count).
                let _ = set.push_str(pattern);
            }
            config.device_id_patterns = set;
        }
        config
    }
}

/// Which processors a phase or an event applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessorSet {
    /// Every processor.
    All,
    /// These indexes (distinct, in range).
    List(Vec<u32>),
}

impl ProcessorSet {
    /// Whether `index` is in the set.
    #[must_use]
    pub fn contains(&self, index: u32) -> bool {
        match self {
            Self::All => true,
            Self::List(list) => list.contains(&index),
        }
    }

    /// The indexes in the set, for a machine of `processors` processors.
    #[must_use]
    pub fn indexes(&self, processors: u32) -> Vec<u32> {
        match self {
            Self::All => (0..processors).collect(),
            Self::List(list) => list.clone(),
        }
    }
}

/// `[[phase]]`: a piecewise-constant load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// `start_ms`.
    pub start_ms: u32,
    /// `end_ms` (`None`: until the end of the run).
    pub end_ms: Option<u32>,
    /// `processors`.
    pub processors: ProcessorSet,
    /// `frequency_mhz`: the delivered frequency while in C0.
    pub frequency_mhz: u32,
    /// `busy_percent`: the C0 residency.
    pub busy_percent: u32,
}

/// `[[event]]`: something that happens at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `at_ms`.
    pub at_ms: u32,
    /// `processors`.
    pub processors: ProcessorSet,
    /// `kind` and its own fields.
    pub kind: EventKind,
}

/// The kinds of [`Event`]. New kinds (S3/S4 resume, hot-add, PMU events) add a variant here,
/// a name in [`EventKind::NAMES`], their fields in the reader and their effect in the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `counter-reset`: APERF and MPERF of the processors jump to 0.
    CounterReset,
    /// `counter-near-wrap`: APERF overflows at `at_ms` (both then restart at zero, as the SDM
    /// says). The processors' counters start the runtime just below 2^64 — set before the
    /// OS's first read, so that the PEP sees a machine whose counters are about to wrap rather
    /// than a jump; `at_ms` must be after 0 and the processors must run in C0 before it.
    /// With `fixed-pmc`, the fixed counters instead start just below 2^`pmc_width`:
    /// `IA32_FIXED_CTR1` wraps at `at_ms`, `IA32_FIXED_CTR2` after 1.5 × `at_ms` of the same
    /// load, and both keep counting modulo 2^`pmc_width` (a wrap is not a reset).
    CounterNearWrap,
    /// `msr-fault`: every MSR read on the processors faults for `duration_ms` (default: until
    /// the end of the run).
    MsrFault {
        /// `duration_ms`.
        duration_ms: Option<u32>,
    },
    /// `wrong-processor-read`: the OS issues a `FEEDBACK_READ` for each processor's handle
    /// while running on `on_processor` (default: the next processor); it must be refused.
    WrongProcessorRead {
        /// `on_processor`.
        on_processor: Option<u32>,
    },
    /// `pmu-reprogrammed` (`fixed-pmc` only): another PMU owner, ignoring the HAL's
    /// arbitration, reprograms the fixed counters: it disables counters 1 and 2, writes
    /// `values` to `IA32_FIXED_CTR1`/`IA32_FIXED_CTR2` and re-enables them `duration_ms` later
    /// (at once by default). The PEP must lose at most the intervals it spoils.
    PmuReprogrammed {
        /// `values` (default `[0, 0]`): core, reference.
        values: [u64; 2],
        /// `duration_ms`: how long the counters stay disabled.
        duration_ms: Option<u32>,
    },
    /// `counters-zero`: from `at_ms` on, the processors' activity counters read as 0 and do
    /// not advance — a hypervisor that stops exposing them after the PEP initialised — for
    /// `duration_ms` (default: until the end), after which it exposes the real values again.
    /// Reads are still served (the MSRs do not fault); a PEP cannot tell counters that stopped
    /// from a processor that stays idle, so the honest answer is totals that stop growing. The
    /// checks account no true activity while the counters read zero and flag any counts
    /// reported for that time; the interval in which they come back may be lost, never turned
    /// into a huge delta.
    CountersZero {
        /// `duration_ms`.
        duration_ms: Option<u32>,
    },
    /// `hot-add`: the processors are absent when the runtime starts (PoFx does not offer them
    /// at boot) and arrive at `at_ms`: `PREPARE_DEVICE`, `REGISTER_DEVICE`, the processor
    /// queries (as the processor), `DEVICE_STARTED`; the OS then reads their counters. A
    /// processor may be hot-added again after a `hot-remove`.
    HotAdd,
    /// `hot-remove`: the OS stops reading the processors and sends `UNREGISTER_DEVICE` at
    /// `at_ms`; their handles must be refused from then on.
    HotRemove,
    /// `sleep`: the system enters `state` at `at_ms` (`ENTER_SYSTEM_STATE` on every present
    /// processor, as that processor) and resumes `duration_ms` later
    /// (`RESUME_FROM_SYSTEM_STATE` likewise). Meanwhile the processors are off: their counters
    /// do not count, and they restart at zero when the processors are powered on again (a
    /// processor reset) — 1 ms before the resume for S3 (the firmware's wake path), a quarter
    /// of the sleep before it for S4 (the firmware boots and restores the hibernation image),
    /// running the processors' load until the resume.
    /// The OS does not read counters while asleep.
    Sleep {
        /// `state`.
        state: SleepState,
        /// `duration_ms`.
        duration_ms: u32,
    },
    /// `smi`: a System Management Interrupt stalls each of the processors for `duration_us`
    /// (the firmware runs in SMM; interrupts masked in the OS do not keep it out), landing in
    /// the worst place: between the two counter reads of the first `FEEDBACK_READ` on the
    /// processor at or after `at_ms`, so that the nominal counter is read `duration_us` after
    /// the actual one. With `period_ms`, again every `period_ms` (an SMI storm) until the end.
    /// The counters keep counting through SMM as the processor's load says: the truth is the
    /// truth; only the reads are skewed.
    Smi {
        /// `duration_us`.
        duration_us: u32,
        /// `period_ms`.
        period_ms: Option<u32>,
    },
}

/// The system sleep state of a `sleep` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepState {
    /// `s3`: `PowerSystemSleeping3` (suspend to RAM).
    S3,
    /// `s4`: `PowerSystemHibernate` (suspend to disk).
    S4,
}

impl SleepState {
    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::S3 => "s3",
            Self::S4 => "s4",
        }
    }

    /// The `SYSTEM_POWER_STATE` value: `PowerSystemSleeping3` (4) or `PowerSystemHibernate` (5).
    #[must_use]
    pub const fn system_power_state(self) -> SYSTEM_POWER_STATE {
        match self {
            Self::S3 => PowerSystemSleeping3,
            Self::S4 => PowerSystemHibernate,
        }
    }

    /// How long before the resume the processors are powered on again, ms: S3 1 ms (the
    /// firmware's wake path), S4 a quarter of the sleep (the firmware boots and restores the
    /// hibernation image).
    #[must_use]
    pub const fn power_on_lead_ms(self, duration_ms: u32) -> u32 {
        match self {
            Self::S3 => 1,
            Self::S4 => duration_ms / 4,
        }
    }
}

impl EventKind {
    /// The kind names used in scenario files.
    pub const NAMES: [&'static str; 10] = [
        "counter-reset",
        "counter-near-wrap",
        "msr-fault",
        "wrong-processor-read",
        "pmu-reprogrammed",
        "counters-zero",
        "hot-add",
        "hot-remove",
        "sleep",
        "smi",
    ];

    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::CounterReset => "counter-reset",
            Self::CounterNearWrap => "counter-near-wrap",
            Self::MsrFault { .. } => "msr-fault",
            Self::WrongProcessorRead { .. } => "wrong-processor-read",
            Self::PmuReprogrammed { .. } => "pmu-reprogrammed",
            Self::CountersZero { .. } => "counters-zero",
            Self::HotAdd => "hot-add",
            Self::HotRemove => "hot-remove",
            Self::Sleep { .. } => "sleep",
            Self::Smi { .. } => "smi",
        }
    }
}

impl Scenario {
    /// Reads and validates a scenario.
    ///
    /// # Errors
    /// [`ScenarioError`] naming the field and what was expected, for TOML syntax errors, unknown
    /// keys, wrong types, values out of range and inconsistent settings.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        let table: Table =
            toml::from_str(text).map_err(|error| ScenarioError::syntax(text, &error))?;
        Self::from_table(&table)
    }

    /// Reads and validates a scenario from a parsed TOML table.
    ///
    /// # Errors
    /// As [`Self::from_toml_str`].
    pub fn from_table(table: &Table) -> Result<Self, ScenarioError> {
        let top = Reader::new(
            String::new(),
            table,
            &[
                "name",
                "description",
                "platform",
                "pofx",
                "config",
                "registry",
                "fault",
                "install",
                "phase",
                "event",
            ],
        )?;
        let name = top.required_string("name")?;
        if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Err(
                top.error("name", "expected a non-empty name of at most 64 printable characters")
            );
        }
        let description = top.optional_string("description")?.map(str::to_owned);

        let (mut platform, explicit_perf) = read_platform(top.required_table("platform")?)?;
        let processors = platform.processors;
        let pofx = read_pofx(top.required_table("pofx")?, processors)?;
        let duration_ms = pofx.duration_ms;

        let mut phases = Vec::new();
        for (index, phase_table) in top.array_of_tables("phase")?.into_iter().enumerate() {
            phases.push(read_phase(
                &format!("phase[{index}]"),
                phase_table,
                processors,
                duration_ms,
            )?);
        }
        let mut events = Vec::new();
        for (index, event_table) in top.array_of_tables("event")?.into_iter().enumerate() {
            events.push(read_event(&format!("event[{index}]"), event_table, processors, pofx)?);
        }

        let nominal_mhz = platform.nominal_mhz;
        let fastest = phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .max()
            .unwrap_or(nominal_mhz)
            .max(nominal_mhz);
        let slowest = phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .min()
            .unwrap_or(nominal_mhz)
            .min(nominal_mhz);
        platform.perf = match explicit_perf {
            Some(perf) => {
                check_phases_in_perf_range(&phases, perf, platform.cpu, nominal_mhz)?;
                perf
            }
            None => default_hardware_perf(platform.cpu, nominal_mhz, fastest, slowest),
        };

        let config_table = top.optional_table("config")?;
        let config = match config_table {
            Some(config_table) => read_config(config_table)?,
            None => ConfigSpec::default(),
        };
        let boot = boot::read_boot(
            top.optional_table("registry")?,
            &top.array_of_tables("fault")?,
            &config,
            config_table,
            processors,
        )?;
        let mut boot = boot;
        if let Some(install) = top.optional_table("install")? {
            let install = Reader::new("install".to_owned(), install, &["pending"])?;
            boot.install_pending = install.bool("pending", false)?;
        }
        // What the driver will read: `[config]` plus the raw values it accepts.
        let config = boot::effective_config(&boot);

        let scenario = Self {
            name: name.to_owned(),
            description,
            platform,
            pofx,
            config,
            phases,
            events,
            boot,
        };
        scenario.check_events()?;
        scenario.check_pmu()?;
        scenario.check_hotplug()?;
        scenario.check_boot_faults()?;
        scenario.check_sleeps()?;
        scenario.check_counters_zero()?;
        Ok(scenario)
    }

    /// `counters-zero` models APERF/MPERF that a hypervisor stops exposing: it needs them.
    fn check_counters_zero(&self) -> Result<(), ScenarioError> {
        let source = self.platform.counter_source;
        let zeroing = |event: &Event| matches!(event.kind, EventKind::CountersZero { .. });
        match self.events.iter().position(zeroing) {
            Some(number) if !source.announced() => Err(ScenarioError::field(
                format!("event[{number}].kind"),
                format!(
                    "counters-zero: the APERF/MPERF a hypervisor stops exposing; platform.counter_source \"{}\" has none",
                    source.name()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The `hot-add` and `hot-remove` events concerning processor `index`, in the order they
    /// happen (time, then file order): (event number, `at_ms`, added).
    fn hotplug_events(&self, index: u32) -> Vec<(usize, u32, bool)> {
        let mut list: Vec<(usize, u32, bool)> = self
            .events
            .iter()
            .enumerate()
            .filter(|(_, event)| event.processors.contains(index))
            .filter_map(|(number, event)| match event.kind {
                EventKind::HotAdd => Some((number, event.at_ms, true)),
                EventKind::HotRemove => Some((number, event.at_ms, false)),
                _ => None,
            })
            .collect();
        list.sort_by_key(|(number, at_ms, _)| (*at_ms, *number));
        list
    }

    /// Whether processor `index` is offered to the PEP at boot (its first `hot-add`/`hot-remove`
    /// event, if any, is not a `hot-add`).
    #[must_use]
    pub fn initially_present(&self, index: u32) -> bool {
        self.hotplug_events(index).first().is_none_or(|(_, _, added)| !added)
    }

    /// Whether processor `index` is registered with the PEP when event `number` (at `at_ms`)
    /// happens: after every `hot-add`/`hot-remove` that comes before it (time, then file order).
    #[must_use]
    pub fn present_at(&self, index: u32, at_ms: u32, number: usize) -> bool {
        self.hotplug_events(index)
            .into_iter()
            .rev()
            .find(|(other, other_ms, _)| (*other_ms, *other) < (at_ms, number))
            .map_or_else(|| self.initially_present(index), |(_, _, added)| added)
    }

    /// An `enable-fixed-counters` fault names a processor present at boot (the driver enables
    /// the counters on those only).
    fn check_boot_faults(&self) -> Result<(), ScenarioError> {
        for (number, fault) in self.boot.faults.iter().enumerate() {
            if let BootFault::EnableFixedCounters { processor } = fault
                && !self.initially_present(*processor)
            {
                return Err(ScenarioError::field(
                    format!("fault[{number}].processor"),
                    format!(
                        "processor {processor} is not present at boot; DriverEntry enables the \
                         counters on the processors present then"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the `hot-add`/`hot-remove` events: a processor is hot-added only while absent
    /// and hot-removed only while present, some processor is present at boot, and an explicit
    /// `on_processor` is present when its `wrong-processor-read` happens.
    fn check_hotplug(&self) -> Result<(), ScenarioError> {
        let processors = self.platform.processors;
        let interval = self.pofx.sample_interval_ms;
        let sleeps = self.sleeps();
        let asleep = |at: u32| sleeps.iter().any(|(_, start, resume)| *start < at && at < *resume);
        let mut first_add: Option<usize> = None;
        for index in 0..processors {
            let mut present = self.initially_present(index);
            let events = self.hotplug_events(index);
            for (position, &(number, at_ms, added)) in events.iter().enumerate() {
                if added == present {
                    let (kind, state) =
                        if added { ("hot-add", "already") } else { ("hot-remove", "not") };
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!("{kind}: processor {index} is {state} present at {at_ms} ms"),
                    ));
                }
                if added {
                    // The OS reads it at least once: a sample after at_ms, at or before the
                    // removal (samples come before the events of their instant).
                    let end = events
                        .get(position + 1)
                        .map_or(self.pofx.duration_ms, |(_, removed_ms, _)| *removed_ms);
                    let mut sample = (at_ms / interval).saturating_add(1).saturating_mul(interval);
                    while sample <= end && asleep(sample) {
                        sample = sample.saturating_add(interval);
                    }
                    if sample > end {
                        return Err(ScenarioError::field(
                            format!("event[{number}].at_ms"),
                            format!(
                                "hot-add: processor {index} would never be read (no sample after {at_ms} ms and by {end} ms)"
                            ),
                        ));
                    }
                }
                if added && !self.initially_present(index) {
                    first_add = Some(first_add.map_or(number, |first| first.min(number)));
                }
                if !added && (0..processors).all(|other| !self.present_at(other, at_ms, number + 1))
                {
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!(
                            "hot-remove: no processor would be left at {at_ms} ms (the OS runs on one)"
                        ),
                    ));
                }
                present = added;
            }
        }
        if let Some(number) = first_add
            && (0..processors).all(|index| !self.initially_present(index))
        {
            return Err(ScenarioError::field(
                format!("event[{number}].processors"),
                "hot-add: every processor is hot-added, but at least one must be present at boot"
                    .to_owned(),
            ));
        }
        for (number, event) in self.events.iter().enumerate() {
            if let EventKind::WrongProcessorRead { on_processor: Some(on) } = event.kind
                && !self.present_at(on, event.at_ms, number)
            {
                return Err(ScenarioError::field(
                    format!("event[{number}].on_processor"),
                    format!(
                        "processor {on} is not present at {} ms (hot-add/hot-remove), so the OS cannot run on it",
                        event.at_ms
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The `sleep` events as (event number, start ms, resume ms).
    #[must_use]
    pub fn sleeps(&self) -> Vec<(usize, u32, u32)> {
        self.events
            .iter()
            .enumerate()
            .filter_map(|(number, event)| match event.kind {
                EventKind::Sleep { duration_ms, .. } => {
                    Some((number, event.at_ms, event.at_ms.saturating_add(duration_ms)))
                }
                _ => None,
            })
            .collect()
    }

    /// Checks the `sleep` events: nothing happens while the system sleeps (no other event
    /// after the sleep's start — at its `at_ms` only earlier in the file — and before its
    /// resume), and `counter-near-wrap` overflows come no later than the first sleep.
    fn check_sleeps(&self) -> Result<(), ScenarioError> {
        for (sleep, start, resume) in self.sleeps() {
            for (number, event) in self.events.iter().enumerate() {
                let during = (event.at_ms > start || (event.at_ms == start && number > sleep))
                    && event.at_ms < resume;
                if number != sleep && during {
                    return Err(ScenarioError::field(
                        format!("event[{number}].at_ms"),
                        format!(
                            "{}: happens while the system sleeps (event[{sleep}] sleeps from {start} ms to {resume} ms)",
                            event.kind.name()
                        ),
                    ));
                }
                if event.kind == EventKind::CounterNearWrap && event.at_ms > start {
                    return Err(ScenarioError::field(
                        format!("event[{number}].at_ms"),
                        format!(
                            "counter-near-wrap: expected the overflow no later than the sleep at {start} ms (event[{sleep}]), found {} ms",
                            event.at_ms
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what needs the whole scenario: a `counter-near-wrap` processor must run in C0
    /// before the overflow time, or its APERF cannot overflow then.
    fn check_events(&self) -> Result<(), ScenarioError> {
        for (number, event) in self.events.iter().enumerate() {
            if event.kind != EventKind::CounterNearWrap {
                continue;
            }
            for index in event.processors.indexes(self.platform.processors) {
                let timeline = Timeline::for_processor(self, index);
                if timeline.activity(0, u64::from(event.at_ms) * NS_PER_MS).c0 == 0 {
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!(
                            "counter-near-wrap: processor {index} does not run in C0 before at_ms ({} ms), so its APERF cannot overflow then",
                            event.at_ms
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what the fixed counters need: `counter-reset` zeroes APERF/MPERF, which a
    /// `fixed-pmc` platform lacks; `pmu-reprogrammed` needs the fixed counters and values below
    /// 2^`pmc_width`; and no fixed counter may be able to wrap twice between two reads the PEP
    /// serves (a sample interval plus the longest bounded `msr-fault`), which no PEP could
    /// tell from once.
    fn check_pmu(&self) -> Result<(), ScenarioError> {
        // The fixed counters matter only where the PEP reads them.
        let width = self.platform.pmc_width.filter(|_| self.uses_fixed_counters());
        let no_aperf = self.platform.counter_source == CounterSourceKind::FixedPmc;
        for (number, event) in self.events.iter().enumerate() {
            let field = |key: &str| format!("event[{number}].{key}");
            match (event.kind, width) {
                (EventKind::CounterReset, _) if no_aperf => {
                    return Err(ScenarioError::field(
                        field("kind"),
                        "counter-reset zeroes APERF/MPERF, which a fixed-pmc platform does not have; use pmu-reprogrammed".to_owned(),
                    ));
                }
                (EventKind::PmuReprogrammed { .. }, None) => {
                    return Err(ScenarioError::field(
                        field("kind"),
                        "pmu-reprogrammed needs a PEP on the fixed counters (platform.counter_source = \"fixed-pmc\", or config.counter_source = \"fixed-pmc\" / \"prefer-fixed-pmc\" with the PMU)".to_owned(),
                    ));
                }
                (EventKind::PmuReprogrammed { values, .. }, Some(width))
                    if values.iter().any(|value| value.checked_shr(width).unwrap_or(0) != 0) =>
                {
                    return Err(ScenarioError::field(
                        field("values"),
                        format!(
                            "expected values below 2^{width} (platform.pmc_width), found [{}, {}]",
                            values[0], values[1]
                        ),
                    ));
                }
                _ => {}
            }
        }
        let Some(width) = width.filter(|width| *width < 64) else { return Ok(()) };
        let fastest = self
            .phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .chain([self.platform.nominal_mhz])
            .max()
            .unwrap_or(1);
        let longest_fault = self
            .events
            .iter()
            .filter_map(|event| match event.kind {
                EventKind::MsrFault { duration_ms } => duration_ms,
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let gap_ms = u64::from(self.pofx.sample_interval_ms) + u64::from(longest_fault);
        // MHz × ms = thousands of counts.
        let period_ms = (1_u64 << width) / (u64::from(fastest) * 1000);
        if gap_ms >= period_ms {
            return Err(ScenarioError::field(
                "pofx.sample_interval_ms".to_owned(),
                format!(
                    "a {width}-bit fixed counter at {fastest} MHz wraps every {period_ms} ms: expected served reads less than that apart, found up to {gap_ms} ms (sample interval plus the longest msr-fault)"
                ),
            ));
        }
        Ok(())
    }

    /// The counter source a correct PEP selects on this machine with this configuration, as
    /// the engine's documented order has it: the configured preference over APERF/MPERF (or
    /// AMD's read-only copies) where CPUID announces them — usable only if they count — and the
    /// architectural fixed counters where CPUID announces the PMU and the driver's reservation
    /// succeeds (wanted for `fixed-pmc` / `prefer-fixed-pmc`, and for `auto` only without
    /// APERF/MPERF; refused while another owner holds the PMU or when a `[[fault]]` breaks the
    /// setup).
    #[must_use]
    pub fn expected_source(&self) -> ExpectedSource {
        use CounterSourcePreference as Preference;
        if self.config.feedback_counters == FeedbackCounterPolicy::Disabled {
            return ExpectedSource::None;
        }
        if let Some(arm) = self.platform.arm {
            // The AMU, when present and enabled, unless the configuration asks for none or for
            // an x86 source.
            let usable = self.platform.counter_source == CounterSourceKind::Amu
                && arm.amu_enabled
                && matches!(
                    self.config.counter_source,
                    Preference::Auto | Preference::PreferFixedPmc
                );
            return if usable { ExpectedSource::Amu } else { ExpectedSource::None };
        }
        let announced = self.platform.counter_source.announced();
        let aperf = if self.platform.counter_source == CounterSourceKind::AperfMperf {
            ExpectedSource::AperfMperf
        } else {
            ExpectedSource::None
        };
        let preference = self.config.counter_source;
        let wanted = match preference {
            Preference::FixedPmc | Preference::PreferFixedPmc => true,
            Preference::Auto => !announced,
            Preference::AperfMperf | Preference::None => false,
        };
        let fixed = wanted
            && self.platform.pmc_width.is_some()
            && !self.platform.pmu_busy
            && !self.boot.pmu_setup_fails();
        if fixed {
            // `wanted` is false for `none` and `aperf-mperf`, and for `auto` where APERF exists.
            return ExpectedSource::FixedPmc;
        }
        match preference {
            Preference::AperfMperf => aperf,
            Preference::Auto | Preference::PreferFixedPmc if announced => aperf,
            Preference::None
            | Preference::FixedPmc
            | Preference::Auto
            | Preference::PreferFixedPmc => ExpectedSource::None,
        }
    }

    /// Whether a correct PEP reads the architectural fixed counters here.
    #[must_use]
    pub fn uses_fixed_counters(&self) -> bool {
        self.expected_source() == ExpectedSource::FixedPmc
    }

    /// How many feedback counters a correct PEP describes per processor on this machine with
    /// this configuration: 0 without a source ([`Self::expected_source`]), else 1 (2 with the
    /// performance view).
    #[must_use]
    pub fn expected_counter_count(&self) -> u32 {
        match (self.expected_source(), self.config.performance_counter_view) {
            (ExpectedSource::None, _) => 0,
            (_, false) => 1,
            (_, true) => 2,
        }
    }
}

/// The counter source a correct PEP selects (see [`Scenario::expected_source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedSource {
    /// No counters.
    None,
    /// APERF/MPERF (AMD: the read-only copies).
    AperfMperf,
    /// The architectural fixed counters.
    FixedPmc,
    /// ARM64's Activity Monitors.
    Amu,
}

/// The keys of `[platform]`.
const PLATFORM_KEYS: [&str; 15] = [
    "processors",
    "cpu",
    "counter_source",
    "nominal_mhz",
    "hypervisor",
    "hwp_enabled",
    "device_id_style",
    "other_devices",
    "perf",
    "pmu",
    "pmc_width",
    "pmu_busy",
    "msr_read_ns",
    "cntfrq_hz",
    "amu_enabled",
];

/// `[platform]`; the perf levels are `None` unless `[platform.perf]` gives them (the default
/// depends on the phases).
fn read_platform(table: &Table) -> Result<(PlatformSpec, Option<HardwarePerf>), ScenarioError> {
    let platform = Reader::new("platform".to_owned(), table, &PLATFORM_KEYS)?;
    let processors = platform.required_u32("processors", 1..=MAX_PROCESSORS)?;
    let cpu = platform.choice(
        "cpu",
        &[
            ("intel-hwp", CpuKind::IntelHwp),
            ("amd-cppc", CpuKind::AmdCppc),
            ("intel-legacy", CpuKind::IntelLegacy),
            ("arm64", CpuKind::Arm64),
        ],
        CpuKind::IntelHwp,
    )?;
    let counter_source = platform.choice(
        "counter_source",
        &[
            ("aperf-mperf", CounterSourceKind::AperfMperf),
            ("none", CounterSourceKind::None),
            ("aperf-mperf-zeros", CounterSourceKind::AperfMperfZeros),
            ("aperf-mperf-faulting", CounterSourceKind::AperfMperfFaulting),
            ("fixed-pmc", CounterSourceKind::FixedPmc),
            ("amu", CounterSourceKind::Amu),
        ],
        if cpu.is_arm64() { CounterSourceKind::Amu } else { CounterSourceKind::AperfMperf },
    )?;
    let arm = read_arm_fields(&platform, cpu, counter_source)?;
    let (pmc_width, pmu_busy) = read_pmu_fields(&platform, cpu, counter_source)?;
    let nominal_limit = if cpu.is_intel() { 255 * INTEL_BUS_MHZ } else { MAX_FREQUENCY_MHZ };
    let nominal_mhz = platform.required_u32("nominal_mhz", 1..=nominal_limit)?;
    if cpu.is_intel() && nominal_mhz % INTEL_BUS_MHZ != 0 {
        return Err(platform.error(
            "nominal_mhz",
            &format!(
                "expected a multiple of {INTEL_BUS_MHZ} on an Intel CPU (ratio × 100 MHz bus clock), found {nominal_mhz}"
            ),
        ));
    }
    let hypervisor = platform.bool("hypervisor", false)?;
    if hypervisor && cpu.is_arm64() {
        return Err(platform.error(
            "hypervisor",
            "is CPUID.1:ECX[31], x86 only (an ARM64 guest differs only in what its ID registers announce)",
        ));
    }
    let hwp_enabled = platform.bool("hwp_enabled", true)?;
    if platform.get("hwp_enabled").is_some() && cpu != CpuKind::IntelHwp {
        return Err(platform.error("hwp_enabled", "is only valid with cpu = \"intel-hwp\""));
    }
    // Without a style: `\_SB.CPU#` where 16 processors or fewer can be so named, else AMD's
    // `\_SB.C###`, which names every supported count.
    let default_style = if processors <= DeviceIdStyle::SbCpu.capacity() {
        DeviceIdStyle::SbCpu
    } else {
        DeviceIdStyle::SbC
    };
    let device_id_style =
        platform.choice("device_id_style", &DeviceIdStyle::CHOICES, default_style)?;
    if processors > device_id_style.capacity() {
        return Err(platform.error(
            "device_id_style",
            &format!(
                "style \"{}\" names at most {} processors, but platform.processors is {processors}",
                device_id_style.name(),
                device_id_style.capacity()
            ),
        ));
    }
    let other_devices = platform.optional_string_list("other_devices", 0..=256, 1..=256)?;
    let perf = platform.optional_table("perf")?.map(read_hardware_perf).transpose()?;
    let msr_read_ns = read_msr_read_ns(&platform)?;
    let spec = PlatformSpec {
        processors,
        cpu,
        counter_source,
        nominal_mhz,
        hypervisor,
        hwp_enabled,
        device_id_style,
        other_devices,
        perf: perf
            .unwrap_or_else(|| default_hardware_perf(cpu, nominal_mhz, nominal_mhz, nominal_mhz)),
        pmc_width,
        pmu_busy,
        msr_read_ns,
        arm,
    };
    Ok((spec, perf))
}

/// `msr_read_ns`: `"bare-metal"` (the default), `"hypervisor"` or a number of nanoseconds.
fn read_msr_read_ns(platform: &Reader<'_>) -> Result<u32, ScenarioError> {
    match platform.get("msr_read_ns") {
        Some(Value::String(preset)) if preset == "bare-metal" => Ok(BARE_METAL_MSR_READ_NS),
        Some(Value::String(preset)) if preset == "hypervisor" => Ok(HYPERVISOR_MSR_READ_NS),
        Some(Value::Integer(_)) => platform.required_u32("msr_read_ns", 0..=MAX_MSR_READ_NS),
        Some(other) => Err(platform.error(
            "msr_read_ns",
            &format!(
                "expected \"bare-metal\", \"hypervisor\" or an integer in 0..={MAX_MSR_READ_NS} (ns), found {}",
                describe(other)
            ),
        )),
        None => Ok(BARE_METAL_MSR_READ_NS),
    }
}

/// `cntfrq_hz` and `amu_enabled` (ARM64 only); an ARM64 CPU has the AMU or nothing, an x86
/// one never the AMU.
fn read_arm_fields(
    platform: &Reader<'_>,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<Option<ArmSpec>, ScenarioError> {
    if !cpu.is_arm64() {
        if counter_source == CounterSourceKind::Amu {
            return Err(platform.error(
                "counter_source",
                &format!("\"amu\" needs cpu = \"arm64\", found cpu = \"{}\"", cpu.name()),
            ));
        }
        for key in ["cntfrq_hz", "amu_enabled"] {
            if platform.get(key).is_some() {
                return Err(platform.error(key, "is only valid with cpu = \"arm64\""));
            }
        }
        return Ok(None);
    }
    if !matches!(counter_source, CounterSourceKind::Amu | CounterSourceKind::None) {
        return Err(platform.error(
            "counter_source",
            &format!(
                "cpu = \"arm64\" has \"amu\" or \"none\", found \"{}\"",
                counter_source.name()
            ),
        ));
    }
    let cntfrq_hz =
        platform.optional_u32("cntfrq_hz", 1_000_000..=1_000_000_000)?.unwrap_or(DEFAULT_CNTFRQ_HZ);
    if platform.get("amu_enabled").is_some() && counter_source != CounterSourceKind::Amu {
        return Err(platform.error("amu_enabled", "is only valid with counter_source = \"amu\""));
    }
    let amu_enabled = platform.bool("amu_enabled", true)?;
    Ok(Some(ArmSpec { cntfrq_hz, amu_enabled }))
}

/// `pmc_width` and `pmu_busy`: only with `counter_source = "fixed-pmc"`, which needs an Intel
/// CPU (CPUID leaf 0Ah is Intel's architectural PMU).
fn read_pmu_fields(
    platform: &Reader<'_>,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<(Option<u32>, bool), ScenarioError> {
    let fixed = counter_source == CounterSourceKind::FixedPmc;
    if fixed && !cpu.is_intel() {
        return Err(platform.error(
            "counter_source",
            &format!(
                "\"fixed-pmc\" needs an Intel CPU (cpu = \"intel-hwp\" or \"intel-legacy\"), found cpu = \"{}\"",
                cpu.name()
            ),
        ));
    }
    // Intel CPUs announce the architectural PMU (CPUID leaf 0Ah) beside APERF/MPERF, as real
    // ones do; a hypervisor may hide it (`pmu = false`). `fixed-pmc` is the PMU without
    // APERF/MPERF; `none` has no counter of either kind unless `pmu = true`.
    let pmu = platform.bool("pmu", cpu.is_intel() && counter_source != CounterSourceKind::None)?;
    if pmu && !cpu.is_intel() {
        return Err(platform.error("pmu", "the architectural PMU is modelled for Intel CPUs only"));
    }
    if fixed && !pmu {
        return Err(
            platform.error("pmu", "counter_source = \"fixed-pmc\" is the PMU's fixed counters")
        );
    }
    if !pmu {
        for key in ["pmc_width", "pmu_busy"] {
            if platform.get(key).is_some() {
                return Err(platform.error(
                    key,
                    "is only valid with the architectural PMU (an Intel CPU, pmu = true)",
                ));
            }
        }
        return Ok((None, false));
    }
    let width = platform
        .optional_u32("pmc_width", MIN_PMC_WIDTH..=MAX_PMC_WIDTH)?
        .unwrap_or(DEFAULT_PMC_WIDTH);
    Ok((Some(width), platform.bool("pmu_busy", false)?))
}

/// `[pofx]`, limited so that a run makes at most [`MAX_READS`] reads.
fn read_pofx(table: &Table, processors: u32) -> Result<PofxSpec, ScenarioError> {
    let pofx_reader = Reader::new(
        "pofx".to_owned(),
        table,
        &["duration_ms", "sample_interval_ms", "threads", "nested_notifications"],
    )?;
    let duration_ms = pofx_reader.required_u32("duration_ms", 1..=MAX_DURATION_MS)?;
    let default_interval = DEFAULT_SAMPLE_INTERVAL_MS.min(duration_ms);
    let sample_interval_ms = pofx_reader
        .optional_u32("sample_interval_ms", 1..=duration_ms)?
        .unwrap_or(default_interval);
    let reads = u64::from(processors) * (u64::from(duration_ms / sample_interval_ms) + 1);
    if reads > MAX_READS {
        return Err(pofx_reader.error(
            "sample_interval_ms",
            &format!(
                "expected at most {MAX_READS} reads in all (processors × (duration_ms / sample_interval_ms + 1)), found {reads}: raise the interval, shorten the run or simulate fewer processors"
            ),
        ));
    }
    let threads = pofx_reader.choice(
        "threads",
        &[("single", ThreadMode::Single), ("per-processor", ThreadMode::PerProcessor)],
        ThreadMode::Single,
    )?;
    let nested_notifications = pofx_reader.bool("nested_notifications", false)?;
    let pofx = PofxSpec { duration_ms, sample_interval_ms, threads, nested_notifications };
    Ok(pofx)
}

fn read_phase(
    path: &str,
    table: &Table,
    processors: u32,
    duration_ms: u32,
) -> Result<Phase, ScenarioError> {
    let reader = Reader::new(
        path.to_owned(),
        table,
        &["start_ms", "end_ms", "processors", "frequency_mhz", "busy_percent"],
    )?;
    let start_ms = reader.required_u32("start_ms", 0..=duration_ms)?;
    let end_ms = reader.optional_u32("end_ms", start_ms.saturating_add(1)..=u32::MAX)?;
    let processors = reader.processor_set("processors", processors)?;
    let frequency_mhz = reader.required_u32("frequency_mhz", 1..=MAX_FREQUENCY_MHZ)?;
    let busy_percent = reader.required_u32("busy_percent", 0..=100)?;
    Ok(Phase { start_ms, end_ms, processors, frequency_mhz, busy_percent })
}

/// The keys of an `[[event]]`: the common ones, then those of particular kinds.
const EVENT_KEYS: [&str; 9] = [
    "at_ms",
    "kind",
    "processors",
    "duration_ms",
    "on_processor",
    "values",
    "state",
    "duration_us",
    "period_ms",
];

fn read_event(
    path: &str,
    table: &Table,
    processors: u32,
    pofx: PofxSpec,
) -> Result<Event, ScenarioError> {
    let reader = Reader::new(path.to_owned(), table, &EVENT_KEYS)?;
    let at_ms = reader.required_u32("at_ms", 0..=pofx.duration_ms)?;
    let kind_name = reader.required_string("kind")?;
    // A system sleep involves every processor: `processors` may be left out.
    let set = if kind_name == "sleep" && reader.get("processors").is_none() {
        ProcessorSet::All
    } else {
        reader.processor_set("processors", processors)?
    };
    let allowed: &[&str] = match kind_name {
        "counter-reset" | "counter-near-wrap" | "hot-add" | "hot-remove" => &[],
        "msr-fault" | "counters-zero" => &["duration_ms"],
        "wrong-processor-read" => &["on_processor"],
        "pmu-reprogrammed" => &["duration_ms", "values"],
        "sleep" => &["state", "duration_ms"],
        "smi" => &["duration_us", "period_ms"],
        _ => {
            return Err(reader.error(
                "kind",
                &format!(
                    "expected one of {}, found {}",
                    quoted_list(&EventKind::NAMES),
                    describe(&Value::String(kind_name.to_owned()))
                ),
            ));
        }
    };
    for &key in &EVENT_KEYS[3..] {
        if reader.get(key).is_some() && !allowed.contains(&key) {
            return Err(reader.error(key, &format!("is not a field of kind \"{kind_name}\"")));
        }
    }
    let kind = match kind_name {
        "counter-reset" => EventKind::CounterReset,
        "counters-zero" => EventKind::CountersZero {
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        "hot-add" | "hot-remove" => {
            if set == ProcessorSet::All {
                return Err(reader.error(
                    "processors",
                    &format!(
                        "{kind_name}: expected a list of processor indexes (some processor must stay present), found \"all\""
                    ),
                ));
            }
            if kind_name == "hot-add" { EventKind::HotAdd } else { EventKind::HotRemove }
        }
        "sleep" => read_sleep(&reader, &set, at_ms, pofx)?,
        "counter-near-wrap" => {
            if at_ms == 0 {
                return Err(reader.error(
                    "at_ms",
                    "counter-near-wrap: expected the time APERF overflows, after 0, found 0",
                ));
            }
            EventKind::CounterNearWrap
        }
        "msr-fault" => EventKind::MsrFault {
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        "smi" => EventKind::Smi {
            duration_us: reader.required_u32("duration_us", 1..=MAX_SMI_US)?,
            period_ms: reader.optional_u32("period_ms", 1..=MAX_DURATION_MS)?,
        },
        "pmu-reprogrammed" => EventKind::PmuReprogrammed {
            values: reader.counter_values("values")?.unwrap_or([0, 0]),
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        _ => {
            if processors < 2 {
                return Err(reader.error(
                    "kind",
                    "wrong-processor-read needs at least 2 processors (platform.processors is 1)",
                ));
            }
            let on_processor = reader.optional_u32("on_processor", 0..=processors - 1)?;
            if let Some(on) = on_processor
                && set.contains(on)
            {
                return Err(reader.error(
                    "on_processor",
                    &format!(
                        "expected a processor that is not among the event's processors, found {on}"
                    ),
                ));
            }
            EventKind::WrongProcessorRead { on_processor }
        }
    };
    Ok(Event { at_ms, processors: set, kind })
}

/// The fields of a `sleep` event: `state` (required), `duration_ms` (required; the system
/// resumes before the run ends) and `processors` ("all" or left out).
fn read_sleep(
    reader: &Reader<'_>,
    set: &ProcessorSet,
    at_ms: u32,
    pofx: PofxSpec,
) -> Result<EventKind, ScenarioError> {
    if *set != ProcessorSet::All {
        return Err(reader.error(
            "processors",
            "sleep: a system sleep state involves every processor: expected \"all\" or no processors field",
        ));
    }
    let choices = [("s3", SleepState::S3), ("s4", SleepState::S4)];
    if reader.get("state").is_none() {
        return Err(reader.error("state", "missing; expected one of \"s3\", \"s4\""));
    }
    let state = reader.choice("state", &choices, SleepState::S3)?;
    let duration_ms = reader.required_u32("duration_ms", MIN_SLEEP_MS..=MAX_DURATION_MS)?;
    let resume_ms = u64::from(at_ms) + u64::from(duration_ms);
    let last_resume = u64::from(pofx.duration_ms.saturating_sub(pofx.sample_interval_ms));
    if resume_ms > last_resume {
        return Err(reader.error(
            "duration_ms",
            &format!(
                "sleep: expected the system to resume at least one sample interval before the run ends (at_ms + duration_ms <= {last_resume}), found {at_ms} + {duration_ms}"
            ),
        ));
    }
    Ok(EventKind::Sleep { state, duration_ms })
}

fn read_hardware_perf(table: &Table) -> Result<HardwarePerf, ScenarioError> {
    let reader = Reader::new(
        "platform.perf".to_owned(),
        table,
        &["highest", "nominal", "lowest_nonlinear", "lowest"],
    )?;
    let byte = |key: &str| -> Result<u8, ScenarioError> {
        let value = reader.required_u32(key, 0..=255)?;
        Ok(u8::try_from(value).unwrap_or(u8::MAX))
    };
    Ok(HardwarePerf {
        highest: byte("highest")?,
        nominal: byte("nominal")?,
        lowest_nonlinear: byte("lowest_nonlinear")?,
        lowest: byte("lowest")?,
    })
}

/// The perf levels a CPU of this flavour reports by default: Intel ratios (MHz / 100); AMD
/// CPPC levels on a 0..=255 scale with nominal at 120.
fn default_hardware_perf(
    cpu: CpuKind,
    nominal_mhz: u32,
    fastest_mhz: u32,
    slowest_mhz: u32,
) -> HardwarePerf {
    let to_byte = |value: u64| u8::try_from(value.clamp(1, 255)).unwrap_or(u8::MAX);
    // Perf levels per MHz: Intel's are 100 MHz ratios; AMD's CPPC scale puts nominal at 120.
    let (scale, per) =
        if cpu.is_intel() { (1, u64::from(INTEL_BUS_MHZ)) } else { (120, u64::from(nominal_mhz)) };
    let nominal = u64::from(nominal_mhz) * scale / per;
    let highest = (u64::from(fastest_mhz) * scale).div_ceil(per);
    // Low enough for the slowest phase: no phase runs below the lowest level.
    let slowest = u64::from(slowest_mhz) * scale / per;
    HardwarePerf {
        highest: to_byte(highest.max(nominal)),
        nominal: to_byte(nominal),
        lowest_nonlinear: to_byte(nominal / 2),
        lowest: to_byte((nominal / 4).min(slowest.max(1))),
    }
}

impl HardwarePerf {
    /// The frequency of perf level `level`, MHz: Intel's levels are 100 MHz ratios; elsewhere
    /// (AMD CPPC) the scale is linear with `nominal` at `nominal_mhz`.
    #[must_use]
    pub fn mhz(self, level: u8, cpu: CpuKind, nominal_mhz: u32) -> u32 {
        if cpu.is_intel() {
            u32::from(level) * INTEL_BUS_MHZ
        } else {
            let nominal = u64::from(self.nominal.max(1));
            u32::try_from(u64::from(level) * u64::from(nominal_mhz) / nominal).unwrap_or(u32::MAX)
        }
    }
}

/// A phase cannot run faster than the platform's highest perf level or slower than its lowest:
/// with `[platform.perf]` given, such a phase is refused.
fn check_phases_in_perf_range(
    phases: &[Phase],
    perf: HardwarePerf,
    cpu: CpuKind,
    nominal_mhz: u32,
) -> Result<(), ScenarioError> {
    let highest = perf.mhz(perf.highest, cpu, nominal_mhz);
    let lowest = perf.mhz(perf.lowest, cpu, nominal_mhz);
    for (number, phase) in phases.iter().enumerate() {
        let (bound, level, name) = if phase.frequency_mhz > highest {
            (highest, perf.highest, "above the highest")
        } else if phase.frequency_mhz < lowest {
            (lowest, perf.lowest, "below the lowest")
        } else {
            continue;
        };
        return Err(ScenarioError::field(
            format!("phase[{number}].frequency_mhz"),
            format!(
                "{} MHz is {name} performance level of [platform.perf] ({level} = {bound} MHz)",
                phase.frequency_mhz
            ),
        ));
    }
    Ok(())
}

fn read_config(table: &Table) -> Result<ConfigSpec, ScenarioError> {
    let reader = Reader::new(
        "config".to_owned(),
        table,
        &[
            "feedback_counters",
            "counter_source",
            "performance_counter_view",
            "nominal_mhz",
            "perf_capabilities",
            "device_id_patterns",
            "transition_latency_100ns",
            "pmu_reservation",
        ],
    )?;
    let feedback_counters = reader.choice(
        "feedback_counters",
        &[
            ("enabled", FeedbackCounterPolicy::Enabled),
            ("disabled", FeedbackCounterPolicy::Disabled),
        ],
        FeedbackCounterPolicy::Enabled,
    )?;
    let counter_source = reader.choice(
        "counter_source",
        &[
            ("auto", CounterSourcePreference::Auto),
            ("aperf-mperf", CounterSourcePreference::AperfMperf),
            ("fixed-pmc", CounterSourcePreference::FixedPmc),
            ("prefer-fixed-pmc", CounterSourcePreference::PreferFixedPmc),
            ("none", CounterSourcePreference::None),
        ],
        CounterSourcePreference::Auto,
    )?;
    let pmu_reservation = reader.choice(
        "pmu_reservation",
        &[
            ("exclusive-pmu", ReservationPolicy::ExclusivePmu),
            ("all-counter-indexes", ReservationPolicy::AllCounterIndexes),
        ],
        ReservationPolicy::ExclusivePmu,
    )?;
    let performance_counter_view = reader.bool("performance_counter_view", false)?;
    let nominal_mhz = reader.optional_u32("nominal_mhz", 1..=MAX_NOMINAL_MHZ)?;
    let perf_capabilities = match reader.optional_table("perf_capabilities")? {
        Some(caps) => {
            let caps_reader = Reader::new(
                "config.perf_capabilities".to_owned(),
                caps,
                &["highest", "nominal", "lowest_nonlinear", "lowest"],
            )?;
            let level = 1..=MAX_PERFORMANCE_LEVEL;
            let caps = PerfCapabilities {
                highest: caps_reader.required_u32("highest", level.clone())?,
                nominal: caps_reader.required_u32("nominal", level.clone())?,
                lowest_nonlinear: caps_reader.required_u32("lowest_nonlinear", level.clone())?,
                lowest: caps_reader.required_u32("lowest", level)?,
            };
            if !caps.is_ordered() {
                return Err(reader.error(
                    "perf_capabilities",
                    "expected lowest <= lowest_nonlinear <= nominal <= highest (the driver \
                     ignores unordered values)",
                ));
            }
            Some(caps)
        }
        None => None,
    };
    let pattern_limit = u32::try_from(MAX_PATTERN_UNITS).unwrap_or(u32::MAX);
    let patterns = reader.optional_string_list(
        "device_id_patterns",
        1..=u32::try_from(MAX_DEVICE_ID_PATTERNS).unwrap_or(u32::MAX),
        1..=pattern_limit,
    )?;
    if let Some(patterns) = &patterns {
        for (index, pattern) in patterns.iter().enumerate() {
            if !pattern.is_ascii() || pattern.contains('\0') {
                return Err(ScenarioError::field(
                    format!("config.device_id_patterns[{index}]"),
                    "expected an ASCII pattern without NUL characters".to_owned(),
                ));
            }
        }
    }
    let transition_latency_100ns = reader
        .optional_u32("transition_latency_100ns", 0..=MAX_TRANSITION_LATENCY_100NS)?
        .unwrap_or(0);
    Ok(ConfigSpec {
        feedback_counters,
        counter_source,
        performance_counter_view,
        nominal_mhz,
        perf_capabilities,
        device_id_patterns: patterns,
        transition_latency_100ns,
        pmu_reservation,
    })
}

/// Why a scenario could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The field, as a dotted path (`platform.processors`, `phase[2].busy_percent`), when the
    /// error concerns one.
    pub field: Option<String>,
    /// The line and column (1-based) of a syntax error.
    pub location: Option<(usize, usize)>,
    /// What was expected and what was found.
    pub message: String,
}

impl ScenarioError {
    const fn field(field: String, message: String) -> Self {
        Self { field: Some(field), location: None, message }
    }

    fn syntax(text: &str, error: &toml::de::Error) -> Self {
        let location = error.span().map(|span| line_column(text, span.start));
        let message = error
            .message()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        // The parser says "duplicate key" without the key; its span covers the key itself.
        let key = error.span().and_then(|span| text.get(span)).map(str::trim).filter(|key| {
            !key.is_empty()
                && key.len() <= 64
                && !key.contains('\n')
                && message.contains("duplicate key")
        });
        let message = key.map_or_else(
            || format!("invalid TOML: {message}"),
            |key| format!("invalid TOML: {message} `{key}`"),
        );
        Self { field: None, location, message }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, column)) = self.location {
            write!(formatter, "line {line}, column {column}: ")?;
        }
        if let Some(field) = &self.field {
            write!(formatter, "field `{field}`: ")?;
        }
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
    (line, column)
}

/// How a TOML value is named in an error message.
fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("the string {text:?}"),
        Value::Integer(number) => number.to_string(),
        Value::Float(number) => format!("the float {number}"),
        Value::Boolean(flag) => format!("the boolean {flag}"),
        Value::Datetime(datetime) => format!("the datetime {datetime}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
    }
}

fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    quoted.join(", ")
}

/// Typed access to one TOML table, with errors that name the field.
struct Reader<'a> {
    path: String,
    table: &'a Table,
}

impl<'a> Reader<'a> {
    /// Rejects keys not in `known`.
    fn new(path: String, table: &'a Table, known: &[&str]) -> Result<Self, ScenarioError> {
        let reader = Self { path, table };
        if let Some(key) = table.keys().find(|key| !known.contains(&key.as_str())) {
            let expected: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
            return Err(reader
                .error(key, &format!("unknown field; expected one of {}", expected.join(", "))));
        }
        Ok(reader)
    }

    fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    fn error(&self, key: &str, message: &str) -> ScenarioError {
        ScenarioError::field(self.path_of(key), message.to_owned())
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    fn integer(
        &self,
        key: &str,
        value: &Value,
        range: &RangeInclusive<u32>,
    ) -> Result<u32, ScenarioError> {
        let expected = if *range.end() == u32::MAX {
            format!("expected an integer >= {}", range.start())
        } else {
            format!("expected an integer in {}..={}", range.start(), range.end())
        };
        match value {
            Value::Integer(number) => u32::try_from(*number)
                .ok()
                .filter(|number| range.contains(number))
                .ok_or_else(|| self.error(key, &format!("{expected}, found {number}"))),
            other => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    fn required_u32(&self, key: &str, range: RangeInclusive<u32>) -> Result<u32, ScenarioError> {
        self.get(key).map_or_else(
            || {
                Err(self.error(
                    key,
                    &format!("missing; expected an integer in {}..={}", range.start(), range.end()),
                ))
            },
            |value| self.integer(key, value, &range),
        )
    }

    fn optional_u32(
        &self,
        key: &str,
        range: RangeInclusive<u32>,
    ) -> Result<Option<u32>, ScenarioError> {
        self.get(key).map(|value| self.integer(key, value, &range)).transpose()
    }

    /// `[core, reference]`: two non-negative integers (range-checked against the counter width
    /// once the whole scenario is known).
    fn counter_values(&self, key: &str) -> Result<Option<[u64; 2]>, ScenarioError> {
        let expected = "expected a list of two non-negative integers [core, reference]";
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                let values: Option<Vec<u64>> = items
                    .iter()
                    .map(|item| match item {
                        Value::Integer(number) => u64::try_from(*number).ok(),
                        _ => None,
                    })
                    .collect();
                if let Some(&[core, reference]) = values.as_deref() {
                    return Ok(Some([core, reference]));
                }
                let found: Vec<String> = items.iter().map(describe).collect();
                Err(self.error(key, &format!("{expected}, found [{}]", found.join(", "))))
            }
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ScenarioError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Boolean(flag)) => Ok(*flag),
            Some(other) => {
                Err(self.error(key, &format!("expected true or false, found {}", describe(other))))
            }
        }
    }

    fn optional_string(&self, key: &str) -> Result<Option<&'a str>, ScenarioError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => {
                Err(self.error(key, &format!("expected a string, found {}", describe(other))))
            }
        }
    }

    fn required_string(&self, key: &str) -> Result<&'a str, ScenarioError> {
        self.optional_string(key)?.ok_or_else(|| self.error(key, "missing; expected a string"))
    }

    fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
        default: T,
    ) -> Result<T, ScenarioError> {
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let expected = format!("expected one of {}", quoted_list(&names));
        match self.get(key) {
            None => Ok(default),
            Some(Value::String(text)) => choices
                .iter()
                .find(|(name, _)| name == text)
                .map(|(_, value)| *value)
                .ok_or_else(|| {
                    self.error(
                        key,
                        &format!("{expected}, found {}", describe(&Value::String(text.clone()))),
                    )
                }),
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    fn optional_table(&self, key: &str) -> Result<Option<&'a Table>, ScenarioError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(table)) => Ok(Some(table)),
            Some(other) => {
                Err(self.error(key, &format!("expected a table, found {}", describe(other))))
            }
        }
    }

    fn required_table(&self, key: &str) -> Result<&'a Table, ScenarioError> {
        self.optional_table(key)?
            .ok_or_else(|| self.error(key, &format!("missing; expected a [{key}] table")))
    }

    fn array_of_tables(&self, key: &str) -> Result<Vec<&'a Table>, ScenarioError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::Table(table) => Ok(table),
                    other => Err(ScenarioError::field(
                        format!("{}[{index}]", self.path_of(key)),
                        format!("expected a table ([[{key}]]), found {}", describe(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.error(
                key,
                &format!("expected an array of tables ([[{key}]]), found {}", describe(other)),
            )),
        }
    }

    fn optional_string_list(
        &self,
        key: &str,
        count: RangeInclusive<u32>,
        length: RangeInclusive<u32>,
    ) -> Result<Option<Vec<String>>, ScenarioError> {
        let Some(value) = self.get(key) else { return Ok(None) };
        let Value::Array(items) = value else {
            return Err(
                self.error(key, &format!("expected a list of strings, found {}", describe(value)))
            );
        };
        let found = u32::try_from(items.len()).unwrap_or(u32::MAX);
        if !count.contains(&found) {
            return Err(self.error(
                key,
                &format!("expected {}..={} strings, found {found}", count.start(), count.end()),
            ));
        }
        let mut strings = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let field = format!("{}[{index}]", self.path_of(key));
            let Value::String(text) = item else {
                return Err(ScenarioError::field(
                    field,
                    format!("expected a string, found {}", describe(item)),
                ));
            };
            let units = u32::try_from(text.encode_utf16().count()).unwrap_or(u32::MAX);
            if !length.contains(&units) {
                return Err(ScenarioError::field(
                    field,
                    format!(
                        "expected a string of {}..={} characters, found {units}",
                        length.start(),
                        length.end()
                    ),
                ));
            }
            strings.push(text.clone());
        }
        Ok(Some(strings))
    }

    fn processor_set(&self, key: &str, processors: u32) -> Result<ProcessorSet, ScenarioError> {
        let highest = processors - 1;
        let expected =
            format!("expected \"all\" or a non-empty list of processor indexes in 0..={highest}");
        match self.get(key) {
            None => Err(self.error(key, &format!("missing; {expected}"))),
            Some(Value::String(text)) if text == "all" => Ok(ProcessorSet::All),
            Some(Value::Array(items)) if !items.is_empty() => {
                let mut seen = BTreeSet::new();
                let mut list = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let field = format!("{}[{index}]", self.path_of(key));
                    let number = match item {
                        Value::Integer(number) => {
                            u32::try_from(*number).ok().filter(|number| *number <= highest)
                        }
                        _ => None,
                    }
                    .ok_or_else(|| {
                        ScenarioError::field(
                            field.clone(),
                            format!(
                                "expected a processor index in 0..={highest}, found {}",
                                describe(item)
                            ),
                        )
                    })?;
                    if !seen.insert(number) {
                        return Err(ScenarioError::field(
                            field,
                            format!("processor {number} is listed twice"),
                        ));
                    }
                    list.push(number);
                }
                Ok(ProcessorSet::List(list))
            }
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod schema_tests;
