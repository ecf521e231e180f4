//! The Activity Monitors read under structured exception handling (ARM64 only).
//!
//! An access to an AMU register raises an undefined-instruction exception where the processor
//! does not implement it or a hypervisor traps it: Xen traps every AMU register without hiding
//! the `ID_AA64PFR0_EL1.AMU` field, `FEAT_FGT` lets a hypervisor trap one AMU register while
//! the others (and the probe) still work, and KVM injects UNDEFINED. Unhandled in the kernel,
//! that is bugcheck 0x1E. So every AMU `MRS` the driver executes — the probe's `AMCGCR_EL0` and
//! `AMCNTENSET0_EL0`, the read path's `AMEVCNTR00_EL0` and `AMEVCNTR01_EL0` — is in one of the
//! four functions below, inside the `__except` scope of a `__C_specific_handler` scope table:
//! a fault answers [`MsrFault`], which the engine already treats as "no such counter" (the
//! emulated platform returns faults the same way).
//!
//! The functions are written in assembly (`global_asm!`), with the unwind directives and the
//! scope table by hand: rustc's integrated assembler produces the same bytes for the WDK build
//! on Windows and for the image linked on Linux, with no C compiler and no dependence on
//! whether a clang version covers an `MRS` inside `__try` (clang 14 drops the `__try` or emits
//! an empty scope table; see docs/driver.md). Each function is a leaf without a frame: no
//! prologue, so its unwind is "return to LR"; it makes no call. `scripts/check-driver-image.sh`
//! holds the hand-written data: every AMU `MRS` of the image must lie in an `__except` scope of
//! a function whose handler is `__C_specific_handler` imported from `ntoskrnl.exe`, in a guard
//! that makes no call.
//!
//! `ID_AA64PFR0_EL1`, `CNTFRQ_EL0`, `CNTVCT_EL0` and `DAIF` are architecturally readable at EL1
//! and stay plain `MRS` (the engine's [`ppm_engine::arm64::instructions`]).

use ppm_engine::MsrFault;
use ppm_engine::arm64::SystemRegister;

/// One guarded read: `NAME(value: *mut u64) -> u8`, 1 with the register in `*value`, or 0 (and
/// `*value` untouched) when the `MRS` raised an exception. The scope covers the `MRS` only;
/// the `__except` target (filter `EXCEPTION_EXECUTE_HANDLER`, 1) returns 0. The scope table is
/// `__C_specific_handler`'s: Count, then {BeginAddress, EndAddress, HandlerAddress,
/// JumpTarget}, image-relative. (Not formatted by rustfmt: one assembly line per source line.)
#[rustfmt::skip]
macro_rules! guarded_mrs {
    ($name:literal, $register:literal) => {
        core::arch::global_asm!(
            concat!(
                "    .text\n",
                "    .p2align 2\n",
                "    .globl ", $name, "\n",
                "    .def ", $name, "\n",
                "    .scl 2\n",
                "    .type 32\n",
                "    .endef\n",
                $name, ":\n",
                "    .seh_proc ", $name, "\n",
                "    .seh_handler __C_specific_handler, @except\n",
                "    .seh_endprologue\n",
                ".L", $name, "_try:\n",
                "    mrs x9, ", $register, "\n",
                ".L", $name, "_end_try:\n",
                "    str x9, [x0]\n",
                "    mov w0, #1\n",
                "    ret\n",
                ".L", $name, "_except:\n",
                "    mov w0, #0\n",
                "    ret\n",
                "    .seh_handlerdata\n",
                "    .word 1\n",
                "    .word .L", $name, "_try@IMGREL\n",
                "    .word .L", $name, "_end_try@IMGREL\n",
                "    .word 1\n",
                "    .word .L", $name, "_except@IMGREL\n",
                "    .text\n",
                "    .seh_endproc\n",
            ),
            options(raw)
        );
    };
}

// The AMU registers by their encodings (op0 3, op1 3, CRn 13): assemblers without the v8.4
// names accept them.
guarded_mrs!("ppm_amu_read_amcgcr", "S3_3_C13_C2_2");
guarded_mrs!("ppm_amu_read_amcntenset0", "S3_3_C13_C2_5");
guarded_mrs!("ppm_amu_read_amevcntr00", "S3_3_C13_C4_0");
guarded_mrs!("ppm_amu_read_amevcntr01", "S3_3_C13_C4_1");

unsafe extern "C" {
    /// `AMCGCR_EL0` into `*value` under `__try`/`__except`: 1, or 0 if the `MRS` faulted.
    fn ppm_amu_read_amcgcr(value: *mut u64) -> u8;
    /// `AMCNTENSET0_EL0`, likewise.
    fn ppm_amu_read_amcntenset0(value: *mut u64) -> u8;
    /// `AMEVCNTR00_EL0`, likewise.
    fn ppm_amu_read_amevcntr00(value: *mut u64) -> u8;
    /// `AMEVCNTR01_EL0`, likewise.
    fn ppm_amu_read_amevcntr01(value: *mut u64) -> u8;
}

/// `MRS` of an Activity Monitors register under SEH on the current processor: a fault is
/// [`MsrFault`], not a bugcheck. Any IRQL.
///
/// # Errors
/// [`MsrFault`] when the access raised an exception, or for a register that is not the AMU's.
#[inline]
pub fn read(register: SystemRegister) -> Result<u64, MsrFault> {
    let mut value = 0;
    let out = &raw mut value;
    let read = match register {
        // SAFETY: EL1 (a kernel driver); the guard catches the undefined-instruction exception
        // of an AMU access that is not implemented or is trapped; `out` is a valid u64 to write.
        SystemRegister::AmcgcrEl0 => unsafe { ppm_amu_read_amcgcr(out) },
        // SAFETY: as above.
        SystemRegister::Amcntenset0El0 => unsafe { ppm_amu_read_amcntenset0(out) },
        // SAFETY: as above.
        SystemRegister::Amevcntr00El0 => unsafe { ppm_amu_read_amevcntr00(out) },
        // SAFETY: as above.
        SystemRegister::Amevcntr01El0 => unsafe { ppm_amu_read_amevcntr01(out) },
        SystemRegister::IdAa64Pfr0El1 | SystemRegister::CntfrqEl0 => return Err(MsrFault),
    };
    if read == 0 { Err(MsrFault) } else { Ok(value) }
}
