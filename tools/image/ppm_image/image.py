"""The driver image as the runner maps it: PE sections, base relocations, import bindings, the
lld-link map's function symbols, and the privileged-instruction sites (capstone over the
executable sections).

Limits: an image of at most 64 MiB (SizeOfImage) and 4096 imports; a map file of at most
16 MiB.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import capstone
import pefile

from . import arm64_unwind

MAX_IMAGE_BYTES = 64 << 20
MAX_MAP_BYTES = 16 << 20
MAX_IMPORTS = 0x1000  # one stub byte each in the runner's import stub page
PAGE = 0x1000

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


@dataclass
class Section:
    name: str
    rva: int
    size: int
    executable: bool
    writable: bool
    readable: bool


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


MACHINES = {0x8664: "x64", 0xAA64: "arm64"}


def parse_image(path: str, base: int, arch: str = "x64", max_imports: int = MAX_IMPORTS) -> Image:
    try:
        pe = pefile.PE(path, fast_load=True)
    except (OSError, pefile.PEFormatError) as error:
        raise ImageError(f"{path}: not a PE image ({error})") from error
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
    sections, contents = [], []
    for s in pe.sections:
        ch = s.Characteristics
        vsize = max(s.Misc_VirtualSize, 0)
        sections.append(
            Section(
                s.Name.rstrip(b"\0").decode("ascii", "replace"),
                s.VirtualAddress,
                vsize,
                bool(ch & 0x20000000),
                bool(ch & 0x80000000),
                bool(ch & 0x40000000),
            )
        )
        raw = s.get_data()[: min(vsize, s.SizeOfRawData) if vsize else s.SizeOfRawData]
        if s.VirtualAddress + len(raw) > size:
            raise ImageError(f"{path}: section {sections[-1].name} lies outside SizeOfImage")
        contents.append((s.VirtualAddress, raw))
    relocations = []
    for block in getattr(pe, "DIRECTORY_ENTRY_BASERELOC", []):
        for entry in block.entries:
            if entry.type == pefile.RELOCATION_TYPE["IMAGE_REL_BASED_DIR64"]:
                relocations.append(entry.rva)
            elif entry.type != pefile.RELOCATION_TYPE["IMAGE_REL_BASED_ABSOLUTE"]:
                raise ImageError(f"{path}: base relocation type {entry.type} is not DIR64")
    imports = []
    for dll in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []):
        for imp in dll.imports:
            if imp.name is None:
                raise ImageError(f"{path}: {dll.dll.decode()} import by ordinal {imp.ordinal}")
            imports.append((dll.dll.decode(), imp.name.decode(), imp.address - opt.ImageBase))
    if len(imports) > max_imports:
        raise ImageError(f"{path}: {len(imports)} imports exceed the limit of {max_imports}")
    pdata: list[tuple[int, ...]] = []
    exc = opt.DATA_DIRECTORY[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXCEPTION"]]
    if arch == "arm64" and exc.Size:
        try:
            pdata = list(arm64_unwind.decode_pdata(pe.get_data(exc.VirtualAddress, exc.Size)))
        except arm64_unwind.UnwindError as error:
            raise ImageError(f"{path}: {error}") from error
    elif exc.Size:
        data = pe.get_data(exc.VirtualAddress, exc.Size)
        for offset in range(0, len(data) - 11, 12):
            begin, end, unwind = (
                int.from_bytes(data[offset + i : offset + i + 4], "little") for i in (0, 4, 8)
            )
            pdata.append((begin, end, unwind))
        pdata.sort()
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


_MAP_LINE = re.compile(r"^\s*([0-9a-fA-F]{4}):([0-9a-fA-F]{8})\s+(\S+)\s+([0-9a-fA-F]{16})\b")


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
    functions: dict[int, str] = {}
    for line in text.splitlines():
        match = _MAP_LINE.match(line)
        if not match:
            continue
        rva = int(match.group(4), 16) - preferred_base
        name = match.group(3)
        if name.startswith("$"):  # local labels (e.g. $ehgcr_0_4, an __except target)
            continue
        if 0 <= rva < image.size and image.is_executable(rva):
            functions.setdefault(rva, name)
    if not functions:
        raise ImageError(f"{path}: no function symbols in executable sections")
    return SymbolMap(functions)


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
