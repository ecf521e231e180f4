"""ARM64 unwind data and structured exception dispatch, written from the documented format
(learn.microsoft.com, "ARM64 exception handling"): .pdata entries {BeginAddress, UnwindData},
packed unwind data (Flag 1 or 2) and .xdata records (header, epilog scopes, unwind codes,
exception handler RVA and its data), and the scope table __C_specific_handler reads (Count,
then {BeginAddress, EndAddress, HandlerAddress, JumpTarget} RVAs, as on x64).

The one ARM64 decoder of the project: the runner dispatches exceptions with it
(`Unwinder`, the counterpart of seh.py's x64 one) and the image checker (image.ImageFile)
reads function ranges, frame sizes, handlers and scopes with it. Pure Python over a
`read(rva, size)` callable: no PE library here.

Packed unwind data is expanded into the unwind codes the documentation says it is equivalent
to, so one interpreter unwinds both forms. A frame is a dict of "pc", "sp" and the
non-volatile general registers x19..x30 (x29 the frame pointer, x30 the link register).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

# The scope table and the dispatch's frame walk are the same on both architectures.
from .seh import FrameWalk, Scope, UnwindError, scope_table, u32

NONVOLATILE = tuple(f"x{n}" for n in range(19, 31))
END, END_C = 0xE4, 0xE5


@dataclass
class Function:
    """One .pdata entry, decoded: [begin, end), the unwind codes (packed data expanded), the
    epilogues as (start RVA, index of their first code), the exception handler's RVA and the
    RVA of its data (None without one)."""

    begin: int
    end: int
    unwind: int  # the .pdata entry's second word
    packed: bool
    codes: bytes
    epilogues: list[tuple[int, int]] = field(default_factory=list)
    handler: int | None = None
    handler_data: int | None = None

    def frame(self) -> int:
        """Bytes of stack the function allocates: the largest allocation its prologue's or any
        epilogue's codes describe (with a frame pointer, LLVM's prologue codes omit the
        allocation made after setting it; the epilogue's undo it)."""
        if self.packed:
            return (self.unwind >> 23) * 16  # FrameSize
        frames = [frame_of_codes(self.codes, 0, self.unwind)]
        frames += [frame_of_codes(self.codes, index, self.unwind) for _, index in self.epilogues]
        return max(frames)


def decode_pdata(data: bytes) -> list[tuple[int, int]]:
    """(BeginAddress, UnwindData) of each 8-byte .pdata entry, sorted by address."""
    if len(data) % 8:
        raise UnwindError(f".pdata size {len(data)} is not a multiple of 8")
    return sorted((u32(data, o), u32(data, o + 4)) for o in range(0, len(data), 8))


def decode_function(begin: int, unwind: int, read: Callable[[int, int], bytes]) -> Function:
    """The .pdata entry (begin, unwind) decoded; `read(rva, size)` reads the image."""
    flag = unwind & 3
    if flag in (1, 2):
        length = (unwind >> 2 & 0x7FF) * 4
        codes, epilogue = packed_codes(unwind)
        epilogues = [(begin + length - 4 * epilogue[1], epilogue[0])] if epilogue else []
        return Function(begin, begin + length, unwind, True, codes, epilogues)
    if flag == 3:
        raise UnwindError(f".pdata entry {begin:#x}: Flag 3 is reserved")
    header = u32(read(unwind, 4), 0)
    length = (header & 0x3FFFF) * 4
    if header >> 18 & 3:
        raise UnwindError(f".xdata at {unwind:#x}: version {header >> 18 & 3}")
    has_handler, single = header >> 20 & 1, header >> 21 & 1
    epilog_count, words = header >> 22 & 0x1F, header >> 27
    cursor = unwind + 4
    if epilog_count == 0 and words == 0:
        extended = u32(read(cursor, 4), 0)
        epilog_count, words = extended & 0xFFFF, extended >> 16 & 0xFF
        cursor += 4
    scopes = []
    if not single:
        raw = read(cursor, 4 * epilog_count) if epilog_count else b""
        scopes = [u32(raw, 4 * n) for n in range(epilog_count)]
        cursor += 4 * epilog_count
    codes = read(cursor, 4 * words) if words else b""
    cursor += 4 * words
    if single:
        # One epilogue, at the end of the function: its codes from index `epilog_count`, one
        # instruction each up to its end (the `ret`).
        size = instruction_count(codes, epilog_count) + 1
        epilogues = [(begin + length - 4 * size, epilog_count)]
    else:
        epilogues = [(begin + (word & 0x3FFFF) * 4, word >> 22) for word in scopes]
    function = Function(begin, begin + length, unwind, False, bytes(codes), epilogues)
    if has_handler:
        function.handler = u32(read(cursor, 4), 0)
        function.handler_data = cursor + 4
    return function


def packed_codes(unwind: int) -> tuple[bytes, tuple[int, int] | None]:
    """The unwind codes packed unwind data stands for (the documentation's table of the
    canonical prologue, listed in unwind order, then `end`), and its epilogue as (index of its
    first code, its length in instructions including the `ret`), None for Flag 2 (a fragment
    without prologue or epilogue)."""
    flag = unwind & 3
    reg_f, reg_i = unwind >> 13 & 7, unwind >> 16 & 0xF
    homes, chain = unwind >> 20 & 1, unwind >> 21 & 3
    frame = (unwind >> 23) * 16
    if chain == 2:
        raise UnwindError(f"packed unwind data {unwind:#x}: CR 2 (PAC) is not decoded")
    int_size = 8 * reg_i + (8 if chain == 1 else 0)
    fp_size = 8 * reg_f + (8 if reg_f else 0)
    save_size = (int_size + fp_size + 64 * homes + 0xF) & ~0xF
    locals_size = frame - save_size
    if locals_size < 0:
        raise UnwindError(f"packed unwind data {unwind:#x}: FrameSize below the save area")
    prologue: list[bytes] = []  # in execution order
    first = True  # the first store pre-decrements by the save area

    def stored(offset: int) -> tuple[int, int]:
        nonlocal first
        if first:
            first = False
            return save_size, 1
        return offset, 0

    # 1-2: x19.. in pairs (the last alone), LR after them with CR 1.
    registers = list(range(reg_i)) + (["lr"] if chain == 1 else [])
    offset = 0
    index = 0
    while index < len(registers):
        pair = registers[index : index + 2]
        at, pre = stored(offset)
        if len(pair) == 2 and pair[1] == "lr":  # save_lrpair, never pre-indexed
            if pre:
                raise UnwindError(f"packed unwind data {unwind:#x}: CR 1 with one register")
            prologue.append(bytes([0xD6 | pair[0] // 2 >> 2, (pair[0] // 2 & 3) << 6 | at // 8]))
        elif len(pair) == 2:
            z = at // 8 - 1 if pre else at // 8
            prologue.append(bytes([0xC8 | pre << 2 | pair[0] >> 2, (pair[0] & 3) << 6 | z]))
        elif pair[0] == "lr":
            z = at // 8 - 1 if pre else at // 8
            op = 0xD4 if pre else 0xD0
            reg = 11  # x30: 19 + 11
            if pre:
                prologue.append(bytes([op | reg >> 3, (reg & 7) << 5 | z]))
            else:
                prologue.append(bytes([op | reg >> 2, (reg & 3) << 6 | z]))
        else:
            reg = pair[0]
            z = at // 8 - 1 if pre else at // 8
            if pre:
                prologue.append(bytes([0xD4 | reg >> 3, (reg & 7) << 5 | z]))
            else:
                prologue.append(bytes([0xD0 | reg >> 2, (reg & 3) << 6 | z]))
        offset += 8 * len(pair)
        index += len(pair)
    # 3: d8.. in pairs (the last alone), after the integer registers.
    count_f = reg_f + 1 if reg_f else 0
    offset = int_size
    index = 0
    while index < count_f:
        alone = index + 1 == count_f
        at, pre = stored(offset)
        z = at // 8 - 1 if pre else at // 8
        if alone:
            code = (0xDE, index << 5 | z) if pre else (0xDC | index >> 2, (index & 3) << 6 | z)
        else:
            code = (0xD8 | pre << 1 | index >> 2, (index & 3) << 6 | z)
        prologue.append(bytes(code))
        offset += 8 if alone else 16
        index += 1 if alone else 2
    # 4: x0..x7 homed (nops for the unwinder).
    if homes:
        if first:
            raise UnwindError(f"packed unwind data {unwind:#x}: H without saved registers")
        prologue += [bytes([0xE3])] * 4
    # 5-8: the locals, the frame chain.
    if chain == 3 and locals_size < 16:
        raise UnwindError(f"packed unwind data {unwind:#x}: CR 3 without room for x29, lr")
    if chain == 3 and locals_size <= 512:
        prologue.append(bytes([0x80 | (locals_size // 8 - 1)]))  # stp x29,lr,[sp,#-L]!
        prologue.append(bytes([0xE1]))  # mov x29, sp
    else:
        remaining = locals_size
        if remaining > 4080:
            prologue.append(_alloc(4080))
            remaining -= 4080
        if remaining:
            prologue.append(_alloc(remaining))
        if chain == 3:
            prologue.append(bytes([0x40]))  # stp x29,lr,[sp,#0]
            prologue.append(bytes([0xE2, 0]))  # add x29, sp, #0
    unwind_order = b"".join(reversed(prologue))
    codes = unwind_order + bytes([END])
    if flag == 2:
        return codes, None
    # The epilogue undoes the prologue in the same order, but for `mov x29, sp` and the homed
    # registers (not restored): its codes follow the prologue's.
    epilogue = [c for c in reversed(prologue) if c not in (bytes([0xE1]), bytes([0xE3]))]
    start = len(codes)
    codes += b"".join(epilogue) + bytes([END])
    return codes, (start, len(epilogue) + 1)


def _alloc(size: int) -> bytes:
    units = size // 16
    if units < 0x20:
        return bytes([units])  # alloc_s
    return bytes([0xC0 | units >> 8, units & 0xFF])  # alloc_m


def code_size(code: int) -> int:
    """Bytes of the unwind code that starts with `code`."""
    if code < 0xC0:
        return 1
    if code < 0xE0 or code == 0xE2:
        return 2
    if code == 0xE0:
        return 4
    if code == 0xE7:
        return 3
    if 0xF8 <= code <= 0xFB:  # reserved, with 1 to 4 operand bytes
        return code - 0xF6
    return 1


def instruction_count(codes: bytes, index: int) -> int:
    """The instructions the codes from `index` describe, up to their end."""
    count = 0
    while index < len(codes) and codes[index] not in (END, END_C):
        count += 1
        index += code_size(codes[index])
    return count


def frame_of_codes(codes: bytes, index: int, where: int) -> int:
    """Bytes of stack the unwind codes from `index` to the next `end` allocate."""
    frame = 0
    while index < len(codes):
        code = codes[index]
        operand = codes[index + 1] if index + 1 < len(codes) else 0
        if code < 0x20:  # alloc_s
            frame += (code & 0x1F) * 16
        elif code < 0x40:  # save_r19r20_x
            frame += (code & 0x1F) * 8
        elif code < 0x80:  # save_fplr
            pass
        elif code < 0xC0:  # save_fplr_x
            frame += ((code & 0x3F) + 1) * 8
        elif code < 0xC8:  # alloc_m
            frame += ((code & 0x7) << 8 | operand) * 16
        elif code in (0xCC, 0xCD, 0xCE, 0xCF, 0xDA, 0xDB):  # save_regp_x, save_fregp_x
            frame += ((operand & 0x3F) + 1) * 8
        elif code in (0xD4, 0xD5, 0xDE):  # save_reg_x, save_freg_x
            frame += ((operand & 0x1F) + 1) * 8
        elif code == 0xE0:  # alloc_l
            frame += int.from_bytes(codes[index + 1 : index + 4], "big") * 16
        elif code in (END, END_C):
            break
        elif code in (0xE7, 0xFC) or 0xC8 <= code <= 0xE6 or 0xE8 <= code <= 0xEF:
            pass  # saves without allocation, set_fp/add_fp, nop, save_next, custom, pac
        else:
            raise UnwindError(f"ARM64 .xdata at {where:#x}: unknown unwind code {code:#04x}")
        index += code_size(code)
    return frame


def execute(codes: bytes, index: int, skip: int, regs: dict[str, int], u64, where: int) -> None:
    """Applies the unwind codes from `index` to their end to `regs` (a virtual unwind of one
    frame's saves and allocations), leaving out the first `skip` (instructions of a prologue
    not yet executed, or of an epilogue already executed); then the `end`: pc = lr."""
    pending_next = 0
    while index < len(codes):
        code = codes[index]
        size = code_size(code)
        operand = codes[index + 1] if size > 1 and index + 1 < len(codes) else 0
        if code in (END, END_C):
            break
        if skip:
            skip -= 1
            index += size
            continue
        sp = regs["sp"]
        pair_at = None  # (first register number, address, pre-indexed bytes) of a pair restore
        if code < 0x20:  # alloc_s
            regs["sp"] = sp + (code & 0x1F) * 16
        elif code < 0x40:  # save_r19r20_x
            pair_at = (19, sp, (code & 0x1F) * 8)
        elif code < 0x80:  # save_fplr
            _restore(regs, u64, ("x29", "x30"), sp + (code & 0x3F) * 8)
        elif code < 0xC0:  # save_fplr_x
            _restore(regs, u64, ("x29", "x30"), sp)
            regs["sp"] = sp + ((code & 0x3F) + 1) * 8
        elif code < 0xC8:  # alloc_m
            regs["sp"] = sp + ((code & 7) << 8 | operand) * 16
        elif code < 0xCC:  # save_regp
            pair_at = (19 + ((code & 3) << 2 | operand >> 6), sp + (operand & 0x3F) * 8, 0)
        elif code < 0xD0:  # save_regp_x
            pair_at = (19 + ((code & 3) << 2 | operand >> 6), sp, ((operand & 0x3F) + 1) * 8)
        elif code < 0xD4:  # save_reg
            register = 19 + ((code & 3) << 2 | operand >> 6)
            _restore(regs, u64, (f"x{register}",), sp + (operand & 0x3F) * 8)
        elif code < 0xD6:  # save_reg_x
            register = 19 + ((code & 1) << 3 | operand >> 5)
            _restore(regs, u64, (f"x{register}",), sp)
            regs["sp"] = sp + ((operand & 0x1F) + 1) * 8
        elif code < 0xD8:  # save_lrpair
            register = 19 + 2 * ((code & 1) << 2 | operand >> 6)
            _restore(regs, u64, (f"x{register}", "x30"), sp + (operand & 0x3F) * 8)
        elif code in (0xDA, 0xDB):  # save_fregp_x: d8..d15 are not tracked
            regs["sp"] = sp + ((operand & 0x3F) + 1) * 8
        elif code == 0xDE:  # save_freg_x
            regs["sp"] = sp + ((operand & 0x1F) + 1) * 8
        elif code < 0xE0 and code != 0xDF:  # save_fregp, save_freg
            pass
        elif code == 0xE0:  # alloc_l
            regs["sp"] = sp + int.from_bytes(codes[index + 1 : index + 4], "big") * 16
        elif code == 0xE1:  # set_fp
            regs["sp"] = regs["x29"]
        elif code == 0xE2:  # add_fp
            regs["sp"] = regs["x29"] - operand * 8
        elif code == 0xE3 or code == 0xFC:  # nop, pac_sign_lr
            pass
        elif code == 0xE6:  # save_next: one more pair after the next pair save
            pending_next += 1
        else:
            raise UnwindError(f"ARM64 .xdata at {where:#x}: unwind code {code:#04x} not decoded")
        if pair_at is not None:
            first, address, advance = pair_at
            for pair in range(pending_next + 1):
                names = tuple(f"x{first + 2 * pair + n}" for n in (0, 1))
                _restore(regs, u64, names, address + 16 * pair)
            regs["sp"] = sp + advance
        if code != 0xE6:
            pending_next = 0
        index += size
    regs["pc"] = regs["x30"]


def _restore(regs: dict[str, int], u64, names: tuple[str, ...], address: int) -> None:
    for offset, name in enumerate(names):
        if name in regs:
            regs[name] = u64(address + 8 * offset)


class Unwinder(FrameWalk):
    """Virtual unwinding and __C_specific_handler scope lookup over one mapped ARM64 image:
    the same interface as seh.Unwinder (x64), with frames of pc, sp and x19..x30."""

    PC = "pc"
    CALL_BYTES = 4

    def __init__(
        self,
        base: int,
        size: int,
        pdata: list[tuple[int, int]],
        read: Callable[[int, int], bytes],
        c_specific_handler: set[int],
    ):
        super().__init__(base, size, pdata, read, c_specific_handler)
        self.decoded: dict[int, Function] = {}

    def function(self, rva: int) -> Function | None:
        index = bisect.bisect_right(self.begins, rva) - 1
        if index < 0:
            return None
        begin, unwind = self.pdata[index]
        function = self.decoded.get(begin)
        if function is None:
            function = decode_function(begin, unwind, self._read_rva)
            self.decoded[begin] = function
        return function if function.begin <= rva < function.end else None

    def unwind(self, regs: dict[str, int], function: Function, first: bool) -> None:
        """One frame: restores `regs` (pc, sp, x19..x30) to the caller's. In the faulting
        frame (`first`) the pc may lie in the prologue (only its executed instructions are
        undone) or in an epilogue (only those not yet executed are)."""
        offset = regs["pc"] - self.base - function.begin
        codes = function.codes
        if first:
            prologue = instruction_count(codes, 0)
            if offset < 4 * prologue:
                execute(codes, 0, prologue - offset // 4, regs, self.u64, function.unwind)
                return
            for start, index in function.epilogues:
                into = regs["pc"] - self.base - start
                if 0 <= into < 4 * (instruction_count(codes, index) + 1):
                    execute(codes, index, into // 4, regs, self.u64, function.unwind)
                    return
        execute(codes, 0, 0, regs, self.u64, function.unwind)

    def scopes(self, function: Function) -> tuple[int | None, list[Scope]]:
        """The language handler's RVA (None without one) and its scope table (empty unless
        the handler is __C_specific_handler)."""
        if function.handler is None or function.handler_data is None:
            return None, []
        if function.handler not in self.c_specific_handler:
            return function.handler, []
        return function.handler, scope_table(function.handler_data, self._read_rva)

    def leaf(self, regs: dict[str, int], first: bool) -> str:
        """A leaf without a frame (the faulting one only): the return address is in LR."""
        if not first:
            return "no unwind data"
        regs["pc"] = regs["x30"]
        return ""

    def step(self, regs: dict[str, int], function: Function, first: bool) -> None:
        self.unwind(regs, function, first)
