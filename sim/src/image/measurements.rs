//! What only the image can show, from the runner's `report` and the image's own files (its
//! linker map, the static stack figures `scripts/build-driver-image.sh` wrote beside it): the
//! deepest stack of each entry point against the static bound, the KMDF table entries called,
//! the structured exceptions dispatched, and which of the image's functions ran. Each becomes
//! an `image.*` check of the run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ppm_image_file::{MapSymbol, read_map};
use serde::Serialize;
use serde_json::{Map, Value};

use super::runner::Crash;
use super::symbols::readable;
use crate::checks::CheckResult;

/// The KMDF 1.31 function count (`WdfFunctionTableNumEntries`), read at compile time from the
/// KMDF declarations the driver is built against (`tools/windows-check/include/kmdf-1.31.h`),
/// which `scripts/build-driver-image.sh` and the runner (its `commands.rs`) read too.
pub const KMDF_FUNCTION_COUNT: u64 = enumerator(
    include_bytes!("../../../tools/windows-check/include/kmdf-1.31.h"),
    b"WdfFunctionTableNumEntries = ",
);

/// The decimal value that follows the first `prefix` (a C enumerator's `NAME = `) in `text`;
/// a compile error when there is none.
const fn enumerator(text: &[u8], prefix: &[u8]) -> u64 {
    let mut start = 0;
    while start + prefix.len() <= text.len() {
        let mut matched = 0;
        while matched < prefix.len() && text[start + matched] == prefix[matched] {
            matched += 1;
        }
        if matched == prefix.len() {
            let mut at = start + prefix.len();
            let mut value = 0;
            while at < text.len() && text[at].is_ascii_digit() {
                value = value * 10 + (text[at] - b'0') as u64;
                at += 1;
            }
            assert!(at > start + prefix.len(), "the enumerator has no decimal value");
            return value;
        }
        start += 1;
    }
    panic!("kmdf-1.31.h declares no WdfFunctionTableNumEntries");
}

/// The KMDF functions `src/` calls: every other table entry called is a wrong index.
pub const KMDF_FUNCTIONS_CALLED: [&str; 12] = [
    "WdfDeviceCreate",
    "WdfDeviceSetDeviceState",
    "WdfDeviceSetStaticStopRemove",
    "WdfDriverCreate",
    "WdfDriverOpenParametersRegistryKey",
    "WdfDriverOpenPersistentStateRegistryKey",
    "WdfRegistryAssignULong",
    "WdfRegistryAssignValue",
    "WdfRegistryClose",
    "WdfRegistryCreateKey",
    "WdfRegistryOpenKey",
    "WdfRegistryQueryValue",
];

/// The functions of the driver's own object that no scenario runs, each with its reason.
///
/// README's "The image backend" lists them. With LTO, the map names one object
/// for all Rust code; these three are `wdk-sys`'s `#[no_mangle]` stand-ins.
pub const NOT_EXECUTED: [(&str, &str); 3] = [
    (
        "__CxxFrameHandler3",
        "wdk-sys's stand-in for the C++ exception personality routine the msvc target \
         references; a panic = \"abort\" kernel driver never unwinds",
    ),
    ("__CxxFrameHandler4", "as __CxxFrameHandler3"),
    ("__GSHandlerCheck_EH4", "as __CxxFrameHandler3 (the /GS variant)"),
];

/// One entry point's stack: measured against the static figure.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct StackFigure {
    /// The entry point, as `stack.txt` names it.
    pub entry: String,
    /// Calls measured.
    pub calls: u64,
    /// The deepest stack one call used, bytes (the runner's low-water mark).
    pub measured_bytes: u64,
    /// The static bound from the image's unwind data and call graph (`None`: not in
    /// `stack.txt`).
    pub static_bytes: Option<u64>,
}

/// The functions of one crate (or C object) and how many ran.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Coverage {
    /// The crate (`ppm_pep` is `src/`, `ppm_engine` the engine, `C` the C shim and stub).
    pub unit: String,
    /// The image's functions in it.
    pub functions: usize,
    /// How many executed.
    pub executed: usize,
}

/// What the image backend measured in one run.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ImageReport {
    /// The image run.
    pub image: String,
    /// The bugcheck that stopped it, if any.
    pub bugcheck: Option<String>,
    /// Per entry point.
    pub stack: Vec<StackFigure>,
    /// KMDF table entries called: (index, name, calls).
    pub kmdf: Vec<(u64, String, u64)>,
    /// Exceptions dispatched, and how many an `__except` took.
    pub exceptions: (usize, usize),
    /// Machine faults the emulated processors raised for the image (each a #GP it must catch).
    pub faults_raised: usize,
    /// Function coverage per crate.
    pub coverage: Vec<Coverage>,
    /// The functions of the driver's own code that never ran in this run.
    pub not_executed: Vec<String>,
    /// The image-relative addresses of the functions that ran (for a suite's coverage).
    #[serde(skip)]
    pub executed_rvas: BTreeSet<u64>,
    /// ETW events written, by name.
    pub etw_events: BTreeMap<String, usize>,
    /// The `image.*` checks (also in the run's checks).
    #[serde(skip)]
    pub checks: Vec<CheckResult>,
    /// What the runner's Driver Verifier rules saw (`--verifier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier: Option<super::verifier::RunnerVerdict>,
}

/// One function of the map: its RVA, its symbol, its crate.
pub type MapFunction = (u64, String, String);

/// The image's functions from its lld-link map ([`read_map`]): (RVA, symbol, crate) for every
/// symbol of the code section (the map's section 1) with its object file, import thunks and
/// labels left out; the first symbol (by name) of each address.
///
/// # Errors
/// When the map cannot be read or is not an lld-link map.
pub fn map_functions(map: &Path) -> Result<Vec<MapFunction>, String> {
    let mut functions = Vec::new();
    for MapSymbol { name, rva, section, object } in read_map(map)? {
        // `$ehgcr_…` labels mark __except continuations inside a function, not functions.
        if section != 1 || object.is_empty() || name.starts_with(".weak.") || name.starts_with('$')
        {
            continue;
        }
        // Import thunks are the kernel's, not the image's functions.
        if object.contains(".dll") || object.contains(".exe") || object.contains(".SYS") {
            continue;
        }
        let unit = unit_of(&name, &object);
        functions.push((rva, name, unit));
    }
    functions.sort();
    functions.dedup_by_key(|function| function.0);
    Ok(functions)
}

/// The crate of a Rust v0 symbol (its first crate root, `C<disambiguator>_<len><name>`... as
/// `Cs..._<len><name>`), or `C` for the C objects, or the object's crate for other names.
fn unit_of(name: &str, object: &str) -> String {
    if let Some(mangled) = name.strip_prefix("_R") {
        if let Some(at) = mangled.find("Cs") {
            let rest = &mangled[at + 2..];
            if let Some(underscore) = rest.find('_') {
                let after = &rest[underscore + 1..];
                let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(length) = digits.parse::<usize>()
                    && let Some(crate_name) = after.get(digits.len()..digits.len() + length)
                {
                    return crate_name.to_owned();
                }
            }
        }
        return "rust".to_owned();
    }
    if Path::new(object).extension().is_some_and(|extension| extension.eq_ignore_ascii_case("obj"))
    {
        return "C".to_owned();
    }
    // `DriverEntry` (an export name) lives in the driver crate's object.
    object.split('.').next().unwrap_or(object).to_owned()
}

/// The static figures of `stack.txt` beside the image: entry → bytes.
fn static_stack(image: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(image.with_file_name("stack.txt")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("stack ")?;
            let (entry, figure) = rest.split_once(": ")?;
            let bytes = figure.split_whitespace().next()?.parse().ok()?;
            Some((entry.to_owned(), bytes))
        })
        .collect()
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The entry names the emulator calls by address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryNames {
    /// `FxDriverEntry`'s address.
    pub entry: u64,
    /// `AcceptDeviceNotification`'s.
    pub dpm: Option<u64>,
    /// `AcceptProcessorNotification`'s.
    pub ppm: Option<u64>,
}

impl EntryNames {
    fn name(&self, address: u64) -> Option<&'static str> {
        if address == self.entry {
            Some("FxDriverEntry")
        } else if Some(address) == self.dpm {
            Some("AcceptDeviceNotification")
        } else if Some(address) == self.ppm {
            Some("AcceptProcessorNotification")
        } else {
            None
        }
    }
}

/// What a run of the image gives the judge.
pub struct RunFacts<'a> {
    /// Where the runner mapped the image.
    pub image_base: u64,
    /// The runner's `report`.
    pub report: &'a Map<String, Value>,
    /// The entry points' addresses.
    pub entries: &'a EntryNames,
    /// The bugcheck, if any.
    pub crash: Option<&'a Crash>,
    /// The machine faults raised for the image.
    pub faults_raised: usize,
    /// The ETW events written, by name.
    pub etw: &'a [String],
    /// Whether the scenario nests notifications.
    pub nested: bool,
    /// The devices PoFx offered at its start-up.
    pub devices_offered: usize,
}

/// Judges the runner's `report` of a run of `image`.
///
/// # Errors
/// When the report or the map is malformed.
pub fn judge(image: &Path, facts: &RunFacts<'_>) -> Result<ImageReport, String> {
    let RunFacts {
        image_base,
        report,
        entries,
        crash,
        faults_raised,
        etw,
        nested,
        devices_offered,
    } = *facts;
    let functions = map_functions(&image.with_extension("map"))?;
    let statics = static_stack(image);
    let empty = Vec::new();
    let list = |key: &str| report.get(key).and_then(Value::as_array).unwrap_or(&empty);
    let mut checks = Vec::new();

    checks.push(crash.map_or_else(
        || CheckResult::new("image.bugcheck", true, "the image ran to the end without a bugcheck"),
        |crash| CheckResult::new("image.bugcheck", false, crash.to_string()),
    ));

    let mut stack = Vec::new();
    for entry in list("stack") {
        let Some(name) = entries.name(number(entry, "entry")) else { continue };
        stack.push(StackFigure {
            entry: name.to_owned(),
            calls: number(entry, "calls"),
            measured_bytes: number(entry, "deepest_bytes"),
            static_bytes: statics.get(name).copied(),
        });
    }
    checks.push(stack_check(&stack, nested));

    let kmdf: Vec<(u64, String, u64)> = list("kmdf")
        .iter()
        .map(|entry| {
            let name = entry.get("name").and_then(Value::as_str).unwrap_or("?").to_owned();
            (number(entry, "index"), name, number(entry, "calls"))
        })
        .collect();
    let declared = report.get("kmdf_function_count").and_then(Value::as_u64);
    checks.push(kmdf_check(&kmdf, declared));

    let seh = list("seh");
    let handled = seh
        .iter()
        .filter(|entry| entry.get("handled").and_then(Value::as_bool) == Some(true))
        .count();
    checks.push(if handled == faults_raised && seh.len() == handled {
        CheckResult::new("image.seh", true, format!("{faults_raised} machine faults, each caught by the image's own __except"))
    } else {
        CheckResult::new("image.seh", false, format!("{faults_raised} machine faults raised, {} exceptions dispatched, {handled} handled", seh.len()))
    });

    let executed_rvas: BTreeSet<u64> = report
        .get("functions")
        .and_then(|functions| functions.get("executed"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_u64)
                .filter_map(|address| address.checked_sub(image_base))
                .collect()
        })
        .unwrap_or_default();
    let (coverage, not_executed) = coverage(&functions, &executed_rvas);

    let mut etw_events: BTreeMap<String, usize> = BTreeMap::new();
    for name in etw {
        *etw_events.entry(name.clone()).or_default() += 1;
    }
    checks.push(etw_check(&etw_events, devices_offered, crash.is_some()));
    Ok(ImageReport {
        image: image.display().to_string(),
        bugcheck: crash.map(ToString::to_string),
        stack,
        kmdf,
        exceptions: (seh.len(), handled),
        faults_raised,
        coverage,
        not_executed,
        executed_rvas,
        etw_events,
        checks,
        verifier: None,
    })
}

/// `DriverEntry`'s budget: half the 24 KiB x64 kernel stack (`tools/image/runner/src/stack.rs`).
pub const DRIVER_ENTRY_BUDGET: u64 = 12 * 1024;

/// `image.kmdf_table`: the image's `WDF_BIND_INFO` declares KMDF 1.31's function count, and
/// every table entry it called is one `src/` calls (a wrong index calls another function).
fn kmdf_check(kmdf: &[(u64, String, u64)], declared: Option<u64>) -> CheckResult {
    let strangers: Vec<String> = kmdf
        .iter()
        .filter(|(_, name, _)| !KMDF_FUNCTIONS_CALLED.contains(&name.as_str()))
        .map(|(index, name, _)| format!("{name} (index {index})"))
        .collect();
    if declared != Some(KMDF_FUNCTION_COUNT) {
        CheckResult::new(
            "image.kmdf_table",
            false,
            declared.map_or_else(
                || "the runner found no WDF_BIND_INFO function count".to_owned(),
                |declared| {
                    format!(
                        "WDF_BIND_INFO declares {declared} functions, KMDF 1.31 has \
                         {KMDF_FUNCTION_COUNT}"
                    )
                },
            ),
        )
    } else if !strangers.is_empty() {
        CheckResult::new(
            "image.kmdf_table",
            false,
            format!("table entries src/ never calls: {}", strangers.join(", ")),
        )
    } else {
        CheckResult::new(
            "image.kmdf_table",
            true,
            format!("{} KMDF functions called, each at its KMDF 1.31 index", kmdf.len()),
        )
    }
}

/// `image.etw`: with a trace session enabling the `PpmPep` provider (the emulated kernel's),
/// `DriverEntry` writes `DriverEntryResult` once and every device PoFx offered at its start-up gets a
/// `DevicePrepared` event (docs/windows.md's event table).
fn etw_check(
    events: &BTreeMap<String, usize>,
    devices_offered: usize,
    crashed: bool,
) -> CheckResult {
    let count = |name: &str| events.get(name).copied().unwrap_or(0);
    if crashed {
        return CheckResult::new("image.etw", true, "not applicable: the image bugchecked")
            .into_not_applicable();
    }
    let mut failures = Vec::new();
    if count("DriverEntryResult") != 1 {
        failures.push(format!(
            "DriverEntryResult written {} times, not once",
            count("DriverEntryResult")
        ));
    }
    if count("DevicePrepared") < devices_offered {
        failures.push(format!(
            "{} DevicePrepared events for {devices_offered} devices offered at boot",
            count("DevicePrepared")
        ));
    }
    if failures.is_empty() {
        let all: Vec<String> =
            events.iter().map(|(name, count)| format!("{name} {count}")).collect();
        CheckResult::new("image.etw", true, format!("events written: {}", all.join(", ")))
    } else {
        CheckResult::new("image.etw", false, failures.join("; "))
    }
}

/// The bytes the runner leaves between an interrupted call's stack pointer and a nested
/// call's frame (docs/image-backend.md), standing for the interrupt's own frame.
pub const NESTED_GAP_BYTES: u64 = 256;

/// `image.stack`: each callback's deepest measured stack within its static figure (the
/// static call graph of a callback is complete: the image check fails any callback from which
/// an indirect call is reachable), plus, with nested notifications, the deepest callback's
/// figure once more and the runner's gap (a notification nested in a read runs on the same
/// stack, below it, one level deep); `FxDriverEntry`'s within its 12 KiB budget, its static figure reported beside
/// (it does not follow `DriverEntry`'s indirect calls: KMDF's table, `core::fmt`'s
/// formatters, so the measured stack may exceed it).
fn stack_check(stack: &[StackFigure], nested: bool) -> CheckResult {
    let callback_figure = |name: &str| {
        stack.iter().find(|figure| figure.entry == name).and_then(|figure| figure.static_bytes)
    };
    let deepest_callback = ["AcceptDeviceNotification", "AcceptProcessorNotification"]
        .into_iter()
        .filter_map(callback_figure)
        .max()
        .unwrap_or(0);
    let mut failures = Vec::new();
    let mut figures = Vec::new();
    for figure in stack {
        let Some(static_bytes) = figure.static_bytes else {
            failures.push(format!("{} has no static figure in stack.txt", figure.entry));
            continue;
        };
        let (bound, what) = if figure.entry == "FxDriverEntry" {
            (DRIVER_ENTRY_BUDGET, "budget")
        } else if nested {
            (
                static_bytes + NESTED_GAP_BYTES + deepest_callback,
                "static figure plus the interrupt's gap and a nested callback's",
            )
        } else {
            (static_bytes, "static figure")
        };
        figures.push(format!(
            "{} {} bytes (static {static_bytes}, bound {bound})",
            figure.entry, figure.measured_bytes
        ));
        if figure.measured_bytes > bound {
            failures.push(format!(
                "{} used {} bytes, over its {what} of {bound}",
                figure.entry, figure.measured_bytes
            ));
        }
    }
    if stack.is_empty() {
        failures.push("the runner measured no entry point".to_owned());
    }
    if failures.is_empty() {
        CheckResult::new(
            "image.stack",
            true,
            format!("deepest stack per entry: {}", figures.join(", ")),
        )
    } else {
        CheckResult::new("image.stack", false, failures.join("; "))
    }
}

/// What `image.coverage` calls the driver's own code: the map's `ppm_pep` and `C` units.
pub const OWN_CODE: &str =
    "src/ and its C objects, the SEH shim and the KMDF stub; the engine and libraries not required";

/// Coverage per crate of `functions` (from [`map_functions`]) given the functions that ran,
/// with the driver's own functions that never ran (less the documented [`NOT_EXECUTED`]).
fn coverage(
    functions: &[(u64, String, String)],
    executed: &BTreeSet<u64>,
) -> (Vec<Coverage>, Vec<String>) {
    let mut units: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut not_executed = Vec::new();
    for (rva, name, unit) in functions {
        let slot = units.entry(unit.clone()).or_default();
        slot.0 += 1;
        if executed.contains(rva) {
            slot.1 += 1;
        } else if (unit == "ppm_pep" || unit == "C")
            && !NOT_EXECUTED.iter().any(|(known, _)| known == name)
        {
            not_executed.push(readable(name));
        }
    }
    let coverage = units
        .into_iter()
        .map(|(unit, (functions, executed))| Coverage { unit, functions, executed })
        .collect();
    (coverage, not_executed)
}

/// `image.coverage` over a suite: every function of the driver's own code ran in some scenario,
/// or is listed in [`NOT_EXECUTED`] with its reason.
///
/// "Own" is `OWN_CODE`: the `ppm_pep` crate's object (`src/`) and the C objects (the SEH
/// shim, the KMDF stub); the engine's and the libraries' functions are reported per crate and
/// not required (LTO inlines most of the engine into the entry points, and the engine's own
/// tests cover it on the host).
///
/// # Errors
/// When the map cannot be read.
pub fn coverage_check(
    image: &Path,
    executed: &BTreeSet<u64>,
) -> Result<(Vec<Coverage>, CheckResult), String> {
    let functions = map_functions(&image.with_extension("map"))?;
    let (coverage, not_executed) = coverage(&functions, executed);
    let own = coverage.iter().filter(|unit| unit.unit == "ppm_pep" || unit.unit == "C");
    let (total, ran) =
        own.fold((0, 0), |(total, ran), unit| (total + unit.functions, ran + unit.executed));
    let check = if not_executed.is_empty() {
        CheckResult::new(
            "image.coverage",
            true,
            format!(
                "{ran} of the driver's {total} own functions ({OWN_CODE}) ran; the other {} are listed in README with the reason",
                total - ran
            ),
        )
    } else {
        CheckResult::new(
            "image.coverage",
            false,
            format!(
                "never ran, of the driver's own functions ({OWN_CODE}): {}",
                not_executed.join(", ")
            ),
        )
    };
    Ok((coverage, check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kmdf_detail_prints_plain_numbers() {
        assert_eq!(
            kmdf_check(&[], Some(0)).detail,
            format!("WDF_BIND_INFO declares 0 functions, KMDF 1.31 has {KMDF_FUNCTION_COUNT}")
        );
        assert_eq!(
            kmdf_check(&[], None).detail,
            "the runner found no WDF_BIND_INFO function count"
        );
    }

    #[test]
    fn a_v0_symbol_names_its_crate() {
        let name = "_RNvNtCs80f4lHhQpFG_7ppm_pep6driver17evt_driver_unload";
        assert_eq!(unit_of(name, "x.o"), "ppm_pep");
        assert_eq!(unit_of("_RNvNtCsxxOYU56vYG_4core3fmt5write", "x.o"), "core");
        assert_eq!(unit_of("FxDriverEntry", "kmdf_stub.obj"), "C");
        assert_eq!(unit_of("DriverEntry", "ppm_pep.ppm_pep.5d3a-cgu.6.rcgu.o"), "ppm_pep");
    }
}
