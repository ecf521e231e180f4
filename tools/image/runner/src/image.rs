//! The linked driver image as the runner maps it: `parse_image` ([`Image`]), the lld-link map
//! (`read_map`; `parse_map`, its functions: [`SymbolMap`]), the machine-answered instructions
//! (`find_sites`: [`Site`]) and `system_register` — plus the `describe IMAGE MAP ARCH` command
//! that prints all of it as one JSON object (`tools/image/tests/test_describe.py` runs it;
//! `tools/image/ppm_image/broken_image.py` reads the image it breaks through it).
//!
//! The image checks (`check`, [`crate::check_image`] and [`crate::stack`]) read the same file
//! through [`ImageFile`]: the PE file as pefile's full load reads it (its export directory too,
//! and the file as pefile writes it back to compute its checksum, [`PeFile::written`]), with
//! its lld-link map, its decoded `.pdata` (by [`crate::seh`] on x64 and
//! [`crate::arm64_unwind`] on ARM64) and `llvm-objdump -d`'s disassembly.
//!
//! The PE file is read by hand as pefile (2024.8.26, pinned in `tools/image/requirements.txt`;
//! `broken_image.py` writes with it) reads it, following pefile where it is lenient (the
//! section table sorted by address, data past a section's raw data cut off, a relocation block
//! ended by a repeated entry, import entries with invalid names skipped, a descriptor without
//! entries skipped), so that both read the same bytes. Every read of the file is
//! bounds-checked: a broken file is an error, never a panic.
//!
//! Limits: an image of at most 64 MiB (`SizeOfImage`) and `max_imports` imports; a map of at most
//! 16 MiB.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::capstone;
use crate::layout::{IMAGE_BASE, PAGE};
use crate::seh::{Scope, UnwindError};

/// The largest image (`SizeOfImage`, page-rounded) the runner maps.
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;
/// The largest map file read (in characters of its decoded text, see `decode_map`).
pub const MAX_MAP_BYTES: usize = 16 << 20;

/// `IMAGE_FILE_MACHINE_AMD64`.
pub const MACHINE_X64: u16 = 0x8664;
/// `IMAGE_FILE_MACHINE_ARM64`.
pub const MACHINE_ARM64: u16 = 0xAA64;

/// `IMAGE_SCN_MEM_EXECUTE`.
pub const SCN_MEM_EXECUTE: u32 = 0x2000_0000;
/// `IMAGE_SCN_MEM_READ`.
pub const SCN_MEM_READ: u32 = 0x4000_0000;
/// `IMAGE_SCN_MEM_WRITE`.
pub const SCN_MEM_WRITE: u32 = 0x8000_0000;

/// `IMAGE_REL_BASED_ABSOLUTE`: padding.
const REL_BASED_ABSOLUTE: u16 = 0;
/// `IMAGE_REL_BASED_DIR64`.
const REL_BASED_DIR64: u16 = 10;

/// The export directory's index in the data directories.
const DIRECTORY_EXPORT: usize = 0;
/// The import directory's index in the data directories.
const DIRECTORY_IMPORT: usize = 1;
/// The exception directory (`.pdata`).
const DIRECTORY_EXCEPTION: usize = 3;
/// The base relocation directory.
const DIRECTORY_BASERELOC: usize = 5;
/// The debug directory: pefile parses the directories in the order import, export, resource,
/// debug, base relocations, and stops at the first one the optional header lacks.
const DIRECTORY_DEBUG: usize = 6;

/// pefile's limits and heuristics, followed so that the reads agree with pefile's: the most
/// sections read.
const PEFILE_MAX_SECTIONS: usize = 0x800;
/// The longest DLL name read.
const PEFILE_MAX_DLL_LENGTH: i64 = 0x200;
/// The longest import name read.
const PEFILE_MAX_IMPORT_NAME_LENGTH: i64 = 0x200;
/// Thunks read in all (ILT and IAT, their terminators included) before pefile stops.
const PEFILE_MAX_IMPORT_SYMBOLS: usize = 0x2000;
/// A thunk table whose name RVAs spread wider than this is bogus.
const PEFILE_MAX_ADDRESS_SPREAD: u64 = 128 << 20;
/// A thunk table that repeats a name RVA this often is bogus.
const PEFILE_MAX_REPEATED_ADDRESSES: usize = 15;
/// The longest export name read.
const PEFILE_MAX_SYMBOL_NAME_LENGTH: i64 = 0x200;
/// Exports read before pefile stops.
const PEFILE_MAX_SYMBOL_EXPORTS: usize = 0x2000;
/// An export address repeated more often than this ends the ordinal-only exports.
const PEFILE_MAX_REPEATED_SYMBOL: usize = 120;
/// What pefile calls an import or DLL name whose characters it does not accept.
const INVALID_NAME: &[u8] = b"*invalid*";

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

/// The name of a COFF machine the runner knows.
const fn machine_name(machine: u16) -> Option<&'static str> {
    match machine {
        MACHINE_X64 => Some("x64"),
        MACHINE_ARM64 => Some("arm64"),
        _ => None,
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

// ---- error texts ---------------------------------------------------------------------------------

/// `text` quoted as error texts quote pefile's messages, paths and arguments: in single quotes
/// (double ones when it holds a single quote and no double one), escaping a backslash (`\\`),
/// newline, CR and tab (`\n`, `\r`, `\t`), the quote, and other control characters and DEL
/// (`\xNN`).
pub fn quoted(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// An OS error's `strerror` text (Rust's text less its ` (os error N)`).
pub fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match error.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .map_or_else(|| text.clone(), str::to_owned),
        None => text,
    }
}

/// The text of the OS error opening `path`: `[Errno N] strerror: 'path'`.
pub fn os_error_text(error: &std::io::Error, path: &Path) -> String {
    error.raw_os_error().map_or_else(
        || error.to_string(),
        |code| {
            format!("[Errno {code}] {}: {}", strerror(error), quoted(&path.display().to_string()))
        },
    )
}

// ---- bounded reads ------------------------------------------------------------------------------

/// The little-endian `u16` at `offset` of `data`.
pub fn u16_at(data: &[u8], offset: usize) -> Option<u16> {
    let bytes = data.get(offset..offset.checked_add(2)?)?;
    Some(u16::from_le_bytes(bytes.try_into().ok()?))
}

/// The little-endian `u32` at `offset` of `data`.
pub fn u32_at(data: &[u8], offset: usize) -> Option<u32> {
    let bytes = data.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// The little-endian `u64` at `offset` of `data`.
fn u64_at(data: &[u8], offset: usize) -> Option<u64> {
    let bytes = data.get(offset..offset.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// `data[start..end]` where a negative index counts from the end and every index is clamped to
/// the data (empty when `start` lies at or past `end`).
fn clamped_slice(data: &[u8], start: i64, end: i64) -> &[u8] {
    let length = i64::try_from(data.len()).unwrap_or(i64::MAX);
    let clamp = |index: i64| if index < 0 { (index + length).max(0) } else { index.min(length) };
    let (Ok(start), Ok(end)) = (usize::try_from(clamp(start)), usize::try_from(clamp(end))) else {
        return &[];
    };
    data.get(start..end).unwrap_or(&[])
}

/// `value` as a signed RVA or offset (saturated: pefile computes with unbounded integers).
pub fn wide(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `bytes` up to its first NUL.
fn up_to_nul(bytes: &[u8]) -> &[u8] {
    bytes.iter().position(|&byte| byte == 0).map_or(bytes, |end| &bytes[..end])
}

/// `bytes` decoded as UTF-8, each invalid sequence as U+FFFD.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---- the PE file, read as pefile reads it -------------------------------------------------

/// One entry of the section table, with pefile's adjusted addresses.
#[derive(Clone, Debug)]
pub struct RawSection {
    /// `Name`.
    pub name: [u8; 8],
    /// `Misc_VirtualSize`.
    pub virtual_size: u32,
    /// `VirtualAddress`.
    pub virtual_address: u32,
    /// `SizeOfRawData`.
    pub raw_size: u32,
    /// `PointerToRawData`.
    raw_pointer: u32,
    /// `Characteristics`.
    pub characteristics: u32,
    /// The next section's `VirtualAddress` (by address), if any.
    next_virtual_address: Option<u32>,
    /// `VirtualAddress` aligned down to the section alignment (pefile's `VirtualAddress_adj`).
    virtual_address_adjusted: i64,
    /// `PointerToRawData` aligned down to 512 (pefile's `PointerToRawData_adj`).
    raw_pointer_adjusted: i64,
}

/// An import entry as pefile lists it.
pub struct RawImport<'a> {
    /// The DLL's name (or `*invalid*`).
    pub dll: &'a [u8],
    /// The function's name, or `None` when imported by ordinal.
    pub name: Option<&'a [u8]>,
    /// The ordinal, when imported by ordinal.
    pub ordinal: Option<u64>,
    /// The RVA of its IAT slot.
    pub iat_rva: u64,
}

/// An export entry as pefile lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawExport<'a> {
    /// Its name, or `None` when exported by ordinal only.
    pub name: Option<&'a [u8]>,
    /// Its ordinal (`Base` plus its index in `AddressOfFunctions`).
    pub ordinal: i64,
}

/// An `UNWIND_INFO` as pefile's full load reads and re-packs it.
enum Repacked {
    /// Its (file offset, bytes as written back; `None` when the file cuts it short).
    Write((usize, Option<Vec<u8>>)),
    /// pefile stops reading the exception directory here.
    Stop,
}

/// The headers of a PE file and the reads over its data that pefile makes.
#[derive(Clone, Debug)]
pub struct PeFile<'a> {
    /// The whole file.
    data: &'a [u8],
    /// `Machine`.
    pub machine: u16,
    /// `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// `Subsystem`.
    pub subsystem: u16,
    /// `DllCharacteristics`.
    pub dll_characteristics: u16,
    /// The optional header's file offset.
    optional_offset: usize,
    /// The (file offset, size) of each header structure pefile unpacks, in its order: the
    /// DOS, NT and file headers, the optional header (PE32's layout, then PE32+'s for a PE32+
    /// file) and each data directory. Where the file ends within one, pefile reads zeros.
    header_structures: Vec<(usize, usize)>,
    /// Whether the optional header is PE32+ (8-byte thunks), else PE32's layout.
    plus: bool,
    /// `ImageBase`.
    pub image_base: u64,
    /// `AddressOfEntryPoint`.
    pub entry: u32,
    /// `SizeOfImage`.
    pub size_of_image: u32,
    /// `SizeOfHeaders`.
    size_of_headers: u32,
    /// The data directories: (`VirtualAddress`, `Size`).
    pub directories: Vec<(u32, u32)>,
    /// The section table, sorted by `VirtualAddress`.
    pub sections: Vec<RawSection>,
    /// The length of pefile's `header`: up to the first section's raw data.
    header_length: usize,
}

/// `value` aligned down to the section alignment, as pefile's `adjust_SectionAlignment`.
const fn adjust_section_alignment(value: u32, section_alignment: u32, file_alignment: u32) -> u32 {
    let alignment = if section_alignment < 0x1000 { file_alignment } else { section_alignment };
    if alignment != 0 && !value.is_multiple_of(alignment) {
        alignment * (value / alignment)
    } else {
        value
    }
}

/// Bytes `offset..offset + N` of `data`, zero-padded past its end.
fn padded<const N: usize>(data: &[u8], offset: usize) -> [u8; N] {
    let mut bytes = [0u8; N];
    let available = data.get(offset..).unwrap_or(&[]);
    let count = available.len().min(N);
    bytes[..count].copy_from_slice(&available[..count]);
    bytes
}

/// The optional header's fields the runner reads.
struct OptionalHeader {
    /// PE32+.
    plus: bool,
    /// `AddressOfEntryPoint`.
    entry: u32,
    /// `ImageBase`.
    image_base: u64,
    /// `SectionAlignment`.
    section_alignment: u32,
    /// `FileAlignment`.
    file_alignment: u32,
    /// `SizeOfImage`.
    size_of_image: u32,
    /// `SizeOfHeaders`.
    size_of_headers: u32,
    /// `CheckSum`.
    checksum: u32,
    /// `Subsystem`.
    subsystem: u16,
    /// `DllCharacteristics`.
    dll_characteristics: u16,
    /// `NumberOfRvaAndSizes`.
    directories: u32,
    /// Its size without the data directories (96 or 112 bytes).
    size: usize,
}

impl OptionalHeader {
    /// The optional header at `offset`, zero-padded when the file ends within it but not
    /// before pefile's minimum (69 bytes; 73 for PE32+).
    fn read(data: &[u8], offset: usize) -> Result<Self, &'static str> {
        const MISSING: &str = "No Optional Header found, invalid PE32 or PE32+ file.";
        let available = data.len().saturating_sub(offset);
        if available < 69 {
            return Err(MISSING);
        }
        let header: [u8; 112] = padded(data, offset);
        let plus = u16_at(&header, 0) == Some(0x20B);
        if plus && available < 73 {
            return Err(MISSING);
        }
        let field = |at: usize| u32_at(&header, at).unwrap_or(0);
        let image_base = if plus { u64_at(&header, 24).unwrap_or(0) } else { u64::from(field(28)) };
        let size = if plus { 112 } else { 96 };
        // Past the file's end the header reads as zeros, as pefile pads it.
        let directories = field(if plus { 108 } else { 92 });
        Ok(Self {
            plus,
            entry: field(16),
            image_base,
            section_alignment: field(32),
            file_alignment: field(36),
            size_of_image: field(56),
            size_of_headers: field(60),
            checksum: field(64),
            subsystem: u16_at(&header, 68).unwrap_or(0),
            dll_characteristics: u16_at(&header, 70).unwrap_or(0),
            directories,
            size,
        })
    }
}

impl<'a> PeFile<'a> {
    /// The headers of `data`; pefile's message when it refuses them.
    pub fn parse(data: &'a [u8]) -> Result<Self, &'static str> {
        if data.is_empty() {
            return Err("The file is empty");
        }
        if data.len() < 64 {
            return Err("Unable to read the DOS Header, possibly a truncated file.");
        }
        match u16_at(data, 0) {
            Some(0x4D5A) => return Err("Probably a ZM Executable (not a PE file)."),
            Some(0x5A4D) => {}
            _ => return Err("DOS Header magic not found."),
        }
        let lfanew = u32_at(data, 0x3C).ok_or("DOS Header magic not found.")?;
        let nt = usize::try_from(lfanew).unwrap_or(usize::MAX);
        if nt > data.len() {
            return Err("Invalid e_lfanew value, probably not a PE file");
        }
        let signature = u32_at(data, nt).unwrap_or(0);
        match signature & 0xFFFF {
            _ if signature == 0 => return Err("NT Headers not found."),
            0x454E => return Err("Invalid NT Headers signature. Probably a NE file"),
            0x454C => return Err("Invalid NT Headers signature. Probably a LE file"),
            0x584C => return Err("Invalid NT Headers signature. Probably a LX file"),
            0x5A56 => return Err("Invalid NT Headers signature. Probably a TE file"),
            _ if signature != 0x4550 => return Err("Invalid NT Headers signature."),
            _ => {}
        }
        let coff = nt + 4;
        if data.len() < coff + 20 {
            return Err("File Header missing");
        }
        let machine = u16_at(data, coff).unwrap_or(0);
        let section_count = usize::from(u16_at(data, coff + 2).unwrap_or(0));
        let optional_size = usize::from(u16_at(data, coff + 16).unwrap_or(0));
        let optional_offset = coff + 20;
        let optional = OptionalHeader::read(data, optional_offset)?;
        let directories = read_directories(data, optional_offset + optional.size, &optional);
        let table = optional_offset + optional_size;
        let sections = read_sections(data, table, section_count, &optional)?;
        let table_end = if section_count > 0 && !sections.is_empty() {
            table + 40 * section_count
        } else {
            table
        };
        let lowest = sections
            .iter()
            .filter(|s| s.raw_pointer > 0)
            .map(|s| usize::try_from(s.raw_pointer & !0x1FF).unwrap_or(usize::MAX))
            .min();
        let header_length = match lowest {
            Some(lowest) if lowest != 0 && lowest >= table_end => lowest,
            _ => table_end,
        };
        let mut header_structures = vec![(0, 64), (nt, 4), (coff, 20), (optional_offset, 96)];
        if optional.plus {
            header_structures.push((optional_offset, 112));
        }
        let first_directory = optional_offset + optional.size;
        header_structures
            .extend((0..directories.len()).map(|index| (first_directory + 8 * index, 8)));
        Ok(Self {
            data,
            machine,
            time_date_stamp: u32_at(data, coff + 4).unwrap_or(0),
            checksum: optional.checksum,
            subsystem: optional.subsystem,
            dll_characteristics: optional.dll_characteristics,
            optional_offset,
            header_structures,
            plus: optional.plus,
            image_base: optional.image_base,
            entry: optional.entry,
            size_of_image: optional.size_of_image,
            size_of_headers: optional.size_of_headers,
            directories,
            sections,
            header_length: header_length.min(data.len()),
        })
    }

    /// pefile's `header`.
    fn header(&self) -> &'a [u8] {
        self.data.get(..self.header_length).unwrap_or(self.data)
    }

    /// The data directory `index` (`None` when the optional header has fewer).
    pub fn directory(&self, index: usize) -> Option<(u32, u32)> {
        self.directories.get(index).copied()
    }

    /// The file's length, signed.
    pub fn length(&self) -> i64 {
        i64::try_from(self.data.len()).unwrap_or(i64::MAX)
    }

    /// Whether `section` holds `rva` (pefile's `contains_rva`: its raw size when the file
    /// holds it, else its virtual size; never past the next section's start).
    fn contains_rva(&self, section: &RawSection, rva: i64) -> bool {
        let raw_size = i64::from(section.raw_size);
        let virtual_size = i64::from(section.virtual_size);
        let mut size = if self.length() - section.raw_pointer_adjusted < raw_size {
            virtual_size
        } else {
            raw_size.max(virtual_size)
        };
        if let Some(next) = section.next_virtual_address {
            let next = i64::from(next);
            if next > i64::from(section.virtual_address)
                && section.virtual_address_adjusted + size > next
            {
                size = next - section.virtual_address_adjusted;
            }
        }
        section.virtual_address_adjusted <= rva && rva < section.virtual_address_adjusted + size
    }

    /// The first section (by address) holding `rva`.
    pub fn section_by_rva(&self, rva: i64) -> Option<&RawSection> {
        self.sections.iter().find(|section| self.contains_rva(section, rva))
    }

    /// pefile's `SectionStructure.get_data(start, length)`: the file's bytes from `start`
    /// (the section's start when `None`), at most `length` (its raw size when `None`), never
    /// past its raw data.
    pub fn section_data(
        &self,
        section: &RawSection,
        start: Option<i64>,
        length: Option<i64>,
    ) -> &'a [u8] {
        let offset = start.map_or(section.raw_pointer_adjusted, |start| {
            start - section.virtual_address_adjusted + section.raw_pointer_adjusted
        });
        let mut end = offset.saturating_add(length.unwrap_or_else(|| i64::from(section.raw_size)));
        let limit = i64::from(section.raw_pointer) + i64::from(section.raw_size);
        if end > limit {
            end = limit;
        }
        clamped_slice(self.data, offset, end)
    }

    /// pefile's `get_data(rva, length)`: `length` bytes at `rva` or fewer where its section's
    /// raw data (or the file) ends; `None` where pefile raises "data at RVA can't be fetched".
    pub fn get_data(&self, rva: i64, length: i64) -> Option<&'a [u8]> {
        if let Some(section) = self.section_by_rva(rva) {
            return Some(self.section_data(section, Some(rva), Some(length)));
        }
        let end = rva.saturating_add(length);
        if rva < i64::try_from(self.header_length).unwrap_or(i64::MAX) {
            return Some(clamped_slice(self.header(), rva, end));
        }
        (rva < self.length()).then(|| clamped_slice(self.data, rva, end))
    }

    /// pefile's `get_offset_from_rva`.
    pub fn offset_of_rva(&self, rva: i64) -> Option<i64> {
        self.section_by_rva(rva).map_or_else(
            || (rva < self.length()).then_some(rva),
            |section| Some(rva - section.virtual_address_adjusted + section.raw_pointer_adjusted),
        )
    }

    /// pefile's `get_string_at_rva(rva, max_length)`: up to its NUL.
    pub fn string_at_rva(&self, rva: i64, max_length: i64) -> &'a [u8] {
        let bytes = self.section_by_rva(rva).map_or_else(
            || clamped_slice(self.data, rva, rva.saturating_add(max_length)),
            |section| self.section_data(section, Some(rva), Some(max_length)),
        );
        up_to_nul(bytes)
    }

    /// The thunk size, ordinal flag and name RVA mask.
    const fn thunk_format(&self) -> (i64, u64, u64) {
        if self.plus { (8, 1 << 63, 0x7FFF_FFFF_FFFF_FFFF) } else { (4, 1 << 31, 0x7FFF_FFFF) }
    }

    /// pefile's `get_import_table`: the nonzero thunks from `rva` up to the first zero one;
    /// `None` where one cannot be read, empty where the table looks bogus.
    fn import_table(&self, rva: u32, max_length: i64, total: &mut usize) -> Option<Vec<u64>> {
        let (size, ordinal_flag, _) = self.thunk_format();
        let start = i64::from(rva);
        let mut rva = start;
        let mut table = Vec::new();
        let mut repeated = 0;
        let mut seen_32 = AddressSet::default();
        let mut seen_64 = AddressSet::default();
        while rva != 0 {
            if rva >= start.saturating_add(max_length) || *total > PEFILE_MAX_IMPORT_SYMBOLS {
                break;
            }
            *total += 1;
            if repeated >= PEFILE_MAX_REPEATED_ADDRESSES
                || seen_32.spread() > PEFILE_MAX_ADDRESS_SPREAD
                || seen_64.spread() > PEFILE_MAX_ADDRESS_SPREAD
            {
                return Some(Vec::new());
            }
            let bytes = self.get_data(rva, size)?;
            let value = if self.plus { u64_at(bytes, 0)? } else { u64::from(u32_at(bytes, 0)?) };
            if i128::from(value) >= i128::from(start) && i128::from(value) <= i128::from(rva) {
                break;
            }
            if value != 0 {
                if value & ordinal_flag != 0 {
                    if value & 0x7FFF_FFFF > 0xFFFF {
                        return Some(Vec::new());
                    }
                } else {
                    let set = if value >= 1 << 32 { &mut seen_64 } else { &mut seen_32 };
                    if !set.insert(value) {
                        repeated += 1;
                    }
                }
            }
            if value == 0 {
                break;
            }
            rva += size;
            table.push(value);
        }
        Some(table)
    }

    /// pefile's `parse_imports`: one descriptor's entries; `Err` where pefile aborts it.
    fn descriptor_imports(
        &self,
        lookup: u32,
        address: u32,
        max_length: i64,
        total: &mut usize,
    ) -> Result<Vec<RawImport<'a>>, ()> {
        let (size, ordinal_flag, mask) = self.thunk_format();
        let lookup_table = self.import_table(lookup, max_length, total);
        let address_table = self.import_table(address, max_length, total);
        // The lookup table, else the address table (the same in an unbound image).
        let table = [lookup_table, address_table].into_iter().flatten().find(|t| !t.is_empty());
        let Some(table) = table else { return Ok(Vec::new()) };
        let mut imports = Vec::new();
        let mut invalid = 0;
        for (index, &entry) in table.iter().enumerate() {
            let (mut ordinal, mut name) = (None, None);
            if entry & ordinal_flag != 0 {
                ordinal = Some(entry & 0xFFFF);
            } else if self.get_data(wide(entry & mask), 2).is_some() {
                let text = self
                    .string_at_rva(wide(entry).saturating_add(2), PEFILE_MAX_IMPORT_NAME_LENGTH);
                name = Some(if is_valid_function_name(text) { text } else { INVALID_NAME });
            }
            if ordinal.is_none() && name.is_none() {
                return Err(()); // "Invalid entries, aborting parsing."
            }
            if name == Some(INVALID_NAME) {
                if invalid > 1000 && invalid == index {
                    return Err(()); // "Too many invalid names, aborting parsing."
                }
                invalid += 1;
                continue;
            }
            if ordinal.is_some_and(|ordinal| ordinal != 0)
                || name.is_some_and(|name| !name.is_empty())
            {
                let offset =
                    u64::try_from(index).unwrap_or(u64::MAX).saturating_mul(size.unsigned_abs());
                imports.push(RawImport {
                    dll: &[],
                    name,
                    ordinal,
                    iat_rva: u64::from(address).saturating_add(offset),
                });
            }
        }
        Ok(imports)
    }

    /// pefile's `parse_import_directory`: every import, in order.
    pub fn imports(&self) -> Vec<RawImport<'a>> {
        let Some((directory, _)) = self.directory(DIRECTORY_IMPORT) else { return Vec::new() };
        if directory == 0 {
            return Vec::new();
        }
        let mut rva = i64::from(directory);
        let mut errors = 0;
        let mut total = 0;
        let mut imports = Vec::new();
        while let Some(descriptor) = self.get_data(rva, 20) {
            let Some(file_offset) = self.offset_of_rva(rva) else {
                return Vec::new(); // pefile gives up on the whole directory
            };
            if descriptor.len() < 20 || descriptor.iter().all(|&byte| byte == 0) {
                break;
            }
            let field = |at| u32_at(descriptor, at).unwrap_or(0);
            let (lookup, name, address) = (field(0), field(12), field(16));
            rva += 20;
            // A table before its descriptor ends there; else at the file's end.
            let max_length = if rva > i64::from(lookup) || rva > i64::from(address) {
                (rva - i64::from(lookup)).max(rva - i64::from(address))
            } else {
                self.length() - file_offset
            };
            let entries = self.descriptor_imports(lookup, address, max_length, &mut total);
            let entries = entries.unwrap_or_default();
            if errors > 5 {
                break;
            }
            if entries.is_empty() {
                errors += 1;
                continue;
            }
            let dll = self.string_at_rva(i64::from(name), PEFILE_MAX_DLL_LENGTH);
            let dll = if is_valid_dos_filename(dll) { dll } else { INVALID_NAME };
            if !dll.is_empty() {
                imports.extend(entries.into_iter().map(|entry| RawImport { dll, ..entry }));
            }
        }
        imports
    }

    /// pefile's `parse_relocations_directory`: every base relocation's (type, RVA), in order.
    pub fn relocations(&self) -> Vec<(u16, u64)> {
        // pefile parses the base relocations after the debug directory: none without it.
        if self.directory(DIRECTORY_DEBUG).is_none() {
            return Vec::new();
        }
        let Some((directory, size)) = self.directory(DIRECTORY_BASERELOC) else {
            return Vec::new();
        };
        if directory == 0 {
            return Vec::new();
        }
        let mut rva = i64::from(directory);
        let end = rva + i64::from(size);
        let mut relocations = Vec::new();
        while rva < end {
            let Some(block) = self.get_data(rva, 8) else { break };
            if self.offset_of_rva(rva).is_none() || block.len() < 8 {
                break;
            }
            let page = u32_at(block, 0).unwrap_or(0);
            let block_size = u32_at(block, 4).unwrap_or(0);
            if page > self.size_of_image || block_size > self.size_of_image {
                break;
            }
            let entries = self.get_data(rva + 8, i64::from(block_size) - 8);
            if let (Some(entries), Some(_)) = (entries, self.offset_of_rva(rva + 8)) {
                let mut seen = HashSet::new();
                for word in entries.chunks_exact(2) {
                    let word = u16::from_le_bytes([word[0], word[1]]);
                    if !seen.insert(word) {
                        break; // "Overlapping offsets in relocation data"
                    }
                    relocations.push((word >> 12, u64::from(page) + u64::from(word & 0x0FFF)));
                }
            }
            if block_size == 0 {
                break;
            }
            rva += i64::from(block_size);
        }
        relocations
    }

    /// pefile's `parse_export_directory` (as its full load runs it, after the import
    /// directory's entry): every export, named ones first; empty where pefile gives up on the
    /// directory.
    pub fn exports(&self) -> Vec<RawExport<'a>> {
        // pefile stops before the export directory when the optional header lacks the
        // import directory's entry.
        if self.directories.len() <= DIRECTORY_IMPORT {
            return Vec::new();
        }
        let Some((rva, size)) = self.directory(DIRECTORY_EXPORT) else { return Vec::new() };
        if rva == 0 {
            return Vec::new();
        }
        self.export_entries(i64::from(rva), i64::from(size)).unwrap_or_default()
    }

    /// The export directory at `rva` (`size` bytes); `None` where pefile gives up on it.
    fn export_entries(&self, rva: i64, size: i64) -> Option<Vec<RawExport<'a>>> {
        let header = self.get_data(rva, 40)?;
        self.offset_of_rva(rva)?;
        if header.len() < 40 {
            return None;
        }
        let field = |at| i64::from(u32_at(header, at).unwrap_or(0));
        let (base, function_count, name_count) = (field(16), field(20), field(24));
        let (functions_rva, names_rva, ordinals_rva) = (field(28), field(32), field(36));
        // Each array is read up to the file's end at most.
        let array = |at: i64, length: i64| {
            let until_end = self.length() - self.offset_of_rva(at)?;
            self.get_data(at, until_end.min(length))
        };
        let name_rvas = array(names_rva, name_count.saturating_mul(4))?;
        let name_ordinals = array(ordinals_rva, name_count.saturating_mul(4))?;
        let function_rvas = array(functions_rva, function_count.saturating_mul(4))?;
        let word = |data: &[u8], index: i64| {
            u16_at(data, usize::try_from(index).ok()?.checked_mul(2)?).map(i64::from)
        };
        let dword = |data: &[u8], index: i64| {
            u32_at(data, usize::try_from(index).ok()?.checked_mul(4)?).map(i64::from)
        };
        // An array is read at most to the end of its section's raw data.
        let bound = |at: i64| {
            self.section_by_rva(at).map_or_else(
                || self.length(),
                |section| {
                    let data = self.section_data(section, None, None);
                    i64::from(section.virtual_address) + wide(data.len() as u64) - at
                },
            ) / 4
        };
        let forwarded = |address: i64| rva <= address && address < rva.saturating_add(size);
        let mut exports = Vec::new();
        let mut failures_left = 10;
        let mut repeats: HashMap<(&[u8], i64), usize> = HashMap::new();
        for index in 0..name_count.min(bound(names_rva)) {
            let ordinal = word(name_ordinals, index);
            let functions_length = wide(function_rvas.len() as u64);
            let address = match ordinal {
                Some(ordinal) if ordinal * 4 < functions_length => dword(function_rvas, ordinal),
                _ => return None,
            };
            let ordinal = ordinal.unwrap_or(0);
            let Some(address) = address.filter(|&address| address != 0) else { continue };
            if forwarded(address) && self.offset_of_rva(address).is_none() {
                continue;
            }
            // Without a name's RVA the name is no valid function name: the loop ends.
            let Some(name_address) = dword(name_rvas, index) else { break };
            let name = self.string_at_rva(name_address, PEFILE_MAX_SYMBOL_NAME_LENGTH);
            if !is_valid_relaxed_function_name(name) {
                break;
            }
            if self.offset_of_rva(name_address).is_none() {
                failures_left -= 2;
                if failures_left <= 0 {
                    break;
                }
                continue;
            }
            let count = repeats.entry((name, address)).or_insert(0);
            *count += 1;
            if *count > 10 || repeats.len() > PEFILE_MAX_SYMBOL_EXPORTS {
                break;
            }
            // pefile records the entry's file offsets: an RVA without one aborts the directory.
            self.offset_of_rva(ordinals_rva + 2 * index)?;
            self.offset_of_rva(functions_rva + 4 * ordinal)?;
            exports.push(RawExport { name: Some(name), ordinal: base + ordinal });
        }
        let ordinals: HashSet<i64> = exports.iter().map(|export| export.ordinal).collect();
        let mut failures_left = 10;
        let mut by_address: HashMap<Option<i64>, usize> = HashMap::new();
        for index in 0..function_count.min(bound(functions_rva)) {
            if ordinals.contains(&(index + base)) {
                continue;
            }
            let address = dword(function_rvas, index);
            if address.is_none() {
                failures_left -= 1;
                if failures_left <= 0 {
                    return None;
                }
            }
            if address == Some(0) {
                continue;
            }
            let count = by_address.entry(address).or_insert(0);
            *count += 1;
            if *count > PEFILE_MAX_REPEATED_SYMBOL || by_address.len() > PEFILE_MAX_SYMBOL_EXPORTS {
                break;
            }
            exports.push(RawExport { name: None, ordinal: base + index });
        }
        Some(exports)
    }

    /// The file as pefile's `write` gives it back: its bytes, extended by zeros where a
    /// header structure read past the file's end (a truncated optional header or data
    /// directory) is written back after it, and each x64 `UNWIND_INFO` of the exception
    /// directory as pefile re-packs it ([`PeFile::unwind_writes`]).
    ///
    /// # Errors
    ///
    /// pefile's error writing an `UNWIND_INFO` it could not read whole.
    pub fn written(&self) -> Result<Vec<u8>, String> {
        let mut length = self.data.len();
        for &(offset, size) in &self.header_structures {
            // A structure starting past the end is appended at the end.
            length = if offset >= length { length + size } else { length.max(offset + size) };
        }
        let mut data = self.data.to_vec();
        data.resize(length, 0);
        for (offset, bytes) in self.unwind_writes() {
            let bytes = bytes.ok_or("'UnwindInfo' object has no attribute 'UnwindCodes'")?;
            let start = offset.min(data.len());
            let end = offset.saturating_add(bytes.len()).min(data.len());
            data.splice(start..end, bytes);
        }
        Ok(data)
    }

    /// The structures pefile's full load reads from an x64 exception directory, in its order,
    /// as its `write` puts them back: each `RUNTIME_FUNCTION` (its 12 bytes as read) and its
    /// `UNWIND_INFO` (file offset, bytes): the header and unwind codes as read, the code slot
    /// that pads them to an even count zeroed, and the trailing handler or chain field as read
    /// (zeros when the flags name neither); `None` for one whose bytes the file cuts short.
    /// pefile parses the exception directory last, after the delay import directory's entry.
    fn unwind_writes(&self) -> Vec<(usize, Option<Vec<u8>>)> {
        const DELAY_IMPORT: usize = 13;
        let mut writes = Vec::new();
        if self.machine != MACHINE_X64 || self.directories.len() <= DELAY_IMPORT {
            return writes;
        }
        let Some((rva, size)) = self.directory(DIRECTORY_EXCEPTION) else { return writes };
        if rva == 0 {
            return writes;
        }
        let mut rva = i64::from(rva);
        let mut read: HashMap<u32, (usize, Option<Vec<u8>>)> = HashMap::new();
        for _ in 0..size / 12 {
            let (Some(entry), Some(offset)) = (self.get_data(rva, 12), self.offset_of_rva(rva))
            else {
                break;
            };
            if entry.len() < 12 {
                break;
            }
            writes.push((usize::try_from(offset).unwrap_or(usize::MAX), Some(entry.to_vec())));
            let unwind = u32_at(entry, 8).unwrap_or(0);
            if unwind & 1 == 0 {
                if let Some(write) = read.get(&unwind) {
                    writes.push(write.clone());
                } else {
                    match self.repacked_unwind_info(unwind) {
                        Repacked::Write(write) => {
                            read.insert(unwind, write.clone());
                            writes.push(write);
                        }
                        Repacked::Stop => break,
                    }
                }
            }
            rva += 12;
        }
        writes
    }

    /// The `UNWIND_INFO` at `rva` as pefile re-packs it (see [`PeFile::unwind_writes`]).
    fn repacked_unwind_info(&self, rva: u32) -> Repacked {
        let rva = i64::from(rva);
        let Some(offset) = self.offset_of_rva(rva) else { return Repacked::Stop };
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let Some(data) = self.get_data(rva, 4).filter(|data| data.len() >= 4) else {
            return Repacked::Stop;
        };
        let (count, flags) = (usize::from(data[2]), data[0] >> 3);
        let handler_at = 4 + 2 * ((count + 1) & !1);
        let size = handler_at + if flags == 0 { 0 } else { 4 };
        let data = if size > 4 {
            match self.get_data(rva, wide(size as u64)) {
                Some(data) if data.len() < 4 => return Repacked::Stop,
                Some(data) if data.len() < size => return Repacked::Write((offset, None)),
                Some(data) => data,
                None => return Repacked::Stop,
            }
        } else {
            data
        };
        if !matches!(data[0] & 7, 1 | 2) {
            return Repacked::Stop;
        }
        let mut packed = vec![0u8; size];
        packed[..4].copy_from_slice(&data[..4]);
        let (mut at, mut left, mut epilog_seen) = (4, count, false);
        while left > 0 {
            let Some(&info) = data.get(at + 1) else { return Repacked::Stop };
            let (op, op_info) = (info & 0xF, info >> 4);
            let slots = match op {
                1 if op_info == 0 => 2,
                1 | 5 | 9 => 3,
                4 | 8 => 2,
                6 if !epilog_seen && op_info & 1 == 0 => 2,
                0 | 2 | 3 | 6 | 10 => 1,
                _ => return Repacked::Stop, // an unknown unwind code ends the directory
            };
            epilog_seen |= op == 6;
            // The data is `size` bytes: a code it holds fits in the re-packed bytes.
            let Some(code) = data.get(at..at + 2 * slots) else { return Repacked::Stop };
            packed[at..at + code.len()].copy_from_slice(code);
            at += code.len();
            left = left.saturating_sub(slots);
        }
        if flags & 7 != 0 {
            packed[size - 4..].copy_from_slice(&data[size - 4..size]);
        }
        Repacked::Write((offset, Some(packed)))
    }

    /// The same headers over other bytes (the file as [`PeFile::written`] gives it).
    pub fn with_data<'b>(&self, data: &'b [u8]) -> PeFile<'b> {
        PeFile {
            data,
            machine: self.machine,
            time_date_stamp: self.time_date_stamp,
            checksum: self.checksum,
            subsystem: self.subsystem,
            dll_characteristics: self.dll_characteristics,
            optional_offset: self.optional_offset,
            header_structures: self.header_structures.clone(),
            plus: self.plus,
            image_base: self.image_base,
            entry: self.entry,
            size_of_image: self.size_of_image,
            size_of_headers: self.size_of_headers,
            directories: self.directories.clone(),
            sections: self.sections.clone(),
            header_length: self.header_length,
        }
    }

    /// pefile's `generate_checksum` of its data (call it on the file as [`PeFile::written`]
    /// gives it): the PE checksum of every dword but the `CheckSum` field's (the last one
    /// zero-padded), folded to 16 bits, plus the file's length.
    pub fn generate_checksum(&self) -> u64 {
        let skipped = (self.optional_offset + 0x40) / 4;
        let mut checksum: u64 = 0;
        for (index, dword) in self.data.chunks(4).enumerate() {
            if index == skipped {
                continue;
            }
            let mut bytes = [0u8; 4];
            bytes[..dword.len()].copy_from_slice(dword);
            checksum += u64::from(u32::from_le_bytes(bytes));
            if checksum >= 1 << 32 {
                checksum = (checksum & 0xFFFF_FFFF) + (checksum >> 32);
            }
        }
        checksum = (checksum & 0xFFFF) + (checksum >> 16);
        checksum += checksum >> 16;
        (checksum & 0xFFFF) + self.data.len() as u64
    }
}

/// The data directories (`NumberOfRvaAndSizes`, at most 16) from `offset`, zero-padded where
/// the file ends within one, as pefile reads them.
fn read_directories(data: &[u8], offset: usize, optional: &OptionalHeader) -> Vec<(u32, u32)> {
    let mut directories = Vec::new();
    let mut at = offset;
    let limit = offset + 8 * 16;
    for _ in 0..(optional.directories & 0x7FFF_FFFF) {
        if data.len() == at {
            break;
        }
        let entry: [u8; 8] = padded(data, at);
        directories.push((
            u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]),
            u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]),
        ));
        at += 8;
        if at >= limit {
            break;
        }
    }
    directories
}

/// The section table at `offset`, sorted by address, as pefile reads it: stopped by an entry
/// of zeros, or where the file ends, or at an entry with three of pefile's five warnings.
fn read_sections(
    data: &[u8],
    offset: usize,
    count: usize,
    optional: &OptionalHeader,
) -> Result<Vec<RawSection>, &'static str> {
    let length = u64::try_from(data.len()).unwrap_or(u64::MAX);
    let mut sections = Vec::new();
    for index in 0..count.min(PEFILE_MAX_SECTIONS) {
        let at = offset + 40 * index;
        let entry = data.get(at..).unwrap_or(&[]);
        let entry = entry.get(..40).unwrap_or(entry);
        if entry.is_empty() || (entry.len() == 40 && entry.iter().all(|&byte| byte == 0)) {
            break;
        }
        if entry.len() < 40 {
            return Err("Data length less than expected header length.");
        }
        let field = |at| u32_at(entry, at).unwrap_or(0);
        let mut name = [0u8; 8];
        name.copy_from_slice(&entry[..8]);
        let (virtual_size, virtual_address) = (field(8), field(12));
        let (raw_size, raw_pointer) = (field(16), field(20));
        let adjusted_address = adjust_section_alignment(
            virtual_address,
            optional.section_alignment,
            optional.file_alignment,
        );
        let warnings = [
            u64::from(raw_size) + u64::from(raw_pointer) > length,
            u64::from(raw_pointer & !0x1FF) > length,
            virtual_size > 0x1000_0000,
            adjusted_address > 0x1000_0000,
            optional.file_alignment != 0 && raw_pointer % optional.file_alignment != 0,
        ];
        if warnings.iter().filter(|&&warning| warning).count() >= 3 {
            break;
        }
        let raw_pointer_adjusted =
            if optional.section_alignment < 0x1000 && raw_pointer == virtual_address {
                virtual_address
            } else {
                raw_pointer & !0x1FF
            };
        sections.push(RawSection {
            name,
            virtual_size,
            virtual_address,
            raw_size,
            raw_pointer,
            characteristics: field(36),
            next_virtual_address: None,
            virtual_address_adjusted: i64::from(adjusted_address),
            raw_pointer_adjusted: i64::from(raw_pointer_adjusted),
        });
    }
    sections.sort_by_key(|section| section.virtual_address);
    let nexts: Vec<Option<u32>> =
        sections.iter().skip(1).map(|section| Some(section.virtual_address)).collect();
    for (section, next) in sections.iter_mut().zip(nexts.into_iter().chain([None])) {
        section.next_virtual_address = next;
    }
    Ok(sections)
}

/// pefile's `AddressSet`: name RVAs seen, with their spread.
#[derive(Default)]
struct AddressSet {
    /// The RVAs.
    seen: HashSet<u64>,
    /// The lowest and highest.
    bounds: Option<(u64, u64)>,
}

impl AddressSet {
    /// Adds `value`; whether it was new.
    fn insert(&mut self, value: u64) -> bool {
        self.bounds = Some(
            self.bounds.map_or((value, value), |(low, high)| (low.min(value), high.max(value))),
        );
        self.seen.insert(value)
    }

    /// The highest less the lowest (0 when empty).
    fn spread(&self) -> u64 {
        self.bounds.map_or(0, |(low, high)| high - low)
    }
}

/// pefile's `is_valid_dos_filename`: letters, digits and ``!#$%&'()-@^_`{}~+,.;=[]:\/``.
fn is_valid_dos_filename(name: &[u8]) -> bool {
    name.iter()
        .all(|&byte| byte.is_ascii_alphanumeric() || b"!#$%&'()-@^_`{}~+,.;=[]:\\/".contains(&byte))
}

/// pefile's `is_valid_function_name` with relaxed characters (export names): letters, digits
/// and ASCII punctuation but `;` and `=`.
fn is_valid_relaxed_function_name(name: &[u8]) -> bool {
    name.iter().all(|&byte| {
        byte.is_ascii_alphanumeric() || (byte.is_ascii_punctuation() && !b";=".contains(&byte))
    })
}

/// pefile's `is_valid_function_name`: letters, digits and `._?@$()<>`.
fn is_valid_function_name(name: &[u8]) -> bool {
    name.iter().all(|&byte| byte.is_ascii_alphanumeric() || b"._?@$()<>".contains(&byte))
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

/// The file at `path`, whole (when it cannot be read, the error `PATH: not a PE image
/// ([Errno N] strerror: 'PATH')`).
pub fn read_image_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|error| {
        format!("{}: not a PE image ({})", path.display(), os_error_text(&error, path))
    })
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
    let pe = PeFile::parse(data)
        .map_err(|error| format!("{shown}: not a PE image ({})", quoted(error)))?;
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

// ---- the map ---------------------------------------------------------------------------------------

/// White space as the text parsers take it (`\s` in their patterns): Unicode white space and
/// U+001C..U+001F.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A word character (`\w` in the parsers' patterns): alphanumerics and `_`.
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The line separators the text parsers split at: `\n`, `\r`, VT, FF, U+001C..U+001E, NEL,
/// U+2028 and U+2029 (a map's `\r` is already `\n`: see `decode_map`).
pub const fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// The map's text: UTF-8 with U+FFFD for invalid bytes, `\r\n` and `\r` as `\n`.
fn decode_map(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// `count` ASCII hex digits at the start of `text`, as a number, and the rest.
fn hex_prefix(text: &str, count: usize) -> Option<(u64, &str)> {
    let digits = text.get(..count)?;
    if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    Some((u64::from_str_radix(digits, 16).ok()?, &text[count..]))
}

/// A map line's symbol (`^\s*XXXX:XXXXXXXX\s+(\S+)\s+([0-9a-fA-F]{16})\b`): its name and
/// address.
fn map_line(line: &str) -> Option<(&str, u64)> {
    let rest = line.trim_start_matches(is_space);
    let (_, rest) = hex_prefix(rest, 4)?;
    let rest = rest.strip_prefix(':')?;
    let (_, rest) = hex_prefix(rest, 8)?;
    let name_start = rest.trim_start_matches(is_space);
    if name_start.len() == rest.len() {
        return None;
    }
    let name_end = name_start.find(is_space)?;
    let (name, rest) = name_start.split_at(name_end);
    let (address, rest) = hex_prefix(rest.trim_start_matches(is_space), 16)?;
    if rest.chars().next().is_some_and(is_word) {
        return None;
    }
    Some((name, address))
}

/// A map's preferred load address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Preferred {
    /// This address.
    Address(u64),
    /// An address beyond 64 bits: above every symbol's.
    Beyond,
}

/// `Preferred load address is ([0-9a-fA-F]+)`'s first match.
fn preferred_load_address(text: &str) -> Option<Preferred> {
    const PHRASE: &str = "Preferred load address is ";
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(PHRASE)) {
        let after = &text[from + found + PHRASE.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if digits > 0 {
            let significant = after[..digits].trim_start_matches('0');
            if significant.len() > 16 {
                return Some(Preferred::Beyond);
            }
            return Some(Preferred::Address(u64::from_str_radix(significant, 16).unwrap_or(0)));
        }
        from += found + PHRASE.len();
    }
    None
}

/// The symbols of an lld-link /MAP file, in its order: (name, RVA), symbols below the preferred
/// load address left out.
pub fn read_map(path: &Path) -> Result<Vec<(String, u64)>, String> {
    let shown = path.display();
    let mut bytes = Vec::new();
    // At most 4 bytes a character: enough to know the map is larger than the limit.
    let limit = u64::try_from(4 * (MAX_MAP_BYTES + 1)).unwrap_or(u64::MAX);
    std::fs::File::open(path)
        .and_then(|file| file.take(limit).read_to_end(&mut bytes))
        .map_err(|error| format!("{shown}: cannot read the map ({})", strerror(&error)))?;
    map_symbols_of(path, &decode_map(&bytes))
}

/// [`read_map`] of the map's text.
fn map_symbols_of(path: &Path, text: &str) -> Result<Vec<(String, u64)>, String> {
    let shown = path.display();
    if text.chars().count() > MAX_MAP_BYTES {
        return Err(format!("{shown}: map larger than {MAX_MAP_BYTES} bytes"));
    }
    let Some(preferred) = preferred_load_address(text) else {
        return Err(format!("{shown}: not an lld-link /MAP file (no preferred load address)"));
    };
    let Preferred::Address(preferred) = preferred else { return Ok(Vec::new()) };
    Ok(text
        .split(is_line_break)
        .filter_map(map_line)
        .filter(|&(_, address)| address >= preferred)
        .map(|(name, address)| (name.to_owned(), address - preferred))
        .collect())
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
fn functions_of(
    path: &Path,
    symbols: Vec<(String, u64)>,
    image: &Image,
) -> Result<SymbolMap, String> {
    let mut functions = BTreeMap::new();
    for (name, rva) in symbols {
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

/// A Rust symbol (legacy `_ZN...E` or v0 `_R...`) as its path `a::b::c`, without hashes and
/// disambiguators; anything else unchanged. For messages only: not a full demangler.
pub fn demangle(name: &str) -> String {
    let v0 = name.starts_with("_R");
    let body: Vec<char> = if let Some(body) = name.strip_prefix("_ZN") {
        body.chars().collect()
    } else if let Some(body) = name.strip_prefix("_R") {
        body.chars().collect()
    } else {
        return name.to_owned();
    };
    let mut words: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(&character) = body.get(index) {
        if character.is_ascii_digit() {
            let digits: String = body[index..].iter().take_while(|c| c.is_ascii_digit()).collect();
            let length = digits.parse::<usize>().unwrap_or(usize::MAX);
            let mut start = index + digits.len();
            if body.get(start) == Some(&'_') {
                start += 1;
            }
            let end = start.saturating_add(length);
            words.push(body.get(start..end.min(body.len())).unwrap_or(&[]).iter().collect());
            index = end;
        } else if "sBK".contains(character) && v0 {
            // v0 disambiguators, back-references and const values run to the next `_`.
            index = body[index..]
                .iter()
                .position(|&c| c == '_')
                .map_or(body.len(), |offset| index + offset + 1);
        } else {
            index += 1;
        }
    }
    let is_hash = |word: &str| {
        word.len() == 17
            && word.starts_with('h')
            && word[1..].bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    };
    if words.last().is_some_and(|word| is_hash(word)) {
        words.pop();
    }
    let mut text = words.join("::");
    for (old, new) in
        [("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","), ("..", "::")]
    {
        text = text.replace(old, new);
    }
    if text.is_empty() { name.to_owned() } else { text }
}

/// The first line of the stack report: which image its figures are of (`ppm-sim` refuses a
/// stack report whose line does not match the image it runs).
pub fn stack_identity(pe: &PeFile<'_>) -> String {
    format!(
        "image TimeDateStamp {:#010x} CheckSum {:#010x} SizeOfImage {:#x}",
        pe.time_date_stamp, pe.checksum, pe.size_of_image
    )
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

/// pefile's error for data at an RVA neither a section nor the file holds.
pub const UNFETCHABLE: &str = "data at RVA can't be fetched. Corrupt header?";

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

/// The image file at `path` (its bytes), or the error `PATH: not a PE image (...)`.
///
/// # Errors
///
/// The file cannot be read.
pub fn read_pe_file(path: &str) -> Result<Vec<u8>, String> {
    read_image_file(Path::new(path))
}

/// The PE headers of `data`, the bytes of the file at `path`.
///
/// # Errors
///
/// `PATH: not a PE image ('pefile's message')`: the file is not a PE image.
pub fn parse_pe_file<'a>(path: &str, data: &'a [u8]) -> Result<PeFile<'a>, String> {
    PeFile::parse(data).map_err(|error| format!("{path}: not a PE image ({})", quoted(error)))
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
            for (name, rva) in read_map(Path::new(map_path))? {
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
        "map": map.iter().map(|(name, rva)| json!([name, rva])).collect::<Vec<_>>(),
        "symbols": {"rvas": symbols.rvas, "names": symbols.names},
        "sites": sites.iter().map(|(rva, site)| json!([rva, site.to_json()])).collect::<Vec<_>>(),
    });
    Ok(description.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{
        Arch, Arm64Site, DAIF, Image, Import, Pdata, Section, Site, SymbolMap, SystemRegister,
        digest_json, find_sites, functions_of, map_symbols_of, parse_image_bytes, quoted, sha256,
        system_register,
    };

    const PATH: &str = "test.sys";

    /// Writes `bytes` at `offset` of `image`.
    fn put(image: &mut [u8], offset: usize, bytes: &[u8]) {
        image[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// The file offset of `rva` in `.rdata` (RVA 0x2000, file offset 0x600).
    const fn rdata(rva: usize) -> usize {
        rva - 0x2000 + 0x600
    }

    /// A small PE32+ image of `machine`: `.text` (RVA 0x1000, `code`) and `.rdata` (RVA 0x2000)
    /// holding one import (`ntoskrnl.exe!KeBugCheckEx`, IAT at 0x2060), one `.pdata` entry
    /// (0x1000..0x1003) and one relocation block (DIR64 at 0x20F0, then padding).
    fn image(machine: u16, code: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; 0xA00];
        put(&mut bytes, 0, b"MZ");
        put(&mut bytes, 0x3C, &0x80u32.to_le_bytes());
        put(&mut bytes, 0x80, b"PE\0\0");
        let coff = 0x84;
        put(&mut bytes, coff, &machine.to_le_bytes());
        put(&mut bytes, coff + 2, &2u16.to_le_bytes());
        put(&mut bytes, coff + 16, &240u16.to_le_bytes());
        let optional = coff + 20;
        put(&mut bytes, optional, &0x20Bu16.to_le_bytes());
        put(&mut bytes, optional + 16, &0x1000u32.to_le_bytes()); // AddressOfEntryPoint
        put(&mut bytes, optional + 24, &0x1_4000_0000u64.to_le_bytes()); // ImageBase
        put(&mut bytes, optional + 32, &0x1000u32.to_le_bytes()); // SectionAlignment
        put(&mut bytes, optional + 36, &0x200u32.to_le_bytes()); // FileAlignment
        put(&mut bytes, optional + 56, &0x2800u32.to_le_bytes()); // SizeOfImage
        put(&mut bytes, optional + 60, &0x400u32.to_le_bytes()); // SizeOfHeaders
        put(&mut bytes, optional + 108, &16u32.to_le_bytes()); // NumberOfRvaAndSizes
        let directory = |index: usize| optional + 112 + 8 * index;
        put(&mut bytes, directory(1), &[0x00, 0x20, 0, 0, 40, 0, 0, 0]); // import
        let pdata_size = if machine == 0xAA64 { 8 } else { 12 };
        put(&mut bytes, directory(3), &[0x00, 0x21, 0, 0, pdata_size, 0, 0, 0]); // exception
        put(&mut bytes, directory(5), &[0x00, 0x22, 0, 0, 12, 0, 0, 0]); // base relocations
        let table = optional + 240;
        let section =
            |bytes: &mut Vec<u8>, at: usize, name: &[u8], fields: [u32; 4], flags: u32| {
                put(bytes, at, name);
                for (index, field) in fields.iter().enumerate() {
                    put(bytes, at + 8 + 4 * index, &field.to_le_bytes());
                }
                put(bytes, at + 36, &flags.to_le_bytes());
            };
        section(&mut bytes, table, b".text", [0x20, 0x1000, 0x200, 0x400], 0x6000_0020);
        section(&mut bytes, table + 40, b".rdata", [0x300, 0x2000, 0x400, 0x600], 0xC000_0040);
        put(&mut bytes, 0x400, code);
        // The import descriptor: ILT 0x2040, name 0x2080, IAT 0x2060; then a zero one.
        put(&mut bytes, rdata(0x2000), &0x2040u32.to_le_bytes());
        put(&mut bytes, rdata(0x200C), &0x2080u32.to_le_bytes());
        put(&mut bytes, rdata(0x2010), &0x2060u32.to_le_bytes());
        put(&mut bytes, rdata(0x2040), &0x2090u64.to_le_bytes());
        put(&mut bytes, rdata(0x2060), &0x2090u64.to_le_bytes());
        put(&mut bytes, rdata(0x2080), b"ntoskrnl.exe\0");
        put(&mut bytes, rdata(0x2092), b"KeBugCheckEx\0");
        for (index, word) in [0x1000u32, 0x1003, 0x2120].iter().enumerate() {
            put(&mut bytes, rdata(0x2100 + 4 * index), &word.to_le_bytes());
        }
        put(&mut bytes, rdata(0x2200), &0x2000u32.to_le_bytes());
        put(&mut bytes, rdata(0x2204), &12u32.to_le_bytes());
        put(&mut bytes, rdata(0x2208), &(0xA000u16 | 0x0F0).to_le_bytes());
        bytes
    }

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
    fn a_file_that_is_no_pe_image_is_refused_in_pefiles_words() {
        let refused = |bytes: &[u8]| parse(bytes, Arch::X64).err().unwrap_or_default();
        let not_pe = |why: &str| format!("{PATH}: not a PE image ('{why}')");
        assert_eq!(refused(b""), not_pe("The file is empty"));
        assert_eq!(
            refused(b"MZ"),
            not_pe("Unable to read the DOS Header, possibly a truncated file.")
        );
        assert_eq!(refused(&[b'x'; 64]), not_pe("DOS Header magic not found."));
        let whole = image(0x8664, &[]);
        let mut zm = whole.clone();
        put(&mut zm, 0, b"ZM");
        assert_eq!(refused(&zm), not_pe("Probably a ZM Executable (not a PE file)."));
        assert_eq!(refused(&whole[..0x82]), not_pe("NT Headers not found."));
        assert_eq!(refused(&whole[..0x90]), not_pe("File Header missing"));
        assert_eq!(
            refused(&whole[..0xA0]),
            not_pe("No Optional Header found, invalid PE32 or PE32+ file.")
        );
        assert_eq!(
            refused(&whole[..0x1A0]),
            not_pe("Data length less than expected header length.")
        );
        let mut ne = whole;
        put(&mut ne, 0x80, b"NE");
        assert_eq!(refused(&ne), not_pe("Invalid NT Headers signature. Probably a NE file"));
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
    fn pefiles_leniency_is_followed() -> Result<(), String> {
        // A repeated relocation entry ends its block.
        let mut repeated = image(0x8664, &[]);
        put(&mut repeated, rdata(0x2204), &16u32.to_le_bytes());
        put(&mut repeated, rdata(0x220A), &(0xA000u16 | 0x0F0).to_le_bytes());
        put(&mut repeated, rdata(0x220C), &(0xA000u16 | 0x0F8).to_le_bytes());
        assert_eq!(parse(&repeated, Arch::X64)?.relocations, [0x20F0]);
        // An import whose name pefile does not accept is left out.
        let mut invalid = image(0x8664, &[]);
        put(&mut invalid, rdata(0x2094), b"-");
        assert!(parse(&invalid, Arch::X64)?.imports.is_empty());
        // The section table is read by address.
        let mut swapped = image(0x8664, &[]);
        let table = 0x84 + 20 + 240;
        let (first, second) =
            (swapped[table..table + 40].to_vec(), swapped[table + 40..table + 80].to_vec());
        put(&mut swapped, table, &second);
        put(&mut swapped, table + 40, &first);
        let names: Vec<String> =
            parse(&swapped, Arch::X64)?.sections.into_iter().map(|section| section.name).collect();
        assert_eq!(names, [".text", ".rdata"]);
        Ok(())
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

    const MAP: &str = " ppm_pep\r\n\r\n Preferred load address is 0000000140000000\r\n\r\n  \
        Address  Publics by Value  Rva+Base  Lib:Object\r\n\r\n \
        0000:00000000       __ImageBase                0000000140000000     <linker-defined>\r\n \
        0001:00000000       DriverEntry                0000000140001000     a.obj\r\n \
        0001:00000004       $ehgcr_0_4                 0000000140001004     a.obj\r\n \
        0001:00000008       helper                     0000000140001008     a.obj\r\n \
        0001:00000008       helper_alias               0000000140001008     a.obj\r\n \
        0002:00000000       some_data                  0000000140002000     a.obj\r\n \
        0001:0000000c       glued                      0000000140001008x    a.obj\r\n \
        0000:00000000       below                      0000000100000000     a.obj\r\n";

    #[test]
    fn a_map_yields_its_symbols_and_its_functions() -> Result<(), String> {
        let path = Path::new("test.map");
        let text = super::decode_map(MAP.as_bytes());
        let symbols = map_symbols_of(path, &text)?;
        let names: Vec<(&str, u64)> =
            symbols.iter().map(|(name, rva)| (name.as_str(), *rva)).collect();
        assert_eq!(
            names,
            [
                ("__ImageBase", 0),
                ("DriverEntry", 0x1000),
                ("$ehgcr_0_4", 0x1004),
                ("helper", 0x1008),
                ("helper_alias", 0x1008),
                ("some_data", 0x2000),
            ]
        );
        let image = parse(&image(0x8664, &[]), Arch::X64)?;
        let functions = functions_of(path, symbols, &image)?;
        assert_eq!(functions.rvas, [0x1000, 0x1008]);
        assert_eq!(functions.names, ["DriverEntry", "helper"]);
        assert_eq!(functions.lookup(0x100A), Some(("helper", 2)));
        assert_eq!(functions.lookup(0xFFF), None);
        assert_eq!(functions.function_start(0x1007), Some(0x1000));
        assert_eq!(SymbolMap::default().function_start(0), None);
        let no_base = map_symbols_of(path, "0001:00000000 f 0000000140001000\n");
        assert_eq!(
            no_base.err().unwrap_or_default(),
            "test.map: not an lld-link /MAP file (no preferred load address)"
        );
        // lld-link's `f` (a function) after the address; another preferred load address.
        let flagged = map_symbols_of(
            path,
            " Preferred load address is 0000000180000000\n\n \
             0001:000084d0       FxDriverEntry              00000001800094d0 f   kmdf_stub.obj\n",
        )?;
        assert_eq!(flagged, [("FxDriverEntry".to_owned(), 0x94D0)]);
        let data_only = functions_of(path, vec![("x".to_owned(), 0x2000)], &image);
        assert_eq!(
            data_only.err().unwrap_or_default(),
            "test.map: no function symbols in executable sections"
        );
        Ok(())
    }

    #[test]
    fn texts_quote_strings_and_demangle_rust_names() {
        assert_eq!(quoted("a'b"), "\"a'b\"");
        assert_eq!(quoted("/x\\y\n"), "'/x\\\\y\\n'");
        let error = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            super::os_error_text(&error, Path::new("/none")),
            "[Errno 2] No such file or directory: '/none'"
        );
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
    fn the_checksum_is_the_pe_checksum_of_the_file_as_written() -> Result<(), String> {
        let mut bytes = image(0x8664, &[0xC3]);
        bytes.truncate(0x9FD); // not a whole number of dwords
        let pe = super::parse_pe_file(PATH, &bytes)?;
        assert_eq!(pe.written(), Ok(bytes.clone()));
        // The PE checksum as 16-bit words with carries folded, the CheckSum field left out.
        let field = 0x98 + 0x40;
        let mut sum: u64 = 0;
        let mut padded = bytes.clone();
        padded.push(0);
        for (index, word) in padded.chunks(2).enumerate() {
            if index * 2 == field || index * 2 == field + 2 {
                continue;
            }
            sum += u64::from(u16::from_le_bytes([word[0], word.get(1).copied().unwrap_or(0)]));
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        assert_eq!(pe.generate_checksum(), sum + bytes.len() as u64);
        // A file ending within the data directories is written back with all of them, each
        // read as zeros past the end; one ending within the optional header has none.
        let cut = 0x98 + 112 + 8 * 3 + 2;
        let pe = super::parse_pe_file(PATH, &bytes[..cut])?;
        let written = pe.written()?;
        assert_eq!(written.len(), 0x98 + 112 + 8 * 16);
        assert_eq!(written[..cut], bytes[..cut]);
        let cut = 0x98 + 80;
        let pe = super::parse_pe_file(PATH, &bytes[..cut])?;
        assert_eq!(pe.written()?.len(), 0x98 + 112);
        Ok(())
    }

    #[test]
    fn unwind_info_is_written_back_as_pefile_packs_it() -> Result<(), String> {
        let mut bytes = image(0x8664, &[0xC3]);
        // Version 1, flags 8 (none pefile knows), one code (PUSH_NONVOL): the padding slot and
        // the trailing field are written back as zeros.
        put(&mut bytes, rdata(0x2120), &[0x41, 0x01, 0x01, 0x00, 0x01, 0x30, 0xAA, 0xBB]);
        put(&mut bytes, rdata(0x2128), &[1, 2, 3, 4, 5]);
        let written = super::parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(
            written[rdata(0x2120)..rdata(0x212D)],
            [0x41, 1, 1, 0, 1, 0x30, 0, 0, 0, 0, 0, 0, 5]
        );
        // With EHANDLER the trailing field is the handler's RVA, kept.
        put(&mut bytes, rdata(0x2120), &[0x09]);
        let written = super::parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(written[rdata(0x2124)..rdata(0x212C)], [1, 0x30, 0, 0, 1, 2, 3, 4]);
        // An unknown unwind code ends the directory: nothing re-packed.
        put(&mut bytes, rdata(0x2125), &[0x3B]);
        let written = super::parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(written, bytes);
        // An UNWIND_INFO the section's raw data cuts short cannot be written back.
        put(&mut bytes, rdata(0x2108), &0x23FCu32.to_le_bytes());
        put(&mut bytes, rdata(0x23FC), &[0x01, 0x00, 0x02, 0x00]);
        let refused = super::parse_pe_file(PATH, &bytes)?.written();
        assert_eq!(refused, Err("'UnwindInfo' object has no attribute 'UnwindCodes'".to_owned()));
        Ok(())
    }

    #[test]
    fn exports_are_named_then_by_ordinal() -> Result<(), String> {
        let mut bytes = image(0x8664, &[0xC3]);
        put(&mut bytes, 0x98 + 112, &[0x00, 0x23, 0, 0, 0x80, 0, 0, 0]); // export directory
        let header = [0u32, 0, 0, 0x2390, 1, 3, 1, 0x2340, 0x2350, 0x2358];
        for (index, field) in header.iter().enumerate() {
            put(&mut bytes, rdata(0x2300 + 4 * index), &field.to_le_bytes());
        }
        for (index, function) in [0x1000u32, 0, 0x1010].iter().enumerate() {
            put(&mut bytes, rdata(0x2340 + 4 * index), &function.to_le_bytes());
        }
        put(&mut bytes, rdata(0x2350), &0x2360u32.to_le_bytes());
        put(&mut bytes, rdata(0x2358), &2u16.to_le_bytes());
        put(&mut bytes, rdata(0x2360), b"DriverEntry\0");
        let pe = super::parse_pe_file(PATH, &bytes)?;
        let exports: Vec<(Option<&[u8]>, i64)> =
            pe.exports().into_iter().map(|export| (export.name, export.ordinal)).collect();
        assert_eq!(exports, [(Some(&b"DriverEntry"[..]), 3), (None, 1)]);
        // A name with a character pefile does not accept ends the named exports.
        put(&mut bytes, rdata(0x2363), b";");
        let pe = super::parse_pe_file(PATH, &bytes)?;
        let ordinals: Vec<i64> = pe.exports().into_iter().map(|export| export.ordinal).collect();
        assert_eq!(ordinals, [1, 3]);
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
    fn rust_names_read_as_paths() {
        use super::demangle;
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("_RNvNtCs1pEWN1xWsaF_7ppm_pep3log5print"), "ppm_pep::log::print");
        assert_eq!(demangle("FxDriverEntry"), "FxDriverEntry");
        assert_eq!(
            demangle("_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<u8>"
        );
        assert_eq!(demangle("_ZN"), "_ZN");
        assert_eq!(demangle("_ZN99abc"), "abc");
        assert_eq!(demangle("_RNvCs1_3foo3barB2_3baz"), "foo::bar::baz");
        assert_eq!(demangle("_ZN3a..b3c$C$d$u20$e$RF$"), "a::::c$C::$e&");
        // An uppercase digit in the hash: no hash, kept.
        assert_eq!(
            demangle("_ZN4core3fmt9Arguments6as_str17h0123456789abcdeFE"),
            "core::fmt::Arguments::as_str::h0123456789abcdeF"
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
