"""Unit tests of the checker's parts that need no linked image (the linked images, good and
broken, are checked by scripts/check-driver-image.sh --self-test)."""

from pathlib import Path

import pytest

from ppm_image import arm64_unwind, check_image, seh, stack
from ppm_image.image import ImageError, Instruction, RuntimeFunction, demangle, map_symbols
from ppm_image.seh import Scope

IMPORTS = Path(__file__).resolve().parent.parent / "imports"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_project_def_entry_names_its_documentation():
    documented = check_image.load_documented(IMPORTS)
    assert set(documented) == {"ntoskrnl.exe", "hal.dll", "wdfldr.sys"}
    for _module, names in documented.values():
        assert names
        assert all(where for where in names.values())
    # The TraceLogging routines stay importable after the merge of the tracing work.
    ntoskrnl = documented["ntoskrnl.exe"][1]
    for name in ("EtwRegister", "EtwUnregister", "EtwWriteTransfer", "EtwSetInformation"):
        assert name in ntoskrnl


def test_a_def_entry_without_documentation_is_refused(tmp_path):
    path = write(tmp_path, "x.def", "LIBRARY ntoskrnl.exe\nEXPORTS\n    KeBugCheckEx\n")
    with pytest.raises(check_image.DefError, match="KeBugCheckEx names no documentation"):
        check_image.load_def(path)


def test_a_def_without_library_is_refused(tmp_path):
    path = write(tmp_path, "x.def", "EXPORTS\n    KeBugCheckEx ; somewhere\n")
    with pytest.raises(check_image.DefError, match="no LIBRARY line"):
        check_image.load_def(path)


def frame_of_codes(codes):
    """The frame an UNWIND_INFO (version 1) with these unwind codes allocates."""
    info = bytes([1, 0, len(codes) // 2, 0]) + codes
    return seh.frame_of_codes(seh.unwind_info(0, lambda rva, size: info[rva : rva + size]))


def test_unwind_codes_add_up_pushes_and_allocations():
    # push rbp; sub rsp, 0x28 (ALLOC_SMALL 4: 40 bytes); SET_FPREG takes no stack.
    codes = bytes([0x0A, 0x03, 0x05, 0x42, 0x01, 0x50])
    assert frame_of_codes(codes) == 8 + 40
    # ALLOC_LARGE with a 16-bit slot scaled by 8, then SAVE_NONVOL (two slots, no stack).
    codes = bytes([0x13, 0x01, 0xE5, 0x01, 0x0C, 0x04, 0x10, 0x00])
    assert frame_of_codes(codes) == 485 * 8
    # ALLOC_LARGE with a 32-bit size.
    codes = bytes([0x10, 0x11, 0x00, 0x00, 0x01, 0x00])
    assert frame_of_codes(codes) == 0x10000


def test_an_unknown_unwind_operation_is_an_error():
    with pytest.raises(seh.UnwindError, match="unknown unwind operation 11"):
        frame_of_codes(bytes([0x00, 0x0B]))


def test_map_publics_are_read_relative_to_the_load_address(tmp_path):
    text = (
        " ppm_pep\n\n Preferred load address is 0000000180000000\n\n"
        "  Address         Publics by Value              Rva+Base               Lib:Object\n\n"
        " 0001:00002420       DriverEntry                0000000180003420     a.o\n"
        " 0001:000084d0       FxDriverEntry              00000001800094d0 f   kmdf_stub.obj\n"
    )
    symbols = map_symbols(write(tmp_path, "a.map", text))
    assert symbols == {"DriverEntry": 0x3420, "FxDriverEntry": 0x94D0}


def test_a_file_that_is_no_map_is_refused(tmp_path):
    with pytest.raises(ImageError, match="not an lld-link /MAP file"):
        map_symbols(write(tmp_path, "a.map", "hello\n"))


def test_rust_names_read_as_paths():
    assert demangle("_ZN4core3fmt5write17h0123456789abcdefE") == "core::fmt::write"
    v0 = "_RNvNtCs1pEWN1xWsaF_7ppm_pep3log5print"
    assert demangle(v0) == "ppm_pep::log::print"
    assert demangle("FxDriverEntry") == "FxDriverEntry"


def test_a_function_that_moves_the_stack_needs_pdata():
    leaf = [Instruction(0, "movl", "%ecx, %eax"), Instruction(2, "retq", "")]
    assert not check_image.touches_stack(leaf)
    assert check_image.touches_stack([Instruction(0, "subq", "$40, %rsp")])
    assert check_image.touches_stack([Instruction(0, "pushq", "%rbx")])
    assert check_image.touches_stack([Instruction(0, "callq", "0x180001000")])


class FakeImage:
    """Names for messages only."""

    @staticmethod
    def name_at(rva):
        return f"f{rva:x}"


class FakeGraph:
    def __init__(self, frames, calls, tails=None):
        self.image = FakeImage()
        self.frames = frames
        self.calls = calls
        self.tails = tails or {}


def test_the_deepest_chain_adds_frames_and_a_tail_call_reuses_the_slot():
    # a (100) calls b (200) and c (50); b calls d (300); c tail-calls e (1000).
    graph = FakeGraph(
        {0xA: 100, 0xB: 200, 0xC: 50, 0xD: 300, 0xE: 1000},
        {0xA: {0xB, 0xC}, 0xB: {0xD}},
        {0xC: {0xE}},
    )
    depth, path = stack.deepest(graph, 0xA, [], {})
    assert (depth, path) == (1100, [0xA, 0xC, 0xE])
    assert stack.deepest(graph, 0xB, [], {}) == (500, [0xB, 0xD])


def test_recursion_has_no_bound():
    graph = FakeGraph({1: 8, 2: 8}, {1: {2}, 2: {1}})
    with pytest.raises(ValueError, match="recursion, no bound: f1 -> f2 -> f1"):
        stack.deepest(graph, 1, [], {})


def test_an_arm64_function_that_moves_the_stack_needs_pdata():
    leaf = [Instruction(0, "add", "x0, x0, #1"), Instruction(4, "ret", "")]
    assert not check_image.touches_stack(leaf)
    assert not check_image.touches_stack([Instruction(0, "ldr", "x0, [sp, #8]")])
    assert check_image.touches_stack([Instruction(0, "stp", "x29, x30, [sp, #-16]!")])
    assert check_image.touches_stack([Instruction(0, "sub", "sp, sp, #64")])
    assert check_image.touches_stack([Instruction(0, "bl", "0x140001000")])


class FakeCode:
    """An image holding only instructions, at base 0."""

    base = 0

    def __init__(self, instructions):
        self.code = instructions

    def instructions_between(self, begin, end):
        return [i for i in self.code if begin <= i.address < end]


def probe(instructions, scopes):
    function = RuntimeFunction(0x10, 0x30, 0)
    excepts = [Scope(begin, end, 1, 0x2C) for begin, end in scopes]
    return check_image.check_guarded(FakeCode(instructions), "probe", function, excepts)


READ_LEAF = [Instruction(0x40, "rdmsr", ""), Instruction(0x42, "retq", "")]


def test_a_guarded_call_is_matched_by_its_return_address():
    body = [
        Instruction(0x10, "pushq", "%rbp"),
        Instruction(0x18, "callq", "0x40 <leaf>"),
        Instruction(0x1D, "movb", "$1, %al"),
        Instruction(0x20, "retq", ""),
    ]
    assert probe(body + READ_LEAF, [(0x18, 0x1E)]) == []
    # The scope ends at the return address: the call's frame is not covered.
    failures = probe(body + READ_LEAF, [(0x18, 0x1D)])
    assert len(failures) == 1
    assert "callq at 0x18 lies outside its __try scope" in failures[0]


def test_an_inline_rdmsr_outside_every_scope_is_refused():
    body = [Instruction(0x14, "rdmsr", ""), Instruction(0x16, "retq", "")]
    assert probe(body, [(0x14, 0x16)]) == []
    failures = probe(body, [])
    assert failures == [
        "probe: rdmsr at 0x14 lies outside its __try scope (rdmsr at 0x14; __except scopes: none)"
    ]


def test_a_probe_without_any_msr_instruction_is_refused():
    body = [Instruction(0x14, "movl", "%ecx, %eax"), Instruction(0x16, "retq", "")]
    assert probe(body, [(0x14, 0x16)]) == ["probe: no RDMSR or WRMSR under its __try scope"]


def test_arm64_unwind_codes_add_up_allocations():
    # add fp (no stack), stp x29/x30 (no stack), save_next, stp x19/x20 pre-indexed by 96, end.
    prologue = bytes([0xE2, 0x0A, 0x4A, 0xE6, 0x2C, 0xE4])
    assert arm64_unwind.frame_of_codes(prologue, 0, 0) == 96
    # alloc_m 3632 (0xC0E3: 227 * 16), then the same codes; from index 0 of this epilogue.
    epilogue = bytes([0xC0, 0xE3, 0x4A, 0xE6, 0x2C, 0xE4])
    assert arm64_unwind.frame_of_codes(epilogue, 0, 0) == 3632 + 96
    # save_fplr_x (z = 1: 16 bytes), alloc_s 2 (32 bytes), alloc_l 0x10000 * 16.
    assert arm64_unwind.frame_of_codes(bytes([0x81, 0x02, 0xE4]), 0, 0) == 16 + 32
    assert arm64_unwind.frame_of_codes(bytes([0xE0, 0x01, 0x00, 0x00, 0xE4]), 0, 0) == 0x10000 * 16
    # Codes after `end` are not the prologue's.
    assert arm64_unwind.frame_of_codes(bytes([0xE4, 0x1F]), 0, 0) == 0


def test_an_unknown_arm64_unwind_code_is_an_error():
    with pytest.raises(arm64_unwind.UnwindError, match="unknown unwind code 0xf0"):
        arm64_unwind.frame_of_codes(bytes([0xF0]), 0, 0x10)


def test_amu_mrs_words_are_recognised():
    # The guards' encodings (mrs x0, S3_3_C13_C2_2 etc.), and registers that are not the AMU's.
    assert check_image.amu_register(0xD53BD240) == "AMCGCR_EL0"
    assert check_image.amu_register(0xD53BD2A0) == "AMCNTENSET0_EL0"
    assert check_image.amu_register(0xD53BD400) == "AMEVCNTR00_EL0"
    assert check_image.amu_register(0xD53BD420) == "AMEVCNTR01_EL0"
    assert check_image.amu_register(0xD53BD500) == "S3_3_C13_C5_0"  # AMEVCNTR08_EL0
    assert check_image.amu_register(0xD53BD040) is None  # TPIDR_EL0 (CRm 0)
    assert check_image.amu_register(0xD53800A0) is None  # ID_AA64PFR0_EL1
    assert check_image.amu_register(0xD51BD240) is None  # an MSR, not an MRS


class FakeThunk:
    """An image holding one ARM64 import thunk at RVA 0x7AA0, base 0x180000000."""

    base = 0x180000000

    def __init__(self, words):
        self.words = words

    def read(self, rva, size):
        index = (rva - 0x7AA0) // 4
        return self.words[index].to_bytes(4, "little")


def test_an_arm64_import_thunk_names_its_iat_slot():
    # adrp x16, 0x180009000; ldr x16, [x16, #0xa00]; br x16: the slot at RVA 0x9a00.
    thunk = [0xD0000010, 0xF9450210, 0xD61F0200]
    assert check_image.arm64_thunk_target(FakeThunk(thunk), 0x7AA0) == 0x9A00
    # A branch through another register, or a function body, is no thunk.
    assert check_image.arm64_thunk_target(FakeThunk(thunk[:2] + [0xD61F0220]), 0x7AA0) is None
    assert check_image.arm64_thunk_target(FakeThunk([0xD53BD240] + thunk[1:]), 0x7AA0) is None
