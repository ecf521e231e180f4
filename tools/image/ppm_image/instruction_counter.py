"""The exact count of the instructions the image executes: a Unicorn code hook over the image,
written in C (count_instructions.c) and added through Unicorn's C API, so that counting costs
a call per instruction instead of a Python call. Relies on unicorn 2.1.4's `uclib` and
`Uc._uch` (the pinned version), as runner.Registers does."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from unicorn import UC_HOOK_CODE, Uc, UcError
from unicorn.unicorn_py3.unicorn import uc_hook_h, uclib

from .layout import Fatal

SOURCE = Path(__file__).with_name("count_instructions.c")


def library() -> Path:
    """The hook's shared library, built once per source beside the virtual environment
    (compiled to a temporary file and renamed into place: runners start in parallel)."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = Path(sys.prefix).parent / f"count_instructions-{digest}.so"
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("clang")
    if compiler is None:
        raise Fatal("counting instructions needs a C compiler (cc or clang) to build its hook")
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        result = subprocess.run(
            [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(SOURCE)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise Fatal(f"cannot build the instruction counter: {result.stderr.strip()}")
        os.replace(built, target)
    return target


class InstructionCounter:
    """Counts every instruction executed in [begin, end]."""

    def __init__(self, uc: Uc, begin: int, end: int):
        self._library = ctypes.CDLL(str(library()))
        self._count = ctypes.c_uint64(0)
        self._begin, self._end = begin, end
        self._hook = uc_hook_h()
        status = uclib.uc_hook_add(
            uc._uch,
            ctypes.byref(self._hook),
            UC_HOOK_CODE,
            ctypes.cast(self._library.ppm_count_instruction, ctypes.c_void_p),
            ctypes.cast(ctypes.pointer(self._count), ctypes.c_void_p),
            ctypes.c_uint64(begin),
            ctypes.c_uint64(end),
        )
        if status != 0:
            raise UcError(status)

    @property
    def count(self) -> int:
        return self._count.value

    def restarted(self, address: int) -> None:
        """The instruction at `address` stopped on a page the runner then fetched and runs
        again: it counts once, not once per start (else a count would follow which pages
        ppm-sim sent with the call and which were fetched)."""
        if self._begin <= address <= self._end:
            self._count.value -= 1
