//! The engine as the emulated OS calls it: through the callbacks it registered
//! ([`ppm_caller::Callbacks`], which build the C structures and make the C calls), each call
//! made "as" a processor (see [`OnProcessor`]) and traced. Nothing here judges the PEP: a
//! broken one's answers are recorded as they are.

use std::sync::Arc;

use ppm_caller::{Callbacks, Registration};
use ppm_engine::Pep;
use ppm_engine::abi::{BOOLEAN, FALSE};

use super::records::RegisterRecord;
use crate::image::{self, ImageCallbacks};
use crate::platform::{self, OnProcessor, PlatformOp, SimPlatform};

/// The PEP the emulator calls: the engine instance, or the image, and the callbacks
/// registered for it.
pub(super) struct Engine {
    /// The engine's instance (`None`: the image backend).
    pub(super) pep: Option<Box<Pep<SimPlatform>>>,
    /// The image the callbacks reach (`None`: the engine backend).
    pub(super) image: Option<Arc<ImageCallbacks>>,
    pub(super) callbacks: Callbacks,
}

impl Engine {
    /// Runs `send` with the callbacks as `processor`: what it returned, with the platform
    /// operations it made.
    pub(super) fn on<R>(
        &self,
        processor: u32,
        send: impl FnOnce(&Callbacks) -> R,
    ) -> (R, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(self.pep.as_deref(), processor);
        let _image = self.image.as_ref().map(image::enter);
        platform::begin_trace();
        let result = send(&self.callbacks);
        (result, platform::take_trace())
    }

    /// As [`Self::on`], for a send that returns the callback's `BOOLEAN`: whether it is not
    /// FALSE.
    pub(super) fn returned(
        &self,
        processor: u32,
        send: impl FnOnce(&Callbacks) -> BOOLEAN,
    ) -> (bool, Vec<PlatformOp>) {
        let (returned, trace) = self.on(processor, send);
        (returned != FALSE, trace)
    }

    /// `PEP_DPM_PREPARE_DEVICE` for `id` (`None`: a NULL `DeviceId`), on processor 0, with
    /// `DeviceAccepted` FALSE until the PEP writes it: returned, accepted.
    pub(super) fn prepare(&self, id: Option<&str>) -> (bool, bool, Vec<PlatformOp>) {
        let units = id.map(ppm_caller::payload::utf16);
        let ((returned, accepted), trace) =
            self.on(0, |callbacks| callbacks.prepare(units.as_deref(), FALSE));
        (returned != FALSE, accepted != FALSE, trace)
    }

    /// `PEP_DPM_REGISTER_DEVICE` for `id`, on processor 0, with PoFx's handle `kernel_handle`
    /// and one component (`DeviceHandle` NULL and `DeviceAccepted` 0 until the PEP writes them).
    pub(super) fn register(
        &self,
        id: &str,
        kernel_handle: usize,
    ) -> (RegisterRecord, Vec<PlatformOp>) {
        let units = ppm_caller::payload::utf16(id);
        let before = Registration { kernel_handle, handle: 0, accepted: 0 };
        let ((returned, after), trace) = self.on(0, |callbacks| callbacks.register(&units, before));
        (
            RegisterRecord {
                returned: returned != FALSE,
                acceptance: after.accepted,
                handle: after.handle,
            },
            trace,
        )
    }
}
