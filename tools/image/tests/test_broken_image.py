"""broken_image.py against the real image: each patch changes exactly the bytes it names, and a
patch whose pattern is not there (exactly once) is refused, never written as a no-op. It reads
the image with `ppm-image-runner describe`: the runner binary must be built."""

from __future__ import annotations

import hashlib
from pathlib import Path

import capstone
import pefile
import pytest
from fake_host import IMAGE, MAP, RUNNER

from ppm_image import broken_image

pytestmark = [
    pytest.mark.skipif(
        not IMAGE.exists() or not IMAGE.with_name("stack.txt").exists(),
        reason="no image with its stack.txt: run scripts/check-driver-image.sh",
    ),
    pytest.mark.skipif(
        not RUNNER.exists(), reason=f"no {RUNNER}: cargo build --release -p ppm-image-runner"
    ),
]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def differing(out: Path) -> list[int]:
    """The file offsets where `out` differs from the real image."""
    before, after = IMAGE.read_bytes(), out.read_bytes()
    assert len(before) == len(after)
    return [n for n, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]


def disassemble(path: Path, rva: int, length: int) -> list[str]:
    pe = pefile.PE(str(path), fast_load=True)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    code = pe.get_data(rva, length)
    return [f"{i.mnemonic} {i.op_str}".strip() for i in md.disasm(code, rva)]


def patch(kind: str, source: Path, out: Path, capsys) -> tuple[int, str]:
    status = broken_image.main([kind, str(source), str(out)])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def offset_to_rva(offset: int) -> int:
    return pefile.PE(str(IMAGE), fast_load=True).get_rva_from_offset(offset)


def test_kmdf_index_moves_one_displacement_byte(tmp_path, capsys):
    real = digest(IMAGE)
    out = tmp_path / "kmdf-index.sys"
    status, text = patch("kmdf-index", IMAGE, out, capsys)
    assert status == 0, text
    assert digest(IMAGE) == real, "the real image was modified"
    (changed,) = differing(out)  # 0xa0 -> 0xa8: the low byte of the displacement
    assert IMAGE.read_bytes()[changed] == 0xA0 and out.read_bytes()[changed] == 0xA8
    # The changed byte belongs to a `call qword ptr [REG + 0x3a8]` (the opcode ff, ModRM, disp32
    # starting two bytes before it).
    (call,) = disassemble(out, offset_to_rva(changed) - 2, 6)
    assert call.startswith("call qword ptr [") and call.endswith(" + 0x3a8]")
    assert out.with_suffix(".map").read_bytes() == MAP.read_bytes()
    assert (tmp_path / "stack.txt").read_bytes() == IMAGE.with_name("stack.txt").read_bytes()


def function_rva(identifier: str) -> int:
    """The RVA of the one function symbol holding the Rust identifier (the runner's functions
    of the map, `describe`'s "symbols", not broken_image's lookup)."""
    symbols = broken_image.describe_image(str(IMAGE), str(MAP), "x64")["symbols"]
    (rva,) = [
        r
        for r, n in zip(symbols["rvas"], symbols["names"], strict=True)
        if f"{len(identifier)}{identifier}" in n
    ]
    return rva


def test_swapped_callbacks_swap_the_two_store_displacements(tmp_path, capsys):
    out = tmp_path / "swapped.sys"
    status, text = patch("swapped-callbacks", IMAGE, out, capsys)
    assert status == 0, text
    changed = differing(out)
    # Two displacements, D1 and D1 + 8 (e.g. 0x60 and 0x68: one byte each differs); the store's
    # displacement starts 4 bytes in (REX, 89, ModRM, SIB) whether it is disp8 or disp32.
    assert 2 <= len(changed) <= 8
    assert 8 <= changed[-1] - changed[0] < 24
    first = offset_to_rva(changed[0])
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    pe = pefile.PE(str(IMAGE), fast_load=True)
    # Decode from the lea before the first store (7 bytes: REX, 8d, ModRM, disp32) on.
    start = first - 4 - 7
    before = list(md.disasm(pe.get_data(start, 64), start))
    after = list(md.disasm(pefile.PE(str(out), fast_load=True).get_data(start, 64), start))
    pairs = [(b, a) for b, a in zip(before, after, strict=False)]
    assert [b.mnemonic for b, _ in pairs[:4]] == ["lea", "mov", "lea", "mov"]
    # `[rip + 0x…]` or `[rip - 0x…]`: the callbacks may lie after or before the function.
    targets = [
        b.address + b.size + int(b.op_str.split("[rip ")[1].rstrip("]").replace(" ", ""), 16)
        for b, _ in pairs[:4:2]
    ]
    assert targets == [
        function_rva("accept_device_notification"),
        function_rva("accept_processor_notification"),
    ]
    (old1, new1), (old2, new2) = [(b.op_str, a.op_str) for b, a in pairs[1:4:2]]
    assert old1 != old2 and old1 == new2 and old2 == new1, "the two stores did not swap places"
    assert all(b.bytes == a.bytes for b, a in pairs[4:]), "bytes after the stores changed"


def test_early_return_patches_the_first_three_bytes_of_the_ppm_callback(tmp_path, capsys):
    out = tmp_path / "early.sys"
    status, text = patch("early-return", IMAGE, out, capsys)
    assert status == 0, text
    rva = function_rva("accept_processor_notification")
    offset = pefile.PE(str(IMAGE), fast_load=True).get_offset_from_rva(rva)
    changed = differing(out)
    assert changed and all(offset <= n < offset + 3 for n in changed)
    assert disassemble(out, rva, 3) == ["mov al, 1", "ret"]


REFUSALS = {
    "kmdf-index": "DriverEntry has 0 calls through [REG + 0x3a0]",
    "swapped-callbacks": "not 8 bytes after accept_device_notification",
    "early-return": "accept_processor_notification already begins with `mov al, 1; ret`",
}


@pytest.mark.parametrize("kind", ["kmdf-index", "swapped-callbacks", "early-return"])
def test_an_image_without_the_pattern_is_refused(tmp_path, capsys, kind):
    """A patched image no longer holds the pattern: patching it again is refused (exit 2),
    nothing written."""
    first = tmp_path / "first" / "image.sys"
    assert patch(kind, IMAGE, first, capsys)[0] == 0
    again = tmp_path / "again" / "image.sys"
    status, text = patch(kind, first, again, capsys)
    assert status == 2
    assert text.startswith(f"broken_image {kind}: ") and REFUSALS[kind] in text
    assert not again.exists()


def test_a_wrong_symbol_is_refused(tmp_path, capsys):
    """A map without the PPM callback's symbol: the patch names what is missing."""
    directory = tmp_path / "renamed"
    directory.mkdir()
    source = directory / "ppm_pep.sys"
    source.write_bytes(IMAGE.read_bytes())
    (directory / "stack.txt").write_bytes(IMAGE.with_name("stack.txt").read_bytes())
    text = MAP.read_text(encoding="utf-8")
    assert "29accept_processor_notification" in text
    renamed = text.replace("29accept_processor_notification", "29accept_processor_notificatiom")
    source.with_suffix(".map").write_text(renamed, encoding="utf-8")
    out = tmp_path / "out" / "early.sys"
    status, message = patch("early-return", source, out, capsys)
    assert status == 2
    assert "the map names 0 functions accept_processor_notification" in message
    assert not out.exists()


def test_out_beside_the_real_image_is_refused(capsys):
    out = IMAGE.with_name("broken.sys")
    status, text = patch("early-return", IMAGE, out, capsys)
    assert status == 2 and "outside the image's directory" in text
    assert not out.exists()


def test_bad_arguments_are_refused(capsys):
    assert broken_image.main(["no-such-kind", str(IMAGE), "x.sys"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_a_missing_runner_is_named_with_how_to_build_it(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "ppm-image-runner"
    monkeypatch.setenv("PPM_RUNNER_BINARY", str(missing))
    out = tmp_path / "out" / "early.sys"
    status, text = patch("early-return", IMAGE, out, capsys)
    assert status == 2 and not out.exists()
    assert text == (
        f"broken_image early-return: no ppm-image-runner at {missing}: build it with "
        "`cargo build --release -p ppm-image-runner` (scripts/image-runner.sh --setup-only), "
        "or name it in $PPM_RUNNER_BINARY\n"
    )


def test_a_missing_map_is_the_runners_one_line_refusal(tmp_path, capsys):
    directory = tmp_path / "no-map"
    directory.mkdir()
    source = directory / "ppm_pep.sys"
    source.write_bytes(IMAGE.read_bytes())
    (directory / "stack.txt").write_bytes(IMAGE.with_name("stack.txt").read_bytes())
    status, text = patch("wx-section", source, tmp_path / "out" / "wx.sys", capsys)
    assert status == 2
    reason = "cannot read the map (No such file or directory)"
    assert text == f"broken_image wx-section: {source.with_suffix('.map')}: {reason}\n"
