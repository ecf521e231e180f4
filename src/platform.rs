//! The kernel implementation of the engine's platform trait.
//!
//! Every method may run at any IRQL up to `HIGH_LEVEL`, possibly with interrupts disabled,
//! unless its documentation says `PASSIVE_LEVEL`: nothing here allocates, blocks, logs or
//! panics.
//!
//! The current processor comes from `KeGetCurrentProcessorNumberEx(NULL)`, whose return value
//! is the system-wide processor index (any IRQL). `KeGetCurrentProcessorIndex` would save the
//! call, but `wdm.h` defines it as a `FORCEINLINE` function reading the processor control region
//! (through `gs` on x64), and bindgen does not emit inline functions, so `wdk-sys` does not bind
//! it; reimplementing it would mean hand-written assembly against an undocumented offset.
//! `KeGetCurrentProcessorNumberEx` is one exported call that reads the same field.
//!
//! x64: `CPUID` and the interrupt masking are the engine's [`ppm_engine::x86::instructions`];
//! `RDMSR`/`WRMSR` go through `msr_guard`, which touches only MSRs proven to exist. ARM64:
//! `cpuid` returns zeros and there are no MSRs; the engine reads `ID_AA64PFR0_EL1` and, only
//! where it announces the Activity Monitors, their registers: the AMU's through `amu_guard`
//! (under SEH, a fault answered as [`MsrFault`]), the rest through the engine's
//! [`ppm_engine::arm64::instructions`] (`MRS`, `DAIF` masking, `CNTVCT_EL0` as the time stamp).

use core::sync::atomic::{AtomicBool, Ordering};
use ppm_engine::arm64::SystemRegister;
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::{CpuidResult, MsrFault, Platform};

use wdk_sys::LARGE_INTEGER;
use wdk_sys::ntddk::{
    KeGetCurrentProcessorNumberEx, KeQueryPerformanceCounter, KeStallExecutionProcessor,
};

/// The longest single `KeStallExecutionProcessor` call; the documentation asks for no more
/// than 50 microseconds per call, so longer waits are made of several calls.
const MAX_STALL_MICROSECONDS: u32 = 50;

/// Whether the PMU is reserved and the fixed counters are enabled on every active processor.
static FIXED_COUNTERS_RESERVED: AtomicBool = AtomicBool::new(false);

/// Records whether the fixed counters are reserved and enabled (what
/// [`KernelPlatform::fixed_counters_reserved`] answers). `PASSIVE_LEVEL`.
pub fn set_fixed_counters_reserved(reserved: bool) {
    FIXED_COUNTERS_RESERVED.store(reserved, Ordering::Release);
}

/// The kernel platform: `ntoskrnl` services and the processor's own instructions.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelPlatform;

impl Platform for KernelPlatform {
    /// `KeGetCurrentProcessorNumberEx(NULL)`: the system-wide index of the current processor.
    /// Any IRQL.
    #[inline]
    fn current_processor_index(&self) -> u32 {
        // SAFETY: callable at any IRQL; the `ProcNumber` argument is optional and NULL asks
        // for the index only.
        unsafe { KeGetCurrentProcessorNumberEx(core::ptr::null_mut()) }
    }

    /// `CPUID` on the current processor (zeros on ARM64). Any IRQL.
    #[inline]
    fn cpuid(&self, leaf: u32, subleaf: u32) -> CpuidResult {
        arch::cpuid(leaf, subleaf)
    }

    /// `RDMSR` on the current processor ([`MsrFault`] on ARM64). Any IRQL.
    #[inline]
    fn read_msr(&self, msr: u32) -> Result<u64, MsrFault> {
        arch::read_msr(msr)
    }

    /// Runs `f` with interrupts masked, restoring the previous state (as is on ARM64), and
    /// lends it the section's token. Any IRQL.
    #[inline]
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        arch::with_interrupts_masked(|| {
            // SAFETY: interrupts are masked on this processor until the closure returns, and
            // `f` only borrows the token, so it cannot outlive the section.
            let masked = unsafe { InterruptsMasked::assume() };
            f(&masked)
        })
    }

    /// `KeQueryPerformanceCounter`. `PASSIVE_LEVEL` only (initialisation).
    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        let mut frequency = LARGE_INTEGER::default();
        // SAFETY: callable at any IRQL; `frequency` is a valid `LARGE_INTEGER` to write.
        let ticks = unsafe { KeQueryPerformanceCounter(&raw mut frequency) };
        // SAFETY: `QuadPart` covers the whole 8-byte union and every bit pattern is a valid
        // `LONGLONG`; the kernel wrote the full value.
        let ticks = unsafe { ticks.QuadPart };
        // SAFETY: as above, for the frequency `KeQueryPerformanceCounter` wrote.
        let frequency = unsafe { frequency.QuadPart };
        PerformanceCounter {
            ticks: u64::try_from(ticks).unwrap_or(0),
            frequency: u64::try_from(frequency).unwrap_or(0),
        }
    }

    /// `KeStallExecutionProcessor`, in calls of at most 50 microseconds; the processor stays
    /// in C0. `PASSIVE_LEVEL` only (initialisation).
    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        let mut remaining = microseconds;
        while remaining > 0 {
            let chunk = remaining.min(MAX_STALL_MICROSECONDS);
            // SAFETY: callable at any IRQL; a busy wait with no other effect.
            unsafe { KeStallExecutionProcessor(chunk) };
            remaining = remaining.saturating_sub(chunk);
        }
    }

    /// `WRMSR` on the current processor ([`MsrFault`] on ARM64). Any IRQL: the engine writes
    /// only the fixed-counter controls, while the HAL reservation is held — from `DriverEntry`
    /// and on each processor's `RESUME_FROM_SYSTEM_STATE`.
    fn write_msr(&self, msr: u32, value: u64) -> Result<(), MsrFault> {
        arch::write_msr(msr, value)
    }

    /// `RDTSC` (on ARM64 the virtual count `CNTVCT_EL0`). Any IRQL.
    #[inline]
    fn read_timestamp(&self) -> Option<u64> {
        arch::read_timestamp()
    }

    /// `MRS` of an ARM64 system register (`MsrFault` on x64, and on ARM64 for an Activity
    /// Monitors access that faulted). The engine reads an Activity Monitors register only
    /// after `ID_AA64PFR0_EL1` announced the AMU. Any IRQL.
    #[inline]
    fn read_system_register(&self, register: SystemRegister) -> Result<u64, MsrFault> {
        arch::read_system_register(register)
    }

    /// Whether `DriverEntry` reserved the PMU and enabled the fixed counters everywhere. Any IRQL.
    #[inline]
    fn fixed_counters_reserved(&self) -> bool {
        FIXED_COUNTERS_RESERVED.load(Ordering::Acquire)
    }
}

/// The x64 instructions, through the engine's wrappers.
#[cfg(target_arch = "x86_64")]
mod arch {
    use ppm_engine::x86::instructions;
    use ppm_engine::{CpuidResult, MsrFault};

    /// `CPUID`. Any IRQL.
    #[inline]
    pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
        instructions::cpuid(leaf, subleaf)
    }

    /// `RDMSR` of an MSR proven to exist (see `msr_guard`): [`MsrFault`] for one that faulted
    /// when probed or was never proven. Any IRQL.
    #[inline]
    pub fn read_msr(msr: u32) -> Result<u64, MsrFault> {
        crate::msr_guard::read(msr)
    }

    /// `WRMSR`, under the same guard. `PASSIVE_LEVEL` in `DriverEntry`, `DISPATCH_LEVEL` on
    /// resume.
    pub fn write_msr(msr: u32, value: u64) -> Result<(), MsrFault> {
        crate::msr_guard::write(msr, value)
    }

    /// `RDTSC`. Any IRQL.
    #[inline]
    #[allow(clippy::unnecessary_wraps, reason = "same signature as the ARM64 implementation")]
    pub fn read_timestamp() -> Option<u64> {
        Some(instructions::read_timestamp())
    }

    /// No ARM64 system registers on x64.
    #[inline]
    pub const fn read_system_register(
        _register: ppm_engine::arm64::SystemRegister,
    ) -> Result<u64, MsrFault> {
        Err(MsrFault)
    }

    /// Saves RFLAGS, `CLI`, runs `f`, and `STI` only if interrupts were enabled. Any IRQL.
    #[inline]
    pub fn with_interrupts_masked<R>(f: impl FnOnce() -> R) -> R {
        // SAFETY: ring 0 (a kernel driver), where CLI/STI are permitted; the engine passes
        // only the two back-to-back counter reads and a few stores, so interrupts stay off for
        // a few hundred cycles at most.
        unsafe { instructions::with_interrupts_masked(f) }
    }
}

/// ARM64: no CPUID, no MSRs; the Activity Monitors under SEH (`amu_guard`), the other system
/// registers through the engine's `MRS` wrappers.
#[cfg(target_arch = "aarch64")]
mod arch {
    use ppm_engine::arm64::{SystemRegister, instructions};
    use ppm_engine::{CpuidResult, MsrFault};

    /// No `CPUID` on ARM64: all zeros, which the engine reads as "no vendor, no leaves".
    #[inline]
    pub const fn cpuid(_leaf: u32, _subleaf: u32) -> CpuidResult {
        CpuidResult { eax: 0, ebx: 0, ecx: 0, edx: 0 }
    }

    /// No x86 MSRs on ARM64.
    #[inline]
    pub const fn read_msr(_msr: u32) -> Result<u64, MsrFault> {
        Err(MsrFault)
    }

    /// No x86 MSRs on ARM64.
    pub const fn write_msr(_msr: u32, _value: u64) -> Result<(), MsrFault> {
        Err(MsrFault)
    }

    /// The virtual count `CNTVCT_EL0`, at the constant counter's rate. Any IRQL.
    #[inline]
    #[allow(clippy::unnecessary_wraps, reason = "same signature as the x64 implementation")]
    pub fn read_timestamp() -> Option<u64> {
        Some(instructions::read_virtual_count())
    }

    /// `MRS` of `register`: an Activity Monitors register under SEH (`amu_guard`: a fault
    /// answers [`MsrFault`]), the ID and timer registers plain. Any IRQL.
    #[inline]
    pub fn read_system_register(register: SystemRegister) -> Result<u64, MsrFault> {
        if register.is_amu() {
            crate::amu_guard::read(register)
        } else {
            instructions::read(register).ok_or(MsrFault)
        }
    }

    /// Saves `DAIF`, masks IRQ and FIQ, runs `f`, restores `DAIF`. Any IRQL.
    #[inline]
    pub fn with_interrupts_masked<R>(f: impl FnOnce() -> R) -> R {
        instructions::with_interrupts_masked(f)
    }
}
