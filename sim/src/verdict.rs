//! The rules the checks judge by: the tolerances, what one interval between served reads may
//! miss by, and [`Findings`], the violations found (the first few described, all counted).
//!
//! A leaf: it uses nothing else of the crate, so both sides apply it. The checks
//! ([`crate::checks`]) turn findings into pass or fail. The emulator's read digest
//! ([`crate::pofx::ReadDigest`]) applies the per-interval rules as each read is folded, since it
//! keeps no read past its interval (a run's memory is bounded by its processor count, not its
//! read count); what it records is a finding, which a check then judges.

/// The largest relative error `feedback.accuracy` accepts: 0.1 %.
pub const ACCURACY_TOLERANCE: f64 = 0.001;
/// How far an interval's rate may stray outside the true frequency range: 1 %.
pub const SPIKE_TOLERANCE: f64 = 0.01;

/// Findings of one kind: the first [`Findings::KEPT`] as text, in order, the rest counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    kept: Vec<String>,
    total: usize,
}

impl Findings {
    /// How many findings are kept as text (a check's detail names three).
    pub const KEPT: usize = 3;

    /// None.
    #[must_use]
    pub const fn new() -> Self {
        Self { kept: Vec::new(), total: 0 }
    }

    /// Adds a finding; `describe` runs only for the first [`Self::KEPT`].
    pub fn push_with(&mut self, describe: impl FnOnce() -> String) {
        if self.kept.len() < Self::KEPT {
            self.kept.push(describe());
        }
        self.total += 1;
    }

    /// Adds `count` findings described alike.
    pub fn push_many(&mut self, finding: &str, count: usize) {
        for _ in 0..count.min(Self::KEPT.saturating_sub(self.kept.len())) {
            self.kept.push(finding.to_owned());
        }
        self.total += count;
    }

    /// Adds a finding.
    pub fn push(&mut self, finding: String) {
        self.push_with(|| finding);
    }

    /// Adds `other`'s findings after these, each kept one rewritten by `describe`.
    pub fn absorb(&mut self, other: &Self, describe: impl Fn(&str) -> String) {
        for finding in &other.kept {
            if self.kept.len() < Self::KEPT {
                self.kept.push(describe(finding));
            }
        }
        self.total += other.total;
    }

    /// Whether there is none.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// How many there are.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.total
    }

    /// The first ones, as text.
    #[must_use]
    pub fn kept(&self) -> &[String] {
        &self.kept
    }
}

/// `feedback.interval_accuracy`: the relative error one interval's rate may have.
///
/// Against the true rate of that interval: [`ACCURACY_TOLERANCE`], plus the cycles the
/// processor truly made in the windows between the interval's pairs' actual and nominal reads
/// (`skew_cycles`, of `true_cycles` over the interval), plus two steps of rounding each way:
/// two counts of `ΔActual`, two `nominal_step`s of `ΔNominal` (see [`counted_rate_within`]).
#[allow(clippy::cast_precision_loss, reason = "ratios of counts; f64 keeps 15 digits")]
#[must_use]
pub fn interval_allowance(
    skew_cycles: u128,
    true_cycles: u128,
    (delta_nominal, delta_actual): (i128, i128),
    nominal_step: f64,
) -> f64 {
    let rounding = 2.0 * nominal_step / delta_nominal as f64 + 2.0 / delta_actual.max(1) as f64;
    ACCURACY_TOLERANCE + skew_cycles as f64 / true_cycles as f64 + rounding
}

/// `feedback.no_spike` across a counter discontinuity: whether `reported` counts exceed `made`.
///
/// An interval across a discontinuity may be lost by a correct PEP, but it may not count more
/// than the processor made in it, beyond 2 counts and [`ACCURACY_TOLERANCE`]: a reset, a wrap
/// or counters that came back turned into a huge delta.
#[allow(clippy::cast_precision_loss, reason = "counts compared with a relative tolerance")]
#[must_use]
pub fn counts_exceed(reported: i128, made: f64) -> bool {
    reported as f64 > made.mul_add(1.0 + ACCURACY_TOLERANCE, 2.0)
}

/// `feedback.no_dropped_interval`: whether `reported` nominal counts miss the `made` ones.
///
/// Over an interval without a counter discontinuity, beyond 2 counts and
/// [`ACCURACY_TOLERANCE`] (the counts' integer rounding and the time the read itself takes):
/// an interval a PEP dropped, or counts it invented.
#[expect(clippy::suboptimal_flops, reason = "an unfused product and sum: the rule's own rounding")]
#[must_use]
pub fn counts_differ(reported: f64, made: f64) -> bool {
    (reported - made).abs() > 2.0 + made * ACCURACY_TOLERANCE
}

/// `feedback.no_spike`: whether an interval's rate, within its counts' rounding, can be true.
///
/// The rate `rate_mhz × ΔActual / ΔNominal` must reach the slowest..fastest C0 frequency the
/// processor ran at over the interval, ±[`SPIKE_TOLERANCE`], once each count is allowed two of
/// its steps of rounding: two counts of `ΔActual`, two `nominal_step`s of `ΔNominal`.
///
/// `nominal_step` is how far `NominalCount` moves per tick of the counter behind it: 1 where the
/// nominal counter counts at the nominal rate (MPERF), `NominalRate` / `CNTFRQ_EL0` on the
/// Activity Monitors (104⅙ counts for 2 000 MHz on a 19.2 MHz system counter). Over a long
/// interval the steps are negligible; over a short one (counters re-baselined a few µs before
/// the interval's last read) they are the counter's resolution: 24 ticks of 19.2 MHz measure a
/// 2 000 MHz rate only to ±4 % a tick. A `ΔNominal` of two steps or less bounds no rate.
#[allow(clippy::cast_precision_loss, reason = "ratios of counts; f64 keeps 15 digits")]
#[must_use]
pub fn counted_rate_within(
    rate_mhz: f64,
    (delta_nominal, delta_actual): (i128, i128),
    nominal_step: f64,
    (slowest, fastest): (u32, u32),
) -> bool {
    let (nominal, actual) = (delta_nominal as f64, delta_actual as f64);
    let (fewest_nominal, most_nominal) =
        (2.0f64.mul_add(-nominal_step, nominal), 2.0f64.mul_add(nominal_step, nominal));
    if fewest_nominal <= 0.0 {
        return true;
    }
    let lowest = rate_mhz * (actual - 2.0).max(0.0) / most_nominal;
    let highest = rate_mhz * (actual + 2.0) / fewest_nominal;
    let low = f64::from(slowest) * (1.0 - SPIKE_TOLERANCE);
    let high = f64::from(fastest) * (1.0 + SPIKE_TOLERANCE);
    lowest <= high && highest >= low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_keep_the_first_three_in_order_and_count_the_rest() {
        let mut first = Findings::new();
        first.push("a".to_owned());
        first.push_many("b", 4);
        assert_eq!(first.kept(), ["a", "b", "b"]);
        assert_eq!(first.len(), 5);
        let mut described = 0;
        first.push_with(|| {
            described += 1;
            "c".to_owned()
        });
        assert_eq!(described, 0, "a finding past the first three is counted, not described");
        let mut all = Findings::new();
        all.push("x".to_owned());
        all.absorb(&first, |finding| format!("1: {finding}"));
        assert_eq!(all.kept(), ["x", "1: a", "1: b"]);
        assert_eq!(all.len(), 7);
        assert!(!all.is_empty() && Findings::new().is_empty());
    }

    #[test]
    fn the_interval_rules_allow_two_counts_and_the_tolerance() {
        // 1 000 000 counts made: 0.1 % and 2 counts is 1 002 counts either way.
        assert!(!counts_differ(1_001_001.0, 1_000_000.0));
        assert!(counts_differ(1_001_003.0, 1_000_000.0));
        assert!(!counts_differ(998_999.0, 1_000_000.0));
        assert!(counts_differ(998_997.0, 1_000_000.0));
        assert!(!counts_exceed(1_001_001, 1_000_000.0));
        assert!(counts_exceed(1_001_003, 1_000_000.0));
        // 2000..=3000 MHz ±1 %: 1980..=3030 (10⁹ counts round by 2 ppb).
        let rate =
            |mhz: f64| counted_rate_within(mhz, (1_000_000_000, 1_000_000_000), 1.0, (2000, 3000));
        assert!(rate(1980.5) && rate(3029.5));
        assert!(!rate(1979.5) && !rate(3030.5));
        // The counts' rounding: a 2 000 MHz interval of 24 AMU ticks (2 500 nominal counts of
        // 104⅙) measured as 2 380 actual cycles, 1 904 MHz, is within two ticks of the truth;
        // the same rate over 21 000 000 counts, or a quarter of the actual cycles, is not.
        let tick = 2_000.0 / 19.2;
        assert!(counted_rate_within(2_000.0, (2_500, 2_380), tick, (2_000, 2_000)));
        assert!(!counted_rate_within(2_000.0, (21_000_000, 19_992_000), tick, (2_000, 2_000)));
        assert!(!counted_rate_within(2_000.0, (2_500, 595), tick, (2_000, 2_000)));
        assert!(!counted_rate_within(2_000.0, (2_500, 4_000), tick, (2_000, 2_000)));
        // MPERF's step is one count: 2 500 counts measure 1 904 MHz to 0.1 %, a spike.
        assert!(!counted_rate_within(2_000.0, (2_500, 2_380), 1.0, (2_000, 2_000)));
        assert!(counted_rate_within(2_000.0, (2_500, 2_498), 1.0, (2_000, 2_000)));
        // Actual cycles without nominal ones are never a rate.
        assert!(!counted_rate_within(2_000.0, (21_000_000, 0), 1.0, (2_000, 2_000)));
        // No skew, 1 000 000 counts each: 0.1 % and 4 ppm of rounding.
        let million = (1_000_000, 1_000_000);
        let allowed = interval_allowance(0, 1, million, 1.0);
        assert!((allowed - 0.001_004).abs() < 1e-12, "{allowed}");
        assert!(
            (interval_allowance(500, 1_000_000, million, 1.0) - allowed - 0.0005).abs() < 1e-12
        );
        // Two AMU ticks of 104⅙ nominal counts (2 000 MHz on 19.2 MHz): 0.1 % and 210⅓ ppm.
        let amu = interval_allowance(0, 1, million, 2_000.0 / 19.2);
        assert!((amu - 0.001_210_333).abs() < 1e-9, "{amu}");
    }
}
