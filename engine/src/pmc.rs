//! The architectural fixed counters and the HAL's hardware-counter arbitration.
//!
//! Where APERF/MPERF are missing (most test VMs) a virtual PMU often is not: `IA32_FIXED_CTR1`
//! counts unhalted core cycles (like APERF) and `IA32_FIXED_CTR2` unhalted reference cycles at
//! the TSC rate (like MPERF), so their ratio is the same delivered-performance ratio. The PMU is
//! shared with profilers and the OS, so the host must reserve it with
//! `HalAllocateHardwareCounters` *before* this module programs a single PMU register, on every
//! processor group, and must not select this source if the reservation is refused.
//!
//! Which PMU counters the `CounterIndex` of a `PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR` names
//! (general-purpose only, or general then fixed) is not documented publicly. The reservation is
//! therefore conservative: by default the PMU is requested exclusively (`ResourceList = NULL`,
//! which Microsoft documents as "exclusive ownership of the performance monitoring unit");
//! optionally a single range descriptor covering every index a general-then-fixed numbering
//! could give. Both keep other PMU users from programming the counters this source depends on;
//! both also keep profilers off the PMU for as long as the PEP runs (a PEP never unloads), which
//! is why the source is used only where APERF/MPERF are not available, unless configured.
//!
//! IRQL: everything here runs at `PASSIVE_LEVEL`, on the processor being programmed.

use crate::abi::{
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR, PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1,
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1,
    PHYSICAL_COUNTER_RESOURCE_LIST, ResourceTypeRange,
};
pub use crate::config::ReservationPolicy;
use crate::config::{Config, CounterSourcePreference, FeedbackCounterPolicy};
use crate::cpu::CpuFeatures;
use crate::platform::{MsrFault, Platform};
use crate::x86::{bits, msr};

/// The architectural fixed counters CPUID leaf 0Ah describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedCounters {
    /// Architectural performance monitoring version (EAX\[7:0\]).
    pub version: u32,
    /// General-purpose counters per logical processor (EAX\[15:8\]).
    pub general_counters: u32,
    /// Fixed-function counters (EDX\[4:0\]).
    pub fixed_counters: u32,
    /// Bit width of the fixed-function counters (EDX\[12:5\]).
    pub width: u32,
}

impl FixedCounters {
    /// The fixed counters, if CPUID says the two this source needs exist: GenuineIntel (leaf 0Ah
    /// is Intel's architectural PMU), version >= 2 (`IA32_PERF_GLOBAL_CTRL` exists), fixed
    /// counters 1 and 2 present (EDX\[4:0\] >= 3, or the version-5 bitmask in ECX) and a width in
    /// 32..=64 bits.
    #[must_use]
    pub fn detect(cpu: &CpuFeatures) -> Option<Self> {
        if !cpu.is_intel {
            return None;
        }
        let eax = u64::from(cpu.pmu_eax);
        let edx = u64::from(cpu.pmu_edx);
        let counters = Self {
            version: u32::try_from(bits(eax, 0, 7)).ok()?,
            general_counters: u32::try_from(bits(eax, 8, 15)).ok()?,
            fixed_counters: u32::try_from(bits(edx, 0, 4)).ok()?,
            width: u32::try_from(bits(edx, 5, 12)).ok()?,
        };
        let announced =
            counters.fixed_counters >= 3 || (counters.version >= 5 && cpu.pmu_ecx & 0b110 == 0b110);
        (counters.version >= 2 && announced && (32..=64).contains(&counters.width))
            .then_some(counters)
    }

    /// The mask of a counter value: `2^width - 1`.
    #[must_use]
    pub const fn mask(&self) -> u64 {
        if self.width >= 64 { u64::MAX } else { (1u64 << self.width).wrapping_sub(1) }
    }
}

/// The fixed counters the host should reserve and enable before creating the PEP, or `None`.
///
/// Only when counters are enabled by policy, the configured source order may select the fixed
/// counters, CPUID announces them and — for the automatic order — APERF/MPERF are absent, so
/// the PMU is never taken from profilers where the PEP would not use it. Pure; `PASSIVE_LEVEL`.
#[must_use]
pub fn counters_to_reserve(config: &Config, cpu: &CpuFeatures) -> Option<FixedCounters> {
    if config.feedback_counters == FeedbackCounterPolicy::Disabled {
        return None;
    }
    let wanted = match config.counter_source {
        CounterSourcePreference::FixedPmc | CounterSourcePreference::PreferFixedPmc => true,
        CounterSourcePreference::Auto => !cpu.has_aperf_mperf() && !cpu.has_amd_read_only_copies(),
        CounterSourcePreference::AperfMperf | CounterSourcePreference::None => false,
    };
    if wanted { FixedCounters::detect(cpu) } else { None }
}

/// What to pass to `HalAllocateHardwareCounters` as `ResourceList`.
#[derive(Clone, Copy)]
pub enum Reservation {
    /// Pass NULL.
    ExclusivePmu,
    /// Pass a pointer to this list (one descriptor, so the `ANYSIZE_ARRAY` of one element holds
    /// it exactly).
    List(PHYSICAL_COUNTER_RESOURCE_LIST),
}

/// Builds the reservation for `counters` under `policy`. Pure; `PASSIVE_LEVEL`.
///
/// The range covers indexes `0 ..= general + fixed - 1`: every general-purpose counter, and the
/// fixed counters too if the HAL numbers them after the general ones.
#[must_use]
pub fn reservation(policy: ReservationPolicy, counters: &FixedCounters) -> Reservation {
    match policy {
        ReservationPolicy::ExclusivePmu => Reservation::ExclusivePmu,
        ReservationPolicy::AllCounterIndexes => {
            let end = counters
                .general_counters
                .saturating_add(counters.fixed_counters.max(3))
                .saturating_sub(1);
            let descriptor = PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR {
                Type: ResourceTypeRange,
                Flags: 0,
                u: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1 {
                    Range: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1 {
                        Begin: 0,
                        End: end,
                    },
                },
            };
            Reservation::List(PHYSICAL_COUNTER_RESOURCE_LIST {
                Count: 1,
                Descriptors: [descriptor],
            })
        }
    }
}

/// `IA32_FIXED_CTR_CTRL` bits this source sets: fixed counters 1 and 2 count in ring 0 and
/// ring 3 (fields at bits 4..=7 and 8..=11; no `AnyThread`, no PMI).
pub const FIXED_CTR_CTRL_ENABLE: u64 = 0x330;
/// The `IA32_FIXED_CTR_CTRL` fields of fixed counters 1 and 2.
pub const FIXED_CTR_CTRL_FIELDS: u64 = 0xFF0;
/// `IA32_PERF_GLOBAL_CTRL` bits that enable fixed counters 1 and 2 (bits 33 and 34).
pub const PERF_GLOBAL_CTRL_ENABLE: u64 = (1 << 33) | (1 << 34);

/// One MSR the engine may write, and the only bits of it the engine may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredWrite {
    /// The MSR.
    pub msr: u32,
    /// Its name.
    pub name: &'static str,
    /// The bits a write may change; every other bit is written back as it was read.
    pub bits: u64,
}

/// Every MSR write the engine makes — the one place that says what it may write.
///
/// Only these MSRs, only these bits, only while the host holds the PMU reservation
/// ([`Platform::fixed_counters_reserved`]), and only from the driver's setup in `DriverEntry`
/// (`PASSIVE_LEVEL`, [`enable_fixed_counters`] / [`restore_fixed_counters`]) and from
/// `RESUME_FROM_SYSTEM_STATE` (`DISPATCH_LEVEL`, [`enable_fixed_counters`]). Never on the read
/// path. The platforms that check the engine (the fuzz harness, the emulator's access trace)
/// assert every write against this declaration with [`check_write`].
pub const DECLARED_WRITES: [DeclaredWrite; 2] = [
    DeclaredWrite {
        msr: msr::IA32_FIXED_CTR_CTRL,
        name: "IA32_FIXED_CTR_CTRL",
        bits: FIXED_CTR_CTRL_FIELDS,
    },
    DeclaredWrite {
        msr: msr::IA32_PERF_GLOBAL_CTRL,
        name: "IA32_PERF_GLOBAL_CTRL",
        bits: PERF_GLOBAL_CTRL_ENABLE,
    },
];

/// Why a write is not one [`DECLARED_WRITES`] allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteViolation {
    /// The MSR is not declared.
    Undeclared,
    /// Written without the PMU reservation.
    Unreserved,
    /// These bits outside the declared ones changed.
    OtherBits(u64),
}

/// Whether a write is one [`DECLARED_WRITES`] allows. Pure.
///
/// `value` written to `msr`, whose value before was `previous` (`None`: unknown, only the MSR
/// and the reservation are checked), with the PMU `reserved` or not.
///
/// # Errors
/// The [`WriteViolation`].
pub fn check_write(
    msr: u32,
    previous: Option<u64>,
    value: u64,
    reserved: bool,
) -> Result<(), WriteViolation> {
    let declared = DECLARED_WRITES
        .iter()
        .find(|declared| declared.msr == msr)
        .ok_or(WriteViolation::Undeclared)?;
    if !reserved {
        return Err(WriteViolation::Unreserved);
    }
    let other = previous.map_or(0, |previous| (previous ^ value) & !declared.bits);
    if other != 0 {
        return Err(WriteViolation::OtherBits(other));
    }
    Ok(())
}

/// The PMU control values found before [`enable_fixed_counters`] changed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedPmuControl {
    /// `IA32_FIXED_CTR_CTRL` as found.
    pub fixed_ctr_ctrl: u64,
    /// `IA32_PERF_GLOBAL_CTRL` as found.
    pub perf_global_ctrl: u64,
}

/// The control values that enable fixed counters 1 and 2, leaving every other counter's
/// configuration as found. Pure.
#[must_use]
pub const fn enabled_control(saved: SavedPmuControl) -> SavedPmuControl {
    SavedPmuControl {
        fixed_ctr_ctrl: (saved.fixed_ctr_ctrl & !FIXED_CTR_CTRL_FIELDS) | FIXED_CTR_CTRL_ENABLE,
        perf_global_ctrl: saved.perf_global_ctrl | PERF_GLOBAL_CTRL_ENABLE,
    }
}

/// Enables fixed counters 1 and 2 on the current processor and returns what it found.
///
/// The host keeps the result to restore it. On failure everything this call wrote is restored.
/// On the processor being programmed, only after the host's reservation succeeded and only
/// where [`FixedCounters::detect`] found the counters: `PASSIVE_LEVEL` from `DriverEntry`, and
/// `DISPATCH_LEVEL` from `RESUME_FROM_SYSTEM_STATE` (no allocation, two reads, two writes).
///
/// # Errors
/// [`MsrFault`] when a read or write faulted; the PMU is then as it was.
pub fn enable_fixed_counters<P: Platform>(platform: &P) -> Result<SavedPmuControl, MsrFault> {
    let saved = SavedPmuControl {
        fixed_ctr_ctrl: platform.read_msr(msr::IA32_FIXED_CTR_CTRL)?,
        perf_global_ctrl: platform.read_msr(msr::IA32_PERF_GLOBAL_CTRL)?,
    };
    let enabled = enabled_control(saved);
    platform.write_msr(msr::IA32_FIXED_CTR_CTRL, enabled.fixed_ctr_ctrl)?;
    if let Err(fault) = platform.write_msr(msr::IA32_PERF_GLOBAL_CTRL, enabled.perf_global_ctrl) {
        // Best effort: the first write succeeded, so restoring it should too.
        let _ = platform.write_msr(msr::IA32_FIXED_CTR_CTRL, saved.fixed_ctr_ctrl);
        return Err(fault);
    }
    Ok(saved)
}

/// Restores what [`enable_fixed_counters`] found. `PASSIVE_LEVEL`, on that processor.
///
/// # Errors
/// [`MsrFault`] when a write faulted.
pub fn restore_fixed_counters<P: Platform>(
    platform: &P,
    saved: SavedPmuControl,
) -> Result<(), MsrFault> {
    platform.write_msr(msr::IA32_PERF_GLOBAL_CTRL, saved.perf_global_ctrl)?;
    platform.write_msr(msr::IA32_FIXED_CTR_CTRL, saved.fixed_ctr_ctrl)
}
