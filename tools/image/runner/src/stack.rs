//! The deepest stack of the image's entry points, measured on the linked image (x64, ARM64).
//!
//! Frames come from the unwind data (.pdata/.xdata: what the prologue pushes and allocates,
//! plus the 8-byte return address on x64; on ARM64 the largest allocation of the prologue's or
//! an epilogue's unwind codes, LR being saved inside the frame); the call graph from the
//! disassembly (`llvm-objdump -d`): direct calls (`call`, `bl`), and tail calls (`jmp`/`b` to
//! another function's start, which reuses the caller's slot). A call through the import table
//! (or an ARM64 import thunk) enters the kernel: its frames are the kernel's and are not
//! counted (the budgets leave room for them). A `jmp`/`br` through a register is a switch's
//! jump table, inside its function. Any other indirect call (KMDF's function table, a `dyn` or
//! `core::fmt` formatter call) has no static target: it is not followed, and each one reachable
//! from an entry point is reported. A callback from which one is reachable fails the check,
//! since its figure would then not bound its stack; `DriverEntry`'s figure is that of its
//! static call graph, its KMDF and formatter calls listed. A cycle in the static graph
//! (recursion) fails the check: no bound. On ARM64, every `sub sp, sp, #imm` must also stay
//! within its function's frame as the unwind codes describe it.
//!
//! Entry points and budgets (the x64 kernel stack is `KERNEL_STACK_SIZE`, 24 KiB):
//! - `FxDriverEntry` (the image's entry: the KMDF stub, `DriverEntry` and everything it runs):
//!   [`DRIVER_ENTRY_BUDGET`], 12 KiB: half the stack; the I/O manager's load path below it and
//!   the kernel and KMDF services `DriverEntry` calls (registry, `DbgPrintEx`,
//!   `PoFxRegisterPluginEx`) take the rest.
//! - `accept_device_notification` / `accept_processor_notification` (the `PEP_INFORMATION`
//!   callbacks `PoFx` calls, found by name in the map and, on x64, required to be address-taken
//!   in the image): [`CALLBACK_BUDGET`], 2 KiB: `PoFx` calls them from the idle loop, DPCs and
//!   interrupt paths at up to `HIGH_LEVEL`, on whatever stack the kernel is already deep in,
//!   where the stack cannot be expanded; a twelfth of the stack.

use std::collections::{BTreeSet, HashMap, HashSet};

use ppm_image_file::{MACHINE_X64, UNFETCHABLE, demangle, is_space, wide};

use crate::image::{FileError, ImageFile, hex_prefix};

/// `FxDriverEntry`'s budget.
pub const DRIVER_ENTRY_BUDGET: u64 = 12 * 1024;
/// A `PoFx` callback's budget.
pub const CALLBACK_BUDGET: u64 = 2 * 1024;
/// The x64 return address a call pushes.
pub const RETURN_ADDRESS: u64 = 8;
/// `IMAGE_REL_BASED_DIR64`.
const REL_BASED_DIR64: u16 = 10;
/// The deepest call chain followed (a deeper one stops the check).
const MAX_DEPTH: usize = 990;

/// How an entry point's name is found in the map.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    /// The whole name.
    Exactly(&'static str),
    /// Part of the name.
    Containing(&'static str),
}

impl Pattern {
    /// Whether `name` matches.
    fn matches(self, name: &str) -> bool {
        match self {
            Self::Exactly(whole) => name == whole,
            Self::Containing(part) => name.contains(part),
        }
    }
}

/// An entry point: its label, map-symbol pattern, budget, and whether it must be address-taken.
type EntryPoint = (&'static str, Pattern, u64, bool);

/// The entry points measured.
const ENTRY_POINTS: [EntryPoint; 4] = [
    ("FxDriverEntry", Pattern::Exactly("FxDriverEntry"), DRIVER_ENTRY_BUDGET, false),
    (
        "AcceptDeviceNotification",
        Pattern::Containing("accept_device_notification"),
        CALLBACK_BUDGET,
        true,
    ),
    (
        "AcceptProcessorNotification",
        Pattern::Containing("accept_processor_notification"),
        CALLBACK_BUDGET,
        true,
    ),
    (
        "AcceptAcpiNotification",
        Pattern::Containing("accept_acpi_notification"),
        CALLBACK_BUDGET,
        true,
    ),
];

/// The static call graph: each function start's frame, direct calls and tail calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallGraph {
    /// Each node's frame in bytes (its return address included on x64).
    pub frames: HashMap<i128, u64>,
    /// Each node's direct callees.
    pub calls: HashMap<i128, BTreeSet<i128>>,
    /// Each node's tail-call targets.
    pub tails: HashMap<i128, BTreeSet<i128>>,
}

/// The deepest chain from a node: its depth in bytes and its nodes.
pub type Chain = (u64, Vec<i128>);

/// Why [`deepest`] has no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeepestError {
    /// A cycle: `recursion, no bound: a -> b -> a`.
    Recursion(String),
    /// A chain deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// (depth in bytes, path of starts) from `start` over the static graph: its frame plus the
/// deepest of its direct callees', or the deepest of its tail-call targets' (which reuse its
/// frame); callees in address order, the first of equal depths kept. `stack` holds the chain
/// being followed, `memo` the nodes already measured; `name_at` names nodes in the recursion
/// error.
///
/// # Errors
///
/// [`DeepestError::Recursion`] on a cycle, [`DeepestError::TooDeep`] past [`MAX_DEPTH`].
pub fn deepest(
    graph: &CallGraph,
    name_at: &dyn Fn(i128) -> String,
    start: i128,
    stack: &mut Vec<i128>,
    memo: &mut HashMap<i128, Chain>,
) -> Result<Chain, DeepestError> {
    if let Some(known) = memo.get(&start) {
        return Ok(known.clone());
    }
    if let Some(at) = stack.iter().position(|&node| node == start) {
        let cycle: Vec<String> =
            stack[at..].iter().chain([&start]).map(|&node| name_at(node)).collect();
        return Err(DeepestError::Recursion(format!(
            "recursion, no bound: {}",
            cycle.join(" -> ")
        )));
    }
    if stack.len() >= MAX_DEPTH {
        return Err(DeepestError::TooDeep);
    }
    stack.push(start);
    let frame = graph.frames.get(&start).copied().unwrap_or(RETURN_ADDRESS);
    let mut best: Chain = (frame, vec![start]);
    let empty = BTreeSet::new();
    for &callee in graph.calls.get(&start).unwrap_or(&empty) {
        let (depth, path) = deepest(graph, name_at, callee, stack, memo)?;
        if frame + depth > best.0 {
            best = (frame + depth, std::iter::once(start).chain(path).collect());
        }
    }
    for &callee in graph.tails.get(&start).unwrap_or(&empty) {
        let (depth, path) = deepest(graph, name_at, callee, stack, memo)?;
        if depth > best.0 {
            best = (depth, std::iter::once(start).chain(path).collect());
        }
    }
    stack.pop();
    memo.insert(start, best.clone());
    Ok(best)
}

/// Every node reachable from `start` through direct and tail calls.
pub fn reachable(graph: &CallGraph, start: i128) -> HashSet<i128> {
    let mut seen = HashSet::new();
    let mut pending = vec![start];
    while let Some(node) = pending.pop() {
        if !seen.insert(node) {
            continue;
        }
        pending.extend(graph.calls.get(&node).into_iter().flatten());
        pending.extend(graph.tails.get(&node).into_iter().flatten());
    }
    seen
}

/// The call graph of an image: nodes (function starts) with frames, call edges, tail edges,
/// import calls, indirect call sites and the address-taken functions.
pub struct Graph<'i, 'a> {
    /// The image.
    image: &'i ImageFile<'a>,
    /// Whether the image is x64 (else ARM64).
    pub x64: bool,
    /// Frames, calls and tail calls.
    pub edges: CallGraph,
    /// Each node's end.
    ends: HashMap<i128, i128>,
    /// The nodes (sorted).
    starts: Vec<i128>,
    /// Import thunks (ARM64): start -> imported name.
    thunks: HashMap<i128, String>,
    /// IAT slots: RVA -> `dll!name`.
    iat: HashMap<i128, String>,
    /// Each node's kernel calls (`dll!name` on x64, the thunk's name on ARM64).
    pub imports: HashMap<i128, BTreeSet<String>>,
    /// Each node's indirect call sites.
    pub indirect: HashMap<i128, Vec<i128>>,
    /// The nodes whose address the code loads or the data holds.
    pub address_taken: BTreeSet<i128>,
}

impl<'i, 'a> Graph<'i, 'a> {
    /// The graph of `image`.
    ///
    /// # Errors
    ///
    /// The unwind data's or the disassembly's.
    pub fn new(image: &'i ImageFile<'a>) -> Result<Self, FileError> {
        let x64 = image.machine == MACHINE_X64;
        // x64 pushes the return address; ARM64 keeps it in LR (saved inside the frame).
        let return_address = if x64 { RETURN_ADDRESS } else { 0 };
        let mut frames = HashMap::new();
        let mut ends = HashMap::new();
        for function in image.runtime_functions()? {
            frames.insert(i128::from(function.begin), function.frame + return_address);
            ends.insert(i128::from(function.begin), i128::from(function.end));
        }
        let symbols = image.functions_in_text();
        let imported: HashSet<&str> =
            image.imports().iter().filter_map(|import| import.name.as_deref()).collect();
        let mut thunks = HashMap::new();
        for (index, &(rva, name)) in symbols.iter().enumerate() {
            let rva = i128::from(rva);
            if imported.contains(name) {
                thunks.insert(rva, name.to_owned());
            }
            if image.function_containing(rva)?.is_none() {
                frames.entry(rva).or_insert(return_address);
                let following =
                    symbols.get(index + 1).map_or(rva + 16, |&(next, _)| i128::from(next));
                ends.entry(rva).or_insert(following);
            }
        }
        let mut starts: Vec<i128> = frames.keys().copied().collect();
        starts.sort_unstable();
        let mut iat = HashMap::new();
        for import in image.imports() {
            let Some(name) = &import.name else { continue };
            if let Some(address) = image.import_address(&import.dll, name) {
                iat.insert(i128::from(address), format!("{}!{name}", import.dll));
            }
        }
        let mut graph = Self {
            image,
            x64,
            edges: CallGraph { frames, calls: HashMap::new(), tails: HashMap::new() },
            ends,
            starts,
            thunks,
            iat,
            imports: HashMap::new(),
            indirect: HashMap::new(),
            address_taken: BTreeSet::new(),
        };
        for start in graph.starts.clone() {
            if x64 { graph.scan_x64(start)? } else { graph.scan_arm64(start)? }
        }
        graph.data_pointers()?;
        Ok(graph)
    }

    /// The node whose range holds `rva`.
    fn node_of(&self, rva: i128) -> Result<Option<i128>, FileError> {
        if let Some(function) = self.image.function_containing(rva)? {
            return Ok(Some(i128::from(function.begin)));
        }
        Ok(self.edges.frames.contains_key(&rva).then_some(rva))
    }

    /// The end of node `start`.
    fn end_of(&self, start: i128) -> i128 {
        self.ends.get(&start).copied().unwrap_or(start)
    }

    /// x64: `call`/`jmp` to a node (a call or a tail call), through an IAT slot (a kernel
    /// call) or through a register (`jmp`: a jump table), else an indirect call; `lea` of a
    /// node takes its address.
    fn scan_x64(&mut self, start: i128) -> Result<(), FileError> {
        let (mut calls, mut tails, mut imports, mut indirect) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), Vec::new());
        let base = i128::from(self.image.base);
        let end = self.end_of(start);
        for instruction in self.image.instructions_between(start, end)? {
            let (mnemonic, operands) =
                (instruction.mnemonic.as_str(), instruction.operands.as_str());
            if mnemonic.starts_with("lea") {
                if let Some(target) = lea_target(operands)
                    && self.edges.frames.contains_key(&(target - base))
                {
                    self.address_taken.insert(target - base);
                }
                continue;
            }
            let (is_call, is_jump) = (mnemonic.starts_with("call"), mnemonic.starts_with("jmp"));
            if !(is_call || is_jump) {
                continue;
            }
            if let Some(target) = hex_prefix(operands) {
                let target = target - base;
                if start <= target && target < end {
                    continue;
                }
                if let Some(node) = self.node_of(target)? {
                    if is_call {
                        calls.insert(node)
                    } else {
                        tails.insert(node)
                    };
                }
                continue;
            }
            if let Some(slot) = rip_memory_target(operands)
                && let Some(name) = self.iat.get(&(slot - base))
            {
                imports.insert(name.clone());
                continue;
            }
            if is_jump && is_register_jump(operands) {
                continue;
            }
            indirect.push(instruction.address);
        }
        self.edges.calls.insert(start, calls);
        self.edges.tails.insert(start, tails);
        self.imports.insert(start, imports);
        self.indirect.insert(start, indirect);
        Ok(())
    }

    /// ARM64: `bl` calls, `b` tail calls, `blr` indirect calls; `br` is a jump table, or in an
    /// import thunk (adrp/ldr/br x16, named after its import) the jump into the kernel.
    fn scan_arm64(&mut self, start: i128) -> Result<(), FileError> {
        let (mut calls, mut tails, mut imports, mut indirect) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), Vec::new());
        if let Some(name) = self.thunks.get(&start) {
            imports.insert(name.clone());
        } else {
            let base = i128::from(self.image.base);
            let end = self.end_of(start);
            for instruction in self.image.instructions_between(start, end)? {
                let mnemonic = instruction.mnemonic.as_str();
                if mnemonic == "blr" {
                    indirect.push(instruction.address);
                    continue;
                }
                if mnemonic != "bl" && mnemonic != "b" {
                    continue;
                }
                let Some(target) = hex_prefix(&instruction.operands) else { continue };
                let target = target - base;
                if start <= target && target < end {
                    continue;
                }
                if let Some(node) = self.node_of(target)? {
                    if mnemonic == "bl" {
                        calls.insert(node)
                    } else {
                        tails.insert(node)
                    };
                }
            }
        }
        self.edges.calls.insert(start, calls);
        self.edges.tails.insert(start, tails);
        self.imports.insert(start, imports);
        self.indirect.insert(start, indirect);
        Ok(())
    }

    /// Function starts stored as pointers in data (found through the base relocations).
    fn data_pointers(&mut self) -> Result<(), FileError> {
        for &(kind, rva) in self.image.relocations() {
            if kind != REL_BASED_DIR64 {
                continue;
            }
            let data = self
                .image
                .pe
                .get_data(wide(rva), 8)
                .ok_or_else(|| FileError::Fatal(UNFETCHABLE.to_owned()))?;
            if let Ok(bytes) = <[u8; 8]>::try_from(data) {
                let target = i128::from(u64::from_le_bytes(bytes)) - i128::from(self.image.base);
                if self.edges.frames.contains_key(&target) {
                    self.address_taken.insert(target);
                }
            }
        }
        Ok(())
    }

    /// [`deepest`] over this graph, names from the image's map; a recursion error as its text,
    /// a chain too deep as [`FileError::Fatal`].
    fn deepest(
        &self,
        start: i128,
        memo: &mut HashMap<i128, Chain>,
    ) -> Result<Result<Chain, String>, FileError> {
        let name_at = |rva| self.image.name_at(rva);
        match deepest(&self.edges, &name_at, start, &mut Vec::new(), memo) {
            Ok(chain) => Ok(Ok(chain)),
            Err(DeepestError::Recursion(error)) => Ok(Err(error)),
            Err(DeepestError::TooDeep) => {
                Err(FileError::Fatal("maximum recursion depth exceeded".to_owned()))
            }
        }
    }
}

/// The target of `lea`'s operands' comment (`# 0x…`).
fn lea_target(operands: &str) -> Option<i128> {
    operands
        .match_indices('#')
        .find_map(|(at, _)| hex_prefix(operands[at + 1..].trim_start_matches(is_space)))
}

/// The slot of a RIP-relative memory operand with its address in the comment:
/// `[*][-][0x]DIGITS(%rip) # 0x…` (the first such), the comment's address.
fn rip_memory_target(operands: &str) -> Option<i128> {
    operands.match_indices("(%rip)").find_map(|(at, text)| {
        let before = operands[..at].bytes().last()?;
        if !matches!(before, b'0'..=b'9' | b'a'..=b'f') {
            return None;
        }
        let comment = operands[at + text.len()..].trim_start_matches(is_space);
        hex_prefix(comment.strip_prefix('#')?.trim_start_matches(is_space))
    })
}

/// Whether operands are `*%REGISTER` (a jump through a register).
fn is_register_jump(operands: &str) -> bool {
    operands.strip_prefix("*%").is_some_and(|register| {
        !register.is_empty()
            && register.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// What a `sub sp, sp, OPERAND` allocates: `Some(bytes)` for an immediate (`#0x…` or `#N`,
/// optionally `, lsl #12`), `None` for any other operand (no static bound).
///
/// # Errors
///
/// [`FileError::Fatal`] for operands not `sp, sp, …` or a decimal with a leading zero.
fn sub_sp_size(operands: &str) -> Result<Option<u128>, FileError> {
    let Some(rest) = operands.strip_prefix("sp, sp, ") else {
        return Err(FileError::Fatal("'NoneType' object has no attribute 'group'".to_owned()));
    };
    let Some(immediate) = rest.strip_prefix('#') else { return Ok(None) };
    let (immediate, shift) =
        immediate.strip_suffix(", lsl #12").map_or((immediate, 0), |immediate| (immediate, 12));
    let value = if let Some(hex) = immediate.strip_prefix("0x") {
        if hex.is_empty() || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Ok(None);
        }
        u128::from_str_radix(hex, 16).unwrap_or(u128::MAX)
    } else {
        if immediate.is_empty() || !immediate.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(None);
        }
        if immediate.len() > 1 && immediate.starts_with('0') && immediate.bytes().any(|b| b != b'0')
        {
            return Err(FileError::Fatal(format!(
                "invalid literal for int() with base 0: '{immediate}'"
            )));
        }
        immediate.parse::<u128>().unwrap_or(u128::MAX)
    };
    Ok(Some(value.checked_shl(shift).unwrap_or(u128::MAX)))
}

/// ARM64 cross-check of the frames read from the unwind codes: every `sub sp, sp, #imm` of a
/// function allocates at most its frame; a `sub sp` by a register has no static bound.
///
/// # Errors
///
/// The unwind data's or the disassembly's.
fn arm64_allocations_within_frames(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    let mut failures = Vec::new();
    for function in image.runtime_functions()? {
        let (begin, end) = (i128::from(function.begin), i128::from(function.end));
        for instruction in image.instructions_between(begin, end)? {
            if instruction.mnemonic != "sub" || !instruction.operands.starts_with("sp, sp,") {
                continue;
            }
            let name = image.name_at(instruction.address);
            match sub_sp_size(&instruction.operands)? {
                None => failures.push(format!(
                    "stack: {name} allocates a dynamic amount ({}): no bound",
                    instruction.operands
                )),
                Some(size) if size > u128::from(function.frame) => failures.push(format!(
                    "stack: {name} allocates {size} bytes, more than the {}-byte frame its \
                     unwind codes describe",
                    function.frame
                )),
                Some(_) => {}
            }
        }
    }
    Ok(failures)
}

/// The figures of entry point `label` at `rva` (its symbol `name`) against `budget`: its
/// notes and failures appended.
///
/// # Errors
///
/// [`FileError::Fatal`] when `rva` is no node of the graph or a recursion is reachable through
/// an address-taken function.
fn measure(
    graph: &Graph<'_, '_>,
    (label, budget, must_be_taken): (&str, u64, bool),
    (rva, name): (i128, &str),
    memo: &mut HashMap<i128, Chain>,
    (failures, notes): (&mut Vec<String>, &mut Vec<String>),
) -> Result<(), FileError> {
    let image = graph.image;
    if must_be_taken && graph.x64 && !graph.address_taken.contains(&rva) {
        failures.push(format!(
            "stack: {} is never address-taken: not what PEP_INFORMATION holds",
            demangle(name)
        ));
    }
    let (depth, path) = match graph.deepest(rva, memo)? {
        Ok(chain) => chain,
        Err(error) => {
            failures.push(format!("stack {label}: {error}"));
            return Ok(());
        }
    };
    let reached = reachable(&graph.edges, rva);
    let mut indirect: Vec<i128> = reached
        .iter()
        .flat_map(|node| graph.indirect.get(node).into_iter().flatten().copied())
        .collect();
    indirect.sort_unstable();
    let kernel: BTreeSet<&str> = reached
        .iter()
        .flat_map(|node| graph.imports.get(node).into_iter().flatten())
        .map(String::as_str)
        .collect();
    let mut chain = Vec::new();
    for node in &path {
        let Some(frame) = graph.edges.frames.get(node) else {
            return Err(FileError::Fatal(format!("KeyError: {node}")));
        };
        chain.push(format!("{} ({frame})", image.name_at(*node)));
    }
    notes.push(format!(
        "stack {label}: {depth} bytes (budget {budget}), deepest chain: {}",
        chain.join(" > ")
    ));
    let kernel: Vec<&str> = kernel.into_iter().collect();
    notes.push(format!(
        "  kernel calls reachable (their frames not counted): {}",
        if kernel.is_empty() { "none".to_owned() } else { kernel.join(", ") }
    ));
    if let Some(&first) = indirect.first() {
        let sites: Vec<String> = indirect.iter().map(|&site| image.name_at(site)).collect();
        notes.push(format!(
            "  indirect calls reachable, not followed ({}): {}",
            indirect.len(),
            sites.join(", ")
        ));
        let mut taken = Vec::new();
        for &node in &graph.address_taken {
            match graph.deepest(node, memo)? {
                Ok((extra, _)) => taken.push((extra, node)),
                Err(error) => return Err(FileError::Fatal(format!("ValueError: {error}"))),
            }
        }
        if let Some(&(extra, node)) = taken.iter().max() {
            notes.push(format!(
                "  with one level of indirect calls: at most {} bytes (+{extra}, the deepest \
                 address-taken function: {})",
                depth + extra,
                image.name_at(node)
            ));
        }
        if budget == CALLBACK_BUDGET {
            failures.push(format!(
                "stack {label}: {} indirect call(s) reachable (first at {}): the figure is no \
                 bound",
                indirect.len(),
                image.name_at(first)
            ));
        }
    }
    if depth > budget {
        failures.push(format!("stack {label}: {depth} bytes exceeds its budget of {budget}"));
    }
    Ok(())
}

/// (failures, report lines) for every entry point found.
///
/// # Errors
///
/// The unwind data's or the disassembly's; [`FileError::Fatal`] when an entry point's symbol
/// is no node of the graph or a recursion is reachable through an address-taken function.
pub fn check(image: &ImageFile<'_>) -> Result<(Vec<String>, Vec<String>), FileError> {
    let graph = Graph::new(image)?;
    let mut failures = Vec::new();
    let mut notes = Vec::new();
    if !graph.x64 {
        failures.extend(arm64_allocations_within_frames(image)?);
    }
    let mut memo = HashMap::new();
    for (label, pattern, budget, must_be_taken) in ENTRY_POINTS {
        let found: Vec<(i128, &str)> = image
            .symbols
            .iter()
            .filter(|(name, _)| pattern.matches(name))
            .map(|(name, rva)| (i128::from(*rva), name.as_str()))
            .collect();
        if found.is_empty() {
            if label == "AcceptAcpiNotification" {
                notes.push(format!(
                    "stack {label}: not in the image (PEP_INFORMATION leaves it NULL)"
                ));
            } else {
                failures.push(format!("stack: entry point {label} not found in the map"));
            }
            continue;
        }
        for symbol in found {
            measure(
                &graph,
                (label, budget, must_be_taken),
                symbol,
                &mut memo,
                (&mut failures, &mut notes),
            )?;
        }
    }
    let mut largest: Vec<(u64, i128)> =
        graph.edges.frames.iter().map(|(&start, &frame)| (frame, start)).collect();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    let largest: Vec<String> = largest
        .iter()
        .take(5)
        .map(|&(frame, start)| format!("{} {frame}", image.name_at(start)))
        .collect();
    notes.push(format!("largest frames: {}", largest.join(", ")));
    Ok((failures, notes))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::{
        CallGraph, DeepestError, deepest, is_register_jump, lea_target, rip_memory_target,
        sub_sp_size,
    };

    /// A graph of these frames, calls and tail calls.
    fn graph(
        frames: &[(i128, u64)],
        calls: &[(i128, &[i128])],
        tails: &[(i128, &[i128])],
    ) -> CallGraph {
        let edges = |list: &[(i128, &[i128])]| {
            list.iter()
                .map(|&(from, to)| (from, to.iter().copied().collect::<BTreeSet<_>>()))
                .collect()
        };
        CallGraph {
            frames: frames.iter().copied().collect(),
            calls: edges(calls),
            tails: edges(tails),
        }
    }

    /// Names for messages only.
    fn name(rva: i128) -> String {
        format!("f{rva:x}")
    }

    #[test]
    fn the_deepest_chain_adds_frames_and_a_tail_call_reuses_the_slot() {
        // a (100) calls b (200) and c (50); b calls d (300); c tail-calls e (1000).
        let graph = graph(
            &[(0xA, 100), (0xB, 200), (0xC, 50), (0xD, 300), (0xE, 1000)],
            &[(0xA, &[0xB, 0xC]), (0xB, &[0xD])],
            &[(0xC, &[0xE])],
        );
        let mut memo = HashMap::new();
        assert_eq!(
            deepest(&graph, &name, 0xA, &mut Vec::new(), &mut memo),
            Ok((1100, vec![0xA, 0xC, 0xE]))
        );
        assert_eq!(
            deepest(&graph, &name, 0xB, &mut Vec::new(), &mut HashMap::new()),
            Ok((500, vec![0xB, 0xD]))
        );
        // A node without a frame counts a return address.
        assert_eq!(deepest(&graph, &name, 0xF, &mut Vec::new(), &mut memo), Ok((8, vec![0xF])));
    }

    #[test]
    fn recursion_has_no_bound() {
        let graph = graph(&[(1, 8), (2, 8)], &[(1, &[2]), (2, &[1])], &[]);
        assert_eq!(
            deepest(&graph, &name, 1, &mut Vec::new(), &mut HashMap::new()),
            Err(DeepestError::Recursion("recursion, no bound: f1 -> f2 -> f1".to_owned()))
        );
        let chain: Vec<(i128, &[i128])> = Vec::new();
        let long: Vec<(i128, Vec<i128>)> = (0..2000).map(|n| (n, vec![n + 1])).collect();
        let long: Vec<(i128, &[i128])> =
            long.iter().map(|(from, to)| (*from, to.as_slice())).chain(chain).collect();
        let graph = graph_of(&long);
        assert_eq!(
            deepest(&graph, &name, 0, &mut Vec::new(), &mut HashMap::new()),
            Err(DeepestError::TooDeep)
        );
    }

    /// A graph of these calls, every frame 8.
    fn graph_of(calls: &[(i128, &[i128])]) -> CallGraph {
        graph(&[], calls, &[])
    }

    #[test]
    fn operands_name_their_targets() {
        assert_eq!(lea_target("61528(%rip), %rcx       # 0x1800100a0"), Some(0x1_8001_00A0));
        assert_eq!(lea_target("(%rax), %rcx"), None);
        assert_eq!(rip_memory_target("*61509(%rip)         # 0x180010070"), Some(0x1_8001_0070));
        assert_eq!(rip_memory_target("*-0x10(%rip) #0x180010070 <x>"), Some(0x1_8001_0070));
        assert_eq!(rip_memory_target("*%rax"), None);
        assert!(is_register_jump("*%rax") && is_register_jump("*%r11"));
        assert!(!is_register_jump("*(%rax)") && !is_register_jump("*%"));
    }

    #[test]
    fn an_arm64_allocation_is_read_from_its_immediate() {
        assert_eq!(sub_sp_size("sp, sp, #0x10"), Ok(Some(16)));
        assert_eq!(sub_sp_size("sp, sp, #16"), Ok(Some(16)));
        assert_eq!(sub_sp_size("sp, sp, #1, lsl #12"), Ok(Some(4096)));
        assert_eq!(sub_sp_size("sp, sp, x8"), Ok(None));
        assert_eq!(sub_sp_size("sp, sp, #16 // =16"), Ok(None));
        assert!(sub_sp_size("sp, sp, #016").is_err());
        assert_eq!(sub_sp_size("sp, sp, #00"), Ok(Some(0)));
    }
}
