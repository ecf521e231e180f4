"""The exact count of the instructions the image executes: a Unicorn code hook over the image,
written in C (hooks.c, native.py), so that counting costs a call per instruction instead of a
Python call."""

from __future__ import annotations

import ctypes

from unicorn import Uc

from . import native


class InstructionCounter:
    """Counts every instruction executed in [begin, end]."""

    def __init__(self, uc: Uc, begin: int, end: int):
        self._count = ctypes.c_uint64(0)
        self._begin, self._end = begin, end
        data = ctypes.cast(ctypes.pointer(self._count), ctypes.c_void_p)
        native.code_hook(uc, native.c_function("ppm_count_instruction"), data, begin, end)

    @property
    def count(self) -> int:
        return self._count.value

    def restarted(self, address: int) -> None:
        """The instruction at `address` stopped on a page the runner then fetched and runs
        again: it counts once, not once per start (else a count would follow which pages
        ppm-sim sent with the call and which were fetched)."""
        if self._begin <= address <= self._end:
            self._count.value -= 1
