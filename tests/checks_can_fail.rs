//! Every conformance check can fail: each test runs a scenario the real engine passes, then the
//! same scenario with one deliberate defect — an `extern "C"` shim around the engine's callbacks
//! that corrupts one answer, or an injected platform fault — and asserts that the check meant
//! to catch it fails.
//!
//! This file holds the checks of registration, devices, probes, the answers of initialisation
//! and `DriverEntry`; `checks_can_fail_runtime.rs` those of the runtime's reads and events.

use std::sync::Arc;

use ppm_engine::abi::{
    BOOLEAN, FALSE, PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE, PEP_DPM_PREPARE_DEVICE,
    PEP_DPM_REGISTER_DEVICE, PEP_DPM_WORK, PEP_INFORMATION, PEP_NOTIFY_PPM_CST_STATES,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, PEP_NOTIFY_PPM_QUERY_VETO_REASONS, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_FEEDBACK_COUNTERS, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PPM_QUERY_VETO_REASONS, PEP_PREPARE_DEVICE, PEP_REGISTER_DEVICE_V2, PEPHANDLE, PVOID, TRUE,
    ULONG,
};
use ppm_engine::callbacks::pep_information;
use ppm_sim::driver_entry::ENGINE_IMAGE_TIME_DATE_STAMP;
use ppm_sim::platform::SimHost;
use ppm_sim::pofx::{UNDEFINED_DPM_NOTIFICATIONS, UNDEFINED_PPM_NOTIFICATIONS};
use ppm_sim::sabotage::{DriverEntrySabotage, PlatformFaults, Sabotage};
use ppm_sim::{RunOptions, run_with};

mod common;

use common::{
    assert_detail, assert_fails, base, builtin, check_of, edit_answer, prepared_id, real_dpm,
    real_ppm, refuse_unregister, sabotaged, with_dpm, with_faults, with_information, with_ppm,
};

#[test]
fn the_real_engine_passes_the_harness_scenario() {
    let report = run_with(&base(), &RunOptions::default());
    assert!(report.passed, "{}", report.checks_text());
    assert_eq!(report.checks.len(), ppm_sim::CHECK_IDS.len());
    for processor in &report.processors {
        let (expected, measured) =
            (processor.expected_mhz.expect("C0 time"), processor.measured_mhz.expect("counters"));
        assert!((measured - expected).abs() / expected < 1e-3, "{processor:?}");
    }
    // Processor 1 bursts to 4200 MHz for a third of the run: its mean lies strictly between.
    let burst = report.processors[1].expected_mhz.expect("C0 time");
    assert!(burst > 3000.0 && burst < 4200.0, "{burst}");
}

#[test]
fn a_wrong_size_or_a_missing_callback_fails_registration() {
    let mut info: PEP_INFORMATION = pep_information::<SimHost>();
    info.Size = 24;
    let options = with_information(info);
    // PoFxRegisterPluginEx refuses the structure, so DriverEntry fails where the scenario
    // expects it to register: boot.status says so, and nothing runs.
    let report = assert_fails(&base(), &options, &["registration.version_size", "boot.status"]);
    assert!(report.checks.iter().skip(5).all(|check| check.detail.starts_with("not run")));
    let mut info = pep_information::<SimHost>();
    info.AcceptProcessorNotification = None;
    let options = with_information(info);
    assert_fails(&base(), &options, &["registration.version_size"]);
}

unsafe extern "C" fn accept_everything(notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_dpm(notification, data) };
    if notification == PEP_DPM_PREPARE_DEVICE && !data.is_null() {
        // SAFETY: PREPARE_DEVICE's data is a live PEP_PREPARE_DEVICE.
        unsafe { (*data.cast::<PEP_PREPARE_DEVICE>()).DeviceAccepted = TRUE };
    }
    handled
}

#[test]
fn accepting_a_non_processor_fails_others_declined() {
    assert_fails(&base(), &with_dpm(accept_everything), &["dpm.others_declined"]);
}

unsafe extern "C" fn decline_cpu1(notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_dpm(notification, data) };
    if notification == PEP_DPM_PREPARE_DEVICE && !data.is_null() {
        // SAFETY: PREPARE_DEVICE's non-NULL data is a live PEP_PREPARE_DEVICE.
        let id = unsafe { prepared_id(data) };
        if id == "\\_SB.CPU1" {
            // SAFETY: as above.
            unsafe { (*data.cast::<PEP_PREPARE_DEVICE>()).DeviceAccepted = FALSE };
        }
    }
    handled
}

#[test]
fn declining_a_processor_fails_processors_accepted() {
    assert_fails(&base(), &with_dpm(decline_cpu1), &["dpm.processors_accepted"]);
}

unsafe extern "C" fn same_handle_for_all(notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_dpm(notification, data) };
    if notification == PEP_DPM_REGISTER_DEVICE && !data.is_null() {
        // SAFETY: REGISTER_DEVICE's data is a live PEP_REGISTER_DEVICE_V2.
        unsafe {
            (*data.cast::<PEP_REGISTER_DEVICE_V2>()).DeviceHandle =
                std::ptr::without_provenance_mut(0x1);
        }
    }
    handled
}

#[test]
fn duplicate_handles_fail_handles_unique() {
    assert_fails(&base(), &with_dpm(same_handle_for_all), &["dpm.handles_unique_nonnull"]);
}

#[test]
fn refusing_unregister_fails_lifecycle() {
    assert_fails(&base(), &with_dpm(refuse_unregister), &["dpm.lifecycle"]);
}

unsafe extern "C" fn claim_unknown_dpm(notification: ULONG, data: PVOID) -> BOOLEAN {
    if UNDEFINED_DPM_NOTIFICATIONS.contains(&notification) {
        return TRUE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_dpm(notification, data) }
}

#[test]
fn claiming_an_unknown_dpm_notification_fails_dpm_unknown_refused() {
    assert_fails(&base(), &with_dpm(claim_unknown_dpm), &["dpm.unknown_refused"]);
}

unsafe extern "C" fn claim_unknown_ppm(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if UNDEFINED_PPM_NOTIFICATIONS.contains(&notification) {
        return TRUE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn claiming_an_unknown_ppm_notification_fails_ppm_unknown_refused() {
    assert_fails(&base(), &with_ppm(claim_unknown_ppm), &["ppm.unknown_refused"]);
}

unsafe extern "C" fn accept_null_data(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if data.is_null() {
        return TRUE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn accepting_null_data_fails_null_data_refused() {
    assert_fails(&base(), &with_ppm(accept_null_data), &["ppm.null_data_refused"]);
}

unsafe extern "C" fn trust_high_handles(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_FEEDBACK_READ && handle.addr() >> 63 == 1 {
        return TRUE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn serving_a_forged_handle_fails_forged_handle_refused() {
    assert_fails(&base(), &with_ppm(trust_high_handles), &["ppm.forged_handle_refused"]);
}

unsafe extern "C" fn idle_states(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: QUERY_CAPABILITIES' data is a PEP_PPM_QUERY_CAPABILITIES.
    unsafe {
        edit_answer(
            handle,
            notification,
            data,
            PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
            |caps: &mut PEP_PPM_QUERY_CAPABILITIES| {
                caps.IdleStateCount = 1;
            },
        )
    }
}

#[test]
fn announcing_idle_states_fails_capabilities_consistent() {
    assert_fails(&base(), &with_ppm(idle_states), &["capabilities.consistent"]);
}

unsafe extern "C" fn any_count(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_ppm(handle, notification, data) };
    if notification == PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS && !data.is_null() {
        TRUE
    } else {
        handled
    }
}

#[test]
fn accepting_a_wrong_count_fails_capabilities_consistent() {
    assert_fails(&base(), &with_ppm(any_count), &["capabilities.consistent"]);
}

unsafe extern "C" fn wrong_nominal_rate(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: QUERY_FEEDBACK_COUNTERS' data is a PEP_PPM_QUERY_FEEDBACK_COUNTERS with room for
    // its Count (>= 1 when served) descriptors.
    unsafe {
        edit_answer(
            handle,
            notification,
            data,
            PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
            |query: &mut PEP_PPM_QUERY_FEEDBACK_COUNTERS| {
                query.Counters[0].NominalRate = 1000;
            },
        )
    }
}

#[test]
fn a_wrong_nominal_rate_fails_descriptors_and_accuracy() {
    assert_fails(
        &base(),
        &with_ppm(wrong_nominal_rate),
        &["feedback.descriptors", "feedback.accuracy"],
    );
}

unsafe extern "C" fn unordered_perf(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    // SAFETY: QUERY_PERF_CAPABILITIES' data is a PEP_PPM_QUERY_PERF_CAPABILITIES.
    unsafe {
        edit_answer(
            handle,
            notification,
            data,
            PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
            |perf: &mut PEP_PPM_QUERY_PERF_CAPABILITIES| {
                std::mem::swap(&mut perf.HighestPerformance, &mut perf.LowestPerformance);
            },
        )
    }
}

#[test]
fn unordered_perf_levels_fail_perf_ordering() {
    assert_fails(&base(), &with_ppm(unordered_perf), &["perf.ordering"]);
}

unsafe extern "C" fn two_members(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: QUERY_PERF_CAPABILITIES' data is a PEP_PPM_QUERY_PERF_CAPABILITIES.
    unsafe {
        edit_answer(
            handle,
            notification,
            data,
            PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
            |perf: &mut PEP_PPM_QUERY_PERF_CAPABILITIES| {
                perf.DomainMembers = 2;
            },
        )
    }
}

#[test]
fn wrong_domain_members_fail_domain_membership() {
    assert_fails(&base(), &with_ppm(two_members), &["domain.membership"]);
}

unsafe extern "C" fn serve_any_index(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_FEEDBACK_READ && !data.is_null() {
        // SAFETY: FEEDBACK_READ's data is a live PEP_PPM_FEEDBACK_READ.
        if unsafe { (*data.cast::<PEP_PPM_FEEDBACK_READ>()).CounterIndex } >= 1 {
            return TRUE;
        }
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn serving_an_out_of_range_index_fails_index_out_of_range_refused() {
    assert_fails(&base(), &with_ppm(serve_any_index), &["feedback.index_out_of_range_refused"]);
}

#[test]
fn trusting_the_wrong_processor_fails_wrong_processor_refused() {
    // A platform that always says "processor 0": every handle binds to 0 and a read issued on
    // another processor is served.
    let faults =
        PlatformFaults { current_processor: Some(Arc::new(|_| 0)), ..PlatformFaults::default() };
    assert_fails(&base(), &with_faults(faults), &["feedback.wrong_processor_refused"]);
}

/// A PEP that ignores its own probe: where the announced counters faulted at initialisation it
/// still reports one (the kernel-side counterpart is reading an MSR that was never proven).
unsafe extern "C" fn probe_ignored(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on unchanged.
    let returned = unsafe { real_ppm(handle, notification, data) };
    if notification == PEP_NOTIFY_PPM_QUERY_CAPABILITIES && returned == TRUE && !data.is_null() {
        // SAFETY: QUERY_CAPABILITIES data is a live PEP_PPM_QUERY_CAPABILITIES.
        unsafe { (*data.cast::<PEP_PPM_QUERY_CAPABILITIES>()).FeedbackCounterCount = 1 };
    }
    returned
}

#[test]
fn counters_reported_after_a_faulting_probe_fail_capabilities() {
    let report = assert_fails(
        &builtin("hypervisor-faulting"),
        &with_ppm(probe_ignored),
        &["capabilities.consistent"],
    );
    assert_detail(&report, "capabilities.consistent", "FeedbackCounterCount 1");
}

/// A PEP that declines the start-up queries it has a documented answer for (the engine before it
/// answered them): FALSE for `QUERY_PLATFORM_STATES`, a veto-reason count of 3.
unsafe extern "C" fn startup_queries_declined(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    match notification {
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES => FALSE,
        PEP_NOTIFY_PPM_QUERY_VETO_REASONS if !data.is_null() => {
            // SAFETY: QUERY_VETO_REASONS data is a live PEP_PPM_QUERY_VETO_REASONS.
            unsafe { (*data.cast::<PEP_PPM_QUERY_VETO_REASONS>()).VetoReasonCount = 3 };
            TRUE
        }
        // SAFETY: the emulator's arguments, passed on unchanged.
        _ => unsafe { real_ppm(handle, notification, data) },
    }
}

#[test]
fn declined_boot_queries_fail_boot_queries() {
    let report = assert_fails(&base(), &with_ppm(startup_queries_declined), &["ppm.boot_queries"]);
    assert_detail(&report, "ppm.boot_queries", "QUERY_PLATFORM_STATES: FALSE");
    assert_detail(&report, "ppm.boot_queries", "QUERY_VETO_REASONS: TRUE with count 3, expected 0");
}

fn with_driver_entry_sabotage(sabotage: DriverEntrySabotage) -> RunOptions {
    sabotaged(Sabotage { driver_entry: sabotage, ..Sabotage::default() })
}

#[test]
fn a_driver_entry_that_swallows_a_failure_fails_boot_status() {
    let sabotage = DriverEntrySabotage { swallow_failure: true, ..DriverEntrySabotage::default() };
    let report = assert_fails(
        &builtin("boot-register-refused"),
        &with_driver_entry_sabotage(sabotage),
        &["boot.status"],
    );
    assert_detail(&report, "boot.status", "returned 0x00000000");
    assert_detail(&report, "boot.status", "expected 0xC000A005");
}

#[test]
fn a_failed_boot_that_leaks_pool_fails_boot_unwind() {
    let sabotage = DriverEntrySabotage { leak_pool: true, ..DriverEntrySabotage::default() };
    for name in ["boot-register-refused", "boot-register-error"] {
        let report =
            assert_fails(&builtin(name), &with_driver_entry_sabotage(sabotage), &["boot.unwind"]);
        let check = check_of(&report, "boot.unwind");
        assert!(check.detail.contains("pool blocks leaked"), "{name}: {}", check.detail);
    }
}

#[test]
fn a_failed_boot_that_stays_published_fails_boot_unwind() {
    let sabotage = DriverEntrySabotage { keep_published: true, ..DriverEntrySabotage::default() };
    let report = assert_fails(
        &builtin("boot-register-refused"),
        &with_driver_entry_sabotage(sabotage),
        &["boot.unwind"],
    );
    assert_detail(&report, "boot.unwind", "still published");
}

#[test]
fn a_failed_boot_that_leaves_the_pmu_enabled_fails_boot_unwind() {
    let sabotage = DriverEntrySabotage { skip_pmu_restore: true, ..DriverEntrySabotage::default() };
    let report = assert_fails(
        &builtin("boot-register-refused"),
        &with_driver_entry_sabotage(sabotage),
        &["boot.unwind"],
    );
    assert_detail(
        &report,
        "boot.unwind",
        "PMU control left changed on processor(s) [0, 1, 2, 3, 4, 5]",
    );
}

#[test]
fn lost_state_strings_fail_boot_state() {
    let sabotage =
        DriverEntrySabotage { drop_state_strings: true, ..DriverEntrySabotage::default() };
    for name in ["default", "boot-register-refused", "boot-skip-registration"] {
        let report =
            assert_fails(&builtin(name), &with_driver_entry_sabotage(sabotage), &["boot.state"]);
        let check = check_of(&report, "boot.state");
        assert!(check.detail.contains("Architecture"), "{name}: {}", check.detail);
    }
}

#[test]
fn a_stale_image_fails_boot_state() {
    let sabotage = DriverEntrySabotage { stale_image: true, ..DriverEntrySabotage::default() };
    for name in ["default", "boot-register-refused", "boot-skip-registration"] {
        let report =
            assert_fails(&builtin(name), &with_driver_entry_sabotage(sabotage), &["boot.state"]);
        assert_detail(
            &report,
            "boot.state",
            &format!(
                "ImageTimeDateStamp = \"{}\", expected \"{}\"",
                ENGINE_IMAGE_TIME_DATE_STAMP - 86_400,
                ENGINE_IMAGE_TIME_DATE_STAMP
            ),
        );
    }
}

#[test]
fn a_driver_that_registers_mid_session_after_an_install_fails_boot_inert() {
    let sabotage =
        DriverEntrySabotage { ignore_install_pending: true, ..DriverEntrySabotage::default() };
    let report = assert_fails(
        &builtin("boot-install-pending"),
        &with_driver_entry_sabotage(sabotage),
        &["boot.inert", "boot.state"],
    );
    assert_detail(&report, "boot.inert", "PoFxRegisterPluginEx was called");
}

#[test]
fn a_driver_that_ignores_skip_registration_fails_boot_inert() {
    let sabotage =
        DriverEntrySabotage { ignore_skip_registration: true, ..DriverEntrySabotage::default() };
    let report = assert_fails(
        &builtin("boot-skip-registration"),
        &with_driver_entry_sabotage(sabotage),
        &["boot.inert", "boot.unwind", "boot.state"],
    );
    assert_detail(&report, "boot.inert", "PoFxRegisterPluginEx was called");
}

#[test]
fn every_check_has_a_failing_test_here() {
    let source =
        concat!(include_str!("checks_can_fail.rs"), include_str!("checks_can_fail_runtime.rs"));
    for id in ppm_sim::CHECK_IDS {
        assert!(source.contains(&format!("\"{id}\"")), "no test makes {id} fail");
    }
}

/// The engine before `docs/notifications.md`: FALSE for `PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE`,
/// which the documentation says a PEP must handle.
unsafe extern "C" fn refuse_component_idle_state(notification: ULONG, data: PVOID) -> BOOLEAN {
    if notification == PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE {
        return FALSE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_dpm(notification, data) }
}

#[test]
fn refusing_a_notification_the_docs_require_fails_documented_answers() {
    let report = assert_fails(
        &base(),
        &with_dpm(refuse_component_idle_state),
        &["notifications.documented_answers"],
    );
    let check = check_of(&report, "notifications.documented_answers");
    assert!(check.detail.contains("PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE"), "{}", check.detail);
    let failed: Vec<&str> = report.failures().map(|check| check.id.as_str()).collect();
    assert_eq!(failed, ["notifications.documented_answers"]);
}

/// Declines `PEP_DPM_WORK` by FALSE, leaving `NeedWork` and `WorkInformation` unwritten,
/// rather than in its outputs as documented.
unsafe extern "C" fn decline_work_by_false(notification: ULONG, data: PVOID) -> BOOLEAN {
    if notification == PEP_DPM_WORK {
        return FALSE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_dpm(notification, data) }
}

/// Writes into the structure of a PPM notification it refuses (`CST_STATES`).
unsafe extern "C" fn scribble_on_refusal(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    if notification == PEP_NOTIFY_PPM_CST_STATES && !data.is_null() {
        let byte = data.cast::<u8>().wrapping_add(4);
        // SAFETY: the emulator's buffer is at least 8 bytes.
        unsafe { byte.write(0) };
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_ppm(handle, notification, data) }
}

#[test]
fn a_decline_not_in_the_documented_outputs_or_a_written_refusal_fails_documented_answers() {
    let report = assert_fails(
        &base(),
        &with_dpm(decline_work_by_false),
        &["notifications.documented_answers"],
    );
    assert_detail(&report, "notifications.documented_answers", "PEP_DPM_WORK");
    let report = assert_fails(
        &base(),
        &with_ppm(scribble_on_refusal),
        &["notifications.documented_answers"],
    );
    assert_detail(&report, "notifications.documented_answers", "PEP_NOTIFY_PPM_CST_STATES");
}
