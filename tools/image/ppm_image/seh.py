"""x64 unwind data and structured exception dispatch from the image's .pdata, written from
the documented format (learn.microsoft.com, "x64 exception handling"): RUNTIME_FUNCTION,
UNWIND_INFO and its UNWIND_CODEs, and the scope table __C_specific_handler reads (Count, then
{BeginAddress, EndAddress, HandlerAddress, JumpTarget} RVAs, the same on ARM64).

The one x64 decoder of the project: the runner dispatches exceptions with `Unwinder`, and the
image checker (image.ImageFile) reads frame sizes, handlers and scope tables with
`unwind_info`, `frame_of_codes` and `scope_table`. Pure Python over a `read(rva, size)`
callable: no PE library here.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass

# UNWIND_INFO flags.
UNW_FLAG_EHANDLER = 1
UNW_FLAG_UHANDLER = 2
UNW_FLAG_CHAININFO = 4
# UNWIND_CODE operations (6 to 9 carry no general register or allocation).
UWOP_PUSH_NONVOL = 0
UWOP_ALLOC_LARGE = 1
UWOP_ALLOC_SMALL = 2
UWOP_SET_FPREG = 3
UWOP_SAVE_NONVOL = 4
UWOP_SAVE_NONVOL_FAR = 5
UWOP_PUSH_MACHFRAME = 10
EXCEPTION_EXECUTE_HANDLER = 1
MAX_FRAMES = 256
MAX_CHAIN = 32
MAX_SCOPES = 1024

# UNWIND_CODE register numbers: RAX RCX RDX RBX RSP RBP RSI RDI R8..R15.
REGISTERS = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi") + tuple(
    f"r{n}" for n in range(8, 16)
)
NONVOLATILE = ("rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15")


class UnwindError(Exception):
    """The unwind data cannot be followed (a one-line reason)."""


@dataclass
class Scope:
    """One scope table entry: [begin, end) guarded, the filter (1: EXCEPTION_EXECUTE_HANDLER)
    or __finally handler, the __except target (0 for a __finally); RVAs."""

    begin: int
    end: int
    handler: int
    target: int


def u16(data: bytes, offset: int) -> int:
    """The little-endian u16 at `offset` of `data`."""
    return int.from_bytes(data[offset : offset + 2], "little")


def u32(data: bytes, offset: int) -> int:
    """The little-endian u32 at `offset` of `data`."""
    return int.from_bytes(data[offset : offset + 4], "little")


@dataclass
class UnwindInfo:
    """One UNWIND_INFO: its header fields, its UNWIND_CODE slots (16-bit) and `tail`, the RVA
    after them (the exception handler's RVA, or the chained RUNTIME_FUNCTION)."""

    rva: int
    version: int
    flags: int
    prolog: int
    frame_register: int
    frame_offset: int
    codes: list[int]
    tail: int


def unwind_info(rva: int, read: Callable[[int, int], bytes]) -> UnwindInfo:
    """The UNWIND_INFO at `rva`; `read(rva, size)` reads the image."""
    version_flags, prolog, count, frame = read(rva, 4)
    version = version_flags & 7
    if version not in (1, 2):
        raise UnwindError(f"UNWIND_INFO at {rva:#x}: version {version}")
    codes = list(struct.unpack(f"<{count}H", read(rva + 4, count * 2))) if count else []
    tail = rva + 4 + ((count + 1) & ~1) * 2
    return UnwindInfo(rva, version, version_flags >> 3, prolog, frame & 15, frame >> 4, codes, tail)


def frame_of_codes(info: UnwindInfo) -> int:
    """Bytes of stack the prologue's unwind codes allocate (pushes, allocations, a machine
    frame); not the chained parent's."""
    frame = 0
    i = 0
    codes = info.codes
    while i < len(codes):
        op, op_info = (codes[i] >> 8) & 15, codes[i] >> 12
        if op > UWOP_PUSH_MACHFRAME:
            raise UnwindError(f"UNWIND_INFO at {info.rva:#x}: unknown unwind operation {op}")
        slots = _slots(op, op_info, info.version)
        if i + slots > len(codes):
            raise UnwindError(f"UNWIND_INFO at {info.rva:#x}: unwind code {op} cut short")
        if op == UWOP_PUSH_NONVOL:
            frame += 8
        elif op == UWOP_ALLOC_SMALL:
            frame += op_info * 8 + 8
        elif op == UWOP_ALLOC_LARGE:
            frame += codes[i + 1] * 8 if op_info == 0 else codes[i + 1] | codes[i + 2] << 16
        elif op == UWOP_PUSH_MACHFRAME:
            frame += 48 if op_info else 40
        i += slots
    return frame


def scope_table(rva: int, read: Callable[[int, int], bytes]) -> list[Scope]:
    """The __C_specific_handler SCOPE_TABLE at `rva` (Count, then Count entries), on x64 and
    ARM64 alike."""
    count = u32(read(rva, 4), 0)
    if count > MAX_SCOPES:
        raise UnwindError(f"scope table at {rva:#x}: {count} entries")
    raw = read(rva + 4, 16 * count) if count else b""
    return [Scope(*(u32(raw, 16 * n + 4 * w) for w in range(4))) for n in range(count)]


@dataclass
class Dispatch:
    """Where an exception goes: the frame whose __except takes it, or None when none does."""

    target: int | None  # absolute JumpTarget
    registers: dict[str, int] | None  # rsp, rip and the non-volatile registers to resume with
    reason: str  # why unhandled (empty when handled)


class FrameWalk:
    """The exception dispatch both architectures' unwinders share: the frame walk from the
    faulting frame up, each frame's scopes judged by `frame_verdict`. A subclass names its
    program counter (`PC`), how far before a return address its call lies (`CALL_BYTES`), and
    provides over its own unwind data `function(rva)` (the frame's unwind entry, or None),
    `scopes(function)` (its language handler and scope table), `leaf(regs, first)` (unwinds a
    frame without unwind data, or says why it cannot: "" when done) and `step(regs, function,
    first)` (unwinds a frame with it; `first`: the faulting frame)."""

    PC = "rip"
    CALL_BYTES = 1

    def __init__(
        self,
        base: int,
        size: int,
        pdata: list[tuple[int, ...]],
        read: Callable[[int, int], bytes],
        c_specific_handler: set[int],
    ):
        self.base = base
        self.size = size
        self.pdata = pdata  # the image's .pdata entries, sorted (image.pdata_of)
        self.begins = [entry[0] for entry in pdata]
        self.read = read  # absolute address, size
        self.c_specific_handler = c_specific_handler  # RVAs of the handler's import thunk(s)

    def _read_rva(self, rva: int, size: int) -> bytes:
        if not 0 <= rva <= self.size - size:
            raise UnwindError(f"{size} bytes at rva {rva:#x} lie outside the image")
        return self.read(self.base + rva, size)

    def u64(self, address: int) -> int:
        return int.from_bytes(self.read(address, 8), "little")

    def dispatch(self, regs: dict[str, int], stop: Callable[[int], bool]) -> Dispatch:
        """Finds the __except that takes an exception raised at regs[PC]: walks the frames (the
        faulting frame's PC, callers' return address - CALL_BYTES, as __C_specific_handler
        matches a frame whose ControlPc is unwound) until a scope covers it with
        EXCEPTION_EXECUTE_HANDLER. `stop(pc)` ends the walk (the command's return sentinel)."""
        regs = dict(regs)
        first = True
        for _ in range(MAX_FRAMES):
            pc = regs[self.PC]
            if stop(pc):
                return Dispatch(None, None, "no __except handler in any frame")
            rva = pc - self.base - (0 if first else self.CALL_BYTES)
            if not 0 <= rva < self.size:
                return Dispatch(None, None, f"frame at {pc:#x} outside the image")
            function = self.function(rva)
            if function is None:
                refused = self.leaf(regs, first)
                if refused:
                    return Dispatch(None, None, f"frame at {pc:#x}: {refused}")
            else:
                handler, scopes = self.scopes(function)
                verdict = frame_verdict(
                    handler, scopes, self.c_specific_handler, rva, regs, self.base, self.PC
                )
                if verdict is not None:
                    return verdict
                self.step(regs, function, first)
            first = False
        return Dispatch(None, None, f"more than {MAX_FRAMES} frames")


class Unwinder(FrameWalk):
    """Virtual unwinding and __C_specific_handler scope lookup over one mapped x64 image."""

    def function(self, rva: int) -> tuple[int, int, int] | None:
        index = bisect.bisect_right(self.begins, rva) - 1
        if index >= 0 and self.pdata[index][0] <= rva < self.pdata[index][1]:
            return self.pdata[index]
        return None

    def unwind(self, regs: dict[str, int], function: tuple[int, int, int]) -> None:
        """One frame: restores `regs` (rip, rsp, non-volatiles) to the caller's."""
        begin, _, unwind_rva = function
        offset = regs["rip"] - self.base - begin
        machine_frame = False
        for depth in range(MAX_CHAIN):
            info = unwind_info(unwind_rva, self._read_rva)
            version, flags, prolog, codes = info.version, info.flags, info.prolog, info.codes
            frame_reg, frame_off = info.frame_register, info.frame_offset
            in_prolog = depth == 0 and offset < prolog
            frame = regs["rsp"]
            if frame_reg and not (in_prolog and not _fpreg_done(codes, offset)):
                frame = regs[REGISTERS[frame_reg]] - frame_off * 16
            i = 0
            while i < len(codes):
                code_offset, op, op_info = codes[i] & 0xFF, (codes[i] >> 8) & 15, codes[i] >> 12
                slots = _slots(op, op_info, version)
                if in_prolog and code_offset > offset:
                    i += slots
                    continue
                if op == UWOP_PUSH_NONVOL:
                    regs[REGISTERS[op_info]] = self.u64(regs["rsp"])
                    regs["rsp"] += 8
                elif op == UWOP_ALLOC_LARGE:
                    if op_info == 0:
                        regs["rsp"] += codes[i + 1] * 8
                    else:
                        regs["rsp"] += codes[i + 1] | (codes[i + 2] << 16)
                elif op == UWOP_ALLOC_SMALL:
                    regs["rsp"] += op_info * 8 + 8
                elif op == UWOP_SET_FPREG:
                    regs["rsp"] = regs[REGISTERS[frame_reg]] - frame_off * 16
                elif op == UWOP_SAVE_NONVOL:
                    regs[REGISTERS[op_info]] = self.u64(frame + codes[i + 1] * 8)
                elif op == UWOP_SAVE_NONVOL_FAR:
                    regs[REGISTERS[op_info]] = self.u64(frame + (codes[i + 1] | codes[i + 2] << 16))
                elif op in (6, 7, 8, 9):  # epilog (v2), XMM saves: no general register
                    pass
                elif op == UWOP_PUSH_MACHFRAME:
                    rsp = regs["rsp"] + (8 if op_info else 0)
                    regs["rip"] = self.u64(rsp)
                    regs["rsp"] = self.u64(rsp + 24)
                    machine_frame = True
                else:
                    raise UnwindError(f"UNWIND_INFO at {unwind_rva:#x}: unwind code {op}")
                i += slots
            if not flags & UNW_FLAG_CHAININFO:
                break
            chained = self._read_rva(info.tail, 12)
            begin, _, unwind_rva = struct.unpack("<III", chained)
        else:
            raise UnwindError(f"UNWIND_INFO at {unwind_rva:#x}: chain longer than {MAX_CHAIN}")
        if not machine_frame:
            regs["rip"] = self.u64(regs["rsp"])
            regs["rsp"] += 8

    def scopes(self, function: tuple[int, int, int]) -> tuple[int | None, list[Scope]]:
        """The language handler's RVA (None without UNW_FLAG_EHANDLER) and its scope table."""
        info = unwind_info(function[2], self._read_rva)
        if not info.flags & UNW_FLAG_EHANDLER:
            return None, []
        handler = u32(self._read_rva(info.tail, 4), 0)
        if handler not in self.c_specific_handler:
            return handler, []
        return handler, scope_table(info.tail + 4, self._read_rva)

    def leaf(self, regs: dict[str, int], first: bool) -> str:
        """A leaf: the return address is at [RSP]."""
        regs["rip"] = self.u64(regs["rsp"])
        regs["rsp"] += 8
        return ""

    def step(self, regs: dict[str, int], function: tuple[int, int, int], first: bool) -> None:
        self.unwind(regs, function)

    def backtrace(
        self, regs: dict[str, int], stop: Callable[[int], bool]
    ) -> tuple[list[int], dict[str, int]]:
        """The return addresses of the frames above regs["rip"] (the first is regs["rip"]
        itself), by the same virtual unwind as the dispatch, until `stop(rip)`; and the
        registers unwound to that point."""
        regs = dict(regs)
        frames = []
        for depth in range(MAX_FRAMES):
            rip = regs["rip"]
            if stop(rip):
                return frames, regs
            frames.append(rip)
            rva = rip - self.base - (0 if depth == 0 else 1)
            if not 0 <= rva < self.size:
                raise UnwindError(f"frame at {rip:#x} outside the image")
            function = self.function(rva)
            if function is None:
                regs["rip"] = self.u64(regs["rsp"])
                regs["rsp"] += 8
            else:
                self.unwind(regs, function)
        raise UnwindError(f"more than {MAX_FRAMES} frames")


def frame_verdict(
    handler: int | None,
    scopes: list[Scope],
    c_specific_handler: set[int],
    rva: int,
    regs: dict[str, int],
    base: int,
    pc: str = "rip",
) -> Dispatch | None:
    """What one frame does with an exception at `rva` (its control PC, image-relative), on
    either architecture: a Dispatch resuming `regs` at the JumpTarget of the first
    __C_specific_handler scope that covers it with EXCEPTION_EXECUTE_HANDLER (`pc` the name of
    the program counter in `regs`), an unhandled Dispatch for a language handler that is not
    __C_specific_handler, a filter function or a __finally on the way, or None: on to the
    caller."""
    if handler is not None and handler not in c_specific_handler:
        return Dispatch(
            None, None, f"language handler at rva {handler:#x} is not __C_specific_handler"
        )
    for scope in scopes:
        if not scope.begin <= rva < scope.end:
            continue
        if not scope.target:
            return Dispatch(None, None, f"__finally at rva {scope.handler:#x} on the unwind path")
        if scope.handler != EXCEPTION_EXECUTE_HANDLER:
            return Dispatch(
                None, None, f"__except filter function at rva {scope.handler:#x} (unsupported)"
            )
        resume = dict(regs)
        resume[pc] = base + scope.target
        return Dispatch(base + scope.target, resume, "")
    return None


def _slots(op: int, info: int, version: int) -> int:
    """How many 16-bit slots an unwind code takes. Codes 6 and 7: version 1's
    UWOP_SAVE_XMM/UWOP_SAVE_XMM_FAR (2 and 3 slots), version 2's UWOP_EPILOG (1 slot)."""
    if op == 1:
        return 2 if info == 0 else 3
    if op in (4, 8):
        return 2
    if op in (5, 9):
        return 3
    if op == 6:
        return 1 if version == 2 else 2
    if op == 7:
        return 1 if version == 2 else 3
    return 1


def _fpreg_done(codes: list[int], offset: int) -> bool:
    for code in codes:
        if (code >> 8) & 15 == 3:
            return (code & 0xFF) <= offset
    return True
