//! The spec types of each table: the machine, the emulated OS's timing, the PEP's
//! configuration, the load and the events, and the schema's limits.
//!
//! The bottom layer: nothing here reads TOML, checks across tables or simulates anything.

use std::fmt::Write as _;

use ppm_engine::abi::{PowerSystemHibernate, PowerSystemSleeping3, SYSTEM_POWER_STATE};
use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy};
use ppm_engine::device_id::DeviceIdPatterns;
use ppm_engine::perf::PerfCapabilities;
use ppm_engine::pmc::ReservationPolicy;

/// The longest `name`, in characters (not bytes).
pub const MAX_NAME_CHARS: usize = 64;
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

/// The samples of a run on `processors` processors, the figure [`MAX_READS`] bounds.
///
/// `processors × (duration_ms / sample_interval_ms + 1)`; each sample reads every counter the
/// PEP describes ([`Scenario::expected_reads`](super::Scenario::expected_reads)).
#[must_use]
pub const fn read_count(processors: u32, duration_ms: u32, sample_interval_ms: u32) -> u64 {
    let interval = if sample_interval_ms == 0 { 1 } else { sample_interval_ms };
    processors as u64 * ((duration_ms / interval) as u64 + 1)
}
/// The most `[[event]]`s a scenario may have.
///
/// Each event acts on up to every processor (2048 items each, and a counter discontinuity per
/// processor for the kinds that make counters jump): this bound keeps the largest runs to
/// seconds.
pub const MAX_EVENTS: usize = 512;
/// The most `sleep` events (each read is compared with every resume).
pub const MAX_SLEEPS: usize = 64;
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
    /// `\_SB.SCK0.CP00`, … (per socket, `[platform] sockets` of them: one hexadecimal socket
    /// digit, two for the processor within its socket: at most 16 sockets of 256).
    SbSocket,
    /// `\_SB.SCK0.C000`, … (current Intel servers: per socket, three hexadecimal digits for
    /// the processor within its socket).
    SbSocketC,
    /// `\_SB.PLTF.C000`, … (AMD's platform container, three hexadecimal digits).
    SbPltf,
    /// `\_SB.CPUS.C000`, … (QEMU's processor container, three hexadecimal digits).
    SbCpus,
}

/// The longest device id, in UTF-16 code units (PoFx hands the PEP a counted UTF-16 string;
/// ACPI paths are far shorter).
pub const MAX_DEVICE_ID_UNITS: u32 = 200;

/// The most sockets a socket style or a `device_id_template` may number (one hexadecimal
/// digit in `\_SB.SCK#`).
pub const MAX_SOCKETS: u32 = 16;

impl DeviceIdStyle {
    pub(super) const CHOICES: [(&'static str, Self); 10] = [
        ("sb-cpu", Self::SbCpu),
        ("pr-cpu", Self::PrCpu),
        ("sb-pr", Self::SbPr),
        ("sb-p", Self::SbP),
        ("sb-c", Self::SbC),
        ("sb-sck", Self::SbSocket),
        ("sb-sck-c", Self::SbSocketC),
        ("pr-p", Self::PrP),
        ("sb-pltf", Self::SbPltf),
        ("sb-cpus", Self::SbCpus),
    ];

    /// The name used in scenario files.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::CHOICES.iter().find(|(_, style)| *style == self).map_or("?", |(name, _)| name)
    }

    /// Whether the style numbers processors within sockets.
    #[must_use]
    pub const fn per_socket(self) -> bool {
        matches!(self, Self::SbSocket | Self::SbSocketC)
    }

    /// The most processors the style can name (per socket for the socket styles).
    #[must_use]
    pub const fn capacity(self) -> u32 {
        match self {
            Self::SbCpu | Self::PrCpu => 16,
            Self::SbPr | Self::SbSocket => 256,
            Self::SbP | Self::PrP | Self::SbC | Self::SbPltf | Self::SbCpus => MAX_PROCESSORS,
            Self::SbSocketC => 4096,
        }
    }

    /// The device id of processor `index`, the socket styles with `per_socket` processors in
    /// each socket.
    #[must_use]
    pub fn device_id(self, index: u32, per_socket: u32) -> String {
        let (socket, local) = (index / per_socket.max(1), index % per_socket.max(1));
        match self {
            Self::SbCpu => format!("\\_SB.CPU{index:X}"),
            Self::PrCpu => format!("\\_PR.CPU{index:X}"),
            Self::SbPr => format!("\\_SB.PR{index:02X}"),
            Self::SbP => format!("\\_SB.P{index:03X}"),
            Self::SbC => format!("\\_SB.C{index:03X}"),
            Self::PrP => format!("\\_PR.P{index:03X}"),
            Self::SbPltf => format!("\\_SB.PLTF.C{index:03X}"),
            Self::SbCpus => format!("\\_SB.CPUS.C{index:03X}"),
            Self::SbSocket => format!("\\_SB.SCK{socket:X}.CP{local:02X}"),
            Self::SbSocketC => format!("\\_SB.SCK{socket:X}.C{local:03X}"),
        }
    }
}

/// One piece of a `device_id_template`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplatePart {
    /// Text copied as it is.
    Text(String),
    /// A number: which one, how wide (zero-padded) and in which base.
    Number {
        /// `index`, `socket` or `socket_index`.
        what: TemplateNumber,
        /// The minimum number of digits (zero-padded).
        width: usize,
        /// How the digits are written.
        radix: Radix,
    },
}

/// How a `device_id_template` number is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Radix {
    /// `d` (the default): decimal.
    Decimal,
    /// `x`: hexadecimal, lower case.
    LowerHex,
    /// `X`: hexadecimal, upper case (as ACPI names are).
    UpperHex,
}

/// The numbers a `device_id_template` can spell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateNumber {
    /// `{index}`: the processor's global index.
    Index,
    /// `{socket}`: its socket.
    Socket,
    /// `{socket_index}`: its index within its socket.
    SocketIndex,
}

/// The processor device ids a scenario offers: a style, a template or a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceIds {
    /// `device_id_style` (with `sockets` for the socket styles).
    Style {
        /// The style.
        style: DeviceIdStyle,
        /// Processors per socket.
        per_socket: u32,
    },
    /// `device_id_template`.
    Template {
        /// The template, parsed.
        parts: Vec<TemplatePart>,
        /// Processors per socket.
        per_socket: u32,
    },
    /// `device_ids`: one per processor.
    List(Vec<String>),
}

impl DeviceIds {
    /// The device id of processor `index`.
    #[must_use]
    pub fn device_id(&self, index: u32) -> String {
        match self {
            Self::Style { style, per_socket } => style.device_id(index, *per_socket),
            Self::Template { parts, per_socket } => {
                let per_socket = (*per_socket).max(1);
                let mut id = String::new();
                for part in parts {
                    match part {
                        TemplatePart::Text(text) => id.push_str(text),
                        TemplatePart::Number { what, width, radix } => {
                            let number = match what {
                                TemplateNumber::Index => index,
                                TemplateNumber::Socket => index / per_socket,
                                TemplateNumber::SocketIndex => index % per_socket,
                            };
                            let _ = match radix {
                                Radix::Decimal => write!(id, "{number:0width$}"),
                                Radix::LowerHex => write!(id, "{number:0width$x}"),
                                Radix::UpperHex => write!(id, "{number:0width$X}"),
                            };
                        }
                    }
                }
                id
            }
            Self::List(ids) => {
                usize::try_from(index).ok().and_then(|i| ids.get(i)).cloned().unwrap_or_default()
            }
        }
    }

    /// How the ids are given, for the report: the style's name, `template` or `list`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Style { style, .. } => style.name(),
            Self::Template { .. } => "template",
            Self::List(_) => "list",
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
    /// `device_id_style`, `device_id_template` or `device_ids` (with `sockets`).
    pub device_ids: DeviceIds,
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
    /// The driver's defaults ([`ppm_engine::Config::new`]): what an empty `Parameters` key means.
    fn default() -> Self {
        let defaults = ppm_engine::Config::new();
        Self {
            feedback_counters: defaults.feedback_counters,
            counter_source: defaults.counter_source,
            performance_counter_view: defaults.performance_counter_view,
            nominal_mhz: defaults.nominal_mhz,
            perf_capabilities: defaults.perf_capabilities,
            device_id_patterns: None,
            transition_latency_100ns: defaults.transition_latency_100ns,
            pmu_reservation: defaults.pmu_reservation,
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
                // Validated when the scenario was read (no NUL, length, count); any other
                // UTF-16 is a pattern, as in the registry.
                let units: Vec<u16> = pattern.encode_utf16().collect();
                let _ = set.push_utf16(&units);
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
