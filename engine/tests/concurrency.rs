//! Stress test of the real engine under real threads: `READERS` threads stand for processors,
//! each reading its own processor's handle through the C callback as fast as it can (and
//! poking at the other processors' handles, forged and NULL ones), while another thread keeps
//! preparing, registering, reading and unregistering devices in the spare slots.
//!
//! Checked: a processor's own reads are never refused and report exactly the hardware deltas
//! it produced (so never decrease); reads of another processor's bound handle, forged and NULL
//! handles are refused without touching the buffer; the churn never disturbs a live slot; each
//! new registration starts at 0/0; unregistered handles are refused; the table never holds more
//! than its capacity.
//!
//! Not exercised here on purpose: a `FEEDBACK_READ` with a handle racing its own unregister
//! (the churn handles are read only by their own thread). That race is an engine bug pinned by
//! the model-checking tests in `tests/loom.rs`; a timing-dependent test would only be flaky.
#![cfg(not(loom))]

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ppm_engine::abi::PEPHANDLE;
use ppm_engine::config::Config;
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::x86::msr;
use ppm_engine::{CpuidResult, MsrFault, Pep, Platform};

const READERS: u32 = 4;
const READS: u64 = 250_000;
const CHURN_CYCLES: u32 = 5_000;
/// The churning thread's processor.
const CHURNER: u32 = READERS;

static PEP: OnceLock<&'static Pep<Threaded>> = OnceLock::new();

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(0) };
}

/// Runs the calling thread as processor `index`, with the engine entered.
fn on_processor(index: u32) {
    CURRENT.with(|current| current.set(index));
    ppm_caller::install(pep());
}

/// Processors whose APERF/MPERF the test advances; the current processor is per thread.
struct Threaded {
    counters: Vec<(AtomicU64, AtomicU64)>,
    time: AtomicU64,
}

impl Threaded {
    fn counters(&self, processor: u32) -> &(AtomicU64, AtomicU64) {
        &self.counters[usize::try_from(processor).unwrap()]
    }

    fn advance(&self, processor: u32, actual: u64, nominal: u64) {
        let (raw_actual, raw_nominal) = self.counters(processor);
        raw_actual.fetch_add(actual, Ordering::Relaxed);
        raw_nominal.fetch_add(nominal, Ordering::Relaxed);
    }
}

impl Platform for Threaded {
    fn current_processor_index(&self) -> u32 {
        CURRENT.with(Cell::get)
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        ppm_caller::fixture::intel_vm_cpuid(leaf)
    }

    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        let (actual, nominal) = self.counters(self.current_processor_index());
        match number {
            msr::IA32_APERF => Ok(actual.load(Ordering::Relaxed)),
            msr::IA32_MPERF => Ok(nominal.load(Ordering::Relaxed)),
            _ => Err(MsrFault),
        }
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.time.load(Ordering::Relaxed), frequency: 10_000_000 }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        let us = u64::from(microseconds);
        self.time.fetch_add(us * 10, Ordering::Relaxed);
        self.advance(self.current_processor_index(), us * 3_000, us * 2_000);
    }
}

fn pep() -> &'static Pep<Threaded> {
    PEP.get_or_init(|| {
        let platform = Threaded {
            counters: (0..=READERS).map(|_| (AtomicU64::new(1), AtomicU64::new(1))).collect(),
            time: AtomicU64::new(0),
        };
        ppm_caller::boot(platform, &Config::new(), usize::try_from(READERS + 2).unwrap())
    })
}

const fn handle(address: usize) -> PEPHANDLE {
    std::ptr::without_provenance_mut(address)
}

/// A read-only query any processor may make with any handle.
fn query_perf(handle: PEPHANDLE) -> bool {
    ppm_caller::query_perf_capabilities::<Threaded>(handle).is_some()
}

/// One processor: its own handle, read `READS` times with known hardware deltas.
fn reader(processor: u32, own: usize, others: &[usize], churned: &AtomicUsize) {
    on_processor(processor);
    let platform = pep().platform();
    let mut expected = (0u64, 0u64);
    for round in 0..READS {
        let (actual, nominal) = (round % 7 * 300 + 1, round % 5 * 200 + 1);
        platform.advance(processor, actual, nominal);
        expected = (expected.0 + nominal, expected.1 + actual);
        let counts = ppm_caller::read::<Threaded>(handle(own), 0);
        assert_eq!(counts, Some(expected), "processor {processor}, read {round}");
        match round % 8 {
            0 => {
                let other = others[usize::try_from(round).unwrap() / 8 % others.len()];
                assert_eq!(
                    ppm_caller::read::<Threaded>(handle(other), 0),
                    None,
                    "another's handle"
                );
            }
            1 => {
                let forged = own ^ 1 << 40;
                assert_eq!(ppm_caller::read::<Threaded>(handle(forged), 0), None, "forged handle");
            }
            2 => assert_eq!(ppm_caller::read::<Threaded>(std::ptr::null_mut(), 0), None),
            3 => {
                // Any answer will do (the handle may be going away); it must not crash.
                let _ = query_perf(handle(churned.load(Ordering::Relaxed)));
            }
            _ => {}
        }
    }
}

/// Registers, reads and unregisters devices in the spare slots until told to stop.
fn churner(stop: &AtomicBool, churned: &AtomicUsize) -> u32 {
    on_processor(CHURNER);
    let platform = pep().platform();
    let mut cycles = 0;
    while cycles < CHURN_CYCLES || !stop.load(Ordering::Relaxed) {
        let id = format!("\\_SB.C{:03X}", 0x100 + cycles % 3);
        let new = ppm_caller::add_processor::<Threaded>(&id);
        churned.store(new.addr(), Ordering::Relaxed);
        assert_eq!(ppm_caller::read::<Threaded>(new, 0), Some((0, 0)), "a new registration");
        platform.advance(CHURNER, 30, 20);
        assert_eq!(ppm_caller::read::<Threaded>(new, 0), Some((20, 30)));
        let registered = pep().registered_count();
        assert!((usize::try_from(READERS).unwrap() + 1..=pep().capacity()).contains(&registered));
        assert!(ppm_caller::unregister::<Threaded>(new));
        assert_eq!(ppm_caller::read::<Threaded>(new, 0), None, "an unregistered handle");
        assert!(!ppm_caller::unregister::<Threaded>(new), "unregistered twice");
        cycles += 1;
    }
    cycles
}

#[test]
fn processors_read_while_devices_come_and_go() {
    let pep = pep();
    ppm_caller::install(pep);
    let own: Vec<usize> = (0..READERS)
        .map(|processor| {
            let handle = ppm_caller::add_processor::<Threaded>(&format!("\\_SB.CPU{processor}"));
            // Bind each handle to its processor before the race starts.
            on_processor(processor);
            assert_eq!(ppm_caller::read::<Threaded>(handle, 0), Some((0, 0)));
            handle.addr()
        })
        .collect();
    let stop = AtomicBool::new(false);
    let churned = AtomicUsize::new(0);
    let cycles = std::thread::scope(|scope| {
        let churn = scope.spawn(|| churner(&stop, &churned));
        let readers: Vec<_> = (0..READERS)
            .map(|processor| {
                let own = &own;
                let churned = &churned;
                scope.spawn(move || {
                    let index = usize::try_from(processor).unwrap();
                    let others: Vec<usize> = own
                        .iter()
                        .enumerate()
                        .filter(|&(other, _)| other != index)
                        .map(|(_, &handle)| handle)
                        .collect();
                    reader(processor, own[index], &others, churned);
                })
            })
            .collect();
        for reader in readers {
            reader.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap()
    });
    assert!(cycles >= CHURN_CYCLES);
    eprintln!("{cycles} churn cycles");
    assert_eq!(pep.registered_count(), usize::try_from(READERS).unwrap());
    for (processor, &own) in (0..READERS).zip(&own) {
        on_processor(processor);
        assert!(ppm_caller::read::<Threaded>(handle(own), 0).is_some());
    }
}
