"""The runner's C code hooks (native.py, hooks.c) on a bare Unicorn: the stop at a return
address and the instruction counter."""

import sys

import pytest
from unicorn import UC_ARCH_ARM64, UC_ARCH_X86, UC_MODE_64, UC_MODE_ARM, UC_PROT_ALL, Uc
from unicorn import arm64_const as arm64
from unicorn import x86_const as x86

from ppm_image import native
from ppm_image.instruction_counter import InstructionCounter
from ppm_image.layout import Fatal

CODE, STACK, RETURN, UNREACHED = 0x10000, 0x20000, 0x30000, 0x30100


def test_a_run_stops_at_the_hooked_return_before_its_instruction_runs():
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    for base in (CODE, STACK, RETURN):
        uc.mem_map(base, 0x1000, UC_PROT_ALL)
    uc.mem_write(CODE, b"\xb8\x01\x00\x00\x00\xc3")  # mov eax, 1; ret
    uc.mem_write(RETURN, b"\xb8\x02\x00\x00\x00\xc3")  # mov eax, 2 (must not run); ret
    native.stop_at(uc, RETURN)
    for _ in range(3):  # every run, not only the first
        uc.reg_write(x86.UC_X86_REG_RAX, 0)
        uc.reg_write(x86.UC_X86_REG_RSP, STACK + 0x800)
        uc.mem_write(STACK + 0x800, RETURN.to_bytes(8, "little"))
        uc.emu_start(CODE, UNREACHED)
        assert uc.reg_read(x86.UC_X86_REG_RIP) == RETURN
        assert uc.reg_read(x86.UC_X86_REG_RAX) == 1


def test_an_arm64_run_stops_at_the_hooked_link_register():
    uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    for base in (CODE, RETURN):
        uc.mem_map(base, 0x1000, UC_PROT_ALL)
    uc.mem_write(CODE, (0xD2800020).to_bytes(4, "little") + (0xD65F03C0).to_bytes(4, "little"))
    uc.mem_write(RETURN, (0xD2800040).to_bytes(4, "little"))  # mov x0, #2 (must not run)
    native.stop_at(uc, RETURN)
    uc.reg_write(arm64.UC_ARM64_REG_LR, RETURN)
    uc.emu_start(CODE, UNREACHED)
    assert uc.reg_read(arm64.UC_ARM64_REG_PC) == RETURN
    assert uc.reg_read(arm64.UC_ARM64_REG_X0) == 1  # mov x0, #1; ret


def test_the_counter_counts_the_instructions_in_its_range_only():
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    for base in (CODE, STACK, RETURN):
        uc.mem_map(base, 0x1000, UC_PROT_ALL)
    # nop; nop; call the routine at CODE+0x100 (outside the range); ret
    uc.mem_write(CODE, b"\x90\x90\xe8\xf9\x00\x00\x00\xc3")
    uc.mem_write(CODE + 0x100, b"\x90\x90\x90\xc3")
    counter = InstructionCounter(uc, CODE, CODE + 0xFF)
    native.stop_at(uc, RETURN)
    uc.reg_write(x86.UC_X86_REG_RSP, STACK + 0x800)
    uc.mem_write(STACK + 0x800, RETURN.to_bytes(8, "little"))
    uc.emu_start(CODE, UNREACHED)
    assert counter.count == 4


@pytest.mark.parametrize(
    ("compiler", "says"),
    [
        ("/nonexistent/cc", "cannot run the C compiler '/nonexistent/cc'"),
        ("false", "exited with 1"),
    ],
)
def test_a_compiler_that_cannot_build_the_hooks_is_one_clear_error(
    tmp_path, monkeypatch, compiler, says
):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))  # no library built there yet
    monkeypatch.setenv("CC", compiler)
    with pytest.raises(Fatal) as raised:
        native._build()
    assert says in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # nothing left behind
