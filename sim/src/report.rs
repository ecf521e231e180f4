//! The result of a run: per-processor measurements, the engine's account of itself and the
//! checks, as JSON (the schema in `docs/cli.md`) and as a human-readable table.

use std::fmt::Write as _;

use serde::Serialize;

use crate::checks::{CheckResult, CheckStatus, ProcessorMetrics};
use crate::pofx::{EngineSummary, Observations};
use crate::scenario::{PROCESSORS_PER_GROUP, Scenario};
use crate::text::escaped;
use ppm_engine::driver::registry::state;

/// A run's report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// Whether every check passed.
    pub passed: bool,
    /// The PEP that ran: `engine` (compiled for this host) or `image` (the linked driver's
    /// machine code, under the image runner).
    pub pep: &'static str,
    /// What only the image can show (the image backend only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::image::ImageReport>,
    /// Driver Verifier's rules on the image, per architecture (`--verifier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier: Option<crate::image::verifier::Verdicts>,
    /// The simulated machine.
    pub platform: PlatformSummary,
    /// What the engine said about itself.
    pub engine: EngineReport,
    /// Per processor.
    pub processors: Vec<ProcessorReport>,
    /// The checks, in [`crate::checks::CHECK_IDS`] order.
    pub checks: Vec<CheckResult>,
}

/// The simulated machine, as the report describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlatformSummary {
    /// Processors.
    pub processors: u32,
    /// CPU flavour.
    pub cpu: String,
    /// What the counters do.
    pub counter_source: String,
    /// MPERF's rate in C0, MHz.
    pub nominal_mhz: u32,
    /// `CPUID.1:ECX[31]`.
    pub hypervisor: bool,
    /// Runtime length, ms.
    pub duration_ms: u32,
    /// The OS's read interval, ms.
    pub sample_interval_ms: u32,
}

/// The engine's account of itself (accessors; informational).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineReport {
    /// The counter source selected (`none`, `aperf-mperf`, `amd-aperf-mperf-ro`, `fixed-pmc`).
    pub counter_source: String,
    /// Its nominal rate, MHz.
    pub nominal_mhz: u32,
    /// Where that came from (`State\NominalRateSource`'s vocabulary).
    pub nominal_source: String,
    /// Why it reports no counters, if it does not (`State\NoCountersReason`'s vocabulary).
    pub no_counters_reason: Option<String>,
    /// Where its perf capabilities came from (`State\PerfSource`'s vocabulary).
    pub perf_source: String,
    /// The perf capabilities it serves: highest, nominal, lowest nonlinear, lowest.
    pub perf_capabilities: [u32; 4],
    /// The device ids it logged and whether it accepted them (its last 32).
    pub device_ids_seen: Vec<DeviceIdSeen>,
    /// Set when the PEP calibrated its nominal rate while the processor ran off its nominal
    /// frequency (ARM64 without `NominalMhz`: it measures the boot processor's current speed),
    /// so that `% Processor Performance` is scaled wrongly: what happened and how to set the
    /// nominal rate.
    pub nominal_warning: Option<String>,
    /// The configuration values `DriverEntry` ignored (`State\ConfigurationIssues`).
    pub configuration_issue_count: u32,
    /// Each ignored value and why, as `Boot` lists them (`ConfigurationIssue1`, …: the first
    /// 8 of [`Self::configuration_issue_count`]).
    pub configuration_issues: Vec<ConfigurationIssue>,
}

/// A configuration value the PEP ignored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfigurationIssue {
    /// The value's name under `Parameters`.
    pub value: String,
    /// Why it was ignored.
    pub reason: String,
}

impl EngineReport {
    /// The ignored configuration values, a line each under a heading (nothing when none).
    #[must_use]
    pub fn configuration_text(&self) -> String {
        let mut text = String::new();
        if self.configuration_issue_count > 0 {
            let _ = writeln!(
                text,
                "configuration: {} value{} ignored (Boot\\ConfigurationIssues):",
                self.configuration_issue_count,
                plural(self.configuration_issue_count)
            );
            for issue in &self.configuration_issues {
                let _ = writeln!(
                    text,
                    "  ignored {}: {}",
                    escaped(&issue.value),
                    escaped(&issue.reason)
                );
            }
            let listed = u32::try_from(self.configuration_issues.len()).unwrap_or(u32::MAX);
            if self.configuration_issue_count > listed {
                let _ = writeln!(
                    text,
                    "  and {} more (State lists the first {listed})",
                    self.configuration_issue_count - listed
                );
            }
        }
        text
    }
}

/// A logged device id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceIdSeen {
    /// The id.
    pub id: String,
    /// Whether the PEP accepted it.
    pub accepted: bool,
}

/// One processor's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessorReport {
    /// Global index.
    pub index: u32,
    /// Processor group.
    pub group: u32,
    /// Number within the group.
    pub number: u32,
    /// The device id PoFx offered.
    pub device_id: String,
    /// Whether the PEP accepted and registered it.
    pub accepted: bool,
    /// Feedback counters described.
    pub counters: usize,
    /// Runtime `FEEDBACK_READ`s issued.
    pub reads: usize,
    /// Runtime reads refused.
    pub refused_reads: usize,
    /// C0-weighted true delivered frequency over the measured window, MHz.
    pub expected_mhz: Option<f64>,
    /// `NominalRate × ΣΔActual / ΣΔNominal` from the PEP's values, MHz.
    pub measured_mhz: Option<f64>,
    /// `(measured − expected) / expected`, percent.
    pub error_percent: Option<f64>,
    /// What Windows' `% Processor Performance` counter shows for the run: the measured
    /// frequency over the nominal one, in percent (`typeperf "\Processor
    /// Information(*)\% Processor Performance"`).
    pub processor_performance_percent: Option<f64>,
    /// Whether every counter's values never went backwards.
    pub monotonic: bool,
}

/// The warning for a nominal rate the PEP calibrated off the processor's nominal frequency by
/// more than 0.5 % (a measurement at nominal is exact to the MHz).
fn calibration_warning(source: &str, calibrated_mhz: u32, nominal_mhz: u32) -> Option<String> {
    let off = calibrated_mhz.abs_diff(nominal_mhz);
    (source == "calibrated" && calibrated_mhz != 0 && u64::from(off) * 200 > u64::from(nominal_mhz))
        .then(|| {
            let percent = f64::from(nominal_mhz) / f64::from(calibrated_mhz) * 100.0;
            format!(
                "the PEP calibrated its nominal rate on the boot processor at {calibrated_mhz} MHz, its speed then, not its nominal {nominal_mhz} MHz: % Processor Performance reads {percent:.0} % at nominal; set the nominal rate: registry NominalMhz = {nominal_mhz} (in a scenario, config.nominal_mhz = {nominal_mhz})"
            )
        })
}

/// Rounds for the report (JSON and text show the same numbers).
fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10_f64.powi(decimals);
    (value * scale).round() / scale
}

impl Report {
    /// Assembles the report of a run.
    #[must_use]
    pub fn new(
        scenario: &Scenario,
        observations: &Observations,
        metrics: &[ProcessorMetrics],
        checks: Vec<CheckResult>,
    ) -> Self {
        let platform = &scenario.platform;
        let processors = observations
            .processors
            .iter()
            .zip(metrics)
            .map(|(record, metrics)| {
                let expected = metrics.expected_mhz();
                let measured = metrics.measured_mhz();
                let error = match (expected, measured) {
                    (Some(expected), Some(measured)) => {
                        Some(round((measured - expected) / expected * 100.0, 4))
                    }
                    _ => None,
                };
                ProcessorReport {
                    index: record.index,
                    group: record.index / PROCESSORS_PER_GROUP,
                    number: record.index % PROCESSORS_PER_GROUP,
                    device_id: record.device_id.clone(),
                    accepted: !record.issued_handles.is_empty(),
                    counters: record.described_counters().len(),
                    reads: metrics.reads,
                    refused_reads: metrics.refused,
                    expected_mhz: expected.map(|mhz| round(mhz, 2)),
                    measured_mhz: measured.map(|mhz| round(mhz, 2)),
                    error_percent: error,
                    processor_performance_percent: measured.map(|mhz| {
                        round(mhz / f64::from(observations.engine.nominal_mhz.max(1)) * 100.0, 1)
                    }),
                    monotonic: metrics.monotonic(),
                }
            })
            .collect();
        let EngineSummary {
            counter_source,
            nominal_mhz,
            nominal_source,
            no_counters_reason,
            perf_source,
            perf_capabilities,
            device_ids_seen,
        } = observations.engine.clone();
        let nominal_warning =
            calibration_warning(&nominal_source, nominal_mhz, platform.nominal_mhz);
        let driver_entry = observations.driver_entry.as_ref();
        let configuration_issue_count = driver_entry
            .and_then(|record| record.state_value(state::CONFIGURATION_ISSUES))
            .and_then(|count| count.parse().ok())
            .unwrap_or(0);
        let configuration_issues = driver_entry
            .map(crate::driver_entry::DriverEntryRecord::configuration_issues)
            .unwrap_or_default()
            .into_iter()
            .map(|(value, reason)| ConfigurationIssue { value, reason })
            .collect();
        Self {
            scenario: scenario.name.clone(),
            passed: checks.iter().all(|check| check.passed),
            platform: PlatformSummary {
                processors: platform.processors,
                cpu: platform.cpu.name().to_owned(),
                counter_source: platform.counter_source.name().to_owned(),
                nominal_mhz: platform.nominal_mhz,
                hypervisor: platform.hypervisor,
                duration_ms: scenario.pofx.duration_ms,
                sample_interval_ms: scenario.pofx.sample_interval_ms,
            },
            engine: EngineReport {
                counter_source,
                nominal_mhz,
                nominal_source,
                no_counters_reason,
                perf_source,
                perf_capabilities,
                device_ids_seen: device_ids_seen
                    .into_iter()
                    .map(|(id, accepted)| DeviceIdSeen { id, accepted })
                    .collect(),
                nominal_warning,
                configuration_issue_count,
                configuration_issues,
            },
            processors,
            checks,
            pep: "engine",
            image: None,
            verifier: None,
        }
    }

    /// Adds Driver Verifier's verdict (`--verifier`): it decides with the checks.
    #[must_use]
    pub fn with_verifier(mut self, verdicts: crate::image::verifier::Verdicts) -> Self {
        self.passed &= crate::image::verifier::all_passed(&verdicts);
        self.verifier = Some(verdicts);
        self
    }

    /// Adds what the image backend measured: its `image.*` checks join the run's.
    #[must_use]
    pub fn with_image(mut self, image: crate::image::ImageReport) -> Self {
        self.checks.extend(image.checks.iter().cloned());
        self.passed = self.checks.iter().all(|check| check.passed);
        self.pep = "image";
        self.image = Some(image);
        self
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|check| !check.passed)
    }

    /// The human-readable report: the per-processor table, then the checks.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let platform = &self.platform;
        let engine = &self.engine;
        let _ = writeln!(
            text,
            "scenario {}: {} {} processor{} ({}, counters {}, nominal {} MHz{}), {} ms, OS reads every {} ms",
            escaped(&self.scenario),
            platform.processors,
            if platform.cpu == "arm64" { "ARM64" } else { "x86-64" },
            plural(platform.processors),
            platform.cpu,
            platform.counter_source,
            platform.nominal_mhz,
            if platform.hypervisor { ", hypervisor" } else { "" },
            platform.duration_ms,
            platform.sample_interval_ms
        );
        let _ = writeln!(
            text,
            "PEP: counter source {}, nominal {} MHz ({}), perf {}/{}/{}/{} ({}){}",
            escaped(&engine.counter_source),
            engine.nominal_mhz,
            escaped(&engine.nominal_source),
            engine.perf_capabilities[0],
            engine.perf_capabilities[1],
            engine.perf_capabilities[2],
            engine.perf_capabilities[3],
            escaped(&engine.perf_source),
            engine
                .no_counters_reason
                .as_ref()
                .map_or_else(String::new, |reason| format!(", no counters: {}", escaped(reason)))
        );
        if let Some(warning) = &engine.nominal_warning {
            let _ = writeln!(text, "warning: {warning}");
        }
        text.push_str(&engine.configuration_text());
        let _ = writeln!(text);
        let _ = writeln!(
            text,
            "{:>5} {:>6}  {:<16} {:>8} {:>6} {:>7} {:>13} {:>13} {:>8} {:>7}",
            "cpu",
            "grp:nr",
            "device id",
            "counters",
            "reads",
            "refused",
            "expected MHz",
            "measured MHz",
            "error %",
            "% perf"
        );
        let optional = |value: Option<f64>, decimals: usize| {
            value.map_or_else(|| "-".to_owned(), |value| format!("{value:.decimals$}"))
        };
        for processor in &self.processors {
            let _ = writeln!(
                text,
                "{:>5} {:>6}  {:<16} {:>8} {:>6} {:>7} {:>13} {:>13} {:>8} {:>7}{}",
                processor.index,
                format!("{}:{}", processor.group, processor.number),
                escaped(&processor.device_id),
                if processor.accepted {
                    processor.counters.to_string()
                } else {
                    "declined".to_owned()
                },
                processor.reads,
                processor.refused_reads,
                optional(processor.expected_mhz, 1),
                optional(processor.measured_mhz, 1),
                optional(processor.error_percent, 3),
                optional(processor.processor_performance_percent, 1),
                if processor.monotonic { "" } else { "  NOT MONOTONIC" }
            );
        }
        let _ = writeln!(text);
        text.push_str(&self.checks_text());
        text.push_str(&verifier_text(self.verifier.as_ref()));
        text
    }

    /// The checks, one per line, and the verdict.
    #[must_use]
    pub fn checks_text(&self) -> String {
        let mut text = String::new();
        for check in &self.checks {
            let verdict = if !check.passed {
                "FAIL"
            } else if check.is_not_applicable() {
                "n/a "
            } else {
                "ok  "
            };
            let _ =
                writeln!(text, "  {verdict} {:<38} {}", escaped(&check.id), escaped(&check.detail));
        }
        let _ = writeln!(text, "{}: {}", escaped(&self.scenario), self.tally());
        text
    }

    /// `28 passed, 5 not applicable (33 checks)`, with `, 1 FAILED` when some failed.
    #[must_use]
    pub fn tally(&self) -> String {
        let count = |status| self.checks.iter().filter(|check| check.status == status).count();
        let failed = count(CheckStatus::Failed);
        format!(
            "{} passed, {} not applicable{} ({} checks)",
            count(CheckStatus::Passed),
            count(CheckStatus::NotApplicable),
            if failed == 0 { String::new() } else { format!(", {failed} FAILED") },
            self.checks.len()
        )
    }
}

/// The report of a whole suite (`ppm-sim validate`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteReport {
    /// Whether every scenario passed.
    pub passed: bool,
    /// One report per scenario.
    pub scenarios: Vec<Report>,
    /// The image backend: function coverage over the whole suite, and its check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_coverage: Option<(Vec<crate::image::Coverage>, CheckResult)>,
    /// Driver Verifier's rules on the images, per architecture (`--verifier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier: Option<crate::image::verifier::Verdicts>,
}

impl SuiteReport {
    /// Collects scenario reports.
    #[must_use]
    pub fn new(scenarios: Vec<Report>) -> Self {
        Self {
            passed: scenarios.iter().all(|report| report.passed),
            scenarios,
            image_coverage: None,
            verifier: None,
        }
    }

    /// Adds Driver Verifier's verdict (`--verifier`): it decides with the scenarios.
    #[must_use]
    pub fn with_verifier(mut self, verdicts: crate::image::verifier::Verdicts) -> Self {
        self.passed &= crate::image::verifier::all_passed(&verdicts);
        self.verifier = Some(verdicts);
        self
    }

    /// Adds the suite's image coverage (its check decides with the scenarios).
    #[must_use]
    pub fn with_image_coverage(
        mut self,
        coverage: Vec<crate::image::Coverage>,
        check: CheckResult,
    ) -> Self {
        self.passed &= check.passed;
        self.image_coverage = Some((coverage, check));
        self
    }

    /// One line per scenario, the failed checks under it, and the verdict.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for report in &self.scenarios {
            let _ = writeln!(
                text,
                "{} {:<27} {:>5} processor{:<1}  {}",
                if report.passed { "PASS" } else { "FAIL" },
                escaped(&report.scenario),
                report.platform.processors,
                plural(report.platform.processors),
                report.tally()
            );
            for check in report.failures() {
                let _ = writeln!(
                    text,
                    "       FAIL {}: {}",
                    escaped(&check.id),
                    escaped(&check.detail)
                );
            }
        }
        let passed = self.scenarios.iter().filter(|report| report.passed).count();
        if let Some((coverage, check)) = &self.image_coverage {
            let units: Vec<String> = coverage
                .iter()
                .map(|unit| format!("{} {}/{}", unit.unit, unit.executed, unit.functions))
                .collect();
            let _ = writeln!(text, "image functions run, per crate: {}", units.join(", "));
            let verdict = if check.passed { "ok  " } else { "FAIL" };
            let _ = writeln!(text, "  {verdict} {:<38} {}", check.id, escaped(&check.detail));
        }
        text.push_str(&verifier_text(self.verifier.as_ref()));
        let _ = writeln!(text, "validate: {passed} of {} scenarios passed", self.scenarios.len());
        text
    }
}

/// `"s"` unless `count` is one: "1 processor", "2 processors".
#[must_use]
pub const fn plural(count: u32) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Driver Verifier's lines of a text report (none without `--verifier`).
fn verifier_text(verdicts: Option<&crate::image::verifier::Verdicts>) -> String {
    let mut text = String::new();
    for line in verdicts.map(crate::image::verifier::summary_lines).unwrap_or_default() {
        let _ = writeln!(text, "{}", escaped(&line));
    }
    text
}
