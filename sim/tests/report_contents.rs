//! What `ppm-sim run` prints, as a user meets it: strings from the scenario never reach the
//! terminal raw, ignored registry values are listed with their reasons (text and JSON), and a
//! trace with no read still has its CSV header.

use std::path::Path;

mod common;

use common::{Scratch, ppm_sim, text};

/// Whether `text` holds a control character other than the line feeds that end its lines.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control() && *c != '\n')
}

/// Two processors named with terminal control sequences: ESC [2J clears the screen, and a CR
/// followed by "  ok" would overwrite the start of the line it is on.
const HOSTILE: &str = r#"name = "hostile"
[platform]
processors = 2
nominal_mhz = 2000
device_ids = ["\\_SB.CPU0\u001b[2J\u001b[H", "\\_SB.CPU1\r  ok  feedback.\u009b"]
[config]
device_id_patterns = ["\\_SB.CPU#*"]
[pofx]
duration_ms = 100
[[phase]]
start_ms = 0
processors = "all"
frequency_mhz = 2000
busy_percent = 100
"#;

#[test]
fn control_characters_from_the_scenario_are_printed_escaped() {
    let scratch = Scratch::new("hostile");
    let scenario = scratch.write("hostile.toml", HOSTILE);
    let output = ppm_sim(&[Path::new("run"), &scenario]);
    let out = text(&output.stdout);
    assert!(!out.is_empty(), "a report: {}", text(&output.stderr));
    assert_eq!(raw_control(&out), None, "raw control character in:\n{out}");
    assert!(out.contains("\\_SB.CPU0\\u{1b}[2J\\u{1b}[H"), "{out}");
    assert!(out.contains("\\_SB.CPU1\\r  ok  feedback.\\u{9b}"), "{out}");
    // The JSON keeps the ids exactly (JSON escapes control characters itself).
    let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--json")]);
    let out = text(&output.stdout);
    assert_eq!(raw_control(&out), None);
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(json["processors"][1]["device_id"], "\\_SB.CPU1\r  ok  feedback.\u{9b}");
    // The plot's text (the SVG) carries no raw control character either.
    let plot = scratch.path("hostile.svg");
    let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--plot"), &plot]);
    assert!(output.status.code().is_some_and(|code| code < 2), "{}", text(&output.stderr));
    let svg = std::fs::read_to_string(&plot).expect("the plot");
    assert_eq!(raw_control(&svg), None, "raw control character in the SVG");
}

#[test]
fn a_file_name_with_control_characters_is_escaped_in_messages() {
    let output = ppm_sim(&[Path::new("run"), Path::new("missing\u{1b}[2J\r.toml")]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(raw_control(&err), None, "{err:?}");
    assert!(err.contains("missing\\u{1b}[2J\\r.toml"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Four bad values and a read that fails: each is listed, with its reason, in the text report
/// and in the JSON, in the order the driver read them.
const BAD_REGISTRY: &str = include_str!("scenarios/registry-issues.toml");

#[test]
fn ignored_registry_values_are_listed_with_their_reasons() {
    let scratch = Scratch::new("registry");
    let scenario = scratch.write("bad-registry.toml", BAD_REGISTRY);
    let output = ppm_sim(&[Path::new("run"), &scenario]);
    let out = text(&output.stdout);
    let expected = [
        ("FeedbackCounters", "7 is outside 0..=1; ignored"),
        ("CounterSource", "registry type 1, expected 4; ignored"),
        ("NominalMhz", "2 bytes, expected 4; ignored"),
        (
            "TransitionLatency100ns",
            "500 describes no perf transition (the PEP reports PerformanceStatesSupported FALSE); ignored",
        ),
        ("PmuReservation", "read failed with status 0xC000009A; ignored"),
    ];
    assert!(out.contains("configuration: 5 values ignored"), "{out}");
    for (value, reason) in expected {
        assert!(out.contains(&format!("  ignored {value}: {reason}\n")), "{value} in:\n{out}");
    }
    assert!(out.contains("  ok   boot.state"), "{out}");
    let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--json")]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let issues: Vec<(String, String)> = json["engine"]["configuration_issues"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|issue| {
            (
                issue["value"].as_str().unwrap_or_default().to_owned(),
                issue["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(value, reason)| ((*value).to_owned(), (*reason).to_owned()))
        .collect();
    assert_eq!(issues, expected);
    assert_eq!(json["engine"]["configuration_issue_count"], 5);
}

#[test]
fn a_trace_without_reads_has_its_header() {
    let scratch = Scratch::new("no-reads");
    // SkipRegistration: the PEP loads inert, the OS reads nothing.
    let scenario = scratch.write(
        "inert.toml",
        "name = \"inert\"\n[platform]\nprocessors = 1\nnominal_mhz = 2000\n[pofx]\n\
         duration_ms = 50\n[registry]\nSkipRegistration = 1\n[[phase]]\nstart_ms = 0\n\
         processors = \"all\"\nfrequency_mhz = 2000\nbusy_percent = 10\n",
    );
    let trace = scratch.path("inert.csv");
    let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), &trace]);
    assert!(text(&output.stderr).contains("trace: 0 reads written"), "{}", text(&output.stderr));
    let csv = std::fs::read_to_string(&trace).expect("the trace");
    assert!(csv.starts_with("time_ms,processor,counter_index,"), "{csv:?}");
    assert_eq!(csv.lines().count(), 1);
}
