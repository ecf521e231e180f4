"""Driver Verifier's rules, held to the image by the runner when ppm-sim loads it with
`verifier` (`ppm-sim ... --pep image --verifier`, docs/verifier.md):

- IRQL: every import and KMDF call is checked against ddi_rules.RULES at the IRQL of the call
  the kernel made (HIGH_LEVEL while the image has interrupts disabled); a call above its
  documented IRQL is bug check 0xC4, as DDI compliance checking makes it.
- Low resources: every call of a routine that can fail is counted by (routine, site: the
  return address into the image); one named (routine, site, occurrence) fails, as Verifier's
  systematic low resources simulation would make it.
- Access faults: every RDMSR/WRMSR (x64) and Activity Monitors MRS (ARM64) is counted by
  (access, register, site); one named site faults, at boot or in a notification.
- Special pool: each block ends at the end of its own pages with an unmapped page after it;
  a freed block's pages are unmapped; the slack before a block is checked at free. Double
  frees, frees of what was never allocated, KMDF registry keys and ETW handles used after
  close or never issued are bug checks.
- Cost: the image's own instructions per notification, exact (a code hook on the image)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from . import ddi_rules
from .ddi_rules import HIGH_LEVEL, POOL_FLAG_PAGED, RULES, STATUS_INSUFFICIENT_RESOURCES
from .layout import PAGE, POOL, POOL_LIMIT, Crash
from .protocol import ProtocolError, integer

DRIVER_VERIFIER_DETECTED_VIOLATION = 0xC4
IRQL_NOT_LESS_OR_EQUAL = 0x0A
SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION = 0xC1
DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL = 0xCC
DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION = 0xD6
INVALID_KERNEL_HANDLE = 0x93
WDF_VIOLATION = 0x10D
# Bug check 0xC4's Parameter 1 (the debugger's 0xC4 page): a free of an address no allocation
# returned, a double free, an invalid ETW registration handle passed to EtwUnregister.
VERIFIER_FREE_OF_UNALLOCATED = 0x10
VERIFIER_DOUBLE_FREE = 0x13
VERIFIER_INVALID_ETW_HANDLE = 0xDC
WDF_INVALID_HANDLE = 0x5  # WDF_VIOLATION's Parameter 1
SLACK = 0xB5  # the byte the special pool fills a block's leading slack with
ALIGNMENT = 16
MAX_OCCURRENCE = 1 << 20
# The Activity Monitors' system registers: op0 3, op1 3, CRn 13 (AMCR_EL0 .. AMEVTYPER1n_EL0).
AMU_OP1_CRN = (3, 13)
INJECTABLE_FAILURES = {"status": STATUS_INSUFFICIENT_RESOURCES, "null": 0}


# The self-test's switch (docs/verifier.md), an environment variable of the runner so that no
# production type carries it: `skip-frees` (ExFreePool frees nothing, as if the image skipped
# every free) or `max-irql=ROUTINE:IRQL` (ROUTINE's documented IRQL lowered, as if the image
# called it higher than it does).
TEST_SWITCH = "PPM_VERIFIER_TEST"


def test_switch(value: str) -> tuple[bool, dict[str, int]]:
    """(skip frees, lowered IRQLs) of the switch's value."""
    if not value:
        return False, {}
    if value == "skip-frees":
        return True, {}
    name, _, irql = value.removeprefix("max-irql=").partition(":")
    if value.startswith("max-irql=") and name in RULES and irql.isdigit():
        return False, {name: int(irql)}
    raise ProtocolError(
        f"{TEST_SWITCH}={value!r}: 'skip-frees' or 'max-irql=ROUTINE:IRQL' (ROUTINE in ddi_rules)"
    )


@dataclass
class Block:
    address: int
    size: int
    first_page: int
    pages: int
    paged: bool = False


def _spec(options: dict[str, Any], key: str, fields: tuple[str, ...]) -> dict[str, Any] | None:
    spec = options.get(key)
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ProtocolError(f"load: verifier.{key} must be an object")
    parsed: dict[str, Any] = {}
    for field in fields:
        if field in ("function", "phase", "access"):
            value = spec.get(field)
            if not isinstance(value, str):
                raise ProtocolError(f"load: verifier.{key}.{field} must be a string")
            parsed[field] = value
        else:
            parsed[field] = integer(spec, field)
    return parsed


class Verifier:
    """The rules' state over one run (one load)."""

    def __init__(self, options: dict[str, Any], imports: list[tuple[str, str, int]]):
        if not isinstance(options, dict):
            raise ProtocolError("load: 'verifier' must be an object")
        self.count_instructions = bool(options.get("count", True))
        self.fail = _spec(options, "fail", ("function", "site", "occurrence"))
        if self.fail is not None and not 1 <= self.fail["occurrence"] <= MAX_OCCURRENCE:
            raise ProtocolError(f"load: verifier.fail.occurrence: 1..={MAX_OCCURRENCE}")
        self.fault = _spec(options, "fault", ("access", "register", "site", "phase"))
        if self.fault is not None and self.fault["phase"] not in ("boot", "runtime"):
            raise ProtocolError("load: verifier.fault.phase: 'boot' or 'runtime'")
        self.skip_frees, lowered = test_switch(os.environ.get(TEST_SWITCH, ""))
        self.rules = {
            name: replace(rule, max_irql=lowered[name]) if name in lowered else rule
            for name, rule in RULES.items()
        }
        self.imports = sorted({name for _, name, _ in imports})
        self.unruled = sorted(name for name in self.imports if name not in self.rules)
        self.irql_violations: list[dict[str, Any]] = []
        self.fallible: dict[tuple[str, int], int] = {}
        self.accesses: dict[tuple[str, int, int, str], int] = {}
        self.injected: dict[str, Any] | None = None
        self.depth = 0  # notifications under way (a nested one runs inside another)
        self.injected_depth = 0  # the depth the injection happened at
        self.phase = "boot"
        self.blocks: dict[int, Block] = {}
        self.freed: list[Block] = []
        self.allocations = 0
        self.pool_violations: list[dict[str, Any]] = []
        self.keys: set[int] = set()
        self.closed_keys: set[int] = set()
        self.etw: set[int] = set()
        self.handle_violations: list[dict[str, Any]] = []
        self.costs: dict[str, dict[int, int]] = {}  # label -> instructions -> calls
        self.fault_watch: dict[str, Any] | None = None  # a faulted read and the next one
        self.pofx_calls = 0  # calls of the PoFx runtime services PoFx handed the image

    # ---- IRQL and low resources ---------------------------------------------------------

    def check_call(
        self,
        name: str,
        site: int,
        irql: int,
        argument: Any,
        address: int = 0,
        passive_only: str = "",
    ) -> int | None:
        """A call of `name` from `site` (an RVA; `address` where that is) at `irql`: raises
        the bug check of a rule it breaks; returns the failure to inject, or None to serve
        the call. `argument(n)` reads the call's arguments; `passive_only` names what in them
        the documentation allows only at PASSIVE_LEVEL (DbgPrintEx's Unicode conversions)."""
        rule = self.rules.get(name)
        if rule is None:
            if name not in self.unruled:
                self.unruled.append(name)
            return None
        limit = rule.max_irql
        what = f"{name} at {ddi_rules.irql_name(irql)}: allowed up to {ddi_rules.irql_name(limit)}"
        code = rule.verifier_code
        paged = False
        if name == "ExAllocatePool2":
            paged = bool(argument(0) & POOL_FLAG_PAGED)
            code = ddi_rules.VERIFIER_PAGED_ALLOCATION_IRQL if paged else code
        elif name == "ExFreePool":
            block = self.blocks.get(argument(0))
            paged = block is not None and block.paged
        if paged:
            limit = min(limit, ddi_rules.APC_LEVEL)
            what = f"{name} of paged pool at {ddi_rules.irql_name(irql)}: allowed up to APC_LEVEL"
        if passive_only:
            limit = ddi_rules.PASSIVE_LEVEL
            what = (
                f"{name} with {passive_only} at {ddi_rules.irql_name(irql)}: "
                "allowed at PASSIVE_LEVEL only"
            )
        if irql > limit:
            self.irql_violations.append(
                {"function": name, "site": site, "irql": irql, "max_irql": limit, "doc": rule.doc}
            )
            raise Crash(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [code, irql, limit, site],
                f"Driver Verifier: {what} ({rule.doc})",
                address,
            )
        if rule.failure is None:
            return None
        key = (name, site)
        occurrence = self.fallible.get(key, 0) + 1
        self.fallible[key] = occurrence
        fail = self.fail
        if (
            fail is not None
            and self.injected is None
            and (fail["function"], fail["site"], fail["occurrence"]) == (name, site, occurrence)
        ):
            self.injected = {**fail, "phase": self.phase}
            return INJECTABLE_FAILURES[rule.failure]
        return None

    # ---- access faults ------------------------------------------------------------------

    def access(self, kind: str, register: int, site: int) -> bool:
        """An RDMSR/WRMSR of `register` or an Activity Monitors MRS at `site`: True when
        this one must fault."""
        key = (kind, register, site, self.phase)
        self.accesses[key] = self.accesses.get(key, 0) + 1
        fault = self.fault
        if (
            fault is None
            or self.injected is not None
            or (fault["access"], fault["register"], fault["site"], fault["phase"])
            != (kind, register, site, self.phase)
        ):
            return False
        self.injected = {**fault}
        self.injected_depth = self.depth
        return True

    def call_done(self, label: str | None, handle: int, handled: bool, faulted: bool) -> None:
        """A notification returned: follows a faulted FEEDBACK_READ to the later reads of
        the same handle (it refused, a later one accepted)."""
        if label != "ppm:10":
            return
        watch = self.fault_watch
        if faulted:
            self.fault_watch = {
                "handle": handle,
                "faulted_read_handled": handled,
                "later_reads": 0,
                "later_reads_handled": 0,
            }
        elif watch is not None and watch["handle"] == handle:
            watch["later_reads"] += 1
            watch["later_reads_handled"] += int(handled)

    # ---- special pool -------------------------------------------------------------------

    def place(self, size: int, next_free: int) -> Block | None:
        """Where a block of `size` bytes goes: at the end of its own pages from `next_free`,
        an unmapped page after it; None past the pool's limit."""
        pages = max(1, (size + PAGE - 1) // PAGE)
        address = next_free + pages * PAGE - ((size + ALIGNMENT - 1) & ~(ALIGNMENT - 1))
        if size == 0:
            address = next_free + pages * PAGE - ALIGNMENT
        if next_free + (pages + 1) * PAGE > POOL + POOL_LIMIT:
            return None
        return Block(address, size, next_free, pages)

    def allocated(self, block: Block) -> None:
        self.allocations += 1
        self.blocks[block.address] = block

    def free(self, address: int, site: int, slack: bytes) -> Block:
        """ExFreePool(`address`): the block, or the bug check of a bad free."""
        block = self.blocks.pop(address, None)
        if block is None:
            freed = any(old.address == address for old in self.freed)
            what = "already freed" if freed else "never allocated"
            self.pool_violations.append({"violation": f"free of {what} pool", "address": address})
            raise Crash(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [VERIFIER_DOUBLE_FREE if freed else VERIFIER_FREE_OF_UNALLOCATED, address, 0, 0],
                f"Driver Verifier: ExFreePool({address:#x}) of pool {what} (from {site:#x})",
            )
        if slack.strip(bytes([SLACK])):
            self.pool_violations.append({"violation": "write before the block", "address": address})
            raise Crash(
                SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION,
                [address, 0, 0, 0x30],
                f"Driver Verifier: the bytes before pool block {address:#x} were overwritten",
            )
        self.freed.append(block)
        return block

    def pool_fault(self, address: int, write: bool, pc: int) -> Crash | None:
        """The bug check of an access to unmapped pool memory at `address`."""
        if not POOL <= address < POOL + POOL_LIMIT:
            return None
        found = None
        for block in self.freed:
            if block.first_page <= address < block.first_page + block.pages * PAGE:
                found = (block, "access to freed pool", DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL)
        for block in self.blocks.values():
            end = block.first_page + block.pages * PAGE
            if end <= address < end + PAGE:
                found = (block, "access beyond a block", DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION)
        if found is None:
            return None
        block, violation, code = found
        self.pool_violations.append(
            {"violation": violation, "address": address, "block": block.address}
        )
        return Crash(
            code,
            [address, int(write), pc, 0],
            f"Driver Verifier: {violation} at {address:#x} (the block of {block.size} bytes "
            f"at {block.address:#x})",
            pc,
        )

    # ---- handles ------------------------------------------------------------------------

    def key_opened(self, key: int) -> None:
        self.keys.add(key)
        self.closed_keys.discard(key)

    def key_used(self, function: str, key: int, optional: bool = False) -> None:
        if optional and key == 0:
            return
        if key in self.keys:
            return
        what = "closed" if key in self.closed_keys else "never issued"
        self.handle_violations.append({"function": function, "handle": key, "violation": what})
        raise Crash(
            WDF_VIOLATION,
            [WDF_INVALID_HANDLE, key, 0, 0],
            f"Driver Verifier: {function} of the WDFKEY {key:#x}, {what}",
        )

    def key_closed(self, key: int) -> None:
        self.key_used("WdfRegistryClose", key)
        self.keys.discard(key)
        self.closed_keys.add(key)

    def etw_registered(self, handle: int) -> None:
        self.etw.add(handle)

    def etw_used(self, function: str, handle: int) -> None:
        if handle in self.etw:
            return
        self.handle_violations.append(
            {"function": function, "handle": handle, "violation": "not registered"}
        )
        code, parameters = INVALID_KERNEL_HANDLE, [handle, 1, 0, 0]
        if function == "EtwUnregister":
            code, parameters = (
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [VERIFIER_INVALID_ETW_HANDLE, handle, 0, 0],
            )
        raise Crash(
            code,
            parameters,
            f"Driver Verifier: {function} of the ETW registration handle {handle:#x}, "
            "not registered",
        )

    # ---- cost ---------------------------------------------------------------------------

    def cost(self, label: str, instructions: int) -> None:
        counts = self.costs.setdefault(label, {})
        counts[instructions] = counts.get(instructions, 0) + 1

    # ---- report -------------------------------------------------------------------------

    def report(self, kmdf_functions: Iterable[str] = ()) -> dict[str, Any]:
        """What the rules saw; `kmdf_functions`: the KMDF functions the image called."""
        return {
            "irql": {
                "imports": self.imports,
                "kmdf_functions": sorted(kmdf_functions),
                "unruled": sorted(self.unruled),
                "violations": self.irql_violations,
            },
            "low_resources": {
                "sites": [
                    {"function": name, "site": site, "calls": calls}
                    for (name, site), calls in sorted(self.fallible.items())
                ],
                "injected": self.injected if self.fail is not None else None,
            },
            "access_faults": {
                "sites": [
                    {
                        "access": kind,
                        "register": register,
                        "site": site,
                        "phase": phase,
                        "calls": calls,
                    }
                    for (kind, register, site, phase), calls in sorted(self.accesses.items())
                ],
                "injected": self.injected if self.fault is not None else None,
                "read": self.fault_watch,
            },
            "pool": {
                "allocations": self.allocations,
                "outstanding": [
                    {"address": block.address, "bytes": block.size}
                    for block in self.blocks.values()
                ],
                "violations": self.pool_violations,
            },
            "handles": {
                "keys_open": len(self.keys),
                "etw_registered": len(self.etw),
                "violations": self.handle_violations,
            },
            "pofx_calls": self.pofx_calls,
            "instructions": {
                label: [[instructions, calls] for instructions, calls in sorted(counts.items())]
                for label, counts in sorted(self.costs.items())
            },
        }


def is_activity_monitor(encoding: tuple[int, int, int, int, int]) -> bool:
    """Whether an MRS reads an Activity Monitors register."""
    op0, op1, crn, _, _ = encoding
    return op0 == 3 and (op1, crn) == AMU_OP1_CRN


def effective_irql(irql: int, interrupts: bool) -> int:
    """The IRQL a call's rules are checked at: with interrupts disabled nothing but a routine
    callable at any IRQL may run."""
    return irql if interrupts else HIGH_LEVEL
