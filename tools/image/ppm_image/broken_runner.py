"""Writes a copy of the linked x64 image broken on purpose, for the self-test of the image
backend (scripts/check-image-backend.sh --self-test): each defect must make
`ppm-sim validate --pep image` fail a named check.

Usage: python -m ppm_image.broken_runner KIND IMAGE OUT
KIND:
  kmdf-index         DriverEntry's one `call qword ptr [REG + 0x3a0]` (KMDF table index 116,
                     WdfDriverCreate) calls through [REG + 0x3a8] instead (index 117);
  swapped-callbacks  the PEP_INFORMATION stores of ppm_engine::driver::entry::initialize
                     (DriverEntry's registering step, not inlined into it, which keeps
                     DriverEntry's frame under the 4 KiB stack probe): `lea REG, [rip + X]`
                     (X the DPM callback, accept_device_notification) then
                     `mov qword ptr [rsp + D1], REG`,
                     the same for the PPM callback (accept_processor_notification) at D2 = D1 + 8;
                     D1 and D2 are swapped, so each callback lands in the other's field;
  early-return       accept_processor_notification begins with `mov al, 1; ret`: it returns
                     TRUE before writing any output.
IMAGE's map (IMAGE with the suffix .map, lld-link /MAP) names the functions. OUT (a .sys path
outside IMAGE's directory) is written, with the map copied beside it as OUT's name with .map
and IMAGE's stack.txt copied beside it (ppm-sim reads both). IMAGE is never modified. The
CheckSum is left as it was: the runner does not verify it, and so the patched bytes are the only
ones that differ.

Exit 2, with a one-line message, when the image does not contain exactly the expected match (a
changed image must not turn the self-test into a no-op), or on bad arguments.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import capstone
import pefile
from capstone import x86

from .image import Image, ImageError, SymbolMap, parse_image, parse_map

KMDF_INDEX = 116  # WdfDriverCreateTableIndex (KMDF 1.31 WDFFUNCENUM)
WRONG_KMDF_INDEX = 117
RETURN_TRUE = bytes([0xB0, 0x01, 0xC3])  # mov al, 1; ret
DRIVER_ENTRY = "DriverEntry"
REGISTRATION = "initialize"
DPM_CALLBACK = "accept_device_notification"
PPM_CALLBACK = "accept_processor_notification"


class PatchError(Exception):
    """The image does not contain exactly what the patch changes (a one-line reason)."""


@dataclass
class Code:
    """The image's bytes, its functions (map symbols with their .pdata extent) and capstone."""

    data: bytearray
    pe: pefile.PE
    image: Image
    symbols: SymbolMap

    def function(self, name: str) -> tuple[int, int]:
        """(begin, end) RVAs of the one function called `name`: the exact symbol, or else the
        one Rust v0-mangled symbol holding the identifier (`26accept_device_notification`)."""
        named = list(zip(self.symbols.rvas, self.symbols.names, strict=True))
        exact = [rva for rva, symbol in named if symbol == name]
        if not exact:
            mangled = f"{len(name)}{name}"
            exact = [rva for rva, symbol in named if symbol.startswith("_R") and mangled in symbol]
        if len(exact) != 1:
            raise PatchError(f"the map names {len(exact)} functions {name}, expected exactly one")
        begin = exact[0]
        for start, end, _ in self.image.pdata:
            if start == begin:
                return begin, end
        raise PatchError(f"{name} at RVA {begin:#x} has no .pdata entry")

    def offset(self, rva: int) -> int:
        return self.pe.get_offset_from_rva(rva)

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


PATCHES = {
    "kmdf-index": kmdf_index,
    "swapped-callbacks": swapped_callbacks,
    "early-return": early_return,
}


def write_broken(kind: str, source: Path, out: Path) -> str:
    """Writes OUT (and its map and stack.txt); returns what was patched."""
    if out.suffix != ".sys":
        raise PatchError(f"OUT {out} must end with .sys")
    if out.resolve().parent == source.resolve().parent:
        raise PatchError(f"OUT {out} must lie outside the image's directory {source.parent}")
    map_path = source.with_suffix(".map")
    stack = source.with_name("stack.txt")
    if not stack.is_file():
        raise PatchError(f"no {stack} beside the image (scripts/check-driver-image.sh writes it)")
    image = parse_image(str(source), 0)
    symbols = parse_map(str(map_path), image)
    try:
        data = bytearray(source.read_bytes())
        pe = pefile.PE(data=bytes(data), fast_load=True)
    except pefile.PEFormatError as error:
        raise PatchError(f"{source}: not a PE image ({error})") from error
    what = PATCHES[kind](Code(data, pe, image, symbols))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    shutil.copyfile(map_path, out.with_suffix(".map"))
    shutil.copyfile(stack, out.with_name("stack.txt"))
    return what


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 3 or arguments[0] not in PATCHES:
        print(
            f"usage: python -m ppm_image.broken_runner {{{'|'.join(PATCHES)}}} IMAGE OUT",
            file=sys.stderr,
        )
        return 2
    kind, source, out = arguments[0], Path(arguments[1]), Path(arguments[2])
    try:
        what = write_broken(kind, source, out)
    except (ImageError, PatchError, OSError) as error:
        print(f"broken_image {kind}: {error}", file=sys.stderr)
        return 2
    print(f"broken_image {kind}: {out}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
