//! [`Callbacks`]: the two notification callbacks of a `PEP_INFORMATION` — the engine's or any
//! other PEP's — and the notifications sent through them as PoFx sends them.
//!
//! Nothing here judges the PEP: every send returns what it saw (the `BOOLEAN` exactly as
//! returned, whether a sentinel-filled buffer came back untouched, what was written), so that
//! a caller can observe a broken PEP as well as a correct one. The asserting senders
//! (`ppm_caller::read::<P>` ...) are built on these; the emulator records them.
//!
//! This is the one place the crate calls a PEP's callbacks ([`Callbacks::dpm_raw`],
//! [`Callbacks::ppm_raw`]): C function pointers (the engine's, or any `PEP_INFORMATION`'s), or
//! a Rust [`Dispatch`] for a PEP that is not host code (a driver image executed elsewhere).

use std::fmt;
use std::sync::Arc;

use ppm_engine::PepHost;
use ppm_engine::abi::{
    BOOLEAN, FALSE, PEP_COMPONENT_V2, PEP_DEVICE_ACCEPTANCE_TYPE, PEP_DEVICE_REGISTER_V2,
    PEP_DEVICE_STARTED, PEP_DPM_DEVICE_STARTED, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_INFORMATION, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PPM_ENTER_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_PERF_CHECK_COMPLETE, PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO,
    PEP_PPM_QUERY_PERF_CAPABILITIES, PEP_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PREPARE_DEVICE,
    PEP_REGISTER_DEVICE_V2, PEP_UNREGISTER_DEVICE, PEPHANDLE, POHANDLE__, PVOID,
    SYSTEM_POWER_STATE, ULONG,
};
use ppm_engine::callbacks::{accept_device_notification, accept_processor_notification};

use crate::payload::{
    CountPayload, CountersBuffer, Payload, SENTINEL, Sentinel, capabilities_sentinel,
    capabilities_untouched, domain_sentinel, domain_untouched, feedback_read, handle,
    perf_sentinel, perf_untouched, read_counts, unicode_string,
};

/// `PEPCALLBACKNOTIFYDPM`, as a function pointer.
pub type DpmCallback = unsafe extern "C" fn(ULONG, PVOID) -> BOOLEAN;
/// `PEPCALLBACKNOTIFYPPM`, as a function pointer.
pub type PpmCallback = unsafe extern "C" fn(PEPHANDLE, ULONG, PVOID) -> BOOLEAN;

/// A PEP's two notification callbacks reached from Rust: what [`Callbacks`] calls for a PEP
/// whose callbacks are not host functions (a driver image executed by another process).
///
/// It receives exactly what a C callback would: the id, the handle and a pointer to the C
/// structure [`Callbacks`] built (sentinels filled), and returns the `BOOLEAN` as the PEP
/// returned it; [`Callbacks`] reads the structure back after the call.
pub trait Dispatch: Send + Sync {
    /// `AcceptDeviceNotification`.
    ///
    /// # Safety
    /// As [`Callbacks::dpm_raw`]: `data` is NULL or points to the structure PoFx documents
    /// for `notification` (for an id no header defines, to at least 128 bytes), valid for the
    /// call.
    unsafe fn dpm(&self, notification: ULONG, data: PVOID) -> BOOLEAN;

    /// `AcceptProcessorNotification`.
    ///
    /// # Safety
    /// As [`Self::dpm`]; the handle may be anything (a PEP validates it).
    unsafe fn ppm(&self, handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN;
}

/// The DPM and PPM callbacks a PEP registered: what PoFx keeps of its `PEP_INFORMATION`.
#[derive(Clone)]
pub struct Callbacks {
    target: Target,
}

/// What [`Callbacks`] calls.
#[derive(Clone)]
enum Target {
    /// The C function pointers of a `PEP_INFORMATION`.
    C { dpm: DpmCallback, ppm: PpmCallback },
    /// A Rust dispatcher.
    Rust(Arc<dyn Dispatch>),
}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::C { dpm, ppm } => {
                f.debug_struct("Callbacks").field("dpm", dpm).field("ppm", ppm).finish()
            }
            Target::Rust(_) => f.write_str("Callbacks(Dispatch)"),
        }
    }
}

/// What a send with a sentinel-filled buffer saw.
#[derive(Clone, Copy, Debug)]
pub struct Sent<T> {
    /// The `BOOLEAN` the callback returned, as returned (a PEP may return neither 0 nor 1).
    pub returned: BOOLEAN,
    /// Whether the buffer's outputs still held the sentinel after the call.
    pub untouched: bool,
    /// The buffer after the call.
    pub payload: T,
}

impl<T> Sent<T> {
    /// Whether the callback returned anything but FALSE (as the kernel tests a `BOOLEAN`).
    #[must_use]
    pub const fn handled(&self) -> bool {
        self.returned != FALSE
    }
}

/// `PEP_DPM_REGISTER_DEVICE` besides the device id: PoFx's `KernelHandle` (in) and the PEP's
/// `DeviceHandle` and `DeviceAccepted` (out), before or after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// `KernelHandle`, PoFx's handle of the device.
    pub kernel_handle: usize,
    /// `DeviceHandle`'s value.
    pub handle: usize,
    /// `DeviceAccepted`.
    pub accepted: PEP_DEVICE_ACCEPTANCE_TYPE,
}

impl Callbacks {
    /// The C callbacks `dpm` and `ppm`.
    #[must_use]
    pub const fn new(dpm: DpmCallback, ppm: PpmCallback) -> Self {
        Self { target: Target::C { dpm, ppm } }
    }

    /// The callbacks `pep` dispatches in Rust.
    #[must_use]
    pub fn dispatch(pep: Arc<dyn Dispatch>) -> Self {
        Self { target: Target::Rust(pep) }
    }

    /// The callbacks of `information`, or `None` when either is NULL.
    #[must_use]
    pub const fn of(information: &PEP_INFORMATION) -> Option<Self> {
        match (information.AcceptDeviceNotification, information.AcceptProcessorNotification) {
            (Some(dpm), Some(ppm)) => Some(Self::new(dpm, ppm)),
            _ => None,
        }
    }

    /// The engine's callbacks for the host `H` (those of `ppm_engine::pep_information::<H>`).
    #[must_use]
    pub fn engine<H: PepHost>() -> Self {
        Self::new(accept_device_notification::<H>, accept_processor_notification::<H>)
    }

    /// Calls the DPM callback with `data` as it is.
    ///
    /// # Safety
    /// `data` is NULL or points to the structure PoFx documents for `notification` (for an id
    /// no header defines, to at least 128 bytes), valid for the call.
    #[inline]
    pub unsafe fn dpm_raw(&self, notification: ULONG, data: PVOID) -> BOOLEAN {
        match &self.target {
            // SAFETY: the caller's contract for `data` is the callback's.
            Target::C { dpm, .. } => unsafe { dpm(notification, data) },
            // SAFETY: the caller's contract for `data` is the dispatcher's.
            Target::Rust(pep) => unsafe { pep.dpm(notification, data) },
        }
    }

    /// Calls the PPM callback with `handle` and `data` as they are.
    ///
    /// # Safety
    /// As [`Self::dpm_raw`]; the handle may be anything (a PEP validates it).
    #[inline]
    pub unsafe fn ppm_raw(&self, handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
        match &self.target {
            // SAFETY: the caller's contract for `data` is the callback's.
            Target::C { ppm, .. } => unsafe { ppm(handle, notification, data) },
            // SAFETY: the caller's contract for `data` is the dispatcher's.
            Target::Rust(pep) => unsafe { pep.ppm(handle, notification, data) },
        }
    }

    /// DPM notification `notification` with `payload` (`None`: NULL data).
    ///
    /// # Panics
    /// When `T` is not the payload of `notification` (the caller's mistake, not the PEP's).
    #[must_use]
    pub fn dpm<T: Payload>(&self, notification: ULONG, payload: Option<&mut T>) -> BOOLEAN {
        assert!(
            payload.is_none() || T::DPM.contains(&notification),
            "payload type does not match DPM {notification:#x}"
        );
        // SAFETY: `payload` is NULL or a live, exclusive `T`, the documented payload of
        // `notification` (asserted above; `Payload`'s contract).
        unsafe { self.dpm_raw(notification, data(payload)) }
    }

    /// PPM notification `notification` with `handle` and `payload` (`None`: NULL data).
    ///
    /// # Panics
    /// When `T` is not the payload of `notification` (the caller's mistake, not the PEP's).
    #[must_use]
    pub fn ppm<T: Payload>(
        &self,
        handle: PEPHANDLE,
        notification: ULONG,
        payload: Option<&mut T>,
    ) -> BOOLEAN {
        assert!(
            payload.is_none() || T::PPM.contains(&notification),
            "payload type does not match PPM {notification:#x}"
        );
        // SAFETY: as in `dpm`.
        unsafe { self.ppm_raw(handle, notification, data(payload)) }
    }

    /// `PEP_DPM_PREPARE_DEVICE` for `id` (`None`: a NULL `DeviceId`), `DeviceAccepted` set to
    /// `accepted` before the call: (returned, `DeviceAccepted` after).
    #[must_use]
    pub fn prepare(&self, id: Option<&[u16]>, accepted: BOOLEAN) -> (BOOLEAN, BOOLEAN) {
        let mut buffer = id.map(<[u16]>::to_vec);
        let mut string = buffer.as_mut().map(|units| unicode_string(units));
        let mut request = PEP_PREPARE_DEVICE::zeroed();
        request.DeviceId = string
            .as_mut()
            .map_or(std::ptr::null(), |string| std::ptr::from_mut(string).cast_const());
        request.DeviceAccepted = accepted;
        // SAFETY: `request` is a PEP_PREPARE_DEVICE whose DeviceId is NULL or points to a
        // UNICODE_STRING over `buffer`; all three live until the call returns.
        let returned = unsafe { self.dpm_raw(PEP_DPM_PREPARE_DEVICE, data(Some(&mut request))) };
        (returned, request.DeviceAccepted)
    }

    /// `PEP_DPM_REGISTER_DEVICE` for `id` with one component, starting from `registration`:
    /// (returned, the registration after the call).
    #[must_use]
    pub fn register(&self, id: &[u16], registration: Registration) -> (BOOLEAN, Registration) {
        let mut buffer = id.to_vec();
        let mut string = unicode_string(&mut buffer);
        let mut component = PEP_COMPONENT_V2::zeroed();
        let mut register = PEP_DEVICE_REGISTER_V2::zeroed();
        register.ComponentCount = 1;
        register.Components = [std::ptr::from_mut(&mut component)];
        let mut request = PEP_REGISTER_DEVICE_V2::zeroed();
        request.DeviceId = std::ptr::from_mut(&mut string).cast_const();
        request.KernelHandle =
            std::ptr::without_provenance_mut::<POHANDLE__>(registration.kernel_handle);
        request.Register = std::ptr::from_mut(&mut register);
        request.DeviceHandle = handle(registration.handle);
        request.DeviceAccepted = registration.accepted;
        // SAFETY: `request` is a PEP_REGISTER_DEVICE_V2 whose pointers (the id string and its
        // buffer, the one-component register block) all live until the call returns.
        let returned = unsafe { self.dpm_raw(PEP_DPM_REGISTER_DEVICE, data(Some(&mut request))) };
        let after = Registration {
            kernel_handle: request.KernelHandle.addr(),
            handle: request.DeviceHandle.addr(),
            accepted: request.DeviceAccepted,
        };
        (returned, after)
    }

    /// `PEP_DPM_UNREGISTER_DEVICE` of `handle`.
    #[must_use]
    pub fn unregister(&self, handle: PEPHANDLE) -> BOOLEAN {
        let mut request = PEP_UNREGISTER_DEVICE { DeviceHandle: handle };
        self.dpm(PEP_DPM_UNREGISTER_DEVICE, Some(&mut request))
    }

    /// `PEP_DPM_DEVICE_STARTED` of `handle`.
    #[must_use]
    pub fn device_started(&self, handle: PEPHANDLE) -> BOOLEAN {
        let mut started = PEP_DEVICE_STARTED { DeviceHandle: handle };
        self.dpm(PEP_DPM_DEVICE_STARTED, Some(&mut started))
    }

    /// DPM notification `notification`, an id no header defines, with a sentinel-filled buffer.
    #[must_use]
    pub fn dpm_undefined(&self, notification: ULONG) -> Sent<Sentinel> {
        let mut buffer = Sentinel::FRESH;
        let returned = self.dpm(notification, Some(&mut buffer));
        Sent { returned, untouched: buffer == Sentinel::FRESH, payload: buffer }
    }

    /// PPM notification `notification`, an id no header defines, with `handle` and a
    /// sentinel-filled buffer.
    #[must_use]
    pub fn ppm_undefined(&self, handle: PEPHANDLE, notification: ULONG) -> Sent<Sentinel> {
        let mut buffer = Sentinel::FRESH;
        let returned = self.ppm(handle, notification, Some(&mut buffer));
        Sent { returned, untouched: buffer == Sentinel::FRESH, payload: buffer }
    }

    /// `PEP_NOTIFY_PPM_FEEDBACK_READ` of `handle`'s counter `index`, the counts
    /// sentinel-filled (`untouched`: both still hold it).
    #[must_use]
    pub fn read(&self, handle: PEPHANDLE, index: ULONG) -> Sent<PEP_PPM_FEEDBACK_READ> {
        let mut read = feedback_read(index);
        let returned = self.ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, Some(&mut read));
        Sent { returned, untouched: read_counts(&read) == (SENTINEL, SENTINEL), payload: read }
    }

    /// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES`, sentinel-filled.
    #[must_use]
    pub fn query_capabilities(&self, handle: PEPHANDLE) -> Sent<PEP_PPM_QUERY_CAPABILITIES> {
        let mut capabilities = capabilities_sentinel();
        let returned = self.ppm(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, Some(&mut capabilities));
        Sent { returned, untouched: capabilities_untouched(&capabilities), payload: capabilities }
    }

    /// `PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`, sentinel-filled.
    #[must_use]
    pub fn query_perf_capabilities(
        &self,
        handle: PEPHANDLE,
    ) -> Sent<PEP_PPM_QUERY_PERF_CAPABILITIES> {
        let mut perf = perf_sentinel();
        let returned = self.ppm(handle, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, Some(&mut perf));
        Sent { returned, untouched: perf_untouched(&perf), payload: perf }
    }

    /// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO` of domain `domain`, the outputs sentinel-filled.
    #[must_use]
    pub fn query_domain_info(
        &self,
        handle: PEPHANDLE,
        domain: ULONG,
    ) -> Sent<PEP_PPM_QUERY_DOMAIN_INFO> {
        let mut info = domain_sentinel(domain);
        let returned = self.ppm(handle, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, Some(&mut info));
        Sent { returned, untouched: domain_untouched(&info), payload: info }
    }

    /// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS` with `Count` = `count`, every descriptor
    /// sentinel-filled (`untouched`: `Count` and every descriptor as sent); `None`, without a
    /// call, when a [`CountersBuffer`] has no room for `count` descriptors.
    #[must_use]
    pub fn query_feedback_counters(
        &self,
        handle: PEPHANDLE,
        count: ULONG,
    ) -> Option<Sent<CountersBuffer>> {
        let mut buffer = CountersBuffer::new(count)?;
        let returned = self.ppm(handle, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, Some(&mut buffer));
        Some(Sent { returned, untouched: buffer.untouched(count), payload: buffer })
    }

    /// A one-count PPM notification (`QUERY_PLATFORM_STATES`, `QUERY_VETO_REASONS`) with a
    /// NULL handle, the count sentinel-filled.
    #[must_use]
    pub fn query_count(&self, notification: ULONG) -> Sent<CountPayload> {
        let mut answer = CountPayload::FRESH;
        let returned = self.ppm(handle(0), notification, Some(&mut answer));
        Sent { returned, untouched: answer == CountPayload::FRESH, payload: answer }
    }

    /// `PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE` to `target`.
    #[must_use]
    pub fn enter_system_state(&self, handle: PEPHANDLE, target: SYSTEM_POWER_STATE) -> BOOLEAN {
        let mut data = PEP_PPM_ENTER_SYSTEM_STATE { TargetState: target };
        self.ppm(handle, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, Some(&mut data))
    }

    /// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE` to `target`.
    #[must_use]
    pub fn resume(&self, handle: PEPHANDLE, target: SYSTEM_POWER_STATE) -> BOOLEAN {
        let mut data = PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: target };
        self.ppm(handle, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, Some(&mut data))
    }

    /// `PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE` with `handle`, `EvaluationTime` 0.
    #[must_use]
    pub fn perf_check_complete(&self, handle: PEPHANDLE) -> BOOLEAN {
        let mut check = PEP_PPM_PERF_CHECK_COMPLETE { EvaluationTime: 0 };
        self.ppm(handle, PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, Some(&mut check))
    }
}

/// `payload` as the callbacks' `data`: NULL for `None`.
fn data<T>(payload: Option<&mut T>) -> PVOID {
    payload.map_or(std::ptr::null_mut(), |payload| std::ptr::from_mut(payload).cast())
}
