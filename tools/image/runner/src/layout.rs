//! The runner's address space, limits and status codes: the figures of
//! `tools/image/ppm_image/layout.py`, which `tools/image/tests/test_layout.py` holds to the
//! image's own build (the compiled runner's copy is held to the Python one by
//! `tools/image/tests/test_compiled_layout.py` while both exist).

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
const _: () = assert!(PAGE_BYTES as u64 == PAGE);

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

/// `DRIVER_OBJECT`: size and the fields the runner writes or reads.
pub const DRIVER_OBJECT_SIZE: u64 = 0x150;
/// `DRIVER_OBJECT.DriverStart`.
pub const DRIVER_START: u64 = 0x18;
/// `DRIVER_OBJECT.DriverSize`.
pub const DRIVER_SIZE: u64 = 0x20;
/// `DRIVER_OBJECT.DriverInit`.
pub const DRIVER_INIT: u64 = 0x58;
/// `DRIVER_OBJECT.DriverUnload`.
pub const DRIVER_UNLOAD: u64 = 0x68;
/// `DRIVER_OBJECT.Type` of a driver object.
pub const IO_TYPE_DRIVER: u16 = 4;
/// `UNICODE_STRING.Buffer`.
pub const UNICODE_STRING_BUFFER: u64 = 8;
/// `GROUP_AFFINITY.Group`.
pub const GROUP_AFFINITY_GROUP: u64 = 8;
/// `sizeof(EVENT_DATA_DESCRIPTOR)`.
pub const EVENT_DATA_DESCRIPTOR_BYTES: u64 = 16;
/// `EVENT_DATA_DESCRIPTOR.Size`.
pub const EVENT_DATA_DESCRIPTOR_SIZE: u64 = 8;
/// `WDF_DRIVER_CONFIG.EvtDriverDeviceAdd`.
pub const WDF_DRIVER_CONFIG_DEVICE_ADD: u64 = 8;
/// `WDF_DRIVER_CONFIG.EvtDriverUnload`.
pub const WDF_DRIVER_CONFIG_UNLOAD: u64 = 16;
/// `WDF_BIND_INFO.FuncCount`.
pub const WDF_BIND_INFO_FUNC_COUNT: u64 = 28;
/// `WDF_BIND_INFO.FuncTable`.
pub const WDF_BIND_INFO_FUNC_TABLE: u64 = 32;
/// `PEP_INFORMATION.Size`.
pub const PEP_INFORMATION_SIZE_FIELD: u64 = 2;
/// `PEP_KERNEL_INFORMATION_STRUCT_V3.Size`.
pub const PEP_KERNEL_INFORMATION_SIZE_FIELD: u64 = 2;

/// Wall-clock limit of one command (a hang), in seconds.
pub const HANG_SECONDS: f64 = 5.0;
/// The environment variable that sets another hang limit, in milliseconds.
pub const HANG_MS_VARIABLE: &str = "PPM_RUNNER_HANG_MS";
/// The longest hang limit it may set, in milliseconds.
pub const MAX_HANG_MS: u64 = 3_600_000;

/// The hang limit in seconds: [`HANG_MS_VARIABLE`]'s, else [`HANG_SECONDS`].
///
/// # Errors
/// The variable is not a whole number of milliseconds in `1..=MAX_HANG_MS`.
pub fn hang_seconds_from_environment() -> Result<f64, crate::protocol::Fatal> {
    let Some(value) = std::env::var_os(HANG_MS_VARIABLE) else {
        return Ok(HANG_SECONDS);
    };
    let text = value.to_string_lossy();
    let milliseconds = text
        .parse::<u32>()
        .ok()
        .filter(|milliseconds| (1..=MAX_HANG_MS).contains(&u64::from(*milliseconds)));
    milliseconds.map(|milliseconds| f64::from(milliseconds) / 1000.0).ok_or_else(|| {
        crate::protocol::Fatal::new(format!(
            "{HANG_MS_VARIABLE} must be a whole number of milliseconds in 1..={MAX_HANG_MS}, not '{text}'"
        ))
    })
}
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
