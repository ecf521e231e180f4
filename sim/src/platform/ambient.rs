//! The emulator's ambient state: what the thread that runs as a processor carries, in one
//! value, `ProcessorThread`, held in one thread-local.
//!
//! Why per thread and not passed down: the engine is `no_std` and reaches the machine only
//! through [`Platform`](ppm_engine::Platform)'s methods, which take `&self` and no context.
//! The emulator calls the engine's callbacks through the C ABI, and the engine calls the
//! platform from inside them (`ppm_caller::ThreadHost<SimPlatform>`), so nothing the emulator
//! knows about the call — which processor it runs on, whether interrupts are masked, what the
//! call is for — can travel with it. A processor holds that state in itself (its index, its
//! interrupt flag); the emulator holds it in the thread that runs as the processor. The
//! [`SimPlatform`] itself is shared by every thread (one per processor in a threaded run) and
//! holds only what is the same for all of them: the machine and the injected faults.
//!
//! What a thread carries (`ProcessorThread`'s fields):
//! - the processor it runs as, set by an [`OnProcessor`] guard (0 outside one);
//! - the simulated interrupt masking: whether interrupts are masked now, and the masking
//!   epoch ([`super`] says what it is for);
//! - the trace of the platform operations the engine performs ([`begin_trace`],
//!   [`take_trace`], [`swap_trace`]), `None` while nothing records;
//! - the nested-notification model ([`nest`]), `None` while no interrupt arrives: the hook
//!   that delivers nested notifications, the time every platform call takes, and whether a
//!   delivery is under way (one level deep);
//! - what the thread's MSR accesses are made for, for the machine's access log: the driver's
//!   `DriverEntry` setup ([`DriverSetup`]) or the delivery of a `RESUME_FROM_SYSTEM_STATE`
//!   ([`while_resuming`]).
//!
//! Every field is changed only through this module's guards and functions.
//!
//! The emulator's other per-thread state lives with the layer it belongs to:
//! - the engine instance the callbacks serve, in `ppm_caller` (its `ThreadHost`, entered
//!   together with the processor by [`OnProcessor`]);
//! - the image runner's commands under way on the thread, with the pages served to each
//!   (`image::runner`): a nested notification's command runs inside the host request of the
//!   command it interrupts, without waiting for the lock that command holds, and sends that
//!   command's pages along;
//! - the benchmark platform's current processor (`bench`), which stands in for this module's
//!   for `ppm-sim bench`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use ppm_caller::Entered;
use ppm_engine::Pep;

use super::{NestingHook, PlatformOp, SimPlatform};

/// The nested-notification model of a thread (see [`nest`]).
struct Nesting {
    /// Delivers the nested notifications.
    hook: NestingHook,
    /// Simulated time every platform call takes, ns.
    call_ns: u64,
    /// A nested delivery is under way (one level of nesting).
    delivering: bool,
}

/// What the thread that runs as a processor carries (see the module documentation).
struct ProcessorThread {
    /// The processor the thread runs as.
    processor: Cell<u32>,
    /// Whether the thread's simulated interrupts are masked.
    masked: Cell<bool>,
    /// How many times the thread's interrupts went from unmasked to masked.
    mask_epoch: Cell<u64>,
    /// The platform operations recorded, `None` while not recording.
    trace: RefCell<Option<Vec<PlatformOp>>>,
    /// The nested-notification model, `None` while none is.
    nesting: RefCell<Option<Nesting>>,
    /// The thread delivers a `RESUME_FROM_SYSTEM_STATE`.
    resuming: Cell<bool>,
    /// The thread is the driver's `DriverEntry` reserving the PMU and enabling the counters.
    driver_setup: Cell<bool>,
}

thread_local! {
    /// The calling thread's state, dropped with the thread.
    static THREAD: ProcessorThread = const {
        ProcessorThread {
            processor: Cell::new(0),
            masked: Cell::new(false),
            mask_epoch: Cell::new(0),
            trace: RefCell::new(None),
            nesting: RefCell::new(None),
            resuming: Cell::new(false),
            driver_setup: Cell::new(false),
        }
    };
}

/// The calling thread's processor while an [`OnProcessor`] guard is alive (0 otherwise).
#[must_use]
pub fn current_processor() -> u32 {
    THREAD.with(|thread| thread.processor.get())
}

/// While alive, the calling thread runs as one processor of the machine.
///
/// The callbacks (`ppm_caller::ThreadHost<SimPlatform>`) serve the engine it was entered with.
/// Dropping it restores the previous processor and instance (guards nest).
#[must_use = "the thread runs as the processor only while the guard lives"]
pub struct OnProcessor<'pep> {
    previous_processor: u32,
    _entered: Entered<'pep>,
}

impl<'pep> OnProcessor<'pep> {
    /// Runs the calling thread as `processor`, with `pep` (if any) as the engine instance.
    pub fn enter(pep: Option<&'pep Pep<SimPlatform>>, processor: u32) -> Self {
        let previous_processor = THREAD.with(|thread| thread.processor.replace(processor));
        let entered = pep.map_or_else(ppm_caller::leave, ppm_caller::enter);
        Self { previous_processor, _entered: entered }
    }
}

impl Drop for OnProcessor<'_> {
    fn drop(&mut self) {
        THREAD.with(|thread| thread.processor.set(self.previous_processor));
    }
}

/// Whether the calling thread's simulated interrupts are masked.
pub(super) fn masked() -> bool {
    THREAD.with(|thread| thread.masked.get())
}

/// The calling thread's masking epoch (see the module documentation).
pub(super) fn mask_epoch() -> u64 {
    THREAD.with(|thread| thread.mask_epoch.get())
}

/// Masks the calling thread's interrupts, starting a new epoch, unless they are masked.
pub(super) fn mask() {
    THREAD.with(|thread| {
        if !thread.masked.get() {
            thread.mask_epoch.set(thread.mask_epoch.get() + 1);
            thread.masked.set(true);
        }
    });
}

/// Sets whether the calling thread's interrupts are masked, without starting an epoch: the
/// unmasking, or the restoring of an earlier state.
pub(super) fn set_masked(masked: bool) {
    THREAD.with(|thread| thread.masked.set(masked));
}

/// Replaces the calling thread's trace (`None`: not recording) and returns the previous one:
/// a nested notification traces its operations apart from those of the call it interrupted.
#[must_use = "the previous trace is to be restored"]
pub fn swap_trace(trace: Option<Vec<PlatformOp>>) -> Option<Vec<PlatformOp>> {
    THREAD.with(|thread| thread.trace.replace(trace))
}

/// Starts recording the calling thread's platform operations (discarding any not taken).
pub fn begin_trace() {
    THREAD.with(|thread| *thread.trace.borrow_mut() = Some(Vec::new()));
}

/// Stops recording and returns the operations recorded since [`begin_trace`].
#[must_use]
pub fn take_trace() -> Vec<PlatformOp> {
    THREAD.with(|thread| thread.trace.borrow_mut().take()).unwrap_or_default()
}

/// Appends `op` to the calling thread's trace, if it records one.
pub(super) fn record(op: PlatformOp) {
    THREAD.with(|thread| {
        if let Some(ops) = thread.trace.borrow_mut().as_mut() {
            ops.push(op);
        }
    });
}

/// While alive, the calling thread models interrupts arriving during the engine's calls.
///
/// Every platform call then takes `call_ns` of the processor's time (so that the counters
/// move between two calls), and at every [`InjectionPoint`](super::InjectionPoint) reached
/// with interrupts unmasked (also masked, with a test's `PlatformFaults`) the platform records
/// a [`PlatformOp::Nested`] and calls `hook`, one level deep: platform calls made by the
/// notifications the hook delivers do not nest again. Dropping the guard restores the
/// previous state.
#[must_use = "nested notifications are delivered only while the guard lives"]
pub struct NestingGuard {
    previous: Option<Nesting>,
}

/// Starts modelling nested notifications on the calling thread (see [`NestingGuard`]).
pub fn nest(hook: NestingHook, call_ns: u64) -> NestingGuard {
    let nesting = Nesting { hook, call_ns, delivering: false };
    let previous = THREAD.with(|thread| thread.nesting.replace(Some(nesting)));
    NestingGuard { previous }
}

impl Drop for NestingGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        THREAD.with(|thread| *thread.nesting.borrow_mut() = previous);
    }
}

/// Whether no notification can be injected on the calling thread now.
///
/// Its interrupt windows (see [`InjectionPoint`](super::InjectionPoint)) then do nothing, so
/// an image backend may report its interrupt masking later and answer the current processor
/// itself without changing what the run sees.
#[must_use]
pub fn interrupt_windows_inert() -> bool {
    THREAD.with(|thread| thread.nesting.borrow().is_none())
}

/// The processor time each interrupt window takes on the calling thread: `call_ns` while
/// nested notifications are modelled (a delivery under way included: its windows still take
/// the time), else none.
#[must_use]
pub fn window_ns() -> u64 {
    THREAD.with(|thread| thread.nesting.borrow().as_ref().map_or(0, |nesting| nesting.call_ns))
}

/// Whether no notification can be injected on the calling thread now.
///
/// None is modelled ([`interrupt_windows_inert`]), or a nested delivery is under way (one
/// level deep). Unlike an inert window, a window then still takes the call's time: an image
/// backend may answer the current processor itself and report its requests later, in order,
/// but not answer a read whose value that time changes.
#[must_use]
pub fn no_interrupt_can_arrive() -> bool {
    THREAD.with(|thread| thread.nesting.borrow().as_ref().is_none_or(|nesting| nesting.delivering))
}

/// A nested delivery under way on the calling thread; dropping it (also when the delivery
/// unwinds) ends it.
pub(super) struct Delivery;

impl Drop for Delivery {
    fn drop(&mut self) {
        THREAD.with(|thread| {
            if let Some(nesting) = thread.nesting.borrow_mut().as_mut() {
                nesting.delivering = false;
            }
        });
    }
}

/// An instant at which an interrupt can arrive on the calling thread. With nesting modelled,
/// `spend(processor, call_ns)` passes the call's time; then, unless a delivery is under way
/// or `held_off` (interrupts masked, on a platform that holds interrupts off while masked),
/// the delivery starts: its hook, and the guard that ends it.
pub(super) fn interrupt_window(
    held_off: bool,
    spend: impl FnOnce(u32, u64),
) -> Option<(NestingHook, Delivery)> {
    THREAD.with(|thread| {
        let mut nesting = thread.nesting.borrow_mut();
        let state = nesting.as_mut()?;
        spend(thread.processor.get(), state.call_ns);
        if state.delivering || held_off {
            return None;
        }
        state.delivering = true;
        Some((Rc::clone(&state.hook), Delivery))
    })
}

/// Runs `f` — the delivery of a `RESUME_FROM_SYSTEM_STATE` — with the MSR accesses it makes
/// logged as [`AccessContext::Resume`](crate::machine::pmu::AccessContext::Resume).
pub fn while_resuming<R>(f: impl FnOnce() -> R) -> R {
    let previous = THREAD.with(|thread| thread.resuming.replace(true));
    let result = f();
    THREAD.with(|thread| thread.resuming.set(previous));
    result
}

/// Whether the calling thread delivers a `RESUME_FROM_SYSTEM_STATE` (see [`while_resuming`]).
pub(super) fn resuming() -> bool {
    THREAD.with(|thread| thread.resuming.get())
}

/// Whether the calling thread is in `DriverEntry` (for the MSR access log: the PMU control
/// writes made there are the driver's own setup).
#[must_use]
pub fn in_driver_setup() -> bool {
    THREAD.with(|thread| thread.driver_setup.get())
}

/// Marks the calling thread as `DriverEntry` while alive (the emulated kernel holds one
/// around the engine's `DriverEntry` sequence).
pub struct DriverSetup;

impl DriverSetup {
    /// Marks the calling thread until the guard is dropped.
    #[must_use]
    pub fn enter() -> Self {
        THREAD.with(|thread| thread.driver_setup.set(true));
        Self
    }
}

impl Drop for DriverSetup {
    fn drop(&mut self) {
        THREAD.with(|thread| thread.driver_setup.set(false));
    }
}
