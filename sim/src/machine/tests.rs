//! Unit tests of the parent module.

use super::*;
use crate::scenario::Scenario;

fn scenario(extra: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n[pofx]\nduration_ms = 1000\n{extra}"
    );
    Scenario::from_toml_str(&text).expect("valid scenario")
}

fn phase(start: u32, end: Option<u32>, processors: &str, mhz: u32, busy: u32) -> String {
    let end = end.map_or_else(String::new, |end| format!("end_ms = {end}\n"));
    format!(
        "[[phase]]\nstart_ms = {start}\n{end}processors = {processors}\nfrequency_mhz = {mhz}\nbusy_percent = {busy}\n"
    )
}

fn running(extra: &str) -> Machine {
    let machine = Machine::new(&scenario(extra));
    machine.start_runtime();
    machine
}

#[test]
fn counters_advance_exactly_with_frequency_and_residency() {
    let machine = running(&phase(0, None, "\"all\"", 3000, 50));
    let start = machine.counters(0).expect("processor 0");
    machine.advance_clock_to(NS_PER_MS * 1000);
    let end = machine.counters(0).expect("processor 0");
    // 1 s at 3000 MHz, 50 % in C0: 1.5e9 actual cycles, 1e9 at the 2000 MHz nominal rate.
    assert_eq!(end.aperf - start.aperf, 1_500_000_000);
    assert_eq!(end.mperf - start.mperf, 1_000_000_000);
}

#[test]
fn fractions_carry_so_many_small_steps_equal_one_large_one() {
    let stepped = running(&phase(0, None, "\"all\"", 2333, 7));
    let start = stepped.counters(1).expect("processor 1");
    for step in 1..=10_000_u64 {
        stepped.advance_clock_to(step * 1_013);
        let _ = stepped.counters(1);
    }
    let one = running(&phase(0, None, "\"all\"", 2333, 7));
    one.advance_clock_to(10_000 * 1_013);
    let stepped_end = stepped.counters(1).expect("processor 1");
    let one_end = one.counters(1).expect("processor 1");
    assert_eq!(stepped_end, one_end);
    // 10.13 ms × 2333 MHz × 7 % = 1 654 330.3 counts: the fraction stays in the remainder.
    assert_eq!(one_end.aperf - start.aperf, 1_654_330);
}

#[test]
fn idle_processors_do_not_count_and_phases_override_in_start_order() {
    let phases = [
        phase(0, None, "\"all\"", 1000, 100),
        phase(100, Some(200), "[1]", 4000, 100),
        phase(150, None, "[1]", 500, 0),
    ]
    .concat();
    let machine = running(&phases);
    let timeline = machine.timeline(1).expect("processor 1");
    let load = |ms: u64| timeline.load_at(ms * NS_PER_MS).0;
    assert_eq!(load(50), Load { frequency_mhz: 1000, busy_percent: 100 });
    assert_eq!(load(120), Load { frequency_mhz: 4000, busy_percent: 100 });
    assert_eq!(load(170), Load { frequency_mhz: 500, busy_percent: 0 });
    assert_eq!(load(250), Load { frequency_mhz: 500, busy_percent: 0 });
    machine.advance_clock_to(150 * NS_PER_MS);
    let at_150 = machine.counters(1).expect("processor 1");
    machine.advance_clock_to(400 * NS_PER_MS);
    assert_eq!(machine.counters(1), Some(at_150), "no C0 time, no counts");
    let activity = timeline.activity(0, 150 * NS_PER_MS);
    // 100 ms at 1000 MHz and 50 ms at 4000 MHz, all in C0.
    assert_eq!(activity.mean_mhz(), Some(2000.0));
    assert_eq!(timeline.frequency_range(0, 400 * NS_PER_MS), Some((1000, 4000)));
}

/// A deterministic pseudo-random source (xorshift64): `next(bound)` is below `bound`.
fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |bound| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    }
}

/// The sweep agrees with the rule applied directly (the covering phase that started last,
/// the later in the file on a tie) on random overlapping phases, for every processor.
#[test]
fn the_timeline_sweep_applies_the_documented_rule() {
    let mut random = xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = |bound: u32| u32::try_from(random(u64::from(bound))).expect("below bound");
    let mut text = String::new();
    for _ in 0..300 {
        let start = next(40) * 10;
        let end = (next(3) > 0).then(|| start + 10 + next(20) * 10);
        let processors = if next(4) == 0 { "\"all\"".to_owned() } else { format!("[{}]", next(2)) };
        text.push_str(&phase(start, end, &processors, 500 + next(30) * 100, next(101)));
    }
    let scenario = scenario(&text);
    let timelines = Timeline::for_all_processors(&scenario);
    for (index, timeline) in (0_u32..).zip(&timelines) {
        assert_eq!(**timeline, Timeline::for_processor(&scenario, index));
        for ms in (0..700).step_by(5) {
            let at = u64::from(ms) * NS_PER_MS;
            let winner = scenario
                .phases
                .iter()
                .enumerate()
                .filter(|(_, phase)| {
                    phase.processors.contains(index)
                        && phase.start_ms <= ms
                        && phase.end_ms.is_none_or(|end| ms < end)
                })
                .max_by_key(|(file_index, phase)| (phase.start_ms, *file_index));
            let expected = winner.map_or(
                Load { frequency_mhz: scenario.platform.nominal_mhz, busy_percent: 0 },
                |(_, phase)| Load {
                    frequency_mhz: phase.frequency_mhz,
                    busy_percent: phase.busy_percent,
                },
            );
            assert_eq!(timeline.load_at(at).0, expected, "processor {index} at {ms} ms");
        }
    }
}

/// A walk started from any hint gives the spans `load_at` gives, instant by instant.
#[test]
fn spans_from_any_hint_follow_load_at() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut text = String::new();
    for _ in 0..60 {
        let start = u32::try_from(next(70)).expect("small") * 10;
        let busy = u8::try_from(next(101)).expect("small");
        let mhz = 500 + u32::try_from(next(30)).expect("small") * 100;
        text.push_str(&phase(start, None, "\"all\"", mhz, busy.into()));
    }
    let scenario = scenario(&text);
    let timeline = Timeline::for_processor(&scenario, 0);
    let segments = timeline.segments().len();
    for _ in 0..2000 {
        let from = next(800) * NS_PER_MS + next(NS_PER_MS);
        let to = from + next(120 * NS_PER_MS);
        let hint =
            usize::try_from(next(u64::try_from(segments).expect("small") + 3)).expect("small");
        let mut spans = timeline.spans_near(from, to, hint);
        let mut at = from;
        for (start, end, load) in &mut spans {
            assert_eq!(start, at, "spans are contiguous");
            assert!(start < end && end <= to);
            let (expected, change) = timeline.load_at(start);
            assert_eq!(load, expected, "at {start} from hint {hint}");
            assert_eq!(end, change.min(to), "at {start} from hint {hint}");
            at = end;
        }
        assert_eq!(at, to.max(from), "the walk covers the interval");
        if to > from {
            // Where the next walk looks first: the first segment after the interval's end.
            let expected = timeline.segments().partition_point(|segment| segment.start_ns <= to);
            assert_eq!(spans.position(), expected);
        }
    }
}

#[test]
fn overflow_restarts_both_counters_at_the_computed_instant() {
    let machine = running(&phase(0, None, "\"all\"", 3000, 100));
    let set = machine.set_near_wrap(0, 20 * NS_PER_MS).expect("processor 0");
    // 20 ms at 3000 MHz = 6e7 counts to go; MPERF twice as far (4e7 × 2 + 1).
    assert_eq!(set.aperf, u64::MAX - 60_000_000 + 1);
    assert_eq!(set.mperf, u64::MAX - 80_000_000);
    machine.advance_clock_to(20 * NS_PER_MS - 1);
    let before = machine.counters(0).expect("processor 0");
    assert!(before.aperf > u64::MAX - 10 && before.mperf > u64::MAX / 2);
    machine.advance_clock_to(25 * NS_PER_MS);
    let after = machine.counters(0).expect("processor 0");
    // Both restarted at zero 20 ms in and have counted 5 ms since.
    assert_eq!(after, CounterPair { aperf: 15_000_000, mperf: 10_000_000 });
    let jumps = machine.discontinuities(0);
    assert_eq!(
        jumps.last(),
        Some(&Discontinuity { at_ns: 20 * NS_PER_MS, kind: DiscontinuityKind::Overflow })
    );
}

#[test]
fn resets_and_stalls() {
    let machine = Machine::new(&scenario(&phase(0, None, "\"all\"", 2500, 10)));
    // Before the runtime: a stall keeps the processor in C0 at its frequency.
    let before = machine.counters(0).expect("processor 0");
    machine.stall(0, 10_000);
    let after = machine.counters(0).expect("processor 0");
    assert_eq!((after.aperf - before.aperf, after.mperf - before.mperf), (25_000_000, 20_000_000));
    assert_eq!(machine.now_ns(), 10 * NS_PER_MS);
    // The other processor ran its 10 % load meanwhile.
    let other = machine.counters(1).expect("processor 1");
    assert_eq!(other.mperf - 2 * 6_007_000_001, 2_000_000);
    machine.reset_counters(1);
    // The code that wrote them runs on the processor in C0: 10 µs at 2500 MHz.
    assert_eq!(machine.counters(1), Some(CounterPair { aperf: 25_000, mperf: 20_000 }));
    assert_eq!(machine.discontinuities(1).len(), 1);
}
