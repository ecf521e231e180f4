//! The Windows files agree with the code: the INF's service and `Parameters` values, the
//! PowerShell scripts' names for them, and the registry names the driver reads.

use std::fmt::Write as _;

use ppm_engine::driver::registry::names;

const INF: &str = include_str!("../inf/ppm_pep.inx");
const COMMON_PS1: &str = include_str!("../scripts/PpmPep.Common.ps1");

/// The value of `key = "…"` (INF strings) or `$script:key = '…'` (PowerShell).
fn quoted_value<'a>(text: &'a str, key: &str) -> &'a str {
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("{key} not found"));
    let value = line.split_once('=').unwrap_or_else(|| panic!("{key}: no '='")).1.trim();
    value.trim_matches(|c| c == '"' || c == '\'')
}

#[test]
fn the_scripts_name_the_service_as_the_inf_installs_it() {
    let service = INF
        .lines()
        .find_map(|line| line.trim().strip_prefix("AddService = "))
        .and_then(|rest| rest.split(',').next())
        .expect("an AddService line")
        .trim();
    assert_eq!(quoted_value(COMMON_PS1, "$script:PpmPepService ="), service);
    // SCM event 7000 carries the display name: Test-PpmPep.ps1 matches it too.
    assert_eq!(
        quoted_value(COMMON_PS1, "$script:PpmPepServiceDisplayName ="),
        quoted_value(INF, "PpmPep.ServiceDesc")
    );
}

#[test]
fn every_parameters_value_the_inf_writes_is_one_the_driver_reads() {
    let written: Vec<&str> = INF
        .lines()
        .filter_map(|line| line.trim().strip_prefix("HKR, Parameters, "))
        .map(|rest| rest.split(',').next().expect("a value name").trim())
        .collect();
    assert!(written.contains(&names::SKIP_REGISTRATION), "{written:?}");
    for name in &written {
        assert!(names::ALL.contains(name), "the INF writes {name}, which the driver never reads");
    }
}

#[test]
fn the_inf_points_at_files_that_exist() {
    // Every page the INF's comments name exists (tests/readme.rs checks the sections).
    assert!(INF.contains("docs\\registry.md"));
    for page in ["docs\\registry.md", "docs\\windows.md", "README.md"] {
        if INF.contains(page) {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(page.replace('\\', "/"));
            assert!(path.is_file(), "the INF names {page}, which does not exist");
        }
    }
}

const VERIFIER_PS1: &str = include_str!("../scripts/Set-PpmPepVerifier.ps1");
const TRACE_RS: &str = include_str!("../src/trace.rs");
const WPR_PROFILE: &str = include_str!("../scripts/PpmPep.wprp");
const WINDOWS_MD: &str = include_str!("../docs/windows.md");

/// The integers of the first `[int[]] $RuleClasses = @(…)` or `[ValidateSet(…)]` after `marker`.
fn integers_after(text: &str, marker: &str) -> Vec<u32> {
    let rest = &text[text.find(marker).unwrap_or_else(|| panic!("{marker} not found"))..];
    let inner = &rest[rest.find('(').expect("(") + 1..rest.find(')').expect(")")];
    inner.split(',').map(|n| n.trim().parse().unwrap_or_else(|_| panic!("{n:?}"))).collect()
}

#[test]
fn verifier_defaults_are_documented_classes_with_35() {
    let documented = integers_after(VERIFIER_PS1, "[ValidateSet(1,");
    let defaults = integers_after(VERIFIER_PS1, "[int[]] $RuleClasses = @");
    // Microsoft's standard classes, 20 and 35 (DDI compliance checking, additional IRQL).
    for class in [1, 2, 4, 5, 6, 8, 9, 12, 18, 34, 20, 35] {
        assert!(defaults.contains(&class), "default rule classes {defaults:?} lack {class}");
    }
    for class in &defaults {
        assert!(documented.contains(class), "default class {class} is not in the ValidateSet");
    }
    // Isolation: 33 requires 36; both are offered.
    assert!(documented.contains(&33) && documented.contains(&36), "{documented:?}");
    assert!(!defaults.contains(&33), "33 needs 36 (DIF): it is opt-in (-Isolation)");
}

/// SHA-1 (FIPS 180-4), for the provider GUID's name hash.
#[allow(
    clippy::many_single_char_names,
    reason = "the names FIPS 180-4 gives the working variables"
)]
fn sha1(message: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut data = message.to_vec();
    data.push(0x80);
    while data.len() % 64 != 56 {
        data.push(0);
    }
    data.extend_from_slice(&(u64::try_from(message.len()).expect("len") * 8).to_be_bytes());
    for block in data.chunks(64) {
        let mut w = [0_u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes(word.try_into().expect("4 bytes"));
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, &word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t =
                a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(word);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (state, value) in h.iter_mut().zip([a, b, c, d, e]) {
            *state = state.wrapping_add(value);
        }
    }
    let mut digest = [0_u8; 20];
    for (chunk, word) in digest.chunks_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    digest
}

/// `TraceLogging`'s (and `EventSource`'s) provider GUID for `name`: SHA-1 over a fixed namespace
/// and the upper-cased name in UTF-16BE, version nibble 5, formatted as a GUID.
fn provider_guid(name: &str) -> String {
    let mut input = vec![
        0x48, 0x2C, 0x2D, 0xB2, 0xC3, 0x90, 0x47, 0xC8, 0x87, 0xF8, 0x1A, 0x15, 0xBF, 0xC1, 0x30,
        0xFB,
    ];
    for unit in name.to_uppercase().encode_utf16() {
        input.extend_from_slice(&unit.to_be_bytes());
    }
    let mut hash = sha1(&input);
    hash[7] = (hash[7] & 0x0F) | 0x50;
    let mut guid = format!(
        "{:08x}-{:04x}-{:04x}-{:02x}{:02x}-",
        u32::from_le_bytes([hash[0], hash[1], hash[2], hash[3]]),
        u16::from_le_bytes([hash[4], hash[5]]),
        u16::from_le_bytes([hash[6], hash[7]]),
        hash[8],
        hash[9],
    );
    for byte in &hash[10..16] {
        write!(guid, "{byte:02x}").expect("writing to a String");
    }
    guid
}

#[test]
fn the_published_provider_guid_is_the_name_hash_of_the_provider_the_driver_defines() {
    // The tracelogging crate's own documented example.
    assert_eq!(provider_guid("MyProvider"), "b3864c38-4273-58c5-545b-8b3608343471");
    let name = TRACE_RS
        .split("define_provider!(PROVIDER, \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("define_provider!(PROVIDER, \"…\") in src/trace.rs");
    let guid = provider_guid(name);
    assert_eq!(name, "PpmPep");
    for (file, text) in [
        ("src/trace.rs", TRACE_RS),
        ("scripts/PpmPep.wprp", WPR_PROFILE),
        ("docs/windows.md", WINDOWS_MD),
    ] {
        assert!(text.contains(&guid), "{file} does not publish {guid}");
    }
    assert!(
        WPR_PROFILE
            .contains(&format!("<EventProvider Id=\"EventProvider_PpmPep\" Name=\"{guid}\""))
    );
}

#[test]
fn nothing_but_readme_runs_the_renamed_scripts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.to_path_buf()];
    let mut offenders = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "corpus" | "artifacts") {
                    stack.push(path);
                }
            } else if name != "README.md" && name != "windows_files.rs" {
                let text = std::fs::read(&path).map(|b| String::from_utf8_lossy(&b).into_owned());
                // An invocation (a path to the script); "was Prepare-TestVm.ps1" notes are fine.
                let old = [
                    "\\Prepare-TestVm",
                    "/Prepare-TestVm",
                    "\\Collect-PpmPepLogs",
                    "/Collect-PpmPepLogs",
                ];
                if text.is_ok_and(|t| old.iter().any(|old| t.contains(old))) {
                    offenders.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "old script paths (now Initialize-PpmPepTestVm, Export-PpmPepLogs) in {offenders:?}"
    );
}
