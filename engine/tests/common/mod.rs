//! The platform fixture the integration tests share. They drive the engine the way the kernel
//! does, through `ppm-caller` (the one typed PoFx caller).
#![allow(dead_code)]

use ppm_engine::CpuidResult;
use ppm_engine::x86::cpuid;

/// CPUID of an Intel processor (family 6 model 0xA5) under a hypervisor that exposes
/// APERF/MPERF (leaf 6 ECX[0]) and nothing model-specific, with a 2000 MHz base frequency
/// (leaf 16h): the engine selects `IA32_APERF`/`IA32_MPERF` and reads no other MSR than the pair.
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
