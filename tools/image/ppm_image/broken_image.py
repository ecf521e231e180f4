"""Writes a copy of a linked image broken on purpose, for the self-tests: each defect must be
refused by the image check (scripts/check-driver-image.sh --self-test) or make
`ppm-sim validate --pep image` fail a named check (scripts/check-image-backend.sh --self-test).

Usage: python -m ppm_image.broken_image KIND IMAGE OUT
KIND, for the image check (x64 unless named arm64-):
  undocumented-import  renames the imported ntoskrnl.exe!KeBugCheckEx to KeBugCheckEy, a name
                       no .def file lists;
  user-mode-import     renames the imported module WDFLDR.SYS to USER32.dll (same length);
  wx-section           makes the .text section writable as well as executable;
  frame-over-budget    makes DriverEntry's UWOP_ALLOC_LARGE allocate 512 KiB (x64), or its
                       first alloc_m unwind code 32 KiB (ARM64; either image);
  arm64-scope-removed  sets the Count of every ARM64 AMU guard's scope table to 0 (its MRS
                       then lies outside every __except scope; an AMU fault is a bugcheck, so
                       the image backend's self-test runs it too);
  arm64-foreign-handler  names the AMCGCR_EL0 guard itself as its exception handler in place
                       of the __C_specific_handler import thunk;
  arm64-guard-calls    replaces the store after the AMEVCNTR00_EL0 guard's MRS by a BL (to
                       the guard's own __except target).
  (An RDMSR outside the __try scope is a relink, not a patch: scripts/check-driver-image.sh.)
KIND, for the image backend (x64):
  kmdf-index           DriverEntry's one `call qword ptr [REG + 0x3a0]` (KMDF table index 116,
                       WdfDriverCreate) calls through [REG + 0x3a8] instead (index 117);
  swapped-callbacks    the PEP_INFORMATION stores of ppm_engine::driver::entry::initialize
                       (DriverEntry's registering step, not inlined into it, which keeps
                       DriverEntry's frame under the 4 KiB stack probe): `lea REG, [rip + X]`
                       (X the DPM callback, accept_device_notification) then
                       `mov qword ptr [rsp + D1], REG`, the same for the PPM callback
                       (accept_processor_notification) at D2 = D1 + 8; D1 and D2 are swapped,
                       so each callback lands in the other's field;
  early-return         accept_processor_notification begins with `mov al, 1; ret`: it returns
                       TRUE before writing any output.
IMAGE's map (IMAGE with the suffix .map, lld-link /MAP) names the functions. OUT (a .sys path
outside IMAGE's directory) is written, with the map copied beside it as OUT's name with .map
and IMAGE's stack.txt beside it (ppm-sim reads both; its figures still hold, as no patch
changes a frame the image backend measures), its first line identifying OUT. IMAGE is never
modified. The image check's kinds carry a correct CheckSum, so that the patched defect is the
image's only one; the image backend's leave it as it was (the runner does not verify it), so
that the patched bytes are the only ones that differ.

What the patches need of the image (its .pdata, the map's symbols, the section table) is what
the image backend's one PE reader reads of it, `ppm-image-runner describe IMAGE MAP ARCH`:
$PPM_RUNNER_BINARY, else the release build under $CARGO_TARGET_DIR (default <repo>/target),
built by `cargo build --release -p ppm-image-runner` (scripts/image-runner.sh --setup-only).
pefile gives the file offsets and writes the image check's kinds; capstone decodes x64 code.
Of ARM64 unwind data only what the patches touch is read here: an .xdata record's header (the
function's length, where its unwind codes and handler data lie) and a scope table's entries.

Exit 2, with a one-line message, when the image does not contain exactly the expected match (a
changed image must not turn the self-test into a no-op), when the runner cannot describe it,
or on bad arguments.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import capstone
import pefile
from capstone import x86

KMDF_INDEX = 116  # WdfDriverCreateTableIndex (KMDF 1.31 WDFFUNCENUM)
WRONG_KMDF_INDEX = 117
RETURN_TRUE = bytes([0xB0, 0x01, 0xC3])  # mov al, 1; ret
DRIVER_ENTRY = "DriverEntry"
REGISTRATION = "initialize"
DPM_CALLBACK = "accept_device_notification"
PPM_CALLBACK = "accept_processor_notification"
# The ARM64 AMU guards (src/amu_guard.rs).
AMU_GUARDS = (
    "ppm_amu_read_amcgcr",
    "ppm_amu_read_amcntenset0",
    "ppm_amu_read_amevcntr00",
    "ppm_amu_read_amevcntr01",
)


MACHINE_X64 = 0x8664
MACHINE_ARM64 = 0xAA64
ARCHES = {MACHINE_X64: "x64", MACHINE_ARM64: "arm64"}
UWOP_ALLOC_LARGE = 1  # x64 UNWIND_CODE operation: an allocation in the next slot(s)
RUNNER = "ppm-image-runner"
REPO = Path(__file__).resolve().parents[3]


class PatchError(Exception):
    """The image does not contain exactly what the patch changes (a one-line reason)."""


def u16(data: bytes, offset: int) -> int:
    """The little-endian u16 at `offset` of `data`."""
    return int.from_bytes(data[offset : offset + 2], "little")


def u32(data: bytes, offset: int) -> int:
    """The little-endian u32 at `offset` of `data`."""
    return int.from_bytes(data[offset : offset + 4], "little")


def stack_identity(pe: pefile.PE) -> str:
    """The first line of stack.txt: which image its figures are of (as `ppm-image-runner check
    --stack-report` writes it; ppm-sim refuses a stack.txt whose line does not match the image
    it runs, sim/src/image/pe.rs)."""
    return (
        f"image TimeDateStamp {pe.FILE_HEADER.TimeDateStamp:#010x} "
        f"CheckSum {pe.OPTIONAL_HEADER.CheckSum:#010x} "
        f"SizeOfImage {pe.OPTIONAL_HEADER.SizeOfImage:#x}"
    )


# ---- the image: pefile, and what the runner reads of it -------------------------------------


def runner_binary() -> Path:
    """$PPM_RUNNER_BINARY, else the release build under $CARGO_TARGET_DIR or <repo>/target."""
    if os.environ.get("PPM_RUNNER_BINARY"):
        return Path(os.environ["PPM_RUNNER_BINARY"])
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / "release" / RUNNER


def describe_image(path: str, map_path: str, arch: str) -> dict[str, Any]:
    """What `ppm-image-runner describe` reads of the image and its map (PatchError with the
    runner's one-line reason when it refuses them)."""
    binary = runner_binary()
    if not binary.is_file():
        raise PatchError(
            f"no {RUNNER} at {binary}: build it with `cargo build --release -p {RUNNER}` "
            "(scripts/image-runner.sh --setup-only), or name it in $PPM_RUNNER_BINARY"
        )
    environment = dict(os.environ)
    library = Path(capstone.__file__).resolve().parent / "lib" / "libcapstone.so"
    if "PPM_CAPSTONE_LIB" not in environment and library.is_file():
        environment["PPM_CAPSTONE_LIB"] = str(library)  # this interpreter's capstone
    try:
        done = subprocess.run(
            [str(binary), "describe", path, map_path, arch],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
        )
    except OSError as error:
        raise PatchError(f"{binary}: {error.strerror}") from error
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise PatchError(lines[-1].removeprefix(f"{RUNNER}: "))
    return json.loads(done.stdout)


@dataclass
class Scope:
    """One __C_specific_handler scope table entry (RVAs)."""

    begin: int
    end: int
    handler: int
    target: int


@dataclass
class Function:
    """One .pdata entry: its range, unwind data (x64 UNWIND_INFO RVA; ARM64 the entry's second
    word) and, on ARM64 with an exception handler, the RVA of the handler's data."""

    begin: int
    end: int
    unwind: int
    handler_data: int | None = None
    scopes: list[Scope] = field(default_factory=list)


@dataclass
class Xdata:
    """What an ARM64 .xdata record's header says: the function's length, where its unwind
    codes lie (RVA, words) and the RVA of its exception handler's data (None without one)."""

    length: int
    codes: int
    words: int
    handler_data: int | None


class ImageFile:
    """A PE image file (pefile) with what the runner reads of it and its map."""

    def __init__(self, path: str, map_path: str):
        self.path = path
        self.map_path = map_path
        try:
            self.pe = pefile.PE(path)
        except (OSError, pefile.PEFormatError) as error:
            raise PatchError(f"{path}: not a PE image ({error})") from error
        self.machine = self.pe.FILE_HEADER.Machine
        arch = ARCHES.get(self.machine)
        if arch is None:
            raise PatchError(f"{path}: machine {self.machine:#x} is neither x64 nor ARM64")
        self.description = describe_image(path, map_path, arch)

    def read(self, rva: int, size: int) -> bytes:
        """`size` bytes at `rva`."""
        data = self.pe.get_data(rva, size)
        if len(data) != size:
            raise PatchError(f"{size} bytes at RVA {rva:#x} lie outside the image")
        return data

    def rva_of(self, name: str) -> int:
        """The RVA of the map's symbol `name` (its first)."""
        for symbol, rva in self.description["map"]:
            if symbol == name:
                return rva
        raise PatchError(f"symbol {name} not in the map")

    def functions_in_text(self) -> list[tuple[int, str]]:
        """The map's symbols (RVA, name; a name's first RVA) in an executable section, by RVA."""
        ranges = [
            (s["rva"], s["rva"] + max(s["size"], s["raw_size"]))
            for s in self.description["sections"]
            if s["executable"]
        ]
        symbols: dict[str, int] = {}
        for name, rva in self.description["map"]:
            symbols.setdefault(name, rva)
        return sorted(
            (rva, name)
            for name, rva in symbols.items()
            if any(start <= rva < end for start, end in ranges)
        )

    def xdata(self, unwind: int) -> Xdata:
        """The header of the ARM64 .xdata record at `unwind`."""
        header = u32(self.read(unwind, 4), 0)
        epilogs, words = header >> 22 & 0x1F, header >> 27
        cursor = unwind + 4
        if epilogs == 0 and words == 0:
            extended = u32(self.read(cursor, 4), 0)
            epilogs, words = extended & 0xFFFF, extended >> 16 & 0xFF
            cursor += 4
        if not header >> 21 & 1:  # E clear: epilog scopes, one word each
            cursor += 4 * epilogs
        handler_data = cursor + 4 * words + 4 if header >> 20 & 1 else None
        return Xdata((header & 0x3FFFF) * 4, cursor, words, handler_data)

    def function_containing(self, rva: int) -> Function | None:
        """The .pdata entry whose range holds `rva`, or None."""
        entries = self.description["pdata"]
        index = bisect.bisect_right([entry[0] for entry in entries], rva) - 1
        if index < 0:
            return None
        if self.machine != MACHINE_ARM64:
            function = Function(*entries[index])
        else:
            begin, unwind = entries[index]
            if unwind & 3 == 3:
                raise PatchError(f".pdata entry {begin:#x}: Flag 3 is reserved")
            if unwind & 3:  # packed unwind data: FunctionLength in bits 2..12
                function = Function(begin, begin + (unwind >> 2 & 0x7FF) * 4, unwind)
            else:
                xdata = self.xdata(unwind)
                function = Function(begin, begin + xdata.length, unwind, xdata.handler_data)
            if function.handler_data is not None:
                function.scopes = self.scope_table(function.handler_data)
        return function if function.begin <= rva < function.end else None

    def scope_table(self, rva: int) -> list[Scope]:
        """The __C_specific_handler scope table at `rva` (Count, then Count entries)."""
        count = u32(self.read(rva, 4), 0)
        if count > 0x1000:
            raise PatchError(f"scope table at {rva:#x}: {count} entries")
        raw = self.read(rva + 4, 16 * count) if count else b""
        return [Scope(*(u32(raw, 16 * n + 4 * w) for w in range(4))) for n in range(count)]


# ---- the image check's kinds: pefile structures and raw (file offset, bytes) patches --------


def patch_string(pe, old, new):
    """(file offset, bytes) replacing the NUL-terminated string old by new, same length."""
    if len(old) != len(new):
        raise PatchError(f"{old!r} and {new!r} differ in length")
    offset = bytes(pe.__data__).find(old + b"\0")
    if offset < 0:
        raise PatchError(f"{old.decode()} not found in the image")
    return offset, new


def make_writable_code(pe):
    """Adds IMAGE_SCN_MEM_WRITE to .text."""
    for section in pe.sections:
        if section.Name.rstrip(b"\0") == b".text":
            section.Characteristics |= pefile.SECTION_CHARACTERISTICS["IMAGE_SCN_MEM_WRITE"]
            return
    raise PatchError("no .text section")


def enlarge_arm64_driver_entry_frame(image):
    """(file offset, bytes) setting the allocation of DriverEntry's first alloc_m unwind code
    (11000xxx xxxxxxxx, x * 16 bytes) to its largest, 0x7FF: 32 KiB."""
    function = image.function_containing(image.rva_of("DriverEntry"))
    if function is None or function.unwind & 3:
        raise PatchError("DriverEntry has no .xdata record")
    xdata = image.xdata(function.unwind)
    codes = image.read(xdata.codes, 4 * xdata.words)
    for index, code in enumerate(codes[:-1]):
        if 0xC0 <= code < 0xC8:
            return image.pe.get_offset_from_rva(xdata.codes + index), b"\xc7\xff"
    raise PatchError("DriverEntry's unwind codes have no alloc_m")


def amu_guard(image, name):
    """The .pdata entry of the AMU guard `name`, with its one __except scope."""
    if image.machine != MACHINE_ARM64:
        raise PatchError("the AMU guards are ARM64's: give the ARM64 image")
    function = image.function_containing(image.rva_of(name))
    if function is None or function.handler_data is None or len(function.scopes) != 1:
        raise PatchError(f"{name} has no handler with one scope")
    return function


def remove_amu_scopes(image):
    """[(file offset, bytes)] setting each AMU guard's scope Count to 0."""
    return [
        (image.pe.get_offset_from_rva(amu_guard(image, name).handler_data), bytes(4))
        for name in AMU_GUARDS
    ]


def foreign_handler(image):
    """[(file offset, bytes)] naming the AMCGCR_EL0 guard as its own handler (the handler RVA
    is the word before the handler's data)."""
    function = amu_guard(image, AMU_GUARDS[0])
    offset = image.pe.get_offset_from_rva(function.handler_data - 4)
    return [(offset, function.begin.to_bytes(4, "little"))]


def guard_calls(image):
    """[(file offset, bytes)] turning the instruction after the AMEVCNTR00_EL0 guard's MRS into
    `bl` to the guard's __except target."""
    function = amu_guard(image, AMU_GUARDS[2])
    scope = function.scopes[0]
    at = scope.end
    if not function.begin <= at < function.end:
        raise PatchError(f"{AMU_GUARDS[2]}: nothing after its scope")
    bl = 0x94000000 | ((scope.target - at) // 4 & 0x3FFFFFF)
    return [(image.pe.get_offset_from_rva(at), bl.to_bytes(4, "little"))]


def enlarge_driver_entry_frame(image):
    """(file offset, bytes) setting DriverEntry's 16-bit ALLOC_LARGE slot to 0xFFFF (512 KiB)."""
    function = image.function_containing(image.rva_of("DriverEntry"))
    if function is None:
        raise PatchError("DriverEntry has no .pdata entry")
    header = image.read(function.unwind, 4)
    count = header[2]
    codes = image.read(function.unwind + 4, 2 * count)
    for index in range(count):
        info = codes[2 * index + 1]
        if info & 0xF == UWOP_ALLOC_LARGE and info >> 4 == 0 and index + 1 < count:
            rva = function.unwind + 4 + 2 * (index + 1)
            if u16(codes, 2 * (index + 1)) == 0xFFFF:
                raise PatchError("DriverEntry's frame is already 512 KiB")
            return image.pe.get_offset_from_rva(rva), b"\xff\xff"
    raise PatchError("DriverEntry's unwind codes have no 16-bit UWOP_ALLOC_LARGE")


def checked_patch(kind: str) -> Callable[[ImageFile], tuple[bytearray, str]]:
    """A kind for the image check: pefile's own structures changed, then raw (file offset,
    bytes) patches applied after pefile has written them (it rewrites the unwind data it
    parsed, which would undo them); the CheckSum made correct."""

    def apply(image: ImageFile) -> tuple[bytearray, str]:
        pe = image.pe
        raw = []
        if kind == "undocumented-import":
            raw = [patch_string(pe, b"KeBugCheckEx", b"KeBugCheckEy")]
        elif kind == "user-mode-import":
            raw = [patch_string(pe, b"WDFLDR.SYS", b"USER32.dll")]
        elif kind == "wx-section":
            make_writable_code(pe)
        elif kind == "arm64-scope-removed":
            raw = remove_amu_scopes(image)
        elif kind == "arm64-foreign-handler":
            raw = foreign_handler(image)
        elif kind == "arm64-guard-calls":
            raw = guard_calls(image)
        elif image.machine == MACHINE_ARM64:
            raw = [enlarge_arm64_driver_entry_frame(image)]
        else:
            raw = [enlarge_driver_entry_frame(image)]
        data = bytearray(pe.write())
        for offset, new in raw:
            data[offset : offset + len(new)] = new
        patched = pefile.PE(data=bytes(data))
        checksum = patched.generate_checksum()
        checksum_offset = patched.OPTIONAL_HEADER.get_field_absolute_offset("CheckSum")
        data[checksum_offset : checksum_offset + 4] = checksum.to_bytes(4, "little")
        offsets = ", ".join(f"{offset:#x}" for offset, _ in raw)
        where = f"at file offset {offsets}" if raw else "in the section table"
        return data, f"patched {where}, CheckSum updated"

    return apply


# ---- the image backend's kinds: x64 code found by disassembly -------------------------------


@dataclass
class Code:
    """The image's bytes, its functions (map symbols with their .pdata extent) and capstone."""

    data: bytearray
    image: ImageFile

    def function(self, name: str) -> tuple[int, int]:
        """(begin, end) RVAs of the one function called `name`: the exact symbol, or else the
        one Rust v0-mangled symbol holding the identifier (`26accept_device_notification`)."""
        named = [(rva, symbol) for rva, symbol in self.image.functions_in_text()]
        exact = sorted({rva for rva, symbol in named if symbol == name})
        if not exact:
            mangled = f"{len(name)}{name}"
            exact = sorted(
                {rva for rva, symbol in named if symbol.startswith("_R") and mangled in symbol}
            )
        if len(exact) != 1:
            raise PatchError(f"the map names {len(exact)} functions {name}, expected exactly one")
        begin = exact[0]
        function = self.image.function_containing(begin)
        if function is None or function.begin != begin:
            raise PatchError(f"{name} at RVA {begin:#x} has no .pdata entry")
        return begin, function.end

    def offset(self, rva: int) -> int:
        return self.image.pe.get_offset_from_rva(rva)

    def instructions(self, begin: int, end: int) -> list[capstone.CsInsn]:
        """A linear sweep of [begin, end), resynchronising one byte past undecodable bytes."""
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        md.detail = True
        code = bytes(self.data[self.offset(begin) : self.offset(begin) + end - begin])
        found, position = [], 0
        while position < len(code):
            decoded = list(md.disasm(code[position:], begin + position))
            if decoded:
                found += decoded
                position = decoded[-1].address + decoded[-1].size - begin
            else:
                position += 1
        return found

    def put_displacement(self, insn: capstone.CsInsn, value: int) -> None:
        """Rewrites `insn`'s memory displacement (same encoded size; refused if it does not fit)."""
        size = insn.disp_size
        if not -(1 << (8 * size - 1)) <= value < 1 << (8 * size - 1):
            raise PatchError(
                f"{value:#x} does not fit the {size}-byte displacement of {describe(insn)}"
            )
        at = self.offset(insn.address) + insn.disp_offset
        self.data[at : at + size] = value.to_bytes(size, "little", signed=True)


def describe(insn: capstone.CsInsn) -> str:
    return f"`{insn.mnemonic} {insn.op_str}` at RVA {insn.address:#x}"


def memory_operand(insn: capstone.CsInsn) -> x86.X86Op | None:
    memory = [op for op in insn.operands if op.type == x86.X86_OP_MEM]
    return memory[0] if len(memory) == 1 else None


def kmdf_index(code: Code) -> str:
    """DriverEntry's call through the KMDF table entry of WdfDriverCreate, moved one entry on."""
    begin, end = code.function(DRIVER_ENTRY)
    calls = []
    for insn in code.instructions(begin, end):
        op = memory_operand(insn) if insn.mnemonic == "call" else None
        if (
            op is not None
            and op.mem.disp == 8 * KMDF_INDEX
            and op.mem.base not in (0, x86.X86_REG_RIP)
            and op.mem.index == 0
        ):
            calls.append(insn)
    if len(calls) != 1:
        raise PatchError(
            f"{DRIVER_ENTRY} has {len(calls)} calls through [REG + {8 * KMDF_INDEX:#x}] "
            "(KMDF table index 116, WdfDriverCreate), expected exactly one"
        )
    code.put_displacement(calls[0], 8 * WRONG_KMDF_INDEX)
    return f"{describe(calls[0])} now calls through [REG + {8 * WRONG_KMDF_INDEX:#x}]"


def callback_store(code: Code, instructions: list[capstone.CsInsn], callback: str, where: str):
    """The one `lea REG, [rip + callback]` followed by `mov qword ptr [rsp + D], REG`."""
    target, _ = code.function(callback)
    stores = []
    for lea, store in zip(instructions, instructions[1:], strict=False):
        if lea.mnemonic != "lea" or store.mnemonic != "mov":
            continue
        source = memory_operand(lea)
        if source is None or source.mem.base != x86.X86_REG_RIP:
            continue
        if lea.address + lea.size + source.mem.disp != target:
            continue
        destination, register = store.operands[0], store.operands[1]
        if (
            destination.type == x86.X86_OP_MEM
            and destination.size == 8
            and destination.mem.base == x86.X86_REG_RSP
            and destination.mem.index == 0
            and register.type == x86.X86_OP_REG
            and register.reg == lea.operands[0].reg
        ):
            stores.append(store)
    if len(stores) != 1:
        raise PatchError(
            f"{where} stores the address of {callback} to [rsp + D] right after its lea "
            f"{len(stores)} times, expected exactly once"
        )
    return stores[0]


def swapped_callbacks(code: Code) -> str:
    """The two callbacks' PEP_INFORMATION fields swapped: each store goes to the other's."""
    begin, end = code.function(REGISTRATION)
    instructions = code.instructions(begin, end)
    dpm = callback_store(code, instructions, DPM_CALLBACK, REGISTRATION)
    ppm = callback_store(code, instructions, PPM_CALLBACK, REGISTRATION)
    d1, d2 = dpm.operands[0].mem.disp, ppm.operands[0].mem.disp
    if d2 != d1 + 8:
        raise PatchError(
            f"{PPM_CALLBACK} is stored at [rsp + {d2:#x}], not 8 bytes after {DPM_CALLBACK} "
            f"([rsp + {d1:#x}]): not PEP_INFORMATION's two adjacent fields"
        )
    if dpm.disp_size != ppm.disp_size:
        raise PatchError("the two stores encode their displacements in different sizes")
    code.put_displacement(dpm, d2)
    code.put_displacement(ppm, d1)
    return (
        f"{DPM_CALLBACK} now stored at [rsp + {d2:#x}] ({describe(dpm)}), "
        f"{PPM_CALLBACK} at [rsp + {d1:#x}] ({describe(ppm)})"
    )


def early_return(code: Code) -> str:
    """accept_processor_notification returns TRUE at once."""
    begin, end = code.function(PPM_CALLBACK)
    if end - begin < len(RETURN_TRUE):
        raise PatchError(f"{PPM_CALLBACK} is shorter than {len(RETURN_TRUE)} bytes")
    at = code.offset(begin)
    if bytes(code.data[at : at + len(RETURN_TRUE)]) == RETURN_TRUE:
        raise PatchError(f"{PPM_CALLBACK} already begins with `mov al, 1; ret`")
    code.data[at : at + len(RETURN_TRUE)] = RETURN_TRUE
    return f"{PPM_CALLBACK} (RVA {begin:#x}) now begins with `mov al, 1; ret`"


def code_patch(patch: Callable[[Code], str]) -> Callable[[ImageFile], tuple[bytearray, str]]:
    """A kind for the image backend: bytes of x64 code rewritten in place, nothing else."""

    def apply(image: ImageFile) -> tuple[bytearray, str]:
        if image.machine == MACHINE_ARM64:
            raise PatchError("this patch is of x64 code: give the x64 image")
        code = Code(bytearray(Path(image.path).read_bytes()), image)
        return code.data, patch(code)

    return apply


KINDS: dict[str, Callable[[ImageFile], tuple[bytearray, str]]] = {
    **{
        kind: checked_patch(kind)
        for kind in (
            "undocumented-import",
            "user-mode-import",
            "wx-section",
            "frame-over-budget",
            "arm64-scope-removed",
            "arm64-foreign-handler",
            "arm64-guard-calls",
        )
    },
    "kmdf-index": code_patch(kmdf_index),
    "swapped-callbacks": code_patch(swapped_callbacks),
    "early-return": code_patch(early_return),
}


def write_broken(kind: str, source: Path, out: Path) -> str:
    """Writes OUT, with the map and stack.txt beside it; returns what was patched."""
    if out.suffix != ".sys":
        raise PatchError(f"OUT {out} must end with .sys")
    if out.resolve().parent == source.resolve().parent:
        raise PatchError(f"OUT {out} must lie outside the image's directory {source.parent}")
    map_path = source.with_suffix(".map")
    stack = source.with_name("stack.txt")
    if not stack.is_file():
        raise PatchError(f"no {stack} beside the image (scripts/check-driver-image.sh writes it)")
    data, what = KINDS[kind](ImageFile(str(source), str(map_path)))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    shutil.copyfile(map_path, out.with_suffix(".map"))
    _, _, figures = stack.read_text().partition("\n")
    identity = stack_identity(pefile.PE(data=bytes(data), fast_load=True))
    out.with_name("stack.txt").write_text(f"{identity}\n{figures}")
    return what


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 3 or arguments[0] not in KINDS:
        print(
            f"usage: python -m ppm_image.broken_image {{{'|'.join(KINDS)}}} IMAGE OUT",
            file=sys.stderr,
        )
        return 2
    kind, source, out = arguments[0], Path(arguments[1]), Path(arguments[2])
    try:
        what = write_broken(kind, source, out)
    except (PatchError, OSError) as error:
        print(f"broken_image {kind}: {error}", file=sys.stderr)
        return 2
    print(f"broken_image {kind}: {out}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
