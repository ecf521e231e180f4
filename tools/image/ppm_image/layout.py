"""The runner's address space, limits and status codes, and its two ways to stop."""

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
SENTINEL = STUBS + 0x3F00
STUBS_SIZE = 0x4000
STACK_GUARD = KERNEL + 0x01_4000_0000
DATA = KERNEL + 0x01_5000_0000
DATA_SIZE = 0x10000
POOL = KERNEL + 0x01_6000_0000
POOL_LIMIT = 64 << 20
PAGE = 0x1000

DRIVER_OBJECT = DATA
REGISTRY_PATH = DATA + 0x200
REGISTRY_PATH_BUFFER = DATA + 0x210
REGISTRY_PATH_MAX_BYTES = 0x4000
KMDF_TABLE = DATA + 0x5000
WDF_GLOBALS = DATA + 0x6000
WDFDRIVER = DATA + 0x7000
WDFDEVICE = DATA + 0x7100
WDFDEVICE_INIT = DATA + 0x7200

HANG_SECONDS = 5.0  # wall-clock limit of one command (a hang)
MAX_STACK_BYTES = 1 << 20
MAX_COPY_BYTES = 16 << 20
MAX_CALL_ARGS = 8
MAX_CALL_PAGES = 8  # pages of ppm-sim memory a call may carry
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
