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

/// One guarded read: `NAME() -> AmuRead`.
///
/// The result is in X0 and X1 (a 16-byte composite is returned in registers): the register
/// and 0, or 0 and 1 when the `MRS` raised an exception. The scope covers the `MRS` only; the
/// `__except` target (filter `EXCEPTION_EXECUTE_HANDLER`, 1) returns the fault. The scope
/// table is `__C_specific_handler`'s: `Count`, then {`BeginAddress`, `EndAddress`,
/// `HandlerAddress`, `JumpTarget`}, image-relative. (Not formatted by rustfmt: one assembly
/// line per source line.)
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
                "    mrs x0, ", $register, "\n",
                ".L", $name, "_end_try:\n",
                "    mov x1, #0\n",
                "    ret\n",
                ".L", $name, "_except:\n",
                "    mov x0, #0\n",
                "    mov x1, #1\n",
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

/// What a guard returns (X0, X1): the register's value, and whether the `MRS` faulted.
#[repr(C)]
struct AmuRead {
    value: u64,
    faulted: u64,
}

// Returned in X0 and X1 only as a composite of at most 16 bytes.
const _: () = assert!(core::mem::size_of::<AmuRead>() == 16);
const _: () = assert!(core::mem::offset_of!(AmuRead, faulted) == 8);

unsafe extern "C" {
    /// `AMCGCR_EL0` under `__try`/`__except`.
    fn ppm_amu_read_amcgcr() -> AmuRead;
    /// `AMCNTENSET0_EL0`, likewise.
    fn ppm_amu_read_amcntenset0() -> AmuRead;
    /// `AMEVCNTR00_EL0`, likewise.
    fn ppm_amu_read_amevcntr00() -> AmuRead;
    /// `AMEVCNTR01_EL0`, likewise.
    fn ppm_amu_read_amevcntr01() -> AmuRead;
}

/// `MRS` of an Activity Monitors register under SEH on the current processor: a fault is
/// [`MsrFault`], not a bugcheck. Any IRQL.
///
/// # Errors
/// [`MsrFault`] when the access raised an exception, or for a register that is not the AMU's.
#[inline]
pub fn read(register: SystemRegister) -> Result<u64, MsrFault> {
    let read = match register {
        // SAFETY: EL1 (a kernel driver); the guard takes no argument, touches no memory and
        // catches the undefined-instruction exception of an AMU access that is not
        // implemented or is trapped.
        SystemRegister::AmcgcrEl0 => unsafe { ppm_amu_read_amcgcr() },
        // SAFETY: as above.
        SystemRegister::Amcntenset0El0 => unsafe { ppm_amu_read_amcntenset0() },
        // SAFETY: as above.
        SystemRegister::Amevcntr00El0 => unsafe { ppm_amu_read_amevcntr00() },
        // SAFETY: as above.
        SystemRegister::Amevcntr01El0 => unsafe { ppm_amu_read_amevcntr01() },
        SystemRegister::IdAa64Pfr0El1 | SystemRegister::CntfrqEl0 => return Err(MsrFault),
    };
    if read.faulted == 0 { Ok(read.value) } else { Err(MsrFault) }
}
