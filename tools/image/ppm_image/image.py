"""The one reader of a linked driver image: its PE headers, sections, base relocations,
imports and exports (pefile), its .pdata (decoded by seh.py on x64 and arm64_unwind.py on
ARM64), lld-link's map, llvm-objdump's disassembly and the privileged-instruction sites
(capstone over the executable sections).

Two views over the same readers: `parse_image` and `parse_map` give the runner the image as it
maps it (`Image`, `SymbolMap`); `ImageFile` gives the checks in check_image.py and the stack
measure in stack.py the file with its map. Nothing here decides whether the image is right.

Limits: an image of at most 64 MiB (SizeOfImage) and 4096 imports when mapped; a map file of
at most 16 MiB.
"""

from __future__ import annotations

import bisect
import re
import subprocess
from dataclasses import dataclass, field
from typing import NamedTuple

import capstone
import pefile

from . import arm64_unwind, seh
from .layout import PAGE
from .seh import Scope, u32

MAX_IMAGE_BYTES = 64 << 20
MAX_MAP_BYTES = 16 << 20
MAX_IMPORTS = 0x1000  # one stub byte each in the runner's import stub page

MACHINE_X64 = 0x8664
MACHINE_ARM64 = 0xAA64
MACHINES = {MACHINE_X64: "x64", MACHINE_ARM64: "arm64"}

SCN_MEM_EXECUTE = 0x20000000
SCN_MEM_READ = 0x40000000
SCN_MEM_WRITE = 0x80000000

# The instructions the runner answers from ppm-sim (mnemonic -> kind).
SITE_KINDS = {
    "rdmsr": "rdmsr",
    "wrmsr": "wrmsr",
    "rdtsc": "rdtsc",
    "rdtscp": "rdtscp",
    "cpuid": "cpuid",
    "cli": "cli",
    "sti": "sti",
    "rdpmc": "rdpmc",
}


class ImageError(Exception):
    """The image or the map cannot be used (a one-line reason)."""


# ---- the PE file ----------------------------------------------------------------------------


def open_pe(path: str, fast_load: bool = False) -> pefile.PE:
    """The PE file at `path` (ImageError when it is not one)."""
    try:
        return pefile.PE(path, fast_load=fast_load)
    except (OSError, pefile.PEFormatError) as error:
        raise ImageError(f"{path}: not a PE image ({error})") from error


def stack_identity(pe: pefile.PE) -> str:
    """The first line of stack.txt: which image its figures are of (ppm-sim refuses a
    stack.txt whose line does not match the image it runs, sim/src/image/pe.rs)."""
    return (
        f"image TimeDateStamp {pe.FILE_HEADER.TimeDateStamp:#010x} "
        f"CheckSum {pe.OPTIONAL_HEADER.CheckSum:#010x} "
        f"SizeOfImage {pe.OPTIONAL_HEADER.SizeOfImage:#x}"
    )


@dataclass
class Section:
    name: str
    rva: int
    size: int  # VirtualSize
    executable: bool
    writable: bool
    readable: bool
    raw_size: int = 0  # SizeOfRawData


def sections_of(pe: pefile.PE) -> list[Section]:
    """The section table."""
    return [
        Section(
            s.Name.rstrip(b"\0").decode("ascii", "replace"),
            s.VirtualAddress,
            max(s.Misc_VirtualSize, 0),
            bool(s.Characteristics & SCN_MEM_EXECUTE),
            bool(s.Characteristics & SCN_MEM_WRITE),
            bool(s.Characteristics & SCN_MEM_READ),
            s.SizeOfRawData,
        )
        for s in pe.sections
    ]


class Import(NamedTuple):
    dll: str
    name: str | None  # None for an import by ordinal
    ordinal: int | None
    iat_rva: int


def imports_of(pe: pefile.PE) -> list[Import]:
    """Every entry of the import directory (which must have been parsed), in order."""
    base = pe.OPTIONAL_HEADER.ImageBase
    return [
        Import(
            entry.dll.decode(errors="replace"),
            symbol.name.decode(errors="replace") if symbol.name else None,
            None if symbol.name else symbol.ordinal,
            symbol.address - base,
        )
        for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])
        for symbol in entry.imports
    ]


def pdata_of(pe: pefile.PE, machine: int, read) -> list[tuple[int, ...]]:
    """The exception directory's entries, sorted: x64 (begin, end, unwind) RVAs, ARM64
    (begin, unwind data) words. `read(rva, size)` reads the image."""
    directory = pe.OPTIONAL_HEADER.DATA_DIRECTORY[
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXCEPTION"]
    ]
    if not directory.Size:
        return []
    data = read(directory.VirtualAddress, directory.Size)
    if machine == MACHINE_ARM64:
        try:
            return list(arm64_unwind.decode_pdata(data))
        except arm64_unwind.UnwindError as error:
            raise ImageError(str(error)) from error
    if machine != MACHINE_X64:
        raise ImageError(f"unwind data of machine {machine:#x} is not decoded")
    if len(data) % 12:
        raise ImageError(f".pdata size {len(data)} is not a multiple of 12")
    return sorted(
        (u32(data, offset), u32(data, offset + 4), u32(data, offset + 8))
        for offset in range(0, len(data), 12)
    )


# ---- the image as the runner maps it --------------------------------------------------------


@dataclass
class Image:
    """A parsed PE image, ready to be mapped at `base`."""

    path: str
    base: int
    size: int
    preferred_base: int
    entry_rva: int
    headers: bytes
    sections: list[Section]
    contents: list[tuple[int, bytes]]  # (rva, bytes) to write after mapping
    relocations: list[int]  # RVAs of DIR64 fixups
    imports: list[tuple[str, str, int]]  # (dll, name, IAT rva)
    # .pdata: x64 (begin, end, unwind) RVAs; ARM64 (begin, unwind data) words.
    pdata: list[tuple[int, ...]] = field(default_factory=list)

    def is_executable(self, rva: int) -> bool:
        return any(s.executable and s.rva <= rva < s.rva + s.size for s in self.sections)


def parse_image(path: str, base: int, arch: str = "x64", max_imports: int = MAX_IMPORTS) -> Image:
    pe = open_pe(path, fast_load=True)
    machine = pe.FILE_HEADER.Machine
    if MACHINES.get(machine) != arch:
        found = MACHINES.get(machine, "unknown")
        raise ImageError(
            f"{path}: not an {arch} image (machine {machine:#x}: {found}); load it with the "
            "arch it was built for"
        )
    pe.parse_data_directories(
        directories=[
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_BASERELOC"],
        ]
    )
    opt = pe.OPTIONAL_HEADER
    size = (opt.SizeOfImage + PAGE - 1) & ~(PAGE - 1)
    if size > MAX_IMAGE_BYTES:
        raise ImageError(f"{path}: SizeOfImage {size} exceeds the limit of {MAX_IMAGE_BYTES}")
    sections, contents = sections_of(pe), []
    for section, s in zip(sections, pe.sections, strict=True):
        vsize = section.size
        raw = s.get_data()[: min(vsize, s.SizeOfRawData) if vsize else s.SizeOfRawData]
        if s.VirtualAddress + len(raw) > size:
            raise ImageError(f"{path}: section {section.name} lies outside SizeOfImage")
        contents.append((s.VirtualAddress, raw))
    relocations = []
    for block in getattr(pe, "DIRECTORY_ENTRY_BASERELOC", []):
        for entry in block.entries:
            if entry.type == pefile.RELOCATION_TYPE["IMAGE_REL_BASED_DIR64"]:
                relocations.append(entry.rva)
            elif entry.type != pefile.RELOCATION_TYPE["IMAGE_REL_BASED_ABSOLUTE"]:
                raise ImageError(f"{path}: base relocation type {entry.type} is not DIR64")
    imports = []
    for imp in imports_of(pe):
        if imp.name is None:
            raise ImageError(f"{path}: {imp.dll} import by ordinal {imp.ordinal}")
        imports.append((imp.dll, imp.name, imp.iat_rva))
    if len(imports) > max_imports:
        raise ImageError(f"{path}: {len(imports)} imports exceed the limit of {max_imports}")
    try:
        pdata = pdata_of(pe, machine, pe.get_data)
    except ImageError as error:
        raise ImageError(f"{path}: {error}") from error
    return Image(
        path=path,
        base=base,
        size=size,
        preferred_base=opt.ImageBase,
        entry_rva=opt.AddressOfEntryPoint,
        headers=pe.header[: opt.SizeOfHeaders],
        sections=sections,
        contents=contents,
        relocations=relocations,
        imports=imports,
        pdata=pdata,
    )


# ---- the map --------------------------------------------------------------------------------

_MAP_LINE = re.compile(r"^\s*([0-9a-fA-F]{4}):([0-9a-fA-F]{8})\s+(\S+)\s+([0-9a-fA-F]{16})\b")


def read_map(path: str) -> list[tuple[str, int]]:
    """The symbols of an lld-link /MAP file, in its order: (name, RVA), RVAs below the
    preferred load address left out."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_MAP_BYTES + 1)
    except OSError as error:
        raise ImageError(f"{path}: cannot read the map ({error.strerror})") from error
    if len(text) > MAX_MAP_BYTES:
        raise ImageError(f"{path}: map larger than {MAX_MAP_BYTES} bytes")
    preferred = re.search(r"Preferred load address is ([0-9a-fA-F]+)", text)
    if not preferred:
        raise ImageError(f"{path}: not an lld-link /MAP file (no preferred load address)")
    preferred_base = int(preferred.group(1), 16)
    symbols = []
    for line in text.splitlines():
        match = _MAP_LINE.match(line)
        if match and int(match.group(4), 16) >= preferred_base:
            symbols.append((match.group(3), int(match.group(4), 16) - preferred_base))
    return symbols


def map_symbols(path: str) -> dict[str, int]:
    """The map's symbols by name: {name: RVA} (a name's first RVA)."""
    symbols: dict[str, int] = {}
    for name, rva in read_map(path):
        symbols.setdefault(name, rva)
    return symbols


class SymbolMap:
    """The functions of the image (the map's symbols in executable sections), by RVA."""

    def __init__(self, functions: dict[int, str]):
        self.rvas = sorted(functions)
        self.names = [functions[r] for r in self.rvas]

    def lookup(self, rva: int) -> tuple[str, int] | None:
        index = bisect.bisect_right(self.rvas, rva) - 1
        if index < 0:
            return None
        return self.names[index], rva - self.rvas[index]

    def function_start(self, rva: int) -> int | None:
        index = bisect.bisect_right(self.rvas, rva) - 1
        return self.rvas[index] if index >= 0 else None


def parse_map(path: str, image: Image) -> SymbolMap:
    """The map's functions of `image` (local `$` labels left out), by RVA."""
    functions: dict[int, str] = {}
    for name, rva in read_map(path):
        if name.startswith("$"):  # local labels (e.g. $ehgcr_0_4, an __except target)
            continue
        if rva < image.size and image.is_executable(rva):
            functions.setdefault(rva, name)
    if not functions:
        raise ImageError(f"{path}: no function symbols in executable sections")
    return SymbolMap(functions)


def demangle(name: str) -> str:
    """A Rust symbol (legacy `_ZN...E` or v0 `_R...`) as its path `a::b::c`, without hashes and
    disambiguators; anything else unchanged. For messages only: not a full demangler."""
    if name.startswith("_ZN"):
        body = name[3:]
    elif name.startswith("_R"):
        body = name[2:]
    else:
        return name
    words, index = [], 0
    while index < len(body):
        character = body[index]
        if character.isdigit():
            digits = re.match(r"[0-9]+", body[index:]).group()
            start = index + len(digits)
            start += body[start : start + 1] == "_"
            words.append(body[start : start + int(digits)])
            index = start + int(digits)
        elif character in "sBK" and name.startswith("_R"):
            # v0 disambiguators, back-references and const values run to the next `_`.
            end = body.find("_", index)
            index = len(body) if end < 0 else end + 1
        else:
            index += 1
    if words and re.fullmatch(r"h[0-9a-f]{16}", words[-1]):
        words.pop()
    replacements = {"$LT$": "<", "$GT$": ">", "$u20$": " ", "$RF$": "&", "$C$": ",", "..": "::"}
    text = "::".join(words)
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text or name


# ---- the image file with its map, as the checks read it -------------------------------------


@dataclass
class RuntimeFunction:
    """One .pdata entry, decoded: its range, frame size, exception handler (RVA) and scope
    table (the RVA of the handler's data on ARM64)."""

    begin: int
    end: int
    unwind: int
    frame: int = 0
    flags: int = 0
    handler: int | None = None
    scopes: list[Scope] = field(default_factory=list)
    handler_data: int | None = None


@dataclass
class Instruction:
    """One disassembled instruction."""

    address: int
    mnemonic: str
    operands: str


class ImageFile:
    """A PE image file with its lld-link map."""

    def __init__(self, path, map_path=None, objdump="llvm-objdump"):
        self.path = path
        self.pe = open_pe(path)
        self.base = self.pe.OPTIONAL_HEADER.ImageBase
        self.machine = self.pe.FILE_HEADER.Machine
        self.map_path = map_path
        self.symbols = map_symbols(map_path) if map_path else {}
        self.objdump = objdump
        self._instructions = None
        self._functions = None
        self._by_address = None

    # --- sections and bytes -------------------------------------------------------------

    def section_named(self, name):
        """The section called `name`, or None."""
        for section in self.pe.sections:
            if section.Name.rstrip(b"\0").decode(errors="replace") == name:
                return section
        return None

    def read(self, rva, size):
        """`size` bytes at `rva` (ImageError outside the image)."""
        data = self.pe.get_data(rva, size)
        if len(data) != size:
            raise ImageError(f"{size} bytes at RVA {rva:#x} lie outside the image")
        return data

    def executable_ranges(self):
        """The [start, end) RVA ranges of executable sections."""
        return [
            (section.rva, section.rva + max(section.size, section.raw_size))
            for section in sections_of(self.pe)
            if section.executable
        ]

    # --- symbols --------------------------------------------------------------------------

    def rva_of(self, name):
        """The RVA of the map's symbol `name` (ImageError if absent)."""
        if name not in self.symbols:
            raise ImageError(f"symbol {name} not in the map")
        return self.symbols[name]

    def functions_in_text(self):
        """Map symbols (name, RVA) that lie in an executable section, by address."""
        ranges = self.executable_ranges()
        found = [
            (rva, name)
            for name, rva in self.symbols.items()
            if any(start <= rva < end for start, end in ranges)
        ]
        return sorted(found)

    def name_at(self, rva):
        """The nearest map symbol at or before `rva`, as `name+offset`."""
        if self._by_address is None:
            self._by_address = sorted((address, name) for name, address in self.symbols.items())
        index = bisect.bisect_right(self._by_address, (rva, "\uffff")) - 1
        if index < 0:
            return f"{rva:#x}"
        address, name = self._by_address[index]
        offset = rva - address
        return demangle(name) + (f"+{offset:#x}" if offset else "")

    # --- imports and exports ------------------------------------------------------------

    def imports(self):
        """[(dll, name or None, ordinal or None)] of the import directory."""
        return [(imp.dll, imp.name, imp.ordinal) for imp in imports_of(self.pe)]

    def import_address(self, dll, name):
        """The RVA of the IAT slot of `dll!name`, or None."""
        for imp in imports_of(self.pe):
            if imp.dll.lower() == dll.lower() and imp.name == name:
                return imp.iat_rva
        return None

    def exports(self):
        """Names (or `#ordinal`) of the export directory."""
        directory = getattr(self.pe, "DIRECTORY_ENTRY_EXPORT", None)
        if directory is None:
            return []
        return [
            symbol.name.decode(errors="replace") if symbol.name else f"#{symbol.ordinal}"
            for symbol in directory.symbols
        ]

    # --- unwind data ----------------------------------------------------------------------

    def runtime_functions(self):
        """Every .pdata entry, decoded, by address."""
        if self._functions is None:
            entries = pdata_of(self.pe, self.machine, self.read)
            try:
                if self.machine == MACHINE_ARM64:
                    self._functions = [self._arm64_function(*entry) for entry in entries]
                else:
                    self._functions = [self._x64_function(*entry) for entry in entries]
            except seh.UnwindError as error:
                raise ImageError(str(error)) from error
        return self._functions

    def _x64_function(self, begin, end, unwind):
        """An x64 .pdata entry decoded by seh.py: the frame its prologue and every chained
        parent's allocate, its handler and, when it has one, its scope table."""
        function = RuntimeFunction(begin, end, unwind)
        rva = unwind
        for depth in range(seh.MAX_CHAIN + 1):
            info = seh.unwind_info(rva, self.read)
            function.frame += seh.frame_of_codes(info)
            if depth == 0:
                function.flags = info.flags
            if info.flags & seh.UNW_FLAG_CHAININFO:
                rva = u32(self.read(info.tail, 12), 8)
                continue
            if depth == 0 and info.flags & (seh.UNW_FLAG_EHANDLER | seh.UNW_FLAG_UHANDLER):
                function.handler = u32(self.read(info.tail, 4), 0)
                try:
                    function.scopes = seh.scope_table(info.tail + 4, self.read)
                except seh.UnwindError:
                    function.scopes = []  # a handler whose data is no scope table
            return function
        raise ImageError(f"unwind chain at {begin:#x} deeper than {seh.MAX_CHAIN}")

    def _arm64_function(self, begin, unwind):
        """An ARM64 .pdata entry decoded by arm64_unwind.py: the function's range, frame (what
        its prologue or an epilogue allocates), exception handler and, when it has one, its
        scope table read as __C_specific_handler's."""
        decoded = arm64_unwind.decode_function(begin, unwind, self.read)
        function = RuntimeFunction(
            begin, decoded.end, unwind, frame=decoded.frame(), handler=decoded.handler
        )
        if decoded.handler_data is not None:
            function.handler_data = decoded.handler_data
            function.scopes = seh.scope_table(decoded.handler_data, self.read)
        return function

    def function_containing(self, rva):
        """The .pdata entry whose range holds `rva`, or None."""
        functions = self.runtime_functions()
        index = bisect.bisect_right([function.begin for function in functions], rva) - 1
        if index >= 0 and functions[index].begin <= rva < functions[index].end:
            return functions[index]
        return None

    # --- disassembly --------------------------------------------------------------------

    def instructions(self):
        """Every instruction of the executable sections, by RVA (llvm-objdump -d)."""
        if self._instructions is not None:
            return self._instructions
        try:
            output = subprocess.run(
                [self.objdump, "-d", "--no-show-raw-insn", str(self.path)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            raise ImageError(f"{self.objdump} -d {self.path} failed: {error}") from error
        line = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*?)\s*$")
        found = []
        for text in output.splitlines():
            match = line.match(text)
            if match:
                address = int(match.group(1), 16) - self.base
                found.append(Instruction(address, match.group(2), match.group(3)))
        self._instructions = found
        return found

    def instructions_between(self, begin, end):
        """The instructions with begin <= RVA < end."""
        instructions = self.instructions()
        addresses = [instruction.address for instruction in instructions]
        return instructions[
            bisect.bisect_left(addresses, begin) : bisect.bisect_left(addresses, end)
        ]


# ---- the machine-answered instruction sites -------------------------------------------------


def find_sites(image: Image, arch: str = "x64") -> dict[int, tuple]:
    if arch == "arm64":
        return find_arm64_sites(image)
    return find_x64_sites(image)


# ARM64 system instructions (Arm ARM C5.2 / C6.2): MRS Xt, (op0 op1 CRn CRm op2);
# MSR (op0 op1 CRn CRm op2), Xt; MSR (immediate) DAIFSet/DAIFClr, #imm (op1 3, CRn 4, op2 6/7).
MRS_MASK, MRS = 0xFFF00000, 0xD5300000
MSR_REG_MASK, MSR_REG = 0xFFF00000, 0xD5100000
MSR_IMM_MASK = 0xFFFFF0FF
DAIFSET, DAIFCLR = 0xD50340DF, 0xD50340FF
DAIF = (3, 3, 4, 2, 1)  # the DAIF register's encoding


def system_register(word: int) -> tuple[int, int, int, int, int]:
    """(op0, op1, CRn, CRm, op2) of an MRS/MSR (register) word."""
    return (
        2 + (word >> 19 & 1),
        word >> 16 & 7,
        word >> 12 & 0xF,
        word >> 8 & 0xF,
        word >> 5 & 7,
    )


def find_arm64_sites(image: Image) -> dict[int, tuple]:
    """Every MRS (but of DAIF: CPU state, executed as is), MSR (register) and DAIFSet/DAIFClr
    in the executable sections: RVA -> ("mrs" | "msr", encoding, Rt) | ("msr_daif", DAIF,
    Rt) | ("daifset" | "daifclr", imm, None). A64 instructions are 4-byte words at 4-byte
    aligned addresses, so a sweep of the words decodes every instruction exactly (no
    resynchronisation as on x64: a data word that happens to match is never executed)."""
    sites: dict[int, tuple] = {}
    for section, (rva, raw) in zip(image.sections, image.contents, strict=True):
        if not section.executable:
            continue
        for offset in range(0, len(raw) - 3, 4):
            word = int.from_bytes(raw[offset : offset + 4], "little")
            if word & MRS_MASK == MRS:
                encoding = system_register(word)
                if encoding != DAIF:
                    sites[rva + offset] = ("mrs", encoding, word & 0x1F)
            elif word & MSR_REG_MASK == MSR_REG:
                encoding = system_register(word)
                kind = "msr_daif" if encoding == DAIF else "msr"
                sites[rva + offset] = (kind, encoding, word & 0x1F)
            elif word & MSR_IMM_MASK in (DAIFSET, DAIFCLR):
                kind = "daifset" if word & MSR_IMM_MASK == DAIFSET else "daifclr"
                sites[rva + offset] = (kind, word >> 8 & 0xF, None)
    return sites


def find_x64_sites(image: Image) -> dict[int, tuple[str, int]]:
    """Every privileged or machine-answered instruction in the executable sections:
    RVA -> (kind, length). A linear sweep that resynchronises one byte past undecodable bytes."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    sites = {}
    for section, (rva, raw) in zip(image.sections, image.contents, strict=True):
        if not section.executable:
            continue
        offset = 0
        while offset < len(raw):
            last = offset
            for address, size, mnemonic, _ in md.disasm_lite(raw[offset:], rva + offset):
                kind = SITE_KINDS.get(mnemonic)
                if kind:
                    sites[address] = (kind, size)
                last = address - rva + size
            offset = max(last, offset + 1) if last == offset else last
    return sites
