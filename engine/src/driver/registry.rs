//! The driver's registry values, as pure data and functions.
//!
//! What the driver reads from its service's `Parameters` key (names, types, documented defaults,
//! ranges and the validation rules) and what it writes to its volatile state key (`Boot`, under the persistent-state key)
//! after registering. Nothing here calls the kernel: the driver's kernel services read raw values
//! (type and bytes) and [`super::entry`] hands them to [`read_config`]. The host integration
//! test `tests/registry_values.rs` checks every rule; the emulator feeds it a scenario's raw
//! `[registry]` values.
//!
//! The rule for every value: absent means the documented default; a value of the wrong type or
//! size, out of range, or otherwise unusable is ignored (the default stays), reported through a
//! [`Note`] so the driver can log it, and never trusted.
//!
//! IRQL: plain computation with no allocation, callable at any IRQL; the driver uses it only
//! at `PASSIVE_LEVEL`, in `DriverEntry`.

use core::fmt;

use crate::config::{
    COUNTER_SOURCE_CHOICES, Config, FEEDBACK_COUNTER_CHOICES, MAX_NOMINAL_MHZ,
    PMU_RESERVATION_CHOICES, value_of_code,
};
use crate::counters::{NoCountersReason, NominalRateSource};
use crate::device_id::{DeviceIdPatterns, MAX_PATTERN_UNITS, PatternError};
use crate::perf::{PerfCapabilities, PerfSource};

/// `REG_SZ` (`winnt.h`): a NUL-terminated UTF-16 string.
pub const REG_SZ: u32 = 1;
/// `REG_DWORD` (`winnt.h`): a little-endian 32-bit number.
pub const REG_DWORD: u32 = 4;
/// `REG_MULTI_SZ` (`winnt.h`): NUL-terminated UTF-16 strings, ended by an empty string.
pub const REG_MULTI_SZ: u32 = 7;
/// `REG_OPTION_VOLATILE` (`winnt.h`): a key that lives in memory only and is gone after a
/// reboot. The `Boot` key is created with it, so it never shows a previous boot's state.
pub const REG_OPTION_VOLATILE: u32 = 1;

/// The most bytes of one value the driver reads; a larger value is ignored. Enough for the
/// largest pattern list the engine holds (16 patterns of 48 UTF-16 units with their NULs).
pub const VALUE_BUFFER_BYTES: usize = 2048;
/// The longest value or key name the driver uses, in UTF-16 units.
pub const MAX_NAME_UNITS: usize = 64;

/// The largest perf level accepted from the registry (the same bound as
/// [`MAX_NOMINAL_MHZ`]: the engine's flat fallback expresses perf in MHz).
pub const MAX_PERFORMANCE_LEVEL: u32 = MAX_NOMINAL_MHZ;
/// The largest `TransitionLatency100ns` accepted: 0.
///
/// The PEP answers `QUERY_CAPABILITIES` with `PerformanceStatesSupported` FALSE (perf control stays with ACPI), so a worst-case perf
/// transition latency in `QUERY_DOMAIN_INFO` would describe transitions the PEP does not make;
/// any other value is ignored as [`Problem::NoPerfStates`].
pub const MAX_TRANSITION_LATENCY_100NS: u32 = 0;

/// The value names under `Parameters`.
pub mod names {
    /// `REG_DWORD` 0 or 1, default 1: report feedback counters where the hardware has them.
    pub const FEEDBACK_COUNTERS: &str = "FeedbackCounters";
    /// `REG_DWORD` 0..=4, default 0: which counter sources the engine may select.
    pub const COUNTER_SOURCE: &str = "CounterSource";
    /// `REG_DWORD` 0 or 1, default 0: also describe the PERFORMANCE view of the counters.
    pub const PERFORMANCE_COUNTER_VIEW: &str = "PerformanceCounterView";
    /// `REG_DWORD` 1..=100000, default absent (detected): the nominal counter's rate in MHz.
    pub const NOMINAL_MHZ: &str = "NominalMhz";
    /// `REG_DWORD` 1..=100000, all four perf values or none, default absent (detected).
    pub const HIGHEST_PERFORMANCE: &str = "HighestPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const NOMINAL_PERFORMANCE: &str = "NominalPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const LOWEST_NONLINEAR_PERFORMANCE: &str = "LowestNonlinearPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const LOWEST_PERFORMANCE: &str = "LowestPerformance";
    /// `REG_MULTI_SZ`, default the engine's patterns: processor device-id patterns.
    pub const PROCESSOR_DEVICE_ID_PATTERNS: &str = "ProcessorDeviceIdPatterns";
    /// `REG_DWORD` 0 only, default 0: worst-case perf transition latency (100 ns units); any
    /// other value describes nothing ([`super::MAX_TRANSITION_LATENCY_100NS`]) and is ignored.
    pub const TRANSITION_LATENCY_100NS: &str = "TransitionLatency100ns";
    /// `REG_DWORD` 0..=1, default 0: how the PMU is reserved for the fixed-counter source
    /// (0 = exclusive ownership, `ResourceList` NULL; 1 = one range over every counter index).
    pub const PMU_RESERVATION: &str = "PmuReservation";
    /// `REG_DWORD` 0 or 1, default 0: 1 makes `DriverEntry` skip the registration.
    ///
    /// The service then loads inert (boot safety: settable offline to recover a test VM). Any
    /// other present value is reported and treated as 1: whoever set it meant to stop the PEP.
    pub const SKIP_REGISTRATION: &str = "SkipRegistration";
    /// Every value the driver reads, in the order it reads them.
    pub const ALL: [&str; 12] = [
        SKIP_REGISTRATION,
        FEEDBACK_COUNTERS,
        COUNTER_SOURCE,
        PERFORMANCE_COUNTER_VIEW,
        NOMINAL_MHZ,
        HIGHEST_PERFORMANCE,
        NOMINAL_PERFORMANCE,
        LOWEST_NONLINEAR_PERFORMANCE,
        LOWEST_PERFORMANCE,
        PROCESSOR_DEVICE_ID_PATTERNS,
        TRANSITION_LATENCY_100NS,
        PMU_RESERVATION,
    ];
}

/// The names the driver writes under its volatile state key.
pub mod state {
    /// The volatile subkey of the driver's persistent-state key
    /// (`WdfDriverOpenPersistentStateRegistryKey`; `Parameters` is for settings only).
    pub const KEY: &str = "Boot";
    /// `REG_DWORD`: 1 after `PoFxRegisterPluginEx` succeeded, 0 when initialisation failed.
    pub const REGISTERED: &str = "Registered";
    /// `REG_SZ`: the initialisation step that failed (only when `Registered` is 0).
    pub const FAILED_STEP: &str = "FailedStep";
    /// `REG_DWORD`: the `NTSTATUS` of the failed step (only when `Registered` is 0).
    pub const FAILURE_STATUS: &str = "FailureStatus";
    /// `REG_DWORD`: feedback counters described per processor.
    pub const FEEDBACK_COUNTER_COUNT: &str = "FeedbackCounterCount";
    /// `REG_SZ`: the counter source (`none`, `aperf-mperf`, ...).
    pub const COUNTER_SOURCE: &str = "CounterSource";
    /// `REG_SZ`: why there are no counters (`none` when there are).
    pub const NO_COUNTERS_REASON: &str = "NoCountersReason";
    /// `REG_DWORD`: the nominal rate in MHz (0 when unknown).
    pub const NOMINAL_MHZ: &str = "NominalMhz";
    /// `REG_SZ`: where the nominal rate came from.
    pub const NOMINAL_RATE_SOURCE: &str = "NominalRateSource";
    /// `REG_DWORD`: the nominal rate measured at initialisation, in MHz (0 when not measured).
    pub const CALIBRATED_MHZ: &str = "CalibratedMhz";
    /// `REG_DWORD`: the perf capabilities served.
    pub const HIGHEST_PERFORMANCE: &str = "HighestPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const NOMINAL_PERFORMANCE: &str = "NominalPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const LOWEST_NONLINEAR_PERFORMANCE: &str = "LowestNonlinearPerformance";
    /// See [`HIGHEST_PERFORMANCE`].
    pub const LOWEST_PERFORMANCE: &str = "LowestPerformance";
    /// `REG_SZ`: where the perf capabilities came from.
    pub const PERF_SOURCE: &str = "PerfSource";
    /// `REG_DWORD`: processor devices the table can hold (the maximum processor count).
    pub const PROCESSOR_TABLE_CAPACITY: &str = "ProcessorTableCapacity";
    /// `REG_DWORD`: processor device-id patterns in use.
    pub const DEVICE_ID_PATTERN_COUNT: &str = "DeviceIdPatternCount";
    /// `REG_DWORD`: configuration values that were ignored (each one logged).
    pub const CONFIGURATION_ISSUES: &str = "ConfigurationIssues";
    /// The prefix of `REG_SZ` values `ConfigurationIssue1`, `ConfigurationIssue2`, ….
    ///
    /// They are the first [`MAX_LISTED_ISSUES`] of the `ConfigurationIssues`, in the order found, each
    /// `VALUE: REASON` (the value's name under `Parameters`, then why it was ignored), written
    /// wherever `ConfigurationIssues` is.
    pub const CONFIGURATION_ISSUE_PREFIX: &str = "ConfigurationIssue";
    /// The most ignored values listed by name in `ConfigurationIssue1`…; the count in
    /// `ConfigurationIssues` covers them all.
    pub const MAX_LISTED_ISSUES: usize = 8;
    /// `REG_SZ`: the processor architecture the driver was built for (`x64`, `arm64`).
    pub const ARCHITECTURE: &str = "Architecture";
    /// `REG_DWORD`: the `TimeDateStamp` of the running image's PE header (0 when it could not
    /// be read): which build is loaded, to compare with the package's `.sys`.
    pub const IMAGE_TIME_DATE_STAMP: &str = "ImageTimeDateStamp";
    /// `REG_SZ`: the PMU reservation for the fixed-counter source: `not-needed`, `refused`
    /// (the HAL said another owner holds the PMU), `programming-failed` or `reserved`.
    pub const PMU_RESERVATION: &str = "PmuReservation";
    /// `REG_SZ`: why `DriverEntry` loaded inert without registering (only then):
    /// `skip-registration` (the `SkipRegistration` value).
    pub const REGISTRATION_SKIPPED: &str = "RegistrationSkipped";
    /// Every value written after a successful registration, in the order written.
    pub const REGISTERED_VALUES: [&str; 18] = [
        REGISTERED,
        FEEDBACK_COUNTER_COUNT,
        COUNTER_SOURCE,
        NO_COUNTERS_REASON,
        NOMINAL_MHZ,
        NOMINAL_RATE_SOURCE,
        CALIBRATED_MHZ,
        HIGHEST_PERFORMANCE,
        NOMINAL_PERFORMANCE,
        LOWEST_NONLINEAR_PERFORMANCE,
        LOWEST_PERFORMANCE,
        PERF_SOURCE,
        PROCESSOR_TABLE_CAPACITY,
        DEVICE_ID_PATTERN_COUNT,
        CONFIGURATION_ISSUES,
        ARCHITECTURE,
        IMAGE_TIME_DATE_STAMP,
        PMU_RESERVATION,
    ];
    /// Every value written after a failed initialisation.
    pub const FAILED_VALUES: [&str; 5] =
        [REGISTERED, FAILED_STEP, FAILURE_STATUS, ARCHITECTURE, IMAGE_TIME_DATE_STAMP];
    /// Every value written when the registration was skipped.
    pub const SKIPPED_VALUES: [&str; 5] = [
        REGISTERED,
        REGISTRATION_SKIPPED,
        CONFIGURATION_ISSUES,
        ARCHITECTURE,
        IMAGE_TIME_DATE_STAMP,
    ];
}

/// The outcome of reading one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The value does not exist: the default applies.
    Absent,
    /// The value's registry type and data.
    Found {
        /// `REG_*` type.
        value_type: u32,
        /// The data, exactly as stored.
        data: &'a [u8],
    },
    /// The value is larger than [`VALUE_BUFFER_BYTES`].
    TooLarge {
        /// Its size in bytes.
        needed: u32,
    },
    /// The read failed with this `NTSTATUS`.
    Failed {
        /// The status.
        status: i32,
    },
}

/// Something that reads raw registry values (the driver: the `Parameters` key through WDF; a
/// test: a table).
pub trait ValueSource {
    /// Reads value `name`.
    fn read(&mut self, name: &'static str) -> Lookup<'_>;
}

/// Why a value was ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The value has the wrong registry type.
    WrongType {
        /// The type found.
        found: u32,
        /// The type required.
        expected: u32,
    },
    /// A `REG_DWORD` whose data is not 4 bytes long.
    WrongLength {
        /// The data length.
        bytes: usize,
    },
    /// A number outside its documented range.
    OutOfRange {
        /// The number.
        value: u32,
        /// The smallest accepted.
        min: u32,
        /// The largest accepted.
        max: u32,
    },
    /// The value is larger than [`VALUE_BUFFER_BYTES`].
    TooLarge {
        /// Its size in bytes.
        bytes: u32,
    },
    /// The registry read failed.
    ReadFailed {
        /// The `NTSTATUS`.
        status: i32,
    },
    /// Some but not all of the four perf values are present (or usable): all four are ignored.
    PerfIncomplete,
    /// The four perf values are not ordered (Lowest <= `LowestNonlinear` <= Nominal <= Highest):
    /// all four are ignored.
    PerfUnordered,
    /// A `REG_MULTI_SZ` with an odd number of bytes (not UTF-16).
    OddLength {
        /// The data length.
        bytes: usize,
    },
    /// A pattern list that yields no usable pattern: the defaults stay.
    NoPatterns,
    /// One pattern was rejected (the others are kept).
    PatternRejected {
        /// Its position in the list (from 0).
        index: usize,
        /// Why.
        error: PatternError,
    },
    /// Text after the empty string that ends a `REG_MULTI_SZ` list (ignored).
    TrailingData,
    /// A non-zero `TransitionLatency100ns`: the PEP reports no perf states
    /// (`PerformanceStatesSupported` FALSE), so the latency describes nothing; 0 is kept.
    NoPerfStates {
        /// The value.
        value: u32,
    },
    /// The `Parameters` key could not be opened: every default is kept.
    KeyUnreadable {
        /// The `NTSTATUS` of the failed open.
        status: i32,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::WrongType { found, expected } => {
                write!(f, "registry type {found}, expected {expected}; ignored")
            }
            Self::WrongLength { bytes } => write!(f, "{bytes} bytes, expected 4; ignored"),
            Self::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside {min}..={max}; ignored")
            }
            Self::TooLarge { bytes } => {
                write!(f, "{bytes} bytes, more than {VALUE_BUFFER_BYTES}; ignored")
            }
            Self::ReadFailed { status } => {
                write!(f, "read failed with status {status:#010X}; ignored")
            }
            Self::PerfIncomplete => {
                f.write_str("only some of the four perf values are usable; all four ignored")
            }
            Self::PerfUnordered => f.write_str(
                "perf values not ordered (Lowest <= LowestNonlinear <= Nominal <= Highest); \
                 all four ignored",
            ),
            Self::OddLength { bytes } => {
                write!(f, "{bytes} bytes is not UTF-16; ignored, defaults kept")
            }
            Self::NoPatterns => f.write_str("no usable pattern; defaults kept"),
            Self::PatternRejected { index, error } => {
                let why = match error {
                    PatternError::Empty => "empty",
                    PatternError::TooLong => "too long",
                    PatternError::TooMany => "too many patterns",
                    PatternError::InvalidCharacter => "invalid character",
                };
                write!(f, "pattern {index} rejected ({why})")
            }
            Self::TrailingData => f.write_str("text after the end of the list ignored"),
            Self::NoPerfStates { value } => write!(
                f,
                "{value} describes no perf transition (the PEP reports \
                 PerformanceStatesSupported FALSE); ignored"
            ),
            Self::KeyUnreadable { status } => {
                write!(f, "cannot be opened (status {status:#010X}); every default kept")
            }
        }
    }
}

/// One ignored value (or part of one), for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Note {
    /// The value name (for the perf group: `HighestPerformance`).
    pub value: &'static str,
    /// What was wrong.
    pub problem: Problem,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.value, self.problem)
    }
}

/// Builds the configuration from the values `source` holds, starting from the documented
/// defaults ([`Config::new`]); every value that is ignored is reported to `note`.
pub fn read_config(source: &mut impl ValueSource, mut note: impl FnMut(Note)) -> Config {
    let mut config = Config::new();
    if let Some(value) = read_dword(source, names::FEEDBACK_COUNTERS, 0, 1, &mut note).value()
        && let Some(policy) = value_of_code(&FEEDBACK_COUNTER_CHOICES, value)
    {
        config.feedback_counters = policy;
    }
    if let Some(value) = read_dword(source, names::COUNTER_SOURCE, 0, 4, &mut note).value()
        && let Some(preference) = value_of_code(&COUNTER_SOURCE_CHOICES, value)
    {
        config.counter_source = preference;
    }
    if let Some(value) =
        read_dword(source, names::PERFORMANCE_COUNTER_VIEW, 0, 1, &mut note).value()
    {
        config.performance_counter_view = value != 0;
    }
    if let Some(value) =
        read_dword(source, names::NOMINAL_MHZ, 1, MAX_NOMINAL_MHZ, &mut note).value()
    {
        config.nominal_mhz = Some(value);
    }
    config.perf_capabilities = read_perf_capabilities(source, &mut note);
    if let Some(patterns) = read_patterns(source, &mut note) {
        config.device_id_patterns = patterns;
    }
    // Any REG_DWORD is well-formed here; only 0 describes what the PEP does.
    match read_dword(source, names::TRANSITION_LATENCY_100NS, 0, u32::MAX, &mut note) {
        Dword::Valid(value) if value > MAX_TRANSITION_LATENCY_100NS => note(Note {
            value: names::TRANSITION_LATENCY_100NS,
            problem: Problem::NoPerfStates { value },
        }),
        Dword::Valid(value) => config.transition_latency_100ns = value,
        Dword::Absent | Dword::Rejected => {}
    }
    if let Some(value) = read_dword(source, names::PMU_RESERVATION, 0, 1, &mut note).value()
        && let Some(policy) = value_of_code(&PMU_RESERVATION_CHOICES, value)
    {
        config.pmu_reservation = policy;
    }
    config
}

/// Reads `SkipRegistration`: whether `DriverEntry` is to skip the registration.
///
/// `true` for `REG_DWORD` 1 and — fail-safe, with a [`Note`] — for any present value that is
/// not `REG_DWORD` 0 (a wrong type or size, another number, a failed read): an administrator
/// who set the value meant to keep the PEP from registering.
pub fn read_skip_registration(source: &mut impl ValueSource, mut note: impl FnMut(Note)) -> bool {
    match read_dword(source, names::SKIP_REGISTRATION, 0, 1, &mut note) {
        Dword::Absent | Dword::Valid(0) => false,
        Dword::Valid(_) | Dword::Rejected => true,
    }
}

/// A `REG_DWORD` read: absent, usable, or present but rejected (and noted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dword {
    /// Not present.
    Absent,
    /// Present and within range.
    Valid(u32),
    /// Present but unusable; a [`Note`] was reported.
    Rejected,
}

impl Dword {
    /// The usable value, if any.
    #[must_use]
    pub const fn value(self) -> Option<u32> {
        match self {
            Self::Valid(value) => Some(value),
            Self::Absent | Self::Rejected => None,
        }
    }
}

/// Reads `name` as a `REG_DWORD` within `min..=max`.
pub fn read_dword(
    source: &mut impl ValueSource,
    name: &'static str,
    min: u32,
    max: u32,
    note: &mut impl FnMut(Note),
) -> Dword {
    let problem = match source.read(name) {
        Lookup::Absent => return Dword::Absent,
        Lookup::Found { value_type, data } => match parse_dword(value_type, data, min, max) {
            Ok(value) => return Dword::Valid(value),
            Err(problem) => problem,
        },
        Lookup::TooLarge { needed } => Problem::TooLarge { bytes: needed },
        Lookup::Failed { status } => Problem::ReadFailed { status },
    };
    note(Note { value: name, problem });
    Dword::Rejected
}

/// Checks a raw value as a `REG_DWORD` within `min..=max`.
///
/// # Errors
/// The [`Problem`] that makes the value unusable.
pub fn parse_dword(value_type: u32, data: &[u8], min: u32, max: u32) -> Result<u32, Problem> {
    if value_type != REG_DWORD {
        return Err(Problem::WrongType { found: value_type, expected: REG_DWORD });
    }
    let bytes =
        <[u8; 4]>::try_from(data).map_err(|_| Problem::WrongLength { bytes: data.len() })?;
    let value = u32::from_le_bytes(bytes);
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(Problem::OutOfRange { value, min, max })
    }
}

/// Reads the four perf values: all four usable and ordered, or none at all.
fn read_perf_capabilities(
    source: &mut impl ValueSource,
    note: &mut impl FnMut(Note),
) -> Option<PerfCapabilities> {
    let mut read = |name| read_dword(source, name, 1, MAX_PERFORMANCE_LEVEL, note);
    let highest = read(names::HIGHEST_PERFORMANCE);
    let nominal = read(names::NOMINAL_PERFORMANCE);
    let lowest_nonlinear = read(names::LOWEST_NONLINEAR_PERFORMANCE);
    let lowest = read(names::LOWEST_PERFORMANCE);
    let (problem, caps) = perf_from_dwords([highest, nominal, lowest_nonlinear, lowest]);
    if let Some(problem) = problem {
        note(Note { value: names::HIGHEST_PERFORMANCE, problem });
    }
    caps
}

/// Combines the four perf reads (highest, nominal, lowest nonlinear, lowest).
///
/// All absent gives `None` silently; all valid and ordered gives the capabilities; anything
/// else gives `None` and the [`Problem`] to report.
#[must_use]
pub const fn perf_from_dwords(reads: [Dword; 4]) -> (Option<Problem>, Option<PerfCapabilities>) {
    match reads {
        [Dword::Absent, Dword::Absent, Dword::Absent, Dword::Absent] => (None, None),
        [
            Dword::Valid(highest),
            Dword::Valid(nominal),
            Dword::Valid(lowest_nonlinear),
            Dword::Valid(lowest),
        ] => {
            let caps = PerfCapabilities { highest, nominal, lowest_nonlinear, lowest };
            if caps.is_ordered() {
                (None, Some(caps))
            } else {
                (Some(Problem::PerfUnordered), None)
            }
        }
        _ => (Some(Problem::PerfIncomplete), None),
    }
}

/// Reads the processor device-id patterns: `Some` only when the value exists, is a well-formed
/// `REG_MULTI_SZ` and yields at least one usable pattern.
fn read_patterns(
    source: &mut impl ValueSource,
    note: &mut impl FnMut(Note),
) -> Option<DeviceIdPatterns> {
    let name = names::PROCESSOR_DEVICE_ID_PATTERNS;
    let problem = match source.read(name) {
        Lookup::Absent => return None,
        Lookup::Found { value_type: REG_MULTI_SZ, data } => {
            return parse_patterns(data, |problem| note(Note { value: name, problem }));
        }
        Lookup::Found { value_type, .. } => {
            Problem::WrongType { found: value_type, expected: REG_MULTI_SZ }
        }
        Lookup::TooLarge { needed } => Problem::TooLarge { bytes: needed },
        Lookup::Failed { status } => Problem::ReadFailed { status },
    };
    note(Note { value: name, problem });
    None
}

/// Parses `REG_MULTI_SZ` data into device-id patterns, reporting every problem.
///
/// The data is UTF-16LE: strings separated by NUL, the list ended by an empty string (so a
/// well-formed value ends in two NULs). A list whose final terminators are missing is accepted;
/// text after the terminating empty string is ignored and reported; data of odd length is
/// rejected whole. Each string goes through the engine's pattern rules; a rejected pattern is
/// reported and skipped. Returns `None` (defaults kept) when no pattern is usable.
pub fn parse_patterns(data: &[u8], mut problem: impl FnMut(Problem)) -> Option<DeviceIdPatterns> {
    if !data.len().is_multiple_of(2) {
        problem(Problem::OddLength { bytes: data.len() });
        return None;
    }
    if data.len() > VALUE_BUFFER_BYTES {
        problem(Problem::TooLarge { bytes: u32::try_from(data.len()).unwrap_or(u32::MAX) });
        return None;
    }
    // Decoded one string at a time into a pattern-sized buffer (no copy of the whole value on
    // the stack): a string longer than a pattern can be is rejected without being kept.
    let mut patterns = DeviceIdPatterns::empty();
    let mut string = [0u16; MAX_PATTERN_UNITS];
    let (mut length, mut too_long, mut index) = (0usize, false, 0usize);
    let mut ended = false;
    let mut trailing = false;
    // `string` is `None` for a string longer than any pattern.
    let mut finish = |string: Option<&[u16]>, index: usize, patterns: &mut DeviceIdPatterns| {
        let result =
            string.map_or(Err(PatternError::TooLong), |string| patterns.push_utf16(string));
        if let Err(error) = result {
            problem(Problem::PatternRejected { index, error });
        }
    };
    for pair in data.chunks_exact(2) {
        let &[low, high] = pair else { continue };
        let unit = u16::from_le_bytes([low, high]);
        if ended {
            trailing |= unit != 0;
        } else if unit != 0 {
            match string.get_mut(length) {
                Some(slot) => {
                    *slot = unit;
                    length = length.saturating_add(1);
                }
                None => too_long = true,
            }
        } else if length == 0 && !too_long {
            // The empty string ends the list.
            ended = true;
        } else {
            let done = (!too_long).then(|| string.get(..length).unwrap_or(&[]));
            finish(done, index, &mut patterns);
            (length, too_long, index) = (0, false, index.saturating_add(1));
        }
    }
    if !ended && (length > 0 || too_long) {
        // The list's last string lacks its NUL: accepted, as the final terminators may be.
        let done = (!too_long).then(|| string.get(..length).unwrap_or(&[]));
        finish(done, index, &mut patterns);
    }
    if trailing {
        problem(Problem::TrailingData);
    }
    if patterns.is_empty() {
        problem(Problem::NoPatterns);
        return None;
    }
    Some(patterns)
}

/// Calls `visit(index, string)` for each string of a `REG_MULTI_SZ` list given as UTF-16 units,
/// stopping at the empty string that ends the list (or at the end of the data).
///
/// # Errors
/// [`Problem::TrailingData`] when non-NUL units follow the terminating empty string (after all
/// strings before it were visited).
pub fn for_each_multi_sz(
    units: &[u16],
    mut visit: impl FnMut(usize, &[u16]),
) -> Result<(), Problem> {
    let mut rest = units;
    let mut index = 0usize;
    while !rest.is_empty() {
        let end = rest.iter().position(|&unit| unit == 0).unwrap_or(rest.len());
        let (string, after) = rest.split_at(end);
        if string.is_empty() {
            // The empty string ends the list; anything but padding NULs after it is not part of
            // the value's meaning.
            return if after.iter().all(|&unit| unit == 0) {
                Ok(())
            } else {
                Err(Problem::TrailingData)
            };
        }
        visit(index, string);
        index = index.saturating_add(1);
        rest = after.get(1..).unwrap_or(&[]);
    }
    Ok(())
}

/// Encodes an ASCII name as UTF-16 into `out`, returning the number of units, or `None` when it
/// is empty, not ASCII, contains a NUL or does not fit.
#[must_use]
pub fn encode_name(name: &str, out: &mut [u16]) -> Option<usize> {
    if name.is_empty() || !name.is_ascii() || name.contains('\0') || name.len() > out.len() {
        return None;
    }
    for (unit, byte) in out.iter_mut().zip(name.bytes()) {
        *unit = u16::from(byte);
    }
    Some(name.len())
}

/// Encodes `text` as `REG_SZ` data (UTF-16LE with its NUL terminator) into `out`, returning the
/// number of bytes, or `None` when it contains a NUL or does not fit.
#[must_use]
pub fn encode_reg_sz(text: &str, out: &mut [u8]) -> Option<usize> {
    if text.contains('\0') {
        return None;
    }
    let mut length = 0usize;
    for unit in text.encode_utf16().chain(core::iter::once(0)) {
        let end = length.checked_add(2)?;
        out.get_mut(length..end)?.copy_from_slice(&unit.to_le_bytes());
        length = end;
    }
    Some(length)
}

/// The `Boot` name of a no-counters reason (`none` when counters are reported).
#[must_use]
pub const fn no_counters_reason_name(reason: Option<NoCountersReason>) -> &'static str {
    match reason {
        None => "none",
        Some(NoCountersReason::DisabledByPolicy) => "disabled-by-policy",
        Some(NoCountersReason::NoSourceConfigured) => "no-source-configured",
        Some(NoCountersReason::NotAnnounced) => "not-announced",
        Some(NoCountersReason::PmuNotReserved) => "pmu-not-reserved",
        Some(NoCountersReason::ReadFaulted) => "read-faulted",
        Some(NoCountersReason::NotAdvancing) => "not-advancing",
        Some(NoCountersReason::NominalRateUnknown) => "nominal-rate-unknown",
        Some(NoCountersReason::CountersDisabled) => "counters-disabled",
    }
}

/// The `Boot` name of a nominal-rate source.
#[must_use]
pub const fn nominal_rate_source_name(source: NominalRateSource) -> &'static str {
    match source {
        NominalRateSource::Configuration => "configuration",
        NominalRateSource::CpuidBaseFrequency => "cpuid-base-frequency",
        NominalRateSource::PlatformInfo => "platform-info",
        NominalRateSource::Calibrated => "calibrated",
        NominalRateSource::Unknown => "unknown",
    }
}

/// The `Boot` name of a perf-capabilities source.
#[must_use]
pub const fn perf_source_name(source: PerfSource) -> &'static str {
    match source {
        PerfSource::Configuration => "configuration",
        PerfSource::IntelHwp => "intel-hwp",
        PerfSource::AmdCppc => "amd-cppc",
        PerfSource::IntelPlatformInfo => "intel-platform-info",
        PerfSource::Flat => "flat",
    }
}
