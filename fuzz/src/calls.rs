//! Notification data in exact-size memory, with the bytes the engine may write, and the check
//! that it wrote nothing else.
//!
//! Every buffer is at least the documented structure size for its notification (the engine
//! trusts PoFx for the size) and otherwise filled by the fuzzer. Embedded pointers point at
//! valid fuzzer-filled memory or are NULL. After the call: a refused notification (FALSE) left
//! every byte as it was; a handled one changed only its documented output fields.

use std::ffi::c_void;
use std::ops::Range;

use ppm_engine::abi::{
    PEP_DPM_ABANDON_DEVICE, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_DPM_WORK,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEPHANDLE,
};
use ppm_engine::notification::{Callback, find};

use crate::input::Fill;
use crate::region::Region;
use crate::strings::DeviceString;

/// The most feedback-counter descriptors a `QUERY_FEEDBACK_COUNTERS` buffer is sized for.
pub const MAX_DESCRIPTORS: u32 = 4096;

/// One notification's data and everything it points to.
#[derive(Debug, Default)]
pub struct Call {
    data: Option<Region>,
    /// The bytes of `data` the engine may write when it handles the call.
    output: Range<usize>,
    /// Embedded memory the engine may fill when it handles the call.
    writable: Vec<Region>,
    /// Embedded memory the engine must never write.
    readonly: Vec<Region>,
    string: Option<DeviceString>,
    before: Vec<Vec<u8>>,
    string_before: (Vec<u8>, Vec<u8>),
}

impl Call {
    fn new(data: Option<Region>, output: Range<usize>) -> Self {
        Self { data, output, ..Self::default() }
    }

    /// The data pointer to pass (NULL for none).
    #[must_use]
    pub fn pointer(&self) -> *mut c_void {
        self.data.as_ref().map_or(std::ptr::null_mut(), |region| region.pointer().cast())
    }

    /// The data buffer, if any.
    #[must_use]
    pub const fn data(&self) -> Option<&Region> {
        self.data.as_ref()
    }

    /// Snapshots every byte, before the call.
    fn seal(mut self) -> Self {
        self.before = std::iter::once(&self.data)
            .flatten()
            .chain(&self.writable)
            .chain(&self.readonly)
            .map(|region| region.bytes().to_vec())
            .collect();
        self.string_before = self.string.as_ref().map(DeviceString::snapshot).unwrap_or_default();
        self
    }

    /// Checks what the call wrote, given whether it was handled.
    ///
    /// # Panics
    /// When a refused call wrote anything, or a handled one wrote outside its outputs.
    pub fn check(&self, handled: bool, what: &str) {
        let mut before = self.before.iter();
        if let Some(data) = &self.data {
            let output = if handled { self.output.clone() } else { 0..0 };
            data.assert_unchanged_outside(before.next().map_or(&[], Vec::as_slice), output, what);
        }
        for region in &self.writable {
            let output = if handled { 0..usize::MAX } else { 0..0 };
            let then = before.next().map_or(&[][..], Vec::as_slice);
            region.assert_unchanged_outside(then, output, what);
        }
        for region in &self.readonly {
            let then = before.next().map_or(&[][..], Vec::as_slice);
            region.assert_unchanged_outside(then, 0..0, what);
        }
        if let Some(string) = &self.string {
            string.assert_unchanged(&self.string_before);
        }
    }
}

fn buffer(fill: &Fill, size: usize) -> Option<Region> {
    (!fill.is_null()).then(|| Region::new(fill.len(size), fill.offset(), &fill.bytes, fill.pad))
}

/// The size of `callback`'s notification `id`'s structure in the engine's table (0 when it
/// names none) and the bytes the engine may write into it when it handles the call.
fn layout(callback: Callback, id: u32) -> (usize, Range<usize>) {
    find(callback, id).map_or((0, 0..0), |row| {
        (row.payload.map_or(0, |payload| payload.size), row.writes.clone())
    })
}

/// The data of PPM `notification`.
///
/// The documented size (at least; any size for an id with no structure), fuzzer bytes, `index`
/// (if any) as `CounterIndex` of a `FEEDBACK_READ` (modulo 4, so valid indexes come up often).
#[must_use]
pub fn ppm_call(notification: u32, fill: &Fill, index: Option<u8>) -> Call {
    match notification {
        PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS => return feedback_counters_call(fill),
        PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES => return discrete_perf_states_call(fill),
        _ => {}
    }
    let (size, output) = layout(Callback::Ppm, notification);
    let mut data = buffer(fill, size);
    if let (Some(data), Some(index), PEP_NOTIFY_PPM_FEEDBACK_READ) =
        (data.as_mut(), index, notification)
    {
        data.put(0, &u32::from(index % 4).to_le_bytes());
    }
    Call::new(data, output).seal()
}

/// `QUERY_FEEDBACK_COUNTERS`: the buffer holds `Count` descriptors (Count from the fuzzer,
/// modulo [`MAX_DESCRIPTORS`] + 1 so the documented size stays allocatable).
fn feedback_counters_call(fill: &Fill) -> Call {
    let Some(mut data) = buffer(fill, 4) else { return Call::default().seal() };
    let count = data.u32_at(0).unwrap_or(0) % (MAX_DESCRIPTORS + 1);
    let descriptors = usize::try_from(count).unwrap_or(0) * 8;
    let len = data.len().max(4 + descriptors);
    let bytes = data.bytes().to_vec();
    data = Region::new(len, fill.offset(), &bytes, fill.pad);
    data.put(0, &count.to_le_bytes());
    Call::new(Some(data), 4..4 + descriptors).seal()
}

/// `QUERY_DISCRETE_PERF_STATES`: `States` points at `Count` 24-byte states (Count modulo 17).
fn discrete_perf_states_call(fill: &Fill) -> Call {
    let Some(mut data) = buffer(fill, 16) else { return Call::default().seal() };
    let count = data.u32_at(0).unwrap_or(0) % 17;
    data.put(0, &count.to_le_bytes());
    let states = usize::try_from(count).unwrap_or(0) * 24;
    let states = Region::new(states, 0, &fill.bytes, fill.pad);
    let address = if states.is_empty() { 0 } else { states.pointer().addr() };
    data.put(8, &address.to_le_bytes());
    let (_, output) = layout(Callback::Ppm, PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES);
    let mut call = Call::new(Some(data), output);
    call.writable.push(states);
    call.seal()
}

/// The embedded inputs of a DPM notification.
#[derive(Debug)]
pub struct DpmParts<'a> {
    /// The device id of `PREPARE`/`ABANDON`/`REGISTER`.
    pub string: DeviceString,
    /// The `DeviceHandle` of handle-first structures.
    pub handle: PEPHANDLE,
    /// `KernelHandle` of `REGISTER`.
    pub kernel_handle: u64,
    /// Whether `REGISTER` gets a `PEP_DEVICE_REGISTER_V2` (else NULL).
    pub register_block: bool,
    /// The fill of that block.
    pub block_fill: &'a [u8],
}

/// The data of DPM `notification`.
///
/// The structure's size and writable bytes come from the engine's table; a documented id with
/// no structure in it gets the `DeviceHandle` every structure of a registered device starts
/// with.
#[must_use]
pub fn dpm_call(notification: u32, fill: &Fill, parts: DpmParts<'_>) -> Call {
    let string_address = parts.string.pointer().addr().to_le_bytes();
    let (size, output) = layout(Callback::Dpm, notification);
    match notification {
        PEP_DPM_PREPARE_DEVICE | PEP_DPM_ABANDON_DEVICE => {
            let mut data = buffer(fill, size);
            if let Some(data) = data.as_mut() {
                data.put(0, &string_address);
            }
            let mut call = Call::new(data, output);
            call.string = Some(parts.string);
            call.seal()
        }
        PEP_DPM_REGISTER_DEVICE => {
            let mut data = buffer(fill, size);
            let mut call = Call::default();
            if let Some(data) = data.as_mut() {
                data.put(0, &string_address);
                data.put(8, &parts.kernel_handle.to_le_bytes());
                let mut block_address = 0usize;
                if parts.register_block {
                    // Flags, ComponentCount = 0, Components[0] = NULL: no embedded pointer.
                    let mut block = Region::new(24, 0, parts.block_fill, 0);
                    block.put(8, &0u32.to_le_bytes());
                    block.put(16, &0usize.to_le_bytes());
                    block_address = block.pointer().addr();
                    call.readonly.push(block);
                }
                data.put(16, &block_address.to_le_bytes());
            }
            call.data = data;
            call.output = output;
            call.string = Some(parts.string);
            call.seal()
        }
        // `WorkInformation` (+0) is the OS's pointer, not a handle.
        PEP_DPM_WORK => Call::new(buffer(fill, size), output).seal(),
        _ if find(Callback::Dpm, notification).is_some() => {
            let mut call = handle_first(fill, size.max(size_of::<PEPHANDLE>()), parts.handle);
            call.output = output;
            call.seal()
        }
        _ => Call::new(buffer(fill, 0), 0..0).seal(),
    }
}

/// A structure whose first field is a `PEPHANDLE` (`UNREGISTER`, `DEVICE_STARTED`, most DPM
/// notifications about a registered device).
fn handle_first(fill: &Fill, size: usize, handle: PEPHANDLE) -> Call {
    let mut data = buffer(fill, size);
    if let Some(data) = data.as_mut() {
        data.put(0, &handle.addr().to_le_bytes());
    }
    Call::new(data, 0..0)
}
