//! Per-processor time, system sleep and counters that stop being exposed.

use super::*;
use crate::scenario::Scenario;

fn machine() -> Machine {
    let text = "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n[pofx]\nduration_ms = 1000\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 3000\nbusy_percent = 50\n";
    let machine = Machine::new(&Scenario::from_toml_str(text).expect("valid scenario"));
    machine.start_runtime();
    machine
}

#[test]
fn each_processor_keeps_its_own_time() {
    let machine = machine();
    let start = [machine.counters(0).unwrap(), machine.counters(1).unwrap()];
    machine.advance_processor_clock_to(0, 10 * NS_PER_MS);
    assert_eq!(machine.processor_now_ns(0), 10 * NS_PER_MS);
    assert_eq!((machine.processor_now_ns(1), machine.now_ns()), (0, 0));
    // 10 ms at 3000 MHz, 50 % busy on processor 0 only.
    assert_eq!(machine.counters(0).unwrap().aperf - start[0].aperf, 15_000_000);
    assert_eq!(machine.counters(1), Some(start[1]));
    machine.spend(1, 500);
    assert_eq!(machine.processor_now_ns(1), 500);
    // The machine's clock moves every processor that is behind it.
    machine.advance_clock_to(20 * NS_PER_MS);
    assert_eq!(machine.processor_now_ns(0), 20 * NS_PER_MS);
    assert_eq!(machine.processor_now_ns(1), 20 * NS_PER_MS);
}

#[test]
fn a_sleeping_processor_stops_and_restarts_at_zero() {
    let machine = machine();
    machine.advance_processor_clock_to(0, 10 * NS_PER_MS);
    let before = machine.counters(0).unwrap();
    machine.power_off(0);
    machine.advance_processor_clock_to(0, 50 * NS_PER_MS);
    assert_eq!(machine.counters(0), Some(before), "nothing counts while off");
    machine.power_on(0);
    // The resume path runs on the processor in C0 (RESTART_C0_NS = 10 µs at 3000 MHz).
    assert_eq!(machine.counters(0), Some(CounterPair { aperf: 30_000, mperf: 20_000 }));
    machine.advance_processor_clock_to(0, 60 * NS_PER_MS);
    assert_eq!(machine.counters(0), Some(CounterPair { aperf: 15_030_000, mperf: 10_020_000 }));
    assert_eq!(
        machine.discontinuities(0),
        [Discontinuity { at_ns: 50 * NS_PER_MS, kind: DiscontinuityKind::PowerOn }]
    );
}

#[test]
fn zeroed_counters_read_zero_for_good() {
    let machine = machine();
    machine.advance_processor_clock_to(1, 10 * NS_PER_MS);
    machine.zero_counters(1);
    machine.zero_counters(1);
    machine.advance_processor_clock_to(1, 90 * NS_PER_MS);
    assert_eq!(machine.counters(1), Some(CounterPair::default()));
    assert_eq!(
        machine.discontinuities(1),
        [Discontinuity { at_ns: 10 * NS_PER_MS, kind: DiscontinuityKind::Zeroed }]
    );
    assert_ne!(machine.counters(0), Some(CounterPair::default()));
}
