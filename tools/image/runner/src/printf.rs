//! `DbgPrintEx`'s format, as the kernel's CRT formats it, character for character (its text ends
//! up in reports).
//!
//! The conversions are `%s %d %i %u %x %X %o %p %c %%` and `%ws` (`%ls`, `%S`), with flags
//! (`-`, `0`, `+`, space, `#`), width and precision (numbers or `*`), and the length modifiers
//! `h`, `hh`, `l`, `ll`, `I64`, `I32`, `I`, `z`, `w`; `l` is 32 bits (LLP64). Any other
//! conversion (`%f`, `%C`, `%wZ`, ...) is copied as written and takes no argument.
//!
//! The runner's string reads (its `c_string`, `wide_string` and `terminated`) are built on
//! [`read_terminated`], [`decode_narrow`] and [`decode_wide`]: the runner supplies the memory
//! reads, these functions the loop and the decoding.

/// The longest text a message formats to, in characters; strings read for `%s` and `%ws`
/// stop after this many characters.
pub const MAX_TEXT: usize = 4096;

/// Where [`format_message`] takes its arguments and strings from, each when a conversion
/// needs it.
///
/// One object serves all three, so the runner's implementation can hold the runner itself
/// (arguments come from registers and the stack, strings from memory that a read may fetch).
/// An error of any method ends [`format_message`] with that error, before any further call.
pub trait Arguments {
    /// What a failed argument or string read is (the runner's page fault).
    type Error;

    /// The call's next argument (`DbgPrintEx`'s fourth, fifth, ...).
    ///
    /// # Errors
    ///
    /// The argument could not be read.
    fn next_arg(&mut self) -> Result<u64, Self::Error>;

    /// The narrow string at `address`, for `%s` (the runner's `c_string`).
    ///
    /// # Errors
    ///
    /// The string could not be read.
    fn read_string(&mut self, address: u64) -> Result<String, Self::Error>;

    /// The UTF-16 string at `address`, for `%ws`, `%ls` and `%S` (the runner's `wide_string`).
    ///
    /// # Errors
    ///
    /// The string could not be read.
    fn read_wide_string(&mut self, address: u64) -> Result<String, Self::Error>;
}

/// The Unicode conversions of `format` (`%C`, `%S`, `%lc`, `%ls`, `%wc`, `%ws`, `%wZ`), each
/// as written (flags, width and precision included): `DbgPrintEx` allows them only at
/// `PASSIVE_LEVEL`.
#[must_use]
pub fn unicode_conversions(format: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut position = 0;
    while let Some(spec) = find_spec(format, position) {
        position = spec.end;
        let wide = matches!(spec.length, Some(Length::L | Length::W))
            && matches!(spec.conversion, b'c' | b's' | b'Z');
        if wide || (spec.length.is_none() && matches!(spec.conversion, b'C' | b'S')) {
            found.push(decode_narrow(format.get(spec.start..spec.end).unwrap_or_default()));
        }
    }
    found
}

/// `format` formatted with the arguments and strings `arguments` supplies, cut to
/// [`MAX_TEXT`] characters. The bytes of `format` outside conversions are Latin-1.
///
/// Arguments are taken in order: a `*` width, then a `*` precision, then the value. Once the
/// text passes [`MAX_TEXT`] characters, no further conversion is made (nor argument taken).
///
/// Padding is counted, not built: a width or precision of a billion costs no more than a small
/// one (only the first [`MAX_TEXT`] characters are kept).
///
/// # Errors
///
/// The first error of `arguments`, as soon as it happens.
pub fn format_message<A: Arguments + ?Sized>(
    format: &[u8],
    arguments: &mut A,
) -> Result<String, A::Error> {
    let mut text = Text::default();
    let mut position = 0;
    while let Some(spec) = find_spec(format, position) {
        text.push_latin1(format.get(position..spec.start).unwrap_or_default());
        position = spec.end;
        if spec.conversion == b'%' {
            text.push_char('%', 1);
            continue;
        }
        let width = match spec.width {
            Some(Count::Star) => Some(i64::from(low_i32(arguments.next_arg()?))),
            Some(Count::Digits(digits)) => Some(decimal(digits)),
            None => None,
        };
        let precision = match spec.precision {
            Some(Count::Star) => Some(i64::from(low_i32(arguments.next_arg()?))),
            Some(Count::Digits(digits)) => Some(decimal(digits)),
            None => None,
        };
        let layout = Layout { flags: spec.flags, width, precision };
        let bits64 = matches!(spec.length, Some(Length::Ll | Length::I64 | Length::I | Length::Z));
        match spec.conversion {
            conversion @ (b'd' | b'i' | b'u' | b'x' | b'X' | b'o') => {
                let mut value = arguments.next_arg()?;
                if !bits64 {
                    value &= 0xFFFF_FFFF;
                }
                match spec.length {
                    Some(Length::H) => value &= 0xFFFF,
                    Some(Length::Hh) => value &= 0xFF,
                    _ => {}
                }
                let (negative, magnitude) = if matches!(conversion, b'd' | b'i') {
                    let signed = if bits64 {
                        i64::from_le_bytes(value.to_le_bytes())
                    } else {
                        i64::from(low_i32(value))
                    };
                    (signed < 0, signed.unsigned_abs())
                } else {
                    (false, value)
                };
                push_number(&mut text, &layout, conversion, negative, magnitude);
            }
            b'p' => text.push_str(&format!("{:016X}", arguments.next_arg()?)),
            b'c' => text.push_char(char::from(arguments.next_arg()?.to_le_bytes()[0]), 1),
            b's' if !matches!(spec.length, Some(Length::W | Length::L)) => {
                let address = arguments.next_arg()?;
                push_string(&mut text, &layout, &arguments.read_string(address)?);
            }
            b'S' | b's' => {
                let address = arguments.next_arg()?;
                push_string(&mut text, &layout, &arguments.read_wide_string(address)?);
            }
            _ => text.push_latin1(format.get(spec.start..spec.end).unwrap_or_default()),
        }
        if text.total > MAX_TEXT {
            break;
        }
    }
    text.push_latin1(format.get(position..).unwrap_or_default());
    Ok(text.out)
}

/// The bytes of the NUL-terminated string at `address`, in units of 2 bytes if `wide`, else
/// of 1, without the terminator and at most [`MAX_TEXT`] units; `(null)` (encoded as the unit
/// says) for address 0. `read(address, buffer)` fills `buffer` from memory; it is called once
/// a unit, in order, so the first unit that faults ends the read with its error, and no unit
/// past the terminator is read.
///
/// The runner's `c_string` is [`decode_narrow`] of this, `wide_string` [`decode_wide`] of it.
/// A string running past the top of the address space wraps to address 0.
///
/// # Errors
///
/// The first error of `read`.
pub fn read_terminated<E>(
    address: u64,
    wide: bool,
    mut read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
) -> Result<Vec<u8>, E> {
    if address == 0 {
        return Ok(if wide {
            "(null)".encode_utf16().flat_map(u16::to_le_bytes).collect()
        } else {
            b"(null)".to_vec()
        });
    }
    let mut unit = [0_u8; 2];
    let unit = if wide { &mut unit[..] } else { &mut unit[..1] };
    let limit = MAX_TEXT * unit.len();
    let mut out = Vec::new();
    while out.len() < limit {
        let offset = u64::try_from(out.len()).unwrap_or(u64::MAX);
        read(address.wrapping_add(offset), unit)?;
        if unit.iter().all(|&byte| byte == 0) {
            break;
        }
        out.extend_from_slice(unit);
    }
    Ok(out)
}

/// `bytes` decoded as Latin-1: each byte the character of its value.
#[must_use]
pub fn decode_narrow(bytes: &[u8]) -> String {
    bytes.iter().copied().map(char::from).collect()
}

/// `bytes` decoded as UTF-16LE, errors replaced: an unpaired surrogate becomes U+FFFD, and so
/// does a last odd byte, except that a high surrogate with fewer than two bytes after it makes
/// one U+FFFD together with them.
#[must_use]
pub fn decode_wide(bytes: &[u8]) -> String {
    let pairs = bytes.chunks_exact(2);
    let odd = !pairs.remainder().is_empty();
    let units = pairs.map(|pair| u16::from_le_bytes([pair[0], pair[1]]));
    let mut out: String =
        char::decode_utf16(units).map(|unit| unit.unwrap_or(char::REPLACEMENT_CHARACTER)).collect();
    // The last whole unit a high surrogate (D800-DBFF): its high byte, the second, D8-DB.
    let ends_high = bytes.chunks_exact(2).next_back().and_then(|pair| pair.get(1));
    if odd && !ends_high.is_some_and(|high| (0xD8..=0xDB).contains(high)) {
        out.push(char::REPLACEMENT_CHARACTER);
    }
    out
}

/// The text [`format_message`] builds: its first [`MAX_TEXT`] characters, and how many
/// characters the whole would have (saturating), which decides when formatting stops.
#[derive(Default)]
struct Text {
    /// The first [`MAX_TEXT`] characters.
    out: String,
    /// How many characters `out` has.
    kept: usize,
    /// How many characters the whole text has.
    total: usize,
}

impl Text {
    /// Appends `count` times `character`.
    fn push_char(&mut self, character: char, count: usize) {
        self.total = self.total.saturating_add(count);
        let kept = count.min(MAX_TEXT.saturating_sub(self.kept));
        self.out.extend(std::iter::repeat_n(character, kept));
        self.kept += kept;
    }

    /// Appends `text`.
    fn push_str(&mut self, text: &str) {
        let count = text.chars().count();
        self.total = self.total.saturating_add(count);
        let kept = count.min(MAX_TEXT.saturating_sub(self.kept));
        self.out.extend(text.chars().take(kept));
        self.kept += kept;
    }

    /// Appends `bytes` decoded as Latin-1.
    fn push_latin1(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len());
        let kept = bytes.len().min(MAX_TEXT.saturating_sub(self.kept));
        self.out.extend(bytes.iter().take(kept).copied().map(char::from));
        self.kept += kept;
    }
}

/// A conversion's flags, width and precision (a `*`'s already taken).
struct Layout<'a> {
    /// The flags as written (`-`, `+`, space, `#`, `0`, any number of each).
    flags: &'a [u8],
    /// The width (negative from a `*`: no padding), saturating.
    width: Option<i64>,
    /// The precision (negative from a `*`), saturating.
    precision: Option<i64>,
}

impl Layout<'_> {
    /// Whether the flags hold `flag`.
    fn has(&self, flag: u8) -> bool {
        self.flags.contains(&flag)
    }

    /// How far the width passes `length` characters, if it does.
    fn padding(&self, length: usize) -> Option<usize> {
        let width = usize::try_from(self.width?).ok()?;
        width.checked_sub(length).filter(|&padding| padding > 0)
    }
}

/// Appends a number of sign `negative` and absolute value `magnitude`, in the base of
/// `conversion` (`d i u` decimal, `x X o`): the sign (`-`, else `+` or space by the flags),
/// `0x`/`0X` for `#` and a nonzero hex value, zeros up to the precision's digits, then the
/// width's padding: spaces after it with `-`, zeros after the sign with `0` and no precision,
/// else spaces before it.
fn push_number(
    text: &mut Text,
    layout: &Layout<'_>,
    conversion: u8,
    negative: bool,
    magnitude: u64,
) {
    let digits = match conversion {
        b'x' => format!("{magnitude:x}"),
        b'X' => format!("{magnitude:X}"),
        b'o' => format!("{magnitude:o}"),
        _ => magnitude.to_string(),
    };
    let zeros = layout
        .precision
        .and_then(|precision| usize::try_from(precision).ok())
        .map_or(0, |precision| precision.saturating_sub(digits.len()));
    let mut prefix = String::from(if negative {
        "-"
    } else if layout.has(b'+') {
        "+"
    } else if layout.has(b' ') {
        " "
    } else {
        ""
    });
    if layout.has(b'#') && magnitude != 0 {
        match conversion {
            b'x' => prefix.push_str("0x"),
            b'X' => prefix.push_str("0X"),
            _ => {}
        }
    }
    let length = prefix.len().saturating_add(zeros).saturating_add(digits.len());
    match layout.padding(length) {
        Some(padding) if layout.has(b'-') => {
            text.push_str(&prefix);
            text.push_char('0', zeros);
            text.push_str(&digits);
            text.push_char(' ', padding);
        }
        Some(padding) if layout.has(b'0') && layout.precision.is_none() => {
            text.push_str(&prefix);
            text.push_char('0', padding);
            text.push_str(&digits);
        }
        padding => {
            text.push_char(' ', padding.unwrap_or(0));
            text.push_str(&prefix);
            text.push_char('0', zeros);
            text.push_str(&digits);
        }
    }
}

/// Appends a string: cut to its first `precision` characters (a negative precision, from a
/// `*`, drops that many from the end instead), then padded with spaces to the width (after it
/// with `-`, else before it).
fn push_string(text: &mut Text, layout: &Layout<'_>, string: &str) {
    let count = string.chars().count();
    let kept = layout.precision.map_or(count, |precision| {
        usize::try_from(precision).map_or_else(
            |_| {
                count
                    .saturating_sub(usize::try_from(precision.unsigned_abs()).unwrap_or(usize::MAX))
            },
            |precision| precision.min(count),
        )
    });
    let end = string.char_indices().nth(kept).map_or(string.len(), |(index, _)| index);
    let string = string.get(..end).unwrap_or(string);
    match layout.padding(kept) {
        Some(padding) if layout.has(b'-') => {
            text.push_str(string);
            text.push_char(' ', padding);
        }
        padding => {
            text.push_char(' ', padding.unwrap_or(0));
            text.push_str(string);
        }
    }
}

/// The signed value of the low 32 bits of `value`.
const fn low_i32(value: u64) -> i32 {
    let bytes = value.to_le_bytes();
    i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// The value of ASCII decimal `digits`, saturating at [`i64::MAX`].
fn decimal(digits: &[u8]) -> i64 {
    digits.iter().fold(0_i64, |value, &digit| {
        value.saturating_mul(10).saturating_add(i64::from(digit.wrapping_sub(b'0') % 10))
    })
}

/// A length modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Length {
    /// `hh`: the value's low 8 bits.
    Hh,
    /// `h`: the value's low 16 bits.
    H,
    /// `ll`: 64 bits.
    Ll,
    /// `l`: 32 bits (LLP64); `%ls` and `%lc` are wide.
    L,
    /// `I64`: 64 bits.
    I64,
    /// `I32`: 32 bits.
    I32,
    /// `I`: 64 bits (pointer-sized).
    I,
    /// `z`: 64 bits (`size_t`).
    Z,
    /// `w`: wide (`%ws`, `%wc`, `%wZ`).
    W,
}

/// The length modifiers in the order they are tried: each before any that is its prefix
/// (`hh` before `h`, `I64` before `I`).
const LENGTHS: [(&[u8], Length); 9] = [
    (b"hh", Length::Hh),
    (b"h", Length::H),
    (b"ll", Length::Ll),
    (b"l", Length::L),
    (b"I64", Length::I64),
    (b"I32", Length::I32),
    (b"I", Length::I),
    (b"z", Length::Z),
    (b"w", Length::W),
];

/// A width or a precision as written.
#[derive(Clone, Copy, Debug)]
enum Count<'a> {
    /// `*`: the next argument's low 32 bits, signed.
    Star,
    /// Decimal digits.
    Digits(&'a [u8]),
}

/// A conversion specification: a match of the pattern
/// `%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|I64|I32|I|z|w)?([a-zA-Z%])`.
struct Spec<'a> {
    /// Where it starts (its `%`).
    start: usize,
    /// Where it ends (after its conversion).
    end: usize,
    /// Its flags.
    flags: &'a [u8],
    /// Its width.
    width: Option<Count<'a>>,
    /// Its precision.
    precision: Option<Count<'a>>,
    /// Its length modifier.
    length: Option<Length>,
    /// Its conversion: an ASCII letter or `%`.
    conversion: u8,
}

/// The first conversion specification of `format` at or after `from`: at the first `%` where
/// the pattern matches (a `%` where it does not is text).
fn find_spec(format: &[u8], from: usize) -> Option<Spec<'_>> {
    (from..format.len())
        .filter(|&start| format.get(start) == Some(&b'%'))
        .find_map(|start| spec_at(format, start))
}

/// Whether `byte` is a conversion (`[a-zA-Z%]`).
const fn is_conversion(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'%'
}

/// The end of the run of bytes of `format` from `start` that `accept` accepts.
fn run(format: &[u8], start: usize, accept: impl Fn(u8) -> bool) -> usize {
    let tail = format.get(start..).unwrap_or_default();
    start + tail.iter().position(|&byte| !accept(byte)).unwrap_or(tail.len())
}

/// The width or precision written at `at`, and where it ends.
fn count_at(format: &[u8], at: usize) -> Option<(Count<'_>, usize)> {
    if format.get(at) == Some(&b'*') {
        return Some((Count::Star, at + 1));
    }
    let end = run(format, at, |byte| byte.is_ascii_digit());
    (end > at).then(|| (Count::Digits(format.get(at..end).unwrap_or_default()), end))
}

/// The conversion specification starting at `start` (a `%`), if the pattern matches there.
/// Backtracking only matters in the length modifier: `%ll` followed by no conversion is
/// length `l` and conversion `l`, `%I64` followed by none is conversion `I`. (Giving back
/// flags, digits or the precision leaves a digit, `*` or `.` where the pattern needs a
/// letter, so it never finds a match the greedy reading misses.)
fn spec_at(format: &[u8], start: usize) -> Option<Spec<'_>> {
    let flags_end = run(format, start + 1, |byte| b"-+ #0".contains(&byte));
    let flags = format.get(start + 1..flags_end).unwrap_or_default();
    let (width, mut at) = match count_at(format, flags_end) {
        Some((count, end)) => (Some(count), end),
        None => (None, flags_end),
    };
    let mut precision = None;
    if format.get(at) == Some(&b'.')
        && let Some((count, end)) = count_at(format, at + 1)
    {
        precision = Some(count);
        at = end;
    }
    let tail = format.get(at..).unwrap_or_default();
    let (length, conversion_at) = LENGTHS
        .iter()
        .find(|(text, _)| {
            tail.starts_with(text) && tail.get(text.len()).copied().is_some_and(is_conversion)
        })
        .map_or((None, at), |&(text, length)| (Some(length), at + text.len()));
    let conversion = format.get(conversion_at).copied().filter(|&byte| is_conversion(byte))?;
    Some(Spec { start, end: conversion_at + 1, flags, width, precision, length, conversion })
}

/// Expected results for fixed inputs: the texts of [`format_message`] (they end up in reports,
/// which must stay byte-identical), the Unicode conversions, the decodings and the string
/// reads.
#[cfg(test)]
mod tests {
    use super::*;

    /// A read that failed.
    #[derive(Debug, PartialEq, Eq)]
    struct Fault;

    /// Arguments from a list, strings from functions of their address (`None`: a fault).
    struct Fake<'a> {
        /// The arguments.
        args: &'a [u64],
        /// How many times `next_arg` was called (the failing call included).
        calls: usize,
        /// The narrow strings.
        narrow: fn(u64) -> Option<String>,
        /// The wide strings.
        wide: fn(u64) -> Option<String>,
    }

    impl Arguments for Fake<'_> {
        type Error = Fault;

        fn next_arg(&mut self) -> Result<u64, Fault> {
            self.calls += 1;
            self.args.get(self.calls - 1).copied().ok_or(Fault)
        }

        fn read_string(&mut self, address: u64) -> Result<String, Fault> {
            (self.narrow)(address).ok_or(Fault)
        }

        fn read_wide_string(&mut self, address: u64) -> Result<String, Fault> {
            (self.wide)(address).ok_or(Fault)
        }
    }

    /// The narrow strings the vectors' `%s` conversions read.
    fn narrow(address: u64) -> Option<String> {
        Some(match address {
            0xBAD => return None,
            0x50 => "narrow".into(),
            0x51 => "h\u{e9}llo\u{ff}".into(),
            0x52 => String::new(),
            0x53 => "a".repeat(5000),
            0x54 => "abcdefghij".into(),
            _ => format!("<{address:x}>"),
        })
    }

    /// The wide strings the vectors' `%ws`, `%ls` and `%S` conversions read.
    fn wide(address: u64) -> Option<String> {
        Some(match address {
            0xBAD => return None,
            0x40 => "wide".into(),
            0x41 => "w\u{ef}de\u{20ac}\u{1f600}x".into(),
            0x42 => String::new(),
            0x43 => "\u{20ac}".repeat(3000),
            0x44 => "0123456789".into(),
            _ => format!("[{address:x}]"),
        })
    }

    /// `format` formatted with `args` and the vectors' strings, and how many arguments it
    /// asked for.
    fn format(format: &[u8], args: &[u64]) -> (Option<String>, usize) {
        let mut fake = Fake { args, calls: 0, narrow, wide };
        let text = format_message(format, &mut fake);
        (text.ok(), fake.calls)
    }

    /// A vector of `format_message`: format, arguments, text (`None`: an error), how many
    /// arguments were asked for.
    type Vector<'a, T> = (&'a [u8], &'a [u64], Option<T>, usize);

    /// Expected results of [`format_message`], with the strings of [`narrow`] and [`wide`]:
    /// format, arguments, text (`None`: an argument or string read failed), and how many
    /// arguments were asked for (the failing one included).
    #[rustfmt::skip]
    const FORMATS: &[Vector<'static, &str>] = &[
    (b"", &[7], Some(""), 0),
    (b"hello", &[7], Some("hello"), 0),
    (b"100%%", &[7], Some("100%"), 0),
    (b"%%", &[7], Some("%"), 0),
    (b"%", &[7], Some("%"), 0),
    (b"abc%", &[7], Some("abc%"), 0),
    (b"%-%", &[7], Some("%"), 0),
    (b"%5%", &[7], Some("%"), 0),
    (b"%*%", &[7], Some("%"), 0),
    (b"%.5%", &[7], Some("%"), 0),
    (b"%.%", &[7], Some("%.%"), 0),
    (b"%.d", &[7], Some("%.d"), 0),
    (b"%5.d", &[7], Some("%5.d"), 0),
    (b"%.*", &[7], Some("%.*"), 0),
    (b"%*", &[7], Some("%*"), 0),
    (b"%12", &[7], Some("%12"), 0),
    (b"%-", &[7], Some("%-"), 0),
    (b"%#", &[7], Some("%#"), 0),
    (b"% %d", &[7], Some("%d"), 0),
    (b"%%%d", &[7], Some("%7"), 1),
    (b"%%%%", &[7], Some("%%"), 0),
    (b"%+-0 #%", &[7], Some("%"), 0),
    (b"a%%b%%c", &[7], Some("a%b%c"), 0),
    (b"%%d", &[7], Some("%d"), 0),
    (b"%d %i %u %x %X %o", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%d %i %u %x %X %o", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%d %i %u %x %X %o", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%d %i %u %x %X %o", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%d %i %u %x %X %o", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("-2147483648 -2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%d %i %u %x %X %o", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%d %i %u %x %X %o", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%d %i %u %x %X %o", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%d %i %u %x %X %o", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%d %i %u %x %X %o", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%d %i %u %x %X %o", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("-32640 -32640 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%d %i %u %x %X %o", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("-1698898192 -1698898192 2596069104 9abcdef0 9ABCDEF0 23257157360"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("-2147483648 -2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("-32640 -32640 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%ld %li %lu %lx %lX %lo", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("-1698898192 -1698898192 2596069104 9abcdef0 9ABCDEF0 23257157360"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("2147483648 2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("4294967295 4294967295 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("4294967301 4294967301 4294967301 100000005 100000005 40000000005"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("9223372036854775807 9223372036854775807 9223372036854775807 7fffffffffffffff 7FFFFFFFFFFFFFFF 777777777777777777777"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("-9223372036854775808 -9223372036854775808 9223372036854775808 8000000000000000 8000000000000000 1000000000000000000000"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 18446744073709551615 ffffffffffffffff FFFFFFFFFFFFFFFF 1777777777777777777777"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("4294934656 4294934656 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%lld %lli %llu %llx %llX %llo", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("1311768467463790320 1311768467463790320 1311768467463790320 123456789abcdef0 123456789ABCDEF0 110642547423257157360"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("65535 65535 65535 ffff FFFF 177777"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("65535 65535 65535 ffff FFFF 177777"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("65535 65535 65535 ffff FFFF 177777"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("65535 65535 65535 ffff FFFF 177777"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("32896 32896 32896 8080 8080 100200"), 6),
    (b"%hd %hi %hu %hx %hX %ho", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("57072 57072 57072 def0 DEF0 157360"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("255 255 255 ff FF 377"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("255 255 255 ff FF 377"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("255 255 255 ff FF 377"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("255 255 255 ff FF 377"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("128 128 128 80 80 200"), 6),
    (b"%hhd %hhi %hhu %hhx %hhX %hho", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("240 240 240 f0 F0 360"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("2147483648 2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("4294967295 4294967295 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("4294967301 4294967301 4294967301 100000005 100000005 40000000005"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("9223372036854775807 9223372036854775807 9223372036854775807 7fffffffffffffff 7FFFFFFFFFFFFFFF 777777777777777777777"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("-9223372036854775808 -9223372036854775808 9223372036854775808 8000000000000000 8000000000000000 1000000000000000000000"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 18446744073709551615 ffffffffffffffff FFFFFFFFFFFFFFFF 1777777777777777777777"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("4294934656 4294934656 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%I64d %I64i %I64u %I64x %I64X %I64o", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("1311768467463790320 1311768467463790320 1311768467463790320 123456789abcdef0 123456789ABCDEF0 110642547423257157360"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("-2147483648 -2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("-32640 -32640 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%I32d %I32i %I32u %I32x %I32X %I32o", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("-1698898192 -1698898192 2596069104 9abcdef0 9ABCDEF0 23257157360"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("2147483648 2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("4294967295 4294967295 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("4294967301 4294967301 4294967301 100000005 100000005 40000000005"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("9223372036854775807 9223372036854775807 9223372036854775807 7fffffffffffffff 7FFFFFFFFFFFFFFF 777777777777777777777"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("-9223372036854775808 -9223372036854775808 9223372036854775808 8000000000000000 8000000000000000 1000000000000000000000"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 18446744073709551615 ffffffffffffffff FFFFFFFFFFFFFFFF 1777777777777777777777"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("4294934656 4294934656 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%Id %Ii %Iu %Ix %IX %Io", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("1311768467463790320 1311768467463790320 1311768467463790320 123456789abcdef0 123456789ABCDEF0 110642547423257157360"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("2147483648 2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("4294967295 4294967295 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("4294967301 4294967301 4294967301 100000005 100000005 40000000005"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("9223372036854775807 9223372036854775807 9223372036854775807 7fffffffffffffff 7FFFFFFFFFFFFFFF 777777777777777777777"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("-9223372036854775808 -9223372036854775808 9223372036854775808 8000000000000000 8000000000000000 1000000000000000000000"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 18446744073709551615 ffffffffffffffff FFFFFFFFFFFFFFFF 1777777777777777777777"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("4294934656 4294934656 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%zd %zi %zu %zx %zX %zo", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("1311768467463790320 1311768467463790320 1311768467463790320 123456789abcdef0 123456789ABCDEF0 110642547423257157360"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0, 0, 0, 0, 0, 0], Some("0 0 0 0 0 0"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[1, 1, 1, 1, 1, 1], Some("1 1 1 1 1 1"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42 42 42 2a 2A 52"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF, 0x7FFF_FFFF], Some("2147483647 2147483647 2147483647 7fffffff 7FFFFFFF 17777777777"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0x8000_0000], Some("-2147483648 -2147483648 2147483648 80000000 80000000 20000000000"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005, 0x1_0000_0005], Some("5 5 5 5 5 5"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000, 0x8000_0000_0000_0000], Some("0 0 0 0 0 0"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF], Some("-1 -1 4294967295 ffffffff FFFFFFFF 37777777777"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080, 0xFFFF_8080], Some("-32640 -32640 4294934656 ffff8080 FFFF8080 37777700200"), 6),
    (b"%wd %wi %wu %wx %wX %wo", &[0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF0], Some("-1698898192 -1698898192 2596069104 9abcdef0 9ABCDEF0 23257157360"), 6),
    (b"%d|%x|%X|%o|%u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%d|%x|%X|%o|%u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%d|%x|%X|%o|%u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%8d|%8x|%8X|%8o|%8u|", &[0, 0, 0, 0, 0], Some("       0|       0|       0|       0|       0|"), 5),
    (b"%8d|%8x|%8X|%8o|%8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("      42|      2a|      2A|      52|      42|"), 5),
    (b"%8d|%8x|%8X|%8o|%8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("     -42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%.0d|%.0x|%.0X|%.0o|%.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%.0d|%.0x|%.0X|%.0o|%.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%.0d|%.0x|%.0X|%.0o|%.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%.3d|%.3x|%.3X|%.3o|%.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%.3d|%.3x|%.3X|%.3o|%.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|02a|02A|052|042|"), 5),
    (b"%.3d|%.3x|%.3X|%.3o|%.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%8.3d|%8.3x|%8.3X|%8.3o|%8.3u|", &[0, 0, 0, 0, 0], Some("     000|     000|     000|     000|     000|"), 5),
    (b"%8.3d|%8.3x|%8.3X|%8.3o|%8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     042|     02a|     02A|     052|     042|"), 5),
    (b"%8.3d|%8.3x|%8.3X|%8.3o|%8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%012d|%012x|%012X|%012o|%012u|", &[0, 0, 0, 0, 0], Some("000000000000|000000000000|000000000000|000000000000|000000000000|"), 5),
    (b"%012d|%012x|%012X|%012o|%012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("000000000042|00000000002a|00000000002A|000000000052|000000000042|"), 5),
    (b"%012d|%012x|%012X|%012o|%012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|0000ffffffd6|0000FFFFFFD6|037777777726|004294967254|"), 5),
    (b"%3.10d|%3.10x|%3.10X|%3.10o|%3.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%3.10d|%3.10x|%3.10X|%3.10o|%3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|000000002a|000000002A|0000000052|0000000042|"), 5),
    (b"%3.10d|%3.10x|%3.10X|%3.10o|%3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|00ffffffd6|00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-d|%-x|%-X|%-o|%-u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%-d|%-x|%-X|%-o|%-u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%-d|%-x|%-X|%-o|%-u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-8d|%-8x|%-8X|%-8o|%-8u|", &[0, 0, 0, 0, 0], Some("0       |0       |0       |0       |0       |"), 5),
    (b"%-8d|%-8x|%-8X|%-8o|%-8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42      |2a      |2A      |52      |42      |"), 5),
    (b"%-8d|%-8x|%-8X|%-8o|%-8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42     |ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-.0d|%-.0x|%-.0X|%-.0o|%-.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%-.0d|%-.0x|%-.0X|%-.0o|%-.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%-.0d|%-.0x|%-.0X|%-.0o|%-.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-.3d|%-.3x|%-.3X|%-.3o|%-.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%-.3d|%-.3x|%-.3X|%-.3o|%-.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|02a|02A|052|042|"), 5),
    (b"%-.3d|%-.3x|%-.3X|%-.3o|%-.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-8.3d|%-8.3x|%-8.3X|%-8.3o|%-8.3u|", &[0, 0, 0, 0, 0], Some("000     |000     |000     |000     |000     |"), 5),
    (b"%-8.3d|%-8.3x|%-8.3X|%-8.3o|%-8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042     |02a     |02A     |052     |042     |"), 5),
    (b"%-8.3d|%-8.3x|%-8.3X|%-8.3o|%-8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042    |ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-012d|%-012x|%-012X|%-012o|%-012u|", &[0, 0, 0, 0, 0], Some("0           |0           |0           |0           |0           |"), 5),
    (b"%-012d|%-012x|%-012X|%-012o|%-012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42          |2a          |2A          |52          |42          |"), 5),
    (b"%-012d|%-012x|%-012X|%-012o|%-012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42         |ffffffd6    |FFFFFFD6    |37777777726 |4294967254  |"), 5),
    (b"%-3.10d|%-3.10x|%-3.10X|%-3.10o|%-3.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%-3.10d|%-3.10x|%-3.10X|%-3.10o|%-3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|000000002a|000000002A|0000000052|0000000042|"), 5),
    (b"%-3.10d|%-3.10x|%-3.10X|%-3.10o|%-3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|00ffffffd6|00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%+d|%+x|%+X|%+o|%+u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%+d|%+x|%+X|%+o|%+u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"%+d|%+x|%+X|%+o|%+u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+8d|%+8x|%+8X|%+8o|%+8u|", &[0, 0, 0, 0, 0], Some("      +0|      +0|      +0|      +0|      +0|"), 5),
    (b"%+8d|%+8x|%+8X|%+8o|%+8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     +42|     +2a|     +2A|     +52|     +42|"), 5),
    (b"%+8d|%+8x|%+8X|%+8o|%+8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("     -42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+.0d|%+.0x|%+.0X|%+.0o|%+.0u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%+.0d|%+.0x|%+.0X|%+.0o|%+.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"%+.0d|%+.0x|%+.0X|%+.0o|%+.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+.3d|%+.3x|%+.3X|%+.3o|%+.3u|", &[0, 0, 0, 0, 0], Some("+000|+000|+000|+000|+000|"), 5),
    (b"%+.3d|%+.3x|%+.3X|%+.3o|%+.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+042|+02a|+02A|+052|+042|"), 5),
    (b"%+.3d|%+.3x|%+.3X|%+.3o|%+.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+8.3d|%+8.3x|%+8.3X|%+8.3o|%+8.3u|", &[0, 0, 0, 0, 0], Some("    +000|    +000|    +000|    +000|    +000|"), 5),
    (b"%+8.3d|%+8.3x|%+8.3X|%+8.3o|%+8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("    +042|    +02a|    +02A|    +052|    +042|"), 5),
    (b"%+8.3d|%+8.3x|%+8.3X|%+8.3o|%+8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+012d|%+012x|%+012X|%+012o|%+012u|", &[0, 0, 0, 0, 0], Some("+00000000000|+00000000000|+00000000000|+00000000000|+00000000000|"), 5),
    (b"%+012d|%+012x|%+012X|%+012o|%+012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+00000000042|+0000000002a|+0000000002A|+00000000052|+00000000042|"), 5),
    (b"%+012d|%+012x|%+012X|%+012o|%+012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|+000ffffffd6|+000FFFFFFD6|+37777777726|+04294967254|"), 5),
    (b"%+3.10d|%+3.10x|%+3.10X|%+3.10o|%+3.10u|", &[0, 0, 0, 0, 0], Some("+0000000000|+0000000000|+0000000000|+0000000000|+0000000000|"), 5),
    (b"%+3.10d|%+3.10x|%+3.10X|%+3.10o|%+3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+0000000042|+000000002a|+000000002A|+0000000052|+0000000042|"), 5),
    (b"%+3.10d|%+3.10x|%+3.10X|%+3.10o|%+3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|+00ffffffd6|+00FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% d|% x|% X|% o|% u|", &[0, 0, 0, 0, 0], Some(" 0| 0| 0| 0| 0|"), 5),
    (b"% d|% x|% X|% o|% u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some(" 42| 2a| 2A| 52| 42|"), 5),
    (b"% d|% x|% X|% o|% u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42| ffffffd6| FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"% 8d|% 8x|% 8X|% 8o|% 8u|", &[0, 0, 0, 0, 0], Some("       0|       0|       0|       0|       0|"), 5),
    (b"% 8d|% 8x|% 8X|% 8o|% 8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("      42|      2a|      2A|      52|      42|"), 5),
    (b"% 8d|% 8x|% 8X|% 8o|% 8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("     -42| ffffffd6| FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"% .0d|% .0x|% .0X|% .0o|% .0u|", &[0, 0, 0, 0, 0], Some(" 0| 0| 0| 0| 0|"), 5),
    (b"% .0d|% .0x|% .0X|% .0o|% .0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some(" 42| 2a| 2A| 52| 42|"), 5),
    (b"% .0d|% .0x|% .0X|% .0o|% .0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42| ffffffd6| FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"% .3d|% .3x|% .3X|% .3o|% .3u|", &[0, 0, 0, 0, 0], Some(" 000| 000| 000| 000| 000|"), 5),
    (b"% .3d|% .3x|% .3X|% .3o|% .3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some(" 042| 02a| 02A| 052| 042|"), 5),
    (b"% .3d|% .3x|% .3X|% .3o|% .3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042| ffffffd6| FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"% 8.3d|% 8.3x|% 8.3X|% 8.3o|% 8.3u|", &[0, 0, 0, 0, 0], Some("     000|     000|     000|     000|     000|"), 5),
    (b"% 8.3d|% 8.3x|% 8.3X|% 8.3o|% 8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     042|     02a|     02A|     052|     042|"), 5),
    (b"% 8.3d|% 8.3x|% 8.3X|% 8.3o|% 8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042| ffffffd6| FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"% 012d|% 012x|% 012X|% 012o|% 012u|", &[0, 0, 0, 0, 0], Some(" 00000000000| 00000000000| 00000000000| 00000000000| 00000000000|"), 5),
    (b"% 012d|% 012x|% 012X|% 012o|% 012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some(" 00000000042| 0000000002a| 0000000002A| 00000000052| 00000000042|"), 5),
    (b"% 012d|% 012x|% 012X|% 012o|% 012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042| 000ffffffd6| 000FFFFFFD6| 37777777726| 04294967254|"), 5),
    (b"% 3.10d|% 3.10x|% 3.10X|% 3.10o|% 3.10u|", &[0, 0, 0, 0, 0], Some(" 0000000000| 0000000000| 0000000000| 0000000000| 0000000000|"), 5),
    (b"% 3.10d|% 3.10x|% 3.10X|% 3.10o|% 3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some(" 0000000042| 000000002a| 000000002A| 0000000052| 0000000042|"), 5),
    (b"% 3.10d|% 3.10x|% 3.10X|% 3.10o|% 3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042| 00ffffffd6| 00FFFFFFD6| 37777777726| 4294967254|"), 5),
    (b"%#d|%#x|%#X|%#o|%#u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%#d|%#x|%#X|%#o|%#u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|0x2a|0X2A|52|42|"), 5),
    (b"%#d|%#x|%#X|%#o|%#u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#8d|%#8x|%#8X|%#8o|%#8u|", &[0, 0, 0, 0, 0], Some("       0|       0|       0|       0|       0|"), 5),
    (b"%#8d|%#8x|%#8X|%#8o|%#8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("      42|    0x2a|    0X2A|      52|      42|"), 5),
    (b"%#8d|%#8x|%#8X|%#8o|%#8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("     -42|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#.0d|%#.0x|%#.0X|%#.0o|%#.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%#.0d|%#.0x|%#.0X|%#.0o|%#.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|0x2a|0X2A|52|42|"), 5),
    (b"%#.0d|%#.0x|%#.0X|%#.0o|%#.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#.3d|%#.3x|%#.3X|%#.3o|%#.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%#.3d|%#.3x|%#.3X|%#.3o|%#.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|0x02a|0X02A|052|042|"), 5),
    (b"%#.3d|%#.3x|%#.3X|%#.3o|%#.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#8.3d|%#8.3x|%#8.3X|%#8.3o|%#8.3u|", &[0, 0, 0, 0, 0], Some("     000|     000|     000|     000|     000|"), 5),
    (b"%#8.3d|%#8.3x|%#8.3X|%#8.3o|%#8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     042|   0x02a|   0X02A|     052|     042|"), 5),
    (b"%#8.3d|%#8.3x|%#8.3X|%#8.3o|%#8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#012d|%#012x|%#012X|%#012o|%#012u|", &[0, 0, 0, 0, 0], Some("000000000000|000000000000|000000000000|000000000000|000000000000|"), 5),
    (b"%#012d|%#012x|%#012X|%#012o|%#012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("000000000042|0x000000002a|0X000000002A|000000000052|000000000042|"), 5),
    (b"%#012d|%#012x|%#012X|%#012o|%#012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|0x00ffffffd6|0X00FFFFFFD6|037777777726|004294967254|"), 5),
    (b"%#3.10d|%#3.10x|%#3.10X|%#3.10o|%#3.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%#3.10d|%#3.10x|%#3.10X|%#3.10o|%#3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|0x000000002a|0X000000002A|0000000052|0000000042|"), 5),
    (b"%#3.10d|%#3.10x|%#3.10X|%#3.10o|%#3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|0x00ffffffd6|0X00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%0d|%0x|%0X|%0o|%0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%0d|%0x|%0X|%0o|%0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%0d|%0x|%0X|%0o|%0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%08d|%08x|%08X|%08o|%08u|", &[0, 0, 0, 0, 0], Some("00000000|00000000|00000000|00000000|00000000|"), 5),
    (b"%08d|%08x|%08X|%08o|%08u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("00000042|0000002a|0000002A|00000052|00000042|"), 5),
    (b"%08d|%08x|%08X|%08o|%08u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%0.0d|%0.0x|%0.0X|%0.0o|%0.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%0.0d|%0.0x|%0.0X|%0.0o|%0.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%0.0d|%0.0x|%0.0X|%0.0o|%0.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%0.3d|%0.3x|%0.3X|%0.3o|%0.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%0.3d|%0.3x|%0.3X|%0.3o|%0.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|02a|02A|052|042|"), 5),
    (b"%0.3d|%0.3x|%0.3X|%0.3o|%0.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%08.3d|%08.3x|%08.3X|%08.3o|%08.3u|", &[0, 0, 0, 0, 0], Some("     000|     000|     000|     000|     000|"), 5),
    (b"%08.3d|%08.3x|%08.3X|%08.3o|%08.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     042|     02a|     02A|     052|     042|"), 5),
    (b"%08.3d|%08.3x|%08.3X|%08.3o|%08.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%0012d|%0012x|%0012X|%0012o|%0012u|", &[0, 0, 0, 0, 0], Some("000000000000|000000000000|000000000000|000000000000|000000000000|"), 5),
    (b"%0012d|%0012x|%0012X|%0012o|%0012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("000000000042|00000000002a|00000000002A|000000000052|000000000042|"), 5),
    (b"%0012d|%0012x|%0012X|%0012o|%0012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|0000ffffffd6|0000FFFFFFD6|037777777726|004294967254|"), 5),
    (b"%03.10d|%03.10x|%03.10X|%03.10o|%03.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%03.10d|%03.10x|%03.10X|%03.10o|%03.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|000000002a|000000002A|0000000052|0000000042|"), 5),
    (b"%03.10d|%03.10x|%03.10X|%03.10o|%03.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|00ffffffd6|00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-0d|%-0x|%-0X|%-0o|%-0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%-0d|%-0x|%-0X|%-0o|%-0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%-0d|%-0x|%-0X|%-0o|%-0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-08d|%-08x|%-08X|%-08o|%-08u|", &[0, 0, 0, 0, 0], Some("0       |0       |0       |0       |0       |"), 5),
    (b"%-08d|%-08x|%-08X|%-08o|%-08u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42      |2a      |2A      |52      |42      |"), 5),
    (b"%-08d|%-08x|%-08X|%-08o|%-08u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42     |ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-0.0d|%-0.0x|%-0.0X|%-0.0o|%-0.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%-0.0d|%-0.0x|%-0.0X|%-0.0o|%-0.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|2a|2A|52|42|"), 5),
    (b"%-0.0d|%-0.0x|%-0.0X|%-0.0o|%-0.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-0.3d|%-0.3x|%-0.3X|%-0.3o|%-0.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%-0.3d|%-0.3x|%-0.3X|%-0.3o|%-0.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|02a|02A|052|042|"), 5),
    (b"%-0.3d|%-0.3x|%-0.3X|%-0.3o|%-0.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-08.3d|%-08.3x|%-08.3X|%-08.3o|%-08.3u|", &[0, 0, 0, 0, 0], Some("000     |000     |000     |000     |000     |"), 5),
    (b"%-08.3d|%-08.3x|%-08.3X|%-08.3o|%-08.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042     |02a     |02A     |052     |042     |"), 5),
    (b"%-08.3d|%-08.3x|%-08.3X|%-08.3o|%-08.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042    |ffffffd6|FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%-0012d|%-0012x|%-0012X|%-0012o|%-0012u|", &[0, 0, 0, 0, 0], Some("0           |0           |0           |0           |0           |"), 5),
    (b"%-0012d|%-0012x|%-0012X|%-0012o|%-0012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42          |2a          |2A          |52          |42          |"), 5),
    (b"%-0012d|%-0012x|%-0012X|%-0012o|%-0012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42         |ffffffd6    |FFFFFFD6    |37777777726 |4294967254  |"), 5),
    (b"%-03.10d|%-03.10x|%-03.10X|%-03.10o|%-03.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%-03.10d|%-03.10x|%-03.10X|%-03.10o|%-03.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|000000002a|000000002A|0000000052|0000000042|"), 5),
    (b"%-03.10d|%-03.10x|%-03.10X|%-03.10o|%-03.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|00ffffffd6|00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"%+0d|%+0x|%+0X|%+0o|%+0u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%+0d|%+0x|%+0X|%+0o|%+0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"%+0d|%+0x|%+0X|%+0o|%+0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+08d|%+08x|%+08X|%+08o|%+08u|", &[0, 0, 0, 0, 0], Some("+0000000|+0000000|+0000000|+0000000|+0000000|"), 5),
    (b"%+08d|%+08x|%+08X|%+08o|%+08u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+0000042|+000002a|+000002A|+0000052|+0000042|"), 5),
    (b"%+08d|%+08x|%+08X|%+08o|%+08u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+0.0d|%+0.0x|%+0.0X|%+0.0o|%+0.0u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%+0.0d|%+0.0x|%+0.0X|%+0.0o|%+0.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"%+0.0d|%+0.0x|%+0.0X|%+0.0o|%+0.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+0.3d|%+0.3x|%+0.3X|%+0.3o|%+0.3u|", &[0, 0, 0, 0, 0], Some("+000|+000|+000|+000|+000|"), 5),
    (b"%+0.3d|%+0.3x|%+0.3X|%+0.3o|%+0.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+042|+02a|+02A|+052|+042|"), 5),
    (b"%+0.3d|%+0.3x|%+0.3X|%+0.3o|%+0.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+08.3d|%+08.3x|%+08.3X|%+08.3o|%+08.3u|", &[0, 0, 0, 0, 0], Some("    +000|    +000|    +000|    +000|    +000|"), 5),
    (b"%+08.3d|%+08.3x|%+08.3X|%+08.3o|%+08.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("    +042|    +02a|    +02A|    +052|    +042|"), 5),
    (b"%+08.3d|%+08.3x|%+08.3X|%+08.3o|%+08.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%+0012d|%+0012x|%+0012X|%+0012o|%+0012u|", &[0, 0, 0, 0, 0], Some("+00000000000|+00000000000|+00000000000|+00000000000|+00000000000|"), 5),
    (b"%+0012d|%+0012x|%+0012X|%+0012o|%+0012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+00000000042|+0000000002a|+0000000002A|+00000000052|+00000000042|"), 5),
    (b"%+0012d|%+0012x|%+0012X|%+0012o|%+0012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|+000ffffffd6|+000FFFFFFD6|+37777777726|+04294967254|"), 5),
    (b"%+03.10d|%+03.10x|%+03.10X|%+03.10o|%+03.10u|", &[0, 0, 0, 0, 0], Some("+0000000000|+0000000000|+0000000000|+0000000000|+0000000000|"), 5),
    (b"%+03.10d|%+03.10x|%+03.10X|%+03.10o|%+03.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+0000000042|+000000002a|+000000002A|+0000000052|+0000000042|"), 5),
    (b"%+03.10d|%+03.10x|%+03.10X|%+03.10o|%+03.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|+00ffffffd6|+00FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#0d|%#0x|%#0X|%#0o|%#0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%#0d|%#0x|%#0X|%#0o|%#0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|0x2a|0X2A|52|42|"), 5),
    (b"%#0d|%#0x|%#0X|%#0o|%#0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#08d|%#08x|%#08X|%#08o|%#08u|", &[0, 0, 0, 0, 0], Some("00000000|00000000|00000000|00000000|00000000|"), 5),
    (b"%#08d|%#08x|%#08X|%#08o|%#08u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("00000042|0x00002a|0X00002A|00000052|00000042|"), 5),
    (b"%#08d|%#08x|%#08X|%#08o|%#08u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000042|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#0.0d|%#0.0x|%#0.0X|%#0.0o|%#0.0u|", &[0, 0, 0, 0, 0], Some("0|0|0|0|0|"), 5),
    (b"%#0.0d|%#0.0x|%#0.0X|%#0.0o|%#0.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("42|0x2a|0X2A|52|42|"), 5),
    (b"%#0.0d|%#0.0x|%#0.0X|%#0.0o|%#0.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#0.3d|%#0.3x|%#0.3X|%#0.3o|%#0.3u|", &[0, 0, 0, 0, 0], Some("000|000|000|000|000|"), 5),
    (b"%#0.3d|%#0.3x|%#0.3X|%#0.3o|%#0.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("042|0x02a|0X02A|052|042|"), 5),
    (b"%#0.3d|%#0.3x|%#0.3X|%#0.3o|%#0.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#08.3d|%#08.3x|%#08.3X|%#08.3o|%#08.3u|", &[0, 0, 0, 0, 0], Some("     000|     000|     000|     000|     000|"), 5),
    (b"%#08.3d|%#08.3x|%#08.3X|%#08.3o|%#08.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     042|   0x02a|   0X02A|     052|     042|"), 5),
    (b"%#08.3d|%#08.3x|%#08.3X|%#08.3o|%#08.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|0xffffffd6|0XFFFFFFD6|37777777726|4294967254|"), 5),
    (b"%#0012d|%#0012x|%#0012X|%#0012o|%#0012u|", &[0, 0, 0, 0, 0], Some("000000000000|000000000000|000000000000|000000000000|000000000000|"), 5),
    (b"%#0012d|%#0012x|%#0012X|%#0012o|%#0012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("000000000042|0x000000002a|0X000000002A|000000000052|000000000042|"), 5),
    (b"%#0012d|%#0012x|%#0012X|%#0012o|%#0012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|0x00ffffffd6|0X00FFFFFFD6|037777777726|004294967254|"), 5),
    (b"%#03.10d|%#03.10x|%#03.10X|%#03.10o|%#03.10u|", &[0, 0, 0, 0, 0], Some("0000000000|0000000000|0000000000|0000000000|0000000000|"), 5),
    (b"%#03.10d|%#03.10x|%#03.10X|%#03.10o|%#03.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("0000000042|0x000000002a|0X000000002A|0000000052|0000000042|"), 5),
    (b"%#03.10d|%#03.10x|%#03.10X|%#03.10o|%#03.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|0x00ffffffd6|0X00FFFFFFD6|37777777726|4294967254|"), 5),
    (b"% +d|% +x|% +X|% +o|% +u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"% +d|% +x|% +X|% +o|% +u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"% +d|% +x|% +X|% +o|% +u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% +8d|% +8x|% +8X|% +8o|% +8u|", &[0, 0, 0, 0, 0], Some("      +0|      +0|      +0|      +0|      +0|"), 5),
    (b"% +8d|% +8x|% +8X|% +8o|% +8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("     +42|     +2a|     +2A|     +52|     +42|"), 5),
    (b"% +8d|% +8x|% +8X|% +8o|% +8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("     -42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% +.0d|% +.0x|% +.0X|% +.0o|% +.0u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"% +.0d|% +.0x|% +.0X|% +.0o|% +.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+2a|+2A|+52|+42|"), 5),
    (b"% +.0d|% +.0x|% +.0X|% +.0o|% +.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% +.3d|% +.3x|% +.3X|% +.3o|% +.3u|", &[0, 0, 0, 0, 0], Some("+000|+000|+000|+000|+000|"), 5),
    (b"% +.3d|% +.3x|% +.3X|% +.3o|% +.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+042|+02a|+02A|+052|+042|"), 5),
    (b"% +.3d|% +.3x|% +.3X|% +.3o|% +.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% +8.3d|% +8.3x|% +8.3X|% +8.3o|% +8.3u|", &[0, 0, 0, 0, 0], Some("    +000|    +000|    +000|    +000|    +000|"), 5),
    (b"% +8.3d|% +8.3x|% +8.3X|% +8.3o|% +8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("    +042|    +02a|    +02A|    +052|    +042|"), 5),
    (b"% +8.3d|% +8.3x|% +8.3X|% +8.3o|% +8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("    -042|+ffffffd6|+FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"% +012d|% +012x|% +012X|% +012o|% +012u|", &[0, 0, 0, 0, 0], Some("+00000000000|+00000000000|+00000000000|+00000000000|+00000000000|"), 5),
    (b"% +012d|% +012x|% +012X|% +012o|% +012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+00000000042|+0000000002a|+0000000002A|+00000000052|+00000000042|"), 5),
    (b"% +012d|% +012x|% +012X|% +012o|% +012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-00000000042|+000ffffffd6|+000FFFFFFD6|+37777777726|+04294967254|"), 5),
    (b"% +3.10d|% +3.10x|% +3.10X|% +3.10o|% +3.10u|", &[0, 0, 0, 0, 0], Some("+0000000000|+0000000000|+0000000000|+0000000000|+0000000000|"), 5),
    (b"% +3.10d|% +3.10x|% +3.10X|% +3.10o|% +3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+0000000042|+000000002a|+000000002A|+0000000052|+0000000042|"), 5),
    (b"% +3.10d|% +3.10x|% +3.10X|% +3.10o|% +3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|+00ffffffd6|+00FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-d|%#+ 0-x|%#+ 0-X|%#+ 0-o|%#+ 0-u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%#+ 0-d|%#+ 0-x|%#+ 0-X|%#+ 0-o|%#+ 0-u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+0x2a|+0X2A|+52|+42|"), 5),
    (b"%#+ 0-d|%#+ 0-x|%#+ 0-X|%#+ 0-o|%#+ 0-u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+0xffffffd6|+0XFFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-8d|%#+ 0-8x|%#+ 0-8X|%#+ 0-8o|%#+ 0-8u|", &[0, 0, 0, 0, 0], Some("+0      |+0      |+0      |+0      |+0      |"), 5),
    (b"%#+ 0-8d|%#+ 0-8x|%#+ 0-8X|%#+ 0-8o|%#+ 0-8u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42     |+0x2a   |+0X2A   |+52     |+42     |"), 5),
    (b"%#+ 0-8d|%#+ 0-8x|%#+ 0-8X|%#+ 0-8o|%#+ 0-8u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42     |+0xffffffd6|+0XFFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-.0d|%#+ 0-.0x|%#+ 0-.0X|%#+ 0-.0o|%#+ 0-.0u|", &[0, 0, 0, 0, 0], Some("+0|+0|+0|+0|+0|"), 5),
    (b"%#+ 0-.0d|%#+ 0-.0x|%#+ 0-.0X|%#+ 0-.0o|%#+ 0-.0u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42|+0x2a|+0X2A|+52|+42|"), 5),
    (b"%#+ 0-.0d|%#+ 0-.0x|%#+ 0-.0X|%#+ 0-.0o|%#+ 0-.0u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42|+0xffffffd6|+0XFFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-.3d|%#+ 0-.3x|%#+ 0-.3X|%#+ 0-.3o|%#+ 0-.3u|", &[0, 0, 0, 0, 0], Some("+000|+000|+000|+000|+000|"), 5),
    (b"%#+ 0-.3d|%#+ 0-.3x|%#+ 0-.3X|%#+ 0-.3o|%#+ 0-.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+042|+0x02a|+0X02A|+052|+042|"), 5),
    (b"%#+ 0-.3d|%#+ 0-.3x|%#+ 0-.3X|%#+ 0-.3o|%#+ 0-.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042|+0xffffffd6|+0XFFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-8.3d|%#+ 0-8.3x|%#+ 0-8.3X|%#+ 0-8.3o|%#+ 0-8.3u|", &[0, 0, 0, 0, 0], Some("+000    |+000    |+000    |+000    |+000    |"), 5),
    (b"%#+ 0-8.3d|%#+ 0-8.3x|%#+ 0-8.3X|%#+ 0-8.3o|%#+ 0-8.3u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+042    |+0x02a  |+0X02A  |+052    |+042    |"), 5),
    (b"%#+ 0-8.3d|%#+ 0-8.3x|%#+ 0-8.3X|%#+ 0-8.3o|%#+ 0-8.3u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-042    |+0xffffffd6|+0XFFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%#+ 0-012d|%#+ 0-012x|%#+ 0-012X|%#+ 0-012o|%#+ 0-012u|", &[0, 0, 0, 0, 0], Some("+0          |+0          |+0          |+0          |+0          |"), 5),
    (b"%#+ 0-012d|%#+ 0-012x|%#+ 0-012X|%#+ 0-012o|%#+ 0-012u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+42         |+0x2a       |+0X2A       |+52         |+42         |"), 5),
    (b"%#+ 0-012d|%#+ 0-012x|%#+ 0-012X|%#+ 0-012o|%#+ 0-012u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-42         |+0xffffffd6 |+0XFFFFFFD6 |+37777777726|+4294967254 |"), 5),
    (b"%#+ 0-3.10d|%#+ 0-3.10x|%#+ 0-3.10X|%#+ 0-3.10o|%#+ 0-3.10u|", &[0, 0, 0, 0, 0], Some("+0000000000|+0000000000|+0000000000|+0000000000|+0000000000|"), 5),
    (b"%#+ 0-3.10d|%#+ 0-3.10x|%#+ 0-3.10X|%#+ 0-3.10o|%#+ 0-3.10u|", &[0x2A, 0x2A, 0x2A, 0x2A, 0x2A], Some("+0000000042|+0x000000002a|+0X000000002A|+0000000052|+0000000042|"), 5),
    (b"%#+ 0-3.10d|%#+ 0-3.10x|%#+ 0-3.10X|%#+ 0-3.10o|%#+ 0-3.10u|", &[0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6, 0xFFFF_FFD6], Some("-0000000042|+0x00ffffffd6|+0X00FFFFFFD6|+37777777726|+4294967254|"), 5),
    (b"%*d|", &[5, 5, 0x54, 0x54], Some("    5|"), 2),
    (b"%*d|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("-5|"), 2),
    (b"%*d|", &[0, 0, 0x54, 0x54], Some("0|"), 2),
    (b"%*d|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some(" 2|"), 2),
    (b"%*d|", &[0x14, 0x14, 0x54, 0x54], Some("                  20|"), 2),
    (b"%-*d|", &[5, 5, 0x54, 0x54], Some("5    |"), 2),
    (b"%-*d|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("-5|"), 2),
    (b"%-*d|", &[0, 0, 0x54, 0x54], Some("0|"), 2),
    (b"%-*d|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("2 |"), 2),
    (b"%-*d|", &[0x14, 0x14, 0x54, 0x54], Some("20                  |"), 2),
    (b"%0*d|", &[5, 5, 0x54, 0x54], Some("00005|"), 2),
    (b"%0*d|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("-5|"), 2),
    (b"%0*d|", &[0, 0, 0x54, 0x54], Some("0|"), 2),
    (b"%0*d|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("02|"), 2),
    (b"%0*d|", &[0x14, 0x14, 0x54, 0x54], Some("00000000000000000020|"), 2),
    (b"%.*d|", &[5, 5, 0x54, 0x54], Some("00005|"), 2),
    (b"%.*d|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("-5|"), 2),
    (b"%.*d|", &[0, 0, 0x54, 0x54], Some("0|"), 2),
    (b"%.*d|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("02|"), 2),
    (b"%.*d|", &[0x14, 0x14, 0x54, 0x54], Some("00000000000000000020|"), 2),
    (b"%*.*d|", &[5, 5, 0x54, 0x54], Some("00084|"), 3),
    (b"%*.*d|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("84|"), 3),
    (b"%*.*d|", &[0, 0, 0x54, 0x54], Some("84|"), 3),
    (b"%*.*d|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("84|"), 3),
    (b"%*.*d|", &[0x14, 0x14, 0x54, 0x54], Some("00000000000000000084|"), 3),
    (b"%*.3x|", &[5, 5, 0x54, 0x54], Some("  005|"), 2),
    (b"%*.3x|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("fffffffb|"), 2),
    (b"%*.3x|", &[0, 0, 0x54, 0x54], Some("000|"), 2),
    (b"%*.3x|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("002|"), 2),
    (b"%*.3x|", &[0x14, 0x14, 0x54, 0x54], Some("                 014|"), 2),
    (b"%5.*x|", &[5, 5, 0x54, 0x54], Some("00005|"), 2),
    (b"%5.*x|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("fffffffb|"), 2),
    (b"%5.*x|", &[0, 0, 0x54, 0x54], Some("    0|"), 2),
    (b"%5.*x|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("   02|"), 2),
    (b"%5.*x|", &[0x14, 0x14, 0x54, 0x54], Some("00000000000000000014|"), 2),
    (b"%*s|", &[5, 5, 0x54, 0x54], Some("  <5>|"), 2),
    (b"%*s|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("<fffffffb>|"), 2),
    (b"%*s|", &[0, 0, 0x54, 0x54], Some("<0>|"), 2),
    (b"%*s|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("<ffffffff00000002>|"), 2),
    (b"%*s|", &[0x14, 0x14, 0x54, 0x54], Some("                <14>|"), 2),
    (b"%-*s|", &[5, 5, 0x54, 0x54], Some("<5>  |"), 2),
    (b"%-*s|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("<fffffffb>|"), 2),
    (b"%-*s|", &[0, 0, 0x54, 0x54], Some("<0>|"), 2),
    (b"%-*s|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("<ffffffff00000002>|"), 2),
    (b"%-*s|", &[0x14, 0x14, 0x54, 0x54], Some("<14>                |"), 2),
    (b"%.*s|", &[5, 5, 0x54, 0x54], Some("<5>|"), 2),
    (b"%.*s|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("<ffff|"), 2),
    (b"%.*s|", &[0, 0, 0x54, 0x54], Some("|"), 2),
    (b"%.*s|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("<f|"), 2),
    (b"%.*s|", &[0x14, 0x14, 0x54, 0x54], Some("<14>|"), 2),
    (b"%*.*s|", &[5, 5, 0x54, 0x54], Some("abcde|"), 3),
    (b"%*.*s|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("abcde|"), 3),
    (b"%*.*s|", &[0, 0, 0x54, 0x54], Some("|"), 3),
    (b"%*.*s|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("ab|"), 3),
    (b"%*.*s|", &[0x14, 0x14, 0x54, 0x54], Some("          abcdefghij|"), 3),
    (b"%*ws|", &[5, 5, 0x54, 0x54], Some("  [5]|"), 2),
    (b"%*ws|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("[fffffffb]|"), 2),
    (b"%*ws|", &[0, 0, 0x54, 0x54], Some("[0]|"), 2),
    (b"%*ws|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("[ffffffff00000002]|"), 2),
    (b"%*ws|", &[0x14, 0x14, 0x54, 0x54], Some("                [14]|"), 2),
    (b"%.*ws|", &[5, 5, 0x54, 0x54], Some("[5]|"), 2),
    (b"%.*ws|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("[ffff|"), 2),
    (b"%.*ws|", &[0, 0, 0x54, 0x54], Some("|"), 2),
    (b"%.*ws|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("[f|"), 2),
    (b"%.*ws|", &[0x14, 0x14, 0x54, 0x54], Some("[14]|"), 2),
    (b"%*c|", &[5, 5, 0x54, 0x54], Some("\u{5}|"), 2),
    (b"%*c|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("\u{fb}|"), 2),
    (b"%*c|", &[0, 0, 0x54, 0x54], Some("\u{0}|"), 2),
    (b"%*c|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("\u{2}|"), 2),
    (b"%*c|", &[0x14, 0x14, 0x54, 0x54], Some("\u{14}|"), 2),
    (b"%*p|", &[5, 5, 0x54, 0x54], Some("0000000000000005|"), 2),
    (b"%*p|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("00000000FFFFFFFB|"), 2),
    (b"%*p|", &[0, 0, 0x54, 0x54], Some("0000000000000000|"), 2),
    (b"%*p|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("FFFFFFFF00000002|"), 2),
    (b"%*p|", &[0x14, 0x14, 0x54, 0x54], Some("0000000000000014|"), 2),
    (b"%*f|", &[5, 5, 0x54, 0x54], Some("%*f|"), 1),
    (b"%*f|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("%*f|"), 1),
    (b"%*f|", &[0, 0, 0x54, 0x54], Some("%*f|"), 1),
    (b"%*f|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("%*f|"), 1),
    (b"%*f|", &[0x14, 0x14, 0x54, 0x54], Some("%*f|"), 1),
    (b"%.*%|", &[5, 5, 0x54, 0x54], Some("%|"), 0),
    (b"%.*%|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("%|"), 0),
    (b"%.*%|", &[0, 0, 0x54, 0x54], Some("%|"), 0),
    (b"%.*%|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("%|"), 0),
    (b"%.*%|", &[0x14, 0x14, 0x54, 0x54], Some("%|"), 0),
    (b"%*.*Z|", &[5, 5, 0x54, 0x54], Some("%*.*Z|"), 2),
    (b"%*.*Z|", &[0xFFFF_FFFB, 0xFFFF_FFFB, 0x54, 0x54], Some("%*.*Z|"), 2),
    (b"%*.*Z|", &[0, 0, 0x54, 0x54], Some("%*.*Z|"), 2),
    (b"%*.*Z|", &[0xFFFF_FFFF_0000_0002, 0xFFFF_FFFF_0000_0002, 0x54, 0x54], Some("%*.*Z|"), 2),
    (b"%*.*Z|", &[0x14, 0x14, 0x54, 0x54], Some("%*.*Z|"), 2),
    (b"[%s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%s]", &[0x52], Some("[]"), 1),
    (b"[%s]", &[0x41], Some("[<41>]"), 1),
    (b"[%s]", &[0x44], Some("[<44>]"), 1),
    (b"[%hs]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%hs]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%hs]", &[0x52], Some("[]"), 1),
    (b"[%hs]", &[0x41], Some("[<41>]"), 1),
    (b"[%hs]", &[0x44], Some("[<44>]"), 1),
    (b"[%hhs]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%hhs]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%hhs]", &[0x52], Some("[]"), 1),
    (b"[%hhs]", &[0x41], Some("[<41>]"), 1),
    (b"[%hhs]", &[0x44], Some("[<44>]"), 1),
    (b"[%lls]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%lls]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%lls]", &[0x52], Some("[]"), 1),
    (b"[%lls]", &[0x41], Some("[<41>]"), 1),
    (b"[%lls]", &[0x44], Some("[<44>]"), 1),
    (b"[%I64s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%I64s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%I64s]", &[0x52], Some("[]"), 1),
    (b"[%I64s]", &[0x41], Some("[<41>]"), 1),
    (b"[%I64s]", &[0x44], Some("[<44>]"), 1),
    (b"[%I32s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%I32s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%I32s]", &[0x52], Some("[]"), 1),
    (b"[%I32s]", &[0x41], Some("[<41>]"), 1),
    (b"[%I32s]", &[0x44], Some("[<44>]"), 1),
    (b"[%Is]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%Is]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%Is]", &[0x52], Some("[]"), 1),
    (b"[%Is]", &[0x41], Some("[<41>]"), 1),
    (b"[%Is]", &[0x44], Some("[<44>]"), 1),
    (b"[%zs]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%zs]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%zs]", &[0x52], Some("[]"), 1),
    (b"[%zs]", &[0x41], Some("[<41>]"), 1),
    (b"[%zs]", &[0x44], Some("[<44>]"), 1),
    (b"[%ws]", &[0x51], Some("[[51]]"), 1),
    (b"[%ws]", &[0x54], Some("[[54]]"), 1),
    (b"[%ws]", &[0x52], Some("[[52]]"), 1),
    (b"[%ws]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%ws]", &[0x44], Some("[0123456789]"), 1),
    (b"[%ls]", &[0x51], Some("[[51]]"), 1),
    (b"[%ls]", &[0x54], Some("[[54]]"), 1),
    (b"[%ls]", &[0x52], Some("[[52]]"), 1),
    (b"[%ls]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%ls]", &[0x44], Some("[0123456789]"), 1),
    (b"[%S]", &[0x51], Some("[[51]]"), 1),
    (b"[%S]", &[0x54], Some("[[54]]"), 1),
    (b"[%S]", &[0x52], Some("[[52]]"), 1),
    (b"[%S]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%S]", &[0x44], Some("[0123456789]"), 1),
    (b"[%hS]", &[0x51], Some("[[51]]"), 1),
    (b"[%hS]", &[0x54], Some("[[54]]"), 1),
    (b"[%hS]", &[0x52], Some("[[52]]"), 1),
    (b"[%hS]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%hS]", &[0x44], Some("[0123456789]"), 1),
    (b"[%lS]", &[0x51], Some("[[51]]"), 1),
    (b"[%lS]", &[0x54], Some("[[54]]"), 1),
    (b"[%lS]", &[0x52], Some("[[52]]"), 1),
    (b"[%lS]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%lS]", &[0x44], Some("[0123456789]"), 1),
    (b"[%wS]", &[0x51], Some("[[51]]"), 1),
    (b"[%wS]", &[0x54], Some("[[54]]"), 1),
    (b"[%wS]", &[0x52], Some("[[52]]"), 1),
    (b"[%wS]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%wS]", &[0x44], Some("[0123456789]"), 1),
    (b"[%llS]", &[0x51], Some("[[51]]"), 1),
    (b"[%llS]", &[0x54], Some("[[54]]"), 1),
    (b"[%llS]", &[0x52], Some("[[52]]"), 1),
    (b"[%llS]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%llS]", &[0x44], Some("[0123456789]"), 1),
    (b"[%5s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%5s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%5s]", &[0x52], Some("[     ]"), 1),
    (b"[%5s]", &[0x41], Some("[ <41>]"), 1),
    (b"[%5s]", &[0x44], Some("[ <44>]"), 1),
    (b"[%-5s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%-5s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%-5s]", &[0x52], Some("[     ]"), 1),
    (b"[%-5s]", &[0x41], Some("[<41> ]"), 1),
    (b"[%-5s]", &[0x44], Some("[<44> ]"), 1),
    (b"[%05s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%05s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%05s]", &[0x52], Some("[     ]"), 1),
    (b"[%05s]", &[0x41], Some("[ <41>]"), 1),
    (b"[%05s]", &[0x44], Some("[ <44>]"), 1),
    (b"[%.3s]", &[0x51], Some("[h\u{e9}l]"), 1),
    (b"[%.3s]", &[0x54], Some("[abc]"), 1),
    (b"[%.3s]", &[0x52], Some("[]"), 1),
    (b"[%.3s]", &[0x41], Some("[<41]"), 1),
    (b"[%.3s]", &[0x44], Some("[<44]"), 1),
    (b"[%8.3s]", &[0x51], Some("[     h\u{e9}l]"), 1),
    (b"[%8.3s]", &[0x54], Some("[     abc]"), 1),
    (b"[%8.3s]", &[0x52], Some("[        ]"), 1),
    (b"[%8.3s]", &[0x41], Some("[     <41]"), 1),
    (b"[%8.3s]", &[0x44], Some("[     <44]"), 1),
    (b"[%-8.3s]", &[0x51], Some("[h\u{e9}l     ]"), 1),
    (b"[%-8.3s]", &[0x54], Some("[abc     ]"), 1),
    (b"[%-8.3s]", &[0x52], Some("[        ]"), 1),
    (b"[%-8.3s]", &[0x41], Some("[<41     ]"), 1),
    (b"[%-8.3s]", &[0x44], Some("[<44     ]"), 1),
    (b"[%.0s]", &[0x51], Some("[]"), 1),
    (b"[%.0s]", &[0x54], Some("[]"), 1),
    (b"[%.0s]", &[0x52], Some("[]"), 1),
    (b"[%.0s]", &[0x41], Some("[]"), 1),
    (b"[%.0s]", &[0x44], Some("[]"), 1),
    (b"[%.20s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%.20s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%.20s]", &[0x52], Some("[]"), 1),
    (b"[%.20s]", &[0x41], Some("[<41>]"), 1),
    (b"[%.20s]", &[0x44], Some("[<44>]"), 1),
    (b"[%+ #s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%+ #s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%+ #s]", &[0x52], Some("[]"), 1),
    (b"[%+ #s]", &[0x41], Some("[<41>]"), 1),
    (b"[%+ #s]", &[0x44], Some("[<44>]"), 1),
    (b"[%12ws]", &[0x51], Some("[        [51]]"), 1),
    (b"[%12ws]", &[0x54], Some("[        [54]]"), 1),
    (b"[%12ws]", &[0x52], Some("[        [52]]"), 1),
    (b"[%12ws]", &[0x41], Some("[     w\u{ef}de\u{20ac}\u{1f600}x]"), 1),
    (b"[%12ws]", &[0x44], Some("[  0123456789]"), 1),
    (b"[%-12ws]", &[0x51], Some("[[51]        ]"), 1),
    (b"[%-12ws]", &[0x54], Some("[[54]        ]"), 1),
    (b"[%-12ws]", &[0x52], Some("[[52]        ]"), 1),
    (b"[%-12ws]", &[0x41], Some("[w\u{ef}de\u{20ac}\u{1f600}x     ]"), 1),
    (b"[%-12ws]", &[0x44], Some("[0123456789  ]"), 1),
    (b"[%.2ws]", &[0x51], Some("[[5]"), 1),
    (b"[%.2ws]", &[0x54], Some("[[5]"), 1),
    (b"[%.2ws]", &[0x52], Some("[[5]"), 1),
    (b"[%.2ws]", &[0x41], Some("[w\u{ef}]"), 1),
    (b"[%.2ws]", &[0x44], Some("[01]"), 1),
    (b"[%6.4ls]", &[0x51], Some("[  [51]]"), 1),
    (b"[%6.4ls]", &[0x54], Some("[  [54]]"), 1),
    (b"[%6.4ls]", &[0x52], Some("[  [52]]"), 1),
    (b"[%6.4ls]", &[0x41], Some("[  w\u{ef}de]"), 1),
    (b"[%6.4ls]", &[0x44], Some("[  0123]"), 1),
    (b"[%0s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%0s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%0s]", &[0x52], Some("[]"), 1),
    (b"[%0s]", &[0x41], Some("[<41>]"), 1),
    (b"[%0s]", &[0x44], Some("[<44>]"), 1),
    (b"[%1s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%1s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%1s]", &[0x52], Some("[ ]"), 1),
    (b"[%1s]", &[0x41], Some("[<41>]"), 1),
    (b"[%1s]", &[0x44], Some("[<44>]"), 1),
    (b"[%.99999999999999999999s]", &[0x51], Some("[h\u{e9}llo\u{ff}]"), 1),
    (b"[%.99999999999999999999s]", &[0x54], Some("[abcdefghij]"), 1),
    (b"[%.99999999999999999999s]", &[0x52], Some("[]"), 1),
    (b"[%.99999999999999999999s]", &[0x41], Some("[<41>]"), 1),
    (b"[%.99999999999999999999s]", &[0x44], Some("[<44>]"), 1),
    (b"<%c>", &[0x41], Some("<A>"), 1),
    (b"<%c>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%c>", &[0], Some("<\u{0}>"), 1),
    (b"<%c>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%c>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%5c>", &[0x41], Some("<A>"), 1),
    (b"<%5c>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%5c>", &[0], Some("<\u{0}>"), 1),
    (b"<%5c>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%5c>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%-5c>", &[0x41], Some("<A>"), 1),
    (b"<%-5c>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%-5c>", &[0], Some("<\u{0}>"), 1),
    (b"<%-5c>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%-5c>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%lc>", &[0x41], Some("<A>"), 1),
    (b"<%lc>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%lc>", &[0], Some("<\u{0}>"), 1),
    (b"<%lc>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%lc>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%wc>", &[0x41], Some("<A>"), 1),
    (b"<%wc>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%wc>", &[0], Some("<\u{0}>"), 1),
    (b"<%wc>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%wc>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%hc>", &[0x41], Some("<A>"), 1),
    (b"<%hc>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%hc>", &[0], Some("<\u{0}>"), 1),
    (b"<%hc>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%hc>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%llc>", &[0x41], Some("<A>"), 1),
    (b"<%llc>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%llc>", &[0], Some("<\u{0}>"), 1),
    (b"<%llc>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%llc>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%.3c>", &[0x41], Some("<A>"), 1),
    (b"<%.3c>", &[0x1E9], Some("<\u{e9}>"), 1),
    (b"<%.3c>", &[0], Some("<\u{0}>"), 1),
    (b"<%.3c>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<\u{ff}>"), 1),
    (b"<%.3c>", &[0x8000_0000], Some("<\u{0}>"), 1),
    (b"<%C>", &[0x41], Some("<%C>"), 0),
    (b"<%C>", &[0x1E9], Some("<%C>"), 0),
    (b"<%C>", &[0], Some("<%C>"), 0),
    (b"<%C>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<%C>"), 0),
    (b"<%C>", &[0x8000_0000], Some("<%C>"), 0),
    (b"<%p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%20p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%20p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%20p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%20p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%20p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%-p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%-p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%-p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%-p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%-p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%lp>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%lp>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%lp>", &[0], Some("<0000000000000000>"), 1),
    (b"<%lp>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%lp>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%hp>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%hp>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%hp>", &[0], Some("<0000000000000000>"), 1),
    (b"<%hp>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%hp>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%.3p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%.3p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%.3p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%.3p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%.3p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%#p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%#p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%#p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%#p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%#p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"<%I64p>", &[0x41], Some("<0000000000000041>"), 1),
    (b"<%I64p>", &[0x1E9], Some("<00000000000001E9>"), 1),
    (b"<%I64p>", &[0], Some("<0000000000000000>"), 1),
    (b"<%I64p>", &[0xFFFF_FFFF_FFFF_FFFF], Some("<FFFFFFFFFFFFFFFF>"), 1),
    (b"<%I64p>", &[0x8000_0000], Some("<0000000080000000>"), 1),
    (b"%f", &[9, 8, 7], Some("%f"), 0),
    (b"%e", &[9, 8, 7], Some("%e"), 0),
    (b"%E", &[9, 8, 7], Some("%E"), 0),
    (b"%g", &[9, 8, 7], Some("%g"), 0),
    (b"%G", &[9, 8, 7], Some("%G"), 0),
    (b"%a", &[9, 8, 7], Some("%a"), 0),
    (b"%A", &[9, 8, 7], Some("%A"), 0),
    (b"%n", &[9, 8, 7], Some("%n"), 0),
    (b"%Z", &[9, 8, 7], Some("%Z"), 0),
    (b"%wZ", &[9, 8, 7], Some("%wZ"), 0),
    (b"%lZ", &[9, 8, 7], Some("%lZ"), 0),
    (b"%C", &[9, 8, 7], Some("%C"), 0),
    (b"%hC", &[9, 8, 7], Some("%hC"), 0),
    (b"%y", &[9, 8, 7], Some("%y"), 0),
    (b"%k", &[9, 8, 7], Some("%k"), 0),
    (b"%5.2f", &[9, 8, 7], Some("%5.2f"), 0),
    (b"%*f %d", &[9, 8, 7], Some("%*f 8"), 2),
    (b"%.*f %d", &[9, 8, 7], Some("%.*f 8"), 2),
    (b"%lf", &[9, 8, 7], Some("%lf"), 0),
    (b"%Lf", &[9, 8, 7], Some("%Lf"), 0),
    (b"%jd", &[9, 8, 7], Some("%jd"), 0),
    (b"%td", &[9, 8, 7], Some("%td"), 0),
    (b"%qd", &[9, 8, 7], Some("%qd"), 0),
    (b"%-+08.3b", &[9, 8, 7], Some("%-+08.3b"), 0),
    (b"%B %d", &[9, 8, 7], Some("%B 9"), 1),
    (b"%ll|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%ll|"), 0),
    (b"%hh|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%hh|"), 0),
    (b"%I64|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I64|"), 0),
    (b"%I32|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I32|"), 0),
    (b"%I6d|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I6d|"), 0),
    (b"%I3|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I3|"), 0),
    (b"%I3d|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I3d|"), 0),
    (b"%ll5|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%ll5|"), 0),
    (b"%lll|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%lll|"), 0),
    (b"%hhh|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%hhh|"), 0),
    (b"%hhd|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("255|"), 1),
    (b"%hhhd|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%hhhd|"), 0),
    (b"%h|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%h|"), 0),
    (b"%l|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%l|"), 0),
    (b"%w|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%w|"), 0),
    (b"%z|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%z|"), 0),
    (b"%I|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I|"), 0),
    (b"%Iu|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("18446744073709551615|"), 1),
    (b"%zd|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("-1|"), 1),
    (b"%L|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%L|"), 0),
    (b"%I64%|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%|"), 0),
    (b"%ll%|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%|"), 0),
    (b"%I64I64d|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%I64I64d|"), 0),
    (b"%wws|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%wws|"), 0),
    (b"%lls|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("<ffffffffffffffff>|"), 1),
    (b"%5I64x|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("ffffffffffffffff|"), 1),
    (b"%-I32d|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("-1|"), 1),
    (b"%hh%d|", &[0xFFFF_FFFF_FFFF_FFFF, 0x1234], Some("%d|"), 0),
    (b"a\x00b%d\x00c", &[0x50, 0x51], Some("a\u{0}b80\u{0}c"), 1),
    (b"\xe9%d\xff", &[0x50, 0x51], Some("\u{e9}80\u{ff}"), 1),
    (b"%\xe9", &[0x50, 0x51], Some("%\u{e9}"), 0),
    (b"%5\xe9d", &[0x50, 0x51], Some("%5\u{e9}d"), 0),
    (b"%\x00d", &[0x50, 0x51], Some("%\u{0}d"), 0),
    (b"\x80\x9f\xa0%s", &[0x50, 0x51], Some("\u{80}\u{9f}\u{a0}narrow"), 1),
    (b"%d\xff\xfe", &[0x50, 0x51], Some("80\u{ff}\u{fe}"), 1),
    (b"%-\xb0", &[0x50, 0x51], Some("%-\u{b0}"), 0),
    (b"\x7f%c", &[0x50, 0x51], Some("\u{7f}P"), 1),
    (b"%\n", &[0x50, 0x51], Some("%\n"), 0),
    (b"\x0d\x09%d", &[0x50, 0x51], Some("\u{d}\u{9}80"), 1),
    (b"%d %d", &[1], None, 2),
    (b"%d", &[], None, 1),
    (b"%*d", &[5], None, 2),
    (b"%.*d", &[], None, 1),
    (b"%s", &[0xBAD], None, 1),
    (b"%ws", &[0xBAD], None, 1),
    (b"%d %s %d", &[1, 0xBAD, 3], None, 2),
    (b"%*.*s", &[1, 2], None, 3),
    (b"%p", &[], None, 1),
    (b"%c", &[], None, 1),
    (b"%f %d", &[], None, 1),
    (b"%% %%", &[], Some("% %"), 0),
    (b"x%", &[], Some("x%"), 0),
    (b"%5%%d", &[], None, 1),
    ];

    /// [`format_message`] makes the expected text of each vector, taking the expected number of
    /// arguments.
    #[test]
    fn formats_each_vector() {
        assert_eq!(FORMATS.len(), 783);
        for &(text, args, expected, calls) in FORMATS {
            let expected = (expected.map(String::from), calls);
            assert_eq!(format(text, args), expected, "{}", decode_narrow(text));
        }
    }

    /// A [`Vector`] of a long format.
    type LongVector<'a> = (Vec<u8>, &'a [u64], Option<String>, usize);

    /// Texts longer than [`MAX_TEXT`]: cut, and no conversion made once they pass it.
    #[test]
    fn long_texts_stop_at_max_text() {
        let repeat = |text: &str, count: usize| text.repeat(count);
        let cases: [LongVector<'_>; 19] = [
            (b"%s".to_vec(), &[0x53], Some(repeat("a", MAX_TEXT)), 1),
            (b"%s%d".to_vec(), &[0x53, 5], Some(repeat("a", MAX_TEXT)), 1),
            (b"%5000d".to_vec(), &[7], Some(repeat(" ", MAX_TEXT)), 1),
            (b"%-5000d|%d".to_vec(), &[7, 8], Some(format!("7{}", repeat(" ", 4095))), 1),
            (b"%.5000d".to_vec(), &[7], Some(repeat("0", MAX_TEXT)), 1),
            (b"%05000d".to_vec(), &[0xFFFF_FFF9], Some(format!("-{}", repeat("0", 4095))), 1),
            (b"%ws%ws%d".to_vec(), &[0x43, 0x43, 1], Some(repeat("\u{20ac}", MAX_TEXT)), 2),
            (
                [&[b'y'; 4090][..], b"%d%d"].concat(),
                &[12345, 6],
                Some(repeat("y", 4090) + "123456"),
                2,
            ),
            (
                [&[b'y'; 4090][..], b"%d%d%d"].concat(),
                &[12345, 67, 8],
                Some(repeat("y", 4090) + "123456"),
                2,
            ),
            (b"%1000000s".to_vec(), &[0x50], Some(repeat(" ", MAX_TEXT)), 1),
            ([&b"%%".repeat(4097)[..], b"%d"].concat(), &[5], Some(repeat("%", MAX_TEXT)), 1),
            ([&b"%%".repeat(4097)[..], b"%d"].concat(), &[], None, 1),
            ([&b"%%".repeat(4097)[..], b"%d%d"].concat(), &[5], Some(repeat("%", MAX_TEXT)), 1),
            ([&[b'z'; 5000][..], b"%d"].concat(), &[], None, 1),
            ([&[b'z'; 4096][..], b"%d%d"].concat(), &[1], Some(repeat("z", MAX_TEXT)), 1),
            ([&[b'z'; 4095][..], b"%d%d"].concat(), &[1, 2], Some(repeat("z", 4095) + "1"), 2),
            (b"%*s%d".to_vec(), &[0x7FFF_FFFF, 0x50, 1], Some(repeat(" ", MAX_TEXT)), 2),
            (b"%s%.4096s%d".to_vec(), &[0x52, 0x53, 1], Some(repeat("a", MAX_TEXT)), 3),
            (b"%s%.4097s%d".to_vec(), &[0x52, 0x53, 1], Some(repeat("a", MAX_TEXT)), 2),
        ];
        for (text, args, expected, calls) in cases {
            assert_eq!(
                format(&text, args),
                (expected, calls),
                "{}",
                decode_narrow(text.get(..20).unwrap_or_default())
            );
        }
    }

    /// A message of the common conversions: a 64-bit `%llu`, `%ws` and `%ls`, `%s`, widths
    /// either side, `%c`, `%p`, `%%` and a negative 32-bit `%d`.
    #[test]
    fn dbgprintex_format() {
        let args = [18_446_744_073_709_551_615, 0x40, 0x50, 42, 7, u64::from(b'x'), 0x1234];
        let args = [&args[..], &[0xFFFF_FFFF, 0x40]].concat();
        let mut fake = Fake {
            args: &args,
            calls: 0,
            narrow: |address| Some(if address == 0x50 { "narrow" } else { "?" }.into()),
            wide: |address| Some(if address == 0x40 { "wide" } else { "?" }.into()),
        };
        let text = format_message(b"%llu %ws %s %5d|%-3u|%c %p %% %d %ls", &mut fake);
        assert_eq!(
            text.as_deref(),
            Ok("18446744073709551615 wide narrow    42|7  |x 0000000000001234 % -1 wide")
        );
    }

    /// Formats and the Unicode conversions [`unicode_conversions`] finds in them (the first mixes
    /// them with narrow ones).
    #[rustfmt::skip]
    const UNICODE_CONVERSIONS: &[(&[u8], &[&str])] = &[
    (b"%s %d %ws %wZ %S %lc %hs %C", &["%ws", "%wZ", "%S", "%lc", "%C"]),
    (b"", &[]),
    (b"%%ws", &[]),
    (b"%%%ws", &["%ws"]),
    (b"%-5.3ws|%*ls|%.*S|%08wc", &["%-5.3ws", "%*ls", "%.*S", "%08wc"]),
    (b"%lS %wC %hS %hC %llc %lls", &[]),
    (b"%lZ %wz %Z %ws%", &["%lZ", "%ws"]),
    (b"%l", &[]),
    (b"%w", &[]),
    (b"%I64S %zS %5C %-C", &["%5C", "%-C"]),
    (b"%\xe9 %\x00S %S\x00%C", &["%S", "%C"]),
    (b"%lsl%ls", &["%ls", "%ls"]),
    (b"%wsws %%S %S%%", &["%ws", "%S"]),
    (b"%*.*wZ", &["%*.*wZ"]),
    (b"%.ws %.S", &[]),
    ];

    /// [`unicode_conversions`] finds the expected conversions, as written.
    #[test]
    fn unicode_conversions_finds_each_as_written() {
        for &(text, expected) in UNICODE_CONVERSIONS {
            assert_eq!(unicode_conversions(text), expected, "{}", decode_narrow(text));
        }
    }

    /// UTF-16LE bytes and their decoding, errors replaced: unpaired surrogates, odd last bytes,
    /// pairs.
    #[rustfmt::skip]
    const WIDE: &[(&[u8], &str)] = &[
    (b"", ""),
    (b"A\x00", "A"),
    (b"A", "\u{fffd}"),
    (b"A\x00B", "A\u{fffd}"),
    (b"\x00\xd8", "\u{fffd}"),
    (b"\x00\xdc", "\u{fffd}"),
    (b"\x00\xd8A", "\u{fffd}"),
    (b"\x00\xd8A\x00", "\u{fffd}A"),
    (b"\x00\xd8\x00\xdc", "\u{10000}"),
    (b"\x00\xd8\x00\xd8\x00\xdc", "\u{fffd}\u{10000}"),
    (b"\x00\xd8\x00\xdcA", "\u{10000}\u{fffd}"),
    (b"\x00\xdcA", "\u{fffd}\u{fffd}"),
    (b"\x00\xdc\x00\xd8", "\u{fffd}\u{fffd}"),
    (b"\xff\xdb\xff\xdf", "\u{10ffff}"),
    (b"\xac \xe9\x00", "\u{20ac}\u{e9}"),
    (b"=\xd8\x00\xde", "\u{1f600}"),
    (b"\x00\x00", "\u{0}"),
    (b"\xff\xff\xfe\xff", "\u{ffff}\u{fffe}"),
    (b"\x00\xd8\x00", "\u{fffd}"),
    (b"A\x00\x00\xd8A", "A\u{fffd}"),
    (b"\x00\xdb\x00\xd8\x00\xdc\x00\xd8", "\u{fffd}\u{10000}\u{fffd}"),
    (b"(\x00n\x00u\x00l\x00l\x00)\x00", "(null)"),
    ];

    /// [`decode_wide`] decodes each as expected.
    #[test]
    fn decode_wide_replaces_what_is_not_utf_16() {
        for &(bytes, expected) in WIDE {
            assert_eq!(decode_wide(bytes), expected, "{bytes:x?}");
        }
    }

    /// [`decode_narrow`] is Latin-1: a byte, a character of its value.
    #[test]
    fn decode_narrow_is_latin_1() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = decode_narrow(&bytes);
        assert!(text.chars().map(u32::from).eq(0..=255));
        assert_eq!(decode_narrow(b"a\0\xe9"), "a\0\u{e9}");
    }

    /// `read_terminated` over `memory` at 0x1000 (a fault elsewhere): the bytes, or the fault,
    /// and how many reads it made.
    fn terminated(address: u64, wide: bool, memory: &[u8]) -> (Result<Vec<u8>, Fault>, usize) {
        let mut reads = 0;
        let bytes = read_terminated(address, wide, |at, buffer: &mut [u8]| {
            reads += 1;
            for (offset, byte) in (0..).zip(buffer.iter_mut()) {
                let index = at.wrapping_add(offset).wrapping_sub(0x1000);
                *byte = *memory.get(usize::try_from(index).map_err(|_| Fault)?).ok_or(Fault)?;
            }
            Ok(())
        });
        (bytes, reads)
    }

    /// [`read_terminated`]: "(null)" for address 0, NUL-terminated, at most [`MAX_TEXT`]
    /// units, read a unit at a time.
    #[test]
    fn read_terminated_stops_at_nul_fault_or_max_text() {
        assert_eq!(terminated(0, false, &[]), (Ok(b"(null)".to_vec()), 0));
        assert_eq!(terminated(0, true, &[]), (Ok(b"(\0n\0u\0l\0l\0)\0".to_vec()), 0));
        assert_eq!(terminated(0x1000, false, b"ab\0cd"), (Ok(b"ab".to_vec()), 3));
        assert_eq!(terminated(0x1001, false, b"ab\0cd"), (Ok(b"b".to_vec()), 2));
        assert_eq!(terminated(0x1000, false, b"ab"), (Err(Fault), 3));
        assert_eq!(terminated(0x1000, true, b"a\0\0b\0\0"), (Ok(b"a\0\0b".to_vec()), 3));
        assert_eq!(terminated(0x1001, true, b"a\0b\0\0\0"), (Ok(b"\0b".to_vec()), 2));
        assert_eq!(terminated(0x1000, true, b"a\0b"), (Err(Fault), 2));
        let long = vec![b'x'; 9000];
        assert_eq!(terminated(0x1000, false, &long), (Ok(vec![b'x'; MAX_TEXT]), MAX_TEXT));
        assert_eq!(terminated(0x1000, true, &long), (Ok(vec![b'x'; 2 * MAX_TEXT]), MAX_TEXT));
        assert_eq!(
            terminated(0x1000, false, &long[..MAX_TEXT]),
            (Ok(vec![b'x'; MAX_TEXT]), MAX_TEXT)
        );
        assert_eq!(terminated(0x1000, false, &long[..MAX_TEXT - 1]), (Err(Fault), MAX_TEXT));
        assert_eq!(decode_wide(&terminated(0, true, &[]).0.unwrap_or_default()), "(null)");
    }

    /// No format of a `%` and three bytes of conversion specifications panics, whatever its
    /// arguments.
    #[test]
    fn no_format_panics() {
        let args = [0, 0xFFFF_FFFF, u64::MAX, 0x8000_0000, 5000, 0x50];
        let bytes = b"%-+ #0*.159hlIzwdisScCpxXZ\0\xe9";
        for &a in bytes {
            for &b in bytes {
                for &c in bytes {
                    let text = [b'%', a, b, c];
                    for count in [0, args.len()] {
                        let _ = format(&text, &args[..count]);
                    }
                    let _ = unicode_conversions(&text);
                }
            }
        }
    }
}
