//! A processor idle across a system sleep loses no interval after the resume (issue 22): the
//! built-in `resume-idle` scenario on the three counter sources' platforms — x86 APERF/MPERF,
//! ARM64 Activity Monitors, and 1000 AMD processors — and the emulator's counters never read
//! 0/0 after a power-on (the processor runs the resume path in C0 before anything reads them).

use ppm_sim::machine::RESTART_C0_NS;
use ppm_sim::scenario::Scenario;
use ppm_sim::{builtin, run};

/// `resume-idle` with its `[platform]` table replaced by `platform`.
fn variant(platform: &str) -> Scenario {
    let text = builtin::source("resume-idle").unwrap();
    let start = text.find("[platform]").unwrap();
    let end = text.find("[pofx]").unwrap();
    let text = format!("{}{platform}\n\n{}", &text[..start], &text[end..]);
    Scenario::from_toml_str(&text).unwrap()
}

fn assert_passes(scenario: &Scenario) {
    let report = run(scenario);
    let failures: Vec<String> = report
        .checks
        .iter()
        .filter(|check| !check.passed)
        .map(|check| format!("{}: {}", check.id, check.detail))
        .collect();
    assert!(report.passed, "{failures:#?}");
    let dropped = report.checks.iter().find(|check| check.id == "feedback.no_dropped_interval");
    assert!(dropped.is_some_and(|check| check.passed && !check.detail.contains("not applicable")));
}

#[test]
fn x86_idle_processor_keeps_every_interval_after_resume() {
    assert_passes(&builtin::get("resume-idle").unwrap());
}

#[test]
fn arm64_idle_processor_keeps_every_interval_after_resume() {
    assert_passes(&variant(
        "[platform]\nprocessors = 2\ncpu = \"arm64\"\ncounter_source = \"amu\"\nnominal_mhz = 2400",
    ));
}

#[test]
fn a_thousand_amd_processors_keep_every_interval_after_resume() {
    let scenario = variant(
        "[platform]\nprocessors = 1000\ncpu = \"amd-cppc\"\nnominal_mhz = 3000\ndevice_id_style = \"sb-c\"",
    );
    assert_eq!(scenario.platform.processors, 1000);
    assert_passes(&scenario);
}

#[test]
fn counters_restarted_by_a_power_on_never_read_zero() {
    let scenario = builtin::get("resume-idle").unwrap();
    let machine = ppm_sim::machine::Machine::new(&scenario);
    machine.start_runtime();
    machine.power_off(1);
    machine.power_on(1);
    let counters = machine.counters(1).unwrap();
    // Processor 1 is idle at 2600 MHz; MPERF counts at 2000 MHz: RESTART_C0_NS of C0 each.
    let ns = u128::from(RESTART_C0_NS);
    assert_eq!(u128::from(counters.mperf), 2000 * ns / 1000);
    assert_eq!(u128::from(counters.aperf), 2600 * ns / 1000);
}
