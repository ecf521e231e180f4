//! The Windows files agree with the code: the INF's service and `Parameters` values, the
//! PowerShell scripts' names for them, and the registry names the driver reads.

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
