//! The `PEP_INFORMATION` callbacks PoFx calls: the C boundary of the engine.
//!
//! Each callback finds its engine instance through the host `H` ([`PepHost::instance`]), wraps
//! the raw `data` once in a typed view (`payload::Data`, the one place its contract is
//! taken on) and hands it to [`crate::dpm`] or [`crate::ppm`]. The kernel and every
//! caller of the engine (the emulator, the tests, the fuzz harness) call exactly these functions.

use core::ffi::c_void;

use crate::abi::{BOOLEAN, FALSE, PEP_INFORMATION, PEP_INFORMATION_V3, PEPHANDLE, TRUE, ULONG};
use crate::host::PepHost;
use crate::payload::{Data, Dpm, Ppm};
use crate::{dpm, ppm};

/// The `PEP_INFORMATION` to pass to `PoFxRegisterPluginEx`: version 3, size 32, the DPM and
/// PPM callbacks of this engine instantiated for the host `H`, no ACPI callback.
#[must_use]
pub fn pep_information<H: PepHost>() -> PEP_INFORMATION {
    PEP_INFORMATION {
        Version: PEP_INFORMATION_V3,
        Size: PEP_INFORMATION_SIZE,
        AcceptDeviceNotification: Some(accept_device_notification::<H>),
        AcceptProcessorNotification: Some(accept_processor_notification::<H>),
        AcceptAcpiNotification: None,
    }
}

const PEP_INFORMATION_SIZE: u16 = {
    let size = core::mem::size_of::<PEP_INFORMATION>();
    assert!(size == 32);
    32
};

const fn boolean(value: bool) -> BOOLEAN {
    if value { TRUE } else { FALSE }
}

/// `PEPCALLBACKNOTIFYDPM`: PoFx's device power management notifications.
///
/// IRQL: as PoFx documents per notification (`PASSIVE_LEVEL` for prepare/register/unregister/
/// abandon, `<= DISPATCH_LEVEL` for device started). Returns TRUE only for the notifications
/// handled; FALSE, without touching `data`, for every other one and for malformed data.
///
/// # Safety
/// `data` must be NULL or point to the structure PoFx documents for `notification`, valid for
/// the duration of the call.
pub unsafe extern "C" fn accept_device_notification<H: PepHost>(
    notification: ULONG,
    data: *mut c_void,
) -> BOOLEAN {
    let Some(pep) = H::instance() else { return FALSE };
    // SAFETY: the caller's contract for `data` is the view's.
    let data = unsafe { Data::<Dpm>::new(notification, data) };
    boolean(dpm::dispatch(pep, data, H::device_prepared))
}

/// `PEPCALLBACKNOTIFYPPM`: PoFx's processor power management notifications.
///
/// IRQL: `PASSIVE_LEVEL` up to `HIGH_LEVEL`, interrupts possibly disabled. Nothing reached from
/// here allocates, blocks, logs or panics. Returns TRUE only for the notifications handled;
/// FALSE, without touching `data`, for every other one, for NULL or misaligned data and for an
/// unknown, stale or forged handle.
///
/// # Safety
/// `data` must be NULL or point to the structure PoFx documents for `notification`, valid for
/// the duration of the call. `handle` may be anything: it is validated, never dereferenced.
pub unsafe extern "C" fn accept_processor_notification<H: PepHost>(
    handle: PEPHANDLE,
    notification: ULONG,
    data: *mut c_void,
) -> BOOLEAN {
    let Some(pep) = H::instance() else { return FALSE };
    // SAFETY: the caller's contract for `data` is the view's.
    let data = unsafe { Data::<Ppm>::new(notification, data) };
    boolean(ppm::dispatch(pep, handle, data))
}
