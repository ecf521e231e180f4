//! The callbacks `PoFx` holds for the image: `extern "C"` trampolines that forward each
//! notification to the image's own callback, executed by the runner.
//!
//! The emulator calls them as it calls the engine's ([`ppm_caller::Callbacks`]), as a
//! processor, from any of its threads; the thread's image is the one [`enter`] installed (the
//! emulator enters it around every call, as it enters the engine's instance).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use ppm_caller::Callbacks;
use ppm_engine::Platform as _;
use ppm_engine::abi::{BOOLEAN, FALSE, PEPHANDLE, PVOID, ULONG};
use serde_json::json;

use super::host::{ImageHost, processor_answer};
use super::runner::{Crash, Runner, crash_of};
use crate::platform::{self, SimPlatform};

/// The image a run calls: the runner, the image's callback addresses and the machine its
/// requests are answered from.
pub struct ImageCallbacks {
    runner: Arc<Runner>,
    dpm: u64,
    ppm: u64,
    platform: SimPlatform,
    /// The first bugcheck: after it nothing runs (the callbacks return FALSE).
    crash: Mutex<Option<Crash>>,
    /// What the runtime host recorded (ETW events, log lines on notification paths).
    ledger: Mutex<super::host::KernelLedger>,
}

impl ImageCallbacks {
    /// The image's callbacks `dpm` and `ppm` (addresses in the image), answered from
    /// `platform`.
    #[must_use]
    pub fn new(runner: Arc<Runner>, (dpm, ppm): (u64, u64), platform: SimPlatform) -> Arc<Self> {
        Arc::new(Self {
            runner,
            dpm,
            ppm,
            platform,
            crash: Mutex::new(None),
            ledger: Mutex::new(super::host::KernelLedger::default()),
        })
    }

    /// The callbacks as the emulator holds them.
    #[must_use]
    pub fn callbacks() -> Callbacks {
        Callbacks::new(image_dpm, image_ppm)
    }

    /// The bugcheck the image caused, if any.
    #[must_use]
    pub fn crash(&self) -> Option<Crash> {
        self.crash.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// What the kernel recorded at runtime.
    #[must_use]
    pub fn ledger(&self) -> super::host::KernelLedger {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Calls the image's function at `address` with `args`, `data` the notification's
    /// payload: its RAX, or `None` after a bugcheck or a runner failure (recorded; the run
    /// reports it).
    ///
    /// The payload's page travels with the command. Where no notification can be injected
    /// into this call (the thread's interrupt windows are inert), the command also names the
    /// current processor, so the runner answers `KeGetCurrentProcessorNumberEx` itself and
    /// reports the image's interrupt masking with its next request (`deferred`,
    /// docs/image-backend.md): a `FEEDBACK_READ` makes five round trips instead of nine, and
    /// the machine sees the same operations in the same order.
    ///
    /// Under Driver Verifier's rules the command also carries the IRQL the notification is
    /// made at and its label (`verifier::notification_context`), and a `FEEDBACK_READ` with
    /// no interrupt window to keep runs with interrupts disabled, the documented worst case.
    fn call(
        &self,
        address: u64,
        args: &[u64],
        data: u64,
        notification: (bool, u32),
    ) -> Option<u64> {
        if self.crash().is_some() {
            return None;
        }
        let host = ImageHost::runtime(self.platform.clone());
        let inert = platform::interrupt_windows_inert();
        let mut command =
            json!({"op": "call", "address": address, "args": args, "interrupts": true});
        if inert {
            command["processor"] = processor_answer(self.platform.current_processor_index());
        }
        let mut masked = false;
        if self.runner.verifier {
            let (ppm, id) = notification;
            let (irql, label) = super::verifier::notification_context(ppm, id);
            command["irql"] = json!(irql);
            command["label"] = json!(label);
            if inert && super::verifier::may_disable_interrupts(ppm, id) {
                // The kernel calls with interrupts disabled: the processor is masked for the
                // whole call, as the image's own masking would make it.
                command["interrupts"] = json!(false);
                self.platform.mask_interrupts();
                masked = true;
            }
        }
        let done = self.runner.command_with_pages(command, &[data], &host);
        if masked {
            self.platform.unmask_interrupts();
        }
        let done = done.ok()?;
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner).absorb(host.ledger());
        match crash_of(&done) {
            Ok(Some(crash)) => {
                self.crash.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(crash);
                None
            }
            Ok(None) => done.get("rax").and_then(serde_json::Value::as_u64),
            Err(_) => None,
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<ImageCallbacks>>> = const { RefCell::new(None) };
}

/// While alive, the calling thread's callbacks reach `image`.
#[must_use = "the image is reachable only while the guard lives"]
pub struct Entered {
    previous: Option<Arc<ImageCallbacks>>,
}

/// Makes `image` the calling thread's (see [`Entered`]).
pub fn enter(image: &Arc<ImageCallbacks>) -> Entered {
    let previous = CURRENT.with(|current| current.replace(Some(Arc::clone(image))));
    Entered { previous }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

fn forward(ppm: bool, notification: ULONG, args: &[u64], data: PVOID) -> BOOLEAN {
    let image = CURRENT.with(|current| current.borrow().clone());
    let Some(image) = image else { return FALSE };
    let address = if ppm { image.ppm } else { image.dpm };
    // The BOOLEAN is the low byte of RAX, as the C caller reads it.
    image
        .call(address, args, data as u64, (ppm, notification))
        .map_or(FALSE, |rax| (rax & 0xFF) as BOOLEAN)
}

/// `AcceptDeviceNotification`, forwarded to the image.
///
/// # Safety
/// As the callback's: `data` is what `PoFx` documents for `notification` (the runner reads and
/// writes it through `ppm-sim`, which refuses addresses it cannot read).
pub unsafe extern "C" fn image_dpm(notification: ULONG, data: PVOID) -> BOOLEAN {
    forward(false, notification, &[u64::from(notification), data as u64], data)
}

/// `AcceptProcessorNotification`, forwarded to the image.
///
/// # Safety
/// As [`image_dpm`]; the handle is passed as it is.
pub unsafe extern "C" fn image_ppm(handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
    forward(true, notification, &[handle as u64, u64::from(notification), data as u64], data)
}
