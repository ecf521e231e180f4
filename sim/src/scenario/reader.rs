//! [`Reader`]: typed access to one TOML table, with one-line errors that name the field
//! (`platform.processors`, `phase[2].busy_percent`).

use std::ops::RangeInclusive;

use toml::{Table, Value};

use super::error::{ScenarioError, shown};
use super::types::ProcessorSet;

/// How a TOML value is named in an error message.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("the string \"{}\"", shown(text)),
        Value::Integer(number) => number.to_string(),
        Value::Float(number) => format!("the float {number}"),
        Value::Boolean(flag) => format!("the boolean {flag}"),
        Value::Datetime(datetime) => format!("the datetime {datetime}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
    }
}

pub(super) fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    quoted.join(", ")
}

/// Typed access to one TOML table, with errors that name the field.
pub(super) struct Reader<'a> {
    path: String,
    table: &'a Table,
}

impl<'a> Reader<'a> {
    /// Rejects keys not in `known`.
    pub(super) fn new(
        path: String,
        table: &'a Table,
        known: &[&str],
    ) -> Result<Self, ScenarioError> {
        let reader = Self { path, table };
        if let Some(key) = table.keys().find(|key| !known.contains(&key.as_str())) {
            let expected: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
            return Err(reader
                .error(key, &format!("unknown field; expected one of {}", expected.join(", "))));
        }
        Ok(reader)
    }

    pub(super) fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    pub(super) fn error(&self, key: &str, message: &str) -> ScenarioError {
        ScenarioError::field(self.path_of(key), message.to_owned())
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    pub(super) fn integer(
        &self,
        key: &str,
        value: &Value,
        range: &RangeInclusive<u32>,
    ) -> Result<u32, ScenarioError> {
        let expected = if *range.end() == u32::MAX {
            format!("expected an integer >= {}", range.start())
        } else {
            format!("expected an integer in {}..={}", range.start(), range.end())
        };
        match value {
            Value::Integer(number) => u32::try_from(*number)
                .ok()
                .filter(|number| range.contains(number))
                .ok_or_else(|| self.error(key, &format!("{expected}, found {number}"))),
            other => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    pub(super) fn required_u32(
        &self,
        key: &str,
        range: RangeInclusive<u32>,
    ) -> Result<u32, ScenarioError> {
        self.get(key).map_or_else(
            || {
                Err(self.error(
                    key,
                    &format!("missing; expected an integer in {}..={}", range.start(), range.end()),
                ))
            },
            |value| self.integer(key, value, &range),
        )
    }

    pub(super) fn optional_u32(
        &self,
        key: &str,
        range: RangeInclusive<u32>,
    ) -> Result<Option<u32>, ScenarioError> {
        self.get(key).map(|value| self.integer(key, value, &range)).transpose()
    }

    /// `[core, reference]`: two non-negative integers (range-checked against the counter width
    /// once the whole scenario is known).
    pub(super) fn counter_values(&self, key: &str) -> Result<Option<[u64; 2]>, ScenarioError> {
        let expected = "expected a list of two non-negative integers [core, reference]";
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                let values: Option<Vec<u64>> = items
                    .iter()
                    .map(|item| match item {
                        Value::Integer(number) => u64::try_from(*number).ok(),
                        _ => None,
                    })
                    .collect();
                if let Some(&[core, reference]) = values.as_deref() {
                    return Ok(Some([core, reference]));
                }
                let found: Vec<String> = items.iter().map(describe).collect();
                Err(self.error(key, &format!("{expected}, found [{}]", found.join(", "))))
            }
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    pub(super) fn bool(&self, key: &str, default: bool) -> Result<bool, ScenarioError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Boolean(flag)) => Ok(*flag),
            Some(other) => {
                Err(self.error(key, &format!("expected true or false, found {}", describe(other))))
            }
        }
    }

    pub(super) fn optional_string(&self, key: &str) -> Result<Option<&'a str>, ScenarioError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => {
                Err(self.error(key, &format!("expected a string, found {}", describe(other))))
            }
        }
    }

    pub(super) fn required_string(&self, key: &str) -> Result<&'a str, ScenarioError> {
        self.optional_string(key)?.ok_or_else(|| self.error(key, "missing; expected a string"))
    }

    pub(super) fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
        default: T,
    ) -> Result<T, ScenarioError> {
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let expected = format!("expected one of {}", quoted_list(&names));
        match self.get(key) {
            None => Ok(default),
            Some(Value::String(text)) => choices
                .iter()
                .find(|(name, _)| name == text)
                .map(|(_, value)| *value)
                .ok_or_else(|| {
                    self.error(
                        key,
                        &format!("{expected}, found {}", describe(&Value::String(text.clone()))),
                    )
                }),
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }

    pub(super) fn optional_table(&self, key: &str) -> Result<Option<&'a Table>, ScenarioError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(table)) => Ok(Some(table)),
            Some(other) => {
                Err(self.error(key, &format!("expected a table, found {}", describe(other))))
            }
        }
    }

    pub(super) fn required_table(&self, key: &str) -> Result<&'a Table, ScenarioError> {
        self.optional_table(key)?
            .ok_or_else(|| self.error(key, &format!("missing; expected a [{key}] table")))
    }

    pub(super) fn array_of_tables(&self, key: &str) -> Result<Vec<&'a Table>, ScenarioError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::Table(table) => Ok(table),
                    other => Err(ScenarioError::field(
                        format!("{}[{index}]", self.path_of(key)),
                        format!("expected a table ([[{key}]]), found {}", describe(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.error(
                key,
                &format!("expected an array of tables ([[{key}]]), found {}", describe(other)),
            )),
        }
    }

    pub(super) fn optional_string_list(
        &self,
        key: &str,
        count: RangeInclusive<u32>,
        length: RangeInclusive<u32>,
    ) -> Result<Option<Vec<String>>, ScenarioError> {
        let Some(value) = self.get(key) else { return Ok(None) };
        let Value::Array(items) = value else {
            return Err(
                self.error(key, &format!("expected a list of strings, found {}", describe(value)))
            );
        };
        let found = u32::try_from(items.len()).unwrap_or(u32::MAX);
        if !count.contains(&found) {
            return Err(self.error(
                key,
                &format!("expected {}..={} strings, found {found}", count.start(), count.end()),
            ));
        }
        let mut strings = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let field = format!("{}[{index}]", self.path_of(key));
            let Value::String(text) = item else {
                return Err(ScenarioError::field(
                    field,
                    format!("expected a string, found {}", describe(item)),
                ));
            };
            let units = u32::try_from(text.encode_utf16().count()).unwrap_or(u32::MAX);
            if !length.contains(&units) {
                return Err(ScenarioError::field(
                    field,
                    format!(
                        "expected a string of {}..={} characters, found {units}",
                        length.start(),
                        length.end()
                    ),
                ));
            }
            strings.push(text.clone());
        }
        Ok(Some(strings))
    }

    pub(super) fn processor_set(
        &self,
        key: &str,
        processors: u32,
    ) -> Result<ProcessorSet, ScenarioError> {
        let highest = processors - 1;
        let expected =
            format!("expected \"all\" or a non-empty list of processor indexes in 0..={highest}");
        match self.get(key) {
            None => Err(self.error(key, &format!("missing; {expected}"))),
            Some(Value::String(text)) if text == "all" => Ok(ProcessorSet::All),
            Some(Value::Array(items)) if !items.is_empty() => {
                // Which indexes were listed: one flag per processor (a list may name 2048).
                let mut seen = vec![false; usize::try_from(processors).unwrap_or(0)];
                let mut list = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let field = format!("{}[{index}]", self.path_of(key));
                    let number = match item {
                        Value::Integer(number) => {
                            u32::try_from(*number).ok().filter(|number| *number <= highest)
                        }
                        _ => None,
                    }
                    .ok_or_else(|| {
                        ScenarioError::field(
                            field.clone(),
                            format!(
                                "expected a processor index in 0..={highest}, found {}",
                                describe(item)
                            ),
                        )
                    })?;
                    let listed = usize::try_from(number).ok().and_then(|i| seen.get_mut(i));
                    if listed.is_some_and(|listed| std::mem::replace(listed, true)) {
                        return Err(ScenarioError::field(
                            field,
                            format!("processor {number} is listed twice"),
                        ));
                    }
                    list.push(number);
                }
                Ok(ProcessorSet::List(list))
            }
            Some(other) => Err(self.error(key, &format!("{expected}, found {}", describe(other)))),
        }
    }
}
