//! A notification's `data`, typed once at the C boundary.
//!
//! PoFx passes every notification an untyped `data` pointer whose structure the notification's
//! id determines. The callbacks ([`crate::callbacks`]) wrap it once, under one contract, in a
//! [`Data`] view that carries the id; a handler then asks for the structure it expects
//! ([`Data::get`]) and receives it only when the id is that structure's and the pointer is
//! non-NULL and aligned. So the argument that a dereference is sound is made here, once, not in
//! every handler.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::abi::{
    PEP_ABANDON_DEVICE, PEP_DEVICE_POWER_STATE, PEP_DEVICE_STARTED, PEP_DPM_ABANDON_DEVICE,
    PEP_DPM_DEVICE_POWER_STATE, PEP_DPM_DEVICE_STARTED, PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE,
    PEP_DPM_POWER_CONTROL_REQUEST, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_DPM_WORK, PEP_NOTIFY_COMPONENT_IDLE_STATE,
    PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
    PEP_NOTIFY_PPM_QUERY_VETO_REASONS, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_POWER_CONTROL_REQUEST, PEP_PPM_ENTER_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_PERF_CHECK_COMPLETE, PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO,
    PEP_PPM_QUERY_FEEDBACK_COUNTERS, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PPM_QUERY_PLATFORM_STATES, PEP_PPM_QUERY_VETO_REASONS, PEP_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_PREPARE_DEVICE, PEP_REGISTER_DEVICE_V2, PEP_UNREGISTER_DEVICE, PEP_WORK,
};

/// The id space of a notification: device (DPM) and processor (PPM) ids overlap.
pub trait Class {}

/// Device power management notifications (`AcceptDeviceNotification`).
pub enum Dpm {}

/// Processor power management notifications (`AcceptProcessorNotification`).
pub enum Ppm {}

impl Class for Dpm {}
impl Class for Ppm {}

/// A structure PoFx documents as the data of notification [`Self::ID`] of class `C`.
///
/// # Safety
/// Implement only for the `#[repr(C)]` structure PoFx documents for that notification, whose
/// every bit pattern is valid (its fields are integers, raw pointers and unions of them).
pub unsafe trait Payload<C: Class>: Sized {
    /// The notification whose data this structure is.
    const ID: u32;
}

/// Implements [`Payload`] for each documented (structure, notification) pair.
macro_rules! payloads {
    ($class:ty: $($structure:ty = $id:expr),+ $(,)?) => {$(
        // SAFETY: the ABI structure PoFx documents for the notification (its layout is
        // asserted in `abi`); its fields are integers and raw pointers.
        unsafe impl Payload<$class> for $structure {
            const ID: u32 = $id;
        }
    )+};
}

payloads!(Dpm:
    PEP_PREPARE_DEVICE = PEP_DPM_PREPARE_DEVICE,
    PEP_ABANDON_DEVICE = PEP_DPM_ABANDON_DEVICE,
    PEP_REGISTER_DEVICE_V2 = PEP_DPM_REGISTER_DEVICE,
    PEP_UNREGISTER_DEVICE = PEP_DPM_UNREGISTER_DEVICE,
    PEP_DEVICE_STARTED = PEP_DPM_DEVICE_STARTED,
    PEP_DEVICE_POWER_STATE = PEP_DPM_DEVICE_POWER_STATE,
    PEP_NOTIFY_COMPONENT_IDLE_STATE = PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE,
    PEP_POWER_CONTROL_REQUEST = PEP_DPM_POWER_CONTROL_REQUEST,
    PEP_WORK = PEP_DPM_WORK,
);

payloads!(Ppm:
    PEP_PPM_FEEDBACK_READ = PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_PPM_QUERY_CAPABILITIES = PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_PPM_QUERY_FEEDBACK_COUNTERS = PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_PPM_QUERY_PERF_CAPABILITIES = PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PPM_QUERY_DOMAIN_INFO = PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_PPM_ENTER_SYSTEM_STATE = PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
    PEP_PPM_RESUME_FROM_SYSTEM_STATE = PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_PPM_PERF_CHECK_COMPLETE = PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
    PEP_PPM_QUERY_PLATFORM_STATES = PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
    PEP_PPM_QUERY_VETO_REASONS = PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
);

/// The `data` of notification [`Self::id`] of class `C`, for one callback (`'a`).
///
/// Not `Copy`: [`Self::get`] consumes it, so a handler holds at most one reference to the data.
pub struct Data<'a, C: Class> {
    id: u32,
    pointer: *mut c_void,
    _call: PhantomData<(&'a mut c_void, C)>,
}

impl<'a, C: Class> Data<'a, C> {
    /// Wraps notification `id`'s `pointer`. Any IRQL.
    ///
    /// # Safety
    /// `pointer` is NULL or points to the structure PoFx documents for notification `id` of
    /// class `C` (with the embedded pointers it documents), valid for reads and writes and
    /// accessed by nothing else for `'a`.
    #[inline]
    pub const unsafe fn new(id: u32, pointer: *mut c_void) -> Self {
        Self { id, pointer, _call: PhantomData }
    }

    /// The notification id.
    #[inline]
    pub const fn id(&self) -> u32 {
        self.id
    }

    /// The data as a `T`, when the notification is `T`'s and the pointer non-NULL and aligned.
    #[inline]
    pub fn get<T: Payload<C>>(self) -> Option<&'a mut T> {
        let data = self.pointer::<T>()?;
        // SAFETY: the one dereference of every handler. `data` is non-NULL and aligned
        // (`pointer`); the notification is `T`'s (`pointer`), so per `new` it points to a `T`
        // (`Payload`: the documented structure, valid for any bits), valid and accessed by
        // nothing else for `'a`; `get` consumes the view, so this is the only reference.
        Some(unsafe { &mut *data.as_ptr() })
    }

    /// As [`Self::get`], as a pointer: for a structure the caller sized beyond `T`
    /// (`QUERY_FEEDBACK_COUNTERS`' `Count` descriptors), which a reference to `T` cannot span.
    #[inline]
    pub fn pointer<T: Payload<C>>(self) -> Option<NonNull<T>> {
        if self.id != T::ID {
            return None;
        }
        let data = NonNull::new(self.pointer.cast::<T>())?;
        data.is_aligned().then_some(data)
    }
}
