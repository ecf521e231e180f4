//! Processor perf capabilities (`PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`): where they come
//! from and the ordering they always satisfy.
//!
//! Sources, first usable wins: configuration; Intel HWP capabilities (only when CPUID.06H:EAX\[7\]
//! announces HWP *and* `IA32_PM_ENABLE` says it is on — the SDM forbids other HWP MSR accesses
//! before that); AMD `CPPC_CAP1` (CPUID `8000_0008h` EBX\[27\]); Intel `MSR_PLATFORM_INFO` ratios on
//! bare metal; else a flat set derived from the nominal rate. Every result is made ordered
//! (Lowest <= LowestNonlinear <= Nominal <= Highest, Lowest >= 1) before it is served.
//! Detection runs once, at `PASSIVE_LEVEL`, on the processor that initialises the PEP; all
//! processors are served the same values (one unit scale for all processors).

use crate::cpu::CpuFeatures;
use crate::platform::Platform;
use crate::x86::{bits, cpuid, msr};

/// The four perf levels PoFx asks for, in one unit scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfCapabilities {
    /// Highest performance (turbo).
    pub highest: u32,
    /// Nominal (guaranteed, non-turbo) performance.
    pub nominal: u32,
    /// Lowest performance with nonlinear power savings (most efficient).
    pub lowest_nonlinear: u32,
    /// Lowest performance.
    pub lowest: u32,
}

impl PerfCapabilities {
    /// Whether Lowest (>= 1) <= LowestNonlinear <= Nominal <= Highest.
    #[must_use]
    pub const fn is_ordered(&self) -> bool {
        self.lowest >= 1
            && self.lowest <= self.lowest_nonlinear
            && self.lowest_nonlinear <= self.nominal
            && self.nominal <= self.highest
    }

    /// Orders raw hardware values: `None` when there is no usable nominal or highest level;
    /// otherwise highest is raised to nominal, lowest clamped to [1, nominal] and lowest
    /// nonlinear to [lowest, nominal].
    #[must_use]
    pub fn ordered_from_raw(
        highest: u32,
        nominal: u32,
        lowest_nonlinear: u32,
        lowest: u32,
    ) -> Option<Self> {
        if nominal == 0 && highest == 0 {
            return None;
        }
        let nominal = if nominal == 0 { highest } else { nominal };
        let highest = highest.max(nominal);
        let lowest = if lowest == 0 { lowest_nonlinear.max(1) } else { lowest }.clamp(1, nominal);
        let lowest_nonlinear = lowest_nonlinear.clamp(lowest, nominal);
        Some(Self { highest, nominal, lowest_nonlinear, lowest })
    }

    /// All four levels equal to `level` (at least 1).
    #[must_use]
    pub fn flat(level: u32) -> Self {
        let level = level.max(1);
        Self { highest: level, nominal: level, lowest_nonlinear: level, lowest: level }
    }
}

/// Where the served perf capabilities came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfSource {
    /// The configuration's values.
    Configuration,
    /// `IA32_HWP_CAPABILITIES`.
    IntelHwp,
    /// AMD `CPPC_CAP1`.
    AmdCppc,
    /// `MSR_PLATFORM_INFO` / `MSR_TURBO_RATIO_LIMIT` ratios.
    IntelPlatformInfo,
    /// Nothing detected: flat, at the nominal rate in MHz (or 1).
    Flat,
}

/// Detects perf capabilities. `PASSIVE_LEVEL`, on the initialising processor.
pub(crate) fn detect<P: Platform>(
    platform: &P,
    cpu: &CpuFeatures,
    configured: Option<PerfCapabilities>,
    nominal_mhz: u32,
) -> (PerfCapabilities, PerfSource) {
    if let Some(configured) = configured.filter(PerfCapabilities::is_ordered) {
        return (configured, PerfSource::Configuration);
    }
    if let Some(caps) = intel_hwp(platform, cpu) {
        return (caps, PerfSource::IntelHwp);
    }
    if let Some(caps) = amd_cppc(platform, cpu) {
        return (caps, PerfSource::AmdCppc);
    }
    if let Some(caps) = intel_platform_info(platform, cpu) {
        return (caps, PerfSource::IntelPlatformInfo);
    }
    (PerfCapabilities::flat(nominal_mhz), PerfSource::Flat)
}

fn byte(value: u64, low: u32) -> u32 {
    u32::try_from(bits(value, low, low.saturating_add(7))).unwrap_or(0)
}

fn intel_hwp<P: Platform>(platform: &P, cpu: &CpuFeatures) -> Option<PerfCapabilities> {
    if !cpu.is_intel || cpu.power_eax & cpuid::POWER_EAX_HWP == 0 {
        return None;
    }
    let enabled = platform.read_msr(msr::IA32_PM_ENABLE).ok()?;
    if enabled & 1 == 0 {
        return None;
    }
    let caps = platform.read_msr(msr::IA32_HWP_CAPABILITIES).ok()?;
    PerfCapabilities::ordered_from_raw(byte(caps, 0), byte(caps, 8), byte(caps, 16), byte(caps, 24))
}

fn amd_cppc<P: Platform>(platform: &P, cpu: &CpuFeatures) -> Option<PerfCapabilities> {
    if !cpu.is_amd || cpu.extended_features_ebx & cpuid::EXTENDED_FEATURES_EBX_CPPC == 0 {
        return None;
    }
    let caps = platform.read_msr(msr::AMD_CPPC_CAP1).ok()?;
    PerfCapabilities::ordered_from_raw(byte(caps, 24), byte(caps, 16), byte(caps, 8), byte(caps, 0))
}

fn intel_platform_info<P: Platform>(platform: &P, cpu: &CpuFeatures) -> Option<PerfCapabilities> {
    if !cpu.has_intel_platform_msrs() {
        return None;
    }
    let info = platform.read_msr(msr::MSR_PLATFORM_INFO).ok()?;
    let nominal = byte(info, 8);
    let highest = if cpu.power_eax & cpuid::POWER_EAX_TURBO == 0 {
        nominal
    } else {
        platform.read_msr(msr::MSR_TURBO_RATIO_LIMIT).map_or(nominal, |limit| byte(limit, 0))
    };
    PerfCapabilities::ordered_from_raw(highest, nominal, byte(info, 40), byte(info, 48))
}
