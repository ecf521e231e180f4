//! The HLK-style conformance checks, evaluated over what a run observed.
//!
//! Every check has a stable id, a verdict and a one-line detail. A check that does not apply to
//! a scenario (no counters to read, a single processor) passes with a detail starting
//! `not applicable:`; when registration failed, every other check fails with `not run:`.
//! [`CHECK_IDS`] lists them in report order.
//!
//! This module holds the one table of (id, check) and [`evaluate`]; the checks themselves are
//! methods of one context, by family: `driver_entry` (the `boot.*` checks), `dpm` (devices, the start-up queries and
//! the refusal probes), `capabilities` (the answers of initialisation), `feedback` (the runtime's reads),
//! `lifecycle` (hot-plug, sleep, re-entrancy) and `pmc` (MSR and PMU access). They read the
//! emulator's observations ([`crate::pofx`]) and nothing else of it.

use std::fmt::Write as _;

use ppm_engine::abi::STATUS_SUCCESS;
use serde::Serialize;

use crate::machine::Machine;
use crate::pofx::{Observations, ProbeKind, ProcessorRecord};
use crate::scenario::Scenario;
use crate::verdict::Findings;

mod capabilities;
mod dpm;
pub mod driver_entry;
mod feedback;
mod lifecycle;
mod pmc;

pub use crate::pofx::CounterMetrics;

/// The checks, in report order: the `DriverEntry` checks (`DRIVER_ENTRY_CHECK_IDS`), then the
/// runtime checks (`RUNTIME_CHECKS`).
pub const CHECK_IDS: [&str; 36] = {
    let mut ids = [""; 36];
    let mut index = 0;
    while index < DRIVER_ENTRY_CHECK_IDS.len() {
        ids[index] = DRIVER_ENTRY_CHECK_IDS[index];
        index += 1;
    }
    while index < ids.len() {
        ids[index] = RUNTIME_CHECKS[index - DRIVER_ENTRY_CHECK_IDS.len()].0;
        index += 1;
    }
    ids
};

/// One check's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// The check's id.
    pub id: String,
    /// The outcome.
    pub status: CheckStatus,
    /// Whether it did not fail (`true` when it passed or did not apply; kept for the JSON
    /// report's readers that predate `status`).
    pub passed: bool,
    /// What was seen (first failures, or a summary).
    pub detail: String,
}

/// A check's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// The check applied and held.
    Passed,
    /// The check applied and did not hold (or could not run).
    Failed,
    /// Nothing in the scenario exercised what the check verifies.
    NotApplicable,
}

impl CheckResult {
    pub(crate) fn new(id: &str, passed: bool, detail: impl Into<String>) -> Self {
        let status = if passed { CheckStatus::Passed } else { CheckStatus::Failed };
        Self { id: id.to_owned(), status, passed, detail: detail.into() }
    }

    fn not_applicable(id: &str, why: &str) -> Self {
        Self {
            id: id.to_owned(),
            status: CheckStatus::NotApplicable,
            passed: true,
            detail: format!("not applicable: {why}"),
        }
    }

    /// The same check, marked as not applicable (its detail says why).
    #[must_use]
    pub(crate) fn into_not_applicable(self) -> Self {
        Self { status: CheckStatus::NotApplicable, passed: true, ..self }
    }

    /// Whether the check did not apply.
    #[must_use]
    pub fn is_not_applicable(&self) -> bool {
        self.status == CheckStatus::NotApplicable
    }

    /// Passed with `ok` when there are no `findings`, else failed naming the first ones.
    fn from_findings(id: &str, findings: &Findings, ok: impl Into<String>) -> Self {
        if findings.is_empty() {
            return Self::new(id, true, ok);
        }
        let mut detail = findings.kept().join("; ");
        let more = findings.len() - findings.kept().len();
        if more > 0 {
            let _ = write!(detail, "; and {more} more");
        }
        Self::new(id, false, detail)
    }

    fn from_failures(id: &str, failures: &[String], ok: impl Into<String>) -> Self {
        if failures.is_empty() {
            return Self::new(id, true, ok);
        }
        let mut detail = failures.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
        if failures.len() > 3 {
            let _ = write!(detail, "; and {} more", failures.len() - 3);
        }
        Self::new(id, false, detail)
    }
}

/// One processor's measurements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessorMetrics {
    /// Global index.
    pub index: u32,
    /// Runtime reads issued.
    pub reads: usize,
    /// Runtime reads refused (FALSE).
    pub refused: usize,
    /// Per described counter.
    pub counters: Vec<CounterMetrics>,
}

impl ProcessorMetrics {
    /// The C0-weighted true frequency over the FREQUENCY counter's accounted intervals, MHz.
    #[must_use]
    pub fn expected_mhz(&self) -> Option<f64> {
        self.counters.first().and_then(|counter| counter.expected.mean_mhz())
    }

    /// The frequency Windows computes from the FREQUENCY counter, MHz.
    #[must_use]
    pub fn measured_mhz(&self) -> Option<f64> {
        self.counters.first().and_then(CounterMetrics::measured)
    }

    /// Whether every counter was monotonic.
    #[must_use]
    pub fn monotonic(&self) -> bool {
        self.counters.iter().all(|counter| counter.monotonic)
    }
}

/// Computes a processor's measurements from its digested reads (folded to the end).
#[must_use]
pub fn processor_metrics(record: &ProcessorRecord) -> ProcessorMetrics {
    let described = record.described_counters().iter().enumerate().map(|(position, descriptor)| {
        (u32::try_from(position).unwrap_or(u32::MAX), descriptor.NominalRate)
    });
    ProcessorMetrics {
        index: record.index,
        reads: record.digest.reads,
        refused: record.digest.refused,
        counters: record.digest.metrics(described),
    }
}

/// Evaluates every check.
#[must_use]
pub fn evaluate(
    scenario: &Scenario,
    observations: &Observations,
    machine: &Machine,
    metrics: &[ProcessorMetrics],
) -> Vec<CheckResult> {
    let expected = driver_entry::ExpectedDriverEntry::of(scenario);
    let attempted =
        observations.driver_entry.as_ref().is_some_and(|record| record.registration.is_some());
    let registration = if attempted || expected.registers() {
        registration(observations)
    } else {
        CheckResult::not_applicable(
            "registration.version_size",
            &format!("DriverEntry {} before PoFxRegisterPluginEx", expected.describe()),
        )
    };
    let [status, unwind, state, inert] = driver_entry::checks(scenario, observations);
    let registered = observations
        .driver_entry
        .as_ref()
        .is_some_and(|record| matches!(record.outcome, ppm_engine::driver::Outcome::Registered));
    if !registration.passed || !registered {
        let rest: Vec<CheckResult> = CHECK_IDS
            .iter()
            .skip(5)
            .map(|id| {
                if !registration.passed {
                    CheckResult::new(id, false, "not run: registration failed")
                } else if expected.registers() {
                    CheckResult::new(id, false, "not run: DriverEntry did not register the PEP")
                } else {
                    CheckResult::not_applicable(
                        id,
                        &format!(
                            "DriverEntry {}: nothing registered to exercise",
                            expected.describe()
                        ),
                    )
                }
            })
            .collect();
        let mut results = vec![registration, status, unwind, state, inert];
        results.extend(rest);
        return results;
    }
    let context = Context { scenario, observations, machine, metrics };
    let mut results = vec![registration, status, unwind, state, inert];
    results.extend(RUNTIME_CHECKS.iter().map(|(_, check)| check(&context)));
    results
}

/// The checks of a registered PEP's runtime, in report order after the five `DriverEntry`
/// checks:
/// `CHECK_IDS` is built from this table, so a check is listed once.
type RuntimeCheck = fn(&Context<'_>) -> CheckResult;
const RUNTIME_CHECKS: [(&str, RuntimeCheck); 31] = [
    ("dpm.processors_accepted", |context| context.processors_accepted()),
    ("dpm.others_declined", |context| context.others_declined()),
    ("dpm.handles_unique_nonnull", |context| context.handles_unique_nonnull()),
    ("dpm.lifecycle", |context| context.lifecycle()),
    ("dpm.hotplug", |context| context.hotplug()),
    ("dpm.unknown_refused", |context| {
        context.probes(
            "dpm.unknown_refused",
            &[ProbeKind::DpmUnknown],
            "undefined or malformed DPM notifications",
        )
    }),
    ("ppm.unknown_refused", |context| {
        context.probes(
            "ppm.unknown_refused",
            &[ProbeKind::PpmUnknown],
            "undefined PPM notifications",
        )
    }),
    ("ppm.null_data_refused", |context| {
        context.probes(
            "ppm.null_data_refused",
            &[ProbeKind::PpmNullData],
            "PPM notifications with NULL data",
        )
    }),
    ("ppm.forged_handle_refused", |context| {
        context.probes(
            "ppm.forged_handle_refused",
            &[ProbeKind::ForgedHandle],
            "forged-handle calls",
        )
    }),
    ("notifications.documented_answers", |context| context.documented_answers()),
    ("ppm.system_state", |context| context.system_state()),
    ("ppm.boot_queries", |context| context.boot_queries()),
    ("capabilities.consistent", |context| context.capabilities_consistent()),
    ("feedback.descriptors", |context| context.descriptors()),
    ("perf.ordering", |context| context.perf_ordering()),
    ("domain.membership", |context| context.domain_membership()),
    ("feedback.index_out_of_range_refused", |context| {
        context.counter_probes(
            "feedback.index_out_of_range_refused",
            ProbeKind::IndexOutOfRange,
            "out-of-range CounterIndex reads",
        )
    }),
    ("feedback.wrong_processor_refused", |context| context.wrong_processor()),
    ("feedback.no_counters_refused", |context| context.no_counters()),
    ("feedback.reads_served", |context| context.reads_served()),
    ("feedback.monotonic", |context| context.monotonic()),
    ("feedback.accuracy", |context| context.accuracy()),
    ("feedback.interval_accuracy", |context| context.interval_accuracy()),
    ("feedback.no_dropped_interval", |context| context.no_dropped_interval()),
    ("feedback.no_spike", |context| context.no_spike()),
    ("feedback.read_masked", |context| context.read_masked()),
    ("feedback.reentrancy", |context| context.reentrancy()),
    ("feedback.counter_msrs", |context| context.counter_msrs()),
    ("feedback.fault_refused", |context| context.fault_refused()),
    ("msr.only_advertised", |context| context.msr_only_advertised()),
    ("pmc.reservation_respected", |context| context.reservation_respected()),
];

/// The five checks of `DriverEntry` and the registration, before `RUNTIME_CHECKS`.
const DRIVER_ENTRY_CHECK_IDS: [&str; 5] =
    ["registration.version_size", "boot.status", "boot.unwind", "boot.state", "boot.inert"];

fn registration(observations: &Observations) -> CheckResult {
    let record = observations.registration;
    let injected = record.injected.map_or_else(String::new, |status| {
        format!(" (the scenario's fault then made the call return {status:#010x})")
    });
    let detail = format!(
        "PEP_INFORMATION Version {}, Size {}, DPM callback {}, PPM callback {}: PoFxRegisterPluginEx's checks returned {:#010x}{injected}",
        record.version,
        record.size,
        if record.device_callback { "set" } else { "NULL" },
        if record.processor_callback { "set" } else { "NULL" },
        record.status
    );
    CheckResult::new("registration.version_size", record.status == STATUS_SUCCESS, detail)
}

struct Context<'a> {
    scenario: &'a Scenario,
    observations: &'a Observations,
    machine: &'a Machine,
    metrics: &'a [ProcessorMetrics],
}

impl Context<'_> {
    fn expected_counters(&self) -> u32 {
        self.scenario.expected_counter_count()
    }
}
