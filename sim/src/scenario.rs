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
//!                                      # | aperf-mperf-faulting
//! nominal_mhz = 2000                   # required: MPERF's rate in C0 (Intel: a multiple of 100)
//! hypervisor = false                   # CPUID.1:ECX[31]
//! hwp_enabled = true                   # intel-hwp: IA32_PM_ENABLE bit 0
//! device_id_style = "sb-cpu"           # sb-cpu | pr-cpu | sb-pr | sb-p | sb-c | sb-sck
//! other_devices = ["\\_SB.PCI0"]       # replaces the CPU flavour's non-processor devices
//! [platform.perf]                      # hardware perf levels (HWP_CAPABILITIES, CPPC_CAP1,
//! highest = 40                         # ratios), each 0..=255; default derived from
//! nominal = 20                         # nominal_mhz and the fastest phase
//! lowest_nonlinear = 8
//! lowest = 4
//! [pofx]
//! duration_ms = 1000                   # required
//! sample_interval_ms = 15              # default 15
//! [config]                             # the PEP's configuration (registry values)
//! feedback_counters = "enabled"        # enabled | disabled
//! counter_source = "auto"              # auto | aperf-mperf | none
//! performance_counter_view = false
//! nominal_mhz = 2000                   # override
//! perf_capabilities = { highest = 40, nominal = 20, lowest_nonlinear = 8, lowest = 4 }
//! device_id_patterns = ["\\_SB.CPU#*"]
//! transition_latency_100ns = 0
//! [[phase]]                            # piecewise-constant load
//! start_ms = 0
//! end_ms = 500                         # optional: until the end of the run
//! processors = "all"                   # or a list of indexes
//! frequency_mhz = 3200                 # delivered frequency in C0
//! busy_percent = 100                   # C0 residency, 0..=100
//! [[event]]
//! at_ms = 500
//! kind = "counter-reset"               # counter-reset | counter-near-wrap | msr-fault
//!                                      # | wrong-processor-read
//! processors = [2]                     # or "all"
//! duration_ms = 100                    # msr-fault only (default: until the end)
//! on_processor = 3                     # wrong-processor-read only (default: the next one)
//! ```
//!
//! Where phases overlap, the one that started last wins (the later one in the file on a tie);
//! a processor no phase covers is idle (busy 0 %) at the nominal frequency. Events take effect
//! after the reads the emulated OS makes at the same instant.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::RangeInclusive;

use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy, MAX_NOMINAL_MHZ};
use ppm_engine::device_id::{DeviceIdPatterns, MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS};
use ppm_engine::perf::PerfCapabilities;
use toml::{Table, Value};

use crate::machine::{NS_PER_MS, Timeline};

/// The most processors a scenario may simulate (32 groups of 64).
pub const MAX_PROCESSORS: u32 = 2048;
/// Processors per processor group (`group = index / 64`, `number = index % 64`).
pub const PROCESSORS_PER_GROUP: u32 = 64;
/// The fastest frequency a phase may set, in MHz.
pub const MAX_FREQUENCY_MHZ: u32 = 10_000;
/// The longest run, in milliseconds (one hour of simulated time).
pub const MAX_DURATION_MS: u32 = 3_600_000;
/// The most counter reads a run may make (processors × samples), to bound memory and time.
pub const MAX_READS: u64 = 5_000_000;
/// The default `pofx.sample_interval_ms`.
pub const DEFAULT_SAMPLE_INTERVAL_MS: u32 = 15;
/// The Intel bus clock: Intel ratios are multiples of it.
pub const INTEL_BUS_MHZ: u32 = 100;

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
}

impl CpuKind {
    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::IntelHwp => "intel-hwp",
            Self::AmdCppc => "amd-cppc",
            Self::IntelLegacy => "intel-legacy",
        }
    }

    /// Whether the vendor is Intel.
    #[must_use]
    pub const fn is_intel(self) -> bool {
        matches!(self, Self::IntelHwp | Self::IntelLegacy)
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
        }
    }

    /// Whether CPUID announces the counters.
    #[must_use]
    pub const fn announced(self) -> bool {
        !matches!(self, Self::None)
    }

    /// Whether the counters can be used: announced, readable and advancing.
    #[must_use]
    pub const fn usable(self) -> bool {
        matches!(self, Self::AperfMperf)
    }
}

/// How the processor device ids PoFx offers are spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceIdStyle {
    /// `\_SB.CPU0`, `\_SB.CPU1`, … (index in hexadecimal).
    SbCpu,
    /// `\_PR.CPU0`, … (ACPI 1.0 processor scope).
    PrCpu,
    /// `\_SB.PR00`, … (two hexadecimal digits: at most 256 processors).
    SbPr,
    /// `\_SB.P000`, … (three hexadecimal digits).
    SbP,
    /// `\_SB.C000`, … (AMD style, three hexadecimal digits).
    SbC,
    /// `\_SB.SCK0.CP00`, … (socket = processor group, two hexadecimal digits per socket).
    SbSocket,
}

impl DeviceIdStyle {
    const CHOICES: [(&'static str, Self); 6] = [
        ("sb-cpu", Self::SbCpu),
        ("pr-cpu", Self::PrCpu),
        ("sb-pr", Self::SbPr),
        ("sb-p", Self::SbP),
        ("sb-c", Self::SbC),
        ("sb-sck", Self::SbSocket),
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
            Self::SbPr => 256,
            Self::SbCpu | Self::PrCpu | Self::SbP | Self::SbC | Self::SbSocket => MAX_PROCESSORS,
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
}

/// `[pofx]`: the emulated OS's timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PofxSpec {
    /// `duration_ms`: how long the runtime runs.
    pub duration_ms: u32,
    /// `sample_interval_ms`: how often every processor's counters are read.
    pub sample_interval_ms: u32,
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
}

impl EventKind {
    /// The kind names used in scenario files.
    pub const NAMES: [&'static str; 4] =
        ["counter-reset", "counter-near-wrap", "msr-fault", "wrong-processor-read"];

    /// The name used in scenario files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::CounterReset => "counter-reset",
            Self::CounterNearWrap => "counter-near-wrap",
            Self::MsrFault { .. } => "msr-fault",
            Self::WrongProcessorRead { .. } => "wrong-processor-read",
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
            &["name", "description", "platform", "pofx", "config", "phase", "event"],
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
        platform.perf = explicit_perf
            .unwrap_or_else(|| default_hardware_perf(platform.cpu, nominal_mhz, fastest));

        let config = match top.optional_table("config")? {
            Some(config_table) => read_config(config_table)?,
            None => ConfigSpec::default(),
        };

        let scenario =
            Self { name: name.to_owned(), description, platform, pofx, config, phases, events };
        scenario.check_events()?;
        Ok(scenario)
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

    /// How many feedback counters a correct PEP describes per processor on this machine with
    /// this configuration: 0 without usable counters or with the policy off, else 1 (2 with
    /// the performance view).
    #[must_use]
    pub fn expected_counter_count(&self) -> u32 {
        let usable = self.platform.counter_source.usable()
            && self.config.feedback_counters == FeedbackCounterPolicy::Enabled
            && self.config.counter_source != CounterSourcePreference::None;
        match (usable, self.config.performance_counter_view) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        }
    }
}

/// `[platform]`; the perf levels are `None` unless `[platform.perf]` gives them (the default
/// depends on the phases).
fn read_platform(table: &Table) -> Result<(PlatformSpec, Option<HardwarePerf>), ScenarioError> {
    let platform = Reader::new(
        "platform".to_owned(),
        table,
        &[
            "processors",
            "cpu",
            "counter_source",
            "nominal_mhz",
            "hypervisor",
            "hwp_enabled",
            "device_id_style",
            "other_devices",
            "perf",
        ],
    )?;
    let processors = platform.required_u32("processors", 1..=MAX_PROCESSORS)?;
    let cpu = platform.choice(
        "cpu",
        &[
            ("intel-hwp", CpuKind::IntelHwp),
            ("amd-cppc", CpuKind::AmdCppc),
            ("intel-legacy", CpuKind::IntelLegacy),
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
        ],
        CounterSourceKind::AperfMperf,
    )?;
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
    let hwp_enabled = platform.bool("hwp_enabled", true)?;
    if platform.get("hwp_enabled").is_some() && cpu != CpuKind::IntelHwp {
        return Err(platform.error("hwp_enabled", "is only valid with cpu = \"intel-hwp\""));
    }
    let device_id_style =
        platform.choice("device_id_style", &DeviceIdStyle::CHOICES, DeviceIdStyle::SbCpu)?;
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
    let spec = PlatformSpec {
        processors,
        cpu,
        counter_source,
        nominal_mhz,
        hypervisor,
        hwp_enabled,
        device_id_style,
        other_devices,
        perf: perf.unwrap_or_else(|| default_hardware_perf(cpu, nominal_mhz, nominal_mhz)),
    };
    Ok((spec, perf))
}

/// `[pofx]`, limited so that a run makes at most [`MAX_READS`] reads.
fn read_pofx(table: &Table, processors: u32) -> Result<PofxSpec, ScenarioError> {
    let pofx_reader =
        Reader::new("pofx".to_owned(), table, &["duration_ms", "sample_interval_ms"])?;
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
    let pofx = PofxSpec { duration_ms, sample_interval_ms };
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

fn read_event(
    path: &str,
    table: &Table,
    processors: u32,
    pofx: PofxSpec,
) -> Result<Event, ScenarioError> {
    let reader = Reader::new(
        path.to_owned(),
        table,
        &["at_ms", "kind", "processors", "duration_ms", "on_processor"],
    )?;
    let at_ms = reader.required_u32("at_ms", 0..=pofx.duration_ms)?;
    let kind_name = reader.required_string("kind")?;
    let set = reader.processor_set("processors", processors)?;
    let allowed: &[&str] = match kind_name {
        "counter-reset" | "counter-near-wrap" => &[],
        "msr-fault" => &["duration_ms"],
        "wrong-processor-read" => &["on_processor"],
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
    for key in ["duration_ms", "on_processor"] {
        if reader.get(key).is_some() && !allowed.contains(&key) {
            return Err(reader.error(key, &format!("is not a field of kind \"{kind_name}\"")));
        }
    }
    let kind = match kind_name {
        "counter-reset" => EventKind::CounterReset,
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
fn default_hardware_perf(cpu: CpuKind, nominal_mhz: u32, fastest_mhz: u32) -> HardwarePerf {
    let to_byte = |value: u64| u8::try_from(value.clamp(1, 255)).unwrap_or(u8::MAX);
    let (nominal, highest) = if cpu.is_intel() {
        (u64::from(nominal_mhz / INTEL_BUS_MHZ), u64::from(fastest_mhz.div_ceil(INTEL_BUS_MHZ)))
    } else {
        (120, (u64::from(fastest_mhz) * 120).div_ceil(u64::from(nominal_mhz)))
    };
    HardwarePerf {
        highest: to_byte(highest.max(nominal)),
        nominal: to_byte(nominal),
        lowest_nonlinear: to_byte(nominal / 2),
        lowest: to_byte(nominal / 4),
    }
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
            ("none", CounterSourcePreference::None),
        ],
        CounterSourcePreference::Auto,
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
            Some(PerfCapabilities {
                highest: caps_reader.required_u32("highest", 0..=u32::MAX)?,
                nominal: caps_reader.required_u32("nominal", 0..=u32::MAX)?,
                lowest_nonlinear: caps_reader.required_u32("lowest_nonlinear", 0..=u32::MAX)?,
                lowest: caps_reader.required_u32("lowest", 0..=u32::MAX)?,
            })
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
    let transition_latency_100ns =
        reader.optional_u32("transition_latency_100ns", 0..=u32::MAX)?.unwrap_or(0);
    Ok(ConfigSpec {
        feedback_counters,
        counter_source,
        performance_counter_view,
        nominal_mhz,
        perf_capabilities,
        device_id_patterns: patterns,
        transition_latency_100ns,
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
        Self { field: None, location, message: format!("invalid TOML: {message}") }
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
mod tests {
    use super::*;

    const MINIMAL: &str =
        "name = \"t\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\n[pofx]\nduration_ms = 100\n";

    fn error_of(text: &str) -> String {
        Scenario::from_toml_str(text)
            .map(|_| ())
            .expect_err("the scenario must be refused")
            .to_string()
    }

    #[test]
    fn minimal_scenario_gets_the_documented_defaults() {
        let scenario = Scenario::from_toml_str(MINIMAL).expect("valid");
        assert_eq!(scenario.platform.processors, 4);
        assert_eq!(scenario.platform.cpu, CpuKind::IntelHwp);
        assert_eq!(scenario.platform.counter_source, CounterSourceKind::AperfMperf);
        assert_eq!(scenario.pofx.sample_interval_ms, DEFAULT_SAMPLE_INTERVAL_MS);
        assert_eq!(scenario.platform.perf.nominal, 20);
        assert_eq!(scenario.expected_counter_count(), 1);
        assert!(scenario.phases.is_empty());
    }

    #[test]
    fn processor_count_out_of_range_names_the_field() {
        let text = MINIMAL.replace("processors = 4", "processors = 5000");
        assert_eq!(
            error_of(&text),
            "field `platform.processors`: expected an integer in 1..=2048, found 5000"
        );
        let text = MINIMAL.replace("processors = 4", "processors = 0");
        assert_eq!(
            error_of(&text),
            "field `platform.processors`: expected an integer in 1..=2048, found 0"
        );
        let text = MINIMAL.replace("processors = 4", "processors = \"8\"");
        assert_eq!(
            error_of(&text),
            "field `platform.processors`: expected an integer in 1..=2048, found the string \"8\""
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let text = MINIMAL.replace("[pofx]", "turbo = true\n[pofx]");
        let message = error_of(&text);
        assert!(
            message
                .starts_with("field `platform.turbo`: unknown field; expected one of `processors`"),
            "{message}"
        );
        let message = error_of(&format!("{MINIMAL}colour = 1\n"));
        assert!(message.starts_with("field `pofx.colour`: unknown field"), "{message}");
    }

    #[test]
    fn phase_errors_name_the_phase() {
        let phase = "[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 3000\nbusy_percent = 100\n";
        let two = format!(
            "{MINIMAL}{phase}{}",
            phase.replace("busy_percent = 100", "busy_percent = 101")
        );
        assert_eq!(
            error_of(&two),
            "field `phase[1].busy_percent`: expected an integer in 0..=100, found 101"
        );
        let zero = format!("{MINIMAL}{}", phase.replace("3000", "0"));
        assert_eq!(
            error_of(&zero),
            "field `phase[0].frequency_mhz`: expected an integer in 1..=10000, found 0"
        );
        let out = format!("{MINIMAL}{}", phase.replace("\"all\"", "[1, 4]"));
        assert_eq!(
            error_of(&out),
            "field `phase[0].processors[1]`: expected a processor index in 0..=3, found 4"
        );
        let twice = format!("{MINIMAL}{}", phase.replace("\"all\"", "[1, 1]"));
        assert_eq!(error_of(&twice), "field `phase[0].processors[1]`: processor 1 is listed twice");
    }

    #[test]
    fn event_errors_name_the_event() {
        let event = "[[event]]\nat_ms = 50\nkind = \"counter-reset\"\nprocessors = [0]\n";
        let unknown = format!("{MINIMAL}{}", event.replace("counter-reset", "explode"));
        assert!(
            error_of(&unknown)
                .starts_with("field `event[0].kind`: expected one of \"counter-reset\"")
        );
        let foreign = format!("{MINIMAL}{event}duration_ms = 5\n");
        assert_eq!(
            error_of(&foreign),
            "field `event[0].duration_ms`: is not a field of kind \"counter-reset\""
        );
        let late = format!("{MINIMAL}{}", event.replace("at_ms = 50", "at_ms = 500"));
        assert_eq!(
            error_of(&late),
            "field `event[0].at_ms`: expected an integer in 0..=100, found 500"
        );
        let single = format!(
            "{}{}",
            MINIMAL.replace("processors = 4", "processors = 1"),
            event.replace("counter-reset", "wrong-processor-read")
        );
        assert!(error_of(&single).contains("needs at least 2 processors"));
    }

    #[test]
    fn other_errors() {
        assert_eq!(
            error_of(
                &MINIMAL
                    .replace("sample", "x")
                    .replace("duration_ms = 100", "duration_ms = 100\nsample_interval_ms = 0")
            ),
            "field `pofx.sample_interval_ms`: expected an integer in 1..=100, found 0"
        );
        assert!(
            error_of(&MINIMAL.replace("nominal_mhz = 2000", "nominal_mhz = 2050"))
                .contains("multiple of 100")
        );
        assert!(
            error_of(
                &MINIMAL.replace("[pofx]", "device_id_style = \"sb-pr\"\nprocessors2 = 1\n[pofx]")
            )
            .contains("unknown field")
        );
        assert_eq!(
            error_of("name = \"t\"\n"),
            "field `platform`: missing; expected a [platform] table"
        );
        let syntax = error_of("name = \"t\"\n[platform\n");
        assert!(syntax.starts_with("line 2, column "), "{syntax}");
        assert!(!syntax.contains('\n'));
        let big = MINIMAL
            .replace("processors = 4", "processors = 2048")
            .replace("duration_ms = 100", "duration_ms = 3600000");
        assert!(error_of(&big).starts_with("field `pofx.sample_interval_ms`: expected at most"));
    }

    #[test]
    fn device_id_styles() {
        assert_eq!(DeviceIdStyle::SbCpu.device_id(10), "\\_SB.CPUA");
        assert_eq!(DeviceIdStyle::SbPr.device_id(10), "\\_SB.PR0A");
        assert_eq!(DeviceIdStyle::SbC.device_id(2047), "\\_SB.C7FF");
        assert_eq!(DeviceIdStyle::SbSocket.device_id(65), "\\_SB.SCK1.CP01");
        let text =
            MINIMAL.replace("processors = 4", "processors = 300\ndevice_id_style = \"sb-pr\"");
        assert!(
            error_of(&text)
                .starts_with("field `platform.device_id_style`: style \"sb-pr\" names at most 256")
        );
    }
}
