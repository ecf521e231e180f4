"""The dev-only image runner of `ppm-sim --pep image` (docs/image-backend.md): maps
ppm_pep.sys into Unicorn, binds its imports and the KMDF function table to stubs, executes
ppm-sim's commands, and turns each kernel call and machine instruction into a host request.

Run through scripts/image-runner.sh (its own virtualenv: Unicorn is GPL-2.0 and stays out of
every shipped binary). Reads commands on stdin, writes answers and host requests on stdout.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import re
import sys
import traceback
from operator import attrgetter
from pathlib import Path
from typing import Any

from unicorn import (
    UC_ERR_INSN_INVALID,
    UC_HOOK_CODE,
    UC_HOOK_INTR,
    UC_HOOK_MEM_FETCH_UNMAPPED,
    UC_HOOK_MEM_READ_PROT,
    UC_HOOK_MEM_READ_UNMAPPED,
    UC_HOOK_MEM_WRITE_PROT,
    UC_HOOK_MEM_WRITE_UNMAPPED,
    UC_MEM_WRITE_PROT,
    UC_MEM_WRITE_UNMAPPED,
    UC_PROT_ALL,
    UC_PROT_EXEC,
    UC_PROT_NONE,
    UC_PROT_READ,
    UC_PROT_WRITE,
    Uc,
    UcError,
)
from unicorn import arm64_const as arm64
from unicorn import x86_const as x86
from unicorn.unicorn_py3.unicorn import HOOK_CODE_CFUNC, uclib

from . import arm64_unwind, native, printf, seh
from . import image as pe_image
from .arch import ARCHES, DAIF_I, DAIF_SHIFT, Arch
from .instruction_counter import InstructionCounter
from .layout import (
    ATTEMPTED_WRITE_TO_READONLY_MEMORY,
    DATA,
    DATA_SIZE,
    DRIVER_INIT,
    DRIVER_OBJECT,
    DRIVER_OBJECT_SIZE,
    DRIVER_SIZE,
    DRIVER_START,
    DRIVER_UNLOAD,
    IMAGE_BASE,
    IMPORT_STUBS,
    IO_TYPE_DRIVER,
    KMDF_HEADER,
    KMDF_MAX_FUNCTIONS,
    KMDF_STUBS,
    KMODE_EXCEPTION_NOT_HANDLED,
    MAX_CACHED_PAGES,
    MAX_CALL_ARGS,
    MAX_STACK_BYTES,
    MAX_TIMESTAMPS,
    NESTED_GAP,
    NESTED_SENTINEL,
    PAGE,
    PAGE_FAULT_IN_NONPAGED_AREA,
    PAINT,
    POFX_STUBS,
    POOL,
    REGISTRY_PATH,
    REGISTRY_PATH_BUFFER,
    REGISTRY_PATH_MAX_BYTES,
    RFLAGS_IF,
    SENTINEL,
    STACK_GUARD,
    STATUS_BREAKPOINT,
    STATUS_ILLEGAL_INSTRUCTION,
    STATUS_INTEGER_DIVIDE_BY_ZERO,
    STATUS_PRIVILEGED_INSTRUCTION,
    STUBS,
    STUBS_SIZE,
    UNEXPECTED_KERNEL_MODE_TRAP,
    UNICODE_STRING_BUFFER,
    UNLOAD_THUNK,
    UNREACHED,
    USER_LIMIT,
    WDFDEVICE_INIT,
    WDFDRIVER,
    Crash,
    Fatal,
    hang_seconds_from_environment,
)
from .native import checked
from .protocol import Channel, ProtocolError, hex_bytes, integer, unsigned
from .services import Services
from .verifier import Verifier, effective_irql, is_activity_monitor
from .watchdog import Watchdog

# X0..X30 (Unicorn numbers X29 and X30 apart from the others); 31 is XZR in MRS/MSR.
ARM64_X = tuple(getattr(arm64, f"UC_ARM64_REG_X{n}") for n in range(29)) + (
    arm64.UC_ARM64_REG_X29,
    arm64.UC_ARM64_REG_X30,
)
ARM64_CPACR_FPEN = 3 << 20  # FP/SIMD not trapped at EL1 (Windows enables it for drivers)
# Unicorn's ARM64 exception numbers (QEMU's EXCP_*) and the BRK immediates Windows defines.
ARM64_EXCP_UDEF = 1
ARM64_EXCP_BKPT = 7
ARM64_EXCP_ABORTS = (3, 4)  # prefetch abort, data abort
ARM64_BRK_IMMEDIATES = {
    0xF000: STATUS_BREAKPOINT,  # __debugbreak
    0xF004: STATUS_INTEGER_DIVIDE_BY_ZERO,  # the compiler's divide-by-zero check
}
ARM64_BRK_FASTFAIL = 0xF003
CNTVCT_EL0 = (3, 3, 14, 0, 2)  # MRS of the virtual count: ARM64's time-stamp read
# What an ARM64 virtual unwind restores besides SP and PC: x19..x28, the frame pointer, LR.
ARM64_NONVOLATILE_REGS = {f"x{n}": ARM64_X[n] for n in range(19, 31)}
NONVOLATILE_REGS = {
    "rbx": x86.UC_X86_REG_RBX,
    "rbp": x86.UC_X86_REG_RBP,
    "rsi": x86.UC_X86_REG_RSI,
    "rdi": x86.UC_X86_REG_RDI,
    "r12": x86.UC_X86_REG_R12,
    "r13": x86.UC_X86_REG_R13,
    "r14": x86.UC_X86_REG_R14,
    "r15": x86.UC_X86_REG_R15,
}
# RDMSR's and RDTSC's result registers, written in one batch (Registers.write_all).
EDX_EAX = (x86.UC_X86_REG_RAX, x86.UC_X86_REG_RDX)
# The runner's state of one call (plain instance attributes), saved by a nested call and
# restored when it returns: read by one attrgetter, written back by one dict update.
_CALL_STATE = ("crash", "interrupts", "processor", "irql", "timestamps", "windows")
_call_state = attrgetter(*_CALL_STATE)
MAX_LOW_WATER_HINTS = 256  # stack addresses whose recent low-water marks are kept
LOW_WATER_HINTS = 4  # the marks kept per address: the notifications one window delivers


def _address_of(memory: memoryview) -> int:
    """Where `memory` (a view of a writable mmap) lies in this process."""
    return ctypes.addressof(ctypes.c_char.from_buffer(memory))


class Registers:
    """64-bit register access straight through Unicorn's C API: the binding's reg_read and
    reg_write cost ~5 us each (register-class lookup per call), ~30 per FEEDBACK_READ. Relies
    on unicorn 2.1.4's `uclib` and `Uc._uch` (the pinned version)."""

    def __init__(self, uc: Uc):
        self.handle = uc._uch
        self.value = ctypes.c_uint64()
        self.pointer = ctypes.byref(self.value)
        self.batches: dict[tuple[int, ...], tuple[Any, Any, Any]] = {}

    def read(self, register: int) -> int:
        uclib.uc_reg_read(self.handle, register, self.pointer)
        return self.value.value

    def write(self, register: int, value: int) -> None:
        self.value.value = value
        uclib.uc_reg_write(self.handle, register, self.pointer)

    def write_all(self, registers: tuple[int, ...], values: list[int]) -> None:
        """Writes `values` to `registers` in one call (uc_reg_write_batch), through arrays
        kept per register list."""
        batch = self.batches.get(registers)
        if batch is None:
            numbers = (ctypes.c_int * len(registers))(*registers)
            slots = (ctypes.c_uint64 * len(registers))()
            base = ctypes.addressof(slots)
            pointers = (ctypes.c_void_p * len(registers))(
                *(base + 8 * n for n in range(len(registers)))
            )
            batch = self.batches[registers] = (numbers, slots, pointers)
        numbers, slots, pointers = batch
        slots[:] = values
        checked(uclib.uc_reg_write_batch(self.handle, numbers, pointers, len(registers)))


def _pages(message: dict[str, Any]) -> tuple[tuple[int, bytes], ...]:
    """A call's `pages` as the channel read them ([[address, bytes], ...]: Channel._pages),
    each a whole page of ppm-sim's user half."""
    out = []
    for address, data in message.get("pages", []):
        address = unsigned(address, "page")
        if address % PAGE or address + PAGE > USER_LIMIT or len(data) != PAGE:
            raise ProtocolError(f"call: page {address:#x} is not a whole page of the user half")
        out.append((address, data))
    return tuple(out)


def _timestamps(message: dict[str, Any]) -> list[Any] | None:
    """A message's `timestamps`: the time-stamp counter as a read returns it as the 1st, 2nd, …
    interrupt window from here (the read's own window included; one value: every read's, the
    windows take no time), or None. Each counter is checked when a read uses it (most answers'
    are never used)."""
    timestamps = message.get("timestamps")
    if timestamps is None:
        return None
    if not isinstance(timestamps, list) or not 1 <= len(timestamps) <= MAX_TIMESTAMPS:
        raise ProtocolError(
            f"'timestamps' must be a list of 1 to {MAX_TIMESTAMPS} counters, got {timestamps!r}"
        )
    return timestamps


def kmdf_names(header: Path = KMDF_HEADER) -> dict[int, str]:
    text = header.read_text(encoding="utf-8")
    return {
        int(index): name
        for name, index in re.findall(r"\b(Wdf\w+)TableIndex\s*=\s*(\d+)", text)
        if name != "WdfFunction"
    }


class Runner(Services):
    def __init__(self, channel: Channel):
        self.channel = channel
        self.uc: Uc | None = None
        self.image: pe_image.Image | None = None
        self.crash: Crash | None = None
        self.fatal: BaseException | None = None
        self.watchdog: Watchdog | None = None
        self.hang_seconds = hang_seconds_from_environment()
        self.executed: set[int] = set()  # function start RVAs
        self.function_hooks: dict[int, int] = {}  # function address -> its one-shot hook
        self.hook_functions: list[Any] = []  # the C functions of _code_hook's hooks
        self.contexts: list[Any] = []  # per nesting level: the interrupted call's registers
        # The registers a call sets (its arguments', the stack pointer, the architecture's
        # call_registers), per count of arguments in registers: one batch each.
        self.call_register_names: dict[int, tuple[int, ...]] = {}
        self.stack_report: dict[int, list[int]] = {}
        self.kmdf_calls: dict[int, int] = {}
        self.kmdf_count = 0
        self.etw_providers: dict[int, tuple[int, int]] = {}
        self.kernel_information = 0  # the image's PEP_KERNEL_INFORMATION, once registered
        self.seh_log: list[dict[str, Any]] = []
        self.mirrors: list[dict[int, bytes]] = []  # per call level: page -> bytes served
        self.stack_floor = 0  # lowest stack address of the command before a nested repaint
        # [stack_low, painted_below) holds the paint (a command repaints only above it).
        self.painted_below = 0
        self.paint = b""  # the stack's size in PAINT bytes
        # 2^k for each bit of the stack's size, largest first: a painted prefix is found by
        # memcmps of pieces of these lengths (_lowest_touched).
        self.paint_pieces: list[int] = []
        # The stack's memory (_map_own_memory), so that painting it and finding its low-water
        # mark copy nothing through Unicorn.
        self.stack = memoryview(b"")
        self.paint_view = memoryview(b"")
        # The recent low-water marks found below each stack address, latest first
        # (_lowest_touched's hints).
        self.low_water: dict[int, list[int]] = {}
        self.refresh: int | None = None  # a stale page the image touched (see _emulate)
        self.stale: set[int] = set()  # ppm-sim pages still mapped, PROT_NONE, from past calls
        # Every mapped ppm-sim page's memory (_map_own_memory), so that serving and comparing
        # a page copies it once, not through Unicorn's API.
        self.host_pages: dict[int, memoryview] = {}
        self.host_addresses: dict[int, int] = {}  # where each of them lies in this process
        # Stale pages a call released and left readable until the image could touch them: the
        # next call starts or the interrupted call resumes (the next command, or the next
        # notification nested at the same window, usually sends the same payload page again:
        # no protect, no unprotect).
        self.unprotected: set[int] = set()
        self.interrupts = True
        # The current call's processor, when ppm-sim sent one (no interrupt can arrive in the
        # call), so KeGetCurrentProcessorNumberEx is answered here, and it and interrupt
        # masking deferred.
        self.processor: dict[str, Any] | None = None
        self.deferred: list[dict[str, Any]] = []  # requests reported with the next message
        # The time-stamp counter as ppm-sim would answer a read as the 1st, 2nd, … interrupt
        # window from the last message (one value: any read's): sent with a call that names its
        # processor and with each answer in it (None: ask).
        self.timestamps: list[Any] | None = None
        self.windows = 0  # interrupt windows the call passed since `timestamps` came
        self.pool_next = POOL
        self.pool_mapped = POOL
        self.device_add: int = 0
        self.driver_unload: int = 0
        self.arch: Arch = ARCHES["x64"]
        self.kmdf_index_names = kmdf_names()
        self.imports_by_stub: dict[int, tuple[str, str]] = {}
        # Driver Verifier's rules (verifier.py), when ppm-sim loads the image with `verifier`.
        self.verifier: Verifier | None = None
        self.irql = 0  # the IRQL the kernel made the current call at
        self.counter: InstructionCounter | None = None  # the image's instructions, when counted
        self.nested_instructions = 0  # of the calls nested in the current one

    # ---- memory -------------------------------------------------------------------------

    def _ensure(self, address: int, length: int) -> None:
        """Makes the ppm-sim pages in [address, address+length) live for this call (fetched
        with `read`), the same lazy fetch as the image's own accesses; any other unmapped
        address is a page fault."""
        page = address & ~(PAGE - 1)
        while page < address + length:
            if page + PAGE <= USER_LIMIT:
                if not self.mirrors:
                    raise Crash(
                        PAGE_FAULT_IN_NONPAGED_AREA,
                        [address, 0, self._rip(), 0],
                        f"access to user-mode address {address:#x} outside a call",
                        self._rip(),
                    )
                if not any(page in level for level in self.mirrors):
                    self._fetch_page(page)
            elif not self._is_mapped(page):
                raise Crash(
                    PAGE_FAULT_IN_NONPAGED_AREA,
                    [address, 0, self._rip(), 0],
                    f"access to unmapped memory at {address:#x}",
                    self._rip(),
                )
            page += PAGE

    def _is_mapped(self, page: int) -> bool:
        try:
            self.uc.mem_read(page, 1)
        except UcError:
            return False
        return True

    def read(self, address: int, length: int) -> bytes:
        if length <= 0:
            return b""
        if address < USER_LIMIT:
            self._ensure(address, length)
            return bytes(self.uc.mem_read(address, length))
        try:
            return bytes(self.uc.mem_read(address, length))
        except UcError:
            self._ensure(address, length)
            return bytes(self.uc.mem_read(address, length))

    def write(self, address: int, data: bytes) -> None:
        if not data:
            return
        if address < USER_LIMIT:
            self._ensure(address, len(data))
            self.uc.mem_write(address, data)
            return
        try:
            self.uc.mem_write(address, data)
        except UcError:
            self._ensure(address, len(data))
            self.uc.mem_write(address, data)

    def u16(self, address: int) -> int:
        return int.from_bytes(self.read(address, 2), "little")

    def u32(self, address: int) -> int:
        return int.from_bytes(self.read(address, 4), "little")

    def u64(self, address: int) -> int:
        return int.from_bytes(self.read(address, 8), "little")

    def put(self, address: int, value: int, size: int) -> None:
        if address:
            self.write(address, (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))

    def unicode_string(self, address: int) -> str:
        if not address:
            return ""
        length = self.u16(address)
        buffer = self.u64(address + UNICODE_STRING_BUFFER)
        return self.read(buffer, length & ~1).decode("utf-16-le", "replace")

    def c_string(self, address: int) -> str:
        return self._terminated(address, 1).decode("latin-1")

    def wide_string(self, address: int) -> str:
        return self._terminated(address, 2).decode("utf-16-le", "replace")

    def _terminated(self, address: int, unit: int) -> bytes:
        if not address:
            return b"(null)".decode().encode("utf-16-le" if unit == 2 else "latin-1")
        out = bytearray()
        while len(out) < printf.MAX_TEXT * unit:
            chunk = self.read(address + len(out), unit)
            if chunk == b"\0" * unit:
                break
            out += chunk
        return bytes(out)

    def _fetch_page(self, page: int) -> None:
        """Serves a ppm-sim page to this call. Pages stay mapped between calls (mapping and
        unmapping flush Unicorn's translated code, which cost more than the rest of a call),
        protected PROT_NONE while stale, so the next touch fetches them again."""
        self._install_page(page, self._read_page(page))

    def _install_page(self, page: int, data: bytes) -> None:
        """Maps ppm-sim's `page` with `data` for this call (see _fetch_page)."""
        if page in self.stale:
            self.stale.discard(page)
            if page in self.unprotected:
                self.unprotected.discard(page)
            else:
                self.uc.mem_protect(page, PAGE, UC_PROT_READ | UC_PROT_WRITE)
        else:
            if len(self.stale) >= MAX_CACHED_PAGES:
                for old in list(self.stale):
                    self.uc.mem_unmap(old, PAGE)
                    del self.host_pages[old], self.host_addresses[old]
                self.stale.clear()
                self.unprotected.clear()
            memory = self.host_pages[page] = self._map_own_memory(page, PAGE)
            self.host_addresses[page] = _address_of(memory)
        self.host_pages[page][:] = data
        self.mirrors[-1][page] = data

    def _map_own_memory(self, address: int, size: int) -> memoryview:
        """Maps [address, address+size) readable and writable onto this process's memory (an
        anonymous mmap: page-aligned, zeroed; Unicorn's mem_map_ptr) and returns a view of it.
        The view keeps the mmap alive: hold it as long as Unicorn maps the range."""
        memory = memoryview(mmap.mmap(-1, size))
        self.uc.mem_map_ptr(address, size, UC_PROT_READ | UC_PROT_WRITE, _address_of(memory))
        return memory

    def _read_page(self, page: int) -> bytes:
        """One page of ppm-sim's memory, as it is now."""
        answer = self.ask({"host": "read", "address": page, "length": PAGE})
        if answer.get("fault"):
            raise Crash(
                PAGE_FAULT_IN_NONPAGED_AREA,
                [page, 0, self._rip(), 0],
                f"ppm-sim memory at {page:#x} is not readable",
                self._rip(),
            )
        data = hex_bytes(answer, "bytes")
        if len(data) != PAGE:
            raise Fatal(f"read of {page:#x}: {len(data)} bytes instead of {PAGE}")
        return data

    def _protect_stale(self, pages: tuple[tuple[int, bytes], ...] = ()) -> None:
        """A call starts (with `pages`) or an interrupted call resumes (none): the stale pages
        left readable become PROT_NONE, but for those this call is sent again (installed
        readable as they are). Unicorn rebuilds its whole memory map on each protection change,
        the dearest part of a nested call."""
        if not self.unprotected:
            return
        sent = {page for page, _ in pages}
        for page in self.unprotected - sent:
            self.uc.mem_protect(page, PAGE, UC_PROT_NONE)
        self.unprotected &= sent

    def _resume_pages(self, pages: tuple[tuple[int, bytes], ...]) -> None:
        """An answer resumes the call that asked, with the pages of the notifications nested
        in it meanwhile, as ppm-sim's memory holds them now: they become this call's (live,
        compared at its end), so they need no protection until a later call leaves them."""
        if pages and not self.mirrors:
            raise ProtocolError("an answer carried pages while no call was under way")
        for page, data in pages:
            if not any(page in level for level in self.mirrors):
                self._install_page(page, data)

    def _share_outer_pages(self, sent: dict[int, bytes]) -> None:
        """A nested call starts: ppm-sim wrote its payload, maybe into a page an interrupted
        call mirrors. Each such page is taken afresh (from the nested call's `sent` pages,
        where ppm-sim sends the interrupted calls' pages along, else read) and the interrupted
        call's own changes laid over it; the nested call starts from that, and the interrupted
        call's baseline takes ppm-sim's bytes everywhere it changed nothing, so neither call
        reports the other's bytes as its writes."""
        nested = self.mirrors[-1]
        for level in self.mirrors[:-1]:
            for page, before in list(level.items()):
                fresh = sent[page] if page in sent else self._read_page(page)
                memory = self.host_pages[page]
                current = memory.tobytes()
                if current == before:  # the interrupted call changed nothing here
                    merged = baseline = fresh
                else:
                    laid, kept = bytearray(fresh), bytearray(fresh)
                    for start, end in native.changed_runs(before, self.host_addresses[page]):
                        laid[start:end] = current[start:end]
                        kept[start:end] = before[start:end]
                    merged, baseline = bytes(laid), bytes(kept)
                if merged != current:
                    memory[:] = merged
                level[page] = baseline
                nested[page] = merged

    def _release_mirrors(self) -> list[list[Any]]:
        """The byte ranges the image changed in ppm-sim's pages this call, coalesced; the
        pages become stale. Compared with what ppm-sim served (a write of the same value is no
        change)."""
        pages = self.mirrors.pop()
        ranges: list[list[Any]] = []
        for page in sorted(pages):
            before = pages[page]
            after = self.host_pages[page].tobytes()
            # A page an interrupted call mirrors stays live for it; its baseline takes this
            # call's writes (ppm-sim applies them), so the interrupted call does not repeat them.
            outer = None
            for level in self.mirrors:
                if page in level:
                    outer = level
                    break
            if outer is None:
                self.unprotected.add(page)  # protected by _protect_stale
                self.stale.add(page)
            if after == before:  # most pages: one memcmp, no call into C
                continue
            runs = native.changed_runs(before, self.host_addresses[page])
            if outer is not None:
                baseline = bytearray(outer[page])
                for start, end in runs:
                    baseline[start:end] = after[start:end]
                outer[page] = bytes(baseline)
            for start, end in runs:
                address = page + start
                data = after[start:end]
                if ranges and ranges[-1][0] + len(ranges[-1][1]) == address:
                    ranges[-1][1] += data
                else:
                    ranges.append([address, bytearray(data)])
        return [[address, bytes(data).hex()] for address, data in ranges]

    # ---- host requests ------------------------------------------------------------------

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One host request; a `call` command arriving meanwhile runs nested. When a nested
        call bugchecks, the machine is down: the interrupted call ends with the same bugcheck
        when the answer comes, instead of running on (Unicorn, once a nested run is stopped,
        skips the code hooks of the run it interrupted until that one ends)."""
        bugcheck: dict[str, Any] | None = None
        self.watchdog.pause()  # ppm-sim's time is not the image's
        try:
            self.channel.send(self.with_deferred(request))
            while True:
                message = self.channel.receive()
                if message is None:
                    raise Fatal(f"ppm-sim closed the pipe while {request.get('host')} was waiting")
                if "op" not in message:
                    if "error" in message:
                        raise Fatal(f"ppm-sim answered {request.get('host')}: {message['error']}")
                    self.timestamps = _timestamps(message)
                    self.windows = 0
                    self._resume_pages(_pages(message))
                    self._protect_stale()  # the interrupted call resumes
                    if bugcheck is not None:
                        raise Crash(
                            bugcheck["code"],
                            bugcheck["parameters"],
                            bugcheck["what"],
                            bugcheck["address"],
                        )
                    return message
                if message["op"] != "call":
                    raise ProtocolError(
                        f"{message['op']!r} while a host request was waiting (only call may nest)"
                    )
                self.watchdog.resume()  # the nested call's time counts
                try:
                    done = self.cmd_call(message, nested=True)
                finally:
                    self.watchdog.pause()
                self.channel.send(self.with_deferred({"done": done}))
                if bugcheck is None:
                    bugcheck = done.get("crash")
        finally:
            self.watchdog.resume()

    def with_deferred(self, message: dict[str, Any]) -> dict[str, Any]:
        """`message` (a host request or a `done`) carrying the deferred requests, which ppm-sim
        serves first, in order."""
        if self.deferred:
            message = {**message, "deferred": self.deferred}
            self.deferred = []
        return message

    def set_interrupts(self, enabled: bool) -> None:
        """The image changed IF (PSTATE.I): ppm-sim is told now, or with the next message
        when no interrupt can arrive in the call (it sent the call's processor)."""
        if enabled == self.interrupts:
            return
        self.interrupts = enabled
        request = {"host": "interrupts", "enabled": enabled}
        if self.processor is None:
            self.ask(request)
        else:
            self.deferred.append(request)
            self.windows += 1

    def read_timestamp(self, request: dict[str, Any]) -> int:
        """RDTSC (ARM64: MRS CNTVCT_EL0): the counter ppm-sim sent for this many interrupt
        windows (the read's own included; one value: the windows take no time), the read
        reported with the next message (ppm-sim makes it there, in order, and checks the
        value), or a request."""
        self.windows += 1
        timestamps = self.timestamps
        if timestamps is None or 1 < len(timestamps) < self.windows:
            return integer(self.ask(request), "value")
        counter = timestamps[0] if len(timestamps) == 1 else timestamps[self.windows - 1]
        value = unsigned(counter, "timestamps")
        self.deferred.append({**request, "value": value})
        return value

    def current_processor(self) -> dict[str, Any]:
        """KeGetCurrentProcessorNumberEx's answer: the call's processor (the request reported
        with the next message, where ppm-sim makes it: its interrupt window may take time), or
        ppm-sim's."""
        if self.processor is not None:
            self.deferred.append({"host": "current_processor", "index": self.processor["index"]})
            self.windows += 1
            return self.processor
        return self.ask({"host": "current_processor"})

    # ---- registers ----------------------------------------------------------------------

    def _rip(self) -> int:
        return self.regs.read(self.arch.pc) if self.uc else 0

    def arg(self, index: int) -> int:
        """Argument `index` (0-based) of the call being made, at its callee's first
        instruction: the architecture's argument registers, then the stack."""
        registers = self.arch.arg_registers
        if index < len(registers):
            return self.regs.read(registers[index])
        return self.u64(self.arch.stack_argument(self.regs.read(self.arch.sp), index))

    def return_address(self) -> int:
        """Where the call being made returns to (at its callee's first instruction)."""
        return self.arch.return_address(self.regs.read, self.u64)

    def stub_address(self, base: int, index: int) -> int:
        return base + index * len(self.arch.stub_bytes)

    def arg32(self, index: int) -> int:
        return self.arg(index) & 0xFFFFFFFF

    def symbol(self, address: int) -> str:
        if self.image and IMAGE_BASE <= address < IMAGE_BASE + self.image.size:
            found = self.symbols.lookup(address - IMAGE_BASE)
            if found:
                return f"{found[0]}+{found[1]:#x}"
            return f"ppm_pep+{address - IMAGE_BASE:#x}"
        if address in self.imports_by_stub:
            dll, name = self.imports_by_stub[address]
            return f"{dll}!{name}"
        if KMDF_STUBS <= address < self.stub_address(KMDF_STUBS, KMDF_MAX_FUNCTIONS):
            return f"WdfFunctions[{(address - KMDF_STUBS) // len(self.arch.stub_bytes)}]"
        return f"{address:#x}"

    # ---- load ---------------------------------------------------------------------------

    def cmd_load(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.uc is not None:
            raise ProtocolError("load: an image is already loaded")
        arch = message.get("arch", "x64")
        if arch not in ARCHES:
            raise ProtocolError(f"load: arch {arch!r}: x64 or arm64")
        self.arch = ARCHES[arch]
        path, map_path = message.get("image"), message.get("map")
        if not isinstance(path, str) or not isinstance(map_path, str):
            raise ProtocolError("load: 'image' and 'map' must be paths")
        stack_bytes = integer(message, "stack_bytes", 32)
        if not PAGE <= stack_bytes <= MAX_STACK_BYTES or stack_bytes % PAGE:
            raise ProtocolError(
                f"load: stack_bytes {stack_bytes}: a multiple of 4096 up to {MAX_STACK_BYTES}"
            )
        try:
            image = pe_image.parse_image(path, IMAGE_BASE, arch, self.arch.max_imports)
            symbols = pe_image.parse_map(map_path, image)
        except pe_image.ImageError as error:
            raise Fatal(str(error)) from error
        self.image, self.symbols = image, symbols
        uc = Uc(self.arch.uc_arch, self.arch.uc_mode)
        if arch == "arm64":
            # The "max" CPU (every A64 feature QEMU 5 implements, e.g. LSE atomics) at EL1,
            # where Unicorn starts; FP/SIMD enabled as Windows runs drivers.
            uc.ctl_set_cpu_model(arm64.UC_CPU_ARM64_MAX)
            uc.reg_write(arm64.UC_ARM64_REG_CPACR_EL1, ARM64_CPACR_FPEN)
        self.uc = uc
        self.regs = Registers(uc)
        self.watchdog = Watchdog(uc.emu_stop, self.hang_seconds)
        uc.mem_map(IMAGE_BASE, image.size, UC_PROT_ALL)
        uc.mem_write(IMAGE_BASE, image.headers)
        for rva, raw in image.contents:
            uc.mem_write(IMAGE_BASE + rva, raw)
        delta = (IMAGE_BASE - image.preferred_base) & ((1 << 64) - 1)
        for rva in image.relocations:
            value = int.from_bytes(uc.mem_read(IMAGE_BASE + rva, 8), "little")
            uc.mem_write(
                IMAGE_BASE + rva, ((value + delta) & ((1 << 64) - 1)).to_bytes(8, "little")
            )
        # Stubs: one `ret` per import, per KMDF index and per PoFx service offset.
        uc.mem_map(STUBS, STUBS_SIZE, UC_PROT_READ | UC_PROT_EXEC)
        stub_bytes = self.arch.stub_bytes
        uc.mem_write(STUBS, stub_bytes * (STUBS_SIZE // len(stub_bytes)))
        c_specific = set()
        for number, (dll, name, iat_rva) in enumerate(image.imports):
            stub = self.stub_address(IMPORT_STUBS, number)
            self.imports_by_stub[stub] = (dll, name)
            uc.mem_write(IMAGE_BASE + iat_rva, stub.to_bytes(8, "little"))
        for rva, name in zip(symbols.rvas, symbols.names, strict=True):
            if name == "__C_specific_handler":
                c_specific.add(rva)
        # Section protections, as the headers say (after the relocations and the IAT writes).
        uc.mem_protect(IMAGE_BASE, PAGE, UC_PROT_READ)
        for section in image.sections:
            start = IMAGE_BASE + section.rva
            size = (max(section.size, 1) + PAGE - 1) & ~(PAGE - 1)
            prot = (
                (UC_PROT_READ if section.readable else 0)
                | (UC_PROT_WRITE if section.writable else 0)
                | (UC_PROT_EXEC if section.executable else 0)
            )
            uc.mem_protect(start, size, prot or UC_PROT_READ)
        # The stack and its guard page (left unmapped below it).
        self.stack_low = STACK_GUARD + PAGE
        self.stack_top = self.stack_low + stack_bytes
        self.stack = self._map_own_memory(self.stack_low, stack_bytes)
        self.painted_below = self.stack_low
        self.paint = bytes([PAINT]) * stack_bytes
        self.paint_view = memoryview(self.paint)
        self.paint_pieces = [1 << n for n in range(stack_bytes.bit_length() - 1, -1, -1)]
        uc.mem_map(DATA, DATA_SIZE, UC_PROT_READ | UC_PROT_WRITE)
        # Structured exception dispatch from the image's own .pdata, .xdata and scope tables.
        unwinder = seh.Unwinder if arch == "x64" else arm64_unwind.Unwinder
        self.unwinder = unwinder(IMAGE_BASE, image.size, image.pdata, self.read, c_specific)
        self.sites = pe_image.find_sites(image, arch)
        self.site_functions = set(self.sites) & set(symbols.rvas)
        site_hook = self._site if arch == "x64" else self._site_arm64
        for rva, site in self.sites.items():
            self._code_hook(functools.partial(site_hook, site), IMAGE_BASE + rva)
        self._code_hook(self._stub, STUBS, UNLOAD_THUNK - 1)
        native.stop_at(uc, SENTINEL)
        # Coverage: a code hook on each function's first instruction that removes itself when
        # it fires, so a function costs one Python call in the whole run, not one per call.
        for rva in symbols.rvas:
            if (IMAGE_BASE + rva) not in self.function_hooks and rva not in self.sites:
                address = IMAGE_BASE + rva
                self.function_hooks[address] = uc.hook_add(
                    UC_HOOK_CODE, self._function_entered, rva, address, address
                )
        uc.hook_add(
            UC_HOOK_MEM_READ_UNMAPPED
            | UC_HOOK_MEM_WRITE_UNMAPPED
            | UC_HOOK_MEM_FETCH_UNMAPPED
            | UC_HOOK_MEM_READ_PROT
            | UC_HOOK_MEM_WRITE_PROT,
            self._unmapped,
        )
        uc.hook_add(UC_HOOK_INTR, self._interrupt if arch == "x64" else self._interrupt_arm64)
        self.import_handlers = {
            stub: getattr(self, f"imp_{name}", None)
            for stub, (_, name) in self.imports_by_stub.items()
        }
        if message.get("verifier") is not None:
            self.verifier = Verifier(message["verifier"], image.imports)
            if self.verifier.count_instructions:
                self.counter = InstructionCounter(uc, IMAGE_BASE, IMAGE_BASE + image.size - 1)
        return {
            "image_base": IMAGE_BASE,
            "image_size": image.size,
            "entry": IMAGE_BASE + image.entry_rva,
        }

    # ---- execution ----------------------------------------------------------------------

    def execute(
        self,
        address: int,
        args: list[int],
        interrupts: bool,
        nested: bool,
        processor: dict[str, Any] | None = None,
        pages: tuple[tuple[int, bytes], ...] = (),
        irql: int | None = None,
        timestamps: list[Any] | None = None,
    ) -> dict:
        """Calls `address` with `args` (the Windows convention of the image's architecture);
        {"rax"} (the return register: RAX or X0) or {"crash"}. `processor`: the call's, when
        no interrupt can arrive in it, and `timestamps` its time-stamp counter ahead; `pages`:
        ppm-sim's pages sent with the call; `irql`: the IRQL the kernel calls at (the caller's
        for a nested call, PASSIVE_LEVEL for a command); `instructions` in the answer: the
        image's own, nested calls' excluded, when counted."""
        arch = self.arch
        saved = self._save_context(len(self.mirrors) - 1) if nested else None
        saved_state = _call_state(self)
        outer_nested = self.nested_instructions
        self.nested_instructions = 0
        start_count = self.counter.count if self.counter is not None else 0
        if nested:
            top = (self.regs.read(arch.sp) - NESTED_GAP) & ~0xF
        else:
            top = self.stack_top
        extra = args[len(arch.arg_registers) :]
        entry_sp, stack_args, sp = arch.frame(top, len(extra))
        if sp <= self.stack_low:
            raise Crash(
                UNEXPECTED_KERNEL_MODE_TRAP, [8, 0, 0, 0], "no stack left for a nested call"
            )
        low = self.stack_low
        for number, value in enumerate(extra):
            at = stack_args + 8 * number - low
            self.stack[at : at + 8] = value.to_bytes(8, "little")
        returns_to = NESTED_SENTINEL if nested else SENTINEL
        if arch.return_on_stack:
            self.stack[sp - low : sp - low + 8] = returns_to.to_bytes(8, "little")
        if nested:
            # The interrupted command's low-water mark so far, before this call repaints it
            # (below that mark the paint is intact).
            touched = self._lowest_touched(sp)
            self.stack_floor = min(self.stack_floor, touched)
            self._paint(touched, sp)
        else:
            self.stack_floor = self.stack_top
            self._paint(self.painted_below, sp)
            self.painted_below = self.stack_low  # unknown until this command ends
        registers = arch.call_registers(interrupts, returns_to)
        in_registers = min(len(args), len(arch.arg_registers))
        names = self.call_register_names.get(in_registers)
        if names is None:
            names = self.call_register_names[in_registers] = (
                *arch.arg_registers[:in_registers],
                arch.sp,
                *(register for register, _ in registers),
            )
        self.regs.write_all(names, [*args[:in_registers], sp, *[value for _, value in registers]])
        self.interrupts = interrupts
        self.processor = processor
        self.timestamps, self.windows = timestamps, 0
        if irql is not None:
            self.irql = irql
        elif not nested:
            self.irql = 0
        self.crash = None
        self._protect_stale(pages)
        self.mirrors.append({})
        if nested:
            self._share_outer_pages(dict(pages))
        for page, data in pages:
            if page not in self.mirrors[-1]:
                self._install_page(page, data)
        if not nested:
            self.watchdog.arm()
        try:
            self._emulate(address, returns_to)
            rax = self.regs.read(arch.result)
        finally:
            if not nested:
                self.watchdog.disarm()
            writes = self._release_mirrors()
        lowest = self._lowest_touched(entry_sp)
        if not nested:
            self.painted_below = lowest
            lowest = min(lowest, self.stack_floor)
        record = self.stack_report.setdefault(address, [0, 0])
        record[0] += 1
        record[1] = max(record[1], entry_sp - lowest)
        crash = self.crash
        if nested:
            checked(uclib.uc_context_restore(self.regs.handle, saved))
        self.__dict__.update(zip(_CALL_STATE, saved_state, strict=True))
        executed = (self.counter.count if self.counter is not None else 0) - start_count
        own = executed - self.nested_instructions
        self.nested_instructions = outer_nested + (executed if nested else 0)
        if crash is not None:
            return {"crash": self._crash_json(crash)}
        done = {"rax": rax, "writes": writes}
        if self.verifier is not None and self.verifier.count_instructions:
            done["instructions"] = own
        return done

    def _save_context(self, level: int) -> Any:
        """The registers of the call a nested call interrupts at nesting `level` (0: the
        command's), saved into that level's context (allocated once, then reused)."""
        if level == len(self.contexts):
            self.contexts.append(self.uc.context_save())
        context = self.contexts[level].context
        checked(uclib.uc_context_save(self.regs.handle, context))
        return context

    def _paint(self, start: int, end: int) -> None:
        """Paints the stack's [start, end) (nothing when empty)."""
        if start < end:
            low = self.stack_low
            self.stack[start - low : end - low] = self.paint_view[: end - start]

    def _lowest_touched(self, below: int) -> int:
        """The lowest stack address written since the last paint (`below` if none): the
        painted prefix of [stack_low, below). The recent answers for the same `below` are
        checked first (the same code path touches the same bytes: one memcmp and one byte
        each; the notifications of one interrupt window take different paths from the same
        stack pointer); otherwise a piece of each power of two is taken while it is all paint
        (`paint.startswith` a view of the stack: a memcmp, nothing copied)."""
        size = below - self.stack_low
        stack, paint = self.stack, self.paint
        hints = self.low_water.get(below)
        if hints is None:
            if len(self.low_water) >= MAX_LOW_WATER_HINTS:
                self.low_water.clear()
            hints = self.low_water[below] = []
        for hint in hints:
            if paint.startswith(stack[:hint]) and (hint == size or stack[hint] != PAINT):
                return self.stack_low + hint
        painted = 0
        for piece in self.paint_pieces:
            end = painted + piece
            if end <= size and paint.startswith(stack[painted:end]):
                painted = end
        hints.insert(0, painted)
        del hints[LOW_WATER_HINTS:]
        return self.stack_low + painted

    def _emulate(self, address: int, returns_to: int) -> None:
        """Runs from `address` to `returns_to`, the call's return: SENTINEL, where a hook stops
        the emulation (emu_start's `until` is then an address nothing reaches), or
        NESTED_SENTINEL, emu_start's `until`. A touch of a stale ppm-sim page stops the
        emulation (Unicorn 2.1.4 crashes when a protection hook changes protections), the page
        is fetched again, and the instruction restarts."""
        uc = self.uc
        start = address
        until = UNREACHED if returns_to == SENTINEL else returns_to
        while True:
            self.refresh = None
            try:
                uc.emu_start(start, until)
            except UcError as error:
                if self.fatal is not None:
                    raise self.fatal from None
                if self.refresh is not None and self.crash is None and not self.watchdog.fired:
                    try:
                        self._fetch_page(self.refresh)
                    except Crash as crash:
                        self.crash = crash
                        return
                    start = self._rip()
                    if self.counter is not None:
                        self.counter.restarted(start)
                    continue
                if self.crash is None:
                    self.crash = self._hang() if self.watchdog.fired else self._crash_from(error)
                return
            if self.fatal is not None:
                raise self.fatal
            if self.crash is None and self._rip() != returns_to:
                self.crash = (
                    self._hang()
                    if self.watchdog.fired
                    else Crash(0, [0, 0, 0, 0], "emulation stopped before the return", self._rip())
                )
            return

    def _hang(self) -> Crash:
        limit = self.watchdog.limit_seconds
        return Crash(
            0,
            [int(limit * 1000), 0, 0, 0],
            f"hang: the command ran longer than {limit:g} s",
            self._rip(),
        )

    def _crash_from(self, error: UcError) -> Crash:
        rip = self._rip()
        if error.errno == UC_ERR_INSN_INVALID:
            return Crash(
                KMODE_EXCEPTION_NOT_HANDLED,
                [STATUS_ILLEGAL_INSTRUCTION, rip, 0, 0],
                "invalid instruction (#UD)",
                rip,
            )
        return Crash(
            PAGE_FAULT_IN_NONPAGED_AREA, [0, 0, rip, 0], f"emulation stopped: {error}", rip
        )

    def _crash_json(self, crash: Crash) -> dict[str, Any]:
        address = crash.address or self._rip()
        return {
            "code": crash.code,
            "parameters": crash.parameters,
            "what": crash.what,
            "address": address,
            "symbol": self.symbol(address),
        }

    def _stop(self, error: BaseException) -> None:
        if isinstance(error, Crash):
            if self.crash is None:  # the first bugcheck is the machine's; nothing runs after it
                self.crash = error
        else:
            if not isinstance(error, Fatal | ProtocolError):
                traceback.print_exc(file=sys.stderr)
                error = Fatal(f"runner bug in a hook: {error!r}")
            self.fatal = error
        self.uc.emu_stop()

    # ---- hooks --------------------------------------------------------------------------

    def _code_hook(self, callback: Any, begin: int, end: int | None = None) -> None:
        """A code hook on [begin, end] (end: begin) whose C function is `callback(handle,
        address, size, key)` itself, added through Unicorn's C API: no binding wrapper in
        between, a microsecond less per hook on the path of every call. The callback catches
        every exception itself (_stop): one escaping a ctypes callback is only printed."""
        function = HOOK_CODE_CFUNC(callback)
        native.code_hook(self.uc, function, None, begin, begin if end is None else end)
        self.hook_functions.append(function)  # alive as long as the hook

    def _function_entered(self, uc: Uc, address: int, size: int, rva: int) -> None:
        self.executed.add(rva)
        handle = self.function_hooks.pop(address, None)
        if handle is not None:
            uc.hook_del(handle)

    def _unmapped(self, uc: Uc, access: int, address: int, size: int, value: int, _: Any) -> bool:
        try:
            if STACK_GUARD <= address < self.stack_low:
                raise Crash(
                    UNEXPECTED_KERNEL_MODE_TRAP,
                    [8, 0, 0, 0],
                    f"stack overflow: touched the guard page at {address:#x}",
                    self._rip(),
                )
            if address + size <= USER_LIMIT and self.mirrors:
                page = address & ~(PAGE - 1)
                if page in self.stale or (address + size - 1) & ~(PAGE - 1) in self.stale:
                    self.refresh = page if page in self.stale else page + PAGE
                    return False  # refetched by _emulate, outside the hook
                self._ensure(address, max(size, 1))
                return True
            if self.verifier is not None:
                write = access in (UC_MEM_WRITE_UNMAPPED, UC_MEM_WRITE_PROT)
                crash = self.verifier.pool_fault(address, write, self._rip())
                if crash is not None:
                    raise crash
            if access == UC_MEM_WRITE_PROT:
                raise Crash(
                    ATTEMPTED_WRITE_TO_READONLY_MEMORY,
                    [address, 0, 0, 0],
                    f"write to read-only memory at {address:#x} ({self.symbol(address)})",
                    self._rip(),
                )
            write = access in (UC_MEM_WRITE_UNMAPPED, UC_MEM_WRITE_PROT)
            raise Crash(
                PAGE_FAULT_IN_NONPAGED_AREA,
                [address, 1 if write else 0, self._rip(), 0],
                f"access to unmapped memory at {address:#x}",
                self._rip(),
            )
        except BaseException as error:  # noqa: BLE001 - every failure ends the command
            self._stop(error)
            return False

    def _interrupt(self, uc: Uc, number: int, _: Any) -> None:
        try:
            rip = self._rip()
            codes = {0: STATUS_INTEGER_DIVIDE_BY_ZERO, 3: STATUS_BREAKPOINT}
            if number == 0x29:
                raise Crash(0x139, [self.arg(0), 0, 0, 0], "__fastfail (int 0x29)", rip)
            if number not in codes:
                raise Crash(
                    UNEXPECTED_KERNEL_MODE_TRAP, [number, 0, 0, 0], f"interrupt {number}", rip
                )
            # #DE is a fault (RIP at the instruction); int3 a trap (RIP after it).
            self.raise_exception(codes[number], rip - 1 if number == 3 else rip)
        except BaseException as error:  # noqa: BLE001
            self._stop(error)

    def raise_exception(self, code: int, address: int) -> None:
        """Dispatches an exception raised at `address` through the image's __except scopes:
        resumes at the handler (the exception code in the return register, the frame's
        registers restored) or ends the command with KMODE_EXCEPTION_NOT_HANDLED."""
        if self.arch.name == "x64":
            registers = {**NONVOLATILE_REGS, "rsp": x86.UC_X86_REG_RSP}
            pc = "rip"
        else:
            registers = {**ARM64_NONVOLATILE_REGS, "sp": arm64.UC_ARM64_REG_SP}
            pc = "pc"
        regs = {name: self.regs.read(reg) for name, reg in registers.items()}
        regs[pc] = address
        try:
            dispatch = self.unwinder.dispatch(regs, lambda at: at in (SENTINEL, NESTED_SENTINEL))
        except seh.UnwindError as error:  # arm64_unwind raises seh's UnwindError too
            dispatch = seh.Dispatch(None, None, f"unwind failed: {error}")
        self.seh_log.append(
            {
                "address": address,
                "symbol": self.symbol(address),
                "code": code,
                "handler": dispatch.target,
                "handled": dispatch.target is not None,
            }
        )
        if dispatch.target is None:
            raise Crash(
                KMODE_EXCEPTION_NOT_HANDLED,
                [code, address, 0, 0],
                f"exception {code:#x} not handled: {dispatch.reason}",
                address,
            )
        for name, reg in registers.items():
            self.regs.write(reg, dispatch.registers[name])
        self.regs.write(self.arch.result, code)
        self.regs.write(self.arch.pc, dispatch.target)

    def _site(self, site: tuple[str, int], _: Any, address: int, size: int, __: Any) -> None:
        """An x64 instruction the runner serves (RDMSR, WRMSR, RDTSC(P), CPUID, CLI, STI):
        asks ppm-sim or answers from what it sent, sets the registers and RIP past it."""
        try:
            kind, length = site
            if address - IMAGE_BASE in self.site_functions:  # no coverage hook of its own
                self.executed.add(address - IMAGE_BASE)
            if kind in ("rdmsr", "wrmsr"):
                msr = self.regs.read(x86.UC_X86_REG_RCX) & 0xFFFFFFFF
                if self.verifier is not None and self.verifier.access(
                    kind, msr, address - IMAGE_BASE
                ):
                    self.raise_exception(STATUS_PRIVILEGED_INSTRUCTION, address)
                    return
                if kind == "rdmsr":
                    answer = self.ask({"host": "rdmsr", "msr": msr})
                else:
                    value = (self.regs.read(x86.UC_X86_REG_RDX) & 0xFFFFFFFF) << 32 | (
                        self.regs.read(x86.UC_X86_REG_RAX) & 0xFFFFFFFF
                    )
                    answer = self.ask({"host": "wrmsr", "msr": msr, "value": value})
                if answer.get("fault"):
                    self.raise_exception(STATUS_PRIVILEGED_INSTRUCTION, address)
                    return
                if kind == "rdmsr":
                    self._edx_eax(integer(answer, "value"))
            elif kind in ("rdtsc", "rdtscp"):
                value = self.read_timestamp({"host": "rdtsc"})
                if kind == "rdtscp":  # IA32_TSC_AUX: the processor's index, as Windows sets it
                    index = integer(self.current_processor(), "index", 32)
                    self.regs.write(x86.UC_X86_REG_RCX, index)
                self._edx_eax(value)
            elif kind == "cpuid":
                leaf = self.regs.read(x86.UC_X86_REG_RAX) & 0xFFFFFFFF
                subleaf = self.regs.read(x86.UC_X86_REG_RCX) & 0xFFFFFFFF
                answer = self.ask({"host": "cpuid", "leaf": leaf, "subleaf": subleaf})
                for name, reg in (
                    ("eax", x86.UC_X86_REG_RAX),
                    ("ebx", x86.UC_X86_REG_RBX),
                    ("ecx", x86.UC_X86_REG_RCX),
                    ("edx", x86.UC_X86_REG_RDX),
                ):
                    self.regs.write(reg, integer(answer, name, 32))
            elif kind in ("cli", "sti"):
                enabled = kind == "sti"
                self.set_interrupts(enabled)
                flags = self.regs.read(x86.UC_X86_REG_RFLAGS)
                self.regs.write(
                    x86.UC_X86_REG_RFLAGS, flags | RFLAGS_IF if enabled else flags & ~RFLAGS_IF
                )
            else:
                raise Crash(
                    KMODE_EXCEPTION_NOT_HANDLED,
                    [STATUS_PRIVILEGED_INSTRUCTION, address, 0, 0],
                    f"{kind.upper()}: the protocol has no host request for it",
                    address,
                )
            self.regs.write(x86.UC_X86_REG_RIP, address + length)
        except BaseException as error:  # noqa: BLE001
            self._stop(error)

    def _edx_eax(self, value: int) -> None:
        """EDX:EAX = `value` (RDMSR, RDTSC): one batch. (RIP is written on its own: written in
        a batch from a hook, unicorn 2.1.4 loses it and the instruction runs again; in the 2.1
        sources only the single write keeps the block from syncing RIP back as it exits.)"""
        self.regs.write_all(EDX_EAX, [value & 0xFFFFFFFF, value >> 32])

    def _site_arm64(self, site: tuple, _: Any, address: int, size: int, __: Any) -> None:
        """An ARM64 MRS (but of DAIF), MSR or DAIFSet/DAIFClr: asks ppm-sim, sets the
        registers and writes PC past the instruction (4 bytes)."""
        try:
            kind, field, rt = site
            if address - IMAGE_BASE in self.site_functions:
                self.executed.add(address - IMAGE_BASE)
            if kind == "mrs":
                op0, op1, crn, crm, op2 = field
                if (
                    self.verifier is not None
                    and is_activity_monitor(field)
                    and self.verifier.access(
                        "mrs",
                        op0 << 14 | op1 << 11 | crn << 7 | crm << 3 | op2,
                        address - IMAGE_BASE,
                    )
                ):
                    self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, address)
                    return
                request = {"host": "mrs", "op0": op0, "op1": op1, "crn": crn, "crm": crm}
                request["op2"] = op2
                if tuple(field) == CNTVCT_EL0:
                    answer = {"value": self.read_timestamp(request)}
                else:
                    answer = self.ask(request)
                if answer.get("fault"):
                    # An undefined-instruction exception at the MRS, dispatched as Windows
                    # would: to the image's __except or to a bugcheck.
                    self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, address)
                    return
                if rt != 31:  # XZR
                    self.regs.write(ARM64_X[rt], integer(answer, "value"))
            elif kind in ("daifset", "daifclr", "msr_daif"):
                pstate = self.uc.reg_read(arm64.UC_ARM64_REG_PSTATE)
                if kind == "msr_daif":
                    value = self.regs.read(ARM64_X[rt]) if rt != 31 else 0
                    daif = value & (0xF << DAIF_SHIFT)
                elif kind == "daifset":
                    daif = pstate | field << DAIF_SHIFT
                else:
                    daif = pstate & ~(field << DAIF_SHIFT)
                self.set_interrupts(not daif & DAIF_I)
                pstate = pstate & ~(0xF << DAIF_SHIFT) | daif & (0xF << DAIF_SHIFT)
                self.uc.reg_write(arm64.UC_ARM64_REG_PSTATE, pstate)
            else:
                op0, op1, crn, crm, op2 = field
                raise Crash(
                    KMODE_EXCEPTION_NOT_HANDLED,
                    [STATUS_ILLEGAL_INSTRUCTION, address, 0, 0],
                    f"MSR S{op0}_{op1}_C{crn}_C{crm}_{op2}: the protocol has no host request "
                    "for it",
                    address,
                )
            self.regs.write(self.arch.pc, address + 4)
        except BaseException as error:  # noqa: BLE001
            self._stop(error)

    def _interrupt_arm64(self, uc: Uc, number: int, _: Any) -> None:
        """An ARM64 exception Unicorn raised: an undefined instruction or BRK (a breakpoint,
        the compiler's traps), dispatched through the image's __except scopes as on x64;
        __fastfail and aborts bugcheck."""
        try:
            pc = self._rip()
            if number == ARM64_EXCP_BKPT:
                address, immediate = self._brk(pc)
                if immediate == ARM64_BRK_FASTFAIL:
                    raise Crash(0x139, [self.arg(0), 0, 0, 0], "__fastfail (brk #0xf003)", address)
                self.raise_exception(
                    ARM64_BRK_IMMEDIATES.get(immediate, STATUS_BREAKPOINT), address
                )
                return
            if number == ARM64_EXCP_UDEF:
                self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, pc)  # PC at the instruction
                return
            if number in ARM64_EXCP_ABORTS:
                raise Crash(
                    PAGE_FAULT_IN_NONPAGED_AREA, [0, 0, pc, 0], f"abort (exception {number})", pc
                )
            raise Crash(UNEXPECTED_KERNEL_MODE_TRAP, [number, 0, 0, 0], f"exception {number}", pc)
        except BaseException as error:  # noqa: BLE001
            self._stop(error)

    def _brk(self, pc: int) -> tuple[int, int]:
        """The BRK instruction at or just before `pc` and its 16-bit immediate."""
        for address in (pc, pc - 4):
            try:
                word = int.from_bytes(self.uc.mem_read(address, 4), "little")
            except UcError:
                continue
            if word & 0xFFE0001F == 0xD4200000:
                return address, word >> 5 & 0xFFFF
        return pc, 0

    def _verify_call(self, name: str) -> int | None:
        """Driver Verifier's view of a call of `name` (verifier.py): a bug check raised, or
        the failure to return instead of serving the call."""
        if self.verifier is None:
            return None
        address = site = self.return_address()
        if IMAGE_BASE <= site < IMAGE_BASE + self.image.size:
            site -= IMAGE_BASE
        irql = effective_irql(self.irql, self.interrupts)
        passive_only = ""
        if name == "DbgPrintEx":
            fmt = self.c_string(self.arg(2)).encode("latin-1")
            passive_only = " ".join(printf.unicode_conversions(fmt))
        return self.verifier.check_call(name, site, irql, self.arg, address, passive_only)

    def _stub(self, _: Any, address: int, size: int, __: Any) -> None:
        """A call of an import, a KMDF function or a PoFx service: its stub's `ret` runs
        after this sets the return register."""
        try:
            if address < KMDF_STUBS:
                if address in self.imports_by_stub:
                    failure = self._verify_call(self.imports_by_stub[address][1])
                    if failure is not None:
                        self.regs.write(self.arch.result, failure)
                        return
                handler = self.import_handlers.get(address)
                if handler is None:
                    dll, name = self.imports_by_stub.get(address, ("?", f"{address:#x}"))
                    raise Crash(
                        KMODE_EXCEPTION_NOT_HANDLED,
                        [STATUS_ILLEGAL_INSTRUCTION, address, 0, 0],
                        f"call of {dll}!{name}: the runner does not translate it",
                        self.return_address(),
                    )
                result = handler()
            elif address < POFX_STUBS:
                result = self._kmdf((address - KMDF_STUBS) // len(self.arch.stub_bytes))
            else:
                if self.verifier is not None:
                    self.verifier.pofx_calls += 1
                args = [self.arg(n) for n in range(4)]
                answer = self.ask(
                    {"host": "pofx_service", "offset": address - POFX_STUBS, "args": args}
                )
                result = integer(answer, "rax")
            if result is not None:
                self.regs.write(self.arch.result, result & ((1 << 64) - 1))
        except BaseException as error:  # noqa: BLE001
            self._stop(error)

    # ---- commands -----------------------------------------------------------------------

    def cmd_call(self, message: dict[str, Any], nested: bool = False) -> dict[str, Any]:
        self._need_image()
        address = integer(message, "address")
        args = message.get("args", [])
        if not isinstance(args, list) or len(args) > MAX_CALL_ARGS:
            raise ProtocolError(f"call: 'args' must be a list of at most {MAX_CALL_ARGS} integers")
        values = [unsigned(a, "arg") for a in args]
        interrupts = message.get("interrupts", True)
        if not isinstance(interrupts, bool):
            raise ProtocolError("call: 'interrupts' must be true or false")
        processor = message.get("processor")
        if processor is not None:
            if not isinstance(processor, dict):
                raise ProtocolError("call: 'processor' must be an object")
            processor = {
                "index": integer(processor, "index", 32),
                "group": integer(processor, "group", 16),
                "number": integer(processor, "number", 8),
            }
        timestamps = _timestamps(message)
        if timestamps is not None and processor is None:
            raise ProtocolError("call: 'timestamps' is sent only with 'processor'")
        irql = message.get("irql", 0)
        if not isinstance(irql, int) or isinstance(irql, bool) or not 0 <= irql <= 15:
            raise ProtocolError("call: 'irql' must be an integer in 0..=15")
        label = message.get("label")
        if label is not None and not isinstance(label, str):
            raise ProtocolError("call: 'label' must be a string")
        verifier = self.verifier
        if verifier is not None and not nested:
            verifier.phase = "runtime"
        injected_before = verifier.injected if verifier is not None else None
        if verifier is not None:
            verifier.depth += 1
        try:
            done = self._run(
                address, values, interrupts, nested, processor, _pages(message), irql, timestamps
            )
        finally:
            if verifier is not None:
                verifier.depth -= 1
        if verifier is not None and "rax" in done:
            if label is not None and "instructions" in done:
                verifier.cost(label, done["instructions"])
            # Faulted in this call, not in a notification nested in it.
            faulted = (
                injected_before is None
                and verifier.injected is not None
                and verifier.injected_depth == verifier.depth + 1
            )
            handle = values[0] if values else 0
            verifier.call_done(label, handle, bool(done["rax"] & 0xFF), faulted)
        return done

    def _run(self, *call: Any) -> dict:
        """execute(*call), a CRASH raised before the call (no stack left) as its answer."""
        try:
            return self.execute(*call)
        except Crash as crash:
            return {"crash": self._crash_json(crash)}

    def cmd_driver_entry(self, message: dict[str, Any]) -> dict[str, Any]:
        self._need_image()
        if self.verifier is not None:
            self.verifier.phase = "boot"
        path = message.get("registry_path")
        if not isinstance(path, str):
            raise ProtocolError("driver_entry: 'registry_path' must be a string")
        encoded = path.encode("utf-16-le")
        if len(encoded) > REGISTRY_PATH_MAX_BYTES - 2 or len(encoded) > 0xFFFE:
            raise ProtocolError(
                f"driver_entry: registry_path longer than {REGISTRY_PATH_MAX_BYTES // 2 - 1} "
                "characters"
            )
        uc = self.uc
        driver = bytearray(DRIVER_OBJECT_SIZE)
        driver[0:2] = IO_TYPE_DRIVER.to_bytes(2, "little")  # Type
        driver[2:4] = DRIVER_OBJECT_SIZE.to_bytes(2, "little")  # Size
        driver[DRIVER_START : DRIVER_START + 8] = IMAGE_BASE.to_bytes(8, "little")
        driver[DRIVER_SIZE : DRIVER_SIZE + 4] = self.image.size.to_bytes(4, "little")
        entry = IMAGE_BASE + self.image.entry_rva
        driver[DRIVER_INIT : DRIVER_INIT + 8] = entry.to_bytes(8, "little")
        uc.mem_write(DRIVER_OBJECT, bytes(driver))
        string = len(encoded).to_bytes(2, "little") + (len(encoded) + 2).to_bytes(2, "little")
        uc.mem_write(REGISTRY_PATH, string + b"\0" * 4 + REGISTRY_PATH_BUFFER.to_bytes(8, "little"))
        uc.mem_write(REGISTRY_PATH_BUFFER, encoded + b"\0\0")
        result = self._run(
            IMAGE_BASE + self.image.entry_rva, [DRIVER_OBJECT, REGISTRY_PATH], True, False
        )
        if "crash" in result:
            return result
        return {"status": result["rax"] & 0xFFFFFFFF}

    def cmd_device_add(self, message: dict[str, Any]) -> dict[str, Any]:
        self._need_image()
        if self.verifier is not None:
            self.verifier.phase = "boot"
        if not self.device_add:
            return {"status": None}
        result = self._run(self.device_add, [WDFDRIVER, WDFDEVICE_INIT], True, False)
        if "crash" in result:
            return result
        return {"status": result["rax"] & 0xFFFFFFFF}

    def cmd_unload(self, message: dict[str, Any]) -> dict[str, Any]:
        self._need_image()
        if self.verifier is not None:
            self.verifier.phase = "boot"
        unload = self.u64(DRIVER_OBJECT + DRIVER_UNLOAD)
        if not unload:
            return {"called": False}
        result = self._run(unload, [DRIVER_OBJECT], True, False)
        if "crash" in result:
            return result
        return {"called": True}

    def cmd_report(self, message: dict[str, Any]) -> dict[str, Any]:
        self._need_image()
        executed = sorted(IMAGE_BASE + rva for rva in self.executed)
        return {
            "stack": [
                {
                    "entry": entry,
                    "symbol": self.symbol(entry).removesuffix("+0x0"),
                    "calls": calls,
                    "deepest_bytes": deepest,
                }
                for entry, (calls, deepest) in sorted(self.stack_report.items())
            ],
            "kmdf": [
                {"index": index, "name": self.kmdf_name(index), "calls": calls}
                for index, calls in sorted(self.kmdf_calls.items())
            ],
            "kmdf_function_count": self.kmdf_count,
            "seh": self.seh_log,
            "functions": {"total": len(self.symbols.rvas), "executed": executed},
            "verifier": (
                self.verifier.report([self.kmdf_name(index) for index in self.kmdf_calls])
                if self.verifier is not None
                else None
            ),
        }

    def kmdf_name(self, index: int) -> str:
        return self.kmdf_index_names.get(index, f"KMDF 1.31 function {index}")

    def _need_image(self) -> None:
        if self.uc is None:
            raise ProtocolError("no image loaded (send load first)")

    def serve(self) -> int:
        commands = {
            "load": self.cmd_load,
            "driver_entry": self.cmd_driver_entry,
            "call": self.cmd_call,
            "device_add": self.cmd_device_add,
            "unload": self.cmd_unload,
            "report": self.cmd_report,
        }
        while True:
            try:
                message = self.channel.receive()
                if message is None:
                    return 0
                op = message.get("op")
                if op == "quit":
                    return 0
                if op not in commands:
                    raise ProtocolError(f"unknown command {op!r}")
                self.channel.send(self.with_deferred({"done": commands[op](message)}))
            except (Fatal, ProtocolError) as error:
                self.channel.send({"error": str(error)})
                print(f"image-runner: {error}", file=sys.stderr)
                return 2
            except Exception as error:  # noqa: BLE001 - a bug of the runner: say so, exit 2
                traceback.print_exc(file=sys.stderr)
                self.channel.send({"error": f"runner bug: {error!r}"})
                return 2


def main() -> int:
    if len(sys.argv) > 1:
        print(
            f"image-runner: unexpected argument {sys.argv[1]!r} (the runner takes none: "
            "commands come on stdin; see docs/image-backend.md)",
            file=sys.stderr,
        )
        return 2
    try:
        runner = Runner(Channel(doorbell=native.Doorbell.from_environment()))
    except Fatal as error:
        print(f"image-runner: {error}", file=sys.stderr)
        return 2
    return runner.serve()


if __name__ == "__main__":
    sys.exit(main())
