//! The two architectures the runner executes: the Unicorn CPU, the calling convention (where
//! argument N lives, the return value, the return address), the stub instruction, the call frame,
//! the interrupt flag and the framework's unload thunk.

use std::ffi::c_int;

use crate::image::Arch;
use crate::layout::RFLAGS_IF;
use crate::unicorn;

/// x64 registers (Unicorn's numbers).
pub mod x86 {
    use std::ffi::c_int;
    /// RAX.
    pub const RAX: c_int = 35;
    /// RBP.
    pub const RBP: c_int = 36;
    /// RBX.
    pub const RBX: c_int = 37;
    /// RCX.
    pub const RCX: c_int = 38;
    /// RDI.
    pub const RDI: c_int = 39;
    /// RDX.
    pub const RDX: c_int = 40;
    /// RIP.
    pub const RIP: c_int = 41;
    /// RSI.
    pub const RSI: c_int = 43;
    /// RSP.
    pub const RSP: c_int = 44;
    /// R8.
    pub const R8: c_int = 106;
    /// R9.
    pub const R9: c_int = 107;
    /// R12.
    pub const R12: c_int = 110;
    /// R13.
    pub const R13: c_int = 111;
    /// R14.
    pub const R14: c_int = 112;
    /// R15.
    pub const R15: c_int = 113;
    /// RFLAGS.
    pub const RFLAGS: c_int = 253;
}

/// ARM64 registers (Unicorn's numbers).
pub mod arm64 {
    use std::ffi::c_int;
    /// X29, the frame pointer.
    pub const X29: c_int = 1;
    /// X30, the link register.
    pub const X30: c_int = 2;
    /// LR (X30).
    pub const LR: c_int = 2;
    /// SP.
    pub const SP: c_int = 4;
    /// X0 (X1..X28 follow).
    pub const X0: c_int = 199;
    /// PC.
    pub const PC: c_int = 260;
    /// `CPACR_EL1`.
    pub const CPACR_EL1: c_int = 261;
    /// PSTATE.
    pub const PSTATE: c_int = 265;

    /// Xn (31: none; the caller handles XZR).
    pub const fn x(n: u32) -> c_int {
        match n {
            29 => X29,
            30 => X30,
            #[allow(clippy::cast_possible_wrap)]
            _ => X0 + n as c_int,
        }
    }
}

/// PSTATE/DAIF: I.
pub const DAIF_I: u64 = 1 << 7;
/// PSTATE/DAIF: F.
pub const DAIF_F: u64 = 1 << 6;
/// DAIF's bits' shift in PSTATE.
pub const DAIF_SHIFT: u64 = 6;
/// `M[3:0]`: EL1 with `SP_EL1`.
pub const PSTATE_EL1H: u64 = 0x5;

/// x64's argument registers.
const X64_ARGS: [c_int; 4] = [x86::RCX, x86::RDX, x86::R8, x86::R9];
/// ARM64's argument registers.
const ARM64_ARGS: [c_int; 8] = [199, 200, 201, 202, 203, 204, 205, 206];

impl Arch {
    /// Unicorn's architecture and mode.
    pub const fn unicorn(self) -> (c_int, c_int) {
        match self {
            Self::X64 => (unicorn::ARCH_X86, unicorn::MODE_64),
            Self::Arm64 => (unicorn::ARCH_ARM64, unicorn::MODE_ARM),
        }
    }

    /// The program counter.
    pub const fn pc(self) -> c_int {
        match self {
            Self::X64 => x86::RIP,
            Self::Arm64 => arm64::PC,
        }
    }

    /// The stack pointer.
    pub const fn sp(self) -> c_int {
        match self {
            Self::X64 => x86::RSP,
            Self::Arm64 => arm64::SP,
        }
    }

    /// The register of a return value.
    pub const fn result(self) -> c_int {
        match self {
            Self::X64 => x86::RAX,
            Self::Arm64 => arm64::X0,
        }
    }

    /// The argument registers.
    pub const fn arg_registers(self) -> &'static [c_int] {
        match self {
            Self::X64 => &X64_ARGS,
            Self::Arm64 => &ARM64_ARGS,
        }
    }

    /// One stub: returns to the caller.
    pub const fn stub_bytes(self) -> &'static [u8] {
        match self {
            Self::X64 => &[0xC3],
            Self::Arm64 => &[0xC0, 0x03, 0x5F, 0xD6],
        }
    }

    /// A call pushes its return address (x64) or sets LR (ARM64).
    pub const fn return_on_stack(self) -> bool {
        matches!(self, Self::X64)
    }

    /// The address of argument `index` (past the registers) at a callee's entry.
    pub const fn stack_argument(self, sp: u64, index: u64) -> u64 {
        match self {
            Self::X64 => sp.wrapping_add(8 + 8 * index),
            Self::Arm64 => sp.wrapping_add(8 * index).wrapping_sub(64),
        }
    }

    /// A call's frame below `top` for `extra` stack arguments: (the stack pointer at the
    /// callee's entry as the report measures it, the first stack argument's address, the stack
    /// pointer to start with).
    pub const fn frame(self, top: u64, extra: u64) -> (u64, u64, u64) {
        match self {
            Self::X64 => {
                let sp = top - ((0x20 + 8 * extra + 15) & !0xF);
                (sp, sp + 0x20, sp - 8)
            }
            Self::Arm64 => {
                let sp = top - ((8 * extra + 15) & !0xF);
                (sp, sp, sp)
            }
        }
    }

    /// Registers to set for a call besides the arguments and the stack pointer.
    pub fn call_registers(self, interrupts: bool, sentinel: u64) -> Vec<(c_int, u64)> {
        match self {
            Self::X64 => vec![(x86::RFLAGS, 0x2 | if interrupts { RFLAGS_IF } else { 0 })],
            Self::Arm64 => {
                let daif = if interrupts { 0 } else { DAIF_I | DAIF_F };
                vec![(arm64::LR, sentinel), (arm64::PSTATE, PSTATE_EL1H | daif)]
            }
        }
    }

    /// Code that tail-calls `target(driver)`: the framework's `DriverUnload`.
    pub fn unload_thunk(self, driver: u64, target: u64) -> Vec<u8> {
        let mut code = Vec::new();
        match self {
            Self::X64 => {
                code.extend_from_slice(&[0x48, 0xB9]);
                code.extend_from_slice(&driver.to_le_bytes());
                code.extend_from_slice(&[0x48, 0xB8]);
                code.extend_from_slice(&target.to_le_bytes());
                code.extend_from_slice(&[0xFF, 0xE0]);
            }
            Self::Arm64 => {
                for word in [0x5800_0080u32, 0x5800_00B0, 0xD61F_0200, 0xD503_201F] {
                    code.extend_from_slice(&word.to_le_bytes());
                }
                code.extend_from_slice(&driver.to_le_bytes());
                code.extend_from_slice(&target.to_le_bytes());
            }
        }
        code
    }
}
