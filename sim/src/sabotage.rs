//! Test sabotage: a substituted PEP, a broken platform and broken kernel services, to show
//! that every check can fail (`tests/checks_can_fail.rs`, `tests/checks_can_fail_runtime.rs`).
//!
//! Compiled only into the crate's unit tests and with the `sabotage` feature, which the root
//! package's tests enable through their dev-dependency: a build of `ppm-sim` without it (the
//! `ppm-sim` binary, `cargo build -p ppm-sim`) carries none of it.
//!
//! A run takes a [`Sabotage`] in [`crate::RunOptions::sabotage`]; the platform
//! ([`crate::platform::SimPlatform::with_faults`]) and the kernel services
//! ([`crate::driver_entry::SimKernel::with_sabotage`]) apply their parts. The default sabotages nothing.

use std::fmt;
use std::sync::Arc;

use ppm_engine::abi::PEP_INFORMATION;
use ppm_engine::platform::{CpuidResult, MsrFault};

/// Everything one run substitutes or breaks.
#[derive(Clone, Debug, Default)]
pub struct Sabotage {
    /// The `PEP_INFORMATION` to register instead of the engine's (that of
    /// [`ppm_engine::pep_information`] for [`crate::platform::SimHost`]). A test can wrap the
    /// engine's callbacks in `extern "C"` shims that corrupt their results; inside a callback,
    /// [`ppm_engine::PepHost::instance`] on `SimHost` returns the engine instance (and
    /// `.platform()` the simulated platform, e.g. to read an MSR the PEP should not read).
    pub pep_information: Option<PEP_INFORMATION>,
    /// Faults injected into the platform the engine runs on.
    pub platform: PlatformFaults,
    /// Kernel services that get `DriverEntry`'s unwinding or reporting wrong.
    pub driver_entry: DriverEntrySabotage,
}

/// Replaces a `CPUID` answer: `(processor, leaf, subleaf, model's answer) -> answer`.
pub type CpuidHook = Arc<dyn Fn(u32, u32, u32, CpuidResult) -> CpuidResult + Send + Sync>;
/// Replaces an MSR read's result: `(processor, msr, model's result) -> result`.
pub type MsrHook =
    Arc<dyn Fn(u32, u32, Result<u64, MsrFault>) -> Result<u64, MsrFault> + Send + Sync>;
/// Replaces the processor index the platform reports: `(true index) -> reported index`.
pub type ProcessorHook = Arc<dyn Fn(u32) -> u32 + Send + Sync>;

/// Deliberate platform faults, to show that the checks catch a broken platform (or a PEP that
/// trusts one). The default injects nothing.
#[derive(Clone, Default)]
#[allow(clippy::struct_excessive_bools, reason = "independent fault switches")]
pub struct PlatformFaults {
    /// Rewrites `CPUID` answers (e.g. garbage, or features the MSR model does not back).
    pub cpuid: Option<CpuidHook>,
    /// Rewrites MSR read results (e.g. decreasing or random counter values, spurious faults).
    pub msr: Option<MsrHook>,
    /// Rewrites the current processor index the engine sees.
    pub current_processor: Option<ProcessorHook>,
    /// `with_interrupts_masked` runs its closure without masking interrupts.
    pub ignore_interrupt_masking: bool,
    /// `fixed_counters_reserved` reports `true` whatever the driver's reservation achieved
    /// (a platform that lets the engine use a PMU it does not own).
    pub claim_fixed_counters_reserved: bool,
    /// Nested notifications (see [`crate::platform::nest`]) are delivered inside masked
    /// sections too — before every MSR read — as no hardware does: a read torn by a nested
    /// read of the same counters then mis-accumulates even in a correct engine.
    pub nested_in_masked_sections: bool,
    /// `read_timestamp` reports no time-stamp counter: the engine cannot bound how far apart
    /// the two reads of a counter pair were (an engine without the skew bound).
    pub no_timestamp: bool,
}

impl PlatformFaults {
    /// No fault.
    pub const NONE: Self = Self {
        cpuid: None,
        msr: None,
        current_processor: None,
        ignore_interrupt_masking: false,
        claim_fixed_counters_reserved: false,
        nested_in_masked_sections: false,
        no_timestamp: false,
    };
}

impl fmt::Debug for PlatformFaults {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("PlatformFaults")
            .field("cpuid", &self.cpuid.is_some())
            .field("msr", &self.msr.is_some())
            .field("current_processor", &self.current_processor.is_some())
            .field("ignore_interrupt_masking", &self.ignore_interrupt_masking)
            .field("claim_fixed_counters_reserved", &self.claim_fixed_counters_reserved)
            .field("nested_in_masked_sections", &self.nested_in_masked_sections)
            .field("no_timestamp", &self.no_timestamp)
            .finish()
    }
}

/// Deliberately broken kernel services, standing for a driver that gets the unwinding or the
/// reporting wrong: each makes one `boot.*` check fail (`tests/checks_can_fail.rs`).
#[derive(Clone, Copy, Debug, Default)]
#[expect(clippy::struct_excessive_bools, reason = "independent defects, any combination")]
pub struct DriverEntrySabotage {
    /// `ExFreePool` does nothing: a failed `DriverEntry` leaks its blocks.
    pub leak_pool: bool,
    /// `withdraw` does nothing: a failed `DriverEntry` leaves the PEP published.
    pub keep_published: bool,
    /// The PMU control writes of the unwinding are lost (a driver that forgets to restore).
    pub skip_pmu_restore: bool,
    /// `DriverEntry` returns `STATUS_SUCCESS` whatever happened (a driver that swallows a
    /// failure, so a half-initialised image stays loaded).
    pub swallow_failure: bool,
    /// The `Boot` key's `REG_SZ` writes are lost.
    pub drop_state_strings: bool,
    /// The `Parameters` key hides `SkipRegistration` (a driver that ignores the switch).
    pub ignore_skip_registration: bool,
    /// `install_pending` answers false (a driver that registers mid-session after an install).
    pub ignore_install_pending: bool,
    /// The image's `TimeDateStamp` is another build's (a stale image still loaded, or a driver
    /// that reads the wrong header).
    pub stale_image: bool,
}

impl DriverEntrySabotage {
    /// No defect.
    pub const NONE: Self = Self {
        leak_pool: false,
        keep_published: false,
        skip_pmu_restore: false,
        swallow_failure: false,
        drop_state_strings: false,
        ignore_skip_registration: false,
        ignore_install_pending: false,
        stale_image: false,
    };
}
