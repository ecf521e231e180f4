"""The compiled runner's image reader (tools/image/runner/src/image.rs) as its `describe` command
shows it: `ppm-image-runner describe IMAGE MAP ARCH` prints what it reads of the built images
(x64 and ARM64) and refuses what it cannot use (broken copies, the other arch, missing and
foreign files) with a one-line reason and exit status 2. And the compiled runner's answer to
bad input: one line, exit status 2. (What it reads, field by field, is held by the crate's unit
tests, cargo test -p ppm-image-runner.)

The binary: $PPM_RUNNER_BINARY (scripts/image-runner.sh --self-test sets it), else
target/release/ppm-image-runner (cargo build --release -p ppm-image-runner). capstone: the
library the `capstone` package loads, passed as $PPM_CAPSTONE_LIB (one test leaves it unset:
the binary finds the virtual environment's)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import capstone
import pefile
import pytest
from fake_host import RUNNER

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
IMAGES = ROOT / "target" / "driver-image"
ARCHES = ("x64", "arm64")
BUILT = {arch: (IMAGES / arch / "ppm_pep.sys", IMAGES / arch / "ppm_pep.map") for arch in ARCHES}
CAPSTONE_LIB = Path(capstone.__file__).resolve().parent / "lib" / "libcapstone.so"
MACHINES = {0x8664: "x64", 0xAA64: "arm64"}

pytestmark = pytest.mark.skipif(
    not RUNNER.exists(), reason=f"no {RUNNER}: cargo build --release -p ppm-image-runner"
)


def needs(arch: str) -> tuple[Path, Path]:
    """The built image of `arch` and its map (the test skipped when there is none)."""
    image, map_path = BUILT[arch]
    if not image.exists():
        pytest.skip(f"no image: run scripts/build-driver-image.sh --arch {arch}")
    return image, map_path


def describe(
    image_path: Path, map_path: Path, arch: str, capstone_lib: Path | None = CAPSTONE_LIB
) -> dict[str, Any]:
    """What the compiled runner prints; {"error": reason} when it refuses the files (one line
    on stderr, exit status 2)."""
    environment = {k: v for k, v in os.environ.items() if k != "PPM_CAPSTONE_LIB"}
    if capstone_lib is not None:
        environment["PPM_CAPSTONE_LIB"] = str(capstone_lib)
    done = subprocess.run(
        [str(RUNNER), "describe", str(image_path), str(map_path), arch],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    if done.returncode == 0:
        return json.loads(done.stdout)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppm-image-runner: "), done.stderr
    return {"error": lines[0].removeprefix("ppm-image-runner: ")}


def refusal(image_path: Path, map_path: Path, arch: str) -> str:
    found = describe(image_path, map_path, arch)
    assert "error" in found, f"{image_path} was read"
    return found["error"]


@pytest.mark.parametrize("arch", ARCHES)
def test_the_built_image_is_described(arch):
    image, map_path = needs(arch)
    described = describe(image, map_path, arch)
    assert set(described) == {
        "base",
        "size",
        "preferred_base",
        "entry_rva",
        "headers",
        "sections",
        "contents",
        "relocations",
        "imports",
        "pdata",
        "map",
        "symbols",
        "sites",
    }
    pe = pefile.PE(str(image), fast_load=True)
    assert described["preferred_base"] == pe.OPTIONAL_HEADER.ImageBase
    assert described["entry_rva"] == pe.OPTIONAL_HEADER.AddressOfEntryPoint
    assert [s["name"] for s in described["sections"]] == [
        s.Name.rstrip(b"\0").decode() for s in pe.sections
    ]
    assert described["imports"] and described["relocations"] and described["pdata"]
    assert described["sites"] and described["symbols"]["rvas"]
    kinds = {site[0] for _, site in described["sites"]}
    assert kinds & ({"rdmsr", "wrmsr"} if arch == "x64" else {"mrs", "msr"})


def test_the_self_tests_broken_images_are_described():
    images = sorted((IMAGES / "self-test").glob("*.sys"))
    if not images:
        pytest.skip("no self-test images: run scripts/check-driver-image.sh --self-test")
    for image in images:
        machine = pefile.PE(str(image), fast_load=True).FILE_HEADER.Machine
        described = describe(image, image.with_suffix(".map"), MACHINES[machine])
        assert "error" not in described, described


def test_capstone_is_found_in_the_virtual_environment():
    image, map_path = needs("x64")
    if not RUNNER.resolve().is_relative_to(ROOT) or not CAPSTONE_LIB.is_relative_to(ROOT):
        pytest.skip("the binary or capstone lies outside the repository")
    assert describe(image, map_path, "x64", capstone_lib=None) == describe(image, map_path, "x64")


def test_a_missing_capstone_is_a_one_line_error(tmp_path):
    image, map_path = needs("x64")
    found = describe(image, map_path, "x64", capstone_lib=tmp_path / "libcapstone.so")
    assert found["error"].startswith(f"capstone at {tmp_path / 'libcapstone.so'}: ")


# ---- broken copies: refused in one line, in pefile's words where pefile refuses them ---------


def patched(tmp_path: Path, arch: str, patch) -> Path:
    """A copy of the built image, `patch(data, pe)` applied (pe: pefile's view of it)."""
    source, _ = needs(arch)
    data = bytearray(source.read_bytes())
    pe = pefile.PE(data=bytes(data))
    patch(data, pe)
    out = tmp_path / f"{arch}-patched.sys"
    out.write_bytes(bytes(data))
    return out


def put(data: bytearray, offset: int, value: int, size: int) -> None:
    data[offset : offset + size] = value.to_bytes(size, "little")


def set_size_of_image(value: int):
    def patch(data, pe):
        put(data, pe.OPTIONAL_HEADER.get_field_absolute_offset("SizeOfImage"), value, 4)

    return patch


def relocation_of_type(kind: int):
    def patch(data, pe):
        pe.parse_data_directories(directories=[5])
        entry = pe.DIRECTORY_ENTRY_BASERELOC[0].entries[0].struct
        put(data, entry.get_file_offset(), kind << 12 | entry.Data & 0xFFF, 2)

    return patch


def first_import_by_ordinal(data, pe):
    pe.parse_data_directories(directories=[1])
    thunk = pe.DIRECTORY_ENTRY_IMPORT[0].imports[0].struct_table
    put(data, thunk.get_file_offset(), 1 << 63 | 7, 8)


def pdata_shorter_by_4(data, pe):
    directory = pe.OPTIONAL_HEADER.DATA_DIRECTORY[3]
    put(data, directory.get_file_offset() + 4, directory.Size - 4, 4)


def machine(value: int):
    def patch(data, pe):
        put(data, pe.FILE_HEADER.get_field_absolute_offset("Machine"), value, 2)

    return patch


def truncated(length: int):
    def patch(data, pe):
        del data[length:]

    return patch


def e_lfanew(value: int):
    def patch(data, pe):
        put(data, 0x3C, value, 4)

    return patch


def signature(value: bytes):
    def patch(data, pe):
        offset = pe.DOS_HEADER.e_lfanew
        data[offset : offset + 4] = value

    return patch


def optional_header_truncated(data, pe):
    truncated(pe.DOS_HEADER.e_lfanew + 24 + 60)(data, pe)


def not_pe(reason: str) -> str:
    return f"not a PE image ({reason!r})"


# Copies of the built image the runner refuses: the patch and the reason (after "IMAGE: ";
# {arch} the arch asked for, {pdata} the shortened .pdata's size, {entry} its entry size).
REFUSED = {
    "empty": (truncated(0), not_pe("The file is empty")),
    "dos-header-truncated": (
        truncated(40),
        not_pe("Unable to read the DOS Header, possibly a truncated file."),
    ),
    "zm": (
        lambda data, pe: data.__setitem__(slice(0, 2), b"ZM"),
        not_pe("Probably a ZM Executable (not a PE file)."),
    ),
    "no-mz": (
        lambda data, pe: data.__setitem__(slice(0, 2), b"XY"),
        not_pe("DOS Header magic not found."),
    ),
    "e_lfanew-past-the-end": (
        e_lfanew(1 << 30),
        not_pe("Invalid e_lfanew value, probably not a PE file"),
    ),
    "no-nt-signature": (signature(b"\0\0\0\0"), not_pe("NT Headers not found.")),
    "ne-signature": (
        signature(b"NE\0\0"),
        not_pe("Invalid NT Headers signature. Probably a NE file"),
    ),
    "other-signature": (signature(b"PX\0\0"), not_pe("Invalid NT Headers signature.")),
    "optional-header-truncated": (
        optional_header_truncated,
        not_pe("No Optional Header found, invalid PE32 or PE32+ file."),
    ),
    "i386": (
        machine(0x14C),
        "not an {arch} image (machine 0x14c: unknown); load it with the arch it was built for",
    ),
    "size-of-image-too-large": (
        set_size_of_image(0x4000001),
        "SizeOfImage 67112960 exceeds the limit of 67108864",
    ),
    "section-outside-size-of-image": (
        set_size_of_image(0x1000),
        "section .text lies outside SizeOfImage",
    ),
    "highlow-relocation": (relocation_of_type(3), "base relocation type 3 is not DIR64"),
    "import-by-ordinal": (first_import_by_ordinal, "HAL.dll import by ordinal 7"),
    "pdata-not-whole-entries": (
        pdata_shorter_by_4,
        ".pdata size {pdata} is not a multiple of {entry}",
    ),
}


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_broken_image_is_refused_in_one_line(tmp_path, arch, kind):
    patch, reason = REFUSED[kind]
    image = patched(tmp_path, arch, patch)
    pdata = pefile.PE(str(BUILT[arch][0]), fast_load=True).OPTIONAL_HEADER.DATA_DIRECTORY[3]
    expected = reason.format(arch=arch, pdata=pdata.Size - 4, entry=12 if arch == "x64" else 8)
    assert refusal(image, BUILT[arch][1], arch) == f"{image}: {expected}"


def test_an_image_without_sections_and_a_directory_are_refused(tmp_path):
    """Where pefile itself raised past a one-line reason, the runner refuses in one line."""

    def zero_first_section_header(data, pe):
        offset = pe.sections[0].get_file_offset()
        data[offset : offset + 40] = bytes(40)

    image = patched(tmp_path, "x64", zero_first_section_header)  # no sections: no .pdata
    pdata = pefile.PE(str(image), fast_load=True).OPTIONAL_HEADER.DATA_DIRECTORY[3]
    assert refusal(image, BUILT["x64"][1], "x64") == (
        f"{image}: .pdata at RVA {pdata.VirtualAddress:#x}: data at RVA can't be fetched"
    )
    assert refusal(tmp_path, BUILT["x64"][1], "x64") == (
        f"{tmp_path}: not a PE image ([Errno 21] Is a directory: '{tmp_path}')"
    )


@pytest.mark.parametrize("arch", ARCHES)
def test_the_other_arch_is_refused(arch):
    image, map_path = needs(arch)
    other = "arm64" if arch == "x64" else "x64"
    machine = {"x64": "0x8664", "arm64": "0xaa64"}[arch]
    assert refusal(image, map_path, other) == (
        f"{image}: not an {other} image (machine {machine}: {arch}); load it with the arch it "
        "was built for"
    )


def test_missing_and_foreign_files_are_refused(tmp_path):
    image, map_path = needs("x64")
    no_preferred = tmp_path / "no-preferred.map"
    no_preferred.write_text(map_path.read_text().replace("Preferred", "Wanted"))
    no_functions = tmp_path / "no-functions.map"
    no_functions.write_text(
        "".join(line for line in map_path.read_text().splitlines(True) if "0001:" not in line)
    )
    missing = tmp_path / "missing.sys"
    for image_path, map_file, reason in (
        (missing, map_path, f"not a PE image ([Errno 2] No such file or directory: '{missing}')"),
        (map_path, map_path, not_pe("DOS Header magic not found.")),  # a map is no PE image
        (image, tmp_path / "missing.map", "cannot read the map (No such file or directory)"),
        (image, tmp_path, "cannot read the map (Is a directory)"),
        (image, no_preferred, "not an lld-link /MAP file (no preferred load address)"),
        (image, no_functions, "no function symbols in executable sections"),
    ):
        named = image_path if image_path != image else map_file
        assert refusal(image_path, map_file, "x64") == f"{named}: {reason}"
    # A map with CRLF line ends reads as the same map.
    crlf = tmp_path / "crlf.map"
    crlf.write_bytes(map_path.read_bytes().replace(b"\n", b"\r\n"))
    assert describe(image, crlf, "x64") == describe(image, map_path, "x64")


def test_an_unknown_arch_and_missing_arguments_are_refused():
    image, map_path = needs("x64")
    assert refusal(image, map_path, "mips") == "arch 'mips': x64 or arm64"
    done = subprocess.run(
        [str(RUNNER), "describe", str(image)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "ppm-image-runner: usage: ppm-image-runner describe IMAGE MAP ARCH\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"op": "bogus"}', "unknown command 'bogus'"),
        ('{"op": "call", "address": 1}', "no image loaded"),
        ('{"op": "load", "image": "/nonexistent", "map": "/x", "stack_bytes": 24576}', "not a PE"),
        ('{"op": "load", "image": "x", "map": "y", "stack_bytes": 100}', "stack_bytes 100"),
        ('{"op": "load", "image": "x", "map": "y", "arch": "mips", "stack_bytes": 4096}', "mips"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(line, expected):
    """As ppm-sim would see it: one `{"error"}` line naming what was wrong, the same text on
    stderr, exit status 2."""
    result = subprocess.run(
        [str(RUNNER)], input=line + "\n", capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    (reply,) = [json.loads(text) for text in result.stdout.splitlines()]
    assert expected in reply["error"] and "\n" not in reply["error"]
    assert result.stderr == f"image-runner: {reply['error']}\n"


def test_an_argument_is_refused():
    result = subprocess.run(
        [str(RUNNER), "--verbose"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "unexpected argument '--verbose'" in result.stderr


def test_layout_prints_the_runners_figures_and_takes_no_argument():
    result = subprocess.run(
        [str(RUNNER), "layout"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0 and result.stderr == ""
    layout = json.loads(result.stdout)
    assert set(layout) == {"figures", "structures", "kmdf_max_functions"}
    assert layout["structures"]["_DRIVER_OBJECT"]["sizeof"] == 0x150
    refused = subprocess.run(
        [str(RUNNER), "layout", "--x"], capture_output=True, text=True, timeout=30, check=False
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "ppm-image-runner: layout takes no argument, got '--x'\n"
