//! [`ScenarioError`]: why a scenario could not be used, as one line naming the field.

use std::fmt::{self, Write as _};
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Why a scenario could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The field, as a dotted path (`platform.processors`, `phase[2].busy_percent`), when the
    /// error concerns one.
    pub field: Option<String>,
    /// The line and column (1-based) of a syntax error.
    pub location: Option<(usize, usize)>,
    /// What was expected and what was found.
    pub message: String,
}

/// The most characters of a name or value an error echoes: a longer one is cut, with its
/// length said (a 1 MB key must not flood the terminal).
pub const MAX_ECHOED_CHARS: usize = 64;

/// `text` as an error shows it: control characters escaped (the error stays one line), at most
/// [`MAX_ECHOED_CHARS`] characters of it, then `…` and its length when it is longer.
#[must_use]
pub fn shown(text: &str) -> String {
    let (mut out, cut) = crate::text::escaped_head(text, MAX_ECHOED_CHARS);
    if cut {
        let _ = write!(out, "… ({} characters)", text.chars().count());
    }
    out
}

impl ScenarioError {
    /// An error about `field` (a dotted path): its segments are [`shown`] bounded, since a
    /// path holds the file's own keys.
    pub(super) fn field(field: String, message: String) -> Self {
        let field = if field.chars().count() > 2 * MAX_ECHOED_CHARS
            || field.chars().any(crate::text::is_escaped)
        {
            field.split('.').map(shown).collect::<Vec<_>>().join(".")
        } else {
            field
        };
        Self { field: Some(field), location: None, message }
    }

    pub(super) fn syntax(text: &str, error: &toml::de::Error) -> Self {
        let location = error.span().map(|span| line_column(text, span.start));
        let message = error
            .message()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        // The parser says "duplicate key" without the key; its span covers the key itself.
        let key = error.span().and_then(|span| text.get(span)).map(str::trim).filter(|key| {
            !key.is_empty()
                && key.len() <= 64
                && !key.contains('\n')
                && message.contains("duplicate key")
        });
        let message = key.map_or_else(
            || format!("invalid TOML: {message}"),
            |key| format!("invalid TOML: {message} `{key}`"),
        );
        Self { field: None, location, message }
    }
}

impl ScenarioError {
    /// Why `toml` refused `text` while reading it into the schema's types: a syntax error, or
    /// a key or value that does not fit, named by the field its span points at.
    pub(super) fn from_toml(text: &str, error: &toml::de::Error) -> Self {
        let Ok(document) = DeTable::parse(text) else { return Self::syntax(text, error) };
        let span = error.span();
        let (field, found) = span
            .as_ref()
            .and_then(|span| find(document.get_ref(), "", span.start))
            .map_or((None, None), |(field, found)| (Some(field), found));
        let message = reworded(error.message(), field.as_deref(), found);
        let mut refusal = match field {
            Some(field) => Self::field(field, message),
            None => Self { field: None, location: None, message },
        };
        refusal.location = span.map(|span| line_column(text, span.start));
        refusal
    }

    /// The error with the line and column of its field in `text`, where it has a field and no
    /// location yet (a check made after reading names the field it refuses).
    #[must_use]
    pub(super) fn located(mut self, text: &str) -> Self {
        if self.location.is_none()
            && let Some(field) = &self.field
            && let Ok(document) = DeTable::parse(text)
        {
            let span = locate(document.get_ref(), field);
            self.location = span.map(|span| line_column(text, span.start));
        }
        self
    }
}

/// serde's wording of a refusal in the schema's: "unknown field; expected one of `a`, `b`",
/// "expected a table, found 5".
fn reworded(message: &str, field: Option<&str>, found: Option<&DeValue<'_>>) -> String {
    let found = || found.map_or_else(String::new, describe);
    if let Some(rest) = message.strip_prefix("unknown field `") {
        // serde lists the keys as "`a`", "`a` or `b`" or "one of `a`, `b`, …".
        let keys = rest.rsplit_once("`, expected ").map_or("", |(_, keys)| keys);
        let keys = keys.strip_prefix("one of ").unwrap_or(keys).replace("` or `", "`, `");
        return format!("unknown field; expected one of {keys}");
    }
    if let Some((_, expected)) =
        message.strip_prefix("invalid type: ").and_then(|rest| rest.rsplit_once(", expected "))
    {
        // The found value said the schema's way.
        if expected == "a sequence" {
            let key = field.and_then(|field| field.rsplit('.').next()).unwrap_or("");
            return format!("expected an array of tables ([[{key}]]), found {}", found());
        }
        return format!("expected {expected}, found {}", found());
    }
    if message == "integer number overflowed" {
        return format!("expected an integer TOML can hold (64 bits), found {}", found());
    }
    message.to_owned()
}

/// How a value found in the file is named in an error message.
fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(text) => format!("the string \"{}\"", shown(text)),
        DeValue::Integer(number) => i64::from_str_radix(number.as_str(), number.radix())
            .map_or_else(|_| shown(number.as_str()), |number| number.to_string()),
        DeValue::Float(number) => format!("the float {}", shown(number.as_str())),
        DeValue::Boolean(flag) => format!("the boolean {flag}"),
        DeValue::Datetime(datetime) => format!("the datetime {datetime}"),
        DeValue::Array(_) => "an array".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    }
}

/// The field (`event[2].at_ms`) whose key or value holds byte `offset`, with its value when
/// the offset is in the value.
fn find<'a>(
    table: &'a DeTable<'_>,
    prefix: &str,
    offset: usize,
) -> Option<(String, Option<&'a DeValue<'a>>)> {
    for (key, value) in table {
        let field = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        if key.span().contains(&offset) {
            return Some((field, None));
        }
        if let Some(found) = find_in(value, field, offset) {
            return Some(found);
        }
    }
    None
}

fn find_in<'a>(
    value: &'a Spanned<DeValue<'a>>,
    field: String,
    offset: usize,
) -> Option<(String, Option<&'a DeValue<'a>>)> {
    let inner = match value.get_ref() {
        DeValue::Table(table) => find(table, &field, offset),
        DeValue::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| find_in(item, format!("{field}[{index}]"), offset)),
        _ => None,
    };
    inner.or_else(|| value.span().contains(&offset).then(|| (field, Some(value.get_ref()))))
}

/// The span of `field` (`event[2].at_ms`) in the document, or of the nearest enclosing field
/// that exists (a missing key is placed at its table).
fn locate(table: &DeTable<'_>, field: &str) -> Option<Range<usize>> {
    let mut span = None;
    let mut current: Option<&DeValue<'_>> = None;
    for segment in field.split('.') {
        let mut parts = segment.split('[');
        let key = parts.next().unwrap_or("");
        let entries = match current {
            None => table,
            Some(DeValue::Table(inner)) => inner,
            Some(_) => return span,
        };
        let Some((_, value)) = entries.iter().find(|(name, _)| name.get_ref() == key) else {
            return span;
        };
        let mut value = value;
        for index in parts {
            let item = index
                .strip_suffix(']')
                .and_then(|index| index.parse::<usize>().ok())
                .and_then(|index| match value.get_ref() {
                    DeValue::Array(items) => items.get(index),
                    _ => None,
                });
            match item {
                Some(item) => value = item,
                None => return Some(value.span()),
            }
        }
        span = Some(value.span());
        current = Some(value.get_ref());
    }
    span
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, column)) = self.location {
            write!(formatter, "line {line}, column {column}: ")?;
        }
        if let Some(field) = &self.field {
            write!(formatter, "field `{field}`: ")?;
        }
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
    (line, column)
}
