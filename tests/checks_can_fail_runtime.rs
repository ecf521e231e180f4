//! Every runtime conformance check can fail (the other half of `checks_can_fail.rs`): the
//! checks of the runtime's reads, of MSR and PMU access, of nested notifications, hot-plug
//! and sleep, each made to fail by one deliberate defect.

use std::cell::Cell;
use std::sync::Arc;

use ppm_engine::abi::{
    BOOLEAN, FALSE, PEP_DPM_REGISTER_DEVICE, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_PPM_FEEDBACK_READ, PEP_REGISTER_DEVICE_V2, PEPHANDLE, PVOID, TRUE, ULONG,
};
use ppm_engine::arm64::SystemRegister;
use ppm_engine::platform::CpuidResult;
use ppm_engine::{PepHost, Platform};
use ppm_sim::Scenario;
use ppm_sim::platform::{SimHost, SimPlatform};
use ppm_sim::sabotage::PlatformFaults;

mod common;

use common::{
    BASE, assert_detail, assert_fails, base, builtin, check_of, edit_read, real_dpm, real_ppm,
    refuse_unregister, scenario, with_dpm, with_faults, with_ppm,
};

unsafe extern "C" fn count_down(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe { edit_read(handle, notification, data, |_, actual| *actual = u64::MAX - *actual) }
}

#[test]
fn decreasing_counts_fail_monotonic() {
    assert_fails(&base(), &with_ppm(count_down), &["feedback.monotonic"]);
}

unsafe extern "C" fn half_percent_fast(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe { edit_read(handle, notification, data, |_, actual| *actual += *actual / 200) }
}

#[test]
fn a_half_percent_error_fails_accuracy_and_interval_accuracy_only() {
    // 0.5 % too fast in every interval: the average and each interval are wrong, nothing else.
    let report = assert_fails(&base(), &with_ppm(half_percent_fast), &["feedback.accuracy"]);
    let failed: Vec<&str> = report.failures().map(|check| check.id.as_str()).collect();
    assert_eq!(failed, ["feedback.accuracy", "feedback.interval_accuracy"]);
}

thread_local! {
    static SERVED: Cell<u32> = const { Cell::new(0) };
}

unsafe extern "C" fn jump_once(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        edit_read(handle, notification, data, |_, actual| {
            let served = SERVED.with(|count| count.replace(count.get() + 1));
            // From the 40th served read on, a constant 10^12 counts more (a step, once per
            // processor): monotonic, but one interval shows an impossible rate.
            if served >= 40 {
                *actual += 1_000_000_000_000;
            }
        })
    }
}

#[test]
fn a_huge_delta_fails_no_spike() {
    SERVED.with(|count| count.set(0));
    let report =
        assert_fails(&base(), &with_ppm(jump_once), &["feedback.no_spike", "feedback.accuracy"]);
    assert!(report.checks.iter().any(|check| check.id == "feedback.monotonic" && check.passed));
}

thread_local! {
    static READS: Cell<u32> = const { Cell::new(0) };
}

unsafe extern "C" fn refuse_some(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_FEEDBACK_READ {
        let count = READS.with(|reads| reads.replace(reads.get() + 1));
        if count % 7 == 6 {
            return FALSE;
        }
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn refusing_good_reads_fails_reads_served() {
    assert_fails(&base(), &with_ppm(refuse_some), &["feedback.reads_served"]);
}

#[test]
fn unmasked_reads_fail_read_masked() {
    let faults = PlatformFaults { ignore_interrupt_masking: true, ..PlatformFaults::default() };
    assert_fails(&base(), &with_faults(faults), &["feedback.read_masked"]);
}

#[test]
fn not_using_the_amd_read_only_copies_fails_counter_msrs() {
    let amd =
        scenario(&BASE.replace("nominal_mhz = 2000", "nominal_mhz = 2000\ncpu = \"amd-cppc\""));
    // CPUID hides EffFreqRO from the engine, which then reads the writable pair.
    let hide = |_: u32, leaf: u32, _: u32, mut answer: CpuidResult| {
        if leaf == 0x8000_0007 {
            answer.edx &= !(1 << 10);
        }
        answer
    };
    let faults = PlatformFaults { cpuid: Some(Arc::new(hide)), ..PlatformFaults::default() };
    assert_fails(&amd, &with_faults(faults), &["feedback.counter_msrs"]);
}

#[test]
fn ignoring_the_fixed_counters_on_an_intel_machine_fails_counter_msrs() {
    // The engine does not see the PMU (CPUID leaf 0Ah zeroed) and reads APERF/MPERF, where a
    // correct PEP configured prefer-fixed-pmc reads the fixed counters.
    let hide = |_: u32, leaf: u32, _: u32, answer: CpuidResult| {
        if leaf == 0x0A { CpuidResult { eax: 0, ebx: 0, ecx: 0, edx: 0 } } else { answer }
    };
    let faults = PlatformFaults { cpuid: Some(Arc::new(hide)), ..PlatformFaults::default() };
    let report = assert_fails(
        &builtin("intel-prefer-fixed"),
        &with_faults(faults),
        &["feedback.counter_msrs"],
    );
    assert_detail(&report, "feedback.counter_msrs", "expected 0x30a/0x30b");
}

#[test]
fn an_engine_without_the_pair_bound_fails_interval_accuracy_under_an_smi_storm() {
    // Without a time stamp the engine cannot tell that an SMI stretched a pair: each stalled
    // pair skews its interval by about 1 % and the next one back. The whole-run average hides
    // it; the per-interval check does not.
    let storm = builtin("smi-storm");
    let faults = PlatformFaults { no_timestamp: true, ..PlatformFaults::default() };
    let report = assert_fails(&storm, &with_faults(faults), &["feedback.interval_accuracy"]);
    let accuracy = check_of(&report, "feedback.accuracy");
    assert!(accuracy.passed, "the average hides the skew: {}", accuracy.detail);
    assert_detail(&report, "feedback.interval_accuracy", "% off");
}

unsafe extern "C" fn serve_failed_reads(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_ppm(handle, notification, data) };
    if notification == PEP_NOTIFY_PPM_FEEDBACK_READ && !data.is_null() { TRUE } else { handled }
}

#[test]
fn serving_a_faulted_read_fails_fault_refused() {
    let faulty = scenario(&format!(
        "{BASE}[[event]]\nat_ms = 100\nkind = \"msr-fault\"\nprocessors = [2]\nduration_ms = 50\n"
    ));
    assert_fails(&faulty, &with_ppm(serve_failed_reads), &["feedback.fault_refused"]);
}

#[test]
fn serving_reads_without_counters_fails_no_counters_refused() {
    let none = scenario(
        &BASE.replace("nominal_mhz = 2000", "nominal_mhz = 2000\ncounter_source = \"none\""),
    );
    assert_fails(&none, &with_ppm(serve_failed_reads), &["feedback.no_counters_refused"]);
}

/// A PEP that does `misbehave` on its platform while answering `QUERY_CAPABILITIES`, then
/// answers every notification as the engine does.
///
/// # Safety
/// The emulator's arguments, as for the engine's callback.
unsafe fn during_query_capabilities(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
    misbehave: impl FnOnce(&SimPlatform),
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_QUERY_CAPABILITIES
        && let Some(pep) = SimHost::instance()
    {
        misbehave(pep.platform());
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

/// AMD `CPPC_CAP1` on an Intel part: CPUID never announced it.
unsafe extern "C" fn read_cppc_on_intel(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        during_query_capabilities(handle, notification, data, |platform| {
            let _ = platform.read_msr(0xC001_02B0);
        })
    }
}

#[test]
fn an_unannounced_msr_read_fails_msr_only_advertised() {
    assert_fails(&base(), &with_ppm(read_cppc_on_intel), &["msr.only_advertised"]);
}

/// On a SoC whose `ID_AA64PFR0_EL1` announces no AMU: an undefined instruction.
unsafe extern "C" fn read_the_amu_unannounced(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        during_query_capabilities(handle, notification, data, |platform| {
            let _ = platform.read_system_register(SystemRegister::Amevcntr00El0);
        })
    }
}

#[test]
fn an_unannounced_amu_access_fails_msr_only_advertised() {
    let report = assert_fails(
        &builtin("arm64-no-amu"),
        &with_ppm(read_the_amu_unannounced),
        &["msr.only_advertised"],
    );
    let check = check_of(&report, "msr.only_advertised");
    assert!(
        check.detail.starts_with(
            "AMEVCNTR00_EL0 read on processor 0 but ID_AA64PFR0_EL1 did not announce the AMU"
        ),
        "{}",
        check.detail
    );
}

#[test]
fn nested_notifications_inside_masked_sections_fail_reentrancy() {
    // A platform that delivers interrupts inside the masked section: a nested read lands between
    // the interrupted read's APERF and MPERF, tears it, and even a correct engine then counts
    // the APERF counts in between twice.
    let faults = PlatformFaults { nested_in_masked_sections: true, ..PlatformFaults::default() };
    let report = assert_fails(
        &builtin("nested-reads"),
        &with_faults(faults),
        &["feedback.reentrancy", "feedback.read_masked"],
    );
    let check = check_of(&report, "feedback.reentrancy");
    assert!(
        check.detail.contains("torn") || check.detail.contains("the hardware counted"),
        "the mis-accumulation itself must be reported: {}",
        check.detail
    );
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static LAST_SERVED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

unsafe extern "C" fn stale_when_reentered(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification != PEP_NOTIFY_PPM_FEEDBACK_READ || data.is_null() {
        // SAFETY: the emulator's arguments, passed on.
        return unsafe { real_ppm(handle, notification, data) };
    }
    let nested = DEPTH.with(|depth| depth.replace(depth.get() + 1)) > 0;
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_ppm(handle, notification, data) };
    DEPTH.with(|depth| depth.set(depth.get() - 1));
    if handled != FALSE {
        // SAFETY: FEEDBACK_READ's data is a live, exclusive PEP_PPM_FEEDBACK_READ.
        let read = unsafe { &mut *data.cast::<PEP_PPM_FEEDBACK_READ>() };
        // SAFETY: both union members are plain integers over the same bytes; any value is valid.
        let counts = unsafe { &mut read.__bindgen_anon_1.__bindgen_anon_1 };
        if nested {
            // A PEP that, re-entered, answers what it last answered instead of what it read.
            let (nominal, actual) = LAST_SERVED.with(Cell::get);
            (counts.NominalCount, counts.ActualCount) = (nominal, actual);
        } else {
            LAST_SERVED.with(|last| last.set((counts.NominalCount, counts.ActualCount)));
        }
    }
    handled
}

#[test]
fn stale_answers_to_nested_reads_fail_reentrancy_only() {
    let report = assert_fails(
        &builtin("nested-reads"),
        &with_ppm(stale_when_reentered),
        &["feedback.reentrancy"],
    );
    let failed: Vec<&str> = report.failures().map(|check| check.id.as_str()).collect();
    assert_eq!(failed, ["feedback.reentrancy"]);
}

#[test]
fn refusing_a_hot_remove_fails_hotplug() {
    assert_fails(
        &builtin("hot-add"),
        &with_dpm(refuse_unregister),
        &["dpm.hotplug", "dpm.lifecycle"],
    );
}

thread_local! {
    static FIRST_HANDLES: std::cell::RefCell<Vec<(String, usize)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

unsafe extern "C" fn reuse_first_handle(notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_dpm(notification, data) };
    if notification == PEP_DPM_REGISTER_DEVICE && !data.is_null() {
        let request = data.cast::<PEP_REGISTER_DEVICE_V2>();
        // SAFETY: REGISTER_DEVICE's data is a live PEP_REGISTER_DEVICE_V2.
        let id_string = unsafe { (*request).DeviceId };
        // SAFETY: the emulator's DeviceId points to a live UNICODE_STRING.
        let string = unsafe { id_string.read() };
        // SAFETY: the emulator's string holds `Length` bytes of UTF-16 at `Buffer`.
        let units =
            unsafe { std::slice::from_raw_parts(string.Buffer, usize::from(string.Length / 2)) };
        let id = String::from_utf16_lossy(units);
        // SAFETY: as above.
        let issued = unsafe { (*request).DeviceHandle }.addr();
        let first = FIRST_HANDLES.with(|firsts| {
            let mut firsts = firsts.borrow_mut();
            if let Some((_, first)) = firsts.iter().find(|(known, _)| *known == id) {
                Some(*first)
            } else {
                firsts.push((id, issued));
                None
            }
        });
        if let Some(first) = first {
            // A PEP that hands a processor registered again its old handle.
            // SAFETY: as above.
            unsafe { (*request).DeviceHandle = std::ptr::without_provenance_mut(first) };
        }
    }
    handled
}

#[test]
fn an_old_handle_for_a_processor_added_again_fails_hotplug() {
    FIRST_HANDLES.with(|handles| handles.borrow_mut().clear());
    assert_fails(&builtin("hot-add"), &with_dpm(reuse_first_handle), &["dpm.hotplug"]);
}

unsafe extern "C" fn refuse_resume(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE {
        return FALSE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn refusing_resume_fails_system_state() {
    assert_fails(&builtin("resume-s3"), &with_ppm(refuse_resume), &["ppm.system_state"]);
}

thread_local! {
    static RESUMED: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

unsafe extern "C" fn count_the_sleep(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE {
        RESUMED.with(|resumed| resumed.borrow_mut().push(handle.addr()));
    }
    let resumed = RESUMED.with(|resumed| resumed.borrow().contains(&handle.addr()));
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        edit_read(handle, notification, data, |nominal, actual| {
            // A PEP that adds the time asleep as if the processor had counted through it.
            if resumed {
                *nominal += 1_000_000_000;
                *actual += 1_000_000_000;
            }
        })
    }
}

#[test]
fn counting_through_a_sleep_fails_system_state() {
    RESUMED.with(|resumed| resumed.borrow_mut().clear());
    assert_fails(&builtin("resume-s3"), &with_ppm(count_the_sleep), &["ppm.system_state"]);
}

/// A `fixed-pmc` machine whose 32-bit fixed counters wrap during the run (core cycles every
/// 1.4 s at 3 GHz, reference cycles every 2.1 s at the 2 GHz nominal rate).
const FIXED_PMC: &str = r#"
name = "fixed-pmc-harness"
[platform]
processors = 4
counter_source = "fixed-pmc"
pmc_width = 32
nominal_mhz = 2000
hypervisor = true
other_devices = ["\\_SB.PCI0", "\\_SB.PWRB"]
[pofx]
duration_ms = 3000
sample_interval_ms = 10
[[phase]]
start_ms = 0
processors = "all"
frequency_mhz = 3000
busy_percent = 100
"#;

/// The fixed-counter harness with the PMU held by another owner.
fn pmu_busy() -> Scenario {
    scenario(&FIXED_PMC.replace("pmc_width = 32", "pmc_width = 32\npmu_busy = true"))
}

thread_local! {
    /// Per handle: (nominal offset, actual offset, last real nominal, last real actual, reads).
    static DROPS: std::cell::RefCell<std::collections::HashMap<usize, [u64; 5]>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

unsafe extern "C" fn drop_every_10th_interval(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        edit_read(handle, notification, data, |nominal, actual| {
            DROPS.with(|drops| {
                let mut drops = drops.borrow_mut();
                let [offset_n, offset_a, last_n, last_a, reads] =
                    drops.entry(handle.addr()).or_insert([0, 0, *nominal, *actual, 0]);
                *reads += 1;
                // A PEP that takes some intervals for resets (as one that mistook a wrap for
                // one would): monotonic, and accurate under a constant load, but short.
                if *reads % 10 == 0 {
                    *offset_n += *nominal - *last_n;
                    *offset_a += *actual - *last_a;
                }
                (*last_n, *last_a) = (*nominal, *actual);
                *nominal -= *offset_n;
                *actual -= *offset_a;
            });
        })
    }
}

#[test]
fn dropping_intervals_fails_no_dropped_interval_only() {
    DROPS.with(|drops| drops.borrow_mut().clear());
    let report = assert_fails(
        &scenario(FIXED_PMC),
        &with_ppm(drop_every_10th_interval),
        &["feedback.no_dropped_interval"],
    );
    let failed: Vec<&str> = report.failures().map(|check| check.id.as_str()).collect();
    assert_eq!(failed, ["feedback.no_dropped_interval"]);
    // The same defect on APERF/MPERF.
    DROPS.with(|drops| drops.borrow_mut().clear());
    assert_fails(&base(), &with_ppm(drop_every_10th_interval), &["feedback.no_dropped_interval"]);
}

#[test]
fn a_platform_that_loses_the_counters_top_bit_fails_no_dropped_interval() {
    // The fixed counters read through a broken virtual PMU that drops bit 31: they seem to
    // wrap at 2^31 although CPUID says 32 bits, and every such "wrap" is a jump the PEP must
    // take for a reset.
    let hook = |_: u32, msr: u32, result: Result<u64, ppm_engine::MsrFault>| match msr {
        0x30A | 0x30B => result.map(|value| value & 0x7FFF_FFFF),
        _ => result,
    };
    let faults = PlatformFaults { msr: Some(Arc::new(hook)), ..PlatformFaults::default() };
    assert_fails(&scenario(FIXED_PMC), &with_faults(faults), &["feedback.no_dropped_interval"]);
}

/// `IA32_FIXED_CTR1`, whether or not the PMU is reserved.
unsafe extern "C" fn read_fixed_counter(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        during_query_capabilities(handle, notification, data, |platform| {
            let _ = platform.read_msr(0x30A);
        })
    }
}

#[test]
fn reading_the_pmu_without_a_reservation_fails_reservation_respected() {
    assert_fails(
        &pmu_busy(),
        &with_ppm(read_fixed_counter),
        &["pmc.reservation_respected", "msr.only_advertised"],
    );
}

/// `IA32_FIXED_CTR_CTRL`, from a notification: the PMU is reserved, but a PEP writes
/// no MSR on a notification path.
unsafe extern "C" fn write_fixed_control(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        during_query_capabilities(handle, notification, data, |platform| {
            let _ = platform.write_msr(0x38D, 0x330);
        })
    }
}

#[test]
fn writing_a_pmu_register_from_a_callback_fails_reservation_respected() {
    assert_fails(
        &scenario(FIXED_PMC),
        &with_ppm(write_fixed_control),
        &["pmc.reservation_respected"],
    );
}

#[test]
fn a_platform_that_claims_the_pmu_fails_reservation_respected() {
    // The HAL refused the reservation, but the platform tells the engine the counters are
    // reserved: the engine then reads a PMU it does not own.
    let faults =
        PlatformFaults { claim_fixed_counters_reserved: true, ..PlatformFaults::default() };
    assert_fails(
        &pmu_busy(),
        &with_faults(faults),
        &["pmc.reservation_respected", "msr.only_advertised"],
    );
}

thread_local! {
    static LAST_NOMINAL: std::cell::RefCell<Vec<(usize, u64, u64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

unsafe extern "C" fn huge_delta_after_a_reset(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    unsafe {
        edit_read(handle, notification, data, |nominal, actual| {
            // A PEP that, when the counters went backwards, counts their whole value since the
            // processor started (at the plausible 2800/2000 ratio) instead of re-baselining.
            let offset = LAST_NOMINAL.with(|last| {
                let mut last = last.borrow_mut();
                let entry = last.iter().position(|(known, _, _)| *known == handle.addr());
                let Some(position) = entry else {
                    last.push((handle.addr(), *nominal, 0));
                    return 0;
                };
                let (_, previous, mut offset) = last[position];
                if *nominal == previous {
                    offset += 10_000_000_000;
                }
                last[position] = (handle.addr(), *nominal, offset);
                offset
            });
            *nominal += offset;
            *actual += offset / 10 * 14;
        })
    }
}

#[test]
fn a_huge_delta_across_a_reset_fails_no_spike() {
    LAST_NOMINAL.with(|last| last.borrow_mut().clear());
    let report = assert_fails(
        &builtin("counter-reset"),
        &with_ppm(huge_delta_after_a_reset),
        &["feedback.no_spike"],
    );
    assert_detail(&report, "feedback.no_spike", "across a counter discontinuity");
}

/// A PEP that acknowledges `RESUME_FROM_SYSTEM_STATE` without acting on it: on the fixed
/// counters it never enables them again after the sleep reset the PMU control.
unsafe extern "C" fn resume_ignored(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE {
        return TRUE;
    }
    // SAFETY: the emulator's arguments, passed on unchanged.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn fixed_counters_left_off_after_resume_fail_no_dropped_interval() {
    let report = assert_fails(
        &builtin("fixed-pmc-resume"),
        &with_ppm(resume_ignored),
        &["feedback.no_dropped_interval", "feedback.accuracy"],
    );
    assert_detail(&report, "feedback.no_dropped_interval", "ΔNominal 0");
}
