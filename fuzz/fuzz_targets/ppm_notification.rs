//! `AcceptProcessorNotification` with arbitrary notification ids, handles (live ones from real
//! registrations, stale ones after unregister, forgeries, NULL) and data (at least the
//! documented size, arbitrary bytes, sometimes NULL or misaligned), interleaved with
//! registrations, unregistrations, counter changes, faults and processor switches, against an
//! engine built on arbitrary CPUID/MSR values.
//!
//! Crashes: any panic (an engine panic is a bugcheck in the kernel), an `AddressSanitizer` report
//! (an access outside the data), a hardware-rule violation the platform detects, a refused
//! notification that wrote its data, a handled one that wrote outside its output fields, an
//! unknown notification handled.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ppm_engine::notification::Callback;
use ppm_engine_fuzz::calls::ppm_call;
use ppm_engine_fuzz::input::{
    Fill, HandleSpec, Handles, HwOp, IdSpec, NotificationSpec, always_refused,
};
use ppm_engine_fuzz::{Engine, Setup};

#[derive(Arbitrary, Debug)]
struct Input {
    setup: Setup,
    devices: Vec<IdSpec>,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Notify { handle: HandleSpec, notification: NotificationSpec, fill: Fill, index: Option<u8> },
    Hw(HwOp),
    Register(IdSpec),
    Unregister(u8),
}

fuzz_target!(|input: Input| {
    let engine = Engine::new(&input.setup);
    let mut handles = Handles::default();
    for id in input.devices.iter().take(16) {
        handles.add(engine.add_device(id));
    }
    for op in input.ops.iter().take(512) {
        match op {
            Op::Notify { handle, notification, fill, index } => {
                let handle = handles.resolve(*handle);
                let notification = notification.ppm();
                let call = ppm_call(notification, fill, *index);
                // SAFETY: the data is NULL or at least the documented structure, with valid or
                // NULL embedded pointers; handles may be anything.
                let handled = unsafe { engine.ppm(handle, notification, call.pointer()) };
                call.check(handled, "PPM notification");
                if always_refused(Callback::Ppm, notification) {
                    assert!(!handled, "PPM notification {notification:#x} handled, table: FALSE");
                }
            }
            Op::Hw(op) => op.apply(engine.platform()),
            Op::Register(id) => handles.add(engine.add_device(id)),
            Op::Unregister(index) => {
                let handle = handles.resolve(HandleSpec::Live(*index));
                if !handle.is_null() {
                    assert!(engine.unregister(handle), "unregistering a live handle refused");
                    handles.retire(handle);
                }
            }
        }
    }
});
