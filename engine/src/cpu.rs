//! What CPUID says about the processor that initialises the PEP.

use crate::platform::{CpuidResult, Platform};
use crate::x86::cpuid;

/// The CPUID facts the engine's decisions depend on. Read once at `PASSIVE_LEVEL`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures {
    /// Vendor is GenuineIntel.
    pub is_intel: bool,
    /// Vendor is AuthenticAMD or HygonGenuine.
    pub is_amd: bool,
    /// CPUID.1:ECX\[31\].
    pub hypervisor: bool,
    /// Display family (base + extended).
    pub family: u32,
    /// Display model (base + extended for families 6 and 15).
    pub model: u32,
    /// The highest basic leaf.
    pub max_leaf: u32,
    /// The highest extended leaf.
    pub max_extended_leaf: u32,
    /// Leaf 6 EAX (0 when absent).
    pub power_eax: u32,
    /// Leaf 6 ECX (0 when absent).
    pub power_ecx: u32,
    /// Leaf `8000_0007h` EDX (0 when absent).
    pub extended_power_edx: u32,
    /// Leaf `8000_0008h` EBX (0 when absent).
    pub extended_features_ebx: u32,
    /// Leaf 16h EAX, base frequency in MHz (0 when absent).
    pub base_mhz: u32,
    /// Leaf 0Ah EAX (0 when absent).
    pub pmu_eax: u32,
    /// Leaf 0Ah ECX (0 when absent): fixed-counter support bitmask (PMU version 5+).
    pub pmu_ecx: u32,
    /// Leaf 0Ah EDX (0 when absent).
    pub pmu_edx: u32,
}

impl CpuFeatures {
    /// Reads CPUID on the current processor. `PASSIVE_LEVEL`.
    pub fn detect<P: Platform>(platform: &P) -> Self {
        let vendor = platform.cpuid(cpuid::LEAF_VENDOR, 0);
        let max_leaf = vendor.eax;
        let id = [vendor.ebx, vendor.edx, vendor.ecx];
        let is_intel = id == cpuid::VENDOR_INTEL;
        let is_amd = id == cpuid::VENDOR_AMD || id == cpuid::VENDOR_HYGON;
        let leaf = |number: u32| {
            if number <= max_leaf { platform.cpuid(number, 0) } else { CpuidResult::default() }
        };
        let features = leaf(cpuid::LEAF_FEATURES);
        let base_family = (features.eax >> 8) & 0xF;
        let base_model = (features.eax >> 4) & 0xF;
        let extended_family = (features.eax >> 20) & 0xFF;
        let extended_model = (features.eax >> 16) & 0xF;
        let family = if base_family == 0xF {
            base_family.saturating_add(extended_family)
        } else {
            base_family
        };
        let model = if base_family == 0x6 || base_family == 0xF {
            (extended_model << 4) | base_model
        } else {
            base_model
        };
        let power = leaf(cpuid::LEAF_POWER);
        let pmu = leaf(cpuid::LEAF_PMU);
        let frequency = leaf(cpuid::LEAF_FREQUENCY);
        let max_extended_leaf = platform.cpuid(cpuid::LEAF_EXTENDED_MAX, 0).eax;
        let extended = |number: u32| {
            if max_extended_leaf >= number && max_extended_leaf <= 0x8000_00FF {
                platform.cpuid(number, 0)
            } else {
                CpuidResult::default()
            }
        };
        Self {
            is_intel,
            is_amd,
            hypervisor: features.ecx & cpuid::FEATURES_ECX_HYPERVISOR != 0,
            family,
            model,
            max_leaf,
            max_extended_leaf,
            power_eax: power.eax,
            power_ecx: power.ecx,
            extended_power_edx: extended(cpuid::LEAF_EXTENDED_POWER).edx,
            extended_features_ebx: extended(cpuid::LEAF_EXTENDED_FEATURES).ebx,
            base_mhz: frequency.eax & 0xFFFF,
            pmu_eax: pmu.eax,
            pmu_ecx: pmu.ecx,
            pmu_edx: pmu.edx,
        }
    }

    /// `IA32_APERF` / `IA32_MPERF` exist (CPUID.06H:ECX\[0\]).
    #[must_use]
    pub const fn has_aperf_mperf(&self) -> bool {
        self.power_ecx & cpuid::POWER_ECX_APERFMPERF != 0
    }

    /// The AMD read-only APERF/MPERF copies exist (CPUID `8000_0007h` EDX\[10\], AMD/Hygon only).
    #[must_use]
    pub const fn has_amd_read_only_copies(&self) -> bool {
        self.is_amd && self.extended_power_edx & cpuid::EXTENDED_POWER_EDX_EFF_FREQ_RO != 0
    }

    /// The model-specific Intel MSRs `MSR_PLATFORM_INFO` and `MSR_TURBO_RATIO_LIMIT` may be
    /// read: bare metal, GenuineIntel, family 6, model 0x1A (Nehalem) or later.
    #[must_use]
    pub const fn has_intel_platform_msrs(&self) -> bool {
        self.is_intel && !self.hypervisor && self.family == 6 && self.model >= 0x1A
    }
}
