//! The asserting senders: the notifications sent through the engine's callbacks for the
//! instance entered for `P` ([`ThreadHost<P>`]), each checking what a correct PEP does — a
//! `BOOLEAN` of 0 or 1 and, where a refusal is possible, a refused notification's
//! sentinel-filled buffer left untouched. Each is a thin layer over [`Callbacks`].

use std::ffi::c_void;

use ppm_engine::Platform;
use ppm_engine::abi::{
    BOOLEAN, PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO,
    PEP_PPM_QUERY_PERF_CAPABILITIES, PEP_PROCESSOR_FEEDBACK_COUNTER, PEPHANDLE, PepDeviceAccepted,
    PepDeviceNotAccepted, PowerSystemWorking, TRUE, ULONG,
};

use crate::callbacks::{Callbacks, Registration, Sent};
use crate::host::ThreadHost;
use crate::payload::{MAX_QUERIED_COUNTERS, SENTINEL, SENTINEL_BYTE, handle, read_counts, utf16};

/// What a refused notification must leave in the 64-bit output fields.
pub const UNTOUCHED: u64 = SENTINEL;

/// The engine's callbacks for the instance entered for `P`.
fn engine<P: Platform>() -> Callbacks {
    Callbacks::engine::<ThreadHost<P>>()
}

/// Whether a `BOOLEAN` the PEP returned is TRUE, after checking it is 0 or 1.
fn boolean(result: BOOLEAN, what: &str) -> bool {
    assert!(result <= TRUE, "{what}: BOOLEAN {result}");
    result == TRUE
}

/// `AcceptDeviceNotification` of the instance entered for `P`.
///
/// # Safety
/// `data` is NULL or points to the structure PoFx documents for `notification`, valid for the
/// call.
pub unsafe fn dpm<P: Platform>(notification: ULONG, data: *mut c_void) -> bool {
    // SAFETY: the caller's contract for `data` is passed on unchanged.
    let result = unsafe { engine::<P>().dpm_raw(notification, data) };
    boolean(result, crate::names::dpm(notification).unwrap_or("DPM notification"))
}

/// `AcceptProcessorNotification` of the instance entered for `P`.
///
/// # Safety
/// `data` is NULL or points to the structure PoFx documents for `notification`, valid for the
/// call.
pub unsafe fn ppm<P: Platform>(handle: PEPHANDLE, notification: ULONG, data: *mut c_void) -> bool {
    // SAFETY: the caller's contract for `data` is passed on unchanged.
    let result = unsafe { engine::<P>().ppm_raw(handle, notification, data) };
    boolean(result, crate::names::ppm(notification).unwrap_or("PPM notification"))
}

/// `PEP_DPM_PREPARE_DEVICE`: whether the device was accepted (`DeviceAccepted` 0 or 1).
#[must_use]
pub fn prepare<P: Platform>(id: &str) -> bool {
    let (returned, accepted) = engine::<P>().prepare(Some(&utf16(id)), SENTINEL_BYTE);
    assert!(boolean(returned, "PREPARE_DEVICE"), "PREPARE_DEVICE refused");
    boolean(accepted, "DeviceAccepted")
}

/// `PEP_DPM_REGISTER_DEVICE`: the PEP's handle, NULL when declined.
#[must_use]
pub fn register<P: Platform>(id: &str) -> PEPHANDLE {
    let before = Registration { kernel_handle: 0x1000, handle: 0x5A5A, accepted: -1 };
    let (returned, after) = engine::<P>().register(&utf16(id), before);
    assert!(boolean(returned, "REGISTER_DEVICE"), "REGISTER_DEVICE refused");
    let accepted = after.accepted == PepDeviceAccepted;
    assert!(accepted || after.accepted == PepDeviceNotAccepted, "{}", after.accepted);
    assert_eq!(accepted, after.handle != 0, "DeviceAccepted and DeviceHandle agree");
    handle(after.handle)
}

/// Prepares and registers `id`: its handle (panics when declined).
#[must_use]
pub fn add_processor<P: Platform>(id: &str) -> PEPHANDLE {
    assert!(prepare::<P>(id), "{id} declined");
    let handle = register::<P>(id);
    assert!(!handle.is_null(), "{id} not registered");
    handle
}

/// `PEP_DPM_UNREGISTER_DEVICE`: whether it was handled.
#[must_use]
pub fn unregister<P: Platform>(handle: PEPHANDLE) -> bool {
    boolean(engine::<P>().unregister(handle), "UNREGISTER_DEVICE")
}

/// `PEP_DPM_DEVICE_STARTED`: whether it was handled.
#[must_use]
pub fn device_started<P: Platform>(handle: PEPHANDLE) -> bool {
    boolean(engine::<P>().device_started(handle), "DEVICE_STARTED")
}

/// `PEP_NOTIFY_PPM_FEEDBACK_READ` of counter `index`: (`NominalCount`, `ActualCount`), or
/// `None` when refused — after checking a refused read left the structure untouched.
#[must_use]
pub fn read<P: Platform>(handle: PEPHANDLE, index: u32) -> Option<(u64, u64)> {
    let sent = engine::<P>().read(handle, index);
    assert_eq!(sent.payload.CounterIndex, index, "CounterIndex is an input");
    answer(sent, "FEEDBACK_READ").map(|payload| read_counts(&payload))
}

/// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE` to `PowerSystemWorking`: whether it was handled.
#[must_use]
pub fn resume<P: Platform>(handle: PEPHANDLE) -> bool {
    boolean(engine::<P>().resume(handle, PowerSystemWorking), "RESUME_FROM_SYSTEM_STATE")
}

/// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES`: the answer, or `None` when refused (after checking the
/// refusal left the structure untouched).
#[must_use]
pub fn query_capabilities<P: Platform>(handle: PEPHANDLE) -> Option<PEP_PPM_QUERY_CAPABILITIES> {
    answer(engine::<P>().query_capabilities(handle), "QUERY_CAPABILITIES")
}

/// Whether `handle` is live (`QUERY_CAPABILITIES` accepts exactly the live handles).
#[must_use]
pub fn live<P: Platform>(handle: PEPHANDLE) -> bool {
    query_capabilities::<P>(handle).is_some()
}

/// `PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`: the answer, or `None` when refused (untouched).
#[must_use]
pub fn query_perf_capabilities<P: Platform>(
    handle: PEPHANDLE,
) -> Option<PEP_PPM_QUERY_PERF_CAPABILITIES> {
    answer(engine::<P>().query_perf_capabilities(handle), "QUERY_PERF_CAPABILITIES")
}

/// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO` of domain `domain`: the answer, or `None` when refused
/// (untouched but for the `DomainId` input).
#[must_use]
pub fn query_domain_info<P: Platform>(
    handle: PEPHANDLE,
    domain: u32,
) -> Option<PEP_PPM_QUERY_DOMAIN_INFO> {
    let sent = engine::<P>().query_domain_info(handle, domain);
    assert_eq!(sent.payload.DomainId, domain, "DomainId is an input");
    answer(sent, "QUERY_DOMAIN_INFO")
}

/// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS` with `Count` = `count` (at most
/// [`MAX_QUERIED_COUNTERS`]): the `count` counters described, or `None` when refused (every
/// counter untouched).
#[must_use]
pub fn query_feedback_counters<P: Platform>(
    handle: PEPHANDLE,
    count: u32,
) -> Option<Vec<PEP_PROCESSOR_FEEDBACK_COUNTER>> {
    let used = usize::try_from(count).expect("a small count");
    assert!(used <= MAX_QUERIED_COUNTERS, "at most {MAX_QUERIED_COUNTERS} counters");
    let sent = engine::<P>().query_feedback_counters(handle, count).expect("room for the count");
    assert!(sent.payload.untouched_from(used), "written beyond Count");
    let buffer = answer(sent, "QUERY_FEEDBACK_COUNTERS")?;
    Some(buffer.counters[..used].to_vec())
}

/// The answer of a handled notification; for a refused one, `None` after checking the
/// structure still holds its sentinel.
fn answer<T>(sent: Sent<T>, what: &str) -> Option<T> {
    if boolean(sent.returned, what) {
        Some(sent.payload)
    } else {
        assert!(sent.untouched, "a refused {what} wrote its structure");
        None
    }
}
