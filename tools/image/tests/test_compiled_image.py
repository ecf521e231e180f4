"""The compiled runner's image reader (tools/image/runner/src/image.rs) against ppm_image.image:
`ppm-image-runner describe IMAGE MAP ARCH` prints what it parses of an image and its map, which
must equal what parse_image, read_map, parse_map and find_sites give for the same files, for
the built images (x64 and ARM64, and the self-test's broken copies when built) and for copies
broken here, where both must refuse the image with the same one-line reason. And the
compiled runner's answer to bad input: one line, exit status 2.

The binary: $PPM_RUNNER_BINARY (scripts/image-runner.sh --self-test sets it), else
target/release/ppm-image-runner (cargo build --release -p ppm-image-runner). capstone: the
library the `capstone` package loads, passed as $PPM_CAPSTONE_LIB (one test leaves it unset:
the binary finds the virtual environment's)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import capstone
import pefile
import pytest
from fake_host import RUNNER

from ppm_image import image as pe_image
from ppm_image.layout import IMAGE_BASE

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
IMAGES = ROOT / "target" / "driver-image"
# The imports the runner's 4 KiB import stub page holds: a 1-byte stub each on x64, 4 on ARM64.
MAX_IMPORTS = {"x64": pe_image.MAX_IMPORTS, "arm64": pe_image.MAX_IMPORTS // 4}
BUILT = {
    arch: (IMAGES / arch / "ppm_pep.sys", IMAGES / arch / "ppm_pep.map") for arch in MAX_IMPORTS
}
CAPSTONE_LIB = Path(capstone.__file__).resolve().parent / "lib" / "libcapstone.so"

pytestmark = pytest.mark.skipif(
    not RUNNER.exists(), reason=f"no {RUNNER}: cargo build --release -p ppm-image-runner"
)


def needs(arch: str) -> tuple[Path, Path]:
    """The built image of `arch` and its map (the test skipped when there is none)."""
    image, map_path = BUILT[arch]
    if not image.exists():
        pytest.skip(f"no image: run scripts/build-driver-image.sh --arch {arch}")
    return image, map_path


def digest(data: bytes) -> dict[str, Any]:
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def python_describe(image_path: Path, map_path: Path, arch: str) -> dict[str, Any]:
    """What ppm_image.image reads of the files, as `describe` prints it; {"error": reason}
    when it refuses them (in the order the runner's load reads them)."""
    try:
        image = pe_image.parse_image(str(image_path), IMAGE_BASE, arch, MAX_IMPORTS[arch])
        symbols = pe_image.parse_map(str(map_path), image)
        symbols_in_map = pe_image.read_map(str(map_path))
    except pe_image.ImageError as error:
        return {"error": str(error)}
    sites = pe_image.find_sites(image, arch)
    description = {
        "base": image.base,
        "size": image.size,
        "preferred_base": image.preferred_base,
        "entry_rva": image.entry_rva,
        "headers": digest(image.headers),
        "sections": [
            {
                "name": s.name,
                "rva": s.rva,
                "size": s.size,
                "raw_size": s.raw_size,
                "readable": s.readable,
                "writable": s.writable,
                "executable": s.executable,
            }
            for s in image.sections
        ],
        "contents": [{"rva": rva, **digest(raw)} for rva, raw in image.contents],
        "relocations": image.relocations,
        "imports": image.imports,
        "pdata": image.pdata,
        "map": symbols_in_map,
        "symbols": {"rvas": symbols.rvas, "names": symbols.names},
        "sites": sorted(sites.items()),
    }
    # Tuples as JSON arrays, as the compiled runner prints them.
    return json.loads(json.dumps(description))


def compiled_describe(
    image_path: Path, map_path: Path, arch: str, capstone_lib: Path | None = CAPSTONE_LIB
) -> dict[str, Any]:
    """What the compiled runner prints; {"error": reason} when it refuses the files."""
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
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppm-image-runner: "), done.stderr
    return {"error": lines[0].removeprefix("ppm-image-runner: ")}


def assert_same(image_path: Path, map_path: Path, arch: str) -> dict[str, Any]:
    expected = python_describe(image_path, map_path, arch)
    found = compiled_describe(image_path, map_path, arch)
    if "error" in expected or "error" in found:
        assert found == expected
        return found
    assert found.keys() == expected.keys()
    for key in expected:  # one key at a time: a difference names its field
        assert found[key] == expected[key], key
    return found


@pytest.mark.parametrize("arch", ["x64", "arm64"])
def test_the_built_image_reads_the_same(arch):
    described = assert_same(*needs(arch), arch)
    assert described["imports"] and described["relocations"] and described["pdata"]
    assert described["sites"] and described["symbols"]["rvas"]
    kinds = {site[0] for _, site in described["sites"]}
    assert kinds & ({"rdmsr", "wrmsr"} if arch == "x64" else {"mrs", "msr"})


def test_the_self_tests_broken_images_read_the_same():
    images = sorted((IMAGES / "self-test").glob("*.sys"))
    if not images:
        pytest.skip("no self-test images: run scripts/check-driver-image.sh --self-test")
    for image in images:
        machine = pefile.PE(str(image), fast_load=True).FILE_HEADER.Machine
        arch = pe_image.MACHINES[machine]
        assert_same(image, image.with_suffix(".map"), arch)


def test_capstone_is_found_in_the_virtual_environment():
    image, map_path = needs("x64")
    if not RUNNER.resolve().is_relative_to(ROOT) or not CAPSTONE_LIB.is_relative_to(ROOT):
        pytest.skip("the binary or capstone lies outside the repository")
    assert compiled_describe(image, map_path, "x64", capstone_lib=None) == compiled_describe(
        image, map_path, "x64"
    )


def test_a_missing_capstone_is_a_one_line_error(tmp_path):
    image, map_path = needs("x64")
    found = compiled_describe(image, map_path, "x64", capstone_lib=tmp_path / "libcapstone.so")
    assert found["error"].startswith(f"capstone at {tmp_path / 'libcapstone.so'}: ")


# ---- broken copies: both readers refuse them with the same reason ---------------------------


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


def optional_field(pe: pefile.PE, name: str) -> int:
    """The file offset of an optional header field."""
    return pe.OPTIONAL_HEADER.get_field_absolute_offset(name)


def directory_offset(pe: pefile.PE, index: int) -> int:
    """The file offset of data directory `index`."""
    return pe.OPTIONAL_HEADER.DATA_DIRECTORY[index].get_file_offset()


def set_size_of_image(value: int):
    def patch(data, pe):
        put(data, optional_field(pe, "SizeOfImage"), value, 4)

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


def pdata_shorter_by(size: int):
    def patch(data, pe):
        directory = pe.OPTIONAL_HEADER.DATA_DIRECTORY[3]
        put(data, directory_offset(pe, 3) + 4, directory.Size - size, 4)

    return patch


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


def first_section_name(name: bytes):
    def patch(data, pe):
        offset = pe.sections[0].get_file_offset()
        data[offset : offset + 8] = name.ljust(8, b"\0")

    return patch


def swapped_section_headers(data, pe):
    first, second = (section.get_file_offset() for section in pe.sections[:2])
    data[first : first + 40], data[second : second + 40] = (
        data[second : second + 40],
        data[first : first + 40],
    )


def section_field(index: int, name: str, value: int):
    def patch(data, pe):
        put(data, pe.sections[index].get_field_absolute_offset(name), value, 4)

    return patch


def optional_header(name: str, value: int):
    def patch(data, pe):
        put(data, optional_field(pe, name), value, 4)

    return patch


def repeated_relocation(data, pe):
    pe.parse_data_directories(directories=[5])
    first, second = pe.DIRECTORY_ENTRY_BASERELOC[0].entries[:2]
    put(data, second.struct.get_file_offset(), first.struct.Data, 2)


def import_name(replace: bytes, by: bytes):
    def patch(data, pe):
        at = data.index(replace)
        data[at : at + len(replace)] = by

    return patch


# Copies of the built image both readers must refuse, with the same reason.
REFUSED = {
    "empty": truncated(0),
    "dos-header-truncated": truncated(40),
    "zm": lambda data, pe: data.__setitem__(slice(0, 2), b"ZM"),
    "no-mz": lambda data, pe: data.__setitem__(slice(0, 2), b"XY"),
    "e_lfanew-past-the-end": e_lfanew(1 << 30),
    "no-nt-signature": signature(b"\0\0\0\0"),
    "ne-signature": signature(b"NE\0\0"),
    "other-signature": signature(b"PX\0\0"),
    "optional-header-truncated": lambda data, pe: truncated(pe.DOS_HEADER.e_lfanew + 24 + 60)(
        data, pe
    ),
    "i386": machine(0x14C),
    "size-of-image-too-large": set_size_of_image(0x4000001),
    "section-outside-size-of-image": set_size_of_image(0x1000),
    "highlow-relocation": relocation_of_type(3),
    "import-by-ordinal": first_import_by_ordinal,
    "pdata-not-whole-entries": pdata_shorter_by(4),
}

# Copies pefile reads leniently: both readers must read the same (or refuse them alike).
ODD = {
    "non-ascii-section-name": first_section_name(b".t\xe9xt"),
    "swapped-section-headers": swapped_section_headers,
    "six-data-directories": optional_header("NumberOfRvaAndSizes", 6),
    "tail-truncated": lambda data, pe: truncated(len(data) - 0x1F0)(data, pe),
    "relocations-truncated": lambda data, pe: truncated(len(data) - 0x1FC)(data, pe),
    "invalid-import-name": import_name(b"KeBugCheckEx", b"KeBug-heckEx"),
    "invalid-dll-name": import_name(b"HAL.dll", b"H*L.dll"),
    "repeated-relocation": repeated_relocation,
    "no-virtual-size": section_field(2, "Misc_VirtualSize", 0),
    "small-section-alignment": optional_header("SectionAlignment", 0x200),
}


@pytest.mark.parametrize("arch", ["x64", "arm64"])
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_broken_image_is_refused_the_same(tmp_path, arch, kind):
    found = assert_same(patched(tmp_path, arch, REFUSED[kind]), BUILT[arch][1], arch)
    assert "error" in found and "\n" not in found["error"]


@pytest.mark.parametrize("arch", ["x64", "arm64"])
@pytest.mark.parametrize("kind", sorted(ODD))
def test_an_odd_image_reads_the_same(tmp_path, arch, kind):
    assert_same(patched(tmp_path, arch, ODD[kind]), BUILT[arch][1], arch)


def zero_first_section_header(data, pe):
    offset = pe.sections[0].get_file_offset()
    data[offset : offset + 40] = bytes(40)


def test_what_crashes_the_python_reader_is_refused(tmp_path):
    """Where pefile raises past ImageError (the Python runner's "runner bug"), the compiled
    reader refuses the image in one line."""
    image = patched(tmp_path, "x64", zero_first_section_header)  # no sections: no .pdata
    with pytest.raises(pefile.PEFormatError):
        python_describe(image, BUILT["x64"][1], "x64")
    found = compiled_describe(image, BUILT["x64"][1], "x64")
    assert found["error"] == f"{image}: .pdata at RVA 0x12000: data at RVA can't be fetched"
    with pytest.raises(Exception, match="Unable to access file"):
        python_describe(tmp_path, BUILT["x64"][1], "x64")  # a directory
    found = compiled_describe(tmp_path, BUILT["x64"][1], "x64")
    assert found["error"] == f"{tmp_path}: not a PE image ([Errno 21] Is a directory: '{tmp_path}')"


@pytest.mark.parametrize("arch", ["x64", "arm64"])
def test_the_other_arch_is_refused_the_same(arch):
    image, map_path = needs(arch)
    other = "arm64" if arch == "x64" else "x64"
    found = assert_same(image, map_path, other)
    assert found["error"].endswith("load it with the arch it was built for")


def test_missing_and_foreign_files_are_refused_the_same(tmp_path):
    image, map_path = needs("x64")
    no_preferred = tmp_path / "no-preferred.map"
    no_preferred.write_text(map_path.read_text().replace("Preferred", "Wanted"))
    no_functions = tmp_path / "no-functions.map"
    no_functions.write_text(
        "".join(line for line in map_path.read_text().splitlines(True) if "0001:" not in line)
    )
    crlf = tmp_path / "crlf.map"
    crlf.write_bytes(map_path.read_bytes().replace(b"\n", b"\r\n"))
    for image_path, map_file in (
        (tmp_path / "missing.sys", map_path),
        (map_path, map_path),  # not a PE image
        (image, tmp_path / "missing.map"),
        (image, tmp_path),
        (image, no_preferred),
        (image, no_functions),
        (image, crlf),
    ):
        assert_same(image_path, map_file, "x64")


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
