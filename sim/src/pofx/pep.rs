//! The PEP under test as the emulated OS calls it: through the callbacks `PoFx` holds for it
//! ([`ppm_caller::Callbacks`], which build the C structures, call and read them back), each
//! call made "as" a processor (see [`OnProcessor`]) and traced. Nothing here judges the PEP: a
//! broken one's answers are recorded as they are.

use std::sync::Arc;

use ppm_caller::{Callbacks, Registration};
use ppm_engine::Pep;
use ppm_engine::abi::{BOOLEAN, FALSE};

use super::records::RegisterRecord;
use crate::image::{Crash, ImageCallbacks, KernelLedger};
use crate::platform::{self, OnProcessor, PlatformOp, SimPlatform};

/// The PEP under test: what the emulator drives, with the callbacks `PoFx` holds for it.
///
/// An enum, not a trait: there are exactly two, both are called through the same
/// [`Callbacks`] (the engine's C function pointers; the image's [`ppm_caller::Dispatch`],
/// which sends each call to its runner), and what differs — the engine's instance entered on
/// the calling thread for each call, what the image's kernel recorded and its bugcheck — is
/// read at the few places that need it.
pub(super) enum PepUnderTest {
    /// The engine compiled for this host.
    Engine {
        /// Its instance, entered on the calling thread around every call.
        instance: Box<Pep<SimPlatform>>,
        /// The callbacks `PoFx` accepted (the engine's, or a test's substitutes).
        callbacks: Callbacks,
    },
    /// The linked driver image, executed by its runner.
    Image {
        /// The image's callbacks and what its runtime kernel recorded.
        image: Arc<ImageCallbacks>,
        /// `image`'s callbacks, as `PoFx` holds them.
        callbacks: Callbacks,
    },
}

impl PepUnderTest {
    /// The image executed by `image`'s runner.
    pub(super) fn image(image: Arc<ImageCallbacks>) -> Self {
        let callbacks = image.callbacks();
        Self::Image { image, callbacks }
    }

    /// The callbacks `PoFx` holds.
    pub(super) const fn callbacks(&self) -> &Callbacks {
        match self {
            Self::Engine { callbacks, .. } | Self::Image { callbacks, .. } => callbacks,
        }
    }

    /// The engine's instance (`None`: the image).
    pub(super) fn instance(&self) -> Option<&Pep<SimPlatform>> {
        match self {
            Self::Engine { instance, .. } => Some(instance),
            Self::Image { .. } => None,
        }
    }

    /// What the image's runtime kernel recorded and the bugcheck it caused, if any (`None`:
    /// the engine).
    pub(super) fn image_outcome(&self) -> Option<(KernelLedger, Option<Crash>)> {
        match self {
            Self::Engine { .. } => None,
            Self::Image { image, .. } => Some((image.ledger(), image.crash())),
        }
    }

    /// Runs `send` with the callbacks as `processor`: what it returned, with the platform
    /// operations it made.
    pub(super) fn on<R>(
        &self,
        processor: u32,
        send: impl FnOnce(&Callbacks) -> R,
    ) -> (R, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(self.instance(), processor);
        platform::begin_trace();
        let result = send(self.callbacks());
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
