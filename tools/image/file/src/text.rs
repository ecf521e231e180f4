//! The texts the readers share: error texts quoting pefile's messages, paths and OS errors, and
//! the character classes of the text parsers (the map's here, the runner's disassembly and
//! report parsers).

use std::fmt::Write as _;
use std::path::Path;

/// `text` quoted as error texts quote pefile's messages, paths and arguments.
///
/// In single quotes (double ones when it holds a single quote and no double one), escaping a
/// backslash (`\\`), newline, CR and tab (`\n`, `\r`, `\t`), the quote, and other control
/// characters and DEL (`\xNN`).
#[must_use]
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
#[must_use]
pub fn os_error_text(error: &std::io::Error, path: &Path) -> String {
    error.raw_os_error().map_or_else(
        || error.to_string(),
        |code| {
            format!("[Errno {code}] {}: {}", strerror(error), quoted(&path.display().to_string()))
        },
    )
}

/// White space as the text parsers take it (`\s` in their patterns): Unicode white space and
/// U+001C..U+001F.
#[must_use]
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A word character (`\w` in the parsers' patterns): alphanumerics and `_`.
#[must_use]
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The line separators the text parsers split at: `\n`, `\r`, VT, FF, U+001C..U+001E, NEL,
/// U+2028 and U+2029 (a map's `\r` is already `\n`: see `decode_map`).
#[must_use]
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{os_error_text, quoted};

    #[test]
    fn texts_quote_strings() {
        assert_eq!(quoted("a'b"), "\"a'b\"");
        assert_eq!(quoted("/x\\y\n"), "'/x\\\\y\\n'");
        let error = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            os_error_text(&error, Path::new("/none")),
            "[Errno 2] No such file or directory: '/none'"
        );
    }
}
