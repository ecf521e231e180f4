"""The runner's figures as it states them (tools/image/runner/src/layout.rs), read from
`ppm-image-runner layout`: its address space, limits and status codes as attributes of the
same names, STRUCTURES (the Windows structure offsets it uses, {structure: {field: offset}})
and KMDF_MAX_FUNCTIONS (KMDF 1.31's function table size, from the header the driver is built
against)."""

from __future__ import annotations

import json
import subprocess

from fake_host import RUNNER

_described = subprocess.run(
    [str(RUNNER), "layout"], capture_output=True, text=True, timeout=60, check=False
)
if _described.returncode != 0:
    raise RuntimeError(
        f"{RUNNER} layout failed ({_described.stderr.strip()}): build the runner with "
        "scripts/image-runner.sh --setup-only"
    )
_layout = json.loads(_described.stdout)
globals().update(_layout["figures"])
STRUCTURES: dict[str, dict[str, int]] = _layout["structures"]
KMDF_MAX_FUNCTIONS: int = _layout["kmdf_max_functions"]
