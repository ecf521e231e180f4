"""The runner's address space, limits and status codes, and its two ways to stop."""

import os
import re
from pathlib import Path

# Address space. Unicorn's x86 has no paging here: virtual = physical, and its physical space
# is 52 bits wide, so the sign-extended kernel half (0xFFFF8000...) cannot be mapped. The
# runner's own memory lives just above the 47-bit user half instead: never a user-mode address
# of ppm-sim's, as the kernel half would be.
KERNEL = 0x000F_F800_0000_0000
USER_LIMIT = 0x0000_8000_0000_0000
IMAGE_BASE = KERNEL + 0x01_2000_0000
STUBS = KERNEL + 0x01_3000_0000
IMPORT_STUBS = STUBS
KMDF_STUBS = STUBS + 0x1000
POFX_STUBS = STUBS + 0x2000
UNLOAD_THUNK = STUBS + 0x3000
# Where a command's call returns: a C code hook there stops the emulation (native.stop_at).
SENTINEL = STUBS + 0x3F00
# Where a call nested in a command returns: its emu_start's `until` (a stop requested in a
# nested emu_start would also stop the run it interrupts, at the hooked instruction the nested
# call came from, and a restart there would run that hook again).
NESTED_SENTINEL = STUBS + 0x3F10
# A command's emu_start's `until`, which emu_start needs and nothing reaches.
UNREACHED = STUBS + 0x3F20
STUBS_SIZE = 0x4000
STACK_GUARD = KERNEL + 0x01_4000_0000
DATA = KERNEL + 0x01_5000_0000
DATA_SIZE = 0x10000
POOL = KERNEL + 0x01_6000_0000
POOL_LIMIT = 64 << 20
PAGE = 0x1000

# The doorbell of a spinning handoff (ppm-sim's sim/src/image/doorbell.rs, held to it by
# tests/test_native.py): the environment variable naming its file descriptor, the page's
# length, and the byte offsets of the two message counters in it.
DOORBELL_FD_VARIABLE = "PPM_DOORBELL_FD"
DOORBELL_BYTES = 0x1000
DOORBELL_SIM_COUNTER = 0
DOORBELL_RUNNER_COUNTER = 8
# How long the runner spins for ppm-sim's next message before it sleeps on the pipe; after how
# many such spins in vain in a row it rests (ppm-sim is not getting a processor), and for how
# many messages it then waits on the pipe alone.
DOORBELL_SPIN_NS = 200_000
DOORBELL_MISSES_BEFORE_REST = 3
DOORBELL_REST_WAITS = 1024

DRIVER_OBJECT = DATA
REGISTRY_PATH = DATA + 0x200
REGISTRY_PATH_BUFFER = DATA + 0x210
REGISTRY_PATH_MAX_BYTES = 0x4000
KMDF_TABLE = DATA + 0x5000
WDF_GLOBALS = DATA + 0x6000
WDFDRIVER = DATA + 0x7000
WDFDEVICE = DATA + 0x7100
WDFDEVICE_INIT = DATA + 0x7200

# The Windows structures the runner reads and writes: {structure: {field: offset}}, with
# "sizeof" where the runner relies on the size (LLP64: the same on x64 and ARM64).
# tests/test_layout.py holds every figure to the layout the image is built with: the layout
# assertions bindgen writes into the image build's wdk-sys bindings, the engine's
# assert_layout! declarations (engine/src/abi) and the KMDF stub's _Static_asserts.
STRUCTURES = {
    "_DRIVER_OBJECT": {
        "sizeof": 0x150,
        "Type": 0,
        "Size": 2,
        "DriverStart": 0x18,
        "DriverSize": 0x20,
        "DriverInit": 0x58,
        "DriverUnload": 0x68,
    },
    "_UNICODE_STRING": {"Length": 0, "MaximumLength": 2, "Buffer": 8},
    "_GROUP_AFFINITY": {"sizeof": 16, "Mask": 0, "Group": 8},
    "_EVENT_DATA_DESCRIPTOR": {"sizeof": 16, "Ptr": 0, "Size": 8},
    "_WDF_DRIVER_CONFIG": {"EvtDriverDeviceAdd": 8, "EvtDriverUnload": 16},
    "_WDF_DEVICE_STATE": {
        "Size": 0,
        "Disabled": 4,
        "DontDisplayInUI": 8,
        "Failed": 12,
        "NotDisableable": 16,
        "Removed": 20,
        "ResourcesChanged": 24,
    },
    "WDF_BIND_INFO": {"sizeof": 48, "FuncCount": 28, "FuncTable": 32},
    "PEP_INFORMATION": {"Size": 2},
    "PEP_KERNEL_INFORMATION_STRUCT_V3": {"Size": 2},
}
IO_TYPE_DRIVER = 4  # DRIVER_OBJECT.Type
DRIVER_OBJECT_SIZE = STRUCTURES["_DRIVER_OBJECT"]["sizeof"]
DRIVER_START = STRUCTURES["_DRIVER_OBJECT"]["DriverStart"]
DRIVER_SIZE = STRUCTURES["_DRIVER_OBJECT"]["DriverSize"]
DRIVER_INIT = STRUCTURES["_DRIVER_OBJECT"]["DriverInit"]
DRIVER_UNLOAD = STRUCTURES["_DRIVER_OBJECT"]["DriverUnload"]
UNICODE_STRING_BUFFER = STRUCTURES["_UNICODE_STRING"]["Buffer"]
GROUP_AFFINITY_GROUP = STRUCTURES["_GROUP_AFFINITY"]["Group"]
EVENT_DATA_DESCRIPTOR_BYTES = STRUCTURES["_EVENT_DATA_DESCRIPTOR"]["sizeof"]
EVENT_DATA_DESCRIPTOR_SIZE = STRUCTURES["_EVENT_DATA_DESCRIPTOR"]["Size"]
WDF_DRIVER_CONFIG_DEVICE_ADD = STRUCTURES["_WDF_DRIVER_CONFIG"]["EvtDriverDeviceAdd"]
WDF_DRIVER_CONFIG_UNLOAD = STRUCTURES["_WDF_DRIVER_CONFIG"]["EvtDriverUnload"]
WDF_DEVICE_STATE_FIELDS = STRUCTURES["_WDF_DEVICE_STATE"]
WDF_BIND_INFO_FUNC_COUNT = STRUCTURES["WDF_BIND_INFO"]["FuncCount"]
WDF_BIND_INFO_FUNC_TABLE = STRUCTURES["WDF_BIND_INFO"]["FuncTable"]
PEP_INFORMATION_SIZE_FIELD = STRUCTURES["PEP_INFORMATION"]["Size"]
PEP_KERNEL_INFORMATION_SIZE_FIELD = STRUCTURES["PEP_KERNEL_INFORMATION_STRUCT_V3"]["Size"]

HANG_SECONDS = 5.0  # wall-clock limit of one command (a hang)
HANG_MS_VARIABLE = "PPM_RUNNER_HANG_MS"  # sets another limit, in milliseconds
MAX_HANG_MS = 3_600_000
MAX_STACK_BYTES = 1 << 20
MAX_COPY_BYTES = 16 << 20
MAX_CALL_ARGS = 8
MAX_CALL_PAGES = 8  # pages of ppm-sim memory a call may carry
MAX_TIMESTAMPS = 4  # time-stamp counters ahead a message may carry (ppm-sim's TIMESTAMPS_AHEAD)
MAX_CACHED_PAGES = 256  # stale ppm-sim pages kept mapped between calls
NESTED_GAP = 0x100  # bytes left between an interrupted frame's RSP and a nested call's frame
PAINT = 0xDB  # the byte the stack is painted with before a command (low-water mark)

STATUS_SUCCESS = 0
STATUS_INVALID_PARAMETER = 0xC000000D
STATUS_PRIVILEGED_INSTRUCTION = 0xC0000096
STATUS_INTEGER_DIVIDE_BY_ZERO = 0xC0000094
STATUS_ILLEGAL_INSTRUCTION = 0xC000001D
STATUS_BREAKPOINT = 0x80000003
KMODE_EXCEPTION_NOT_HANDLED = 0x1E
PAGE_FAULT_IN_NONPAGED_AREA = 0x50
ATTEMPTED_WRITE_TO_READONLY_MEMORY = 0xBE
UNEXPECTED_KERNEL_MODE_TRAP = 0x7F
RFLAGS_IF = 1 << 9

# The KMDF 1.31 declarations the driver is built against (the Windows-target check's header):
# the one source of the function table's size, WdfFunctionTableNumEntries, which
# scripts/build-driver-image.sh also compiles into the KMDF stub and sim/src/image reads too.
KMDF_HEADER = Path(__file__).resolve().parents[3] / "tools/windows-check/include/kmdf-1.31.h"


def _kmdf_function_count(header: Path) -> int:
    found = re.search(
        r"^\s*WdfFunctionTableNumEntries\s*=\s*(\d+),", header.read_text(encoding="utf-8"), re.M
    )
    if found is None:
        raise RuntimeError(f"{header}: no WdfFunctionTableNumEntries")
    return int(found.group(1))


KMDF_MAX_FUNCTIONS = _kmdf_function_count(KMDF_HEADER)


def hang_seconds_from_environment() -> float:
    """The hang limit in seconds: HANG_MS_VARIABLE's (1 to MAX_HANG_MS milliseconds), else
    HANG_SECONDS."""
    value = os.environ.get(HANG_MS_VARIABLE)
    if value is None:
        return HANG_SECONDS
    if not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_HANG_MS):
        raise Fatal(
            f"{HANG_MS_VARIABLE} must be a whole number of milliseconds in 1..={MAX_HANG_MS}, "
            f"not {value!r}"
        )
    return int(value) / 1000


class Crash(Exception):
    """The image did what Windows would bugcheck for: ends the command with a CRASH."""

    def __init__(self, code: int, parameters: list[int], what: str, address: int = 0):
        super().__init__(what)
        self.code = code
        self.parameters = (parameters + [0, 0, 0, 0])[:4]
        self.what = what
        self.address = address


class Fatal(Exception):
    """The runner cannot go on (its own bug or a protocol violation): {"error": ...}."""
