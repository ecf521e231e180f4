"""The Windows structure offsets the runner uses (its STRUCTURES, as tests/runner_layout.py
reads them) against the layouts the image is built with, read from where the build asserts
them:
  - the wdk-sys bindings the image build generates (bindgen's compile-time layout assertions,
    `"Offset of field: _S::F"` and `"Size of _S"`), for x64 and ARM64;
  - the engine's `assert_layout!` declarations (engine/src/abi), for the PEP structures;
  - the KMDF stub's `_Static_assert`s (stubs/kmdf_stub.c), for WDF_BIND_INFO (fxldr.h, which
    wdk-sys does not bind).
Every figure must be stated by at least one of them, and agree with every one that states it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import runner_layout as layout

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILDS = ROOT / "target" / "driver-image" / "work" / "target"
ARCHES = {"x64": "x86_64-pc-windows-msvc", "arm64": "aarch64-pc-windows-msvc"}

_OFFSET = re.compile(
    r'"Offset of field: (\w+)::(\w+)",?\s*\]\[::core::mem::offset_of!\(\w+, \w+\) - (\d+)usize\]'
)
_SIZE = re.compile(r'"Size of (\w+)",?\s*\]\[::core::mem::size_of::<\w+>\(\) - (\d+)usize\]')
_IO_TYPE_DRIVER = re.compile(r"pub const IO_TYPE_DRIVER: \w+ = (\d+);")


def bindings(arch: str) -> Path:
    """The out/ directory of the newest wdk-sys build script run of the image build."""
    found = sorted(
        (BUILDS / ARCHES[arch] / "release" / "build").glob("wdk-sys-*/out/types.rs"),
        key=lambda path: path.stat().st_mtime,
    )
    if not found:
        pytest.fail(
            f"no wdk-sys bindings under {BUILDS / ARCHES[arch]}: build the image first "
            f"(scripts/build-driver-image.sh --arch {arch})"
        )
    return found[-1].parent


def bindgen_layouts(types: str) -> dict[str, dict[str, int]]:
    wanted = set(layout.STRUCTURES)
    found: dict[str, dict[str, int]] = {}
    for match in _OFFSET.finditer(types):
        if match.group(1) in wanted:
            found.setdefault(match.group(1), {})[match.group(2)] = int(match.group(3))
    for match in _SIZE.finditer(types):
        if match.group(1) in wanted:
            found.setdefault(match.group(1), {})["sizeof"] = int(match.group(2))
    return found


def engine_layouts() -> dict[str, dict[str, int]]:
    """`assert_layout!(NAME, size S, align A, Field @ OFFSET, ...)` of engine/src/abi."""
    found: dict[str, dict[str, int]] = {}
    for source in sorted((ROOT / "engine" / "src" / "abi").glob("*.rs")):
        for body in re.findall(r"assert_layout!\(\s*(.*?)\);", source.read_text(), re.S):
            name, _, rest = body.partition(",")
            fields = {"sizeof": int(re.search(r"size (\d+)", rest).group(1))}
            for field, offset in re.findall(r"(\w+(?:\.\w+)*) @ (\d+)", rest):
                fields[field] = int(offset)
            found[name.strip()] = fields
    return found


def stub_layouts() -> dict[str, dict[str, int]]:
    """`_Static_assert(__builtin_offsetof(S, F) == N` and `sizeof(S) == N` of the KMDF stub."""
    text = (ROOT / "tools" / "image" / "stubs" / "kmdf_stub.c").read_text()
    found: dict[str, dict[str, int]] = {}
    for name, field, value in re.findall(
        r"_Static_assert\(__builtin_offsetof\((\w+), (\w+)\) == (0x[0-9a-fA-F]+|\d+)", text
    ):
        found.setdefault(name, {})[field] = int(value, 0)
    for name, value in re.findall(r"_Static_assert\(sizeof\((\w+)\) == (0x[0-9a-fA-F]+|\d+)", text):
        found.setdefault(name, {})["sizeof"] = int(value, 0)
    # The stub names the wdm.h structures without their leading underscore.
    return {
        ("_" + name if "_" + name in layout.STRUCTURES else name): f for name, f in found.items()
    }


@pytest.fixture(scope="module", params=list(ARCHES))
def sources(request) -> dict[str, dict[str, dict[str, int]]]:
    types = (bindings(request.param) / "types.rs").read_text(encoding="utf-8")
    return {
        f"wdk-sys bindings ({request.param})": bindgen_layouts(types),
        "engine/src/abi": engine_layouts(),
        "stubs/kmdf_stub.c": stub_layouts(),
    }


@pytest.mark.parametrize(
    "structure, field",
    [(structure, field) for structure, fields in layout.STRUCTURES.items() for field in fields],
)
def test_each_offset_the_runner_uses_is_the_builds(sources, structure, field):
    expected = layout.STRUCTURES[structure][field]
    stated = {
        source: layouts[structure][field]
        for source, layouts in sources.items()
        if field in layouts.get(structure, {})
    }
    assert stated, f"{structure}.{field}: no layout source states it"
    for source, value in stated.items():
        assert value == expected, f"{structure}.{field}: {source} has {value:#x}, not {expected:#x}"


def test_the_driver_object_type_is_the_headers():
    constants = (bindings("x64") / "constants.rs").read_text(encoding="utf-8")
    assert int(_IO_TYPE_DRIVER.search(constants).group(1)) == layout.IO_TYPE_DRIVER


def test_a_drifted_offset_is_caught():
    """The parsers read the figures, not defaults: a changed bindgen assertion is seen."""
    types = (
        '["Offset of field: _DRIVER_OBJECT::DriverUnload"]'
        "[::core::mem::offset_of!(_DRIVER_OBJECT, DriverUnload) - 112usize];"
    )
    assert bindgen_layouts(types) == {"_DRIVER_OBJECT": {"DriverUnload": 112}}
    assert layout.STRUCTURES["_DRIVER_OBJECT"]["DriverUnload"] != 112
