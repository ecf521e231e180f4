//! The notifications, sent as PoFx sends them: through the `PEP_INFORMATION` function pointers
//! of [`ThreadHost<P>`], with the documented C structures.

use std::ffi::c_void;

use ppm_engine::abi::{
    BOOLEAN, PEP_DEVICE_STARTED, PEP_DPM_DEVICE_STARTED, PEP_DPM_PREPARE_DEVICE,
    PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1, PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PREPARE_DEVICE, PEP_PROCESSOR_FEEDBACK_COUNTER,
    PEP_REGISTER_DEVICE_V2, PEP_UNREGISTER_DEVICE, PEPHANDLE, PepDeviceAccepted,
    PepDeviceNotAccepted, PowerSystemWorking, TRUE, ULONG, UNICODE_STRING,
};
use ppm_engine::{Platform, pep_information};

use crate::host::ThreadHost;

/// What a refused notification must leave in the 64-bit output fields.
pub const UNTOUCHED: u64 = 0xDEAD_BEEF_DEAD_BEEF;
/// What a refused notification must leave in the 32-bit output fields.
const UNTOUCHED_32: u32 = 0xDEAD_BEEF;

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
    let callback = pep_information::<ThreadHost<P>>().AcceptDeviceNotification;
    let callback = callback.expect("the DPM callback");
    // SAFETY: the caller's contract for `data` is passed on unchanged.
    let result = unsafe { callback(notification, data) };
    boolean(result, crate::names::dpm(notification).unwrap_or("DPM notification"))
}

/// `AcceptProcessorNotification` of the instance entered for `P`.
///
/// # Safety
/// `data` is NULL or points to the structure PoFx documents for `notification`, valid for the
/// call.
pub unsafe fn ppm<P: Platform>(handle: PEPHANDLE, notification: ULONG, data: *mut c_void) -> bool {
    let callback = pep_information::<ThreadHost<P>>().AcceptProcessorNotification;
    let callback = callback.expect("the PPM callback");
    // SAFETY: the caller's contract for `data` is passed on unchanged.
    let result = unsafe { callback(handle, notification, data) };
    boolean(result, crate::names::ppm(notification).unwrap_or("PPM notification"))
}

/// A device id as the `UNICODE_STRING` PoFx passes (`units` must outlive its use).
#[must_use]
pub fn unicode_string(units: &mut [u16]) -> UNICODE_STRING {
    let length = u16::try_from(units.len() * 2).expect("a short id");
    UNICODE_STRING { Length: length, MaximumLength: length, Buffer: units.as_mut_ptr() }
}

/// `PEP_DPM_PREPARE_DEVICE`: whether the device was accepted (`DeviceAccepted` 0 or 1).
#[must_use]
pub fn prepare<P: Platform>(id: &str) -> bool {
    let mut units: Vec<u16> = id.encode_utf16().collect();
    let string = unicode_string(&mut units);
    let mut data = PEP_PREPARE_DEVICE { DeviceId: &raw const string, DeviceAccepted: 0xAA };
    // SAFETY: a PEP_PREPARE_DEVICE whose id outlives the call.
    let handled = unsafe { dpm::<P>(PEP_DPM_PREPARE_DEVICE, (&raw mut data).cast()) };
    assert!(handled, "PREPARE_DEVICE refused");
    boolean(data.DeviceAccepted, "DeviceAccepted")
}

/// `PEP_DPM_REGISTER_DEVICE`: the PEP's handle, NULL when declined.
#[must_use]
pub fn register<P: Platform>(id: &str) -> PEPHANDLE {
    let mut units: Vec<u16> = id.encode_utf16().collect();
    let string = unicode_string(&mut units);
    let mut data = PEP_REGISTER_DEVICE_V2 {
        DeviceId: &raw const string,
        KernelHandle: std::ptr::without_provenance_mut(0x1000),
        Register: std::ptr::null_mut(),
        DeviceHandle: std::ptr::without_provenance_mut(0x5A5A),
        DeviceAccepted: -1,
    };
    // SAFETY: a PEP_REGISTER_DEVICE_V2 whose id outlives the call.
    let handled = unsafe { dpm::<P>(PEP_DPM_REGISTER_DEVICE, (&raw mut data).cast()) };
    assert!(handled, "REGISTER_DEVICE refused");
    let accepted = data.DeviceAccepted == PepDeviceAccepted;
    assert!(accepted || data.DeviceAccepted == PepDeviceNotAccepted, "{}", data.DeviceAccepted);
    assert_eq!(accepted, !data.DeviceHandle.is_null(), "DeviceAccepted and DeviceHandle agree");
    data.DeviceHandle
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
    let mut data = PEP_UNREGISTER_DEVICE { DeviceHandle: handle };
    // SAFETY: a PEP_UNREGISTER_DEVICE.
    unsafe { dpm::<P>(PEP_DPM_UNREGISTER_DEVICE, (&raw mut data).cast()) }
}

/// `PEP_DPM_DEVICE_STARTED`: whether it was handled.
#[must_use]
pub fn device_started<P: Platform>(handle: PEPHANDLE) -> bool {
    let mut data = PEP_DEVICE_STARTED { DeviceHandle: handle };
    // SAFETY: a PEP_DEVICE_STARTED.
    unsafe { dpm::<P>(PEP_DPM_DEVICE_STARTED, (&raw mut data).cast()) }
}

/// `PEP_NOTIFY_PPM_FEEDBACK_READ` of counter `index`: (`NominalCount`, `ActualCount`), or
/// `None` when refused — after checking a refused read left the structure untouched.
#[must_use]
pub fn read<P: Platform>(handle: PEPHANDLE, index: u32) -> Option<(u64, u64)> {
    let mut data = PEP_PPM_FEEDBACK_READ {
        CounterIndex: index,
        __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
            __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
                NominalCount: UNTOUCHED,
                ActualCount: UNTOUCHED,
            },
        },
    };
    // SAFETY: a PEP_PPM_FEEDBACK_READ.
    let handled = unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, (&raw mut data).cast()) };
    assert_eq!(data.CounterIndex, index, "CounterIndex is an input");
    // SAFETY: the relative view was initialised above, and a handled read fills it.
    let counts = unsafe { data.__bindgen_anon_1.__bindgen_anon_1 };
    if handled {
        Some((counts.NominalCount, counts.ActualCount))
    } else {
        assert_eq!((counts.NominalCount, counts.ActualCount), (UNTOUCHED, UNTOUCHED));
        None
    }
}

/// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE` to `PowerSystemWorking`: whether it was handled.
#[must_use]
pub fn resume<P: Platform>(handle: PEPHANDLE) -> bool {
    let mut data = PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: PowerSystemWorking };
    // SAFETY: a PEP_PPM_RESUME_FROM_SYSTEM_STATE.
    unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, (&raw mut data).cast()) }
}

/// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES`: the answer, or `None` when refused (after checking the
/// refusal left the structure untouched).
#[must_use]
pub fn query_capabilities<P: Platform>(handle: PEPHANDLE) -> Option<PEP_PPM_QUERY_CAPABILITIES> {
    let sentinel = PEP_PPM_QUERY_CAPABILITIES {
        FeedbackCounterCount: UNTOUCHED_32,
        IdleStateCount: UNTOUCHED_32,
        PerformanceStatesSupported: 0xAA,
        ParkingSupported: 0xAA,
        DiscretePerformanceStateCount: 0xAA,
        Reserved: 0xAA,
    };
    let mut data = sentinel;
    // SAFETY: a PEP_PPM_QUERY_CAPABILITIES.
    let handled =
        unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, (&raw mut data).cast()) };
    let fields = |data: &PEP_PPM_QUERY_CAPABILITIES| {
        (
            data.FeedbackCounterCount,
            data.IdleStateCount,
            data.PerformanceStatesSupported,
            data.ParkingSupported,
            data.DiscretePerformanceStateCount,
            data.Reserved,
        )
    };
    answer(handled, data, fields(&data) == fields(&sentinel), "QUERY_CAPABILITIES")
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
    let sentinel = PEP_PPM_QUERY_PERF_CAPABILITIES {
        HighestPerformance: UNTOUCHED_32,
        NominalPerformance: UNTOUCHED_32,
        LowestNonlinearPerformance: UNTOUCHED_32,
        LowestPerformance: UNTOUCHED_32,
        DomainId: UNTOUCHED_32,
        DomainMembers: UNTOUCHED_32,
    };
    let mut data = sentinel;
    // SAFETY: a PEP_PPM_QUERY_PERF_CAPABILITIES.
    let handled =
        unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, (&raw mut data).cast()) };
    let fields = |data: &PEP_PPM_QUERY_PERF_CAPABILITIES| {
        (
            data.HighestPerformance,
            data.NominalPerformance,
            data.LowestNonlinearPerformance,
            data.LowestPerformance,
            data.DomainId,
            data.DomainMembers,
        )
    };
    answer(handled, data, fields(&data) == fields(&sentinel), "QUERY_PERF_CAPABILITIES")
}

/// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO` of domain `domain`: the answer, or `None` when refused
/// (untouched but for the `DomainId` input).
#[must_use]
pub fn query_domain_info<P: Platform>(
    handle: PEPHANDLE,
    domain: u32,
) -> Option<PEP_PPM_QUERY_DOMAIN_INFO> {
    let mut sentinel = PEP_PPM_QUERY_DOMAIN_INFO::zeroed();
    sentinel.DomainId = domain;
    sentinel.CoordinationType = 0xAA;
    sentinel.IdleProcessorsDiscounted = 0xAA;
    sentinel.SchedulerDirectedTransitionsSupported = 0xAA;
    sentinel.AffinitizePerfSet = 0xAA;
    sentinel.WorstCaseTransitionLatency = UNTOUCHED_32;
    sentinel.WorstCaseTransitionOverhead = UNTOUCHED_32;
    let mut data = sentinel;
    // SAFETY: a PEP_PPM_QUERY_DOMAIN_INFO.
    let handled =
        unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, (&raw mut data).cast()) };
    assert_eq!(data.DomainId, domain, "DomainId is an input");
    let fields = |data: &PEP_PPM_QUERY_DOMAIN_INFO| {
        (
            data.CoordinationType,
            data.IdleProcessorsDiscounted,
            data.SchedulerDirectedTransitionsSupported,
            data.AffinitizePerfSet,
            data.WorstCaseTransitionLatency,
            data.WorstCaseTransitionOverhead,
        )
    };
    answer(handled, data, fields(&data) == fields(&sentinel), "QUERY_DOMAIN_INFO")
}

/// The most counters [`query_feedback_counters`] asks for.
const MAX_COUNTERS: usize = 4;

/// `PEP_PPM_QUERY_FEEDBACK_COUNTERS` with room for [`MAX_COUNTERS`] counters.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
struct CountersBuffer {
    count: ULONG,
    counters: [(u32, ULONG); MAX_COUNTERS],
}

/// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS` with `Count` = `count` (at most 4): the `count`
/// counters described, or `None` when refused (every counter untouched).
#[must_use]
pub fn query_feedback_counters<P: Platform>(
    handle: PEPHANDLE,
    count: u32,
) -> Option<Vec<PEP_PROCESSOR_FEEDBACK_COUNTER>> {
    let used = usize::try_from(count).expect("a small count");
    assert!(used <= MAX_COUNTERS, "at most {MAX_COUNTERS} counters");
    let sentinel = CountersBuffer { count, counters: [(UNTOUCHED_32, UNTOUCHED_32); MAX_COUNTERS] };
    let mut data = sentinel;
    // SAFETY: a PEP_PPM_QUERY_FEEDBACK_COUNTERS with room for `Count` counters (and more).
    let handled =
        unsafe { ppm::<P>(handle, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, (&raw mut data).cast()) };
    assert_eq!(data.counters[used..], sentinel.counters[used..], "written beyond Count");
    let data = answer(handled, data, data == sentinel, "QUERY_FEEDBACK_COUNTERS")?;
    Some(
        data.counters[..used]
            .iter()
            .map(|&(bits, rate)| PEP_PROCESSOR_FEEDBACK_COUNTER {
                _bitfield_1: bits,
                NominalRate: rate,
            })
            .collect(),
    )
}

/// The answer of a handled notification; for a refused one, `None` after checking the
/// structure still holds its sentinel (`untouched`).
fn answer<T>(handled: bool, data: T, untouched: bool, what: &str) -> Option<T> {
    if handled {
        Some(data)
    } else {
        assert!(untouched, "a refused {what} wrote its structure");
        None
    }
}
