//! The PE file, read as pefile (2024.8.26, pinned in `tools/image/requirements.txt`;
//! `tools/image/ppm_image/broken_image.py` writes with it) reads it: [`PeFile`], its headers and
//! the reads over its data that pefile's full load makes (sections, imports, exports, base
//! relocations, and the file as pefile writes it back to compute its checksum,
//! [`PeFile::written`]).
//!
//! pefile is followed where it is lenient (the section table sorted by address, data past a
//! section's raw data cut off, a relocation block ended by a repeated entry, import entries with
//! invalid names skipped, a descriptor without entries skipped), so that both read the same
//! bytes. Every read of the file is bounds-checked: a broken file is an error, never a panic.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::text::{os_error_text, quoted};

/// The largest image the runner maps (`SizeOfImage`, page-rounded): 64 MiB.
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// `IMAGE_FILE_MACHINE_AMD64`.
pub const MACHINE_X64: u16 = 0x8664;
/// `IMAGE_FILE_MACHINE_ARM64`.
pub const MACHINE_ARM64: u16 = 0xAA64;

/// The optional header's `Magic` of a PE32+ (64-bit) image.
pub const PE32_PLUS: u16 = 0x20B;
/// The bytes of one section header.
pub const SECTION_HEADER_BYTES: usize = 40;

/// `IMAGE_SCN_MEM_EXECUTE`.
pub const SCN_MEM_EXECUTE: u32 = 0x2000_0000;
/// `IMAGE_SCN_MEM_READ`.
pub const SCN_MEM_READ: u32 = 0x4000_0000;
/// `IMAGE_SCN_MEM_WRITE`.
pub const SCN_MEM_WRITE: u32 = 0x8000_0000;
/// `IMAGE_SCN_MEM_DISCARDABLE`.
pub const SCN_MEM_DISCARDABLE: u32 = 0x0200_0000;

/// `IMAGE_REL_BASED_ABSOLUTE`: padding.
pub const REL_BASED_ABSOLUTE: u16 = 0;
/// `IMAGE_REL_BASED_DIR64`.
pub const REL_BASED_DIR64: u16 = 10;

/// The export directory's index in the data directories.
const DIRECTORY_EXPORT: usize = 0;
/// The import directory's index in the data directories.
const DIRECTORY_IMPORT: usize = 1;
/// The exception directory (`.pdata`).
pub const DIRECTORY_EXCEPTION: usize = 3;
/// The base relocation directory.
pub const DIRECTORY_BASERELOC: usize = 5;
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

/// The name of a COFF machine the runner knows: `x64` or `arm64`.
#[must_use]
pub const fn machine_name(machine: u16) -> Option<&'static str> {
    match machine {
        MACHINE_X64 => Some("x64"),
        MACHINE_ARM64 => Some("arm64"),
        _ => None,
    }
}

// ---- bounded reads ------------------------------------------------------------------------------

/// The little-endian `u16` at `offset` of `data`.
#[must_use]
pub fn u16_at(data: &[u8], offset: usize) -> Option<u16> {
    let bytes = data.get(offset..offset.checked_add(2)?)?;
    Some(u16::from_le_bytes(bytes.try_into().ok()?))
}

/// The little-endian `u32` at `offset` of `data`.
#[must_use]
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
#[must_use]
pub fn wide(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `bytes` up to its first NUL.
fn up_to_nul(bytes: &[u8]) -> &[u8] {
    bytes.iter().position(|&byte| byte == 0).map_or(bytes, |end| &bytes[..end])
}

// ---- the PE file ------------------------------------------------------------------------------

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
    pub raw_pointer: u32,
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
    /// `NumberOfSections`.
    pub number_of_sections: u16,
    /// `SizeOfOptionalHeader`.
    pub size_of_optional_header: u16,
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
    /// The optional header's `Magic` ([`PE32_PLUS`] for PE32+).
    pub magic: u16,
    /// Whether the optional header is PE32+ (8-byte thunks), else PE32's layout.
    plus: bool,
    /// `ImageBase`.
    pub image_base: u64,
    /// `AddressOfEntryPoint`.
    pub entry: u32,
    /// `SizeOfImage`.
    pub size_of_image: u32,
    /// `SizeOfHeaders`.
    pub size_of_headers: u32,
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
    /// `Magic`.
    magic: u16,
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
        let magic = u16_at(&header, 0).unwrap_or(0);
        let plus = magic == PE32_PLUS;
        if plus && available < 73 {
            return Err(MISSING);
        }
        let field = |at: usize| u32_at(&header, at).unwrap_or(0);
        let image_base = if plus { u64_at(&header, 24).unwrap_or(0) } else { u64::from(field(28)) };
        let size = if plus { 112 } else { 96 };
        // Past the file's end the header reads as zeros, as pefile pads it.
        let directories = field(if plus { 108 } else { 92 });
        Ok(Self {
            magic,
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
    /// The headers of `data`.
    ///
    /// # Errors
    ///
    /// pefile's message when it refuses them (`DOS Header magic not found.`, ...).
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
        let number_of_sections = u16_at(data, coff + 2).unwrap_or(0);
        let size_of_optional_header = u16_at(data, coff + 16).unwrap_or(0);
        let section_count = usize::from(number_of_sections);
        let optional_size = usize::from(size_of_optional_header);
        let optional_offset = coff + 20;
        let optional = OptionalHeader::read(data, optional_offset)?;
        let directories = read_directories(data, optional_offset + optional.size, &optional);
        let table = optional_offset + optional_size;
        let sections = read_sections(data, table, section_count, &optional)?;
        let table_end = if section_count > 0 && !sections.is_empty() {
            table + SECTION_HEADER_BYTES * section_count
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
            number_of_sections,
            size_of_optional_header,
            time_date_stamp: u32_at(data, coff + 4).unwrap_or(0),
            checksum: optional.checksum,
            subsystem: optional.subsystem,
            dll_characteristics: optional.dll_characteristics,
            optional_offset,
            header_structures,
            magic: optional.magic,
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

    /// pefile's `header`: the file up to the first section's raw data.
    #[must_use]
    pub fn header(&self) -> &'a [u8] {
        self.data.get(..self.header_length).unwrap_or(self.data)
    }

    /// The section table's file offset (after the optional header's `SizeOfOptionalHeader`
    /// bytes).
    #[must_use]
    pub fn section_table(&self) -> usize {
        self.optional_offset + usize::from(self.size_of_optional_header)
    }

    /// The data directory `index` (`None` when the optional header has fewer).
    #[must_use]
    pub fn directory(&self, index: usize) -> Option<(u32, u32)> {
        self.directories.get(index).copied()
    }

    /// The file's length, signed.
    #[must_use]
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
    #[must_use]
    pub fn section_by_rva(&self, rva: i64) -> Option<&RawSection> {
        self.sections.iter().find(|section| self.contains_rva(section, rva))
    }

    /// pefile's `SectionStructure.get_data(start, length)`: the file's bytes from `start`
    /// (the section's start when `None`), at most `length` (its raw size when `None`), never
    /// past its raw data.
    #[must_use]
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
    #[must_use]
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
    #[must_use]
    pub fn offset_of_rva(&self, rva: i64) -> Option<i64> {
        self.section_by_rva(rva).map_or_else(
            || (rva < self.length()).then_some(rva),
            |section| Some(rva - section.virtual_address_adjusted + section.raw_pointer_adjusted),
        )
    }

    /// pefile's `get_string_at_rva(rva, max_length)`: up to its NUL.
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    /// directory as pefile re-packs it (`unwind_writes`).
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
    #[must_use]
    pub fn with_data<'b>(&self, data: &'b [u8]) -> PeFile<'b> {
        PeFile {
            data,
            machine: self.machine,
            number_of_sections: self.number_of_sections,
            size_of_optional_header: self.size_of_optional_header,
            time_date_stamp: self.time_date_stamp,
            checksum: self.checksum,
            subsystem: self.subsystem,
            dll_characteristics: self.dll_characteristics,
            optional_offset: self.optional_offset,
            header_structures: self.header_structures.clone(),
            magic: self.magic,
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
    #[must_use]
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
        let at = offset + SECTION_HEADER_BYTES * index;
        let entry = data.get(at..).unwrap_or(&[]);
        let entry = entry.get(..SECTION_HEADER_BYTES).unwrap_or(entry);
        let whole = entry.len() == SECTION_HEADER_BYTES;
        if entry.is_empty() || (whole && entry.iter().all(|&byte| byte == 0)) {
            break;
        }
        if !whole {
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

/// The file at `path`, whole (when it cannot be read, the error `PATH: not a PE image
/// ([Errno N] strerror: 'PATH')`).
///
/// # Errors
///
/// The file cannot be read.
pub fn read_image_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|error| {
        format!("{}: not a PE image ({})", path.display(), os_error_text(&error, path))
    })
}

/// The PE headers of `data`, the bytes of the file at `path`.
///
/// # Errors
///
/// `PATH: not a PE image ('pefile's message')`: the file is not a PE image.
pub fn parse_pe_file<'a>(path: &str, data: &'a [u8]) -> Result<PeFile<'a>, String> {
    PeFile::parse(data).map_err(|error| format!("{path}: not a PE image ({})", quoted(error)))
}

/// The first line of the stack report: which image its figures are of (`ppm-sim` refuses a
/// stack report whose line does not match the image it runs).
#[must_use]
pub fn stack_identity(pe: &PeFile<'_>) -> String {
    format!(
        "image TimeDateStamp {:#010x} CheckSum {:#010x} SizeOfImage {:#x}",
        pe.time_date_stamp, pe.checksum, pe.size_of_image
    )
}

/// pefile's error for data at an RVA neither a section nor the file holds.
pub const UNFETCHABLE: &str = "data at RVA can't be fetched. Corrupt header?";

#[cfg(test)]
mod tests {
    use super::{PeFile, parse_pe_file, stack_identity};
    use crate::test_image::{image, put, rdata};

    const PATH: &str = "test.sys";

    #[test]
    fn the_headers_are_read() -> Result<(), String> {
        let bytes = image(0x8664, &[0xC3]);
        let pe = parse_pe_file(PATH, &bytes)?;
        assert_eq!((pe.machine, pe.magic, pe.number_of_sections), (0x8664, 0x20B, 2));
        assert_eq!((pe.size_of_optional_header, pe.section_table()), (240, 0x98 + 240));
        assert_eq!((pe.image_base, pe.entry, pe.size_of_image), (0x1_4000_0000, 0x1000, 0x2800));
        assert_eq!((pe.size_of_headers, pe.header().len()), (0x400, 0x400));
        let sections: Vec<(u32, u32, u32, u32)> = pe
            .sections
            .iter()
            .map(|s| (s.virtual_address, s.virtual_size, s.raw_pointer, s.raw_size))
            .collect();
        assert_eq!(sections, [(0x1000, 0x20, 0x400, 0x200), (0x2000, 0x300, 0x600, 0x400)]);
        assert_eq!(
            stack_identity(&pe),
            "image TimeDateStamp 0x00000000 CheckSum 0x00000000 SizeOfImage 0x2800"
        );
        Ok(())
    }

    #[test]
    fn a_file_that_is_no_pe_image_is_refused_in_pefiles_words() {
        let refused = |bytes: &[u8]| parse_pe_file(PATH, bytes).err().unwrap_or_default();
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
    fn pefiles_leniency_is_followed() -> Result<(), String> {
        // A repeated relocation entry ends its block.
        let mut repeated = image(0x8664, &[]);
        put(&mut repeated, rdata(0x2204), &16u32.to_le_bytes());
        put(&mut repeated, rdata(0x220A), &(0xA000u16 | 0x0F0).to_le_bytes());
        put(&mut repeated, rdata(0x220C), &(0xA000u16 | 0x0F8).to_le_bytes());
        assert_eq!(parse_pe_file(PATH, &repeated)?.relocations(), [(10, 0x20F0)]);
        // An import whose name pefile does not accept is left out.
        let mut invalid = image(0x8664, &[]);
        put(&mut invalid, rdata(0x2094), b"-");
        assert!(parse_pe_file(PATH, &invalid)?.imports().is_empty());
        // The section table is read by address.
        let mut swapped = image(0x8664, &[]);
        let table = 0x84 + 20 + 240;
        let (first, second) =
            (swapped[table..table + 40].to_vec(), swapped[table + 40..table + 80].to_vec());
        put(&mut swapped, table, &second);
        put(&mut swapped, table + 40, &first);
        let pe = parse_pe_file(PATH, &swapped)?;
        let names: Vec<[u8; 8]> = pe.sections.iter().map(|section| section.name).collect();
        assert_eq!(names, [*b".text\0\0\0", *b".rdata\0\0"]);
        Ok(())
    }

    #[test]
    fn the_checksum_is_the_pe_checksum_of_the_file_as_written() -> Result<(), String> {
        let mut bytes = image(0x8664, &[0xC3]);
        bytes.truncate(0x9FD); // not a whole number of dwords
        let pe = parse_pe_file(PATH, &bytes)?;
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
        let pe = parse_pe_file(PATH, &bytes[..cut])?;
        let written = pe.written()?;
        assert_eq!(written.len(), 0x98 + 112 + 8 * 16);
        assert_eq!(written[..cut], bytes[..cut]);
        let cut = 0x98 + 80;
        let pe = parse_pe_file(PATH, &bytes[..cut])?;
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
        let written = parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(
            written[rdata(0x2120)..rdata(0x212D)],
            [0x41, 1, 1, 0, 1, 0x30, 0, 0, 0, 0, 0, 0, 5]
        );
        // With EHANDLER the trailing field is the handler's RVA, kept.
        put(&mut bytes, rdata(0x2120), &[0x09]);
        let written = parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(written[rdata(0x2124)..rdata(0x212C)], [1, 0x30, 0, 0, 1, 2, 3, 4]);
        // An unknown unwind code ends the directory: nothing re-packed.
        put(&mut bytes, rdata(0x2125), &[0x3B]);
        let written = parse_pe_file(PATH, &bytes)?.written()?;
        assert_eq!(written, bytes);
        // An UNWIND_INFO the section's raw data cuts short cannot be written back.
        put(&mut bytes, rdata(0x2108), &0x23FCu32.to_le_bytes());
        put(&mut bytes, rdata(0x23FC), &[0x01, 0x00, 0x02, 0x00]);
        let refused = parse_pe_file(PATH, &bytes)?.written();
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
        let pe = parse_pe_file(PATH, &bytes)?;
        let exports: Vec<(Option<&[u8]>, i64)> =
            pe.exports().into_iter().map(|export| (export.name, export.ordinal)).collect();
        assert_eq!(exports, [(Some(&b"DriverEntry"[..]), 3), (None, 1)]);
        // A name with a character pefile does not accept ends the named exports.
        put(&mut bytes, rdata(0x2363), b";");
        let pe = PeFile::parse(&bytes)?;
        let ordinals: Vec<i64> = pe.exports().into_iter().map(|export| export.ordinal).collect();
        assert_eq!(ordinals, [1, 3]);
        Ok(())
    }
}
