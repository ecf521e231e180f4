"""The compiled runner's address space, limits and structure offsets
(tools/image/runner/src/layout.rs) are the Python runner's (ppm_image/layout.py, which
test_layout.py holds to the image's own build): every constant the two share has one value."""

from __future__ import annotations

import re
from pathlib import Path

from ppm_image import layout

LAYOUT_RS = Path(__file__).resolve().parents[1] / "runner" / "src" / "layout.rs"
# `pub const NAME: TYPE = EXPRESSION;` on one line; the expressions are Python expressions too
# (hex with underscores, shifts, sums of earlier constants).
CONSTANT = re.compile(r"^pub const (\w+): \w+ = (.+);$", re.M)
# layout.rs's names for figures layout.py keeps in its STRUCTURES table or under other names.
STRUCTURE_FIELDS = {
    "DRIVER_OBJECT_SIZE": ("_DRIVER_OBJECT", "sizeof"),
    "DRIVER_START": ("_DRIVER_OBJECT", "DriverStart"),
    "DRIVER_SIZE": ("_DRIVER_OBJECT", "DriverSize"),
    "DRIVER_INIT": ("_DRIVER_OBJECT", "DriverInit"),
    "DRIVER_UNLOAD": ("_DRIVER_OBJECT", "DriverUnload"),
    "UNICODE_STRING_BUFFER": ("_UNICODE_STRING", "Buffer"),
    "GROUP_AFFINITY_GROUP": ("_GROUP_AFFINITY", "Group"),
    "EVENT_DATA_DESCRIPTOR_BYTES": ("_EVENT_DATA_DESCRIPTOR", "sizeof"),
    "EVENT_DATA_DESCRIPTOR_SIZE": ("_EVENT_DATA_DESCRIPTOR", "Size"),
    "WDF_DRIVER_CONFIG_DEVICE_ADD": ("_WDF_DRIVER_CONFIG", "EvtDriverDeviceAdd"),
    "WDF_DRIVER_CONFIG_UNLOAD": ("_WDF_DRIVER_CONFIG", "EvtDriverUnload"),
    "WDF_BIND_INFO_FUNC_COUNT": ("WDF_BIND_INFO", "FuncCount"),
    "WDF_BIND_INFO_FUNC_TABLE": ("WDF_BIND_INFO", "FuncTable"),
    "PEP_INFORMATION_SIZE_FIELD": ("PEP_INFORMATION", "Size"),
    "PEP_KERNEL_INFORMATION_SIZE_FIELD": ("PEP_KERNEL_INFORMATION_STRUCT_V3", "Size"),
}


def compiled_constants() -> dict[str, object]:
    values: dict[str, object] = {}
    for name, expression in CONSTANT.findall(LAYOUT_RS.read_text(encoding="utf-8")):
        values[name] = eval(expression, {}, dict(values))  # noqa: S307 - the repository's file
    return values


def test_every_compiled_constant_is_the_python_runners():
    compiled = compiled_constants()
    assert len(compiled) > 50, "is layout.rs still one constant per line?"
    for name, value in compiled.items():
        if name in STRUCTURE_FIELDS:
            structure, field = STRUCTURE_FIELDS[name]
            assert value == layout.STRUCTURES[structure][field], name
        elif name == "PAGE_BYTES":
            assert value == layout.PAGE
        else:
            assert hasattr(layout, name), f"layout.rs's {name} has no counterpart in layout.py"
            assert value == getattr(layout, name), name


def test_a_changed_constant_is_found(monkeypatch):
    text = LAYOUT_RS.read_text(encoding="utf-8").replace(
        "pub const NESTED_GAP: u64 = 0x100;", "pub const NESTED_GAP: u64 = 0x200;"
    )
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: text)
    assert compiled_constants()["NESTED_GAP"] != layout.NESTED_GAP
