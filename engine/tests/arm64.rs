//! The Activity Monitors source on a scripted AArch64 processor that faults on every access
//! its ID registers did not announce (as an undefined instruction would bugcheck the kernel).
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::missing_panics_doc,
    clippy::panic
)]

use core::cell::Cell;

use ppm_engine::Pep;
use ppm_engine::abi::*;
use ppm_engine::arm64::SystemRegister;
use ppm_engine::config::{Config, CounterSourcePreference};
use ppm_engine::counters::{
    CounterSource, NoCountersReason, NominalRateSource, scale_constant_count,
};
use ppm_engine::platform::{
    CpuidResult, InterruptsMasked, MsrFault, Passive, PerformanceCounter, Platform,
};

std::thread_local! {
    static MASKED: Cell<u32> = const { Cell::new(0) };
}

/// A scripted AArch64 processor: no CPUID, no MSRs; the AMU as configured.
struct Arm {
    /// `ID_AA64PFR0_EL1.AMU`.
    amu: u64,
    /// `AMCGCR_EL0.CG0NC`.
    group0: u64,
    /// `AMCNTENSET0_EL0`.
    enabled: u64,
    cntfrq: u64,
    /// Processor cycles per constant tick × 1000 while busy (2400 MHz at 24 MHz: 100 000).
    cycles_per_tick_milli: u64,
    actual: Cell<u64>,
    constant: Cell<u64>,
    /// Accesses an undefined instruction would have made: unannounced AMU registers, MSRs,
    /// counter reads with interrupts enabled.
    violations: Cell<u32>,
}

// SAFETY: the tests use one thread per engine instance.
unsafe impl Sync for Arm {}

impl Arm {
    const fn new(amu: u64) -> Self {
        Self {
            amu,
            group0: 4,
            enabled: 0b1111,
            cntfrq: 24_000_000,
            cycles_per_tick_milli: 100_000,
            actual: Cell::new(1_000_000_007),
            constant: Cell::new(10_000_019),
            violations: Cell::new(0),
        }
    }

    /// `ticks` constant-frequency ticks of busy time.
    fn run(&self, ticks: u64) {
        self.constant.set(self.constant.get() + ticks);
        self.actual.set(self.actual.get() + ticks * self.cycles_per_tick_milli / 1000);
    }
}

impl Platform for Arm {
    fn current_processor_index(&self) -> u32 {
        0
    }
    fn cpuid(&self, _leaf: u32, _subleaf: u32) -> CpuidResult {
        CpuidResult::default()
    }
    fn read_msr(&self, _msr: u32) -> Result<u64, MsrFault> {
        self.violations.set(self.violations.get() + 1);
        Err(MsrFault)
    }
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        MASKED.with(|masked| masked.set(masked.get() + 1));
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        let result = f(&masked);
        MASKED.with(|masked| masked.set(masked.get() - 1));
        result
    }
    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.constant.get(), frequency: self.cntfrq }
    }
    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        self.run(u64::from(microseconds) * self.cntfrq / 1_000_000);
    }
    fn read_system_register(&self, register: SystemRegister) -> Result<u64, MsrFault> {
        if register.is_amu() && self.amu == 0 {
            self.violations.set(self.violations.get() + 1);
            return Err(MsrFault);
        }
        let counter =
            matches!(register, SystemRegister::Amevcntr00El0 | SystemRegister::Amevcntr01El0);
        if counter && MASKED.with(Cell::get) == 0 {
            self.violations.set(self.violations.get() + 1);
        }
        Ok(match register {
            SystemRegister::IdAa64Pfr0El1 => (self.amu << 44) | 0x11,
            SystemRegister::AmcgcrEl0 => self.group0,
            SystemRegister::Amcntenset0El0 => self.enabled,
            SystemRegister::Amevcntr00El0 => self.actual.get(),
            SystemRegister::Amevcntr01El0 => self.constant.get(),
            SystemRegister::CntfrqEl0 => self.cntfrq,
        })
    }
}

fn harness(platform: Arm, config: &Config) -> &'static Pep<Arm> {
    ppm_caller::boot(platform, config, 2)
}

/// Registers `\_SB.CPU0` and returns its handle.
fn processor() -> PEPHANDLE {
    ppm_caller::add_processor::<Arm>("\\_SB.CPU0")
}

fn read(handle: PEPHANDLE) -> Option<(u64, u64)> {
    ppm_caller::read::<Arm>(handle, 0)
}

#[test]
fn without_the_amu_no_amu_register_is_touched() {
    let pep = harness(Arm::new(0), &Config::new());
    assert_eq!(pep.feedback_counter_count(), 0);
    assert_eq!(pep.no_counters_reason(), Some(NoCountersReason::NotAnnounced));
    let handle = processor();
    assert_eq!(read(handle), None);
    assert_eq!(pep.platform().violations.get(), 0, "no MSR, no unannounced AMU register");
}

#[test]
fn disabled_cycle_counters_are_not_used() {
    let mut arm = Arm::new(1);
    arm.enabled = 0b1101;
    let pep = harness(arm, &Config::new());
    assert_eq!(pep.no_counters_reason(), Some(NoCountersReason::CountersDisabled));
    let mut arm = Arm::new(2);
    arm.group0 = 1;
    let pep = harness(arm, &Config::new());
    assert_eq!(pep.no_counters_reason(), Some(NoCountersReason::NotAnnounced));
    let mut config = Config::new();
    config.counter_source = CounterSourcePreference::AperfMperf;
    let pep = harness(Arm::new(1), &config);
    assert_eq!(pep.no_counters_reason(), Some(NoCountersReason::NotAnnounced));
    assert_eq!(pep.platform().violations.get(), 0);
}

#[test]
fn amu_counts_give_the_true_frequency_over_a_long_run_without_drift() {
    // 19.2 MHz constant counter (not a whole MHz multiple of anything) and a core at
    // 2 400 MHz: 125 cycles per tick.
    let mut arm = Arm::new(1);
    arm.cntfrq = 19_200_000;
    arm.cycles_per_tick_milli = 125_000;
    let pep = harness(arm, &Config::new());
    assert_eq!(pep.counter_source(), CounterSource::Amu);
    assert_eq!(pep.nominal_rate_source(), NominalRateSource::Calibrated);
    assert_eq!(pep.nominal_mhz(), 2_400, "measured over the calibration wait");
    let handle = processor();
    let first = read(handle).unwrap();
    // 60 s of 15 ms intervals (288 000 ticks each), each one exact to a count.
    for _ in 0..4_000 {
        let before = read(handle).unwrap();
        pep.platform().run(288_000);
        let after = read(handle).unwrap();
        let (nominal, actual) = (after.0 - before.0, after.1 - before.1);
        assert_eq!(actual, 36_000_000);
        assert!(nominal.abs_diff(36_000_000) <= 1, "{nominal}");
    }
    let last = read(handle).unwrap();
    // No drift: the totals are exactly 60 s at 2 400 MHz.
    assert_eq!(last.0 - first.0, 144_000_000_000);
    assert_eq!(last.1 - first.1, 144_000_000_000);
    assert_eq!(pep.platform().violations.get(), 0, "every counter read masked");
}

#[test]
fn a_configured_nominal_rate_scales_the_constant_count() {
    let mut config = Config::new();
    config.nominal_mhz = Some(1_800);
    let pep = harness(Arm::new(1), &config);
    assert_eq!(
        (pep.nominal_mhz(), pep.nominal_rate_source()),
        (1_800, NominalRateSource::Configuration)
    );
    let handle = processor();
    let before = read(handle).unwrap();
    // 15 ms at 24 MHz, core at 2 400 MHz.
    pep.platform().run(360_000);
    let after = read(handle).unwrap();
    // 1 800 × ΔActual / ΔNominal = 2 400 MHz, to a count: ΔNominal = 27 000 000 ± 1.
    assert_eq!(after.1 - before.1, 36_000_000);
    assert!((after.0 - before.0).abs_diff(27_000_000) <= 1, "{}", after.0 - before.0);
    // A reset (the counters restart when the processor is powered up): no huge delta.
    pep.platform().actual.set(5);
    pep.platform().constant.set(5);
    assert_eq!(read(handle).unwrap(), after);
}

#[test]
fn scaling_is_exact_rational() {
    assert_eq!(scale_constant_count(19_200_000, 2_400, 19_200_000), 2_400_000_000);
    assert_eq!(scale_constant_count(1, 1_000, 3), 333_333_333);
    assert_eq!(scale_constant_count(3, 1_000, 3), 1_000_000_000);
    assert_eq!(scale_constant_count(7, 1_000, 0), 7, "no rate: unscaled");
    // The 64-bit split agrees with the 128-bit definition, reduced or not, wrapping or not.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..10_000 {
        let constant = next() >> (next() % 64);
        let mhz = u32::try_from(next() % 20_000).unwrap();
        let hz = next() % 1_000_000_000 + 1;
        let exact = u128::from(constant) * u128::from(mhz) * 1_000_000 / u128::from(hz);
        assert_eq!(
            scale_constant_count(constant, mhz, hz),
            u64::try_from(exact & u128::from(u64::MAX)).unwrap(),
            "{constant} × {mhz} MHz / {hz} Hz"
        );
    }
}
