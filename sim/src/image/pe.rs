//! The driver image and the files beside it, checked before the runner starts.
//!
//! A `.sys` that is not a whole PE image of the scenario's architecture, or a map or
//! `stack.txt` written for another image, is unusable input (one line naming the file and
//! what is wrong, exit 2), not a run to judge — the runner would map a truncated section short
//! and the image would fault on the missing bytes (bugcheck 0x50), failing every check for a
//! reason that is not the PEP's.
//!
//! What is read (PE/COFF as Microsoft's "PE Format" specifies it): the DOS header's `MZ` and
//! `e_lfanew`, the `PE\0\0` signature, the COFF header (`Machine`, `NumberOfSections`,
//! `TimeDateStamp`, `SizeOfOptionalHeader`), the PE32+ optional header (`AddressOfEntryPoint`,
//! `ImageBase`, `SizeOfImage`, `SizeOfHeaders`, `CheckSum`) and the section table; every
//! section's raw data must lie in the file and its memory in `SizeOfImage`.
//!
//! Whose map and `stack.txt` they are: lld-link's map names the image's `TimeDateStamp`
//! (`Timestamp is …`), its preferred load address (the `ImageBase`) and the entry point
//! (`entry point at SECTION:OFFSET`); `stack.txt` (written by `ppm-image-runner check`)
//! starts with `image TimeDateStamp 0x… CheckSum 0x… SizeOfImage …`. Each must agree with the
//! image.

use std::path::Path;

/// The largest image read (the runner maps at most 64 MiB).
const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// `IMAGE_FILE_MACHINE_AMD64`.
const MACHINE_X64: u16 = 0x8664;
/// `IMAGE_FILE_MACHINE_ARM64`.
const MACHINE_ARM64: u16 = 0xAA64;
/// The PE32+ optional header's `Magic`.
const PE32_PLUS: u16 = 0x20B;
/// The bytes of one section header.
const SECTION_HEADER_BYTES: usize = 40;
/// The most sections the PE format allows.
const MAX_SECTIONS: u16 = 96;

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
    /// The optional header's `CheckSum`.
    pub checksum: u32,
    /// `SizeOfImage`.
    pub size_of_image: u32,
    /// `ImageBase`.
    pub image_base: u64,
    /// `AddressOfEntryPoint`.
    pub entry_rva: u32,
    /// The sections, in table order.
    pub sections: Vec<Section>,
}

/// A little-endian field of `bytes` at `at`.
fn field<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    field(bytes, at).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    field(bytes, at).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    field(bytes, at).map(u64::from_le_bytes)
}

impl PeImage {
    /// Reads and checks the image at `path`.
    ///
    /// # Errors
    /// One line: `PATH: not a PE image: …`, `PATH: truncated: …` or what else is wrong.
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
        Self::parse(&bytes).map_err(|error| format!("{shown}: {error}"))
    }

    /// Checks an image's bytes.
    ///
    /// # Errors
    /// What is wrong, without the file's name.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let not_pe = |what: &str| format!("not a PE image: {what}");
        if bytes.get(..2) != Some(b"MZ") {
            return Err(not_pe(&format!(
                "no MZ signature at its start ({} bytes long)",
                bytes.len()
            )));
        }
        let header = u32_at(bytes, 0x3C)
            .and_then(|offset| usize::try_from(offset).ok())
            .ok_or_else(|| not_pe("the DOS header ends before e_lfanew"))?;
        match bytes.get(header..header.saturating_add(4)) {
            Some(b"PE\0\0") => {}
            Some(_) => return Err(not_pe(&format!("no PE signature at e_lfanew ({header:#x})"))),
            None => {
                return Err(format!(
                    "truncated: the PE header (at {header:#x}) lies past the end of the file \
                     ({} bytes)",
                    bytes.len()
                ));
            }
        }
        let coff = header + 4;
        let optional = coff + 20;
        let truncated_headers = || {
            format!("truncated: the headers end past the end of the file ({} bytes)", bytes.len())
        };
        let machine = u16_at(bytes, coff).ok_or_else(truncated_headers)?;
        let architecture = match machine {
            MACHINE_X64 => "x64",
            MACHINE_ARM64 => "arm64",
            other => {
                return Err(format!(
                    "machine {other:#06x} is neither x64 (0x8664) nor ARM64 (0xaa64)"
                ));
            }
        };
        let count = u16_at(bytes, coff + 2).ok_or_else(truncated_headers)?;
        let time_date_stamp = u32_at(bytes, coff + 4).ok_or_else(truncated_headers)?;
        let optional_size = u16_at(bytes, coff + 16).ok_or_else(truncated_headers)?;
        if count == 0 || count > MAX_SECTIONS {
            return Err(not_pe(&format!("{count} sections (1..={MAX_SECTIONS})")));
        }
        let magic = u16_at(bytes, optional).ok_or_else(truncated_headers)?;
        if magic != PE32_PLUS {
            return Err(not_pe(&format!(
                "optional header magic {magic:#x}, not PE32+ (0x20b): not a 64-bit image"
            )));
        }
        if usize::from(optional_size) < 112 {
            return Err(not_pe(&format!(
                "an optional header of {optional_size} bytes, too short for PE32+"
            )));
        }
        let entry_rva = u32_at(bytes, optional + 16).ok_or_else(truncated_headers)?;
        let image_base = u64_at(bytes, optional + 24).ok_or_else(truncated_headers)?;
        let size_of_image = u32_at(bytes, optional + 56).ok_or_else(truncated_headers)?;
        let checksum = u32_at(bytes, optional + 64).ok_or_else(truncated_headers)?;
        let table = optional + usize::from(optional_size);
        let sections = sections(bytes, table, count, size_of_image)?;
        let entry_in_code = sections.iter().any(|section| {
            section.rva <= entry_rva
                && u64::from(entry_rva) < u64::from(section.rva) + u64::from(section.virtual_size)
        });
        if !entry_in_code {
            return Err(format!("the entry point (RVA {entry_rva:#x}) lies in no section"));
        }
        Ok(Self {
            architecture,
            time_date_stamp,
            checksum,
            size_of_image,
            image_base,
            entry_rva,
            sections,
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
        let base = line("Preferred load address is ")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .ok_or_else(|| format!("{shown}: not an lld-link map (no preferred load address)"))?;
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

    /// The first line of a `stack.txt` written for this image.
    #[must_use]
    pub fn stack_identity(&self) -> String {
        format!(
            "image TimeDateStamp {:#010x} CheckSum {:#010x} SizeOfImage {:#x}",
            self.time_date_stamp, self.checksum, self.size_of_image
        )
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

/// The section table at `table` (`count` headers) of an image of `size_of_image` bytes in
/// memory: every section's raw data in the file, its memory in `SizeOfImage`.
fn sections(
    bytes: &[u8],
    table: usize,
    count: u16,
    size_of_image: u32,
) -> Result<Vec<Section>, String> {
    let table_end = table + usize::from(count) * SECTION_HEADER_BYTES;
    if table_end > bytes.len() {
        return Err(format!(
            "truncated: the section table ends at byte {table_end}, past the end of the \
             file ({} bytes)",
            bytes.len()
        ));
    }
    let mut sections = Vec::new();
    for index in 0..usize::from(count) {
        let at = table + index * SECTION_HEADER_BYTES;
        let raw_name = bytes.get(at..at + 8).unwrap_or_default();
        let name = crate::text::escaped(String::from_utf8_lossy(raw_name).trim_end_matches('\0'))
            .into_owned();
        let number = |offset| u32_at(bytes, at + offset).unwrap_or(0);
        let (virtual_size, rva) = (number(8), number(12));
        let (raw_size, raw_offset) = (number(16), number(20));
        let raw_end = u64::from(raw_offset) + u64::from(raw_size);
        if raw_size > 0 && raw_end > bytes.len() as u64 {
            return Err(format!(
                "truncated: section {name} extends past the end of the file (its data ends \
                 at byte {raw_end}, the file has {})",
                bytes.len()
            ));
        }
        let memory_end = u64::from(rva) + u64::from(virtual_size.max(raw_size));
        if memory_end > u64::from(size_of_image) {
            return Err(format!(
                "section {name} ends at RVA {memory_end:#x}, past SizeOfImage \
                 ({size_of_image:#x})"
            ));
        }
        sections.push(Section { name, rva, virtual_size });
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

    #[test]
    fn a_whole_image_is_read() {
        let pe = PeImage::parse(&image(0x8664)).expect("a PE image");
        assert_eq!(pe.architecture, "x64");
        assert_eq!(pe.time_date_stamp, 0x1234_5678);
        assert_eq!(pe.sections[0].name, ".text");
        assert_eq!(PeImage::parse(&image(0xAA64)).expect("ARM64").architecture, "arm64");
    }

    #[test]
    fn a_broken_image_is_refused_with_what_is_wrong() {
        let whole = image(0x8664);
        let truncated = PeImage::parse(&whole[..0x300]).unwrap_err();
        assert_eq!(
            truncated,
            "truncated: section .text extends past the end of the file (its data ends at byte \
             1024, the file has 768)"
        );
        assert!(PeImage::parse(b"garbage").unwrap_err().starts_with("not a PE image: no MZ"));
        assert!(PeImage::parse(&whole[..0x90]).unwrap_err().starts_with("truncated: the headers"));
        assert!(
            PeImage::parse(&whole[..0x100])
                .unwrap_err()
                .starts_with("truncated: the section table")
        );
        assert!(PeImage::parse(&image(0x14C)).unwrap_err().contains("machine 0x014c"));
    }

    #[test]
    fn a_map_of_another_image_is_refused() {
        let pe = PeImage::parse(&image(0x8664)).expect("a PE image");
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
