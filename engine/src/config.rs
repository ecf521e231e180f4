//! The PEP's configuration: what a user can set (the driver reads it from the service's
//! `Parameters` registry key; `ppm-sim` from a scenario file) and its documented defaults.
//!
//! A [`Config`] is plain data, validated where it is built; the engine never trusts a value it
//! cannot use (an impossible perf ordering, a zero rate) and falls back to what it detects.

use crate::device_id::DeviceIdPatterns;
use crate::perf::PerfCapabilities;

/// Whether the PEP reports feedback counters at all.
///
/// Microsoft documents that `FeedbackCounterCount` "must be zero" on x86/AMD64. The mission of
/// this PEP is APERF/MPERF feedback on x86-64, so the default is [`Self::Enabled`]: counters are
/// reported where the hardware has them. [`Self::Disabled`] restores the documented contract.
/// Registry: `FeedbackCounters` (`REG_DWORD`, 0 = disabled, 1 = enabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedbackCounterPolicy {
    /// Report counters where a usable counter source exists (default).
    Enabled,
    /// Report `FeedbackCounterCount = 0` whatever the hardware has.
    Disabled,
}

/// Which counter sources the engine may select, in which order. Registry: `CounterSource`
/// (`REG_DWORD`, the value in brackets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterSourcePreference {
    /// APERF/MPERF (the AMD read-only copies where present), then the architectural fixed
    /// counters (only where the host reserved them), then none. Default. \[0\]
    Auto,
    /// APERF/MPERF only; none when CPUID does not offer them. \[1\]
    AperfMperf,
    /// The architectural fixed counters only (`IA32_FIXED_CTR1` / `IA32_FIXED_CTR2`). \[2\]
    FixedPmc,
    /// No counter source: `FeedbackCounterCount = 0`. \[3\]
    None,
    /// The fixed counters first, then APERF/MPERF. \[4\]
    PreferFixedPmc,
}

impl CounterSourcePreference {
    /// The registry value's preference, if the value is known ([`COUNTER_SOURCE_CHOICES`]).
    #[must_use]
    pub const fn from_registry(value: u32) -> Option<Self> {
        let mut rest: &[Choice<Self>] = &COUNTER_SOURCE_CHOICES;
        while let [choice, others @ ..] = rest {
            if choice.code == value {
                return Some(choice.value);
            }
            rest = others;
        }
        None
    }

    /// Whether the preference may select the fixed counters (and so the host should reserve
    /// them when CPUID offers them).
    #[must_use]
    pub const fn allows_fixed_pmc(self) -> bool {
        matches!(self, Self::Auto | Self::FixedPmc | Self::PreferFixedPmc)
    }
}

/// How the host reserves the PMU. Registry: `PmuReservation` (`REG_DWORD`, the bracketed value;
/// names and numbers: [`PMU_RESERVATION_CHOICES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationPolicy {
    /// `ResourceList = NULL`: exclusive ownership of the PMU (documented). Default. \[0\]
    ExclusivePmu,
    /// One `ResourceTypeRange` descriptor over every counter index. \[1\]
    AllCounterIndexes,
}

/// Everything a user can configure. Built at `PASSIVE_LEVEL`; read-only afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// See [`FeedbackCounterPolicy`]. Default: enabled.
    pub feedback_counters: FeedbackCounterPolicy,
    /// See [`CounterSourcePreference`]. Default: auto.
    pub counter_source: CounterSourcePreference,
    /// Also describe a `PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE` view of the same counter pair
    /// (counter index 1, `NominalRate` = nominal performance). Default: off.
    /// Registry: `PerformanceCounterView` (`REG_DWORD`, 0/1).
    pub performance_counter_view: bool,
    /// The rate, in MHz, at which the nominal counter (MPERF) counts in C0, overriding
    /// detection. `None` (default): detected. Registry: `NominalMhz` (`REG_DWORD`, 1..=100000).
    pub nominal_mhz: Option<u32>,
    /// Perf capabilities overriding detection; used only when ordered
    /// (Lowest <= LowestNonlinear <= Nominal <= Highest, Lowest > 0). `None` (default): detected.
    /// Registry: `HighestPerformance`, `NominalPerformance`, `LowestNonlinearPerformance`,
    /// `LowestPerformance` (`REG_DWORD`, all four or none).
    pub perf_capabilities: Option<PerfCapabilities>,
    /// Device-id patterns of the processor devices this PEP accepts. Default:
    /// [`crate::device_id::DEFAULT_DEVICE_ID_PATTERNS`].
    /// Registry: `ProcessorDeviceIdPatterns` (`REG_MULTI_SZ`, replaces the defaults).
    pub device_id_patterns: DeviceIdPatterns,
    /// Worst-case perf transition latency reported in domain info, in 100 ns units. Default 0
    /// (not reported). Registry: `TransitionLatency100ns` (`REG_DWORD`).
    pub transition_latency_100ns: u32,
    /// How the host reserves the PMU for the fixed-counter source. Default: exclusive.
    /// Registry: `PmuReservation` (`REG_DWORD`, see [`ReservationPolicy`]).
    pub pmu_reservation: ReservationPolicy,
}

impl Config {
    /// The documented defaults.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            feedback_counters: FeedbackCounterPolicy::Enabled,
            counter_source: CounterSourcePreference::Auto,
            performance_counter_view: false,
            nominal_mhz: None,
            perf_capabilities: None,
            device_id_patterns: DeviceIdPatterns::defaults(),
            transition_latency_100ns: 0,
            pmu_reservation: ReservationPolicy::ExclusivePmu,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest nominal rate the engine accepts from configuration, in MHz.
pub const MAX_NOMINAL_MHZ: u32 = 100_000;

/// One named value of a `REG_DWORD` setting.
///
/// The name scenario files and the documentation use, the number the driver reads from the
/// registry, and the engine's value. The tables below are the one place where names and numbers
/// meet: the driver's registry rules ([`crate::driver::registry::read_config`]) and the
/// emulator's scenario reader both use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice<T> {
    /// The name (`aperf-mperf`).
    pub name: &'static str,
    /// The `REG_DWORD` number.
    pub code: u32,
    /// The engine's value.
    pub value: T,
}

/// `FeedbackCounters`: `enabled` (1, default) and `disabled` (0).
pub const FEEDBACK_COUNTER_CHOICES: [Choice<FeedbackCounterPolicy>; 2] = [
    Choice { name: "enabled", code: 1, value: FeedbackCounterPolicy::Enabled },
    Choice { name: "disabled", code: 0, value: FeedbackCounterPolicy::Disabled },
];

/// `CounterSource`, in the order the documentation lists them (see
/// [`CounterSourcePreference`]).
pub const COUNTER_SOURCE_CHOICES: [Choice<CounterSourcePreference>; 5] = [
    Choice { name: "auto", code: 0, value: CounterSourcePreference::Auto },
    Choice { name: "aperf-mperf", code: 1, value: CounterSourcePreference::AperfMperf },
    Choice { name: "fixed-pmc", code: 2, value: CounterSourcePreference::FixedPmc },
    Choice { name: "prefer-fixed-pmc", code: 4, value: CounterSourcePreference::PreferFixedPmc },
    Choice { name: "none", code: 3, value: CounterSourcePreference::None },
];

/// `PmuReservation` (see [`ReservationPolicy`]).
pub const PMU_RESERVATION_CHOICES: [Choice<ReservationPolicy>; 2] = [
    Choice { name: "exclusive-pmu", code: 0, value: ReservationPolicy::ExclusivePmu },
    Choice { name: "all-counter-indexes", code: 1, value: ReservationPolicy::AllCounterIndexes },
];

/// The value of `choices` whose registry number is `code`, if any. Any IRQL.
#[must_use]
pub fn value_of_code<T: Copy>(choices: &[Choice<T>], code: u32) -> Option<T> {
    choices.iter().find(|choice| choice.code == code).map(|choice| choice.value)
}

/// The registry number of `value` in `choices`, if listed. Any IRQL.
#[must_use]
pub fn code_of_value<T: Copy + PartialEq>(choices: &[Choice<T>], value: T) -> Option<u32> {
    choices.iter().find(|choice| choice.value == value).map(|choice| choice.code)
}
