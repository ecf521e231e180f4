"""Writes a broken copy of a linked image, for the self-test of check_image.py.

Usage: python -m ppm_image.broken_checker KIND IMAGE MAP OUT
KIND:
  undocumented-import  renames the imported ntoskrnl.exe!KeBugCheckEx to KeBugCheckEy, a name
                       no .def file lists;
  user-mode-import     renames the imported module WDFLDR.SYS to USER32.dll (same length);
  wx-section           makes the .text section writable as well as executable;
  frame-over-budget    makes DriverEntry's UWOP_ALLOC_LARGE allocate 512 KiB (x64), or its
                       first alloc_m unwind code 32 KiB (ARM64);
  arm64-scope-removed  sets the Count of every ARM64 AMU guard's scope table to 0 (its MRS
                       then lies outside every __except scope; an AMU fault is a bugcheck);
  arm64-foreign-handler  names the AMCGCR_EL0 guard itself as its exception handler in place
                       of the __C_specific_handler import thunk;
  arm64-guard-calls    replaces the store after the AMEVCNTR00_EL0 guard's MRS by a BL (to
                       the guard's own __except target).
(An RDMSR outside the __try scope is a relink, not a patch: scripts/check-driver-image.sh.)
The input is never modified; OUT is written, and with --with-map also IMAGE's map and
stack.txt beside OUT, for the image backend (scripts/check-image-backend.sh --self-test runs
arm64-scope-removed). Exit 2 if the patch does not apply.
"""

import shutil
import sys
from pathlib import Path

import pefile

from .image import MACHINE_ARM64, ImageError, ImageFile, stack_identity
from .seh import UWOP_ALLOC_LARGE, u16, u32

KINDS = (
    "undocumented-import",
    "user-mode-import",
    "wx-section",
    "frame-over-budget",
    "arm64-scope-removed",
    "arm64-foreign-handler",
    "arm64-guard-calls",
)
# The ARM64 AMU guards (src/amu_guard.rs).
AMU_GUARDS = (
    "ppm_amu_read_amcgcr",
    "ppm_amu_read_amcntenset0",
    "ppm_amu_read_amevcntr00",
    "ppm_amu_read_amevcntr01",
)


class PatchError(Exception):
    """The image does not contain what the patch changes."""


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
    header = u32(image.read(function.unwind, 4), 0)
    epilogs, words = header >> 22 & 0x1F, header >> 27
    cursor = function.unwind + 4
    if epilogs == 0 and words == 0:
        extended = u32(image.read(cursor, 4), 0)
        epilogs, words = extended & 0xFFFF, extended >> 16 & 0xFF
        cursor += 4
    if not header >> 21 & 1:
        cursor += 4 * epilogs
    codes = image.read(cursor, 4 * words)
    for index, code in enumerate(codes[:-1]):
        if 0xC0 <= code < 0xC8:
            return image.pe.get_offset_from_rva(cursor + index), b"\xc7\xff"
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


def main(argv=None):
    arguments = sys.argv[1:] if argv is None else argv
    copy_beside = arguments[-1:] == ["--with-map"]
    if copy_beside:
        arguments = arguments[:-1]
    if len(arguments) != 4 or arguments[0] not in KINDS:
        print(
            f"usage: python -m ppm_image.broken_checker {{{'|'.join(KINDS)}}} IMAGE MAP OUT"
            " [--with-map]",
            file=sys.stderr,
        )
        return 2
    kind, source, map_path, out = arguments
    try:
        image = ImageFile(source, map_path)
        pe = image.pe
        if out == source:
            raise PatchError("OUT must not be the input image")
        # Raw byte patches are applied after pefile has written its structures (it rewrites
        # the unwind data it parsed, which would undo them).
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
        pe.close()
        for offset, new in raw:
            data[offset : offset + len(new)] = new
        # A correct CheckSum, so that the patched defect is the image's only one.
        patched = pefile.PE(data=bytes(data))
        checksum = patched.generate_checksum()
        checksum_offset = patched.OPTIONAL_HEADER.get_field_absolute_offset("CheckSum")
        data[checksum_offset : checksum_offset + 4] = checksum.to_bytes(4, "little")
        with open(out, "wb") as file:
            file.write(data)
        if copy_beside:
            # The image backend reads the map and stack.txt beside the image.
            shutil.copyfile(map_path, Path(out).with_suffix(".map"))
            # Its figures still hold (no patch changes a frame), re-identified for the
            # patched CheckSum.
            stack = Path(source).with_name("stack.txt")
            if stack.is_file():
                _, _, figures = stack.read_text().partition("\n")
                identity = stack_identity(pefile.PE(data=bytes(data), fast_load=True))
                Path(out).with_name("stack.txt").write_text(f"{identity}\n{figures}")
    except (ImageError, PatchError, OSError) as error:
        print(f"broken_image {kind}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
