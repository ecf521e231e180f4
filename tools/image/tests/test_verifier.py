"""Driver Verifier's rules (verifier.py, ddi_rules.py) without an image."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ppm_image import ddi_rules, verifier
from ppm_image.layout import PAGE, POOL, Crash
from ppm_image.protocol import ProtocolError

IMPORTS = Path(__file__).resolve().parents[1] / "imports"


def make(options: dict | None = None, imports: list[str] | None = None) -> verifier.Verifier:
    names = imports if imports is not None else ["ExAllocatePool2", "ExFreePool"]
    return verifier.Verifier(options or {}, [("ntoskrnl.exe", name, 0) for name in names])


def no_arguments(_: int) -> int:
    return 0


def test_every_documented_import_has_a_rule_citing_its_page():
    names = []
    for definition in IMPORTS.glob("*.def"):
        for line in definition.read_text().splitlines():
            match = re.match(r"^\s+(\w+)\s*;", line)
            if match:
                names.append(match.group(1))
    assert len(names) > 20
    missing = [name for name in names if name not in ddi_rules.RULES]
    assert missing == []
    for name, rule in ddi_rules.RULES.items():
        assert rule.doc.startswith("https://"), name
        assert rule.failure in (None, "status", "null"), name


def test_a_call_above_its_irql_is_bug_check_0xc4_and_recorded():
    rules = make()
    assert rules.check_call("ExAllocatePool2", 0x40, ddi_rules.DISPATCH_LEVEL, no_arguments) is None
    with pytest.raises(Crash) as raised:
        rules.check_call("ExAllocatePool2", 0x40, ddi_rules.HIGH_LEVEL, no_arguments, 0x1040)
    assert raised.value.code == 0xC4
    assert raised.value.parameters[0] == 0x02  # a nonpaged allocation above DISPATCH_LEVEL
    assert raised.value.address == 0x1040
    assert rules.irql_violations[0]["function"] == "ExAllocatePool2"


def test_paged_pool_is_allowed_up_to_apc_level_only():
    rules = make()
    paged = lambda index: ddi_rules.POOL_FLAG_PAGED if index == 0 else 0  # noqa: E731
    assert rules.check_call("ExAllocatePool2", 0, ddi_rules.APC_LEVEL, paged) is None
    with pytest.raises(Crash) as raised:
        rules.check_call("ExAllocatePool2", 0, ddi_rules.DISPATCH_LEVEL, paged)
    assert raised.value.parameters[0] == 0x01  # a paged allocation above APC_LEVEL
    block = rules.place(8, POOL)
    block.paged = True
    rules.allocated(block)
    freeing = lambda index: block.address if index == 0 else 0  # noqa: E731
    assert rules.check_call("ExFreePool", 0, ddi_rules.APC_LEVEL, freeing) is None
    with pytest.raises(Crash):
        rules.check_call("ExFreePool", 0, ddi_rules.DISPATCH_LEVEL, freeing)


def test_an_import_without_a_rule_is_unruled():
    rules = make(imports=["ExFreePool", "ZwMadeUp"])
    assert rules.unruled == ["ZwMadeUp"]
    assert rules.check_call("ZwMadeUp", 0, ddi_rules.HIGH_LEVEL, no_arguments) is None


def test_the_named_occurrence_of_a_site_fails_once():
    rules = make({"fail": {"function": "ExAllocatePool2", "site": 0x40, "occurrence": 2}})
    call = lambda site: rules.check_call("ExAllocatePool2", site, 0, no_arguments)  # noqa: E731
    assert call(0x40) is None
    assert call(0x80) is None  # another site
    assert call(0x40) == 0  # NULL: the second call there
    assert call(0x40) is None
    assert rules.injected["occurrence"] == 2
    status = make({"fail": {"function": "EtwRegister", "site": 1, "occurrence": 1}})
    assert status.check_call("EtwRegister", 1, 0, no_arguments) == 0xC000009A


def test_an_access_faults_only_at_its_site_register_and_phase():
    fault = {"access": "rdmsr", "register": 0xE8, "site": 0x10, "phase": "runtime"}
    rules = make({"fault": fault})
    assert not rules.access("rdmsr", 0xE8, 0x10)  # at boot
    rules.phase = "runtime"
    assert not rules.access("rdmsr", 0xE7, 0x10)
    assert rules.access("rdmsr", 0xE8, 0x10)
    assert not rules.access("rdmsr", 0xE8, 0x10)  # once
    sites = rules.report()["access_faults"]["sites"]
    assert {"access": "rdmsr", "register": 0xE8, "site": 0x10, "phase": "boot", "calls": 1} in sites


def test_special_pool_ends_a_block_at_its_page_end_and_classifies_faults():
    rules = make()
    block = rules.place(40, POOL)
    assert block.address == POOL + PAGE - 48 and block.pages == 1
    rules.allocated(block)
    beyond = rules.pool_fault(POOL + PAGE + 8, True, 0)
    assert beyond is not None and beyond.code == 0xD6
    slack = bytes([verifier.SLACK]) * (block.address - block.first_page)
    assert rules.free(block.address, 0, slack) is block
    freed = rules.pool_fault(block.address, False, 0)
    assert freed is not None and freed.code == 0xCC
    with pytest.raises(Crash) as raised:
        rules.free(block.address, 0, b"")
    assert raised.value.code == 0xC4 and raised.value.parameters[0] == 0x13  # double free


def test_an_overwritten_slack_is_found_at_free():
    rules = make()
    block = rules.place(24, POOL)
    rules.allocated(block)
    with pytest.raises(Crash) as raised:
        rules.free(block.address, 0, b"\x00" * (block.address - block.first_page))
    assert raised.value.code == 0xC1


def test_a_key_used_after_close_or_never_issued_is_a_wdf_violation():
    rules = make()
    rules.key_opened(7)
    rules.key_used("WdfRegistryQueryValue", 7)
    rules.key_used("WdfRegistryOpenKey", 0, optional=True)
    rules.key_closed(7)
    with pytest.raises(Crash) as raised:
        rules.key_used("WdfRegistryQueryValue", 7)
    assert raised.value.code == 0x10D and raised.value.parameters[0] == 0x5
    with pytest.raises(Crash):
        rules.key_closed(9)
    assert [entry["violation"] for entry in rules.handle_violations] == ["closed", "never issued"]


def test_the_test_switch_is_parsed_or_refused():
    assert verifier.test_switch("") == (False, {})
    assert verifier.test_switch("skip-frees") == (True, {})
    assert verifier.test_switch("max-irql=ExFreePool:0") == (False, {"ExFreePool": 0})
    for bad in ("skip", "max-irql=NoSuchRoutine:0", "max-irql=ExFreePool:high"):
        with pytest.raises(ProtocolError):
            verifier.test_switch(bad)


def test_a_faulted_read_is_followed_to_the_later_reads_of_its_handle():
    rules = make()
    rules.call_done("ppm:10", 5, False, True)
    rules.call_done("ppm:10", 6, True, False)  # another processor
    rules.call_done("ppm:1", 5, True, False)  # another notification
    rules.call_done("ppm:10", 5, True, False)
    assert rules.fault_watch == {
        "handle": 5,
        "faulted_read_handled": False,
        "later_reads": 1,
        "later_reads_handled": 1,
    }


def test_costs_are_reported_as_a_histogram():
    rules = make()
    for instructions in (200, 33, 200):
        rules.cost("ppm:10", instructions)
    assert rules.report()["instructions"] == {"ppm:10": [[33, 1], [200, 2]]}


def test_a_malformed_request_is_refused():
    with pytest.raises(ProtocolError):
        make({"fail": {"function": "ExFreePool", "site": 1, "occurrence": 0}})
    with pytest.raises(ProtocolError):
        make({"fault": {"access": "rdmsr", "register": 1, "site": 1, "phase": "later"}})


def test_dbgprintex_unicode_conversions_are_passive_only():
    from ppm_image import printf

    assert printf.unicode_conversions(b"%s %d %ws %wZ %S %lc %hs %C") == [
        "%ws",
        "%wZ",
        "%S",
        "%lc",
        "%C",
    ]
    rules = make(imports=["DbgPrintEx"])
    assert rules.check_call("DbgPrintEx", 0, ddi_rules.DIRQL_MAX, no_arguments) is None
    with pytest.raises(Crash):  # above DIRQL: interrupts disabled
        rules.check_call("DbgPrintEx", 0, ddi_rules.HIGH_LEVEL, no_arguments)
    with pytest.raises(Crash):
        rules.check_call("DbgPrintEx", 0, ddi_rules.APC_LEVEL, no_arguments, 0, "%ws")
    assert (
        rules.check_call("DbgPrintEx", 0, ddi_rules.PASSIVE_LEVEL, no_arguments, 0, "%ws") is None
    )
