"""Checks a linked ppm_pep.sys the way Windows' loader and a reviewer would.

Usage: python -m ppm_image.check_image IMAGE --map MAP --imports DIR [--arch x64|arm64]
                                       [--objdump PATH] [--stack-report FILE]
Exit status: 0 when every check passes, 1 when one fails (each failure printed on one line
naming what is wrong), 2 on bad arguments or an unreadable image.

Checks (x64 and ARM64 unless said):
  headers   subsystem NATIVE; DllCharacteristics WDM_DRIVER, NX_COMPAT, DYNAMIC_BASE,
            FORCE_INTEGRITY; a CheckSum that is set and equals the image's; the entry point
            is FxDriverEntry.
  imports   only from ntoskrnl.exe, HAL.dll and WDFLDR.SYS, by name, each name in that
            module's .def file under --imports (every entry of which names where it is
            documented); nothing from a user-mode DLL or a C runtime.
  sections  none both writable and executable; no discardable or pageable executable
            section (the PEP's code runs at any IRQL, so none of it may be paged or dropped).
  exports   none but DriverEntry and the linker symbols wdk-sys defines (ALLOWED_EXPORTS).
  unwind    .pdata covers every function that touches the stack; ranges sorted, disjoint
            and in code.
  seh       (x64) ppm_msr_probe_read/_write name __C_specific_handler (imported from
            ntoskrnl.exe) as their handler, and every RDMSR, WRMSR and call in them lies inside
            an __except scope of its scope table (a call by its return address, as the
            handler matches it); an RDMSR/WRMSR must be found so guarded, in the body or in the
            leaf a guarded call reaches.
            (ARM64) every Activity Monitors MRS of the image (op0 3, op1 3, CRn 13, CRm >= 2)
            lies inside an __except scope of its function's scope table, that function's
            handler is the import thunk of ntoskrnl.exe!__C_specific_handler, and it makes no
            call (BL, BLR); the four registers the driver reads must each be found so guarded.
  stack     the deepest stack of FxDriverEntry and each PoFx callback against its budget
            (see stack.py).
"""

import argparse
import re
import sys
from pathlib import Path

import pefile

from . import stack
from .image import (
    MACHINE_ARM64,
    MACHINE_X64,
    MRS,
    MRS_MASK,
    ImageError,
    ImageFile,
    demangle,
    stack_identity,
    system_register,
)
from .seh import u32

ALLOWED_MODULES = ("ntoskrnl.exe", "HAL.dll", "WDFLDR.SYS")
USER_MODE_DLLS = (
    "kernel32.dll",
    "kernelbase.dll",
    "ntdll.dll",
    "user32.dll",
    "advapi32.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "vcruntime140.dll",
)
CRT_PATTERN = re.compile(r"^(api-ms-win-crt-|msvcr|msvcp|vcruntime|ucrtbase)", re.IGNORECASE)
# DriverEntry (src/driver.rs exports it by name, as every windows-drivers-rs driver does) and
# the symbols wdk-sys 0.5.2 defines `#[no_mangle] pub` in its lib.rs for the MSVC linker
# (_fltused, and stand-ins of the C++ EH handlers, which rustc exports from a cdylib): the
# cargo make image exports the same; anything else is new and refused.
ALLOWED_EXPORTS = (
    "DriverEntry",
    "_fltused",
    "__CxxFrameHandler3",
    "__CxxFrameHandler4",
    "__GSHandlerCheck_EH4",
)

DLL_WDM_DRIVER = 0x2000
DLL_NX_COMPAT = 0x0100
DLL_DYNAMIC_BASE = 0x0040
DLL_FORCE_INTEGRITY = 0x0080
SUBSYSTEM_NATIVE = 1

SCN_EXECUTE = pefile.SECTION_CHARACTERISTICS["IMAGE_SCN_MEM_EXECUTE"]
SCN_WRITE = pefile.SECTION_CHARACTERISTICS["IMAGE_SCN_MEM_WRITE"]
SCN_DISCARDABLE = pefile.SECTION_CHARACTERISTICS["IMAGE_SCN_MEM_DISCARDABLE"]

# The SEH shim's functions and the instructions that may fault in them.
SEH_FUNCTIONS = ("ppm_msr_probe_read", "ppm_msr_probe_write")
FAULTING = re.compile(r"^(rdmsr|wrmsr|call[a-z]*)$")
# Limits of the .def files read.
MAX_DEF_BYTES = 1 << 20


class DefError(Exception):
    """A .def file is malformed or an entry names no documentation."""


def load_def(path):
    """(module, {name: documentation}) of a .def file whose entries read `name ; <where>`."""
    text = Path(path).read_bytes()
    if len(text) > MAX_DEF_BYTES:
        raise DefError(f"{path}: larger than {MAX_DEF_BYTES} bytes")
    module, names, in_exports = None, {}, False
    for number, line in enumerate(text.decode("utf-8").splitlines(), 1):
        code, _, comment = line.partition(";")
        words = code.split()
        if not words:
            continue
        if words[0] == "LIBRARY":
            module = words[1] if len(words) > 1 else None
        elif words[0] == "EXPORTS":
            in_exports = True
        elif in_exports:
            if len(words) != 1:
                raise DefError(f"{path}:{number}: one name per line expected, got '{code.strip()}'")
            documentation = comment.strip()
            if not documentation:
                raise DefError(f"{path}:{number}: {words[0]} names no documentation ('; <where>')")
            names[words[0]] = documentation
    if module is None:
        raise DefError(f"{path}: no LIBRARY line")
    return module, names


def load_documented(directory):
    """{module (lowercase): (module, {name: documentation})} of every .def under directory."""
    documented = {}
    for path in sorted(Path(directory).glob("*.def")):
        module, names = load_def(path)
        documented[module.lower()] = (module, names)
    if not documented:
        raise DefError(f"{directory}: no .def files")
    return documented


def check_headers(image):
    """Subsystem, DllCharacteristics, CheckSum and the entry point."""
    failures = []
    optional = image.pe.OPTIONAL_HEADER
    if optional.Subsystem != SUBSYSTEM_NATIVE:
        failures.append(f"subsystem is {optional.Subsystem}, not NATIVE (1)")
    flags = optional.DllCharacteristics
    for bit, name in (
        (DLL_WDM_DRIVER, "IMAGE_DLLCHARACTERISTICS_WDM_DRIVER"),
        (DLL_NX_COMPAT, "IMAGE_DLLCHARACTERISTICS_NX_COMPAT"),
        (DLL_DYNAMIC_BASE, "IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE"),
        (DLL_FORCE_INTEGRITY, "IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY"),
    ):
        if not flags & bit:
            failures.append(f"DllCharacteristics {flags:#06x} lacks {name}")
    if optional.CheckSum == 0:
        failures.append("CheckSum is 0 (not set)")
    elif optional.CheckSum != image.pe.generate_checksum():
        failures.append(
            f"CheckSum {optional.CheckSum:#x} is wrong: "
            f"the image's is {image.pe.generate_checksum():#x}"
        )
    entry = optional.AddressOfEntryPoint
    try:
        expected = image.rva_of("FxDriverEntry")
    except ImageError as error:
        failures.append(f"entry point: {error}")
    else:
        if entry != expected:
            failures.append(
                f"entry point {entry:#x} ({image.name_at(entry)}) "
                f"is not FxDriverEntry ({expected:#x})"
            )
    if not image.pe.OPTIONAL_HEADER.DATA_DIRECTORY[
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_BASERELOC"]
    ].Size:
        failures.append("no base relocations: a dynamic-base driver cannot be relocated")
    return failures


def check_imports(image, documented):
    """Modules and names of the import directory."""
    failures = []
    allowed = {module.lower() for module in ALLOWED_MODULES}
    for dll, name, ordinal in image.imports():
        shown = f"{dll}!{name if name else f'#{ordinal}'}"
        if dll.lower() in USER_MODE_DLLS or CRT_PATTERN.match(dll):
            failures.append(f"import {shown}: {dll} is a user-mode DLL")
            continue
        if dll.lower() not in allowed:
            failures.append(f"import {shown}: {dll} is not one of {', '.join(ALLOWED_MODULES)}")
            continue
        if name is None:
            failures.append(f"import {shown}: by ordinal, not by a documented name")
            continue
        module_names = documented.get(dll.lower())
        if module_names is None or name not in module_names[1]:
            failures.append(f"import {shown}: not in the documented exports of {dll}")
    if not image.imports():
        failures.append("no imports at all: not a linked driver")
    return failures


def check_no_crt(image):
    """No object of a C runtime library among the map's inputs."""
    crt = re.compile(
        r"\b(libcmt|libucrt|libvcruntime|msvcrt|ucrt|vcruntime)\w*\.lib", re.IGNORECASE
    )
    text = Path(image.map_path).read_text(errors="replace") if image.map_path else ""
    found = sorted(set(crt.findall(text)))
    return [f"the map names C runtime library input {name}" for name in found]


def check_sections(image):
    """W+X, discardable or pageable code."""
    failures = []
    for section in image.pe.sections:
        name = section.Name.rstrip(b"\0").decode(errors="replace")
        flags = section.Characteristics
        if flags & SCN_EXECUTE and flags & SCN_WRITE:
            failures.append(f"section {name} is both writable and executable")
        if flags & SCN_EXECUTE and flags & SCN_DISCARDABLE:
            failures.append(f"section {name} is discardable code (INIT-style): none is meant")
        if flags & SCN_EXECUTE and name.upper().startswith("PAGE"):
            failures.append(f"section {name} is pageable code: the PEP's code runs at any IRQL")
    return failures


def check_exports(image):
    """Nothing exported but DriverEntry."""
    return [
        f"export {name}: not DriverEntry nor one of wdk-sys' linker symbols"
        for name in image.exports()
        if name not in ALLOWED_EXPORTS
    ]


def touches_stack(instructions):
    """Whether a function's instructions push, call or move the stack pointer (x64 or ARM64)."""
    for instruction in instructions:
        if instruction.mnemonic in ("bl", "blr"):
            return True
        if instruction.operands.startswith("sp,") or (
            "[sp" in instruction.operands and instruction.operands.endswith("!")
        ):
            return True
        if instruction.mnemonic.startswith(("push", "call")):
            return True
        if instruction.mnemonic.startswith(("sub", "add", "lea")) and re.search(
            r"%rsp$", instruction.operands
        ):
            return True
    return False


def check_unwind(image):
    """.pdata sorted, disjoint, inside code, and covering every function that needs it."""
    failures = []
    functions = image.runtime_functions()
    ranges = image.executable_ranges()
    previous_end = 0
    for function in functions:
        if function.begin < previous_end:
            failures.append(f".pdata entry {function.begin:#x} overlaps the previous one")
        if not any(start <= function.begin < function.end <= end for start, end in ranges):
            failures.append(f".pdata entry {function.begin:#x}-{function.end:#x} is not in code")
        previous_end = function.end
    symbols = image.functions_in_text()
    for index, (rva, name) in enumerate(symbols):
        if image.function_containing(rva) is not None:
            continue
        end = symbols[index + 1][0] if index + 1 < len(symbols) else rva + 4096
        if touches_stack(image.instructions_between(rva, end)):
            failures.append(
                f"function {demangle(name)} ({rva:#x}) uses the stack but no .pdata entry covers it"
            )
    return failures


def check_seh(image):
    """The SEH shim's faulting instructions lie inside an __except scope of its scope table."""
    failures = []
    handler_slot = image.import_address("ntoskrnl.exe", "__C_specific_handler")
    if handler_slot is None:
        return [
            "__C_specific_handler is not imported from ntoskrnl.exe: the SEH shim has no handler"
        ]
    for name in SEH_FUNCTIONS:
        try:
            rva = image.rva_of(name)
        except ImageError as error:
            failures.append(f"SEH shim: {error}")
            continue
        function = image.function_containing(rva)
        if function is None:
            failures.append(f"{name}: no .pdata entry: an exception in it cannot be handled")
            continue
        if function.handler is None:
            failures.append(f"{name}: its unwind info names no exception handler")
            continue
        if not calls_through(image, function.handler, handler_slot):
            failures.append(
                f"{name}: its handler {image.name_at(function.handler)} is not __C_specific_handler"
            )
            continue
        excepts = [scope for scope in function.scopes if scope.target != 0]
        failures += check_guarded(image, name, function, excepts)
    return failures


def check_guarded(image, name, function, excepts):
    """Every RDMSR/WRMSR of a probe, in its body or in a direct callee, is under an __except.

    __C_specific_handler matches a frame's ControlPc against [BeginAddress, EndAddress): for
    the faulting instruction that is its own address; for a call, the frame's ControlPc is the
    return address, the next instruction's.
    """
    failures, guarded = [], []
    ranges = ", ".join(f"{scope.begin:#x}-{scope.end:#x}" for scope in excepts) or "none"
    body = image.instructions_between(function.begin, function.end)
    for index, instruction in enumerate(body):
        if not FAULTING.match(instruction.mnemonic):
            continue
        is_call = instruction.mnemonic.startswith("call")
        if is_call and index + 1 < len(body):
            control_pc = body[index + 1].address
        elif is_call:
            control_pc = function.end
        else:
            control_pc = instruction.address
        inside = any(scope.begin <= control_pc < scope.end for scope in excepts)
        if not inside:
            what = "the return address of the call" if is_call else instruction.mnemonic
            failures.append(
                f"{name}: {instruction.mnemonic} at {instruction.address:#x} lies outside its "
                f"__try scope ({what} at {control_pc:#x}; __except scopes: {ranges})"
            )
        elif is_call:
            guarded += msr_instructions_of_callee(image, instruction)
        else:
            guarded.append(instruction.mnemonic)
    if not failures and not guarded:
        failures.append(f"{name}: no RDMSR or WRMSR under its __try scope")
    return failures


def msr_instructions_of_callee(image, call):
    """RDMSR/WRMSR mnemonics of the direct callee of `call` (a leaf: up to its first ret)."""
    target = re.match(r"^0x([0-9a-f]+)", call.operands)
    if target is None:
        return []
    start = int(target.group(1), 16) - image.base
    found = []
    for instruction in image.instructions_between(start, start + 64):
        if instruction.mnemonic in ("rdmsr", "wrmsr"):
            found.append(instruction.mnemonic)
        if instruction.mnemonic.startswith("ret"):
            break
    return found


def calls_through(image, rva, slot):
    """Whether the code at rva is `jmp *[slot]` (an import thunk) or its address is slot."""
    if rva == slot:
        return True
    instructions = image.instructions_between(rva, rva + 8)
    if not instructions:
        return False
    target = f"{slot + image.base:#x}"
    return instructions[0].mnemonic.startswith("jmp") and target in instructions[0].operands


# ARM64: MRS Xt, (op0 op1 CRn CRm op2); the Activity Monitors are op0 3, op1 3, CRn 13, CRm 2
# and up (CRm 0 is TPIDR_EL0/TPIDRRO_EL0). The registers the driver reads, by (CRm, op2).
AMU_REGISTERS = {
    (2, 2): "AMCGCR_EL0",
    (2, 5): "AMCNTENSET0_EL0",
    (4, 0): "AMEVCNTR00_EL0",
    (4, 1): "AMEVCNTR01_EL0",
}
BL_MASK, BL = 0xFC000000, 0x94000000
BLR_MASK, BLR = 0xFFFFFC1F, 0xD63F0000  # blr Xn
BLRA_MASK, BLRA = 0xFEFFF800, 0xD63F0800  # blraa, blrab, blraaz, blrabz


def amu_register(word):
    """The name of the Activity Monitors register an MRS word reads, or None."""
    if word & MRS_MASK != MRS:
        return None
    op0, op1, crn, crm, op2 = system_register(word)
    if (op0, op1, crn) != (3, 3, 13) or crm < 2:
        return None
    return AMU_REGISTERS.get((crm, op2), f"S3_3_C13_C{crm}_{op2}")


def code_words(image):
    """(RVA, word) of every 4-byte-aligned word of the executable sections."""
    for start, end in image.executable_ranges():
        data = image.pe.get_data(start, end - start)
        for offset in range(0, len(data) - 3, 4):
            yield start + offset, int.from_bytes(data[offset : offset + 4], "little")


def arm64_thunk_target(image, rva):
    """The IAT slot (RVA) an ARM64 import thunk at `rva` branches through
    (adrp x16, page; ldr x16, [x16, #offset]; br x16), or None if the code is not one."""
    adrp, ldr, br = (u32(image.read(rva + 4 * n, 4), 0) for n in range(3))
    if adrp & 0x9F00001F != 0x90000010 or ldr & 0xFFC003FF != 0xF9400210 or br != 0xD61F0200:
        return None
    immediate = (adrp >> 5 & 0x7FFFF) << 2 | adrp >> 29 & 3
    if immediate & 1 << 20:
        immediate -= 1 << 21
    page = ((image.base + rva) & ~0xFFF) + (immediate << 12)
    return page + (ldr >> 10 & 0xFFF) * 8 - image.base


def check_arm64_seh(image):
    """Every Activity Monitors MRS lies inside an __except scope of its function's scope
    table, the function's handler is __C_specific_handler imported from ntoskrnl.exe, and
    the function (the guard) makes no call; each register the driver reads is so guarded."""
    handler_slot = image.import_address("ntoskrnl.exe", "__C_specific_handler")
    if handler_slot is None:
        return [
            "__C_specific_handler is not imported from ntoskrnl.exe: the AMU guards have no handler"
        ]
    failures, guarded, guards = [], set(), {}
    for rva, word in code_words(image):
        register = amu_register(word)
        if register is None:
            continue
        function = image.function_containing(rva)
        where = f"mrs of {register} at {rva:#x}"
        if function is None:
            failures.append(f"{where}: no .pdata entry: an exception in it cannot be handled")
            continue
        name = image.name_at(function.begin)
        guards[function.begin] = function
        if function.handler is None:
            failures.append(f"{name}: {where}: its unwind info names no exception handler")
            continue
        if arm64_thunk_target(image, function.handler) != handler_slot:
            failures.append(
                f"{name}: its handler {image.name_at(function.handler)} is not __C_specific_handler"
            )
            continue
        excepts = [scope for scope in function.scopes if scope.target != 0]
        if not any(scope.begin <= rva < scope.end for scope in excepts):
            ranges = ", ".join(f"{s.begin:#x}-{s.end:#x}" for s in excepts) or "none"
            failures.append(
                f"{name}: {where} lies outside its __except scope (__except scopes: {ranges})"
            )
            continue
        guarded.add(register)
    for begin, function in sorted(guards.items()):
        for rva in range(function.begin, function.end, 4):
            word = u32(image.read(rva, 4), 0)
            if word & BL_MASK == BL or word & BLR_MASK == BLR or word & BLRA_MASK == BLRA:
                failures.append(
                    f"{image.name_at(begin)}: the AMU guard makes a call at {rva:#x}: a fault "
                    "below it would be matched at the call, not at its MRS"
                )
    for register in AMU_REGISTERS.values():
        if register not in guarded and not failures:
            failures.append(f"no MRS of {register} under an __except scope")
    return failures


def run(image, documented, arch, stack_report=None):
    """Every check for arch; (failures, notes)."""
    failures = []
    failures += check_headers(image)
    failures += check_imports(image, documented)
    failures += check_no_crt(image)
    failures += check_sections(image)
    failures += check_exports(image)
    notes = []
    failures += check_unwind(image)
    failures += check_seh(image) if arch == "x64" else check_arm64_seh(image)
    stack_failures, stack_notes = stack.check(image)
    failures += stack_failures
    notes += stack_notes
    if stack_report:
        Path(stack_report).write_text("\n".join([stack_identity(image.pe), *stack_notes]) + "\n")
    return failures, notes


def main(argv=None):
    parser = argparse.ArgumentParser(description="Checks a linked ppm_pep.sys.")
    parser.add_argument("image")
    parser.add_argument("--map", required=True, help="lld-link /MAP file of the image")
    parser.add_argument("--imports", required=True, help="directory of the documented .def files")
    parser.add_argument("--arch", choices=("x64", "arm64"), default="x64")
    parser.add_argument("--objdump", default="llvm-objdump")
    parser.add_argument("--stack-report", help="also write the stack figures to this file")
    arguments = parser.parse_args(argv)
    try:
        documented = load_documented(arguments.imports)
        image = ImageFile(arguments.image, arguments.map, arguments.objdump)
    except (DefError, ImageError, OSError, UnicodeDecodeError) as error:
        print(f"check-image: {error}", file=sys.stderr)
        return 2
    expected = MACHINE_X64 if arguments.arch == "x64" else MACHINE_ARM64
    if image.machine != expected:
        print(f"check-image: {arguments.image} is machine {image.machine:#x}, not {arguments.arch}")
        return 1
    try:
        failures, notes = run(image, documented, arguments.arch, arguments.stack_report)
    except ImageError as error:
        failures, notes = [str(error)], []
    for note in notes:
        print(note)
    for failure in failures:
        print(f"FAIL {Path(arguments.image).name}: {failure}")
    if not failures:
        print(f"{arguments.image}: every check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
