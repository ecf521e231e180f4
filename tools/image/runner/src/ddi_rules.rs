//! The rules Driver Verifier holds a driver's kernel and KMDF calls to, one row per routine the
//! image may call: the highest IRQL its documentation allows, whether and how it can fail (what
//! the low-resources simulation makes it return), and the page that says so. The runner's
//! verifier (`verifier.rs`) checks every import and every KMDF call against this table; an
//! import with no row is itself a finding (docs/verifier.md).

/// `PASSIVE_LEVEL`.
pub const PASSIVE_LEVEL: u8 = 0;
/// `APC_LEVEL`.
pub const APC_LEVEL: u8 = 1;
/// `DISPATCH_LEVEL`.
pub const DISPATCH_LEVEL: u8 = 2;
/// `HIGH_LEVEL`.
pub const HIGH_LEVEL: u8 = 15;
/// The highest device IRQL (DIRQL) on x64: device interrupts lie below `CLOCK_LEVEL` (13).
pub const DIRQL_MAX: u8 = 12;

/// Bug check 0xC4's Parameter 1 for a kernel API called at the wrong IRQL (the debugger's 0xC4
/// page).
pub const VERIFIER_WRONG_IRQL: u64 = 0xE5;
/// Bug check 0xC4's Parameter 1 for a nonpaged allocation above its IRQL.
pub const VERIFIER_NONPAGED_ALLOCATION_IRQL: u64 = 0x02;
/// Bug check 0xC4's Parameter 1 for a paged allocation above its IRQL.
pub const VERIFIER_PAGED_ALLOCATION_IRQL: u64 = 0x01;
/// Bug check 0xC4's Parameter 1 for a free above its IRQL.
pub const VERIFIER_FREE_IRQL: u64 = 0x11;

/// `STATUS_INSUFFICIENT_RESOURCES`.
pub const STATUS_INSUFFICIENT_RESOURCES: u64 = 0xC000_009A;
/// wdm.h's `POOL_FLAG_PAGED` (paged pool: IRQL <= `APC_LEVEL`).
pub const POOL_FLAG_PAGED: u64 = 0x100;

/// Where the DDI reference pages live (the rows' `doc` begin with it).
macro_rules! ddi {
    ($page:literal) => {
        concat!("https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/", $page)
    };
}

/// Where `WdfVersionBind` and `WdfVersionUnbind` are declared (undocumented routines).
const FXLDR_H: &str = "https://github.com/microsoft/Windows-Driver-Frameworks \
                       src/framework/shared/inc/private/common/fxldr.h";

/// The name of an IRQL as the bug check texts give it.
#[must_use]
pub fn irql_name(irql: u8) -> String {
    match irql {
        PASSIVE_LEVEL => "PASSIVE_LEVEL".to_owned(),
        APC_LEVEL => "APC_LEVEL".to_owned(),
        DISPATCH_LEVEL => "DISPATCH_LEVEL".to_owned(),
        HIGH_LEVEL.. => "HIGH_LEVEL".to_owned(),
        _ => format!("IRQL {irql}"),
    }
}

/// What a failed call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `STATUS_INSUFFICIENT_RESOURCES` (`"status"`).
    Status,
    /// A NULL pointer (`"null"`).
    Null,
}

impl Failure {
    /// Its name: `"status"` or `"null"`.
    #[must_use]
    #[cfg(test)]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Null => "null",
        }
    }
}

/// One routine's rule.
///
/// `max_irql`: the highest IRQL a call is allowed at; `failure`: what a failed call returns
/// (`None`: the routine cannot fail); `doc`: where both are documented; `verifier_code`: bug
/// check 0xC4's Parameter 1 for a call above `max_irql`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The highest IRQL a call is allowed at.
    pub max_irql: u8,
    /// Where the rule is documented.
    pub doc: &'static str,
    /// What a failed call returns; `None`: the routine cannot fail.
    pub failure: Option<Failure>,
    /// Bug check 0xC4's Parameter 1 for a call above `max_irql`.
    pub verifier_code: u64,
}

impl Rule {
    /// A routine that cannot fail, allowed up to `max_irql`, documented at `doc`.
    const fn new(max_irql: u8, doc: &'static str) -> Self {
        Self { max_irql, doc, failure: None, verifier_code: VERIFIER_WRONG_IRQL }
    }

    /// The same routine, failing with `failure`.
    const fn failing(self, failure: Failure) -> Self {
        Self { failure: Some(failure), ..self }
    }

    /// The same routine, with `verifier_code` for a call above its IRQL.
    const fn code(self, verifier_code: u64) -> Self {
        Self { verifier_code, ..self }
    }
}

/// Imports (ntoskrnl.exe, HAL.dll, WDFLDR.SYS) and KMDF functions (called through the KMDF
/// function table), by name, grouped by the module that exports them.
pub const RULES: &[(&str, Rule)] = &[
    // ntoskrnl.exe
    ("DbgPrintEx", Rule::new(DIRQL_MAX, ddi!("wdm/nf-wdm-dbgprintex"))),
    (
        "ExAllocatePool2",
        Rule::new(DISPATCH_LEVEL, ddi!("wdm/nf-wdm-exallocatepool2"))
            .failing(Failure::Null)
            .code(VERIFIER_NONPAGED_ALLOCATION_IRQL),
    ),
    (
        "ExFreePool",
        Rule::new(DISPATCH_LEVEL, ddi!("wdm/nf-wdm-exfreepool")).code(VERIFIER_FREE_IRQL),
    ),
    ("KeBugCheckEx", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kebugcheckex"))),
    (
        "KeGetCurrentProcessorNumberEx",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kegetcurrentprocessornumberex")),
    ),
    (
        "KeGetProcessorNumberFromIndex",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kegetprocessornumberfromindex")),
    ),
    (
        "KeQueryActiveProcessorCountEx",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kequeryactiveprocessorcountex")),
    ),
    (
        "KeQueryMaximumProcessorCountEx",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kequerymaximumprocessorcountex")),
    ),
    (
        "KeRevertToUserGroupAffinityThread",
        Rule::new(DISPATCH_LEVEL, ddi!("wdm/nf-wdm-kereverttousergroupaffinitythread")),
    ),
    (
        "KeSetSystemGroupAffinityThread",
        Rule::new(DISPATCH_LEVEL, ddi!("wdm/nf-wdm-kesetsystemgroupaffinitythread")),
    ),
    (
        "PoFxRegisterPluginEx",
        Rule::new(PASSIVE_LEVEL, ddi!("pepfx/nf-pepfx-pofxregisterpluginex"))
            .failing(Failure::Status),
    ),
    (
        "EtwRegister",
        Rule::new(PASSIVE_LEVEL, ddi!("wdm/nf-wdm-etwregister")).failing(Failure::Status),
    ),
    ("EtwUnregister", Rule::new(PASSIVE_LEVEL, ddi!("wdm/nf-wdm-etwunregister"))),
    ("EtwWriteTransfer", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-etwwritetransfer"))),
    ("EtwSetInformation", Rule::new(PASSIVE_LEVEL, ddi!("wdm/nf-wdm-etwsetinformation"))),
    ("memcpy", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-rtlcopymemory"))),
    ("memset", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-rtlfillmemory"))),
    ("memmove", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-rtlmovememory"))),
    ("memcmp", Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-rtlequalmemory"))),
    // Not documented with an IRQL: the exception dispatcher calls it at the IRQL of the
    // exception; the image never calls it itself.
    (
        "__C_specific_handler",
        Rule::new(
            HIGH_LEVEL,
            "https://learn.microsoft.com/windows/win32/devnotes/--c-specific-handler2",
        ),
    ),
    // HAL.dll
    (
        "HalAllocateHardwareCounters",
        Rule::new(PASSIVE_LEVEL, ddi!("ntddk/nf-ntddk-halallocatehardwarecounters"))
            .failing(Failure::Status),
    ),
    (
        "HalFreeHardwareCounters",
        Rule::new(PASSIVE_LEVEL, ddi!("ntddk/nf-ntddk-halfreehardwarecounters")),
    ),
    (
        "KeQueryPerformanceCounter",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kequeryperformancecounter")),
    ),
    (
        "KeStallExecutionProcessor",
        Rule::new(HIGH_LEVEL, ddi!("wdm/nf-wdm-kestallexecutionprocessor")),
    ),
    // WDFLDR.SYS (called by the KMDF stub's FxDriverEntry, before DriverEntry). Undocumented:
    // fxldr.h places both in a pageable section (so at most APC_LEVEL) and the loader writes
    // the registry, so PASSIVE_LEVEL.
    ("WdfVersionBind", Rule::new(PASSIVE_LEVEL, FXLDR_H).failing(Failure::Status)),
    ("WdfVersionUnbind", Rule::new(PASSIVE_LEVEL, FXLDR_H)),
    // KMDF
    (
        "WdfDriverCreate",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfdriver/nf-wdfdriver-wdfdrivercreate"))
            .failing(Failure::Status),
    ),
    (
        "WdfDriverOpenParametersRegistryKey",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfdriver/nf-wdfdriver-wdfdriveropenparametersregistrykey"))
            .failing(Failure::Status),
    ),
    (
        "WdfDriverOpenPersistentStateRegistryKey",
        Rule::new(
            PASSIVE_LEVEL,
            ddi!("wdfdriver/nf-wdfdriver-wdfdriveropenpersistentstateregistrykey"),
        )
        .failing(Failure::Status),
    ),
    (
        "WdfRegistryOpenKey",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistryopenkey"))
            .failing(Failure::Status),
    ),
    (
        "WdfRegistryCreateKey",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistrycreatekey"))
            .failing(Failure::Status),
    ),
    (
        "WdfRegistryQueryValue",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistryqueryvalue"))
            .failing(Failure::Status),
    ),
    (
        "WdfRegistryAssignULong",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistryassignulong"))
            .failing(Failure::Status),
    ),
    (
        "WdfRegistryAssignValue",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistryassignvalue"))
            .failing(Failure::Status),
    ),
    (
        "WdfRegistryClose",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfregistry/nf-wdfregistry-wdfregistryclose")),
    ),
    (
        "WdfDeviceCreate",
        Rule::new(PASSIVE_LEVEL, ddi!("wdfdevice/nf-wdfdevice-wdfdevicecreate"))
            .failing(Failure::Status),
    ),
    (
        "WdfDeviceSetStaticStopRemove",
        Rule::new(DISPATCH_LEVEL, ddi!("wdfdevice/nf-wdfdevice-wdfdevicesetstaticstopremove")),
    ),
    (
        "WdfDeviceSetDeviceState",
        Rule::new(DISPATCH_LEVEL, ddi!("wdfdevice/nf-wdfdevice-wdfdevicesetdevicestate")),
    ),
];

/// The rule of `name`, with the name as [`RULES`] spells it.
#[must_use]
pub fn rule(name: &str) -> Option<(&'static str, Rule)> {
    RULES.iter().find(|(ruled, _)| *ruled == name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the functions the `.def` files of `tools/image/imports` list (lines
    /// `    NAME ; DOC`).
    fn imported_names() -> Vec<String> {
        let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("imports");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&directory).expect("tools/image/imports") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_none_or(|extension| extension != "def") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a .def file");
            for line in text.lines() {
                // An indented name, then `;`: `^\s+(\w+)\s*;`.
                let rest = line.trim_start();
                if rest.len() == line.len() {
                    continue;
                }
                let end = rest
                    .find(|character: char| !(character.is_alphanumeric() || character == '_'))
                    .unwrap_or(rest.len());
                if end > 0 && rest[end..].trim_start().starts_with(';') {
                    names.push(rest[..end].to_owned());
                }
            }
        }
        names
    }

    #[test]
    fn every_documented_import_has_a_rule_citing_its_page() {
        let names = imported_names();
        assert!(names.len() > 20, "{names:?}");
        let missing: Vec<&String> = names.iter().filter(|name| rule(name).is_none()).collect();
        assert_eq!(missing, Vec::<&String>::new());
        for (name, rule) in RULES {
            assert!(rule.doc.starts_with("https://"), "{name}");
            assert!(matches!(rule.failure.map(Failure::as_str), None | Some("status" | "null")));
        }
    }

    #[test]
    fn the_table_has_38_distinct_rules() {
        assert_eq!(RULES.len(), 38);
        let mut names: Vec<&str> = RULES.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len(), "a name ruled twice");
        let failing = RULES.iter().filter(|(_, rule)| rule.failure.is_some()).count();
        assert_eq!(failing, 14);
        assert_eq!(
            rule("ExAllocatePool2").map(|(_, rule)| rule),
            Some(Rule {
                max_irql: DISPATCH_LEVEL,
                doc: "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/nf-wdm-exallocatepool2",
                failure: Some(Failure::Null),
                verifier_code: VERIFIER_NONPAGED_ALLOCATION_IRQL,
            })
        );
        assert_eq!(
            rule("WdfVersionBind").map(|(_, rule)| rule.doc),
            Some(
                "https://github.com/microsoft/Windows-Driver-Frameworks src/framework/shared/inc/private/common/fxldr.h"
            )
        );
        assert_eq!(rule("ExFreePool").map(|(_, rule)| rule.verifier_code), Some(0x11));
    }

    #[test]
    fn irqls_are_named_as_the_bug_check_texts_name_them() {
        assert_eq!(irql_name(0), "PASSIVE_LEVEL");
        assert_eq!(irql_name(1), "APC_LEVEL");
        assert_eq!(irql_name(2), "DISPATCH_LEVEL");
        assert_eq!(irql_name(12), "IRQL 12");
        assert_eq!(irql_name(15), "HIGH_LEVEL");
        assert_eq!(irql_name(200), "HIGH_LEVEL");
    }
}
