//! The platform: the kernel and hardware services the engine needs, and nothing more.
//!
//! Hardware only: where the engine instance lives is the host's concern
//! ([`crate::host::PepHost`]).
//!
//! The Windows driver implements it over `ntoskrnl` and the processor's own instructions
//! (see [`crate::x86`]); `ppm-sim` implements it over simulated processors.
//!
//! Two execution contexts are carried in the types, as zero-sized tokens that exist only while
//! their context holds: [`InterruptsMasked`], which [`Platform::with_interrupts_masked`] hands
//! its closure and which the engine's counter-pair reads require (so both reads of a pair in one
//! masked section is a compile-time fact), and [`Passive`], which the `PASSIVE_LEVEL`-only
//! operations (the engine's construction, its calibration) require.

use core::marker::PhantomData;

use crate::arm64::SystemRegister;

/// Proof that interrupts are masked on the current processor, for as long as the token is
/// borrowed.
///
/// [`Platform::with_interrupts_masked`] lends one to its closure; the engine's counter-pair
/// reads take it, so a pair can only be read inside one masked section. Zero-sized, neither
/// `Send` nor `Sync` (it is a fact about the current processor) and neither `Clone` nor
/// `Copy`: the closure receives it by reference and cannot keep it past the section.
///
/// The token does not leave its section:
///
/// ```compile_fail
/// fn escape<P: ppm_engine::Platform>(platform: &P) {
///     let _kept = platform.with_interrupts_masked(|masked| masked);
/// }
/// ```
///
/// nor its processor (nor is it copied out):
///
/// ```compile_fail,E0277
/// fn to_another_thread<T: Sync>() {}
/// to_another_thread::<ppm_engine::InterruptsMasked>();
/// ```
///
/// ```compile_fail,E0277
/// fn copy(masked: &ppm_engine::InterruptsMasked) {
///     let _copy: ppm_engine::InterruptsMasked = Clone::clone(masked);
/// }
/// ```
///
/// and only a platform's masked section makes one:
///
/// ```compile_fail,E0133
/// let _masked = ppm_engine::InterruptsMasked::assume();
/// ```
///
/// ```compile_fail,E0451
/// let _masked = ppm_engine::InterruptsMasked { _private: core::marker::PhantomData };
/// ```
#[derive(Debug)]
pub struct InterruptsMasked {
    /// Keeps the token to its section: private, and `!Send`, `!Sync`.
    _private: PhantomData<*mut ()>,
}

impl InterruptsMasked {
    /// The token of the current masked section. Any IRQL.
    ///
    /// # Safety
    /// Only a platform's [`Platform::with_interrupts_masked`] calls this, while interrupts are
    /// masked on the current processor (on an emulator: while it models them masked), and
    /// lends the token to its closure by reference only: the token must not outlive that
    /// section.
    #[inline]
    #[must_use]
    pub const unsafe fn assume() -> Self {
        Self { _private: PhantomData }
    }
}

/// Proof that the current thread runs at `PASSIVE_LEVEL`, for as long as the token lives.
///
/// The `PASSIVE_LEVEL`-only operations take it: [`crate::Pep::new`] (detection and
/// calibration), [`Platform::performance_counter`] and [`Platform::stall_microseconds`]. The
/// driver creates one in `DriverEntry`; an emulator or a test thread (which runs at no raised
/// IRQL) creates its own. Zero-sized, neither `Send` nor `Sync` (it is a fact about the current
/// thread) and neither `Clone` nor `Copy`: it is lent by reference.
///
/// Only an `unsafe` assertion makes one, and it stays on its thread:
///
/// ```compile_fail,E0133
/// let _passive = ppm_engine::Passive::assume();
/// ```
///
/// ```compile_fail,E0277
/// fn to_another_thread<T: Send>() {}
/// to_another_thread::<ppm_engine::Passive>();
/// ```
#[derive(Debug)]
pub struct Passive {
    /// Keeps the token to its thread: private, and `!Send`, `!Sync`.
    _private: PhantomData<*mut ()>,
}

impl Passive {
    /// The token of the current thread's `PASSIVE_LEVEL` context.
    ///
    /// # Safety
    /// The caller runs at `PASSIVE_LEVEL` (as `DriverEntry` does; a host thread of an emulator
    /// or a test counts as such) and does not raise the IRQL while the token lives.
    #[inline]
    #[must_use]
    pub const unsafe fn assume() -> Self {
        Self { _private: PhantomData }
    }
}

/// The four registers `CPUID` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuidResult {
    /// EAX.
    pub eax: u32,
    /// EBX.
    pub ebx: u32,
    /// ECX.
    pub ecx: u32,
    /// EDX.
    pub edx: u32,
}

/// An MSR read that did not produce a value.
///
/// On real hardware the engine reads an MSR only after CPUID says it exists, so the kernel
/// platform never returns this; a simulated platform returns it to model a hypervisor that
/// faults on an advertised MSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrFault;

/// A reading of the platform's high-resolution time source (`KeQueryPerformanceCounter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerformanceCounter {
    /// Ticks since an arbitrary origin.
    pub ticks: u64,
    /// Ticks per second.
    pub frequency: u64,
}

/// Kernel and hardware services for the engine.
///
/// Every method may be called at any IRQL up to `HIGH_LEVEL` unless its documentation says
/// otherwise, and none may allocate, block, log or panic.
pub trait Platform: Sized + Sync + 'static {
    /// The system-wide index of the processor executing the caller (the index
    /// `KeGetCurrentProcessorNumberEx` reports, `group * 64 + number` on a host emulator).
    /// Any IRQL.
    fn current_processor_index(&self) -> u32;

    /// Executes `CPUID` with `leaf` in EAX and `subleaf` in ECX on the current processor.
    /// Any IRQL.
    fn cpuid(&self, leaf: u32, subleaf: u32) -> CpuidResult;

    /// Reads model-specific register `msr` on the current processor.
    ///
    /// The engine calls this only for MSRs whose existence CPUID (or a vendor rule documented in
    /// [`crate::x86`]) established. Any IRQL.
    ///
    /// # Errors
    /// [`MsrFault`] when the read faulted (only a simulated platform reports this).
    fn read_msr(&self, msr: u32) -> Result<u64, MsrFault>;

    /// Runs `f` with interrupts masked on the current processor, restoring the previous
    /// interrupt state afterwards (save flags, disable, run, restore: never a blind enable),
    /// and lends `f` the section's [`InterruptsMasked`] token (made with
    /// [`InterruptsMasked::assume`] once interrupts are masked). Any IRQL.
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R;

    /// Reads the platform's high-resolution time source. `PASSIVE_LEVEL` only (initialisation),
    /// which `passive` proves.
    fn performance_counter(&self, passive: &Passive) -> PerformanceCounter;

    /// Busy-waits for `microseconds` on the current processor, staying in C0
    /// (`KeStallExecutionProcessor`). `PASSIVE_LEVEL` only (initialisation), which `passive`
    /// proves.
    fn stall_microseconds(&self, passive: &Passive, microseconds: u32);

    /// Writes model-specific register `msr` on the current processor. Used only to enable the
    /// architectural fixed counters while the host holds their reservation (see
    /// [`crate::pmc`]): at `PASSIVE_LEVEL` in `DriverEntry`, and at `DISPATCH_LEVEL` on each
    /// processor's `RESUME_FROM_SYSTEM_STATE`; never on the read path. Any IRQL. The default
    /// refuses.
    ///
    /// # Errors
    /// [`MsrFault`] when the write faulted or the platform does not write MSRs.
    fn write_msr(&self, msr: u32, value: u64) -> Result<(), MsrFault> {
        let _ = (msr, value);
        Err(MsrFault)
    }

    /// The processor's time-stamp counter (`RDTSC`), if the platform offers it. Used to bound
    /// the deltas of modular counters (the fixed-counter source). Any IRQL. Default: `None`.
    fn read_timestamp(&self) -> Option<u64> {
        None
    }

    /// Reads AArch64 system register `register` on the current processor.
    ///
    /// The engine reads `ID_AA64PFR0_EL1` first, and an AMU register only when its `AMU` field
    /// announces the Activity Monitors (see [`crate::arm64`]). Any IRQL.
    ///
    /// # Errors
    /// [`MsrFault`] on a platform that is not AArch64 (the default) or when the access faulted
    /// (only a simulated platform reports that).
    fn read_system_register(&self, register: SystemRegister) -> Result<u64, MsrFault> {
        let _ = register;
        Err(MsrFault)
    }

    /// Whether the host reserved the architectural fixed counters through the HAL's counter
    /// arbitration (`HalAllocateHardwareCounters`) and enabled them on every processor; only
    /// then may the engine select the fixed-counter source. Default: `false`.
    fn fixed_counters_reserved(&self) -> bool {
        false
    }
}
