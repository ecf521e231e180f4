"""Reading a linked driver image: the PE headers (pefile), lld-link's map, the unwind data
(.pdata/.xdata: x64 decoded here, ARM64 by tools/image-runner/arm64_unwind.py) and
llvm-objdump's disassembly.

Everything the checks in check_image.py and the stack measure in stack.py need; nothing here
decides whether the image is right.
"""

import bisect
import re
import subprocess
from dataclasses import dataclass, field

import pefile

from . import arm64_unwind

MACHINE_X64 = 0x8664
MACHINE_ARM64 = 0xAA64

# UNWIND_INFO flags (x64).
UNW_FLAG_EHANDLER = 0x1
UNW_FLAG_UHANDLER = 0x2
UNW_FLAG_CHAININFO = 0x4

# UNWIND_CODE operations (x64).
UWOP_PUSH_NONVOL = 0
UWOP_ALLOC_LARGE = 1
UWOP_ALLOC_SMALL = 2
UWOP_SET_FPREG = 3
UWOP_SAVE_NONVOL = 4
UWOP_SAVE_NONVOL_FAR = 5
UWOP_EPILOG = 6
UWOP_SAVE_XMM128 = 8
UWOP_SAVE_XMM128_FAR = 9
UWOP_PUSH_MACHFRAME = 10

# How many 16-bit slots each operation takes (x64 unwind codes).
SLOTS = {
    UWOP_PUSH_NONVOL: 1,
    UWOP_ALLOC_SMALL: 1,
    UWOP_SET_FPREG: 1,
    UWOP_SAVE_NONVOL: 2,
    UWOP_SAVE_NONVOL_FAR: 3,
    UWOP_EPILOG: 2,
    UWOP_SAVE_XMM128: 2,
    UWOP_SAVE_XMM128_FAR: 3,
    UWOP_PUSH_MACHFRAME: 1,
}

# Limits on what is read (a malformed image fails with a message, never hangs).
MAX_SCOPE_ENTRIES = 1024
MAX_CHAIN_DEPTH = 32


def stack_identity(pe) -> str:
    """The first line of stack.txt: which image its figures are of (ppm-sim refuses a
    stack.txt whose line does not match the image it runs, sim/src/image/pe.rs)."""
    return (
        f"image TimeDateStamp {pe.FILE_HEADER.TimeDateStamp:#010x} "
        f"CheckSum {pe.OPTIONAL_HEADER.CheckSum:#010x} "
        f"SizeOfImage {pe.OPTIONAL_HEADER.SizeOfImage:#x}"
    )


class ImageError(Exception):
    """The image (or its map) cannot be read as expected."""


@dataclass
class ScopeEntry:
    """One __C_specific_handler scope: [begin, end) guarded, handler filter, jump target."""

    begin: int
    end: int
    handler: int
    target: int


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
    scopes: list[ScopeEntry] = field(default_factory=list)
    handler_data: int | None = None


@dataclass
class Instruction:
    """One disassembled instruction."""

    address: int
    mnemonic: str
    operands: str


def u16(data, offset):
    """Little-endian u16 at offset."""
    return int.from_bytes(data[offset : offset + 2], "little")


def u32(data, offset):
    """Little-endian u32 at offset."""
    return int.from_bytes(data[offset : offset + 4], "little")


class Image:
    """A PE image with its lld-link map."""

    def __init__(self, path, map_path=None, objdump="llvm-objdump"):
        self.path = path
        try:
            self.pe = pefile.PE(path)
        except (OSError, pefile.PEFormatError) as error:
            raise ImageError(f"{path}: not a PE image: {error}") from error
        self.base = self.pe.OPTIONAL_HEADER.ImageBase
        self.machine = self.pe.FILE_HEADER.Machine
        self.map_path = map_path
        self.symbols = parse_map(map_path) if map_path else {}
        self.objdump = objdump
        self._instructions = None
        self._functions = None

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
        ranges = []
        for section in self.pe.sections:
            if section.Characteristics & pefile.SECTION_CHARACTERISTICS["IMAGE_SCN_MEM_EXECUTE"]:
                start = section.VirtualAddress
                ranges.append((start, start + max(section.Misc_VirtualSize, section.SizeOfRawData)))
        return ranges

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
        if not hasattr(self, "_by_address"):
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
        found = []
        for entry in getattr(self.pe, "DIRECTORY_ENTRY_IMPORT", []):
            dll = entry.dll.decode(errors="replace")
            for symbol in entry.imports:
                name = symbol.name.decode(errors="replace") if symbol.name else None
                found.append((dll, name, None if name else symbol.ordinal))
        return found

    def import_address(self, dll, name):
        """The RVA of the IAT slot of `dll!name`, or None."""
        for entry in getattr(self.pe, "DIRECTORY_ENTRY_IMPORT", []):
            if entry.dll.decode(errors="replace").lower() != dll.lower():
                continue
            for symbol in entry.imports:
                if symbol.name and symbol.name.decode(errors="replace") == name:
                    return symbol.address - self.base
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

    # --- unwind data (x64) ----------------------------------------------------------------

    def runtime_functions(self):
        """Every .pdata entry, decoded, by address (x64 only)."""
        if self._functions is not None:
            return self._functions
        directory = self.pe.OPTIONAL_HEADER.DATA_DIRECTORY[
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXCEPTION"]
        ]
        data = self.read(directory.VirtualAddress, directory.Size) if directory.Size else b""
        if self.machine == MACHINE_ARM64:
            self._functions = self._arm64_runtime_functions(data)
            return self._functions
        if self.machine != MACHINE_X64:
            raise ImageError(f"unwind data of machine {self.machine:#x} is not decoded")
        if len(data) % 12:
            raise ImageError(f".pdata size {len(data)} is not a multiple of 12")
        functions = []
        for offset in range(0, len(data), 12):
            begin, end, unwind = u32(data, offset), u32(data, offset + 4), u32(data, offset + 8)
            function = RuntimeFunction(begin, end, unwind)
            self._decode_unwind(function, unwind, 0)
            functions.append(function)
        functions.sort(key=lambda function: function.begin)
        self._functions = functions
        return functions

    def _arm64_runtime_functions(self, data):
        """ARM64 .pdata, decoded by the project's one ARM64 unwind decoder (arm64_unwind):
        each function's range, frame (what its prologue or an epilogue allocates), exception
        handler and, when it has one, its scope table read as __C_specific_handler's."""
        functions = []
        try:
            for begin, unwind in arm64_unwind.decode_pdata(data):
                decoded = arm64_unwind.decode_function(begin, unwind, self.read)
                function = RuntimeFunction(
                    begin, decoded.end, unwind, frame=decoded.frame(), handler=decoded.handler
                )
                if decoded.handler_data is not None:
                    function.handler_data = decoded.handler_data
                    function.scopes = [
                        ScopeEntry(scope.begin, scope.end, scope.handler, scope.target)
                        for scope in arm64_unwind.scope_table(decoded.handler_data, self.read)
                    ]
                functions.append(function)
        except arm64_unwind.UnwindError as error:
            raise ImageError(str(error)) from error
        return functions

    def _decode_unwind(self, function, unwind, depth):
        if depth > MAX_CHAIN_DEPTH:
            raise ImageError(f"unwind chain at {function.begin:#x} deeper than {MAX_CHAIN_DEPTH}")
        header = self.read(unwind, 4)
        version, flags = header[0] & 0x7, header[0] >> 3
        count = header[2]
        if version not in (1, 2):
            raise ImageError(f"UNWIND_INFO at {unwind:#x}: version {version}")
        codes = self.read(unwind + 4, 2 * count)
        function.frame += frame_of_codes(codes, count, unwind)
        tail = unwind + 4 + 2 * (count + (count & 1))
        if depth == 0:
            function.flags = flags
        if flags & UNW_FLAG_CHAININFO:
            parent = self.read(tail, 12)
            self._decode_unwind(function, u32(parent, 8), depth + 1)
        elif flags & (UNW_FLAG_EHANDLER | UNW_FLAG_UHANDLER) and depth == 0:
            function.handler = u32(self.read(tail, 4), 0)
            function.scopes = self._c_scope_table(tail + 4)

    def _c_scope_table(self, rva):
        """The __C_specific_handler SCOPE_TABLE at `rva` (Count, then Count entries)."""
        count = u32(self.read(rva, 4), 0)
        if count > MAX_SCOPE_ENTRIES:
            return []
        data = self.read(rva + 4, 16 * count)
        return [
            ScopeEntry(*(u32(data, 16 * index + 4 * word) for word in range(4)))
            for index in range(count)
        ]

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


def frame_of_codes(codes, count, where):
    """Bytes of stack the prologue's unwind codes allocate (pushes, allocations, machine frame)."""
    frame = 0
    index = 0
    while index < count:
        info = codes[2 * index + 1]
        operation, operation_info = info & 0xF, info >> 4
        if operation == UWOP_PUSH_NONVOL:
            frame += 8
            slots = 1
        elif operation == UWOP_ALLOC_SMALL:
            frame += operation_info * 8 + 8
            slots = 1
        elif operation == UWOP_ALLOC_LARGE and operation_info == 0:
            frame += u16(codes, 2 * index + 2) * 8
            slots = 2
        elif operation == UWOP_ALLOC_LARGE and operation_info == 1:
            frame += u32(codes, 2 * index + 2)
            slots = 3
        elif operation == UWOP_PUSH_MACHFRAME:
            frame += 48 if operation_info else 40
            slots = 1
        elif operation in SLOTS:
            slots = SLOTS[operation]
        else:
            raise ImageError(f"UNWIND_INFO at {where:#x}: unknown unwind operation {operation}")
        index += slots
    return frame


MAP_SYMBOL = re.compile(
    r"^\s*[0-9a-fA-F]{4}:[0-9a-fA-F]{8}\s+(\S+)\s+([0-9a-fA-F]{8,16})\s+(?:f\s+)?(?:i\s+)?\S.*$"
)


def parse_map(path):
    """Public symbols of an lld-link /MAP file: {name: RVA}."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError as error:
        raise ImageError(f"{path}: {error}") from error
    base_match = re.search(r"Preferred load address is ([0-9a-fA-F]+)", text)
    if base_match is None:
        raise ImageError(f"{path}: no 'Preferred load address' line: not an lld-link /MAP file")
    base = int(base_match.group(1), 16)
    symbols = {}
    for line in text.splitlines():
        match = MAP_SYMBOL.match(line)
        if match:
            address = int(match.group(2), 16)
            if address >= base:
                symbols.setdefault(match.group(1), address - base)
    return symbols


def demangle(name):
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
