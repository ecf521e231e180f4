//! What a correct PEP does on a scenario's machine: the oracle's expected counter source and
//! counter count, derived from the description alone (never from the engine).

use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy};

use super::spec::Scenario;
use super::types::{CounterSourceKind, read_count};

impl Scenario {
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
            && !self.kernel.pmu_setup_fails();
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

    /// The reads a run makes: its samples ([`read_count`], the figure `MAX_READS` bounds)
    /// times the counters each reads ([`Self::expected_counter_count`], at least 1). The
    /// progress line's "about N reads" and the image's call estimate
    /// (`crate::image_limit::estimated_calls`) are this.
    #[must_use]
    pub fn expected_reads(&self) -> u64 {
        let pofx = self.pofx;
        read_count(self.platform.processors, pofx.duration_ms, pofx.sample_interval_ms)
            * u64::from(self.expected_counter_count().max(1))
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
