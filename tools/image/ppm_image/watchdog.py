"""The hang limit: a thread that stops the emulation when one command has run longer than
its limit of wall-clock time. (Unicorn's own limits cost on every call: emu_start's `count`
made a PREPARE_DEVICE call ~3x slower, its `timeout` starts a thread per emu_start.) The
thread sleeps between ticks and costs nothing on the hot path but a lock per command and per
host request: the time spent waiting for ppm-sim's answers does not count (pause/resume)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Watchdog:
    def __init__(self, stop: Callable[[], None], limit_seconds: float):
        self.stop = stop
        self.limit_seconds = limit_seconds
        self.lock = threading.Lock()
        self.deadline: float | None = None
        self.fired = False
        self.paused: list[float] = []  # when each pending pause began (host requests nest)
        self.thread = threading.Thread(target=self._watch, name="hang-watchdog", daemon=True)
        self.thread.start()

    def arm(self) -> None:
        with self.lock:
            self.deadline = time.monotonic() + self.limit_seconds
            self.fired = False

    def disarm(self) -> None:
        with self.lock:
            self.deadline = None

    def pause(self) -> None:
        with self.lock:
            self.paused.append(time.monotonic())

    def resume(self) -> None:
        with self.lock:
            began = self.paused.pop()
            if self.deadline is not None:
                self.deadline += time.monotonic() - began

    def _watch(self) -> None:
        while True:
            time.sleep(min(0.05, self.limit_seconds / 10))
            with self.lock:
                if (
                    self.deadline is not None
                    and not self.paused
                    and time.monotonic() > self.deadline
                ):
                    self.fired = True
                    self.stop()  # again on every tick: a nested call's stop ends only its own
