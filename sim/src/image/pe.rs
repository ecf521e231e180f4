//! The driver image and the files beside it, checked before the runner starts.
//!
//! A `.sys` that is not a whole PE image of the scenario's architecture, or a map or
//! `stack.txt` written for another image, is unusable input (one line naming the file and
//! what is wrong, exit 2), not a run to judge — the runner would map a truncated section short
//! and the image would fault on the missing bytes (bugcheck 0x50), failing every check for a
//! reason that is not the PEP's.
//!
//! The image is read as the runner reads it, by `ppm-image-file` ([`PeFile`]): a file that
//! reader refuses is refused with its reason (`not a PE image ('…')`). Of what it reads, the
//! image must have the machine x64 or ARM64, a PE32+ optional header, 1 to 96 sections whose
//! table lies in the file and is read whole, every section's raw data in the file and its
//! memory in `SizeOfImage`, and its entry point in a section.
//!
//! Whose map and `stack.txt` they are: lld-link's map names the image's `TimeDateStamp`
//! (`Timestamp is …`), its preferred load address (the `ImageBase`) and the entry point
//! (`entry point at SECTION:OFFSET`); `stack.txt` (written by `ppm-image-runner check`)
//! starts with the image's [`stack_identity`] line, `image TimeDateStamp 0x… CheckSum 0x…
//! SizeOfImage …`. Each must agree with the image.

use std::path::Path;

use ppm_image_file::{
    MAX_IMAGE_BYTES, PE32_PLUS, PeFile, Preferred, SECTION_HEADER_BYTES, machine_name,
    parse_pe_file, preferred_load_address, stack_identity,
};

/// The most sections the PE format allows.
const MAX_SECTIONS: u16 = 96;
/// The smallest PE32+ optional header (its data directories left out).
const PE32_PLUS_OPTIONAL_HEADER_BYTES: usize = 112;

/// One section of the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its name (`.text`).
    pub name: String,
    /// `VirtualAddress`.
    pub rva: u32,
    /// `VirtualSize`.
    pub virtual_size: u32,
}

/// What `ppm-sim` knows of an image before running it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeImage {
    /// `x64` or `arm64`.
    pub architecture: &'static str,
    /// The COFF header's `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// `ImageBase`.
    pub image_base: u64,
    /// `AddressOfEntryPoint`.
    pub entry_rva: u32,
    /// The sections, by address (the table's order in an image lld-link linked, which numbers
    /// them so in its map).
    pub sections: Vec<Section>,
    /// The first line of a `stack.txt` written for this image.
    stack_identity: String,
}

impl PeImage {
    /// Reads and checks the image at `path`.
    ///
    /// # Errors
    /// One line naming the file: `PATH: not a PE image …`, `PATH: truncated: …` or what else is
    /// wrong.
    pub fn read(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let length = std::fs::metadata(path)
            .map_err(|error| format!("{shown}: cannot read: {error}"))?
            .len();
        if length > MAX_IMAGE_BYTES {
            return Err(format!(
                "{shown}: {length} bytes, larger than any driver image the runner maps \
                 ({MAX_IMAGE_BYTES})"
            ));
        }
        let bytes =
            std::fs::read(path).map_err(|error| format!("{shown}: cannot read: {error}"))?;
        Self::parse(path, &bytes)
    }

    /// Checks an image's bytes, read from `path`.
    ///
    /// # Errors
    /// One line naming `path`: `PATH: not a PE image ('…')` (the reason `ppm-image-file`
    /// refuses the file for) or what else is wrong.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, String> {
        let shown = path.display().to_string();
        let pe = parse_pe_file(&shown, bytes)?;
        Self::checked(&pe, bytes.len()).map_err(|error| format!("{shown}: {error}"))
    }

    /// Checks `pe`, a file of `length` bytes.
    ///
    /// # Errors
    /// What is wrong, without the file's name.
    fn checked(pe: &PeFile<'_>, length: usize) -> Result<Self, String> {
        let not_pe = |what: &str| format!("not a PE image: {what}");
        let Some(architecture) = machine_name(pe.machine) else {
            return Err(format!(
                "machine {:#06x} is neither x64 (0x8664) nor ARM64 (0xaa64)",
                pe.machine
            ));
        };
        let count = pe.number_of_sections;
        if count == 0 || count > MAX_SECTIONS {
            return Err(not_pe(&format!("{count} sections (1..={MAX_SECTIONS})")));
        }
        if pe.magic != PE32_PLUS {
            return Err(not_pe(&format!(
                "optional header magic {:#x}, not PE32+ ({PE32_PLUS:#x}): not a 64-bit image",
                pe.magic
            )));
        }
        let optional_size = pe.size_of_optional_header;
        if usize::from(optional_size) < PE32_PLUS_OPTIONAL_HEADER_BYTES {
            return Err(not_pe(&format!(
                "an optional header of {optional_size} bytes, too short for PE32+"
            )));
        }
        let table_end = pe.section_table() + usize::from(count) * SECTION_HEADER_BYTES;
        if table_end > length {
            return Err(format!(
                "truncated: the section table ends at byte {table_end}, past the end of the \
                 file ({length} bytes)"
            ));
        }
        if pe.sections.len() != usize::from(count) {
            return Err(not_pe(&format!(
                "{} of its {count} section headers can be read (an empty or broken one ends \
                 the table)",
                pe.sections.len()
            )));
        }
        let sections = sections(pe, length)?;
        let entry_rva = pe.entry;
        let entry_in_code = sections.iter().any(|section| {
            section.rva <= entry_rva
                && u64::from(entry_rva) < u64::from(section.rva) + u64::from(section.virtual_size)
        });
        if !entry_in_code {
            return Err(format!("the entry point (RVA {entry_rva:#x}) lies in no section"));
        }
        Ok(Self {
            architecture,
            time_date_stamp: pe.time_date_stamp,
            image_base: pe.image_base,
            entry_rva,
            sections,
            stack_identity: stack_identity(pe),
        })
    }

    /// Checks that the lld-link map `text` (read from `map`) was written with this image.
    ///
    /// # Errors
    /// One line naming the map and what disagrees.
    pub fn check_map(&self, map: &Path, text: &str) -> Result<(), String> {
        let shown = map.display();
        let line = |prefix: &str| {
            text.lines().find_map(|line| line.trim().strip_prefix(prefix).map(str::trim))
        };
        let stamp = line("Timestamp is ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .ok_or_else(|| format!("{shown}: not an lld-link map (no \"Timestamp is\" line)"))?;
        if stamp != self.time_date_stamp {
            return Err(format!(
                "{shown}: the map of another image: its timestamp is {stamp:#010x}, the \
                 image's TimeDateStamp {:#010x}",
                self.time_date_stamp
            ));
        }
        let Some(Preferred::Address(base)) = preferred_load_address(text) else {
            return Err(format!("{shown}: not an lld-link map (no preferred load address)"));
        };
        if base != self.image_base {
            return Err(format!(
                "{shown}: the map of another image: preferred load address {base:#x}, the \
                 image's ImageBase {:#x}",
                self.image_base
            ));
        }
        if let Some((section, offset)) =
            line("entry point at ").and_then(|place| place.split_once(':'))
            && let (Ok(section), Ok(offset)) =
                (section.trim().parse::<usize>(), u32::from_str_radix(offset.trim(), 16))
        {
            let entry = section
                .checked_sub(1)
                .and_then(|index| self.sections.get(index))
                .and_then(|section| section.rva.checked_add(offset));
            if entry != Some(self.entry_rva) {
                return Err(format!(
                    "{shown}: the map of another image: its entry point is not the image's \
                     (RVA {:#x})",
                    self.entry_rva
                ));
            }
        }
        Ok(())
    }

    /// The first line of a `stack.txt` written for this image ([`stack_identity`]).
    #[must_use]
    pub fn stack_identity(&self) -> &str {
        &self.stack_identity
    }

    /// Checks that `stack.txt`'s `text` (read from `stack`) was written for this image.
    ///
    /// # Errors
    /// One line naming the file and what disagrees.
    pub fn check_stack(&self, stack: &Path, text: &str) -> Result<(), String> {
        let shown = stack.display();
        let wanted = self.stack_identity();
        match text.lines().next().map(str::trim) {
            Some(first) if first == wanted => Ok(()),
            Some(first) if first.starts_with("image ") => Err(format!(
                "{shown}: the stack figures of another image ({first}; the image: {wanted}): \
                 rerun `bash scripts/check-driver-image.sh`"
            )),
            _ => Err(format!(
                "{shown}: does not name its image (no \"image TimeDateStamp\" line first): \
                 rerun `bash scripts/check-driver-image.sh`"
            )),
        }
    }
}

/// The sections `pe` read of a file of `length` bytes: every section's raw data in the file, its
/// memory in `SizeOfImage`.
fn sections(pe: &PeFile<'_>, length: usize) -> Result<Vec<Section>, String> {
    let size_of_image = pe.size_of_image;
    let mut sections = Vec::new();
    for raw in &pe.sections {
        let name = crate::text::escaped(String::from_utf8_lossy(&raw.name).trim_end_matches('\0'))
            .into_owned();
        let raw_end = u64::from(raw.raw_pointer) + u64::from(raw.raw_size);
        if raw.raw_size > 0 && raw_end > length as u64 {
            return Err(format!(
                "truncated: section {name} extends past the end of the file (its data ends \
                 at byte {raw_end}, the file has {length})"
            ));
        }
        let rva = raw.virtual_address;
        let memory_end = u64::from(rva) + u64::from(raw.virtual_size.max(raw.raw_size));
        if memory_end > u64::from(size_of_image) {
            return Err(format!(
                "section {name} ends at RVA {memory_end:#x}, past SizeOfImage \
                 ({size_of_image:#x})"
            ));
        }
        sections.push(Section { name, rva, virtual_size: raw.virtual_size });
    }
    Ok(sections)
}

/// A minimal PE32+ image for tests: headers, one `.text` section of 0x200 bytes at file offset
/// 0x200 and RVA 0x1000 (the entry point), `TimeDateStamp` 0x12345678, `ImageBase`
/// 0x140000000.
#[cfg(test)]
#[must_use]
pub fn minimal_image(machine: u16) -> Vec<u8> {
    let mut bytes = vec![0u8; 0x400];
    bytes[..2].copy_from_slice(b"MZ");
    bytes[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    bytes[0x80..0x84].copy_from_slice(b"PE\0\0");
    let coff = 0x84;
    bytes[coff..coff + 2].copy_from_slice(&machine.to_le_bytes());
    bytes[coff + 2..coff + 4].copy_from_slice(&1u16.to_le_bytes());
    bytes[coff + 4..coff + 8].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    bytes[coff + 16..coff + 18].copy_from_slice(&240u16.to_le_bytes());
    let optional = coff + 20;
    bytes[optional..optional + 2].copy_from_slice(&0x20Bu16.to_le_bytes());
    bytes[optional + 16..optional + 20].copy_from_slice(&0x1000u32.to_le_bytes());
    bytes[optional + 24..optional + 32].copy_from_slice(&0x1_4000_0000u64.to_le_bytes());
    bytes[optional + 56..optional + 60].copy_from_slice(&0x2000u32.to_le_bytes());
    let section = optional + 240;
    bytes[section..section + 5].copy_from_slice(b".text");
    bytes[section + 8..section + 12].copy_from_slice(&0x200u32.to_le_bytes());
    bytes[section + 12..section + 16].copy_from_slice(&0x1000u32.to_le_bytes());
    bytes[section + 16..section + 20].copy_from_slice(&0x200u32.to_le_bytes());
    bytes[section + 20..section + 24].copy_from_slice(&0x200u32.to_le_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::{PeImage, minimal_image as image};

    /// The image of `bytes`, read from `ppm_pep.sys`.
    fn parse(bytes: &[u8]) -> Result<PeImage, String> {
        PeImage::parse(std::path::Path::new("ppm_pep.sys"), bytes)
    }

    #[test]
    fn a_whole_image_is_read() {
        let pe = parse(&image(0x8664)).expect("a PE image");
        assert_eq!(pe.architecture, "x64");
        assert_eq!(pe.time_date_stamp, 0x1234_5678);
        assert_eq!(pe.sections[0].name, ".text");
        assert_eq!(
            pe.stack_identity(),
            "image TimeDateStamp 0x12345678 CheckSum 0x00000000 SizeOfImage 0x2000"
        );
        assert_eq!(parse(&image(0xAA64)).expect("ARM64").architecture, "arm64");
    }

    #[test]
    fn a_broken_image_is_refused_with_what_is_wrong() {
        let whole = image(0x8664);
        let truncated = parse(&whole[..0x300]).unwrap_err();
        assert_eq!(
            truncated,
            "ppm_pep.sys: truncated: section .text extends past the end of the file (its data \
             ends at byte 1024, the file has 768)"
        );
        // What ppm-image-file refuses, in its words.
        assert_eq!(
            parse(b"garbage").unwrap_err(),
            "ppm_pep.sys: not a PE image ('Unable to read the DOS Header, possibly a truncated \
             file.')"
        );
        assert_eq!(
            parse(&whole[..0x90]).unwrap_err(),
            "ppm_pep.sys: not a PE image ('File Header missing')"
        );
        assert!(
            parse(&whole[..0x100])
                .unwrap_err()
                .starts_with("ppm_pep.sys: truncated: the section table")
        );
        assert!(parse(&image(0x14C)).unwrap_err().contains("machine 0x014c"));
        let mut pe32 = whole.clone();
        pe32[0x98] = 0x0B;
        pe32[0x99] = 0x01;
        assert!(parse(&pe32).unwrap_err().contains("optional header magic 0x10b, not PE32+"));
        let mut empty_header = whole;
        empty_header[0x86] = 2; // NumberOfSections 2, the second header all zeros
        assert_eq!(
            parse(&empty_header).unwrap_err(),
            "ppm_pep.sys: not a PE image: 1 of its 2 section headers can be read (an empty or \
             broken one ends the table)"
        );
    }

    #[test]
    fn a_map_of_another_image_is_refused() {
        let pe = parse(&image(0x8664)).expect("a PE image");
        let path = std::path::Path::new("ppm_pep.map");
        let map = |stamp: &str, base: &str, entry: &str| {
            format!(
                " ppm_pep\n\n Timestamp is {stamp} (Thu Jan  1 00:00:00 1970)\n\n Preferred load \
                 address is {base}\n\n entry point at        {entry}\n"
            )
        };
        assert_eq!(
            pe.check_map(path, &map("12345678", "0000000140000000", "0001:00000000")),
            Ok(())
        );
        assert!(
            pe.check_map(path, &map("12345679", "0000000140000000", "0001:00000000"))
                .unwrap_err()
                .contains("its timestamp is 0x12345679, the image's TimeDateStamp 0x12345678")
        );
        assert!(
            pe.check_map(path, &map("12345678", "0000000180000000", "0001:00000000"))
                .unwrap_err()
                .contains("preferred load address")
        );
        assert!(
            pe.check_map(path, &map("12345678", "0000000140000000", "0001:00000010"))
                .unwrap_err()
                .contains("entry point")
        );
        let stack = std::path::Path::new("stack.txt");
        assert_eq!(
            pe.check_stack(stack, &format!("{}\nstack X: 1\n", pe.stack_identity())),
            Ok(())
        );
        assert!(
            pe.check_stack(stack, "stack X: 1\n").unwrap_err().contains("does not name its image")
        );
        assert!(
            pe.check_stack(stack, "image TimeDateStamp 0x00000001 CheckSum 0x0 SizeOfImage 0x1\n")
                .unwrap_err()
                .contains("another image")
        );
    }
}
