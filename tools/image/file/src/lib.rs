//! The linked driver image `ppm_pep.sys` (PE/COFF, x64 or ARM64) and its lld-link map, as the
//! image runner (`ppm-image-runner`: the image it maps, `describe`, `check`) and `ppm-sim` (the
//! image checked before a run, the functions of its map, symbol names in messages) read them:
//! - the PE file ([`PeFile`]) as pefile's full load reads it: its headers, sections, imports,
//!   exports and base relocations, and the file as pefile writes it back to compute its
//!   checksum ([`PeFile::written`]); [`read_image_file`] and [`parse_pe_file`] with their
//!   one-line errors, and [`stack_identity`], the line naming the image in a stack report;
//! - the lld-link map ([`read_map`]: each symbol's name, RVA, section and object file, a
//!   [`MapSymbol`]; [`preferred_load_address`]);
//! - Rust symbol names as paths ([`demangle()`]);
//! - the error texts and character classes these readers and the runner's share (`text`).
//!
//! Every read of a file is bounds-checked: a broken file is an error, never a panic.

mod demangle;
mod map;
mod pe;
mod text;

#[cfg(any(test, feature = "test-image"))]
pub mod test_image;

pub use demangle::demangle;
pub use map::{MAX_MAP_BYTES, MapSymbol, Preferred, preferred_load_address, read_map};
pub use pe::{
    DIRECTORY_BASERELOC, DIRECTORY_EXCEPTION, MACHINE_ARM64, MACHINE_X64, MAX_IMAGE_BYTES,
    PE32_PLUS, PeFile, REL_BASED_ABSOLUTE, REL_BASED_DIR64, RawExport, RawImport, RawSection,
    SCN_MEM_DISCARDABLE, SCN_MEM_EXECUTE, SCN_MEM_READ, SCN_MEM_WRITE, SECTION_HEADER_BYTES,
    UNFETCHABLE, machine_name, parse_pe_file, read_image_file, stack_identity, u16_at, u32_at,
    wide,
};
pub use text::{is_line_break, is_space, is_word, os_error_text, quoted, strerror};
