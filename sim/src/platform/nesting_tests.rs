//! Nested notifications: delivered at every unmasked platform call, one level deep, never
//! inside a masked section unless the platform is broken on purpose.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::cpu::msr;
use crate::sabotage::PlatformFaults;
use crate::scenario::Scenario;

fn platform(faults: PlatformFaults) -> SimPlatform {
    let scenario = Scenario::from_toml_str(
        // RDMSR takes no time here: the time counted is the nesting's alone.
        "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\nmsr_read_ns = 0\n[pofx]\nduration_ms = 10\n",
    )
    .expect("valid");
    SimPlatform::with_faults(Arc::new(Machine::new(&scenario)), faults)
}

/// Runs a read as the engine does it (processor index, masked APERF and MPERF) with a hook that
/// records every delivery and itself makes a platform call; returns the deliveries, the trace
/// and the time the processor spent.
fn read_with_nesting(
    platform: &SimPlatform,
) -> (Vec<(InjectionPoint, bool)>, Vec<PlatformOp>, u64) {
    let deliveries = Rc::new(RefCell::new(Vec::new()));
    let hook: NestingHook = {
        let deliveries = Rc::clone(&deliveries);
        let platform = platform.clone();
        Rc::new(move |point, masked| {
            deliveries.borrow_mut().push((point, masked));
            // A nested read, traced apart: its platform calls must not nest again.
            let interrupted = swap_trace(Some(Vec::new()));
            let _ = platform.with_interrupts_masked(|_| platform.read_msr(msr::IA32_APERF));
            let _ = swap_trace(interrupted);
        })
    };
    let _on = OnProcessor::enter(None, 1);
    let start = platform.machine().processor_now_ns(1);
    let _nesting = nest(hook, 50);
    begin_trace();
    let _ = platform.current_processor_index();
    let _ = platform.with_interrupts_masked(|_| {
        (platform.read_msr(msr::IA32_APERF), platform.read_msr(msr::IA32_MPERF))
    });
    let trace = take_trace();
    let spent = platform.machine().processor_now_ns(1) - start;
    let deliveries = deliveries.borrow().clone();
    (deliveries, trace, spent)
}

#[test]
fn nested_notifications_arrive_only_where_interrupts_are_unmasked() {
    let (deliveries, trace, spent) = read_with_nesting(&platform(PlatformFaults::default()));
    assert_eq!(
        deliveries,
        [
            (InjectionPoint::CurrentProcessor, false),
            (InjectionPoint::MaskEntry, false),
            (InjectionPoint::MaskExit, false)
        ]
    );
    // The markers sit outside the masked pair, which stays back to back.
    let kinds: Vec<&str> = trace
        .iter()
        .map(|op| match op {
            PlatformOp::Nested { .. } => "nested",
            PlatformOp::ReadMsr(_) => "msr",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["nested", "nested", "msr", "msr", "nested"]);
    // 5 outer calls (index, mask entry, 2 reads, mask exit) and 3 nested reads of 3 calls each.
    assert_eq!(spent, (5 + 3 * 3) * 50);
}

#[test]
fn a_broken_platform_nests_inside_masked_sections() {
    let faults = PlatformFaults { nested_in_masked_sections: true, ..PlatformFaults::default() };
    let (deliveries, trace, _) = read_with_nesting(&platform(faults));
    assert!(deliveries.contains(&(InjectionPoint::ReadMsr, true)), "{deliveries:?}");
    let reads: Vec<usize> = trace
        .iter()
        .enumerate()
        .filter_map(|(at, op)| matches!(op, PlatformOp::ReadMsr(_)).then_some(at))
        .collect();
    assert!(
        matches!(trace.get(reads[0] + 1), Some(PlatformOp::Nested { masked: true, .. })),
        "a nested notification lands between APERF and MPERF: {trace:?}"
    );
}

#[test]
fn without_a_guard_nothing_nests_and_no_time_passes() {
    let platform = platform(PlatformFaults::default());
    let _on = OnProcessor::enter(None, 0);
    begin_trace();
    let _ = platform.with_interrupts_masked(|_| platform.read_msr(msr::IA32_APERF));
    assert!(!take_trace().iter().any(|op| matches!(op, PlatformOp::Nested { .. })));
    assert_eq!(platform.machine().processor_now_ns(0), 0);
}

#[test]
fn an_msr_read_takes_its_time_and_an_smi_lands_after_the_actual_read() {
    let scenario = Scenario::from_toml_str(
        "name = \"t\"\n[platform]\nprocessors = 1\nnominal_mhz = 2000\nmsr_read_ns = \"hypervisor\"\n[pofx]\nduration_ms = 10\n",
    )
    .expect("valid");
    let machine = Arc::new(Machine::new(&scenario));
    let platform = SimPlatform::new(Arc::clone(&machine));
    let _on = OnProcessor::enter(None, 0);
    let _ = platform.read_msr(msr::IA32_MPERF);
    assert_eq!(machine.processor_now_ns(0), 1_500, "one intercepted RDMSR");
    // An SMI of 150 µs, every 1 ms: it waits for the next actual-count read.
    machine.arm_smi(0, 150_000, Some(1_000_000));
    begin_trace();
    let _ = platform.read_msr(msr::IA32_MPERF);
    assert_eq!(machine.processor_now_ns(0), 3_000, "not on a nominal-count read");
    let _ = platform.read_msr(msr::IA32_APERF);
    let _ = platform.read_msr(msr::IA32_MPERF);
    let kinds: Vec<String> = take_trace()
        .iter()
        .map(|op| match op {
            PlatformOp::ReadMsr(read) => format!("{:#x}@{}", read.msr, read.at_ns),
            PlatformOp::Smi { stall_ns, .. } => format!("smi {stall_ns}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["0xe7@1500", "0xe8@3000", "smi 150000", "0xe7@154500"]);
    // The next one is due 1 ms after the first was, past the stall.
    let _ = platform.read_msr(msr::IA32_APERF);
    assert_eq!(machine.processor_now_ns(0), 157_500, "no SMI due yet");
}

#[test]
fn the_timestamps_ahead_are_what_reads_after_that_many_windows_return() {
    let platform = platform(PlatformFaults::default());
    let _on = OnProcessor::enter(None, 1);
    // Inert windows take no time: one value, the counter now, which every read returns.
    let ahead = platform.timestamps_ahead().expect("the machine can say");
    let _ = platform.current_processor_index();
    assert_eq!((ahead.len(), platform.read_timestamp()), (1, Some(ahead[0])));
    assert_eq!(platform.read_timestamp(), Some(ahead[0]));
    // Nested notifications modelled, a delivery under way (its windows deliver nothing but
    // take their time): one value per window ahead, the read that is the k-th window returns
    // the k-th.
    let delivered = Rc::new(RefCell::new(Vec::new()));
    let hook: NestingHook = {
        let delivered = Rc::clone(&delivered);
        let platform = platform.clone();
        Rc::new(move |_, _| {
            let ahead = platform.timestamps_ahead().expect("the machine can say");
            let _ = platform.current_processor_index();
            let masked = platform.with_interrupts_masked(|_| platform.read_timestamp());
            let after = platform.read_timestamp();
            delivered.borrow_mut().push((ahead, masked, after));
        })
    };
    let _nesting = nest(hook, 250);
    let _ = platform.current_processor_index();
    let delivered = delivered.borrow();
    let [(ahead, masked_read, after)] = delivered.as_slice() else {
        panic!("one delivery: {delivered:?}");
    };
    assert_eq!(ahead.len(), TIMESTAMPS_AHEAD);
    assert!(ahead.windows(2).all(|pair| pair[1] > pair[0]), "{ahead:?}");
    // The processor's window, the masking's, the read's own: the 3rd. The unmasking's and the
    // next read's make it the 5th: past the values sent, later still.
    assert_eq!(*masked_read, Some(ahead[2]));
    assert!(after.is_some_and(|after| after > ahead[3]), "{after:?}");
}
