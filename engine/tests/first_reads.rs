//! On x64 Windows the first read of an MSR is the one made under SEH (`src/msr_guard.rs`), so it
//! must not happen with interrupts masked: the engine's initialisation reads every MSR it uses
//! for the first time at `PASSIVE_LEVEL` with interrupts enabled, for every counter source, and
//! a counter MSR that faults there means no counters (not a fault inside a masked section).
#![cfg(not(loom))]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use ppm_engine::config::{Config, CounterSourcePreference};
use ppm_engine::counters::{CounterSource, NoCountersReason};
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::x86::msr;
use ppm_engine::{CpuidResult, MsrFault, Platform};

/// An Intel VM with APERF/MPERF that records, per MSR, whether its first read was masked.
#[derive(Debug, Default)]
struct Recording {
    masked: AtomicU32,
    first_reads: Mutex<Vec<(u32, bool)>>,
    cycles: AtomicU64,
    time: AtomicU64,
    /// An MSR that faults.
    faulting: Option<u32>,
}

impl Platform for Recording {
    fn current_processor_index(&self) -> u32 {
        0
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        ppm_caller::fixture::intel_vm_cpuid(leaf)
    }

    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        {
            let mut first_reads = self.first_reads.lock().unwrap();
            if first_reads.iter().all(|(known, _)| *known != number) {
                first_reads.push((number, self.masked.load(Ordering::Relaxed) > 0));
            }
        }
        if self.faulting == Some(number) {
            return Err(MsrFault);
        }
        match number {
            msr::IA32_APERF => Ok(self.cycles.load(Ordering::Relaxed) * 3),
            msr::IA32_MPERF => Ok(self.cycles.load(Ordering::Relaxed) * 2),
            _ => Err(MsrFault),
        }
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        self.masked.fetch_add(1, Ordering::Relaxed);
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        let result = f(&masked);
        self.masked.fetch_sub(1, Ordering::Relaxed);
        result
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.time.load(Ordering::Relaxed), frequency: 10_000_000 }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        self.time.fetch_add(u64::from(microseconds) * 10, Ordering::Relaxed);
        self.cycles.fetch_add(u64::from(microseconds) * 1_000, Ordering::Relaxed);
    }
}

fn boot(platform: Recording) -> &'static ppm_engine::Pep<Recording> {
    let mut config = Config::new();
    config.counter_source = CounterSourcePreference::AperfMperf;
    ppm_caller::boot_with(platform, &config, ppm_caller::table(1))
}

#[test]
fn every_msr_is_first_read_with_interrupts_enabled() {
    let pep = boot(Recording::default());
    assert_eq!(pep.counter_source(), CounterSource::AperfMperf);
    let first_reads = pep.platform().first_reads.lock().unwrap().clone();
    assert!(first_reads.iter().any(|(number, _)| *number == msr::IA32_APERF), "{first_reads:x?}");
    assert!(first_reads.iter().any(|(number, _)| *number == msr::IA32_MPERF));
    let masked: Vec<u32> =
        first_reads.iter().filter(|(_, masked)| *masked).map(|(number, _)| *number).collect();
    assert!(masked.is_empty(), "first read with interrupts masked: {masked:x?}");
}

#[test]
fn a_counter_msr_faulting_at_its_first_read_means_no_counters() {
    let pep = boot(Recording { faulting: Some(msr::IA32_MPERF), ..Recording::default() });
    assert_eq!(pep.counter_source(), CounterSource::None);
    assert_eq!(pep.no_counters_reason(), Some(NoCountersReason::ReadFaulted));
    let first_reads = pep.platform().first_reads.lock().unwrap().clone();
    assert!(first_reads.iter().all(|(_, masked)| !masked), "{first_reads:x?}");
}
