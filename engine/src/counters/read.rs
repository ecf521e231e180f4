//! The read path (`PEP_NOTIFY_PPM_FEEDBACK_READ`): reading the pair with interrupts masked and
//! accumulating it into a processor's slot.

use core::sync::atomic::Ordering;

use super::setup::{FeedbackSetup, PairKind};
use crate::arm64::SystemRegister;
use crate::perf::PerfCapabilities;
use crate::platform::{InterruptsMasked, MsrFault, Platform};
use crate::processor::{NO_READING, ProcessorSlot, REBASELINE};

// Items that only the documentation links name.
#[cfg(doc)]
use super::scale::ConstantScale;

/// The accumulated counts a read reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accumulated {
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
pub(super) fn pair_bound_ticks(nominal_mhz: u32) -> u64 {
    let mhz = u64::from(nominal_mhz.max(1_000));
    PAIR_BOUND_NS.saturating_mul(mhz) / 1_000
}

/// Reads the actual then the nominal counter, bracketed by time stamps; a pair whose reads
/// took longer than [`FeedbackSetup::max_pair_ticks`] is read again (see [`PAIR_BOUND_NS`]).
/// Returns the pair and the time stamp read after it. Inside one masked section (`masked`).
#[inline]
fn read_pair<P: Platform>(
    masked: &InterruptsMasked,
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
            let read = |_: &InterruptsMasked| {
                Ok((platform.read_msr(setup.actual_msr)?, platform.read_msr(setup.nominal_msr)?))
            };
            return read_pair_again(masked, platform, &read, (actual, nominal, end, span));
        }
    }
    Ok((actual, nominal, end))
}

/// [`read_pair`] with the pair read by `read` (MSRs, or the Activity Monitors' registers),
/// which runs in the same masked section (`masked`).
#[inline]
fn read_bounded_pair<P: Platform>(
    masked: &InterruptsMasked,
    platform: &P,
    max_ticks: u64,
    read: impl Fn(&InterruptsMasked) -> Result<(u64, u64), MsrFault>,
) -> Result<(u64, u64, Option<u64>), MsrFault> {
    let start = platform.read_timestamp();
    let (actual, nominal) = read(masked)?;
    let end = platform.read_timestamp();
    if let (Some(start), Some(end)) = (start, end) {
        let span = end.wrapping_sub(start);
        if span > max_ticks {
            return read_pair_again(masked, platform, &read, (actual, nominal, end, span));
        }
    }
    Ok((actual, nominal, end))
}

/// The second attempt of [`read_pair`], after a first pair (`actual`, `nominal`, time stamp
/// after it) whose reads spanned `span` ticks: the pair whose reads were closer in time, with
/// its own time stamp. In the first pair's masked section (`masked`).
#[cold]
#[inline(never)]
fn read_pair_again<P: Platform>(
    masked: &InterruptsMasked,
    platform: &P,
    read: &impl Fn(&InterruptsMasked) -> Result<(u64, u64), MsrFault>,
    (first_actual, first_nominal, first_end, first_span): (u64, u64, u64, u64),
) -> Result<(u64, u64, Option<u64>), MsrFault> {
    let start = platform.read_timestamp();
    let (actual, nominal) = read(masked)?;
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
pub fn read_and_accumulate<P: Platform>(
    platform: &P,
    setup: &FeedbackSetup,
    slot: &ProcessorSlot,
) -> Result<Accumulated, MsrFault> {
    if setup.kind != PairKind::Plain {
        return read_and_accumulate_other(platform, setup, slot);
    }
    platform.with_interrupts_masked(|masked| {
        let (actual, nominal, _) = read_pair(masked, platform, setup)?;
        Ok(accumulate(masked, slot, actual, nominal))
    })
}

/// Accumulates a pair of 64-bit counters that reset (rather than wrap) into `slot`'s totals,
/// in the masked section that read them (`masked`).
#[inline]
fn accumulate(
    _masked: &InterruptsMasked,
    slot: &ProcessorSlot,
    actual: u64,
    nominal: u64,
) -> Accumulated {
    {
        if actual | nominal == 0 {
            return zero_reading(slot);
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
    let totals = platform.with_interrupts_masked(|masked| {
        let (actual, constant, _) =
            read_bounded_pair(masked, platform, setup.max_pair_ticks, |_: &InterruptsMasked| {
                Ok((
                    platform.read_system_register(SystemRegister::Amevcntr00El0)?,
                    platform.read_system_register(SystemRegister::Amevcntr01El0)?,
                ))
            })?;
        Ok(accumulate(masked, slot, actual, constant))
    })?;
    Ok(Accumulated { actual: totals.actual, nominal: setup.constant_scale.apply(totals.nominal) })
}

/// A read of the plain or Activity Monitor pair that returned zero for both counters.
///
/// When a baseline is due (the handle's first read, or the first after a resume) the zeros
/// are that baseline: counters restarted by the sleep read zero until their processor runs in
/// C0, and the next read counts from zero, so no interval after the resume is lost. Otherwise
/// the zeros are no reading ([`unchanged`]).
#[cold]
#[inline(never)]
fn zero_reading(slot: &ProcessorSlot) -> Accumulated {
    let due = slot.last_actual.load(Ordering::Relaxed) == REBASELINE
        && slot.last_nominal.load(Ordering::Relaxed) == REBASELINE;
    if due { zero_baseline(slot, None) } else { unchanged(slot) }
}

/// The answer to a read that returned zero for both counters when no baseline was due: a
/// hypervisor that stopped exposing them (or counters that were just cleared). It is no
/// reading, and the next real reading becomes the new baseline: the hidden period's counts are
/// dropped rather than credited to the one interval in which the counters reappear (which
/// would report more reference cycles than that interval's wall time holds). The slot is
/// marked [`NO_READING`] rather than [`REBASELINE`], so that further zeros are not taken for a
/// due baseline.
#[cold]
#[inline(never)]
fn unchanged(slot: &ProcessorSlot) -> Accumulated {
    slot.last_actual.store(REBASELINE, Ordering::Relaxed);
    slot.last_nominal.store(NO_READING, Ordering::Relaxed);
    slot.last_timestamp.store(REBASELINE, Ordering::Relaxed);
    Accumulated {
        actual: slot.total_actual.load(Ordering::Relaxed),
        nominal: slot.total_nominal.load(Ordering::Relaxed),
    }
}

/// A due baseline taken from counters that read zero: the totals stay, the next read counts
/// from zero. `timestamp`: the time stamp after the pair (the modular sources bound the next
/// delta by it).
#[cold]
#[inline(never)]
fn zero_baseline(slot: &ProcessorSlot, timestamp: Option<u64>) -> Accumulated {
    slot.last_actual.store(0, Ordering::Relaxed);
    slot.last_nominal.store(0, Ordering::Relaxed);
    slot.last_timestamp.store(timestamp.unwrap_or(REBASELINE), Ordering::Relaxed);
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
pub(super) const MIN_ACTUAL_PER_REFERENCE: u64 = 4;

/// The highest plausible ratio of actual to reference cycles for the fixed-counter source's
/// plausibility bound: the turbo ratio Highest / Nominal rounded up, plus one for skew, and at
/// least [`MIN_ACTUAL_PER_REFERENCE`].
pub fn max_actual_per_reference(perf: &PerfCapabilities) -> u64 {
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
    platform.with_interrupts_masked(|masked| {
        let (actual, nominal, timestamp) = read_pair(masked, platform, setup)?;
        let (actual, nominal) = (actual & setup.mask, nominal & setup.mask);
        let last_actual = slot.last_actual.load(Ordering::Relaxed);
        let last_nominal = slot.last_nominal.load(Ordering::Relaxed);
        if actual | nominal == 0 {
            // Counters enabled (again) a moment ago read zero: a valid baseline when one is
            // due (after resume the driver restarts them from zero). Otherwise zeros are no
            // reading. A later implausible jump from this baseline fails the timestamp bound.
            return Ok(match (last_actual, last_nominal, timestamp) {
                (REBASELINE, REBASELINE, Some(now)) => zero_baseline(slot, Some(now)),
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
