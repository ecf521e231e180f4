//! Size and memory facts: what the processor table and the engine cost in non-paged memory.
//!
//! The driver allocates the table at `PASSIVE_LEVEL` for the maximum processor count of all
//! groups (up to 2048 on x64 Windows) and keeps one `Pep` in static storage; its platform
//! (`KernelPlatform`) is zero-sized, like the one here.
#![cfg(not(loom))]

use core::mem::{align_of, size_of};

use ppm_caller::fixture::NoCounters;
use ppm_engine::{Pep, ProcessorSlot};

/// The most logical processors x64 Windows supports (32 groups of 64).
const MAX_PROCESSORS: usize = 2048;

/// One slot per processor, each on its own 128-byte adjacent-line prefetch pair (the hot
/// APERF/MPERF read state within its first 64-byte line, asserted in `processor.rs`).
#[test]
fn a_processor_slot_is_one_aligned_prefetch_pair() {
    assert_eq!(size_of::<ProcessorSlot>(), 128);
    assert_eq!(align_of::<ProcessorSlot>(), 128);
    let table: Vec<ProcessorSlot> = (0..4).map(|_| ProcessorSlot::new()).collect();
    for slot in &table {
        assert_eq!(core::ptr::from_ref(slot).addr() % 128, 0);
    }
}

#[test]
fn memory_for_2048_processors() {
    let table = MAX_PROCESSORS * size_of::<ProcessorSlot>();
    let pep = size_of::<Pep<NoCounters>>();
    let total = table + pep;
    eprintln!(
        "processor table for {MAX_PROCESSORS} processors: {table} bytes ({} KiB); \
         Pep: {pep} bytes; total: {total} bytes",
        table / 1024,
    );
    assert_eq!(table, 256 * 1024);
    // The engine instance stays small next to the table (patterns and the device-id log are
    // inline, fixed-size); a budget, not an exact figure, so that fields can still be added.
    assert!(pep <= 8 * 1024, "Pep is {pep} bytes");
    assert!(total <= 264 * 1024, "{total} bytes");
}
