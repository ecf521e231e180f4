//! x86-64 definitions: MSR numbers, CPUID leaves and bits, and the `cpuid`, `rdmsr` and
//! interrupt-masking instructions the kernel platform executes.
//!
//! The instruction wrappers exist only on `x86_64`; the constants everywhere, so that a host
//! emulator of another architecture can still model an x86 processor.
//!
//! Rule: an MSR is read only when CPUID says it exists. The model-specific Intel MSRs that no
//! CPUID bit announces (`MSR_PLATFORM_INFO`, `MSR_TURBO_RATIO_LIMIT`) are read only on bare
//! metal (CPUID.1:ECX\[31\] clear), on GenuineIntel family 6 from Nehalem (model 0x1A) on, where
//! every part has them; under a hypervisor they are never read.

/// MSR numbers.
pub mod msr {
    /// `IA32_MPERF`: counts at the nominal (TSC) rate while the processor is in C0.
    pub const IA32_MPERF: u32 = 0xE7;
    /// `IA32_APERF`: counts actual clocks while the processor is in C0.
    pub const IA32_APERF: u32 = 0xE8;
    /// AMD read-only copy of MPERF (CPUID `8000_0007h` EDX\[10\]).
    pub const AMD_MPERF_READ_ONLY: u32 = 0xC000_00E7;
    /// AMD read-only copy of APERF (CPUID `8000_0007h` EDX\[10\]).
    pub const AMD_APERF_READ_ONLY: u32 = 0xC000_00E8;
    /// Intel `MSR_PLATFORM_INFO`: bits 15:8 maximum non-turbo ratio, 47:40 maximum efficiency
    /// ratio, 55:48 minimum operating ratio.
    pub const MSR_PLATFORM_INFO: u32 = 0xCE;
    /// Intel `MSR_TURBO_RATIO_LIMIT`: bits 7:0 the one-core turbo ratio.
    pub const MSR_TURBO_RATIO_LIMIT: u32 = 0x1AD;
    /// `IA32_PM_ENABLE`: bit 0 HWP enabled.
    pub const IA32_PM_ENABLE: u32 = 0x770;
    /// `IA32_HWP_CAPABILITIES`: 7:0 highest, 15:8 guaranteed, 23:16 most efficient, 31:24 lowest.
    pub const IA32_HWP_CAPABILITIES: u32 = 0x771;
    /// `IA32_HWP_REQUEST` (never written by this PEP).
    pub const IA32_HWP_REQUEST: u32 = 0x774;
    /// AMD `CPPC_CAP1`: 7:0 lowest, 15:8 lowest nonlinear, 23:16 nominal, 31:24 highest.
    pub const AMD_CPPC_CAP1: u32 = 0xC001_02B0;
    /// AMD `CPPC_REQ` (never written by this PEP).
    pub const AMD_CPPC_REQ: u32 = 0xC001_02B3;
    /// AMD HWCR: bit 24 TscFreqSel.
    pub const AMD_HWCR: u32 = 0xC001_0015;
    /// `IA32_FIXED_CTR0`: instructions retired.
    pub const IA32_FIXED_CTR0: u32 = 0x309;
    /// `IA32_FIXED_CTR1`: unhalted core cycles (like APERF).
    pub const IA32_FIXED_CTR1: u32 = 0x30A;
    /// `IA32_FIXED_CTR2`: unhalted reference cycles (like MPERF).
    pub const IA32_FIXED_CTR2: u32 = 0x30B;
    /// `IA32_FIXED_CTR_CTRL`.
    pub const IA32_FIXED_CTR_CTRL: u32 = 0x38D;
    /// `IA32_PERF_GLOBAL_CTRL`.
    pub const IA32_PERF_GLOBAL_CTRL: u32 = 0x38F;
}

/// CPUID leaves and the bits this engine tests.
pub mod cpuid {
    /// Leaf 0: maximum basic leaf in EAX, vendor in EBX, EDX, ECX.
    pub const LEAF_VENDOR: u32 = 0;
    /// Leaf 1: family/model/stepping in EAX; ECX\[31\] hypervisor present.
    pub const LEAF_FEATURES: u32 = 1;
    /// Leaf 1 ECX bit 31: running under a hypervisor.
    pub const FEATURES_ECX_HYPERVISOR: u32 = 1 << 31;
    /// Leaf 6: thermal and power management.
    pub const LEAF_POWER: u32 = 6;
    /// Leaf 6 EAX bit 1: turbo boost.
    pub const POWER_EAX_TURBO: u32 = 1 << 1;
    /// Leaf 6 EAX bit 7: HWP.
    pub const POWER_EAX_HWP: u32 = 1 << 7;
    /// Leaf 6 EAX bit 10: HWP energy-performance preference.
    pub const POWER_EAX_HWP_EPP: u32 = 1 << 10;
    /// Leaf 6 ECX bit 0: `IA32_APERF` and `IA32_MPERF` present.
    pub const POWER_ECX_APERFMPERF: u32 = 1;
    /// Leaf 0Ah: architectural performance monitoring.
    pub const LEAF_PMU: u32 = 0x0A;
    /// Leaf 16h: processor frequency information (EAX base MHz).
    pub const LEAF_FREQUENCY: u32 = 0x16;
    /// Leaf `8000_0000h`: maximum extended leaf.
    pub const LEAF_EXTENDED_MAX: u32 = 0x8000_0000;
    /// Leaf `8000_0007h`: advanced power management.
    pub const LEAF_EXTENDED_POWER: u32 = 0x8000_0007;
    /// Leaf `8000_0007h` EDX bit 8: invariant TSC.
    pub const EXTENDED_POWER_EDX_INVARIANT_TSC: u32 = 1 << 8;
    /// Leaf `8000_0007h` EDX bit 10: EffFreqRO, the read-only APERF/MPERF copies (AMD).
    pub const EXTENDED_POWER_EDX_EFF_FREQ_RO: u32 = 1 << 10;
    /// Leaf `8000_0008h`: address sizes and extended features.
    pub const LEAF_EXTENDED_FEATURES: u32 = 0x8000_0008;
    /// Leaf `8000_0008h` EBX bit 27: MSR-based CPPC (AMD).
    pub const EXTENDED_FEATURES_EBX_CPPC: u32 = 1 << 27;

    /// "Genu" "ineI" "ntel" in EBX, EDX, ECX of leaf 0.
    pub const VENDOR_INTEL: [u32; 3] = [0x756E_6547, 0x4965_6E69, 0x6C65_746E];
    /// "Auth" "enti" "cAMD" in EBX, EDX, ECX of leaf 0.
    pub const VENDOR_AMD: [u32; 3] = [0x6874_7541, 0x6974_6E65, 0x444D_4163];
    /// "Hygo" "nGen" "uine" in EBX, EDX, ECX of leaf 0 (Hygon, AMD-compatible).
    pub const VENDOR_HYGON: [u32; 3] = [0x6F67_7948, 0x6E65_476E, 0x656E_6975];
}

/// Reads bits `low..=high` of `value`.
#[must_use]
pub const fn bits(value: u64, low: u32, high: u32) -> u64 {
    let width = high.saturating_sub(low).saturating_add(1);
    let mask = if width >= 64 { u64::MAX } else { (1u64 << width).wrapping_sub(1) };
    let shifted = match value.checked_shr(low) {
        Some(shifted) => shifted,
        None => 0,
    };
    shifted & mask
}

/// The instructions, for the kernel platform.
#[cfg(target_arch = "x86_64")]
pub mod instructions {
    use crate::platform::CpuidResult;

    /// Executes `CPUID` on the current processor. Any IRQL.
    #[must_use]
    #[inline]
    pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
        let raw = core::arch::x86_64::__cpuid_count(leaf, subleaf);
        CpuidResult { eax: raw.eax, ebx: raw.ebx, ecx: raw.ecx, edx: raw.edx }
    }

    /// Executes `RDMSR` for `msr` on the current processor. Any IRQL.
    ///
    /// # Safety
    /// Ring 0 only, and the MSR must exist on this processor (CPUID says so): reading a
    /// non-existent MSR raises #GP, which in the kernel is a bugcheck.
    #[must_use]
    #[inline]
    pub unsafe fn read_msr(msr: u32) -> u64 {
        let low: u32;
        let high: u32;
        // SAFETY: the caller guarantees ring 0 and that the MSR exists. RDMSR touches only
        // ECX, EAX and EDX and no memory or flags.
        unsafe {
            core::arch::asm!(
                "rdmsr",
                in("ecx") msr,
                out("eax") low,
                out("edx") high,
                options(nomem, nostack, preserves_flags)
            );
        }
        (u64::from(high) << 32) | u64::from(low)
    }

    /// Executes `WRMSR` for `msr` on the current processor. `PASSIVE_LEVEL` only in this PEP.
    ///
    /// # Safety
    /// Ring 0 only; the MSR must exist and `value` must be valid for it (reserved bits clear),
    /// or the write raises #GP. The caller owns the resource the MSR controls.
    #[inline]
    pub unsafe fn write_msr(msr: u32, value: u64) {
        let low = u32::try_from(value & 0xFFFF_FFFF).unwrap_or(0);
        let high = u32::try_from(value >> 32).unwrap_or(0);
        // SAFETY: the caller guarantees ring 0, an existing MSR and a valid value. WRMSR reads
        // ECX, EAX and EDX and touches no memory.
        unsafe {
            core::arch::asm!(
                "wrmsr",
                in("ecx") msr,
                in("eax") low,
                in("edx") high,
                options(nostack, preserves_flags)
            );
        }
    }

    /// Executes `RDTSC`. Any IRQL.
    #[must_use]
    #[inline]
    pub fn read_timestamp() -> u64 {
        let low: u32;
        let high: u32;
        // SAFETY: RDTSC is available in every mode unless CR4.TSD is set for user mode; it
        // touches only EAX and EDX.
        unsafe {
            core::arch::asm!(
                "rdtsc",
                out("eax") low,
                out("edx") high,
                options(nomem, nostack, preserves_flags)
            );
        }
        (u64::from(high) << 32) | u64::from(low)
    }

    /// RFLAGS.IF.
    const RFLAGS_IF: u64 = 1 << 9;

    /// Runs `f` with maskable interrupts disabled on the current processor and restores the
    /// previous interrupt state (enables only if they were enabled). Any IRQL.
    ///
    /// # Safety
    /// Ring 0 only (`CLI`/`STI` fault in user mode). `f` must be short: it runs with interrupts
    /// off.
    #[inline]
    pub unsafe fn with_interrupts_masked<R>(f: impl FnOnce() -> R) -> R {
        let flags: u64;
        // SAFETY: ring 0 (caller). PUSHFQ/POP read RFLAGS through the stack; CLI clears IF. No
        // `nomem`: the block is a compiler barrier, so no memory access of `f` moves above it.
        unsafe {
            core::arch::asm!("pushfq", "pop {flags}", "cli", flags = out(reg) flags);
        }
        let result = f();
        if flags & RFLAGS_IF != 0 {
            // SAFETY: ring 0 (caller); interrupts were enabled on entry, so enabling them
            // restores the caller's state. A compiler barrier like the block above.
            unsafe {
                core::arch::asm!("sti");
            }
        }
        result
    }
}
