//! The processor table: one cache-line-aligned [`ProcessorSlot`] per processor device the PEP
//! may accept, and the encoding of the `PEPHANDLE`s it hands out.
//!
//! The table is allocated by the host at `PASSIVE_LEVEL` before registration, sized for the
//! maximum processor count of all groups; the engine never allocates. A handle is not a pointer:
//! it encodes the slot index and the slot's generation, so a stale handle (after
//! `PEP_DPM_UNREGISTER_DEVICE`) or a forged one is recognised and refused without touching
//! memory outside the table.

use core::sync::atomic::Ordering;

use crate::abi::PEPHANDLE;
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize};

/// A slot's lifecycle state (low 32 bits of [`ProcessorSlot::lifecycle`]).
pub(crate) mod state {
    /// Unused.
    pub const FREE: u32 = 0;
    /// Accepted at `PEP_DPM_PREPARE_DEVICE`, not yet registered.
    pub const PREPARED: u32 = 1;
    /// Registered: the handle is live.
    pub const REGISTERED: u32 = 2;
    /// `PEP_DPM_DEVICE_STARTED` seen: the handle is live.
    pub const STARTED: u32 = 3;
    /// A `PEP_DPM_REGISTER_DEVICE` is filling the slot in; not yet live.
    pub const REGISTERING: u32 = 4;
}

/// `bound_processor` value of a handle not yet bound to a processor.
pub(crate) const UNBOUND: u32 = u32::MAX;

/// `last_*` value that makes the next read a baseline (contributes no delta).
pub(crate) const REBASELINE: u64 = u64::MAX;
/// `last_nominal` after a read that returned zero for both counters when no baseline was due
/// (with `last_actual` at [`REBASELINE`]): the next non-zero read is a baseline, but further
/// zeros are no reading rather than a due baseline (see `counters::read`).
pub(crate) const NO_READING: u64 = u64::MAX - 1;

/// The per-processor state: 128 bytes, aligned to 128.
///
/// No two processors' state share a cache line or an adjacent-line prefetch pair (Intel's
/// spatial prefetcher pulls 128-byte pairs). Everything a read touches is in the first 64
/// bytes; the lifecycle's cold fields follow.
///
/// The counter fields are written only by the processor the handle is bound to, with
/// interrupts masked; they are atomics (relaxed loads and stores compile to plain moves) so
/// that the lifecycle code running elsewhere at `PASSIVE_LEVEL` never races in the Rust sense.
#[repr(C, align(128))]
#[derive(Debug)]
pub struct ProcessorSlot {
    /// `generation << 32 | state`.
    pub(crate) lifecycle: AtomicU64,
    /// The handle value while the slot is registered or started, else 0: validating a handle
    /// is one load and one compare. Published (release) after the counters are reset and
    /// cleared before the slot is freed.
    pub(crate) live_handle: AtomicUsize,
    /// The global index of the processor the handle is bound to, or [`UNBOUND`].
    pub(crate) bound_processor: AtomicU32,
    /// Counter resets seen (raw values that went backwards), for diagnostics.
    pub(crate) resets: AtomicU32,
    /// The raw actual (APERF) value of the last read, or [`REBASELINE`].
    pub(crate) last_actual: AtomicU64,
    /// The raw nominal (MPERF) value of the last read, or [`REBASELINE`].
    pub(crate) last_nominal: AtomicU64,
    /// Accumulated actual count reported to the OS.
    pub(crate) total_actual: AtomicU64,
    /// Accumulated nominal count reported to the OS.
    pub(crate) total_nominal: AtomicU64,
    /// The time stamp of the last read (modular sources only), or [`REBASELINE`].
    pub(crate) last_timestamp: AtomicU64,
    /// The kernel's handle for the device (`POHANDLE`), as an address.
    pub(crate) kernel_handle: AtomicUsize,
    /// Hash of the device id, to match `REGISTER`/`ABANDON` to `PREPARE`.
    pub(crate) device_id_hash: AtomicU64,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<ProcessorSlot>() == 128);
#[cfg(not(loom))]
const _: () = assert!(core::mem::align_of::<ProcessorSlot>() == 128);
#[cfg(not(loom))]
const _: () = assert!(core::mem::offset_of!(ProcessorSlot, last_timestamp) < 64);

/// The value of a free slot: [`ProcessorSlot::new`]'s body, shared by its `const` and its loom
/// variant.
macro_rules! free_slot {
    () => {
        ProcessorSlot {
            lifecycle: AtomicU64::new(0),
            live_handle: AtomicUsize::new(0),
            bound_processor: AtomicU32::new(UNBOUND),
            resets: AtomicU32::new(0),
            kernel_handle: AtomicUsize::new(0),
            device_id_hash: AtomicU64::new(0),
            last_actual: AtomicU64::new(REBASELINE),
            last_nominal: AtomicU64::new(REBASELINE),
            total_actual: AtomicU64::new(0),
            total_nominal: AtomicU64::new(0),
            last_timestamp: AtomicU64::new(REBASELINE),
        }
    };
}

impl ProcessorSlot {
    /// A free slot. (`const` except under `cfg(loom)`, whose atomics are not.)
    #[must_use]
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        free_slot!()
    }

    /// A free slot.
    #[must_use]
    #[cfg(loom)]
    pub fn new() -> Self {
        free_slot!()
    }

    /// Clears the counter state and the binding for a new registration. `PASSIVE_LEVEL`.
    pub(crate) fn reset_counters(&self) {
        self.bound_processor.store(UNBOUND, Ordering::Relaxed);
        self.resets.store(0, Ordering::Relaxed);
        self.last_actual.store(REBASELINE, Ordering::Relaxed);
        self.last_nominal.store(REBASELINE, Ordering::Relaxed);
        self.total_actual.store(0, Ordering::Relaxed);
        self.total_nominal.store(0, Ordering::Relaxed);
        self.last_timestamp.store(REBASELINE, Ordering::Relaxed);
    }

    /// Makes the next read a baseline (after resume from a system sleep state). Any IRQL.
    pub(crate) fn request_rebaseline(&self) {
        self.last_actual.store(REBASELINE, Ordering::Relaxed);
        self.last_nominal.store(REBASELINE, Ordering::Relaxed);
        self.last_timestamp.store(REBASELINE, Ordering::Relaxed);
    }

    /// Whether a registration is live in this slot (registered or started: its handle is
    /// served). Any IRQL.
    #[must_use]
    pub fn is_live(&self) -> bool {
        self.live_handle.load(Ordering::Acquire) != 0
    }

    /// The global processor index the handle is bound to, if any.
    #[must_use]
    pub fn bound_processor(&self) -> Option<u32> {
        match self.bound_processor.load(Ordering::Relaxed) {
            UNBOUND => None,
            index => Some(index),
        }
    }

    /// Counter resets seen since registration.
    #[must_use]
    pub fn resets(&self) -> u32 {
        self.resets.load(Ordering::Relaxed)
    }
}

impl Default for ProcessorSlot {
    fn default() -> Self {
        Self::new()
    }
}

/// Packs a lifecycle word.
pub(crate) fn lifecycle(generation: u32, state: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(state)
}

/// The generation of a lifecycle word.
pub(crate) fn generation_of(lifecycle: u64) -> u32 {
    u32::try_from(lifecycle >> 32).unwrap_or(0)
}

/// The state of a lifecycle word.
pub(crate) fn state_of(lifecycle: u64) -> u32 {
    u32::try_from(lifecycle & 0xFFFF_FFFF).unwrap_or(0)
}

/// The handle for slot `index` at `generation`: `generation << 32 | (index + 1)`, never NULL.
pub(crate) fn encode_handle(index: usize, generation: u32) -> PEPHANDLE {
    let low = index.wrapping_add(1) & 0xFFFF_FFFF;
    let value = (usize::try_from(generation).unwrap_or(0) << 32) | low;
    core::ptr::without_provenance_mut(value)
}

/// The slot index a handle value names (`usize::MAX`, which no table reaches, for NULL).
#[inline]
pub(crate) const fn slot_index(handle: usize) -> usize {
    (handle & 0xFFFF_FFFF).wrapping_sub(1)
}
