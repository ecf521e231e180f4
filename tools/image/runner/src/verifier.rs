//! Driver Verifier's rules, held to the image by the runner when `ppm-sim` loads it with
//! `verifier` (`ppm-sim ... --pep image --verifier`, docs/verifier.md):
//!
//! - IRQL: every import and KMDF call is checked against [`ddi_rules::RULES`] at the IRQL of
//!   the call the kernel made (`HIGH_LEVEL` while the image has interrupts disabled); a call
//!   above its documented IRQL is bug check 0xC4, as DDI compliance checking makes it.
//! - Low resources: every call of a routine that can fail is counted by (routine, site: the
//!   return address into the image); one named (routine, site, occurrence) fails, as
//!   Verifier's systematic low resources simulation would make it.
//! - Access faults: every RDMSR/WRMSR (x64) and Activity Monitors MRS (ARM64) is counted by
//!   (access, register, site); one named site faults, at boot or in a notification.
//! - Special pool: each block ends at the end of its own pages with an unmapped page after it;
//!   a freed block's pages are unmapped; the slack before a block is checked at free. Double
//!   frees, frees of what was never allocated, KMDF registry keys and ETW handles used after
//!   close or never issued are bug checks.
//! - Cost: the image's own instructions per notification, exact (a code hook on the image).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::ddi_rules::{
    self, APC_LEVEL, Failure, HIGH_LEVEL, PASSIVE_LEVEL, POOL_FLAG_PAGED, RULES, Rule,
    STATUS_INSUFFICIENT_RESOURCES,
};
use crate::layout::{PAGE, POOL, POOL_LIMIT};
use crate::outcome::Crash;
use crate::protocol::{Fatal, Message, integer, shown_value};

/// Bug check `DRIVER_VERIFIER_DETECTED_VIOLATION`.
pub const DRIVER_VERIFIER_DETECTED_VIOLATION: u64 = 0xC4;
/// Bug check `SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION`.
pub const SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION: u64 = 0xC1;
/// Bug check `DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL`.
pub const DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL: u64 = 0xCC;
/// Bug check `DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION`.
pub const DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION: u64 = 0xD6;
/// Bug check `INVALID_KERNEL_HANDLE`.
pub const INVALID_KERNEL_HANDLE: u64 = 0x93;
/// Bug check `WDF_VIOLATION`.
pub const WDF_VIOLATION: u64 = 0x10D;
/// Bug check 0xC4's Parameter 1 (the debugger's 0xC4 page): a free of an address no
/// allocation returned.
pub const VERIFIER_FREE_OF_UNALLOCATED: u64 = 0x10;
/// Bug check 0xC4's Parameter 1: a double free.
pub const VERIFIER_DOUBLE_FREE: u64 = 0x13;
/// Bug check 0xC4's Parameter 1: an invalid ETW registration handle passed to `EtwUnregister`.
pub const VERIFIER_INVALID_ETW_HANDLE: u64 = 0xDC;
/// `WDF_VIOLATION`'s Parameter 1 for an invalid handle.
pub const WDF_INVALID_HANDLE: u64 = 0x5;
/// The byte the special pool fills a block's leading slack with.
pub const SLACK: u8 = 0xB5;
/// A special-pool block's alignment.
pub const ALIGNMENT: u64 = 16;
/// The highest occurrence `fail` may name.
pub const MAX_OCCURRENCE: u64 = 1 << 20;
/// The Activity Monitors' system registers: op0 3, op1 3, `CRn` 13 (`AMCR_EL0` ..
/// `AMEVTYPER1n_EL0`): (op1, `CRn`).
pub const AMU_OP1_CRN: (u32, u32) = (3, 13);

/// What a failed call of a routine with `failure` returns.
#[must_use]
pub const fn injectable_failure(failure: Failure) -> u64 {
    match failure {
        Failure::Status => STATUS_INSUFFICIENT_RESOURCES,
        Failure::Null => 0,
    }
}

/// The self-test's switch (docs/verifier.md), an environment variable of the runner so that no
/// production type carries it: `skip-frees` (`ExFreePool` frees nothing, as if the image
/// skipped every free) or `max-irql=ROUTINE:IRQL` (ROUTINE's documented IRQL lowered, as if the
/// image called it higher than it does).
pub const TEST_SWITCH: &str = "PPM_VERIFIER_TEST";

/// The switch's value parsed: whether frees are skipped, and the lowered IRQLs by routine.
pub type TestSwitch = (bool, BTreeMap<&'static str, u8>);

/// (skip frees, lowered IRQLs) of the switch's value.
///
/// An IRQL past 255 is held as 255 (no call is above it, as none is above the larger figure).
///
/// # Errors
/// A value other than empty, `skip-frees` or `max-irql=ROUTINE:IRQL` with ROUTINE in
/// [`RULES`] and IRQL decimal digits.
pub fn test_switch(value: &str) -> Result<TestSwitch, Fatal> {
    if value.is_empty() {
        return Ok((false, BTreeMap::new()));
    }
    if value == "skip-frees" {
        return Ok((true, BTreeMap::new()));
    }
    if let Some(rest) = value.strip_prefix("max-irql=") {
        let (name, irql) = rest.split_once(':').unwrap_or((rest, ""));
        if let Some((ruled, _)) = ddi_rules::rule(name)
            && !irql.is_empty()
            && irql.bytes().all(|digit| digit.is_ascii_digit())
        {
            let number = irql.bytes().fold(0u64, |number, digit| {
                number.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
            });
            let irql = u8::try_from(number).unwrap_or(u8::MAX);
            return Ok((false, BTreeMap::from([(ruled, irql)])));
        }
    }
    Err(Fatal::new(format!(
        "{TEST_SWITCH}={}: 'skip-frees' or 'max-irql=ROUTINE:IRQL' (ROUTINE in ddi_rules)",
        shown_value(&Value::String(value.to_owned()))
    )))
}

/// Where a run is: `boot` (`DriverEntry`, device add, unload) or `runtime` (a notification).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// `DriverEntry`, device add, unload.
    Boot,
    /// A notification.
    Runtime,
}

impl Phase {
    /// `"boot"` or `"runtime"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Boot => "boot",
            Self::Runtime => "runtime",
        }
    }
}

/// One special-pool block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// What `ExAllocatePool2` returned.
    pub address: u64,
    /// The bytes asked for.
    pub size: u64,
    /// The first of its pages.
    pub first_page: u64,
    /// How many pages it has (the unmapped page after them not counted).
    pub pages: u64,
    /// Whether it is paged pool.
    pub paged: bool,
}

impl Block {
    /// The end of its pages (the unmapped page's start), exact.
    fn end(&self) -> u128 {
        u128::from(self.first_page) + u128::from(self.pages) * u128::from(PAGE)
    }
}

/// The call `fail` names: (routine, site, occurrence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailSpec {
    /// The routine.
    pub function: String,
    /// The return address into the image (an RVA).
    pub site: u64,
    /// Which call there, from 1.
    pub occurrence: u64,
}

/// The access `fault` names: (access, register, site, phase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// `rdmsr`, `wrmsr` or `mrs` (not checked: another never matches).
    pub access: String,
    /// The MSR or the system register's encoding.
    pub register: u64,
    /// Where, relative to the image base.
    pub site: u64,
    /// When.
    pub phase: Phase,
}

/// What was injected (the first match of `fail` or `fault`; nothing after it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injected {
    /// `fail`'s call failed, in `phase`.
    Fail(FailSpec, Phase),
    /// `fault`'s access faulted.
    Fault(FaultSpec),
}

impl Injected {
    /// As the report gives it: `fail`'s fields and the phase, or `fault`'s fields.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::Fail(fail, phase) => json!({
                "function": fail.function,
                "site": fail.site,
                "occurrence": fail.occurrence,
                "phase": phase.as_str(),
            }),
            Self::Fault(fault) => json!({
                "access": fault.access,
                "register": fault.register,
                "site": fault.site,
                "phase": fault.phase.as_str(),
            }),
        }
    }
}

/// A call above its IRQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqlViolation {
    /// The routine.
    pub function: String,
    /// The call's site.
    pub site: u64,
    /// The IRQL it was called at.
    pub irql: u8,
    /// The highest allowed.
    pub max_irql: u8,
    /// Where that is documented.
    pub doc: &'static str,
}

/// A bad free, an overwritten slack, an access to freed pool or beyond a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolViolation {
    /// What, in words.
    pub violation: String,
    /// The address freed or accessed.
    pub address: u64,
    /// The block accessed (accesses only).
    pub block: Option<u64>,
}

/// A handle used after close or never issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandleViolation {
    /// The routine it was passed to.
    pub function: String,
    /// The handle.
    pub handle: u64,
    /// `closed`, `never issued` or `not registered`.
    pub violation: &'static str,
}

/// A faulted `FEEDBACK_READ` and the later reads of the same handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultWatch {
    /// The handle (the notification's first argument).
    pub handle: u64,
    /// Whether the faulted read was answered TRUE.
    pub faulted_read_handled: bool,
    /// The reads of the same handle after it.
    pub later_reads: u64,
    /// How many of them were answered TRUE.
    pub later_reads_handled: u64,
}

/// The rules' state over one run (one load).
#[derive(Debug)]
pub struct Verifier {
    /// Whether the image's instructions are counted (`count`, default true).
    pub count_instructions: bool,
    /// The call to fail.
    pub fail: Option<FailSpec>,
    /// The access to fault.
    pub fault: Option<FaultSpec>,
    /// `skip-frees` of the test switch: `ExFreePool` frees nothing.
    pub skip_frees: bool,
    /// The rules, the test switch's lowered IRQL applied.
    rules: HashMap<&'static str, Rule>,
    /// The image's imported names, sorted, once each.
    pub imports: Vec<String>,
    /// Imports and called functions with no rule, in the order found.
    pub unruled: Vec<String>,
    /// Calls above their IRQL.
    pub irql_violations: Vec<IrqlViolation>,
    /// Calls of fallible routines by (routine, site).
    pub fallible: BTreeMap<(&'static str, u64), u64>,
    /// Accesses by (access, register, site, phase).
    pub accesses: BTreeMap<(&'static str, u64, u64, Phase), u64>,
    /// What was injected.
    pub injected: Option<Injected>,
    /// Notifications under way (a nested one runs inside another).
    pub depth: u32,
    /// The depth an access fault was injected at.
    pub injected_depth: u32,
    /// Where the run is.
    pub phase: Phase,
    /// The blocks allocated and not freed, by address: (insertion number, block).
    blocks: BTreeMap<u64, (u64, Block)>,
    /// The next block's insertion number: the order of allocation, which [`Self::outstanding`]
    /// lists blocks in and [`Self::pool_fault`] prefers the latest of.
    next_insertion: u64,
    /// The blocks freed, in order.
    pub freed: Vec<Block>,
    /// Blocks allocated.
    pub allocations: u64,
    /// Pool violations.
    pub pool_violations: Vec<PoolViolation>,
    /// The open KMDF registry keys.
    pub keys: BTreeSet<u64>,
    /// The closed ones (until reissued).
    pub closed_keys: BTreeSet<u64>,
    /// The ETW registration handles registered and not unregistered.
    pub etw: BTreeSet<u64>,
    /// Handle violations.
    pub handle_violations: Vec<HandleViolation>,
    /// Instructions per notification label: instructions -> calls.
    pub costs: BTreeMap<String, BTreeMap<u64, u64>>,
    /// A faulted read and the later ones of its handle.
    pub fault_watch: Option<FaultWatch>,
    /// Calls of the `PoFx` runtime services `PoFx` handed the image.
    pub pofx_calls: u64,
}

/// `options[key]`'s object with `fields` (strings for `function`, `phase` and `access`,
/// unsigned 64-bit integers otherwise), or `None` when absent or null.
fn spec<'a>(
    options: &'a Message,
    key: &str,
    fields: &[&str],
) -> Result<Option<&'a Message>, Fatal> {
    let spec = match options.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(spec)) => spec,
        Some(_) => return Err(Fatal::new(format!("load: verifier.{key} must be an object"))),
    };
    for field in fields {
        if matches!(*field, "function" | "phase" | "access") {
            if !matches!(spec.get(*field), Some(Value::String(_))) {
                return Err(Fatal::new(format!("load: verifier.{key}.{field} must be a string")));
            }
        } else {
            integer(spec, field, 64)?;
        }
    }
    Ok(Some(spec))
}

/// `spec[field]`, a string [`spec`] checked.
fn text(spec: &Message, field: &str) -> String {
    spec.get(field).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// Whether a JSON value counts as true: anything but `null`, `false`, zero, and an empty
/// string, array or object.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_none_or(|number| number != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

impl Verifier {
    /// The rules over the run `load` starts, from its `verifier` object and the image's
    /// imported names, with [`TEST_SWITCH`] read from the environment.
    ///
    /// # Errors
    /// `options` is not what `load`'s `verifier` allows, or the switch's value is not one.
    pub fn new<S: AsRef<str>>(
        options: &Value,
        imports: impl IntoIterator<Item = S>,
    ) -> Result<Self, Fatal> {
        let switch = std::env::var_os(TEST_SWITCH).unwrap_or_default();
        Self::with_switch(options, imports, &switch.to_string_lossy())
    }

    /// [`Verifier::new`] with the switch's value given.
    ///
    /// # Errors
    /// As [`Verifier::new`].
    pub fn with_switch<S: AsRef<str>>(
        options: &Value,
        imports: impl IntoIterator<Item = S>,
        switch: &str,
    ) -> Result<Self, Fatal> {
        let Value::Object(options) = options else {
            return Err(Fatal::new("load: 'verifier' must be an object"));
        };
        let count_instructions = options.get("count").is_none_or(truthy);
        let fail =
            spec(options, "fail", &["function", "site", "occurrence"])?.map(|spec| FailSpec {
                function: text(spec, "function"),
                site: integer(spec, "site", 64).unwrap_or_default(),
                occurrence: integer(spec, "occurrence", 64).unwrap_or_default(),
            });
        if let Some(fail) = &fail
            && !(1..=MAX_OCCURRENCE).contains(&fail.occurrence)
        {
            return Err(Fatal::new(format!(
                "load: verifier.fail.occurrence: 1..={MAX_OCCURRENCE}"
            )));
        }
        let fault = match spec(options, "fault", &["access", "register", "site", "phase"])? {
            None => None,
            Some(spec) => {
                let phase = match spec.get("phase").and_then(Value::as_str) {
                    Some("boot") => Phase::Boot,
                    Some("runtime") => Phase::Runtime,
                    _ => return Err(Fatal::new("load: verifier.fault.phase: 'boot' or 'runtime'")),
                };
                Some(FaultSpec {
                    access: text(spec, "access"),
                    register: integer(spec, "register", 64).unwrap_or_default(),
                    site: integer(spec, "site", 64).unwrap_or_default(),
                    phase,
                })
            }
        };
        let (skip_frees, lowered) = test_switch(switch)?;
        let rules = RULES
            .iter()
            .map(|&(name, rule)| {
                let max_irql = lowered.get(name).copied().unwrap_or(rule.max_irql);
                (name, Rule { max_irql, ..rule })
            })
            .collect::<HashMap<_, _>>();
        let imports: Vec<String> = imports
            .into_iter()
            .map(|name| name.as_ref().to_owned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let unruled =
            imports.iter().filter(|name| !rules.contains_key(name.as_str())).cloned().collect();
        Ok(Self {
            count_instructions,
            fail,
            fault,
            skip_frees,
            rules,
            imports,
            unruled,
            irql_violations: Vec::new(),
            fallible: BTreeMap::new(),
            accesses: BTreeMap::new(),
            injected: None,
            depth: 0,
            injected_depth: 0,
            phase: Phase::Boot,
            blocks: BTreeMap::new(),
            next_insertion: 0,
            freed: Vec::new(),
            allocations: 0,
            pool_violations: Vec::new(),
            keys: BTreeSet::new(),
            closed_keys: BTreeSet::new(),
            etw: BTreeSet::new(),
            handle_violations: Vec::new(),
            costs: BTreeMap::new(),
            fault_watch: None,
            pofx_calls: 0,
        })
    }

    // ---- IRQL and low resources ---------------------------------------------------------

    /// A call of `name` from `site` (an RVA; `address` where that is) at `irql`: the failure to
    /// inject, or `None` to serve the call.
    ///
    /// `argument(n)` reads the call's arguments (only the first is read: `ExAllocatePool2`'s
    /// flags, `ExFreePool`'s address); `passive_only` names what in them the documentation
    /// allows only at `PASSIVE_LEVEL` (`DbgPrintEx`'s Unicode conversions; empty: nothing).
    ///
    /// # Errors
    /// The bug check of a rule the call breaks (recorded in `irql_violations`).
    pub fn check_call(
        &mut self,
        name: &str,
        site: u64,
        irql: u8,
        argument: impl FnOnce(usize) -> u64,
        address: u64,
        passive_only: &str,
    ) -> Result<Option<u64>, Crash> {
        let Some((&ruled, &rule)) = self.rules.get_key_value(name) else {
            if !self.unruled.iter().any(|unruled| unruled == name) {
                self.unruled.push(name.to_owned());
            }
            return Ok(None);
        };
        let mut limit = rule.max_irql;
        let mut what = format!(
            "{name} at {}: allowed up to {}",
            ddi_rules::irql_name(irql),
            ddi_rules::irql_name(limit)
        );
        let mut code = rule.verifier_code;
        let mut paged = false;
        if name == "ExAllocatePool2" {
            paged = argument(0) & POOL_FLAG_PAGED != 0;
            if paged {
                code = ddi_rules::VERIFIER_PAGED_ALLOCATION_IRQL;
            }
        } else if name == "ExFreePool" {
            paged = self.block(argument(0)).is_some_and(|block| block.paged);
        }
        if paged {
            limit = limit.min(APC_LEVEL);
            what = format!(
                "{name} of paged pool at {}: allowed up to APC_LEVEL",
                ddi_rules::irql_name(irql)
            );
        }
        if !passive_only.is_empty() {
            limit = PASSIVE_LEVEL;
            what = format!(
                "{name} with {passive_only} at {}: allowed at PASSIVE_LEVEL only",
                ddi_rules::irql_name(irql)
            );
        }
        if irql > limit {
            self.irql_violations.push(IrqlViolation {
                function: name.to_owned(),
                site,
                irql,
                max_irql: limit,
                doc: rule.doc,
            });
            return Err(Crash::new(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [code, u64::from(irql), u64::from(limit), site],
                format!("Driver Verifier: {what} ({})", rule.doc),
                address,
            ));
        }
        let Some(failure) = rule.failure else {
            return Ok(None);
        };
        let calls = self.fallible.entry((ruled, site)).or_insert(0);
        *calls = calls.saturating_add(1);
        let occurrence = *calls;
        if let Some(fail) = &self.fail
            && self.injected.is_none()
            && fail.function == name
            && fail.site == site
            && fail.occurrence == occurrence
        {
            self.injected = Some(Injected::Fail(fail.clone(), self.phase));
            return Ok(Some(injectable_failure(failure)));
        }
        Ok(None)
    }

    // ---- access faults ------------------------------------------------------------------

    /// An RDMSR/WRMSR (`kind` `rdmsr`, `wrmsr`) of `register` or an Activity Monitors MRS
    /// (`mrs`) at `site`: whether this one must fault.
    pub fn access(&mut self, kind: &'static str, register: u64, site: u64) -> bool {
        let calls = self.accesses.entry((kind, register, site, self.phase)).or_insert(0);
        *calls = calls.saturating_add(1);
        let Some(fault) = &self.fault else {
            return false;
        };
        if self.injected.is_some()
            || fault.access != kind
            || fault.register != register
            || fault.site != site
            || fault.phase != self.phase
        {
            return false;
        }
        self.injected = Some(Injected::Fault(fault.clone()));
        self.injected_depth = self.depth;
        true
    }

    /// A notification labelled `label` with first argument `handle` returned (`handled`: its
    /// answer's low byte; `faulted`: an access faulted in it, not in a notification nested in
    /// it): follows a faulted `FEEDBACK_READ` to the later reads of the same handle (it
    /// refused, a later one accepted).
    pub fn call_done(&mut self, label: Option<&str>, handle: u64, handled: bool, faulted: bool) {
        if label != Some("ppm:10") {
            return;
        }
        if faulted {
            self.fault_watch = Some(FaultWatch {
                handle,
                faulted_read_handled: handled,
                later_reads: 0,
                later_reads_handled: 0,
            });
        } else if let Some(watch) = &mut self.fault_watch
            && watch.handle == handle
        {
            watch.later_reads = watch.later_reads.saturating_add(1);
            watch.later_reads_handled =
                watch.later_reads_handled.saturating_add(u64::from(handled));
        }
    }

    // ---- special pool -------------------------------------------------------------------

    /// Where a block of `size` bytes goes: at the end of its own pages from `next_free`, an
    /// unmapped page after it; `None` past the pool's limit.
    #[must_use]
    pub fn place(size: u64, next_free: u64) -> Option<Block> {
        let page = u128::from(PAGE);
        let (size_wide, next) = (u128::from(size), u128::from(next_free));
        let pages = size_wide.div_ceil(page).max(1);
        if next + (pages + 1) * page > u128::from(POOL) + u128::from(POOL_LIMIT) {
            return None;
        }
        let aligned = if size == 0 {
            u128::from(ALIGNMENT)
        } else {
            (size_wide + u128::from(ALIGNMENT) - 1) & !(u128::from(ALIGNMENT) - 1)
        };
        Some(Block {
            address: u64::try_from(next + pages * page - aligned).ok()?,
            size,
            first_page: next_free,
            pages: u64::try_from(pages).ok()?,
            paged: false,
        })
    }

    /// `block` was allocated (granted and mapped).
    pub fn allocated(&mut self, block: Block) {
        self.allocations = self.allocations.saturating_add(1);
        match self.blocks.entry(block.address) {
            Entry::Occupied(mut entry) => entry.get_mut().1 = block,
            Entry::Vacant(entry) => {
                entry.insert((self.next_insertion, block));
                self.next_insertion = self.next_insertion.saturating_add(1);
            }
        }
    }

    /// The block allocated at `address` and not freed.
    #[must_use]
    pub fn block(&self, address: u64) -> Option<&Block> {
        self.blocks.get(&address).map(|(_, block)| block)
    }

    /// The blocks allocated and not freed, in the order they were allocated.
    #[must_use]
    pub fn outstanding(&self) -> Vec<Block> {
        let mut blocks: Vec<&(u64, Block)> = self.blocks.values().collect();
        blocks.sort_unstable_by_key(|(insertion, _)| *insertion);
        blocks.into_iter().map(|(_, block)| *block).collect()
    }

    /// `ExFreePool(address)` from `site`, `slack` the bytes before the block: the block freed
    /// (its pages to unmap).
    ///
    /// # Errors
    /// The bug check of a bad free: an address never allocated or already freed, or a slack
    /// overwritten (the block is forgotten then: neither outstanding nor freed).
    pub fn free(&mut self, address: u64, site: u64, slack: &[u8]) -> Result<Block, Crash> {
        let Some((_, block)) = self.blocks.remove(&address) else {
            let freed = self.freed.iter().any(|old| old.address == address);
            let what = if freed { "already freed" } else { "never allocated" };
            self.pool_violations.push(PoolViolation {
                violation: format!("free of {what} pool"),
                address,
                block: None,
            });
            return Err(Crash::new(
                DRIVER_VERIFIER_DETECTED_VIOLATION,
                [
                    if freed { VERIFIER_DOUBLE_FREE } else { VERIFIER_FREE_OF_UNALLOCATED },
                    address,
                    0,
                    0,
                ],
                format!(
                    "Driver Verifier: ExFreePool({address:#x}) of pool {what} (from {site:#x})"
                ),
                0,
            ));
        };
        if slack.iter().any(|byte| *byte != SLACK) {
            self.pool_violations.push(PoolViolation {
                violation: "write before the block".to_owned(),
                address,
                block: None,
            });
            return Err(Crash::new(
                SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION,
                [address, 0, 0, 0x30],
                format!(
                    "Driver Verifier: the bytes before pool block {address:#x} were overwritten"
                ),
                0,
            ));
        }
        self.freed.push(block);
        Ok(block)
    }

    /// The bug check of an access (`write` or a read) to unmapped pool memory at `address` by
    /// the instruction at `pc`, or `None` when it is not the special pool's.
    pub fn pool_fault(&mut self, address: u64, write: bool, pc: u64) -> Option<Crash> {
        if !(POOL..POOL + POOL_LIMIT).contains(&address) {
            return None;
        }
        let wide = u128::from(address);
        let freed = self
            .freed
            .iter()
            .rev()
            .find(|block| u128::from(block.first_page) <= wide && wide < block.end())
            .map(|block| (*block, "access to freed pool", DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL));
        let beyond = self
            .blocks
            .values()
            .filter(|(_, block)| block.end() <= wide && wide < block.end() + u128::from(PAGE))
            .max_by_key(|(insertion, _)| *insertion)
            .map(|(_, block)| {
                (*block, "access beyond a block", DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION)
            });
        let (block, violation, code) = beyond.or(freed)?;
        self.pool_violations.push(PoolViolation {
            violation: violation.to_owned(),
            address,
            block: Some(block.address),
        });
        Some(Crash::new(
            code,
            [address, u64::from(write), pc, 0],
            format!(
                "Driver Verifier: {violation} at {address:#x} (the block of {} bytes at {:#x})",
                block.size, block.address
            ),
            pc,
        ))
    }

    // ---- handles ------------------------------------------------------------------------

    /// A KMDF registry key was opened.
    pub fn key_opened(&mut self, key: u64) {
        self.keys.insert(key);
        self.closed_keys.remove(&key);
    }

    /// `function` was passed the registry key `key` (`optional`: 0 allowed).
    ///
    /// # Errors
    /// `WDF_VIOLATION` for a key closed or never issued.
    pub fn key_used(&mut self, function: &str, key: u64, optional: bool) -> Result<(), Crash> {
        if (optional && key == 0) || self.keys.contains(&key) {
            return Ok(());
        }
        let what = if self.closed_keys.contains(&key) { "closed" } else { "never issued" };
        self.handle_violations.push(HandleViolation {
            function: function.to_owned(),
            handle: key,
            violation: what,
        });
        Err(Crash::new(
            WDF_VIOLATION,
            [WDF_INVALID_HANDLE, key, 0, 0],
            format!("Driver Verifier: {function} of the WDFKEY {key:#x}, {what}"),
            0,
        ))
    }

    /// `WdfRegistryClose(key)`.
    ///
    /// # Errors
    /// As [`Verifier::key_used`].
    pub fn key_closed(&mut self, key: u64) -> Result<(), Crash> {
        self.key_used("WdfRegistryClose", key, false)?;
        self.keys.remove(&key);
        self.closed_keys.insert(key);
        Ok(())
    }

    /// An ETW provider was registered as `handle`.
    pub fn etw_registered(&mut self, handle: u64) {
        self.etw.insert(handle);
    }

    /// `EtwUnregister(handle)` (after [`Verifier::etw_used`]).
    pub fn etw_unregistered(&mut self, handle: u64) {
        self.etw.remove(&handle);
    }

    /// `function` was passed the ETW registration handle `handle`.
    ///
    /// # Errors
    /// For a handle not registered: bug check 0xC4 (`EtwUnregister`) or
    /// `INVALID_KERNEL_HANDLE`.
    pub fn etw_used(&mut self, function: &str, handle: u64) -> Result<(), Crash> {
        if self.etw.contains(&handle) {
            return Ok(());
        }
        self.handle_violations.push(HandleViolation {
            function: function.to_owned(),
            handle,
            violation: "not registered",
        });
        let (code, parameters) = if function == "EtwUnregister" {
            (DRIVER_VERIFIER_DETECTED_VIOLATION, [VERIFIER_INVALID_ETW_HANDLE, handle, 0, 0])
        } else {
            (INVALID_KERNEL_HANDLE, [handle, 1, 0, 0])
        };
        Err(Crash::new(
            code,
            parameters,
            format!(
                "Driver Verifier: {function} of the ETW registration handle {handle:#x}, not registered"
            ),
            0,
        ))
    }

    // ---- cost ---------------------------------------------------------------------------

    /// A notification labelled `label` took `instructions` of the image's own.
    pub fn cost(&mut self, label: &str, instructions: u64) {
        let counts = if let Some(counts) = self.costs.get_mut(label) {
            counts
        } else {
            self.costs.entry(label.to_owned()).or_default()
        };
        let calls = counts.entry(instructions).or_insert(0);
        *calls = calls.saturating_add(1);
    }

    // ---- report -------------------------------------------------------------------------

    /// What the rules saw (`report`'s `verifier`); `kmdf_functions`: the KMDF functions the
    /// image called.
    ///
    /// `serde_json`'s map sorts its keys, so the keys come out sorted: `ppm-sim` parses the
    /// report into such a map, where any order is lost either way.
    pub fn report(&self, kmdf_functions: impl IntoIterator<Item = String>) -> Value {
        let injected = self.injected.as_ref().map(Injected::to_json);
        let instructions: serde_json::Map<String, Value> = self
            .costs
            .iter()
            .map(|(label, counts)| {
                let pairs: Vec<[u64; 2]> =
                    counts.iter().map(|(instructions, calls)| [*instructions, *calls]).collect();
                (label.clone(), json!(pairs))
            })
            .collect();
        json!({
            "irql": self.irql_report(kmdf_functions),
            "low_resources": {
                "sites": self.fallible_sites(),
                "injected": if self.fail.is_some() { &injected } else { &None },
            },
            "access_faults": {
                "sites": self.access_sites(),
                "injected": if self.fault.is_some() { &injected } else { &None },
                "read": self.fault_watch.map(|watch| json!({
                    "handle": watch.handle,
                    "faulted_read_handled": watch.faulted_read_handled,
                    "later_reads": watch.later_reads,
                    "later_reads_handled": watch.later_reads_handled,
                })),
            },
            "pool": self.pool_report(),
            "handles": {
                "keys_open": self.keys.len(),
                "etw_registered": self.etw.len(),
                "violations": self.handle_violations.iter().map(|violation| json!({
                    "function": violation.function,
                    "handle": violation.handle,
                    "violation": violation.violation,
                })).collect::<Vec<_>>(),
            },
            "pofx_calls": self.pofx_calls,
            "instructions": instructions,
        })
    }

    /// The report's `irql`.
    fn irql_report(&self, kmdf_functions: impl IntoIterator<Item = String>) -> Value {
        let mut kmdf: Vec<String> = kmdf_functions.into_iter().collect();
        kmdf.sort_unstable();
        let mut unruled = self.unruled.clone();
        unruled.sort_unstable();
        let violations: Vec<Value> = self
            .irql_violations
            .iter()
            .map(|violation| {
                json!({
                    "function": violation.function,
                    "site": violation.site,
                    "irql": violation.irql,
                    "max_irql": violation.max_irql,
                    "doc": violation.doc,
                })
            })
            .collect();
        json!({
            "imports": self.imports,
            "kmdf_functions": kmdf,
            "unruled": unruled,
            "violations": violations,
        })
    }

    /// The report's `low_resources.sites`: by routine, then site.
    fn fallible_sites(&self) -> Vec<Value> {
        self.fallible
            .iter()
            .map(|((function, site), calls)| {
                json!({"function": function, "site": site, "calls": calls})
            })
            .collect()
    }

    /// The report's `access_faults.sites`: by access, register, site, then phase.
    fn access_sites(&self) -> Vec<Value> {
        self.accesses
            .iter()
            .map(|((kind, register, site, phase), calls)| {
                json!({
                    "access": kind,
                    "register": register,
                    "site": site,
                    "phase": phase.as_str(),
                    "calls": calls,
                })
            })
            .collect()
    }

    /// The report's `pool`.
    fn pool_report(&self) -> Value {
        let outstanding: Vec<Value> = self
            .outstanding()
            .iter()
            .map(|block| json!({"address": block.address, "bytes": block.size}))
            .collect();
        let violations: Vec<Value> = self
            .pool_violations
            .iter()
            .map(|violation| {
                let mut entry =
                    json!({"violation": violation.violation, "address": violation.address});
                if let (Some(block), Value::Object(map)) = (violation.block, &mut entry) {
                    map.insert("block".to_owned(), block.into());
                }
                entry
            })
            .collect();
        json!({
            "allocations": self.allocations,
            "outstanding": outstanding,
            "violations": violations,
        })
    }
}

/// Whether an MRS of the system register `encoding` (op0, op1, `CRn`, `CRm`, op2) reads an Activity
/// Monitors register.
#[must_use]
pub const fn is_activity_monitor(encoding: [u32; 5]) -> bool {
    let [op0, op1, crn, _, _] = encoding;
    op0 == 3 && op1 == AMU_OP1_CRN.0 && crn == AMU_OP1_CRN.1
}

/// The IRQL a call's rules are checked at: with interrupts disabled nothing but a routine
/// callable at any IRQL may run.
#[must_use]
pub const fn effective_irql(irql: u8, interrupts: bool) -> u8 {
    if interrupts { irql } else { HIGH_LEVEL }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddi_rules::{DIRQL_MAX, DISPATCH_LEVEL};

    /// A verifier over `options` and the imports `names` (`ExAllocatePool2`, `ExFreePool` if
    /// none), the test switch off.
    fn make_with(options: &Value, names: &[&str]) -> Verifier {
        Verifier::with_switch(options, names.iter().copied(), "").expect("valid options")
    }

    /// A verifier with no options over `ExAllocatePool2` and `ExFreePool`.
    fn make() -> Verifier {
        make_with(&json!({}), &["ExAllocatePool2", "ExFreePool"])
    }

    /// `argument(n)` of a call whose arguments are all 0.
    const fn no_arguments(_: usize) -> u64 {
        0
    }

    #[test]
    fn a_call_above_its_irql_is_bug_check_0xc4_and_recorded() {
        let mut rules = make();
        assert_eq!(
            rules.check_call("ExAllocatePool2", 0x40, DISPATCH_LEVEL, no_arguments, 0, ""),
            Ok(None)
        );
        let crash = rules
            .check_call("ExAllocatePool2", 0x40, HIGH_LEVEL, no_arguments, 0x1040, "")
            .expect_err("above DISPATCH_LEVEL");
        assert_eq!(crash.code, 0xC4);
        assert_eq!(crash.parameters[0], 0x02); // a nonpaged allocation above DISPATCH_LEVEL
        assert_eq!(crash.address, 0x1040);
        assert_eq!(rules.irql_violations[0].function, "ExAllocatePool2");
    }

    #[test]
    fn paged_pool_is_allowed_up_to_apc_level_only() {
        let mut rules = make();
        let paged = |index: usize| if index == 0 { POOL_FLAG_PAGED } else { 0 };
        assert_eq!(rules.check_call("ExAllocatePool2", 0, APC_LEVEL, paged, 0, ""), Ok(None));
        let crash = rules
            .check_call("ExAllocatePool2", 0, DISPATCH_LEVEL, paged, 0, "")
            .expect_err("paged above APC_LEVEL");
        assert_eq!(crash.parameters[0], 0x01); // a paged allocation above APC_LEVEL
        let mut block = Verifier::place(8, POOL).expect("room");
        block.paged = true;
        rules.allocated(block);
        let freeing = |index: usize| if index == 0 { block.address } else { 0 };
        assert_eq!(rules.check_call("ExFreePool", 0, APC_LEVEL, freeing, 0, ""), Ok(None));
        assert!(rules.check_call("ExFreePool", 0, DISPATCH_LEVEL, freeing, 0, "").is_err());
    }

    #[test]
    fn an_import_without_a_rule_is_unruled() {
        let mut rules = make_with(&json!({}), &["ExFreePool", "ZwMadeUp"]);
        assert_eq!(rules.unruled, ["ZwMadeUp"]);
        assert_eq!(rules.check_call("ZwMadeUp", 0, HIGH_LEVEL, no_arguments, 0, ""), Ok(None));
    }

    #[test]
    fn the_named_occurrence_of_a_site_fails_once() {
        let mut rules = make_with(
            &json!({"fail": {"function": "ExAllocatePool2", "site": 0x40, "occurrence": 2}}),
            &["ExAllocatePool2", "ExFreePool"],
        );
        let mut call = |site| rules.check_call("ExAllocatePool2", site, 0, no_arguments, 0, "");
        assert_eq!(call(0x40), Ok(None));
        assert_eq!(call(0x80), Ok(None)); // another site
        assert_eq!(call(0x40), Ok(Some(0))); // NULL: the second call there
        assert_eq!(call(0x40), Ok(None));
        assert!(matches!(&rules.injected, Some(Injected::Fail(fail, _)) if fail.occurrence == 2));
        let mut status = make_with(
            &json!({"fail": {"function": "EtwRegister", "site": 1, "occurrence": 1}}),
            &["ExAllocatePool2", "ExFreePool"],
        );
        assert_eq!(
            status.check_call("EtwRegister", 1, 0, no_arguments, 0, ""),
            Ok(Some(0xC000_009A))
        );
    }

    #[test]
    fn an_access_faults_only_at_its_site_register_and_phase() {
        let fault = json!({"access": "rdmsr", "register": 0xE8, "site": 0x10, "phase": "runtime"});
        let mut rules = make_with(&json!({ "fault": fault }), &["ExAllocatePool2", "ExFreePool"]);
        assert!(!rules.access("rdmsr", 0xE8, 0x10)); // at boot
        rules.phase = Phase::Runtime;
        assert!(!rules.access("rdmsr", 0xE7, 0x10));
        assert!(rules.access("rdmsr", 0xE8, 0x10));
        assert!(!rules.access("rdmsr", 0xE8, 0x10)); // once
        let report = rules.report([]);
        let sites = report["access_faults"]["sites"].as_array().expect("a list");
        let boot =
            json!({"access": "rdmsr", "register": 0xE8, "site": 0x10, "phase": "boot", "calls": 1});
        assert!(sites.contains(&boot), "{sites:?}");
    }

    #[test]
    fn special_pool_ends_a_block_at_its_page_end_and_classifies_faults() {
        let mut rules = make();
        let block = Verifier::place(40, POOL).expect("room");
        assert_eq!(block.address, POOL + PAGE - 48);
        assert_eq!(block.pages, 1);
        rules.allocated(block);
        let beyond = rules.pool_fault(POOL + PAGE + 8, true, 0).expect("beyond the block");
        assert_eq!(beyond.code, 0xD6);
        let slack = vec![SLACK; usize::try_from(block.address - block.first_page).expect("small")];
        assert_eq!(rules.free(block.address, 0, &slack), Ok(block));
        let freed = rules.pool_fault(block.address, false, 0).expect("freed");
        assert_eq!(freed.code, 0xCC);
        let crash = rules.free(block.address, 0, b"").expect_err("a double free");
        assert_eq!((crash.code, crash.parameters[0]), (0xC4, 0x13)); // double free
    }

    #[test]
    fn an_overwritten_slack_is_found_at_free() {
        let mut rules = make();
        let block = Verifier::place(24, POOL).expect("room");
        rules.allocated(block);
        let slack = vec![0; usize::try_from(block.address - block.first_page).expect("small")];
        let crash = rules.free(block.address, 0, &slack).expect_err("overwritten");
        assert_eq!(crash.code, 0xC1);
    }

    #[test]
    fn a_key_used_after_close_or_never_issued_is_a_wdf_violation() {
        let mut rules = make();
        rules.key_opened(7);
        assert_eq!(rules.key_used("WdfRegistryQueryValue", 7, false), Ok(()));
        assert_eq!(rules.key_used("WdfRegistryOpenKey", 0, true), Ok(()));
        assert_eq!(rules.key_closed(7), Ok(()));
        let crash = rules.key_used("WdfRegistryQueryValue", 7, false).expect_err("closed");
        assert_eq!((crash.code, crash.parameters[0]), (0x10D, 0x5));
        assert!(rules.key_closed(9).is_err());
        let violations: Vec<&str> =
            rules.handle_violations.iter().map(|entry| entry.violation).collect();
        assert_eq!(violations, ["closed", "never issued"]);
    }

    #[test]
    fn the_test_switch_is_parsed_or_refused() {
        assert_eq!(test_switch("").ok(), Some((false, BTreeMap::new())));
        assert_eq!(test_switch("skip-frees").ok(), Some((true, BTreeMap::new())));
        assert_eq!(
            test_switch("max-irql=ExFreePool:0").ok(),
            Some((false, BTreeMap::from([("ExFreePool", 0)])))
        );
        for bad in ["skip", "max-irql=NoSuchRoutine:0", "max-irql=ExFreePool:high"] {
            assert!(test_switch(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_faulted_read_is_followed_to_the_later_reads_of_its_handle() {
        let mut rules = make();
        rules.call_done(Some("ppm:10"), 5, false, true);
        rules.call_done(Some("ppm:10"), 6, true, false); // another processor
        rules.call_done(Some("ppm:1"), 5, true, false); // another notification
        rules.call_done(Some("ppm:10"), 5, true, false);
        assert_eq!(
            rules.fault_watch,
            Some(FaultWatch {
                handle: 5,
                faulted_read_handled: false,
                later_reads: 1,
                later_reads_handled: 1,
            })
        );
    }

    #[test]
    fn costs_are_reported_as_a_histogram() {
        let mut rules = make();
        for instructions in [200, 33, 200] {
            rules.cost("ppm:10", instructions);
        }
        assert_eq!(rules.report([])["instructions"], json!({"ppm:10": [[33, 1], [200, 2]]}));
    }

    #[test]
    fn a_malformed_request_is_refused() {
        let names = ["ExAllocatePool2", "ExFreePool"];
        let zero = json!({"fail": {"function": "ExFreePool", "site": 1, "occurrence": 0}});
        assert!(Verifier::with_switch(&zero, names, "").is_err());
        let later =
            json!({"fault": {"access": "rdmsr", "register": 1, "site": 1, "phase": "later"}});
        assert!(Verifier::with_switch(&later, names, "").is_err());
    }

    #[test]
    fn dbgprintex_unicode_conversions_are_passive_only() {
        // (Which conversions are Unicode ones: printf.rs's `unicode_conversions` tests.)
        let mut rules = make_with(&json!({}), &["DbgPrintEx"]);
        assert_eq!(rules.check_call("DbgPrintEx", 0, DIRQL_MAX, no_arguments, 0, ""), Ok(None));
        // Above DIRQL: interrupts disabled.
        assert!(rules.check_call("DbgPrintEx", 0, HIGH_LEVEL, no_arguments, 0, "").is_err());
        assert!(rules.check_call("DbgPrintEx", 0, APC_LEVEL, no_arguments, 0, "%ws").is_err());
        assert_eq!(
            rules.check_call("DbgPrintEx", 0, PASSIVE_LEVEL, no_arguments, 0, "%ws"),
            Ok(None)
        );
    }

    /// The calls [`the_report_holds_what_the_replayed_calls_did`] replays, their answers checked
    /// on the way: one failure injected (and so no access fault), an unruled KMDF function, a
    /// block freed and accessed, one accessed beyond its end, a bad free, a bad key, a cost.
    fn replayed() -> Verifier {
        let options = json!({
            "fail": {"function": "EtwRegister", "site": 0x20, "occurrence": 1},
            "fault": {"access": "rdmsr", "register": 0xE8, "site": 0x10, "phase": "runtime"},
        });
        let mut rules =
            Verifier::with_switch(&options, ["ExFreePool", "ZwMadeUp", "ExFreePool"], "")
                .expect("valid options");
        assert_eq!(
            rules.check_call("EtwRegister", 0x20, 0, no_arguments, 0, ""),
            Ok(Some(STATUS_INSUFFICIENT_RESOURCES))
        );
        assert_eq!(
            rules.check_call("KMDF 1.31 function 300", 0x40, 2, no_arguments, 0, ""),
            Ok(None)
        );
        rules.phase = Phase::Runtime;
        assert!(!rules.access("rdmsr", 0xE8, 0x10)); // the failed call was the injection
        assert!(!rules.access("wrmsr", 0xE8, 0x10));
        rules.call_done(Some("ppm:10"), 4, false, true);
        let first = Verifier::place(40, POOL).expect("room");
        rules.allocated(first);
        let second = Verifier::place(5000, first.first_page + 2 * PAGE).expect("room");
        rules.allocated(second);
        assert_eq!((second.address, second.pages), (0x000f_f801_6000_2c70, 2));
        let slack = vec![SLACK; usize::try_from(first.address - first.first_page).expect("small")];
        assert_eq!(rules.free(first.address, 0x30, &slack), Ok(first));
        let what = |crash: Option<Crash>| crash.map(|crash| crash.what);
        assert_eq!(
            what(rules.pool_fault(first.address, false, 0x50)).as_deref(),
            Some(
                "Driver Verifier: access to freed pool at 0xff80160000fd0 (the block of 40 bytes \
                 at 0xff80160000fd0)"
            )
        );
        assert_eq!(
            what(rules.pool_fault(second.first_page + 2 * PAGE + 1, true, 0x60)).as_deref(),
            Some(
                "Driver Verifier: access beyond a block at 0xff80160004001 (the block of 5000 \
                 bytes at 0xff80160002c70)"
            )
        );
        assert_eq!(
            what(rules.free(0x99, 0x30, b"").err()).as_deref(),
            Some("Driver Verifier: ExFreePool(0x99) of pool never allocated (from 0x30)")
        );
        rules.key_opened(7);
        assert_eq!(
            what(rules.key_closed(9).err()).as_deref(),
            Some("Driver Verifier: WdfRegistryClose of the WDFKEY 0x9, never issued")
        );
        rules.etw_registered(1);
        rules.cost("ppm:10", 200);
        rules.pofx_calls += 1;
        rules
    }

    #[test]
    fn the_report_holds_what_the_replayed_calls_did() {
        // The whole report of those calls, every section.
        let rules = replayed();
        let injected =
            json!({"function": "EtwRegister", "site": 32, "occurrence": 1, "phase": "boot"});
        assert_eq!(
            rules.report(["WdfDriverCreate".to_owned()]),
            json!({
                "irql": {
                    "imports": ["ExFreePool", "ZwMadeUp"],
                    "kmdf_functions": ["WdfDriverCreate"],
                    "unruled": ["KMDF 1.31 function 300", "ZwMadeUp"],
                    "violations": [],
                },
                "low_resources": {
                    "sites": [{"function": "EtwRegister", "site": 32, "calls": 1}],
                    "injected": injected,
                },
                "access_faults": {
                    "sites": [
                        {"access": "rdmsr", "register": 232, "site": 16, "phase": "runtime",
                         "calls": 1},
                        {"access": "wrmsr", "register": 232, "site": 16, "phase": "runtime",
                         "calls": 1},
                    ],
                    "injected": injected,
                    "read": {"handle": 4, "faulted_read_handled": false, "later_reads": 0,
                             "later_reads_handled": 0},
                },
                "pool": {
                    "allocations": 2,
                    "outstanding": [{"address": 4_494_809_439_939_696_u64, "bytes": 5000}],
                    "violations": [
                        {"violation": "access to freed pool", "address": 4_494_809_439_932_368_u64,
                         "block": 4_494_809_439_932_368_u64},
                        {"violation": "access beyond a block", "address": 4_494_809_439_944_705_u64,
                         "block": 4_494_809_439_939_696_u64},
                        {"violation": "free of never allocated pool", "address": 153},
                    ],
                },
                "handles": {
                    "keys_open": 1,
                    "etw_registered": 1,
                    "violations": [
                        {"function": "WdfRegistryClose", "handle": 9, "violation": "never issued"},
                    ],
                },
                "pofx_calls": 1,
                "instructions": {"ppm:10": [[200, 1]]},
            })
        );
    }

    #[test]
    fn a_malformed_verifier_object_or_switch_is_refused_with_its_text() {
        let refused = |options: Value| {
            Verifier::with_switch(&options, [""; 0], "").map(|_| ()).map_err(|error| error.0)
        };
        let fail = |spec: Value| refused(json!({ "fail": spec }));
        let fault = |spec: Value| refused(json!({ "fault": spec }));
        let not_an_object = Err("load: 'verifier' must be an object".to_owned());
        assert_eq!(refused(Value::Null), not_an_object);
        assert_eq!(refused(json!([])), not_an_object);
        assert_eq!(fail(json!(1)), Err("load: verifier.fail must be an object".to_owned()));
        assert_eq!(
            fail(json!({"function": 1})),
            Err("load: verifier.fail.function must be a string".to_owned())
        );
        for occurrence in [0, MAX_OCCURRENCE + 1] {
            assert_eq!(
                fail(json!({"function": "x", "site": 1, "occurrence": occurrence})),
                Err("load: verifier.fail.occurrence: 1..=1048576".to_owned())
            );
        }
        assert!(fail(json!({"function": "x", "site": -1, "occurrence": 1})).is_err());
        assert!(fail(json!({"function": "x", "site": 1, "occurrence": true})).is_err());
        assert_eq!(
            fault(json!({"access": "rdmsr", "register": 1, "site": 1, "phase": "x"})),
            Err("load: verifier.fault.phase: 'boot' or 'runtime'".to_owned())
        );
        assert_eq!(
            fault(json!({"access": "rdmsr", "register": 1, "site": 1})),
            Err("load: verifier.fault.phase must be a string".to_owned())
        );
        assert!(
            fault(json!({"access": "rdmsr", "register": 1.5, "site": 1, "phase": "boot"})).is_err()
        );
        assert_eq!(
            refused(
                json!({"fail": {"function": "x", "site": 1, "occurrence": 1}, "fault": {"access": 5}})
            ),
            Err("load: verifier.fault.access must be a string".to_owned())
        );
        assert_eq!(refused(json!({"fail": null, "fault": null, "count": null})), Ok(()));
        assert_eq!(
            test_switch("max-irql=ExFreePool:x").map(|_| ()).map_err(|error| error.0),
            Err("PPM_VERIFIER_TEST='max-irql=ExFreePool:x': 'skip-frees' or \
                 'max-irql=ROUTINE:IRQL' (ROUTINE in ddi_rules)"
                .to_owned())
        );
    }

    #[test]
    fn count_is_truthy_and_the_switch_lowers_a_rule() {
        let counting = |options: Value| {
            Verifier::with_switch(&options, [""; 0], "").map(|rules| rules.count_instructions)
        };
        assert_eq!(counting(json!({})).ok(), Some(true));
        for falsy in
            [json!(null), json!(false), json!(0), json!(0.0), json!(""), json!([]), json!({})]
        {
            assert_eq!(counting(json!({ "count": falsy })).ok(), Some(false));
        }
        assert_eq!(counting(json!({"count": "no"})).ok(), Some(true));
        let mut lowered =
            Verifier::with_switch(&json!({}), ["ExFreePool"], "max-irql=ExFreePool:0")
                .expect("valid switch");
        let crash = lowered
            .check_call("ExFreePool", 0x10, APC_LEVEL, no_arguments, 0, "")
            .expect_err("lowered to PASSIVE_LEVEL");
        assert_eq!(crash.parameters, [0x11, 1, 0, 0x10]);
        let skipping = Verifier::with_switch(&json!({}), ["ExFreePool"], "skip-frees");
        assert!(skipping.is_ok_and(|rules| rules.skip_frees));
        assert_eq!(
            test_switch("max-irql=ExFreePool:99999999999999999999").ok(),
            Some((false, BTreeMap::from([("ExFreePool", u8::MAX)])))
        );
    }

    #[test]
    fn placement_never_overflows_and_the_helpers_answer() {
        assert_eq!(Verifier::place(u64::MAX, POOL), None);
        assert_eq!(Verifier::place(0, u64::MAX), None);
        assert_eq!(
            Verifier::place(PAGE, POOL + POOL_LIMIT - 2 * PAGE).map(|block| block.pages),
            Some(1)
        );
        assert_eq!(Verifier::place(PAGE + 1, POOL + POOL_LIMIT - 2 * PAGE), None);
        let empty = Verifier::place(0, POOL).expect("room");
        assert_eq!((empty.address, empty.pages), (POOL + PAGE - ALIGNMENT, 1));
        assert!(is_activity_monitor([3, 3, 13, 4, 0]));
        assert!(!is_activity_monitor([3, 3, 14, 0, 2]));
        assert!(!is_activity_monitor([2, 3, 13, 4, 0]));
        assert_eq!(effective_irql(2, true), 2);
        assert_eq!(effective_irql(2, false), HIGH_LEVEL);
    }
}
