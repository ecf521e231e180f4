//! `DriverEntry` and the KMDF device-add callback.
//!
//! `DriverEntry` runs once, at `PASSIVE_LEVEL`, when the boot loader's boot-start driver is
//! initialised (`LoadOrderGroup` `Core Platform Extensions`, with ACPI). It creates the KMDF
//! driver object (once registered, a PEP can never be unloaded: its device refuses stop and
//! remove, and an unload of a registered PEP bugchecks, as in Microsoft's PEP sample; an update
//! needs a reboot), and hands over to `ppm_engine::driver::driver_entry` over this kernel's services
//! ([`Kernel`]): configuration, `SkipRegistration`, processor table, PMU reservation, PEP,
//! `PoFxRegisterPluginEx`, `State`, and the unwinding of every failure — the sequence the
//! emulator runs on every scenario. It returns that sequence's status.
//!
//! The device ids PoFx offers arrive later (`PEP_DPM_PREPARE_DEVICE`, after `DriverEntry`), so
//! they are not in the `State` key: the engine records them in its device-id log, which a kernel
//! debugger shows (see docs/windows.md, "Validate").

use core::mem::size_of;
use core::ptr;

use ppm_engine::Passive;
use ppm_engine::driver::{LogLevel, driver_entry as initialize};
use wdk_sys::ntddk::KeBugCheckEx;
use wdk_sys::{
    DRIVER_OBJECT, NT_SUCCESS, NTSTATUS, PCUNICODE_STRING, PWDFDEVICE_INIT, STATUS_UNSUCCESSFUL,
    ULONG, WDF_DRIVER_CONFIG, WDF_NO_OBJECT_ATTRIBUTES, WDFDEVICE, WDFDRIVER,
    call_unsafe_wdf_function_binding,
};

use crate::kernel_services::{Kernel, POOL_TAG};
use crate::{log, storage};

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
    let wdf_driver = match create_driver(driver, registry_path) {
        Ok(wdf_driver) => wdf_driver,
        Err(status) => {
            log::print(
                LogLevel::Error,
                format_args!(
                    "WdfDriverCreate failed with {status:#010X}; the PEP is not registered"
                ),
            );
            return status;
        }
    };
    // SAFETY: the kernel calls DriverEntry at PASSIVE_LEVEL; nothing here raises the IRQL, and
    // the token lives only until DriverEntry returns.
    let passive = unsafe { Passive::assume() };
    initialize(&Kernel::new(wdf_driver), &passive).status()
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
    let status = unsafe {
        call_unsafe_wdf_function_binding!(
            WdfDeviceCreate,
            &raw mut device_init,
            WDF_NO_OBJECT_ATTRIBUTES,
            &raw mut device,
        )
    };
    if NT_SUCCESS(status) && !device.is_null() {
        // SAFETY: PASSIVE_LEVEL; `device` was just created. FALSE: PnP must not stop or remove
        // the PEP's device (Microsoft's PEP sample does the same), so nothing leads to an
        // unload of the registered PEP.
        unsafe { call_unsafe_wdf_function_binding!(WdfDeviceSetStaticStopRemove, device, 0) };
    }
    status
}
