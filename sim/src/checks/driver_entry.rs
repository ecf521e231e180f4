//! The checks of `DriverEntry`: `boot.status`, `boot.unwind`, `boot.state` and `boot.inert`.
//!
//! Their ids keep `boot` (the ids are public, and `boot.state` checks the driver's `Boot` key):
//! all four cover `DriverEntry` and nothing after it.
//!
//! Each compares what the emulated kernel services saw ([`DriverEntryRecord`]) with what the
//! scenario's `[registry]` and `[[fault]]` entries make `DriverEntry` do, worked out here from
//! the scenario alone: a skip (`SkipRegistration`), a failed step and its status, or a
//! registration.

use std::collections::BTreeSet;

use ppm_engine::abi::{
    NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS, STATUS_UNSUCCESSFUL,
};
use ppm_engine::driver::registry::{REG_DWORD, names, state};
use ppm_engine::driver::{LogLevel, PoolBlock, SkipReason};

use crate::driver_entry::DriverEntryRecord;
use crate::pofx::Observations;
use crate::scenario::{Scenario, ServiceFault};

use super::CheckResult;

/// What the scenario makes `DriverEntry` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedDriverEntry {
    /// It registers the PEP.
    Registers,
    /// It loads inert, for this reason (`Boot\RegistrationSkipped`: `skip-registration`,
    /// `install-pending`).
    Skips(SkipReason),
    /// Step `step` fails with `status`; everything is undone.
    Fails {
        /// `Boot\FailedStep`.
        step: &'static str,
        /// What `DriverEntry` returns.
        status: NTSTATUS,
    },
}

impl ExpectedDriverEntry {
    /// Worked out from the scenario's registry values and faults, in `DriverEntry`'s order.
    #[must_use]
    pub fn of(scenario: &Scenario) -> Self {
        let kernel = &scenario.kernel;
        let parameters_readable = kernel.fault("open-parameters").is_none();
        let skip_read_fails = kernel.faults.iter().any(|fault| {
            matches!(fault, ServiceFault::ReadValue { value, .. }
                if value.eq_ignore_ascii_case(names::SKIP_REGISTRATION))
        });
        let skip_value = kernel
            .value(names::SKIP_REGISTRATION)
            .map(|value| value.value_type != REG_DWORD || value.data != [0, 0, 0, 0]);
        if parameters_readable && (skip_read_fails || skip_value == Some(true)) {
            return Self::Skips(SkipReason::SkipRegistration);
        }
        if kernel.install_pending {
            return Self::Skips(SkipReason::InstallPending);
        }
        if kernel.fault("processor-count").is_some() {
            return Self::Fails {
                step: "KeQueryMaximumProcessorCountEx",
                status: STATUS_UNSUCCESSFUL,
            };
        }
        let table_refused = kernel.faults.iter().any(|fault| {
            matches!(fault, ServiceFault::Allocate { block: PoolBlock::ProcessorTable })
        });
        if table_refused {
            return Self::Fails {
                step: "allocating the processor table",
                status: STATUS_INSUFFICIENT_RESOURCES,
            };
        }
        if let Some(ServiceFault::RegisterPlugin { status }) = kernel.fault("register-plugin") {
            return Self::Fails { step: "PoFxRegisterPluginEx", status: *status };
        }
        Self::Registers
    }

    /// What `DriverEntry` returns.
    #[must_use]
    pub const fn status(self) -> NTSTATUS {
        match self {
            Self::Registers | Self::Skips(_) => STATUS_SUCCESS,
            Self::Fails { status, .. } => status,
        }
    }

    /// Whether the runtime runs (the PEP is registered).
    #[must_use]
    pub const fn registers(self) -> bool {
        matches!(self, Self::Registers)
    }

    /// A short description for check details.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::Registers => "registers the PEP".to_owned(),
            Self::Skips(reason) => format!("loads inert ({})", reason.name()),
            Self::Fails { step, status } => format!("fails at {step} with {status:#010X}"),
        }
    }
}

fn hex(status: NTSTATUS) -> String {
    format!("{status:#010X}")
}

/// The four `boot.*` checks, in report order.
pub(super) fn checks(scenario: &Scenario, observations: &Observations) -> [CheckResult; 4] {
    let Some(record) = &observations.driver_entry else {
        let missing = |id| CheckResult::new(id, false, "DriverEntry did not run");
        return [
            missing("boot.status"),
            missing("boot.unwind"),
            missing("boot.state"),
            missing("boot.inert"),
        ];
    };
    let expected = ExpectedDriverEntry::of(scenario);
    [
        status(record, expected),
        unwind(record, expected),
        state_key(scenario, observations, record, expected),
        inert(observations, record, expected),
    ]
}

/// `boot.status`: `DriverEntry` returns the documented status.
fn status(record: &DriverEntryRecord, expected: ExpectedDriverEntry) -> CheckResult {
    let id = "boot.status";
    let detail = format!(
        "DriverEntry returned {} (the scenario's boot {}, expected {})",
        hex(record.status),
        expected.describe(),
        hex(expected.status())
    );
    CheckResult::new(id, record.status == expected.status(), detail)
}

/// `boot.unwind`: a failed `DriverEntry` leaves nothing behind; a registered one keeps exactly the
/// processor table and the PMU reservation; a skipped one touches nothing.
fn unwind(record: &DriverEntryRecord, expected: ExpectedDriverEntry) -> CheckResult {
    let id = "boot.unwind";
    let mut failures = Vec::new();
    let changed: Vec<usize> = record
        .pmu_control
        .iter()
        .enumerate()
        .filter(|(_, (before, after))| before != after)
        .map(|(index, _)| index)
        .collect();
    let outstanding = |block| record.outstanding.iter().filter(|&&other| other == block).count();
    match expected {
        ExpectedDriverEntry::Registers => {
            if outstanding(PoolBlock::ProcessorTable) != 1 || record.outstanding.len() != 1 {
                failures.push(format!(
                    "pool blocks kept after registering: {:?} (expected the processor table only)",
                    record.outstanding
                ));
            }
            if !record.published {
                failures.push("registered but no PEP published".to_owned());
            }
        }
        ExpectedDriverEntry::Fails { .. } | ExpectedDriverEntry::Skips(_) => {
            if !record.outstanding.is_empty() {
                failures.push(format!("pool blocks leaked: {:?}", record.outstanding));
            }
            if record.published {
                failures.push("the PEP is still published: callbacks could reach it".to_owned());
            }
            if let Some(registration) = record.registration
                && registration.status >= 0
            {
                failures.push("PoFx accepted the callbacks".to_owned());
            }
            if record.pmu_reserved {
                failures.push("the PMU reservation was not given back".to_owned());
            }
            if !changed.is_empty() {
                failures.push(format!(
                    "PMU control left changed on processor(s) {changed:?} (IA32_FIXED_CTR_CTRL / IA32_PERF_GLOBAL_CTRL)"
                ));
            }
        }
    }
    if matches!(expected, ExpectedDriverEntry::Skips(_))
        && (!record.allocations.is_empty()
            || record.reservation_requested
            || record.registration.is_some())
    {
        failures.push(format!(
            "a skipped boot allocated {} block(s), {} the PMU and {} PoFxRegisterPluginEx",
            record.allocations.len(),
            if record.reservation_requested { "requested" } else { "did not request" },
            if record.registration.is_some() { "called" } else { "did not call" },
        ));
    }
    let summary = format!(
        "{}: {} allocation(s), {} kept, PMU {}",
        expected.describe(),
        record.allocations.len(),
        record.outstanding.len(),
        if record.pmu_reserved { "reserved" } else { "not reserved" }
    );
    CheckResult::from_failures(id, &failures, summary)
}

/// `boot.state`: the `Boot` key holds exactly the values `docs/registry.md` documents for the
/// outcome.
fn state_key(
    scenario: &Scenario,
    observations: &Observations,
    record: &DriverEntryRecord,
    expected: ExpectedDriverEntry,
) -> CheckResult {
    let id = "boot.state";
    if scenario.kernel.fault("create-state-key").is_some() {
        let logged = record
            .log
            .iter()
            .any(|(level, line)| *level == LogLevel::Error && line.contains("Boot key"));
        let passed = record.state.is_none() && logged;
        return CheckResult::new(
            id,
            passed,
            if passed {
                "the Boot key could not be created: logged, nothing written, boot unaffected"
            } else {
                "the Boot key failure was not logged, or values were written anyway"
            },
        );
    }
    let Some(values) = &record.state else {
        return CheckResult::new(id, false, "no Boot key written");
    };
    // What DriverEntry logged as ignored, in order: one line per issue.
    let ignored: Vec<&str> = record
        .log
        .iter()
        .filter(|(level, _)| *level == LogLevel::Error)
        .filter_map(|(_, line)| {
            line.strip_prefix("Parameters\\")
                .or_else(|| line.starts_with("cannot open the Parameters").then_some(""))
        })
        .collect();
    let issues = ignored.len();
    // `ConfigurationIssue1`, … beside `ConfigurationIssues` for the first ones.
    let listed: Vec<String> = (1..=issues.min(state::MAX_LISTED_ISSUES))
        .map(|index| format!("{}{index}", state::CONFIGURATION_ISSUE_PREFIX))
        .collect();
    let names: BTreeSet<&str> = values.keys().map(String::as_str).collect();
    let mut wanted: BTreeSet<&str> = match expected {
        ExpectedDriverEntry::Registers => state::REGISTERED_VALUES.into_iter().collect(),
        ExpectedDriverEntry::Fails { .. } => state::FAILED_VALUES.into_iter().collect(),
        ExpectedDriverEntry::Skips(_) => state::SKIPPED_VALUES.into_iter().collect(),
    };
    if wanted.contains(state::CONFIGURATION_ISSUES) {
        wanted.extend(listed.iter().map(String::as_str));
    }
    let mut failures = Vec::new();
    if names != wanted {
        let missing: Vec<&&str> = wanted.difference(&names).collect();
        let extra: Vec<&&str> = names.difference(&wanted).collect();
        failures.push(format!("values missing {missing:?}, unexpected {extra:?}"));
    }
    if !matches!(expected, ExpectedDriverEntry::Fails { .. }) {
        // Each listed issue is the line the driver logged for it (`Parameters\VALUE: REASON`).
        for (name, logged) in listed.iter().zip(&ignored) {
            let found = record.state_value(name).unwrap_or_default();
            let (value, _) = found.split_once(": ").unwrap_or_default();
            let agrees = if logged.is_empty() { value == "Parameters" } else { found == *logged };
            if !agrees {
                failures.push(format!("{name} = {found:?}, logged {logged:?}"));
            }
        }
    }
    let mut expect = |name: &str, wanted: String| {
        let found = record.state_value(name).unwrap_or_default();
        if found != wanted {
            failures.push(format!("{name} = {found:?}, expected {wanted:?}"));
        }
    };
    let architecture = if scenario.platform.cpu.is_arm64() { "arm64" } else { "x64" };
    expect(state::ARCHITECTURE, architecture.to_owned());
    // The image that ran: the engine backend's kernel reports a fixed stamp, the image reads
    // its own PE header.
    expect(state::IMAGE_TIME_DATE_STAMP, record.image_time_date_stamp.to_string());
    match expected {
        ExpectedDriverEntry::Registers => {
            expect(state::REGISTERED, "1".to_owned());
            expect(state::COUNTER_SOURCE, observations.engine.counter_source.clone());
            expect(state::CONFIGURATION_ISSUES, issues.to_string());
            expect(state::PROCESSOR_TABLE_CAPACITY, scenario.platform.processors.to_string());
            if record.pmu_reserved {
                expect(state::PMU_RESERVATION, "reserved".to_owned());
            }
        }
        ExpectedDriverEntry::Fails { step, status } => {
            expect(state::REGISTERED, "0".to_owned());
            expect(state::FAILED_STEP, step.to_owned());
            expect(state::FAILURE_STATUS, status.cast_unsigned().to_string());
        }
        ExpectedDriverEntry::Skips(reason) => {
            expect(state::REGISTERED, "0".to_owned());
            expect(state::REGISTRATION_SKIPPED, reason.name().to_owned());
            expect(state::CONFIGURATION_ISSUES, issues.to_string());
        }
    }
    let summary =
        format!("{} value(s) as documented for a boot that {}", names.len(), expected.describe());
    CheckResult::from_failures(id, &failures, summary)
}

/// `boot.inert`: with `SkipRegistration` set, or in the session of a fresh install, no
/// callback is reachable and the `Boot` key says why.
fn inert(
    observations: &Observations,
    record: &DriverEntryRecord,
    expected: ExpectedDriverEntry,
) -> CheckResult {
    let id = "boot.inert";
    let ExpectedDriverEntry::Skips(reason) = expected else {
        return CheckResult::not_applicable(
            id,
            "SkipRegistration is not set and no install is pending",
        );
    };
    let mut failures = Vec::new();
    if record.registration.is_some() {
        failures.push("PoFxRegisterPluginEx was called".to_owned());
    }
    if record.published {
        failures.push("a PEP is published".to_owned());
    }
    if !observations.devices.is_empty() {
        failures
            .push(format!("{} device notification(s) reached the PEP", observations.devices.len()));
    }
    if record.status != STATUS_SUCCESS {
        failures.push(format!("DriverEntry returned {} instead of success", hex(record.status)));
    }
    if record.state_value(state::REGISTRATION_SKIPPED).as_deref() != Some(reason.name()) {
        failures.push("the Boot key does not say why the PEP is not registered".to_owned());
    }
    CheckResult::from_failures(
        id,
        &failures,
        format!(
            "the service loads inert: nothing registered, no callback reachable, Boot\\RegistrationSkipped = {}",
            reason.name()
        ),
    )
}
