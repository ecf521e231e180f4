//! The simulated processor's identity: `CPUID` answers and MSR contents (x86-64), the ID and Activity Monitors registers (ARM64, see [`sysreg`]).
//!
//! Per CPU flavour ([`CpuKind`]): what `CPUID` answers and which MSRs exist; and the rule that
//! says which MSRs `CPUID` announced (so that a check can flag a read the PEP should not have
//! made).
//!
//! Values follow the Intel SDM (Vol. 2A `CPUID`, Vol. 4 MSRs) and AMD's PPRs; only the leaves
//! and bits a processor PEP can care about are filled in, the rest read as zero.

use ppm_engine::platform::{CpuidResult, MsrFault};

use crate::scenario::{CounterSourceKind, CpuKind, HardwarePerf, INTEL_BUS_MHZ, Scenario};

/// The raw values of a processor's APERF and MPERF.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterPair {
    /// `IA32_APERF`.
    pub aperf: u64,
    /// `IA32_MPERF`.
    pub mperf: u64,
}

/// MSR numbers the model implements: the engine's (one definition,
/// [`ppm_engine::x86::msr`]) and the PMU registers only the model needs.
pub mod msr {
    pub use ppm_engine::x86::msr::*;

    /// `IA32_PMC0`: the first general-purpose performance counter (`IA32_PMC0..7` follow).
    pub const IA32_PMC0: u32 = 0xC1;
    /// `IA32_PERFEVTSEL0`: the first event select (`IA32_PERFEVTSEL0..7` follow).
    pub const IA32_PERFEVTSEL0: u32 = 0x186;
    /// `IA32_PERF_GLOBAL_STATUS` (read-only).
    pub const IA32_PERF_GLOBAL_STATUS: u32 = 0x38E;

    /// Whether `msr` is the actual-count half of a counter pair (read first).
    #[must_use]
    pub const fn is_actual_count(msr: u32) -> bool {
        matches!(
            msr,
            IA32_APERF | AMD_APERF_READ_ONLY | IA32_FIXED_CTR1 | super::sysreg::AMEVCNTR00
        )
    }
}

/// The architectural PMU a `fixed-pmc` CPU announces in `CPUID.0AH`.
pub mod pmu {
    /// Architectural performance monitoring version (`EAX[7:0]`).
    pub const VERSION: u32 = 4;
    /// General-purpose counters per logical processor (`EAX[15:8]`).
    pub const GENERAL_COUNTERS: u32 = 8;
    /// Bit width of the general-purpose counters (`EAX[23:16]`).
    pub const GENERAL_WIDTH: u32 = 48;
    /// Fixed-function counters (`EDX[4:0]`).
    pub const FIXED_COUNTERS: u32 = 3;
    /// The default width of the fixed counters (`EDX[12:5]`).
    pub const DEFAULT_FIXED_WIDTH: u32 = crate::scenario::DEFAULT_PMC_WIDTH;
}

/// Whether `number` is an architectural PMU register (general-purpose counters and event
/// selects, fixed counters, global control and status): registers no software may touch
/// without owning the PMU.
#[must_use]
pub const fn is_pmu_msr(number: u32) -> bool {
    let general = pmu::GENERAL_COUNTERS;
    matches!(number, msr::IA32_FIXED_CTR0..=msr::IA32_FIXED_CTR2)
        || matches!(number, msr::IA32_FIXED_CTR_CTRL..=0x390)
        || (number >= msr::IA32_PMC0 && number < msr::IA32_PMC0 + general)
        || (number >= msr::IA32_PERFEVTSEL0 && number < msr::IA32_PERFEVTSEL0 + general)
        || (number >= 0x4C1 && number < 0x4C1 + general)
}

const VENDOR_INTEL: [u32; 3] = [0x756E_6547, 0x4965_6E69, 0x6C65_746E];
const VENDOR_AMD: [u32; 3] = [0x6874_7541, 0x6974_6E65, 0x444D_4163];
/// "Microsoft Hv" in EBX, ECX, EDX of leaf `4000_0000h`.
const HYPERVISOR_MICROSOFT: [u32; 3] = [0x7263_694D, 0x666F_736F, 0x7648_2074];

/// `CPUID.1:EDX[5]`: RDMSR/WRMSR supported.
const FEATURES_EDX_MSR: u32 = 1 << 5;
/// `CPUID.1:ECX[31]`: hypervisor present.
const FEATURES_ECX_HYPERVISOR: u32 = 1 << 31;
/// `CPUID.06H:EAX[1]` turbo, `[2]` ARAT, `[7]` HWP, `[8]` HWP notification, `[9]` activity window,
/// `[10]` EPP.
const POWER_EAX_TURBO: u32 = 1 << 1;
const POWER_EAX_ARAT: u32 = 1 << 2;
const POWER_EAX_HWP: u32 = 1 << 7;
const POWER_EAX_HWP_EXTRAS: u32 = (1 << 8) | (1 << 9) | (1 << 10);
/// `CPUID.06H:ECX[0]`: APERF/MPERF.
const POWER_ECX_APERFMPERF: u32 = 1;
/// CPUID `8000_0007h` `EDX[8]` invariant TSC, `[9]` core performance boost, `[10]` EffFreqRO.
const EXTENDED_POWER_EDX_INVARIANT_TSC: u32 = 1 << 8;
const EXTENDED_POWER_EDX_CPB: u32 = 1 << 9;
const EXTENDED_POWER_EDX_EFF_FREQ_RO: u32 = 1 << 10;
/// CPUID `8000_0008h` `EBX[27]`: MSR-based CPPC.
const EXTENDED_FEATURES_EBX_CPPC: u32 = 1 << 27;

/// ARM64 system registers, as the emulator's trace names them.
///
/// Their encodings (`op0`, `op1`, `CRn`, `CRm`, `op2` as in `S3_3_C13_C4_0`) above
/// `0x0A64_0000`, clear of any MSR number, so that the checks of counter reads (back to back,
/// masked, announced) cover both architectures.
pub mod sysreg {
    use ppm_engine::arm64::SystemRegister;

    /// The trace's number of the register `op0`, `op1`, `CRn`, `CRm`, `op2`.
    #[must_use]
    pub const fn encode(op0: u32, op1: u32, crn: u32, crm: u32, op2: u32) -> u32 {
        0x0A64_0000 | (op0 << 14) | (op1 << 11) | (crn << 7) | (crm << 3) | op2
    }

    /// `ID_AA64PFR0_EL1`.
    pub const ID_AA64PFR0_EL1: u32 = encode(3, 0, 0, 4, 0);
    /// `AMCGCR_EL0`.
    pub const AMCGCR_EL0: u32 = encode(3, 3, 13, 2, 2);
    /// `AMCNTENSET0_EL0`.
    pub const AMCNTENSET0_EL0: u32 = encode(3, 3, 13, 2, 5);
    /// `AMEVCNTR00_EL0`: processor cycles.
    pub const AMEVCNTR00: u32 = encode(3, 3, 13, 4, 0);
    /// `AMEVCNTR01_EL0`: constant-frequency cycles.
    pub const AMEVCNTR01: u32 = encode(3, 3, 13, 4, 1);
    /// `CNTFRQ_EL0`.
    pub const CNTFRQ_EL0: u32 = encode(3, 3, 14, 0, 0);

    /// The trace's number for `register`.
    #[must_use]
    pub const fn id(register: SystemRegister) -> u32 {
        match register {
            SystemRegister::IdAa64Pfr0El1 => ID_AA64PFR0_EL1,
            SystemRegister::AmcgcrEl0 => AMCGCR_EL0,
            SystemRegister::Amcntenset0El0 => AMCNTENSET0_EL0,
            SystemRegister::Amevcntr00El0 => AMEVCNTR00,
            SystemRegister::Amevcntr01El0 => AMEVCNTR01,
            SystemRegister::CntfrqEl0 => CNTFRQ_EL0,
        }
    }

    /// `CNTVCT_EL0`: the virtual count (the time stamp; not one of the engine's registers).
    pub const CNTVCT_EL0: u32 = encode(3, 3, 14, 0, 2);

    /// The engine's system register with trace number `number`, if any.
    #[must_use]
    pub fn register(number: u32) -> Option<SystemRegister> {
        [
            SystemRegister::IdAa64Pfr0El1,
            SystemRegister::AmcgcrEl0,
            SystemRegister::Amcntenset0El0,
            SystemRegister::Amevcntr00El0,
            SystemRegister::Amevcntr01El0,
            SystemRegister::CntfrqEl0,
        ]
        .into_iter()
        .find(|register| id(*register) == number)
    }

    /// A trace number's name: the system register's, or `MSR 0x…`.
    #[must_use]
    pub fn name(number: u32) -> String {
        register(number)
            .map_or_else(|| format!("MSR {number:#x}"), |register| register.name().to_owned())
    }
}

/// The simulated CPU: flavour, counters and the values its MSRs hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuModel {
    /// The flavour.
    pub kind: CpuKind,
    /// What the activity counters do.
    pub counter_source: CounterSourceKind,
    /// MPERF's rate in C0, MHz.
    pub nominal_mhz: u32,
    /// `CPUID.1:ECX[31]`.
    pub hypervisor: bool,
    /// `IA32_PM_ENABLE` bit 0 (intel-hwp).
    pub hwp_enabled: bool,
    /// The perf levels the MSRs report.
    pub perf: HardwarePerf,
    /// The fixed counters' width when the CPU announces the architectural PMU in `CPUID.0AH`
    /// (the `fixed-pmc` counter source), else `None`.
    pub pmc_width: Option<u32>,
    /// How long one `RDMSR` takes, ns.
    pub msr_read_ns: u32,
    /// ARM64: the generic timer and the Activity Monitors.
    pub arm: Option<crate::scenario::ArmSpec>,
}

impl CpuModel {
    /// The CPU a scenario describes.
    #[must_use]
    pub const fn new(scenario: &Scenario) -> Self {
        let platform = &scenario.platform;
        Self {
            kind: platform.cpu,
            counter_source: platform.counter_source,
            nominal_mhz: platform.nominal_mhz,
            hypervisor: platform.hypervisor,
            hwp_enabled: platform.hwp_enabled,
            perf: platform.perf,
            pmc_width: platform.pmc_width,
            msr_read_ns: platform.msr_read_ns,
            arm: platform.arm,
        }
    }

    const fn max_basic_leaf(&self) -> u32 {
        match self.kind {
            CpuKind::IntelHwp => 0x1B,
            CpuKind::IntelLegacy => 0x0D,
            CpuKind::AmdCppc => 0x10,
            CpuKind::Arm64 => 0,
        }
    }

    const fn max_extended_leaf(&self) -> u32 {
        match self.kind {
            CpuKind::IntelHwp | CpuKind::IntelLegacy => 0x8000_0008,
            CpuKind::AmdCppc => 0x8000_0020,
            CpuKind::Arm64 => 0,
        }
    }

    const fn vendor(&self) -> [u32; 3] {
        if self.kind.is_intel() { VENDOR_INTEL } else { VENDOR_AMD }
    }

    /// What `CPUID` answers on processor `processor` for `leaf`/`subleaf`.
    #[must_use]
    pub fn cpuid(&self, processor: u32, leaf: u32, subleaf: u32) -> CpuidResult {
        let _ = subleaf;
        let zero = CpuidResult::default();
        // ARM64 has no CPUID: the kernel platform answers zeros.
        if self.kind.is_arm64() {
            return zero;
        }
        let [vendor_b, vendor_d, vendor_c] = self.vendor();
        let counters = self.counter_source.announced();
        match leaf {
            0 => CpuidResult {
                eax: self.max_basic_leaf(),
                ebx: vendor_b,
                ecx: vendor_c,
                edx: vendor_d,
            },
            1 => {
                let signature = match self.kind {
                    CpuKind::IntelHwp => 0x0008_06C1, // family 6 model 0x8C (Tiger Lake)
                    CpuKind::IntelLegacy => 0x0003_06C3, // family 6 model 0x3C (Haswell)
                    CpuKind::AmdCppc | CpuKind::Arm64 => 0x00A5_0F00, // family 0x19 model 0x50 (Zen 3)
                };
                let apic_id = processor & 0xFF;
                let ecx = 0x7FFA_F3BF | if self.hypervisor { FEATURES_ECX_HYPERVISOR } else { 0 };
                CpuidResult {
                    eax: signature,
                    ebx: (apic_id << 24) | (2 << 16) | (8 << 8),
                    ecx,
                    edx: 0xBFEB_FBFF | FEATURES_EDX_MSR,
                }
            }
            6 => {
                let eax = match self.kind {
                    CpuKind::IntelHwp => {
                        POWER_EAX_TURBO | POWER_EAX_ARAT | POWER_EAX_HWP | POWER_EAX_HWP_EXTRAS
                    }
                    CpuKind::IntelLegacy => POWER_EAX_TURBO | POWER_EAX_ARAT,
                    CpuKind::AmdCppc | CpuKind::Arm64 => POWER_EAX_ARAT,
                };
                CpuidResult {
                    eax,
                    ebx: 0,
                    ecx: if counters { POWER_ECX_APERFMPERF } else { 0 },
                    edx: 0,
                }
            }
            0x0A => self.pmc_width.map_or(zero, |width| CpuidResult {
                eax: pmu::VERSION
                    | (pmu::GENERAL_COUNTERS << 8)
                    | (pmu::GENERAL_WIDTH << 16)
                    | (7 << 24),
                ebx: 0,
                ecx: 0,
                edx: pmu::FIXED_COUNTERS | (width << 5),
            }),
            0x16 if self.kind == CpuKind::IntelHwp => CpuidResult {
                eax: self.nominal_mhz,
                ebx: u32::from(self.perf.highest) * INTEL_BUS_MHZ,
                ecx: INTEL_BUS_MHZ,
                edx: 0,
            },
            0x4000_0000 if self.hypervisor => {
                let [b, c, d] = HYPERVISOR_MICROSOFT;
                CpuidResult { eax: 0x4000_0006, ebx: b, ecx: c, edx: d }
            }
            0x8000_0000 => {
                let (b, c, d) =
                    if self.kind.is_intel() { (0, 0, 0) } else { (vendor_b, vendor_c, vendor_d) };
                CpuidResult { eax: self.max_extended_leaf(), ebx: b, ecx: c, edx: d }
            }
            0x8000_0007 => {
                let mut edx = EXTENDED_POWER_EDX_INVARIANT_TSC;
                if self.kind == CpuKind::AmdCppc {
                    edx |= EXTENDED_POWER_EDX_CPB;
                    if counters {
                        edx |= EXTENDED_POWER_EDX_EFF_FREQ_RO;
                    }
                }
                CpuidResult { edx, ..zero }
            }
            0x8000_0008 => CpuidResult {
                eax: 0x3030,
                ebx: if self.kind == CpuKind::AmdCppc { EXTENDED_FEATURES_EBX_CPPC } else { 0 },
                ..zero
            },
            _ => zero,
        }
    }

    /// `IA32_PM_ENABLE`'s value (intel-hwp only).
    #[must_use]
    pub fn pm_enable(&self) -> Option<u64> {
        (self.kind == CpuKind::IntelHwp).then_some(u64::from(self.hwp_enabled))
    }

    /// What reading `msr` returns, given the processor's counters now. MSRs the CPU does not
    /// have fault.
    ///
    /// # Errors
    /// [`MsrFault`] for an MSR this CPU does not implement (or, with
    /// [`CounterSourceKind::AperfMperfFaulting`], for the counters).
    pub fn read_msr(&self, number: u32, counters: CounterPair) -> Result<u64, MsrFault> {
        let intel = self.kind.is_intel();
        let amd = self.kind == CpuKind::AmdCppc;
        let perf = self.perf;
        let counter = |value: u64| match self.counter_source {
            CounterSourceKind::AperfMperf => Ok(value),
            CounterSourceKind::AperfMperfZeros => Ok(0),
            CounterSourceKind::None
            | CounterSourceKind::AperfMperfFaulting
            | CounterSourceKind::FixedPmc
            | CounterSourceKind::Amu => Err(MsrFault),
        };
        // ARM64 has no MSRs.
        if self.kind.is_arm64() {
            return Err(MsrFault);
        }
        match number {
            msr::IA32_APERF => counter(counters.aperf),
            msr::IA32_MPERF => counter(counters.mperf),
            msr::AMD_APERF_READ_ONLY if amd => counter(counters.aperf),
            msr::AMD_MPERF_READ_ONLY if amd => counter(counters.mperf),
            msr::MSR_PLATFORM_INFO if intel && !self.hypervisor => {
                let ratio = u64::from(self.nominal_mhz / INTEL_BUS_MHZ);
                Ok((ratio << 8)
                    | (u64::from(perf.lowest_nonlinear) << 40)
                    | (u64::from(perf.lowest) << 48))
            }
            msr::MSR_TURBO_RATIO_LIMIT if intel && !self.hypervisor => {
                Ok(u64::from_le_bytes([perf.highest; 8]))
            }
            msr::IA32_PM_ENABLE if self.kind == CpuKind::IntelHwp => {
                Ok(u64::from(self.hwp_enabled))
            }
            msr::IA32_HWP_CAPABILITIES if self.kind == CpuKind::IntelHwp && self.hwp_enabled => {
                Ok(u64::from_le_bytes([
                    perf.highest,
                    perf.nominal,
                    perf.lowest_nonlinear,
                    perf.lowest,
                    0,
                    0,
                    0,
                    0,
                ]))
            }
            msr::IA32_HWP_REQUEST if self.kind == CpuKind::IntelHwp && self.hwp_enabled => {
                Ok(u64::from_le_bytes([perf.lowest, perf.highest, 0, 0x80, 0, 0, 0, 0]))
            }
            msr::AMD_CPPC_CAP1 if amd => Ok(u64::from_le_bytes([
                perf.lowest,
                perf.lowest_nonlinear,
                perf.nominal,
                perf.highest,
                0,
                0,
                0,
                0,
            ])),
            msr::AMD_CPPC_REQ if amd => {
                Ok(u64::from_le_bytes([perf.highest, perf.lowest, 0, 0x80, 0, 0, 0, 0]))
            }
            msr::AMD_HWCR if amd => Ok(1 << 24),
            _ => Err(MsrFault),
        }
    }
}

/// Whether `CPUID` (as `cpuid` answers it) announced MSR `number`, so that a PEP may read it.
///
/// The architectural and vendor rules of the SDM and AMD's PPRs, written independently of the
/// engine. `pm_enable` is `IA32_PM_ENABLE`'s value (the HWP MSRs other than it may be accessed
/// only once HWP is enabled).
#[must_use]
pub fn msr_announced(
    cpuid: &dyn Fn(u32, u32) -> CpuidResult,
    number: u32,
    pm_enable: Option<u64>,
) -> bool {
    let vendor = cpuid(0, 0);
    let max_leaf = vendor.eax;
    let id = [vendor.ebx, vendor.edx, vendor.ecx];
    let intel = id == VENDOR_INTEL;
    let amd = id == VENDOR_AMD;
    let leaf = |n: u32| if n <= max_leaf { cpuid(n, 0) } else { CpuidResult::default() };
    let max_extended = cpuid(0x8000_0000, 0).eax;
    let extended = |n: u32| {
        if (n..=0x8000_00FF).contains(&max_extended) { cpuid(n, 0) } else { CpuidResult::default() }
    };
    let features = leaf(1);
    if features.edx & FEATURES_EDX_MSR == 0 {
        return false;
    }
    let base_family = (features.eax >> 8) & 0xF;
    let model = ((features.eax >> 12) & 0xF0) | ((features.eax >> 4) & 0xF);
    let bare_metal_intel_6 =
        intel && base_family == 6 && model >= 0x1A && features.ecx & FEATURES_ECX_HYPERVISOR == 0;
    let hwp = intel && leaf(6).eax & POWER_EAX_HWP != 0;
    match number {
        msr::IA32_APERF | msr::IA32_MPERF => leaf(6).ecx & POWER_ECX_APERFMPERF != 0,
        msr::AMD_APERF_READ_ONLY | msr::AMD_MPERF_READ_ONLY => {
            amd && extended(0x8000_0007).edx & EXTENDED_POWER_EDX_EFF_FREQ_RO != 0
        }
        msr::MSR_PLATFORM_INFO | msr::MSR_TURBO_RATIO_LIMIT => bare_metal_intel_6,
        msr::IA32_PM_ENABLE => hwp,
        msr::IA32_HWP_CAPABILITIES | msr::IA32_HWP_REQUEST => {
            hwp && pm_enable.is_some_and(|value| value & 1 != 0)
        }
        msr::AMD_CPPC_CAP1 | msr::AMD_CPPC_REQ => {
            amd && extended(0x8000_0008).ebx & EXTENDED_FEATURES_EBX_CPPC != 0
        }
        msr::AMD_HWCR => amd,
        _ => intel && pmu_msr_announced(&leaf(0x0A), number),
    }
}

/// Whether `CPUID.0AH` (`pmu`) announces PMU register `number` (Intel SDM Vol. 3B, architectural
/// performance monitoring): general-purpose counters and event selects up to EAX\[15:8\], fixed
/// counters up to EDX\[4:0\] (version 2 and later), the global control and status from version 2.
fn pmu_msr_announced(pmu: &CpuidResult, number: u32) -> bool {
    let version = pmu.eax & 0xFF;
    let general = (pmu.eax >> 8) & 0xFF;
    let fixed = if version >= 2 { pmu.edx & 0x1F } else { 0 };
    let below = |base: u32, count: u32| number >= base && number - base < count;
    version >= 1
        && (below(msr::IA32_PMC0, general)
            || below(msr::IA32_PERFEVTSEL0, general)
            || below(msr::IA32_FIXED_CTR0, fixed)
            || (version >= 2
                && matches!(
                    number,
                    msr::IA32_FIXED_CTR_CTRL
                        | msr::IA32_PERF_GLOBAL_STATUS
                        | msr::IA32_PERF_GLOBAL_CTRL
                )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn model(platform: &str) -> CpuModel {
        let text = format!(
            "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n{platform}\n[pofx]\nduration_ms = 10\n"
        );
        CpuModel::new(&Scenario::from_toml_str(&text).expect("valid"))
    }

    fn announced(cpu: &CpuModel, number: u32) -> bool {
        msr_announced(&|leaf, subleaf| cpu.cpuid(0, leaf, subleaf), number, cpu.pm_enable())
    }

    #[test]
    fn flavours_announce_what_they_implement() {
        let counters = CounterPair { aperf: 5, mperf: 7 };
        let all = [
            msr::IA32_APERF,
            msr::IA32_MPERF,
            msr::AMD_APERF_READ_ONLY,
            msr::AMD_MPERF_READ_ONLY,
            msr::MSR_PLATFORM_INFO,
            msr::MSR_TURBO_RATIO_LIMIT,
            msr::IA32_PM_ENABLE,
            msr::IA32_HWP_CAPABILITIES,
            msr::AMD_CPPC_CAP1,
            0x10,
        ];
        for platform in [
            "cpu = \"intel-hwp\"",
            "cpu = \"intel-hwp\"\nhwp_enabled = false",
            "cpu = \"intel-hwp\"\nhypervisor = true",
            "cpu = \"amd-cppc\"",
            "cpu = \"intel-legacy\"",
            "cpu = \"intel-legacy\"\ncounter_source = \"none\"",
        ] {
            let cpu = model(platform);
            for number in all {
                assert_eq!(
                    announced(&cpu, number),
                    cpu.read_msr(number, counters).is_ok(),
                    "{platform}: MSR {number:#x}"
                );
            }
        }
    }

    #[test]
    fn counters_and_capabilities() {
        let amd = model("cpu = \"amd-cppc\"\nnominal_mhz = 3000\n[platform.perf]\nhighest = 200\nnominal = 120\nlowest_nonlinear = 60\nlowest = 20".replace("\nnominal_mhz = 3000", "").as_str());
        let counters = CounterPair { aperf: 11, mperf: 13 };
        assert_eq!(amd.read_msr(msr::AMD_APERF_READ_ONLY, counters), Ok(11));
        assert_eq!(amd.read_msr(msr::AMD_MPERF_READ_ONLY, counters), Ok(13));
        assert_eq!(amd.read_msr(msr::AMD_CPPC_CAP1, counters), Ok(0xC878_3C14));
        let intel = model("cpu = \"intel-legacy\"");
        assert_eq!(
            intel.read_msr(msr::MSR_PLATFORM_INFO, counters).map(|v| (v >> 8) & 0xFF),
            Ok(20)
        );
        assert_eq!(intel.cpuid(0, 0x16, 0), CpuidResult::default());
        assert_eq!(model("").cpuid(0, 0x16, 0).eax, 2000);
        let zeros = model("counter_source = \"aperf-mperf-zeros\"");
        assert_eq!(zeros.read_msr(msr::IA32_APERF, counters), Ok(0));
        let faulting = model("counter_source = \"aperf-mperf-faulting\"");
        assert!(announced(&faulting, msr::IA32_APERF));
        assert_eq!(faulting.read_msr(msr::IA32_APERF, counters), Err(MsrFault));
    }

    #[test]
    fn fixed_pmc_announces_the_architectural_pmu_only() {
        let fixed = model("counter_source = \"fixed-pmc\"\npmc_width = 40\nhypervisor = true");
        let leaf = fixed.cpuid(0, 0x0A, 0);
        assert_eq!((leaf.eax & 0xFF, (leaf.eax >> 8) & 0xFF), (4, 8));
        assert_eq!((leaf.edx & 0x1F, (leaf.edx >> 5) & 0xFF), (3, 40));
        assert_eq!(fixed.cpuid(0, 6, 0).ecx & 1, 0, "no APERF/MPERF");
        let announced_pmu = [
            msr::IA32_FIXED_CTR0,
            msr::IA32_FIXED_CTR1,
            msr::IA32_FIXED_CTR2,
            msr::IA32_FIXED_CTR_CTRL,
            msr::IA32_PERF_GLOBAL_STATUS,
            msr::IA32_PERF_GLOBAL_CTRL,
            msr::IA32_PMC0 + 7,
            msr::IA32_PERFEVTSEL0,
        ];
        for number in announced_pmu {
            assert!(is_pmu_msr(number), "{number:#x}");
            assert!(announced(&fixed, number), "{number:#x}");
            assert!(!announced(&model("pmu = false"), number), "{number:#x} without leaf 0Ah");
        }
        for number in [0x30C, msr::IA32_PMC0 + 8, 0x390, msr::IA32_APERF] {
            assert!(!announced(&fixed, number), "{number:#x}");
        }
        assert!(!is_pmu_msr(msr::IA32_APERF));
        let engine = ppm_engine::pmc::FixedCounters::detect(
            &ppm_engine::cpu::CpuFeatures::detect(&crate::platform::SimPlatform::new(
                std::sync::Arc::new(crate::machine::Machine::new(&Scenario::from_toml_str(
                    "name = \"t\"\n[platform]\nprocessors = 1\nnominal_mhz = 2000\ncounter_source = \"fixed-pmc\"\n[pofx]\nduration_ms = 10\n",
                ).expect("valid"))),
            )),
        );
        assert_eq!(engine.map(|counters| counters.width), Some(48));
    }
}
