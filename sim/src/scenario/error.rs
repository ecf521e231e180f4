//! [`ScenarioError`]: why a scenario could not be used, as one line naming the field.

use std::fmt::{self, Write as _};

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
    let head: String = text.chars().take(MAX_ECHOED_CHARS).collect();
    let mut out = crate::text::escaped(&head).into_owned();
    let count = text.chars().count();
    if count > MAX_ECHOED_CHARS {
        let _ = write!(out, "… ({count} characters)");
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
