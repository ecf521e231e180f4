//! The runner's figures, stated once: its address space, limits and status codes, and the
//! offsets of the Windows structures it reads and writes ([`STRUCTURES`]).
//! `ppm-image-runner layout` prints them all as JSON ([`describe`]), which the runner's tests
//! read, and `tools/image/tests/test_layout.py` holds every structure offset to the layout
//! assertions of the image's own build.

/// Defines each figure, and [`figures`] to list them by name.
macro_rules! figures {
    ($($(#[$attribute:meta])* pub const $name:ident: $kind:ty = $value:expr;)*) => {
        $($(#[$attribute])* pub const $name: $kind = $value;)*

        /// Every figure of this module by name, with its value (structure offsets aside:
        /// [`STRUCTURES`]).
        fn figures() -> serde_json::Map<String, serde_json::Value> {
            let mut figures = serde_json::Map::new();
            $(figures.insert(stringify!($name).to_owned(), serde_json::json!($name));)*
            figures
        }
    };
}

figures! {
    /// Unicorn's x86 has no paging: the runner's own memory lives just above the 47-bit user half.
    pub const KERNEL: u64 = 0x000F_F800_0000_0000;
    /// The end of `ppm-sim`'s user half: addresses below it are `ppm-sim`'s memory.
    pub const USER_LIMIT: u64 = 0x0000_8000_0000_0000;
    /// Where the image is mapped.
    pub const IMAGE_BASE: u64 = KERNEL + 0x01_2000_0000;
    /// The stub pages: imports, KMDF functions, PoFx services, the unload thunk.
    pub const STUBS: u64 = KERNEL + 0x01_3000_0000;
    /// One stub per import.
    pub const IMPORT_STUBS: u64 = STUBS;
    /// One stub per KMDF function table index.
    pub const KMDF_STUBS: u64 = STUBS + 0x1000;
    /// One stub per byte offset into `PEP_KERNEL_INFORMATION`.
    pub const POFX_STUBS: u64 = STUBS + 0x2000;
    /// The framework's `DriverUnload` thunk.
    pub const UNLOAD_THUNK: u64 = STUBS + 0x3000;
    /// Where a command's call returns: a code hook there stops the emulation.
    pub const SENTINEL: u64 = STUBS + 0x3F00;
    /// Where a call nested in a command returns: its `emu_start`'s `until`.
    pub const NESTED_SENTINEL: u64 = STUBS + 0x3F10;
    /// A command's `emu_start`'s `until`, which nothing reaches.
    pub const UNREACHED: u64 = STUBS + 0x3F20;
    /// The stub pages' size.
    pub const STUBS_SIZE: u64 = 0x4000;
    /// The unmapped page below the stack.
    pub const STACK_GUARD: u64 = KERNEL + 0x01_4000_0000;
    /// The runner's data: the driver object, the registry path, KMDF's objects.
    pub const DATA: u64 = KERNEL + 0x01_5000_0000;
    /// The data area's size.
    pub const DATA_SIZE: u64 = 0x10000;
    /// The pool the image allocates from.
    pub const POOL: u64 = KERNEL + 0x01_6000_0000;
    /// The pool's size.
    pub const POOL_LIMIT: u64 = 64 << 20;
    /// A page.
    pub const PAGE: u64 = 0x1000;
    /// A page's length in memory of the runner's own ([`PAGE`] as a `usize`).
    pub const PAGE_BYTES: usize = 0x1000;

    /// The `DRIVER_OBJECT` `driver_entry` builds.
    pub const DRIVER_OBJECT: u64 = DATA;
    /// The registry path's `UNICODE_STRING`.
    pub const REGISTRY_PATH: u64 = DATA + 0x200;
    /// The registry path's characters.
    pub const REGISTRY_PATH_BUFFER: u64 = DATA + 0x210;
    /// Room for the registry path's characters.
    pub const REGISTRY_PATH_MAX_BYTES: u64 = 0x4000;
    /// The KMDF function table.
    pub const KMDF_TABLE: u64 = DATA + 0x5000;
    /// `WDF_DRIVER_GLOBALS`.
    pub const WDF_GLOBALS: u64 = DATA + 0x6000;
    /// The `WDFDRIVER` handle.
    pub const WDFDRIVER: u64 = DATA + 0x7000;
    /// The `WDFDEVICE` handle.
    pub const WDFDEVICE: u64 = DATA + 0x7100;
    /// The `PWDFDEVICE_INIT` handle.
    pub const WDFDEVICE_INIT: u64 = DATA + 0x7200;

    /// `DRIVER_OBJECT.Type` of a driver object (`IO_TYPE_DRIVER`).
    pub const IO_TYPE_DRIVER: u16 = 4;

    /// Wall-clock limit of one command (a hang), in seconds.
    pub const HANG_SECONDS: f64 = 5.0;
    /// The environment variable that sets another hang limit, in milliseconds.
    pub const HANG_MS_VARIABLE: &str = "PPM_RUNNER_HANG_MS";
    /// The longest hang limit it may set, in milliseconds.
    pub const MAX_HANG_MS: u64 = 3_600_000;

    /// The largest stack `load` accepts.
    pub const MAX_STACK_BYTES: u64 = 1 << 20;
    /// The most bytes one `memcpy`/`memset`/`memcmp` may cover.
    pub const MAX_COPY_BYTES: u64 = 16 << 20;
    /// The most arguments a call carries.
    pub const MAX_CALL_ARGS: usize = 8;
    /// The most pages of `ppm-sim`'s memory a message carries.
    pub const MAX_CALL_PAGES: usize = 8;
    /// The most time-stamp counters ahead a message carries.
    pub const MAX_TIMESTAMPS: usize = 4;
    /// Stale `ppm-sim` pages kept mapped between calls.
    pub const MAX_CACHED_PAGES: usize = 256;
    /// Bytes between an interrupted frame's stack pointer and a nested call's frame.
    pub const NESTED_GAP: u64 = 0x100;
    /// The byte the stack is painted with (the low-water mark).
    pub const PAINT: u8 = 0xDB;

    /// `STATUS_SUCCESS`.
    pub const STATUS_SUCCESS: u64 = 0;
    /// `STATUS_INVALID_PARAMETER`.
    pub const STATUS_INVALID_PARAMETER: u64 = 0xC000_000D;
    /// `STATUS_PRIVILEGED_INSTRUCTION`.
    pub const STATUS_PRIVILEGED_INSTRUCTION: u64 = 0xC000_0096;
    /// `STATUS_INTEGER_DIVIDE_BY_ZERO`.
    pub const STATUS_INTEGER_DIVIDE_BY_ZERO: u64 = 0xC000_0094;
    /// `STATUS_ILLEGAL_INSTRUCTION`.
    pub const STATUS_ILLEGAL_INSTRUCTION: u64 = 0xC000_001D;
    /// `STATUS_BREAKPOINT`.
    pub const STATUS_BREAKPOINT: u64 = 0x8000_0003;
    /// Bugcheck `KMODE_EXCEPTION_NOT_HANDLED`.
    pub const KMODE_EXCEPTION_NOT_HANDLED: u64 = 0x1E;
    /// Bugcheck `PAGE_FAULT_IN_NONPAGED_AREA`.
    pub const PAGE_FAULT_IN_NONPAGED_AREA: u64 = 0x50;
    /// Bugcheck `ATTEMPTED_WRITE_TO_READONLY_MEMORY`.
    pub const ATTEMPTED_WRITE_TO_READONLY_MEMORY: u64 = 0xBE;
    /// Bugcheck `UNEXPECTED_KERNEL_MODE_TRAP`.
    pub const UNEXPECTED_KERNEL_MODE_TRAP: u64 = 0x7F;
    /// `RFLAGS.IF`.
    pub const RFLAGS_IF: u64 = 1 << 9;
}
const _: () = assert!(PAGE_BYTES as u64 == PAGE);

/// A Windows structure the runner reads or writes: its name as the headers spell it and the
/// byte offset of each field it uses, with `sizeof` where it relies on the size (LLP64: the
/// same on x64 and ARM64).
pub struct Structure {
    /// The structure's tag (`_DRIVER_OBJECT`) or type name.
    pub name: &'static str,
    /// `(field, offset)`, and `("sizeof", size)`.
    pub fields: &'static [(&'static str, u64)],
}

/// `WDF_DEVICE_STATE`'s fields, each a `WDF_TRI_STATE` but `Size`.
pub const WDF_DEVICE_STATE_FIELDS: &[(&str, u64)] = &[
    ("Size", 0),
    ("Disabled", 4),
    ("DontDisplayInUI", 8),
    ("Failed", 12),
    ("NotDisableable", 16),
    ("Removed", 20),
    ("ResourcesChanged", 24),
];

/// Every structure offset the runner uses.
pub const STRUCTURES: &[Structure] = &[
    Structure {
        name: "_DRIVER_OBJECT",
        fields: &[
            ("sizeof", 0x150),
            ("Type", 0),
            ("Size", 2),
            ("DriverStart", 0x18),
            ("DriverSize", 0x20),
            ("DriverInit", 0x58),
            ("DriverUnload", 0x68),
        ],
    },
    Structure {
        name: "_UNICODE_STRING",
        fields: &[("Length", 0), ("MaximumLength", 2), ("Buffer", 8)],
    },
    Structure { name: "_GROUP_AFFINITY", fields: &[("sizeof", 16), ("Mask", 0), ("Group", 8)] },
    Structure {
        name: "_EVENT_DATA_DESCRIPTOR",
        fields: &[("sizeof", 16), ("Ptr", 0), ("Size", 8)],
    },
    Structure {
        name: "_WDF_DRIVER_CONFIG",
        fields: &[("EvtDriverDeviceAdd", 8), ("EvtDriverUnload", 16)],
    },
    Structure { name: "_WDF_DEVICE_STATE", fields: WDF_DEVICE_STATE_FIELDS },
    Structure {
        name: "WDF_BIND_INFO",
        fields: &[("sizeof", 48), ("FuncCount", 28), ("FuncTable", 32)],
    },
    Structure { name: "PEP_INFORMATION", fields: &[("Size", 2)] },
    Structure { name: "PEP_KERNEL_INFORMATION_STRUCT_V3", fields: &[("Size", 2)] },
];

/// Whether `a` and `b` are the same text (usable in constants).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut index = 0;
    while index < a.len() {
        if a[index] != b[index] {
            return false;
        }
        index += 1;
    }
    true
}

/// `structure.field`'s offset (or `sizeof`) in [`STRUCTURES`]; a name not there stops the
/// build.
const fn offset(structure: &str, field: &str) -> u64 {
    let mut outer = 0;
    while outer < STRUCTURES.len() {
        if same(STRUCTURES[outer].name, structure) {
            let fields = STRUCTURES[outer].fields;
            let mut inner = 0;
            while inner < fields.len() {
                if same(fields[inner].0, field) {
                    return fields[inner].1;
                }
                inner += 1;
            }
        }
        outer += 1;
    }
    panic!("a structure field not in STRUCTURES")
}

/// `sizeof(DRIVER_OBJECT)`.
pub const DRIVER_OBJECT_SIZE: u64 = offset("_DRIVER_OBJECT", "sizeof");
/// `DRIVER_OBJECT.Type`.
pub const DRIVER_OBJECT_TYPE: u64 = offset("_DRIVER_OBJECT", "Type");
/// `DRIVER_OBJECT.Size`.
pub const DRIVER_OBJECT_SIZE_FIELD: u64 = offset("_DRIVER_OBJECT", "Size");
/// `DRIVER_OBJECT.DriverStart`.
pub const DRIVER_START: u64 = offset("_DRIVER_OBJECT", "DriverStart");
/// `DRIVER_OBJECT.DriverSize`.
pub const DRIVER_SIZE: u64 = offset("_DRIVER_OBJECT", "DriverSize");
/// `DRIVER_OBJECT.DriverInit`.
pub const DRIVER_INIT: u64 = offset("_DRIVER_OBJECT", "DriverInit");
/// `DRIVER_OBJECT.DriverUnload`.
pub const DRIVER_UNLOAD: u64 = offset("_DRIVER_OBJECT", "DriverUnload");
/// `UNICODE_STRING.Buffer`.
pub const UNICODE_STRING_BUFFER: u64 = offset("_UNICODE_STRING", "Buffer");
/// `GROUP_AFFINITY.Group`.
pub const GROUP_AFFINITY_GROUP: u64 = offset("_GROUP_AFFINITY", "Group");
/// `sizeof(EVENT_DATA_DESCRIPTOR)`.
pub const EVENT_DATA_DESCRIPTOR_BYTES: u64 = offset("_EVENT_DATA_DESCRIPTOR", "sizeof");
/// `EVENT_DATA_DESCRIPTOR.Size`.
pub const EVENT_DATA_DESCRIPTOR_SIZE: u64 = offset("_EVENT_DATA_DESCRIPTOR", "Size");
/// `WDF_DRIVER_CONFIG.EvtDriverDeviceAdd`.
pub const WDF_DRIVER_CONFIG_DEVICE_ADD: u64 = offset("_WDF_DRIVER_CONFIG", "EvtDriverDeviceAdd");
/// `WDF_DRIVER_CONFIG.EvtDriverUnload`.
pub const WDF_DRIVER_CONFIG_UNLOAD: u64 = offset("_WDF_DRIVER_CONFIG", "EvtDriverUnload");
/// `WDF_BIND_INFO.FuncCount`.
pub const WDF_BIND_INFO_FUNC_COUNT: u64 = offset("WDF_BIND_INFO", "FuncCount");
/// `WDF_BIND_INFO.FuncTable`.
pub const WDF_BIND_INFO_FUNC_TABLE: u64 = offset("WDF_BIND_INFO", "FuncTable");
/// `PEP_INFORMATION.Size`.
pub const PEP_INFORMATION_SIZE_FIELD: u64 = offset("PEP_INFORMATION", "Size");
/// `PEP_KERNEL_INFORMATION_STRUCT_V3.Size`.
pub const PEP_KERNEL_INFORMATION_SIZE_FIELD: u64 =
    offset("PEP_KERNEL_INFORMATION_STRUCT_V3", "Size");
/// The hang limit in seconds: [`HANG_MS_VARIABLE`]'s, else [`HANG_SECONDS`].
///
/// # Errors
/// The variable is not a whole number of milliseconds in `1..=MAX_HANG_MS`.
pub fn hang_seconds_from_environment() -> Result<f64, String> {
    let Some(value) = std::env::var_os(HANG_MS_VARIABLE) else {
        return Ok(HANG_SECONDS);
    };
    let text = value.to_string_lossy();
    let milliseconds = text
        .parse::<u32>()
        .ok()
        .filter(|milliseconds| (1..=MAX_HANG_MS).contains(&u64::from(*milliseconds)));
    milliseconds.map(|milliseconds| f64::from(milliseconds) / 1000.0).ok_or_else(|| {
        format!(
            "{HANG_MS_VARIABLE} must be a whole number of milliseconds in 1..={MAX_HANG_MS}, not '{text}'"
        )
    })
}

/// Every figure, every structure offset and the KMDF function table's size
/// (`WdfFunctionTableNumEntries`), as `ppm-image-runner layout` prints them: one JSON object,
/// `{"figures": {NAME: VALUE}, "structures": {STRUCTURE: {FIELD: OFFSET}},
/// "kmdf_max_functions": N}`.
///
/// # Errors
/// The KMDF header cannot be read.
pub fn describe() -> Result<String, String> {
    let structures: serde_json::Map<String, serde_json::Value> = STRUCTURES
        .iter()
        .map(|structure| {
            let fields = structure
                .fields
                .iter()
                .map(|(field, offset)| ((*field).to_owned(), serde_json::json!(offset)))
                .collect();
            (structure.name.to_owned(), serde_json::Value::Object(fields))
        })
        .collect();
    let (_, kmdf_max_functions) = crate::kmdf::kmdf_header()?;
    let layout = serde_json::json!({
        "figures": figures(),
        "structures": structures,
        "kmdf_max_functions": kmdf_max_functions,
    });
    Ok(layout.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn the_layout_names_every_figure_and_structure_offset() {
        let layout: Value = serde_json::from_str(&super::describe().unwrap()).unwrap();
        let figures = &layout["figures"];
        assert_eq!(figures["KMDF_STUBS"], json!(super::KMDF_STUBS));
        assert_eq!(figures["HANG_MS_VARIABLE"], json!("PPM_RUNNER_HANG_MS"));
        assert_eq!(figures["HANG_SECONDS"], json!(5.0));
        assert_eq!(figures["PAINT"], json!(0xDB));
        // The structure offsets are STRUCTURES' alone, not figures of their own.
        assert!(figures.get("DRIVER_START").is_none());
        let structures = layout["structures"].as_object().unwrap();
        assert_eq!(structures.len(), super::STRUCTURES.len());
        assert_eq!(structures["_DRIVER_OBJECT"]["DriverUnload"], json!(super::DRIVER_UNLOAD));
        assert_eq!(structures["_WDF_DEVICE_STATE"]["ResourcesChanged"], json!(24));
        assert_eq!(layout["kmdf_max_functions"], json!(458));
    }

    #[test]
    fn each_named_offset_is_its_structures() {
        assert_eq!(super::offset("_DRIVER_OBJECT", "sizeof"), 0x150);
        assert_eq!(super::DRIVER_START, 0x18);
        assert_eq!(super::WDF_BIND_INFO_FUNC_TABLE, 32);
        assert!(super::same("Size", "Size") && !super::same("Size", "Sizes"));
    }
}
