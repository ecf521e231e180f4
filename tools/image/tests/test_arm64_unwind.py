"""ARM64 exception dispatch (arm64_unwind) over hand-assembled functions executed by Unicorn:
a guard whose __except scope covers a call, a packed-unwind callee and an .xdata callee that
faults two frames below the guard. The prologues really run, so the virtual unwind is checked
against what the processor stored, not against the decoder's own idea of it."""

from __future__ import annotations

import pytest
from unicorn import UC_ARCH_ARM64, UC_HOOK_INTR, UC_MODE_ARM, UC_PROT_ALL, Uc
from unicorn import arm64_const as arm64

from ppm_image import arm64_unwind
from ppm_image.layout import STATUS_ILLEGAL_INSTRUCTION
from ppm_image.seh import Dispatch

BASE = 0x10000
SIZE = 0x3000
STACK = 0x80000
SENTINEL = 0xDEAD0000
C_SPECIFIC = 0x1F00  # the handler's RVA (an import thunk in a real image)
UDEF = 1  # Unicorn's exception number for an undefined instruction

# A64 encodings (checked with capstone when written).
STP_FP_LR_PRE16 = 0xA9BF7BFD  # stp x29, x30, [sp, #-16]!
MOV_FP_SP = 0x910003FD  # mov x29, sp
LDP_FP_LR_POST16 = 0xA8C17BFD  # ldp x29, x30, [sp], #16
STP_19_20_PRE16 = 0xA9BF53F3  # stp x19, x20, [sp, #-16]!
LDP_19_20_POST16 = 0xA8C153F3  # ldp x19, x20, [sp], #16
STP_19_20_PRE32 = 0xA9BE53F3  # stp x19, x20, [sp, #-32]!
STP_FP_LR_16 = 0xA9017BFD  # stp x29, x30, [sp, #16]
ADD_FP_SP_16 = 0x910043FD  # add x29, sp, #16
LDP_FP_LR_16 = 0xA9417BFD  # ldp x29, x30, [sp, #16]
LDP_19_20_POST32 = 0xA8C253F3  # ldp x19, x20, [sp], #32
MOV_X19_1, MOV_X20_2 = 0xD2800033, 0xD2800054
MOV_X19_0X53, MOV_X20_0X66 = 0xD2800A73, 0xD2800CD4
MOV_W0_1 = 0x52800020
RET = 0xD65F03C0
UDF = 0x00000000

GUARD, PACKED, XDATA = 0x1000, 0x1040, 0x1080  # the three functions' RVAs
GUARD_XDATA, CALLEE_XDATA, PDATA = 0x2000, 0x2100, 0x2800
# The packed callee: Flag 1, 8 instructions, RegI 2 (x19, x20), CR 3 (x29/LR chained),
# FrameSize 32 bytes: stp x19,x20,[sp,#-16]!; stp x29,x30,[sp,#-16]!; mov x29,sp.
PACKED_WORD = 1 | 8 << 2 | 2 << 16 | 3 << 21 | 2 << 23


def bl(at: int, to: int) -> int:
    return 0x94000000 | ((to - at) // 4 & 0x3FFFFFF)


def words(*values: int) -> bytes:
    return b"".join(value.to_bytes(4, "little") for value in values)


def image(scopes: list[tuple[int, int, int, int]]) -> bytes:
    """The three functions, their .xdata and .pdata, the guard's scope table `scopes`."""
    memory = bytearray(SIZE)
    guard = [
        STP_FP_LR_PRE16,
        MOV_FP_SP,
        MOV_X19_1,
        MOV_X20_2,
        bl(GUARD + 0x10, PACKED),  # the __try: this call
        MOV_W0_1,
        LDP_FP_LR_POST16,
        RET,
        LDP_FP_LR_POST16,  # the __except target (x0 holds the exception code)
        RET,
    ]
    packed = [
        STP_19_20_PRE16,
        STP_FP_LR_PRE16,
        MOV_FP_SP,
        MOV_X19_0X53,
        bl(PACKED + 0x10, XDATA),
        LDP_FP_LR_POST16,
        LDP_19_20_POST16,
        RET,
    ]
    callee = [
        STP_19_20_PRE32,
        STP_FP_LR_16,
        ADD_FP_SP_16,
        MOV_X20_0X66,
        UDF,  # the fault, two frames below the guard
        LDP_FP_LR_16,
        LDP_19_20_POST32,
        RET,
    ]
    for rva, code in ((GUARD, guard), (PACKED, packed), (XDATA, callee)):
        memory[rva : rva + 4 * len(code)] = words(*code)
    # The guard: 10 instructions, X (a handler), two epilogue scopes, one code word:
    # set_fp, save_fplr_x 16, end; each epilogue starts at code 1 (save_fplr_x 16, end).
    header = 10 | 1 << 20 | 2 << 22 | 1 << 27
    table = words(len(scopes), *(word for scope in scopes for word in scope))
    memory[GUARD_XDATA : GUARD_XDATA + 24 + len(table)] = (
        words(header, 6 | 1 << 22, 8 | 1 << 22)
        + bytes([0xE1, 0x81, 0xE4, 0xE4])
        + words(C_SPECIFIC)
        + table
    )
    # The .xdata callee: 8 instructions, E (one epilogue, its codes from index 2), two code
    # words: add_fp 16, save_fplr 16, save_r19r20_x 32, end.
    header = 8 | 1 << 21 | 2 << 22 | 2 << 27
    memory[CALLEE_XDATA : CALLEE_XDATA + 12] = words(header) + bytes(
        [0xE2, 0x02, 0x42, 0x24, 0xE4, 0xE4, 0xE4, 0xE4]
    )
    pdata = words(GUARD, GUARD_XDATA, PACKED, PACKED_WORD, XDATA, CALLEE_XDATA)
    memory[PDATA : PDATA + len(pdata)] = pdata
    return bytes(memory)


def run(scopes: list[tuple[int, int, int, int]]) -> tuple[Uc, list[Dispatch]]:
    """Calls the guard with LR at the sentinel; an undefined instruction is dispatched as the
    runner does (registers restored, x0 the code, pc the target) or stops the run."""
    memory = image(scopes)
    uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    uc.ctl_set_cpu_model(arm64.UC_CPU_ARM64_MAX)
    uc.mem_map(BASE, SIZE, UC_PROT_ALL)
    uc.mem_write(BASE, memory)
    uc.mem_map(STACK, 0x1000, UC_PROT_ALL)
    uc.reg_write(arm64.UC_ARM64_REG_SP, STACK + 0x1000)
    uc.reg_write(arm64.UC_ARM64_REG_LR, SENTINEL)
    uc.reg_write(arm64.UC_ARM64_REG_X29, 0x29)
    pdata = arm64_unwind.decode_pdata(memory[PDATA : PDATA + 24])
    unwinder = arm64_unwind.Unwinder(
        BASE, SIZE, pdata, lambda at, size: bytes(uc.mem_read(at, size)), {C_SPECIFIC}
    )
    registers = {f"x{n}": getattr(arm64, f"UC_ARM64_REG_X{n}") for n in range(19, 31)}
    registers["sp"] = arm64.UC_ARM64_REG_SP
    dispatches = []

    def exception(uc: Uc, number: int, _: object) -> None:
        assert number == UDEF
        regs = {name: uc.reg_read(reg) for name, reg in registers.items()}
        regs["pc"] = uc.reg_read(arm64.UC_ARM64_REG_PC)
        dispatch = unwinder.dispatch(regs, lambda pc: pc == SENTINEL)
        dispatches.append(dispatch)
        if dispatch.target is None:
            uc.emu_stop()
            return
        for name, reg in registers.items():
            uc.reg_write(reg, dispatch.registers[name])
        uc.reg_write(arm64.UC_ARM64_REG_X0, STATUS_ILLEGAL_INSTRUCTION)
        uc.reg_write(arm64.UC_ARM64_REG_PC, dispatch.target)

    uc.hook_add(UC_HOOK_INTR, exception)
    uc.emu_start(BASE + GUARD, SENTINEL, count=200)
    return uc, dispatches


COVERING_CALL = [(GUARD + 0x10, GUARD + 0x14, 1, GUARD + 0x20)]


def test_fault_two_frames_below_the_guard_resumes_at_its_except():
    """The .xdata callee faults; the packed caller is unwound, the guard's scope covers its
    call (matched at the return address - 4); the guard resumes at its __except with its own
    x19, x20, frame pointer and stack pointer, and returns the exception code."""
    uc, dispatches = run(COVERING_CALL)
    assert [d.target for d in dispatches] == [BASE + GUARD + 0x20]
    assert uc.reg_read(arm64.UC_ARM64_REG_PC) == SENTINEL
    assert uc.reg_read(arm64.UC_ARM64_REG_X0) == STATUS_ILLEGAL_INSTRUCTION
    assert uc.reg_read(arm64.UC_ARM64_REG_X19) == 1  # restored from the packed frame
    assert uc.reg_read(arm64.UC_ARM64_REG_X20) == 2  # restored from the .xdata frame
    assert uc.reg_read(arm64.UC_ARM64_REG_X29) == 0x29
    assert uc.reg_read(arm64.UC_ARM64_REG_SP) == STACK + 0x1000


def test_no_covering_scope_is_unhandled():
    """A scope that does not cover the call (the instruction after it), or none at all: no
    frame takes the exception, which Windows turns into bugcheck 0x1E."""
    for scopes in ([(GUARD + 0x14, GUARD + 0x18, 1, GUARD + 0x20)], []):
        uc, dispatches = run(scopes)
        assert [d.target for d in dispatches] == [None]
        assert dispatches[0].reason == "no __except handler in any frame"
        assert uc.reg_read(arm64.UC_ARM64_REG_PC) == BASE + XDATA + 0x10


def test_a_handler_that_is_not_c_specific_handler_is_unhandled():
    memory = image(COVERING_CALL)
    pdata = arm64_unwind.decode_pdata(memory[PDATA : PDATA + 24])
    unwinder = arm64_unwind.Unwinder(
        BASE, SIZE, pdata, lambda at, size: memory[at - BASE : at - BASE + size], {0x1F04}
    )
    regs = {f"x{n}": 0 for n in range(19, 31)} | {"sp": STACK, "pc": BASE + GUARD + 0x10}
    dispatch = unwinder.dispatch(regs, lambda pc: pc == SENTINEL)
    assert dispatch.target is None
    assert dispatch.reason == f"language handler at rva {C_SPECIFIC:#x} is not __C_specific_handler"


def test_packed_unwind_data_expands_to_the_documented_codes():
    """RegI 2, CR 3, FrameSize 32: save_regp_x x19 (-16), save_fplr_x 16, set_fp; listed in
    unwind order, then the epilogue without set_fp."""
    codes, epilogue = arm64_unwind.packed_codes(PACKED_WORD)
    assert codes == bytes([0xE1, 0x81, 0xCC, 0x01, 0xE4, 0x81, 0xCC, 0x01, 0xE4])
    assert epilogue == (5, 3)
    function = arm64_unwind.decode_function(PACKED, PACKED_WORD, lambda *_: b"")
    assert (function.begin, function.end, function.frame()) == (PACKED, PACKED + 32, 32)
    assert function.epilogues == [(PACKED + 32 - 12, 5)]
    # RegI 3 with CR 1 (x19/x20, then x21 and LR as a pair), RegF 1 (d8, d9), 16 bytes of
    # locals: save_regp_x x19 (-48), save_lrpair x21 at 16, save_fregp d8 at 32, alloc_s 16.
    codes, _ = arm64_unwind.packed_codes(1 | 4 << 2 | 1 << 13 | 3 << 16 | 1 << 21 | 4 << 23)
    assert codes[: codes.index(0xE4)] == bytes([0x01, 0xD8, 0x04, 0xD6, 0x42, 0xCC, 0x05])
    with pytest.raises(arm64_unwind.UnwindError, match="CR 2"):
        arm64_unwind.packed_codes(1 | 2 << 21)


def test_xdata_decoding_of_the_guard_and_the_callee():
    memory = image(COVERING_CALL)

    def read(rva: int, size: int) -> bytes:
        return memory[rva : rva + size]

    guard = arm64_unwind.decode_function(GUARD, GUARD_XDATA, read)
    assert (guard.end, guard.handler, guard.frame()) == (GUARD + 0x28, C_SPECIFIC, 16)
    assert guard.epilogues == [(GUARD + 0x18, 1), (GUARD + 0x20, 1)]
    assert arm64_unwind.scope_table(guard.handler_data, read) == [
        arm64_unwind.Scope(*scope) for scope in COVERING_CALL
    ]
    callee = arm64_unwind.decode_function(XDATA, CALLEE_XDATA, read)
    assert (callee.handler, callee.frame(), callee.epilogues) == (None, 32, [(XDATA + 0x14, 2)])


def test_fault_in_a_prologue_or_an_epilogue_unwinds_only_what_ran():
    """In the faulting frame, a pc inside the prologue undoes only the stores already made; a
    pc inside the epilogue only the restores still to come."""
    memory = bytearray(image(COVERING_CALL))
    stack = {STACK + 0x10: 0x119, STACK + 0x18: 0x120, STACK + 0x20: 0xF9, STACK + 0x28: 0x1A}

    def read(address: int, size: int) -> bytes:
        if BASE <= address < BASE + SIZE:
            return bytes(memory[address - BASE : address - BASE + size])
        return stack.get(address, 0).to_bytes(size, "little")

    pdata = arm64_unwind.decode_pdata(bytes(memory[PDATA : PDATA + 24]))
    unwinder = arm64_unwind.Unwinder(BASE, SIZE, pdata, read, {C_SPECIFIC})
    callee = unwinder.function(XDATA)
    start = {f"x{n}": n for n in range(19, 31)} | {"sp": STACK + 0x10}
    # After `stp x19, x20, [sp, #-32]!` only: x19, x20 back from [sp], sp + 32, pc = LR.
    regs = start | {"pc": BASE + XDATA + 4}
    unwinder.unwind(regs, callee, first=True)
    assert (regs["x19"], regs["x20"], regs["sp"], regs["pc"]) == (0x119, 0x120, STACK + 0x30, 30)
    # At the epilogue's `ldp x19, x20, [sp], #32`: x29/LR already restored.
    regs = start | {"pc": BASE + XDATA + 0x18}
    unwinder.unwind(regs, callee, first=True)
    assert (regs["x29"], regs["x19"], regs["sp"], regs["pc"]) == (29, 0x119, STACK + 0x30, 30)
