"""The runner's code written in C (hooks.c): code hooks, added through Unicorn's C API so that
one costs a call instead of a Python call, the comparison of a page with the bytes served, and
the doorbell of a spinning handoff.
Relies on unicorn 2.1.4's `uclib` and `Uc._uch` (the pinned version), as runner.Registers
does."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from unicorn import UC_HOOK_CODE, Uc, UcError
from unicorn.unicorn_py3.unicorn import uc_hook_h, uclib

from .layout import (
    DOORBELL_BYTES,
    DOORBELL_FD_VARIABLE,
    DOORBELL_MISSES_BEFORE_REST,
    DOORBELL_REST_WAITS,
    DOORBELL_RUNNER_COUNTER,
    DOORBELL_SIM_COUNTER,
    DOORBELL_SPIN_NS,
    PAGE,
    Fatal,
)

SOURCE = Path(__file__).with_name("hooks.c")


def _build() -> Path:
    """The hooks' shared library, built once per source beside the virtual environment
    (compiled to a temporary file and renamed into place: runners start in parallel)."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = Path(sys.prefix).parent / f"hooks-{digest}.so"
    if target.exists():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("clang")
    if compiler is None:
        raise Fatal("the image runner needs a C compiler (cc or clang) to build its hooks")
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        try:
            result = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(SOURCE)],
                capture_output=True,
                text=True,
                check=False,
            )
        except OSError as error:
            raise Fatal(f"cannot run the C compiler {compiler!r} ($CC or cc): {error}") from error
        if result.returncode != 0:
            raise Fatal(
                f"cannot build the runner's C hooks: {compiler!r} exited with "
                f"{result.returncode}: {result.stderr.strip() or '(no message)'}"
            )
        os.replace(built, target)
    return target


def checked(status: int) -> None:
    """A status from a call of Unicorn's C API (uclib): UcError unless it is UC_ERR_OK."""
    if status != 0:
        raise UcError(status)


@functools.cache
def library() -> ctypes.CDLL:
    """The hooks, loaded once per process."""
    return ctypes.CDLL(str(_build()))


def c_function(name: str) -> ctypes.c_void_p:
    """The address of hooks.c's function `name`."""
    return ctypes.cast(getattr(library(), name), ctypes.c_void_p)


def code_hook(uc: Uc, function: Any, data: ctypes.c_void_p | None, begin: int, end: int) -> None:
    """Adds `function` (a C function's address, or a ctypes callback the caller keeps alive as
    long as the hook) as a code hook on [begin, end] with user data `data`, through Unicorn's C
    API: no binding wrapper in between."""
    hook = uc_hook_h()
    checked(
        uclib.uc_hook_add(
            uc._uch,
            ctypes.byref(hook),
            UC_HOOK_CODE,
            function,
            data,
            ctypes.c_uint64(begin),
            ctypes.c_uint64(end),
        )
    )


def stop_at(uc: Uc, address: int) -> None:
    """Emulation stops when it reaches `address`, before the instruction there runs: no
    `emu_start` `until` (Unicorn discards and translates again the code at that exit on every
    run, see docs/image-backend.md)."""
    emu_stop = ctypes.cast(uclib.uc_emu_stop, ctypes.c_void_p)
    code_hook(uc, c_function("ppm_stop_emulation"), emu_stop, address, address)


# The most runs of changed bytes a page can hold: every other byte.
_MOST_RUNS = PAGE // 2


@functools.cache
def typed_function(name: str, restype: Any, *argtypes: Any) -> Any:
    """hooks.c's function `name`, with its C result and argument types (set once per
    process: the library's function objects are shared)."""
    function = getattr(library(), name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function


@functools.cache
def _changed_runs_function() -> tuple[Any, Any]:
    """hooks.c's ppm_changed_runs, typed, and the array its runs are stored in."""
    function = typed_function(
        "ppm_changed_runs",
        ctypes.c_size_t,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.c_size_t,
    )
    return function, (ctypes.c_uint32 * (2 * _MOST_RUNS))()


def changed_runs(before: bytes, after: int) -> list[tuple[int, int]]:
    """The [start, end) runs of bytes that differ between `before` (at most a page) and the
    runner's own memory at address `after`, maximal and in order."""
    if len(before) > PAGE:
        raise ValueError(f"changed_runs compares at most {PAGE} bytes, not {len(before)}")
    function, runs = _changed_runs_function()
    count = function(before, after, len(before), runs, _MOST_RUNS)
    bounds = iter(runs[: 2 * count])
    return list(zip(bounds, bounds, strict=True))


class Doorbell:
    """The doorbell of a spinning handoff (docs/image-backend.md, "Two processes"): a page shared
    with ppm-sim holding its message counter and the runner's. The runner rings after writing
    a whole message, and before reading one spins on ppm-sim's counter (in C, the GIL
    released) for at most DOORBELL_SPIN_NS; the pipe then waits, if need be. After
    DOORBELL_MISSES_BEFORE_REST spins in vain in a row it rests: DOORBELL_REST_WAITS waits on
    the pipe alone (ppm-sim is not getting a processor; spinning would take the one it needs)."""

    def __init__(self, fd: int):
        try:
            self.mapping = mmap.mmap(fd, DOORBELL_BYTES)
        except (OSError, ValueError) as error:
            raise Fatal(f"cannot map the doorbell (file descriptor {fd}): {error}") from error
        finally:
            with contextlib.suppress(OSError):  # mapped or not, the descriptor is not needed
                os.close(fd)
        # Held: while this export lives the mapping cannot be closed under the addresses.
        self.page = (ctypes.c_char * DOORBELL_BYTES).from_buffer(self.mapping)
        base = ctypes.addressof(self.page)
        self.sim_counter = base + DOORBELL_SIM_COUNTER
        self.runner_counter = base + DOORBELL_RUNNER_COUNTER
        self.received = 0
        self.misses = 0  # waits in a row that spun in vain
        self.resting = 0  # waits left to make without spinning
        self._ring = typed_function("ppm_doorbell_ring", None, ctypes.c_void_p)
        self._wait = typed_function(
            "ppm_doorbell_wait", ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64
        )

    def ring(self) -> None:
        """After the runner wrote a whole message."""
        self._ring(self.runner_counter)

    def wait(self, limit_ns: int = DOORBELL_SPIN_NS) -> bool:
        """Before reading ppm-sim's next message: whether it was rung while this spun, at most
        `limit_ns` (not at all while resting). The message counts as received either way."""
        received = self.received
        self.received = received + 1
        if self.resting:
            self.resting -= 1
            return False
        if self._wait(self.sim_counter, received, limit_ns):
            self.misses = 0
            return True
        self.misses += 1
        if self.misses >= DOORBELL_MISSES_BEFORE_REST:
            self.misses, self.resting = 0, DOORBELL_REST_WAITS
        return False

    @classmethod
    def from_environment(cls) -> Doorbell | None:
        """The doorbell ppm-sim gave this process (DOORBELL_FD_VARIABLE, removed from the
        environment: nothing this process starts inherits the number), if any."""
        value = os.environ.pop(DOORBELL_FD_VARIABLE, None)
        if value is None:
            return None
        if not (value.isascii() and value.isdigit()):
            raise Fatal(f"{DOORBELL_FD_VARIABLE} must be a file descriptor number, not {value!r}")
        return cls(int(value))
