//! The lld-link `/MAP` file: its symbols ([`read_map`]: [`MapSymbol`]) and its preferred load
//! address ([`preferred_load_address`]). Limit: a map of at most 16 MiB ([`MAX_MAP_BYTES`]).

use std::io::Read as _;
use std::path::Path;

use crate::text::{is_line_break, is_space, is_word, strerror};

/// The largest map file read (in characters of its decoded text, see `decode_map`).
pub const MAX_MAP_BYTES: usize = 16 << 20;

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

/// A map line's symbol (`^\s*(XXXX):XXXXXXXX\s+(\S+)\s+([0-9a-fA-F]{16})\b(.*)`): its
/// section, name, address and object file (the rest of the line, trimmed, lld-link's `f`
/// before it left out).
fn map_line(line: &str) -> Option<(u16, &str, u64, &str)> {
    let rest = line.trim_start_matches(is_space);
    let (section, rest) = hex_prefix(rest, 4)?;
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
    let object = rest.trim_matches(is_space);
    let object = object
        .strip_prefix('f')
        .filter(|after| after.starts_with(is_space))
        .map_or(object, |after| after.trim_start_matches(is_space));
    Some((u16::try_from(section).ok()?, name, address, object))
}

/// A map's preferred load address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preferred {
    /// This address.
    Address(u64),
    /// An address beyond 64 bits: above every symbol's.
    Beyond,
}

/// `Preferred load address is ([0-9a-fA-F]+)`'s first match in the map's `text`.
pub fn preferred_load_address(text: &str) -> Option<Preferred> {
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

/// One symbol of an lld-link map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapSymbol {
    /// Its name.
    pub name: String,
    /// Its RVA: its address less the preferred load address.
    pub rva: u64,
    /// The number of its section (`SECTION` of its `SECTION:OFFSET`: 1 is the first).
    pub section: u16,
    /// The object file that defined it (the `Lib:Object` column; empty when the line has none).
    pub object: String,
}

/// The symbols of an lld-link /MAP file, in its order, symbols below the preferred load address
/// left out.
///
/// # Errors
///
/// `PATH: …`: the map cannot be read, is larger than [`MAX_MAP_BYTES`], or names no preferred
/// load address.
pub fn read_map(path: &Path) -> Result<Vec<MapSymbol>, String> {
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
fn map_symbols_of(path: &Path, text: &str) -> Result<Vec<MapSymbol>, String> {
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
        .filter(|&(_, _, address, _)| address >= preferred)
        .map(|(section, name, address, object)| MapSymbol {
            name: name.to_owned(),
            rva: address - preferred,
            section,
            object: object.to_owned(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{MapSymbol, Preferred, decode_map, map_symbols_of, preferred_load_address};

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

    /// A symbol of `section` defined by `object`.
    fn symbol(name: &str, rva: u64, section: u16, object: &str) -> MapSymbol {
        MapSymbol { name: name.to_owned(), rva, section, object: object.to_owned() }
    }

    #[test]
    fn a_map_yields_its_symbols() -> Result<(), String> {
        let path = Path::new("test.map");
        let text = decode_map(MAP.as_bytes());
        assert_eq!(preferred_load_address(&text), Some(Preferred::Address(0x1_4000_0000)));
        assert_eq!(
            map_symbols_of(path, &text)?,
            [
                symbol("__ImageBase", 0, 0, "<linker-defined>"),
                symbol("DriverEntry", 0x1000, 1, "a.obj"),
                symbol("$ehgcr_0_4", 0x1004, 1, "a.obj"),
                symbol("helper", 0x1008, 1, "a.obj"),
                symbol("helper_alias", 0x1008, 1, "a.obj"),
                symbol("some_data", 0x2000, 2, "a.obj"),
            ]
        );
        let no_base = map_symbols_of(path, "0001:00000000 f 0000000140001000\n");
        assert_eq!(
            no_base.err().unwrap_or_default(),
            "test.map: not an lld-link /MAP file (no preferred load address)"
        );
        // lld-link's `f` (a function) after the address; another preferred load address.
        let flagged = map_symbols_of(
            path,
            " Preferred load address is 0000000180000000\n\n \
             0001:000084d0       FxDriverEntry              00000001800094d0 f   kmdf_stub.obj\n \
             0002:00000010       f_data                     0000000180010010     f\n \
             0003:00000000       bare                       0000000180020000\n",
        )?;
        assert_eq!(
            flagged,
            [
                symbol("FxDriverEntry", 0x94D0, 1, "kmdf_stub.obj"),
                symbol("f_data", 0x1_0010, 2, "f"),
                symbol("bare", 0x2_0000, 3, ""),
            ]
        );
        let beyond = "Preferred load address is 10000000000000000\n";
        assert_eq!(preferred_load_address(beyond), Some(Preferred::Beyond));
        assert_eq!(map_symbols_of(path, beyond), Ok(Vec::new()));
        Ok(())
    }
}
