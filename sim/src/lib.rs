//! `ppm-sim`: a PoFx emulator with simulated x86-64 and ARM64 processors for the `ppm-pep` processor PEP.
//!
//! It drives the engine ([`ppm_engine`]) exactly as the Windows power framework drives the
//! driver — only through the `PEP_INFORMATION` callbacks, with raw pointers to the C
//! structures — on simulated processors whose APERF/MPERF advance with a scenario's load, and
//! checks the answers HLK-style.
//!
//! - [`scenario`]: the scenario file format and its validation.
//! - [`machine`], [`cpu`]: the simulated machine (clock, loads, counters, the architectural
//!   PMU of [`machine::pmu`]) and CPU flavours.
//! - [`platform`]: the engine's [`ppm_engine::Platform`] over the machine.
//! - [`driver_entry`]: the driver's part before the PEP exists: `DriverEntry`'s sequence
//!   ([`ppm_engine::driver::driver_entry`]) over emulated kernel services — registry values,
//!   pool, the PMU reservation through the emulated HAL, `PoFxRegisterPluginEx`.
//! - [`pofx`]: the emulator — on one thread, or on one thread per processor beside a device
//!   thread, optionally with nested notifications interrupting every read; [`checks`]: the
//!   conformance checks, by the rules of [`verdict`]; [`report`]: the results.
//! - [`builtin`]: the built-in scenarios; [`cli`]: the `ppm-sim` command line; [`bench`](mod@bench): the
//!   micro-benchmark of `FEEDBACK_READ` and the other PPM queries through the C ABI.
//! - [`trace`], [`plot`]: `run --trace` and `run --plot`; [`output`]: how their files are
//!   written (checked before the run, renamed into place at the end).
//!
//! ```no_run
//! let scenario = ppm_sim::builtin::get("default").expect("a built-in scenario");
//! let report = ppm_sim::run(&scenario);
//! assert!(report.passed, "{}", report.checks_text());
//! ```
//!
//! To show that a check catches a broken PEP or platform, a test runs with the `sabotage`
//! feature and a `RunOptions::sabotage`: a substituted `PEP_INFORMATION` (e.g. `extern "C"`
//! shims around the engine's callbacks that corrupt what they return), platform faults or
//! broken kernel services (the `sabotage` module, absent from a build without the feature).

pub mod bench;
pub mod builtin;
pub mod checks;
#[cfg(feature = "cli")]
pub mod cli;
pub mod cpu;
pub mod driver_entry;
pub mod image;
pub mod image_limit;
pub mod machine;
pub mod output;
pub mod platform;
#[cfg(feature = "cli")]
pub mod plot;
pub mod pofx;
pub mod report;
#[cfg(any(test, feature = "sabotage"))]
pub mod sabotage;
pub mod scenario;
pub mod text;
pub mod trace;
pub mod verdict;

use std::sync::Arc;

pub use checks::{CHECK_IDS, CheckResult, CheckStatus};
pub use machine::Machine;
pub use platform::SimPlatform;
pub use pofx::{Observations, RunOptions};
pub use report::{Report, SuiteReport};
pub use scenario::{Scenario, ScenarioError};

/// Runs `scenario` against the real engine on a faithful platform.
#[must_use]
pub fn run(scenario: &Scenario) -> Report {
    run_with(scenario, &RunOptions::default())
}

/// Runs `scenario` with `options` (an observer, the image backend, a test's sabotage).
#[must_use]
pub fn run_with(scenario: &Scenario, options: &RunOptions) -> Report {
    run_detailed(scenario, options).report
}

/// A run's report together with everything it observed and the machine it ran on.
#[derive(Debug)]
pub struct RunOutput {
    /// The report.
    pub report: Report,
    /// The raw observations (every device offered, every read, every probe).
    pub observations: Observations,
    /// The simulated machine, after the run.
    pub machine: Arc<Machine>,
}

/// Runs `scenario` and returns the report with the raw observations.
#[must_use]
pub fn run_detailed(scenario: &Scenario, options: &RunOptions) -> RunOutput {
    let (mut observations, machine) = pofx::Emulator::new(scenario, options).run();
    for record in &mut observations.processors {
        record.fold_reads(&machine);
    }
    let metrics: Vec<checks::ProcessorMetrics> =
        observations.processors.iter().map(checks::processor_metrics).collect();
    let results = checks::evaluate(scenario, &observations, &machine, &metrics);
    let report = Report::new(scenario, &observations, &metrics, results);
    RunOutput { report, observations, machine }
}

/// The kernel stack the image runs on: x64's `KERNEL_STACK_SIZE`, 24 KiB.
pub const IMAGE_STACK_BYTES: u64 = 24 * 1024;

/// Runs `scenario` against the driver image at `image_path` (the image backend): a runner
/// process executes the image, this process is its kernel and machine (see [`image`]).
///
/// # Errors
/// When the run would make more than [`image_limit::MAX_IMAGE_CALLS`] calls
/// ([`image_limit::check_call_limit`]), the image is missing, or the runner could not start or
/// failed during the run (a bugcheck of the image is not an error: it fails the run's
/// `image.bugcheck` check).
pub fn run_image(
    scenario: &Scenario,
    options: &RunOptions,
    image_path: &std::path::Path,
) -> Result<RunOutput, String> {
    run_image_with(scenario, options, image_path, None)
}

/// As [`run_image`], the runner holding the image to Driver Verifier's rules when `verifier`
/// is given (its `image.irql` and `image.pool` checks join the run's).
///
/// # Errors
/// As [`run_image`].
pub fn run_image_with(
    scenario: &Scenario,
    options: &RunOptions,
    image_path: &std::path::Path,
    verifier: Option<&image::verifier::VerifierOptions>,
) -> Result<RunOutput, String> {
    image_limit::check_call_limit(scenario, &scenario.name)?;
    image::check_image(image_path, image::architecture_of(scenario))?;
    let script = image::repository().join("scripts/image-runner.sh");
    // Before the runner starts: a shared run's runner inherits the thread's processor, the
    // run's own threads too; a spinning run's takes the doorbell.
    let mut placement = image::Placement::for_runner(options.handoff);
    let runner = Arc::new(
        image::Runner::start(
            &script,
            image_path,
            image::architecture_of(scenario),
            IMAGE_STACK_BYTES,
            verifier,
            &mut placement,
        )
        .map_err(|error| error.to_string())?,
    );
    let options = RunOptions { image: Some(Arc::clone(&runner)), ..options.clone() };
    let mut output = run_detailed(scenario, &options);
    runner.quit();
    let Some(observation) = output.observations.image.take() else {
        return Err("the image backend observed nothing".to_owned());
    };
    if let Some(error) = &observation.error {
        return Err(format!("{}: {error}", scenario.name));
    }
    let report = observation.report.clone().unwrap_or_default();
    let mut judged = image::judge(
        image_path,
        &image::RunFacts {
            image_base: observation.image_base,
            report: &report,
            entries: &observation.entries,
            crash: observation.crash.as_ref(),
            faults_raised: observation.ledger.faults_raised,
            etw: &observation.ledger.etw_events,
            nested: scenario.pofx.nested_notifications,
            devices_offered: output.observations.devices.len(),
        },
    )?;
    if verifier.is_some() {
        let verdict = image::verifier::runner_verdict(&report)?
            .ok_or_else(|| format!("{}: the runner reported no verifier verdict", scenario.name))?;
        let record = output.observations.driver_entry.as_ref();
        judged.checks.extend(image::verifier::run_checks(
            &verdict,
            record.map_or(0, |record| record.status),
            record.is_some_and(|record| record.published),
        ));
        judged.verifier = Some(verdict);
    }
    output.report = output.report.with_image(judged);
    output.observations.image = Some(observation);
    Ok(output)
}

/// [`run_image_with`] under Driver Verifier's rules with nothing injected: the run, and what
/// the runner's rules saw in it.
///
/// # Errors
/// As [`run_image`].
pub fn run_image_verified(
    scenario: &Scenario,
    options: &RunOptions,
    image_path: &std::path::Path,
) -> Result<(RunOutput, image::verifier::RunnerVerdict), String> {
    let output = run_image_with(
        scenario,
        options,
        image_path,
        Some(&image::verifier::VerifierOptions::default()),
    )?;
    let verdict = output.report.image.as_ref().and_then(|image| image.verifier.clone());
    let verdict = verdict
        .ok_or_else(|| format!("{}: the runner reported no verifier verdict", scenario.name))?;
    Ok((output, verdict))
}

/// Every built-in scenario against the image (`ppm-sim validate --pep image`).
///
/// Each runs on the image of its architecture (`explicit` for every scenario of that image's
/// architecture); the suite adds the x64 image's function coverage over the x64 ones. With
/// `verifier`, every run is held to Driver Verifier's rules and each architecture's
/// systematic runs follow ([`verify_image`]).
///
/// # Errors
/// As [`run_image`], for the first scenario that could not run.
pub fn validate_image(
    explicit: Option<&std::path::Path>,
    options: &(dyn Fn(&str, &Scenario) -> RunOptions + Sync),
    verifier: bool,
) -> Result<SuiteReport, String> {
    let mut reports = Vec::new();
    let mut executed = std::collections::BTreeSet::new();
    let x64_image = explicit.map_or_else(image::default_image, std::path::Path::to_path_buf);
    let suite = builtin::all();
    let mut base_runs = Vec::new();
    for (number, (name, scenario)) in suite.iter().enumerate() {
        let image_path = &image::image_for(scenario, explicit);
        let options = options(&suite_label(number, suite.len(), name), scenario);
        let output = if verifier {
            let (output, verdict) = run_image_verified(scenario, &options, image_path)?;
            base_runs.push((scenario, image_path.clone(), verdict));
            output
        } else {
            run_image(scenario, &options, image_path)?
        };
        if scenario.platform.cpu.is_arm64() {
            reports.push(output.report);
            continue;
        }
        if let Some(image) = &output.report.image {
            executed.extend(image.executed_rvas.iter().copied());
        }
        reports.push(output.report);
    }
    let (coverage, check) = image::coverage_check(&x64_image, &executed)?;
    let suite = SuiteReport::new(reports).with_image_coverage(coverage, check);
    if !verifier {
        return Ok(suite);
    }
    Ok(suite.with_verifier(verify_image(&base_runs, options)?))
}

/// Driver Verifier's systematic runs after the base runs.
///
/// The base runs: each scenario run once under the rules, with its image and the runner's
/// verdict. Per architecture, one run per fallible call site and occurrence with that call
/// failing and one per counter access site and phase with that access faulting, on as many
/// threads as there are processors; each judged by [`image::verifier::judge_injected`].
///
/// # Errors
/// As [`run_image`], for the first run that could not be made.
pub fn verify_image(
    base: &[(&Scenario, std::path::PathBuf, image::verifier::RunnerVerdict)],
    options: &(dyn Fn(&str, &Scenario) -> RunOptions + Sync),
) -> Result<image::verifier::Verdicts, String> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let mut verdicts = image::verifier::Verdicts::new();
    for arch in ["x64", "arm64"] {
        let runs: Vec<_> = base
            .iter()
            .filter(|(scenario, _, _)| image::architecture_of(scenario) == arch)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let found: Vec<image::verifier::RunnerVerdict> =
            runs.iter().map(|(_, _, verdict)| verdict.clone()).collect();
        let costs: Vec<u64> = runs
            .iter()
            .map(|(scenario, _, _)| {
                u64::from(scenario.platform.processors) * u64::from(scenario.pofx.duration_ms)
            })
            .collect();
        let injections = image::verifier::injections(&found, &costs);
        let next = AtomicUsize::new(0);
        let results = Mutex::new(Vec::new());
        let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        std::thread::scope(|scope| {
            for _ in 0..workers.min(injections.len()) {
                scope.spawn(|| {
                    loop {
                        let number = next.fetch_add(1, Ordering::Relaxed);
                        let Some(injection) = injections.get(number) else { break };
                        let (scenario, image_path, _) = runs[injection.scenario];
                        let label = format!(
                            "verifier {arch} {}/{} {}",
                            number + 1,
                            injections.len(),
                            scenario.name
                        );
                        // Runs at once: each shares a processor with its runner.
                        let run = |scenario: &Scenario| {
                            run_image_with(
                                scenario,
                                &RunOptions {
                                    handoff: image::Handoff::Shared,
                                    ..options(&label, scenario)
                                },
                                image_path,
                                Some(&injection.options),
                            )
                            .map(|output| injected_run(&output))
                        };
                        // First on the scenario's first reads; an injection not reached
                        // there runs again on the whole scenario.
                        let mut outcome = run(&image::verifier::shortened(scenario));
                        if matches!(&outcome, Ok(run) if !run.reached(&injection.options)) {
                            outcome = run(scenario);
                        }
                        results
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((number, outcome));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        results.sort_by_key(|(number, _)| *number);
        let mut injected = Vec::new();
        for (number, outcome) in results {
            injected.push((injections[number].options.clone(), outcome?));
        }
        verdicts.insert(arch.to_owned(), image::verifier::verdict(arch, &found, &injected));
    }
    Ok(verdicts)
}

/// What an injected run ended in.
fn injected_run(output: &RunOutput) -> image::verifier::InjectedRun {
    use ppm_engine::driver::registry::state;
    let record = output.observations.driver_entry.as_ref();
    let image = output.report.image.as_ref();
    image::verifier::InjectedRun {
        bugcheck: image.and_then(|image| image.bugcheck.clone()),
        status: record.map(|record| record.status),
        published: record.is_some_and(|record| record.published),
        state: record.and_then(|record| {
            record.state.as_ref().map(|_| {
                (record.state_value(state::REGISTERED), record.state_value(state::FAILED_STEP))
            })
        }),
        verdict: image.and_then(|image| image.verifier.clone()).unwrap_or_default(),
    }
}

/// Runs every built-in scenario (`ppm-sim validate`).
#[must_use]
pub fn validate() -> SuiteReport {
    validate_with(&|_, _| RunOptions::default())
}

/// As [`validate`], each scenario run with `options(label, scenario)` (the CLI's progress
/// observer; `label` is `validate N/M NAME`).
#[must_use]
pub fn validate_with(options: &dyn Fn(&str, &Scenario) -> RunOptions) -> SuiteReport {
    let suite = builtin::all();
    SuiteReport::new(
        suite
            .iter()
            .enumerate()
            .map(|(number, (name, scenario))| {
                run_with(scenario, &options(&suite_label(number, suite.len(), name), scenario))
            })
            .collect(),
    )
}

/// What a suite's scenario is called while it runs: `validate 3/54 NAME`.
fn suite_label(number: usize, count: usize, name: &str) -> String {
    format!("validate {}/{count} {name}", number + 1)
}
