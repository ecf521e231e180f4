//! Nested notifications: interrupts that arrive while a runtime `FEEDBACK_READ` runs.
//!
//! With `[pofx] nested_notifications = true` the sampler installs a [`Nesting`] around every
//! `FEEDBACK_READ` it issues. [`SimPlatform`](crate::platform::SimPlatform) then calls it at
//! every platform call the engine makes while interrupts are not masked (see
//! [`crate::platform::nest`]), and it delivers, on the same processor and one level deep:
//! a `FEEDBACK_READ` of the interrupted read's own handle and counter (a DPC reading the
//! counters again: it must be served and must not disturb the interrupted read's result), a
//! `FEEDBACK_READ` of a handle bound to another processor (it must be refused without touching
//! its data), `QUERY_CAPABILITIES` with the handle (the answer of initialisation) and
//! `PERF_CHECK_COMPLETE` (acknowledged). Each notification is traced apart from the call it
//! interrupted and recorded as a [`NestedCall`] for `feedback.reentrancy`.

use std::cell::RefCell;
use std::rc::Rc;

use ppm_caller::Callbacks;
use ppm_caller::payload::{SENTINEL, handle, read_counts};
use ppm_engine::abi::{FALSE, ULONG};

use super::analysis::{analyse_read, raw_read};
use super::records::{NestedCall, NestedNotification};
use crate::platform::{self, InjectionPoint, NestingHook, PlatformOp};

/// The simulated time every platform call takes while nested notifications are modelled, ns
/// (about an MSR read's cost), so that the counters move between two calls.
pub const PLATFORM_CALL_NS: u64 = 50;

/// The unmasked interrupt windows of one `FEEDBACK_READ`, where nested notifications arrive.
///
/// `current_processor_index`, and entering and leaving the masked section (the counter reads
/// inside it are masked; see [`crate::platform::nest`]).
pub const UNMASKED_WINDOWS_PER_READ: u64 = 3;

/// The nested notifications delivered at each unmasked window.
///
/// A read of the interrupted handle, a read of a foreign handle (when another processor has
/// one), `QUERY_CAPABILITIES` and `PERF_CHECK_COMPLETE`.
#[must_use]
pub const fn notifications_per_window(foreign: bool) -> u64 {
    if foreign { 4 } else { 3 }
}

/// What the sampler needs to deliver nested notifications for one processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NestingSetup {
    /// A handle bound to another processor, if there is one.
    pub foreign: Option<usize>,
}

/// The nested deliveries of one interrupted `FEEDBACK_READ`.
pub(super) struct Nesting {
    callbacks: Callbacks,
    handle: usize,
    counter_index: ULONG,
    foreign: Option<usize>,
    calls: RefCell<Vec<NestedCall>>,
    operations: RefCell<Vec<PlatformOp>>,
}

impl Nesting {
    /// The deliveries for a `FEEDBACK_READ` of `handle`'s counter `counter_index`.
    pub(super) fn new(
        callbacks: Callbacks,
        handle: usize,
        counter_index: ULONG,
        setup: NestingSetup,
    ) -> Rc<Self> {
        Rc::new(Self {
            callbacks,
            handle,
            counter_index,
            foreign: setup.foreign,
            calls: RefCell::new(Vec::new()),
            operations: RefCell::new(Vec::new()),
        })
    }

    /// The hook to install with [`platform::nest`].
    pub(super) fn hook(self: &Rc<Self>) -> NestingHook {
        let nesting = Rc::clone(self);
        Rc::new(move |point, masked| nesting.deliver(point, masked))
    }

    /// The calls delivered and the platform operations they made.
    pub(super) fn finish(&self) -> (Vec<NestedCall>, Vec<PlatformOp>) {
        (self.calls.take(), self.operations.take())
    }

    /// Delivers the nested notifications at one injection point.
    fn deliver(&self, point: InjectionPoint, masked: bool) {
        let template = NestedCall {
            point,
            masked,
            notification: NestedNotification::OwnRead,
            handle: self.handle,
            returned: false,
            nominal: SENTINEL,
            actual: SENTINEL,
            capabilities: None,
            raw: None,
            faulted: false,
            untouched: true,
        };
        let mut reads = vec![(NestedNotification::OwnRead, self.handle)];
        reads.extend(self.foreign.map(|foreign| (NestedNotification::ForeignRead, foreign)));
        for (notification, handle_value) in reads {
            let (sent, trace) =
                self.call(|callbacks| callbacks.read(handle(handle_value), self.counter_index));
            let (nominal, actual) = read_counts(&sent.payload);
            let (_, faulted) = analyse_read(&trace);
            self.push(
                NestedCall {
                    notification,
                    handle: handle_value,
                    returned: sent.handled(),
                    nominal,
                    actual,
                    raw: raw_read(&trace),
                    faulted,
                    untouched: sent.untouched,
                    ..template
                },
                trace,
            );
        }
        let (sent, trace) =
            self.call(|callbacks| callbacks.query_capabilities(handle(self.handle)));
        self.push(
            NestedCall {
                notification: NestedNotification::QueryCapabilities,
                returned: sent.handled(),
                capabilities: Some((
                    sent.payload.FeedbackCounterCount,
                    sent.payload.IdleStateCount,
                )),
                untouched: sent.untouched,
                ..template
            },
            trace,
        );
        let (returned, trace) = self.call(|callbacks| callbacks.perf_check_complete(handle(0)));
        self.push(
            NestedCall {
                notification: NestedNotification::PerfCheckComplete,
                handle: 0,
                returned: returned != FALSE,
                ..template
            },
            trace,
        );
    }

    fn push(&self, call: NestedCall, trace: Vec<PlatformOp>) {
        self.calls.borrow_mut().push(call);
        self.operations.borrow_mut().extend(trace);
    }

    /// Sends a PPM notification from inside the interrupted one (same thread, same processor,
    /// same engine instance), tracing its operations apart.
    fn call<R>(&self, send: impl FnOnce(&Callbacks) -> R) -> (R, Vec<PlatformOp>) {
        let interrupted = platform::swap_trace(Some(Vec::new()));
        let result = send(&self.callbacks);
        let trace = platform::swap_trace(interrupted).unwrap_or_default();
        (result, trace)
    }
}
