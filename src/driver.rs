//! `DriverEntry` and the KMDF device-add callback.
//!
//! `DriverEntry` runs once, at `PASSIVE_LEVEL`, when the boot loader's boot-start driver is
//! initialised (`LoadOrderGroup` `Core Platform Extensions`, with ACPI). In order it:
//!
//! 1. creates the KMDF driver object and removes every unload routine (KMDF's, and the one
//!    the KMDF stub would add): once registered, a PEP can never be unloaded, so the image must
//!    stay even if its device node is disabled or removed (an update needs a reboot);
//! 2. reads the configuration from the service's `Parameters` key (every value optional);
//! 3. allocates the processor table for `KeQueryMaximumProcessorCountEx(ALL_PROCESSOR_GROUPS)`
//!    processors from non-paged pool;
//! 4. where the configuration may use the architectural fixed counters and CPUID offers them
//!    (by default only where APERF/MPERF are missing), reserves the PMU through the HAL's
//!    counter arbitration and enables the counters on every active processor (`pmu`);
//! 5. builds the PEP (`Pep::new`) with the thread pinned to the processor it runs on (the
//!    engine calibrates MPERF over ~10 ms and both reads must come from one processor), moves
//!    it into static storage and publishes it (release);
//! 6. calls `PoFxRegisterPluginEx` with the engine's `PEP_INFORMATION` and the static
//!    kernel-information block;
//! 7. writes the outcome to the volatile `Parameters\State` key and the debugger.
//!
//! Any failure before registration undoes what was done, logs why with `DbgPrintEx` and is
//! returned, so the driver does not load. Nothing after a successful registration can fail
//! `DriverEntry`.
//!
//! The device ids PoFx offers arrive later (`PEP_DPM_PREPARE_DEVICE`, after `DriverEntry`), so
//! they are not in the `State` key: the engine records them in its device-id log, which a kernel
//! debugger shows (see README, "Validate").

use core::mem::size_of;
use core::ptr;

use ppm_engine::{Pep, pep_information};
use wdk_sys::ntddk::KeQueryMaximumProcessorCountEx;
use wdk_sys::{
    ALL_PROCESSOR_GROUPS, DRIVER_OBJECT, NT_SUCCESS, NTSTATUS, PCUNICODE_STRING, PWDFDEVICE_INIT,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS, STATUS_UNSUCCESSFUL, ULONG, USHORT,
    WDF_DRIVER_CONFIG, WDF_NO_OBJECT_ATTRIBUTES, WDFDEVICE, WDFDRIVER, WdfDriverGlobals,
    call_unsafe_wdf_function_binding,
};

use crate::config_values::{self, state};
use crate::platform::KernelPlatform;
use crate::pmu;
use crate::registry::{self, StateKey};
use crate::storage::{self, ProcessorTable};
use crate::{affinity, log, pofx};

/// `sizeof(WDF_DRIVER_CONFIG)` as the `ULONG` its `Size` member holds.
#[allow(clippy::cast_possible_truncation, reason = "asserted to fit a ULONG")]
const WDF_DRIVER_CONFIG_SIZE: ULONG = {
    assert!(size_of::<WDF_DRIVER_CONFIG>() <= ULONG::MAX as usize);
    size_of::<WDF_DRIVER_CONFIG>() as ULONG
};

/// The architecture the driver was built for, as the `State` key names it.
const ARCHITECTURE: &str = if cfg!(target_arch = "x86_64") { "x64" } else { "arm64" };

/// A failed initialisation step.
#[derive(Clone, Copy, Debug)]
struct Failure {
    /// What failed (logged and written to `State\FailedStep`).
    step: &'static str,
    /// Its status, which `DriverEntry` returns.
    status: NTSTATUS,
}

/// What a successful initialisation produced.
struct Registered {
    /// The registered PEP.
    pep: &'static Pep<KernelPlatform>,
    /// The processor table's capacity.
    capacity: u32,
    /// Processor device-id patterns in use.
    patterns: usize,
    /// Configuration values that were ignored.
    issues: u32,
    /// What became of the PMU reservation for the fixed-counter source.
    pmu: &'static str,
}

/// The driver's entry point (`DRIVER_INITIALIZE`), called by the KMDF stub `FxDriverEntry`.
/// `PASSIVE_LEVEL`.
///
/// # Safety
/// Called by the kernel only, once, with its driver object and the service's registry path.
// SAFETY: "DriverEntry" is the symbol the KMDF stub calls; nothing else in the image exports it.
#[unsafe(export_name = "DriverEntry")]
pub unsafe extern "system" fn driver_entry(
    driver: &mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    let wdf_driver = match create_driver(driver, registry_path) {
        Ok(wdf_driver) => wdf_driver,
        Err(status) => {
            log::error(format_args!(
                "WdfDriverCreate failed with {status:#010X}; the PEP is not registered"
            ));
            return status;
        }
    };
    forbid_unload(driver);
    match initialize(wdf_driver) {
        Ok(registered) => {
            report_registered(wdf_driver, &registered);
            STATUS_SUCCESS
        }
        Err(failure) => {
            report_failure(wdf_driver, failure);
            failure.status
        }
    }
}

/// Removes every unload path: a registered PEP must never unload (`PoFx` keeps calling into
/// the image), whatever happens to its device node (disable, removal, a Device Fundamentals
/// test).
///
/// For a `PnP` driver KMDF sets `DriverObject->DriverUnload` to its own routine, and
/// `WdfDriverCreate` sets `WdfDriverGlobals->DisplaceDriverUnload`, which tells the KMDF stub
/// (`FxDriverEntry`, after `DriverEntry` returns) to install its unload routine in front of
/// whatever `DriverUnload` holds. `wdfglobals.h` documents the flag: "If FALSE, `DriverUnload`
/// is left alone (but WDF will not be notified of unload and there will be no auto cleanup)".
/// Clearing the flag and `DriverUnload` leaves the driver with no unload routine, and the I/O
/// manager never unloads such a driver, even after its last device is removed. (A failed
/// `DriverEntry` is still unloaded: that path does not use the routine.) `PASSIVE_LEVEL`,
/// after a successful `WdfDriverCreate`.
fn forbid_unload(driver: &mut DRIVER_OBJECT) {
    // SAFETY: reading the pointer the KMDF stub stored before calling DriverEntry; nothing
    // writes it concurrently (DriverEntry runs alone).
    let globals = unsafe { WdfDriverGlobals };
    if !globals.is_null() {
        // SAFETY: non-NULL, it points to this driver's WDF_DRIVER_GLOBALS, which KMDF keeps for
        // the driver's lifetime; DriverEntry is the only code touching it now.
        unsafe { (*globals).DisplaceDriverUnload = 0 };
    }
    driver.DriverUnload = None;
}

/// Creates the KMDF driver object: `PnP`, with [`evt_driver_device_add`] and no unload callback.
fn create_driver(
    driver: &mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> Result<WDFDRIVER, NTSTATUS> {
    let mut config = WDF_DRIVER_CONFIG {
        Size: WDF_DRIVER_CONFIG_SIZE,
        EvtDriverDeviceAdd: Some(evt_driver_device_add),
        EvtDriverUnload: None,
        DriverInitFlags: 0,
        DriverPoolTag: storage::POOL_TAG,
    };
    let mut handle: WDFDRIVER = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL, from DriverEntry; `driver` and `registry_path` are DriverEntry's
    // own arguments; no object attributes; `config` is a valid WDF_DRIVER_CONFIG with its Size
    // set; `handle` is a valid WDFDRIVER to write.
    let status = unsafe {
        call_unsafe_wdf_function_binding!(
            WdfDriverCreate,
            ptr::from_mut(driver),
            registry_path,
            WDF_NO_OBJECT_ATTRIBUTES,
            &raw mut config,
            &raw mut handle,
        )
    };
    if !NT_SUCCESS(status) {
        Err(status)
    } else if handle.is_null() {
        Err(STATUS_UNSUCCESSFUL)
    } else {
        Ok(handle)
    }
}

/// Steps 2 to 6 of `DriverEntry`. `PASSIVE_LEVEL`.
fn initialize(driver: WDFDRIVER) -> Result<Registered, Failure> {
    let (config, issues) = registry::read_configuration(driver);
    let capacity = maximum_processor_count();
    let count = usize::try_from(capacity).unwrap_or(0);
    if count == 0 {
        return Err(Failure {
            step: "KeQueryMaximumProcessorCountEx",
            status: STATUS_UNSUCCESSFUL,
        });
    }
    let table = ProcessorTable::allocate(count).ok_or(Failure {
        step: "allocating the processor table",
        status: STATUS_INSUFFICIENT_RESOURCES,
    })?;
    let pmu = pmu::reserve_and_enable(&config);
    let pep = on_current_processor(|| {
        // SAFETY: DriverEntry runs once and nothing has been installed or published yet.
        unsafe { storage::install(Pep::new(KernelPlatform, &config, table.slots())) }
    });
    storage::publish(pep);
    let mut information = pep_information::<KernelPlatform>();
    // SAFETY: once per boot, from DriverEntry at PASSIVE_LEVEL; the PEP the callbacks serve is
    // published; after a successful registration DriverEntry succeeds and the driver has no
    // unload routine, so the image stays.
    let status = unsafe { pofx::register(&mut information) };
    if !NT_SUCCESS(status) {
        storage::withdraw();
        pmu.release();
        // SAFETY: the registration failed, so PoFx never received the callbacks, and the PEP
        // that refers to the slots is withdrawn: nothing uses them again.
        unsafe { table.free() };
        return Err(Failure { step: "PoFxRegisterPluginEx", status });
    }
    let pmu = pmu.keep();
    Ok(Registered { pep, capacity, patterns: config.device_id_patterns.len(), issues, pmu })
}

/// `KeQueryMaximumProcessorCountEx(ALL_PROCESSOR_GROUPS)`: every processor the system can ever
/// have, hot-added ones included (0 if the constant did not fit). Any IRQL.
fn maximum_processor_count() -> u32 {
    let Ok(all_groups) = USHORT::try_from(ALL_PROCESSOR_GROUPS) else {
        return 0;
    };
    // SAFETY: callable at any IRQL; ALL_PROCESSOR_GROUPS asks for the total of every group.
    unsafe { KeQueryMaximumProcessorCountEx(all_groups) }
}

/// Runs `f` with the thread's affinity set to the processor it is running on, then restores
/// the previous affinity. `PASSIVE_LEVEL`.
fn on_current_processor<R>(f: impl FnOnce() -> R) -> R {
    affinity::run_on(affinity::current(), f)
}

/// Logs the registration and writes it to `Parameters\State`. `PASSIVE_LEVEL`. Best effort:
/// the PEP is registered whatever happens here.
#[inline(never)]
fn report_registered(driver: WDFDRIVER, registered: &Registered) {
    let pep = registered.pep;
    let caps = pep.perf_capabilities();
    let source = pep.counter_source().name();
    let reason = config_values::no_counters_reason_name(pep.no_counters_reason());
    let rate_source = config_values::nominal_rate_source_name(pep.nominal_rate_source());
    let perf_source = config_values::perf_source_name(pep.perf_source());
    log::info(format_args!(
        "registered: {} feedback counter(s), source {source} (no-counters reason {reason}), \
         nominal {} MHz ({rate_source}), perf {}/{}/{}/{} ({perf_source}), {} processor slots, \
         {} ignored configuration value(s), PMU reservation {}",
        pep.feedback_counter_count(),
        pep.nominal_mhz(),
        caps.highest,
        caps.nominal,
        caps.lowest_nonlinear,
        caps.lowest,
        registered.capacity,
        registered.issues,
        registered.pmu,
    ));
    let mut record = match StateKey::create(driver) {
        Ok(record) => record,
        Err(status) => {
            log::error(format_args!("cannot create Parameters\\State ({status:#010X})"));
            return;
        }
    };
    record.dword(state::REGISTERED, 1);
    record.dword(state::FEEDBACK_COUNTER_COUNT, pep.feedback_counter_count());
    record.string(state::COUNTER_SOURCE, source);
    record.string(state::NO_COUNTERS_REASON, reason);
    record.dword(state::NOMINAL_MHZ, pep.nominal_mhz());
    record.string(state::NOMINAL_RATE_SOURCE, rate_source);
    record.dword(state::CALIBRATED_MHZ, pep.calibrated_mhz());
    record.dword(state::HIGHEST_PERFORMANCE, caps.highest);
    record.dword(state::NOMINAL_PERFORMANCE, caps.nominal);
    record.dword(state::LOWEST_NONLINEAR_PERFORMANCE, caps.lowest_nonlinear);
    record.dword(state::LOWEST_PERFORMANCE, caps.lowest);
    record.string(state::PERF_SOURCE, perf_source);
    record.dword(state::PROCESSOR_TABLE_CAPACITY, registered.capacity);
    record.dword(
        state::DEVICE_ID_PATTERN_COUNT,
        u32::try_from(registered.patterns).unwrap_or(u32::MAX),
    );
    record.dword(state::CONFIGURATION_ISSUES, registered.issues);
    record.string(state::ARCHITECTURE, ARCHITECTURE);
    record.string(state::PMU_RESERVATION, registered.pmu);
    if record.failures() > 0 {
        log::error(format_args!("{} Parameters\\State value(s) not written", record.failures()));
    }
}

/// Logs a failed initialisation and records it in `Parameters\State` (best effort).
/// `PASSIVE_LEVEL`.
fn report_failure(driver: WDFDRIVER, failure: Failure) {
    log::error(format_args!(
        "{} failed with {:#010X}; the PEP is not registered and the driver does not load",
        failure.step, failure.status
    ));
    if let Ok(mut record) = StateKey::create(driver) {
        record.dword(state::REGISTERED, 0);
        record.string(state::FAILED_STEP, failure.step);
        record.dword(state::FAILURE_STATUS, failure.status.cast_unsigned());
        record.string(state::ARCHITECTURE, ARCHITECTURE);
    }
}

/// `EvtDriverDeviceAdd` for the PEP's device node (the ACPI device on a real platform, the
/// `Root\PpmPep` node on a test VM): creates a plain WDF device so the node starts. The PEP
/// itself does not depend on the device: it registered in `DriverEntry`. `PASSIVE_LEVEL`.
///
/// # Safety
/// Called by KMDF only, with its `WDFDEVICE_INIT` for this device.
unsafe extern "C" fn evt_driver_device_add(
    _driver: WDFDRIVER,
    device_init: PWDFDEVICE_INIT,
) -> NTSTATUS {
    let mut device_init = device_init;
    let mut device: WDFDEVICE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; `device_init` is KMDF's WDFDEVICE_INIT for this callback, which
    // WdfDeviceCreate consumes; no object attributes; `device` is a valid WDFDEVICE to write.
    unsafe {
        call_unsafe_wdf_function_binding!(
            WdfDeviceCreate,
            &raw mut device_init,
            WDF_NO_OBJECT_ATTRIBUTES,
            &raw mut device,
        )
    }
}
