"""The runner against the real image, target/driver-image/x64/ppm_pep.sys, with a fake host."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_host import (
    IMAGE,
    MAP,
    REGISTRY_PATH,
    ROOT,
    FakeHost,
    ProtocolError,
    RunnerProcess,
    Session,
    patched_image,
)
from runner_layout import KMDF_MAX_FUNCTIONS, KMDF_STUBS, STATUS_PRIVILEGED_INSTRUCTION

pytestmark = pytest.mark.skipif(
    not IMAGE.exists(), reason="no image: run scripts/build-driver-image.sh"
)

PEP_DPM_PREPARE_DEVICE = 1
PAYLOAD = 0x10000  # where the fake host pretends its notification payload lives
# The fake host's one processor, as a `call` names it.
PROCESSOR_0 = {"index": 0, "group": 0, "number": 0}


def booted(host: FakeHost | None = None) -> Session:
    session = Session(host)
    assert session.boot() == {"status": 0}
    return session


def callbacks(session: Session) -> tuple[int, int]:
    information = bytes.fromhex(session.host.registered["information"])
    device = int.from_bytes(information[8:16], "little")
    processor = int.from_bytes(information[16:24], "little")
    return device, processor


def prepare_device_page(device_id: str) -> bytearray:
    """PEP_PREPARE_DEVICE at PAYLOAD: DeviceId -> UNICODE_STRING at +0x10, DeviceAccepted +8
    (0xEE: not yet written)."""
    page = bytearray(0x1000)
    text = device_id.encode("utf-16-le")
    page[0:8] = (PAYLOAD + 0x10).to_bytes(8, "little")
    page[8] = 0xEE
    page[0x10:0x12] = len(text).to_bytes(2, "little")
    page[0x12:0x14] = len(text).to_bytes(2, "little")
    page[0x18:0x20] = (PAYLOAD + 0x20).to_bytes(8, "little")
    page[0x20 : 0x20 + len(text)] = text
    return page


def test_boots_to_register_plugin_with_success():
    session = booted()
    registered = session.host.registered
    assert registered is not None, "PoFxRegisterPluginEx was never called"
    information = bytes.fromhex(registered["information"])
    assert int.from_bytes(information[0:2], "little") == 3  # PEP_INFORMATION_V3
    assert int.from_bytes(information[2:4], "little") == 32
    assert registered["kernel_information_bytes"] == 96
    device, processor = callbacks(session)
    base, size = session.loaded["image_base"], session.loaded["image_size"]
    assert base <= device < base + size and base <= processor < base + size
    assert any("registered" in line for line in session.host.logs)


def test_probe_gp_is_caught_by_the_images_own_except():
    # No IA32_HWP_CAPABILITIES etc. in the table: the SEH-guarded probes fault.
    session = booted(FakeHost(msrs={0xE7: 1, 0xE8: 2}))
    seh = session.command({"op": "report"})["seh"]
    assert seh, "no probe faulted"
    for entry in seh:
        assert entry["code"] == STATUS_PRIVILEGED_INSTRUCTION
        assert entry["handled"] is True
        assert entry["symbol"].startswith("ppm_image_readmsr")
        assert session.symbol(entry["handler"]).startswith("ppm_msr_probe_read+")
    assert session.host.registered is not None, "the driver did not go on after the #GP"


def readmsr_address(session: Session) -> int:
    return session.symbol_address("ppm_image_readmsr")


def test_rdmsr_answered_by_the_host_and_fault_outside_try_is_bugcheck_0x1e():
    session = booted(FakeHost(msrs={0xE7: 0x1122334455667788}))
    address = readmsr_address(session)
    done = session.command({"op": "call", "address": address, "args": [0xE7]})
    assert done["rax"] == 0x1122334455667788
    done = session.command({"op": "call", "address": address, "args": [0x199]})
    crash = done["crash"]
    assert crash["code"] == 0x1E
    assert crash["parameters"][0] == STATUS_PRIVILEGED_INSTRUCTION
    assert crash["symbol"] == "ppm_image_readmsr+0x0"
    assert session.command({"op": "report"})["seh"][-1]["handled"] is False


def test_prepare_device_through_ppm_sim_memory():
    session = booted()
    device, _ = callbacks(session)
    session.host.memory[PAYLOAD] = prepare_device_page("\\_SB.PR00")
    done = session.command(
        {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
    )
    assert done["rax"] & 0xFF == 1
    assert done["writes"] == [[PAYLOAD + 8, "01"]]
    assert {"host": "read", "address": PAYLOAD, "length": 0x1000} in session.host.requests
    session.host.memory[PAYLOAD] = prepare_device_page("\\_SB.PCI0")
    done = session.command(
        {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
    )
    assert done["rax"] & 0xFF == 1
    assert done["writes"] == [[PAYLOAD + 8, "00"]]


def test_a_page_a_call_left_is_fetched_again_when_touched_unsent():
    """A page sent with one call is stale after it: the next call that touches it without
    sending it asks ppm-sim for it again (it may have changed), and a call that sends it again
    uses the bytes sent. A device the PEP refuses gets DeviceAccepted 0: a write only where
    the page's byte was not 0 already."""
    session = booted()
    device, _ = callbacks(session)
    host = session.host
    prepare = {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
    for accepted_before, sent in ((0, True), (0xEE, False), (0, True), (0xEE, False)):
        page = prepare_device_page("\\_SB.PCI0")
        page[8] = accepted_before
        host.memory[PAYLOAD] = page
        pages = [[PAYLOAD, bytes(page)]] if sent else []
        before = len(host.requests)
        done = session.command({**prepare, "pages": pages})
        assert done["writes"] == ([[PAYLOAD + 8, "00"]] if accepted_before else [])
        fetched = {"host": "read", "address": PAYLOAD, "length": 0x1000}
        assert (fetched in host.requests[before:]) is not sent


def test_unreadable_host_memory_is_a_page_fault():
    session = booted()
    device, _ = callbacks(session)
    done = session.command(
        {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, 0x20000]}
    )
    assert done["crash"]["code"] == 0x50


def test_stack_low_water_mark_and_overflow():
    session = booted()
    stack = session.command({"op": "report"})["stack"]
    entry = next(item for item in stack if item["symbol"] == "FxDriverEntry")
    assert entry["calls"] == 1
    assert 1024 < entry["deepest_bytes"] < 24576
    # A shallow command after the deep boot gets its own figure: the paint is renewed
    # wherever the boot wrote (ppm_image_readmsr pushes nothing: its return address only).
    address = readmsr_address(session)
    session.command({"op": "call", "address": address, "args": [0xE7]})
    stack = session.command({"op": "report"})["stack"]
    assert next(item for item in stack if item["entry"] == address)["deepest_bytes"] == 8
    small = Session(stack_bytes=4096)
    if entry["deepest_bytes"] < 4096:
        pytest.skip("the boot path fits in 4 KiB: no overflow to provoke")
    crash = small.boot()["crash"]
    assert crash["code"] == 0x7F and crash["parameters"][0] == 8


def test_an_instruction_count_does_not_follow_which_pages_were_fetched():
    """Under the verifier's count, PREPARE_DEVICE costs the same whether ppm-sim sent the
    payload's page or the image's first touch fetched it (the touching instruction stops,
    the page comes, and it runs again: counted once)."""
    session = Session(verifier={})
    assert session.boot() == {"status": 0}
    device, _ = callbacks(session)
    counts = {}
    for sent in (True, False):
        page = prepare_device_page("\\_SB.PCI0")
        session.host.memory[PAYLOAD] = page
        call = {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
        if sent:
            call["pages"] = [[PAYLOAD, bytes(page)]]
        before = len(session.host.requests)
        done = session.command(call)
        fetches = [
            request
            for request in session.host.requests[before:]
            if request.get("host") == "read" and request["address"] == PAYLOAD
        ]
        assert len(fetches) == (0 if sent else 1)
        counts[sent] = done["instructions"]
    assert counts[True] == counts[False] > 0


def test_kmdf_report_names_the_indices():
    session = booted()
    report = session.command({"op": "report"})
    assert report["kmdf_function_count"] == KMDF_MAX_FUNCTIONS
    assert {"index": 116, "name": "WdfDriverCreate", "calls": 1} in report["kmdf"]
    functions = report["functions"]
    assert 0 < len(functions["executed"]) < functions["total"]
    assert session.loaded["entry"] in functions["executed"]
    # ppm_image_readmsr starts with its RDMSR (a site hook, not a coverage hook).
    assert readmsr_address(session) in functions["executed"]


def test_untranslated_kmdf_index_is_a_crash():
    session = booted()
    for index, name in ((315, "WdfSpinLockCreate"), (5, "KMDF 1.31 function 5")):
        stub = KMDF_STUBS + index  # the table's entry: one 1-byte `ret` stub per index
        crash = session.command({"op": "call", "address": stub, "args": []})["crash"]
        assert crash["code"] == 0x1E
        assert f"index {index} ({name})" in crash["what"]


def test_hang_limit_ends_a_hang(tmp_path):
    plain = booted()
    # A `jmp $` in the image's int3 padding after ppm_image_readmsr's `ret`.
    loop = readmsr_address(plain) + 0x4A
    rva = loop - plain.loaded["image_base"]
    image = patched_image(tmp_path, "x64", (rva, b"\xcc\xcc", b"\xeb\xfe"))
    session = Session(image=image, hang_ms=300)
    assert session.boot() == {"status": 0}
    start = time.monotonic()
    crash = session.command({"op": "call", "address": loop, "args": []})["crash"]
    assert crash["code"] == 0 and "hang" in crash["what"]
    assert crash["what"] == "hang: the command ran longer than 0.3 s"
    assert crash["parameters"][0] == 300
    assert crash["address"] == loop
    assert time.monotonic() - start < 3
    # The next command runs normally (the watchdog was disarmed).
    done = session.command({"op": "call", "address": readmsr_address(session), "args": [0xE7]})
    assert done["rax"] == session.host.msrs[0xE7]


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "abc", "3600001", "٣"])
def test_a_bad_hang_limit_is_refused(value):
    """PPM_RUNNER_HANG_MS: whole milliseconds, 1 to an hour; anything else stops the runner at
    its start with one line, exit 2."""
    import os
    import subprocess

    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "image-runner.sh")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PPM_RUNNER_HANG_MS": value},
        check=False,
    )
    assert result.returncode == 2
    assert "PPM_RUNNER_HANG_MS must be a whole number of milliseconds" in result.stderr
    assert result.stderr.count("\n") == 1


def test_cli_sti_reported_only_on_change():
    session = booted()
    changes = session.host.interrupts
    assert changes, "the boot path never disabled interrupts"
    assert changes[0] is False
    assert all(a != b for a, b in zip(changes, changes[1:], strict=False))


def test_nested_call_while_waiting_for_a_host_answer():
    host = FakeHost()
    session = booted(host)
    device, _ = callbacks(session)
    host.memory[PAYLOAD] = prepare_device_page("\\_SB.PR00")
    nested = {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
    host.inject.append(nested)
    host.inject_on = "rdmsr"
    address = readmsr_address(session)
    done = session.command({"op": "call", "address": address, "args": [0xE7]})
    assert done["rax"] == host.msrs[0xE7]
    finals = session.channel.finals
    assert finals and finals[0]["done"]["writes"] == [[PAYLOAD + 8, "01"]]
    # The interrupted call's stack figure includes the nested call's, which ran below it.
    stack = {item["entry"]: item for item in session.command({"op": "report"})["stack"]}
    assert stack[address]["deepest_bytes"] > stack[device]["deepest_bytes"] > 0


def test_a_call_nested_in_a_nested_call_restores_each_level():
    """An interrupt inside a nested call: each interrupted call resumes with its own registers
    (one saved context per nesting level), twice over to reuse both levels' contexts. Each
    returns its own MSR's value, and returns at all: `ret` takes the return address from the
    stack pointer, so a call resumed on the nested call's stack would return elsewhere."""
    host = FakeHost(msrs={0xE7: 0x1111, 0xE8: 0x2222, 0x10: 0x3333})
    session = booted(host)
    address = readmsr_address(session)
    for _ in range(2):
        host.inject_on = "rdmsr"
        host.inject.append({"op": "call", "address": address, "args": [0xE8]})
        host.later.append(("rdmsr", [{"op": "call", "address": address, "args": [0x10]}]))
        finals = len(session.channel.finals)
        done = session.command({"op": "call", "address": address, "args": [0xE7]})
        assert done["rax"] == 0x1111
        nested = [final["done"]["rax"] for final in session.channel.finals[finals:]]
        assert nested == [0x3333, 0x2222]  # the innermost ends first
        assert not host.later and not host.inject


@pytest.mark.parametrize("resume_pages", [True, False])
def test_nested_calls_at_one_window_share_their_page(resume_pages):
    """ppm-sim delivers several notifications at one interrupt window, each with the same
    payload page: the page is made readable for the first and stays so while the next ones
    resend it (Unicorn rebuilds its memory map on every protection change). The answer that
    resumes the interrupted call carries it afresh: it stays readable, the interrupted call's
    own, until a call that does not carry it starts. Without it, it is PROT_NONE when the
    interrupted call resumes, so a touch fetches it again."""
    host = FakeHost()
    session = booted(host)
    session.channel.resume_pages = resume_pages
    device, _ = callbacks(session)
    page = prepare_device_page("\\_SB.PR00")
    host.memory[PAYLOAD] = page
    nested = {
        "op": "call",
        "address": device,
        "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD],
        "pages": [[PAYLOAD, bytes(page)]],
    }
    session.command(nested)  # the page is mapped once, and stale after the call
    before = session.command({"op": "report"})["page_protections"]
    host.inject.extend([nested, nested, nested])
    host.inject_on = "rdmsr"
    read_msr = {"op": "call", "address": readmsr_address(session), "args": [0xE7]}
    done = session.command(read_msr)
    assert done["rax"] == host.msrs[0xE7]
    assert done["writes"] == []
    assert not host.inject, "the nested calls were made"
    assert [final["done"]["writes"] for final in session.channel.finals[-3:]] == [
        [[PAYLOAD + 8, "01"]]
    ] * 3
    # PROT_NONE as the interrupted call starts without it, readable for the first nested
    # call; then nothing until the interrupted call resumes (PROT_NONE unless it came along).
    changes = session.command({"op": "report"})["page_protections"] - before
    assert changes == (2 if resume_pages else 3)
    session.command(read_msr)  # a call without the page: PROT_NONE after it, so a touch
    reads = len([r for r in host.requests if r["host"] == "read"])
    call = {"op": "call", "address": device, "args": [PEP_DPM_PREPARE_DEVICE, PAYLOAD]}
    assert session.command(call)["writes"] == [[PAYLOAD + 8, "01"]]
    assert len([r for r in host.requests if r["host"] == "read"]) == reads + 1  # fetches it


def test_a_nested_call_takes_the_interrupted_calls_page_from_its_own_pages():
    """ppm-sim sends the interrupted call's pages along with a nested call: the runner takes
    them afresh from there, without reading them again, and the interrupted call still
    completes with its own writes."""
    session = booted(FakeHost(advancing=True))
    read = ready_to_read(session)
    device, _ = callbacks(session)
    host = session.host
    host.memory[PAYLOAD] = bytearray(0x1000)
    page = [[PAYLOAD, bytes(host.memory[PAYLOAD])]]
    read = {**read, "pages": page}
    session.command(read)  # the first read of a relative counter: 0, no write
    unknown_dpm = 0x7FFF  # a DPM notification the PEP does not handle: it touches nothing
    host.inject.append({"op": "call", "address": device, "args": [unknown_dpm, 0], "pages": page})
    host.inject_on = "rdmsr"
    before = len(host.requests)
    done = session.command(read)
    assert not host.inject, "the nested call was made"
    assert done["rax"] & 0xFF == 1
    assert [r for r in host.requests[before:] if r["host"] == "read"] == []
    assert any(address == PAYLOAD + 8 for address, _ in done["writes"]), done["writes"]


def test_line_protocol_over_stdio():
    """The runner as ppm-sim starts it: scripts/image-runner.sh, JSON lines."""
    host = FakeHost()
    runner = RunnerProcess(host)
    process, command = runner.process, runner.command

    try:
        load = {"op": "load", "image": str(IMAGE), "map": str(MAP), "stack_bytes": 24576}
        assert "image_base" in command(load)["done"]
        assert command({"op": "driver_entry", "registry_path": REGISTRY_PATH}) == {
            "done": {"status": 0}
        }
        device = int.from_bytes(bytes.fromhex(host.registered["information"])[8:16], "little")
        host.memory[PAYLOAD] = prepare_device_page("\\_SB.PR00")
        call = {"op": "call", "address": device, "args": [1, PAYLOAD], "interrupts": True}
        start = time.perf_counter()
        rounds = 200
        for _ in range(rounds):
            assert command(call)["done"]["writes"] == [[PAYLOAD + 8, "01"]]
        per_call = (time.perf_counter() - start) / rounds
        print(f"PREPARE_DEVICE round trip over stdio: {per_call * 1e6:.0f} us")
        assert command({"op": "bogus"}) == {"error": "unknown command 'bogus'"}
        assert process.wait(timeout=10) == 2
    finally:
        runner.kill()


def symbol_address(session: Session, name: str) -> int:
    return session.symbol_address(name)


def test_kebugcheckex_is_a_crash_with_its_arguments():
    # The import thunk, called with five arguments: the fifth travels on the stack.
    session = booted()
    thunk = symbol_address(session, "KeBugCheckEx")
    done = session.command({"op": "call", "address": thunk, "args": [0xDEAD, 1, 2, 3, 4]})
    crash = done["crash"]
    assert crash["code"] == 0xDEAD
    assert crash["parameters"] == [1, 2, 3, 4]


def test_device_add_and_unload():
    session = booted()
    done = session.command({"op": "device_add"})
    assert done == {"status": 0}
    wdf = [r for r in session.host.requests if r["host"] == "wdf"]
    functions = [r["function"] for r in wdf]
    assert "WdfDeviceCreate" in functions
    stop_remove = next(r for r in wdf if r["function"] == "WdfDeviceSetStaticStopRemove")
    assert stop_remove["stoppable"] is False
    state = next(r for r in wdf if r["function"] == "WdfDeviceSetDeviceState")["state"]
    assert state["Size"] == 28 and state["NotDisableable"] == 1 and state["Disabled"] == 2
    # A registered PEP cannot be unloaded: src/driver.rs stops the system (DRIVER_VIOLATION).
    crash = session.command({"op": "unload"})["crash"]
    assert crash["code"] == 0x121
    assert "evt_driver_unload" in crash["symbol"]


def test_unload_of_an_unregistered_driver():
    host = FakeHost(registry={"SkipRegistration": (4, (1).to_bytes(4, "little"))})
    session = booted(host)
    assert host.registered is None
    assert session.command({"op": "unload"}) == {"called": True}
    stack = {item["symbol"] for item in session.command({"op": "report"})["stack"]}
    assert "stub_driver_unload" in stack


def import_thunk(name: str) -> int:
    """The RVA of the x64 image's import thunk of `name`: the `jmp [slot]` its callers call."""
    import struct

    import pefile

    pe = pefile.PE(str(IMAGE), fast_load=True)
    pe.parse_data_directories([pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]])
    base = pe.OPTIONAL_HEADER.ImageBase
    (slot,) = [
        imported.address - base
        for module in pe.DIRECTORY_ENTRY_IMPORT
        for imported in module.imports
        if imported.name == name.encode()
    ]
    (text,) = [section for section in pe.sections if section.Name.rstrip(b"\0") == b".text"]
    code = text.get_data()
    (thunk,) = [
        text.VirtualAddress + at
        for at in range(len(code) - 6)
        if code[at : at + 2] == b"\xff\x25"
        and text.VirtualAddress + at + 6 + struct.unpack_from("<i", code, at + 2)[0] == slot
    ]
    return thunk


def test_virtual_unwind_walks_every_frame_back_to_the_entry_point(tmp_path):
    """The unwind codes replayed on the real image: an `int3` in place of the import thunk
    of KeStallExecutionProcessor (deep in calibration) is dispatched frame by frame, each
    function's unwind codes undone, back to FxDriverEntry's caller: no `__except` on the way
    takes it, so it is bugcheck 0x1E. A frame unwound wrongly ends the walk elsewhere (outside
    the image, or past 256 frames), with another reason."""
    thunk = import_thunk("KeStallExecutionProcessor")
    image = patched_image(tmp_path, "x64", (thunk, b"\xff\x25", b"\xcc\x90"))
    session = Session(image=image)
    crash = session.boot()["crash"]
    address = session.loaded["image_base"] + thunk
    assert crash["code"] == 0x1E
    assert crash["parameters"][:2] == [0x80000003, address]  # STATUS_BREAKPOINT at the int3
    assert crash["what"] == "exception 0x80000003 not handled: no __except handler in any frame"
    (dispatched,) = session.command({"op": "report"})["seh"]
    assert (dispatched["address"], dispatched["handled"]) == (address, False)
    # The int3 ran in place of the first stall.
    assert "stall" not in [request["host"] for request in session.host.requests]


def apply(page: bytearray, writes: list) -> None:
    for address, data in writes:
        raw = bytes.fromhex(data)
        page[address - PAYLOAD : address - PAYLOAD + len(raw)] = raw


def one_counter_announced(session: Session, processor: int, handle: int) -> None:
    """QUERY_CAPABILITIES (FeedbackCounterCount 1) and QUERY_FEEDBACK_COUNTERS (the counter
    affinitized and relative), as PoFx sends them before the first FEEDBACK_READ."""
    host = session.host
    host.memory[PAYLOAD] = bytearray(0x1000)
    done = session.command({"op": "call", "address": processor, "args": [handle, 1, PAYLOAD]})
    assert done["rax"] & 0xFF == 1
    capabilities = bytearray(0x1000)
    apply(capabilities, done["writes"])
    assert int.from_bytes(capabilities[0:4], "little") == 1  # FeedbackCounterCount
    query = bytearray(0x1000)
    query[0:4] = (1).to_bytes(4, "little")
    host.memory[PAYLOAD] = query
    done = session.command({"op": "call", "address": processor, "args": [handle, 9, PAYLOAD]})
    apply(query, done["writes"])
    assert int.from_bytes(query[4:8], "little") & 0x7 == 0x3  # affinitized, relative


def ready_to_read(session: Session) -> dict[str, Any]:
    """\\_SB.PR00 registered and one counter announced: its FEEDBACK_READ of counter 0 into
    PAYLOAD, as a `call` command."""
    processor, handle = registered_processor(session)
    assert handle
    one_counter_announced(session, processor, handle)
    return {"op": "call", "address": processor, "args": [handle, 0xA, PAYLOAD]}


def registered_processor(session: Session) -> tuple[int, int]:
    """PREPARE_DEVICE and REGISTER_DEVICE of \\_SB.PR00: the processor callback and the
    PEPHANDLE the image returned."""
    device, processor = callbacks(session)
    session.host.memory[PAYLOAD] = prepare_device_page("\\_SB.PR00")
    assert session.command({"op": "call", "address": device, "args": [1, PAYLOAD]})["rax"] & 0xFF
    # PEP_REGISTER_DEVICE_V2: DeviceId +0, KernelHandle +8, Register +16, DeviceHandle +24
    # out, DeviceAccepted +32 out; the id's UNICODE_STRING at +0x100.
    page = bytearray(0x1000)
    text = "\\_SB.PR00".encode("utf-16-le")
    page[0:8] = (PAYLOAD + 0x100).to_bytes(8, "little")
    page[8:16] = (0x5555).to_bytes(8, "little")
    page[0x100:0x102] = page[0x102:0x104] = len(text).to_bytes(2, "little")
    page[0x108:0x110] = (PAYLOAD + 0x120).to_bytes(8, "little")
    page[0x120 : 0x120 + len(text)] = text
    session.host.memory[PAYLOAD] = page
    done = session.command({"op": "call", "address": device, "args": [3, PAYLOAD]})
    assert done["rax"] & 0xFF == 1
    apply(page, done["writes"])
    assert int.from_bytes(page[32:36], "little") == 2  # PepDeviceAccepted
    return processor, int.from_bytes(page[24:32], "little")


def test_feedback_read_the_hot_path():
    """QUERY_CAPABILITIES, QUERY_FEEDBACK_COUNTERS and FEEDBACK_READ: the counter reads of the
    image's own RDMSRs, answered by the host, in the payload's NominalCount/ActualCount."""
    session = booted(FakeHost(advancing=True))
    host = session.host
    read = ready_to_read(session)
    counts = []
    for _ in range(3):
        host.memory[PAYLOAD] = bytearray(0x1000)
        done = session.command({**read, "interrupts": False})
        assert done["rax"] & 0xFF == 1
        page = bytearray(0x1000)
        apply(page, done["writes"])
        counts.append((int.from_bytes(page[8:16], "little"), int.from_bytes(page[16:24], "little")))
    assert counts[1][0] > counts[0][0] and counts[2][0] > counts[1][0]
    assert all(actual < nominal for nominal, actual in counts[1:])
    msrs = [r["msr"] for r in host.requests[-8:] if r["host"] == "rdmsr"]
    assert sorted(msrs[-2:]) == [0xE7, 0xE8]


def test_etw_event_bytes_once_a_session_enables_the_provider():
    """TraceLogging writes only when enabled: the test plays the ETW session, calling the
    provider's EnableCallback (IsEnabled 1, level 5, every keyword), then PREPARE_DEVICE's
    event arrives as EtwWriteTransfer's data descriptors' bytes."""
    session = booted()
    (registered,) = [r for r in session.host.requests if r["host"] == "etw_register"]
    handle, callback, context = 0x55, registered["callback"], registered["context"]
    enable = [0, 1, 5, 0xFFFFFFFFFFFFFFFF, 0, 0, context]  # 5th..7th arguments on the stack
    assert "crash" not in session.command({"op": "call", "address": callback, "args": enable})
    device, _ = callbacks(session)
    session.host.memory[PAYLOAD] = prepare_device_page("\\_SB.PR00")
    before = len(session.host.requests)
    session.command({"op": "call", "address": device, "args": [1, PAYLOAD]})
    (event,) = [r for r in session.host.requests[before:] if r["host"] == "etw_write"]
    assert event["handle"] == handle
    assert len(bytes.fromhex(event["descriptor"])) == 16
    data = [bytes.fromhex(piece) for piece in event["data"]]
    assert any(b"DevicePrepared" in piece for piece in data)
    assert "\\_SB.PR00".encode("utf-16-le") in data


ALL_KEYWORDS = 0xFFFF_FFFF_FFFF_FFFF
KEYWORD_PNP = 0x2  # src/trace.rs: the DriverEntry events are keyword 0x1


def boot_with_session(level: int, keywords: int) -> tuple[Session, list[dict]]:
    """Boots with `etw_register` answering that a session enables the provider; returns the
    session and the etw_write requests DriverEntry made."""
    host = FakeHost()
    host.etw_enable = {"level": level, "keywords": keywords}
    session = booted(host)
    return session, [r for r in host.requests if r["host"] == "etw_write"]


def event_named(write: dict, name: bytes) -> bool:
    return any(name in bytes.fromhex(piece) for piece in write["data"])


def test_a_session_enabled_at_registration_receives_driver_entrys_events():
    """ppm-sim answers etw_register with `enable` (a boot trace): the runner calls the
    provider's EnableCallback inside EtwRegister, so DriverEntry's own events reach the host."""
    session, writes = boot_with_session(5, ALL_KEYWORDS)
    assert writes, "no etw_write: the EnableCallback did not enable the provider"
    assert all(write["handle"] == 0x55 for write in writes)
    (result,) = [w for w in writes if event_named(w, b"DriverEntryResult")]
    assert b"\0\0\0\0" in [bytes.fromhex(piece) for piece in result["data"]]  # Status 0
    requests = [r["host"] for r in session.host.requests]
    assert requests.index("etw_register") < requests.index("etw_write")
    (registered,) = [r for r in session.host.requests if r["host"] == "etw_register"]
    stack = {item["entry"]: item for item in session.command({"op": "report"})["stack"]}
    assert stack[registered["callback"]]["calls"] == 1, "the callback ran once, emulated"


def test_without_a_session_driver_entry_writes_no_event():
    host = FakeHost()
    booted(host)
    assert "etw_write" not in [r["host"] for r in host.requests]


@pytest.mark.parametrize(
    ("level", "keywords"), [(5, KEYWORD_PNP), (2, ALL_KEYWORDS)], ids=["pnp-only", "errors-only"]
)
def test_the_sessions_level_and_keywords_reach_the_callback(level, keywords):
    """A session for PnP events only, or for errors only: none of DriverEntry's informational
    events (keyword 0x1, level 4) is written."""
    _, writes = boot_with_session(level, keywords)
    assert not [w for w in writes if event_named(w, b"DriverEntry")]


def test_wrmsr_reaches_the_host_and_its_fault_is_caught():
    session = booted(FakeHost(msrs={0x199: 0}))
    probe = symbol_address(session, "ppm_msr_probe_write")
    done = session.command({"op": "call", "address": probe, "args": [0x199, 0x1234_0000_5678]})
    assert done["rax"] & 0xFF == 1
    assert session.host.msrs[0x199] == 0x1234_0000_5678
    done = session.command({"op": "call", "address": probe, "args": [0x774, 1]})
    assert done["rax"] & 0xFF == 0
    last = session.command({"op": "report"})["seh"][-1]
    assert last["handled"] and last["symbol"].startswith("__writemsr")


def test_a_function_table_larger_than_kmdf_1_31_is_refused(tmp_path):
    import re

    text = MAP.read_text()
    preferred = int(re.search(r"Preferred load address is ([0-9a-fA-F]+)", text).group(1), 16)
    bind_info = int(re.search(r"\sbind_info\s+([0-9a-f]{16})", text).group(1), 16) - preferred
    field = bind_info + 28  # WDF_BIND_INFO.FuncCount, an RVA
    count = KMDF_MAX_FUNCTIONS.to_bytes(4, "little")
    larger = (KMDF_MAX_FUNCTIONS + 1).to_bytes(4, "little")
    session = Session(image=patched_image(tmp_path, "x64", (field, count, larger)))
    assert session.boot() == {"status": 0xC000000D}  # STATUS_INVALID_PARAMETER, from the bind
    assert session.host.registered is None
    assert session.command({"op": "report"})["kmdf"] == []


def test_pofx_services_are_host_requests():
    """register_plugin's `functions` offsets become stubs in the image's
    PEP_KERNEL_INFORMATION; a call through one is a pofx_service request."""
    from runner_layout import POFX_STUBS

    session = booted()
    done = session.command({"op": "call", "address": POFX_STUBS + 16, "args": [0x1234, 7]})
    assert done["rax"] == 0
    request = session.host.requests[-1]
    assert request["host"] == "pofx_service" and request["offset"] == 16
    assert request["args"][:2] == [0x1234, 7]


def test_time_waiting_for_the_host_is_not_a_hang():
    host = FakeHost()
    session = Session(host, hang_ms=300)
    answer = host.answer
    slept = []

    def slow(request):
        if request["host"] == "stall" and not slept:
            slept.append(True)
            time.sleep(0.6)
        return answer(request)

    host.answer = slow
    assert session.boot() == {"status": 0}
    assert slept


def test_divide_error_without_a_handler_is_bugcheck_0x1e(tmp_path):
    plain = booted()
    cave = readmsr_address(plain) + 0x4A  # ppm_image_readmsr's int3 padding
    rva = cave - plain.loaded["image_base"]
    # xor ecx, ecx; div ecx
    image = patched_image(tmp_path, "x64", (rva, b"\xcc" * 4, b"\x31\xc9\xf7\xf1"))
    session = Session(image=image)
    assert session.boot() == {"status": 0}
    crash = session.command({"op": "call", "address": cave, "args": []})["crash"]
    assert crash["code"] == 0x1E
    assert crash["parameters"][:2] == [0xC0000094, cave + 2]
    assert session.command({"op": "report"})["seh"][-1]["handled"] is False


def test_a_call_naming_its_processor_defers_masking_and_answers_the_processor():
    """A call that carries its processor and its payload's page (no interrupt can arrive):
    FEEDBACK_READ asks for neither the page nor the processor; the processor request and its
    CLI and STI reach the host, in order, with the first counter request and with the `done`."""
    session = booted(FakeHost(advancing=True))
    read = ready_to_read(session)
    host, channel = session.host, session.channel
    counts = []
    for _ in range(2):
        host.memory[PAYLOAD] = bytearray(0x1000)
        before, carried = len(host.requests), len(channel.carried)
        asked_before = len(channel.asked)
        pages = [[PAYLOAD, bytes(host.memory[PAYLOAD])]]
        done = session.command({**read, "processor": PROCESSOR_0, "pages": pages})
        assert done["rax"] & 0xFF == 1
        asked = channel.asked[asked_before:]
        assert "read" not in asked and "current_processor" not in asked, asked
        # The processor answered by the runner still reaches the host, deferred, in order.
        served = [r["host"] for r in host.requests[before:]]
        assert served.index("current_processor") < served.index("interrupts"), served
        messages = channel.carried[carried:]
        # The masking travels with the first request after CLI and with the done after STI.
        masking = [(message, deferred) for message, deferred in messages if deferred]
        assert masking == [(messages[0][0], [False]), ("done", [True])], messages
        assert messages[0][0] in ("rdtsc", "rdmsr"), messages
        assert host.interrupts[-2:] == [False, True]
        page = bytearray(0x1000)
        apply(page, done["writes"])
        counts.append(int.from_bytes(page[8:16], "little"))
    assert counts[1] > counts[0]


@pytest.mark.parametrize("windows_take_time", [True, False])
def test_a_call_with_its_timestamps_answers_the_time_stamp_reads_itself(windows_take_time):
    """A call that carries its processor and the time-stamp counter ahead (one value for each
    window where windows take time, as a nested call's do; one value where they take none):
    FEEDBACK_READ's two RDTSC are no requests of their own; each travels, with the value used,
    in `deferred` on the next message (the host makes the read there and checks it:
    FakeChannel.send), and only the counter reads are asked."""
    session = booted(FakeHost(advancing=True))
    read = ready_to_read(session)
    host, channel = session.host, session.channel
    channel.timestamp_step = 1000
    channel.windows_take_time = windows_take_time
    counts = []
    for _ in range(2):
        host.memory[PAYLOAD] = bytearray(0x1000)
        asked, reads = len(channel.asked), len(channel.deferred_reads)
        pages = [[PAYLOAD, bytes(host.memory[PAYLOAD])]]
        timestamps = channel.timestamps()
        done = session.command(
            {**read, "processor": PROCESSOR_0, "pages": pages, "timestamps": timestamps}
        )
        assert done["rax"] & 0xFF == 1
        assert channel.asked[asked:] == ["rdmsr", "rdmsr"]
        deferred = channel.deferred_reads[reads:]
        assert [r["host"] for r in deferred] == ["rdtsc", "rdtsc"]
        # The third window, after the processor's and the masking's; or the one value.
        assert deferred[0]["value"] == timestamps[2 if windows_take_time else 0]
        assert deferred[1]["value"] > deferred[0]["value"]  # from the last counter read's answer
        page = bytearray(0x1000)
        apply(page, done["writes"])
        counts.append(int.from_bytes(page[8:16], "little"))
    assert counts[1] > counts[0]


def test_a_read_past_the_timestamps_sent_is_asked():
    """A time-stamp read beyond the windows ppm-sim sent counters for is a request."""
    session = booted(FakeHost(advancing=True))
    read = ready_to_read(session)
    host, channel = session.host, session.channel
    channel.timestamp_step = 1000
    host.memory[PAYLOAD] = bytearray(0x1000)
    asked = len(channel.asked)
    pages = [[PAYLOAD, bytes(host.memory[PAYLOAD])]]
    two = channel.timestamps()[:2]  # the read is the third window: no counter for it
    done = session.command({**read, "processor": PROCESSOR_0, "pages": pages, "timestamps": two})
    assert done["rax"] & 0xFF == 1
    assert channel.asked[asked:] == ["rdtsc", "rdmsr", "rdmsr"]


def test_malformed_timestamps_are_refused():
    """`timestamps` only with `processor`, a list of 1 to 4 counters, each checked when a read
    uses it. Each refusal on a session of its own: a runner that refuses a message exits."""

    def refused(message: dict[str, Any]) -> None:
        session = booted(FakeHost(advancing=True))
        _, processor = callbacks(session)
        call = {"op": "call", "address": processor, "args": [0], **message}
        if "pages" in message:
            call = {**ready_to_read(session), **message}
        with pytest.raises(ProtocolError, match="timestamps"):
            session.command(call)

    refused({"timestamps": [5]})
    for timestamps in ([], [5] * 5, 5):
        refused({"processor": PROCESSOR_0, "timestamps": timestamps})
    refused(
        {
            "pages": [[PAYLOAD, bytes(0x1000)]],
            "processor": PROCESSOR_0,
            "timestamps": [-1] * 4,
        }
    )


def test_a_call_without_its_processor_asks_for_each():
    """Without `processor` (ppm-sim may inject a notification at any of them), every
    interrupt change and the current processor are host requests of their own."""
    session = booted(FakeHost(advancing=True))
    read = ready_to_read(session)
    host = session.host
    host.memory[PAYLOAD] = bytearray(0x1000)
    before = len(host.requests)
    session.command(read)
    asked = [r["host"] for r in host.requests[before:]]
    assert asked.count("interrupts") == 2 and "current_processor" in asked and "read" in asked
    assert not any(deferred for _, deferred in session.channel.carried)


@pytest.mark.parametrize(
    "pages",
    [
        [[PAYLOAD + 8, bytes(0x1000)]],  # not a page boundary
        [[0x0000_8000_0000_0000, bytes(0x1000)]],  # above the user half
    ],
)
def test_a_call_with_pages_outside_the_user_half_is_refused(pages):
    session = booted()
    device, _ = callbacks(session)
    with pytest.raises(ProtocolError):
        session.command({"op": "call", "address": device, "args": [1, PAYLOAD], "pages": pages})


def test_a_nested_bugcheck_ends_the_interrupted_call_with_it(tmp_path):
    """A notification nested in a call bugchecks (#UD): the machine is down, so the call it
    interrupted ends with the same bugcheck when its request is answered, and makes no other
    request (it does not run on with its hooks skipped, as Unicorn would run it)."""
    plain = booted()
    address = readmsr_address(plain)
    cave = address + 0x4A  # ppm_image_readmsr's int3 padding
    rva = cave - plain.loaded["image_base"]
    host = FakeHost()
    session = Session(host, image=patched_image(tmp_path, "x64", (rva, b"\xcc" * 2, b"\x0f\x0b")))
    assert session.boot() == {"status": 0}  # ud2 at `cave`
    host.inject_on = "rdmsr"
    host.inject.append({"op": "call", "address": cave, "args": []})
    asked = len(session.channel.asked)
    finals = len(session.channel.finals)
    outer = session.command({"op": "call", "address": address, "args": [0xE7]})
    (nested,) = session.channel.finals[finals:]
    assert nested["done"]["crash"]["what"] == "invalid instruction (#UD)"
    assert nested["done"]["crash"]["address"] == cave
    assert outer == nested["done"]
    assert session.channel.asked[asked:] == ["rdmsr"]
