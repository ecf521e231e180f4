"""The deepest stack of the image's entry points, measured on the linked image (x64, ARM64).

Frames come from the unwind data (.pdata/.xdata: what the prologue pushes and allocates, plus
the 8-byte return address on x64; on ARM64 the largest allocation of the prologue's or an
epilogue's unwind codes, LR being saved inside the frame); the call graph from the disassembly
(llvm-objdump -d): direct calls (`call`, `bl`), and tail calls (`jmp`/`b` to another function's
start, which reuses the caller's slot). A call through the import table (or an ARM64 import
thunk) enters the kernel: its frames are the kernel's and are not counted (the budgets leave
room for them). A `jmp`/`br` through a register is a switch's jump table, inside its function.
Any other indirect call (KMDF's function table, a `dyn` or `core::fmt` formatter call) has no
static target: it is not followed, and each one reachable from an entry point is reported. A
callback from which one is reachable fails the check, since its figure would then not bound
its stack; DriverEntry's figure is that of its static call graph, its KMDF and formatter calls
listed. A cycle in the static graph (recursion) fails the check: no bound.

Entry points and budgets (the x64 kernel stack is KERNEL_STACK_SIZE, 24 KiB):
  FxDriverEntry (the image's entry: the KMDF stub, DriverEntry and everything it runs):
      DRIVER_ENTRY_BUDGET, 12 KiB: half the stack; the I/O manager's load path below it and
      the kernel and KMDF services DriverEntry calls (registry, DbgPrintEx,
      PoFxRegisterPluginEx) take the rest.
  accept_device_notification / accept_processor_notification (the PEP_INFORMATION callbacks
  PoFx calls, found by name in the map and, on x64, required to be address-taken in the image):
      CALLBACK_BUDGET, 2 KiB: PoFx calls them from the idle loop, DPCs and interrupt paths at
      up to HIGH_LEVEL, on whatever stack the kernel is already deep in, where the stack cannot
      be expanded; a twelfth of the stack.
"""

import re

from .image import MACHINE_X64, demangle

DRIVER_ENTRY_BUDGET = 12 * 1024
CALLBACK_BUDGET = 2 * 1024
RETURN_ADDRESS = 8

# Entry points: (label, map-symbol pattern, budget, must be address-taken).
ENTRY_POINTS = (
    ("FxDriverEntry", r"^FxDriverEntry$", DRIVER_ENTRY_BUDGET, False),
    ("AcceptDeviceNotification", r"accept_device_notification", CALLBACK_BUDGET, True),
    ("AcceptProcessorNotification", r"accept_processor_notification", CALLBACK_BUDGET, True),
    ("AcceptAcpiNotification", r"accept_acpi_notification", CALLBACK_BUDGET, True),
)

DIRECT_TARGET = re.compile(r"^0x([0-9a-f]+)")
RIP_MEMORY = re.compile(r"\*?(-?(?:0x)?[0-9a-f]+)\(%rip\)\s*#\s*0x([0-9a-f]+)")
LEA_TARGET = re.compile(r"#\s*0x([0-9a-f]+)")
REGISTER_JUMP = re.compile(r"^\*%[a-z0-9]+$")


class Graph:
    """Nodes (function starts) with frames, call edges, tail edges and import calls."""

    def __init__(self, image):
        self.image = image
        self.x64 = image.machine == MACHINE_X64
        # x64 pushes the return address; ARM64 keeps it in LR (saved inside the frame).
        self.return_address = RETURN_ADDRESS if self.x64 else 0
        self.frames = {}
        self.ends = {}
        for function in image.runtime_functions():
            self.frames[function.begin] = function.frame + self.return_address
            self.ends[function.begin] = function.end
        symbols = image.functions_in_text()
        imported = {name for _dll, name, _ordinal in image.imports() if name}
        self.thunks = {}
        for index, (rva, name) in enumerate(symbols):
            if name in imported:
                self.thunks[rva] = name
            if image.function_containing(rva) is None:
                self.frames.setdefault(rva, self.return_address)
                following = symbols[index + 1][0] if index + 1 < len(symbols) else rva + 16
                self.ends.setdefault(rva, following)
        self.starts = sorted(self.frames)
        self.iat = self._iat_slots()
        self.calls, self.tails, self.imports, self.indirect = {}, {}, {}, {}
        self.address_taken = set()
        for start in self.starts:
            self._scan(start)
        self._data_pointers()

    def _iat_slots(self):
        slots = {}
        for dll, name, ordinal in self.image.imports():
            address = self.image.import_address(dll, name) if name else None
            if address is not None:
                slots[address] = f"{dll}!{name or ordinal}"
        return slots

    def node_of(self, rva):
        """The function start whose range holds rva, or None."""
        function = self.image.function_containing(rva)
        if function is not None:
            return function.begin
        return rva if rva in self.frames else None

    def _scan(self, start):
        if not self.x64:
            self._scan_arm64(start)
            return
        calls, tails, imports, indirect = set(), set(), set(), []
        base = self.image.base
        for instruction in self.image.instructions_between(start, self.ends[start]):
            mnemonic, operands = instruction.mnemonic, instruction.operands
            if mnemonic.startswith("lea"):
                match = LEA_TARGET.search(operands)
                if match and int(match.group(1), 16) - base in self.frames:
                    self.address_taken.add(int(match.group(1), 16) - base)
                continue
            is_call, is_jump = mnemonic.startswith("call"), mnemonic.startswith("jmp")
            if not (is_call or is_jump):
                continue
            direct = DIRECT_TARGET.match(operands)
            if direct:
                target = int(direct.group(1), 16) - base
                if start <= target < self.ends[start]:
                    continue
                node = self.node_of(target)
                if node is None:
                    continue
                (calls if is_call else tails).add(node)
                continue
            memory = RIP_MEMORY.search(operands)
            if memory and int(memory.group(2), 16) - base in self.iat:
                imports.add(self.iat[int(memory.group(2), 16) - base])
                continue
            if is_jump and REGISTER_JUMP.match(operands):
                continue
            indirect.append(instruction.address)
        self.calls[start], self.tails[start] = calls, tails
        self.imports[start], self.indirect[start] = imports, indirect

    def _scan_arm64(self, start):
        """ARM64: `bl` calls, `b` tail calls, `blr` indirect calls; `br` is a jump table, or in
        an import thunk (adrp/ldr/br x16, named after its import) the jump into the kernel."""
        calls, tails, imports, indirect = set(), set(), set(), []
        if start in self.thunks:
            imports.add(self.thunks[start])
        else:
            base = self.image.base
            for instruction in self.image.instructions_between(start, self.ends[start]):
                mnemonic = instruction.mnemonic
                if mnemonic == "blr":
                    indirect.append(instruction.address)
                    continue
                if mnemonic not in ("bl", "b"):
                    continue
                direct = DIRECT_TARGET.match(instruction.operands)
                if direct is None:
                    continue
                target = int(direct.group(1), 16) - base
                if start <= target < self.ends[start]:
                    continue
                node = self.node_of(target)
                if node is not None:
                    (calls if mnemonic == "bl" else tails).add(node)
        self.calls[start], self.tails[start] = calls, tails
        self.imports[start], self.indirect[start] = imports, indirect

    def _data_pointers(self):
        """Function starts stored as pointers in data (found through the base relocations)."""
        pe = self.image.pe
        for block in getattr(pe, "DIRECTORY_ENTRY_BASERELOC", []):
            for entry in block.entries:
                if entry.type != 10:  # IMAGE_REL_BASED_DIR64
                    continue
                data = pe.get_data(entry.rva, 8)
                if len(data) == 8:
                    target = int.from_bytes(data, "little") - self.image.base
                    if target in self.frames:
                        self.address_taken.add(target)


def deepest(graph, start, stack, memo):
    """(depth in bytes, path of starts) from start over the static graph; ValueError on a cycle."""
    if start in memo:
        return memo[start]
    if start in stack:
        cycle = [*stack[stack.index(start) :], start]
        raise ValueError(
            "recursion, no bound: " + " -> ".join(graph.image.name_at(n) for n in cycle)
        )
    stack.append(start)
    frame = graph.frames.get(start, RETURN_ADDRESS)
    best = (frame, [start])
    for callee in sorted(graph.calls.get(start, ())):
        depth, path = deepest(graph, callee, stack, memo)
        if frame + depth > best[0]:
            best = (frame + depth, [start, *path])
    for callee in sorted(graph.tails.get(start, ())):
        depth, path = deepest(graph, callee, stack, memo)
        if depth > best[0]:
            best = (depth, [start, *path])
    stack.pop()
    memo[start] = best
    return best


def reachable(graph, start):
    """Every function start reachable from start through direct and tail calls."""
    seen, pending = set(), [start]
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        pending.extend(graph.calls.get(node, ()))
        pending.extend(graph.tails.get(node, ()))
    return seen


ARM64_SUB_SP = re.compile(r"^sp, sp, (#(0x[0-9a-f]+|[0-9]+)(, lsl #12)?|.*)$")


def arm64_allocations_within_frames(graph):
    """ARM64 cross-check of the frames read from the unwind codes: every `sub sp, sp, #imm` of
    a function allocates at most its frame; a `sub sp` by a register has no static bound."""
    failures = []
    for function in graph.image.runtime_functions():
        for instruction in graph.image.instructions_between(function.begin, function.end):
            if instruction.mnemonic != "sub" or not instruction.operands.startswith("sp, sp,"):
                continue
            match = ARM64_SUB_SP.match(instruction.operands)
            if match.group(2) is None:
                failures.append(
                    f"stack: {graph.image.name_at(instruction.address)} allocates a dynamic "
                    f"amount ({instruction.operands}): no bound"
                )
                continue
            size = int(match.group(2), 0) << (12 if match.group(3) else 0)
            if size > function.frame:
                failures.append(
                    f"stack: {graph.image.name_at(instruction.address)} allocates {size} bytes, "
                    f"more than the {function.frame}-byte frame its unwind codes describe"
                )
    return failures


def check(image):
    """(failures, report lines) for every entry point found."""
    graph = Graph(image)
    failures, notes = [], []
    if not graph.x64:
        failures += arm64_allocations_within_frames(graph)
    memo = {}
    for label, pattern, budget, must_be_taken in ENTRY_POINTS:
        found = [(rva, name) for name, rva in image.symbols.items() if re.search(pattern, name)]
        if not found:
            if label == "AcceptAcpiNotification":
                notes.append(f"stack {label}: not in the image (PEP_INFORMATION leaves it NULL)")
                continue
            failures.append(f"stack: entry point {label} not found in the map")
            continue
        for rva, name in found:
            if must_be_taken and graph.x64 and rva not in graph.address_taken:
                failures.append(
                    f"stack: {demangle(name)} is never address-taken: "
                    "not what PEP_INFORMATION holds"
                )
            try:
                depth, path = deepest(graph, rva, [], memo)
            except ValueError as error:
                failures.append(f"stack {label}: {error}")
                continue
            nodes = reachable(graph, rva)
            indirect = sorted(site for node in nodes for site in graph.indirect.get(node, ()))
            kernel = sorted({call for node in nodes for call in graph.imports.get(node, ())})
            chain = " > ".join(
                f"{graph.image.name_at(node)} ({graph.frames[node]})" for node in path
            )
            notes.append(f"stack {label}: {depth} bytes (budget {budget}), deepest chain: {chain}")
            notes.append(
                "  kernel calls reachable (their frames not counted): "
                + (", ".join(kernel) or "none")
            )
            if indirect:
                sites = ", ".join(graph.image.name_at(site) for site in indirect)
                notes.append(f"  indirect calls reachable, not followed ({len(indirect)}): {sites}")
                taken = [(deepest(graph, node, [], memo)[0], node) for node in graph.address_taken]
                if taken:
                    extra, node = max(taken)
                    notes.append(
                        f"  with one level of indirect calls: at most {depth + extra} bytes "
                        f"(+{extra}, the deepest address-taken function: "
                        f"{graph.image.name_at(node)})"
                    )
                if budget == CALLBACK_BUDGET:
                    failures.append(
                        f"stack {label}: {len(indirect)} indirect call(s) reachable "
                        f"(first at {graph.image.name_at(indirect[0])}): the figure is no bound"
                    )
            if depth > budget:
                failures.append(f"stack {label}: {depth} bytes exceeds its budget of {budget}")
    largest = sorted(((frame, start) for start, frame in graph.frames.items()), reverse=True)[:5]
    notes.append(
        "largest frames: "
        + ", ".join(f"{graph.image.name_at(start)} {frame}" for frame, start in largest)
    )
    return failures, notes
