//! `check IMAGE --map MAP --imports DIR [--arch x64|arm64] [--objdump PATH]
//! [--stack-report FILE]`: checks a linked `ppm_pep.sys` the way Windows' loader and a reviewer
//! would.
//!
//! Exit status: 0 when every check passes, 1 when one fails (each failure printed on one line
//! naming what is wrong), 2 on bad arguments or an unreadable image.
//!
//! Checks (x64 and ARM64 unless said):
//! - headers: subsystem NATIVE; `DllCharacteristics` `WDM_DRIVER`, `NX_COMPAT`,
//!   `DYNAMIC_BASE`, `FORCE_INTEGRITY`; a `CheckSum` that is set and equals the image's; the
//!   entry point is `FxDriverEntry`; base relocations present.
//! - imports: only from ntoskrnl.exe, HAL.dll and WDFLDR.SYS, by name, each name in that
//!   module's .def file under `--imports` (every entry of which names where it is documented);
//!   nothing from a user-mode DLL or a C runtime (nor a C runtime library among the map's
//!   inputs).
//! - sections: none both writable and executable; no discardable or pageable executable
//!   section (the PEP's code runs at any IRQL, so none of it may be paged or dropped).
//! - exports: none but `DriverEntry` and the linker symbols wdk-sys defines
//!   ([`ALLOWED_EXPORTS`]).
//! - unwind: `.pdata` covers every function that touches the stack; ranges sorted, disjoint
//!   and in code.
//! - seh (x64): `ppm_msr_probe_read`/`_write` name `__C_specific_handler` (imported from
//!   ntoskrnl.exe) as their handler, and every RDMSR, WRMSR and call in them lies inside an
//!   `__except` scope of its scope table (a call by its return address, as the handler matches
//!   it); an RDMSR/WRMSR must be found so guarded, in the body or in the leaf a guarded call
//!   reaches.
//! - seh (ARM64): every Activity Monitors MRS of the image (op0 3, op1 3, `CRn` 13, `CRm` >= 2)
//!   lies inside an `__except` scope of its function's scope table, that function's handler is
//!   the import thunk of `ntoskrnl.exe!__C_specific_handler`, and it makes no call (BL, BLR);
//!   the four registers the driver reads must each be found so guarded.
//! - stack: the deepest stack of `FxDriverEntry` and each `PoFx` callback against its budget
//!   ([`crate::stack`]).
//!
//! The call graph and the instruction scans read `llvm-objdump -d`'s disassembly (`--objdump`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use ppm_image_file::{
    DIRECTORY_BASERELOC, MACHINE_ARM64, MACHINE_X64, SCN_MEM_DISCARDABLE, SCN_MEM_EXECUTE,
    SCN_MEM_WRITE, UNFETCHABLE, demangle, is_line_break, is_space, is_word, os_error_text,
    parse_pe_file, quoted, read_image_file, stack_identity, wide,
};

use crate::image::{
    self, FileError, ImageFile, Instruction, RuntimeFunction, hex_prefix, signed_hex,
    unicode_decode_error,
};
use crate::seh::Scope;
use crate::stack;

/// The modules a driver may import from.
pub const ALLOWED_MODULES: [&str; 3] = ["ntoskrnl.exe", "HAL.dll", "WDFLDR.SYS"];
/// User-mode DLLs (lowercase): an import from one is refused as such.
pub const USER_MODE_DLLS: [&str; 8] = [
    "kernel32.dll",
    "kernelbase.dll",
    "ntdll.dll",
    "user32.dll",
    "advapi32.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "vcruntime140.dll",
];
/// The prefixes (any case) of a C runtime DLL's name.
const CRT_PREFIXES: [&str; 5] = ["api-ms-win-crt-", "msvcr", "msvcp", "vcruntime", "ucrtbase"];
/// `DriverEntry` (src/driver.rs exports it by name, as every windows-drivers-rs driver does)
/// and the symbols wdk-sys 0.5.2 defines `#[no_mangle] pub` in its lib.rs for the MSVC linker
/// (`_fltused`, and stand-ins of the C++ EH handlers, which rustc exports from a cdylib): the
/// cargo make image exports the same; anything else is new and refused.
pub const ALLOWED_EXPORTS: [&str; 5] =
    ["DriverEntry", "_fltused", "__CxxFrameHandler3", "__CxxFrameHandler4", "__GSHandlerCheck_EH4"];

/// `IMAGE_DLLCHARACTERISTICS_WDM_DRIVER`.
const DLL_WDM_DRIVER: u16 = 0x2000;
/// `IMAGE_DLLCHARACTERISTICS_NX_COMPAT`.
const DLL_NX_COMPAT: u16 = 0x0100;
/// `IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE`.
const DLL_DYNAMIC_BASE: u16 = 0x0040;
/// `IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY`.
const DLL_FORCE_INTEGRITY: u16 = 0x0080;
/// `IMAGE_SUBSYSTEM_NATIVE`.
const SUBSYSTEM_NATIVE: u16 = 1;

/// The SEH shim's functions (x64).
const SEH_FUNCTIONS: [&str; 2] = ["ppm_msr_probe_read", "ppm_msr_probe_write"];
/// The largest .def file read.
const MAX_DEF_BYTES: usize = 1 << 20;

/// The Activity Monitors registers the driver reads, by (`CRm`, op2) (op0 3, op1 3, `CRn` 13).
const AMU_REGISTERS: [((u32, u32), &str); 4] = [
    ((2, 2), "AMCGCR_EL0"),
    ((2, 5), "AMCNTENSET0_EL0"),
    ((4, 0), "AMEVCNTR00_EL0"),
    ((4, 1), "AMEVCNTR01_EL0"),
];
/// `bl` under its mask.
const BL_MASK: u32 = 0xFC00_0000;
/// `bl`.
const BL: u32 = 0x9400_0000;
/// `blr Xn` under its mask.
const BLR_MASK: u32 = 0xFFFF_FC1F;
/// `blr Xn`.
const BLR: u32 = 0xD63F_0000;
/// `blraa`, `blrab`, `blraaz`, `blrabz` under their mask.
const BLRA_MASK: u32 = 0xFEFF_F800;
/// `blraa`, `blrab`, `blraaz`, `blrabz`.
const BLRA: u32 = 0xD63F_0800;

// ---- paths as the checker names them ----------------------------------------------------------

/// The components of `raw` as a path names them: empty and `.` components dropped.
fn path_parts(raw: &str) -> Vec<&str> {
    raw.split('/').filter(|part| !part.is_empty() && *part != ".").collect()
}

/// `raw` normalised as a path prints: `.` components, repeated and trailing slashes dropped
/// (two leading slashes kept), `.` for an empty path.
pub fn normal_path(raw: &str) -> String {
    let root = if raw.starts_with("//") && !raw.starts_with("///") {
        "//"
    } else if raw.starts_with('/') {
        "/"
    } else {
        ""
    };
    let joined = path_parts(raw).join("/");
    if root.is_empty() && joined.is_empty() { ".".to_owned() } else { format!("{root}{joined}") }
}

/// The last component of `raw` (empty for a root or `.`).
pub fn path_name(raw: &str) -> &str {
    path_parts(raw).last().copied().unwrap_or("")
}

/// `name` under the normalised directory `directory`.
fn join_path(directory: &str, name: &str) -> String {
    if directory == "." {
        name.to_owned()
    } else if directory.ends_with('/') {
        format!("{directory}{name}")
    } else {
        format!("{directory}/{name}")
    }
}

// ---- the documented imports ---------------------------------------------------------------------

/// The lines of `text`, split at every line break (`\r\n` one break).
fn lines_of(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_line_break(c) {
            lines.push(&text[start..at]);
            start = at + c.len_utf8();
            if c == '\r' && chars.next_if(|&(_, next)| next == '\n').is_some() {
                start += 1;
            }
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// A module's documented exports: `{name: where it is documented}`.
pub type Documented = HashMap<String, String>;

/// (module, its documented exports) of the .def file at `path` (`shown` as named in errors),
/// whose entries read `name ; <where>`.
///
/// # Errors
///
/// The file cannot be read, is larger than 1 MiB, is not UTF-8, has no LIBRARY line, or an
/// entry is not one name or names no documentation.
pub fn load_def(shown: &str, text: &[u8]) -> Result<(String, Documented), String> {
    if text.len() > MAX_DEF_BYTES {
        return Err(format!("{shown}: larger than {MAX_DEF_BYTES} bytes"));
    }
    let text = std::str::from_utf8(text).map_err(|error| unicode_decode_error(text, &error))?;
    let mut module = None;
    let mut names = HashMap::new();
    let mut in_exports = false;
    for (number, line) in lines_of(text).into_iter().enumerate() {
        let number = number + 1;
        let (code, comment) = line.split_once(';').unwrap_or((line, ""));
        let words: Vec<&str> = code.split(is_space).filter(|word| !word.is_empty()).collect();
        let Some(&first) = words.first() else { continue };
        if first == "LIBRARY" {
            module = words.get(1).map(|&name| name.to_owned());
        } else if first == "EXPORTS" {
            in_exports = true;
        } else if in_exports {
            if words.len() != 1 {
                return Err(format!(
                    "{shown}:{number}: one name per line expected, got '{}'",
                    code.trim_matches(is_space)
                ));
            }
            let documentation = comment.trim_matches(is_space);
            if documentation.is_empty() {
                return Err(format!(
                    "{shown}:{number}: {first} names no documentation ('; <where>')"
                ));
            }
            names.insert(first.to_owned(), documentation.to_owned());
        }
    }
    let module = module.ok_or_else(|| format!("{shown}: no LIBRARY line"))?;
    Ok((module, names))
}

/// `{module (lowercase): (module, its documented exports)}` of every .def file in `directory`.
///
/// # Errors
///
/// [`load_def`]'s, or no .def file in `directory`.
pub fn load_documented(directory: &str) -> Result<HashMap<String, (String, Documented)>, String> {
    let base = normal_path(directory);
    let mut names: Vec<String> = std::fs::read_dir(&base)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.as_bytes().ends_with(b".def"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut documented = HashMap::new();
    for name in names {
        let path = join_path(&base, &name);
        let text = std::fs::read(&path).map_err(|error| os_error_text(&error, Path::new(&path)))?;
        let (module, exports) = load_def(&path, &text)?;
        documented.insert(module.to_lowercase(), (module, exports));
    }
    if documented.is_empty() {
        return Err(format!("{directory}: no .def files"));
    }
    Ok(documented)
}

// ---- headers, imports, sections, exports --------------------------------------------------

/// Subsystem, `DllCharacteristics`, `CheckSum`, the entry point and the base relocations.
///
/// # Errors
///
/// [`FileError::Fatal`] when the optional header has no base relocation directory.
pub fn check_headers(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    let mut failures = Vec::new();
    let pe = &image.pe;
    if pe.subsystem != SUBSYSTEM_NATIVE {
        failures.push(format!("subsystem is {}, not NATIVE (1)", pe.subsystem));
    }
    let flags = pe.dll_characteristics;
    for (bit, name) in [
        (DLL_WDM_DRIVER, "IMAGE_DLLCHARACTERISTICS_WDM_DRIVER"),
        (DLL_NX_COMPAT, "IMAGE_DLLCHARACTERISTICS_NX_COMPAT"),
        (DLL_DYNAMIC_BASE, "IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE"),
        (DLL_FORCE_INTEGRITY, "IMAGE_DLLCHARACTERISTICS_FORCE_INTEGRITY"),
    ] {
        if flags & bit == 0 {
            failures.push(format!("DllCharacteristics {flags:#06x} lacks {name}"));
        }
    }
    if pe.checksum == 0 {
        failures.push("CheckSum is 0 (not set)".to_owned());
    } else {
        let generated = image.generate_checksum()?;
        if u64::from(pe.checksum) != generated {
            failures.push(format!(
                "CheckSum {:#x} is wrong: the image's is {generated:#x}",
                pe.checksum
            ));
        }
    }
    let entry = pe.entry;
    match image.rva_of("FxDriverEntry") {
        Err(FileError::Image(error) | FileError::Fatal(error)) => {
            failures.push(format!("entry point: {error}"));
        }
        Ok(expected) if u64::from(entry) != expected => failures.push(format!(
            "entry point {entry:#x} ({}) is not FxDriverEntry ({expected:#x})",
            image.name_at(i128::from(entry))
        )),
        Ok(_) => {}
    }
    let Some(&(_, relocations)) = pe.directories.get(DIRECTORY_BASERELOC) else {
        return Err(FileError::Fatal("list index out of range".to_owned()));
    };
    if relocations == 0 {
        failures.push("no base relocations: a dynamic-base driver cannot be relocated".to_owned());
    }
    Ok(failures)
}

/// Whether `dll` names a C runtime DLL (one of [`CRT_PREFIXES`], in any case).
fn is_crt_dll(dll: &str) -> bool {
    CRT_PREFIXES.iter().any(|prefix| {
        dll.get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix))
    })
}

/// Modules and names of the import directory.
pub fn check_imports(
    image: &ImageFile<'_>,
    documented: &HashMap<String, (String, Documented)>,
) -> Vec<String> {
    let mut failures = Vec::new();
    let allowed: Vec<String> = ALLOWED_MODULES.iter().map(|module| module.to_lowercase()).collect();
    for import in image.imports() {
        let dll = &import.dll;
        let shown = match (&import.name, import.ordinal) {
            (Some(name), _) => format!("{dll}!{name}"),
            (None, Some(ordinal)) => format!("{dll}!#{ordinal}"),
            (None, None) => format!("{dll}!#None"),
        };
        let lower = dll.to_lowercase();
        if USER_MODE_DLLS.contains(&lower.as_str()) || is_crt_dll(dll) {
            failures.push(format!("import {shown}: {dll} is a user-mode DLL"));
            continue;
        }
        if !allowed.contains(&lower) {
            failures.push(format!(
                "import {shown}: {dll} is not one of {}",
                ALLOWED_MODULES.join(", ")
            ));
            continue;
        }
        let Some(name) = &import.name else {
            failures.push(format!("import {shown}: by ordinal, not by a documented name"));
            continue;
        };
        let known = documented.get(&lower).is_some_and(|(_, names)| names.contains_key(name));
        if !known {
            failures.push(format!("import {shown}: not in the documented exports of {dll}"));
        }
    }
    if image.imports().is_empty() {
        failures.push("no imports at all: not a linked driver".to_owned());
    }
    failures
}

/// Whether `c` is `lower` (an ASCII lowercase letter) in any case, as a case-insensitive
/// regular expression matches it (`ı`/`İ` for `i`, `ſ` for `s` included).
const fn matches_letter(c: char, lower: char) -> bool {
    c.to_ascii_lowercase() == lower
        || (lower == 'i' && matches!(c, '\u{130}' | '\u{131}'))
        || (lower == 's' && c == '\u{17F}')
}

/// Whether `chars` starts with `pattern` (ASCII, lowercase) in any case.
fn starts_with_any_case(chars: &[char], pattern: &str) -> bool {
    chars.len() >= pattern.len()
        && pattern.chars().zip(chars).all(|(lower, &c)| matches_letter(c, lower))
}

/// Every C runtime library input a map names: the words starting with one of the runtimes'
/// names and ending `.lib` (any case), each reported as that name as the map spells it.
pub fn crt_inputs(text: &str) -> BTreeSet<String> {
    const NAMES: [&str; 6] = ["libcmt", "libucrt", "libvcruntime", "msvcrt", "ucrt", "vcruntime"];
    let chars: Vec<char> = text.chars().collect();
    let mut found = BTreeSet::new();
    let mut at = 0;
    while at < chars.len() {
        let boundary = at == 0 || !chars.get(at - 1).copied().is_some_and(is_word);
        let rest = &chars[at..];
        let name = NAMES.iter().find(|name| boundary && starts_with_any_case(rest, name));
        if let Some(name) = name {
            let word_end = rest.iter().position(|&c| !is_word(c)).unwrap_or(rest.len());
            let tail = &rest[word_end..];
            if tail.first() == Some(&'.') && starts_with_any_case(&tail[1..], "lib") {
                found.insert(rest[..name.len()].iter().collect());
                at += word_end + 4;
                continue;
            }
        }
        at += 1;
    }
    found
}

/// No object of a C runtime library among the map's inputs.
///
/// # Errors
///
/// [`FileError::Fatal`] when the map can no longer be read.
pub fn check_no_crt(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    if image.map_path.is_empty() {
        return Ok(Vec::new());
    }
    let bytes = std::fs::read(&image.map_path)
        .map_err(|error| FileError::Fatal(os_error_text(&error, Path::new(&image.map_path))))?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(crt_inputs(&text)
        .into_iter()
        .map(|name| format!("the map names C runtime library input {name}"))
        .collect())
}

/// A section's name: NULs at its end stripped, decoded as UTF-8 (U+FFFD for invalid bytes).
fn section_name(name: [u8; 8]) -> String {
    let end = name.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
    String::from_utf8_lossy(&name[..end]).into_owned()
}

/// W+X, discardable or pageable code.
pub fn check_sections(image: &ImageFile<'_>) -> Vec<String> {
    let mut failures = Vec::new();
    for section in &image.pe.sections {
        let name = section_name(section.name);
        let flags = section.characteristics;
        if flags & SCN_MEM_EXECUTE == 0 {
            continue;
        }
        if flags & SCN_MEM_WRITE != 0 {
            failures.push(format!("section {name} is both writable and executable"));
        }
        if flags & SCN_MEM_DISCARDABLE != 0 {
            failures
                .push(format!("section {name} is discardable code (INIT-style): none is meant"));
        }
        if name.to_uppercase().starts_with("PAGE") {
            failures
                .push(format!("section {name} is pageable code: the PEP's code runs at any IRQL"));
        }
    }
    failures
}

/// Nothing exported but `DriverEntry` and wdk-sys' linker symbols.
pub fn check_exports(image: &ImageFile<'_>) -> Vec<String> {
    image
        .exports()
        .iter()
        .filter(|name| !ALLOWED_EXPORTS.contains(&name.as_str()))
        .map(|name| format!("export {name}: not DriverEntry nor one of wdk-sys' linker symbols"))
        .collect()
}

// ---- unwind data ----------------------------------------------------------------------------

/// Whether a function's instructions push, call or move the stack pointer (x64 or ARM64).
pub fn touches_stack(instructions: &[Instruction]) -> bool {
    instructions.iter().any(|instruction| {
        let (mnemonic, operands) = (instruction.mnemonic.as_str(), instruction.operands.as_str());
        mnemonic == "bl"
            || mnemonic == "blr"
            || operands.starts_with("sp,")
            || (operands.contains("[sp") && operands.ends_with('!'))
            || mnemonic.starts_with("push")
            || mnemonic.starts_with("call")
            || (["sub", "add", "lea"].iter().any(|prefix| mnemonic.starts_with(prefix))
                && operands.ends_with("%rsp"))
    })
}

/// `.pdata` sorted, disjoint, inside code, and covering every function that needs it.
///
/// # Errors
///
/// The unwind data's or the disassembly's.
pub fn check_unwind(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    let mut failures = Vec::new();
    let functions = image.runtime_functions()?;
    let ranges = image.executable_ranges();
    let mut previous_end = 0;
    for function in functions {
        let (begin, end) = (function.begin, function.end);
        if begin < previous_end {
            failures.push(format!(".pdata entry {begin:#x} overlaps the previous one"));
        }
        if !ranges.iter().any(|&(start, stop)| start <= begin && begin < end && end <= stop) {
            failures.push(format!(".pdata entry {begin:#x}-{end:#x} is not in code"));
        }
        previous_end = end;
    }
    let symbols = image.functions_in_text();
    for (index, &(rva, name)) in symbols.iter().enumerate() {
        let rva = i128::from(rva);
        if image.function_containing(rva)?.is_some() {
            continue;
        }
        let end = symbols.get(index + 1).map_or(rva + 4096, |&(next, _)| i128::from(next));
        if touches_stack(image.instructions_between(rva, end)?) {
            failures.push(format!(
                "function {} ({}) uses the stack but no .pdata entry covers it",
                demangle(name),
                signed_hex(rva)
            ));
        }
    }
    Ok(failures)
}

// ---- x64 SEH ----------------------------------------------------------------------------------

/// The code the SEH checks read: the image base and the disassembly.
pub trait Code {
    /// The image base (the disassembly's addresses less it are RVAs).
    fn base(&self) -> u64;

    /// The instructions with `begin <= RVA < end`.
    ///
    /// # Errors
    ///
    /// The disassembly's.
    fn instructions_between(&self, begin: i128, end: i128) -> Result<&[Instruction], FileError>;
}

impl Code for ImageFile<'_> {
    fn base(&self) -> u64 {
        self.base
    }

    fn instructions_between(&self, begin: i128, end: i128) -> Result<&[Instruction], FileError> {
        Self::instructions_between(self, begin, end)
    }
}

/// Whether `mnemonic` may fault in the SEH shim: `rdmsr`, `wrmsr` or a call.
fn is_faulting(mnemonic: &str) -> bool {
    mnemonic == "rdmsr"
        || mnemonic == "wrmsr"
        || mnemonic
            .strip_prefix("call")
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_lowercase()))
}

/// The SEH shim's faulting instructions lie inside an `__except` scope of its scope table.
///
/// # Errors
///
/// The unwind data's or the disassembly's.
pub fn check_seh(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    let Some(handler_slot) = image.import_address("ntoskrnl.exe", "__C_specific_handler") else {
        return Ok(vec![
            "__C_specific_handler is not imported from ntoskrnl.exe: the SEH shim has no handler"
                .to_owned(),
        ]);
    };
    let mut failures = Vec::new();
    for name in SEH_FUNCTIONS {
        let rva = match image.rva_of(name) {
            Ok(rva) => rva,
            Err(FileError::Image(error) | FileError::Fatal(error)) => {
                failures.push(format!("SEH shim: {error}"));
                continue;
            }
        };
        let Some(function) = image.function_containing(i128::from(rva))? else {
            failures.push(format!("{name}: no .pdata entry: an exception in it cannot be handled"));
            continue;
        };
        let Some(handler) = function.handler else {
            failures.push(format!("{name}: its unwind info names no exception handler"));
            continue;
        };
        if !calls_through(image, handler, handler_slot)? {
            failures.push(format!(
                "{name}: its handler {} is not __C_specific_handler",
                image.name_at(i128::from(handler))
            ));
            continue;
        }
        let excepts: Vec<Scope> =
            function.scopes.iter().filter(|scope| scope.target != 0).copied().collect();
        failures.extend(check_guarded(image, name, function, &excepts)?);
    }
    Ok(failures)
}

/// Every RDMSR/WRMSR of a probe, in its body or in a direct callee, is under an `__except`.
///
/// `__C_specific_handler` matches a frame's `ControlPc` against [`BeginAddress`,
/// `EndAddress`): for the faulting instruction that is its own address; for a call, the
/// frame's `ControlPc` is the return address, the next instruction's.
///
/// # Errors
///
/// The disassembly's.
pub fn check_guarded(
    code: &dyn Code,
    name: &str,
    function: &RuntimeFunction,
    excepts: &[Scope],
) -> Result<Vec<String>, FileError> {
    let mut failures = Vec::new();
    let mut guarded = Vec::new();
    let ranges = scope_ranges(excepts);
    let body = code.instructions_between(i128::from(function.begin), i128::from(function.end))?;
    for (index, instruction) in body.iter().enumerate() {
        if !is_faulting(&instruction.mnemonic) {
            continue;
        }
        let is_call = instruction.mnemonic.starts_with("call");
        let control_pc = match body.get(index + 1) {
            Some(next) if is_call => next.address,
            None if is_call => i128::from(function.end),
            _ => instruction.address,
        };
        let inside = excepts.iter().any(|scope| {
            i128::from(scope.begin) <= control_pc && control_pc < i128::from(scope.end)
        });
        if !inside {
            let what = if is_call {
                "the return address of the call"
            } else {
                instruction.mnemonic.as_str()
            };
            failures.push(format!(
                "{name}: {} at {} lies outside its __try scope ({what} at {}; __except scopes: \
                 {ranges})",
                instruction.mnemonic,
                signed_hex(instruction.address),
                signed_hex(control_pc)
            ));
        } else if is_call {
            guarded.extend(msr_instructions_of_callee(code, instruction)?);
        } else {
            guarded.push(instruction.mnemonic.clone());
        }
    }
    if failures.is_empty() && guarded.is_empty() {
        failures.push(format!("{name}: no RDMSR or WRMSR under its __try scope"));
    }
    Ok(failures)
}

/// `begin-end, ...` of scopes, `none` without any.
fn scope_ranges(scopes: &[Scope]) -> String {
    let ranges: Vec<String> =
        scopes.iter().map(|scope| format!("{:#x}-{:#x}", scope.begin, scope.end)).collect();
    if ranges.is_empty() { "none".to_owned() } else { ranges.join(", ") }
}

/// RDMSR/WRMSR mnemonics of the direct callee of `call` (a leaf: up to its first `ret`, within
/// 64 bytes).
///
/// # Errors
///
/// The disassembly's.
pub fn msr_instructions_of_callee(
    code: &dyn Code,
    call: &Instruction,
) -> Result<Vec<String>, FileError> {
    let Some(target) = hex_prefix(&call.operands) else { return Ok(Vec::new()) };
    let start = target - i128::from(code.base());
    let mut found = Vec::new();
    for instruction in code.instructions_between(start, start + 64)? {
        if instruction.mnemonic == "rdmsr" || instruction.mnemonic == "wrmsr" {
            found.push(instruction.mnemonic.clone());
        }
        if instruction.mnemonic.starts_with("ret") {
            break;
        }
    }
    Ok(found)
}

/// Whether the code at `rva` is `jmp *[slot]` (an import thunk) or its address is `slot`.
///
/// # Errors
///
/// The disassembly's.
pub fn calls_through(code: &dyn Code, rva: u64, slot: u64) -> Result<bool, FileError> {
    if rva == slot {
        return Ok(true);
    }
    let rva = i128::from(rva);
    let instructions = code.instructions_between(rva, rva + 8)?;
    let Some(first) = instructions.first() else { return Ok(false) };
    let target = signed_hex(i128::from(slot) + i128::from(code.base()));
    Ok(first.mnemonic.starts_with("jmp") && first.operands.contains(&target))
}

// ---- ARM64 SEH --------------------------------------------------------------------------------

/// The name of the Activity Monitors register an MRS word reads (op0 3, op1 3, `CRn` 13,
/// `CRm` 2 and up; `CRm` 0 is `TPIDR_EL0`/`TPIDRRO_EL0`), or `None`.
pub fn amu_register(word: u32) -> Option<String> {
    if word & image::MRS_MASK != image::MRS {
        return None;
    }
    let register = image::system_register(word);
    let (crm, op2) = (u32::from(register.crm), u32::from(register.op2));
    if (register.op0, register.op1, register.crn) != (3, 3, 13) || crm < 2 {
        return None;
    }
    let known = AMU_REGISTERS.iter().find(|(encoding, _)| *encoding == (crm, op2));
    Some(known.map_or_else(|| format!("S3_3_C13_C{crm}_{op2}"), |(_, name)| (*name).to_owned()))
}

/// (RVA, word) of every 4-byte-aligned word of the executable sections.
///
/// # Errors
///
/// [`FileError::Fatal`] for a section whose start neither a section nor the file holds.
pub fn code_words(image: &ImageFile<'_>) -> Result<Vec<(u64, u32)>, FileError> {
    let mut words = Vec::new();
    for (start, end) in image.executable_ranges() {
        let data = image
            .pe
            .get_data(wide(start), wide(end - start))
            .ok_or_else(|| FileError::Fatal(UNFETCHABLE.to_owned()))?;
        for (index, word) in data.chunks_exact(4).enumerate() {
            let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            words.push((start + 4 * index as u64, word));
        }
    }
    Ok(words)
}

/// The IAT slot (RVA) an ARM64 import thunk at `rva` branches through (`adrp x16, page; ldr
/// x16, [x16, #offset]; br x16`), or `None` if the code is not one. `word(rva)` reads the
/// image.
///
/// # Errors
///
/// `word`'s.
pub fn arm64_thunk_target(
    word: &dyn Fn(u64) -> Result<u32, FileError>,
    base: u64,
    rva: u64,
) -> Result<Option<i128>, FileError> {
    let (adrp, ldr, br) = (word(rva)?, word(rva + 4)?, word(rva + 8)?);
    if adrp & 0x9F00_001F != 0x9000_0010 || ldr & 0xFFC0_03FF != 0xF940_0210 || br != 0xD61F_0200 {
        return Ok(None);
    }
    let mut immediate = i128::from((((adrp >> 5) & 0x7FFFF) << 2) | ((adrp >> 29) & 3));
    if immediate & (1 << 20) != 0 {
        immediate -= 1 << 21;
    }
    let page = (i128::from(base) + i128::from(rva)) & !0xFFF;
    let page = page + (immediate << 12);
    Ok(Some(page + i128::from((ldr >> 10) & 0xFFF) * 8 - i128::from(base)))
}

/// The little-endian word at `rva` of the image.
fn word_at(image: &ImageFile<'_>, rva: u64) -> Result<u32, FileError> {
    let bytes = image.read(rva, 4)?;
    Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// Every Activity Monitors MRS lies inside an `__except` scope of its function's scope table,
/// the function's handler is `__C_specific_handler` imported from ntoskrnl.exe, and the
/// function (the guard) makes no call; each register the driver reads is so guarded.
///
/// # Errors
///
/// The unwind data's or a read's.
pub fn check_arm64_seh(image: &ImageFile<'_>) -> Result<Vec<String>, FileError> {
    let Some(handler_slot) = image.import_address("ntoskrnl.exe", "__C_specific_handler") else {
        return Ok(vec![
            "__C_specific_handler is not imported from ntoskrnl.exe: the AMU guards have no \
             handler"
                .to_owned(),
        ]);
    };
    let mut failures = Vec::new();
    let mut guarded = BTreeSet::new();
    let mut guards: BTreeMap<u64, &RuntimeFunction> = BTreeMap::new();
    let word = |rva| word_at(image, rva);
    for (rva, code) in code_words(image)? {
        let Some(register) = amu_register(code) else { continue };
        let function = image.function_containing(i128::from(rva))?;
        let place = format!("mrs of {register} at {rva:#x}");
        let Some(function) = function else {
            failures
                .push(format!("{place}: no .pdata entry: an exception in it cannot be handled"));
            continue;
        };
        let name = image.name_at(i128::from(function.begin));
        guards.insert(function.begin, function);
        let Some(handler) = function.handler else {
            failures.push(format!("{name}: {place}: its unwind info names no exception handler"));
            continue;
        };
        if arm64_thunk_target(&word, image.base, handler)? != Some(i128::from(handler_slot)) {
            failures.push(format!(
                "{name}: its handler {} is not __C_specific_handler",
                image.name_at(i128::from(handler))
            ));
            continue;
        }
        let excepts: Vec<Scope> =
            function.scopes.iter().filter(|scope| scope.target != 0).copied().collect();
        let rva32 = u128::from(rva);
        let inside = excepts
            .iter()
            .any(|scope| u128::from(scope.begin) <= rva32 && rva32 < u128::from(scope.end));
        if !inside {
            failures.push(format!(
                "{name}: {place} lies outside its __except scope (__except scopes: {})",
                scope_ranges(&excepts)
            ));
            continue;
        }
        guarded.insert(register);
    }
    for (&begin, function) in &guards {
        let mut rva = function.begin;
        while rva < function.end {
            let code = word_at(image, rva)?;
            if code & BL_MASK == BL || code & BLR_MASK == BLR || code & BLRA_MASK == BLRA {
                failures.push(format!(
                    "{}: the AMU guard makes a call at {rva:#x}: a fault below it would be \
                     matched at the call, not at its MRS",
                    image.name_at(i128::from(begin))
                ));
            }
            rva += 4;
        }
    }
    for (_, register) in AMU_REGISTERS {
        if !guarded.contains(register) && failures.is_empty() {
            failures.push(format!("no MRS of {register} under an __except scope"));
        }
    }
    Ok(failures)
}

// ---- the command ------------------------------------------------------------------------------

/// Every check for `arch`: (failures, notes); the stack figures also written to `stack_report`
/// (none when empty), after the image's identity line.
///
/// # Errors
///
/// [`FileError::Image`] when the image cannot be checked (its one failure);
/// [`FileError::Fatal`] when the check stops.
pub fn run(
    image: &ImageFile<'_>,
    documented: &HashMap<String, (String, Documented)>,
    arch: &str,
    stack_report: &str,
) -> Result<(Vec<String>, Vec<String>), FileError> {
    let mut failures = check_headers(image)?;
    failures.extend(check_imports(image, documented));
    failures.extend(check_no_crt(image)?);
    failures.extend(check_sections(image));
    failures.extend(check_exports(image));
    failures.extend(check_unwind(image)?);
    failures.extend(if arch == "x64" { check_seh(image)? } else { check_arm64_seh(image)? });
    let (stack_failures, notes) = stack::check(image)?;
    failures.extend(stack_failures);
    if !stack_report.is_empty() {
        let mut text = stack_identity(&image.pe);
        for note in &notes {
            let _ = write!(text, "\n{note}");
        }
        text.push('\n');
        std::fs::write(stack_report, text)
            .map_err(|error| FileError::Fatal(os_error_text(&error, Path::new(stack_report))))?;
    }
    Ok((failures, notes))
}

/// The command's arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Arguments {
    /// The image.
    pub image: String,
    /// The lld-link /MAP file of the image.
    pub map: String,
    /// The directory of the documented .def files.
    pub imports: String,
    /// `x64` or `arm64`.
    pub arch: String,
    /// The disassembler.
    pub objdump: String,
    /// Where to write the stack figures too (none when empty).
    pub stack_report: String,
}

/// The usage line.
pub const USAGE: &str = "usage: ppm-image-runner check IMAGE --map MAP --imports DIR \
                         [--arch x64|arm64] [--objdump PATH] [--stack-report FILE]";

/// The long options.
const OPTIONS: [&str; 6] =
    ["--help", "--map", "--imports", "--arch", "--objdump", "--stack-report"];

/// Whether `argument` reads as a negative number (`-1`, `-.5`), which is a value, not an
/// option.
fn is_negative_number(argument: &str) -> bool {
    let Some(number) = argument.strip_prefix('-') else { return false };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
    if number.contains('.') {
        digits(whole) && !fraction.is_empty() && digits(fraction)
    } else {
        !number.is_empty() && digits(number)
    }
}

/// The option `argument` names (exactly, as `--option=value`, or as the unique prefix of one),
/// with its value when given after `=`.
fn option_of(argument: &str) -> Result<Option<(&'static str, Option<&str>)>, String> {
    if argument == "-h" {
        return Ok(Some(("--help", None)));
    }
    if !argument.starts_with("--") || argument == "--" {
        return Ok(None);
    }
    let (name, value) = match argument.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (argument, None),
    };
    if let Some(&exact) = OPTIONS.iter().find(|&&option| option == name) {
        return Ok(Some((exact, value)));
    }
    let matching: Vec<&&str> = OPTIONS.iter().filter(|option| option.starts_with(name)).collect();
    match matching.as_slice() {
        [] => Ok(None),
        [option] => Ok(Some((option, value))),
        several => Err(format!(
            "ambiguous option: {name} could match {}",
            several.iter().map(|option| **option).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Whether `argument` reads as an option (and so is no option's value).
fn looks_like_option(argument: &str) -> bool {
    argument.starts_with('-')
        && argument != "-"
        && (matches!(option_of(argument), Ok(Some(_)) | Err(_))
            || argument == "--"
            || !(is_negative_number(argument) || argument.contains(' ')))
}

/// The outcome of parsing the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Check with these.
    Check(Arguments),
    /// Print the usage (`-h`, `--help`).
    Help,
}

/// The arguments after `check`: `IMAGE --map MAP --imports DIR [--arch x64|arm64]
/// [--objdump PATH] [--stack-report FILE]`, options in any order, as `--option value` or
/// `--option=value` (or a unique prefix of the option), the last of a repeated option winning,
/// everything after `--` positional.
///
/// # Errors
///
/// What is wrong, one line.
pub fn parse_arguments(args: &[String]) -> Result<Parsed, String> {
    let mut positionals = Vec::new();
    let mut values: HashMap<&str, String> = HashMap::new();
    let mut index = 0;
    let mut only_positionals = false;
    while let Some(argument) = args.get(index) {
        index += 1;
        if only_positionals {
            positionals.push(argument.clone());
            continue;
        }
        if argument == "--" {
            only_positionals = true;
            continue;
        }
        let option =
            if argument.starts_with('-') && argument != "-" { option_of(argument)? } else { None };
        let Some((option, inline)) = option else {
            if looks_like_option(argument) {
                return Err(format!("unrecognized arguments: {argument}"));
            }
            positionals.push(argument.clone());
            continue;
        };
        if option == "--help" {
            if let Some(value) = inline {
                return Err(format!("argument -h/--help: ignored explicit argument '{value}'"));
            }
            return Ok(Parsed::Help);
        }
        let value = match inline {
            Some(value) => value.to_owned(),
            None => match args.get(index) {
                Some(next) if !looks_like_option(next) => {
                    index += 1;
                    next.clone()
                }
                _ => return Err(format!("argument {option}: expected one argument")),
            },
        };
        if option == "--arch" && value != "x64" && value != "arm64" {
            return Err(format!(
                "argument --arch: invalid choice: {} (choose from 'x64', 'arm64')",
                quoted(&value)
            ));
        }
        values.insert(option, value);
    }
    let missing: Vec<&str> =
        [("image", positionals.is_empty()), ("--map", false), ("--imports", false)]
            .into_iter()
            .filter(|&(name, absent)| {
                absent || (name.starts_with("--") && !values.contains_key(name))
            })
            .map(|(name, _)| name)
            .collect();
    if !missing.is_empty() {
        return Err(format!("the following arguments are required: {}", missing.join(", ")));
    }
    if let Some(extra) = positionals.get(1..).filter(|extra| !extra.is_empty()) {
        return Err(format!("unrecognized arguments: {}", extra.join(" ")));
    }
    let mut take =
        |name: &str, default: &str| values.remove(name).unwrap_or_else(|| default.to_owned());
    Ok(Parsed::Check(Arguments {
        image: positionals.first().cloned().unwrap_or_default(),
        map: take("--map", ""),
        imports: take("--imports", ""),
        arch: take("--arch", "x64"),
        objdump: take("--objdump", "llvm-objdump"),
        stack_report: take("--stack-report", ""),
    }))
}

/// Writes `line` and a newline to `stream` (a closed stream is no error of the check).
fn say(stream: &mut dyn std::io::Write, line: &str) {
    let _ = writeln!(stream, "{line}");
}

/// `check ...` (the arguments after `check`): prints the notes and failures and returns the
/// exit status (0 every check passed, 1 one failed, 2 bad arguments or an unreadable image).
pub fn check_command(args: &[String]) -> u8 {
    let arguments = match parse_arguments(args) {
        Ok(Parsed::Check(arguments)) => arguments,
        Ok(Parsed::Help) => {
            say(&mut std::io::stdout(), USAGE);
            return 0;
        }
        Err(error) => {
            say(
                &mut std::io::stderr(),
                &format!("ppm-image-runner check: error: {error} ({USAGE})"),
            );
            return 2;
        }
    };
    let documented = match load_documented(&arguments.imports) {
        Ok(documented) => documented,
        Err(error) => {
            say(&mut std::io::stderr(), &format!("check-image: {error}"));
            return 2;
        }
    };
    let data = match read_image_file(Path::new(&arguments.image)) {
        Ok(data) => data,
        Err(error) => {
            say(&mut std::io::stderr(), &format!("check-image: {error}"));
            return 2;
        }
    };
    let pe = match parse_pe_file(&arguments.image, &data) {
        Ok(pe) => pe,
        Err(error) => {
            say(&mut std::io::stderr(), &format!("check-image: {error}"));
            return 2;
        }
    };
    let written = pe.written();
    let file =
        match ImageFile::new(&arguments.image, pe, &written, &arguments.map, &arguments.objdump) {
            Ok(file) => file,
            Err(error) => {
                say(&mut std::io::stderr(), &format!("check-image: {error}"));
                return 2;
            }
        };
    let expected = if arguments.arch == "x64" { MACHINE_X64 } else { MACHINE_ARM64 };
    if file.machine != expected {
        say(
            &mut std::io::stdout(),
            &format!(
                "check-image: {} is machine {:#x}, not {}",
                arguments.image, file.machine, arguments.arch
            ),
        );
        return 1;
    }
    let (failures, notes) = match run(&file, &documented, &arguments.arch, &arguments.stack_report)
    {
        Ok(outcome) => outcome,
        Err(FileError::Image(error)) => (vec![error], Vec::new()),
        Err(FileError::Fatal(error)) => {
            say(&mut std::io::stderr(), &format!("check-image: {error}"));
            return 1;
        }
    };
    let mut out = String::new();
    for note in &notes {
        let _ = writeln!(out, "{note}");
    }
    let name = path_name(&arguments.image);
    for failure in &failures {
        let _ = writeln!(out, "FAIL {name}: {failure}");
    }
    if failures.is_empty() {
        let _ = writeln!(out, "{}: every check passed", arguments.image);
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let _ = std::io::stdout().flush();
    u8::from(!failures.is_empty())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{
        Arguments, Code, Parsed, amu_register, arm64_thunk_target, check_guarded, crt_inputs,
        is_crt_dll, load_def, load_documented, normal_path, parse_arguments, path_name,
        touches_stack,
    };
    use crate::image::{FileError, Instruction, RuntimeFunction, hex_prefix};
    use crate::seh::Scope;

    /// The project's .def files.
    fn imports_directory() -> String {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../imports").display().to_string()
    }

    #[test]
    fn every_project_def_entry_names_its_documentation() -> Result<(), String> {
        let documented = load_documented(&imports_directory())?;
        let mut modules: Vec<&str> = documented.keys().map(String::as_str).collect();
        modules.sort_unstable();
        assert_eq!(modules, ["hal.dll", "ntoskrnl.exe", "wdfldr.sys"]);
        for (_, names) in documented.values() {
            assert!(!names.is_empty());
            assert!(names.values().all(|place| !place.is_empty()));
        }
        // The TraceLogging routines stay importable after the merge of the tracing work.
        let ntoskrnl = &documented["ntoskrnl.exe"].1;
        for name in ["EtwRegister", "EtwUnregister", "EtwWriteTransfer", "EtwSetInformation"] {
            assert!(ntoskrnl.contains_key(name), "{name}");
        }
        Ok(())
    }

    #[test]
    fn a_def_entry_without_documentation_is_refused() {
        let text = b"LIBRARY ntoskrnl.exe\nEXPORTS\n    KeBugCheckEx\n";
        assert_eq!(
            load_def("x.def", text),
            Err("x.def:3: KeBugCheckEx names no documentation ('; <where>')".to_owned())
        );
    }

    #[test]
    fn a_def_without_library_is_refused() {
        let text = b"EXPORTS\n    KeBugCheckEx ; somewhere\n";
        assert_eq!(load_def("x.def", text), Err("x.def: no LIBRARY line".to_owned()));
    }

    #[test]
    fn a_def_is_read_line_by_line() -> Result<(), String> {
        // `\r\n` is one line break; comments, blank lines and the header are skipped.
        let text = b"; header\r\nLIBRARY HAL.dll\r\n\r\nEXPORTS\r\n  A ; here \r\n\tB;there\n";
        let (module, names) = load_def("x.def", text)?;
        assert_eq!(module, "HAL.dll");
        assert_eq!((names["A"].as_str(), names["B"].as_str()), ("here", "there"));
        assert_eq!(
            load_def("x.def", b"LIBRARY x\r\nEXPORTS\r\n  A  B ; doc\r\n"),
            Err("x.def:3: one name per line expected, got 'A  B'".to_owned())
        );
        // A LIBRARY line without a name forgets the module.
        assert!(load_def("x.def", b"LIBRARY x\nLIBRARY\n").is_err());
        assert_eq!(
            load_def("x.def", b"LIBRARY x\n\xe2\x82x"),
            Err("'utf-8' codec can't decode bytes in position 10-11: invalid continuation byte"
                .to_owned())
        );
        Ok(())
    }

    #[test]
    fn paths_are_named_as_given_but_normalised() {
        assert_eq!(normal_path("./imports/"), "imports");
        assert_eq!(normal_path("a//b/./c/"), "a/b/c");
        assert_eq!(
            (normal_path("//a"), normal_path("///a"), normal_path("")),
            ("//a".to_owned(), "/a".to_owned(), ".".to_owned())
        );
        assert_eq!(
            (path_name("x/y.sys"), path_name("x/"), path_name("/"), path_name("a/..")),
            ("y.sys", "x", "", "..")
        );
    }

    #[test]
    fn crt_imports_and_map_inputs_are_found_in_any_case() {
        assert!(is_crt_dll("MSVCR120.dll") && is_crt_dll("api-ms-win-crt-heap-l1-1-0.dll"));
        assert!(!is_crt_dll("ntoskrnl.exe") && !is_crt_dll("msvc"));
        let found = crt_inputs(
            "a libcmt.lib LIBUCRT.LIB xucrt.lib vcruntime140.Lib ucrt.libx ıucrt.lib \
                 lıbcmt.lib İıbcmt.lıb mſvcrt.lib",
        );
        let found: Vec<&str> = found.iter().map(String::as_str).collect();
        assert_eq!(found, ["LIBUCRT", "libcmt", "lıbcmt", "mſvcrt", "ucrt", "vcruntime"]);
    }

    #[test]
    fn a_function_that_moves_the_stack_needs_pdata() {
        let at = |mnemonic: &str, operands: &str| Instruction::new(0, mnemonic, operands);
        assert!(!touches_stack(&[at("movl", "%ecx, %eax"), at("retq", "")]));
        assert!(touches_stack(&[at("subq", "$40, %rsp")]));
        assert!(touches_stack(&[at("pushq", "%rbx")]));
        assert!(touches_stack(&[at("callq", "0x180001000")]));
        assert!(!touches_stack(&[at("subq", "$3752, %rsp             # imm = 0xEA8")]));
    }

    #[test]
    fn an_arm64_function_that_moves_the_stack_needs_pdata() {
        let at = |mnemonic: &str, operands: &str| Instruction::new(0, mnemonic, operands);
        assert!(!touches_stack(&[at("add", "x0, x0, #1"), at("ret", "")]));
        assert!(!touches_stack(&[at("ldr", "x0, [sp, #8]")]));
        assert!(touches_stack(&[at("stp", "x29, x30, [sp, #-16]!")]));
        assert!(touches_stack(&[at("sub", "sp, sp, #64")]));
        assert!(touches_stack(&[at("bl", "0x140001000")]));
    }

    /// An image holding only instructions, at base 0.
    struct FakeCode(Vec<Instruction>);

    impl Code for FakeCode {
        fn base(&self) -> u64 {
            0
        }

        fn instructions_between(
            &self,
            begin: i128,
            end: i128,
        ) -> Result<&[Instruction], FileError> {
            let low = self.0.partition_point(|instruction| instruction.address < begin);
            let high = self.0.partition_point(|instruction| instruction.address < end);
            Ok(self.0.get(low..high).unwrap_or(&[]))
        }
    }

    /// `check_guarded` of a probe at 0x10..0x30 with these `__except` scopes.
    fn probe(instructions: Vec<Instruction>, scopes: &[(u32, u32)]) -> Vec<String> {
        let function = RuntimeFunction { begin: 0x10, end: 0x30, ..RuntimeFunction::default() };
        let excepts: Vec<Scope> = scopes
            .iter()
            .map(|&(begin, end)| Scope { begin, end, handler: 1, target: 0x2C })
            .collect();
        check_guarded(&FakeCode(instructions), "probe", &function, &excepts)
            .unwrap_or_else(|error| vec![format!("{error:?}")])
    }

    /// A leaf at 0x40 that reads an MSR.
    fn read_leaf() -> [Instruction; 2] {
        [Instruction::new(0x40, "rdmsr", ""), Instruction::new(0x42, "retq", "")]
    }

    #[test]
    fn a_guarded_call_is_matched_by_its_return_address() {
        let body = [
            Instruction::new(0x10, "pushq", "%rbp"),
            Instruction::new(0x18, "callq", "0x40 <leaf>"),
            Instruction::new(0x1D, "movb", "$1, %al"),
            Instruction::new(0x20, "retq", ""),
        ];
        let code: Vec<Instruction> = body.iter().cloned().chain(read_leaf()).collect();
        assert_eq!(probe(code.clone(), &[(0x18, 0x1E)]), Vec::<String>::new());
        // The scope ends at the return address: the call's frame is not covered.
        let failures = probe(code, &[(0x18, 0x1D)]);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].contains("callq at 0x18 lies outside its __try scope"), "{failures:?}");
    }

    #[test]
    fn an_inline_rdmsr_outside_every_scope_is_refused() {
        let body = vec![Instruction::new(0x14, "rdmsr", ""), Instruction::new(0x16, "retq", "")];
        assert_eq!(probe(body.clone(), &[(0x14, 0x16)]), Vec::<String>::new());
        assert_eq!(
            probe(body, &[]),
            ["probe: rdmsr at 0x14 lies outside its __try scope (rdmsr at 0x14; __except \
              scopes: none)"]
        );
    }

    #[test]
    fn a_probe_without_any_msr_instruction_is_refused() {
        let body =
            vec![Instruction::new(0x14, "movl", "%ecx, %eax"), Instruction::new(0x16, "retq", "")];
        assert_eq!(
            probe(body, &[(0x14, 0x16)]),
            ["probe: no RDMSR or WRMSR under its __try scope"]
        );
    }

    #[test]
    fn a_last_call_returns_to_the_function_end() {
        let body = vec![Instruction::new(0x2B, "callq", "0x40 <leaf>")];
        let code: Vec<Instruction> = body.into_iter().chain(read_leaf()).collect();
        assert_eq!(probe(code.clone(), &[(0x2B, 0x31)]), Vec::<String>::new());
        assert_eq!(
            probe(code, &[(0x2B, 0x30)]),
            ["probe: callq at 0x2b lies outside its __try scope (the return address of the call \
              at 0x30; __except scopes: 0x2b-0x30)"]
        );
    }

    #[test]
    fn amu_mrs_words_are_recognised() {
        // The guards' encodings (mrs x0, S3_3_C13_C2_2 etc.), and registers that are not the AMU's.
        assert_eq!(amu_register(0xD53B_D240).as_deref(), Some("AMCGCR_EL0"));
        assert_eq!(amu_register(0xD53B_D2A0).as_deref(), Some("AMCNTENSET0_EL0"));
        assert_eq!(amu_register(0xD53B_D400).as_deref(), Some("AMEVCNTR00_EL0"));
        assert_eq!(amu_register(0xD53B_D420).as_deref(), Some("AMEVCNTR01_EL0"));
        assert_eq!(amu_register(0xD53B_D500).as_deref(), Some("S3_3_C13_C5_0")); // AMEVCNTR08_EL0
        assert_eq!(amu_register(0xD53B_D040), None); // TPIDR_EL0 (CRm 0)
        assert_eq!(amu_register(0xD538_00A0), None); // ID_AA64PFR0_EL1
        assert_eq!(amu_register(0xD51B_D240), None); // an MSR, not an MRS
    }

    /// The import thunk target of `words` at RVA 0x7AA0 of an image based at 0x180000000.
    fn thunk_target(words: [u32; 3]) -> Result<Option<i128>, FileError> {
        let word = |rva: u64| {
            let index = usize::try_from((rva - 0x7AA0) / 4).unwrap_or(usize::MAX);
            words.get(index).copied().ok_or_else(|| FileError::Image("outside".to_owned()))
        };
        arm64_thunk_target(&word, 0x1_8000_0000, 0x7AA0)
    }

    #[test]
    fn an_arm64_import_thunk_names_its_iat_slot() {
        // adrp x16, 0x180009000; ldr x16, [x16, #0xa00]; br x16: the slot at RVA 0x9a00.
        let thunk = [0xD000_0010, 0xF945_0210, 0xD61F_0200];
        assert_eq!(thunk_target(thunk), Ok(Some(0x9A00)));
        // A branch through another register, or a function body, is no thunk.
        assert_eq!(thunk_target([thunk[0], thunk[1], 0xD61F_0220]), Ok(None));
        assert_eq!(thunk_target([0xD53B_D240, thunk[1], thunk[2]]), Ok(None));
    }

    #[test]
    fn a_direct_target_is_the_leading_hex_number() {
        assert_eq!(hex_prefix("0x180001000 <DriverEntry>"), Some(0x1_8000_1000));
        assert_eq!(hex_prefix("*0x10(%rip)"), None);
        assert_eq!(hex_prefix("0xZ"), None);
    }

    /// `args` as owned strings.
    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|&arg| arg.to_owned()).collect()
    }

    #[test]
    fn arguments_read_as_the_usage_says() {
        let expected = Arguments {
            image: "a.sys".to_owned(),
            map: "a.map".to_owned(),
            imports: "imports".to_owned(),
            arch: "arm64".to_owned(),
            objdump: "llvm-objdump".to_owned(),
            stack_report: "s.txt".to_owned(),
        };
        let forms: [&[&str]; 3] = [
            &[
                "a.sys",
                "--map",
                "a.map",
                "--imports",
                "imports",
                "--arch",
                "arm64",
                "--stack-report",
                "s.txt",
            ],
            &[
                "--map=a.map",
                "--imp",
                "imports",
                "--arch=x64",
                "--ar",
                "arm64",
                "--stack=s.txt",
                "a.sys",
            ],
            &[
                "--map",
                "a.map",
                "--imports",
                "imports",
                "--arch",
                "arm64",
                "--stack-report",
                "s.txt",
                "--",
                "a.sys",
            ],
        ];
        for args in forms {
            assert_eq!(
                parse_arguments(&strings(args)),
                Ok(Parsed::Check(expected.clone())),
                "{args:?}"
            );
        }
        assert_eq!(parse_arguments(&strings(&["-h"])), Ok(Parsed::Help));
    }

    #[test]
    fn bad_arguments_are_named() {
        let refused = |args: &[&str]| parse_arguments(&strings(args)).err().unwrap_or_default();
        assert_eq!(
            refused(&["a", "--map", "m", "--imports", "i", "--arch", "foo"]),
            "argument --arch: invalid choice: 'foo' (choose from 'x64', 'arm64')"
        );
        assert_eq!(refused(&[]), "the following arguments are required: image, --map, --imports");
        assert_eq!(
            refused(&["a", "--imports", "i"]),
            "the following arguments are required: --map"
        );
        assert_eq!(refused(&["a", "--map"]), "argument --map: expected one argument");
        assert_eq!(
            refused(&["a", "--map", "--imports", "i"]),
            "argument --map: expected one argument"
        );
        assert_eq!(
            refused(&["a", "b", "--map", "m", "--imports", "i"]),
            "unrecognized arguments: b"
        );
        assert_eq!(
            refused(&["a", "--map", "m", "--imports", "i", "-x"]),
            "unrecognized arguments: -x"
        );
    }
}
