//! A fixed-size text line that cannot panic: what the driver's debugger log and ETW events
//! format into.
//!
//! wdk's `FormatBuffer` slices its buffer with unchecked indexing (`buffer[used..used + n]`,
//! `split_at`) and panics in `as_c_str` on an impossible state; in a kernel image each of those
//! is a reachable `KeBugCheckEx` (the linked image's call graph showed `DriverEntry` >
//! `log::print` > `panic_fmt`). This buffer uses only checked operations: text that does not
//! fit is cut at a UTF-8 character boundary, and the last byte is always NUL. Any IRQL (it
//! only touches its own bytes); used at `PASSIVE_LEVEL`.

use core::ffi::c_char;
use core::fmt;

/// A line of at most `N - 1` bytes of UTF-8 and a NUL terminator, on the stack.
pub struct Line<const N: usize> {
    /// The text, then NUL bytes: `bytes[used]` and everything after it are 0.
    bytes: [u8; N],
    /// The length of the text in bytes, always `< N`.
    used: usize,
}

impl<const N: usize> Line<N> {
    /// An empty line.
    #[must_use]
    pub const fn new() -> Self {
        const { assert!(N >= 1, "a line holds at least its NUL terminator") };
        Self { bytes: [0; N], used: 0 }
    }

    /// The text written so far (UTF-8: only whole characters are ever written).
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.bytes.get(..self.used).and_then(|text| core::str::from_utf8(text).ok()).unwrap_or("")
    }

    /// The text as a NUL-terminated C string, alive as long as the line.
    #[must_use]
    pub const fn as_c_ptr(&self) -> *const c_char {
        self.bytes.as_ptr().cast()
    }
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for Line<N> {
    /// Appends what fits of `text` (cut at a character boundary); an error once text was cut.
    fn write_str(&mut self, text: &str) -> fmt::Result {
        // N - 1 bytes of text at most: the last byte stays NUL.
        let room = N.saturating_sub(1).saturating_sub(self.used);
        let mut fit = text.len().min(room);
        while !text.is_char_boundary(fit) {
            fit = fit.saturating_sub(1);
        }
        let end = self.used.saturating_add(fit);
        // The lengths compared where the copy needs them equal: `copy_from_slice`'s own
        // mismatch panic is then provably unreachable (`scripts/check-no-panic.sh` links the
        // engine's `DriverEntry`, which writes `Boot` text through a line).
        if let (Some(source), Some(destination)) =
            (text.as_bytes().get(..fit), self.bytes.get_mut(self.used..end))
            && source.len() == destination.len()
        {
            destination.copy_from_slice(source);
            self.used = end;
        }
        if fit < text.len() { Err(fmt::Error) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use core::fmt::Write;

    use super::Line;

    #[test]
    fn text_that_fits_is_kept_whole_and_nul_terminated() {
        let mut line = Line::<16>::new();
        assert_eq!(write!(line, "cpu {}", 7), Ok(()));
        assert_eq!(line.as_str(), "cpu 7");
        // SAFETY: the pointer is the line's own buffer, alive for the borrow; the line is at
        // least 8 bytes long, so 8 bytes are readable.
        let bytes = unsafe { core::slice::from_raw_parts(line.as_c_ptr().cast::<u8>(), 8) };
        assert_eq!(bytes, b"cpu 7\0\0\0");
    }

    #[test]
    fn overlong_text_is_cut_keeping_the_terminator() {
        let mut line = Line::<8>::new();
        assert!(write!(line, "{:010}", 123_456_789).is_err());
        assert_eq!(line.as_str(), "0123456");
        // Further writes add nothing and report the cut.
        assert!(line.write_str("x").is_err());
        assert_eq!(line.as_str(), "0123456");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // "ÄÄÄÄ" is 8 bytes; 6 bytes of room hold three whole characters.
        let mut line = Line::<7>::new();
        assert!(line.write_str("ÄÄÄÄ").is_err());
        assert_eq!(line.as_str(), "ÄÄÄ");
        let mut odd = Line::<6>::new();
        assert!(odd.write_str("ÄÄÄ").is_err());
        assert_eq!(odd.as_str(), "ÄÄ");
    }

    #[test]
    fn a_one_byte_line_holds_only_its_terminator() {
        let mut line = Line::<1>::new();
        assert!(line.write_str("a").is_err());
        assert_eq!(line.as_str(), "");
        assert!(line.write_str("").is_ok());
    }
}
