"""The runner's C code (native.py, hooks.c): on a bare Unicorn, the stop at a return address
and the instruction counter; the comparison of a page with the bytes served; the doorbell of a
spinning handoff."""

import ctypes
import mmap
import os
import random
import re
import struct
import sys
import threading
import time
from pathlib import Path

import pytest
from unicorn import UC_ARCH_ARM64, UC_ARCH_X86, UC_MODE_64, UC_MODE_ARM, UC_PROT_ALL, Uc
from unicorn import arm64_const as arm64
from unicorn import x86_const as x86

from ppm_image import layout, native
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


def _changed(before: bytes, after: bytes) -> list[tuple[int, int]]:
    """native.changed_runs of `before` against `after` held in this process's memory."""
    memory = ctypes.create_string_buffer(after, len(after))
    return native.changed_runs(before, ctypes.addressof(memory))


def test_changed_runs_span_words_and_keep_unchanged_bytes_out():
    before = bytes(range(256)) * 16
    after = bytearray(before)
    after[250:262] = bytes(byte ^ 0x80 for byte in before[250:262])  # across words
    after[10:12] = b"\xaa\xbb"  # inside one word
    after[20:25] = b"\x01" * 5
    after[22] = before[22]  # written with the byte it held: in no run
    after[4095] = before[4095] ^ 1  # the last byte
    assert _changed(before, bytes(after)) == [
        (10, 12),
        (20, 22),
        (23, 25),
        (250, 262),
        (4095, 4096),
    ]
    assert _changed(before, before) == []
    assert _changed(b"", b"") == []


def test_changed_runs_hold_a_page_of_every_other_byte_changed():
    before = bytes(4096)
    after = bytes([1, 0]) * 2048
    assert _changed(before, after) == [(n, n + 1) for n in range(0, 4096, 2)]
    with pytest.raises(ValueError, match="at most 4096"):
        native.changed_runs(bytes(4097), 0)


def test_changed_runs_are_the_maximal_runs_of_differing_bytes():
    """Against the definition, over random pages with sparse and dense changes."""
    rng = random.Random(29)
    for _ in range(200):
        size = rng.choice([1, 7, 8, 9, 63, 4096])
        before = rng.randbytes(size)
        after = bytearray(before)
        for _ in range(rng.randrange(0, 12)):
            start = rng.randrange(size)
            end = min(size, start + rng.randrange(1, 40))
            after[start:end] = rng.randbytes(end - start)
        expected, start = [], None
        for n in range(size + 1):
            differs = n < size and before[n] != after[n]
            if differs and start is None:
                start = n
            elif not differs and start is not None:
                expected.append((start, n))
                start = None
        assert _changed(before, bytes(after)) == expected


# ---- the doorbell of a spinning handoff ------------------------------------------------------

DOORBELL_RS = Path(__file__).resolve().parents[3] / "sim" / "src" / "image" / "doorbell.rs"


def test_the_doorbell_layout_is_ppm_sims():
    source = DOORBELL_RS.read_text()

    def constant(name: str) -> str:
        match = re.search(rf"pub const {name}: [^=]+ = ([^;]+);", source)
        assert match is not None, f"{name} is not in {DOORBELL_RS}"
        return match.group(1)

    assert int(constant("SIM_COUNTER_OFFSET")) == layout.DOORBELL_SIM_COUNTER
    assert int(constant("RUNNER_COUNTER_OFFSET")) == layout.DOORBELL_RUNNER_COUNTER
    assert constant("FD_VARIABLE") == f'"{layout.DOORBELL_FD_VARIABLE}"'
    assert re.search(rf"const DOORBELL_BYTES: usize = {layout.DOORBELL_BYTES};", source)
    # Both sides spin as long before they sleep on their pipes, and rest alike.
    assert constant("SPIN_LIMIT") == f"Duration::from_micros({layout.DOORBELL_SPIN_NS // 1000})"
    assert int(constant("MISSES_BEFORE_REST")) == layout.DOORBELL_MISSES_BEFORE_REST
    assert int(constant("REST_WAITS")) == layout.DOORBELL_REST_WAITS


class SimSide:
    """ppm-sim's view of a doorbell: the same memory mapped a second time."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("doorbell-test")
        os.ftruncate(self.fd, layout.DOORBELL_BYTES)
        self.mapping = mmap.mmap(self.fd, layout.DOORBELL_BYTES)

    def __enter__(self) -> "SimSide":
        return self

    def __exit__(self, *_: object) -> None:
        self.mapping.close()
        os.close(self.fd)

    def ring_to(self, count: int) -> None:
        struct.pack_into("<Q", self.mapping, layout.DOORBELL_SIM_COUNTER, count)

    def runner_count(self) -> int:
        return struct.unpack_from("<Q", self.mapping, layout.DOORBELL_RUNNER_COUNTER)[0]


def test_the_runner_rings_after_each_message_and_waits_for_ppm_sims():
    with SimSide() as sim:
        runner_rings_and_waits(sim)


def runner_rings_and_waits(sim: SimSide) -> None:
    doorbell = native.Doorbell(os.dup(sim.fd))
    doorbell.ring()
    doorbell.ring()
    assert sim.runner_count() == 2
    # Nothing rung: the wait gives up after its limit, and counts the message (the pipe has it).
    started = time.monotonic()
    assert not doorbell.wait(limit_ns=2_000_000)
    assert time.monotonic() - started >= 0.002
    # That message rung late does not end the wait for the next one.
    sim.ring_to(1)
    assert not doorbell.wait(limit_ns=1_000_000)
    # Both later messages rung before the waits: each ends at once.
    sim.ring_to(3)
    long = 20_000_000_000
    started = time.monotonic()
    assert doorbell.wait(limit_ns=long)
    assert doorbell.wait(limit_ns=1_000_000) is False  # only three messages were rung
    assert time.monotonic() - started < 10


def test_the_runner_rests_after_spinning_in_vain_again_and_again():
    with SimSide() as sim:
        doorbell = native.Doorbell(os.dup(sim.fd))
        for _ in range(layout.DOORBELL_MISSES_BEFORE_REST):
            assert not doorbell.wait(limit_ns=10_000)
        started = time.monotonic()
        for _ in range(layout.DOORBELL_REST_WAITS):
            assert not doorbell.wait(limit_ns=20_000_000_000)  # resting: no spin at all
        assert time.monotonic() - started < 10
        # Rested: it spins again, and ppm-sim's ring ends the wait.
        sim.ring_to(doorbell.received + 1)
        assert doorbell.wait(limit_ns=20_000_000_000)


def test_a_wait_ends_when_ppm_sim_rings_meanwhile():
    with SimSide() as sim:
        doorbell = native.Doorbell(os.dup(sim.fd))
        # The wait releases the GIL: this thread rings while it spins.
        ringer = threading.Timer(0.02, sim.ring_to, args=(1,))
        ringer.start()
        started = time.monotonic()
        assert doorbell.wait(limit_ns=20_000_000_000)
        assert time.monotonic() - started < 10
        ringer.join()


def test_the_doorbell_comes_from_the_environment_or_not_at_all(monkeypatch):
    monkeypatch.delenv(layout.DOORBELL_FD_VARIABLE, raising=False)
    assert native.Doorbell.from_environment() is None
    for wrong in ("three", "\u00b2"):  # '²' is a digit to str.isdigit
        monkeypatch.setenv(layout.DOORBELL_FD_VARIABLE, wrong)
        with pytest.raises(Fatal, match=f"must be a file descriptor number, not '{wrong}'"):
            native.Doorbell.from_environment()
    with SimSide() as sim:
        monkeypatch.setenv(layout.DOORBELL_FD_VARIABLE, str(os.dup(sim.fd)))
        doorbell = native.Doorbell.from_environment()
        assert doorbell is not None
        assert layout.DOORBELL_FD_VARIABLE not in os.environ  # not passed on
        doorbell.ring()
        assert sim.runner_count() == 1
        closed = os.dup(sim.fd)
        os.close(closed)
        with pytest.raises(Fatal, match=f"cannot map the doorbell \\(file descriptor {closed}\\)"):
            native.Doorbell(closed)
