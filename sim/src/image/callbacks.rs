//! The callbacks `PoFx` holds for the image: a [`Dispatch`] that sends each notification to
//! the image's own callback, executed by the runner.
//!
//! The emulator calls them as it calls the engine's ([`ppm_caller::Callbacks`], which builds
//! the C structure, calls and reads it back), as a processor, from any of its threads.

use std::sync::{Arc, Mutex, PoisonError};

use ppm_caller::{Callbacks, Dispatch};
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
    pub fn callbacks(self: &Arc<Self>) -> Callbacks {
        Callbacks::dispatch(Arc::<Self>::clone(self))
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

    /// The notification `notification` (PPM or DPM, its id) to the callback at `address`
    /// with `args`: the `BOOLEAN` it returned, the low byte of RAX as the C caller reads it;
    /// FALSE after a bugcheck or a runner failure.
    fn notify(
        &self,
        address: u64,
        args: &[u64],
        data: PVOID,
        notification: (bool, u32),
    ) -> BOOLEAN {
        self.call(address, args, data as u64, notification)
            .map_or(FALSE, |rax| (rax & 0xFF) as BOOLEAN)
    }

    /// Calls the image's function at `address` with `args`, `data` the notification's
    /// payload: its RAX, or `None` after a bugcheck or a runner failure (recorded; the run
    /// reports it).
    ///
    /// The payload's page travels with the command. Where no notification can be injected
    /// into this call (none is modelled, or this is one, delivered nested), the command also
    /// names the current processor, so the runner answers `KeGetCurrentProcessorNumberEx`
    /// itself and reports it and the image's interrupt masking with its next request
    /// (`deferred`, docs/image-backend.md). It then also carries the time-stamp counter as
    /// a read returns it after each of the next interrupt windows (all one value where the
    /// windows are inert; a nested call's windows take their time), as does each answer, so
    /// that the runner answers the image's time-stamp reads itself and reports them the same
    /// way. A `FEEDBACK_READ` so makes three round trips instead of nine, nested or not; the
    /// machine sees the same operations in the same order.
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
        if platform::no_interrupt_can_arrive() {
            command["processor"] = processor_answer(self.platform.processor_index_now());
            if let Some(ahead) = self.platform.timestamps_ahead() {
                command["timestamps"] = json!(ahead);
            }
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
        let done = self.runner.command_with_pages(&command, &[data], &host);
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

impl Dispatch for ImageCallbacks {
    /// `AcceptDeviceNotification`, executed by the runner.
    ///
    /// # Safety
    /// As the callback's: `data` is what `PoFx` documents for `notification` (the runner reads
    /// and writes it through `ppm-sim`, which refuses addresses it cannot read).
    unsafe fn dpm(&self, notification: ULONG, data: PVOID) -> BOOLEAN {
        let args = [u64::from(notification), data as u64];
        self.notify(self.dpm, &args, data, (false, notification))
    }

    /// `AcceptProcessorNotification`, executed by the runner.
    ///
    /// # Safety
    /// As [`Self::dpm`]; the handle is passed as it is.
    unsafe fn ppm(&self, handle: PEPHANDLE, notification: ULONG, data: PVOID) -> BOOLEAN {
        let args = [handle as u64, u64::from(notification), data as u64];
        self.notify(self.ppm, &args, data, (true, notification))
    }
}
