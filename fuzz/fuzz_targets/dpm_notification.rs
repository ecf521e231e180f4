//! `AcceptDeviceNotification` with arbitrary notification ids and data: device-id strings
//! well-formed or malformed (odd/short lengths, NULL or misaligned buffers, NULL or misaligned
//! strings), handles live, stale, forged or NULL, `PEP_DEVICE_REGISTER_V2` blocks or NULL, data
//! of at least the documented size with arbitrary bytes — interleaved with feedback reads,
//! counter changes and processor switches, against an engine built on arbitrary CPUID/MSR values.
//!
//! Crashes: as `ppm_notification`, plus a `REGISTER_DEVICE` whose `DeviceAccepted` and
//! `DeviceHandle` disagree, a `PREPARE`/`ABANDON` answering other than TRUE/FALSE, a device-id
//! string written, more devices registered than the table holds.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ppm_engine::abi::{
    PEP_DPM_ABANDON_DEVICE, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_NOTIFY_PPM_FEEDBACK_READ,
};
use ppm_engine::notification::Callback;
use ppm_engine_fuzz::calls::{DpmParts, dpm_call, ppm_call};
use ppm_engine_fuzz::engine::registered_handle;
use ppm_engine_fuzz::input::{Fill, HandleSpec, Handles, HwOp, NotificationSpec, always_refused};
use ppm_engine_fuzz::strings::{DeviceString, StringSpec};
use ppm_engine_fuzz::{Engine, Setup};

#[derive(Arbitrary, Debug)]
struct Input {
    setup: Setup,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Notify {
        notification: NotificationSpec,
        fill: Fill,
        string: StringSpec,
        handle: HandleSpec,
        kernel_handle: u64,
        register_block: bool,
        block_fill: Vec<u8>,
    },
    Read {
        handle: HandleSpec,
        index: u8,
        fill: Fill,
    },
    Hw(HwOp),
}

fuzz_target!(|input: Input| {
    let engine = Engine::new(&input.setup);
    let capacity = engine.pep().capacity();
    let mut handles = Handles::default();
    for op in input.ops.iter().take(512) {
        match op {
            Op::Notify {
                notification,
                fill,
                string,
                handle,
                kernel_handle,
                register_block,
                block_fill,
            } => {
                let notification = notification.dpm();
                let handle = handles.resolve(*handle);
                let parts = DpmParts {
                    string: DeviceString::from_spec(string),
                    handle,
                    kernel_handle: *kernel_handle,
                    register_block: *register_block,
                    block_fill,
                };
                let call = dpm_call(notification, fill, parts);
                // SAFETY: the data is NULL or at least the documented structure, with valid or
                // NULL embedded pointers.
                let handled = unsafe { engine.dpm(notification, call.pointer()) };
                call.check(handled, "DPM notification");
                if always_refused(Callback::Dpm, notification) {
                    assert!(!handled, "DPM notification {notification:#x} handled, table: FALSE");
                }
                match (handled, notification, call.data()) {
                    (true, PEP_DPM_REGISTER_DEVICE, Some(data)) => {
                        handles.add(registered_handle(data));
                    }
                    (true, PEP_DPM_UNREGISTER_DEVICE, _) => handles.retire(handle),
                    (true, PEP_DPM_PREPARE_DEVICE | PEP_DPM_ABANDON_DEVICE, Some(data)) => {
                        let accepted = data.bytes()[8];
                        assert!(accepted <= 1, "DeviceAccepted = {accepted}");
                    }
                    _ => {}
                }
                assert!(engine.pep().registered_count() <= capacity);
            }
            Op::Read { handle, index, fill } => {
                let handle = handles.resolve(*handle);
                let call = ppm_call(PEP_NOTIFY_PPM_FEEDBACK_READ, fill, Some(*index));
                // SAFETY: NULL or a PEP_PPM_FEEDBACK_READ-sized buffer.
                let handled =
                    unsafe { engine.ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, call.pointer()) };
                call.check(handled, "FEEDBACK_READ");
            }
            Op::Hw(op) => op.apply(engine.platform()),
        }
    }
});
