//! User-supplied text as `ppm-sim` prints it.
//!
//! The one escaping every output applies to strings it did not write itself (device ids,
//! registry value names, scenario and file names, the PEP's `Boot` strings), so that no
//! control character reaches a terminal raw.
//!
//! A scenario can name a processor `"\u001b[2J"` (clear the screen) or `"x\rok  "` (rewrite a
//! FAIL line to read ok); [`escaped`] prints such characters as Rust escapes (`\u{1b}`, `\r`,
//! `\n`), so a report line stays the line it was written as. Used by the text report, the
//! messages on stderr and the plot's text (whose SVG backend then XML-escapes `<`, `>`, `&`,
//! `"`, `'`: see [`crate::plot`]); the JSON report needs nothing more, since JSON escapes every
//! control character itself, and the `--trace` CSV holds only numbers.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is printed escaped.
///
/// Every control character (C0, DEL, C1: `char::is_control`) and the Unicode characters that
/// reorder or break a line on a terminal — the bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069) and the line and paragraph separators (U+2028, U+2029).
#[must_use]
pub fn is_escaped(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// `text` with every character [`is_escaped`] says written as its Rust escape.
///
/// `\r`, `\n`, `\t`, `\u{1b}`; everything else, backslashes included, as is. Escaping twice
/// changes nothing more (the escapes are printable).
#[must_use]
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_escaped(c) {
            out.extend(c.escape_debug());
            // `escape_debug` leaves some format characters as they are: force the escape.
            if out.ends_with(c) {
                out.pop();
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first `limit` characters of `text`, [`escaped`], and whether `text` was longer (the
/// caller says how it was cut).
#[must_use]
pub fn escaped_head(text: &str, limit: usize) -> (String, bool) {
    let head: String = text.chars().take(limit).collect();
    (escaped(&head).into_owned(), text.chars().nth(limit).is_some())
}

/// `value` as pretty JSON in which every character [`is_escaped`] says is written `\uXXXX`.
///
/// JSON escapes only U+0000–U+001F itself, and DEL, the C1 controls (U+009B is a terminal's
/// CSI) and the bidirectional controls would otherwise reach the terminal raw. Still plain JSON:
/// a reader decodes the same strings.
///
/// # Errors
/// What `serde_json` could not encode.
pub fn json_pretty<T: serde::Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut bytes,
        TerminalSafe(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut serializer)?;
    // Only whole UTF-8 strings and ASCII were written.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `serde_json`'s pretty layout, with [`is_escaped`] characters of strings written `\uXXXX`.
struct TerminalSafe<'a>(serde_json::ser::PrettyFormatter<'a>);

impl serde_json::ser::Formatter for TerminalSafe<'_> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        for c in fragment.chars() {
            if is_escaped(c) {
                // Every such character is in the Basic Multilingual Plane: one `\u` escape.
                write!(writer, "\\u{:04x}", u32::from(c))?;
            } else {
                let mut buffer = [0; 4];
                writer.write_all(c.encode_utf8(&mut buffer).as_bytes())?;
            }
        }
        Ok(())
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::{escaped, json_pretty};

    #[test]
    fn json_escapes_what_json_leaves_raw_and_reads_back_the_same() {
        let value = serde_json::json!({"id": "a\u{1b}b\u{7f}\u{9b}\u{202e}\\_SB", "n": [1, 2]});
        let text = json_pretty(&value).expect("JSON");
        assert!(!text.chars().any(|c| super::is_escaped(c) && c != '\n'), "{text}");
        assert!(text.contains("a\\u001bb\\u007f\\u009b\\u202e\\\\_SB"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(back, value);
        assert_eq!(
            text,
            serde_json::to_string_pretty(&serde_json::json!({"id": "x", "n": [1, 2]}))
                .expect("JSON")
                .replace("\"x\"", "\"a\\u001bb\\u007f\\u009b\\u202e\\\\_SB\"")
        );
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escaped("\\_SB.CPU0"), "\\_SB.CPU0");
        assert_eq!(escaped("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escaped("x\rok\n"), "x\\rok\\n");
        assert_eq!(escaped("\u{9b}\u{7f}"), "\\u{9b}\\u{7f}");
        assert_eq!(escaped("evil\u{202e}txt"), "evil\\u{202e}txt");
        assert_eq!(escaped("\u{2028}"), "\\u{2028}");
        let once = escaped("\u{1b}\r\u{2066}").into_owned();
        assert_eq!(escaped(&once), once);
        assert!(!once.chars().any(char::is_control));
    }
}
