//! The caller against the engine: every sender, the per-thread host and the names table.
#![allow(clippy::unwrap_used)]

use std::cell::Cell;

use ppm_caller::{ThreadHost, names};
use ppm_engine::abi::PEP_NOTIFY_PPM_FEEDBACK_READ;
use ppm_engine::config::Config;
use ppm_engine::platform::PerformanceCounter;
use ppm_engine::x86::{cpuid, msr};
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
        match leaf {
            cpuid::LEAF_VENDOR => CpuidResult {
                eax: cpuid::LEAF_FREQUENCY,
                ebx: cpuid::VENDOR_INTEL[0],
                edx: cpuid::VENDOR_INTEL[1],
                ecx: cpuid::VENDOR_INTEL[2],
            },
            cpuid::LEAF_FEATURES => CpuidResult {
                eax: 0x000A_0655,
                ecx: cpuid::FEATURES_ECX_HYPERVISOR,
                ..CpuidResult::default()
            },
            cpuid::LEAF_POWER => {
                CpuidResult { ecx: cpuid::POWER_ECX_APERFMPERF, ..CpuidResult::default() }
            }
            cpuid::LEAF_FREQUENCY => CpuidResult { eax: 2_000, ..CpuidResult::default() },
            _ => CpuidResult::default(),
        }
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
    fn with_interrupts_masked<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
    fn performance_counter(&self) -> PerformanceCounter {
        PerformanceCounter { ticks: self.reads.get(), frequency: 10_000_000 }
    }
    fn stall_microseconds(&self, microseconds: u32) {
        self.reads.set(self.reads.get() + u64::from(microseconds));
    }
}

/// A second platform type: its callbacks must not serve an `Intel` engine.
struct Other;

impl Platform for Other {
    fn current_processor_index(&self) -> u32 {
        0
    }
    fn cpuid(&self, _leaf: u32, _subleaf: u32) -> CpuidResult {
        CpuidResult::default()
    }
    fn read_msr(&self, _msr: u32) -> Result<u64, MsrFault> {
        Err(MsrFault)
    }
    fn with_interrupts_masked<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
    fn performance_counter(&self) -> PerformanceCounter {
        PerformanceCounter::default()
    }
    fn stall_microseconds(&self, _microseconds: u32) {}
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
    assert!(ThreadHost::<Other>::instance().is_none(), "another platform's callbacks");
    {
        let _left = ppm_caller::leave();
        assert!(ThreadHost::<Intel>::instance().is_none());
        let other = ppm_caller::boot(Other, &Config::new(), 1);
        assert!(ThreadHost::<Other>::instance().is_some_and(|found| std::ptr::eq(found, other)));
        assert!(ThreadHost::<Intel>::instance().is_none());
    }
    // `boot` installs for good: the guard restored what was entered before it.
    assert!(ThreadHost::<Intel>::instance().is_some_and(|found| std::ptr::eq(found, pep)));
    std::thread::spawn(|| assert!(ThreadHost::<Intel>::instance().is_none())).join().unwrap();
}

#[test]
fn one_name_per_notification_and_the_read_first() {
    for table in [&names::DPM[..], &names::PPM[..]] {
        for (index, (id, name)) in table.iter().enumerate() {
            assert!(table[index + 1..].iter().all(|(other, _)| other != id), "{name} twice");
        }
    }
    assert_eq!(names::PPM[0], (PEP_NOTIFY_PPM_FEEDBACK_READ, "FEEDBACK_READ"));
    assert_eq!(names::ppm(PEP_NOTIFY_PPM_FEEDBACK_READ), Some("FEEDBACK_READ"));
    assert_eq!(names::dpm(0x7F), None);
}
