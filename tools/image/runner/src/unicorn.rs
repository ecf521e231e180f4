//! Unicorn 2.1.4's C API, loaded at run time from the image backend's virtual environment
//! (the `PyPI` wheel's `libunicorn.so.2`): the runner links nothing GPL. Only the calls the runner
//! makes are declared; their prototypes are `unicorn/unicorn.h` of that release.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::Path;
use std::sync::OnceLock;

/// `uc_engine *`.
pub type Handle = *mut c_void;
/// `uc_err`.
type Status = c_int;
/// `uc_hook`.
type HookHandle = usize;

/// `UC_ARCH_ARM64`.
pub const ARCH_ARM64: c_int = 2;
/// `UC_ARCH_X86`.
pub const ARCH_X86: c_int = 4;
/// `UC_MODE_ARM`.
pub const MODE_ARM: c_int = 0;
/// `UC_MODE_64`.
pub const MODE_64: c_int = 8;
/// `UC_PROT_NONE`.
pub const PROT_NONE: u32 = 0;
/// `UC_PROT_READ`.
pub const PROT_READ: u32 = 1;
/// `UC_PROT_WRITE`.
pub const PROT_WRITE: u32 = 2;
/// `UC_PROT_EXEC`.
pub const PROT_EXEC: u32 = 4;
/// `UC_PROT_ALL`.
pub const PROT_ALL: u32 = 7;
/// `UC_HOOK_INTR`.
pub const HOOK_INTR: c_int = 1;
/// `UC_HOOK_CODE`.
pub const HOOK_CODE: c_int = 4;
/// `UC_HOOK_MEM_READ_UNMAPPED`.
pub const HOOK_MEM_READ_UNMAPPED: c_int = 16;
/// `UC_HOOK_MEM_WRITE_UNMAPPED`.
pub const HOOK_MEM_WRITE_UNMAPPED: c_int = 32;
/// `UC_HOOK_MEM_FETCH_UNMAPPED`.
pub const HOOK_MEM_FETCH_UNMAPPED: c_int = 64;
/// `UC_HOOK_MEM_READ_PROT`.
pub const HOOK_MEM_READ_PROT: c_int = 128;
/// `UC_HOOK_MEM_WRITE_PROT`.
pub const HOOK_MEM_WRITE_PROT: c_int = 256;
/// `UC_MEM_WRITE_UNMAPPED`.
pub const MEM_WRITE_UNMAPPED: c_int = 20;
/// `UC_MEM_WRITE_PROT`.
pub const MEM_WRITE_PROT: c_int = 22;
/// `UC_ERR_INSN_INVALID`.
pub const ERR_INSN_INVALID: c_int = 10;
/// `UC_CTL_CPU_MODEL`.
const CTL_CPU_MODEL: c_int = 7;
/// `UC_CTL_IO_WRITE`.
const CTL_IO_WRITE: c_int = 1;
/// `UC_CPU_ARM64_MAX`.
pub const CPU_ARM64_MAX: c_int = 3;

/// A code hook: `(engine, address, size, user data)`.
pub type CodeHook = unsafe extern "C" fn(Handle, u64, u32, *mut c_void);
/// An interrupt hook: `(engine, interrupt number, user data)`.
pub type InterruptHook = unsafe extern "C" fn(Handle, u32, *mut c_void);
/// A memory event hook: `(engine, access type, address, size, value, user data)`: whether the
/// access may go on.
pub type MemoryHook = unsafe extern "C" fn(Handle, c_int, u64, c_int, i64, *mut c_void) -> bool;

/// The library's functions the runner calls.
struct Api {
    open: unsafe extern "C" fn(c_int, c_int, *mut Handle) -> Status,
    strerror: unsafe extern "C" fn(Status) -> *const c_char,
    reg_read: unsafe extern "C" fn(Handle, c_int, *mut c_void) -> Status,
    reg_write: unsafe extern "C" fn(Handle, c_int, *const c_void) -> Status,
    reg_write_batch:
        unsafe extern "C" fn(Handle, *const c_int, *const *const c_void, c_int) -> Status,
    mem_read: unsafe extern "C" fn(Handle, u64, *mut c_void, u64) -> Status,
    mem_write: unsafe extern "C" fn(Handle, u64, *const c_void, u64) -> Status,
    mem_map: unsafe extern "C" fn(Handle, u64, u64, u32) -> Status,
    mem_map_ptr: unsafe extern "C" fn(Handle, u64, u64, u32, *mut c_void) -> Status,
    mem_unmap: unsafe extern "C" fn(Handle, u64, u64) -> Status,
    mem_protect: unsafe extern "C" fn(Handle, u64, u64, u32) -> Status,
    emu_start: unsafe extern "C" fn(Handle, u64, u64, u64, usize) -> Status,
    emu_stop: unsafe extern "C" fn(Handle) -> Status,
    hook_add: unsafe extern "C" fn(
        Handle,
        *mut HookHandle,
        c_int,
        *mut c_void,
        *mut c_void,
        u64,
        u64,
        ...
    ) -> Status,
    hook_del: unsafe extern "C" fn(Handle, HookHandle) -> Status,
    context_alloc: unsafe extern "C" fn(Handle, *mut *mut c_void) -> Status,
    context_save: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    context_restore: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    ctl: unsafe extern "C" fn(Handle, c_int, ...) -> Status,
    /// Keeps the functions above loaded.
    _library: libloading::Library,
}

/// The library, once loaded.
static API: OnceLock<Api> = OnceLock::new();

/// Copies the function `name` out of `library`.
fn symbol<T: Copy>(library: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: each caller names a function of Unicorn 2.1.4's C API with `T` its prototype as
    // `unicorn.h` declares it; the library stays loaded in `Api` for the process's life.
    let found = unsafe { library.get::<T>(name.as_bytes()) };
    found.map(|function| *function).map_err(|error| format!("{name}: {error}"))
}

/// Loads Unicorn from `path` (once per process; later calls return the first result).
pub fn load(path: &Path) -> Result<(), String> {
    if API.get().is_some() {
        return Ok(());
    }
    // SAFETY: loading runs the library's initialisers; libunicorn.so.2 from the pinned wheel
    // has no initialiser with requirements on the caller.
    let library = unsafe { libloading::Library::new(path) }
        .map_err(|error| format!("cannot load Unicorn from {}: {error}", path.display()))?;
    let api = Api {
        open: symbol(&library, "uc_open")?,
        strerror: symbol(&library, "uc_strerror")?,
        reg_read: symbol(&library, "uc_reg_read")?,
        reg_write: symbol(&library, "uc_reg_write")?,
        reg_write_batch: symbol(&library, "uc_reg_write_batch")?,
        mem_read: symbol(&library, "uc_mem_read")?,
        mem_write: symbol(&library, "uc_mem_write")?,
        mem_map: symbol(&library, "uc_mem_map")?,
        mem_map_ptr: symbol(&library, "uc_mem_map_ptr")?,
        mem_unmap: symbol(&library, "uc_mem_unmap")?,
        mem_protect: symbol(&library, "uc_mem_protect")?,
        emu_start: symbol(&library, "uc_emu_start")?,
        emu_stop: symbol(&library, "uc_emu_stop")?,
        hook_add: symbol(&library, "uc_hook_add")?,
        hook_del: symbol(&library, "uc_hook_del")?,
        context_alloc: symbol(&library, "uc_context_alloc")?,
        context_save: symbol(&library, "uc_context_save")?,
        context_restore: symbol(&library, "uc_context_restore")?,
        ctl: symbol(&library, "uc_ctl")?,
        _library: library,
    };
    let _ = API.set(api);
    Ok(())
}

/// The loaded library (`load` first).
fn api() -> &'static Api {
    API.get().expect("unicorn::load is called before any engine is made")
}

/// A Unicorn error: its `uc_err` number and text.
#[derive(Debug, Clone)]
pub struct UcError {
    /// The `uc_err` number.
    pub errno: c_int,
}

impl UcError {
    /// Unicorn's own text for the error (`uc_strerror`), else `Unicorn error N`.
    pub fn message(&self) -> String {
        // SAFETY: uc_strerror returns a static NUL-terminated string for any code.
        let text = unsafe { (api().strerror)(self.errno) };
        if text.is_null() {
            return format!("Unicorn error {}", self.errno);
        }
        // SAFETY: non-null, NUL-terminated, static (above).
        let text = unsafe { CStr::from_ptr(text) };
        text.to_string_lossy().into_owned()
    }
}

impl std::fmt::Display for UcError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message())
    }
}

/// A status as a result.
const fn checked(status: Status) -> Result<(), UcError> {
    if status == 0 { Ok(()) } else { Err(UcError { errno: status }) }
}

/// One emulated CPU and its memory (`uc_engine`), closed never: the runner keeps one for its
/// life.
pub struct Engine {
    handle: Handle,
}

/// A saved register context (`uc_context`), reused.
pub struct Context(*mut c_void);

impl Engine {
    /// A new engine of `arch` in `mode`.
    pub fn open(arch: c_int, mode: c_int) -> Result<Self, UcError> {
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out pointer.
        checked(unsafe { (api().open)(arch, mode, &raw mut handle) })?;
        Ok(Self { handle })
    }

    /// The `uc_engine *` (for hooks' user data and the stop hook).
    pub const fn handle(&self) -> Handle {
        self.handle
    }

    /// Sets the CPU model (`uc_ctl_set_cpu_model`).
    pub fn set_cpu_model(&self, model: c_int) -> Result<(), UcError> {
        let code = (CTL_IO_WRITE << 30) | (1 << 26) | CTL_CPU_MODEL;
        // SAFETY: UC_CTL_CPU_MODEL takes one int argument when written.
        checked(unsafe { (api().ctl)(self.handle, code, model) })
    }

    /// Reads a 64-bit register.
    pub fn reg_read(&self, register: c_int) -> u64 {
        let mut value = 0u64;
        // SAFETY: every register the runner names is at most 64 bits wide; `value` has room.
        let _ = unsafe { (api().reg_read)(self.handle, register, (&raw mut value).cast()) };
        value
    }

    /// Writes a 64-bit register.
    pub fn reg_write(&self, register: c_int, value: u64) {
        // SAFETY: every register the runner names is at most 64 bits wide.
        let _ = unsafe { (api().reg_write)(self.handle, register, (&raw const value).cast()) };
    }

    /// Writes `values` to `registers` in one call.
    pub fn reg_write_batch(&self, registers: &[c_int], values: &[u64]) -> Result<(), UcError> {
        let pointers: Vec<*const c_void> =
            values.iter().map(|value| std::ptr::from_ref(value).cast()).collect();
        let count = c_int::try_from(registers.len().min(values.len())).unwrap_or(0);
        // SAFETY: `registers` and `pointers` hold at least `count` entries, each pointing to a
        // live u64.
        checked(unsafe {
            (api().reg_write_batch)(self.handle, registers.as_ptr(), pointers.as_ptr(), count)
        })
    }

    /// Reads `out.len()` bytes at `address`.
    pub fn mem_read(&self, address: u64, out: &mut [u8]) -> Result<(), UcError> {
        // SAFETY: `out` has room for its length.
        checked(unsafe {
            (api().mem_read)(self.handle, address, out.as_mut_ptr().cast(), out.len() as u64)
        })
    }

    /// Writes `data` at `address`.
    pub fn mem_write(&self, address: u64, data: &[u8]) -> Result<(), UcError> {
        // SAFETY: `data` is readable for its length.
        checked(unsafe {
            (api().mem_write)(self.handle, address, data.as_ptr().cast(), data.len() as u64)
        })
    }

    /// Maps `[address, address + size)` with `protection`, Unicorn's own memory.
    pub fn mem_map(&self, address: u64, size: u64, protection: u32) -> Result<(), UcError> {
        // SAFETY: plain values.
        checked(unsafe { (api().mem_map)(self.handle, address, size, protection) })
    }

    /// Maps `[address, address + size)` onto `memory`, which must stay valid while mapped.
    ///
    /// # Safety
    /// `memory` is readable and writable for `size` bytes until the range is unmapped or the
    /// engine dropped.
    pub unsafe fn mem_map_ptr(
        &self,
        address: u64,
        size: u64,
        protection: u32,
        memory: *mut u8,
    ) -> Result<(), UcError> {
        // SAFETY: the caller keeps `memory` valid (above).
        checked(unsafe {
            (api().mem_map_ptr)(self.handle, address, size, protection, memory.cast())
        })
    }

    /// Unmaps `[address, address + size)`.
    pub fn mem_unmap(&self, address: u64, size: u64) -> Result<(), UcError> {
        // SAFETY: plain values.
        checked(unsafe { (api().mem_unmap)(self.handle, address, size) })
    }

    /// Changes the protection of `[address, address + size)`.
    pub fn mem_protect(&self, address: u64, size: u64, protection: u32) -> Result<(), UcError> {
        // SAFETY: plain values.
        checked(unsafe { (api().mem_protect)(self.handle, address, size, protection) })
    }

    /// Stops the emulation (from a hook or another thread).
    pub fn emu_stop(&self) {
        // SAFETY: plain value; uc_emu_stop may be called from any thread.
        let _ = unsafe { (api().emu_stop)(self.handle) };
    }

    /// Adds a hook of `kind` calling `callback` with `data` for addresses in `[begin, end]`.
    ///
    /// # Safety
    /// `callback` has the prototype Unicorn calls for `kind` and `data` is valid whenever the
    /// hook runs.
    pub unsafe fn hook_add(
        &self,
        kind: c_int,
        callback: *mut c_void,
        data: *mut c_void,
        begin: u64,
        end: u64,
    ) -> Result<usize, UcError> {
        let mut hook: HookHandle = 0;
        // SAFETY: the caller's promise (above); `hook` is a valid out pointer.
        checked(unsafe {
            (api().hook_add)(self.handle, &raw mut hook, kind, callback, data, begin, end)
        })?;
        Ok(hook)
    }

    /// Removes a hook.
    pub fn hook_del(&self, hook: usize) -> Result<(), UcError> {
        // SAFETY: plain values.
        checked(unsafe { (api().hook_del)(self.handle, hook) })
    }

    /// A new register context.
    pub fn context_alloc(&self) -> Result<Context, UcError> {
        let mut context: *mut c_void = std::ptr::null_mut();
        // SAFETY: `context` is a valid out pointer.
        checked(unsafe { (api().context_alloc)(self.handle, &raw mut context) })?;
        Ok(Context(context))
    }

    /// Saves the registers into `context`.
    pub fn context_save(&self, context: &Context) -> Result<(), UcError> {
        // SAFETY: `context` came from context_alloc on this engine.
        checked(unsafe { (api().context_save)(self.handle, context.0) })
    }

    /// Restores the registers from `context`.
    pub fn context_restore(&self, context: &Context) -> Result<(), UcError> {
        // SAFETY: `context` came from context_alloc on this engine and was saved.
        checked(unsafe { (api().context_restore)(self.handle, context.0) })
    }
}

impl Engine {
    /// Stops the emulation of the engine `handle` (the watchdog's thread).
    pub fn stop_handle(handle: Handle) {
        // SAFETY: uc_emu_stop may be called from any thread with a live engine's handle.
        let _ = unsafe { (api().emu_stop)(handle) };
    }
}

impl Engine {
    /// Runs the engine `handle` from `begin` until `until` is reached or a hook stops the
    /// emulation. Hooks run inside this call and may call it again (a nested run). It takes
    /// the bare handle, not an `Engine`: the hooks reach the runner that owns the engine while
    /// this runs, so the caller holds no borrow of the runner across the call.
    pub fn emu_start_handle(handle: Handle, begin: u64, until: u64) -> Result<(), UcError> {
        // SAFETY: a live engine's handle; the hooks' user data outlive the engine.
        checked(unsafe { (api().emu_start)(handle, begin, until, 0, 0) })
    }
}
