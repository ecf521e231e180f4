//! capstone 5's C library, loaded at run time from the image backend's virtual environment
//! (`capstone/lib/libcapstone.so` of the wheel `tools/image/requirements.txt` pins, the library
//! the `capstone` package that `tools/image/ppm_image/broken_image.py` imports loads too): the
//! x86-64 disassembler of the site finder (`image::find_sites`), bound by hand to the five
//! functions it needs.
//!
//! The library is found by [`find_library`]: `PPM_CAPSTONE_LIB` when set, else
//! `target/image/venv/lib/python3*/site-packages/capstone/lib/libcapstone.so` under the first
//! directory above the running executable (then above the current directory) that has one.

use std::ffi::{c_int, c_uint, c_void};
use std::path::{Path, PathBuf};

/// The environment variable naming capstone's library (a path to `libcapstone.so`).
pub const LIBRARY_VARIABLE: &str = "PPM_CAPSTONE_LIB";

/// `CS_ARCH_X86` (capstone.h `cs_arch`).
const CS_ARCH_X86: c_uint = 3;
/// `CS_MODE_64` (capstone.h `cs_mode`).
const CS_MODE_64: c_uint = 1 << 3;
/// `CS_ERR_OK` (capstone.h `cs_err`).
const CS_ERR_OK: c_int = 0;
/// The API major version whose `cs_insn` layout [`CsInsn`] is (capstone 5.0.x).
const API_MAJOR: c_int = 5;

/// capstone 5's `cs_insn` (capstone.h): one disassembled instruction.
#[repr(C)]
#[allow(dead_code)] // Its layout is capstone's: not every field is read.
struct CsInsn {
    /// The instruction's id.
    id: c_uint,
    /// Its address, as `cs_disasm` was told the code's first byte lies at.
    address: u64,
    /// Its length in bytes.
    size: u16,
    /// Its bytes.
    bytes: [u8; 24],
    /// Its mnemonic, NUL-terminated (`CS_MNEMONIC_SIZE` 32).
    mnemonic: [u8; 32],
    /// Its operands as text, NUL-terminated.
    op_str: [u8; 160],
    /// `cs_detail *`: null, as the detail option is off.
    detail: *mut c_void,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(size_of::<CsInsn>() == 248, "cs_insn is 248 bytes on a 64-bit host");

/// `cs_err cs_open(cs_arch arch, cs_mode mode, csh *handle)`.
type CsOpen = unsafe extern "C" fn(c_uint, c_uint, *mut usize) -> c_int;
/// `size_t cs_disasm(csh handle, const uint8_t *code, size_t code_size, uint64_t address,
/// size_t count, cs_insn **insn)`.
type CsDisasm =
    unsafe extern "C" fn(usize, *const u8, usize, u64, usize, *mut *mut CsInsn) -> usize;
/// `void cs_free(cs_insn *insn, size_t count)`.
type CsFree = unsafe extern "C" fn(*mut CsInsn, usize);
/// `cs_err cs_close(csh *handle)`.
type CsClose = unsafe extern "C" fn(*mut usize) -> c_int;
/// `cs_err cs_errno(csh handle)`.
type CsErrno = unsafe extern "C" fn(usize) -> c_int;
/// `unsigned int cs_version(int *major, int *minor)`.
type CsVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_uint;

/// capstone's library, loaded, with the functions the runner calls.
pub struct Library {
    /// `cs_open`.
    open: CsOpen,
    /// `cs_disasm`.
    disasm: CsDisasm,
    /// `cs_free`.
    free: CsFree,
    /// `cs_close`.
    close: CsClose,
    /// `cs_errno`.
    errno: CsErrno,
    /// The loaded library, which the function pointers above point into (never unloaded
    /// before them: they are plain pointers dropped with it).
    _loaded: libloading::Library,
}

/// A function of `library` by `name` (NUL-terminated), as a `T`.
///
/// # Safety
///
/// `T` must be the function's C type, as capstone.h declares it.
unsafe fn function<T: Copy>(library: &libloading::Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: the caller guarantees `T` is the symbol's type.
    let symbol = unsafe { library.get::<T>(name) };
    symbol.map(|symbol| *symbol).map_err(|error| format!("capstone: {error}"))
}

impl Library {
    /// Loads capstone's C library at `path` (a capstone 5 build: `cs_insn`'s layout is 5's).
    pub fn load(path: &Path) -> Result<Self, String> {
        // SAFETY: capstone's initialisers (it has none beyond the C runtime's) run on load;
        // the library is a plain C shared object with no thread-affine state.
        let library = unsafe { libloading::Library::new(path) };
        let library =
            library.map_err(|error| format!("capstone at {}: {error}", path.display()))?;
        // SAFETY: cs_version's C type is `unsigned int (int *, int *)`.
        let version = unsafe { function::<CsVersion>(&library, b"cs_version\0") }?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both pointers are to live, writable ints.
        unsafe { version(&raw mut major, &raw mut minor) };
        if major != API_MAJOR {
            return Err(format!(
                "capstone at {}: version {major}.{minor}, the runner needs capstone {API_MAJOR}",
                path.display()
            ));
        }
        Ok(Self {
            // SAFETY: cs_open's C type is `cs_err (cs_arch, cs_mode, csh *)`.
            open: unsafe { function::<CsOpen>(&library, b"cs_open\0") }?,
            // SAFETY: cs_disasm's C type is
            // `size_t (csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **)`.
            disasm: unsafe { function::<CsDisasm>(&library, b"cs_disasm\0") }?,
            // SAFETY: cs_free's C type is `void (cs_insn *, size_t)`.
            free: unsafe { function::<CsFree>(&library, b"cs_free\0") }?,
            // SAFETY: cs_close's C type is `cs_err (csh *)`.
            close: unsafe { function::<CsClose>(&library, b"cs_close\0") }?,
            // SAFETY: cs_errno's C type is `cs_err (csh)`.
            errno: unsafe { function::<CsErrno>(&library, b"cs_errno\0") }?,
            _loaded: library,
        })
    }

    /// An x86-64 disassembler (`CS_ARCH_X86`, `CS_MODE_64`, Intel syntax, no detail), as
    /// `capstone.Cs(CS_ARCH_X86, CS_MODE_64)`.
    pub fn x86_64(&self) -> Result<Disassembler<'_>, String> {
        let mut handle = 0usize;
        // SAFETY: `handle` is a live, writable `csh`.
        let status = unsafe { (self.open)(CS_ARCH_X86, CS_MODE_64, &raw mut handle) };
        if status != CS_ERR_OK {
            return Err(format!("capstone: cs_open failed (cs_err {status})"));
        }
        Ok(Disassembler { library: self, handle })
    }
}

/// An open capstone handle (closed when dropped).
pub struct Disassembler<'lib> {
    /// The library it was opened with.
    library: &'lib Library,
    /// The `csh`.
    handle: usize,
}

impl Disassembler<'_> {
    /// Disassembles `code`, whose first byte lies at `address`, up to its end or its first
    /// undecodable instruction, whichever comes first: `Cs.disasm_lite(code, address)`
    /// (count 0). An error when capstone reports one (not for undecodable bytes, which merely
    /// end the instructions).
    pub fn disasm_lite(&self, code: &[u8], address: u64) -> Result<Instructions<'_>, String> {
        let mut first: *mut CsInsn = std::ptr::null_mut();
        // SAFETY: `code` is readable for its length; `first` is a live, writable pointer that
        // capstone sets to an array it allocates (freed by `Instructions`' drop).
        let count = unsafe {
            (self.library.disasm)(
                self.handle,
                code.as_ptr(),
                code.len(),
                address,
                0,
                &raw mut first,
            )
        };
        if count == 0 || first.is_null() {
            // SAFETY: the handle is open.
            let status = unsafe { (self.library.errno)(self.handle) };
            if status != CS_ERR_OK {
                return Err(format!("capstone: cs_disasm failed (cs_err {status})"));
            }
            return Ok(Instructions {
                library: self.library,
                first: std::ptr::null_mut(),
                count: 0,
            });
        }
        Ok(Instructions { library: self.library, first, count })
    }
}

impl Drop for Disassembler<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle was opened by `cs_open` and is closed once.
        unsafe { (self.library.close)(&raw mut self.handle) };
    }
}

/// The instructions one `cs_disasm` call decoded (freed when dropped).
pub struct Instructions<'lib> {
    /// The library that allocated them.
    library: &'lib Library,
    /// The first of them (null when there are none).
    first: *mut CsInsn,
    /// How many there are.
    count: usize,
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug)]
pub struct Instruction<'a> {
    /// Its address.
    pub address: u64,
    /// Its length in bytes.
    pub size: u16,
    /// Its mnemonic (ASCII), e.g. `rdmsr`.
    pub mnemonic: &'a [u8],
}

/// `text` up to its first NUL.
fn c_string(text: &[u8]) -> &[u8] {
    text.iter().position(|&byte| byte == 0).map_or(text, |end| &text[..end])
}

impl Instructions<'_> {
    /// The decoded array.
    const fn as_slice(&self) -> &[CsInsn] {
        if self.first.is_null() {
            return &[];
        }
        // SAFETY: capstone returned `count` initialised `cs_insn`s at `first`, which live
        // until `cs_free` (in drop).
        unsafe { std::slice::from_raw_parts(self.first, self.count) }
    }

    /// Whether no instruction was decoded.
    #[cfg(test)]
    pub const fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// The instructions, in order.
    pub fn iter(&self) -> impl Iterator<Item = Instruction<'_>> {
        self.as_slice().iter().map(|insn| Instruction {
            address: insn.address,
            size: insn.size,
            mnemonic: c_string(&insn.mnemonic),
        })
    }
}

impl Drop for Instructions<'_> {
    fn drop(&mut self) {
        if !self.first.is_null() {
            // SAFETY: `first` and `count` are what `cs_disasm` returned, freed once.
            unsafe { (self.library.free)(self.first, self.count) };
        }
    }
}

/// capstone's library: `PPM_CAPSTONE_LIB` when set, else the virtual environment's
/// `target/image/venv/lib/python3*/site-packages/capstone/lib/libcapstone.so` (see
/// [`venv_library`]).
pub fn find_library() -> Result<PathBuf, String> {
    venv_library(LIBRARY_VARIABLE, "capstone/lib/libcapstone.so").ok_or_else(|| {
        format!(
            "no capstone library: set {LIBRARY_VARIABLE} to a libcapstone.so (capstone 5) or \
             create the image backend's virtual environment, target/image/venv"
        )
    })
}

/// A library of a `PyPI` wheel in the image backend's virtual environment: the path in the
/// environment variable `variable` when set, else
/// `target/image/venv/lib/python3*/site-packages/<relative>` under the nearest directory above
/// the running executable that has one (`<repo>/target/debug/..`), else under the nearest
/// directory above the current one.
pub fn venv_library(variable: &str, relative: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path));
    }
    let executable = std::env::current_exe().ok();
    let current = std::env::current_dir().ok();
    let starts = executable.iter().filter_map(|path| path.parent()).chain(current.as_deref());
    for start in starts {
        for directory in start.ancestors() {
            if let Some(found) = in_virtual_environment(directory, relative) {
                return Some(found);
            }
        }
    }
    None
}

/// `root`/target/image/venv/lib/python3*/site-packages/`relative`, the first by name that
/// exists.
fn in_virtual_environment(root: &Path, relative: &str) -> Option<PathBuf> {
    let lib = root.join("target").join("image").join("venv").join("lib");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .map(|entry| entry.path())
        .collect();
    versions.sort();
    versions
        .into_iter()
        .map(|version| version.join("site-packages").join(relative))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::{Library, c_string, find_library};

    #[test]
    fn a_c_string_ends_at_its_nul() {
        assert_eq!(c_string(b"rdmsr\0\0\0"), b"rdmsr");
        assert_eq!(c_string(b"full"), b"full");
    }

    #[test]
    fn a_missing_library_is_an_error() {
        let error = Library::load(std::path::Path::new("/nonexistent/libcapstone.so"));
        assert!(error.err().is_some_and(|text| text.starts_with("capstone at /nonexistent")));
    }

    /// With the image backend's virtual environment present (else nothing to check): the sweep
    /// of a few bytes, stopping at the first undecodable one.
    #[test]
    fn the_venvs_capstone_decodes_x86_64() -> Result<(), String> {
        let Ok(path) = find_library() else { return Ok(()) };
        let library = Library::load(&path)?;
        let disassembler = library.x86_64()?;
        // rdmsr; nop; (0x06: invalid in 64-bit mode); cli
        let code = [0x0F, 0x32, 0x90, 0x06, 0xFA];
        let decoded = disassembler.disasm_lite(&code, 0x1000)?;
        let found: Vec<(u64, u16, &[u8])> =
            decoded.iter().map(|insn| (insn.address, insn.size, insn.mnemonic)).collect();
        assert_eq!(found, [(0x1000, 2, &b"rdmsr"[..]), (0x1002, 1, &b"nop"[..])]);
        assert!(disassembler.disasm_lite(&code[3..4], 0x1003)?.is_empty());
        let rest = disassembler.disasm_lite(&code[4..], 0x1004)?;
        assert_eq!(rest.iter().map(|insn| insn.mnemonic).collect::<Vec<_>>(), [b"cli"]);
        Ok(())
    }
}
