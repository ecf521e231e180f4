//! [`FuzzPlatform`]: CPUID, MSRs, faults, counters, time and the current processor all come
//! from the fuzzer input; the platform doubles as an oracle for the engine's hardware rules.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use arbitrary::Arbitrary;
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::pmc;
use ppm_engine::x86::{cpuid, msr};
use ppm_engine::{CpuidResult, MsrFault, Platform};

/// How many simulated processors carry counter state (the current processor index is taken
/// modulo this).
pub const PROCESSORS: usize = 8;

/// The four registers of one CPUID leaf.
#[derive(Arbitrary, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// EAX.
    pub eax: u32,
    /// EBX.
    pub ebx: u32,
    /// ECX.
    pub ecx: u32,
    /// EDX.
    pub edx: u32,
}

impl Regs {
    const fn result(self) -> CpuidResult {
        CpuidResult { eax: self.eax, ebx: self.ebx, ecx: self.ecx, edx: self.edx }
    }
}

/// The vendor string of CPUID leaf 0.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// `HygonGenuine`.
    Hygon,
    /// Anything else (EBX, EDX, ECX).
    Other([u32; 3]),
}

impl Vendor {
    const fn words(self) -> [u32; 3] {
        match self {
            Self::Intel => cpuid::VENDOR_INTEL,
            Self::Amd => cpuid::VENDOR_AMD,
            Self::Hygon => cpuid::VENDOR_HYGON,
            Self::Other(words) => words,
        }
    }

    /// Whether the words are Intel's (an `Other` may spell them too).
    #[must_use]
    pub fn is_intel(self) -> bool {
        self.words() == cpuid::VENDOR_INTEL
    }

    /// Whether the words are AMD's or Hygon's.
    #[must_use]
    pub fn is_amd(self) -> bool {
        let words = self.words();
        words == cpuid::VENDOR_AMD || words == cpuid::VENDOR_HYGON
    }
}

/// The CPUID leaves the engine may read.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSetup {
    /// Leaf 0 vendor.
    pub vendor: Vendor,
    /// Leaf 0 EAX, the highest basic leaf.
    pub max_leaf: u32,
    /// Leaf 1.
    pub features: Regs,
    /// Leaf 6.
    pub power: Regs,
    /// Leaf 0Ah.
    pub pmu: Regs,
    /// Leaf 16h.
    pub frequency: Regs,
    /// Leaf `8000_0000h` EAX, the highest extended leaf.
    pub max_extended: u32,
    /// Leaf `8000_0007h`.
    pub extended_power: Regs,
    /// Leaf `8000_0008h`.
    pub extended_features: Regs,
}

/// The non-counter MSRs: `None` faults.
#[derive(Arbitrary, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsrSetup {
    /// `MSR_PLATFORM_INFO`.
    pub platform_info: Option<u64>,
    /// `MSR_TURBO_RATIO_LIMIT`.
    pub turbo_ratio_limit: Option<u64>,
    /// `IA32_PM_ENABLE`.
    pub pm_enable: Option<u64>,
    /// `IA32_HWP_CAPABILITIES`.
    pub hwp_capabilities: Option<u64>,
    /// AMD `CPPC_CAP1`.
    pub cppc_cap1: Option<u64>,
    /// `IA32_FIXED_CTR_CTRL`.
    pub fixed_ctr_ctrl: Option<u64>,
    /// `IA32_PERF_GLOBAL_CTRL`.
    pub perf_global_ctrl: Option<u64>,
}

/// The counters and the time source.
#[derive(Arbitrary, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSetup {
    /// Raw actual (APERF) value of every processor at start.
    pub start_actual: u64,
    /// Raw nominal (MPERF) value of every processor at start.
    pub start_nominal: u64,
    /// Actual counts per microsecond of a stall.
    pub actual_per_us: u16,
    /// Nominal counts per microsecond of a stall.
    pub nominal_per_us: u16,
    /// Time-source ticks per microsecond of a stall.
    pub ticks_per_us: u8,
    /// Time-source frequency.
    pub frequency: u64,
    /// Whether the platform has a time stamp (`read_timestamp`).
    pub timestamp: bool,
    /// Whether the host reserved the fixed counters.
    pub fixed_reserved: bool,
    /// Whether the counters fault at initialisation.
    pub fault_at_start: bool,
}

/// One processor's counters.
#[derive(Debug, Default)]
struct Core {
    actual: AtomicU64,
    nominal: AtomicU64,
    timestamp: AtomicU64,
    fault: AtomicBool,
}

/// The fuzz platform. Every method checks the engine's hardware rules and panics (a fuzzer
/// crash) on a violation:
///
/// - an MSR is read only if CPUID (and, for the fixed counters, the host's reservation)
///   announces it — on real hardware an unannounced MSR raises #GP, a bugcheck;
/// - no MSR is ever written by the engine (the host programs the PMU, not the engine);
/// - the counter pair is read with interrupts masked, actual first, nominal right after.
#[derive(Debug)]
pub struct FuzzPlatform {
    cpu: CpuSetup,
    msrs: MsrSetup,
    counters: CounterSetup,
    current: AtomicU32,
    time: AtomicU64,
    cores: [Core; PROCESSORS],
    masked: AtomicU32,
    /// The MSR read last in the current masked section (0: none yet).
    last_masked_read: AtomicU32,
    /// The counter MSRs read so far (bits by [`counter_bit`]).
    counters_read: AtomicU32,
}

/// A counter MSR's bit in [`FuzzPlatform::counters_read`].
const fn counter_bit(number: u32) -> u32 {
    match number {
        msr::IA32_APERF => 1,
        msr::IA32_MPERF => 1 << 1,
        msr::AMD_APERF_READ_ONLY => 1 << 2,
        msr::AMD_MPERF_READ_ONLY => 1 << 3,
        msr::IA32_FIXED_CTR1 => 1 << 4,
        _ => 1 << 5,
    }
}

const fn bit(value: u32, index: u32) -> bool {
    value >> index & 1 != 0
}

impl FuzzPlatform {
    /// A platform as described, current processor `current`.
    #[must_use]
    pub fn new(cpu: CpuSetup, msrs: MsrSetup, counters: CounterSetup, current: u32) -> Self {
        let platform = Self {
            cpu,
            msrs,
            counters,
            current: AtomicU32::new(current),
            time: AtomicU64::new(0),
            cores: Default::default(),
            masked: AtomicU32::new(0),
            last_masked_read: AtomicU32::new(0),
            counters_read: AtomicU32::new(0),
        };
        for core in &platform.cores {
            core.actual.store(counters.start_actual, Ordering::Relaxed);
            core.nominal.store(counters.start_nominal, Ordering::Relaxed);
            core.fault.store(counters.fault_at_start, Ordering::Relaxed);
        }
        platform
    }

    fn core(&self, processor: u32) -> &Core {
        let index = usize::try_from(processor).unwrap_or(0) % PROCESSORS;
        &self.cores[index]
    }

    fn current_core(&self) -> &Core {
        self.core(self.current.load(Ordering::Relaxed))
    }

    /// Makes `processor` the current one.
    pub fn set_processor(&self, processor: u32) {
        self.current.store(processor, Ordering::Relaxed);
    }

    /// The current processor index.
    #[must_use]
    pub fn processor(&self) -> u32 {
        self.current.load(Ordering::Relaxed)
    }

    /// Advances `processor`'s counters (and its time stamp by the nominal delta).
    pub fn advance(&self, processor: u32, actual: u64, nominal: u64) {
        let core = self.core(processor);
        let _ = core.actual.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
            Some(value.wrapping_add(actual))
        });
        let _ = core.nominal.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
            Some(value.wrapping_add(nominal))
        });
        let _ = core.timestamp.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
            Some(value.wrapping_add(nominal))
        });
    }

    /// Sets `processor`'s raw counter values (a reset, a wrap, another owner writing them).
    pub fn set_counters(&self, processor: u32, actual: u64, nominal: u64) {
        let core = self.core(processor);
        core.actual.store(actual, Ordering::Relaxed);
        core.nominal.store(nominal, Ordering::Relaxed);
    }

    /// `processor`'s raw (actual, nominal) values.
    #[must_use]
    pub fn counters(&self, processor: u32) -> (u64, u64) {
        let core = self.core(processor);
        (core.actual.load(Ordering::Relaxed), core.nominal.load(Ordering::Relaxed))
    }

    /// Makes `processor`'s counter reads fault (or not).
    pub fn set_fault(&self, processor: u32, fault: bool) {
        self.core(processor).fault.store(fault, Ordering::Relaxed);
    }

    /// Whether `processor`'s counter reads fault.
    #[must_use]
    pub fn faulting(&self, processor: u32) -> bool {
        self.core(processor).fault.load(Ordering::Relaxed)
    }

    const fn basic_leaf(&self, leaf: u32) -> bool {
        leaf <= self.cpu.max_leaf
    }

    const fn extended_leaf(&self, leaf: u32) -> bool {
        self.cpu.max_extended >= leaf
    }

    /// Display family and model per the SDM, from leaf 1.
    const fn family_model(&self) -> (u32, u32) {
        let eax = self.cpu.features.eax;
        let base_family = eax >> 8 & 0xF;
        let base_model = eax >> 4 & 0xF;
        let family =
            if base_family == 0xF { base_family + (eax >> 20 & 0xFF) } else { base_family };
        let model = if base_family == 0x6 || base_family == 0xF {
            (eax >> 16 & 0xF) << 4 | base_model
        } else {
            base_model
        };
        (family, model)
    }

    /// Whether fixed counter `index` exists (SDM: `ECX[i]` from version 5, or `EDX[4:0] > i`).
    const fn fixed_counter_exists(&self, index: u32) -> bool {
        let version = self.cpu.pmu.eax & 0xFF;
        let count = self.cpu.pmu.edx & 0x1F;
        version >= 2 && (count > index || (version >= 5 && bit(self.cpu.pmu.ecx, index)))
    }

    /// The oracle: whether the hardware described has `number`, as the SDM/APM define it.
    #[must_use]
    pub fn announced(&self, number: u32) -> bool {
        let intel = self.cpu.vendor.is_intel();
        let amd = self.cpu.vendor.is_amd();
        let pmu = intel && self.basic_leaf(cpuid::LEAF_PMU) && self.counters.fixed_reserved;
        match number {
            msr::IA32_APERF | msr::IA32_MPERF => {
                self.basic_leaf(cpuid::LEAF_POWER) && bit(self.cpu.power.ecx, 0)
            }
            msr::AMD_APERF_READ_ONLY | msr::AMD_MPERF_READ_ONLY => {
                amd && self.extended_leaf(cpuid::LEAF_EXTENDED_POWER)
                    && bit(self.cpu.extended_power.edx, 10)
            }
            msr::IA32_PM_ENABLE => {
                intel && self.basic_leaf(cpuid::LEAF_POWER) && bit(self.cpu.power.eax, 7)
            }
            // The SDM allows the other HWP MSRs only once HWP is enabled.
            msr::IA32_HWP_CAPABILITIES => {
                self.announced(msr::IA32_PM_ENABLE)
                    && self.msrs.pm_enable.is_some_and(|value| value & 1 != 0)
            }
            msr::AMD_CPPC_CAP1 => {
                amd && self.extended_leaf(cpuid::LEAF_EXTENDED_FEATURES)
                    && bit(self.cpu.extended_features.ebx, 27)
            }
            msr::MSR_PLATFORM_INFO | msr::MSR_TURBO_RATIO_LIMIT => {
                let (family, model) = self.family_model();
                intel
                    && self.basic_leaf(cpuid::LEAF_FEATURES)
                    && !bit(self.cpu.features.ecx, 31)
                    && family == 6
                    && model >= 0x1A
            }
            msr::IA32_FIXED_CTR1 => pmu && self.fixed_counter_exists(1),
            msr::IA32_FIXED_CTR2 => pmu && self.fixed_counter_exists(2),
            msr::IA32_FIXED_CTR_CTRL | msr::IA32_PERF_GLOBAL_CTRL => {
                pmu && self.cpu.pmu.eax & 0xFF >= 2
            }
            _ => false,
        }
    }

    /// The width mask of the fixed counters (CPUID 0Ah EDX[12:5]; 64 bits when out of range).
    fn fixed_mask(&self) -> u64 {
        let width = self.cpu.pmu.edx >> 5 & 0xFF;
        if (1..64).contains(&width) { (1u64 << width) - 1 } else { u64::MAX }
    }

    /// Checks the masked-section rules for a read of counter MSR `number`: its first read is
    /// the probe, with interrupts enabled (on Windows x64 the SEH probe, which must not fault
    /// in a masked section); every later read is masked, the actual counter first.
    fn check_counter_read(&self, number: u32, actual: bool) {
        let seen = self.counters_read.fetch_or(counter_bit(number), Ordering::Relaxed);
        let first = seen & counter_bit(number) == 0;
        if self.masked.load(Ordering::Relaxed) == 0 {
            assert!(first, "counter MSR {number:#x} read with interrupts enabled after its probe");
            return;
        }
        assert!(!first, "counter MSR {number:#x} first read with interrupts masked (not probed)");
        let previous = self.last_masked_read.swap(number, Ordering::Relaxed);
        if actual {
            assert_eq!(previous, 0, "actual counter {number:#x} read after MSR {previous:#x}");
        } else {
            let expected = match number {
                msr::IA32_MPERF => msr::IA32_APERF,
                msr::AMD_MPERF_READ_ONLY => msr::AMD_APERF_READ_ONLY,
                _ => msr::IA32_FIXED_CTR1,
            };
            assert_eq!(
                previous, expected,
                "nominal counter {number:#x} not read right after its actual counter"
            );
        }
    }
}

impl Platform for FuzzPlatform {
    fn current_processor_index(&self) -> u32 {
        self.current.load(Ordering::Relaxed)
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        let cpu = &self.cpu;
        match leaf {
            cpuid::LEAF_VENDOR => {
                let [ebx, edx, ecx] = cpu.vendor.words();
                CpuidResult { eax: cpu.max_leaf, ebx, ecx, edx }
            }
            cpuid::LEAF_FEATURES => cpu.features.result(),
            cpuid::LEAF_POWER => cpu.power.result(),
            cpuid::LEAF_PMU => cpu.pmu.result(),
            cpuid::LEAF_FREQUENCY => cpu.frequency.result(),
            cpuid::LEAF_EXTENDED_MAX => {
                CpuidResult { eax: cpu.max_extended, ..CpuidResult::default() }
            }
            cpuid::LEAF_EXTENDED_POWER => cpu.extended_power.result(),
            cpuid::LEAF_EXTENDED_FEATURES => cpu.extended_features.result(),
            _ => CpuidResult::default(),
        }
    }

    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        assert!(
            self.announced(number),
            "engine read MSR {number:#x}, which CPUID does not announce"
        );
        let core = self.current_core();
        let counter = |actual: bool, mask: u64| {
            self.check_counter_read(number, actual);
            if core.fault.load(Ordering::Relaxed) {
                return Err(MsrFault);
            }
            let value = if actual { &core.actual } else { &core.nominal };
            Ok(value.load(Ordering::Relaxed) & mask)
        };
        let fixed = self.fixed_mask();
        match number {
            msr::IA32_APERF | msr::AMD_APERF_READ_ONLY => counter(true, u64::MAX),
            msr::IA32_MPERF | msr::AMD_MPERF_READ_ONLY => counter(false, u64::MAX),
            msr::IA32_FIXED_CTR1 => counter(true, fixed),
            msr::IA32_FIXED_CTR2 => counter(false, fixed),
            msr::MSR_PLATFORM_INFO => self.msrs.platform_info.ok_or(MsrFault),
            msr::MSR_TURBO_RATIO_LIMIT => self.msrs.turbo_ratio_limit.ok_or(MsrFault),
            msr::IA32_PM_ENABLE => self.msrs.pm_enable.ok_or(MsrFault),
            msr::IA32_HWP_CAPABILITIES => self.msrs.hwp_capabilities.ok_or(MsrFault),
            msr::AMD_CPPC_CAP1 => self.msrs.cppc_cap1.ok_or(MsrFault),
            msr::IA32_FIXED_CTR_CTRL => self.msrs.fixed_ctr_ctrl.ok_or(MsrFault),
            msr::IA32_PERF_GLOBAL_CTRL => self.msrs.perf_global_ctrl.ok_or(MsrFault),
            _ => Err(MsrFault),
        }
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        let outer = self.last_masked_read.swap(0, Ordering::Relaxed);
        self.masked.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the harness's thread takes no interrupt while it runs `f` (the platform counts
        // the masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        let result = f(&masked);
        self.masked.fetch_sub(1, Ordering::Relaxed);
        self.last_masked_read.store(outer, Ordering::Relaxed);
        result
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter {
            ticks: self.time.load(Ordering::Relaxed),
            frequency: self.counters.frequency,
        }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        let us = u64::from(microseconds);
        let actual = u64::from(self.counters.actual_per_us).wrapping_mul(us);
        let nominal = u64::from(self.counters.nominal_per_us).wrapping_mul(us);
        self.advance(self.processor(), actual, nominal);
        let ticks = u64::from(self.counters.ticks_per_us).wrapping_mul(us);
        let _ = self.time.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
            Some(value.wrapping_add(ticks))
        });
    }

    /// A write must be one the engine declares (`pmc::DECLARED_WRITES`: the fixed counters'
    /// controls, their bits only, under the reservation); it then succeeds unless the input
    /// makes that MSR fault. The MSR's value before is what a read returns (the input's).
    fn write_msr(&self, number: u32, value: u64) -> Result<(), MsrFault> {
        let previous = match number {
            msr::IA32_FIXED_CTR_CTRL => self.msrs.fixed_ctr_ctrl,
            msr::IA32_PERF_GLOBAL_CTRL => self.msrs.perf_global_ctrl,
            _ => None,
        };
        let reserved = self.counters.fixed_reserved;
        if let Err(violation) = pmc::check_write(number, previous, value, reserved) {
            panic!(
                "engine wrote MSR {number:#x} = {value:#x} (before {previous:x?}, reserved {reserved}): {violation:?}, not a write pmc::DECLARED_WRITES allows"
            );
        }
        previous.map(|_| ()).ok_or(MsrFault)
    }

    fn read_timestamp(&self) -> Option<u64> {
        self.counters.timestamp.then(|| self.current_core().timestamp.load(Ordering::Relaxed))
    }

    fn fixed_counters_reserved(&self) -> bool {
        self.counters.fixed_reserved
    }
}
