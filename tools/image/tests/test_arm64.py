"""The runner against the real ARM64 image, target/driver-image/arm64/ppm_pep.sys, with the
fake host answering the image's MRS reads (an AMU-equipped processor)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from fake_host import (
    AMCGCR_EL0,
    AMEVCNTR00_EL0,
    AMEVCNTR01_EL0,
    ARM64_IMAGE,
    ARM64_MAP,
    CNTFRQ_EL0,
    CNTFRQ_HZ,
    CNTVCT_EL0,
    CORE_HZ,
    ID_AA64PFR0_EL1,
    IMAGE,
    MAP,
    RUNNER,
    FakeHost,
    Session,
    patched_image,
)
from runner_layout import KMDF_STUBS, STATUS_ILLEGAL_INSTRUCTION
from test_runner import (
    PAYLOAD,
    PROCESSOR_0,
    apply,
    callbacks,
    prepare_device_page,
    ready_to_read,
    symbol_address,
)

pytestmark = pytest.mark.skipif(
    not ARM64_IMAGE.exists(), reason="no image: run scripts/build-driver-image.sh --arch arm64"
)


def booted(host: FakeHost | None = None) -> Session:
    session = Session(host, arch="arm64")
    assert session.boot() == {"status": 0}
    return session


def mrs_reads(host: FakeHost, since: int = 0) -> list[tuple[int, ...]]:
    return [
        tuple(r[name] for name in ("op0", "op1", "crn", "crm", "op2"))
        for r in host.requests[since:]
        if r["host"] == "mrs"
    ]


def test_arm64_boots_to_register_plugin_with_success():
    host = FakeHost()
    session = booted(host)
    registered = host.registered
    assert registered is not None, "PoFxRegisterPluginEx was never called"
    information = bytes.fromhex(registered["information"])
    assert int.from_bytes(information[0:2], "little") == 3  # PEP_INFORMATION_V3
    device, processor = callbacks(session)
    base, size = session.loaded["image_base"], session.loaded["image_size"]
    assert base <= device < base + size and base <= processor < base + size
    # The AMU found through the image's own MRS reads: the ID register first, the AMU
    # registers only after it.
    reads = mrs_reads(host)
    assert reads[0] == ID_AA64PFR0_EL1
    assert {AMCGCR_EL0, AMEVCNTR00_EL0, AMEVCNTR01_EL0} <= set(reads)
    (line,) = [text for text in host.logs if "registered" in text]
    assert "source amu" in line
    # Calibrated from the counters: AMEVCNTR00 at CORE_HZ against CNTVCT at CNTFRQ.
    assert f"nominal {CORE_HZ // 1_000_000} MHz" in line
    # DAIF masking reported only when the I bit changes, starting with a mask.
    assert host.interrupts and host.interrupts[0] is False
    assert all(a != b for a, b in zip(host.interrupts, host.interrupts[1:], strict=False))
    report = session.command({"op": "report"})
    assert {"index": 116, "name": "WdfDriverCreate", "calls": 1} in report["kmdf"]
    assert report["seh"] == []
    assert session.loaded["entry"] in report["functions"]["executed"]


def test_arm64_without_the_amu_touches_no_amu_register():
    """ID_AA64PFR0_EL1.AMU = 0 and every AMU register undefined: the image must not read
    one (it would be an undefined instruction: a bugcheck)."""
    host = FakeHost(system_registers={ID_AA64PFR0_EL1: 0, CNTFRQ_EL0: CNTFRQ_HZ})
    booted(host)
    assert all(register[2] != 13 for register in mrs_reads(host))  # CRn 13: the AMU
    assert host.registered is not None


def guard_rva(session: Session, name: str) -> int:
    return symbol_address(session, name) - session.loaded["image_base"]


def test_arm64_amu_fault_at_boot_is_caught_by_the_guard():
    """The ID register announces the AMU but AMCGCR_EL0 is undefined (a hypervisor that traps
    it): the MRS in ppm_amu_read_amcgcr takes an undefined-instruction exception, dispatched
    through the image's .xdata to the guard's own __except; the driver registers without the
    AMU source, as the engine does."""
    host = FakeHost()
    del host.system_registers[AMCGCR_EL0]
    session = booted(host)
    assert host.registered is not None
    (line,) = [text for text in host.logs if "registered" in text]
    assert "source amu" not in line
    (entry,) = session.command({"op": "report"})["seh"]
    guard = symbol_address(session, "ppm_amu_read_amcgcr")
    assert entry["handled"] and entry["code"] == STATUS_ILLEGAL_INSTRUCTION
    assert entry["address"] == guard and entry["symbol"] == "ppm_amu_read_amcgcr+0x0"
    assert guard < entry["handler"] < guard + 0x18  # its __except target, in the guard
    assert AMEVCNTR00_EL0 not in mrs_reads(host)


def test_arm64_amu_fault_on_the_read_path_is_caught_by_the_guard():
    """AMEVCNTR00_EL0 starts to fault after the boot (a trap a hypervisor sets later, e.g.
    through FEAT_FGT): FEEDBACK_READ returns, the fault handled by the guard's __except; when
    the trap goes away the counts advance again."""
    host = FakeHost()
    session = booted(host)
    read = ready_to_read(session)
    host.memory[PAYLOAD] = bytearray(0x1000)
    assert session.command(read)["rax"] & 0xFF == 1
    host.faulting.add(AMEVCNTR00_EL0)
    host.memory[PAYLOAD] = bytearray(0x1000)
    done = session.command({**read, "interrupts": False})
    assert "crash" not in done
    seh = session.command({"op": "report"})["seh"]
    assert seh and all(entry["handled"] for entry in seh)
    assert {entry["symbol"] for entry in seh} == {"ppm_amu_read_amevcntr00+0x0"}
    host.faulting.clear()
    counts = []
    for _ in range(2):
        host.memory[PAYLOAD] = bytearray(0x1000)
        done = session.command(read)
        assert done["rax"] & 0xFF == 1
        page = bytearray(0x1000)
        apply(page, done["writes"])
        counts.append(int.from_bytes(page[16:24], "little"))
    assert counts[1] > counts[0]


def test_arm64_guard_without_its_scope_is_bugcheck_0x1e(tmp_path):
    """The guard's scope table emptied (Count 0): the same AMU fault is an exception no frame
    handles, bugcheck 0x1E with STATUS_ILLEGAL_INSTRUCTION at the MRS, as on Windows."""
    import pefile

    from ppm_image.broken_image import ImageFile

    session = booted()
    guard = guard_rva(session, "ppm_amu_read_amcgcr")
    pe = pefile.PE(str(ARM64_IMAGE))
    function = ImageFile(str(ARM64_IMAGE), str(ARM64_MAP)).function_containing(guard)
    assert function.handler_data is not None
    data = bytearray(ARM64_IMAGE.read_bytes())
    count = pe.get_offset_from_rva(function.handler_data)
    assert data[count : count + 4] == (1).to_bytes(4, "little")
    data[count : count + 4] = bytes(4)
    broken = tmp_path / "ppm_pep.sys"
    broken.write_bytes(bytes(data))
    host = FakeHost()
    del host.system_registers[AMCGCR_EL0]
    session = Session(host, arch="arm64", image=broken)
    crash = session.boot()["crash"]
    assert crash["code"] == 0x1E
    assert crash["parameters"][:2] == [STATUS_ILLEGAL_INSTRUCTION, crash["address"]]
    assert crash["address"] == session.loaded["image_base"] + guard
    assert "no __except handler in any frame" in crash["what"]
    assert host.registered is None


def test_arm64_feedback_read_returns_advancing_counts():
    """QUERY_CAPABILITIES, QUERY_FEEDBACK_COUNTERS and FEEDBACK_READ on ARM64: the counts come
    from the image's MRS of AMEVCNTR00/01, answered by the host."""
    host = FakeHost()
    session = booted(host)
    read = ready_to_read(session)
    # The core now runs at 3/4 of the nominal rate the driver calibrated.
    host.core_hz = CORE_HZ * 3 // 4
    counts = []
    for interrupts in (True, False, True):
        host.memory[PAYLOAD] = bytearray(0x1000)
        before, changes = len(host.requests), len(host.interrupts)
        done = session.command({**read, "interrupts": interrupts})
        assert done["rax"] & 0xFF == 1
        page = bytearray(0x1000)
        apply(page, done["writes"])
        counts.append((int.from_bytes(page[8:16], "little"), int.from_bytes(page[16:24], "little")))
        reads = mrs_reads(host, before)
        assert reads.count(AMEVCNTR00_EL0) == reads.count(AMEVCNTR01_EL0) >= 1
        assert CNTVCT_EL0 in reads
        # Masked around the counter reads: reported only where the call began unmasked.
        assert host.interrupts[changes:] == ([False, True] if interrupts else [])
    assert counts[1][0] > counts[0][0] and counts[2][0] > counts[1][0]
    assert counts[1][1] > counts[0][1] and counts[2][1] > counts[1][1]
    assert all(actual < nominal for nominal, actual in counts[1:])


def test_arm64_a_call_with_its_timestamp_answers_cntvct_itself():
    """As on x64: a call that carries its processor and the time-stamp counter makes its MRS of
    CNTVCT_EL0 no request of its own (reported in `deferred` with the value used); the Activity
    Monitors reads are asked."""
    host = FakeHost()
    session = booted(host)
    read = ready_to_read(session)
    channel = session.channel
    channel.timestamp_step = 10
    host.memory[PAYLOAD] = bytearray(0x1000)
    before, reads = len(host.requests), len(channel.deferred_reads)
    timestamps = channel.timestamps()
    done = session.command(
        {
            **read,
            "processor": PROCESSOR_0,
            "pages": [[PAYLOAD, bytes(0x1000)]],
            "timestamps": timestamps,
        }
    )
    assert done["rax"] & 0xFF == 1
    deferred = channel.deferred_reads[reads:]
    cntvct = [tuple(r[name] for name in ("op0", "op1", "crn", "crm", "op2")) for r in deferred]
    # The first read is the third window, after the processor's and the masking's.
    assert cntvct == [CNTVCT_EL0, CNTVCT_EL0] and deferred[0]["value"] == timestamps[2]
    asked = [
        tuple(r[name] for name in ("op0", "op1", "crn", "crm", "op2"))
        for r in host.requests[before:]
        if r["host"] == "mrs" and "value" not in r
    ]
    assert asked == [AMEVCNTR00_EL0, AMEVCNTR01_EL0], asked


def test_arm64_device_add_and_unload_through_the_framework_thunk():
    session = booted()
    assert session.command({"op": "device_add"}) == {"status": 0}
    # A registered PEP cannot be unloaded: src/driver.rs stops the system (DRIVER_VIOLATION),
    # reached through the ARM64 unload thunk (x0 = WDFDRIVER, br EvtDriverUnload).
    crash = session.command({"op": "unload"})["crash"]
    assert crash["code"] == 0x121
    assert "evt_driver_unload" in crash["symbol"]


def test_arm64_unload_of_an_unregistered_driver():
    host = FakeHost(registry={"SkipRegistration": (4, (1).to_bytes(4, "little"))})
    session = booted(host)
    assert host.registered is None
    assert session.command({"op": "unload"}) == {"called": True}


def test_arm64_stack_low_water_mark():
    session = booted()
    stack = session.command({"op": "report"})["stack"]
    entry = next(item for item in stack if item["symbol"] == "FxDriverEntry")
    assert entry["calls"] == 1
    assert 1024 < entry["deepest_bytes"] < 24576
    small = Session(stack_bytes=4096, arch="arm64")
    crash = small.boot()["crash"]
    assert crash["code"] == 0x7F and crash["parameters"][0] == 8


def test_arm64_kebugcheckex_with_five_register_arguments():
    session = booted()
    thunk = symbol_address(session, "KeBugCheckEx")
    done = session.command({"op": "call", "address": thunk, "args": [0xDEAD, 1, 2, 3, 4]})
    crash = done["crash"]
    assert crash["code"] == 0xDEAD
    assert crash["parameters"] == [1, 2, 3, 4]


def test_arm64_untranslated_kmdf_index_is_a_crash():
    session = booted()
    stub = KMDF_STUBS + 4 * 315  # the table's entry: one 4-byte `ret` stub per index
    crash = session.command({"op": "call", "address": stub, "args": []})["crash"]
    assert crash["code"] == 0x1E
    assert "index 315 (WdfSpinLockCreate)" in crash["what"]


def never_run(session: Session, suffix: str, length: int) -> tuple[int, bytes]:
    """The RVA and first `length` bytes of the one function whose mangled name ends with
    `suffix` (v0 mangling carries a per-build crate hash before it), one the image never runs
    (a panic path of panic-free code): room for a test's own instructions in a patched copy
    of the image."""
    import pefile

    (name,) = [name for name in session.symbols["names"] if name.endswith(suffix)]
    rva = session.symbol_address(name) - session.loaded["image_base"]
    pe = pefile.PE(str(ARM64_IMAGE), fast_load=True)
    return rva, pe.get_data(rva, length)


def test_arm64_undefined_instruction_brk_fastfail_and_trap(tmp_path):
    """Each exception raised at a function's first instruction (so the virtual unwind finds
    the caller, the sentinel, at once): udf and brk #1 are dispatched and no frame takes them;
    brk #0xf003 is __fastfail."""
    plain = booted()
    first, first_bytes = never_run(plain, "17rust_begin_unwind", 8)
    second, second_bytes = never_run(plain, "20kernel_panic_handler16rust_ke_bugcheck", 4)
    udf = (0).to_bytes(4, "little")  # udf #0
    fastfail = (0xD4200000 | 0xF003 << 5).to_bytes(4, "little")  # brk #0xf003
    trap = (0xD4200000 | 1 << 5).to_bytes(4, "little")  # brk #1
    image = patched_image(
        tmp_path, "arm64", (first, first_bytes, udf + fastfail), (second, second_bytes, trap)
    )
    session = Session(arch="arm64", image=image)
    assert session.boot() == {"status": 0}
    cave, trap_at = (session.loaded["image_base"] + rva for rva in (first, second))
    crash = session.command({"op": "call", "address": cave, "args": []})["crash"]
    assert crash["code"] == 0x1E  # udf #0: an undefined instruction
    assert crash["parameters"][:2] == [STATUS_ILLEGAL_INSTRUCTION, cave]
    crash = session.command({"op": "call", "address": cave + 4, "args": [7]})["crash"]
    assert crash["code"] == 0x139 and crash["parameters"][0] == 7
    assert crash["address"] == cave + 4
    crash = session.command({"op": "call", "address": trap_at, "args": []})["crash"]
    assert crash["code"] == 0x1E and crash["parameters"][:2] == [0x80000003, trap_at]
    assert "no __except handler in any frame" in crash["what"]


def test_arm64_hang_limit(tmp_path):
    plain = booted()
    rva, found = never_run(plain, "17rust_begin_unwind", 4)
    b_itself = (0x14000000).to_bytes(4, "little")  # b . (to itself)
    image = patched_image(tmp_path, "arm64", (rva, found, b_itself))
    session = Session(arch="arm64", image=image, hang_ms=300)
    assert session.boot() == {"status": 0}
    loop = session.loaded["image_base"] + rva
    start = time.monotonic()
    crash = session.command({"op": "call", "address": loop, "args": []})["crash"]
    assert crash["code"] == 0 and "hang" in crash["what"] and crash["address"] == loop
    assert time.monotonic() - start < 3


def load_refusal(load: dict) -> str:
    """The runner's one-line refusal of `load` (exit 2): its `{"error"}`."""
    line = json.dumps({**load, "stack_bytes": 24576}) + "\n"
    result = subprocess.run(
        [str(RUNNER)], input=line, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result
    (reply,) = [json.loads(text) for text in result.stdout.splitlines()]
    return reply["error"]


def test_mismatched_arch_is_refused():
    for image, map_path, arch, found in (
        (ARM64_IMAGE, ARM64_MAP, "x64", "arm64"),
        (IMAGE, MAP, "arm64", "x64"),
    ):
        if not image.exists():
            continue
        load = {"op": "load", "image": str(image), "map": str(map_path), "arch": arch}
        error = load_refusal(load)
        assert f"not an {arch} image" in error and f": {found})" in error
    error = load_refusal({"op": "load", "image": "x", "map": "y", "arch": "riscv"})
    assert "x64 or arm64" in error


def test_arm64_feedback_read_cost():
    """Not a limit: prints the cost of one FEEDBACK_READ's round trips (fake host included);
    each read returns success."""
    host = FakeHost()
    session = booted(host)
    read = ready_to_read(session)
    rounds = 300
    start = time.perf_counter()
    for _ in range(rounds):
        host.memory[PAYLOAD] = bytearray(0x1000)
        assert session.command({**read, "interrupts": True})["rax"] & 0xFF == 1
    per_call = (time.perf_counter() - start) / rounds
    print(f"ARM64 FEEDBACK_READ, fake host included: {per_call * 1e6:.0f} us")


def test_arm64_nested_call_while_waiting_for_an_mrs_answer():
    """ppm-sim sends PREPARE_DEVICE while FEEDBACK_READ waits for its first MRS answer: the
    nested call runs below the interrupted frame and the interrupted call resumes intact."""
    host = FakeHost()
    session = booted(host)
    device, _ = callbacks(session)
    read = ready_to_read(session)
    host.memory[PAYLOAD] = bytearray(0x1000)
    session.command(read)  # the first read is the baseline (zero counts)
    nested_payload = PAYLOAD + 0x20000
    page = prepare_device_page("\\_SB.PR00")
    page[0:8] = (nested_payload + 0x10).to_bytes(8, "little")
    page[0x18:0x20] = (nested_payload + 0x20).to_bytes(8, "little")
    host.memory[nested_payload] = page
    host.inject.append({"op": "call", "address": device, "args": [1, nested_payload]})
    host.inject_on = "mrs"
    host.memory[PAYLOAD] = bytearray(0x1000)
    first = session.command({**read, "interrupts": False})
    assert host.inject_on is None, "the nested call was not sent"
    assert session.channel.finals[-1]["done"]["writes"] == [[nested_payload + 8, "01"]]
    assert first["rax"] & 0xFF == 1
    host.memory[PAYLOAD] = bytearray(0x1000)
    second = session.command({**read, "interrupts": False})
    counts = []
    for done in (first, second):
        counts_page = bytearray(0x1000)
        apply(counts_page, done["writes"])
        counts.append(int.from_bytes(counts_page[16:24], "little"))
    assert counts[1] > counts[0] > 0
    stack = {item["entry"]: item for item in session.command({"op": "report"})["stack"]}
    assert stack[read["address"]]["deepest_bytes"] > stack[device]["deepest_bytes"] > 0


def test_arm64_over_the_line_protocol():
    """scripts/image-runner.sh as ppm-sim starts it: the ARM64 image boots over JSON lines,
    its MRS reads arriving as mrs requests."""
    from fake_host import REGISTRY_PATH, RunnerProcess

    host = FakeHost()
    runner = RunnerProcess(host)
    process, command = runner.process, runner.command

    try:
        load = {"op": "load", "image": str(ARM64_IMAGE), "map": str(ARM64_MAP), "arch": "arm64"}
        assert "image_base" in command({**load, "stack_bytes": 24576})["done"]
        boot = {"op": "driver_entry", "registry_path": REGISTRY_PATH}
        assert command(boot) == {"done": {"status": 0}}
        assert mrs_reads(host)[0] == ID_AA64PFR0_EL1
        assert host.registered is not None
        process.stdin.close()
        assert process.wait(timeout=10) == 0
    finally:
        runner.kill()
