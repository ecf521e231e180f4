//! What the `checks_can_fail*` tests share: the harness scenario, the run options that
//! substitute a shimmed callback or inject a fault, the assertions, and the engine's own
//! callbacks for the shims to call.

#![allow(dead_code, reason = "each test binary uses its own part of the helpers")]

use ppm_engine::abi::{
    BOOLEAN, FALSE, PCUNICODE_STRING, PEP_DPM_UNREGISTER_DEVICE, PEP_INFORMATION,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_PPM_FEEDBACK_READ, PEP_PREPARE_DEVICE, PEPHANDLE, PVOID,
    ULONG,
};
use ppm_engine::callbacks::{
    accept_device_notification, accept_processor_notification, pep_information,
};
use ppm_sim::platform::SimHost;
use ppm_sim::sabotage::{PlatformFaults, Sabotage};
use ppm_sim::{Report, RunOptions, Scenario, run_with};

pub const BASE: &str = r#"
name = "harness"
[platform]
processors = 4
nominal_mhz = 2000
other_devices = ["\\_SB.PCI0", "\\_SB.PCI0.GFX0", "\\_SB.PWRB", "ACPI\\PNP0C0C"]
[pofx]
duration_ms = 300
sample_interval_ms = 15
[[phase]]
start_ms = 0
processors = "all"
frequency_mhz = 3000
busy_percent = 70
[[phase]]
start_ms = 100
end_ms = 200
processors = [1]
frequency_mhz = 4200
busy_percent = 100
"#;

pub fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text).expect("a valid test scenario")
}

pub fn base() -> Scenario {
    scenario(BASE)
}

pub type Dpm = unsafe extern "C" fn(ULONG, PVOID) -> BOOLEAN;
pub type Ppm = unsafe extern "C" fn(PEPHANDLE, ULONG, PVOID) -> BOOLEAN;

pub fn sabotaged(sabotage: Sabotage) -> RunOptions {
    RunOptions { sabotage, ..RunOptions::default() }
}

pub fn with_information(info: PEP_INFORMATION) -> RunOptions {
    sabotaged(Sabotage { pep_information: Some(info), ..Sabotage::default() })
}

pub fn with_dpm(shim: Dpm) -> RunOptions {
    let mut info = pep_information::<SimHost>();
    info.AcceptDeviceNotification = Some(shim);
    with_information(info)
}

pub fn with_ppm(shim: Ppm) -> RunOptions {
    let mut info = pep_information::<SimHost>();
    info.AcceptProcessorNotification = Some(shim);
    with_information(info)
}

pub fn with_faults(faults: PlatformFaults) -> RunOptions {
    sabotaged(Sabotage { platform: faults, ..Sabotage::default() })
}

/// Asserts that the real engine passes `scenario` and that `options` make each of `ids` fail.
pub fn assert_fails(scenario: &Scenario, options: &RunOptions, ids: &[&str]) -> Report {
    let good = run_with(scenario, &RunOptions::default());
    assert!(good.passed, "the real engine must pass the baseline:\n{}", good.checks_text());
    let bad = run_with(scenario, options);
    assert!(!bad.passed, "the defect went unnoticed:\n{}", bad.checks_text());
    for id in ids {
        let check = bad.checks.iter().find(|check| check.id == *id).expect("a known check id");
        assert!(!check.passed, "{id} should fail:\n{}", bad.checks_text());
        assert!(!check.detail.is_empty());
    }
    bad
}

/// The check `id` of `report`.
pub fn check_of<'r>(report: &'r Report, id: &str) -> &'r ppm_sim::CheckResult {
    report.checks.iter().find(|check| check.id == id).expect("a known check id")
}

/// Check `id` of `report` says `needle` in its detail.
pub fn assert_detail(report: &Report, id: &str, needle: &str) {
    let check = check_of(report, id);
    assert!(check.detail.contains(needle), "{id}: {}", check.detail);
}

/// The engine's DPM callback.
pub unsafe fn real_dpm(notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the caller passes on the emulator's arguments unchanged.
    unsafe { accept_device_notification::<SimHost>(notification, data) }
}

/// The engine's PPM callback.
pub unsafe fn real_ppm(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    // SAFETY: the caller passes on the emulator's arguments unchanged.
    unsafe { accept_processor_notification::<SimHost>(handle, notification, data) }
}

/// The device id of a `PEP_PREPARE_DEVICE`, as text.
pub unsafe fn prepared_id(data: PVOID) -> String {
    // SAFETY: the caller guarantees `data` is a live PEP_PREPARE_DEVICE.
    let id: PCUNICODE_STRING = unsafe { (*data.cast::<PEP_PREPARE_DEVICE>()).DeviceId };
    if id.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL DeviceId from the emulator points to a live UNICODE_STRING.
    let string = unsafe { id.read() };
    // SAFETY: the emulator's string holds `Length` bytes of UTF-16 at `Buffer`.
    let units =
        unsafe { std::slice::from_raw_parts(string.Buffer, usize::from(string.Length / 2)) };
    String::from_utf16_lossy(units)
}

/// Refuses `PEP_DPM_UNREGISTER_DEVICE`.
pub unsafe extern "C" fn refuse_unregister(notification: ULONG, data: PVOID) -> BOOLEAN {
    if notification == PEP_DPM_UNREGISTER_DEVICE {
        return FALSE;
    }
    // SAFETY: the emulator's arguments, passed on.
    unsafe { real_dpm(notification, data) }
}

/// Calls the engine, then lets `edit` change a served answer of type `T` for `target`.
pub unsafe fn edit_answer<T>(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
    target: ULONG,
    edit: impl FnOnce(&mut T),
) -> BOOLEAN {
    // SAFETY: the emulator's arguments, passed on.
    let handled = unsafe { real_ppm(handle, notification, data) };
    if handled != FALSE && notification == target && !data.is_null() {
        // SAFETY: the data of `target` is a live, exclusive `T` (the caller names the type).
        edit(unsafe { &mut *data.cast::<T>() });
    }
    handled
}

/// Runs the engine's `FEEDBACK_READ`, then lets `edit` change the served counts.
pub unsafe fn edit_read(
    handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
    edit: impl FnOnce(&mut u64, &mut u64),
) -> BOOLEAN {
    let edit_counts = |read: &mut PEP_PPM_FEEDBACK_READ| {
        // SAFETY: both union members are plain integers over the same bytes; any value is valid.
        let counts = unsafe { &mut read.__bindgen_anon_1.__bindgen_anon_1 };
        edit(&mut counts.NominalCount, &mut counts.ActualCount);
    };
    // SAFETY: FEEDBACK_READ's data is a PEP_PPM_FEEDBACK_READ; the caller passes on the
    // emulator's arguments.
    unsafe { edit_answer(handle, notification, data, PEP_NOTIFY_PPM_FEEDBACK_READ, edit_counts) }
}

pub fn builtin(name: &str) -> Scenario {
    ppm_sim::builtin::get(name).expect("a built-in scenario")
}
