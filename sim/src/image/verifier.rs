//! Driver Verifier's rules on the image (`--pep image --verifier`, docs/verifier.md).
//!
//! The runner holds the image to the rules while it runs it (`verifier.py` beside the runner:
//! IRQL per import and KMDF call, special pool, handles, the image's instruction count per
//! notification) and reports what it saw: every fallible call site and every counter access
//! site the run reached. This module asks for that ([`VerifierOptions`]), tells the runner at
//! which IRQL each notification is made ([`notification_context`]), turns a run's report into
//! its checks ([`run_checks`]), and plans and judges the systematic part, which
//! `crate::verify_image` runs: one run per fallible call site and occurrence with that call
//! failing ([`injections`]: low resources simulation), one run per access site and phase with
//! that access faulting, each judged by what the documentation says that failure must end in
//! ([`judge_injected`], [`verdict`]).

use std::collections::BTreeMap;

use ppm_engine::abi::{NTSTATUS, PEP_NOTIFY_PPM_FEEDBACK_READ};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::checks::CheckResult;

pub use ppm_engine::notification::{DISPATCH_LEVEL, HIGH_LEVEL, PASSIVE_LEVEL};

/// How many of a scenario's reads an injected run makes first ([`shortened`]).
pub const INJECTED_SAMPLES: u32 = 4;

/// `scenario` cut to its first [`INJECTED_SAMPLES`] reads and the events before them.
///
/// A call failing in `DriverEntry`, or a counter access faulting at the first reads, needs no more (an
/// injection not reached there runs again on the whole scenario).
#[must_use]
pub fn shortened(scenario: &crate::scenario::Scenario) -> crate::scenario::Scenario {
    let mut short = scenario.clone();
    let pofx = scenario.pofx;
    let end = pofx.sample_interval_ms.saturating_mul(INJECTED_SAMPLES).min(pofx.duration_ms);
    short.pofx.duration_ms = end;
    short.events.retain(|event| event.at_ms <= end);
    short
}

/// How many times a fallible call site inside a loop is failed, each in its own run: its
/// first `LOOP_OCCURRENCES` calls.
pub const LOOP_OCCURRENCES: u64 = 3;

/// The instructions the image may execute for one `FEEDBACK_READ`, per architecture.
///
/// Its own instructions (the kernel's routines and the counter reads' emulation are not
/// counted): (median, most) over every read of a run or suite — the measured figures
/// (docs/verifier.md) and a margin of about 10 %.
pub const FEEDBACK_READ_BUDGET: [(&str, (u64, u64)); 2] =
    [("x64", (220, 380)), ("arm64", (155, 210))];

/// What the runner is asked to hold the image to, beside the rules it always applies with
/// `verifier`: one call to fail or one access to fault.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifierOptions {
    /// The fallible call to fail: (routine, site RVA, occurrence from 1).
    pub fail: Option<(String, u64, u64)>,
    /// The access to fault: (access, register, site RVA, phase).
    pub fault: Option<AccessSite>,
}

impl VerifierOptions {
    /// The `verifier` object of the runner's `load` command.
    #[must_use]
    pub fn load_message(&self) -> Value {
        let mut message = json!({"count": true});
        if let Some((function, site, occurrence)) = &self.fail {
            message["fail"] = json!({"function": function, "site": site, "occurrence": occurrence});
        }
        if let Some(fault) = &self.fault {
            message["fault"] = json!({
                "access": fault.access,
                "register": fault.register,
                "site": fault.site,
                "phase": fault.phase,
            });
        }
        message
    }
}

/// The IRQL `PoFx` makes a notification at, and the label the runner counts it under.
///
/// The IRQL is the highest the documentation allows, from the engine's notification table
/// ([`ppm_engine::notification::irql_of`]); an id the documentation does not define is made at
/// `HIGH_LEVEL` (the callbacks' own limit).
#[must_use]
pub fn notification_context(ppm: bool, notification: u32) -> (u8, String) {
    use ppm_engine::notification::{Callback, irql_of};
    let callback = if ppm { Callback::Ppm } else { Callback::Dpm };
    let irql = irql_of(callback, notification).unwrap_or(HIGH_LEVEL);
    (irql, format!("{}:{notification}", if ppm { "ppm" } else { "dpm" }))
}

/// Whether the kernel makes this notification with interrupts disabled when it may (the
/// documented worst case): `FEEDBACK_READ`.
#[must_use]
pub const fn may_disable_interrupts(ppm: bool, notification: u32) -> bool {
    ppm && notification == PEP_NOTIFY_PPM_FEEDBACK_READ
}

/// One counter access site.
///
/// An `RDMSR`/`WRMSR` of `register` (x64) or an Activity Monitors `MRS` (`register` its
/// op0:op1:CRn:CRm:op2 encoding), at `site` (an RVA), in `phase` (`boot`: `DriverEntry` and
/// device add; `runtime`: a notification).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct AccessSite {
    /// `rdmsr`, `wrmsr` or `mrs`.
    pub access: String,
    /// The MSR or the system register.
    pub register: u64,
    /// Where, relative to the image base.
    pub site: u64,
    /// `boot` or `runtime`.
    pub phase: String,
}

/// What the runner's verifier reported of one run (`report`'s `verifier`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct RunnerVerdict {
    /// The IRQL rule.
    pub irql: IrqlReport,
    /// The fallible calls reached.
    pub low_resources: SitesReport<FallibleSite>,
    /// The counter accesses reached.
    pub access_faults: AccessReport,
    /// The special pool.
    pub pool: PoolReport,
    /// KMDF registry keys and ETW registrations.
    pub handles: HandleReport,
    /// Calls of the `PoFx` runtime services `PoFx` handed the image.
    #[serde(default)]
    pub pofx_calls: u64,
    /// The image's instructions per notification label (`ppm:10`).
    pub instructions: BTreeMap<String, Cost>,
}

/// The IRQL rule in one run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct IrqlReport {
    /// The image's imported functions.
    pub imports: Vec<String>,
    /// The KMDF functions it called.
    pub kmdf_functions: Vec<String>,
    /// Imports and KMDF functions with no rule.
    pub unruled: Vec<String>,
    /// Calls above their IRQL.
    pub violations: Vec<Value>,
}

/// Sites reached, and what was injected at one of them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct SitesReport<T> {
    /// Every site reached, with its calls.
    pub sites: Vec<T>,
    /// What was injected (when asked).
    pub injected: Option<Value>,
}

/// One fallible call site reached.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct FallibleSite {
    /// The routine.
    pub function: String,
    /// The return address into the image (an RVA).
    pub site: u64,
    /// How many times it was called there.
    pub calls: u64,
}

/// The access sites reached, what was faulted, and the reads around a faulted read.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct AccessReport {
    /// Every access site reached.
    pub sites: Vec<ReachedAccess>,
    /// What was faulted (when asked).
    pub injected: Option<Value>,
    /// A faulted `FEEDBACK_READ`'s answer and the later reads' of the same handle.
    pub read: Option<ReadAfterFault>,
}

/// One access site reached.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct ReachedAccess {
    /// The site.
    #[serde(flatten)]
    pub site: AccessSite,
    /// How many times.
    pub calls: u64,
}

/// A faulted `FEEDBACK_READ` and the later reads of the same handle.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct ReadAfterFault {
    /// Whether the faulted read was answered TRUE.
    pub faulted_read_handled: bool,
    /// The reads of the same handle after it.
    pub later_reads: u64,
    /// How many of them were answered TRUE.
    pub later_reads_handled: u64,
}

/// The special pool in one run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct PoolReport {
    /// Blocks allocated.
    pub allocations: u64,
    /// Blocks still allocated at the end.
    pub outstanding: Vec<Value>,
    /// Bad frees, overruns, accesses to freed pool.
    pub violations: Vec<Value>,
}

/// Handles in one run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct HandleReport {
    /// KMDF registry keys open at the end.
    pub keys_open: u64,
    /// ETW registrations left at the end.
    pub etw_registered: u64,
    /// Handles used after close or never issued.
    pub violations: Vec<Value>,
}

/// The image's instructions for one notification label: (instructions, calls) pairs, fewest
/// first.
pub type Cost = Vec<(u64, u64)>;

/// The median of a cost histogram (0 when empty).
fn median(histogram: &BTreeMap<u64, u64>) -> u64 {
    let calls: u64 = histogram.values().sum();
    let mut seen = 0;
    for (instructions, count) in histogram {
        seen += count;
        if seen * 2 >= calls {
            return *instructions;
        }
    }
    0
}

/// The runner's verdict in a run's `report`, if it ran with `verifier`.
///
/// # Errors
/// When the report's `verifier` object is not what the runner writes.
pub fn runner_verdict(
    report: &serde_json::Map<String, Value>,
) -> Result<Option<RunnerVerdict>, String> {
    match report.get("verifier") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|error| format!("the runner's verifier report: {error}")),
    }
}

impl RunnerVerdict {
    /// Its IRQL violations, in words ([`irql_violation`]).
    fn irql_violations(&self) -> impl Iterator<Item = String> + '_ {
        self.irql.violations.iter().map(irql_violation)
    }

    /// Its special-pool and handle violations, as the runner reported them.
    fn pool_violations(&self) -> impl Iterator<Item = String> + '_ {
        self.pool.violations.iter().chain(&self.handles.violations).map(Value::to_string)
    }
}

/// An IRQL violation as the runner reports it, in words: `ROUTINE called at IRQL N from
/// 0xSITE, allowed up to M (DOC)`.
fn irql_violation(violation: &Value) -> String {
    let field = |name: &str| violation.get(name).cloned().unwrap_or(Value::Null);
    let number = |name: &str| field(name).as_u64().unwrap_or_default();
    format!(
        "{} called at IRQL {} from {:#x}, allowed up to IRQL {} ({})",
        field("function").as_str().unwrap_or("?"),
        number("irql"),
        number("site"),
        number("max_irql"),
        field("doc").as_str().unwrap_or("?")
    )
}

/// A run's checks: `image.irql` and `image.pool`.
///
/// `image.irql`: every call within its IRQL, every import ruled. `image.pool`: no bad free,
/// overrun, access to freed pool, handle misuse, or [`leaks`] after `DriverEntry` returned
/// `status` and a PEP was `published` or not.
#[must_use]
pub fn run_checks(verdict: &RunnerVerdict, status: NTSTATUS, published: bool) -> Vec<CheckResult> {
    let irql = &verdict.irql;
    let irql_check = if irql.violations.is_empty() && irql.unruled.is_empty() {
        CheckResult::new(
            "image.irql",
            true,
            format!(
                "{} imports and {} KMDF functions ruled, every call within its IRQL",
                irql.imports.len(),
                irql.kmdf_functions.len()
            ),
        )
    } else {
        let mut what: Vec<String> = verdict.irql_violations().collect();
        what.extend(irql.unruled.iter().map(|name| format!("{name}: no IRQL rule")));
        CheckResult::new("image.irql", false, what.join("; "))
    };
    let mut pool: Vec<String> = verdict.pool_violations().collect();
    pool.extend(leaks(verdict, status, published));
    let pool_check = if pool.is_empty() {
        CheckResult::new(
            "image.pool",
            true,
            format!(
                "{} special-pool allocations, no bad free, overrun or freed-pool access, no handle misused",
                verdict.pool.allocations
            ),
        )
    } else {
        CheckResult::new("image.pool", false, pool.join("; "))
    };
    vec![irql_check, pool_check]
}

/// What an injected run ended in, as the judgement needs it.
#[derive(Clone, Debug, Default)]
pub struct InjectedRun {
    /// The bugcheck, if any.
    pub bugcheck: Option<String>,
    /// `DriverEntry`'s status (`None`: it did not return).
    pub status: Option<NTSTATUS>,
    /// Whether `DriverEntry` published a PEP.
    pub published: bool,
    /// `Boot\Registered` and `Boot\FailedStep`, when the key was written.
    pub state: Option<(Option<String>, Option<String>)>,
    /// The runner's verdict.
    pub verdict: RunnerVerdict,
}

/// The verdict per architecture that ran (`x64`, `arm64`).
pub type Verdicts = BTreeMap<String, ArchVerdict>;

/// Whether every architecture's verdict passed.
#[must_use]
pub fn all_passed(verdicts: &Verdicts) -> bool {
    verdicts.values().all(ArchVerdict::passed)
}

/// The text report's lines: one per rule and architecture, then every violation.
#[must_use]
pub fn summary_lines(verdicts: &Verdicts) -> Vec<String> {
    let mut lines = Vec::new();
    for (arch, verdict) in verdicts {
        lines.extend(verdict.summary(arch));
        let all = [
            &verdict.irql.violations,
            &verdict.low_resources.violations,
            &verdict.access_faults.violations,
            &verdict.pool.violations,
            &verdict.instructions.violations,
        ];
        for violation in all.into_iter().flatten() {
            lines.push(format!("  FAIL {arch}: {violation}"));
        }
        for name in &verdict.irql.unruled {
            lines.push(format!("  FAIL {arch}: {name} has no IRQL rule"));
        }
    }
    lines
}

impl InjectedRun {
    /// Whether the run reached the injection `options` asked for.
    #[must_use]
    pub const fn reached(&self, options: &VerifierOptions) -> bool {
        if options.fail.is_some() {
            self.verdict.low_resources.injected.is_some()
        } else {
            self.verdict.access_faults.injected.is_some()
        }
    }
}

/// One architecture's Driver Verifier verdict (the `--json` report's `verifier.<arch>`).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ArchVerdict {
    /// The IRQL rule.
    pub irql: IrqlVerdict,
    /// The low resources simulation: every fallible call site, with the runs made with it
    /// failing.
    pub low_resources: SitesVerdict<LowResourcesSite>,
    /// The access faults: every access site and phase, each faulted in its own run.
    pub access_faults: SitesVerdict<AccessSite>,
    /// The special pool and handles.
    pub pool: PoolVerdict,
    /// The image's `FEEDBACK_READ` cost.
    pub instructions: CostVerdict,
}

/// The IRQL rule over every run.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct IrqlVerdict {
    /// The image's imported functions (every one ruled when `unruled` is empty).
    pub imports: usize,
    /// The KMDF functions it called.
    pub kmdf_functions: usize,
    /// Imports and KMDF functions with no rule.
    pub unruled: Vec<String>,
    /// Calls above their IRQL.
    pub violations: Vec<String>,
}

/// The systematic runs of one rule: every site, each tried in its own runs, and the runs that
/// did not end as the documentation says.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct SitesVerdict<T> {
    /// Every site.
    pub sites: Vec<T>,
    /// Runs that did not end as the documentation says.
    pub violations: Vec<String>,
}

impl<T> Default for SitesVerdict<T> {
    fn default() -> Self {
        Self { sites: Vec::new(), violations: Vec::new() }
    }
}

/// One fallible call site.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LowResourcesSite {
    /// The routine.
    pub function: String,
    /// The return address into the image (an RVA).
    pub site: u64,
    /// The runs made with it failing (one per occurrence, up to [`LOOP_OCCURRENCES`]); the JSON
    /// key is `boots`.
    #[serde(rename = "boots")]
    pub runs: u64,
}

/// The special pool and handles over every run.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct PoolVerdict {
    /// Blocks allocated.
    pub allocations: u64,
    /// Bad frees, overruns, accesses to freed pool, leaks, handle misuse.
    pub violations: Vec<String>,
}

/// The image's `FEEDBACK_READ` cost.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct CostVerdict {
    /// `FEEDBACK_READ`s counted.
    pub feedback_read_calls: u64,
    /// The fewest instructions one took.
    pub feedback_read_min: u64,
    /// The median.
    pub feedback_read_median: u64,
    /// The most.
    pub feedback_read_max: u64,
    /// The budget the median is held to.
    pub median_budget: u64,
    /// The budget the most is held to.
    pub max_budget: u64,
    /// The budget exceeded.
    pub violations: Vec<String>,
}

impl ArchVerdict {
    /// Whether every list of violations is empty and every import ruled.
    #[must_use]
    pub const fn passed(&self) -> bool {
        self.irql.unruled.is_empty()
            && self.irql.violations.is_empty()
            && self.low_resources.violations.is_empty()
            && self.access_faults.violations.is_empty()
            && self.pool.violations.is_empty()
            && self.instructions.violations.is_empty()
    }

    /// One line per rule.
    #[must_use]
    pub fn summary(&self, arch: &str) -> Vec<String> {
        let verdict = |violations: usize| {
            if violations == 0 { "ok".to_owned() } else { format!("{violations} violations") }
        };
        let low_runs: u64 = self.low_resources.sites.iter().map(|site| site.runs).sum();
        vec![
            format!(
                "verifier {arch} irql: {} imports and {} KMDF functions ruled ({} unruled): {}",
                self.irql.imports,
                self.irql.kmdf_functions,
                self.irql.unruled.len(),
                verdict(self.irql.violations.len() + self.irql.unruled.len())
            ),
            format!(
                "verifier {arch} low resources: {} fallible call sites, {low_runs} runs each failing one: {}",
                self.low_resources.sites.len(),
                verdict(self.low_resources.violations.len())
            ),
            format!(
                "verifier {arch} access faults: {} access sites faulted: {}",
                self.access_faults.sites.len(),
                verdict(self.access_faults.violations.len())
            ),
            format!(
                "verifier {arch} pool: {} special-pool allocations: {}",
                self.pool.allocations,
                verdict(self.pool.violations.len())
            ),
            format!(
                "verifier {arch} cost: FEEDBACK_READ median {} (budget {}), {}..{} (budget {}) image instructions over {} reads: {}",
                self.instructions.feedback_read_median,
                self.instructions.median_budget,
                self.instructions.feedback_read_min,
                self.instructions.feedback_read_max,
                self.instructions.max_budget,
                self.instructions.feedback_read_calls,
                verdict(self.instructions.violations.len())
            ),
        ]
    }
}

/// One injected run to make: the scenario (by its index in the base runs) and the options.
#[derive(Clone, Debug)]
pub struct Injection {
    /// Which base run's scenario.
    pub scenario: usize,
    /// What to fail or fault.
    pub options: VerifierOptions,
}

/// The injected runs the base runs call for.
///
/// One per fallible call site and occurrence (up to [`LOOP_OCCURRENCES`]), one per access
/// site and phase, each in the cheapest scenario that reached it (`costs[i]`: base run `i`'s
/// cost, e.g. processors × duration).
#[must_use]
pub fn injections(base: &[RunnerVerdict], costs: &[u64]) -> Vec<Injection> {
    let cost = |index: usize| costs.get(index).copied().unwrap_or(u64::MAX);
    let mut fallible: BTreeMap<(String, u64), (usize, u64)> = BTreeMap::new();
    let mut access: BTreeMap<AccessSite, usize> = BTreeMap::new();
    for (index, verdict) in base.iter().enumerate() {
        for site in &verdict.low_resources.sites {
            let chosen =
                fallible.entry((site.function.clone(), site.site)).or_insert((index, site.calls));
            if cost(index) < cost(chosen.0) {
                *chosen = (index, site.calls);
            }
        }
        for reached in &verdict.access_faults.sites {
            let chosen = access.entry(reached.site.clone()).or_insert(index);
            if cost(index) < cost(*chosen) {
                *chosen = index;
            }
        }
    }
    let mut runs = Vec::new();
    for ((function, site), (scenario, calls)) in fallible {
        for occurrence in 1..=calls.min(LOOP_OCCURRENCES) {
            runs.push(Injection {
                scenario,
                options: VerifierOptions {
                    fail: Some((function.clone(), site, occurrence)),
                    ..VerifierOptions::default()
                },
            });
        }
    }
    for (site, scenario) in access {
        runs.push(Injection {
            scenario,
            options: VerifierOptions { fault: Some(site), ..VerifierOptions::default() },
        });
    }
    runs
}

/// `NT_SUCCESS`.
const fn succeeded(status: NTSTATUS) -> bool {
    status >= 0
}

/// What is wrong with an injected run's end (nothing: empty).
#[must_use]
pub fn judge_injected(options: &VerifierOptions, run: &InjectedRun) -> Vec<String> {
    let what = options.fail.as_ref().map_or_else(
        || {
            options.fault.as_ref().map_or_else(String::new, |fault| {
                format!(
                    "{} of {:#x} at {:#x} faulting ({})",
                    fault.access, fault.register, fault.site, fault.phase
                )
            })
        },
        |(function, site, occurrence)| {
            format!("{function} at {site:#x} failing (call {occurrence})")
        },
    );
    let mut wrong = Vec::new();
    if !run.reached(options) {
        wrong.push(format!("{what}: the run never reached it"));
    }
    if let Some(bugcheck) = &run.bugcheck {
        wrong.push(format!("{what}: {bugcheck}"));
        return wrong;
    }
    let verdict = &run.verdict;
    for problem in verdict.irql_violations().chain(verdict.pool_violations()) {
        wrong.push(format!("{what}: {problem}"));
    }
    let Some(status) = run.status else {
        wrong.push(format!("{what}: DriverEntry did not return"));
        return wrong;
    };
    if let Some((function, _, _)) = &options.fail
        && function == "PoFxRegisterPluginEx"
        && (run.published || verdict.pofx_calls > 0)
    {
        wrong.push(format!(
            "{what}: a PEP was published or PoFx called although registration failed"
        ));
    }
    wrong.extend(
        leaks(verdict, status, run.published).into_iter().map(|leak| format!("{what}: {leak}")),
    );
    // A value the failing call did not let the driver write is absent, not wrong.
    let state_write_failed = options.fail.as_ref().is_some_and(|(function, _, _)| {
        matches!(function.as_str(), "WdfRegistryAssignULong" | "WdfRegistryAssignValue")
    });
    if let Some((registered, failed_step)) = &run.state {
        let says_registered = registered.as_deref().map(|value| value == "1");
        if says_registered.is_some_and(|says| says != run.published) {
            wrong.push(format!(
                "{what}: Boot\\Registered is {registered:?} but a PEP {} published",
                if run.published { "was" } else { "was not" }
            ));
        }
        if !succeeded(status)
            && !state_write_failed
            && failed_step.as_deref().unwrap_or_default().is_empty()
        {
            wrong.push(format!(
                "{what}: DriverEntry failed ({status:#x}) but Boot\\FailedStep is empty"
            ));
        }
    }
    if let Some(read) = &verdict.access_faults.read {
        if read.faulted_read_handled {
            wrong.push(format!("{what}: the faulted FEEDBACK_READ was answered TRUE"));
        }
        if read.later_reads > 0 && read.later_reads_handled == 0 {
            wrong.push(format!(
                "{what}: none of the {} later FEEDBACK_READs of the processor was accepted",
                read.later_reads
            ));
        }
    }
    wrong
}

/// What a run left behind that it must not have.
///
/// When `DriverEntry` failed (its unwinding frees everything) or the driver loaded without
/// publishing a PEP (it was unloaded), no pool block and no ETW registration may be left
/// (Verifier's pool tracking at unload).
#[must_use]
pub fn leaks(verdict: &RunnerVerdict, status: NTSTATUS, published: bool) -> Vec<String> {
    let mut found = Vec::new();
    if succeeded(status) && published {
        return found;
    }
    if !verdict.pool.outstanding.is_empty() {
        found.push(format!("{} pool blocks leaked", verdict.pool.outstanding.len()));
    }
    if verdict.handles.etw_registered > 0 {
        found.push(format!("{} ETW providers left registered", verdict.handles.etw_registered));
    }
    found
}

/// One architecture's verdict from its base runs and its injected runs (with their options).
#[must_use]
pub fn verdict(
    arch: &str,
    base: &[RunnerVerdict],
    injected: &[(VerifierOptions, InjectedRun)],
) -> ArchVerdict {
    let mut result = ArchVerdict::default();
    let mut imports = std::collections::BTreeSet::new();
    let mut kmdf = std::collections::BTreeSet::new();
    let mut unruled = std::collections::BTreeSet::new();
    for run in base {
        imports.extend(run.irql.imports.iter().cloned());
        kmdf.extend(run.irql.kmdf_functions.iter().cloned());
        unruled.extend(run.irql.unruled.iter().cloned());
        result.irql.violations.extend(run.irql_violations());
        result.pool.allocations += run.pool.allocations;
        result.pool.violations.extend(run.pool_violations());
    }
    result.irql.imports = imports.len();
    result.irql.kmdf_functions = kmdf.len();
    result.irql.unruled = unruled.into_iter().collect();
    let mut sites: BTreeMap<(String, u64), u64> = BTreeMap::new();
    let mut access = std::collections::BTreeSet::new();
    for run in base {
        for site in &run.low_resources.sites {
            sites.entry((site.function.clone(), site.site)).or_insert(0);
        }
    }
    for (options, run) in injected {
        let wrong = judge_injected(options, run);
        if let Some((function, site, _)) = &options.fail {
            *sites.entry((function.clone(), *site)).or_insert(0) += 1;
            result.low_resources.violations.extend(wrong);
        } else if let Some(fault) = &options.fault {
            access.insert(fault.clone());
            result.access_faults.violations.extend(wrong);
        }
    }
    result.low_resources.sites = sites
        .into_iter()
        .map(|((function, site), runs)| LowResourcesSite { function, site, runs })
        .collect();
    result.access_faults.sites = access.into_iter().collect();
    result.instructions = cost_verdict(arch, base);
    result
}

/// The image's `FEEDBACK_READ` cost over `base` (every read counted), held to `arch`'s
/// [`FEEDBACK_READ_BUDGET`].
#[must_use]
pub fn cost_verdict(arch: &str, base: &[RunnerVerdict]) -> CostVerdict {
    let mut cost: BTreeMap<u64, u64> = BTreeMap::new();
    for run in base {
        if let Some(reads) = run.instructions.get(&format!("ppm:{PEP_NOTIFY_PPM_FEEDBACK_READ}")) {
            for (instructions, calls) in reads {
                *cost.entry(*instructions).or_default() += calls;
            }
        }
    }
    let (median_budget, max_budget) = FEEDBACK_READ_BUDGET
        .iter()
        .find(|(name, _)| *name == arch)
        .map_or((0, 0), |(_, budgets)| *budgets);
    let calls = cost.values().sum();
    let max = cost.keys().next_back().copied().unwrap_or(0);
    let mut figures = CostVerdict {
        feedback_read_calls: calls,
        feedback_read_min: cost.keys().next().copied().unwrap_or(0),
        feedback_read_median: median(&cost),
        feedback_read_max: max,
        median_budget,
        max_budget,
        violations: Vec::new(),
    };
    if calls == 0 {
        figures.violations.push("no FEEDBACK_READ was counted".to_owned());
    }
    if figures.feedback_read_median > median_budget {
        figures.violations.push(format!(
            "FEEDBACK_READ took {} image instructions (median), over its budget of {median_budget}",
            figures.feedback_read_median
        ));
    }
    if max > max_budget {
        figures.violations.push(format!(
            "FEEDBACK_READ took up to {max} image instructions, over its budget of {max_budget}"
        ));
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(function: &str, site: u64, calls: u64) -> FallibleSite {
        FallibleSite { function: function.to_owned(), site, calls }
    }

    #[test]
    fn every_fallible_site_is_failed_once_per_occurrence_up_to_the_bound() {
        let mut first = RunnerVerdict::default();
        first.low_resources.sites =
            vec![site("ExAllocatePool2", 0x100, 1), site("WdfRegistryQueryValue", 0x200, 9)];
        let mut second = RunnerVerdict::default();
        second.low_resources.sites =
            vec![site("ExAllocatePool2", 0x100, 1), site("EtwRegister", 0x300, 1)];
        let runs = injections(&[first, second], &[2, 1]);
        let failed: Vec<(String, u64, u64, usize)> =
            runs.iter()
                .filter_map(|run| {
                    run.options.fail.clone().map(|(function, site, occurrence)| {
                        (function, site, occurrence, run.scenario)
                    })
                })
                .collect();
        assert_eq!(
            failed,
            vec![
                ("EtwRegister".to_owned(), 0x300, 1, 1),
                ("ExAllocatePool2".to_owned(), 0x100, 1, 1),
                ("WdfRegistryQueryValue".to_owned(), 0x200, 1, 0),
                ("WdfRegistryQueryValue".to_owned(), 0x200, 2, 0),
                ("WdfRegistryQueryValue".to_owned(), 0x200, 3, 0),
            ]
        );
    }

    fn failed_driver_entry() -> (VerifierOptions, InjectedRun) {
        let options = VerifierOptions {
            fail: Some(("ExAllocatePool2".to_owned(), 0x100, 1)),
            ..VerifierOptions::default()
        };
        let mut run = InjectedRun { status: Some(-0x3FFF_FF66), ..InjectedRun::default() };
        run.verdict.low_resources.injected = Some(json!({}));
        run.state = Some((Some("0".to_owned()), Some("allocate".to_owned())));
        (options, run)
    }

    #[test]
    fn a_failed_boot_that_cleaned_up_is_what_the_documentation_says() {
        let (options, run) = failed_driver_entry();
        assert_eq!(judge_injected(&options, &run), Vec::<String>::new());
    }

    #[test]
    fn a_leak_a_provider_left_a_bugcheck_or_an_unreached_site_is_a_violation() {
        let (options, mut run) = failed_driver_entry();
        run.verdict.pool.outstanding.push(json!({"address": 1}));
        run.verdict.handles.etw_registered = 1;
        let wrong = judge_injected(&options, &run);
        assert!(wrong.iter().any(|line| line.contains("1 pool blocks leaked")), "{wrong:?}");
        assert!(wrong.iter().any(|line| line.contains("ETW providers left")), "{wrong:?}");
        let (options, mut run) = failed_driver_entry();
        run.bugcheck = Some("bugcheck 0xc4 at DriverEntry+0x10".to_owned());
        run.verdict.low_resources.injected = None;
        let wrong = judge_injected(&options, &run);
        assert!(wrong.iter().any(|line| line.contains("never reached")), "{wrong:?}");
        assert!(
            wrong.iter().any(|line| line.contains(": bugcheck 0xc4 at DriverEntry")),
            "{wrong:?}"
        );
    }

    #[test]
    fn a_faulted_read_must_be_refused_and_the_next_accepted() {
        let options = VerifierOptions {
            fault: Some(AccessSite {
                access: "rdmsr".to_owned(),
                register: 0xE8,
                site: 0x40,
                phase: "runtime".to_owned(),
            }),
            ..VerifierOptions::default()
        };
        let mut run = InjectedRun { status: Some(0), published: true, ..InjectedRun::default() };
        run.verdict.access_faults.injected = Some(json!({}));
        run.verdict.access_faults.read = Some(ReadAfterFault {
            faulted_read_handled: false,
            later_reads: 3,
            later_reads_handled: 2,
        });
        assert_eq!(judge_injected(&options, &run), Vec::<String>::new());
        run.verdict.access_faults.read = Some(ReadAfterFault {
            faulted_read_handled: true,
            later_reads: 3,
            later_reads_handled: 0,
        });
        assert_eq!(judge_injected(&options, &run).len(), 2);
    }

    #[test]
    fn notifications_are_made_at_their_documented_worst_irql() {
        assert_eq!(notification_context(true, PEP_NOTIFY_PPM_FEEDBACK_READ).0, DISPATCH_LEVEL);
        assert_eq!(notification_context(true, 0x01).0, PASSIVE_LEVEL);
        assert_eq!(notification_context(true, 0x7F).0, HIGH_LEVEL);
        assert_eq!(notification_context(false, 0x03).0, PASSIVE_LEVEL);
        assert_eq!(notification_context(false, 0x12).0, DISPATCH_LEVEL);
        assert_eq!(notification_context(false, 0x7F).0, HIGH_LEVEL);
    }
}
