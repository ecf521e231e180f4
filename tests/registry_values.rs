//! Host tests of the driver's registry rules (`ppm_engine::driver::registry`), which the
//! driver's kernel services feed with raw values: `REG_DWORD` checks, the all-four-or-none perf values,
//! `REG_MULTI_SZ` parsing, defaults, and the names written to the state key.

use ppm_engine::driver::registry as config_values;

use config_values::{
    Dword, Lookup, MAX_NAME_UNITS, MAX_PERFORMANCE_LEVEL, MAX_TRANSITION_LATENCY_100NS, Note,
    Problem, REG_DWORD, REG_MULTI_SZ, REG_SZ, VALUE_BUFFER_BYTES, ValueSource, encode_name,
    encode_reg_sz, for_each_multi_sz, names, no_counters_reason_name, nominal_rate_source_name,
    parse_dword, parse_patterns, perf_from_dwords, perf_source_name, read_config,
    read_skip_registration, state,
};
use ppm_engine::config::{Config, CounterSourcePreference, FeedbackCounterPolicy};
use ppm_engine::counters::{NoCountersReason, NominalRateSource};
use ppm_engine::device_id::{
    DEFAULT_DEVICE_ID_PATTERNS, DeviceIdPatterns, MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS,
    PatternError,
};
use ppm_engine::perf::{PerfCapabilities, PerfSource};

/// One stored value or an injected read outcome.
#[derive(Clone, Debug)]
enum Entry {
    Value(u32, Vec<u8>),
    TooLarge(u32),
    Failed(i32),
}

/// A registry key as a table, recording which names were read.
#[derive(Default)]
struct Table {
    entries: Vec<(&'static str, Entry)>,
    reads: Vec<&'static str>,
}

impl Table {
    fn with(mut self, name: &'static str, entry: Entry) -> Self {
        self.entries.push((name, entry));
        self
    }

    fn dword(self, name: &'static str, value: u32) -> Self {
        self.with(name, Entry::Value(REG_DWORD, value.to_le_bytes().to_vec()))
    }
}

impl ValueSource for Table {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        self.reads.push(name);
        match self.entries.iter().find(|(entry_name, _)| *entry_name == name) {
            None => Lookup::Absent,
            Some((_, Entry::Value(value_type, data))) => {
                Lookup::Found { value_type: *value_type, data }
            }
            Some((_, Entry::TooLarge(needed))) => Lookup::TooLarge { needed: *needed },
            Some((_, Entry::Failed(status))) => Lookup::Failed { status: *status },
        }
    }
}

/// Reads `table`, returning the configuration and the notes.
fn read(mut table: Table) -> (Config, Vec<Note>) {
    let mut notes = Vec::new();
    let config = read_config(&mut table, |note| notes.push(note));
    (config, notes)
}

/// UTF-16LE bytes of `strings`, each NUL-terminated, then `terminators` extra NUL units.
fn multi_sz(strings: &[&str], terminators: usize) -> Vec<u8> {
    let mut units: Vec<u16> = Vec::new();
    for string in strings {
        units.extend(string.encode_utf16());
        units.push(0);
    }
    units.extend(std::iter::repeat_n(0, terminators));
    units.iter().flat_map(|unit| unit.to_le_bytes()).collect()
}

fn patterns_of(strings: &[&str]) -> DeviceIdPatterns {
    let mut patterns = DeviceIdPatterns::empty();
    for string in strings {
        patterns.push_str(string).unwrap();
    }
    patterns
}

fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

fn problems(notes: &[Note], value: &str) -> Vec<Problem> {
    notes.iter().filter(|note| note.value == value).map(|note| note.problem).collect()
}

#[test]
fn an_empty_key_gives_the_documented_defaults_and_reads_every_value() {
    let mut table = Table::default();
    let mut notes = Vec::new();
    let config = read_config(&mut table, |note| notes.push(note));
    assert_eq!(config, Config::new());
    assert!(notes.is_empty());
    assert_eq!(config.feedback_counters, FeedbackCounterPolicy::Enabled);
    assert_eq!(config.counter_source, CounterSourcePreference::Auto);
    assert!(!config.performance_counter_view);
    assert_eq!(config.nominal_mhz, None);
    assert_eq!(config.perf_capabilities, None);
    assert_eq!(config.device_id_patterns, DeviceIdPatterns::defaults());
    assert_eq!(config.transition_latency_100ns, 0);
    // Every configuration value is read; `SkipRegistration` has its own reader, read first.
    for name in names::ALL.into_iter().filter(|&name| name != names::SKIP_REGISTRATION) {
        assert!(table.reads.contains(&name), "{name} was not read");
    }
    assert!(!table.reads.contains(&names::SKIP_REGISTRATION));
}

#[test]
fn valid_dwords_are_applied() {
    let (config, notes) = read(
        Table::default()
            .dword(names::FEEDBACK_COUNTERS, 0)
            .dword(names::COUNTER_SOURCE, 3)
            .dword(names::PERFORMANCE_COUNTER_VIEW, 1)
            .dword(names::NOMINAL_MHZ, 2400)
            .dword(names::TRANSITION_LATENCY_100NS, MAX_TRANSITION_LATENCY_100NS),
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(config.feedback_counters, FeedbackCounterPolicy::Disabled);
    assert_eq!(config.counter_source, CounterSourcePreference::None);
    assert!(config.performance_counter_view);
    assert_eq!(config.nominal_mhz, Some(2400));
    assert_eq!(config.transition_latency_100ns, MAX_TRANSITION_LATENCY_100NS);
}

#[test]
fn every_counter_source_value_maps_to_the_engine_preference() {
    let expected = [
        (0, CounterSourcePreference::Auto),
        (1, CounterSourcePreference::AperfMperf),
        (2, CounterSourcePreference::FixedPmc),
        (3, CounterSourcePreference::None),
        (4, CounterSourcePreference::PreferFixedPmc),
    ];
    for (value, preference) in expected {
        let (config, notes) = read(Table::default().dword(names::COUNTER_SOURCE, value));
        assert!(notes.is_empty());
        assert_eq!(config.counter_source, preference, "CounterSource = {value}");
    }
}

#[test]
fn pmu_reservation_values_map_to_the_engine_policy() {
    use ppm_engine::pmc::ReservationPolicy;
    assert_eq!(read(Table::default()).0.pmu_reservation, ReservationPolicy::ExclusivePmu);
    let (config, notes) = read(Table::default().dword(names::PMU_RESERVATION, 1));
    assert!(notes.is_empty());
    assert_eq!(config.pmu_reservation, ReservationPolicy::AllCounterIndexes);
    let (config, notes) = read(Table::default().dword(names::PMU_RESERVATION, 2));
    assert_eq!(config.pmu_reservation, ReservationPolicy::ExclusivePmu);
    assert_eq!(
        notes,
        [Note {
            value: names::PMU_RESERVATION,
            problem: Problem::OutOfRange { value: 2, min: 0, max: 1 }
        }]
    );
}

#[test]
fn out_of_range_dwords_are_ignored_and_reported() {
    let cases: [(&'static str, u32, u32, u32); 6] = [
        (names::FEEDBACK_COUNTERS, 2, 0, 1),
        (names::COUNTER_SOURCE, 5, 0, 4),
        (names::PERFORMANCE_COUNTER_VIEW, u32::MAX, 0, 1),
        (names::NOMINAL_MHZ, 0, 1, 100_000),
        (names::NOMINAL_MHZ, 100_001, 1, 100_000),
        (names::FEEDBACK_COUNTERS, u32::MAX, 0, 1),
    ];
    for (name, value, min, max) in cases {
        let (config, notes) = read(Table::default().dword(name, value));
        assert_eq!(config, Config::new(), "{name} = {value} changed the configuration");
        assert_eq!(notes, [Note { value: name, problem: Problem::OutOfRange { value, min, max } }]);
    }
}

/// `TransitionLatency100ns` describes perf transitions, and the PEP reports none
/// (`PerformanceStatesSupported` FALSE): 0 applies, any other number is ignored with that
/// reason.
#[test]
fn a_transition_latency_is_ignored_since_the_pep_reports_no_perf_states() {
    let name = names::TRANSITION_LATENCY_100NS;
    let (config, notes) = read(Table::default().dword(name, 0));
    assert_eq!((config, notes), (Config::new(), Vec::new()));
    for value in [1, 500, 10_000_000, u32::MAX] {
        let (config, notes) = read(Table::default().dword(name, value));
        assert_eq!(config.transition_latency_100ns, 0);
        assert_eq!(config, Config::new(), "{value} changed the configuration");
        assert_eq!(notes, [Note { value: name, problem: Problem::NoPerfStates { value } }]);
        assert_eq!(
            notes[0].to_string(),
            format!(
                "TransitionLatency100ns: {value} describes no perf transition (the PEP reports \
                 PerformanceStatesSupported FALSE); ignored"
            )
        );
    }
}

#[test]
fn dwords_of_the_wrong_type_or_size_are_ignored_and_reported() {
    let (config, notes) = read(
        Table::default()
            .with(names::FEEDBACK_COUNTERS, Entry::Value(REG_SZ, multi_sz(&["0"], 0)))
            .with(names::NOMINAL_MHZ, Entry::Value(REG_DWORD, vec![0x60, 0x09, 0]))
            .with(names::COUNTER_SOURCE, Entry::Value(REG_DWORD, vec![1, 0, 0, 0, 0, 0, 0, 0]))
            .with(names::TRANSITION_LATENCY_100NS, Entry::Value(11, 5u64.to_le_bytes().to_vec())),
    );
    assert_eq!(config, Config::new());
    assert_eq!(
        problems(&notes, names::FEEDBACK_COUNTERS),
        [Problem::WrongType { found: REG_SZ, expected: REG_DWORD }]
    );
    assert_eq!(problems(&notes, names::NOMINAL_MHZ), [Problem::WrongLength { bytes: 3 }]);
    assert_eq!(problems(&notes, names::COUNTER_SOURCE), [Problem::WrongLength { bytes: 8 }]);
    assert_eq!(
        problems(&notes, names::TRANSITION_LATENCY_100NS),
        [Problem::WrongType { found: 11, expected: REG_DWORD }]
    );
}

#[test]
fn unreadable_values_are_ignored_and_reported() {
    let (config, notes) = read(
        Table::default()
            .with(names::NOMINAL_MHZ, Entry::TooLarge(4096))
            .with(names::FEEDBACK_COUNTERS, Entry::Failed(0xC000_0022_u32.cast_signed()))
            .with(names::PROCESSOR_DEVICE_ID_PATTERNS, Entry::TooLarge(70_000)),
    );
    assert_eq!(config, Config::new());
    assert_eq!(problems(&notes, names::NOMINAL_MHZ), [Problem::TooLarge { bytes: 4096 }]);
    assert_eq!(
        problems(&notes, names::FEEDBACK_COUNTERS),
        [Problem::ReadFailed { status: 0xC000_0022_u32.cast_signed() }]
    );
    assert_eq!(
        problems(&notes, names::PROCESSOR_DEVICE_ID_PATTERNS),
        [Problem::TooLarge { bytes: 70_000 }]
    );
}

#[test]
fn parse_dword_accepts_the_bounds_and_little_endian_data() {
    assert_eq!(parse_dword(REG_DWORD, &[1, 0, 0, 0], 1, 1), Ok(1));
    assert_eq!(parse_dword(REG_DWORD, &0x0001_86A0_u32.to_le_bytes(), 1, 100_000), Ok(100_000));
    assert_eq!(parse_dword(REG_DWORD, &[0, 0, 0, 0], 0, 0), Ok(0));
    assert_eq!(
        parse_dword(REG_DWORD, &[], 0, 1),
        Err(Problem::WrongLength { bytes: 0 }),
        "an empty REG_DWORD"
    );
    assert_eq!(
        parse_dword(REG_MULTI_SZ, &[1, 0, 0, 0], 0, 1),
        Err(Problem::WrongType { found: REG_MULTI_SZ, expected: REG_DWORD })
    );
}

#[test]
fn four_ordered_perf_values_are_used() {
    let (config, notes) = read(
        Table::default()
            .dword(names::HIGHEST_PERFORMANCE, 255)
            .dword(names::NOMINAL_PERFORMANCE, 200)
            .dword(names::LOWEST_NONLINEAR_PERFORMANCE, 100)
            .dword(names::LOWEST_PERFORMANCE, 1),
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        config.perf_capabilities,
        Some(PerfCapabilities { highest: 255, nominal: 200, lowest_nonlinear: 100, lowest: 1 })
    );
    // Equal levels are ordered too.
    let (config, notes) = read(
        Table::default()
            .dword(names::HIGHEST_PERFORMANCE, MAX_PERFORMANCE_LEVEL)
            .dword(names::NOMINAL_PERFORMANCE, MAX_PERFORMANCE_LEVEL)
            .dword(names::LOWEST_NONLINEAR_PERFORMANCE, MAX_PERFORMANCE_LEVEL)
            .dword(names::LOWEST_PERFORMANCE, MAX_PERFORMANCE_LEVEL),
    );
    assert!(notes.is_empty());
    assert_eq!(config.perf_capabilities, Some(PerfCapabilities::flat(MAX_PERFORMANCE_LEVEL)));
}

#[test]
fn perf_values_are_all_four_or_none() {
    let (config, notes) = read(
        Table::default()
            .dword(names::HIGHEST_PERFORMANCE, 255)
            .dword(names::NOMINAL_PERFORMANCE, 200)
            .dword(names::LOWEST_PERFORMANCE, 1),
    );
    assert_eq!(config.perf_capabilities, None);
    assert_eq!(
        notes,
        [Note { value: names::HIGHEST_PERFORMANCE, problem: Problem::PerfIncomplete }]
    );
}

#[test]
fn unordered_perf_values_are_ignored() {
    let (config, notes) = read(
        Table::default()
            .dword(names::HIGHEST_PERFORMANCE, 100)
            .dword(names::NOMINAL_PERFORMANCE, 200)
            .dword(names::LOWEST_NONLINEAR_PERFORMANCE, 50)
            .dword(names::LOWEST_PERFORMANCE, 10),
    );
    assert_eq!(config.perf_capabilities, None);
    assert_eq!(
        notes,
        [Note { value: names::HIGHEST_PERFORMANCE, problem: Problem::PerfUnordered }]
    );
}

#[test]
fn one_unusable_perf_value_discards_all_four() {
    let (config, notes) = read(
        Table::default()
            .dword(names::HIGHEST_PERFORMANCE, 255)
            .dword(names::NOMINAL_PERFORMANCE, 200)
            .dword(names::LOWEST_NONLINEAR_PERFORMANCE, 100)
            .dword(names::LOWEST_PERFORMANCE, 0),
    );
    assert_eq!(config.perf_capabilities, None);
    assert_eq!(
        notes,
        [
            Note {
                value: names::LOWEST_PERFORMANCE,
                problem: Problem::OutOfRange { value: 0, min: 1, max: MAX_PERFORMANCE_LEVEL },
            },
            Note { value: names::HIGHEST_PERFORMANCE, problem: Problem::PerfIncomplete },
        ]
    );
}

#[test]
fn perf_from_dwords_covers_every_shape() {
    use Dword::{Absent, Rejected, Valid};
    assert_eq!(perf_from_dwords([Absent; 4]), (None, None));
    assert_eq!(
        perf_from_dwords([Valid(3), Valid(2), Valid(2), Valid(1)]).1.map(|c| c.nominal),
        Some(2)
    );
    assert_eq!(
        perf_from_dwords([Valid(3), Valid(2), Rejected, Valid(1)]),
        (Some(Problem::PerfIncomplete), None)
    );
    assert_eq!(perf_from_dwords([Rejected; 4]), (Some(Problem::PerfIncomplete), None));
    assert_eq!(
        perf_from_dwords([Valid(1), Valid(2), Valid(2), Valid(1)]),
        (Some(Problem::PerfUnordered), None)
    );
    assert_eq!(Valid(7).value(), Some(7));
    assert_eq!(Rejected.value(), None);
    assert_eq!(Absent.value(), None);
}

#[test]
fn a_well_formed_pattern_list_replaces_the_defaults() {
    let data = multi_sz(&["\\_SB.PLTF.C###", "\\_SB.CPU?"], 1);
    let (config, notes) = read(
        Table::default()
            .with(names::PROCESSOR_DEVICE_ID_PATTERNS, Entry::Value(REG_MULTI_SZ, data)),
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(config.device_id_patterns, patterns_of(&["\\_SB.PLTF.C###", "\\_SB.CPU?"]));
    assert!(config.device_id_patterns.matches(&utf16("\\_SB.PLTF.C00A")));
    assert!(config.device_id_patterns.matches(&utf16("\\_sb.cpu7")));
    // The defaults are replaced, not extended.
    assert!(!config.device_id_patterns.matches(&utf16("\\_PR.CPU0")));
}

#[test]
fn a_list_without_its_terminators_is_accepted() {
    // Strings NUL-separated but the final empty string missing.
    let data = multi_sz(&["\\_SB.CP##"], 0);
    assert_eq!(parse_patterns(&data, |p| panic!("{p:?}")), Some(patterns_of(&["\\_SB.CP##"])));
    // The last string not even NUL-terminated.
    let mut data = multi_sz(&["\\_SB.CP##"], 0);
    data.extend(utf16("\\_PR.P###").iter().flat_map(|unit| unit.to_le_bytes()));
    assert_eq!(
        parse_patterns(&data, |p| panic!("{p:?}")),
        Some(patterns_of(&["\\_SB.CP##", "\\_PR.P###"]))
    );
}

#[test]
fn extra_nul_padding_after_the_list_is_fine() {
    let data = multi_sz(&["A*", "B*"], 5);
    assert_eq!(parse_patterns(&data, |p| panic!("{p:?}")), Some(patterns_of(&["A*", "B*"])));
}

#[test]
fn an_empty_string_ends_the_list_and_text_after_it_is_reported() {
    // "A*\0\0B*\0\0": the empty string after A* ends the list.
    let mut data = multi_sz(&["A*"], 1);
    data.extend(multi_sz(&["B*"], 1));
    let mut seen = Vec::new();
    assert_eq!(parse_patterns(&data, |p| seen.push(p)), Some(patterns_of(&["A*"])));
    assert_eq!(seen, [Problem::TrailingData]);
}

#[test]
fn a_leading_empty_string_means_an_empty_list_and_the_defaults_stay() {
    let mut data = vec![0, 0];
    data.extend(multi_sz(&["A*"], 1));
    let (config, notes) = read(
        Table::default()
            .with(names::PROCESSOR_DEVICE_ID_PATTERNS, Entry::Value(REG_MULTI_SZ, data)),
    );
    assert_eq!(config.device_id_patterns, DeviceIdPatterns::defaults());
    assert_eq!(
        problems(&notes, names::PROCESSOR_DEVICE_ID_PATTERNS),
        [Problem::TrailingData, Problem::NoPatterns]
    );
}

#[test]
fn empty_values_keep_the_defaults() {
    for data in [vec![], vec![0, 0], vec![0, 0, 0, 0]] {
        let mut seen = Vec::new();
        assert_eq!(parse_patterns(&data, |p| seen.push(p)), None, "{data:?}");
        assert_eq!(seen, [Problem::NoPatterns], "{data:?}");
    }
}

#[test]
fn odd_byte_lengths_are_rejected_whole() {
    for data in [vec![0x41], multi_sz(&["A*"], 1).into_iter().chain([0x42]).collect::<Vec<_>>()] {
        let mut seen = Vec::new();
        assert_eq!(parse_patterns(&data, |p| seen.push(p)), None);
        assert_eq!(seen, [Problem::OddLength { bytes: data.len() }]);
    }
}

#[test]
fn bad_patterns_are_skipped_and_the_rest_kept() {
    let long = "X".repeat(MAX_PATTERN_UNITS + 1);
    let data = multi_sz(&["A*", &long, "B*"], 1);
    let mut seen = Vec::new();
    assert_eq!(parse_patterns(&data, |p| seen.push(p)), Some(patterns_of(&["A*", "B*"])));
    assert_eq!(seen, [Problem::PatternRejected { index: 1, error: PatternError::TooLong }]);
}

#[test]
fn patterns_beyond_the_engine_capacity_are_reported() {
    let strings: Vec<String> = (0..MAX_DEVICE_ID_PATTERNS + 2).map(|i| format!("P{i}*")).collect();
    let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
    let data = multi_sz(&refs, 1);
    let mut seen = Vec::new();
    let patterns = parse_patterns(&data, |p| seen.push(p)).unwrap();
    assert_eq!(patterns.len(), MAX_DEVICE_ID_PATTERNS);
    assert_eq!(
        seen,
        [
            Problem::PatternRejected {
                index: MAX_DEVICE_ID_PATTERNS,
                error: PatternError::TooMany
            },
            Problem::PatternRejected {
                index: MAX_DEVICE_ID_PATTERNS + 1,
                error: PatternError::TooMany
            },
        ]
    );
}

#[test]
fn data_larger_than_the_buffer_is_rejected() {
    let data = vec![0x41; VALUE_BUFFER_BYTES + 2];
    let mut seen = Vec::new();
    assert_eq!(parse_patterns(&data, |p| seen.push(p)), None);
    assert_eq!(seen, [Problem::TooLarge { bytes: u32::try_from(data.len()).unwrap() }]);
}

#[test]
fn the_largest_list_the_engine_holds_fits_the_buffer() {
    let long = "#".repeat(MAX_PATTERN_UNITS);
    let refs: Vec<&str> = std::iter::repeat_n(long.as_str(), MAX_DEVICE_ID_PATTERNS).collect();
    let data = multi_sz(&refs, 1);
    assert!(data.len() <= VALUE_BUFFER_BYTES);
    let patterns = parse_patterns(&data, |p| panic!("{p:?}")).unwrap();
    assert_eq!(patterns.len(), MAX_DEVICE_ID_PATTERNS);
}

#[test]
fn patterns_must_be_a_multi_string() {
    let (config, notes) = read(
        Table::default()
            .with(names::PROCESSOR_DEVICE_ID_PATTERNS, Entry::Value(REG_SZ, multi_sz(&["A*"], 0))),
    );
    assert_eq!(config.device_id_patterns, DeviceIdPatterns::defaults());
    assert_eq!(
        problems(&notes, names::PROCESSOR_DEVICE_ID_PATTERNS),
        [Problem::WrongType { found: REG_SZ, expected: REG_MULTI_SZ }]
    );
}

#[test]
fn for_each_multi_sz_visits_strings_in_order() {
    let units: Vec<u16> = [utf16("ab"), vec![0], utf16("c"), vec![0, 0]].concat();
    let mut seen = Vec::new();
    assert_eq!(
        for_each_multi_sz(&units, |i, s| seen.push((i, String::from_utf16(s).unwrap()))),
        Ok(())
    );
    assert_eq!(seen, [(0, "ab".to_owned()), (1, "c".to_owned())]);
    let mut count = 0;
    assert_eq!(for_each_multi_sz(&[], |_, _| count += 1), Ok(()));
    assert_eq!(for_each_multi_sz(&[0, 0x41], |_, _| count += 1), Err(Problem::TrailingData));
    assert_eq!(count, 0);
}

#[test]
fn names_encode_to_counted_utf16() {
    let mut units = [0u16; MAX_NAME_UNITS];
    assert_eq!(encode_name("State", &mut units), Some(5));
    assert_eq!(&units[..5], utf16("State").as_slice());
    assert_eq!(encode_name("", &mut units), None);
    assert_eq!(encode_name("Ün", &mut units), None);
    assert_eq!(encode_name("a\0b", &mut units), None);
    assert_eq!(encode_name(&"x".repeat(MAX_NAME_UNITS + 1), &mut units), None);
    assert_eq!(encode_name(&"x".repeat(MAX_NAME_UNITS), &mut units), Some(MAX_NAME_UNITS));
}

#[test]
fn reg_sz_data_is_utf16le_with_a_terminator() {
    let mut out = [0xFFu8; 16];
    assert_eq!(encode_reg_sz("ab", &mut out), Some(6));
    assert_eq!(&out[..6], &[0x61, 0, 0x62, 0, 0, 0]);
    assert_eq!(encode_reg_sz("", &mut out), Some(2));
    assert_eq!(encode_reg_sz("a\0", &mut out), None);
    assert_eq!(encode_reg_sz("12345678", &mut out), None, "9 units do not fit 16 bytes");
    assert_eq!(encode_reg_sz("1234567", &mut out), Some(16));
}

#[test]
fn every_name_is_short_ascii_and_unique() {
    let state_names = [
        state::KEY,
        state::REGISTERED,
        state::FAILED_STEP,
        state::FAILURE_STATUS,
        state::FEEDBACK_COUNTER_COUNT,
        state::COUNTER_SOURCE,
        state::NO_COUNTERS_REASON,
        state::NOMINAL_MHZ,
        state::NOMINAL_RATE_SOURCE,
        state::CALIBRATED_MHZ,
        state::HIGHEST_PERFORMANCE,
        state::NOMINAL_PERFORMANCE,
        state::LOWEST_NONLINEAR_PERFORMANCE,
        state::LOWEST_PERFORMANCE,
        state::PERF_SOURCE,
        state::PROCESSOR_TABLE_CAPACITY,
        state::DEVICE_ID_PATTERN_COUNT,
        state::CONFIGURATION_ISSUES,
        state::ARCHITECTURE,
    ];
    for list in [&names::ALL[..], &state_names[..]] {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), list.len(), "duplicate names in {list:?}");
        for name in list {
            let mut units = [0u16; MAX_NAME_UNITS];
            assert!(encode_name(name, &mut units).is_some(), "{name}");
        }
    }
}

#[test]
fn state_names_of_the_engine_enums_are_distinct() {
    let reasons = [
        None,
        Some(NoCountersReason::DisabledByPolicy),
        Some(NoCountersReason::NoSourceConfigured),
        Some(NoCountersReason::NotAnnounced),
        Some(NoCountersReason::PmuNotReserved),
        Some(NoCountersReason::ReadFaulted),
        Some(NoCountersReason::NotAdvancing),
        Some(NoCountersReason::NominalRateUnknown),
    ]
    .map(no_counters_reason_name);
    let rates = [
        NominalRateSource::Configuration,
        NominalRateSource::CpuidBaseFrequency,
        NominalRateSource::PlatformInfo,
        NominalRateSource::Calibrated,
        NominalRateSource::Unknown,
    ]
    .map(nominal_rate_source_name);
    let perf = [
        PerfSource::Configuration,
        PerfSource::IntelHwp,
        PerfSource::AmdCppc,
        PerfSource::IntelPlatformInfo,
        PerfSource::Flat,
    ]
    .map(perf_source_name);
    for list in [&reasons[..], &rates[..], &perf[..]] {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), list.len(), "{list:?}");
        let mut data = [0u8; 256];
        assert!(list.iter().all(|name| encode_reg_sz(name, &mut data).is_some()));
    }
    assert_eq!(no_counters_reason_name(None), "none");
}

#[test]
fn notes_read_as_log_lines() {
    let note = Note {
        value: names::NOMINAL_MHZ,
        problem: Problem::OutOfRange { value: 0, min: 1, max: 100_000 },
    };
    assert_eq!(note.to_string(), "NominalMhz: 0 is outside 1..=100000; ignored");
    let note = Note {
        value: names::PROCESSOR_DEVICE_ID_PATTERNS,
        problem: Problem::PatternRejected { index: 2, error: PatternError::TooLong },
    };
    assert_eq!(note.to_string(), "ProcessorDeviceIdPatterns: pattern 2 rejected (too long)");
    let failed = Problem::ReadFailed { status: 0xC000_0022_u32.cast_signed() };
    assert_eq!(failed.to_string(), "read failed with status 0xC0000022; ignored");
    for problem in [
        Problem::WrongType { found: 1, expected: 4 },
        Problem::WrongLength { bytes: 3 },
        Problem::TooLarge { bytes: 9000 },
        Problem::PerfIncomplete,
        Problem::PerfUnordered,
        Problem::OddLength { bytes: 3 },
        Problem::NoPatterns,
        Problem::TrailingData,
        Problem::PatternRejected { index: 0, error: PatternError::Empty },
        Problem::PatternRejected { index: 0, error: PatternError::TooMany },
        Problem::PatternRejected { index: 0, error: PatternError::InvalidCharacter },
    ] {
        assert!(!problem.to_string().is_empty());
        assert!(problem.to_string().is_ascii());
    }
}

#[test]
fn the_defaults_the_driver_documents_are_the_engine_defaults() {
    assert_eq!(DeviceIdPatterns::defaults().len(), DEFAULT_DEVICE_ID_PATTERNS.len());
    assert_eq!(MAX_PERFORMANCE_LEVEL, ppm_engine::config::MAX_NOMINAL_MHZ);
}

/// `SkipRegistration` and the notes its read produced.
fn skip(table: Table) -> (bool, Vec<Problem>) {
    let mut table = table;
    let mut notes = Vec::new();
    let skip = read_skip_registration(&mut table, |note| notes.push(note));
    assert_eq!(table.reads, [names::SKIP_REGISTRATION]);
    (skip, problems(&notes, names::SKIP_REGISTRATION))
}

#[test]
fn skip_registration_is_off_only_when_absent_or_dword_zero() {
    assert_eq!(skip(Table::default()), (false, vec![]));
    assert_eq!(skip(Table::default().dword(names::SKIP_REGISTRATION, 0)), (false, vec![]));
    assert_eq!(skip(Table::default().dword(names::SKIP_REGISTRATION, 1)), (true, vec![]));
}

#[test]
fn a_skip_registration_value_that_cannot_be_understood_skips_fail_safe() {
    let name = names::SKIP_REGISTRATION;
    let (skipped, problems) = skip(Table::default().dword(name, 2));
    assert!(skipped);
    assert!(matches!(problems.as_slice(), [Problem::OutOfRange { value: 2, .. }]), "{problems:?}");
    let text = encode_text("1");
    let (skipped, problems) = skip(Table::default().with(name, Entry::Value(REG_SZ, text)));
    assert!(skipped);
    assert!(
        matches!(problems.as_slice(), [Problem::WrongType { found: REG_SZ, .. }]),
        "{problems:?}"
    );
    let (skipped, problems) =
        skip(Table::default().with(name, Entry::Value(REG_DWORD, vec![1, 0])));
    assert!(skipped);
    assert!(matches!(problems.as_slice(), [Problem::WrongLength { bytes: 2 }]), "{problems:?}");
    let (skipped, problems) = skip(Table::default().with(name, Entry::Failed(-1_073_741_823)));
    assert!(skipped);
    assert!(matches!(problems.as_slice(), [Problem::ReadFailed { .. }]), "{problems:?}");
}

/// UTF-16LE with a NUL, as `REG_SZ` data.
fn encode_text(text: &str) -> Vec<u8> {
    text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// The previous whole-value decoding: every unit into one buffer, then the strings.
fn parse_patterns_reference(data: &[u8]) -> (Option<DeviceIdPatterns>, Vec<Problem>) {
    let mut problems = Vec::new();
    if !data.len().is_multiple_of(2) {
        return (None, vec![Problem::OddLength { bytes: data.len() }]);
    }
    let units: Vec<u16> =
        data.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    let mut patterns = DeviceIdPatterns::empty();
    let listed = for_each_multi_sz(&units, |index, string| {
        if let Err(error) = patterns.push_utf16(string) {
            problems.push(Problem::PatternRejected { index, error });
        }
    });
    if let Err(trailing) = listed {
        problems.push(trailing);
    }
    if patterns.is_empty() {
        problems.push(Problem::NoPatterns);
        return (None, problems);
    }
    (Some(patterns), problems)
}

#[test]
fn streaming_pattern_parsing_agrees_with_whole_value_decoding() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for _ in 0..20_000 {
        let units = usize::try_from(next(400)).unwrap();
        let mut data = Vec::with_capacity(units * 2 + 1);
        // Mostly short runs of letters and NULs; in a quarter of the values, strings around and
        // beyond the longest pattern; sometimes odd lengths.
        let nul_odds = if next(4) == 0 { 60 } else { 4 };
        for _ in 0..units {
            let unit: u16 = if next(nul_odds) == 0 {
                0
            } else if next(6) == 0 {
                u16::try_from(next(0x1_0000)).unwrap()
            } else {
                u16::try_from(0x41 + next(26)).unwrap()
            };
            data.extend_from_slice(&unit.to_le_bytes());
        }
        if next(50) == 0 {
            data.push(0x41);
        }
        let mut problems = Vec::new();
        let parsed = parse_patterns(&data, |problem| problems.push(problem));
        assert_eq!((parsed, problems), parse_patterns_reference(&data), "{data:?}");
    }
}
