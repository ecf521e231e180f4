"""A fake ppm-sim for the runner's tests: answers host requests from plain dicts (a registry,
an MSR table, one processor) and serves the runner, started as ppm-sim starts it, through a
FakeChannel that makes ppm-sim's moves between the runner's messages."""

from __future__ import annotations

import functools
import os
from collections import deque
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

ROOT = HERE.parents[2]
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034


class ProtocolError(Exception):
    """The runner refused a message (its `{"error"}` line), or ended."""


# An Intel processor with the leaves the engine probes: vendor, family 6, HWP, the APERF/MPERF
# and PMU leaves.
CPUID = {
    (0, 0): (0x16, 0x756E6547, 0x6C65746E, 0x49656E69),
    (1, 0): (0x000906EA, 0x00100800, 0x7FFAFBBF, 0xBFEBFBFF),
    (6, 0): (0x000027F7, 0x2, 0x9, 0x0),
    (0xA, 0): (0x07300404, 0x0, 0x0, 0x00000603),
    (0x16, 0): (3000, 4800, 100, 0),
}


# ARM64 system registers by their (op0, op1, CRn, CRm, op2) encodings.
ID_AA64PFR0_EL1 = (3, 0, 0, 4, 0)
AMCGCR_EL0 = (3, 3, 13, 2, 2)
AMCNTENSET0_EL0 = (3, 3, 13, 2, 5)
AMEVCNTR00_EL0 = (3, 3, 13, 4, 0)
AMEVCNTR01_EL0 = (3, 3, 13, 4, 1)
CNTFRQ_EL0 = (3, 3, 14, 0, 0)
CNTVCT_EL0 = (3, 3, 14, 0, 2)
CNTFRQ_HZ = 19_200_000
CORE_HZ = 1_536_000_000  # AMEVCNTR00 (core cycles): 80 times the system counter's rate
# A processor whose ID_AA64PFR0_EL1 announces AMUv1 (bits 47:44), with 4 group-0 counters,
# counters 0 and 1 enabled, and a 19.2 MHz system counter. AMEVCNTR00/01 and CNTVCT_EL0 are
# served from the host's clock (`tsc`, in system-counter ticks), AMEVCNTR0x only while the ID
# register announces the AMU (else an undefined instruction, as on hardware).
SYSTEM_REGISTERS = {
    ID_AA64PFR0_EL1: 1 << 44,
    AMCGCR_EL0: 4,
    AMCNTENSET0_EL0: 0b11,
    CNTFRQ_EL0: CNTFRQ_HZ,
}


class FakeHost:
    def __init__(
        self,
        msrs: dict[int, int] | None = None,
        registry: dict | None = None,
        advancing: bool = False,
        system_registers: dict[tuple[int, ...], int] | None = None,
    ):
        self.advancing = advancing
        self.msrs = {0xE7: 1000, 0xE8: 2000, 0x10: 12345} if msrs is None else msrs
        self.system_registers = (
            dict(SYSTEM_REGISTERS) if system_registers is None else system_registers
        )
        self.core_hz = CORE_HZ  # the rate AMEVCNTR00 (core cycles) counts at from now on
        self.faulting: set[tuple[int, ...]] = set()  # system registers whose MRS faults now
        self.cycles = 0
        self.registry = registry or {}
        self.memory: dict[int, bytearray] = {}  # page address -> contents (ppm-sim memory)
        self.requests: list[dict[str, Any]] = []
        self.logs: list[str] = []
        self.tsc = 1_000_000
        self.pool: dict[int, int] = {}
        self.registered: dict[str, Any] | None = None
        # Commands to send, all of them, before the answer to the next `inject_on` request.
        self.inject: deque[dict[str, Any]] = deque()
        self.inject_on: str | None = None
        # Further interrupts, each armed (as `inject_on`, `inject`) once the one before is
        # delivered: a call they deliver may itself be interrupted.
        self.later: deque[tuple[str, list[dict[str, Any]]]] = deque()
        self.interrupts: list[bool] = []
        self.etw_enable: dict[str, int] | None = None  # a session enabling the provider at boot

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        kind = request["host"]
        if kind == "read":
            page = self.memory.get(request["address"])
            return {"fault": True} if page is None else {"bytes": bytes(page).hex()}
        if kind == "cpuid":
            eax, ebx, ecx, edx = CPUID.get((request["leaf"], request["subleaf"]), (0, 0, 0, 0))
            return {"eax": eax, "ebx": ebx, "ecx": ecx, "edx": edx}
        if kind == "rdmsr" and self.advancing and request["msr"] in (0xE7, 0xE8):
            # IA32_MPERF (0xE7) and IA32_APERF (0xE8) advance: APERF at 3/4 of MPERF's rate.
            self.tsc += 4000
            return {"value": self.tsc * (3 if request["msr"] == 0xE8 else 4) // 4}
        if kind == "rdmsr":
            value = self.msrs.get(request["msr"])
            return {"fault": True} if value is None else {"value": value}
        if kind == "wrmsr":
            if request["msr"] not in self.msrs:
                return {"fault": True}
            self.msrs[request["msr"]] = request["value"]
            return {}
        if kind == "mrs":
            register = tuple(request[name] for name in ("op0", "op1", "crn", "crm", "op2"))
            if register in self.faulting:
                return {"fault": True}
            amu = self.system_registers.get(ID_AA64PFR0_EL1, 0) >> 44 & 0xF
            if register == CNTVCT_EL0 or (amu and register in (AMEVCNTR00_EL0, AMEVCNTR01_EL0)):
                # The clock advances with every read, by 10 ticks (0.5 us: a counter pair's
                # reads stay within the engine's bound, as on hardware); cycles at `core_hz`.
                self.tsc += 10
                self.cycles += 10 * self.core_hz // CNTFRQ_HZ
                return {"value": self.cycles if register == AMEVCNTR00_EL0 else self.tsc}
            value = self.system_registers.get(register)
            return {"fault": True} if value is None else {"value": value}
        if kind == "rdtsc":
            self.tsc += 1000
            return {"value": self.tsc}
        if kind == "interrupts":
            self.interrupts.append(request["enabled"])
            return {}
        if kind == "current_processor":
            return {"index": 0, "group": 0, "number": 0}
        if kind == "processor_number":
            if request["index"] != 0:
                return {"status": 0xC000000D}
            return {"status": 0, "group": 0, "number": 0}
        if kind == "processor_count":
            return {"count": 1}
        if kind == "set_affinity":
            return {"group": 0, "mask": 1}
        if kind == "performance_counter":
            self.tsc += 1000
            return {"ticks": self.tsc // 100, "frequency": 10_000_000}
        if kind == "pool_allocate":
            self.pool[request["address"]] = request["bytes"]
            return {"granted": True}
        if kind == "pool_free":
            self.pool.pop(request["address"], None)
            return {}
        if kind == "hal_allocate_counters":
            return {"status": 0, "handle": 0x77}
        if kind == "hal_free_counters":
            return {"status": 0}
        if kind == "register_plugin":
            self.registered = request
            size = request["kernel_information_bytes"]
            info = bytearray(size)
            info[0:2], info[2:4] = (3).to_bytes(2, "little"), size.to_bytes(2, "little")
            info[8:16] = (0x1234).to_bytes(8, "little")  # the POHANDLE
            return {
                "status": 0,
                "kernel_information": bytes(info).hex(),
                "functions": list(range(16, min(size, 96), 8)),
            }
        if kind == "pofx_service":
            return {"rax": 0}
        if kind == "log":
            self.logs.append(request["text"])
            return {}
        if kind == "etw_register":
            enable = {} if self.etw_enable is None else {"enable": self.etw_enable}
            return {"status": 0, "handle": 0x55, **enable}
        if kind in ("etw_write", "etw_set_information", "etw_unregister"):
            return {"status": 0}
        if kind in ("stall", "revert_affinity"):
            return {}
        if kind == "wdf":
            return self.wdf(request)
        raise AssertionError(f"unexpected host request {request}")

    def wdf(self, request: dict[str, Any]) -> dict[str, Any]:
        function = request["function"]
        if function in ("WdfDriverCreate", "WdfDeviceCreate"):
            return {"status": 0}
        if function in ("WdfDriverOpenParametersRegistryKey",):
            return {"status": 0, "key": 1}
        if function == "WdfDriverOpenPersistentStateRegistryKey":
            return {"status": 0, "key": 2}
        if function == "WdfRegistryOpenKey":
            return {"status": STATUS_OBJECT_NAME_NOT_FOUND}
        if function == "WdfRegistryCreateKey":
            return {"status": 0, "key": 3, "disposition": 1}
        if function == "WdfRegistryQueryValue":
            value = self.registry.get(request["name"])
            if value is None:
                return {"status": STATUS_OBJECT_NAME_NOT_FOUND}
            kind, data = value
            return {"status": 0, "type": kind, "length": len(data), "data": data.hex()}
        if function in ("WdfRegistryAssignULong", "WdfRegistryAssignValue"):
            return {"status": 0}
        return {}


class FakeChannel:
    """ppm-sim's side of the runner's stdin and stdout, answered by a FakeHost: `send` takes
    each message the runner sends, `receive` what goes back to it next."""

    def __init__(self, host: FakeHost):
        self.host = host
        self.incoming: deque[dict[str, Any]] = deque()
        self.finals: list[dict[str, Any]] = []
        self.deferred: list[dict[str, Any]] = []  # answers held back until a nested call ends
        self.carried: list[tuple[str, list[bool]]] = []  # (message, its deferred masking)
        # As ppm-sim for a call that carries `timestamps`: the step the fake's clock moves by
        # at a time-stamp read (1000 for RDTSC, 10 for CNTVCT_EL0: what its reads add); None:
        # answers carry no `timestamps`. With `windows_take_time` (a nested call's windows) a
        # deferred request's window moves the clock by the step too, and each answer carries
        # the clock as the 1st … 4th window's read returns it; without (inert windows, as the
        # fake's reads in one stretch between answers are at most one), one value: the next
        # read's.
        self.timestamp_step: int | None = None
        self.windows_take_time = True
        self.deferred_reads: list[dict[str, Any]] = []  # time-stamp reads reported deferred
        self.asked: list[str] = []  # the host requests made, deferred ones excepted
        # As ppm-sim: the answer that resumes a call after nested ones carries the pages they
        # carried, as the host's memory holds them then.
        self.resume_pages = True
        self.nested_pages: list[int] = []

    def send(self, message: dict[str, Any]) -> None:
        # What each message carried in `deferred`, served first, as ppm-sim does.
        deferred = message.get("deferred", [])
        masking = [d["enabled"] for d in deferred if d["host"] == "interrupts"]
        self.carried.append((message.get("host", "done"), masking))
        for request in deferred:
            assert request["host"] in ("interrupts", "current_processor", "rdtsc", "mrs"), request
            if (
                self.timestamp_step is not None
                and self.windows_take_time
                and request["host"] in ("interrupts", "current_processor")
            ):
                self.host.tsc += self.timestamp_step  # the window's time (reads add their own)
            answer = self.host.answer(request)
            if request["host"] == "current_processor":
                assert answer["index"] == request["index"], (request, answer)
            elif request["host"] != "interrupts":
                assert answer["value"] == request["value"], (request, answer)
                self.deferred_reads.append(request)
        if "host" in message:
            self.asked.append(message["host"])
            answer = self.host.answer(message)
            if self.timestamp_step is not None:
                answer = {**answer, "timestamps": self.timestamps()}
            if self.host.inject_on == message["host"] and self.host.inject:
                # An interrupt: ppm-sim sends the calls, one after the other's `done`, and
                # answers only after the last one's.
                self.host.inject_on = None
                self.incoming.extend(self.host.inject)
                for call in self.host.inject:
                    self.nested_pages += [address for address, _ in call.get("pages", [])]
                self.host.inject.clear()
                if self.host.later:
                    self.host.inject_on, calls = self.host.later.popleft()
                    self.host.inject.extend(calls)
                self.deferred.append(answer)
            else:
                self.incoming.append(answer)
        else:
            self.finals.append(message)
            if self.deferred and not self.incoming:
                answer = self.deferred.pop()
                pages = dict.fromkeys(self.nested_pages)
                self.nested_pages.clear()
                if self.resume_pages and pages:
                    fresh = [[page, bytes(self.host.memory[page])] for page in pages]
                    answer = {**answer, "pages": fresh}
                self.incoming.append(answer)

    def timestamps(self) -> list[int]:
        """The clock as a read returns it after 1 … 4 windows from now, or the next read's
        (`timestamp_step`, `windows_take_time`)."""
        windows = range(1, 5) if self.windows_take_time else range(1, 2)
        return [self.host.tsc + self.timestamp_step * window for window in windows]

    def receive(self) -> dict[str, Any] | None:
        return self.incoming.popleft() if self.incoming else None


IMAGE = ROOT / "target" / "driver-image" / "x64" / "ppm_pep.sys"
MAP = ROOT / "target" / "driver-image" / "x64" / "ppm_pep.map"
ARM64_IMAGE = ROOT / "target" / "driver-image" / "arm64" / "ppm_pep.sys"
ARM64_MAP = ROOT / "target" / "driver-image" / "arm64" / "ppm_pep.map"
IMAGES = {"x64": (IMAGE, MAP), "arm64": (ARM64_IMAGE, ARM64_MAP)}
# The runner's binary, which scripts/image-runner.sh builds (--self-test sets the variable).
RUNNER = Path(os.environ.get("PPM_RUNNER_BINARY", ROOT / "target" / "release" / "ppm-image-runner"))
REGISTRY_PATH = "\\Registry\\Machine\\System\\CurrentControlSet\\Services\\ppm_pep"


def patched_image(directory: Path, arch: str, *patches: tuple[int, bytes, bytes]) -> Path:
    """A copy of the architecture's image in `directory` with each patch's code at its RVA,
    (rva, expected, code), where the file holds `expected` (checked): what a test runs on
    either runner instead of writing into the emulated memory."""
    import pefile

    original = IMAGES[arch][0]
    pe = pefile.PE(str(original), fast_load=True)
    data = bytearray(original.read_bytes())
    for rva, expected, code in patches:
        offset = pe.get_offset_from_rva(rva)
        found = data[offset : offset + len(expected)]
        assert found == expected, (hex(rva), found)
        data[offset : offset + len(code)] = code
    copy = directory / "ppm_pep.sys"
    copy.write_bytes(bytes(data))
    return copy


class ProcessRunner:
    """The runner as ppm-sim starts it (scripts/image-runner.sh), served by a FakeChannel:
    each message the runner sends goes to the channel's `send`, and after each one (but the
    command's final answer) the channel's next message is written to the runner."""

    def __init__(self, channel: FakeChannel, environment: dict[str, str] | None = None) -> None:
        import subprocess

        self.channel = channel
        self.process = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "image-runner.sh")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **(environment or {})},
        )

    def write(self, message: dict[str, Any]) -> None:
        """One message, its pages' bytes raw after its line."""
        import json

        pages = message.get("pages", [])
        line = {**message, "pages": [[address, len(data)] for address, data in pages]}
        if not pages:
            line.pop("pages")
        data = json.dumps(line).encode() + b"\n" + b"".join(bytes(d) for _, d in pages)
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def command(self, message: dict[str, Any]) -> dict[str, Any]:
        """Runs `message`: the runner's final answer (`{"done"}` with its `deferred`), the
        host's answers and nested calls served meanwhile."""
        import json

        self.write(message)
        depth = 0  # nested calls written and not yet done
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise ProtocolError(f"the runner exited ({self.process.wait(timeout=10)})")
            reply = json.loads(line)
            if "error" in reply:
                raise ProtocolError(reply["error"])
            if "host" not in reply and depth == 0:
                return reply
            if "host" not in reply:
                depth -= 1
            self.channel.send(reply)
            following = self.channel.receive()
            if following is None:
                raise AssertionError(f"the fake host has nothing to answer {reply}")
            if following.get("op") == "call":
                depth += 1
            self.write(following)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@functools.cache
def described_symbols(
    image: Path, mtime_ns: int, size: int, map_path: Path, arch: str
) -> dict[str, list]:
    """The runner's `describe` of `image` (as it is at `mtime_ns` and `size`, so that a
    rewritten file is read again) and `map_path`: its symbols. Once per image for the whole
    test run: every Session of the same image shares it."""
    import json
    import subprocess

    described = subprocess.run(
        [str(RUNNER), "describe", str(image), str(map_path), arch],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(described.stdout)["symbols"]


class Session:
    """One runner with one fake host; `command` runs a command and returns its `done`."""

    def __init__(
        self,
        host: FakeHost | None = None,
        stack_bytes: int = 24576,
        arch: str = "x64",
        image: Path | None = None,
        verifier: dict[str, Any] | None = None,
        hang_ms: int | None = None,
    ):
        """`image`: a patched copy of the architecture's image (its map is the original's);
        `verifier`: the load's Driver Verifier options (none: no rules); `hang_ms`: the
        runner's hang limit (PPM_RUNNER_HANG_MS)."""
        self.host = host or FakeHost()
        self.channel = FakeChannel(self.host)
        hang = {} if hang_ms is None else {"PPM_RUNNER_HANG_MS": str(hang_ms)}
        self.runner = ProcessRunner(self.channel, hang)
        image, map_path = (image or IMAGES[arch][0]), IMAGES[arch][1]
        self.image_path, self.map_path, self.arch = image, map_path, arch
        load = {
            "op": "load",
            "image": str(image),
            "map": str(map_path),
            "arch": arch,
            "stack_bytes": stack_bytes,
        }
        if verifier is not None:
            load["verifier"] = verifier
        self.loaded = self.command(load)

    def command(self, message: dict[str, Any]) -> dict[str, Any]:
        """The runner's `done` for `message` (with what was deferred to it delivered to the
        host first)."""
        final = self.runner.command(message)
        self.channel.send(final)
        self.channel.finals.pop()
        return final["done"]

    def boot(self) -> dict[str, Any]:
        return self.command({"op": "driver_entry", "registry_path": REGISTRY_PATH})

    @property
    def symbols(self) -> dict[str, list]:
        """The map's functions of the loaded image as the runner reads them (its `describe`):
        {"rvas": [...], "names": [...]}, by ascending RVA."""
        image = self.image_path.stat()
        return described_symbols(
            self.image_path, image.st_mtime_ns, image.st_size, self.map_path, self.arch
        )

    def symbol_address(self, name: str) -> int:
        """Where the function `name` of the map is loaded."""
        return self.loaded["image_base"] + self.symbols["rvas"][self.symbols["names"].index(name)]

    def symbol(self, address: int) -> str:
        """`address` as `function+0xOFFSET` (a runner's crash reports name addresses so)."""
        import bisect

        rva = address - self.loaded["image_base"]
        index = bisect.bisect_right(self.symbols["rvas"], rva) - 1
        if index < 0:
            return f"{address:#x}"
        return f"{self.symbols['names'][index]}+{rva - self.symbols['rvas'][index]:#x}"


class RunnerProcess:
    """The runner as ppm-sim starts it: scripts/image-runner.sh, JSON lines over its standard
    input and output, each host request answered by `host`."""

    def __init__(self, host: FakeHost) -> None:
        import subprocess

        self.host = host
        self.process = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "image-runner.sh")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def command(self, message: dict[str, Any]) -> dict[str, Any]:
        """Sends `message` and answers the host requests until the final answer."""
        import json

        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        while True:
            reply = json.loads(self.process.stdout.readline())
            if "host" not in reply:
                return reply
            self.process.stdin.write(json.dumps(self.host.answer(reply)) + "\n")
            self.process.stdin.flush()

    def kill(self) -> None:
        """Ends the runner if it is still running."""
        if self.process.poll() is None:
            self.process.kill()
