//! Unit tests of the parent module.

use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy};

use super::*;

const MINIMAL: &str =
    "name = \"t\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\n[pofx]\nduration_ms = 100\n";

fn error_of(text: &str) -> String {
    Scenario::from_toml_str(text).map(|_| ()).expect_err("the scenario must be refused").to_string()
}

#[test]
fn minimal_scenario_gets_the_documented_defaults() {
    let scenario = Scenario::from_toml_str(MINIMAL).expect("valid");
    assert_eq!(scenario.platform.processors, 4);
    assert_eq!(scenario.platform.cpu, CpuKind::IntelHwp);
    assert_eq!(scenario.platform.counter_source, CounterSourceKind::AperfMperf);
    assert_eq!(scenario.pofx.sample_interval_ms, DEFAULT_SAMPLE_INTERVAL_MS);
    assert_eq!(scenario.platform.perf.nominal, 20);
    assert_eq!(scenario.expected_counter_count(), 1);
    assert!(scenario.phases.is_empty());
}

#[test]
fn a_duplicate_key_is_named() {
    assert_eq!(
        error_of(&format!("{MINIMAL}[platform]\n")),
        "line 7, column 2: invalid TOML: duplicate key `platform`"
    );
    assert_eq!(
        error_of("name = \"a\"\n[platform]\nprocessors = 1\nprocessors = 2\n"),
        "line 4, column 1: invalid TOML: duplicate key `processors`"
    );
}

#[test]
fn phases_stay_within_the_platform_perf_range() {
    let perf = "[platform.perf]\nhighest = 40\nnominal = 20\nlowest_nonlinear = 8\nlowest = 4\n";
    let with = |mhz: u32| {
        format!(
            "{MINIMAL}{perf}[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = {mhz}\nbusy_percent = 50\n"
        )
    };
    assert!(Scenario::from_toml_str(&with(4000)).is_ok());
    assert!(Scenario::from_toml_str(&with(400)).is_ok());
    assert_eq!(
        error_of(&with(4100)),
        "line 15, column 17: field `phase[0].frequency_mhz`: 4100 MHz is above the highest performance level of [platform.perf] (40 = 4000 MHz)"
    );
    assert_eq!(
        error_of(&with(300)),
        "line 15, column 17: field `phase[0].frequency_mhz`: 300 MHz is below the lowest performance level of [platform.perf] (4 = 400 MHz)"
    );
    // Without [platform.perf] the derived range covers every phase.
    let slow = format!(
        "{MINIMAL}[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 300\nbusy_percent = 50\n"
    );
    let scenario = Scenario::from_toml_str(&slow).expect("valid");
    let perf = scenario.platform.perf;
    assert!(perf.mhz(perf.lowest, scenario.platform.cpu, 2000) <= 300, "{perf:?}");
}

#[test]
fn registry_and_fault_errors_name_the_field() {
    let with = |extra: &str| format!("{MINIMAL}{extra}");
    let cases = [
        (
            "[registry]\nNominalMhz = -1\n",
            "line 8, column 14: field `registry.NominalMhz`: a REG_DWORD is 0..=4294967295, found -1",
        ),
        (
            "[registry]\nNominalMhz = 1\nnominalmhz = 2\n",
            "line 9, column 14: field `registry.nominalmhz`: the same value as registry.NominalMhz (registry value names are case-insensitive)",
        ),
        (
            "[config]\nnominal_mhz = 2000\n[registry]\nNOMINALMHZ = 3\n",
            "line 10, column 14: field `registry.NOMINALMHZ`: NominalMhz is also set by config.nominal_mhz; set each Parameters value in one place",
        ),
        (
            "[[fault]]\nstep = \"explode\"\n",
            "line 8, column 8: field `fault[0].step`: expected one of \"open-parameters\"",
        ),
        (
            "[[fault]]\nstep = \"register-plugin\"\nstatus = 5\n",
            "line 9, column 10: field `fault[0].status`: expected an error NTSTATUS number",
        ),
        (
            "[[fault]]\nstep = \"enable-fixed-counters\"\nprocessor = 4\n",
            "line 9, column 13: field `fault[0].processor`: expected an integer in 0..=3, found 4",
        ),
        (
            "[[fault]]\nstep = \"allocate\"\nblock = \"x\"\n",
            "line 9, column 9: field `fault[0].block`: expected one of \"processor-table\", \"saved-pmu-control\"",
        ),
        (
            "[[fault]]\nstep = \"register-plugin\"\n[[fault]]\nstep = \"register-plugin\"\n",
            "line 10, column 8: field `fault[1].step`: a second \"register-plugin\" fault",
        ),
    ];
    for (extra, expected) in cases {
        let error = error_of(&with(extra));
        assert!(error.starts_with(expected), "{extra}: {error}");
    }
    let faults = "[[fault]]\nstep = \"processor-count\"\n".repeat(17);
    assert_eq!(error_of(&with(&faults)), "line 7, column 1: field `fault`: 17 entries; at most 16");
}

#[test]
fn raw_registry_values_reach_the_expected_configuration() {
    let text = format!(
        "{MINIMAL}[registry]\nNominalMhz = 2400\nCounterSource = \"2\"\nFeedbackCounters = 0\n"
    );
    let scenario = Scenario::from_toml_str(&text).expect("valid");
    // A valid DWORD applies; a DWORD stored as REG_SZ is ignored, as the driver ignores it.
    assert_eq!(scenario.config.nominal_mhz, Some(2400));
    assert_eq!(scenario.config.counter_source, CounterSourcePreference::Auto);
    assert_eq!(scenario.config.feedback_counters, FeedbackCounterPolicy::Disabled);
    assert_eq!(scenario.expected_counter_count(), 0);
    let unreadable = format!("{text}[[fault]]\nstep = \"open-parameters\"\n");
    let scenario = Scenario::from_toml_str(&unreadable).expect("valid");
    assert_eq!(scenario.config, ConfigSpec::default());
}

#[test]
fn processor_count_out_of_range_names_the_field() {
    let text = MINIMAL.replace("processors = 4", "processors = 5000");
    assert_eq!(
        error_of(&text),
        "line 3, column 14: field `platform.processors`: expected an integer in 1..=2048, found 5000"
    );
    let text = MINIMAL.replace("processors = 4", "processors = 0");
    assert_eq!(
        error_of(&text),
        "line 3, column 14: field `platform.processors`: expected an integer in 1..=2048, found 0"
    );
    let text = MINIMAL.replace("processors = 4", "processors = \"8\"");
    assert_eq!(
        error_of(&text),
        "line 3, column 14: field `platform.processors`: expected an integer in 1..=2048, found the string \"8\""
    );
}

#[test]
fn unknown_keys_are_errors() {
    let text = MINIMAL.replace("[pofx]", "turbo = true\n[pofx]");
    let message = error_of(&text);
    assert!(
        message.starts_with(
            "line 5, column 1: field `platform.turbo`: unknown field; expected one of `processors`"
        ),
        "{message}"
    );
    let message = error_of(&format!("{MINIMAL}colour = 1\n"));
    assert!(
        message.starts_with("line 7, column 1: field `pofx.colour`: unknown field"),
        "{message}"
    );
}

#[test]
fn phase_errors_name_the_phase() {
    let phase =
        "[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 3000\nbusy_percent = 100\n";
    let two =
        format!("{MINIMAL}{phase}{}", phase.replace("busy_percent = 100", "busy_percent = 101"));
    assert_eq!(
        error_of(&two),
        "line 16, column 16: field `phase[1].busy_percent`: expected an integer in 0..=100, found 101"
    );
    let zero = format!("{MINIMAL}{}", phase.replace("3000", "0"));
    assert_eq!(
        error_of(&zero),
        "line 10, column 17: field `phase[0].frequency_mhz`: expected an integer in 1..=10000, found 0"
    );
    let out = format!("{MINIMAL}{}", phase.replace("\"all\"", "[1, 4]"));
    assert_eq!(
        error_of(&out),
        "line 9, column 18: field `phase[0].processors[1]`: expected a processor index in 0..=3, found 4"
    );
    let twice = format!("{MINIMAL}{}", phase.replace("\"all\"", "[1, 1]"));
    assert_eq!(
        error_of(&twice),
        "line 9, column 18: field `phase[0].processors[1]`: processor 1 is listed twice"
    );
}

#[test]
fn event_errors_name_the_event() {
    let event = "[[event]]\nat_ms = 50\nkind = \"counter-reset\"\nprocessors = [0]\n";
    let unknown = format!("{MINIMAL}{}", event.replace("counter-reset", "explode"));
    assert!(
        error_of(&unknown).starts_with(
            "line 9, column 8: field `event[0].kind`: expected one of \"counter-reset\""
        )
    );
    let foreign = format!("{MINIMAL}{event}duration_ms = 5\n");
    assert_eq!(
        error_of(&foreign),
        "line 11, column 15: field `event[0].duration_ms`: is not a field of kind \"counter-reset\""
    );
    let late = format!("{MINIMAL}{}", event.replace("at_ms = 50", "at_ms = 500"));
    assert_eq!(
        error_of(&late),
        "line 8, column 9: field `event[0].at_ms`: expected an integer in 0..=100, found 500"
    );
    let single = format!(
        "{}{}",
        MINIMAL.replace("processors = 4", "processors = 1"),
        event.replace("counter-reset", "wrong-processor-read")
    );
    assert!(error_of(&single).contains("needs at least 2 processors"));
}

#[test]
fn other_errors() {
    assert_eq!(
        error_of(
            &MINIMAL
                .replace("sample", "x")
                .replace("duration_ms = 100", "duration_ms = 100\nsample_interval_ms = 0")
        ),
        "line 7, column 22: field `pofx.sample_interval_ms`: expected an integer in 1..=100, found 0"
    );
    assert!(
        error_of(&MINIMAL.replace("nominal_mhz = 2000", "nominal_mhz = 2050"))
            .contains("multiple of 100")
    );
    assert!(
        error_of(
            &MINIMAL.replace("[pofx]", "device_id_style = \"sb-pr\"\nprocessors2 = 1\n[pofx]")
        )
        .contains("unknown field")
    );
    assert_eq!(
        error_of("name = \"t\"\n"),
        "field `platform`: missing; expected a [platform] table"
    );
    let syntax = error_of("name = \"t\"\n[platform\n");
    assert!(syntax.starts_with("line 2, column "), "{syntax}");
    assert!(!syntax.contains('\n'));
    let big = MINIMAL
        .replace("processors = 4", "processors = 2048")
        .replace("duration_ms = 100", "duration_ms = 3600000");
    assert!(
        error_of(&big)
            .starts_with("line 5, column 1: field `pofx.sample_interval_ms`: expected at most")
    );
}

#[test]
fn device_id_styles() {
    assert_eq!(DeviceIdStyle::SbCpu.device_id(10, 16), "\\_SB.CPUA");
    assert_eq!(DeviceIdStyle::SbPr.device_id(10, 256), "\\_SB.PR0A");
    assert_eq!(DeviceIdStyle::SbC.device_id(2047, 2048), "\\_SB.C7FF");
    assert_eq!(DeviceIdStyle::SbSocket.device_id(65, 64), "\\_SB.SCK1.CP01");
    assert_eq!(DeviceIdStyle::SbSocketC.device_id(130, 120), "\\_SB.SCK1.C00A");
    let text = MINIMAL.replace("processors = 4", "processors = 300\ndevice_id_style = \"sb-pr\"");
    assert!(error_of(&text).starts_with(
        "line 4, column 19: field `platform.device_id_style`: style \"sb-pr\" names at most 256"
    ));
    // ACPI NameSegs have four characters: `\_SB.CPUF` is the last `CPU#` name.
    let seventeen = MINIMAL.replace("processors = 4", "processors = 17");
    let scenario = Scenario::from_toml_str(&seventeen).expect("valid");
    assert_eq!(scenario.platform.device_ids.kind(), "sb-c");
    assert_eq!(scenario.platform.device_ids.device_id(16), "\\_SB.C010");
    let sixteen = MINIMAL.replace("processors = 4", "processors = 16");
    let scenario = Scenario::from_toml_str(&sixteen).expect("valid");
    assert_eq!(scenario.platform.device_ids.device_id(15), "\\_SB.CPUF");
    let explicit =
        seventeen.replace("processors = 17", "processors = 17\ndevice_id_style = \"sb-cpu\"");
    assert!(error_of(&explicit).contains("style \"sb-cpu\" names at most 16 processors"));
}

fn platform_with(processors: u32, lines: &str) -> String {
    MINIMAL.replace("processors = 4", &format!("processors = {processors}\n{lines}"))
}

/// `sb-sck` is not tied to processor groups and does not end at 1024 processors: by default
/// it takes the fewest sockets of 256 (`CP00` … `CPFF`), `sockets` spreads the processors
/// evenly; `sb-sck-c` is `\_SB.SCK0.C000` (current Intel servers).
#[test]
fn socket_styles_number_processors_within_sockets() {
    let ids = |text: &str| {
        let scenario = Scenario::from_toml_str(text).expect("valid");
        (0..scenario.platform.processors)
            .map(|index| scenario.platform.device_ids.device_id(index))
            .collect::<Vec<_>>()
    };
    let big = ids(&platform_with(2048, "device_id_style = \"sb-sck\""));
    assert_eq!(big[255], "\\_SB.SCK0.CPFF");
    assert_eq!(big[256], "\\_SB.SCK1.CP00");
    assert_eq!(big[2047], "\\_SB.SCK7.CPFF");
    let two = ids(&platform_with(130, "device_id_style = \"sb-sck\"\nsockets = 2"));
    assert_eq!((two[64].as_str(), two[65].as_str()), ("\\_SB.SCK0.CP40", "\\_SB.SCK1.CP00"));
    let intel = ids(&platform_with(224, "device_id_style = \"sb-sck-c\"\nsockets = 2"));
    assert_eq!((intel[111].as_str(), intel[112].as_str()), ("\\_SB.SCK0.C06F", "\\_SB.SCK1.C000"));
    assert_eq!(
        ids(&platform_with(2048, "device_id_style = \"sb-sck-c\""))[2047],
        "\\_SB.SCK0.C7FF"
    );
    assert_eq!(
        error_of(&platform_with(2048, "device_id_style = \"sb-sck\"\nsockets = 4")),
        "line 5, column 11: field `platform.sockets`: style \"sb-sck\" names at most 256 processors per socket and 16 sockets: 2048 processors in 4 sockets are 512 per socket; expected sockets >= 8"
    );
    assert_eq!(
        error_of(&platform_with(64, "device_id_style = \"sb-c\"\nsockets = 2")),
        "line 5, column 11: field `platform.sockets`: is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template, found style \"sb-c\""
    );
    assert!(error_of(&platform_with(4, "device_id_style = \"sb-sck\"\nsockets = 5")).starts_with(
        "line 5, column 11: field `platform.sockets`: expected an integer in 1..=4, found 5"
    ));
}

/// A scenario may give its own ids: a list (one per processor) or a template with the index
/// in decimal or hexadecimal; both distinct, refused with a one-line error otherwise.
#[test]
#[allow(clippy::literal_string_with_formatting_args)] // Templates and their errors.
fn scenarios_give_their_own_device_ids() {
    let scenario = Scenario::from_toml_str(&platform_with(
        3,
        "device_ids = [\"\\\\_SB.NOD0.CPU0\", \"\\\\_SB.NOD0.CPU1\", \"\\\\_SB.NOD1.CPU0\"]",
    ))
    .expect("valid");
    assert_eq!(scenario.platform.device_ids.device_id(2), "\\_SB.NOD1.CPU0");
    let template = |processors: u32, template: &str, extra: &str| {
        let text =
            platform_with(processors, &format!("device_id_template = {template:?}\n{extra}"));
        Scenario::from_toml_str(&text).map(|scenario| {
            (0..processors)
                .map(|index| scenario.platform.device_ids.device_id(index))
                .collect::<Vec<_>>()
        })
    };
    let hex = template(300, "\\_SB.C{index:03X}", "").expect("valid");
    assert_eq!((hex[10].as_str(), hex[299].as_str()), ("\\_SB.C00A", "\\_SB.C12B"));
    let decimal = template(300, "\\_SB.P{index:03}", "").expect("valid");
    assert_eq!(decimal[299], "\\_SB.P299");
    let lower = template(17, "CPU{index:x}", "").expect("valid");
    assert_eq!(lower[15], "CPUf");
    let sockets =
        template(8, "\\_SB.S{socket}.C{socket_index:02d}{{x}}", "sockets = 2").expect("valid");
    assert_eq!(sockets[5], "\\_SB.S1.C01{x}");
    for (text, expected) in [
        (
            platform_with(2, "device_ids = [\"\\\\_SB.CPU0\"]"),
            "line 4, column 14: field `platform.device_ids`: expected 2..=2 strings, found 1",
        ),
        (
            platform_with(2, "device_ids = [\"\\\\_SB.CPU0\", \"\\\\_SB.CPU0\"]"),
            "line 4, column 29: field `platform.device_ids[1]`: processors 0 and 1 both get the id \"\\_SB.CPU0\"; expected one id per processor",
        ),
        (
            platform_with(2, "device_id_template = \"\\\\_SB.CPU\""),
            "line 4, column 22: field `platform.device_id_template`: expected text with {index}, {socket} or {socket_index}, each optionally :[0][width](d|x|X) (e.g. \"\\\\_SB.C{index:03X}\"), {{ and }} for braces; found no {index} or {socket_index}, so every processor would get the same id",
        ),
        (
            platform_with(2, "device_id_template = \"\\\\_SB.C{cpu}\""),
            "line 4, column 22: field `platform.device_id_template`: expected text with {index}, {socket} or {socket_index}, each optionally :[0][width](d|x|X) (e.g. \"\\\\_SB.C{index:03X}\"), {{ and }} for braces; found {cpu}",
        ),
        (
            platform_with(2, "device_id_style = \"sb-c\"\ndevice_ids = [\"a\", \"b\"]"),
            "line 5, column 14: field `platform.device_ids`: give the processors' ids one way: device_id_style is set already",
        ),
        (
            platform_with(2, "device_ids = [\"a\", \"b\"]\nsockets = 2"),
            "line 5, column 11: field `platform.sockets`: is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template",
        ),
    ] {
        assert_eq!(error_of(&text), expected);
    }
}

/// `other_devices` lists devices that are not processors: one that the PEP's patterns take
/// for a processor, or that repeats a processor's id, is refused, naming it and the pattern.
#[test]
fn other_devices_are_not_processors() {
    assert_eq!(
        error_of(&platform_with(4, "other_devices = [\"\\\\_SB.PCI0\", \"\\\\_SB.CPU5\"]")),
        "line 4, column 32: field `platform.other_devices[1]`: \"\\_SB.CPU5\" matches the PEP's processor pattern \"\\_SB.CPU#\" (config.device_id_patterns or the defaults), so the PEP would take it for a processor; list only devices that are not processors"
    );
    assert_eq!(
        error_of(&platform_with(
            4,
            "device_ids = [\"A\", \"B\", \"C\", \"D\"]\nother_devices = [\"C\"]"
        )),
        "line 5, column 18: field `platform.other_devices[0]`: \"C\" is processor 2's id"
    );
    let custom = format!(
        "{}[config]\ndevice_id_patterns = [\"\\\\_SB.NODE.*\"]\n",
        platform_with(4, r#"other_devices = ["\\_SB.PCI0", "\\_SB.NODE.X"]"#)
    );
    assert!(error_of(&custom).starts_with(
        "line 4, column 32: field `platform.other_devices[1]`: \"\\_SB.NODE.X\" matches the PEP's processor pattern \"\\_SB.NODE.*\""
    ));
    assert!(
        Scenario::from_toml_str(&platform_with(4, "other_devices = [\"\\\\_SB.PCI0\"]")).is_ok()
    );
}

/// Every style × sizes around every capacity: accepted ones name each processor with
/// 4-character segments, distinctly, all matched by the engine's default patterns; the
/// others are refused at parse time, naming the style and its capacity.
#[test]
fn every_device_id_style_names_what_the_default_patterns_accept() {
    let defaults = ppm_engine::device_id::DeviceIdPatterns::defaults();
    for (name, style) in DeviceIdStyle::CHOICES {
        for count in [1_u32, 16, 17, 64, 65, 256, 257, 1000, 1024, 1025, 2048] {
            let text = MINIMAL.replace(
                "processors = 4",
                &format!("processors = {count}\ndevice_id_style = \"{name}\""),
            );
            if !style.per_socket() && count > style.capacity() {
                let error = error_of(&text);
                let wanted = format!("style \"{name}\" names at most {}", style.capacity());
                assert!(error.contains(&wanted), "{name} × {count}: {error}");
                continue;
            }
            let scenario = Scenario::from_toml_str(&text)
                .unwrap_or_else(|error| panic!("{name} × {count} refused: {error}"));
            let mut seen = std::collections::BTreeSet::new();
            for index in 0..count {
                let id = scenario.platform.device_ids.device_id(index);
                assert!(
                    id.split('.').skip(1).all(|segment| segment.len() == 4),
                    "{name}: {id} has a segment that is not 4 characters"
                );
                let units: Vec<u16> = id.encode_utf16().collect();
                assert!(defaults.matches(&units), "{name}: {id} is not a processor to the PEP");
                assert!(seen.insert(id), "{name}: a name repeats at {index}");
            }
        }
    }
}

#[test]
fn fixed_pmc_fields() {
    let fixed = MINIMAL.replace("nominal_mhz", "counter_source = \"fixed-pmc\"\nnominal_mhz");
    let scenario = Scenario::from_toml_str(&fixed).expect("valid");
    assert_eq!(scenario.platform.pmc_width, Some(48));
    assert_eq!(scenario.expected_counter_count(), 1);
    let busy = fixed.replace("nominal_mhz", "pmu_busy = true\nnominal_mhz");
    assert_eq!(Scenario::from_toml_str(&busy).expect("valid").expected_counter_count(), 0);
    let aperf_only = format!("{fixed}[config]\ncounter_source = \"aperf-mperf\"\n");
    assert_eq!(Scenario::from_toml_str(&aperf_only).expect("valid").expected_counter_count(), 0);
    assert_eq!(
        error_of(&fixed.replace("nominal_mhz", "pmc_width = 31\nnominal_mhz")),
        "line 5, column 13: field `platform.pmc_width`: expected an integer in 32..=64, found 31"
    );
    // Intel CPUs with APERF/MPERF announce the PMU too, as real ones do: every
    // CounterSource takes the path it takes on hardware.
    let intel =
        Scenario::from_toml_str(&MINIMAL.replace("nominal_mhz", "pmc_width = 40\nnominal_mhz"))
            .expect("valid");
    assert_eq!(intel.platform.pmc_width, Some(40));
    assert_eq!(intel.expected_source(), ExpectedSource::AperfMperf);
    let with_config = |value: &str| {
        Scenario::from_toml_str(&format!("{MINIMAL}[config]\ncounter_source = \"{value}\"\n"))
            .expect("valid")
            .expected_source()
    };
    assert_eq!(with_config("fixed-pmc"), ExpectedSource::FixedPmc);
    assert_eq!(with_config("prefer-fixed-pmc"), ExpectedSource::FixedPmc);
    assert_eq!(with_config("aperf-mperf"), ExpectedSource::AperfMperf);
    assert_eq!(with_config("none"), ExpectedSource::None);
    let hidden = MINIMAL.replace("nominal_mhz", "pmu = false\nnominal_mhz");
    let hidden = Scenario::from_toml_str(&format!(
        "{hidden}[config]\ncounter_source = \"prefer-fixed-pmc\"\n"
    ))
    .expect("valid");
    assert_eq!(hidden.expected_source(), ExpectedSource::AperfMperf, "falls back to APERF");
    assert_eq!(
        error_of(&MINIMAL.replace("nominal_mhz", "pmu = false\npmc_width = 40\nnominal_mhz")),
        "line 5, column 13: field `platform.pmc_width`: is only valid with the architectural PMU (an Intel CPU, pmu = true)"
    );
    assert!(
        error_of(&MINIMAL.replace("nominal_mhz", "cpu = \"amd-cppc\"\npmu = true\nnominal_mhz"))
            .starts_with(
                "line 5, column 7: field `platform.pmu`: the architectural PMU is modelled for Intel CPUs only"
            )
    );
    assert!(
        error_of(&fixed.replace("nominal_mhz", "cpu = \"amd-cppc\"\nnominal_mhz")).starts_with(
            "line 4, column 18: field `platform.counter_source`: \"fixed-pmc\" needs an Intel CPU"
        )
    );
    let reprogram = "[[event]]\nat_ms = 50\nkind = \"pmu-reprogrammed\"\nprocessors = [0]\n";
    assert!(
        error_of(&format!("{MINIMAL}{reprogram}"))
            .starts_with("line 9, column 8: field `event[0].kind`: pmu-reprogrammed needs")
    );
    let narrow = fixed.replace("nominal_mhz", "pmc_width = 32\nnominal_mhz");
    assert_eq!(
        error_of(&format!("{narrow}{reprogram}values = [4294967296, 0]\n")),
        "line 13, column 10: field `event[0].values`: expected values below 2^32 (platform.pmc_width), found [4294967296, 0]"
    );
    assert_eq!(
        error_of(&format!("{narrow}{reprogram}values = [1]\n")),
        "line 13, column 10: field `event[0].values`: expected a list of two non-negative integers [core, reference], found [1]"
    );
    let reset = "[[event]]\nat_ms = 50\nkind = \"counter-reset\"\nprocessors = [0]\n";
    assert!(error_of(&format!("{fixed}{reset}")).contains("use pmu-reprogrammed"));
    // 32 bits at 4300 MHz wrap every 998 ms: a 1000 ms interval could hide a wrap.
    let slow = narrow.replace("duration_ms = 100", "duration_ms = 5000\nsample_interval_ms = 1000")
        + "[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 4300\nbusy_percent = 100\n";
    assert!(error_of(&slow).starts_with(
        "line 9, column 22: field `pofx.sample_interval_ms`: a 32-bit fixed counter at 4300 MHz wraps every 998 ms"
    ));
}

/// Every refusal names the line and column, the field and what was expected: errors serde
/// raises while reading (a table or an array of tables of the wrong type, an unknown key in a
/// `[[event]]`) as well as the schema's own checks.
#[test]
fn serde_refusals_name_the_line_and_the_field() {
    let top = "name = \"t\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\n";
    for (text, expected) in [
        (
            "name = \"t\"\nplatform = 5\n[pofx]\nduration_ms = 100\n".to_owned(),
            "line 2, column 12: field `platform`: expected a table, found 5",
        ),
        (
            format!("phase = 5\n{MINIMAL}"),
            "line 1, column 9: field `phase`: expected an array of tables ([[phase]]), found 5",
        ),
        (
            format!("phase = [1]\n{MINIMAL}"),
            "line 1, column 10: field `phase[0]`: expected a table ([[phase]]), found 1",
        ),
        (
            format!(
                "{MINIMAL}[[event]]\nat_ms = 5\nkind = \"counter-reset\"\nprocessors = [0]\ncolour = 1\n"
            ),
            "line 11, column 1: field `event[0].colour`: unknown field; expected one of `at_ms`, `kind`, `processors`, `duration_ms`, `on_processor`, `values`, `state`, `duration_us`, `period_ms`",
        ),
        (
            format!("{top}[platform.perf]\nhighest = \"x\"\n[pofx]\nduration_ms = 100\n"),
            "line 6, column 11: field `platform.perf.highest`: expected an integer in 0..=255, found the string \"x\"",
        ),
        (
            format!("{MINIMAL}[install]\npending = true\nnow = true\n"),
            "line 9, column 1: field `install.now`: unknown field; expected one of `pending`",
        ),
        (
            format!("{MINIMAL}[install]\npending = 1\n"),
            "line 8, column 11: field `install.pending`: expected true or false, found 1",
        ),
        (
            format!("{MINIMAL}[registry]\nNominalMhz = 99999999999999999999\n"),
            "line 8, column 14: field `registry.NominalMhz`: a REG_DWORD is 0..=4294967295, found 99999999999999999999",
        ),
        (
            format!(
                "{MINIMAL}[registry]\nNominalMhz = {{ type = \"REG_DWORD\", bytes = [1], x = 1 }}\n"
            ),
            "line 8, column 53: field `registry.NominalMhz.x`: unknown field; expected one of `type`, `bytes`",
        ),
        (
            format!("{MINIMAL}[[fault]]\nstep = \"processor-count\"\nvalue = \"x\"\n"),
            "line 9, column 9: field `fault[0].value`: not used by step \"processor-count\"",
        ),
        (
            MINIMAL.replace("nominal_mhz = 2000", "nominal_mhz = 2000\ncpu = \"x, expected y\""),
            "line 5, column 7: field `platform.cpu`: expected one of \"intel-hwp\", \"amd-cppc\", \"intel-legacy\", \"arm64\", found the string \"x, expected y\"",
        ),
        (
            MINIMAL.replace("duration_ms = 100", "duration_ms = 1979-05-27T07:32:00Z"),
            "line 6, column 15: field `pofx.duration_ms`: expected an integer in 1..=3600000, found the datetime 1979-05-27T07:32:00Z",
        ),
        (
            MINIMAL.replace("processors = 4", &format!("processors = {}", "9".repeat(42))),
            "line 3, column 14: field `platform.processors`: expected an integer TOML can hold (64 bits), found 999999999999999999999999999999999999999999",
        ),
    ] {
        assert_eq!(error_of(&text), expected, "{text}");
    }
}

/// An integer beyond TOML's 64 bits is named by its field, with the field's bounds; a name
/// of spaces names nothing.
#[test]
fn oversized_integers_and_blank_names_are_refused_by_field() {
    assert_eq!(
        error_of(&MINIMAL.replace("processors = 4", "processors = 99999999999999999999")),
        "line 3, column 14: field `platform.processors`: expected an integer in 1..=2048, found 99999999999999999999"
    );
    let phase = "[[phase]]\nstart_ms = 0\nprocessors = [1, 99999999999999999999]\nfrequency_mhz = 3000\nbusy_percent = 100\n";
    assert_eq!(
        error_of(&format!("{MINIMAL}{phase}")),
        "line 9, column 18: field `phase[0].processors[1]`: expected a processor index in 0..=3, found 99999999999999999999"
    );
    assert_eq!(
        error_of(&MINIMAL.replace("name = \"t\"", "name = \"   \"")),
        "line 1, column 8: field `name`: expected a name with a visible character, found 3 spaces"
    );
    assert!(error_of(&MINIMAL.replace("name = \"t\"", "name = \" \\t \"")).starts_with(
        "line 1, column 8: field `name`: expected a non-empty name of at most 64 printable characters"
    ));
    assert_eq!(
        Scenario::from_toml_str(&MINIMAL.replace("name = \"t\"", "name = \" a \"")).map(|s| s.name),
        Ok(" a ".to_owned())
    );
}
