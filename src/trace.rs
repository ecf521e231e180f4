//! ETW events through `TraceLogging`: provider `PpmPep`, GUID
//! `a608af6c-db81-5eb9-c94e-5dfffda80508` (`TraceLogging`'s name hash of `"PpmPep"`, the same
//! algorithm as `EventSource`; see docs/windows.md, "Tracing").
//!
//! Microsoft's `tracelogging` crate with its `kernel_mode` feature: `EtwRegister`,
//! `EtwWriteTransfer` and `EtwUnregister` from `ntoskrnl`. Every event is written from
//! `DriverEntry`, the device-add callback, the unload callback or `PEP_DPM_PREPARE_DEVICE`
//! (through [`crate::storage::KernelHost`]'s `device_prepared`), all at `PASSIVE_LEVEL`; no
//! processor (PPM) notification reaches this module, so the `FEEDBACK_READ` path writes no
//! event. A message formats into a 512-byte stack buffer (no allocation); every write is
//! skipped inside `write_event!` when no session listens.
//!
//! Lifetime: [`register`] first thing in `DriverEntry`; [`unregister`] before `DriverEntry`
//! returns a failure (the image is then unloaded without `EvtDriverUnload`) and in
//! `EvtDriverUnload` of a driver that did not register the PEP. A registered PEP never unloads,
//! so its provider stays registered for the life of the system.

use core::fmt::{self, Write};

use ppm_engine::driver::LogLevel;
use tracelogging::{define_provider, write_event};

use ppm_engine::driver::line::Line;
use wdk_sys::{NT_SUCCESS, NTSTATUS};

define_provider!(PROVIDER, "PpmPep");

/// The largest message of one event, in bytes (longer text is cut).
const MESSAGE_BYTES: usize = 512;

/// Keyword of the `DriverEntry` sequence's events (every decision and failure).
const KEYWORD_DRIVER_ENTRY: u64 = 0x1;
/// Keyword of the `PnP` events (device add, each device `PoFx` offers, unload).
const KEYWORD_PNP: u64 = 0x2;

/// Registers the provider. `PASSIVE_LEVEL`, once, first thing in `DriverEntry`. A failure
/// (no ETW) only means that no event is written; the driver does not depend on it.
pub fn register() {
    // SAFETY: PASSIVE_LEVEL (EtwRegister's requirement). The provider is a static, so it is
    // never moved while registered, and it is registered once per load of the image: every
    // path by which the image unloads calls `unregister` first (a failed DriverEntry, and
    // EvtDriverUnload); a registered PEP never unloads.
    let _ = unsafe { PROVIDER.register() };
}

/// Unregisters the provider. `PASSIVE_LEVEL`; a no-op if it is not registered.
pub fn unregister() {
    let _ = PROVIDER.unregister();
}

/// One line of the `DriverEntry` sequence (what the engine logs: each configuration issue, the
/// counter source and why, the PMU reservation, the registration and the `Boot` key), as event
/// `DriverEntryError` or `DriverEntryInfo` with field `Message`. `PASSIVE_LEVEL`.
pub fn driver_entry_line(level: LogLevel, message: fmt::Arguments<'_>) {
    let mut text = Line::<MESSAGE_BYTES>::new();
    // An overlong message is cut at the buffer's end: the buffer keeps what fits.
    let _ = write!(text, "{message}");
    let _ = match level {
        LogLevel::Error => write_event!(
            PROVIDER,
            "DriverEntryError",
            level(Error),
            keyword(KEYWORD_DRIVER_ENTRY),
            str8("Message", text.as_str()),
        ),
        LogLevel::Info => write_event!(
            PROVIDER,
            "DriverEntryInfo",
            level(Informational),
            keyword(KEYWORD_DRIVER_ENTRY),
            str8("Message", text.as_str()),
        ),
    };
}

/// `WdfDriverCreate` failed with `status`: `DriverEntry` returns it and the PEP is not
/// registered. Event `DriverCreateFailed`. `PASSIVE_LEVEL`.
pub fn driver_create_failed(status: NTSTATUS) {
    let _ = write_event!(
        PROVIDER,
        "DriverCreateFailed",
        level(Critical),
        keyword(KEYWORD_DRIVER_ENTRY),
        u32_hex("Status", &status.cast_unsigned()),
    );
}

/// `DriverEntry` returns `status` (the outcome of the whole sequence). Event
/// `DriverEntryResult`, an error level for a failure. `PASSIVE_LEVEL`.
pub fn driver_entry_result(status: NTSTATUS) {
    let succeeded = NT_SUCCESS(status);
    let status = status.cast_unsigned();
    let _ = if succeeded {
        write_event!(
            PROVIDER,
            "DriverEntryResult",
            level(Informational),
            keyword(KEYWORD_DRIVER_ENTRY),
            u32_hex("Status", &status),
        )
    } else {
        write_event!(
            PROVIDER,
            "DriverEntryResult",
            level(Error),
            keyword(KEYWORD_DRIVER_ENTRY),
            u32_hex("Status", &status),
        )
    };
}

/// The device node was added: `WdfDeviceCreate` returned `status`, and `not_disableable`
/// says whether the device was marked not disableable. Event `DeviceAdded`. `PASSIVE_LEVEL`.
pub fn device_added(status: NTSTATUS, not_disableable: bool) {
    let status = status.cast_unsigned();
    let _ = write_event!(
        PROVIDER,
        "DeviceAdded",
        level(Informational),
        keyword(KEYWORD_PNP),
        u32_hex("Status", &status),
        bool8("NotDisableable", &not_disableable),
    );
}

/// PoFx offered the device `device_id` in `PEP_DPM_PREPARE_DEVICE` and the PEP `accepted` it as
/// a processor or declined it. Event `DevicePrepared`, fields `DeviceId` (UTF-16, as PoFx
/// passed it) and `Accepted`. `PASSIVE_LEVEL` (PREPARE's documented IRQL); a DPM notification,
/// never the processor read path.
pub fn device_prepared(device_id: &[u16], accepted: bool) {
    let _ = write_event!(
        PROVIDER,
        "DevicePrepared",
        level(Informational),
        keyword(KEYWORD_PNP),
        str16("DeviceId", device_id),
        bool8("Accepted", &accepted),
    );
}

/// The driver of an unregistered PEP is unloading. Event `DriverUnload`. `PASSIVE_LEVEL`.
pub fn driver_unload() {
    let _ = write_event!(PROVIDER, "DriverUnload", level(Informational), keyword(KEYWORD_PNP));
}
