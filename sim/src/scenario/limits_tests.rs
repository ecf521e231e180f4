//! The schema's limits: a file within every limit is validated fast (no check is quadratic
//! in the events, phases or processors), and the limits themselves are enforced.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::*;

/// The largest scenario file the CLI reads (`cli::MAX_SCENARIO_BYTES`).
const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// How long reading and validating a file within the limits may take: a second in a release
/// build (measured: 0.2–0.5 s, TOML parsing about half of it, on a loaded 2-core machine); a
/// debug build (`cargo test`) runs the same code 10–20 times slower. A quadratic check takes
/// minutes at these sizes, far beyond either bound.
fn validation_bound() -> Duration {
    if cfg!(debug_assertions) { Duration::from_secs(30) } else { Duration::from_secs(1) }
}

fn timed(text: &str) -> (Result<Scenario, ScenarioError>, Duration) {
    assert!(text.len() <= MAX_FILE_BYTES, "{} bytes: over the file limit", text.len());

    let start = Instant::now();
    let result = Scenario::from_toml_str(text);
    (result, start.elapsed())
}

fn header(processors: u32, duration_ms: u32) -> String {
    format!(
        "name = \"limits\"\n[platform]\nprocessors = {processors}\nnominal_mhz = 2000\n[pofx]\nduration_ms = {duration_ms}\nsample_interval_ms = 15\n"
    )
}

/// 2048 processors, 2047 of them hot-removed and hot-added again as often as 4 MiB allows
/// (the file of issue 22 was 150 pairs, 3.4 MB, and did not finish in 120 s).
#[test]
fn the_largest_hotplug_file_validates_fast() {
    let mut text = header(MAX_PROCESSORS, 30_000);
    text.push_str(
        "[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2400\nbusy_percent = 50\n",
    );
    let list: Vec<String> = (1..MAX_PROCESSORS).map(|index| index.to_string()).collect();
    let list = format!("[{}]", list.join(","));
    let mut at_ms = 20;
    let mut pairs = 0;
    loop {
        let pair = format!(
            "[[event]]\nat_ms = {at_ms}\nkind = \"hot-remove\"\nprocessors = {list}\n[[event]]\nat_ms = {}\nkind = \"hot-add\"\nprocessors = {list}\n",
            at_ms + 15
        );
        if text.len() + pair.len() > MAX_FILE_BYTES || 2 * (pairs + 1) > MAX_EVENTS {
            break;
        }
        text.push_str(&pair);
        pairs += 1;
        at_ms += 60;
    }
    assert!(pairs >= 150, "{pairs} pairs");
    let (result, took) = timed(&text);
    let scenario = result.expect("valid");
    assert_eq!(scenario.events.len(), 2 * pairs);
    assert!(!scenario.present_at(5, 30, usize::MAX) && scenario.present_at(5, 40, usize::MAX));
    eprintln!("{pairs} hot-plug pairs, {} bytes: validated in {took:?}", text.len());
    assert!(took < validation_bound(), "{pairs} hot-plug pairs validated in {took:?}");
}

/// As many one-millisecond phases on "all" as 4 MiB allows, with every event a
/// `counter-near-wrap` or `counter-reset` on "all" (issue 22: 20 000 phases and 2 000
/// near-wraps, 1.9 MB, did not finish in 120 s: a timeline was built per event × processor).
#[test]
fn the_largest_phase_file_validates_fast() {
    let mut text = header(MAX_PROCESSORS, 3_600_000)
        .replace("sample_interval_ms = 15", "sample_interval_ms = 200");
    text.push_str("[[event]]\nat_ms = 5\nkind = \"counter-near-wrap\"\nprocessors = \"all\"\n");
    for number in 1..MAX_EVENTS {
        let _ = write!(
            text,
            "[[event]]\nat_ms = {}\nkind = \"counter-reset\"\nprocessors = \"all\"\n",
            10 + number
        );
    }
    let mut phases = 0_u32;
    loop {
        let start = 2 * phases;
        let phase = format!(
            "[[phase]]\nstart_ms = {start}\nend_ms = {}\nprocessors = \"all\"\nfrequency_mhz = {}\nbusy_percent = 100\n",
            start + 1,
            2000 + (phases % 10) * 100
        );
        // Room for the variant below, whose one renamed kind is 4 bytes longer.
        if text.len() + phase.len() + 4 > MAX_FILE_BYTES {
            break;
        }
        text.push_str(&phase);
        phases += 1;
    }
    assert!(phases >= 20_000, "{phases} phases");
    let (result, took) = timed(&text);
    let scenario = result.expect("valid");
    assert_eq!(scenario.phases.len(), phases as usize);
    eprintln!(
        "{phases} phases, {} events, {} bytes: validated in {took:?}",
        MAX_EVENTS,
        text.len()
    );
    assert!(took < validation_bound(), "{phases} phases validated in {took:?}");
    // The same with a second near-wrap on "all": refused at once, naming both events.
    let twice = text.replacen("kind = \"counter-reset\"", "kind = \"counter-near-wrap\"", 1);
    let (result, took) = timed(&twice);
    assert_eq!(
        result.expect_err("refused").to_string(),
        "line 15, column 14: field `event[1].processors`: counter-near-wrap: processor 0 is already in event[0]; its counters start the run just below the wrap once, so at most one counter-near-wrap per processor"
    );
    assert!(took < validation_bound(), "refused in {took:?}");
}

#[test]
fn event_and_sleep_counts_are_bounded() {
    let mut text = header(4, 100_000);
    for number in 0..=MAX_EVENTS {
        let _ = write!(
            text,
            "[[event]]\nat_ms = {}\nkind = \"counter-reset\"\nprocessors = [0]\n",
            number + 1
        );
    }
    assert_eq!(
        Scenario::from_toml_str(&text).map(|_| ()).expect_err("too many").to_string(),
        format!(
            "line 8, column 1: field `event`: expected at most {MAX_EVENTS} [[event]]s, found {}",
            MAX_EVENTS + 1
        )
    );
    let mut text = header(4, 100_000);
    for number in 0..=MAX_SLEEPS {
        let _ = write!(
            text,
            "[[event]]\nat_ms = {}\nkind = \"sleep\"\nstate = \"s3\"\nduration_ms = 10\n",
            100 + number * 100
        );
    }
    assert_eq!(
        Scenario::from_toml_str(&text).map(|_| ()).expect_err("too many").to_string(),
        format!(
            "line 330, column 8: field `event[{MAX_SLEEPS}].kind`: expected at most {MAX_SLEEPS} sleep events, found {}",
            MAX_SLEEPS + 1
        )
    );
}

/// Lengths are counted in characters, not UTF-8 bytes.
#[test]
fn the_name_limit_counts_characters() {
    let named =
        |name: &str| header(2, 100).replace("name = \"limits\"", &format!("name = \"{name}\""));
    assert_eq!(
        Scenario::from_toml_str(&named(&"Ä".repeat(64))).expect("valid").name.chars().count(),
        64
    );
    assert_eq!(
        Scenario::from_toml_str(&named(&"Ä".repeat(65))).map(|_| ()).expect_err("long").to_string(),
        "line 1, column 8: field `name`: expected a non-empty name of at most 64 printable characters, found 65 characters"
    );
}

/// An error echoes at most 64 characters of a name or a value, and stays on one line.
#[test]
fn errors_echo_names_and_values_bounded() {
    let key = "k".repeat(1 << 20);
    let error = Scenario::from_toml_str(&format!("{key} = 1\n{}", header(2, 100)))
        .map(|_| ())
        .expect_err("unknown")
        .to_string();
    assert!(
        error.len() < 400
            && error.starts_with(&format!(
                "line 1, column 1: field `{}… (1048576 characters)`: unknown field",
                "k".repeat(64)
            )),
        "{error}"
    );
    let value = "v".repeat(1 << 20);
    let error = Scenario::from_toml_str(
        &header(2, 100).replace("[pofx]", &format!("cpu = \"{value}\"\n[pofx]")),
    )
    .map(|_| ())
    .expect_err("bad cpu")
    .to_string();
    assert!(error.len() < 400 && error.ends_with("… (1048576 characters)\""), "{error}");
    let error = Scenario::from_toml_str(&format!("\"a\\nb\" = 1\n{}", header(2, 100)))
        .map(|_| ())
        .expect_err("unknown")
        .to_string();
    assert!(
        error.starts_with("line 1, column 1: field `a\\nb`: unknown field")
            && !error.contains('\n'),
        "{error}"
    );
}

/// An SMI storm whose SMIs last as long as their period would never leave SMM.
#[test]
fn an_smi_is_shorter_than_its_period() {
    let smi = |duration_us: u32, period_ms: u32| {
        format!(
            "{}[[event]]\nat_ms = 10\nkind = \"smi\"\nprocessors = \"all\"\nduration_us = {duration_us}\nperiod_ms = {period_ms}\n",
            header(2, 100)
        )
    };
    assert!(Scenario::from_toml_str(&smi(999, 1)).is_ok());
    assert_eq!(
        Scenario::from_toml_str(&smi(5000, 2)).map(|_| ()).expect_err("too long").to_string(),
        "line 12, column 15: field `event[0].duration_us`: smi: expected each SMI shorter than its period (2 ms = 2000 µs), found 5000 µs"
    );
    assert!(Scenario::from_toml_str(&smi(1000, 1)).is_err());
}
