//! Size and memory facts: what the processor table and the engine cost in non-paged memory.
//!
//! The driver allocates the table at `PASSIVE_LEVEL` for the maximum processor count of all
//! groups (up to 2048 on x64 Windows) and keeps one `Pep` in static storage; its platform
//! (`KernelPlatform`) is zero-sized, like the one here.
#![cfg(not(loom))]

use core::mem::{align_of, size_of};

use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::{CpuidResult, MsrFault, Pep, Platform, ProcessorSlot};

/// The most logical processors x64 Windows supports (32 groups of 64).
const MAX_PROCESSORS: usize = 2048;

/// A zero-sized platform, as the kernel's.
struct Zst;

impl Platform for Zst {
    fn current_processor_index(&self) -> u32 {
        0
    }
    fn cpuid(&self, _leaf: u32, _subleaf: u32) -> CpuidResult {
        CpuidResult::default()
    }
    fn read_msr(&self, _msr: u32) -> Result<u64, MsrFault> {
        Err(MsrFault)
    }
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }
    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter::default()
    }
    fn stall_microseconds(&self, _passive: &Passive, _microseconds: u32) {}
}

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
    let pep = size_of::<Pep<Zst>>();
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
