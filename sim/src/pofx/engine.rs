//! The C caller: the engine's `PEP_INFORMATION` callbacks called the way PoFx calls them,
//! with sentinel-filled payloads, each call made "as" a processor and traced.

use std::ffi::c_void;

use ppm_engine::Pep;
use ppm_engine::abi::{
    BOOLEAN, FALSE, PEP_DEVICE_REGISTER_V2, PEP_DEVICE_STARTED, PEP_DPM_DEVICE_STARTED,
    PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE,
    PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, PEP_NOTIFY_PPM_QUERY_VETO_REASONS, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1, PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PREPARE_DEVICE, PEP_PROCESSOR_FEEDBACK_COUNTER, PEP_REGISTER_DEVICE_V2,
    PEP_UNREGISTER_DEVICE, PEPHANDLE, PEPHANDLE__, POHANDLE__, PVOID, ULONG, UNICODE_STRING,
};

use super::records::RegisterRecord;
use crate::platform::{self, OnProcessor, PlatformOp, SimPlatform};

/// DPM notification IDs no header defines: the PEP must refuse them without touching data.
pub const UNDEFINED_DPM_NOTIFICATIONS: [ULONG; 5] = [0x00, 0x29, 0x80, 0xFFFF, 0xFFFF_FFFF];
/// PPM notification IDs no header defines.
pub const UNDEFINED_PPM_NOTIFICATIONS: [ULONG; 5] = [0x00, 0x2C, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// The most feedback counters the emulator asks a PEP to describe (a larger count is
/// reported as inconsistent rather than queried).
pub const MAX_QUERIED_COUNTERS: usize = 64;
/// The byte pattern probe buffers are filled with, to see whether the PEP wrote to them.
pub(super) const SENTINEL_BYTE: u8 = 0xA5;
pub(super) const SENTINEL: u64 = u64::from_ne_bytes([SENTINEL_BYTE; 8]);

pub(super) type DpmCallback = unsafe extern "C" fn(ULONG, PVOID) -> BOOLEAN;
pub(super) type PpmCallback = unsafe extern "C" fn(PEPHANDLE, ULONG, PVOID) -> BOOLEAN;

/// Payloads of notifications that hold no pointers: the notification IDs they belong to.
pub(super) trait Payload {
    /// The DPM notifications whose documented payload this is.
    const DPM: &'static [ULONG];
    /// The PPM notifications whose documented payload this is.
    const PPM: &'static [ULONG];
}

impl Payload for PEP_UNREGISTER_DEVICE {
    const DPM: &'static [ULONG] = &[PEP_DPM_UNREGISTER_DEVICE];
    const PPM: &'static [ULONG] = &[];
}
impl Payload for PEP_DEVICE_STARTED {
    const DPM: &'static [ULONG] = &[PEP_DPM_DEVICE_STARTED];
    const PPM: &'static [ULONG] = &[];
}
impl Payload for PEP_PPM_QUERY_CAPABILITIES {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_CAPABILITIES];
}
impl Payload for CountersBuffer {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS];
}
impl Payload for PEP_PPM_FEEDBACK_READ {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_FEEDBACK_READ];
}
impl Payload for PEP_PPM_QUERY_PERF_CAPABILITIES {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES];
}
impl Payload for PEP_PPM_QUERY_DOMAIN_INFO {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO];
}
/// The one-count payloads (`PEP_PPM_QUERY_PLATFORM_STATES`, `PEP_PPM_QUERY_VETO_REASONS`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CountPayload {
    /// The count.
    pub count: u32,
}
const _: () = assert!(
    size_of::<CountPayload>() == size_of::<ppm_engine::abi::PEP_PPM_QUERY_PLATFORM_STATES>()
        && size_of::<CountPayload>() == size_of::<ppm_engine::abi::PEP_PPM_QUERY_VETO_REASONS>()
);
impl Payload for CountPayload {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
        PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
        PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
    ];
}
impl Payload for Sentinel {
    const DPM: &'static [ULONG] = &UNDEFINED_DPM_NOTIFICATIONS;
    const PPM: &'static [ULONG] = &UNDEFINED_PPM_NOTIFICATIONS;
}

/// A `PEP_PPM_QUERY_FEEDBACK_COUNTERS` with room for [`MAX_QUERIED_COUNTERS`] + 1 descriptors
/// (the C structure's `Counters[ANYSIZE_ARRAY]`): same layout, larger array.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct CountersBuffer {
    count: ULONG,
    pub(super) counters: [PEP_PROCESSOR_FEEDBACK_COUNTER; MAX_QUERIED_COUNTERS + 1],
}

impl CountersBuffer {
    pub(super) const fn new(count: ULONG) -> Self {
        let mut sentinel = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
        sentinel._bitfield_1 = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
        sentinel.NominalRate = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
        Self { count, counters: [sentinel; MAX_QUERIED_COUNTERS + 1] }
    }

    pub(super) fn untouched(&self, count: ULONG) -> bool {
        let fresh = Self::new(count);
        self.count == count
            && self.counters.iter().zip(fresh.counters.iter()).all(|(now, before)| {
                now._bitfield_1 == before._bitfield_1 && now.NominalRate == before.NominalRate
            })
    }
}

/// A buffer of [`SENTINEL_BYTE`]s, passed with undefined notification IDs.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Sentinel([u64; 16]);

impl Sentinel {
    pub(super) const FRESH: Self = Self([SENTINEL; 16]);
}

pub(super) const fn feedback_read(counter_index: ULONG) -> PEP_PPM_FEEDBACK_READ {
    PEP_PPM_FEEDBACK_READ {
        CounterIndex: counter_index,
        __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
            __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
                NominalCount: SENTINEL,
                ActualCount: SENTINEL,
            },
        },
    }
}

/// `(NominalCount, ActualCount)` of a read.
pub(super) const fn read_counts(read: &PEP_PPM_FEEDBACK_READ) -> (u64, u64) {
    // SAFETY: both union members are plain integers covering the same bytes, so every bit
    // pattern is a valid `NominalCount`/`ActualCount` pair.
    let counts = unsafe { read.__bindgen_anon_1.__bindgen_anon_1 };
    (counts.NominalCount, counts.ActualCount)
}

pub(super) const fn handle(address: usize) -> PEPHANDLE {
    std::ptr::without_provenance_mut::<PEPHANDLE__>(address)
}

pub(super) fn data<T>(payload: Option<&mut T>) -> PVOID {
    payload.map_or(std::ptr::null_mut(), |payload| std::ptr::from_mut(payload).cast::<c_void>())
}

pub(super) fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// The engine instance and the callbacks registered for it.
pub(super) struct Engine {
    pub(super) pep: Box<Pep<SimPlatform>>,
    pub(super) dpm: DpmCallback,
    pub(super) ppm: PpmCallback,
}

impl Engine {
    /// Calls the DPM callback as `processor`, recording the platform operations.
    ///
    /// # Safety
    /// `data` is NULL or points to the payload PoFx documents for `notification` (or, for an
    /// undefined notification, to a buffer of at least 128 bytes), valid for the call.
    unsafe fn dpm_raw(
        &self,
        processor: u32,
        notification: ULONG,
        data: PVOID,
    ) -> (bool, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(Some(&self.pep), processor);
        platform::begin_trace();
        // SAFETY: the callback was registered by the PEP for exactly this use; `data` meets
        // the callback's contract (this function's precondition).
        let returned = unsafe { (self.dpm)(notification, data) };
        (returned != FALSE, platform::take_trace())
    }

    /// Calls the PPM callback as `processor`, recording the platform operations.
    ///
    /// # Safety
    /// As [`Self::dpm_raw`].
    unsafe fn ppm_raw(
        &self,
        processor: u32,
        handle_value: usize,
        notification: ULONG,
        data: PVOID,
    ) -> (bool, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(Some(&self.pep), processor);
        platform::begin_trace();
        // SAFETY: as in `dpm_raw`; the handle may be anything (the PEP validates it).
        let returned = unsafe { (self.ppm)(handle(handle_value), notification, data) };
        (returned != FALSE, platform::take_trace())
    }

    /// A DPM notification whose payload holds no pointers (or NULL).
    pub(super) fn dpm<T: Payload>(
        &self,
        processor: u32,
        notification: ULONG,
        payload: Option<&mut T>,
    ) -> (bool, Vec<PlatformOp>) {
        assert!(
            payload.is_none() || T::DPM.contains(&notification),
            "payload type does not match DPM {notification:#x}"
        );
        // SAFETY: `payload` is NULL or a live, exclusive `T`, the documented payload of
        // `notification` (asserted above; `Sentinel` only with undefined IDs).
        unsafe { self.dpm_raw(processor, notification, data(payload)) }
    }

    /// A PPM notification whose payload holds no pointers (or NULL).
    pub(super) fn ppm<T: Payload>(
        &self,
        processor: u32,
        handle_value: usize,
        notification: ULONG,
        payload: Option<&mut T>,
    ) -> (bool, Vec<PlatformOp>) {
        assert!(
            payload.is_none() || T::PPM.contains(&notification),
            "payload type does not match PPM {notification:#x}"
        );
        // SAFETY: as in `dpm`; a `CountersBuffer` holds MAX_QUERIED_COUNTERS + 1 descriptors
        // and callers never set its `Count` higher.
        unsafe { self.ppm_raw(processor, handle_value, notification, data(payload)) }
    }

    /// `PEP_DPM_PREPARE_DEVICE` for `id` (`None`: a NULL `DeviceId`): returned, accepted.
    pub(super) fn prepare(&self, id: Option<&[u16]>) -> (bool, bool, Vec<PlatformOp>) {
        let mut buffer = id.map(<[u16]>::to_vec);
        let mut string = buffer.as_mut().map(|units| unicode_string(units));
        let mut request = PEP_PREPARE_DEVICE::zeroed();
        request.DeviceId = string
            .as_mut()
            .map_or(std::ptr::null(), |string| std::ptr::from_mut(string).cast_const());
        // SAFETY: `request` is a PEP_PREPARE_DEVICE whose DeviceId is NULL or points to a
        // UNICODE_STRING over `buffer`; all three live until the call returns.
        let (returned, trace) =
            unsafe { self.dpm_raw(0, PEP_DPM_PREPARE_DEVICE, data(Some(&mut request))) };
        (returned, request.DeviceAccepted != FALSE, trace)
    }

    /// `PEP_DPM_REGISTER_DEVICE` for `id`, with PoFx's handle `kernel_handle` and one
    /// component.
    pub(super) fn register(
        &self,
        id: &[u16],
        kernel_handle: usize,
    ) -> (RegisterRecord, Vec<PlatformOp>) {
        let mut buffer = id.to_vec();
        let mut string = unicode_string(&mut buffer);
        let mut component = ppm_engine::abi::PEP_COMPONENT_V2::zeroed();
        let mut register = PEP_DEVICE_REGISTER_V2::zeroed();
        register.ComponentCount = 1;
        register.Components = [std::ptr::from_mut(&mut component)];
        let mut request = PEP_REGISTER_DEVICE_V2::zeroed();
        request.DeviceId = std::ptr::from_mut(&mut string).cast_const();
        request.KernelHandle = std::ptr::without_provenance_mut::<POHANDLE__>(kernel_handle);
        request.Register = std::ptr::from_mut(&mut register);
        request.DeviceHandle = std::ptr::null_mut();
        // SAFETY: `request` is a PEP_REGISTER_DEVICE_V2 whose pointers (the id string and its
        // buffer, the one-component register block) all live until the call returns.
        let (returned, trace) =
            unsafe { self.dpm_raw(0, PEP_DPM_REGISTER_DEVICE, data(Some(&mut request))) };
        (
            RegisterRecord {
                returned,
                acceptance: request.DeviceAccepted,
                handle: request.DeviceHandle.addr(),
            },
            trace,
        )
    }
}

fn unicode_string(units: &mut [u16]) -> UNICODE_STRING {
    let bytes = u16::try_from(units.len() * 2).unwrap_or(0xFFFE);
    UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_mut_ptr() }
}
