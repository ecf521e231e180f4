//! End-to-end conformance: the real engine, driven through its C callbacks by the PoFx
//! emulator, passes every built-in scenario; the `ppm-sim` command line keeps its contract
//! (exit codes, JSON report shape, one-line errors for unusable input).

use std::ffi::OsString;
use std::path::PathBuf;

use ppm_sim::{CHECK_IDS, builtin, cli, run};
use serde_json::Value;

/// Runs the CLI in-process: (exit code, stdout, stderr).
fn ppm_sim(args: &[&str]) -> (u8, String, String) {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = cli::main(&args, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// A scenario file in a fresh temporary directory.
fn scenario_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ppm-pep-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const VALID: &str = r#"
name = "turbo-burst"
[platform]
processors = 8
counter_source = "aperf-mperf"
nominal_mhz = 2000
[pofx]
duration_ms = 600
sample_interval_ms = 15
[[phase]]
start_ms = 0
processors = "all"
frequency_mhz = 3200
busy_percent = 100
[[phase]]
start_ms = 300
processors = [2, 3]
frequency_mhz = 1200
busy_percent = 40
[[event]]
at_ms = 450
kind = "counter-reset"
processors = [2]
"#;

#[test]
fn every_builtin_scenario_passes_every_check() {
    let scenarios = builtin::all();
    assert!(scenarios.len() >= 10, "the built-in suite shrank to {}", scenarios.len());
    for (name, scenario) in scenarios {
        let report = run(&scenario);
        let failures: Vec<String> = report
            .checks
            .iter()
            .filter(|check| !check.passed)
            .map(|check| format!("{}: {}", check.id, check.detail))
            .collect();
        assert!(report.passed, "{name}: {failures:#?}");
        let ids: Vec<&str> = report.checks.iter().map(|check| check.id.as_str()).collect();
        assert_eq!(ids, CHECK_IDS, "{name}: every check, once, in the table's order");
    }
}

#[test]
fn the_built_in_suite_covers_the_required_situations() {
    let names: Vec<&str> = builtin::all().into_iter().map(|(name, _)| name).collect();
    for required in [
        "default",
        "single",
        "steady-8",
        "turbo-burst",
        "mostly-idle",
        "big-2048",
        "no-counters",
        "counter-reset",
        "near-wrap",
        "wrong-processor",
        "msr-fault",
        "msr-fault-intermittent",
        "counter-reset-mid-interval",
        "hypervisor-zeros-after-init",
        "counters-zero-transient",
        "hot-add",
        "resume-s3",
        "resume-s4",
        "resume-idle",
        "nested-reads",
        "threaded",
    ] {
        assert!(names.contains(&required), "missing built-in scenario {required}");
    }
    let big = builtin::get("big-2048").unwrap();
    assert_eq!(big.platform.processors, 2048);
}

#[test]
fn the_default_run_measures_what_the_processors_delivered() {
    let report = run(&builtin::get("default").unwrap());
    let mut measured = 0;
    for processor in &report.processors {
        if let (Some(expected), Some(got)) = (processor.expected_mhz, processor.measured_mhz) {
            assert!((got - expected).abs() / expected <= 0.001, "{processor:?}");
            measured += 1;
        }
        assert!(processor.monotonic, "{processor:?}");
        assert_eq!(processor.refused_reads, 0, "{processor:?}");
    }
    assert!(measured >= 6, "only {measured} processors had C0 time");
}

#[test]
fn bare_ppm_sim_prints_the_table_and_exits_0() {
    let (code, out, err) = ppm_sim(&[]);
    assert_eq!(code, 0, "{out}{err}");
    // The summary separates what passed from what did not apply.
    let summary = out.lines().last().expect("a summary line");
    let report =
        ppm_sim::run_with(&builtin::get("default").unwrap(), &ppm_sim::RunOptions::default());
    let not_applicable = report.checks.iter().filter(|check| check.is_not_applicable()).count();
    assert!(not_applicable > 0);
    assert_eq!(
        summary,
        format!(
            "default: {} passed, {not_applicable} not applicable ({} checks)",
            report.checks.len() - not_applicable,
            report.checks.len()
        )
    );
    assert!(out.contains("measured MHz"), "{out}");
    assert!(out.contains("\\_SB.CPU7"), "{out}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn validate_json_reports_every_scenario_passed() {
    let (code, out, err) = ppm_sim(&["validate", "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["passed"], Value::Bool(true), "{out}");
    let scenarios = json["scenarios"].as_array().expect("a scenarios array");
    assert_eq!(scenarios.len(), builtin::all().len());
    for scenario in scenarios {
        assert_eq!(scenario["passed"], Value::Bool(true));
        assert!(scenario["scenario"].is_string());
        for check in scenario["checks"].as_array().unwrap() {
            assert!(
                check["id"].is_string()
                    && check["passed"].is_boolean()
                    && check["detail"].is_string()
            );
            // Three outcomes; `passed` stays true for a check that did not apply.
            let status = check["status"].as_str().expect("a status");
            let detail = check["detail"].as_str().unwrap();
            match status {
                "passed" => assert!(!detail.starts_with("not applicable"), "{check}"),
                "not-applicable" => assert!(detail.starts_with("not applicable: "), "{check}"),
                other => panic!("status {other} in a passing suite: {check}"),
            }
        }
    }
}

#[test]
fn run_json_has_the_documented_shape() {
    let path = scenario_file("turbo-burst.toml", VALID);
    let (code, out, err) = ppm_sim(&["run", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}{out}");
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["scenario"], "turbo-burst");
    assert_eq!(json["passed"], true);
    let processors = json["processors"].as_array().unwrap();
    assert_eq!(processors.len(), 8);
    for (index, processor) in processors.iter().enumerate() {
        assert_eq!(processor["index"], index);
        assert!(processor["reads"].as_u64().unwrap() > 30);
        assert_eq!(processor["refused_reads"], 0);
        assert_eq!(processor["monotonic"], true);
        let expected = processor["expected_mhz"].as_f64().unwrap();
        let measured = processor["measured_mhz"].as_f64().unwrap();
        assert!((measured - expected).abs() / expected <= 0.001, "{processor}");
    }
    // Processor 0 ran at 3200 MHz throughout: 160 % of the 2000 MHz nominal rate.
    assert!((processors[0]["measured_mhz"].as_f64().unwrap() - 3200.0).abs() < 0.5);
    assert!(
        (processors[0]["processor_performance_percent"].as_f64().unwrap() - 160.0).abs() < 0.05
    );
    // The engine's decisions in the driver's `Boot` vocabulary.
    assert_eq!(json["engine"]["nominal_source"], "cpuid-base-frequency");
    assert_eq!(json["engine"]["perf_source"], "intel-hwp");
    assert_eq!(json["engine"]["perf_capabilities"].as_array().unwrap().len(), 4);
    let ids: Vec<&str> =
        json["checks"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"feedback.monotonic") && ids.contains(&"feedback.accuracy"));
}

#[test]
fn unusable_input_exits_2_with_one_line_naming_the_problem() {
    let cases: [(&str, String, &[&str]); 6] = [
        (
            "zero.toml",
            VALID.replace("processors = 8", "processors = 0"),
            &["platform.processors", "0"],
        ),
        (
            "huge.toml",
            VALID.replace("processors = 8", "processors = 5000"),
            &["platform.processors", "5000"],
        ),
        (
            "type.toml",
            VALID.replace("nominal_mhz = 2000", "nominal_mhz = \"fast\""),
            &["nominal_mhz"],
        ),
        ("unknown.toml", VALID.replace("[pofx]", "[pofx]\nwarp_speed = 9"), &["warp_speed"]),
        ("busy.toml", VALID.replace("busy_percent = 40", "busy_percent = 140"), &["busy_percent"]),
        ("syntax.toml", VALID.replace("[pofx]", "[pofx"), &["syntax.toml"]),
    ];
    for (name, text, needles) in cases {
        let path = scenario_file(name, &text);
        let (code, out, err) = ppm_sim(&["run", path.to_str().unwrap(), "--json"]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(out.is_empty(), "{name}: stdout must stay empty, got {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name), "{name}: the message must name the file: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{name}: expected {needle:?} in {err}");
        }
    }
    let (code, out, err) = ppm_sim(&["run", "/nonexistent/missing.toml"]);
    assert_eq!((code, out.is_empty()), (2, true));
    assert!(err.contains("missing.toml") && err.trim_end().lines().count() == 1, "{err}");
    let (code, _, err) = ppm_sim(&["run"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = ppm_sim(&["bench", "--iterations", "lots"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--iterations"), "{err}");
    let (code, _, err) = ppm_sim(&["frobnicate"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_failing_check_exits_1() {
    // MPERF's rate is configured wrong: the PEP describes 1000 MHz while the counter ticks at
    // 2000 MHz, so the measured frequency is half the truth and the accuracy check fails.
    let wrong = VALID.replace("[pofx]", "[config]\nnominal_mhz = 1000\n[pofx]");
    let path = scenario_file("wrong-nominal.toml", &wrong);
    let (code, out, err) = ppm_sim(&["run", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("feedback.accuracy"), "{out}");
}

/// A `wrong-processor-read` event's read is one of the target processor's reads wherever a
/// user looks (issue 22): the report's `refused` column, `--trace` and `--plot` (both fed by
/// the read observer) show it, refused, at the event's time.
#[test]
fn a_wrong_processor_read_shows_in_the_report_the_trace_and_the_plot() {
    use std::sync::{Arc, Mutex};

    use ppm_sim::pofx::ReadObserver;

    let seen: Arc<Mutex<Vec<(f64, u32, bool)>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let observer = ReadObserver(Arc::new(move |read: &ppm_sim::pofx::TracedRead| {
        sink.lock().unwrap().push((read.time_ms, read.processor, read.served));
    }));
    let options = ppm_sim::RunOptions { read_observer: Some(observer), ..Default::default() };
    let report = ppm_sim::run_with(&builtin::get("wrong-processor").unwrap(), &options);
    assert!(report.passed);
    // Events at 250 ms (processors 0 and 1) and 600 ms (all four), each refused.
    let refused: Vec<usize> = report.processors.iter().map(|p| p.refused_reads).collect();
    assert_eq!(refused, [2, 2, 1, 1]);
    let mut rows: Vec<(f64, u32)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, served)| !served)
        .map(|(time_ms, processor, _)| (*time_ms, *processor))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let expected = [(250.0, 0), (250.0, 1), (600.0, 0), (600.0, 1), (600.0, 2), (600.0, 3)];
    assert_eq!(rows.len(), expected.len(), "{rows:?}");
    for ((time_ms, processor), (at, target)) in rows.iter().zip(expected) {
        assert!((time_ms - at).abs() < 1.0 && *processor == target, "{rows:?}");
    }
}
