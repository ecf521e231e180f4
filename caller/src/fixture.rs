//! Platform fixtures the engine's and the caller's tests share.

use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::x86::cpuid;
use ppm_engine::{CpuidResult, MsrFault, Platform};

/// CPUID of an Intel VM with APERF/MPERF and a 2000 MHz base frequency.
///
/// Family 6 model 0xA5 under a hypervisor that exposes APERF/MPERF (leaf 6 ECX\[0\]) and
/// nothing model-specific, with the base frequency in leaf 16h: the engine selects `IA32_APERF`/`IA32_MPERF` and reads no other MSR than the pair.
#[must_use]
pub fn intel_vm_cpuid(leaf: u32) -> CpuidResult {
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

/// A zero-sized platform (as the kernel's) whose CPUID announces nothing and whose MSRs all
/// fault: the engine reports no counters, and only the device lifecycle and the queries run.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCounters;

impl Platform for NoCounters {
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
        // SAFETY: a host thread takes no interrupt this platform models while it runs `f`, and
        // `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter::default()
    }

    fn stall_microseconds(&self, _passive: &Passive, _microseconds: u32) {}
}
