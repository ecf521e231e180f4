//! Feedback counters: the hardware pair behind them, their descriptors and their reads.
//!
//! Which pair backs them, how they are described to PoFx
//! (`PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`) and how a read (`PEP_NOTIFY_PPM_FEEDBACK_READ`)
//! turns raw hardware values into the accumulated, monotonic counts Windows expects.
//!
//! Semantics of a read, per handle: the first read is a baseline and reports 0/0; each later
//! read adds the hardware deltas since the previous read. A reading of zero for both counters
//! (a hypervisor that stopped exposing them) is no reading: totals stay, and the next real
//! reading is a new baseline. When either raw value is below the
//! previous one — the counters were reset (S3/S4 resume, a hypervisor, other software) or
//! overflowed (the SDM: when either overflows both restart at zero) — that interval adds
//! nothing and the new raw values become the baseline: a reset can lose one interval, never
//! produce a huge delta. The totals wrap only after 2^64 counts (centuries at GHz rates).

use core::sync::atomic::Ordering;

use crate::abi::{
    PEP_PROCESSOR_FEEDBACK_COUNTER, PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
    PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, PROCESSOR_FEEDBACK_TYPE_RELATIVE,
};
use crate::arm64::{self, SystemRegister};
use crate::config::{Config, CounterSourcePreference, FeedbackCounterPolicy, MAX_NOMINAL_MHZ};
use crate::cpu::CpuFeatures;
use crate::perf::PerfCapabilities;
use crate::platform::{MsrFault, Platform};
use crate::pmc::FixedCounters;
use crate::processor::{ProcessorSlot, REBASELINE};
use crate::x86::{bits, msr};

/// The most counters the engine describes per processor (a FREQUENCY and a PERFORMANCE view of
/// the same pair).
pub const MAX_FEEDBACK_COUNTERS: usize = 2;

/// How long initialisation measures the nominal counter against the platform's time source.
pub const CALIBRATION_MICROSECONDS: u32 = 10_000;

/// The hardware counter pair behind the feedback counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterSource {
    /// No usable pair: `FeedbackCounterCount = 0`.
    None,
    /// `IA32_APERF` / `IA32_MPERF` (0xE8 / 0xE7).
    AperfMperf,
    /// AMD's read-only copies (0xC00000E8 / 0xC00000E7), preferred on AMD: other software is
    /// known to reset the writable pair there.
    AmdAperfMperfReadOnly,
    /// The architectural fixed counters `IA32_FIXED_CTR1` (unhalted core cycles) and
    /// `IA32_FIXED_CTR2` (unhalted reference cycles), `width` bits wide: they wrap modulo
    /// 2^width, which is not a reset. Only where the host reserved the PMU.
    FixedPmc {
        /// The counters' bit width.
        width: u32,
    },
    /// AArch64's Activity Monitors: group-0 counters 0 (processor cycles) and 1
    /// (constant-frequency cycles at `CNTFRQ_EL0`), see [`crate::arm64`]. `NominalCount` is the
    /// constant count scaled to the nominal rate (see [`ConstantScale`]).
    Amu,
}

impl CounterSource {
    /// The (actual, nominal) MSR pair, if any.
    #[must_use]
    pub const fn msrs(self) -> Option<(u32, u32)> {
        match self {
            // The AMU's counters are system registers, not MSRs.
            Self::None | Self::Amu => None,
            Self::AperfMperf => Some((msr::IA32_APERF, msr::IA32_MPERF)),
            Self::AmdAperfMperfReadOnly => {
                Some((msr::AMD_APERF_READ_ONLY, msr::AMD_MPERF_READ_ONLY))
            }
            Self::FixedPmc { .. } => Some((msr::IA32_FIXED_CTR1, msr::IA32_FIXED_CTR2)),
        }
    }

    /// The mask of a raw value: all ones below the counter width.
    #[must_use]
    pub const fn mask(self) -> u64 {
        match self {
            Self::FixedPmc { width } if width < 64 => (1u64 << width).wrapping_sub(1),
            _ => u64::MAX,
        }
    }

    /// A short stable name (`none`, `aperf-mperf`, `amd-aperf-mperf-ro`, `fixed-pmc`, `amu`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::AperfMperf => "aperf-mperf",
            Self::AmdAperfMperfReadOnly => "amd-aperf-mperf-ro",
            Self::FixedPmc { .. } => "fixed-pmc",
            Self::Amu => "amu",
        }
    }
}

/// How a counter pair is read and accumulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    /// Two 64-bit MSRs that reset (APERF/MPERF).
    Plain,
    /// Two MSRs that wrap modulo 2^width (the fixed counters), deltas bounded by the TSC.
    Modular,
    /// The Activity Monitors' system registers (AArch64).
    Amu,
}

/// Why no counters are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoCountersReason {
    /// The configuration's policy turned them off.
    DisabledByPolicy,
    /// The configuration asked for no counter source.
    NoSourceConfigured,
    /// CPUID announces no supported counter pair.
    NotAnnounced,
    /// CPUID announces the fixed counters, but the host did not reserve the PMU (the HAL
    /// refused: another owner holds it).
    PmuNotReserved,
    /// The announced counters faulted when read.
    ReadFaulted,
    /// The announced counters did not advance over a busy calibration interval
    /// (a hypervisor exposing zeros).
    NotAdvancing,
    /// No nominal rate could be configured, read or measured.
    NominalRateUnknown,
    /// The Activity Monitors are implemented, but firmware left their cycle counters (group 0,
    /// counters 0 and 1) disabled in `AMCNTENSET0_EL0` (the PEP never enables them).
    CountersDisabled,
}

/// Where the nominal rate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NominalRateSource {
    /// The configuration's override.
    Configuration,
    /// CPUID leaf 16h base frequency.
    CpuidBaseFrequency,
    /// `MSR_PLATFORM_INFO` maximum non-turbo ratio × 100 MHz.
    PlatformInfo,
    /// Measured against the platform's time source during initialisation.
    Calibrated,
    /// Not known.
    Unknown,
}

/// The counter setup decided at initialisation; read-only afterwards.
#[derive(Clone, Copy, Debug)]
pub struct FeedbackSetup {
    /// The selected source.
    pub source: CounterSource,
    /// Why there are no counters, when `count == 0`.
    pub reason: Option<NoCountersReason>,
    /// The actual-count MSR read first.
    pub actual_msr: u32,
    /// The nominal-count MSR read second.
    pub nominal_msr: u32,
    /// The mask of a raw value (all ones for 64-bit counters).
    pub mask: u64,
    /// How the pair is read and accumulated.
    pub kind: PairKind,
    /// [`CounterSource::Amu`]: the constant-frequency counter's rate (`CNTFRQ_EL0`), Hz.
    pub constant_hz: u64,
    /// [`CounterSource::Amu`]: constant ticks to nominal-rate cycles.
    pub constant_scale: ConstantScale,
    /// For modular sources: the most actual cycles a reference cycle can explain.
    pub max_actual_per_reference: u64,
    /// The most time-stamp ticks a counter pair's reads may span before it is read again
    /// ([`PAIR_BOUND_NS`] at the nominal rate).
    pub max_pair_ticks: u64,
    /// Counters described per processor (0..=2).
    pub count: u32,
    /// The descriptors, the first `count` valid.
    pub descriptors: [PEP_PROCESSOR_FEEDBACK_COUNTER; MAX_FEEDBACK_COUNTERS],
    /// The nominal rate in MHz (0 when unknown).
    pub nominal_mhz: u32,
    /// Where the nominal rate came from.
    pub nominal_source: NominalRateSource,
    /// The rate measured during initialisation, in MHz (0 when not measured).
    pub calibrated_mhz: u32,
}

impl FeedbackSetup {
    const fn none(reason: NoCountersReason) -> Self {
        Self {
            source: CounterSource::None,
            reason: Some(reason),
            actual_msr: 0,
            nominal_msr: 0,
            mask: u64::MAX,
            kind: PairKind::Plain,
            constant_hz: 0,
            constant_scale: ConstantScale::IDENTITY,
            max_actual_per_reference: MIN_ACTUAL_PER_REFERENCE,
            // `pair_bound_ticks(0)`: the bound at 1000 MHz.
            max_pair_ticks: PAIR_BOUND_NS,
            count: 0,
            descriptors: [PEP_PROCESSOR_FEEDBACK_COUNTER::new(false, 0, 0, false, 0);
                MAX_FEEDBACK_COUNTERS],
            nominal_mhz: 0,
            nominal_source: NominalRateSource::Unknown,
            calibrated_mhz: 0,
        }
    }

    /// Selects the source, measures it and describes the counters. `PASSIVE_LEVEL`, on one
    /// processor for the whole call (the caller pins the thread: the calibration reads the
    /// nominal counter twice and both reads must come from the same processor).
    pub(crate) fn detect<P: Platform>(
        platform: &P,
        cpu: &CpuFeatures,
        config: &Config,
        perf: impl FnOnce(u32) -> PerfCapabilities,
    ) -> (Self, PerfCapabilities) {
        let mut nominal = configured_nominal(config);
        let setup = Self::select(platform, cpu, config, &mut nominal);
        if nominal.1 == NominalRateSource::Unknown {
            // No usable counters: still report the documented rate where the hardware states one.
            nominal = hardware_nominal(platform, cpu).unwrap_or(nominal);
        }
        let nominal_mhz = nominal.0;
        let perf = perf(nominal_mhz);
        let mut setup = match setup {
            Ok(setup) => setup,
            Err(reason) => {
                let mut none = Self::none(reason);
                none.nominal_mhz = nominal_mhz;
                none.nominal_source = nominal.1;
                return (none, perf);
            }
        };
        setup.nominal_mhz = nominal_mhz;
        setup.nominal_source = nominal.1;
        let frequency = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
            true,
            PROCESSOR_FEEDBACK_TYPE_RELATIVE,
            PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
            true,
            nominal_mhz,
        );
        let performance = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
            true,
            PROCESSOR_FEEDBACK_TYPE_RELATIVE,
            PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE,
            true,
            perf.nominal,
        );
        setup.descriptors = [frequency, performance];
        setup.max_actual_per_reference = max_actual_per_reference(&perf);
        if setup.kind == PairKind::Amu {
            setup.constant_scale = ConstantScale::new(nominal_mhz, setup.constant_hz);
        } else {
            // The TSC's rate; the AMU's time stamp runs at CNTFRQ (set by `select_amu`).
            setup.max_pair_ticks = pair_bound_ticks(nominal_mhz);
        }
        setup.count = if config.performance_counter_view { 2 } else { 1 };
        (setup, perf)
    }

    fn select<P: Platform>(
        platform: &P,
        cpu: &CpuFeatures,
        config: &Config,
        nominal: &mut (u32, NominalRateSource),
    ) -> Result<Self, NoCountersReason> {
        if config.feedback_counters == FeedbackCounterPolicy::Disabled {
            return Err(NoCountersReason::DisabledByPolicy);
        }
        // AArch64: the ID register is readable at EL1 there and nowhere else.
        if let Ok(features) = platform.read_system_register(SystemRegister::IdAa64Pfr0El1) {
            return Self::select_amu(platform, config, features, nominal);
        }
        let aperf_mperf = if cpu.has_amd_read_only_copies() {
            Ok(CounterSource::AmdAperfMperfReadOnly)
        } else if cpu.has_aperf_mperf() {
            Ok(CounterSource::AperfMperf)
        } else {
            Err(NoCountersReason::NotAnnounced)
        };
        let fixed_pmc = match FixedCounters::detect(cpu) {
            Some(counters) if platform.fixed_counters_reserved() => {
                Ok(CounterSource::FixedPmc { width: counters.width })
            }
            Some(_) => Err(NoCountersReason::PmuNotReserved),
            None => Err(NoCountersReason::NotAnnounced),
        };
        let source = match config.counter_source {
            CounterSourcePreference::None => Err(NoCountersReason::NoSourceConfigured),
            CounterSourcePreference::AperfMperf => aperf_mperf,
            CounterSourcePreference::FixedPmc => fixed_pmc,
            CounterSourcePreference::Auto => {
                aperf_mperf.or_else(|aperf| fixed_pmc.map_err(|fixed| worse(aperf, fixed)))
            }
            CounterSourcePreference::PreferFixedPmc => {
                fixed_pmc.or_else(|fixed| aperf_mperf.map_err(|aperf| worse(aperf, fixed)))
            }
        }?;
        let (actual_msr, nominal_msr) = source.msrs().ok_or(NoCountersReason::NotAnnounced)?;
        let calibrated_mhz = calibrate(platform, actual_msr, nominal_msr, source.mask())?;
        if nominal.1 == NominalRateSource::Unknown {
            *nominal = hardware_nominal(platform, cpu)
                .unwrap_or((calibrated_mhz, NominalRateSource::Calibrated));
        }
        if nominal.0 == 0 {
            return Err(NoCountersReason::NominalRateUnknown);
        }
        let mut setup = Self::none(NoCountersReason::NotAnnounced);
        setup.source = source;
        setup.reason = None;
        setup.mask = source.mask();
        if matches!(source, CounterSource::FixedPmc { .. }) {
            setup.kind = PairKind::Modular;
        }
        setup.actual_msr = actual_msr;
        setup.nominal_msr = nominal_msr;
        setup.calibrated_mhz = calibrated_mhz;
        Ok(setup)
    }
}

impl FeedbackSetup {
    /// The Activity Monitors, if `ID_AA64PFR0_EL1` (`features`) announces them, their group-0
    /// cycle counters exist and are enabled, and both advance over a busy calibration interval.
    /// No AMU register is touched unless the ID register announced the AMU.
    fn select_amu<P: Platform>(
        platform: &P,
        config: &Config,
        features: u64,
        nominal: &mut (u32, NominalRateSource),
    ) -> Result<Self, NoCountersReason> {
        match config.counter_source {
            CounterSourcePreference::None => return Err(NoCountersReason::NoSourceConfigured),
            // APERF/MPERF and the fixed counters do not exist here.
            CounterSourcePreference::AperfMperf | CounterSourcePreference::FixedPmc => {
                return Err(NoCountersReason::NotAnnounced);
            }
            CounterSourcePreference::Auto | CounterSourcePreference::PreferFixedPmc => {}
        }
        if arm64::amu_version(features) == 0 {
            return Err(NoCountersReason::NotAnnounced);
        }
        let read = |register| {
            platform
                .read_system_register(register)
                .map_err(|MsrFault| NoCountersReason::ReadFaulted)
        };
        if arm64::group0_counters(read(SystemRegister::AmcgcrEl0)?) < 2 {
            return Err(NoCountersReason::NotAnnounced);
        }
        let enabled = read(SystemRegister::Amcntenset0El0)?;
        if enabled & arm64::GROUP0_CYCLE_COUNTERS != arm64::GROUP0_CYCLE_COUNTERS {
            return Err(NoCountersReason::CountersDisabled);
        }
        let constant_hz = read(SystemRegister::CntfrqEl0)? & u64::from(u32::MAX);
        if constant_hz == 0 {
            return Err(NoCountersReason::NotAnnounced);
        }
        let measured_mhz = calibrate_amu(platform, constant_hz)?;
        if nominal.1 == NominalRateSource::Unknown {
            *nominal = (measured_mhz, NominalRateSource::Calibrated);
        }
        if nominal.0 == 0 {
            return Err(NoCountersReason::NominalRateUnknown);
        }
        let mut setup = Self::none(NoCountersReason::NotAnnounced);
        setup.source = CounterSource::Amu;
        setup.reason = None;
        setup.kind = PairKind::Amu;
        setup.constant_hz = constant_hz;
        // The platform's time stamp on ARM64 is the virtual count (`CNTVCT_EL0`), at the same
        // rate as the constant counter.
        setup.max_pair_ticks = PAIR_BOUND_NS.saturating_mul(constant_hz) / 1_000_000_000;
        setup.calibrated_mhz = measured_mhz;
        Ok(setup)
    }
}

/// Reads the Activity Monitors' cycle counters, busy-waits [`CALIBRATION_MICROSECONDS`] and
/// reads them again: fails when a read faults or either counter did not advance; otherwise
/// returns the processor's delivered frequency over the wait in MHz (processor cycles per
/// constant-frequency tick × `constant_hz`), the nominal rate when none is configured — any
/// rate serves Windows' `NominalRate × ΔActual / ΔNominal`, since `NominalCount` is scaled to
/// it.
fn calibrate_amu<P: Platform>(platform: &P, constant_hz: u64) -> Result<u32, NoCountersReason> {
    let read = || -> Result<(u64, u64), MsrFault> {
        platform.with_interrupts_masked(|| {
            let actual = platform.read_system_register(SystemRegister::Amevcntr00El0)?;
            let constant = platform.read_system_register(SystemRegister::Amevcntr01El0)?;
            Ok((actual, constant))
        })
    };
    let (start_actual, start_constant) =
        read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    platform.stall_microseconds(CALIBRATION_MICROSECONDS);
    let (end_actual, end_constant) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let actual = end_actual.saturating_sub(start_actual);
    let constant = end_constant.saturating_sub(start_constant);
    if actual == 0 || constant == 0 {
        return Err(NoCountersReason::NotAdvancing);
    }
    // MHz = actual / (constant / constant_hz) / 1e6, rounded.
    let numerator = u128::from(actual).saturating_mul(u128::from(constant_hz));
    Ok(rounded_mhz(numerator, u128::from(constant).saturating_mul(1_000_000)))
}

/// `numerator / denominator` rounded to the nearest MHz, at most [`MAX_NOMINAL_MHZ`] (0 when
/// the denominator is 0).
fn rounded_mhz(numerator: u128, denominator: u128) -> u32 {
    let mhz = numerator.saturating_add(denominator / 2).checked_div(denominator).unwrap_or(0);
    u32::try_from(mhz).unwrap_or(0).min(MAX_NOMINAL_MHZ)
}

/// The more telling of two reasons for having no source: a refused reservation says more than
/// an absent feature.
const fn worse(aperf: NoCountersReason, fixed: NoCountersReason) -> NoCountersReason {
    match fixed {
        NoCountersReason::NotAnnounced => aperf,
        _ => fixed,
    }
}

fn configured_nominal(config: &Config) -> (u32, NominalRateSource) {
    match config.nominal_mhz {
        Some(mhz) if (1..=MAX_NOMINAL_MHZ).contains(&mhz) => {
            (mhz, NominalRateSource::Configuration)
        }
        _ => (0, NominalRateSource::Unknown),
    }
}

fn hardware_nominal<P: Platform>(
    platform: &P,
    cpu: &CpuFeatures,
) -> Option<(u32, NominalRateSource)> {
    if cpu.is_intel && cpu.base_mhz != 0 {
        return Some((cpu.base_mhz, NominalRateSource::CpuidBaseFrequency));
    }
    if cpu.has_intel_platform_msrs() {
        let info = platform.read_msr(msr::MSR_PLATFORM_INFO).ok()?;
        let ratio = u32::try_from(bits(info, 8, 15)).ok()?;
        let mhz = ratio.checked_mul(100).filter(|&mhz| mhz != 0)?;
        return Some((mhz, NominalRateSource::PlatformInfo));
    }
    None
}

/// Reads the pair, busy-waits [`CALIBRATION_MICROSECONDS`] and reads it again: fails when the
/// reads fault or either counter did not advance; otherwise returns the nominal counter's rate
/// in MHz measured against the platform's time source (0 when the time source did not advance).
fn calibrate<P: Platform>(
    platform: &P,
    actual_msr: u32,
    nominal_msr: u32,
    mask: u64,
) -> Result<u32, NoCountersReason> {
    let read = || -> Result<(u64, u64), MsrFault> {
        platform.with_interrupts_masked(|| {
            let actual = platform.read_msr(actual_msr)?;
            let nominal = platform.read_msr(nominal_msr)?;
            Ok((actual, nominal))
        })
    };
    // Each pair is bracketed by the time source and placed at the bracket's midpoint: the
    // nominal count is sampled at the same point of both pairs, so the time the reads take
    // (1–2 µs each on a hypervisor that intercepts them) cancels instead of lengthening the
    // time window by a pair (0.03 % of 10 ms, enough to round 2000 MHz down to 1999).
    let start_before = platform.performance_counter();
    let (start_actual, start_nominal) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let start_after = platform.performance_counter();
    platform.stall_microseconds(CALIBRATION_MICROSECONDS);
    let end_before = platform.performance_counter();
    let (end_actual, end_nominal) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let end_after = platform.performance_counter();
    let start_time = start_before;
    let (actual, nominal) = if mask == u64::MAX {
        (end_actual.saturating_sub(start_actual), end_nominal.saturating_sub(start_nominal))
    } else {
        (
            end_actual.wrapping_sub(start_actual) & mask,
            end_nominal.wrapping_sub(start_nominal) & mask,
        )
    };
    if actual == 0 || nominal == 0 {
        return Err(NoCountersReason::NotAdvancing);
    }
    // Twice the ticks between the brackets' midpoints.
    let twice_ticks =
        u128::from(end_before.ticks).saturating_add(u128::from(end_after.ticks)).saturating_sub(
            u128::from(start_before.ticks).saturating_add(u128::from(start_after.ticks)),
        );
    if twice_ticks == 0 || start_time.frequency == 0 {
        return Ok(0);
    }
    // MHz = nominal counts / seconds / 1e6 = nominal × frequency / ticks / 1e6, rounded.
    let numerator =
        u128::from(nominal).saturating_mul(u128::from(start_time.frequency)).saturating_mul(2);
    Ok(rounded_mhz(numerator, twice_ticks.saturating_mul(1_000_000)))
}

/// The accumulated counts a read reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accumulated {
    pub actual: u64,
    pub nominal: u64,
}

/// How long the two reads of a counter pair may take before the pair is read again, ns.
///
/// With interrupts masked, nothing the OS does separates the two reads, but the platform can:
/// an SMI (tens to hundreds of µs in SMM), an NMI, or on a VM the host descheduling the
/// virtual processor. Counts that accrue between the actual and the nominal read skew that
/// interval's ratio by the stall over the interval (100 µs in a 15 ms interval: 0.7 %) and the
/// next interval's the other way. A bare-metal pair takes 0.1–0.3 µs (two `RDMSR`s of 100–300
/// cycles), a hypervisor-intercepted one 2–4 µs; 10 µs is far above both and below any
/// stall worth the name. A slower pair is read once more and the pair whose reads were closer
/// in time is kept: a served pair is wrong by more than [`PAIR_BOUND_NS`] only when both
/// attempts were interrupted.
pub const PAIR_BOUND_NS: u64 = 10_000;

/// [`PAIR_BOUND_NS`] in time-stamp ticks on x86: the TSC runs at about the nominal rate
/// (invariant TSC); with the rate unknown, 1000 MHz (a TSC faster than that only makes the bound
/// shorter, so a stalled pair is still read again).
fn pair_bound_ticks(nominal_mhz: u32) -> u64 {
    let mhz = u64::from(nominal_mhz.max(1_000));
    PAIR_BOUND_NS.saturating_mul(mhz) / 1_000
}

/// Reads the actual then the nominal counter, bracketed by time stamps; a pair whose reads
/// took longer than [`FeedbackSetup::max_pair_ticks`] is read again (see [`PAIR_BOUND_NS`]).
/// Returns the pair and the time stamp read after it. Interrupts are masked (caller).
#[inline]
fn read_pair<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
) -> Result<(u64, u64, Option<u64>), MsrFault> {
    // Spelled out rather than through `read_bounded_pair`: the hot path stays as lean as the
    // compiler makes it (56 rather than 61 instructions beyond the platform's reads, measured
    // with `scripts/measure-read-path.sh`).
    let start = platform.read_timestamp();
    let actual = platform.read_msr(setup.actual_msr)?;
    let nominal = platform.read_msr(setup.nominal_msr)?;
    let end = platform.read_timestamp();
    if let (Some(start), Some(end)) = (start, end) {
        let span = end.wrapping_sub(start);
        if span > setup.max_pair_ticks {
            let read = || {
                Ok((platform.read_msr(setup.actual_msr)?, platform.read_msr(setup.nominal_msr)?))
            };
            return read_pair_again(platform, &read, (actual, nominal, end, span));
        }
    }
    Ok((actual, nominal, end))
}

/// [`read_pair`] with the pair read by `read` (MSRs, or the Activity Monitors' registers).
#[inline]
fn read_bounded_pair<P: Platform>(
    platform: &P,
    max_ticks: u64,
    read: impl Fn() -> Result<(u64, u64), MsrFault>,
) -> Result<(u64, u64, Option<u64>), MsrFault> {
    let start = platform.read_timestamp();
    let (actual, nominal) = read()?;
    let end = platform.read_timestamp();
    if let (Some(start), Some(end)) = (start, end) {
        let span = end.wrapping_sub(start);
        if span > max_ticks {
            return read_pair_again(platform, &read, (actual, nominal, end, span));
        }
    }
    Ok((actual, nominal, end))
}

/// The second attempt of [`read_pair`], after a first pair (`actual`, `nominal`, time stamp
/// after it) whose reads spanned `span` ticks: the pair whose reads were closer in time, with
/// its own time stamp.
#[cold]
#[inline(never)]
fn read_pair_again<P: Platform>(
    platform: &P,
    read: &impl Fn() -> Result<(u64, u64), MsrFault>,
    (first_actual, first_nominal, first_end, first_span): (u64, u64, u64, u64),
) -> Result<(u64, u64, Option<u64>), MsrFault> {
    let start = platform.read_timestamp();
    let (actual, nominal) = read()?;
    let end = platform.read_timestamp();
    let span = match (start, end) {
        (Some(start), Some(end)) => end.wrapping_sub(start),
        _ => u64::MAX,
    };
    Ok(if span < first_span {
        (actual, nominal, end)
    } else {
        (first_actual, first_nominal, Some(first_end))
    })
}

/// Reads the counter pair on the current processor with interrupts masked and accumulates it
/// into `slot`. Any IRQL; the caller has established that the current processor owns `slot`.
///
/// # Errors
/// [`MsrFault`] when a read faulted; `slot` is then unchanged.
#[inline]
pub(crate) fn read_and_accumulate<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
    slot: &ProcessorSlot,
) -> Result<Accumulated, MsrFault> {
    if setup.kind != PairKind::Plain {
        return read_and_accumulate_other(platform, setup, slot);
    }
    platform.with_interrupts_masked(|| {
        let (actual, nominal, _) = read_pair(platform, setup)?;
        Ok(accumulate(slot, actual, nominal))
    })
}

/// Accumulates a pair of 64-bit counters that reset (rather than wrap) into `slot`'s totals.
/// Interrupts are masked (caller).
#[inline]
fn accumulate(slot: &ProcessorSlot, actual: u64, nominal: u64) -> Accumulated {
    {
        if actual | nominal == 0 {
            return unchanged(slot);
        }
        let last_actual = slot.last_actual.load(Ordering::Relaxed);
        let last_nominal = slot.last_nominal.load(Ordering::Relaxed);
        slot.last_actual.store(actual, Ordering::Relaxed);
        slot.last_nominal.store(nominal, Ordering::Relaxed);
        let mut total_actual = slot.total_actual.load(Ordering::Relaxed);
        let mut total_nominal = slot.total_nominal.load(Ordering::Relaxed);
        if actual >= last_actual && nominal >= last_nominal {
            total_actual = total_actual.wrapping_add(actual.wrapping_sub(last_actual));
            total_nominal = total_nominal.wrapping_add(nominal.wrapping_sub(last_nominal));
            slot.total_actual.store(total_actual, Ordering::Relaxed);
            slot.total_nominal.store(total_nominal, Ordering::Relaxed);
        } else {
            note_rebaseline(slot, last_actual);
        }
        Accumulated { actual: total_actual, nominal: total_nominal }
    }
}

/// The sources other than APERF/MPERF, off the hot path's fall-through.
#[inline(never)]
fn read_and_accumulate_other<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
    slot: &ProcessorSlot,
) -> Result<Accumulated, MsrFault> {
    match setup.kind {
        PairKind::Amu => read_and_accumulate_amu(platform, setup, slot),
        PairKind::Modular | PairKind::Plain => read_and_accumulate_modular(platform, setup, slot),
    }
}

/// [`read_and_accumulate`] for the Activity Monitors: processor cycles then constant-frequency
/// cycles, back to back with interrupts masked, accumulated like APERF/MPERF (they restart
/// at zero when the processor is powered up); `NominalCount` is the constant count's total
/// scaled to the nominal rate ([`ConstantScale`]).
#[inline]
fn read_and_accumulate_amu<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
    slot: &ProcessorSlot,
) -> Result<Accumulated, MsrFault> {
    let totals = platform.with_interrupts_masked(|| {
        let (actual, constant, _) = read_bounded_pair(platform, setup.max_pair_ticks, || {
            Ok((
                platform.read_system_register(SystemRegister::Amevcntr00El0)?,
                platform.read_system_register(SystemRegister::Amevcntr01El0)?,
            ))
        })?;
        Ok(accumulate(slot, actual, constant))
    })?;
    Ok(Accumulated { actual: totals.actual, nominal: setup.constant_scale.apply(totals.nominal) })
}

/// The constant-frequency counter's total in cycles of the nominal rate.
///
/// That is `constant` (ticks at `constant_hz`, e.g. 19.2 MHz) as `⌊constant × nominal_mhz ×
/// 10⁶ / constant_hz⌋`, exactly, truncated to 64 bits (a wrap Windows differences through).
///
/// `NominalRate` is an integer in MHz and `CNTFRQ_EL0` rarely a whole MHz, so the counts are
/// scaled, not the rate. Scaling the running total rather than each delta is the remainder
/// carried between reads: every reported total is within one count of the exact value, so
/// `NominalRate × ΔActual / ΔNominal` is the true frequency to a count per interval and no
/// error accumulates however long the run.
#[must_use]
pub fn scale_constant_count(constant: u64, nominal_mhz: u32, constant_hz: u64) -> u64 {
    ConstantScale::new(nominal_mhz, constant_hz).apply(constant)
}

/// The ratio `nominal_mhz × 10⁶ / constant_hz`, reduced by its greatest common divisor.
///
/// Reduced at initialisation (19.2 MHz to 2 400 MHz is 125 / 1) so that the read path scales
/// with 64-bit divisions: `⌊c × n / d⌋ = (c / d) × n + ⌊(c mod d) × n / d⌋`, exact, the second
/// product in 64 bits whenever it fits (always for the reduced ratios of real rates), else in
/// 128.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantScale {
    numerator: u64,
    denominator: core::num::NonZeroU64,
}

impl ConstantScale {
    /// No scaling.
    pub const IDENTITY: Self = Self { numerator: 1, denominator: core::num::NonZeroU64::MIN };

    /// `nominal_mhz` MHz per `constant_hz` Hz, reduced ([`Self::IDENTITY`] when `constant_hz`
    /// is 0).
    #[must_use]
    pub fn new(nominal_mhz: u32, constant_hz: u64) -> Self {
        if constant_hz == 0 {
            return Self::IDENTITY;
        }
        let numerator = u64::from(nominal_mhz).saturating_mul(1_000_000);
        let divisor = gcd(numerator, constant_hz).max(1);
        let denominator = constant_hz.checked_div(divisor).unwrap_or(constant_hz);
        core::num::NonZeroU64::new(denominator).map_or(Self::IDENTITY, |denominator| Self {
            numerator: numerator.checked_div(divisor).unwrap_or(numerator),
            denominator,
        })
    }

    /// `⌊constant × numerator / denominator⌋`, truncated to 64 bits.
    #[inline]
    #[must_use]
    pub fn apply(self, constant: u64) -> u64 {
        let (quotient, remainder) = (constant / self.denominator, constant % self.denominator);
        let whole = quotient.wrapping_mul(self.numerator);
        let part = remainder.checked_mul(self.numerator).map_or_else(
            || wide_part(remainder, self.numerator, self.denominator.get()),
            |product| product / self.denominator,
        );
        whole.wrapping_add(part)
    }
}

/// `⌊remainder × numerator / denominator⌋` in 128 bits (below `numerator`, so it fits).
#[cold]
#[inline(never)]
fn wide_part(remainder: u64, numerator: u64, denominator: u64) -> u64 {
    let part = u128::from(remainder)
        .saturating_mul(u128::from(numerator))
        .checked_div(u128::from(denominator))
        .unwrap_or(0);
    u64::try_from(part).unwrap_or(u64::MAX)
}

/// The greatest common divisor.
const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while let Some(next) = a.checked_rem(b) {
        a = b;
        b = next;
    }
    a
}

/// The answer to a read that returned zero for both counters: a hypervisor that stopped
/// exposing them (or counters that were just cleared). It is no reading, and the next real
/// reading becomes the new baseline: the hidden period's counts are dropped rather than
/// credited to the one interval in which the counters reappear (which would report more
/// reference cycles than that interval's wall time holds).
#[cold]
#[inline(never)]
fn unchanged(slot: &ProcessorSlot) -> Accumulated {
    slot.request_rebaseline();
    Accumulated {
        actual: slot.total_actual.load(Ordering::Relaxed),
        nominal: slot.total_nominal.load(Ordering::Relaxed),
    }
}

/// A due baseline taken from counters that read zero: the totals stay, the next read counts
/// from zero.
#[cold]
#[inline(never)]
fn zero_baseline(slot: &ProcessorSlot, timestamp: u64) -> Accumulated {
    slot.last_actual.store(0, Ordering::Relaxed);
    slot.last_nominal.store(0, Ordering::Relaxed);
    slot.last_timestamp.store(timestamp, Ordering::Relaxed);
    Accumulated {
        actual: slot.total_actual.load(Ordering::Relaxed),
        nominal: slot.total_nominal.load(Ordering::Relaxed),
    }
}

/// The cold path of a read whose raw values went backwards: counts a reset unless this was a
/// requested baseline.
#[cold]
#[inline(never)]
fn note_rebaseline(slot: &ProcessorSlot, last_actual: u64) {
    if last_actual != REBASELINE {
        let resets = slot.resets.load(Ordering::Relaxed);
        slot.resets.store(resets.saturating_add(1), Ordering::Relaxed);
    }
}

/// The most a modular counter's reference delta may exceed the elapsed time stamp by (the
/// reference cycles count at the TSC rate, so only clock-domain skew): 1/64 of the interval
/// plus a fixed slack.
const TIMESTAMP_SLACK: u64 = 100_000;
/// The least bound on actual cycles per reference cycle, whatever the perf capabilities say
/// (a VM may report flat capabilities while its host turbos).
const MIN_ACTUAL_PER_REFERENCE: u64 = 4;

/// The highest plausible ratio of actual to reference cycles for the fixed-counter source's
/// plausibility bound: the turbo ratio Highest / Nominal rounded up, plus one for skew, and at
/// least [`MIN_ACTUAL_PER_REFERENCE`].
pub(crate) fn max_actual_per_reference(perf: &PerfCapabilities) -> u64 {
    let nominal = u64::from(perf.nominal.max(1));
    let ratio = u64::from(perf.highest).div_ceil(nominal).saturating_add(1);
    ratio.max(MIN_ACTUAL_PER_REFERENCE)
}

/// [`read_and_accumulate`] for counters that wrap modulo 2^width (the fixed counters).
///
/// Deltas are taken modulo the width, and a delta the elapsed time cannot explain (another PMU
/// owner reprogrammed or cleared the counters) re-baselines instead of counting. Without a
/// time stamp, a delta above half the range is taken as such a reset.
#[inline(never)]
fn read_and_accumulate_modular<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
    slot: &ProcessorSlot,
) -> Result<Accumulated, MsrFault> {
    platform.with_interrupts_masked(|| {
        let (actual, nominal, timestamp) = read_pair(platform, setup)?;
        let (actual, nominal) = (actual & setup.mask, nominal & setup.mask);
        let last_actual = slot.last_actual.load(Ordering::Relaxed);
        let last_nominal = slot.last_nominal.load(Ordering::Relaxed);
        if actual | nominal == 0 {
            // Counters enabled (again) a moment ago read zero: a valid baseline when one is
            // due (after resume the driver restarts them from zero). Otherwise zeros are no
            // reading. A later implausible jump from this baseline fails the timestamp bound.
            return Ok(match (last_actual, last_nominal, timestamp) {
                (REBASELINE, REBASELINE, Some(now)) => zero_baseline(slot, now),
                _ => unchanged(slot),
            });
        }
        let last_timestamp = slot.last_timestamp.load(Ordering::Relaxed);
        slot.last_actual.store(actual, Ordering::Relaxed);
        slot.last_nominal.store(nominal, Ordering::Relaxed);
        slot.last_timestamp.store(timestamp.unwrap_or(REBASELINE), Ordering::Relaxed);
        let mut total_actual = slot.total_actual.load(Ordering::Relaxed);
        let mut total_nominal = slot.total_nominal.load(Ordering::Relaxed);
        let delta_actual = actual.wrapping_sub(last_actual) & setup.mask;
        let delta_nominal = nominal.wrapping_sub(last_nominal) & setup.mask;
        let plausible = match timestamp {
            Some(now) if last_timestamp != REBASELINE => {
                let elapsed = now.wrapping_sub(last_timestamp);
                let bound = elapsed.saturating_add(elapsed / 64).saturating_add(TIMESTAMP_SLACK);
                delta_nominal <= bound
                    && delta_actual
                        <= delta_nominal
                            .saturating_mul(setup.max_actual_per_reference)
                            .saturating_add(TIMESTAMP_SLACK)
            }
            _ => delta_nominal <= setup.mask / 2 && delta_actual <= setup.mask / 2,
        };
        if last_actual != REBASELINE && last_nominal != REBASELINE && plausible {
            total_actual = total_actual.wrapping_add(delta_actual);
            total_nominal = total_nominal.wrapping_add(delta_nominal);
            slot.total_actual.store(total_actual, Ordering::Relaxed);
            slot.total_nominal.store(total_nominal, Ordering::Relaxed);
        } else {
            note_rebaseline(slot, last_actual);
        }
        Ok(Accumulated { actual: total_actual, nominal: total_nominal })
    })
}
