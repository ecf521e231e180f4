//! The caller against the engine: every sender, the per-thread host and the names table; and
//! against a broken PEP, which `Callbacks` observes without judging it.
#![allow(clippy::unwrap_used)]

use std::cell::Cell;

use ppm_caller::fixture::{self, NoCounters};
use ppm_caller::{Callbacks, ThreadHost, names, payload};
use ppm_engine::abi::{
    BOOLEAN, PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEPHANDLE, PVOID,
    ULONG,
};
use ppm_engine::config::Config;
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::x86::msr;
use ppm_engine::{CpuidResult, MsrFault, PepHost, Platform};

/// GenuineIntel under a hypervisor with APERF/MPERF at 2000 MHz; both advance at every read.
#[derive(Default)]
struct Intel {
    reads: Cell<u64>,
}

// SAFETY: each test uses its engine on one thread.
unsafe impl Sync for Intel {}

impl Platform for Intel {
    fn current_processor_index(&self) -> u32 {
        0
    }
    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        fixture::intel_vm_cpuid(leaf)
    }
    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        let step = self.reads.get() + 1;
        self.reads.set(step);
        match number {
            msr::IA32_APERF => Ok(step * 3_000),
            msr::IA32_MPERF => Ok(step * 2_000),
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
        PerformanceCounter { ticks: self.reads.get(), frequency: 10_000_000 }
    }
    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        self.reads.set(self.reads.get() + u64::from(microseconds));
    }
}

#[test]
fn every_sender_reaches_the_engine() {
    let pep = ppm_caller::boot(Intel::default(), &Config::new(), 2);
    assert!(ppm_caller::is_entered());
    let handle = ppm_caller::add_processor::<Intel>("\\_SB.CPU0");
    assert!(ppm_caller::device_started::<Intel>(handle));
    let capabilities = ppm_caller::query_capabilities::<Intel>(handle).unwrap();
    assert_eq!(capabilities.FeedbackCounterCount, pep.feedback_counter_count());
    let counters =
        ppm_caller::query_feedback_counters::<Intel>(handle, pep.feedback_counter_count());
    assert_eq!(counters.unwrap().len(), 1);
    // A Count other than FeedbackCounterCount is refused, the buffer untouched.
    assert!(ppm_caller::query_feedback_counters::<Intel>(handle, 2).is_none());
    let perf = ppm_caller::query_perf_capabilities::<Intel>(handle).unwrap();
    assert_eq!(perf.DomainMembers, 1);
    assert!(ppm_caller::query_domain_info::<Intel>(handle, perf.DomainId).is_some());
    assert!(ppm_caller::query_domain_info::<Intel>(handle, 7).is_none());
    assert_eq!(ppm_caller::read::<Intel>(handle, 0), Some((0, 0)));
    assert!(ppm_caller::read::<Intel>(handle, 0).is_some());
    assert!(ppm_caller::resume::<Intel>(handle));
    assert!(ppm_caller::live::<Intel>(handle));
    assert!(ppm_caller::unregister::<Intel>(handle));
    assert!(!ppm_caller::live::<Intel>(handle));
    assert_eq!(ppm_caller::read::<Intel>(handle, 0), None);
}

#[test]
fn the_host_serves_only_the_entered_engine_of_its_platform() {
    assert!(ThreadHost::<Intel>::instance().is_none());
    let pep = ppm_caller::boot(Intel::default(), &Config::new(), 1);
    assert!(ThreadHost::<Intel>::instance().is_some_and(|found| std::ptr::eq(found, pep)));
    assert!(ThreadHost::<NoCounters>::instance().is_none(), "another platform's callbacks");
    {
        let _left = ppm_caller::leave();
        assert!(ThreadHost::<Intel>::instance().is_none());
        let other = ppm_caller::boot(NoCounters, &Config::new(), 1);
        assert!(
            ThreadHost::<NoCounters>::instance().is_some_and(|found| std::ptr::eq(found, other))
        );
        assert!(ThreadHost::<Intel>::instance().is_none());
    }
    // `boot` installs for good: the guard restored what was entered before it.
    assert!(ThreadHost::<Intel>::instance().is_some_and(|found| std::ptr::eq(found, pep)));
    std::thread::spawn(|| assert!(ThreadHost::<Intel>::instance().is_none())).join().unwrap();
}

#[test]
fn one_name_per_notification() {
    for (table, name) in [
        (ppm_engine::notification::DPM, names::dpm as fn(u32) -> Option<&'static str>),
        (ppm_engine::notification::PPM, names::ppm),
    ] {
        for (index, row) in table.iter().enumerate() {
            let short = name(row.id).unwrap();
            assert!(row.name.ends_with(short) && !short.starts_with("PEP_"), "{}", row.name);
            assert!(table[index + 1..].iter().all(|other| other.id != row.id), "{short} twice");
        }
    }
    assert_eq!(names::ppm(PEP_NOTIFY_PPM_FEEDBACK_READ), Some("FEEDBACK_READ"));
    assert_eq!(names::dpm(0x01), Some("PREPARE_DEVICE"));
    assert_eq!(names::dpm(0x7F), None);
    for undefined in names::UNDEFINED_DPM {
        assert_eq!(names::dpm(undefined), None, "{undefined:#x}");
    }
    for undefined in names::UNDEFINED_PPM {
        assert_eq!(names::ppm(undefined), None, "{undefined:#x}");
    }
}

/// A broken DPM callback: answers 2 to everything and writes a zero into any data.
const unsafe extern "C" fn broken_dpm(_notification: ULONG, data: PVOID) -> BOOLEAN {
    if !data.is_null() {
        // SAFETY: every payload the caller sends is at least one byte, writable.
        unsafe { data.cast::<u8>().write(0) };
    }
    2
}

/// A broken PPM callback: refuses `FEEDBACK_READ` after writing `NominalCount`, answers 2 to
/// `QUERY_CAPABILITIES` without writing it, refuses the rest.
const unsafe extern "C" fn broken_ppm(
    _handle: PEPHANDLE,
    notification: ULONG,
    data: PVOID,
) -> BOOLEAN {
    match notification {
        PEP_NOTIFY_PPM_FEEDBACK_READ => {
            // `NominalCount`: the `u64` after `CounterIndex` and its padding.
            let nominal = data.cast::<u64>().wrapping_add(1);
            // SAFETY: the caller sends a live PEP_PPM_FEEDBACK_READ with FEEDBACK_READ.
            unsafe { nominal.write(7) };
            0
        }
        PEP_NOTIFY_PPM_QUERY_CAPABILITIES => 2,
        _ => 0,
    }
}

#[test]
fn callbacks_observe_a_broken_pep_without_judging_it() {
    let mut information = ppm_engine::pep_information::<ThreadHost<NoCounters>>();
    information.AcceptDeviceNotification = Some(broken_dpm);
    information.AcceptProcessorNotification = Some(broken_ppm);
    let callbacks = Callbacks::of(&information).unwrap();
    let handle = payload::handle(0x1234);
    let read = callbacks.read(handle, 0);
    assert_eq!((read.returned, read.handled(), read.untouched), (0, false, false));
    assert_eq!(payload::read_counts(&read.payload), (7, payload::SENTINEL));
    let capabilities = callbacks.query_capabilities(handle);
    assert_eq!(
        (capabilities.returned, capabilities.handled(), capabilities.untouched),
        (2, true, true)
    );
    let undefined = callbacks.dpm_undefined(names::UNDEFINED_DPM[1]);
    assert_eq!((undefined.returned, undefined.untouched), (2, false));
    assert_eq!(callbacks.prepare(None, 0xAA), (2, 0xAA));
    // The asserting layer over the same answers would fail; the engine's own do not.
    let engine = Callbacks::engine::<ThreadHost<NoCounters>>();
    let refused = engine.read(handle, 0);
    assert_eq!((refused.returned, refused.untouched), (0, true), "no engine entered: refused");
    information.AcceptProcessorNotification = None;
    assert!(Callbacks::of(&information).is_none());
}
