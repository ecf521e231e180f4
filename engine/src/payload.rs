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

/// Implements [`Payload`] for the structure of every notification the engine handles (a row
/// of [`crate::notification::table!`] with a payload and a handler).
macro_rules! payload {
    ($class:ident ($id:ident, [$structure:ident], {$($handler:ident)+}, $($rest:tt)*)) => {
        // SAFETY: the ABI structure PoFx documents for the notification (its layout is
        // asserted in `abi`); its fields are integers and raw pointers.
        unsafe impl Payload<$class> for crate::abi::$structure {
            const ID: u32 = crate::abi::$id;
        }
    };
    ($class:ident ($($row:tt)*)) => {};
}

/// [`payload!`] for every row.
macro_rules! payloads {
    (() dpm: [$($dpm:tt),* $(,)?] ppm: [$($ppm:tt),* $(,)?]) => {
        $(payload!(Dpm $dpm);)*
        $(payload!(Ppm $ppm);)*
    };
}

crate::notification::table!(payloads);

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
    #[must_use]
    pub const fn id(&self) -> u32 {
        self.id
    }

    /// The data as a `T`, when the notification is `T`'s and the pointer non-NULL and aligned.
    #[inline]
    #[must_use]
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
    #[must_use]
    pub fn pointer<T: Payload<C>>(self) -> Option<NonNull<T>> {
        if self.id != T::ID {
            return None;
        }
        let data = NonNull::new(self.pointer.cast::<T>())?;
        data.is_aligned().then_some(data)
    }
}
