//! [`ScenarioError`]: why a scenario could not be used, as one line naming the field.

use std::fmt;

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

impl ScenarioError {
    pub(super) const fn field(field: String, message: String) -> Self {
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
