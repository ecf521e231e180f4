//! `DriverEntry` and the KMDF device-add callback.
//!
//! `DriverEntry` runs once, at `PASSIVE_LEVEL`, when the boot loader's boot-start driver is
//! initialised (`LoadOrderGroup` `Core Platform Extensions`, with ACPI). It creates the KMDF
//! driver object (once registered, a PEP can never be unloaded: its device refuses stop and
//! remove, and an unload of a registered PEP bugchecks, as in Microsoft's PEP sample; an update
//! needs a reboot), and hands over to `ppm_engine::driver::driver_entry` over this kernel's services
//! ([`Kernel`]): configuration, `SkipRegistration`, processor table, PMU reservation, PEP,
//! `PoFxRegisterPluginEx`, `Boot`, and the unwinding of every failure — the sequence the
//! emulator runs on every scenario. It returns that sequence's status.
//!
//! The device ids PoFx offers arrive later (`PEP_DPM_PREPARE_DEVICE`, after `DriverEntry`), so
//! they are not in the `Boot` key: the engine records them in its device-id log, which a kernel
//! debugger shows (see docs/windows.md, "Validate").

use core::mem::size_of;
use core::ptr;

use ppm_engine::Passive;
use ppm_engine::driver::{LogLevel, driver_entry as initialize};
use wdk_sys::ntddk::KeBugCheckEx;
use wdk_sys::{
    _WDF_TRI_STATE, DRIVER_OBJECT, NT_SUCCESS, NTSTATUS, PCUNICODE_STRING, PWDFDEVICE_INIT,
    STATUS_UNSUCCESSFUL, ULONG, WDF_DEVICE_STATE, WDF_DRIVER_CONFIG, WDF_NO_OBJECT_ATTRIBUTES,
    WDFDEVICE, WDFDRIVER, call_unsafe_wdf_function_binding,
};

use crate::kernel_services::{Kernel, POOL_TAG};
use crate::{log, storage, trace};

/// `sizeof(WDF_DRIVER_CONFIG)` as the `ULONG` its `Size` member holds.
#[allow(clippy::cast_possible_truncation, reason = "asserted to fit a ULONG")]
const WDF_DRIVER_CONFIG_SIZE: ULONG = {
    assert!(size_of::<WDF_DRIVER_CONFIG>() <= ULONG::MAX as usize);
    size_of::<WDF_DRIVER_CONFIG>() as ULONG
};

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
    trace::register();
    let wdf_driver = match create_driver(driver, registry_path) {
        Ok(wdf_driver) => wdf_driver,
        Err(status) => {
            log::print(
                LogLevel::Error,
                format_args!(
                    "WdfDriverCreate failed with {status:#010X}; the PEP is not registered"
                ),
            );
            trace::driver_create_failed(status);
            // A failed DriverEntry unloads the image without EvtDriverUnload.
            trace::unregister();
            return status;
        }
    };
    // SAFETY: the kernel calls DriverEntry at PASSIVE_LEVEL; nothing here raises the IRQL, and
    // the token lives only until DriverEntry returns.
    let passive = unsafe { Passive::assume() };
    let status = initialize(&Kernel::new(wdf_driver), &passive).status();
    trace::driver_entry_result(status);
    if !NT_SUCCESS(status) {
        trace::unregister();
    }
    status
}

/// `BugCheck 0x121` (`DRIVER_VIOLATION`), what Microsoft's PEP sample raises when a registered
/// PEP is being unloaded.
const DRIVER_VIOLATION: ULONG = 0x121;

/// `EvtDriverUnload`. A PEP that registered can never be unloaded — `PoFx` keeps calling into
/// the image and offers no unregistration — so, as Microsoft's PEP sample does, an unload of a
/// registered PEP stops the system with `DRIVER_VIOLATION` rather than let `PoFx` call freed
/// code. It cannot happen through `PnP`: the device refuses stop and remove
/// ([`evt_driver_device_add`]), and a `DriverEntry` that registered succeeded. An unregistered
/// driver (failed or `SkipRegistration`) unloads normally. `PASSIVE_LEVEL`.
///
/// # Safety
/// Called by KMDF only.
unsafe extern "C" fn evt_driver_unload(_driver: WDFDRIVER) {
    if storage::instance().is_some() {
        // SAFETY: any IRQL; stopping the system is the documented response to unloading a
        // registered PEP, whose callbacks PoFx would otherwise call after the image is gone.
        unsafe { KeBugCheckEx(DRIVER_VIOLATION, 0, 0, 0, 0) };
    }
    trace::driver_unload();
    // The provider's enable callback is code in this image: unregister before it goes.
    trace::unregister();
}

/// Creates the KMDF driver object: `PnP`, with [`evt_driver_device_add`] and
/// [`evt_driver_unload`].
fn create_driver(
    driver: &mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> Result<WDFDRIVER, NTSTATUS> {
    let mut config = WDF_DRIVER_CONFIG {
        Size: WDF_DRIVER_CONFIG_SIZE,
        EvtDriverDeviceAdd: Some(evt_driver_device_add),
        EvtDriverUnload: Some(evt_driver_unload),
        DriverInitFlags: 0,
        DriverPoolTag: POOL_TAG,
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

/// `sizeof(WDF_DEVICE_STATE)` as the `ULONG` its `Size` member holds.
#[allow(clippy::cast_possible_truncation, reason = "asserted to fit a ULONG")]
const WDF_DEVICE_STATE_SIZE: ULONG = {
    assert!(size_of::<WDF_DEVICE_STATE>() <= ULONG::MAX as usize);
    size_of::<WDF_DEVICE_STATE>() as ULONG
};

// wdfdevice.h: a ULONG Size and six WDF_TRI_STATE (int-sized enum) members.
const _: () = assert!(size_of::<WDF_DEVICE_STATE>() == 28);

/// `EvtDriverDeviceAdd` for the PEP's device node (the ACPI device on a real platform, the
/// `Root\PpmPep` node on a test VM): creates a plain WDF device so the node starts. The PEP
/// itself does not depend on the device: it registered in `DriverEntry`. `PASSIVE_LEVEL`.
///
/// The device refuses stop and remove (`WdfDeviceSetStaticStopRemove`, as Microsoft's PEP
/// sample) and is marked not disableable (`WDF_DEVICE_STATE.NotDisableable`, the documented
/// companion): without it Device Manager offers "Disable", which can only end in "restart
/// required" and, after the restart, a disabled node whose boot-start service still loads and
/// registers the PEP. With it, `PnP` reports `PNP_DEVICE_NOT_DISABLEABLE` and the UI greys the
/// command out.
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
    let status = unsafe {
        call_unsafe_wdf_function_binding!(
            WdfDeviceCreate,
            &raw mut device_init,
            WDF_NO_OBJECT_ATTRIBUTES,
            &raw mut device,
        )
    };
    let created = NT_SUCCESS(status) && !device.is_null();
    if created {
        // SAFETY: PASSIVE_LEVEL; `device` was just created. FALSE: PnP must not stop or remove
        // the PEP's device (Microsoft's PEP sample does the same), so nothing leads to an
        // unload of the registered PEP.
        unsafe { call_unsafe_wdf_function_binding!(WdfDeviceSetStaticStopRemove, device, 0) };
        // WDF_DEVICE_STATE_INIT: every member WdfUseDefault, then NotDisableable set.
        let mut state = WDF_DEVICE_STATE {
            Size: WDF_DEVICE_STATE_SIZE,
            Disabled: _WDF_TRI_STATE::WdfUseDefault,
            DontDisplayInUI: _WDF_TRI_STATE::WdfUseDefault,
            Failed: _WDF_TRI_STATE::WdfUseDefault,
            NotDisableable: _WDF_TRI_STATE::WdfTrue,
            Removed: _WDF_TRI_STATE::WdfUseDefault,
            ResourcesChanged: _WDF_TRI_STATE::WdfUseDefault,
        };
        // SAFETY: <= DISPATCH_LEVEL (PASSIVE here); `device` was just created, as in
        // Microsoft's samples that call it right after WdfDeviceCreate; `state` is a valid
        // WDF_DEVICE_STATE with its Size set, read during the call only.
        unsafe {
            call_unsafe_wdf_function_binding!(WdfDeviceSetDeviceState, device, &raw mut state);
        };
    }
    trace::device_added(status, created);
    status
}
