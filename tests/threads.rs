//! The emulator with one thread per simulated processor: concurrent reads while another thread
//! registers and unregisters processors, with every processor's time its own, so that a run is
//! deterministic — the same report every time, and the same as a single-threaded run.

use ppm_sim::scenario::ThreadMode;
use ppm_sim::{Report, RunOptions, Scenario, builtin, run, run_detailed};

fn builtin_scenario(name: &str) -> Scenario {
    builtin::get(name).expect("a built-in scenario")
}

fn with_threads(scenario: &Scenario, threads: ThreadMode) -> Scenario {
    let mut scenario = scenario.clone();
    scenario.pofx.threads = threads;
    scenario
}

fn assert_passes(report: &Report) {
    assert!(report.passed, "{}", report.checks_text());
}

#[test]
fn the_threaded_scenario_passes_the_same_way_every_time() {
    let scenario = builtin_scenario("threaded");
    assert_eq!(scenario.pofx.threads, ThreadMode::PerProcessor);
    let output = run_detailed(&scenario, &RunOptions::default());
    assert_eq!(output.observations.processor_threads, 16);
    assert_passes(&output.report);
    assert!(!output.observations.hotplug.is_empty() && !output.observations.sleeps.is_empty());
    for _ in 0..5 {
        assert_eq!(run(&scenario), output.report, "a threaded run differed from the first");
    }
    let single = run(&with_threads(&scenario, ThreadMode::Single));
    assert_eq!(single, output.report, "the threaded run differs from the single-threaded one");
}

#[test]
fn a_pool_of_workers_runs_every_processor_of_the_largest_machine() {
    // 2048 processors on 64 workers of 32 processors each.
    let scenario = with_threads(&builtin_scenario("big-2048"), ThreadMode::PerProcessor);
    let output = run_detailed(&scenario, &RunOptions::default());
    assert_eq!(output.observations.processor_threads, 64);
    assert_passes(&output.report);
    assert_eq!(output.report, run(&builtin_scenario("big-2048")));
}

#[test]
fn nested_notifications_and_lifecycle_events_run_the_same_on_threads() {
    for name in
        ["nested-reads", "hot-add", "resume-s4", "msr-fault-intermittent", "wrong-processor"]
    {
        let scenario = builtin_scenario(name);
        let single = run(&with_threads(&scenario, ThreadMode::Single));
        assert_passes(&single);
        for _ in 0..2 {
            let threaded = run(&with_threads(&scenario, ThreadMode::PerProcessor));
            assert_eq!(threaded, single, "{name}: the threaded run differs");
        }
    }
}
