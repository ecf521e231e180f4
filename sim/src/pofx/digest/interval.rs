//! The measurements of one interval between served reads: accuracy, dropped intervals,
//! spikes, and the traced interval, each held to its rule of [`crate::verdict`].

use super::{CounterMetrics, Facts, TracedInterval};
use crate::machine::Activity;
use crate::pofx::records::ReadRecord;
use crate::verdict;

/// One interval between consecutive served reads of a counter on one handle: what every
/// measurement of it starts from.
pub(super) struct Interval<'r> {
    before: &'r ReadRecord,
    after: &'r ReadRecord,
    /// `ΔNominalCount` (negative when the PEP went backwards).
    delta_nominal: i128,
    /// `ΔActualCount`.
    delta_actual: i128,
    /// The counters jumped within it (see [`Jumps::touches`](super::Jumps)).
    across_break: bool,
    /// The processor's true activity over it.
    activity: Activity,
    /// Its slowest and fastest C0 frequencies.
    range: Option<(u32, u32)>,
}

impl<'r> Interval<'r> {
    pub(super) fn new(
        facts: &Facts<'_>,
        before: &'r ReadRecord,
        after: &'r ReadRecord,
        activity: Activity,
        range: Option<(u32, u32)>,
    ) -> Self {
        Self {
            before,
            after,
            delta_nominal: i128::from(after.nominal) - i128::from(before.nominal),
            delta_actual: i128::from(after.actual) - i128::from(before.actual),
            across_break: facts.jumps.touches(before.at_ns, after.at_ns),
            activity,
            range,
        }
    }
}

/// The whole-run measurements of one interval: its counts, monotonicity, the truth it adds,
/// spikes and dropped counts.
#[allow(clippy::cast_precision_loss)] // Times in milliseconds, for the messages.
pub(super) fn interval(facts: &Facts<'_>, metrics: &mut CounterMetrics, pair: &Interval<'_>) {
    let Interval { before, after, delta_nominal, delta_actual, activity, range, .. } = *pair;
    metrics.delta_nominal += delta_nominal;
    metrics.delta_actual += delta_actual;
    if delta_nominal < 0 || delta_actual < 0 {
        metrics.monotonic = false;
        return;
    }
    if pair.across_break {
        metrics.exempt += 1;
        if excessive(facts, (delta_nominal, delta_actual), activity) {
            metrics.spikes.push_with(|| {
                excess_message(facts, after, (delta_nominal, delta_actual), activity)
            });
        }
    } else {
        metrics.expected.add(activity);
        if let Some(made) = dropped(facts, delta_nominal, activity) {
            metrics.dropped.push_with(|| {
                let from = facts.machine.runtime_ns(before.at_ns) as f64 / 1e6;
                let to = facts.machine.runtime_ns(after.at_ns) as f64 / 1e6;
                format!("{from}..{to} ms: ΔNominal {delta_nominal}, but the processor made {made:.0} nominal counts and its counters did not jump")
            });
        }
    }
    if let Some(spike) = spike(facts, after, range, delta_nominal, delta_actual) {
        metrics.spikes.push(spike);
    } else if facts.jumps.within_zero(before.at_ns, after.at_ns)
        && (delta_nominal, delta_actual) != (0, 0)
    {
        metrics.spikes.push_with(|| {
            format!(
                "{} ms: ΔNominal {delta_nominal}, ΔActual {delta_actual} reported after the counters stopped (they read 0)",
                facts.runtime_ms(after.at_ns)
            )
        });
    }
}

/// The interval between two served reads as `--trace` shows it.
#[allow(clippy::cast_precision_loss)] // Rates; f64 keeps 15 digits.
pub(super) fn traced_interval(facts: &Facts<'_>, pair: &Interval<'_>) -> TracedInterval {
    let (delta_nominal, delta_actual) = (pair.delta_nominal, pair.delta_actual);
    TracedInterval {
        delta_nominal,
        delta_actual,
        measured_mhz: (delta_nominal > 0).then(|| {
            f64::from(facts.frequency_rate_mhz) * delta_actual as f64 / delta_nominal as f64
        }),
        true_mhz: pair.activity.mean_mhz(),
        discontinuity: pair.across_break,
    }
}

/// `feedback.interval_accuracy` for one interval between served reads: the rate Windows
/// computes from it (`ΔActual / ΔNominal`, a ratio to the nominal rate) against the true one
/// over that interval (delivered cycles over nominal cycles in C0), within
/// [`verdict::interval_allowance`] with the counts the interval's two pairs may have made
/// between their actual and their nominal read (`skew_cycles`, see
/// [`IntervalBound`](super::IntervalBound)). Intervals touching a counter discontinuity or
/// spent idle are not compared.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "ratios of counts (f64 keeps 15 digits) and non-negative parts per million"
)]
pub(super) fn interval_accuracy(
    facts: &Facts<'_>,
    skew_cycles: u128,
    metrics: &mut CounterMetrics,
    pair: &Interval<'_>,
) {
    let Interval { before, after, delta_nominal, delta_actual, activity, .. } = *pair;
    if pair.across_break
        || activity.c0 == 0
        || activity.cycles == 0
        || delta_nominal <= 0
        || delta_actual < 0
    {
        return;
    }
    metrics.intervals_checked += 1;
    let measured = delta_actual as f64 / delta_nominal as f64;
    // Delivered MHz × busy % × ns over nominal MHz × busy % × ns.
    let truth = activity.cycles as f64 / (facts.nominal_mhz * activity.c0 as f64);
    let error = (measured - truth).abs() / truth;
    // Cycles are in activity units (MHz × busy % × ns), as the truth's.
    let allowed = verdict::interval_allowance(
        skew_cycles,
        activity.cycles,
        (delta_nominal, delta_actual),
        facts.nominal_step(),
    );
    let ppm = |value: f64| (value * 1e6).round() as u64;
    // The closest to its tolerance so far (the largest error / allowed; on a tie, the
    // tightest tolerance); the first interval sets it.
    let (error_ppm, allowed_ppm) = (ppm(error), ppm(allowed).max(1));
    let (worst_error, worst_allowed) = metrics.worst_interval_ppm;
    let (this, that) = (
        u128::from(error_ppm) * u128::from(worst_allowed),
        u128::from(worst_error) * u128::from(allowed_ppm),
    );
    if metrics.intervals_checked == 1
        || this > that
        || (this == that && allowed_ppm < worst_allowed)
    {
        metrics.worst_interval_ppm = (error_ppm, allowed_ppm);
    }
    if error > allowed {
        metrics.interval_errors.push_with(|| {
            let from = facts.machine.runtime_ns(before.at_ns) as f64 / 1e6;
            let to = facts.machine.runtime_ns(after.at_ns) as f64 / 1e6;
            format!(
                "{from}..{to} ms: {:.1} MHz measured, {:.1} MHz true: {:.3} % off, {:.3} % allowed",
                measured * facts.nominal_mhz,
                truth * facts.nominal_mhz,
                error * 100.0,
                allowed * 100.0
            )
        });
    }
}

/// Whether an interval across a counter discontinuity (which a PEP may lose) reports more
/// counts than the processor can have made in it ([`verdict::counts_exceed`]). The true
/// activity is an upper bound (a sleeping or stopped processor counts less).
#[allow(clippy::cast_precision_loss)] // Counts compared with a relative tolerance.
fn excessive(
    facts: &Facts<'_>,
    (delta_nominal, delta_actual): (i128, i128),
    activity: Activity,
) -> bool {
    // Counts = MHz × busy % × ns / 100 000.
    let nominal = facts.nominal_mhz * activity.c0 as f64 / 100_000.0;
    let actual = activity.cycles as f64 / 100_000.0;
    verdict::counts_exceed(delta_nominal, nominal) || verdict::counts_exceed(delta_actual, actual)
}

#[allow(clippy::cast_precision_loss)] // A time and counts, for the message.
fn excess_message(
    facts: &Facts<'_>,
    after: &ReadRecord,
    (delta_nominal, delta_actual): (i128, i128),
    activity: Activity,
) -> String {
    let nominal = facts.nominal_mhz * activity.c0 as f64 / 100_000.0;
    let actual = activity.cycles as f64 / 100_000.0;
    let at_ms = facts.machine.runtime_ns(after.at_ns) as f64 / 1e6;
    format!(
        "{at_ms} ms: ΔNominal {delta_nominal}, ΔActual {delta_actual} across a counter discontinuity, more than the {nominal:.0}/{actual:.0} counts the processor made"
    )
}

/// The nominal counts the processor made, when an interval without a counter discontinuity
/// reports other nominal counts ([`verdict::counts_differ`]): an interval a PEP dropped, or
/// counts it invented.
#[allow(clippy::cast_precision_loss)] // Counts compared with a relative tolerance.
fn dropped(facts: &Facts<'_>, delta_nominal: i128, activity: Activity) -> Option<f64> {
    // Nominal counts = MHz × busy % × ns / 100 000.
    let made = facts.nominal_mhz * activity.c0 as f64 / 100_000.0;
    let reported = delta_nominal as f64;
    verdict::counts_differ(reported, made).then_some(made)
}

/// Whether one interval's rate is implausible: outside the slowest..fastest C0 frequency of the
/// interval by more than its counts' rounding ([`verdict::counted_rate_within`]), activity
/// reported while the processor never left idle, or actual counts with no nominal counts.
#[allow(clippy::cast_precision_loss)] // Ratios of counts; f64 keeps 15 digits.
fn spike(
    facts: &Facts<'_>,
    after: &ReadRecord,
    range: Option<(u32, u32)>,
    delta_nominal: i128,
    delta_actual: i128,
) -> Option<String> {
    let at_ms = || facts.machine.runtime_ns(after.at_ns) as f64 / 1e6;
    if delta_nominal == 0 {
        return (delta_actual > 0)
            .then(|| format!("{} ms: ΔActual {delta_actual} with ΔNominal 0", at_ms()));
    }
    let rate = facts.nominal_mhz * delta_actual as f64 / delta_nominal as f64;
    let Some(range) = range else {
        return Some(format!(
            "{} ms: {rate:.1} MHz reported while the processor was idle",
            at_ms()
        ));
    };
    let (slowest, fastest) = range;
    let counts = (delta_nominal, delta_actual);
    (!verdict::counted_rate_within(facts.nominal_mhz, counts, facts.nominal_step(), range)).then(
        || format!("{} ms: {rate:.1} MHz outside the true {slowest}..={fastest} MHz", at_ms()),
    )
}
