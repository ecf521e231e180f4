//! Source selection at initialisation: which pair backs the feedback counters (APERF/MPERF, the
//! fixed counters or the Activity Monitors), measured and described as [`FeedbackSetup`].

use super::calibration::{calibrate, calibrate_amu, configured_nominal, hardware_nominal};
use super::read::{
    MIN_ACTUAL_PER_REFERENCE, PAIR_BOUND_NS, max_actual_per_reference, pair_bound_ticks,
};
use super::scale::ConstantScale;
use super::setup::{
    CounterSource, FeedbackSetup, MAX_FEEDBACK_COUNTERS, NoCountersReason, NominalRateSource,
    PairKind,
};
use crate::abi::{
    PEP_PROCESSOR_FEEDBACK_COUNTER, PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
    PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, PROCESSOR_FEEDBACK_TYPE_RELATIVE,
};
use crate::arm64::{self, SystemRegister};
use crate::config::{Config, CounterSourcePreference, FeedbackCounterPolicy};
use crate::cpu::CpuFeatures;
use crate::perf::PerfCapabilities;
use crate::platform::{MsrFault, Passive, Platform};
use crate::pmc::FixedCounters;

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
        passive: &Passive,
        platform: &P,
        cpu: &CpuFeatures,
        config: &Config,
        perf: impl FnOnce(u32) -> PerfCapabilities,
    ) -> (Self, PerfCapabilities) {
        let mut nominal = configured_nominal(config);
        let setup = Self::select(passive, platform, cpu, config, &mut nominal);
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
        passive: &Passive,
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
            return Self::select_amu(passive, platform, config, features, nominal);
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
        let calibrated_mhz = calibrate(passive, platform, actual_msr, nominal_msr, source.mask())?;
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
        passive: &Passive,
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
        let measured_mhz = calibrate_amu(passive, platform, constant_hz)?;
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

/// The more telling of two reasons for having no source: a refused reservation says more than
/// an absent feature.
const fn worse(aperf: NoCountersReason, fixed: NoCountersReason) -> NoCountersReason {
    match fixed {
        NoCountersReason::NotAnnounced => aperf,
        _ => fixed,
    }
}
