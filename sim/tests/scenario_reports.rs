//! What a run's report says about scenario-level facts a user relies on: a nominal rate the
//! PEP calibrated off-nominal is warned about, the interval-accuracy detail names a real
//! tolerance, and scenario-given device ids reach PoFx.

use ppm_sim::{Scenario, run};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text).expect("a valid scenario")
}

const ARM64_TURBO_AT_BOOT: &str = "name = \"arm64-boost\"\n[platform]\nprocessors = 2\ncpu = \"arm64\"\nnominal_mhz = 3400\n[pofx]\nduration_ms = 300\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 4200\nbusy_percent = 100\n[[phase]]\nstart_ms = 100\nprocessors = \"all\"\nfrequency_mhz = 3400\nbusy_percent = 100\n";

/// ARM64 without `NominalMhz`: the PEP measures the boot processor's current speed (4200 MHz
/// against a nominal 3400), so `% perf` reads 81 % at nominal; the report says so, in the text
/// and the JSON, and says how to set the rate. With the rate configured there is no warning.
#[test]
fn an_off_nominal_calibration_is_warned_about() {
    let report = run(&scenario(ARM64_TURBO_AT_BOOT));
    assert_eq!(report.engine.nominal_source, "calibrated");
    assert_eq!(report.engine.nominal_mhz, 4200);
    let warning = report.engine.nominal_warning.clone().expect("a warning");
    assert!(
        warning.contains("at 4200 MHz")
            && warning.contains("nominal 3400 MHz")
            && warning.contains("81 %")
            && warning.contains("NominalMhz = 3400")
            && warning.contains("config.nominal_mhz = 3400"),
        "{warning}"
    );
    assert!(report.to_text().lines().any(|line| line == format!("warning: {warning}")));
    let json = serde_json::to_value(&report).expect("JSON");
    assert_eq!(json["engine"]["nominal_warning"], serde_json::Value::String(warning));

    let configured = scenario(&format!("{ARM64_TURBO_AT_BOOT}[config]\nnominal_mhz = 3400\n"));
    let report = run(&configured);
    assert_eq!(report.engine.nominal_mhz, 3400);
    assert_eq!(report.engine.nominal_warning, None);
    assert!(!report.to_text().contains("warning:"));
}

/// When every interval is exact, the detail names the tightest real tolerance, not the 1 ppm
/// placeholder the search started from.
#[test]
fn the_interval_accuracy_detail_names_a_real_tolerance() {
    let report = run(&scenario(
        "name = \"exact\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n[pofx]\nduration_ms = 300\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2000\nbusy_percent = 100\n",
    ));
    let check = report
        .checks
        .iter()
        .find(|check| check.id == "feedback.interval_accuracy")
        .expect("the check");
    assert!(check.passed, "{}", check.detail);
    let allowed: f64 = check
        .detail
        .split("% off, ")
        .nth(1)
        .and_then(|rest| rest.split(" % allowed").next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no allowed figure in {}", check.detail));
    // At least the 0.1 % base tolerance (ACCURACY_TOLERANCE).
    assert!(allowed >= 0.1, "{}", check.detail);
}

/// Device ids given by a template reach PoFx (in hex), and the PEP accepts them where its
/// patterns say processors are: `\_SB.SCK1.C000` is a default pattern.
#[test]
#[allow(clippy::literal_string_with_formatting_args)] // A device_id_template.
fn scenario_device_ids_are_offered() {
    let report = run(&scenario(
        "name = \"ids\"\n[platform]\nprocessors = 20\nnominal_mhz = 2000\ndevice_id_style = \"sb-sck-c\"\nsockets = 2\n[pofx]\nduration_ms = 60\n",
    ));
    assert!(report.passed, "{}", report.to_text());
    let ids: Vec<&str> = report.processors.iter().map(|p| p.device_id.as_str()).collect();
    assert_eq!(
        (ids[9], ids[10], ids[19]),
        ("\\_SB.SCK0.C009", "\\_SB.SCK1.C000", "\\_SB.SCK1.C009")
    );
    let report = run(&scenario(
        "name = \"ids\"\n[platform]\nprocessors = 20\nnominal_mhz = 2000\ndevice_id_template = \"\\\\_SB.P{index:03X}\"\n[pofx]\nduration_ms = 60\n",
    ));
    assert!(report.passed, "{}", report.to_text());
    assert_eq!(report.processors[19].device_id, "\\_SB.P013");
}

/// ARM64, nested notifications, a counter reset: the nested read of the same counter at the
/// first unmasked platform call of the `FEEDBACK_READ` after the reset re-baselines, so the
/// interval the outer read closes reports only the 1.2 µs since then: 24 ticks of the 19.2 MHz
/// constant counter (2 500 nominal counts of 104⅙), 2 380 actual cycles, 1 904 MHz at a true
/// 2 000. That is the truth to the constant counter's resolution, and `feedback.no_spike`
/// judges it so; the same file with the x64 counters (one count per nominal cycle) passes at
/// ±1 %.
#[test]
fn a_reset_interval_cut_short_by_a_nested_read_is_judged_at_the_counter_resolution() {
    let text = "name = \"arm64-nested-reset\"\n[platform]\nprocessors = 4\ncpu = \"arm64\"\ncounter_source = \"amu\"\nnominal_mhz = 2400\n[pofx]\nduration_ms = 300\nsample_interval_ms = 15\nnested_notifications = true\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2000\nbusy_percent = 70\n[[event]]\nat_ms = 120\nkind = \"counter-reset\"\nprocessors = [3]\n";
    for text in [text.to_owned(), text.replace("cpu = \"arm64\"\ncounter_source = \"amu\"\n", "")] {
        let report = run(&scenario(&text));
        let failed: Vec<_> = report
            .checks
            .iter()
            .filter(|check| !check.passed)
            .map(|check| format!("{}: {}", check.id, check.detail))
            .collect();
        assert!(failed.is_empty(), "{failed:?}");
    }
}
