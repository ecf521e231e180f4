//! The lifecycle part of the schema (`[pofx] threads`, `nested_notifications`, the
//! `counters-zero`, `hot-add`, `hot-remove` and `sleep` events) and the reader's robustness:
//! [`Scenario::from_toml_str`] must answer every input with a scenario or an error, never a
//! panic.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::*;

const MINIMAL: &str = "name = \"t\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\n[pofx]\nduration_ms = 300\nsample_interval_ms = 15\n";

fn with_events(events: &str) -> String {
    format!("{MINIMAL}{events}")
}

fn event(at_ms: u32, kind: &str, rest: &str) -> String {
    format!("[[event]]\nat_ms = {at_ms}\nkind = \"{kind}\"\n{rest}")
}

fn error_of(text: &str) -> String {
    Scenario::from_toml_str(text).map(|_| ()).expect_err("the scenario must be refused").to_string()
}

fn parse(text: &str) -> Scenario {
    Scenario::from_toml_str(text).expect("a valid scenario")
}

#[test]
fn pofx_threads_and_nesting() {
    let scenario = parse(MINIMAL);
    assert_eq!(scenario.pofx.threads, ThreadMode::Single);
    assert!(!scenario.pofx.nested_notifications);
    let text = MINIMAL.replace(
        "sample_interval_ms = 15",
        "sample_interval_ms = 15\nthreads = \"per-processor\"\nnested_notifications = true",
    );
    let scenario = parse(&text);
    assert_eq!(scenario.pofx.threads, ThreadMode::PerProcessor);
    assert!(scenario.pofx.nested_notifications);
    assert_eq!(ThreadMode::PerProcessor.processor_threads(4), 4);
    assert_eq!(ThreadMode::PerProcessor.processor_threads(2048), MAX_PROCESSOR_THREADS);
    assert_eq!(ThreadMode::Single.processor_threads(8), 0);
    let text = MINIMAL.replace("duration_ms = 300", "duration_ms = 300\nthreads = \"many\"");
    assert_eq!(
        error_of(&text),
        "line 7, column 11: field `pofx.threads`: expected one of \"single\", \"per-processor\", found the string \"many\""
    );
    let text = MINIMAL.replace("duration_ms = 300", "duration_ms = 300\nnested_notifications = 1");
    assert_eq!(
        error_of(&text),
        "line 7, column 24: field `pofx.nested_notifications`: expected true or false, found 1"
    );
}

#[test]
fn sleep_events() {
    let text = with_events(&event(100, "sleep", "state = \"s4\"\nduration_ms = 80\n"));
    let scenario = parse(&text);
    assert_eq!(
        scenario.events[0].kind,
        EventKind::Sleep { state: SleepState::S4, duration_ms: 80 }
    );
    assert_eq!(scenario.events[0].processors, ProcessorSet::All);
    assert_eq!(scenario.sleeps(), vec![(0, 100, 180)]);
    assert_eq!(SleepState::S4.power_on_lead_ms(80), 20);
    assert_eq!(SleepState::S3.system_power_state(), 4);
    assert_eq!(SleepState::S4.system_power_state(), 5);
    let missing = with_events(&event(100, "sleep", "duration_ms = 80\n"));
    assert_eq!(
        error_of(&missing),
        "line 8, column 1: field `event[0].state`: missing; expected one of \"s3\", \"s4\""
    );
    let wrong = with_events(&event(100, "sleep", "state = \"s5\"\nduration_ms = 80\n"));
    assert_eq!(
        error_of(&wrong),
        "line 11, column 9: field `event[0].state`: expected one of \"s3\", \"s4\", found the string \"s5\""
    );
    let short = with_events(&event(100, "sleep", "state = \"s3\"\nduration_ms = 5\n"));
    assert_eq!(
        error_of(&short),
        "line 12, column 15: field `event[0].duration_ms`: expected an integer in 10..=3600000, found 5"
    );
    let late = with_events(&event(200, "sleep", "state = \"s3\"\nduration_ms = 90\n"));
    assert!(
        error_of(&late).starts_with(
            "line 12, column 15: field `event[0].duration_ms`: sleep: expected the system to resume at least one sample interval before the run ends (at_ms + duration_ms <= 285)"
        ),
        "{}",
        error_of(&late)
    );
    let some =
        with_events(&event(100, "sleep", "state = \"s3\"\nduration_ms = 50\nprocessors = [1]\n"));
    assert!(
        error_of(&some)
            .starts_with("line 13, column 14: field `event[0].processors`: sleep: a system sleep")
    );
    let foreign =
        with_events(&event(100, "sleep", "state = \"s3\"\nduration_ms = 50\non_processor = 1\n"));
    assert_eq!(
        error_of(&foreign),
        "line 13, column 16: field `event[0].on_processor`: is not a field of kind \"sleep\""
    );
    let stray = with_events(&event(100, "counter-reset", "processors = [1]\nstate = \"s3\"\n"));
    assert_eq!(
        error_of(&stray),
        "line 12, column 9: field `event[0].state`: is not a field of kind \"counter-reset\""
    );
    // Nothing happens while the system sleeps.
    let during = with_events(&format!(
        "{}{}",
        event(100, "sleep", "state = \"s3\"\nduration_ms = 50\n"),
        event(120, "counter-reset", "processors = [1]\n")
    ));
    assert_eq!(
        error_of(&during),
        "line 14, column 9: field `event[1].at_ms`: counter-reset: happens while the system sleeps (event[0] sleeps from 100 ms to 150 ms)"
    );
    let same_instant_after = with_events(&format!(
        "{}{}",
        event(100, "sleep", "state = \"s3\"\nduration_ms = 50\n"),
        event(100, "counter-reset", "processors = [1]\n")
    ));
    assert!(
        error_of(&same_instant_after)
            .starts_with("line 14, column 9: field `event[1].at_ms`: counter-reset: happens while")
    );
    let same_instant_before = with_events(&format!(
        "{}{}{}",
        event(100, "counter-reset", "processors = [1]\n"),
        event(100, "sleep", "state = \"s3\"\nduration_ms = 50\n"),
        event(150, "counter-reset", "processors = [1]\n"),
    ));
    assert_eq!(parse(&same_instant_before).events.len(), 3);
    let overlapping = with_events(&format!(
        "{}{}",
        event(100, "sleep", "state = \"s3\"\nduration_ms = 50\n"),
        event(130, "sleep", "state = \"s4\"\nduration_ms = 50\n")
    ));
    assert!(
        error_of(&overlapping)
            .starts_with("line 14, column 9: field `event[1].at_ms`: sleep: happens while")
    );
    let busy =
        "[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 3000\nbusy_percent = 100\n";
    let wrap_after_sleep = with_events(&format!(
        "{busy}{}{}",
        event(50, "sleep", "state = \"s3\"\nduration_ms = 50\n"),
        event(200, "counter-near-wrap", "processors = [1]\n")
    ));
    assert!(
        error_of(&wrap_after_sleep).starts_with(
            "line 19, column 9: field `event[1].at_ms`: counter-near-wrap: expected the overflow no later"
        )
    );
}

#[test]
fn hotplug_events() {
    let text = with_events(&format!(
        "{}{}{}",
        event(50, "hot-add", "processors = [3]\n"),
        event(100, "hot-remove", "processors = [1, 3]\n"),
        event(200, "hot-add", "processors = [3]\n"),
    ));
    let scenario = parse(&text);
    assert!(!scenario.initially_present(3));
    assert!(scenario.initially_present(1) && scenario.initially_present(0));
    assert!(!scenario.present_at(3, 50, 0));
    assert!(scenario.present_at(3, 50, 1));
    assert!(scenario.present_at(3, 100, 1));
    assert!(!scenario.present_at(3, 100, 2));
    assert!(!scenario.present_at(1, 250, 3));
    assert!(scenario.present_at(3, 250, 3));
    let all = with_events(&event(50, "hot-add", "processors = \"all\"\n"));
    assert!(
        error_of(&all).starts_with(
            "line 11, column 14: field `event[0].processors`: hot-add: expected a list"
        )
    );
    let twice = with_events(&format!(
        "{}{}",
        event(50, "hot-add", "processors = [2]\n"),
        event(60, "hot-add", "processors = [2]\n")
    ));
    assert_eq!(
        error_of(&twice),
        "line 15, column 14: field `event[1].processors`: hot-add: processor 2 is already present at 60 ms"
    );
    let absent = with_events(&format!(
        "{}{}",
        event(50, "hot-remove", "processors = [2]\n"),
        event(60, "hot-remove", "processors = [2]\n")
    ));
    assert_eq!(
        error_of(&absent),
        "line 15, column 14: field `event[1].processors`: hot-remove: processor 2 is not present at 60 ms"
    );
    let nobody = with_events(&event(50, "hot-add", "processors = [0, 1, 2, 3]\n"));
    assert!(error_of(&nobody).contains("at least one must be present at boot"));
    let unread = with_events(&format!(
        "{}{}",
        event(50, "hot-add", "processors = [2]\n"),
        event(58, "hot-remove", "processors = [2]\n")
    ));
    assert_eq!(
        error_of(&unread),
        "line 9, column 9: field `event[0].at_ms`: hot-add: processor 2 would never be read (no sample after 50 ms and by 58 ms)"
    );
    let on_absent = with_events(&format!(
        "{}{}",
        event(50, "hot-remove", "processors = [2]\n"),
        event(80, "wrong-processor-read", "processors = [0]\non_processor = 2\n")
    ));
    assert!(error_of(&on_absent).starts_with(
        "line 16, column 16: field `event[1].on_processor`: processor 2 is not present at 80 ms"
    ));
    let foreign = with_events(&event(50, "hot-add", "processors = [2]\nduration_ms = 5\n"));
    assert_eq!(
        error_of(&foreign),
        "line 12, column 15: field `event[0].duration_ms`: is not a field of kind \"hot-add\""
    );
    let zero = parse(&with_events(&event(0, "counters-zero", "processors = [0]\n")));
    assert_eq!(zero.events[0].kind, EventKind::CountersZero { duration_ms: None });
    let back =
        parse(&with_events(&event(0, "counters-zero", "processors = [0]\nduration_ms = 50\n")));
    assert_eq!(back.events[0].kind, EventKind::CountersZero { duration_ms: Some(50) });
    let none = with_events(&event(0, "counters-zero", "processors = [0]\n"))
        .replace("nominal_mhz = 2000", "nominal_mhz = 2000\ncounter_source = \"none\"");
    assert!(
        error_of(&none).starts_with(
            "line 11, column 8: field `event[0].kind`: counters-zero: the APERF/MPERF"
        )
    );
    let last = with_events(&format!(
        "{}{}",
        event(50, "hot-remove", "processors = [0, 1]\n"),
        event(80, "hot-remove", "processors = [2, 3]\n")
    ));
    assert_eq!(
        error_of(&last),
        "line 15, column 14: field `event[1].processors`: hot-remove: no processor would be left at 80 ms (the OS runs on one)"
    );
}

/// A small deterministic generator (xorshift64*), so that a failure reproduces.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(bound.max(1)).unwrap_or(1)).unwrap_or(0)
    }
}

/// Snippets a mutation inserts: syntax, edge values and the schema's own words.
const SNIPPETS: &[&str] = &[
    "\"",
    "[",
    "]",
    "{",
    "}",
    "=",
    "\n",
    "#",
    "'",
    ".",
    ",",
    "0",
    "-1",
    "1e308",
    "nan",
    "-inf",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "true",
    "\"all\"",
    "[0, 0]",
    "[2047]",
    "[]",
    "1979-05-27T07:32:00Z",
    "é",
    "\u{0}",
    "\\u0000",
    "[[event]]\n",
    "[[phase]]\n",
    "[pofx]\n",
    "[platform]\n",
    "[config]\n",
    "[platform.perf]\n",
    "kind = \"sleep\"\n",
    "kind = \"hot-add\"\n",
    "kind = \"hot-remove\"\n",
    "kind = \"counters-zero\"\n",
    "kind = \"counter-near-wrap\"\n",
    "kind = \"wrong-processor-read\"\n",
    "kind = \"msr-fault\"\n",
    "state = \"s3\"\n",
    "state = \"s4\"\n",
    "at_ms = 0\n",
    "at_ms = 4294967295\n",
    "duration_ms = 10\n",
    "duration_ms = 0\n",
    "on_processor = 0\n",
    "processors = [1]\n",
    "processors = \"all\"\n",
    "processors = 1\n",
    "processors = 2048\n",
    "threads = \"per-processor\"\n",
    "nested_notifications = true\n",
    "sample_interval_ms = 1\n",
    "end_ms = 1\n",
    "start_ms = 4294967295\n",
    "frequency_mhz = 10000\n",
    "busy_percent = 100\n",
    "nominal_mhz = 1\n",
];

fn mutate(random: &mut Random, text: &str) -> String {
    let mut text = text.to_owned();
    for _ in 0..=random.below(4) {
        let boundaries: Vec<usize> =
            (0..=text.len()).filter(|&at| text.is_char_boundary(at)).collect();
        let at = boundaries[random.below(boundaries.len())];
        match random.below(6) {
            0 => {
                let end = boundaries[random.below(boundaries.len())].max(at);
                let end = end.min(at + 1 + random.below(40));
                let end = (end..=text.len()).find(|&end| text.is_char_boundary(end)).unwrap_or(at);
                text.replace_range(at..end, "");
            }
            1 | 2 => text.insert_str(at, SNIPPETS[random.below(SNIPPETS.len())]),
            3 => {
                // A number replaced by an edge value.
                let digits: Vec<usize> = text
                    .char_indices()
                    .filter(|(_, c)| c.is_ascii_digit())
                    .map(|(at, _)| at)
                    .collect();
                if let Some(&start) = digits.get(random.below(digits.len())) {
                    let end = text[start..]
                        .find(|c: char| !c.is_ascii_digit() && c != '_')
                        .map_or(text.len(), |length| start + length);
                    let value = ["0", "1", "65", "2049", "4294967295", "99999999999999999999"]
                        [random.below(6)];
                    text.replace_range(start..end, value);
                }
            }
            4 => {
                let mut lines: Vec<&str> = text.lines().collect();
                if lines.len() > 1 {
                    let (a, b) = (random.below(lines.len()), random.below(lines.len()));
                    lines.swap(a, b);
                }
                text = lines.join("\n");
            }
            _ => {
                let lines: Vec<&str> = text.lines().collect();
                if let Some(line) = lines.get(random.below(lines.len())) {
                    let line = format!("{line}\n");
                    text.insert_str(at, &line);
                }
            }
        }
    }
    text
}

fn must_not_panic(text: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| Scenario::from_toml_str(text).map(|_| ())));
    assert!(outcome.is_ok(), "Scenario::from_toml_str panicked on:\n{text}");
}

#[test]
fn the_reader_never_panics_on_mutated_scenarios() {
    let mut random = Random(0x9E37_79B9_7F4A_7C15);
    let mut corpus: Vec<String> =
        crate::builtin::SOURCES.iter().map(|(_, text)| (*text).to_owned()).collect();
    corpus.push(MINIMAL.to_owned());
    let mut accepted = 0;
    for round in 0..6_000 {
        let base = &corpus[round % corpus.len()];
        let text = mutate(&mut random, base);
        must_not_panic(&text);
        accepted += usize::from(Scenario::from_toml_str(&text).is_ok());
    }
    // The mutations are small enough that some scenarios stay valid (the valid paths run too).
    assert!(accepted > 100, "only {accepted} mutants were valid");
}

#[test]
fn the_reader_never_panics_on_random_text() {
    let mut random = Random(0xD1B5_4A32_D192_ED03);
    let alphabet: Vec<char> =
        "[]{}=\"'#.,-_ \n\tabcdefghijklmnopqrstuvwxyz0123456789é\u{0}".chars().collect();
    for _ in 0..3_000 {
        let length = random.below(200);
        let text: String = (0..length).map(|_| alphabet[random.below(alphabet.len())]).collect();
        must_not_panic(&text);
        let snippets: String =
            (0..random.below(30)).map(|_| SNIPPETS[random.below(SNIPPETS.len())]).collect();
        must_not_panic(&format!("{MINIMAL}{snippets}"));
    }
}
