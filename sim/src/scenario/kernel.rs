//! The kernel a scenario's `DriverEntry` meets ([`KernelSpec`]).
//!
//! The raw `Parameters` values an administrator set (`[registry]`), whether the package was installed in this session
//! (`[install]`), and the kernel services that fail (`[[fault]]`, one [`ServiceFault`] each).
//!
//! ```toml
//! [registry]                              # raw values of the service's Parameters key
//! NominalMhz = 2000                       # an integer: REG_DWORD (0..=0xFFFFFFFF)
//! ProcessorDeviceIdPatterns = ["\\_SB.C###"]  # a list of strings: REG_MULTI_SZ
//! CounterSource = "2"                     # a string: REG_SZ (wrong for a DWORD: ignored)
//! SkipRegistration = { type = "REG_BINARY", bytes = [1, 0] }  # any type, raw bytes
//! [[fault]]
//! step = "register-plugin"                # which kernel service fails, see `ServiceFault`
//! status = "STATUS_INVALID_PEP_INFO_VERSION"  # a known name or an NTSTATUS error number
//! ```
//!
//! `[config]` settings are written to the same `Parameters` key as the values they stand for
//! (the driver reads nothing else); a value may be set in one place only.

use ppm_engine::abi::{
    NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_KERNEL_INFO_VERSION,
    STATUS_INVALID_PARAMETER, STATUS_INVALID_PEP_INFO_VERSION, STATUS_NOT_SUPPORTED,
    STATUS_UNSUCCESSFUL,
};
use ppm_engine::config::{
    COUNTER_SOURCE_CHOICES, FEEDBACK_COUNTER_CHOICES, PMU_RESERVATION_CHOICES, code_of_value,
};
use ppm_engine::device_id::DeviceIdPatterns;
use ppm_engine::driver::PoolBlock;
use ppm_engine::driver::registry::{
    Lookup, REG_DWORD, REG_MULTI_SZ, REG_SZ, VALUE_BUFFER_BYTES, ValueSource, names, read_config,
};

use super::error::shown;
use super::raw::{self, Found, at, fail, quoted_list, required_text, required_u32};
use super::{ConfigSpec, ScenarioError};

/// `STATUS_ACCESS_DENIED` (`0xC0000022`).
pub const STATUS_ACCESS_DENIED: NTSTATUS = 0xC000_0022_u32.cast_signed();
/// `STATUS_OBJECT_NAME_NOT_FOUND` (`0xC0000034`).
pub const STATUS_OBJECT_NAME_NOT_FOUND: NTSTATUS = 0xC000_0034_u32.cast_signed();

/// The most `[registry]` values and `[[fault]]` entries a scenario may hold.
pub const MAX_REGISTRY_VALUES: usize = 64;
/// The most bytes of one raw `[registry]` value (the driver reads at most 2048).
pub const MAX_VALUE_BYTES: usize = 65_536;
/// The most `[[fault]]` entries.
pub const MAX_FAULTS: usize = 16;

/// The `NTSTATUS` names a scenario may use.
const STATUS_NAMES: [(&str, NTSTATUS); 9] = [
    ("STATUS_UNSUCCESSFUL", STATUS_UNSUCCESSFUL),
    ("STATUS_INVALID_PARAMETER", STATUS_INVALID_PARAMETER),
    ("STATUS_INSUFFICIENT_RESOURCES", STATUS_INSUFFICIENT_RESOURCES),
    ("STATUS_NOT_SUPPORTED", STATUS_NOT_SUPPORTED),
    ("STATUS_ACCESS_DENIED", STATUS_ACCESS_DENIED),
    ("STATUS_OBJECT_NAME_NOT_FOUND", STATUS_OBJECT_NAME_NOT_FOUND),
    ("STATUS_INVALID_KERNEL_INFO_VERSION", STATUS_INVALID_KERNEL_INFO_VERSION),
    ("STATUS_INVALID_PEP_INFO_VERSION", STATUS_INVALID_PEP_INFO_VERSION),
    ("STATUS_DEVICE_NOT_READY", 0xC000_00A3_u32.cast_signed()),
];

/// One raw registry value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryValue {
    /// `REG_*` type.
    pub value_type: u32,
    /// The data, exactly as stored.
    pub data: Vec<u8>,
}

impl RegistryValue {
    /// A `REG_DWORD`.
    #[must_use]
    pub fn dword(value: u32) -> Self {
        Self { value_type: REG_DWORD, data: value.to_le_bytes().to_vec() }
    }

    /// A `REG_SZ` (UTF-16LE with its NUL).
    #[must_use]
    pub fn string(text: &str) -> Self {
        let data = text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect();
        Self { value_type: REG_SZ, data }
    }

    /// A `REG_MULTI_SZ` (each string and its NUL, then the empty string).
    #[must_use]
    pub fn multi_string(strings: &[String]) -> Self {
        let data = strings
            .iter()
            .flat_map(|text| text.encode_utf16().chain([0]))
            .chain([0])
            .flat_map(u16::to_le_bytes)
            .collect();
        Self { value_type: REG_MULTI_SZ, data }
    }
}

/// Which kernel service a `[[fault]]` makes fail (`step = "…"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceFault {
    /// `open-parameters`: `WdfDriverOpenParametersRegistryKey` fails with `status`.
    OpenParameters {
        /// The status (default `STATUS_ACCESS_DENIED`).
        status: NTSTATUS,
    },
    /// `read-value`: `WdfRegistryQueryValue` of `value` fails with `status`.
    ReadValue {
        /// The value name.
        value: String,
        /// The status (default `STATUS_UNSUCCESSFUL`).
        status: NTSTATUS,
    },
    /// `processor-count`: `KeQueryMaximumProcessorCountEx` returns 0.
    ProcessorCount,
    /// `allocate`: `ExAllocatePool2` returns NULL for `block`.
    Allocate {
        /// The block.
        block: PoolBlock,
    },
    /// `hal-allocate-counters`: `HalAllocateHardwareCounters` fails with `status`.
    HalAllocateCounters {
        /// The status (default `STATUS_INSUFFICIENT_RESOURCES`).
        status: NTSTATUS,
    },
    /// `enable-fixed-counters`: the PMU control MSRs fault on `processor` while the driver
    /// enables the fixed counters.
    EnableFixedCounters {
        /// The processor.
        processor: u32,
    },
    /// `register-plugin`: `PoFxRegisterPluginEx` fails with `status`.
    RegisterPlugin {
        /// The status (default `STATUS_INVALID_PEP_INFO_VERSION`).
        status: NTSTATUS,
    },
    /// `create-state-key`: creating the `Boot` key fails with `status`.
    CreateStateKey {
        /// The status (default `STATUS_ACCESS_DENIED`).
        status: NTSTATUS,
    },
}

impl ServiceFault {
    /// The `step` names, in the order `DriverEntry` reaches them.
    pub const STEPS: [&'static str; 8] = [
        "open-parameters",
        "read-value",
        "processor-count",
        "allocate",
        "hal-allocate-counters",
        "enable-fixed-counters",
        "register-plugin",
        "create-state-key",
    ];

    /// The fault's `step` name.
    #[must_use]
    pub const fn step(&self) -> &'static str {
        match self {
            Self::OpenParameters { .. } => "open-parameters",
            Self::ReadValue { .. } => "read-value",
            Self::ProcessorCount => "processor-count",
            Self::Allocate { .. } => "allocate",
            Self::HalAllocateCounters { .. } => "hal-allocate-counters",
            Self::EnableFixedCounters { .. } => "enable-fixed-counters",
            Self::RegisterPlugin { .. } => "register-plugin",
            Self::CreateStateKey { .. } => "create-state-key",
        }
    }
}

/// The kernel `DriverEntry` meets: `[registry]`, `[install]` and `[[fault]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSpec {
    /// The raw `Parameters` values, `[config]`'s translated ones included, by name (sorted,
    /// case-insensitively unique, as registry value names are).
    pub registry: Vec<(String, RegistryValue)>,
    /// The injected faults, in file order.
    pub faults: Vec<ServiceFault>,
    /// `[install] pending`: the package was installed in this session (a volatile
    /// `Parameters\InstallPending` key exists), so `DriverEntry` runs mid-session.
    pub install_pending: bool,
}

impl KernelSpec {
    /// The first fault of `step`, if any.
    #[must_use]
    pub fn fault(&self, step: &str) -> Option<&ServiceFault> {
        self.faults.iter().find(|fault| fault.step() == step)
    }

    /// Whether a fault stops the driver from setting up the fixed counters when it tries: the
    /// HAL refuses the reservation, the saved-control block cannot be allocated, or a PMU
    /// control MSR faults on a processor.
    #[must_use]
    pub fn pmu_setup_fails(&self) -> bool {
        self.faults.iter().any(|fault| {
            matches!(
                fault,
                ServiceFault::HalAllocateCounters { .. }
                    | ServiceFault::EnableFixedCounters { .. }
                    | ServiceFault::Allocate { block: PoolBlock::SavedPmuControl }
            )
        })
    }

    /// The raw value `name` (registry names are case-insensitive).
    #[must_use]
    pub fn value(&self, name: &str) -> Option<&RegistryValue> {
        self.registry
            .iter()
            .find(|(other, _)| other.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }
}

/// The configuration the driver reads from the scenario's `Parameters` key.
///
/// The `[config]` settings, raw `[registry]` values the engine's registry rules accept, the
/// defaults where a
/// value is bad, absent or its read faults, and only the defaults when the key cannot be
/// opened (the same rules the driver applies on Windows; `tests/registry_values.rs` pins them down).
#[must_use]
pub fn effective_config(kernel: &KernelSpec) -> ConfigSpec {
    /// The scenario's values as a `Parameters` key.
    struct Values<'a> {
        kernel: &'a KernelSpec,
    }
    impl ValueSource for Values<'_> {
        fn read(&mut self, name: &'static str) -> Lookup<'_> {
            let faulted = self.kernel.faults.iter().find_map(|fault| match fault {
                ServiceFault::ReadValue { value, status } if value.eq_ignore_ascii_case(name) => {
                    Some(*status)
                }
                _ => None,
            });
            if let Some(status) = faulted {
                return Lookup::Failed { status };
            }
            match self.kernel.value(name) {
                None => Lookup::Absent,
                Some(value) if value.data.len() > VALUE_BUFFER_BYTES => {
                    Lookup::TooLarge { needed: u32::try_from(value.data.len()).unwrap_or(u32::MAX) }
                }
                Some(value) => Lookup::Found { value_type: value.value_type, data: &value.data },
            }
        }
    }
    if kernel.fault("open-parameters").is_some() {
        return ConfigSpec::default();
    }
    let config = read_config(&mut Values { kernel }, |_| {});
    let device_id_patterns =
        (config.device_id_patterns != DeviceIdPatterns::defaults()).then(|| {
            config
                .device_id_patterns
                .iter()
                .map(|pattern| String::from_utf16_lossy(pattern.as_units()))
                .collect()
        });
    ConfigSpec {
        feedback_counters: config.feedback_counters,
        counter_source: config.counter_source,
        performance_counter_view: config.performance_counter_view,
        nominal_mhz: config.nominal_mhz,
        perf_capabilities: config.perf_capabilities,
        device_id_patterns,
        transition_latency_100ns: config.transition_latency_100ns,
        pmu_reservation: config.pmu_reservation,
    }
}

/// The `[config]` keys and the `Parameters` value each one sets.
const CONFIG_VALUES: [(&str, &str); 8] = [
    ("feedback_counters", names::FEEDBACK_COUNTERS),
    ("counter_source", names::COUNTER_SOURCE),
    ("performance_counter_view", names::PERFORMANCE_COUNTER_VIEW),
    ("nominal_mhz", names::NOMINAL_MHZ),
    ("perf_capabilities", names::HIGHEST_PERFORMANCE),
    ("device_id_patterns", names::PROCESSOR_DEVICE_ID_PATTERNS),
    ("transition_latency_100ns", names::TRANSITION_LATENCY_100NS),
    ("pmu_reservation", names::PMU_RESERVATION),
];

/// The `Parameters` values `[config]` stands for: only the keys the file sets.
fn config_values(config: &ConfigSpec, file: Option<&raw::Config>) -> Vec<(String, RegistryValue)> {
    let set = |key: &str| file.is_some_and(|file| file.sets(key));
    let mut values = Vec::new();
    let mut push = |name: &str, value| values.push((name.to_owned(), value));
    // Every value is in its table (the reader took it from there).
    let code = |code: Option<u32>| RegistryValue::dword(code.unwrap_or(u32::MAX));
    if set("feedback_counters") {
        let number = code_of_value(&FEEDBACK_COUNTER_CHOICES, config.feedback_counters);
        push(names::FEEDBACK_COUNTERS, code(number));
    }
    if set("counter_source") {
        let number = code_of_value(&COUNTER_SOURCE_CHOICES, config.counter_source);
        push(names::COUNTER_SOURCE, code(number));
    }
    if set("performance_counter_view") {
        let view = u32::from(config.performance_counter_view);
        push(names::PERFORMANCE_COUNTER_VIEW, RegistryValue::dword(view));
    }
    if let Some(mhz) = config.nominal_mhz {
        push(names::NOMINAL_MHZ, RegistryValue::dword(mhz));
    }
    if let Some(caps) = config.perf_capabilities {
        push(names::HIGHEST_PERFORMANCE, RegistryValue::dword(caps.highest));
        push(names::NOMINAL_PERFORMANCE, RegistryValue::dword(caps.nominal));
        push(names::LOWEST_NONLINEAR_PERFORMANCE, RegistryValue::dword(caps.lowest_nonlinear));
        push(names::LOWEST_PERFORMANCE, RegistryValue::dword(caps.lowest));
    }
    if let Some(patterns) = &config.device_id_patterns {
        push(names::PROCESSOR_DEVICE_ID_PATTERNS, RegistryValue::multi_string(patterns));
    }
    if set("transition_latency_100ns") {
        push(
            names::TRANSITION_LATENCY_100NS,
            RegistryValue::dword(config.transition_latency_100ns),
        );
    }
    if set("pmu_reservation") {
        let number = code_of_value(&PMU_RESERVATION_CHOICES, config.pmu_reservation);
        push(names::PMU_RESERVATION, code(number));
    }
    values
}

/// Reads `[registry]` and `[[fault]]` (`faults`: the array's tables), merging `[config]`.
pub(super) fn read_kernel(
    registry: Option<&Found>,
    faults: &[raw::Fault],
    config: &ConfigSpec,
    config_file: Option<&raw::Config>,
    processors: u32,
) -> Result<KernelSpec, ScenarioError> {
    let mut values = config_values(config, config_file);
    let from_config = values.len();
    if let Some(registry) = registry {
        let Found::Table(table) = registry else {
            return Err(ScenarioError::field(
                "registry".to_owned(),
                format!("expected a table, found {}", registry.describe()),
            ));
        };
        if table.len() > MAX_REGISTRY_VALUES {
            return Err(ScenarioError::field(
                "registry".to_owned(),
                format!("{} values; at most {MAX_REGISTRY_VALUES}", table.len()),
            ));
        }
        for (name, value) in table {
            let field = format!("registry.{name}");
            if name.is_empty() || name.len() > 63 || !name.is_ascii() || name.contains('\\') {
                return Err(ScenarioError::field(
                    field,
                    "expected a value name of 1..=63 ASCII characters without '\\'".to_owned(),
                ));
            }
            if let Some(index) =
                values.iter().position(|(other, _)| other.eq_ignore_ascii_case(name))
            {
                if index >= from_config {
                    return Err(ScenarioError::field(
                        field,
                        format!(
                            "the same value as registry.{} (registry value names are \
                             case-insensitive)",
                            values[index].0
                        ),
                    ));
                }
                let key = CONFIG_VALUES
                    .iter()
                    .find(|(_, value)| value.eq_ignore_ascii_case(&values[index].0))
                    .map_or("config", |(key, _)| key);
                return Err(ScenarioError::field(
                    field,
                    format!(
                        "{} is also set by config.{key}; set each Parameters value in one place",
                        values[index].0
                    ),
                ));
            }
            values.push((name.clone(), read_value(&field, value)?));
        }
    }
    values.sort_by_key(|(name, _)| name.to_ascii_lowercase());
    if faults.len() > MAX_FAULTS {
        return Err(ScenarioError::field(
            "fault".to_owned(),
            format!("{} entries; at most {MAX_FAULTS}", faults.len()),
        ));
    }
    let mut service_faults: Vec<ServiceFault> = Vec::new();
    for (index, fault) in faults.iter().enumerate() {
        let fault = read_fault(&format!("fault[{index}]"), fault, processors)?;
        if service_faults.iter().any(|other| other.step() == fault.step())
            && !matches!(fault, ServiceFault::ReadValue { .. } | ServiceFault::Allocate { .. })
        {
            return Err(ScenarioError::field(
                format!("fault[{index}].step"),
                format!("a second \"{}\" fault; each step fails once", fault.step()),
            ));
        }
        service_faults.push(fault);
    }
    Ok(KernelSpec { registry: values, faults: service_faults, install_pending: false })
}

/// One `[registry]` value: an integer, a string, a list of strings, or `{ type, … }`.
fn read_value(field: &str, value: &Found) -> Result<RegistryValue, ScenarioError> {
    let error = |message: String| ScenarioError::field(field.to_owned(), message);
    match value {
        Found::Integer(number) => u32::try_from(*number)
            .map(RegistryValue::dword)
            .map_err(|_| error(format!("a REG_DWORD is 0..=4294967295, found {number}"))),
        Found::Text(text) => check_text(field, text).map(|()| RegistryValue::string(text)),
        Found::List(items) => {
            let mut strings = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let Found::Text(text) = item else {
                    return Err(ScenarioError::field(
                        format!("{field}[{index}]"),
                        format!("a REG_MULTI_SZ is a list of strings, found {}", item.describe()),
                    ));
                };
                check_text(&format!("{field}[{index}]"), text)?;
                strings.push(text.clone());
            }
            let value = RegistryValue::multi_string(&strings);
            if value.data.len() > MAX_VALUE_BYTES {
                return Err(error(format!("more than {MAX_VALUE_BYTES} bytes")));
            }
            Ok(value)
        }
        Found::Table(table) => read_raw_value(field, table),
        other => Err(error(format!(
            "expected an integer (REG_DWORD), a string (REG_SZ), a list of strings \
             (REG_MULTI_SZ) or {{ type = \"REG_…\", bytes = […] }}, found {}",
            other.describe()
        ))),
    }
}

fn check_text(field: &str, text: &str) -> Result<(), ScenarioError> {
    // Stored as UTF-16: the limit counts its code units, not UTF-8 bytes.
    if text.contains('\0') || text.encode_utf16().count() > MAX_VALUE_BYTES / 2 {
        return Err(ScenarioError::field(
            field.to_owned(),
            format!("expected text without NUL of at most {} characters", MAX_VALUE_BYTES / 2),
        ));
    }
    Ok(())
}

/// `{ type = "REG_BINARY" | number, bytes = [..] }`.
fn read_raw_value(field: &str, table: &[(String, Found)]) -> Result<RegistryValue, ScenarioError> {
    if let Some((key, _)) = table.iter().find(|(key, _)| key != "type" && key != "bytes") {
        return Err(fail(field, key, "unknown field; expected one of `type`, `bytes`"));
    }
    let get = |key: &str| table.iter().find(|(name, _)| name == key).map(|(_, value)| value);
    let types = [
        ("REG_NONE", 0),
        ("REG_SZ", REG_SZ),
        ("REG_EXPAND_SZ", 2),
        ("REG_BINARY", 3),
        ("REG_DWORD", REG_DWORD),
        ("REG_DWORD_BIG_ENDIAN", 5),
        ("REG_MULTI_SZ", REG_MULTI_SZ),
        ("REG_QWORD", 11),
    ];
    let value_type = match get("type") {
        Some(number @ Found::Integer(_)) => {
            required_u32(&at(field, "type"), Some(number), 0..=u32::MAX)?
        }
        Some(Found::Text(name)) => types
            .iter()
            .find(|(type_name, _)| type_name == name)
            .map(|(_, number)| *number)
            .ok_or_else(|| {
                let names: Vec<&str> = types.iter().map(|(name, _)| *name).collect();
                fail(
                    field,
                    "type",
                    &format!(
                        "expected one of {}, found {}",
                        quoted_list(&names),
                        Found::Text(name.clone()).describe()
                    ),
                )
            })?,
        Some(other) => {
            return Err(fail(
                field,
                "type",
                &format!("expected a REG_* name or a number, found {}", other.describe()),
            ));
        }
        None => return Err(fail(field, "type", "missing; expected a REG_* name or a number")),
    };
    let bytes = match get("bytes") {
        None => return Err(fail(field, "bytes", "missing; expected a list of bytes 0..=255")),
        Some(Found::List(items)) => {
            if items.len() > MAX_VALUE_BYTES {
                return Err(fail(field, "bytes", &format!("more than {MAX_VALUE_BYTES} bytes")));
            }
            items
                .iter()
                .map(|item| match item {
                    Found::Integer(number) => u8::try_from(*number).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| fail(field, "bytes", "expected a list of bytes 0..=255"))?
        }
        Some(other) => {
            return Err(fail(
                field,
                "bytes",
                &format!("expected a list of bytes 0..=255, found {}", other.describe()),
            ));
        }
    };
    Ok(RegistryValue { value_type, data: bytes })
}

/// One `[[fault]]`.
fn read_fault(
    path: &str,
    fault: &raw::Fault,
    processors: u32,
) -> Result<ServiceFault, ScenarioError> {
    let step = required_text(&at(path, "step"), fault.step.as_ref())?;
    let allowed: &[&str] = match step {
        "open-parameters" | "hal-allocate-counters" | "register-plugin" | "create-state-key" => {
            &["step", "status"]
        }
        "read-value" => &["step", "status", "value"],
        "processor-count" => &["step"],
        "allocate" => &["step", "block"],
        "enable-fixed-counters" => &["step", "processor"],
        other => {
            return Err(fail(
                path,
                "step",
                &format!(
                    "expected one of {}, found \"{}\"",
                    quoted_list(&ServiceFault::STEPS),
                    shown(other)
                ),
            ));
        }
    };
    let set = [
        ("status", fault.status.is_some()),
        ("value", fault.value.is_some()),
        ("block", fault.block.is_some()),
        ("processor", fault.processor.is_some()),
    ];
    if let Some((key, _)) = set.iter().find(|(key, set)| *set && !allowed.contains(key)) {
        return Err(fail(path, key, &format!("not used by step \"{step}\"")));
    }
    let status = |default| read_status(path, fault.status.as_ref(), default);
    Ok(match step {
        "open-parameters" => ServiceFault::OpenParameters { status: status(STATUS_ACCESS_DENIED)? },
        "read-value" => ServiceFault::ReadValue {
            value: required_text(&at(path, "value"), fault.value.as_ref())?.to_owned(),
            status: status(STATUS_UNSUCCESSFUL)?,
        },
        "processor-count" => ServiceFault::ProcessorCount,
        "allocate" => ServiceFault::Allocate {
            block: match fault.block {
                None => {
                    return Err(fail(
                        path,
                        "block",
                        "missing; expected \"processor-table\" or \"saved-pmu-control\"",
                    ));
                }
                Some(block) => block.0,
            },
        },
        "hal-allocate-counters" => {
            ServiceFault::HalAllocateCounters { status: status(STATUS_INSUFFICIENT_RESOURCES)? }
        }
        "enable-fixed-counters" => ServiceFault::EnableFixedCounters {
            processor: required_u32(
                &at(path, "processor"),
                fault.processor.as_ref(),
                0..=processors - 1,
            )?,
        },
        "register-plugin" => {
            ServiceFault::RegisterPlugin { status: status(STATUS_INVALID_PEP_INFO_VERSION)? }
        }
        _ => ServiceFault::CreateStateKey { status: status(STATUS_ACCESS_DENIED)? },
    })
}

/// `status`: a known `STATUS_*` name or an error `NTSTATUS` number (`0xC0000001`).
fn read_status(
    path: &str,
    found: Option<&Found>,
    default: NTSTATUS,
) -> Result<NTSTATUS, ScenarioError> {
    let names: Vec<&str> = STATUS_NAMES.iter().map(|(name, _)| *name).collect();
    match found {
        None => Ok(default),
        Some(Found::Text(text)) => STATUS_NAMES
            .iter()
            .find(|(name, _)| name == text)
            .map(|(_, status)| *status)
            .ok_or_else(|| {
                fail(
                    path,
                    "status",
                    &format!(
                        "expected an error NTSTATUS number (0x80000000..=0xFFFFFFFF) or one of {}, found \"{}\"",
                        quoted_list(&names),
                        shown(text)
                    ),
                )
            }),
        Some(Found::Integer(number)) => u32::try_from(*number)
            .ok()
            .filter(|number| *number >= 0x8000_0000)
            .map(u32::cast_signed)
            .ok_or_else(|| {
                fail(
                    path,
                    "status",
                    &format!(
                        "expected an error NTSTATUS number (0x80000000..=0xFFFFFFFF: a failure), found {number:#x}"
                    ),
                )
            }),
        Some(other) => Err(fail(
            path,
            "status",
            &format!("expected an NTSTATUS name or number, found {}", other.describe()),
        )),
    }
}
