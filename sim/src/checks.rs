//! The HLK-style conformance checks, evaluated over what a run observed.
//!
//! Every check has a stable id, a verdict and a one-line detail. A check that does not apply to
//! a scenario (no counters to read, a single processor) passes with a detail starting
//! `not applicable:`; when registration failed, every other check fails with `not run:`.
//! [`CHECK_IDS`] lists them in report order.

use std::fmt::Write as _;

use ppm_engine::abi::{
    PROCESSOR_DOMAIN_COORDIANTION_HW_ALL, PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
    PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, PROCESSOR_FEEDBACK_TYPE_RELATIVE, STATUS_SUCCESS,
};
use serde::Serialize;

use crate::cpu::{is_pmu_msr, msr};
use crate::machine::Machine;
use crate::machine::pmu::{AccessContext, MsrAccess};
use crate::pofx::{Findings, Observations, ProbeKind, ProcessorRecord};
use crate::scenario::Scenario;

pub mod boot;
mod lifecycle;

pub use crate::pofx::{ACCURACY_TOLERANCE, CounterMetrics, SPIKE_TOLERANCE};

/// The checks, in report order: the boot checks, then [`RUNTIME_CHECKS`].
pub const CHECK_IDS: [&str; 35] = {
    let mut ids = [""; 35];
    let mut index = 0;
    while index < BOOT_CHECK_IDS.len() {
        ids[index] = BOOT_CHECK_IDS[index];
        index += 1;
    }
    while index < ids.len() {
        ids[index] = RUNTIME_CHECKS[index - BOOT_CHECK_IDS.len()].0;
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
    fn new(id: &str, passed: bool, detail: impl Into<String>) -> Self {
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

    /// Whether the check did not apply.
    #[must_use]
    pub fn is_not_applicable(&self) -> bool {
        self.status == CheckStatus::NotApplicable
    }

    /// Passes when `failures` is empty (detail `ok`), else fails listing the first three.
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

const fn context_name(context: AccessContext) -> &'static str {
    match context {
        AccessContext::DriverSetup => "by the driver's setup",
        AccessContext::Initialisation => "at initialisation",
        AccessContext::Callback => "in a PEP callback",
        AccessContext::Resume => "in RESUME_FROM_SYSTEM_STATE",
    }
}

/// What is wrong with an MSR write, if anything: only the driver's setup and a PEP enabling its
/// counters again on resume, holding the PMU reservation, may write, and only the fields of
/// fixed counters 1 and 2 in `IA32_FIXED_CTR_CTRL` and their enable bits in
/// `IA32_PERF_GLOBAL_CTRL`.
fn write_problem(write: &MsrAccess) -> Option<String> {
    let value = write.written.unwrap_or(0);
    let what = format!(
        "MSR {:#x} written ({value:#x}) on processor {} {}",
        write.msr,
        write.processor,
        context_name(write.context)
    );
    let own_bits = match write.msr {
        msr::IA32_FIXED_CTR_CTRL => Some(0xFF0_u64),
        msr::IA32_PERF_GLOBAL_CTRL => Some(0b110 << 32),
        _ => None,
    };
    let problem = if !write.reserved {
        "without a PMU reservation".to_owned()
    } else if !matches!(write.context, AccessContext::DriverSetup | AccessContext::Resume) {
        "outside the driver's setup and RESUME_FROM_SYSTEM_STATE: a PEP writes no other MSR"
            .to_owned()
    } else if let Some(own) = own_bits {
        let changed = write.previous.map_or(0, |previous| (previous ^ value) & !own);
        if changed == 0 {
            return None;
        }
        format!("changed bits {changed:#x} of other counters' configuration")
    } else {
        "not a control register of fixed counters 1 and 2".to_owned()
    };
    Some(format!("{what} {problem}"))
}

/// Evaluates every check.
#[must_use]
pub fn evaluate(
    scenario: &Scenario,
    observations: &Observations,
    machine: &Machine,
    metrics: &[ProcessorMetrics],
) -> Vec<CheckResult> {
    let expected = boot::ExpectedBoot::of(scenario);
    let attempted = observations.boot.as_ref().is_some_and(|boot| boot.registration.is_some());
    let registration = if attempted || expected.registers() {
        registration(observations)
    } else {
        CheckResult::not_applicable(
            "registration.version_size",
            &format!("DriverEntry {} before PoFxRegisterPluginEx", expected.describe()),
        )
    };
    let [status, unwind, state, inert] = boot::checks(scenario, observations);
    let registered = observations
        .boot
        .as_ref()
        .is_some_and(|boot| matches!(boot.outcome, ppm_engine::driver::Outcome::Registered));
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

/// The checks of a registered PEP's runtime, in report order after the five boot checks:
/// `CHECK_IDS` is built from this table, so a check is listed once.
type RuntimeCheck = fn(&Context<'_>) -> CheckResult;
const RUNTIME_CHECKS: [(&str, RuntimeCheck); 30] = [
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

/// The five checks of `DriverEntry` and the registration, before [`RUNTIME_CHECKS`].
const BOOT_CHECK_IDS: [&str; 5] =
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

    /// `ppm.boot_queries`: the boot queries whose documented "nothing to report" is an answer
    /// are answered — `QUERY_PLATFORM_STATES` and `QUERY_VETO_REASONS` with TRUE and 0 (this
    /// PEP has no platform idle state and vetoes nothing), `ENUMERATE_BOOT_VETOES`
    /// acknowledged.
    fn boot_queries(&self) -> CheckResult {
        let id = "ppm.boot_queries";
        let queries = &self.observations.boot_queries;
        if queries.is_empty() {
            return CheckResult::new(id, false, "the boot queries were not sent");
        }
        let failures: Vec<String> = queries
            .iter()
            .filter_map(|query| match (query.returned, query.count, query.name) {
                (true, Some(0), _) | (true, None, "ENUMERATE_BOOT_VETOES") => None,
                (false, _, name) => {
                    Some(format!("{name}: FALSE (a count of 0 is the documented answer)"))
                }
                (true, count, name) => {
                    Some(format!("{name}: TRUE with count {count:?}, expected 0"))
                }
            })
            .collect();
        CheckResult::from_failures(
            id,
            &failures,
            "QUERY_PLATFORM_STATES and QUERY_VETO_REASONS answered 0, ENUMERATE_BOOT_VETOES acknowledged",
        )
    }

    fn processors_accepted(&self) -> CheckResult {
        let mut failures = Vec::new();
        for device in self.observations.devices.iter().filter(|device| device.processor.is_some()) {
            let problem = if !device.prepare_returned {
                Some("PREPARE_DEVICE returned FALSE".to_owned())
            } else if !device.accepted {
                Some("declined at PREPARE_DEVICE".to_owned())
            } else {
                match device.registered {
                    None => Some("not registered".to_owned()),
                    Some(record) if record.live_handle().is_none() => Some(format!(
                        "REGISTER_DEVICE returned {}, DeviceAccepted {}, DeviceHandle {:#x}",
                        if record.returned { "TRUE" } else { "FALSE" },
                        record.acceptance,
                        record.handle
                    )),
                    Some(_) => None,
                }
            };
            if let Some(problem) = problem {
                failures.push(format!("{}: {problem}", device.id));
            }
        }
        let count = self.scenario.platform.processors;
        CheckResult::from_failures(
            "dpm.processors_accepted",
            &failures,
            format!(
                "{count} of {count} processor devices accepted at PREPARE and registered with PepDeviceAccepted"
            ),
        )
    }

    fn others_declined(&self) -> CheckResult {
        let others: Vec<_> =
            self.observations.devices.iter().filter(|device| device.processor.is_none()).collect();
        let failures: Vec<String> = others
            .iter()
            .filter_map(|device| match (device.prepare_returned, device.accepted) {
                (true, false) => None,
                (false, _) => Some(format!(
                    "{}: PREPARE_DEVICE returned FALSE (must return TRUE and decline)",
                    device.id
                )),
                (true, true) => Some(format!("{}: accepted, but it is not a processor", device.id)),
            })
            .collect();
        CheckResult::from_failures(
            "dpm.others_declined",
            &failures,
            format!(
                "{} non-processor devices declined (PREPARE returned TRUE, DeviceAccepted FALSE)",
                others.len()
            ),
        )
    }

    fn handles_unique_nonnull(&self) -> CheckResult {
        let mut handles: Vec<(usize, &str)> = Vec::new();
        let mut failures = Vec::new();
        for device in &self.observations.devices {
            let Some(record) = device.registered else { continue };
            if record.returned && record.acceptance == ppm_engine::abi::PepDeviceAccepted {
                if record.handle == 0 {
                    failures.push(format!("{}: accepted with a NULL DeviceHandle", device.id));
                } else if let Some((_, other)) =
                    handles.iter().find(|(handle, _)| *handle == record.handle)
                {
                    failures.push(format!(
                        "{}: DeviceHandle {:#x} already given to {other}",
                        device.id, record.handle
                    ));
                } else {
                    handles.push((record.handle, &device.id));
                }
            }
        }
        CheckResult::from_failures(
            "dpm.handles_unique_nonnull",
            &failures,
            format!("{} handles, all non-NULL and distinct", handles.len()),
        )
    }

    fn lifecycle(&self) -> CheckResult {
        let mut failures: Vec<String> = self
            .observations
            .devices
            .iter()
            .filter(|device| device.started == Some(false))
            .map(|device| format!("{}: DEVICE_STARTED returned FALSE", device.id))
            .collect();
        match self.observations.unregistered {
            Some((index, false)) => {
                failures.push(format!("UNREGISTER_DEVICE of processor {index} returned FALSE"));
            }
            Some(_) => {}
            None => failures
                .push("no processor was registered, so none could be unregistered".to_owned()),
        }
        failures.extend(self.probe_failures(&[ProbeKind::StaleHandle]));
        CheckResult::from_failures(
            "dpm.lifecycle",
            &failures,
            "DEVICE_STARTED and UNREGISTER_DEVICE handled; the unregistered handle is refused afterwards",
        )
    }

    fn probe_failures(&self, kinds: &[ProbeKind]) -> Vec<String> {
        self.observations
            .probes
            .iter()
            .filter(|probe| kinds.contains(&probe.kind) && !probe.passed())
            .map(|probe| {
                let what = if probe.returned {
                    "returned TRUE"
                } else {
                    "returned FALSE but wrote to its data"
                };
                format!("{}: {what}", probe.what)
            })
            .collect()
    }

    fn probes(&self, id: &str, kinds: &[ProbeKind], what: &str) -> CheckResult {
        let count =
            self.observations.probes.iter().filter(|probe| kinds.contains(&probe.kind)).count();
        if count == 0 {
            return CheckResult::not_applicable(
                id,
                &format!("no {what} could be sent (no processor registered)"),
            );
        }
        CheckResult::from_failures(
            id,
            &self.probe_failures(kinds),
            format!(
                "{count} {what} refused{}",
                if kinds.iter().all(|kind| kind.requires_untouched_data()) {
                    " without touching their data"
                } else {
                    ""
                }
            ),
        )
    }

    fn counter_probes(&self, id: &str, kind: ProbeKind, what: &str) -> CheckResult {
        if self.expected_counters() == 0
            && self.observations.probes.iter().all(|probe| probe.kind != kind)
        {
            return CheckResult::not_applicable(id, "no processor describes feedback counters");
        }
        self.probes(id, &[kind], what)
    }

    fn capabilities_consistent(&self) -> CheckResult {
        let expected = self.expected_counters();
        let mut failures = Vec::new();
        for record in &self.observations.processors {
            let Some((returned, capabilities)) = record.capabilities else { continue };
            let name = format!("processor {}", record.index);
            if !returned {
                failures.push(format!("{name}: QUERY_CAPABILITIES returned FALSE"));
                continue;
            }
            if capabilities.IdleStateCount != 0 {
                failures.push(format!(
                    "{name}: IdleStateCount {} (expected 0: idle stays with the OS)",
                    capabilities.IdleStateCount
                ));
            }
            if capabilities.FeedbackCounterCount != expected {
                failures.push(format!(
                    "{name}: FeedbackCounterCount {} but this platform and configuration call for {expected}",
                    capabilities.FeedbackCounterCount
                ));
            }
            match &record.counters {
                Some((false, _)) => failures.push(format!(
                    "{name}: QUERY_FEEDBACK_COUNTERS with Count {} returned FALSE",
                    capabilities.FeedbackCounterCount
                )),
                None if capabilities.FeedbackCounterCount != 0 => failures.push(format!(
                    "{name}: FeedbackCounterCount {} is not a count the OS can query",
                    capabilities.FeedbackCounterCount
                )),
                _ => {}
            }
        }
        failures.extend(self.probe_failures(&[ProbeKind::WrongCount]));
        CheckResult::from_failures(
            "capabilities.consistent",
            &failures,
            format!(
                "every processor: FeedbackCounterCount {expected} (described by QUERY_FEEDBACK_COUNTERS), IdleStateCount 0; a wrong Count is refused"
            ),
        )
    }

    fn descriptors(&self) -> CheckResult {
        let nominal = self.machine.nominal_mhz();
        let mut failures = Vec::new();
        let mut described = 0;
        for record in &self.observations.processors {
            let nominal_performance = match record.perf {
                Some((true, perf)) => Some(perf.NominalPerformance),
                _ => None,
            };
            for (position, descriptor) in record.described_counters().iter().enumerate() {
                described += 1;
                let (view, counter, rate) = if position == 0 {
                    ("FREQUENCY", PROCESSOR_FEEDBACK_COUNTER_FREQUENCY, Some(nominal))
                } else {
                    ("PERFORMANCE", PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, nominal_performance)
                };
                let mut wrong = Vec::new();
                if descriptor.Affinitized() != 1 {
                    wrong.push("Affinitized 0".to_owned());
                }
                if descriptor.Type() != PROCESSOR_FEEDBACK_TYPE_RELATIVE {
                    wrong.push(format!("Type {} (expected RELATIVE)", descriptor.Type()));
                }
                if descriptor.Counter() != counter {
                    wrong.push(format!("Counter {} (expected {view})", descriptor.Counter()));
                }
                if descriptor.DiscountIdle() != 1 {
                    wrong.push("DiscountIdle 0".to_owned());
                }
                if descriptor.Reserved() != 0 {
                    wrong.push(format!("Reserved {:#x}", descriptor.Reserved()));
                }
                if rate != Some(descriptor.NominalRate) {
                    let expected = rate.map_or_else(
                        || "the NominalPerformance".to_owned(),
                        |rate| rate.to_string(),
                    );
                    wrong.push(format!(
                        "NominalRate {} (expected {expected})",
                        descriptor.NominalRate
                    ));
                }
                if !wrong.is_empty() {
                    failures.push(format!(
                        "processor {} counter {position}: {}",
                        record.index,
                        wrong.join(", ")
                    ));
                }
            }
        }
        if described == 0 {
            return CheckResult::not_applicable(
                "feedback.descriptors",
                "no feedback counters described",
            );
        }
        CheckResult::from_failures(
            "feedback.descriptors",
            &failures,
            format!(
                "{described} descriptors: Affinitized, RELATIVE, DiscountIdle, Reserved 0, NominalRate {nominal} MHz"
            ),
        )
    }

    fn perf_ordering(&self) -> CheckResult {
        let mut failures = Vec::new();
        let mut scales = Vec::new();
        for record in &self.observations.processors {
            let Some((returned, perf)) = record.perf else { continue };
            if !returned {
                failures.push(format!(
                    "processor {}: QUERY_PERF_CAPABILITIES returned FALSE",
                    record.index
                ));
                continue;
            }
            let levels = (
                perf.LowestPerformance,
                perf.LowestNonlinearPerformance,
                perf.NominalPerformance,
                perf.HighestPerformance,
            );
            if !(levels.0 >= 1
                && levels.0 <= levels.1
                && levels.1 <= levels.2
                && levels.2 <= levels.3)
            {
                failures.push(format!(
                    "processor {}: Lowest {} LowestNonlinear {} Nominal {} Highest {} are not ordered",
                    record.index, levels.0, levels.1, levels.2, levels.3
                ));
            }
            if !scales.contains(&levels) {
                scales.push(levels);
            }
        }
        if scales.len() > 1 {
            failures.push(format!(
                "{} different sets of levels: one unit scale is required for all processors",
                scales.len()
            ));
        }
        let summary = scales.first().map_or_else(String::new, |levels| {
            format!(
                ": Lowest {} <= LowestNonlinear {} <= Nominal {} <= Highest {}",
                levels.0, levels.1, levels.2, levels.3
            )
        });
        CheckResult::from_failures("perf.ordering", &failures, format!("every processor{summary}"))
    }

    fn domain_membership(&self) -> CheckResult {
        let mut failures = Vec::new();
        let mut domains: Vec<(u32, u32)> = Vec::new(); // (DomainId, members seen)
        // A hot-removed processor's domain is gone (another processor may reuse its slot).
        let served: Vec<_> = self
            .observations
            .processors
            .iter()
            .filter(|record| !record.removed)
            .filter_map(|record| match record.perf {
                Some((true, perf)) => Some((record, perf)),
                _ => None,
            })
            .collect();
        for (_, perf) in &served {
            match domains.iter_mut().find(|(id, _)| *id == perf.DomainId) {
                Some((_, members)) => *members += 1,
                None => domains.push((perf.DomainId, 1)),
            }
        }
        for (record, perf) in &served {
            let members = domains
                .iter()
                .find(|(id, _)| *id == perf.DomainId)
                .map_or(0, |(_, members)| *members);
            if perf.DomainMembers != members {
                failures.push(format!(
                    "processor {}: DomainId {} with DomainMembers {}, but {members} processors report that domain",
                    record.index, perf.DomainId, perf.DomainMembers
                ));
            }
            match record.domain {
                Some((true, info))
                    if info.CoordinationType > PROCESSOR_DOMAIN_COORDIANTION_HW_ALL =>
                {
                    failures.push(format!(
                        "processor {}: QUERY_DOMAIN_INFO({}) CoordinationType {}",
                        record.index, perf.DomainId, info.CoordinationType
                    ));
                }
                Some((true, info)) if info.DomainId != perf.DomainId => failures.push(format!(
                    "processor {}: QUERY_DOMAIN_INFO({}) changed DomainId to {}",
                    record.index, perf.DomainId, info.DomainId
                )),
                Some((false, _)) => failures.push(format!(
                    "processor {}: QUERY_DOMAIN_INFO({}) refused a domain the PEP reported",
                    record.index, perf.DomainId
                )),
                _ => {}
            }
        }
        if served.is_empty() {
            return CheckResult::not_applicable(
                "domain.membership",
                "no processor reported perf capabilities",
            );
        }
        CheckResult::from_failures(
            "domain.membership",
            &failures,
            format!(
                "{} processors in {} domains; DomainMembers match; QUERY_DOMAIN_INFO answers each",
                served.len(),
                domains.len()
            ),
        )
    }

    fn wrong_processor(&self) -> CheckResult {
        let id = "feedback.wrong_processor_refused";
        if self.scenario.platform.processors < 2 {
            return CheckResult::not_applicable(id, "a single processor");
        }
        self.counter_probes(id, ProbeKind::WrongProcessor, "reads on the wrong processor")
    }

    fn no_counters(&self) -> CheckResult {
        let id = "feedback.no_counters_refused";
        if self.expected_counters() != 0 {
            return CheckResult::not_applicable(
                id,
                "the platform has usable counters and the policy allows them",
            );
        }
        let mut failures: Vec<String> = self
            .observations
            .processors
            .iter()
            .filter(|record| !record.described_counters().is_empty())
            .map(|record| {
                format!(
                    "processor {}: describes {} counters",
                    record.index,
                    record.described_counters().len()
                )
            })
            .collect();
        failures.extend(self.probe_failures(&[ProbeKind::NoCounters]));
        let probes = self
            .observations
            .probes
            .iter()
            .filter(|probe| probe.kind == ProbeKind::NoCounters)
            .count();
        CheckResult::from_failures(
            id,
            &failures,
            format!("no processor describes counters; {probes} reads refused"),
        )
    }

    fn reads_served(&self) -> CheckResult {
        let id = "feedback.reads_served";
        let mut total = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            total += record.digest.working;
            failures.absorb(&record.digest.refused_working, str::to_owned);
        }
        if total == 0 {
            return CheckResult::not_applicable(id, "no counter reads on working counters");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!("{total} reads on working counters all served"),
        )
    }

    fn monotonic(&self) -> CheckResult {
        let id = "feedback.monotonic";
        let counters: usize = self.metrics.iter().map(|metrics| metrics.counters.len()).sum();
        if counters == 0 {
            return CheckResult::not_applicable(id, "no feedback counters described");
        }
        let failures: Vec<String> = self
            .metrics
            .iter()
            .flat_map(|metrics| {
                metrics.counters.iter().map(move |counter| (metrics.index, counter))
            })
            .filter(|(_, counter)| !counter.monotonic)
            .map(|(index, counter)| {
                format!(
                    "processor {index} counter {}: NominalCount or ActualCount went backwards",
                    counter.counter_index
                )
            })
            .collect();
        CheckResult::from_failures(
            id,
            &failures,
            format!("{counters} counters never went backwards"),
        )
    }

    fn accuracy(&self) -> CheckResult {
        let id = "feedback.accuracy";
        let nominal = f64::from(self.machine.nominal_mhz());
        let mut failures = Vec::new();
        let mut measured_count = 0;
        let mut worst: f64 = 0.0;
        for metrics in self.metrics {
            for counter in &metrics.counters {
                let name = format!("processor {} counter {}", metrics.index, counter.counter_index);
                // The PERFORMANCE view measures in perf units: compare ratios to nominal.
                let scale = if counter.counter_index == 0 {
                    1.0
                } else {
                    f64::from(counter.nominal_rate) / nominal
                };
                match (counter.expected.mean_mhz(), counter.measured()) {
                    (None, None) => {}
                    (None, Some(measured)) => failures.push(format!(
                        "{name}: {measured:.1} measured over intervals without C0 time"
                    )),
                    (Some(expected), None) => failures.push(format!(
                        "{name}: {:.1} expected but no nominal counts were reported",
                        expected * scale
                    )),
                    (Some(expected), Some(measured)) => {
                        measured_count += 1;
                        let expected = expected * scale;
                        let error = (measured - expected).abs() / expected;
                        worst = worst.max(error);
                        if error > ACCURACY_TOLERANCE {
                            failures.push(format!(
                                "{name}: measured {measured:.2}, expected {expected:.2} ({:.3} % off)",
                                error * 100.0
                            ));
                        }
                    }
                }
            }
        }
        if failures.is_empty() && measured_count == 0 {
            return CheckResult::not_applicable(id, "no counter measured C0 time");
        }
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{measured_count} counters within {} % (worst {:.5} %)",
                ACCURACY_TOLERANCE * 100.0,
                worst * 100.0
            ),
        )
    }

    /// `feedback.interval_accuracy`: every interval between served reads without a counter
    /// discontinuity, on its own, gives the true rate of that interval (see
    /// `reads::interval_accuracy` for the tolerance: the configured `msr_read_ns` and the
    /// engine's pair bound), so that a pair skewed by an SMI between its two reads is caught
    /// even where the whole-run average hides it.
    #[allow(clippy::cast_precision_loss)] // Parts per million, for the detail.
    fn interval_accuracy(&self) -> CheckResult {
        let id = "feedback.interval_accuracy";
        let mut intervals = 0;
        let mut failures = Findings::new();
        let mut worst = (0_u64, 1_u64);
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.intervals_checked;
                failures.absorb(&counter.interval_errors, |error| {
                    format!(
                        "processor {} counter {}: {error}",
                        metrics.index, counter.counter_index
                    )
                });
                let (error, allowed) = counter.worst_interval_ppm;
                if u128::from(error) * u128::from(worst.1)
                    > u128::from(worst.0) * u128::from(allowed)
                {
                    worst = (error, allowed);
                }
            }
        }
        if intervals == 0 {
            return CheckResult::not_applicable(id, "no busy interval between served reads");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals each within its tolerance of its own truth (closest: {:.4} % off, {:.4} % allowed; pairs read {} ns apart)",
                worst.0 as f64 / 1e4,
                worst.1 as f64 / 1e4,
                self.scenario.platform.msr_read_ns
            ),
        )
    }

    fn no_dropped_interval(&self) -> CheckResult {
        let id = "feedback.no_dropped_interval";
        let (mut intervals, mut exempt) = (0, 0);
        let mut failures = Findings::new();
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.served.saturating_sub(1);
                exempt += counter.exempt;
                failures.absorb(&counter.dropped, |dropped| {
                    format!(
                        "processor {} counter {}: {dropped}",
                        metrics.index, counter.counter_index
                    )
                });
            }
        }
        if intervals == 0 {
            return CheckResult::not_applicable(id, "no intervals between served reads");
        }
        let wraps: u64 = (0..self.scenario.platform.processors)
            .filter_map(|index| self.machine.fixed_counters(index))
            .map(|state| state.wraps[1] + state.wraps[2])
            .sum();
        let mut across = String::new();
        if wraps > 0 {
            let _ = write!(across, ", across {wraps} fixed-counter wraps");
        }
        if exempt > 0 {
            let _ = write!(across, " ({exempt} touching a counter discontinuity exempt)");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals: every one without a counter discontinuity reports the nominal counts the processor made{across}"
            ),
        )
    }

    fn no_spike(&self) -> CheckResult {
        let id = "feedback.no_spike";
        let mut intervals = 0;
        let mut failures = Findings::new();
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.served.saturating_sub(1);
                failures.absorb(&counter.spikes, |spike| {
                    format!(
                        "processor {} counter {}: {spike}",
                        metrics.index, counter.counter_index
                    )
                });
            }
        }
        if intervals == 0 {
            return CheckResult::not_applicable(id, "no intervals between served reads");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals, every rate within the true frequency range ±{} %, none across a counter discontinuity counting more than the processor made",
                SPIKE_TOLERANCE * 100.0
            ),
        )
    }

    fn read_masked(&self) -> CheckResult {
        let id = "feedback.read_masked";
        let mut served = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            served += record.digest.served;
            failures.absorb(&record.digest.access_problems, str::to_owned);
        }
        if served == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{served} served reads: the actual then the nominal counter (APERF then MPERF), back to back, interrupts masked"
            ),
        )
    }

    fn counter_msrs(&self) -> CheckResult {
        let id = "feedback.counter_msrs";
        let cpu = self.machine.cpu();
        let read_only =
            cpu.kind == crate::scenario::CpuKind::AmdCppc && cpu.counter_source.announced();
        let fixed = self.scenario.uses_fixed_counters();
        let amu = cpu.kind.is_arm64();
        let expected = if amu {
            (crate::cpu::sysreg::AMEVCNTR00, crate::cpu::sysreg::AMEVCNTR01)
        } else if read_only {
            (msr::AMD_APERF_READ_ONLY, msr::AMD_MPERF_READ_ONLY)
        } else if fixed {
            (msr::IA32_FIXED_CTR1, msr::IA32_FIXED_CTR2)
        } else {
            (msr::IA32_APERF, msr::IA32_MPERF)
        };
        let mut served = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            for ((actual_msr, nominal_msr), count) in &record.digest.msr_pairs {
                served += count;
                if (*actual_msr, *nominal_msr) != expected {
                    failures.push_many(
                        &format!(
                            "processor {}: read {actual_msr:#x}/{nominal_msr:#x}, expected {:#x}/{:#x}",
                            record.index, expected.0, expected.1
                        ),
                        *count,
                    );
                }
            }
        }
        if served == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        let which = if amu {
            "the Activity Monitors' cycle counters AMEVCNTR00_EL0/AMEVCNTR01_EL0"
        } else if read_only {
            "the AMD read-only copies"
        } else if fixed {
            "the fixed counters IA32_FIXED_CTR1/IA32_FIXED_CTR2"
        } else {
            "IA32_APERF/IA32_MPERF"
        };
        CheckResult::from_findings(
            id,
            &failures,
            format!("{served} served reads used {which} ({:#x}/{:#x})", expected.0, expected.1),
        )
    }

    fn fault_refused(&self) -> CheckResult {
        let id = "feedback.fault_refused";
        let mut faulted = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            faulted += record.digest.faulted;
            failures.absorb(&record.digest.faulted_served, str::to_owned);
        }
        if faulted == 0 {
            return CheckResult::not_applicable(id, "no counter read faulted");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!("{faulted} reads whose MSR read faulted were refused"),
        )
    }

    fn msr_only_advertised(&self) -> CheckResult {
        let observations = self.observations;
        let arm = self.scenario.platform.cpu.is_arm64();
        let failures: Vec<String> = observations
            .unannounced_msr_reads
            .iter()
            .map(|read| {
                let why = if arm {
                    "ID_AA64PFR0_EL1 did not announce the AMU (an undefined instruction)"
                } else if is_pmu_msr(read.msr) {
                    "CPUID did not announce it or the PMU was not reserved"
                } else {
                    "CPUID did not announce it"
                };
                let name = crate::cpu::sysreg::name(read.msr);
                format!("{name} read on processor {} but {why}", read.processor)
            })
            .collect();
        let ok = if arm {
            format!(
                "{} register reads, all announced by ID_AA64PFR0_EL1 (no MSR, no unannounced AMU register)",
                observations.msr_reads
            )
        } else {
            format!("{} MSR reads, all announced by CPUID", observations.msr_reads)
        };
        let mut result = CheckResult::from_failures("msr.only_advertised", &failures, ok);
        if !result.passed && observations.unannounced_msr_read_count > failures.len() {
            let _ = write!(
                result.detail,
                " ({} unannounced reads in all)",
                observations.unannounced_msr_read_count
            );
        }
        result
    }

    /// No PMU register read or written without a PMU reservation; no MSR written at all except
    /// the control registers of fixed counters 1 and 2, by the driver's setup after the
    /// reservation, leaving every other counter's configuration as found; and a reservation
    /// that did not end with the counters enabled everywhere given back.
    fn reservation_respected(&self) -> CheckResult {
        let id = "pmc.reservation_respected";
        let log = self.machine.msr_access_log();
        let mut failures: Vec<String> = log
            .unreserved_reads
            .iter()
            .map(|read| {
                format!(
                    "PMU register {:#x} read on processor {} {} without a PMU reservation",
                    read.msr,
                    read.processor,
                    context_name(read.context)
                )
            })
            .collect();
        let unlisted = log.unreserved_read_count.saturating_sub(log.unreserved_reads.len() as u64);
        if unlisted > 0 {
            failures.push(format!("{unlisted} more PMU register reads without a reservation"));
        }
        failures.extend(log.writes.iter().filter_map(write_problem));
        let reservation = self.machine.reservation();
        if let Some(record) = &reservation
            && record.status == STATUS_SUCCESS
            && !record.freed
            && !self.machine.fixed_counters_ready()
        {
            failures.push(
                "the PMU is reserved but the fixed counters were not enabled everywhere, and the reservation was not given back".to_owned(),
            );
        }
        let summary = match &reservation {
            None => "no reservation wanted".to_owned(),
            Some(record) if record.freed => {
                format!("reservation {} given back after a failure", record.request)
            }
            Some(record) => format!(
                "reservation {} answered {:#010x}",
                record.request,
                record.status.cast_unsigned()
            ),
        };
        let writes = match log.write_count {
            0 => "no MSR written".to_owned(),
            count => format!(
                "{count} MSR writes, all to the fixed counters' controls by the driver's setup, keeping the other counters' configuration"
            ),
        };
        let reads = match log.pmu_reads {
            0 => "no PMU register read".to_owned(),
            count => format!("{count} PMU register reads, all under the reservation"),
        };
        CheckResult::from_failures(id, &failures, format!("{summary}; {writes}; {reads}"))
    }
}
