//! The driver's registry rules and a scenario's `[config]` give the same configuration.
//!
//! Every case holds one setting twice: as the raw `Parameters` values an administrator would
//! set (`REG_DWORD`, `REG_SZ`, `REG_MULTI_SZ`) and as the `[config]` lines a scenario would hold.
//! Each case runs three readers:
//! - (a) the driver's rules, [`ppm_engine::driver::registry::read_config`], over the raw values,
//!   collecting its notes;
//! - (b) `ppm_sim`'s scenario parser over a scenario whose `[config]` holds the setting;
//! - (c) the same parser over a scenario whose `[registry]` holds the raw values (what the
//!   emulated `DriverEntry` reads).
//!
//! An accepted setting: the driver notes nothing, and (a), (b) and (c) give the same
//! [`Config`], the one the case expects (so no setting is silently dropped by all three).
//!
//! A refused setting — out of range, unknown, of the wrong type, incomplete or unordered — is
//! refused by both, each its own way:
//! - the driver notes exactly the expected [`Note`]s and falls back to what its rules say (the
//!   documented default; for a pattern list, the patterns it could keep), and (c) gives that
//!   same fallback configuration;
//! - the scenario (b) is an error naming the `[config]` field (`config.nominal_mhz`,
//!   `config.perf_capabilities.highest`, `config.device_id_patterns[0]`) — a scenario never
//!   runs with a setting the driver would not apply as written;
//! - where the driver's note is [`Problem::OutOfRange`], the scenario's message states the same
//!   range (`in 1..=100000`).
//!
//! Which refusal maps to which:
//! - a `REG_DWORD` outside its range ↔ the same integer in `[config]` (numbers); for names, the
//!   number one past the last code ↔ a name not in the engine's table (`feedback_counters`,
//!   `counter_source`, `pmu_reservation`); for `performance_counter_view`, `REG_DWORD` 2 ↔ the
//!   integer 2 where `true`/`false` is expected;
//! - a `REG_SZ` where a `REG_DWORD` is read ↔ a string where `[config]` wants an integer or
//!   boolean, or the registry number where it wants a name;
//! - `TransitionLatency100ns` other than 0 (`NoPerfStates`: the PEP reports no perf states) ↔
//!   the integer outside `0..=0`;
//! - perf values: one out of range (`OutOfRange` then `PerfIncomplete`) ↔ that field out of
//!   range; one missing (`PerfIncomplete`) ↔ the field missing; unordered (`PerfUnordered`) ↔
//!   the table refused as unordered;
//! - patterns: 17 (`PatternRejected { TooMany }`, the first 16 kept) ↔ a list of 17; a pattern
//!   of 49 units (`PatternRejected { TooLong }`, `NoPatterns`) ↔ the 49-character string; an
//!   empty list or string (`NoPatterns`) ↔ `[]` or `[""]`; a `REG_SZ` ↔ a string for the list.
//!
//! Not expressible on both sides, so not here: `REG_DWORD` data of the wrong length, failed or
//! oversized reads (`tests/registry_values.rs`), a NUL inside a pattern (`REG_MULTI_SZ` splits
//! there; the scenario refuses it).

use ppm_engine::config::{
    COUNTER_SOURCE_CHOICES, Choice, Config, FEEDBACK_COUNTER_CHOICES, MAX_NOMINAL_MHZ,
    PMU_RESERVATION_CHOICES,
};
use ppm_engine::device_id::{
    DeviceIdPatterns, MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS, PatternError,
};
use ppm_engine::driver::registry::{
    Lookup, MAX_PERFORMANCE_LEVEL, MAX_TRANSITION_LATENCY_100NS, Note, Problem, REG_DWORD,
    REG_MULTI_SZ, REG_SZ, ValueSource, names, read_config,
};
use ppm_engine::perf::PerfCapabilities;
use ppm_sim::Scenario;

/// A scenario with every required table; the case appends `[config]` or `[registry]`.
const BASE: &str = r#"
name = "config-equivalence"
[platform]
processors = 2
nominal_mhz = 2000
[pofx]
duration_ms = 100
[[phase]]
start_ms = 0
processors = "all"
frequency_mhz = 2000
busy_percent = 50
"#;

/// One raw registry value.
#[derive(Clone, Debug)]
enum Raw {
    Dword(u32),
    Sz(String),
    MultiSz(Vec<String>),
}

impl Raw {
    const fn value_type(&self) -> u32 {
        match self {
            Self::Dword(_) => REG_DWORD,
            Self::Sz(_) => REG_SZ,
            Self::MultiSz(_) => REG_MULTI_SZ,
        }
    }

    /// The data as the registry stores it.
    fn data(&self) -> Vec<u8> {
        let units: Vec<u16> = match self {
            Self::Dword(value) => return value.to_le_bytes().to_vec(),
            Self::Sz(text) => text.encode_utf16().chain([0]).collect(),
            Self::MultiSz(strings) => {
                strings.iter().flat_map(|text| text.encode_utf16().chain([0])).chain([0]).collect()
            }
        };
        units.iter().flat_map(|unit| unit.to_le_bytes()).collect()
    }

    /// The value as a `[registry]` entry (an integer, a string, a list of strings).
    fn toml(&self) -> String {
        match self {
            Self::Dword(value) => value.to_string(),
            Self::Sz(text) => toml_string(text),
            Self::MultiSz(strings) => {
                let items: Vec<String> = strings.iter().map(|text| toml_string(text)).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }
}

fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The raw values of a case, as the driver's value source.
struct Values(Vec<(&'static str, Raw, Vec<u8>)>);

impl ValueSource for Values {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        self.0.iter().find(|(other, ..)| *other == name).map_or(Lookup::Absent, |(_, raw, data)| {
            Lookup::Found { value_type: raw.value_type(), data }
        })
    }
}

/// What both readers must do with a case.
#[derive(Debug)]
enum Outcome {
    /// No note; this configuration.
    Applied(Config),
    /// The driver notes `notes` and gives `fallback`; the scenario fails naming `field`.
    /// `states_range`: the scenario's message gives the driver's range (a number refused).
    Refused { field: String, notes: Vec<Note>, fallback: Config, states_range: bool },
}

#[derive(Debug)]
struct Case {
    what: String,
    config: String,
    registry: Vec<(&'static str, Raw)>,
    outcome: Outcome,
}

impl Case {
    fn applied(
        config: String,
        registry: Vec<(&'static str, Raw)>,
        apply: impl FnOnce(&mut Config),
    ) -> Self {
        let mut expected = Config::new();
        apply(&mut expected);
        Self { what: config.clone(), config, registry, outcome: Outcome::Applied(expected) }
    }

    fn refused(
        config: String,
        registry: Vec<(&'static str, Raw)>,
        field: &str,
        notes: Vec<Note>,
    ) -> Self {
        Self::refused_to(config, registry, field, notes, Config::new())
    }

    fn refused_to(
        config: String,
        registry: Vec<(&'static str, Raw)>,
        field: &str,
        notes: Vec<Note>,
        fallback: Config,
    ) -> Self {
        Self {
            what: config.clone(),
            config,
            registry,
            outcome: Outcome::Refused {
                field: field.to_owned(),
                notes,
                fallback,
                states_range: false,
            },
        }
    }

    /// A refused number: the scenario's message states the driver's range.
    const fn stating_range(mut self) -> Self {
        if let Outcome::Refused { states_range, .. } = &mut self.outcome {
            *states_range = true;
        }
        self
    }
}

const fn note(value: &'static str, problem: Problem) -> Note {
    Note { value, problem }
}

const fn out_of_range(value: &'static str, number: u32, min: u32, max: u32) -> Note {
    note(value, Problem::OutOfRange { value: number, min, max })
}

const fn wrong_type(value: &'static str, found: u32, expected: u32) -> Note {
    note(value, Problem::WrongType { found, expected })
}

/// A `REG_DWORD` number with its documented range and where it lands in the configuration.
struct Number {
    key: &'static str,
    value: &'static str,
    min: u32,
    max: u32,
    apply: fn(&mut Config, u32),
}

const NUMBERS: [Number; 1] = [Number {
    key: "nominal_mhz",
    value: names::NOMINAL_MHZ,
    min: 1,
    max: MAX_NOMINAL_MHZ,
    apply: |config, value| config.nominal_mhz = Some(value),
}];

/// `TransitionLatency100ns`: 0 applies; any other number describes no perf transition (the
/// PEP reports `PerformanceStatesSupported` FALSE), so the driver ignores it with its own
/// reason and the scenario refuses it as out of `0..=0`.
fn latency_cases(cases: &mut Vec<Case>) {
    let (key, name) = ("transition_latency_100ns", names::TRANSITION_LATENCY_100NS);
    assert_eq!(MAX_TRANSITION_LATENCY_100NS, 0);
    cases.push(Case::applied(format!("{key} = 0"), vec![(name, Raw::Dword(0))], |config| {
        config.transition_latency_100ns = 0;
    }));
    for value in [1, 10_000_000, u32::MAX] {
        cases.push(Case::refused(
            format!("{key} = {value}"),
            vec![(name, Raw::Dword(value))],
            &format!("config.{key}"),
            vec![Note { value: name, problem: Problem::NoPerfStates { value } }],
        ));
    }
    cases.push(Case::refused(
        format!("{key} = \"0\""),
        vec![(name, Raw::Sz("0".to_owned()))],
        &format!("config.{key}"),
        vec![wrong_type(name, REG_SZ, REG_DWORD)],
    ));
}

fn number_cases(cases: &mut Vec<Case>) {
    for number in NUMBERS {
        let Number { key, value: name, min, max, apply } = number;
        for value in [min, min + 1, max / 2, max] {
            let registry = vec![(name, Raw::Dword(value))];
            cases.push(Case::applied(format!("{key} = {value}"), registry, |config| {
                apply(config, value);
            }));
        }
        let past = [min.checked_sub(1), max.checked_add(1), Some(4_000_000_000), Some(u32::MAX)];
        for value in past.into_iter().flatten() {
            cases.push(
                Case::refused(
                    format!("{key} = {value}"),
                    vec![(name, Raw::Dword(value))],
                    &format!("config.{key}"),
                    vec![out_of_range(name, value, min, max)],
                )
                .stating_range(),
            );
        }
        cases.push(Case::refused(
            format!("{key} = \"{max}\""),
            vec![(name, Raw::Sz(max.to_string()))],
            &format!("config.{key}"),
            vec![wrong_type(name, REG_SZ, REG_DWORD)],
        ));
    }
}

/// Every name of `choices` applied, the code past the last refused as an unknown name, and the
/// name as a `REG_SZ` refused as the number where a name is expected.
fn choice_cases<T: Copy>(
    cases: &mut Vec<Case>,
    key: &str,
    name: &'static str,
    choices: &[Choice<T>],
    apply: fn(&mut Config, T),
) {
    for choice in choices {
        cases.push(Case::applied(
            format!("{key} = \"{}\"", choice.name),
            vec![(name, Raw::Dword(choice.code))],
            |config| apply(config, choice.value),
        ));
    }
    let max = choices.iter().map(|choice| choice.code).max().unwrap();
    for (past, unknown) in [(max + 1, "unknown"), (u32::MAX, "Auto")] {
        cases.push(Case::refused(
            format!("{key} = \"{unknown}\""),
            vec![(name, Raw::Dword(past))],
            &format!("config.{key}"),
            vec![out_of_range(name, past, 0, max)],
        ));
    }
    let first = choices[0];
    cases.push(Case::refused(
        format!("{key} = {}", first.code),
        vec![(name, Raw::Sz(first.name.to_owned()))],
        &format!("config.{key}"),
        vec![wrong_type(name, REG_SZ, REG_DWORD)],
    ));
}

fn view_cases(cases: &mut Vec<Case>) {
    let name = names::PERFORMANCE_COUNTER_VIEW;
    for (flag, code) in [(false, 0), (true, 1)] {
        cases.push(Case::applied(
            format!("performance_counter_view = {flag}"),
            vec![(name, Raw::Dword(code))],
            |config| config.performance_counter_view = flag,
        ));
    }
    cases.push(Case::refused(
        "performance_counter_view = 2".to_owned(),
        vec![(name, Raw::Dword(2))],
        "config.performance_counter_view",
        vec![out_of_range(name, 2, 0, 1)],
    ));
    cases.push(Case::refused(
        "performance_counter_view = \"true\"".to_owned(),
        vec![(name, Raw::Sz("1".to_owned()))],
        "config.performance_counter_view",
        vec![wrong_type(name, REG_SZ, REG_DWORD)],
    ));
}

/// The four perf values (highest, nominal, lowest nonlinear, lowest), each a TOML value.
fn perf_case(values: [Option<&str>; 4]) -> (String, Vec<(&'static str, Raw)>) {
    let keys = ["highest", "nominal", "lowest_nonlinear", "lowest"];
    let names = [
        names::HIGHEST_PERFORMANCE,
        names::NOMINAL_PERFORMANCE,
        names::LOWEST_NONLINEAR_PERFORMANCE,
        names::LOWEST_PERFORMANCE,
    ];
    let mut fields = Vec::new();
    let mut registry = Vec::new();
    for ((key, name), value) in keys.into_iter().zip(names).zip(values) {
        let Some(value) = value else { continue };
        fields.push(format!("{key} = {value}"));
        let raw =
            value.parse().map_or_else(|_| Raw::Sz(value.trim_matches('"').to_owned()), Raw::Dword);
        registry.push((name, raw));
    }
    (format!("perf_capabilities = {{ {} }}", fields.join(", ")), registry)
}

fn perf_cases(cases: &mut Vec<Case>) {
    let max = MAX_PERFORMANCE_LEVEL;
    let top = max.to_string();
    for levels in [[40, 20, 8, 4], [1, 1, 1, 1], [max, max, max, max], [max, 2, 1, 1]] {
        let text = levels.map(|level| level.to_string());
        let (config, registry) = perf_case(text.each_ref().map(|level| Some(level.as_str())));
        let [highest, nominal, lowest_nonlinear, lowest] = levels;
        cases.push(Case::applied(config, registry, |config| {
            config.perf_capabilities =
                Some(PerfCapabilities { highest, nominal, lowest_nonlinear, lowest });
        }));
    }
    let incomplete = note(names::HIGHEST_PERFORMANCE, Problem::PerfIncomplete);
    let past = (max + 1).to_string();
    for (field, values, first) in [
        (
            "highest",
            [Some(past.as_str()), Some("20"), Some("8"), Some("4")],
            out_of_range(names::HIGHEST_PERFORMANCE, max + 1, 1, max),
        ),
        (
            "highest",
            [Some("4000000000"), Some("20"), Some("8"), Some("4")],
            out_of_range(names::HIGHEST_PERFORMANCE, 4_000_000_000, 1, max),
        ),
        (
            "nominal",
            [Some(top.as_str()), Some(past.as_str()), Some("8"), Some("4")],
            out_of_range(names::NOMINAL_PERFORMANCE, max + 1, 1, max),
        ),
        (
            "lowest",
            [Some("40"), Some("20"), Some("8"), Some("0")],
            out_of_range(names::LOWEST_PERFORMANCE, 0, 1, max),
        ),
        (
            "lowest_nonlinear",
            [Some("40"), Some("20"), Some("\"8\""), Some("4")],
            wrong_type(names::LOWEST_NONLINEAR_PERFORMANCE, REG_SZ, REG_DWORD),
        ),
    ] {
        let (config, registry) = perf_case(values);
        cases.push(
            Case::refused(
                config,
                registry,
                &format!("config.perf_capabilities.{field}"),
                vec![first, incomplete],
            )
            .stating_range(),
        );
    }
    let (config, registry) = perf_case([Some("40"), Some("20"), Some("8"), None]);
    cases.push(Case::refused(
        config,
        registry,
        "config.perf_capabilities.lowest",
        vec![incomplete],
    ));
    let (config, registry) = perf_case([Some("4"), Some("20"), Some("8"), Some("40")]);
    cases.push(Case::refused(
        config,
        registry,
        "config.perf_capabilities",
        vec![note(names::HIGHEST_PERFORMANCE, Problem::PerfUnordered)],
    ));
}

fn patterns_config(patterns: &[String]) -> String {
    let items: Vec<String> = patterns.iter().map(|pattern| toml_string(pattern)).collect();
    format!("device_id_patterns = [{}]", items.join(", "))
}

fn pattern_set(patterns: &[String]) -> DeviceIdPatterns {
    let mut set = DeviceIdPatterns::empty();
    for pattern in patterns {
        let units: Vec<u16> = pattern.encode_utf16().collect();
        set.push_utf16(&units).unwrap();
    }
    set
}

fn pattern_cases(cases: &mut Vec<Case>) {
    let name = names::PROCESSOR_DEVICE_ID_PATTERNS;
    let numbered = |count: usize| -> Vec<String> {
        (0..count).map(|index| format!("\\_SB.P{index:03}")).collect()
    };
    let longest = format!("\\_SB.{}", "X".repeat(MAX_PATTERN_UNITS - "\\_SB.".len()));
    for patterns in [
        vec!["\\_SB.CPU#".to_owned()],
        vec!["*".to_owned()],
        vec![longest.clone()],
        numbered(MAX_DEVICE_ID_PATTERNS),
        // Not ASCII: the driver takes any UTF-16 but NUL (such a pattern matches no ACPI id).
        vec!["\\_SB.CPÜ#".to_owned()],
    ] {
        let set = pattern_set(&patterns);
        cases.push(Case::applied(
            patterns_config(&patterns),
            vec![(name, Raw::MultiSz(patterns))],
            |config| config.device_id_patterns = set,
        ));
    }
    let too_many = numbered(MAX_DEVICE_ID_PATTERNS + 1);
    let mut kept = Config::new();
    kept.device_id_patterns = pattern_set(&too_many[..MAX_DEVICE_ID_PATTERNS]);
    let rejected = |index, error| note(name, Problem::PatternRejected { index, error });
    cases.push(Case::refused_to(
        patterns_config(&too_many),
        vec![(name, Raw::MultiSz(too_many.clone()))],
        "config.device_id_patterns",
        vec![rejected(MAX_DEVICE_ID_PATTERNS, PatternError::TooMany)],
        kept,
    ));
    let too_long = vec![format!("{longest}#")];
    cases.push(Case::refused(
        patterns_config(&too_long),
        vec![(name, Raw::MultiSz(too_long))],
        "config.device_id_patterns[0]",
        vec![rejected(0, PatternError::TooLong), note(name, Problem::NoPatterns)],
    ));
    for (patterns, field) in [
        (vec![], "config.device_id_patterns"),
        (vec![String::new()], "config.device_id_patterns[0]"),
    ] {
        cases.push(Case::refused(
            patterns_config(&patterns),
            vec![(name, Raw::MultiSz(patterns))],
            field,
            vec![note(name, Problem::NoPatterns)],
        ));
    }
    cases.push(Case::refused(
        "device_id_patterns = \"\\\\_SB.CPU#\"".to_owned(),
        vec![(name, Raw::Sz("\\_SB.CPU#".to_owned()))],
        "config.device_id_patterns",
        vec![wrong_type(name, REG_SZ, REG_MULTI_SZ)],
    ));
}

/// Every case: each `[config]` key in range, at both bounds, one past each bound and of the
/// wrong type where the registry can say it.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    choice_cases(
        &mut cases,
        "feedback_counters",
        names::FEEDBACK_COUNTERS,
        &FEEDBACK_COUNTER_CHOICES,
        |config, value| config.feedback_counters = value,
    );
    choice_cases(
        &mut cases,
        "counter_source",
        names::COUNTER_SOURCE,
        &COUNTER_SOURCE_CHOICES,
        |config, value| config.counter_source = value,
    );
    choice_cases(
        &mut cases,
        "pmu_reservation",
        names::PMU_RESERVATION,
        &PMU_RESERVATION_CHOICES,
        |config, value| config.pmu_reservation = value,
    );
    view_cases(&mut cases);
    number_cases(&mut cases);
    latency_cases(&mut cases);
    perf_cases(&mut cases);
    pattern_cases(&mut cases);
    cases
}

/// (a): the driver's rules over the raw values.
fn driver(registry: &[(&'static str, Raw)]) -> (Config, Vec<Note>) {
    let mut values =
        Values(registry.iter().map(|(name, raw)| (*name, raw.clone(), raw.data())).collect());
    let mut notes = Vec::new();
    let config = read_config(&mut values, |note| notes.push(note));
    (config, notes)
}

/// (b) and (c): the scenario parser over `BASE` and `tail`.
fn scenario(tail: &str) -> Result<Config, ppm_sim::ScenarioError> {
    Scenario::from_toml_str(&format!("{BASE}{tail}"))
        .map(|scenario| scenario.config.to_engine_config())
}

fn registry_table(registry: &[(&'static str, Raw)]) -> String {
    let lines: Vec<String> =
        registry.iter().map(|(name, raw)| format!("{name} = {}\n", raw.toml())).collect();
    format!("[registry]\n{}", lines.concat())
}

#[test]
fn the_driver_and_the_scenario_config_read_the_same_values_the_same_way() {
    let cases = cases();
    let (mut applied, mut refused) = (0, 0);
    for case in &cases {
        let what = &case.what;
        let (driver_config, notes) = driver(&case.registry);
        let from_config = scenario(&format!("[config]\n{}\n", case.config));
        let from_registry = scenario(&registry_table(&case.registry))
            .unwrap_or_else(|error| panic!("{what}: the [registry] scenario failed: {error}"));
        assert_eq!(from_registry, driver_config, "{what}: [registry] differs from the driver");
        match &case.outcome {
            Outcome::Applied(expected) => {
                applied += 1;
                assert!(notes.is_empty(), "{what}: the driver noted {notes:?}");
                assert_eq!(&driver_config, expected, "{what}: the driver's configuration");
                let from_config = from_config.unwrap_or_else(|error| {
                    panic!("{what}: the [config] scenario failed: {error}")
                });
                assert_eq!(&from_config, expected, "{what}: [config] differs from the driver");
            }
            Outcome::Refused { field, notes: expected_notes, fallback, states_range } => {
                refused += 1;
                assert_eq!(&notes, expected_notes, "{what}: the driver's notes");
                assert_eq!(&driver_config, fallback, "{what}: the driver's fallback");
                let error =
                    from_config.expect_err(&format!("{what}: the [config] scenario was accepted"));
                assert_eq!(error.field.as_deref(), Some(field.as_str()), "{what}: {error}");
                for note in notes.iter().filter(|_| *states_range) {
                    if let Problem::OutOfRange { min, max, .. } = note.problem {
                        let range = format!("in {min}..={max}");
                        assert!(error.message.contains(&range), "{what}: {error} lacks {range}");
                    }
                }
            }
        }
    }
    println!("{} cases: {applied} applied, {refused} refused alike", cases.len());
    assert!(applied >= 25 && refused >= 30, "{applied} applied, {refused} refused");
}

#[test]
fn every_config_key_has_cases() {
    let cases = cases();
    for key in ppm_sim::scenario::CONFIG_KEYS {
        let prefix = format!("{key} = ");
        let count = cases.iter().filter(|case| case.config.starts_with(&prefix)).count();
        assert!(count >= 4, "{key}: {count} cases");
    }
}

#[test]
fn the_name_tables_cover_every_registry_code_the_driver_accepts() {
    /// The codes `read_config` applies for `name`, among 0..=16 and `u32::MAX`.
    fn accepted(name: &'static str) -> Vec<u32> {
        (0..=16)
            .chain([u32::MAX])
            .filter(|&code| driver(&[(name, Raw::Dword(code))]).1.is_empty())
            .collect()
    }
    fn codes<T>(choices: &[Choice<T>]) -> Vec<u32> {
        let mut codes: Vec<u32> = choices.iter().map(|choice| choice.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), choices.len(), "a code is listed twice");
        codes
    }
    assert_eq!(accepted(names::FEEDBACK_COUNTERS), codes(&FEEDBACK_COUNTER_CHOICES));
    assert_eq!(accepted(names::COUNTER_SOURCE), codes(&COUNTER_SOURCE_CHOICES));
    assert_eq!(accepted(names::PMU_RESERVATION), codes(&PMU_RESERVATION_CHOICES));
}
