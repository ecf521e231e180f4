"""The two architectures the runner executes: x64 and ARM64. Everything that differs between
them for the runner's own code — the Unicorn CPU, the calling convention (where argument N
lives, the return value, the return address), the stub instruction, the call frame, the
interrupt flag and the framework's unload thunk — lives here, so each kernel and KMDF
translation in services.py is written once."""

from __future__ import annotations

from collections.abc import Callable

from unicorn import UC_ARCH_ARM64, UC_ARCH_X86, UC_MODE_64, UC_MODE_ARM
from unicorn import arm64_const as arm64
from unicorn import x86_const as x86

from .layout import RFLAGS_IF

MASK64 = (1 << 64) - 1

# PSTATE/DAIF: D A I F are bits 9..6; DAIFSet/DAIFClr's 4-bit immediate holds them as bits 3..0.
DAIF_I = 1 << 7
DAIF_F = 1 << 6
DAIF_SHIFT = 6
PSTATE_EL1H = 0x5  # M[3:0]: EL1 with SP_EL1


class Arch:
    """One architecture's conventions, as the runner applies them."""

    name: str
    machine: int  # the PE header's FILE_HEADER.Machine
    uc_arch: int
    uc_mode: int
    pc: int
    sp: int
    result: int  # the register of a return value
    arg_registers: tuple[int, ...]
    stub_bytes: bytes  # one stub: returns to the caller
    max_imports: int  # stubs in the 4 KiB import stub page
    return_on_stack: bool  # a call pushes its return address (x64) or sets LR (ARM64)

    def stack_argument(self, sp: int, index: int) -> int:
        """The address of argument `index` (past the registers) at a callee's entry."""
        raise NotImplementedError

    def return_address(self, read_register: Callable[[int], int], u64: Callable) -> int:
        raise NotImplementedError

    def frame(self, top: int, extra: int) -> tuple[int, int, int]:
        """A call's frame below `top` for `extra` stack arguments: (the stack pointer at the
        callee's entry as the report measures it, the address of the first stack argument, the
        stack pointer to start with)."""
        raise NotImplementedError

    def call_registers(self, interrupts: bool, sentinel: int) -> list[tuple[int, int]]:
        """Registers to set for a call besides the arguments and the stack pointer."""
        raise NotImplementedError

    def unload_thunk(self, driver: int, target: int) -> bytes:
        """Code that tail-calls `target(driver)`: the framework's DriverUnload."""
        raise NotImplementedError


class X64(Arch):
    name = "x64"
    machine = 0x8664
    uc_arch, uc_mode = UC_ARCH_X86, UC_MODE_64
    pc, sp, result = x86.UC_X86_REG_RIP, x86.UC_X86_REG_RSP, x86.UC_X86_REG_RAX
    arg_registers = (x86.UC_X86_REG_RCX, x86.UC_X86_REG_RDX, x86.UC_X86_REG_R8, x86.UC_X86_REG_R9)
    stub_bytes = b"\xc3"  # ret
    max_imports = 0x1000
    return_on_stack = True

    def stack_argument(self, sp: int, index: int) -> int:
        return sp + 8 + 8 * index  # the return address, the home area, then the fifth

    def return_address(self, read_register: Callable[[int], int], u64: Callable) -> int:
        return u64(read_register(self.sp))

    def frame(self, top: int, extra: int) -> tuple[int, int, int]:
        sp = top - ((0x20 + 8 * extra + 15) & ~0xF)  # the home area, the stack arguments
        return sp, sp + 0x20, sp - 8  # the return address is pushed below

    def call_registers(self, interrupts: bool, sentinel: int) -> list[tuple[int, int]]:
        return [(x86.UC_X86_REG_RFLAGS, 0x2 | (RFLAGS_IF if interrupts else 0))]

    def unload_thunk(self, driver: int, target: int) -> bytes:
        return (
            b"\x48\xb9"
            + driver.to_bytes(8, "little")  # mov rcx, WDFDRIVER
            + b"\x48\xb8"
            + target.to_bytes(8, "little")  # mov rax, EvtDriverUnload
            + b"\xff\xe0"  # jmp rax
        )


def _word(value: int) -> bytes:
    return value.to_bytes(4, "little")


class Arm64(Arch):
    name = "arm64"
    machine = 0xAA64
    uc_arch, uc_mode = UC_ARCH_ARM64, UC_MODE_ARM
    pc, sp, result = arm64.UC_ARM64_REG_PC, arm64.UC_ARM64_REG_SP, arm64.UC_ARM64_REG_X0
    arg_registers = tuple(getattr(arm64, f"UC_ARM64_REG_X{n}") for n in range(8))
    stub_bytes = _word(0xD65F03C0)  # ret (x30)
    max_imports = 0x1000 // 4
    return_on_stack = False

    def stack_argument(self, sp: int, index: int) -> int:
        return sp + 8 * (index - 8)  # no return address on the stack: the ninth is at [SP]

    def return_address(self, read_register: Callable[[int], int], u64: Callable) -> int:
        return read_register(arm64.UC_ARM64_REG_LR)

    def frame(self, top: int, extra: int) -> tuple[int, int, int]:
        sp = top - ((8 * extra + 15) & ~0xF)
        return sp, sp, sp

    def call_registers(self, interrupts: bool, sentinel: int) -> list[tuple[int, int]]:
        daif = 0 if interrupts else DAIF_I | DAIF_F
        return [(arm64.UC_ARM64_REG_LR, sentinel), (arm64.UC_ARM64_REG_PSTATE, PSTATE_EL1H | daif)]

    def unload_thunk(self, driver: int, target: int) -> bytes:
        return (
            _word(0x58000080)  # ldr x0, [pc, #16]: WDFDRIVER
            + _word(0x580000B0)  # ldr x16, [pc, #20]: EvtDriverUnload
            + _word(0xD61F0200)  # br x16
            + _word(0xD503201F)  # nop (the literals 8-byte aligned)
            + driver.to_bytes(8, "little")
            + target.to_bytes(8, "little")
        )


ARCHES = {"x64": X64(), "arm64": Arm64()}
