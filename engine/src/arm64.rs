//! AArch64: the Activity Monitors (AMU), ARM's APERF/MPERF.
//!
//! The Armv8.4 Activity Monitors' architected group-0 counters 0 and 1 count processor cycles
//! (actual) and constant-frequency cycles (nominal: the system counter's rate, `CNTFRQ_EL0`)
//! while the processor is active — what Linux uses for frequency invariance
//! (`arch/arm64/kernel/topology.c`). An access to an AMU register the processor does not
//! implement (or that a hypervisor traps) is an undefined-instruction exception: unhandled in
//! the kernel, a bugcheck, so a kernel platform reads every AMU register under an exception
//! handler and answers a fault as [`crate::MsrFault`]. The engine reads `ID_AA64PFR0_EL1`
//! (always readable at EL1) first and touches an AMU register only when its `AMU` field
//! announces the extension; then the count of
//! group-0 counters (`AMCGCR_EL0.CG0NC`) must cover counters 0 and 1 and `AMCNTENSET0_EL0` must
//! show them enabled (firmware enables them; the PEP never writes a system register).

/// An AArch64 system register the engine reads (see [`crate::Platform::read_system_register`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemRegister {
    /// `ID_AA64PFR0_EL1`: processor feature register 0 (the `AMU` field, bits 47:44).
    IdAa64Pfr0El1,
    /// `AMCGCR_EL0`: counter group configuration (`CG0NC`, bits 7:0: group-0 counters).
    AmcgcrEl0,
    /// `AMCNTENSET0_EL0`: which group-0 counters are enabled (bit n: counter n).
    Amcntenset0El0,
    /// `AMEVCNTR00_EL0`: group-0 counter 0, processor cycles.
    Amevcntr00El0,
    /// `AMEVCNTR01_EL0`: group-0 counter 1, constant-frequency cycles.
    Amevcntr01El0,
    /// `CNTFRQ_EL0`: the system counter's frequency, Hz (bits 31:0).
    CntfrqEl0,
}

impl SystemRegister {
    /// The architectural name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::IdAa64Pfr0El1 => "ID_AA64PFR0_EL1",
            Self::AmcgcrEl0 => "AMCGCR_EL0",
            Self::Amcntenset0El0 => "AMCNTENSET0_EL0",
            Self::Amevcntr00El0 => "AMEVCNTR00_EL0",
            Self::Amevcntr01El0 => "AMEVCNTR01_EL0",
            Self::CntfrqEl0 => "CNTFRQ_EL0",
        }
    }

    /// Whether the register belongs to the AMU (an access is legal only where
    /// `ID_AA64PFR0_EL1.AMU` announces it).
    #[must_use]
    pub const fn is_amu(self) -> bool {
        matches!(
            self,
            Self::AmcgcrEl0 | Self::Amcntenset0El0 | Self::Amevcntr00El0 | Self::Amevcntr01El0
        )
    }
}

/// The `AMU` field of `ID_AA64PFR0_EL1`: 0 not implemented, 1 AMUv1, 2 AMUv1p1.
#[must_use]
pub const fn amu_version(id_aa64pfr0: u64) -> u64 {
    (id_aa64pfr0 >> 44) & 0xF
}

/// `AMCGCR_EL0.CG0NC`: the number of group-0 counters.
#[must_use]
pub const fn group0_counters(amcgcr: u64) -> u64 {
    amcgcr & 0xFF
}

/// Counters 0 (processor cycles) and 1 (constant-frequency cycles) in `AMCNTENSET0_EL0`.
pub const GROUP0_CYCLE_COUNTERS: u64 = 0b11;

/// The AArch64 instructions that cannot fault at EL1, for a kernel platform.
///
/// Each is one `MRS`/`MSR` of a register readable at EL1. The Activity Monitors' registers are
/// not here: a kernel platform reads them under an exception handler (the driver's
/// `amu_guard`).
#[cfg(target_arch = "aarch64")]
pub mod instructions {
    use super::SystemRegister;

    /// Reads `register` on the current processor if it is readable at EL1. Any IRQL.
    ///
    /// `ID_AA64PFR0_EL1` and `CNTFRQ_EL0` are; `None` for an Activity Monitors register, whose
    /// access can raise an undefined-instruction exception and therefore goes through the
    /// kernel platform's exception-guarded read (the driver's `amu_guard`).
    #[inline]
    #[must_use]
    pub fn read(register: SystemRegister) -> Option<u64> {
        let value: u64;
        match register {
            // SAFETY: an ID register, always readable at EL1.
            SystemRegister::IdAa64Pfr0El1 => unsafe {
                core::arch::asm!("mrs {}, ID_AA64PFR0_EL1", out(reg) value, options(nomem, nostack, preserves_flags));
            },
            // SAFETY: the generic timer's frequency register, readable at EL1.
            SystemRegister::CntfrqEl0 => unsafe {
                core::arch::asm!("mrs {}, CNTFRQ_EL0", out(reg) value, options(nomem, nostack, preserves_flags));
            },
            SystemRegister::AmcgcrEl0
            | SystemRegister::Amcntenset0El0
            | SystemRegister::Amevcntr00El0
            | SystemRegister::Amevcntr01El0 => return None,
        }
        Some(value)
    }

    /// The virtual count (`CNTVCT_EL0`), at `CNTFRQ_EL0`: the time stamp that bounds how far
    /// apart a counter pair's reads were. Any IRQL.
    #[inline]
    #[must_use]
    pub fn read_virtual_count() -> u64 {
        let value: u64;
        // SAFETY: the generic timer's virtual count, readable at EL1; `ISB` first so that the
        // read is not performed early (as the Arm ARM advises around counter reads).
        unsafe {
            core::arch::asm!("isb", "mrs {}, CNTVCT_EL0", out(reg) value, options(nomem, nostack, preserves_flags));
        }
        value
    }

    /// Saves `DAIF`, masks IRQ and FIQ, runs `f` and restores `DAIF` (never a blind unmask).
    /// Any IRQL.
    #[inline]
    pub fn with_interrupts_masked<R>(f: impl FnOnce() -> R) -> R {
        let saved: u64;
        // SAFETY: reading DAIF at EL1 has no side effect.
        unsafe {
            core::arch::asm!("mrs {}, DAIF", out(reg) saved, options(nomem, nostack, preserves_flags));
        }
        // SAFETY: masking IRQ and FIQ at EL1 (DAIFSet bits I and F); restored below.
        unsafe {
            core::arch::asm!("msr DAIFSet, #3", options(nomem, nostack, preserves_flags));
        }
        let result = f();
        // SAFETY: restores the saved mask exactly.
        unsafe {
            core::arch::asm!("msr DAIF, {}", in(reg) saved, options(nomem, nostack, preserves_flags));
        }
        result
    }
}
