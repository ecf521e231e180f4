//! The line protocol of docs/image-backend.md: one JSON object per line each way; the pages a
//! message names in `pages` follow its line as raw bytes. With a doorbell (a spinning
//! handoff), each message sent rings it and each one received is waited for on it first.

use std::io::{BufRead, BufReader, Read, Write};

use serde_json::{Map, Value};

use crate::layout::{MAX_CALL_PAGES, PAGE, PAGE_BYTES};

/// The doorbell of a spinning handoff (docs/image-backend.md, "Two processes"): a page shared
/// with `ppm-sim` holding its message counter and the runner's, which the runner takes with
/// `Doorbell::from_environment` (both sides are the `ppm-doorbell` crate's).
pub use ppm_doorbell::Doorbell;

/// The longest line accepted.
const MAX_LINE_BYTES: usize = 64 << 20;

/// Why the runner cannot go on: `ppm-sim` sent what the protocol does not allow, or the runner
/// itself failed. Answered with `{"error": text}`, then the runner exits 2.
#[derive(Debug)]
pub struct Fatal(pub String);

impl Fatal {
    /// A protocol violation or failure described by `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
}

/// A JSON object.
pub type Message = Map<String, Value>;

/// A received message and the pages that followed it.
pub struct Received {
    /// The JSON object, without its `pages`.
    pub message: Message,
    /// The pages, in order (checked: whole pages; the addresses are checked by their user).
    pub pages: Vec<(Value, Box<[u8; PAGE_BYTES]>)>,
}

/// stdin and stdout of the runner.
pub struct Channel {
    input: Box<dyn BufRead>,
    line: Vec<u8>,
    doorbell: Option<Doorbell>,
}

impl Channel {
    /// The runner's stdin and stdout, with `doorbell` if `ppm-sim` gave one.
    pub fn new(doorbell: Option<Doorbell>) -> Self {
        Self {
            input: Box::new(BufReader::with_capacity(1 << 16, std::io::stdin())),
            line: Vec::new(),
            doorbell,
        }
    }

    /// A channel whose input is `bytes` (its output still stdout).
    #[cfg(test)]
    pub fn reading(bytes: Vec<u8>) -> Self {
        Self { input: Box::new(std::io::Cursor::new(bytes)), line: Vec::new(), doorbell: None }
    }

    /// Sends `message` (one line, one write).
    pub fn send(&self, message: &Value) -> Result<(), Fatal> {
        let mut data = serde_json::to_vec(message)
            .map_err(|error| Fatal::new(format!("cannot encode a message: {error}")))?;
        data.push(b'\n');
        let mut out = std::io::stdout().lock();
        out.write_all(&data)
            .and_then(|()| out.flush())
            .map_err(|error| Fatal::new(format!("cannot write to ppm-sim: {error}")))?;
        if let Some(doorbell) = &self.doorbell {
            doorbell.ring();
        }
        Ok(())
    }

    /// The next message, or `None` at the end of the input.
    pub fn receive(&mut self) -> Result<Option<Received>, Fatal> {
        if let Some(doorbell) = &mut self.doorbell {
            doorbell.wait();
        }
        self.line.clear();
        let read = (&mut self.input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|error| Fatal::new(format!("cannot read from ppm-sim: {error}")))?;
        if read == 0 {
            return Ok(None);
        }
        if self.line.len() > MAX_LINE_BYTES {
            return Err(Fatal::new(format!("a line longer than {MAX_LINE_BYTES} bytes")));
        }
        let value: Value = serde_json::from_slice(&self.line).map_err(|error| {
            let shown = String::from_utf8_lossy(&self.line[..self.line.len().min(80)]).into_owned();
            Fatal::new(format!("not JSON: {error} in {shown:?}"))
        })?;
        let Value::Object(mut message) = value else {
            let shown = String::from_utf8_lossy(&self.line[..self.line.len().min(80)]).into_owned();
            return Err(Fatal::new(format!("not a JSON object: {shown:?}")));
        };
        let mut pages = Vec::new();
        if let Some(entries) = message.remove("pages") {
            let Value::Array(entries) = entries else {
                return Err(Fatal::new(format!(
                    "'pages' must be a list of at most {MAX_CALL_PAGES} pages"
                )));
            };
            if entries.len() > MAX_CALL_PAGES {
                return Err(Fatal::new(format!(
                    "'pages' must be a list of at most {MAX_CALL_PAGES} pages"
                )));
            }
            for entry in entries {
                let whole = matches!(&entry, Value::Array(pair) if pair.len() == 2 && pair[1].as_u64() == Some(PAGE));
                if !whole {
                    return Err(Fatal::new(format!(
                        "each page must be [address, {PAGE}], got {entry}"
                    )));
                }
                let mut data = Box::new([0u8; PAGE_BYTES]);
                self.input.read_exact(&mut data[..]).map_err(|_| {
                    Fatal::new(format!("the input ended inside the bytes of page {}", entry[0]))
                })?;
                pages.push((entry[0].clone(), data));
            }
        }
        Ok(Some(Received { message, pages }))
    }
}

/// `value`, a length or an offset in the runner's own memory, as a `usize` (`what` names it in
/// the error, which a 64-bit host never gives).
pub fn to_usize(value: u64, what: &str) -> Result<usize, Fatal> {
    usize::try_from(value)
        .map_err(|_| Fatal::new(format!("{what} {value:#x} does not fit in the runner's memory")))
}

/// `message[key]`, an unsigned `bits`-bit integer.
pub fn integer(message: &Message, key: &str, bits: u32) -> Result<u64, Fatal> {
    unsigned(message.get(key), key, bits)
}

/// `value` (named `what` in the error), an unsigned `bits`-bit integer (not a bool).
pub fn unsigned(value: Option<&Value>, what: &str, bits: u32) -> Result<u64, Fatal> {
    let found =
        value.and_then(Value::as_u64).filter(|number| bits >= 64 || *number < (1u64 << bits));
    found.ok_or_else(|| {
        let shown = value.map_or_else(|| "None".to_owned(), shown_value);
        Fatal::new(format!("'{what}': expected an unsigned {bits}-bit integer, got {shown}"))
    })
}

/// The JSON `value` as error texts show it: `None`, `True`, `False`, a string in single quotes
/// as it is (`'text'`), other values as JSON.
pub fn shown_value(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::String(text) => format!("'{text}'"),
        other => other.to_string(),
    }
}

/// `message[key]`, a hex string's bytes.
pub fn hex_bytes(message: &Message, key: &str) -> Result<Vec<u8>, Fatal> {
    let Some(Value::String(text)) = message.get(key) else {
        let shown = message.get(key).map_or_else(|| "None".to_owned(), shown_value);
        return Err(Fatal::new(format!("'{key}': expected a hex string, got {shown}")));
    };
    decode_hex(text).ok_or_else(|| Fatal::new(format!("'{key}': not a hex string")))
}

/// The bytes of a hex string (pairs of hex digits of either case, no spaces), or `None`.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |digit: u8| -> Option<u8> {
        match digit {
            b'0'..=b'9' => Some(digit - b'0'),
            b'a'..=b'f' => Some(digit - b'a' + 10),
            b'A'..=b'F' => Some(digit - b'A' + 10),
            _ => None,
        }
    };
    digits.chunks_exact(2).map(|pair| Some((nibble(pair[0])? << 4) | nibble(pair[1])?)).collect()
}

/// Lowercase hex of `data`.
pub fn encode_hex(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 * data.len());
    for byte in data {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{Channel, Fatal, MAX_CALL_PAGES, PAGE_BYTES, integer, unsigned};
    use serde_json::{Value, json};

    const PAYLOAD: u64 = 0x10000;

    fn error<T>(result: Result<T, Fatal>) -> String {
        match result {
            Err(fatal) => fatal.0,
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn a_protocol_integer_is_an_unsigned_int_of_its_width() {
        assert_eq!(unsigned(Some(&json!(0)), "arg", 64).unwrap(), 0);
        assert_eq!(unsigned(Some(&json!(u64::MAX)), "arg", 64).unwrap(), u64::MAX);
        assert_eq!(integer(json!({"index": 7}).as_object().unwrap(), "index", 32).unwrap(), 7);
        let too_wide: Value = serde_json::from_str("18446744073709551616").unwrap();
        for (value, bits) in [
            (json!(true), 64),
            (json!(false), 64),
            (json!(-1), 64),
            (too_wide, 64),
            (json!(1u64 << 32), 32),
        ] {
            let text = error(unsigned(Some(&value), "arg", bits));
            assert!(text.starts_with(&format!("'arg': expected an unsigned {bits}-bit")), "{text}");
        }
        for value in [json!(1.0), json!("1"), Value::Null, json!([1])] {
            assert!(error(unsigned(Some(&value), "arg", 64)).starts_with("'arg': "));
        }
        assert_eq!(
            error(integer(json!({}).as_object().unwrap(), "index", 64)),
            "'index': expected an unsigned 64-bit integer, got None"
        );
    }

    #[test]
    fn a_message_pages_follow_its_line_as_raw_bytes() {
        // Each page named in `pages` is read from the bytes after the line, in order, and the
        // next message from the byte after the last page (a page may hold a newline).
        let first = vec![b'\n'; PAGE_BYTES];
        let second: Vec<u8> = (0..=255u8).cycle().take(PAGE_BYTES).collect();
        let call =
            json!({"op": "call", "address": 1, "pages": [[PAYLOAD, 4096], [PAYLOAD + 4096, 4096]]});
        let mut stream = format!("{call}\n").into_bytes();
        stream.extend_from_slice(&first);
        stream.extend_from_slice(&second);
        stream.extend_from_slice(b"{\"op\": \"quit\"}\n");
        let mut channel = Channel::reading(stream);
        let received = channel.receive().unwrap().unwrap();
        assert_eq!(Value::Object(received.message), json!({"op": "call", "address": 1}));
        let pages: Vec<(Value, Vec<u8>)> =
            received.pages.into_iter().map(|(address, data)| (address, data.to_vec())).collect();
        assert_eq!(pages, [(json!(PAYLOAD), first), (json!(PAYLOAD + 4096), second)]);
        let quit = channel.receive().unwrap().unwrap();
        assert_eq!((Value::Object(quit.message), quit.pages.len()), (json!({"op": "quit"}), 0));
        assert!(channel.receive().unwrap().is_none());
    }

    #[test]
    fn a_message_with_malformed_pages_is_refused() {
        let nine = vec![json!([PAYLOAD, 4096]); MAX_CALL_PAGES + 1];
        for (pages, after, expected) in [
            (json!([[PAYLOAD, 16]]), 16, "each page must be [address, 4096], got [65536,16]"),
            (json!([PAYLOAD]), 0, "each page must be [address, 4096], got 65536"),
            (json!("x"), 0, "'pages' must be a list of at most 8 pages"),
            (json!(nine), 9 * PAGE_BYTES, "'pages' must be a list of at most 8 pages"),
            (json!([[PAYLOAD, 4096]]), 0x800, "the input ended inside the bytes of page 65536"),
        ] {
            let mut stream =
                format!("{}\n", json!({"op": "call", "address": 1, "pages": pages})).into_bytes();
            stream.resize(stream.len() + after, 0);
            assert_eq!(error(Channel::reading(stream).receive()), expected);
        }
    }

    #[test]
    fn a_line_that_is_not_a_json_object_is_refused() {
        for (line, expected) in [("not json\n", "not JSON: "), ("[1, 2]\n", "not a JSON object: ")]
        {
            let text = error(Channel::reading(line.as_bytes().to_vec()).receive());
            assert!(text.starts_with(expected), "{text}");
        }
    }
}
