//! The linked driver image as the runner maps it: `parse_image` ([`Image`]), the map's functions
//! (`parse_map`: [`SymbolMap`]), the machine-answered instructions (`find_sites`: [`Site`]) and
//! `system_register` — plus the `describe IMAGE MAP ARCH` command that prints all of it as one
//! JSON object (`tools/image/tests/test_describe.py` runs it;
//! `tools/image/ppm_image/broken_image.py` reads the image it breaks through it).
//!
//! The image checks (`check`, [`crate::check_image`] and [`crate::stack`]) read the same file
//! through [`ImageFile`]: the PE file with its lld-link map, its decoded `.pdata` (by
//! [`crate::seh`] on x64 and [`crate::arm64_unwind`] on ARM64) and `llvm-objdump -d`'s
//! disassembly.
//!
//! The PE file and the map are read by `ppm-image-file` ([`PeFile`], [`read_map`]), the reader
//! `ppm-sim` checks the image with before it starts the runner.
//!
//! Limits: an image of at most [`MAX_IMAGE_BYTES`] (`SizeOfImage`) and `max_imports` imports.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use ppm_image_file::{
    DIRECTORY_EXCEPTION, MACHINE_ARM64, MACHINE_X64, MAX_IMAGE_BYTES, MapSymbol, PeFile,
    REL_BASED_ABSOLUTE, REL_BASED_DIR64, SCN_MEM_EXECUTE, SCN_MEM_READ, SCN_MEM_WRITE, UNFETCHABLE,
    demangle, is_line_break, is_space, machine_name, os_error_text, parse_pe_file, quoted,
    read_image_file, read_map, u32_at, wide,
};
use serde_json::{Value, json};

use crate::capstone;
use crate::layout::{IMAGE_BASE, PAGE};
use crate::seh::{Scope, UnwindError};

/// The architecture an image is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86-64.
    X64,
    /// AArch64.
    Arm64,
}

impl Arch {
    /// The arch named `x64` or `arm64`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "x64" => Some(Self::X64),
            "arm64" => Some(Self::Arm64),
            _ => None,
        }
    }

    /// Its name: `x64` or `arm64`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::X64 => "x64",
            Self::Arm64 => "arm64",
        }
    }

    /// How many imports its 4 KiB import stub page holds: one byte (`ret`) each on x64, one
    /// word on ARM64.
    pub const fn max_imports(self) -> usize {
        match self {
            Self::X64 => 0x1000,
            Self::Arm64 => 0x1000 / 4,
        }
    }
}

/// One entry of the section table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its name, NULs at its end stripped (other bytes than ASCII as U+FFFD).
    pub name: String,
    /// `VirtualAddress`.
    pub rva: u64,
    /// `VirtualSize`.
    pub size: u64,
    /// `IMAGE_SCN_MEM_EXECUTE`.
    pub executable: bool,
    /// `IMAGE_SCN_MEM_WRITE`.
    pub writable: bool,
    /// `IMAGE_SCN_MEM_READ`.
    pub readable: bool,
    /// `SizeOfRawData`.
    pub raw_size: u64,
}

/// One imported function, bound by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The DLL's name, as the import directory spells it.
    pub dll: String,
    /// The function's name.
    pub name: String,
    /// The RVA of its IAT slot.
    pub iat_rva: u64,
}

/// The exception directory's entries, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pdata {
    /// x64 `RUNTIME_FUNCTION`s: (`BeginAddress`, `EndAddress`, `UnwindInfoAddress`) RVAs.
    X64(Vec<[u32; 3]>),
    /// ARM64 `.pdata` entries: (`BeginAddress`, `UnwindData`) words.
    Arm64(Vec<[u32; 2]>),
}

/// A parsed PE image, ready to be mapped at `base`.
#[derive(Clone, Debug)]
pub struct Image {
    /// Where the runner maps it.
    pub base: u64,
    /// `SizeOfImage`, rounded up to a page.
    pub size: u64,
    /// `ImageBase`.
    pub preferred_base: u64,
    /// `AddressOfEntryPoint`.
    pub entry_rva: u64,
    /// The headers (`SizeOfHeaders` bytes at most) to write at `base`.
    pub headers: Vec<u8>,
    /// The section table, by address.
    pub sections: Vec<Section>,
    /// Each section's (RVA, bytes) to write after mapping, in the order of `sections`.
    pub contents: Vec<(u64, Vec<u8>)>,
    /// The RVAs of the `DIR64` base relocations, in the directory's order.
    pub relocations: Vec<u64>,
    /// The imports, in the import directory's order.
    pub imports: Vec<Import>,
    /// `.pdata`.
    pub pdata: Pdata,
}

impl Image {
    /// Whether `rva` lies in an executable section (by its `VirtualSize`).
    pub fn is_executable(&self, rva: u64) -> bool {
        self.sections.iter().any(|s| s.executable && s.rva <= rva && rva < s.rva + s.size)
    }
}

/// `bytes` decoded as UTF-8, each invalid sequence as U+FFFD.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---- the image as the runner maps it --------------------------------------------------------

/// The image at `path`, to be mapped at `base`: its headers, sections, `DIR64` relocations,
/// imports (by name; at most `max_imports`) and `.pdata`. An error when the file is not a PE
/// image, is not an `arch` image, or is one the runner cannot map.
pub fn parse_image(
    path: &Path,
    base: u64,
    arch: Arch,
    max_imports: usize,
) -> Result<Image, String> {
    let data = read_image_file(path)?;
    parse_image_bytes(path, &data, base, arch, max_imports)
}

/// [`parse_image`] of the file's bytes `data`.
fn parse_image_bytes(
    path: &Path,
    data: &[u8],
    base: u64,
    arch: Arch,
    max_imports: usize,
) -> Result<Image, String> {
    let shown = path.display();
    let pe = parse_pe_file(&shown.to_string(), data)?;
    let found = machine_name(pe.machine);
    if found != Some(arch.name()) {
        return Err(format!(
            "{shown}: not an {} image (machine {:#x}: {}); load it with the arch it was built for",
            arch.name(),
            pe.machine,
            found.unwrap_or("unknown")
        ));
    }
    let size = (u64::from(pe.size_of_image) + PAGE - 1) & !(PAGE - 1);
    if size > MAX_IMAGE_BYTES {
        return Err(format!("{shown}: SizeOfImage {size} exceeds the limit of {MAX_IMAGE_BYTES}"));
    }
    let mut sections = Vec::with_capacity(pe.sections.len());
    let mut contents = Vec::with_capacity(pe.sections.len());
    for raw in &pe.sections {
        let section = Section {
            name: section_name(raw.name),
            rva: u64::from(raw.virtual_address),
            size: u64::from(raw.virtual_size),
            executable: raw.characteristics & SCN_MEM_EXECUTE != 0,
            writable: raw.characteristics & SCN_MEM_WRITE != 0,
            readable: raw.characteristics & SCN_MEM_READ != 0,
            raw_size: u64::from(raw.raw_size),
        };
        let whole = pe.section_data(raw, None, None);
        let wanted =
            if raw.virtual_size == 0 { raw.raw_size } else { raw.virtual_size.min(raw.raw_size) };
        let wanted = usize::try_from(wanted).unwrap_or(usize::MAX);
        let bytes = whole.get(..wanted).unwrap_or(whole);
        if section.rva + u64::try_from(bytes.len()).unwrap_or(u64::MAX) > size {
            return Err(format!("{shown}: section {} lies outside SizeOfImage", section.name));
        }
        contents.push((section.rva, bytes.to_vec()));
        sections.push(section);
    }
    let mut relocations = Vec::new();
    for (kind, rva) in pe.relocations() {
        match kind {
            REL_BASED_DIR64 => relocations.push(rva),
            REL_BASED_ABSOLUTE => {}
            _ => return Err(format!("{shown}: base relocation type {kind} is not DIR64")),
        }
    }
    let mut imports = Vec::new();
    for import in pe.imports() {
        let dll = lossy(import.dll);
        let Some(name) = import.name else {
            let ordinal = import.ordinal.unwrap_or(0);
            return Err(format!("{shown}: {dll} import by ordinal {ordinal}"));
        };
        imports.push(Import { dll, name: lossy(name), iat_rva: import.iat_rva });
    }
    if imports.len() > max_imports {
        return Err(format!(
            "{shown}: {} imports exceed the limit of {max_imports}",
            imports.len()
        ));
    }
    let pdata = pdata_of(&pe, arch).map_err(|error| format!("{shown}: {error}"))?;
    let headers = pe.header();
    let headers =
        headers.get(..usize::try_from(pe.size_of_headers).unwrap_or(usize::MAX)).unwrap_or(headers);
    Ok(Image {
        base,
        size,
        preferred_base: pe.image_base,
        entry_rva: u64::from(pe.entry),
        headers: headers.to_vec(),
        sections,
        contents,
        relocations,
        imports,
        pdata,
    })
}

/// A section's name: NULs at its end stripped, each byte past ASCII as U+FFFD.
fn section_name(name: [u8; 8]) -> String {
    let end = name.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
    name[..end]
        .iter()
        .map(|&byte| if byte.is_ascii() { char::from(byte) } else { '\u{FFFD}' })
        .collect()
}

/// The exception directory's entries, sorted.
fn pdata_of(pe: &PeFile<'_>, arch: Arch) -> Result<Pdata, String> {
    let empty = match arch {
        Arch::X64 => Pdata::X64(Vec::new()),
        Arch::Arm64 => Pdata::Arm64(Vec::new()),
    };
    let Some((rva, size)) = pe.directory(DIRECTORY_EXCEPTION) else {
        return Err(format!(
            "the optional header has {} data directories: no exception directory",
            pe.directories.len()
        ));
    };
    if size == 0 {
        return Ok(empty);
    }
    let data = pe
        .get_data(i64::from(rva), i64::from(size))
        .ok_or_else(|| format!(".pdata at RVA {rva:#x}: data at RVA can't be fetched"))?;
    let word = |offset: usize| u32_at(data, offset).unwrap_or(0);
    match arch {
        Arch::Arm64 => {
            if data.len() % 8 != 0 {
                return Err(format!(".pdata size {} is not a multiple of 8", data.len()));
            }
            let mut entries: Vec<[u32; 2]> =
                (0..data.len()).step_by(8).map(|at| [word(at), word(at + 4)]).collect();
            entries.sort_unstable();
            Ok(Pdata::Arm64(entries))
        }
        Arch::X64 => {
            if data.len() % 12 != 0 {
                return Err(format!(".pdata size {} is not a multiple of 12", data.len()));
            }
            let mut entries: Vec<[u32; 3]> = (0..data.len())
                .step_by(12)
                .map(|at| [word(at), word(at + 4), word(at + 8)])
                .collect();
            entries.sort_unstable();
            Ok(Pdata::X64(entries))
        }
    }
}

/// The functions of the image (the map's symbols in executable sections), by RVA.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolMap {
    /// Their RVAs, ascending.
    pub rvas: Vec<u64>,
    /// Their names, in the order of `rvas` (a function's first name in the map).
    pub names: Vec<String>,
}

impl SymbolMap {
    /// The functions `{rva: name}`, sorted.
    pub fn new(functions: BTreeMap<u64, String>) -> Self {
        let (rvas, names) = functions.into_iter().unzip();
        Self { rvas, names }
    }

    /// The index of the last function at or before `rva`.
    fn index(&self, rva: u64) -> Option<usize> {
        self.rvas.partition_point(|&start| start <= rva).checked_sub(1)
    }

    /// The function holding `rva` (the last at or before it) and `rva`'s offset into it.
    pub fn lookup(&self, rva: u64) -> Option<(&str, u64)> {
        let index = self.index(rva)?;
        Some((self.names.get(index)?.as_str(), rva - self.rvas.get(index)?))
    }

    /// The start of the function holding `rva`.
    #[cfg(test)]
    pub fn function_start(&self, rva: u64) -> Option<u64> {
        self.rvas.get(self.index(rva)?).copied()
    }
}

/// The map's functions of `image` (local `$` labels left out), by RVA.
pub fn parse_map(path: &Path, image: &Image) -> Result<SymbolMap, String> {
    functions_of(path, read_map(path)?, image)
}

/// [`parse_map`] of the map's symbols.
fn functions_of(path: &Path, symbols: Vec<MapSymbol>, image: &Image) -> Result<SymbolMap, String> {
    let mut functions = BTreeMap::new();
    for MapSymbol { name, rva, .. } in symbols {
        if name.starts_with('$') {
            continue; // local labels (e.g. $ehgcr_0_4, an __except target)
        }
        if rva < image.size && image.is_executable(rva) {
            functions.entry(rva).or_insert(name);
        }
    }
    if functions.is_empty() {
        return Err(format!("{}: no function symbols in executable sections", path.display()));
    }
    Ok(SymbolMap::new(functions))
}

// ---- the image file with its map, as the checks read it -------------------------------------

/// `value` in hex as `0x…` (a negative one as `-0x…`).
pub fn signed_hex(value: i128) -> String {
    if value < 0 { format!("-{:#x}", value.unsigned_abs()) } else { format!("{value:#x}") }
}

/// Why a read of the image file failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileError {
    /// The image, its unwind data or its disassembly cannot be used: a one-line reason, which
    /// the checks report as their only failure.
    Image(String),
    /// A defect the checks have no failure for (data neither a section nor the file holds, a
    /// header lacking a data directory, ...): the check stops with this message (exit 1).
    Fatal(String),
}

impl From<UnwindError> for FileError {
    fn from(error: UnwindError) -> Self {
        Self::Image(error.0)
    }
}

/// One import of the import directory, by name or by ordinal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileImport {
    /// The DLL's name.
    pub dll: String,
    /// The function's name; `None` for an import by ordinal.
    pub name: Option<String>,
    /// The ordinal of an import by ordinal.
    pub ordinal: Option<u64>,
    /// The RVA of its IAT slot.
    pub iat_rva: u64,
}

/// One `.pdata` entry, decoded: its range, frame size, exception handler (RVA) and scope table
/// (the RVA of the handler's data on ARM64).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeFunction {
    /// Its first RVA.
    pub begin: u64,
    /// The RVA after its last byte.
    pub end: u64,
    /// The RVA of its unwind data (x64), or the ARM64 entry's second word.
    pub unwind: u64,
    /// Bytes of stack its prologue (and, on x64, every chained parent's) allocates.
    pub frame: u64,
    /// Its `UNWIND_INFO` flags (x64).
    pub flags: u8,
    /// Its exception handler's RVA.
    pub handler: Option<u64>,
    /// The `__C_specific_handler` scope table of its handler's data (empty when it has none or
    /// its data is no scope table, on x64).
    pub scopes: Vec<Scope>,
    /// The RVA of its handler's data (ARM64).
    pub handler_data: Option<u64>,
}

/// One disassembled instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Its RVA (the disassembler's address less the image base).
    pub address: i128,
    /// Its mnemonic.
    pub mnemonic: String,
    /// Its operands as the disassembler prints them (with its comments).
    pub operands: String,
}

impl Instruction {
    /// An instruction at `address`.
    pub fn new(address: i128, mnemonic: &str, operands: &str) -> Self {
        Self { address, mnemonic: mnemonic.to_owned(), operands: operands.to_owned() }
    }
}

/// The first index of the sorted `items` not below the key (`below(item)`: item < key), by
/// bisection probing the middle of [low, high), so an unsorted list gets a fixed answer too.
pub fn bisect_left<T>(items: &[T], below: impl Fn(&T) -> bool) -> usize {
    let (mut low, mut high) = (0, items.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if items.get(middle).is_some_and(&below) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// The first index of the sorted `items` above the key (`above(item)`: key < item), by the
/// same bisection.
pub fn bisect_right<T>(items: &[T], above: impl Fn(&T) -> bool) -> usize {
    let (mut low, mut high) = (0, items.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if items.get(middle).is_some_and(&above) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    low
}

/// The text of the failure decoding `bytes` as UTF-8, where `error` is the first invalid
/// sequence, worded as the `utf-8` codec's error: `'utf-8' codec can't decode byte 0xff in
/// position 2: invalid start byte`.
pub fn unicode_decode_error(bytes: &[u8], error: &std::str::Utf8Error) -> String {
    let start = error.valid_up_to();
    let (end, reason) =
        error.error_len().map_or((bytes.len(), "unexpected end of data"), |length| {
            let first = bytes.get(start).copied().unwrap_or(0);
            let reason = if (0xC2..=0xF4).contains(&first) {
                "invalid continuation byte"
            } else {
                "invalid start byte"
            };
            (start + length, reason)
        });
    if end - start == 1 {
        let byte = bytes.get(start).copied().unwrap_or(0);
        format!("'utf-8' codec can't decode byte {byte:#04x} in position {start}: {reason}")
    } else {
        format!("'utf-8' codec can't decode bytes in position {start}-{}: {reason}", end - 1)
    }
}

/// `signal` (Linux's numbers) as the text of a child that died of it names it:
/// `<Signals.SIGKILL: 9>`, `<Signals.SIGRTMIN+n: m>` for a real-time one.
fn signal_text(signal: i32) -> String {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    let name =
        usize::try_from(signal).ok().and_then(|n| n.checked_sub(1)).and_then(|i| NAMES.get(i));
    match name {
        Some(name) => format!("<Signals.{name}: {signal}>"),
        None if (34..=64).contains(&signal) => {
            format!("<Signals.SIGRTMIN+{}: {signal}>", signal - 34)
        }
        None => format!("unknown signal {signal}"),
    }
}

/// The instructions of `llvm-objdump -d --no-show-raw-insn` output: every line
/// `ADDRESS: MNEMONIC OPERANDS` (hex address, less `base`).
pub fn parse_disassembly(output: &str, base: u64) -> Vec<Instruction> {
    let mut found = Vec::new();
    for line in output.replace("\r\n", "\n").split(is_line_break) {
        let rest = line.trim_start_matches(is_space);
        let digits = rest.bytes().take_while(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')).count();
        if digits == 0 {
            continue;
        }
        let Some(after) = rest[digits..].strip_prefix(':') else { continue };
        let mnemonic_start = after.trim_start_matches(is_space);
        if mnemonic_start.len() == after.len() || mnemonic_start.is_empty() {
            continue;
        }
        let end = mnemonic_start.find(is_space).unwrap_or(mnemonic_start.len());
        let (mnemonic, operands) = mnemonic_start.split_at(end);
        let operands = operands.trim_matches(is_space);
        let address = u128::from_str_radix(&rest[..digits], 16)
            .ok()
            .and_then(|value| i128::try_from(value).ok())
            .unwrap_or(i128::MAX);
        found.push(Instruction::new(address - i128::from(base), mnemonic, operands));
    }
    found
}

/// A linked image file with its lld-link map, as the image checks read it: its PE headers,
/// sections, imports, exports and base relocations, its decoded `.pdata`, the map's symbols and
/// the disassembly (`llvm-objdump -d`, run once, when first needed).
pub struct ImageFile<'a> {
    /// The image's path, as given.
    pub path: String,
    /// The PE file the reads go to.
    pub pe: PeFile<'a>,
    /// `ImageBase`.
    pub base: u64,
    /// `Machine`.
    pub machine: u16,
    /// The map's path (empty: none).
    pub map_path: String,
    /// The map's symbols: each name with its first RVA, in the map's order.
    pub symbols: Vec<(String, u64)>,
    /// The RVA of each symbol.
    symbol_rvas: HashMap<String, u64>,
    /// (RVA, name) of every symbol, sorted.
    by_address: Vec<(u64, String)>,
    /// The disassembler to run.
    objdump: String,
    /// The import directory's entries.
    imports: Vec<FileImport>,
    /// The export directory's names (`#ordinal` for an export by ordinal).
    exports: Vec<String>,
    /// The base relocations: (type, RVA).
    relocations: Vec<(u16, u64)>,
    /// Why the file cannot be written back (to compute its checksum).
    write_error: Option<String>,
    /// The disassembly, once run.
    instructions: std::cell::OnceCell<Vec<Instruction>>,
    /// The decoded `.pdata`, once read.
    functions: std::cell::OnceCell<Vec<RuntimeFunction>>,
}

impl<'a> ImageFile<'a> {
    /// The image `pe` (read from the file at `path`) with the map at `map_path` (none when
    /// empty). Its imports, exports and relocations are those of `pe`; every later read goes
    /// to `written`, the file as [`PeFile::written`] gives it, when the image has a `CheckSum`
    /// (verifying it writes the file back as pefile reads it), else to `pe`'s bytes.
    ///
    /// # Errors
    ///
    /// The map cannot be read or is no lld-link map.
    pub fn new(
        path: &str,
        pe: PeFile<'a>,
        written: &'a Result<Vec<u8>, String>,
        map_path: &str,
        objdump: &str,
    ) -> Result<Self, String> {
        let mut symbols = Vec::new();
        let mut symbol_rvas = HashMap::new();
        if !map_path.is_empty() {
            for MapSymbol { name, rva, .. } in read_map(Path::new(map_path))? {
                if !symbol_rvas.contains_key(&name) {
                    symbol_rvas.insert(name.clone(), rva);
                    symbols.push((name, rva));
                }
            }
        }
        let mut by_address: Vec<(u64, String)> =
            symbols.iter().map(|(name, rva)| (*rva, name.clone())).collect();
        by_address.sort();
        let imports = pe
            .imports()
            .into_iter()
            .map(|import| FileImport {
                dll: lossy(import.dll),
                name: import.name.map(lossy),
                ordinal: if import.name.is_some() { None } else { import.ordinal },
                iat_rva: import.iat_rva,
            })
            .collect();
        let exports = pe
            .exports()
            .into_iter()
            .map(|export| match export.name {
                Some(name) if !name.is_empty() => lossy(name),
                _ => format!("#{}", export.ordinal),
            })
            .collect();
        let relocations = pe.relocations();
        let write_error = written.as_ref().err().cloned();
        let pe = match written {
            Ok(written) if pe.checksum != 0 => pe.with_data(written),
            _ => pe,
        };
        Ok(Self {
            path: path.to_owned(),
            base: pe.image_base,
            machine: pe.machine,
            pe,
            map_path: map_path.to_owned(),
            symbols,
            symbol_rvas,
            by_address,
            objdump: objdump.to_owned(),
            imports,
            exports,
            relocations,
            write_error,
            instructions: std::cell::OnceCell::new(),
            functions: std::cell::OnceCell::new(),
        })
    }

    // --- sections and bytes -------------------------------------------------------------

    /// `size` bytes at `rva`.
    ///
    /// # Errors
    ///
    /// [`FileError::Image`] where the image holds fewer; [`FileError::Fatal`] where neither a
    /// section nor the file holds `rva`.
    pub fn read(&self, rva: u64, size: usize) -> Result<&'a [u8], FileError> {
        let data = self
            .pe
            .get_data(wide(rva), wide(size as u64))
            .ok_or_else(|| FileError::Fatal(UNFETCHABLE.to_owned()))?;
        if data.len() != size {
            return Err(FileError::Image(format!(
                "{size} bytes at RVA {rva:#x} lie outside the image"
            )));
        }
        Ok(data)
    }

    /// [`ImageFile::read`] into `buffer` (the unwind decoders' reader).
    fn read_into(&self, rva: u64, buffer: &mut [u8]) -> Result<(), FileError> {
        buffer.copy_from_slice(self.read(rva, buffer.len())?);
        Ok(())
    }

    /// The [start, end) RVA ranges of executable sections (each its virtual or raw size,
    /// whichever is larger).
    pub fn executable_ranges(&self) -> Vec<(u64, u64)> {
        self.pe
            .sections
            .iter()
            .filter(|section| section.characteristics & SCN_MEM_EXECUTE != 0)
            .map(|section| {
                let start = u64::from(section.virtual_address);
                (start, start + u64::from(section.virtual_size.max(section.raw_size)))
            })
            .collect()
    }

    /// The image's checksum as pefile's `generate_checksum` computes it.
    ///
    /// # Errors
    ///
    /// [`FileError::Fatal`] when the file cannot be written back.
    pub fn generate_checksum(&self) -> Result<u64, FileError> {
        self.write_error.as_ref().map_or_else(
            || Ok(self.pe.generate_checksum()),
            |error| Err(FileError::Fatal(error.clone())),
        )
    }

    // --- symbols --------------------------------------------------------------------------

    /// The RVA of the map's symbol `name`.
    ///
    /// # Errors
    ///
    /// [`FileError::Image`] when the map has no such symbol.
    pub fn rva_of(&self, name: &str) -> Result<u64, FileError> {
        self.symbol_rvas
            .get(name)
            .copied()
            .ok_or_else(|| FileError::Image(format!("symbol {name} not in the map")))
    }

    /// The map's symbols (RVA, name) that lie in an executable section, by address.
    pub fn functions_in_text(&self) -> Vec<(u64, &str)> {
        let ranges = self.executable_ranges();
        let mut found: Vec<(u64, &str)> = self
            .symbols
            .iter()
            .filter(|(_, rva)| ranges.iter().any(|&(start, end)| start <= *rva && *rva < end))
            .map(|(name, rva)| (*rva, name.as_str()))
            .collect();
        found.sort_unstable();
        found
    }

    /// The nearest map symbol at or before `rva`, demangled, as `name+offset` (`rva` in hex
    /// when there is none).
    pub fn name_at(&self, rva: i128) -> String {
        let index = bisect_right(&self.by_address, |(address, name)| {
            (rva, "\u{ffff}") < (i128::from(*address), name.as_str())
        });
        let Some((address, name)) = index.checked_sub(1).and_then(|i| self.by_address.get(i))
        else {
            return signed_hex(rva);
        };
        let offset = rva - i128::from(*address);
        let name = demangle(name);
        if offset == 0 { name } else { format!("{name}+{}", signed_hex(offset)) }
    }

    // --- imports and exports ------------------------------------------------------------

    /// The import directory's entries, in order.
    pub fn imports(&self) -> &[FileImport] {
        &self.imports
    }

    /// The RVA of the IAT slot of `dll!name` (the DLL's name in any case).
    pub fn import_address(&self, dll: &str, name: &str) -> Option<u64> {
        self.imports
            .iter()
            .find(|import| {
                import.dll.to_lowercase() == dll.to_lowercase()
                    && import.name.as_deref() == Some(name)
            })
            .map(|import| import.iat_rva)
    }

    /// The export directory's names (`#ordinal` for an export by ordinal), named ones first.
    pub fn exports(&self) -> &[String] {
        &self.exports
    }

    /// The base relocations: (type, RVA), in the directory's order.
    pub fn relocations(&self) -> &[(u16, u64)] {
        &self.relocations
    }

    // --- unwind data ----------------------------------------------------------------------

    /// Every `.pdata` entry, decoded, by address.
    ///
    /// # Errors
    ///
    /// [`FileError::Image`] for unwind data that cannot be read or decoded.
    pub fn runtime_functions(&self) -> Result<&[RuntimeFunction], FileError> {
        if let Some(functions) = self.functions.get() {
            return Ok(functions);
        }
        let functions = self.decode_pdata()?;
        Ok(self.functions.get_or_init(|| functions))
    }

    /// The exception directory's entries, decoded.
    fn decode_pdata(&self) -> Result<Vec<RuntimeFunction>, FileError> {
        let Some(&(rva, size)) = self.pe.directories.get(DIRECTORY_EXCEPTION) else {
            return Err(FileError::Fatal("list index out of range".to_owned()));
        };
        if size == 0 {
            return Ok(Vec::new());
        }
        let data = self.read(u64::from(rva), size as usize)?;
        match self.machine {
            MACHINE_ARM64 => crate::arm64_unwind::decode_pdata(data)?
                .into_iter()
                .map(|(begin, unwind)| self.arm64_function(begin, unwind))
                .collect(),
            MACHINE_X64 => {
                if data.len() % 12 != 0 {
                    return Err(FileError::Image(format!(
                        ".pdata size {} is not a multiple of 12",
                        data.len()
                    )));
                }
                let word = |at: usize| u32_at(data, at).unwrap_or(0);
                let mut entries: Vec<[u32; 3]> = (0..data.len())
                    .step_by(12)
                    .map(|at| [word(at), word(at + 4), word(at + 8)])
                    .collect();
                entries.sort_unstable();
                entries.into_iter().map(|entry| self.x64_function(entry)).collect()
            }
            machine => {
                Err(FileError::Image(format!("unwind data of machine {machine:#x} is not decoded")))
            }
        }
    }

    /// An x64 `.pdata` entry (begin, end, unwind) decoded: the frame its prologue and every
    /// chained parent's allocate, its handler and, when it has one, its scope table.
    fn x64_function(&self, [begin, end, unwind]: [u32; 3]) -> Result<RuntimeFunction, FileError> {
        let mut function = RuntimeFunction {
            begin: u64::from(begin),
            end: u64::from(end),
            unwind: u64::from(unwind),
            ..RuntimeFunction::default()
        };
        let mut rva = u64::from(unwind);
        let mut read = |rva: u64, buffer: &mut [u8]| self.read_into(rva, buffer);
        for depth in 0..=crate::seh::MAX_CHAIN {
            let info = crate::seh::unwind_info::<FileError, _>(rva, &mut read)?;
            function.frame += crate::seh::frame_of_codes(&info)?;
            if depth == 0 {
                function.flags = info.flags;
            }
            if info.flags & crate::seh::UNW_FLAG_CHAININFO != 0 {
                rva = u64::from(u32_at(self.read(info.tail, 12)?, 8).unwrap_or(0));
                continue;
            }
            let handlers = crate::seh::UNW_FLAG_EHANDLER | crate::seh::UNW_FLAG_UHANDLER;
            if depth == 0 && info.flags & handlers != 0 {
                function.handler =
                    Some(u64::from(u32_at(self.read(info.tail, 4)?, 0).unwrap_or(0)));
                let mut read = |rva: u64, buffer: &mut [u8]| {
                    self.read_into(rva, buffer).map_err(ScopeFailure::File)
                };
                function.scopes = match crate::seh::scope_table(info.tail + 4, &mut read) {
                    Ok(scopes) => scopes,
                    // A handler whose data is no scope table.
                    Err(ScopeFailure::Unwind) => Vec::new(),
                    Err(ScopeFailure::File(error)) => return Err(error),
                };
            }
            return Ok(function);
        }
        Err(FileError::Image(format!(
            "unwind chain at {begin:#x} deeper than {}",
            crate::seh::MAX_CHAIN
        )))
    }

    /// An ARM64 `.pdata` entry decoded: the function's range, frame (what its prologue or an
    /// epilogue allocates), exception handler and, when it has one, its scope table read as
    /// `__C_specific_handler`'s.
    fn arm64_function(&self, begin: u32, unwind: u32) -> Result<RuntimeFunction, FileError> {
        let mut read = |rva: u64, buffer: &mut [u8]| self.read_into(rva, buffer);
        let decoded =
            crate::arm64_unwind::decode_function::<FileError, _>(begin, unwind, &mut read)?;
        let mut function = RuntimeFunction {
            begin: u64::from(begin),
            end: decoded.end,
            unwind: u64::from(unwind),
            frame: decoded.frame()?,
            handler: decoded.handler.map(u64::from),
            ..RuntimeFunction::default()
        };
        if let Some(data) = decoded.handler_data {
            function.handler_data = Some(data);
            function.scopes = crate::seh::scope_table::<FileError, _>(data, &mut read)?;
        }
        Ok(function)
    }

    /// The `.pdata` entry whose range holds `rva`.
    ///
    /// # Errors
    ///
    /// [`ImageFile::runtime_functions`]'.
    pub fn function_containing(&self, rva: i128) -> Result<Option<&RuntimeFunction>, FileError> {
        let functions = self.runtime_functions()?;
        let index = bisect_right(functions, |function| rva < i128::from(function.begin));
        Ok(index
            .checked_sub(1)
            .and_then(|index| functions.get(index))
            .filter(|function| i128::from(function.begin) <= rva && rva < i128::from(function.end)))
    }

    // --- disassembly --------------------------------------------------------------------

    /// Every instruction of the executable sections, in the disassembler's order.
    ///
    /// # Errors
    ///
    /// [`FileError::Image`] when the disassembler cannot be run or fails;
    /// [`FileError::Fatal`] when its output is not UTF-8.
    pub fn instructions(&self) -> Result<&[Instruction], FileError> {
        if let Some(instructions) = self.instructions.get() {
            return Ok(instructions);
        }
        let instructions = parse_disassembly(&self.disassemble()?, self.base);
        Ok(self.instructions.get_or_init(|| instructions))
    }

    /// `llvm-objdump -d --no-show-raw-insn` of the image: its output.
    fn disassemble(&self) -> Result<String, FileError> {
        let arguments = [self.objdump.as_str(), "-d", "--no-show-raw-insn", self.path.as_str()];
        let failed = |error: String| {
            FileError::Image(format!("{} -d {} failed: {error}", self.objdump, self.path))
        };
        // An empty name is looked up in every directory of PATH: each is a directory.
        let output = if self.objdump.is_empty() {
            Err(std::io::Error::from_raw_os_error(libc::EACCES))
        } else {
            std::process::Command::new(&self.objdump).args(&arguments[1..]).output()
        };
        let output =
            output.map_err(|error| failed(os_error_text(&error, Path::new(&self.objdump))))?;
        if !output.status.success() {
            let command = arguments.iter().map(|a| quoted(a)).collect::<Vec<_>>().join(", ");
            let status = std::os::unix::process::ExitStatusExt::signal(&output.status);
            return Err(failed(match (output.status.code(), status) {
                (_, Some(signal)) => {
                    format!("Command '[{command}]' died with {}.", signal_text(signal))
                }
                (code, None) => format!(
                    "Command '[{command}]' returned non-zero exit status {}.",
                    code.unwrap_or(1)
                ),
            }));
        }
        String::from_utf8(output.stdout).map_err(|error| {
            FileError::Fatal(unicode_decode_error(error.as_bytes(), &error.utf8_error()))
        })
    }

    /// The instructions with `begin <= RVA < end`.
    ///
    /// # Errors
    ///
    /// [`ImageFile::instructions`]'.
    pub fn instructions_between(
        &self,
        begin: i128,
        end: i128,
    ) -> Result<&[Instruction], FileError> {
        let instructions = self.instructions()?;
        let low = bisect_left(instructions, |instruction| instruction.address < begin);
        let high = bisect_left(instructions, |instruction| instruction.address < end);
        Ok(instructions.get(low..high).unwrap_or(&[]))
    }
}

/// A scope table read's failure: its count refused (the handler's data is no scope table), or
/// the read's own.
enum ScopeFailure {
    /// More entries than a scope table has.
    Unwind,
    /// The read failed.
    File(FileError),
}

impl From<UnwindError> for ScopeFailure {
    fn from(_: UnwindError) -> Self {
        Self::Unwind
    }
}

// ---- the machine-answered instruction sites -------------------------------------------------

/// An x64 instruction the runner answers from `ppm-sim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKind {
    /// `rdmsr`.
    Rdmsr,
    /// `wrmsr`.
    Wrmsr,
    /// `rdtsc`.
    Rdtsc,
    /// `rdtscp`.
    Rdtscp,
    /// `cpuid`.
    Cpuid,
    /// `cli`.
    Cli,
    /// `sti`.
    Sti,
    /// `rdpmc`.
    Rdpmc,
}

impl SiteKind {
    /// Every kind.
    pub const ALL: [Self; 8] = [
        Self::Rdmsr,
        Self::Wrmsr,
        Self::Rdtsc,
        Self::Rdtscp,
        Self::Cpuid,
        Self::Cli,
        Self::Sti,
        Self::Rdpmc,
    ];

    /// Its name, which is also capstone's mnemonic.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Rdmsr => "rdmsr",
            Self::Wrmsr => "wrmsr",
            Self::Rdtsc => "rdtsc",
            Self::Rdtscp => "rdtscp",
            Self::Cpuid => "cpuid",
            Self::Cli => "cli",
            Self::Sti => "sti",
            Self::Rdpmc => "rdpmc",
        }
    }

    /// The kind of the instruction capstone names `mnemonic` (exactly), if it is one.
    pub fn from_mnemonic(mnemonic: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name().as_bytes() == mnemonic)
    }
}

/// An ARM64 system register encoding: (op0, op1, `CRn`, `CRm`, op2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SystemRegister {
    /// op0 (2 or 3).
    pub op0: u8,
    /// op1.
    pub op1: u8,
    /// `CRn`.
    pub crn: u8,
    /// `CRm`.
    pub crm: u8,
    /// op2.
    pub op2: u8,
}

impl SystemRegister {
    /// As a JSON array: `[op0, op1, CRn, CRm, op2]`.
    fn to_json(self) -> Value {
        json!([self.op0, self.op1, self.crn, self.crm, self.op2])
    }
}

/// The DAIF register's encoding (its MRS is CPU state, executed as is).
pub const DAIF: SystemRegister = SystemRegister { op0: 3, op1: 3, crn: 4, crm: 2, op2: 1 };

/// MRS Xt, (op0 op1 `CRn` `CRm` op2) (Arm ARM C6.2).
pub const MRS_MASK: u32 = 0xFFF0_0000;
/// MRS's bits under [`MRS_MASK`].
pub const MRS: u32 = 0xD530_0000;
/// MSR (register).
const MSR_REG_MASK: u32 = 0xFFF0_0000;
/// MSR (register)'s bits under [`MSR_REG_MASK`].
const MSR_REG: u32 = 0xD510_0000;
/// MSR (immediate) with its immediate masked out.
const MSR_IMM_MASK: u32 = 0xFFFF_F0FF;
/// MSR `DAIFSet`, #imm.
const DAIFSET: u32 = 0xD503_40DF;
/// MSR `DAIFClr`, #imm.
const DAIFCLR: u32 = 0xD503_40FF;

/// The low byte of `value`.
const fn low_byte(value: u32) -> u8 {
    value.to_le_bytes()[0]
}

/// (op0, op1, `CRn`, `CRm`, op2) of an MRS/MSR (register) word.
pub const fn system_register(word: u32) -> SystemRegister {
    SystemRegister {
        op0: 2 + low_byte(word >> 19 & 1),
        op1: low_byte(word >> 16 & 7),
        crn: low_byte(word >> 12 & 0xF),
        crm: low_byte(word >> 8 & 0xF),
        op2: low_byte(word >> 5 & 7),
    }
}

/// An ARM64 instruction the runner answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arm64Site {
    /// MRS Xt, reg (never of DAIF).
    Mrs {
        /// The register read.
        register: SystemRegister,
        /// Xt.
        rt: u8,
    },
    /// MSR reg, Xt (not of DAIF).
    Msr {
        /// The register written.
        register: SystemRegister,
        /// Xt.
        rt: u8,
    },
    /// MSR DAIF, Xt.
    MsrDaif {
        /// Xt.
        rt: u8,
    },
    /// MSR `DAIFSet`, #imm.
    DaifSet {
        /// The immediate (D, A, I, F bits).
        imm: u8,
    },
    /// MSR `DAIFClr`, #imm.
    DaifClr {
        /// The immediate.
        imm: u8,
    },
}

impl Arm64Site {
    /// Its kind's name: `mrs`, `msr`, `msr_daif`, `daifset` or `daifclr`.
    pub const fn kind(self) -> &'static str {
        match self {
            Self::Mrs { .. } => "mrs",
            Self::Msr { .. } => "msr",
            Self::MsrDaif { .. } => "msr_daif",
            Self::DaifSet { .. } => "daifset",
            Self::DaifClr { .. } => "daifclr",
        }
    }

    /// The site in `word`, if it is one.
    pub fn decode(word: u32) -> Option<Self> {
        let rt = low_byte(word & 0x1F);
        if word & MRS_MASK == MRS {
            let register = system_register(word);
            return (register != DAIF).then_some(Self::Mrs { register, rt });
        }
        if word & MSR_REG_MASK == MSR_REG {
            let register = system_register(word);
            return Some(if register == DAIF {
                Self::MsrDaif { rt }
            } else {
                Self::Msr { register, rt }
            });
        }
        let imm = low_byte(word >> 8 & 0xF);
        match word & MSR_IMM_MASK {
            DAIFSET => Some(Self::DaifSet { imm }),
            DAIFCLR => Some(Self::DaifClr { imm }),
            _ => None,
        }
    }
}

/// A machine-answered instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// An x64 instruction: (kind, length).
    X64 {
        /// Which.
        kind: SiteKind,
        /// Its length in bytes.
        length: u8,
    },
    /// An ARM64 instruction.
    Arm64(Arm64Site),
}

impl Site {
    /// As a JSON array: `[kind, length]`; `[kind, [op0, op1, CRn, CRm, op2],
    /// Rt]` (MRS, MSR; DAIF's encoding for `msr_daif`); `[kind, imm, null]` (`DAIFSet`/`DAIFClr`).
    pub fn to_json(self) -> Value {
        match self {
            Self::X64 { kind, length } => json!([kind.name(), length]),
            Self::Arm64(site) => match site {
                Arm64Site::Mrs { register, rt } | Arm64Site::Msr { register, rt } => {
                    json!([site.kind(), register.to_json(), rt])
                }
                Arm64Site::MsrDaif { rt } => json!([site.kind(), DAIF.to_json(), rt]),
                Arm64Site::DaifSet { imm } | Arm64Site::DaifClr { imm } => {
                    json!([site.kind(), imm, Value::Null])
                }
            },
        }
    }
}

/// Every machine-answered instruction in the image's executable sections, by RVA. x64 needs
/// capstone (an error without it).
pub fn find_sites(
    image: &Image,
    arch: Arch,
    capstone: Option<&capstone::Library>,
) -> Result<BTreeMap<u64, Site>, String> {
    match arch {
        Arch::Arm64 => Ok(find_arm64_sites(image)),
        Arch::X64 => {
            let library = capstone.ok_or("the x64 site finder needs capstone's library")?;
            find_x64_sites(image, library)
        }
    }
}

/// Every MRS (but of DAIF), MSR (register) and `DAIFSet`/`DAIFClr` in the executable sections:
/// a sweep of the 4-byte aligned words (A64 has no variable-length encodings to resynchronise).
fn find_arm64_sites(image: &Image) -> BTreeMap<u64, Site> {
    let mut sites = BTreeMap::new();
    for (section, (rva, raw)) in image.sections.iter().zip(&image.contents) {
        if !section.executable {
            continue;
        }
        for (offset, word) in (0u64..).step_by(4).zip(raw.chunks_exact(4)) {
            let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            if let Some(site) = Arm64Site::decode(word) {
                sites.insert(rva + offset, Site::Arm64(site));
            }
        }
    }
    sites
}

/// Every privileged or machine-answered x64 instruction in the executable sections: RVA ->
/// (kind, length). A linear sweep (capstone) that resynchronises one byte past undecodable
/// bytes.
fn find_x64_sites(
    image: &Image,
    library: &capstone::Library,
) -> Result<BTreeMap<u64, Site>, String> {
    let disassembler = library.x86_64()?;
    let mut sites = BTreeMap::new();
    let unexpected = |what: &str| format!("capstone returned {what}");
    for (section, (rva, raw)) in image.sections.iter().zip(&image.contents) {
        if !section.executable {
            continue;
        }
        let mut offset = 0usize;
        while offset < raw.len() {
            let start = rva + u64::try_from(offset).map_err(|_| unexpected("an offset"))?;
            let mut last = offset;
            for instruction in disassembler.disasm_lite(&raw[offset..], start)?.iter() {
                if let Some(kind) = SiteKind::from_mnemonic(instruction.mnemonic) {
                    let length =
                        u8::try_from(instruction.size).map_err(|_| unexpected("a size"))?;
                    sites.insert(instruction.address, Site::X64 { kind, length });
                }
                let end = (instruction.address.checked_sub(*rva))
                    .and_then(|start| start.checked_add(u64::from(instruction.size)))
                    .and_then(|end| usize::try_from(end).ok())
                    .filter(|&end| end <= raw.len())
                    .ok_or_else(|| unexpected("an instruction outside its code"))?;
                last = end;
            }
            offset = if last == offset { offset + 1 } else { last };
        }
    }
    Ok(sites)
}

// ---- describe ---------------------------------------------------------------------------------

/// SHA-256's round constants (FIPS 180-4, 4.2.2).
#[rustfmt::skip]
const SHA256_K: [u32; 64] = [
    0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4,
    0xab1c_5ed5, 0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe,
    0x9bdc_06a7, 0xc19b_f174, 0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f,
    0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da, 0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7,
    0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967, 0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc,
    0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85, 0xa2bf_e8a1, 0xa81a_664b,
    0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070, 0x19a4_c116,
    0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
    0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7,
    0xc671_78f2,
];

/// SHA-256's initial hash value.
#[rustfmt::skip]
const SHA256_H: [u32; 8] = [
    0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab,
    0x5be0_cd19,
];

/// SHA-256 of `data` (FIPS 180-4).
fn sha256(data: &[u8]) -> [u8; 32] {
    let mut state = SHA256_H;
    let bits = u64::try_from(data.len()).unwrap_or(u64::MAX).wrapping_mul(8);
    let blocks = data.chunks_exact(64);
    let mut tail = blocks.remainder().to_vec();
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&bits.to_be_bytes());
    for block in blocks.chain(tail.chunks_exact(64)) {
        let mut schedule = [0u32; 64];
        for (word, bytes) in schedule.iter_mut().zip(block.chunks_exact(4)) {
            *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        for i in 16..64 {
            let (early, late) = (schedule[i - 15], schedule[i - 2]);
            let s0 = early.rotate_right(7) ^ early.rotate_right(18) ^ (early >> 3);
            let s1 = late.rotate_right(17) ^ late.rotate_right(19) ^ (late >> 10);
            schedule[i] =
                schedule[i - 16].wrapping_add(s0).wrapping_add(schedule[i - 7]).wrapping_add(s1);
        }
        // The working variables a..h.
        let mut v = state;
        for (constant, word) in SHA256_K.iter().zip(schedule) {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let choice = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(choice)
                .wrapping_add(*constant)
                .wrapping_add(word);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let majority = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(majority);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for (value, add) in state.iter_mut().zip(v) {
            *value = value.wrapping_add(add);
        }
    }
    let mut digest = [0u8; 32];
    for (bytes, value) in digest.chunks_exact_mut(4).zip(state) {
        bytes.copy_from_slice(&value.to_be_bytes());
    }
    digest
}

/// `bytes` as `{"length": N, "sha256": hex}`.
fn digest_json(bytes: &[u8]) -> Value {
    let hex = sha256(bytes).iter().fold(String::with_capacity(64), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    });
    json!({"length": bytes.len(), "sha256": hex})
}

/// `describe IMAGE MAP ARCH`: the image and its map as the runner parses them (`parse_image`
/// at the runner's `IMAGE_BASE` with the arch's import limit, `read_map`, `parse_map`,
/// `find_sites`), one JSON object. x64 finds capstone with [`capstone::find_library`].
pub fn describe_command(args: &[String]) -> Result<String, String> {
    let [image_path, map_path, arch_name] = args else {
        return Err("usage: ppm-image-runner describe IMAGE MAP ARCH".to_owned());
    };
    let arch = Arch::from_name(arch_name)
        .ok_or_else(|| format!("arch {}: x64 or arm64", quoted(arch_name)))?;
    let (image_path, map_path) = (Path::new(image_path), Path::new(map_path));
    let image = parse_image(image_path, IMAGE_BASE, arch, arch.max_imports())?;
    let symbols = parse_map(map_path, &image)?;
    let map = read_map(map_path)?;
    let library = match arch {
        Arch::X64 => Some(capstone::Library::load(&capstone::find_library()?)?),
        Arch::Arm64 => None,
    };
    let sites = find_sites(&image, arch, library.as_ref())?;
    let pdata: Vec<Value> = match &image.pdata {
        Pdata::X64(entries) => entries.iter().map(|entry| json!(entry)).collect(),
        Pdata::Arm64(entries) => entries.iter().map(|entry| json!(entry)).collect(),
    };
    let description = json!({
        "base": image.base,
        "size": image.size,
        "preferred_base": image.preferred_base,
        "entry_rva": image.entry_rva,
        "headers": digest_json(&image.headers),
        "sections": image.sections.iter().map(|s| json!({
            "name": s.name,
            "rva": s.rva,
            "size": s.size,
            "raw_size": s.raw_size,
            "readable": s.readable,
            "writable": s.writable,
            "executable": s.executable,
        })).collect::<Vec<_>>(),
        "contents": image.contents.iter().map(|(rva, bytes)| {
            let mut entry = digest_json(bytes);
            entry["rva"] = json!(rva);
            entry
        }).collect::<Vec<_>>(),
        "relocations": image.relocations,
        "imports": image.imports.iter().map(|i| json!([i.dll, i.name, i.iat_rva])).collect::<Vec<_>>(),
        "pdata": pdata,
        "map": map.iter().map(|symbol| json!([symbol.name, symbol.rva])).collect::<Vec<_>>(),
        "symbols": {"rvas": symbols.rvas, "names": symbols.names},
        "sites": sites.iter().map(|(rva, site)| json!([rva, site.to_json()])).collect::<Vec<_>>(),
    });
    Ok(description.to_string())
}

/// The number `0x…` at the start of `operands` (a direct branch's target), hex digits
/// lowercase.
pub fn hex_prefix(operands: &str) -> Option<i128> {
    let digits = operands.strip_prefix("0x")?;
    let length = digits.bytes().take_while(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')).count();
    if length == 0 {
        return None;
    }
    let value = u128::from_str_radix(&digits[..length], 16).unwrap_or(u128::MAX);
    Some(i128::try_from(value).unwrap_or(i128::MAX))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use ppm_image_file::MapSymbol;
    use ppm_image_file::test_image::{image, put, rdata};

    use super::{
        Arch, Arm64Site, DAIF, Image, Import, Pdata, Section, Site, SymbolMap, SystemRegister,
        digest_json, find_sites, functions_of, parse_image_bytes, sha256, system_register,
    };

    const PATH: &str = "test.sys";

    fn parse(bytes: &[u8], arch: Arch) -> Result<Image, String> {
        parse_image_bytes(Path::new(PATH), bytes, 0x1000_0000, arch, 16)
    }

    #[test]
    fn a_small_image_is_read_whole() -> Result<(), String> {
        let image = parse(&image(0x8664, &[0x0F, 0x32, 0xC3]), Arch::X64)?;
        assert_eq!((image.base, image.size), (0x1000_0000, 0x3000));
        assert_eq!((image.preferred_base, image.entry_rva), (0x1_4000_0000, 0x1000));
        assert_eq!(image.headers.len(), 0x400);
        assert_eq!(
            image.sections[0],
            Section {
                name: ".text".to_owned(),
                rva: 0x1000,
                size: 0x20,
                executable: true,
                writable: false,
                readable: true,
                raw_size: 0x200,
            }
        );
        assert_eq!(image.sections[1].name, ".rdata");
        assert!(image.sections[1].writable && !image.sections[1].executable);
        let lengths: Vec<(u64, usize)> =
            image.contents.iter().map(|(rva, bytes)| (*rva, bytes.len())).collect();
        assert_eq!(lengths, [(0x1000, 0x20), (0x2000, 0x300)]);
        assert_eq!(&image.contents[0].1[..3], [0x0F, 0x32, 0xC3]);
        assert_eq!(image.relocations, [0x20F0]);
        let import = Import {
            dll: "ntoskrnl.exe".to_owned(),
            name: "KeBugCheckEx".to_owned(),
            iat_rva: 0x2060,
        };
        assert_eq!(image.imports, [import]);
        assert_eq!(image.pdata, Pdata::X64(vec![[0x1000, 0x1003, 0x2120]]));
        assert!(image.is_executable(0x101F) && !image.is_executable(0x1020));
        Ok(())
    }

    #[test]
    fn an_image_the_runner_cannot_map_is_refused_with_its_reason() {
        let refused = |bytes: &[u8], arch| parse(bytes, arch).err().unwrap_or_default();
        let whole = image(0x8664, &[]);
        assert_eq!(
            refused(&whole, Arch::Arm64),
            "test.sys: not an arm64 image (machine 0x8664: x64); load it with the arch it was \
             built for"
        );
        assert!(refused(&image(0x14C, &[]), Arch::X64).contains("(machine 0x14c: unknown)"));
        let mut huge = whole.clone();
        put(&mut huge, 0x84 + 20 + 56, &0x0400_1000u32.to_le_bytes());
        assert_eq!(
            refused(&huge, Arch::X64),
            "test.sys: SizeOfImage 67112960 exceeds the limit of 67108864"
        );
        let mut small = whole.clone();
        put(&mut small, 0x84 + 20 + 56, &0x2000u32.to_le_bytes());
        assert_eq!(refused(&small, Arch::X64), "test.sys: section .rdata lies outside SizeOfImage");
        let mut highlow = whole.clone();
        put(&mut highlow, rdata(0x2208), &0x30F0u16.to_le_bytes());
        assert_eq!(refused(&highlow, Arch::X64), "test.sys: base relocation type 3 is not DIR64");
        let mut ordinal = whole.clone();
        put(&mut ordinal, rdata(0x2040), &(1u64 << 63 | 5).to_le_bytes());
        assert_eq!(refused(&ordinal, Arch::X64), "test.sys: ntoskrnl.exe import by ordinal 5");
        let none = parse_image_bytes(Path::new(PATH), &whole, 0, Arch::X64, 0);
        assert_eq!(none.err().unwrap_or_default(), "test.sys: 1 imports exceed the limit of 0");
        let mut pdata = whole;
        put(&mut pdata, 0x84 + 20 + 112 + 8 * 3 + 4, &8u32.to_le_bytes());
        assert_eq!(refused(&pdata, Arch::X64), "test.sys: .pdata size 8 is not a multiple of 12");
        let mut arm64 = image(0xAA64, &[]);
        put(&mut arm64, 0x84 + 20 + 112 + 8 * 3 + 4, &12u32.to_le_bytes());
        assert_eq!(refused(&arm64, Arch::Arm64), "test.sys: .pdata size 12 is not a multiple of 8");
    }

    #[test]
    fn arm64_sites_are_the_system_instructions() -> Result<(), String> {
        let words: [u32; 7] = [
            0xD53B_4220, // mrs x0, daif: executed as is
            0xD53B_D041, // mrs x1, tpidr_el0
            0xD51B_4222, // msr daif, x2
            0xD518_C003, // msr (3, 0, 12, 0, 0), x3
            0xD503_42DF, // msr daifset, #2
            0xD503_43FF, // msr daifclr, #3
            0xD503_201F, // nop
        ];
        let code: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
        let image = parse(&image(0xAA64, &code), Arch::Arm64)?;
        let sites = find_sites(&image, Arch::Arm64, None)?;
        let tpidr = SystemRegister { op0: 3, op1: 3, crn: 13, crm: 0, op2: 2 };
        let icc = SystemRegister { op0: 3, op1: 0, crn: 12, crm: 0, op2: 0 };
        let expected = [
            (0x1004, Site::Arm64(Arm64Site::Mrs { register: tpidr, rt: 1 })),
            (0x1008, Site::Arm64(Arm64Site::MsrDaif { rt: 2 })),
            (0x100C, Site::Arm64(Arm64Site::Msr { register: icc, rt: 3 })),
            (0x1010, Site::Arm64(Arm64Site::DaifSet { imm: 2 })),
            (0x1014, Site::Arm64(Arm64Site::DaifClr { imm: 3 })),
        ];
        assert_eq!(sites.into_iter().collect::<Vec<_>>(), expected);
        assert_eq!(system_register(0xD53B_4220), DAIF);
        let json = |site: Site| site.to_json().to_string();
        assert_eq!(json(expected[1].1), r#"["msr_daif",[3,3,4,2,1],2]"#);
        assert_eq!(json(expected[3].1), r#"["daifset",2,null]"#);
        // x64 needs capstone.
        assert!(find_sites(&image, Arch::X64, None).is_err());
        Ok(())
    }

    #[test]
    fn a_maps_functions_are_its_symbols_in_executable_sections() -> Result<(), String> {
        let path = Path::new("test.map");
        let symbol = |name: &str, rva| MapSymbol {
            name: name.to_owned(),
            rva,
            section: 1,
            object: "a.obj".to_owned(),
        };
        let symbols = vec![
            symbol("__ImageBase", 0),
            symbol("DriverEntry", 0x1000),
            symbol("$ehgcr_0_4", 0x1004),
            symbol("helper", 0x1008),
            symbol("helper_alias", 0x1008),
            symbol("some_data", 0x2000),
        ];
        let image = parse(&image(0x8664, &[]), Arch::X64)?;
        let functions = functions_of(path, symbols, &image)?;
        assert_eq!(functions.rvas, [0x1000, 0x1008]);
        assert_eq!(functions.names, ["DriverEntry", "helper"]);
        assert_eq!(functions.lookup(0x100A), Some(("helper", 2)));
        assert_eq!(functions.lookup(0xFFF), None);
        assert_eq!(functions.function_start(0x1007), Some(0x1000));
        assert_eq!(SymbolMap::default().function_start(0), None);
        let data_only = functions_of(path, vec![symbol("x", 0x2000)], &image);
        assert_eq!(
            data_only.err().unwrap_or_default(),
            "test.map: no function symbols in executable sections"
        );
        Ok(())
    }

    #[test]
    fn sha256_is_fips_180_4s() {
        let hex = |data: &[u8]| digest_json(data)["sha256"].as_str().unwrap_or_default().to_owned();
        assert_eq!(hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(hex(long), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        assert_eq!(sha256(&[0u8; 64])[0], 0xf5);
    }

    /// The image file of `bytes` with a map (written to a temporary file) of these symbols.
    fn with_map<T>(
        bytes: &[u8],
        symbols: &[(&str, u64)],
        test: impl FnOnce(&super::ImageFile<'_>) -> T,
    ) -> Result<T, String> {
        use std::fmt::Write as _;
        let mut map = " x\n\n Preferred load address is 0000000140000000\n\n".to_owned();
        for (name, rva) in symbols {
            let _ =
                writeln!(map, " 0001:00000000       {name}   {:016x}     a.o", 0x1_4000_0000 + rva);
        }
        let path = std::env::temp_dir().join(format!(
            "ppm-image-runner-test-{}-{}.map",
            std::process::id(),
            symbols.len()
        ));
        std::fs::write(&path, map).map_err(|error| error.to_string())?;
        let pe = super::parse_pe_file(PATH, bytes);
        let written = pe.as_ref().map_or_else(|error| Err(error.clone()), super::PeFile::written);
        let file = pe.and_then(|pe| {
            super::ImageFile::new(PATH, pe, &written, &path.display().to_string(), "objdump")
        });
        let _ = std::fs::remove_file(&path);
        Ok(test(&file?))
    }

    #[test]
    fn the_image_file_reads_imports_symbols_and_unwind_data() -> Result<(), String> {
        use super::{FileError, RuntimeFunction};
        let mut bytes = image(0x8664, &[0x53, 0x48, 0x83, 0xEC, 0x20, 0xC3]);
        let symbols = [("FxDriverEntry", 0x1000), ("_ZN3ppm5entry17h0123456789abcdefE", 0x1002)];
        let unreadable = with_map(&bytes, &symbols, |file| {
            assert_eq!(file.imports()[0].name.as_deref(), Some("KeBugCheckEx"));
            assert_eq!(file.import_address("NTOSKRNL.EXE", "KeBugCheckEx"), Some(0x2060));
            assert_eq!(file.import_address("ntoskrnl.exe", "KeBugCheckEy"), None);
            assert!(file.exports().is_empty());
            assert_eq!(file.relocations(), [(10, 0x20F0), (0, 0x2000)]);
            assert_eq!(
                file.functions_in_text(),
                [(0x1000, "FxDriverEntry"), (0x1002, symbols[1].0)]
            );
            assert_eq!(file.name_at(0x1001), "FxDriverEntry+0x1");
            assert_eq!(file.name_at(0x1004), "ppm::entry+0x2");
            assert_eq!(file.name_at(0xFFF), "0xfff");
            assert_eq!(
                file.rva_of("x"),
                Err(FileError::Image("symbol x not in the map".to_owned()))
            );
            assert_eq!(file.read(0x1000, 2), Ok(&[0x53, 0x48][..]));
            assert_eq!(
                file.read(0x2300, 0x200),
                Err(FileError::Image("512 bytes at RVA 0x2300 lie outside the image".to_owned()))
            );
            assert_eq!(file.read(0x9000, 4), Err(FileError::Fatal(super::UNFETCHABLE.to_owned())));
            file.runtime_functions().map(<[RuntimeFunction]>::to_vec)
        })?;
        assert_eq!(
            unreadable,
            Err(FileError::Image("UNWIND_INFO at 0x2120: version 0".to_owned()))
        );
        // UNWIND_INFO version 1, prologue 5 bytes, 2 codes: ALLOC_SMALL 32 at 5, PUSH_NONVOL at 1.
        put(&mut bytes, rdata(0x2120), &[0x01, 0x05, 0x02, 0x00, 0x05, 0x32, 0x01, 0x30]);
        let functions = with_map(&bytes, &symbols, |file| {
            let functions = file.runtime_functions().map(<[RuntimeFunction]>::to_vec);
            assert_eq!(
                file.function_containing(0x1002).map(|f| f.map(|f| f.begin)),
                Ok(Some(0x1000))
            );
            assert_eq!(file.function_containing(0x1003).map(|f| f.is_some()), Ok(false));
            functions
        })?;
        let expected = RuntimeFunction {
            begin: 0x1000,
            end: 0x1003,
            unwind: 0x2120,
            frame: 40,
            flags: 0,
            ..RuntimeFunction::default()
        };
        assert_eq!(functions, Ok(vec![expected]));
        Ok(())
    }

    #[test]
    fn disassembly_lines_are_instructions() {
        let output = "\nx.sys:\tfile format coff-x86-64\n\nDisassembly of section .text:\n\n\
                      0000000140001000 <DriverEntry>:\n140001000:     \tpushq\t%r15\n\
                      140001002:     \tsubq\t$3752, %rsp             # imm = 0xEA8  \r\n\
                      140001009:     \tretq\n       ...\n";
        let instructions = super::parse_disassembly(output, 0x1_4000_0000);
        let expected = [
            super::Instruction::new(0x1000, "pushq", "%r15"),
            super::Instruction::new(0x1002, "subq", "$3752, %rsp             # imm = 0xEA8"),
            super::Instruction::new(0x1009, "retq", ""),
        ];
        assert_eq!(instructions, expected);
        let below = super::parse_disassembly("1000: nop", 0x2000);
        assert_eq!(
            (below[0].address, super::signed_hex(below[0].address)),
            (-0x1000, "-0x1000".to_owned())
        );
    }

    #[test]
    fn decode_errors_name_the_invalid_bytes() {
        let message = |bytes: &[u8]| {
            std::str::from_utf8(bytes)
                .map_or_else(|error| super::unicode_decode_error(bytes, &error), str::to_owned)
        };
        assert_eq!(
            message(b"ab\xff"),
            "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte"
        );
        assert_eq!(
            message(b"\xe2(x"),
            "'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte"
        );
        assert_eq!(
            message(b"a\xf0\x9f\x98"),
            "'utf-8' codec can't decode bytes in position 1-3: unexpected end of data"
        );
    }

    #[test]
    fn bisection_finds_the_first_index_not_below_or_above_the_key() {
        let items = [1, 3, 3, 5];
        let left = |key: i32| super::bisect_left(&items, |&item| item < key);
        let right = |key: i32| super::bisect_right(&items, |&item| key < item);
        assert_eq!((left(3), right(3), left(0), right(9)), (1, 3, 0, 4));
    }
}
