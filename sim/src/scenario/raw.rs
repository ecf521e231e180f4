//! The scenario file as serde reads it: one struct per table, unknown keys refused
//! (`deny_unknown_fields`), and the values whose errors the project words itself.
//!
//! Booleans, strings and names from a fixed list are refused while the file is read, with
//! the schema's one-line messages ("expected true or false, found 1"). Integers and lists are
//! kept as [`Found`], because their bounds depend on other fields (`at_ms` on
//! `[pofx] duration_ms`, a processor index on `[platform] processors`): `super::parse` checks
//! them with the helpers below. Field order is the order an unknown-key error lists them in.

use std::fmt;
use std::ops::RangeInclusive;

use ppm_engine::config::{
    COUNTER_SOURCE_CHOICES, CounterSourcePreference, FEEDBACK_COUNTER_CHOICES,
    FeedbackCounterPolicy, PMU_RESERVATION_CHOICES,
};
use ppm_engine::driver::PoolBlock;
use ppm_engine::pmc::ReservationPolicy;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::{ScenarioError, shown};
use super::types::{
    CounterSourceKind, CpuKind, DeviceIdStyle, ProcessorSet, SleepState, ThreadMode,
};

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct File {
    pub name: Option<Text>,
    pub description: Option<Text>,
    pub platform: Option<Platform>,
    pub pofx: Option<Pofx>,
    pub config: Option<Config>,
    pub registry: Option<Found>,
    #[serde(default)]
    pub fault: Vec<Fault>,
    pub install: Option<Install>,
    #[serde(default)]
    pub phase: Vec<Phase>,
    #[serde(default)]
    pub event: Vec<Event>,
}

/// `[platform]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct Platform {
    pub processors: Option<Found>,
    pub cpu: Option<Pick<CpuKind>>,
    pub counter_source: Option<Pick<CounterSourceKind>>,
    pub nominal_mhz: Option<Found>,
    pub hypervisor: Option<Flag>,
    pub hwp_enabled: Option<Flag>,
    pub device_id_style: Option<Pick<DeviceIdStyle>>,
    pub device_id_template: Option<Text>,
    pub device_ids: Option<Found>,
    pub sockets: Option<Found>,
    pub other_devices: Option<Found>,
    pub perf: Option<Levels>,
    pub pmu: Option<Flag>,
    pub pmc_width: Option<Found>,
    pub pmu_busy: Option<Flag>,
    pub msr_read_ns: Option<Found>,
    pub cntfrq_hz: Option<Found>,
    pub amu_enabled: Option<Flag>,
}

/// `[platform.perf]` and `[config] perf_capabilities`: four performance levels.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct Levels {
    pub highest: Option<Found>,
    pub nominal: Option<Found>,
    pub lowest_nonlinear: Option<Found>,
    pub lowest: Option<Found>,
}

impl Levels {
    /// The four levels, each required and in `range`: highest, nominal, lowest nonlinear,
    /// lowest.
    pub(super) fn read(
        &self,
        table: &str,
        range: RangeInclusive<u32>,
    ) -> Result<[u32; 4], ScenarioError> {
        let level = |key, found: &Option<Found>| {
            required_u32(&at(table, key), found.as_ref(), range.clone())
        };
        Ok([
            level("highest", &self.highest)?,
            level("nominal", &self.nominal)?,
            level("lowest_nonlinear", &self.lowest_nonlinear)?,
            level("lowest", &self.lowest)?,
        ])
    }
}

/// `[pofx]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct Pofx {
    pub duration_ms: Option<Found>,
    pub sample_interval_ms: Option<Found>,
    pub threads: Option<Pick<ThreadMode>>,
    pub nested_notifications: Option<Flag>,
}

/// `[config]`: the keys are [`super::CONFIG_KEYS`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct Config {
    pub feedback_counters: Option<Pick<FeedbackCounterPolicy>>,
    pub counter_source: Option<Pick<CounterSourcePreference>>,
    pub performance_counter_view: Option<Flag>,
    pub nominal_mhz: Option<Found>,
    pub perf_capabilities: Option<Levels>,
    pub device_id_patterns: Option<Found>,
    pub transition_latency_100ns: Option<Found>,
    pub pmu_reservation: Option<Pick<ReservationPolicy>>,
}

impl Config {
    /// Whether the file sets `key` (one of [`super::CONFIG_KEYS`]).
    pub(super) fn sets(&self, key: &str) -> bool {
        match key {
            "feedback_counters" => self.feedback_counters.is_some(),
            "counter_source" => self.counter_source.is_some(),
            "performance_counter_view" => self.performance_counter_view.is_some(),
            "nominal_mhz" => self.nominal_mhz.is_some(),
            "perf_capabilities" => self.perf_capabilities.is_some(),
            "device_id_patterns" => self.device_id_patterns.is_some(),
            "transition_latency_100ns" => self.transition_latency_100ns.is_some(),
            "pmu_reservation" => self.pmu_reservation.is_some(),
            _ => false,
        }
    }
}

/// `[install]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct Install {
    pub pending: Option<Flag>,
}

/// `[[fault]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table ([[fault]])")]
pub(super) struct Fault {
    pub step: Option<Text>,
    pub status: Option<Found>,
    pub value: Option<Text>,
    pub block: Option<Pick<PoolBlock>>,
    pub processor: Option<Found>,
}

/// `[[phase]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table ([[phase]])")]
pub(super) struct Phase {
    pub start_ms: Option<Found>,
    pub end_ms: Option<Found>,
    pub processors: Option<Found>,
    pub frequency_mhz: Option<Found>,
    pub busy_percent: Option<Found>,
}

/// `[[event]]`: the common keys, then those of particular kinds ([`Event::KIND_KEYS`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table ([[event]])")]
pub(super) struct Event {
    pub at_ms: Option<Found>,
    pub kind: Option<Text>,
    pub processors: Option<Found>,
    pub duration_ms: Option<Found>,
    pub on_processor: Option<Found>,
    pub values: Option<Found>,
    pub state: Option<Pick<SleepState>>,
    pub duration_us: Option<Found>,
    pub period_ms: Option<Found>,
}

impl Event {
    /// The keys only some kinds have.
    pub(super) const KIND_KEYS: [&'static str; 6] =
        ["duration_ms", "on_processor", "values", "state", "duration_us", "period_ms"];

    /// Whether the event sets `key` (one of [`Self::KIND_KEYS`]).
    pub(super) fn sets(&self, key: &str) -> bool {
        match key {
            "duration_ms" => self.duration_ms.is_some(),
            "on_processor" => self.on_processor.is_some(),
            "values" => self.values.is_some(),
            "state" => self.state.is_some(),
            "duration_us" => self.duration_us.is_some(),
            "period_ms" => self.period_ms.is_some(),
            _ => false,
        }
    }
}

/// A value as the file gives it, kept so that its error can say what was found.
#[derive(Clone, Debug)]
pub(super) enum Found {
    /// An integer (TOML's are 64-bit; a longer literal is kept to be named in the error).
    Integer(i128),
    /// A string.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// An array.
    List(Vec<Self>),
    /// A table, its entries in key order.
    Table(Vec<(String, Self)>),
    /// Anything else, described ("the float 1.5").
    Other(String),
}

/// The key under which the `toml` crate hands a datetime to serde (as a one-entry table).
const DATETIME_KEY: &str = "$__toml_private_datetime";

impl Found {
    /// How the value is named in an error message.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Integer(number) => number.to_string(),
            Self::Text(text) => format!("the string \"{}\"", shown(text)),
            Self::Bool(flag) => format!("the boolean {flag}"),
            Self::List(_) => "an array".to_owned(),
            Self::Table(_) => "a table".to_owned(),
            Self::Other(described) => described.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for Found {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FoundVisitor)
    }
}

struct FoundVisitor;

impl<'de> Visitor<'de> for FoundVisitor {
    type Value = Found;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a TOML value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Found, E> {
        Ok(Found::Bool(flag))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Found, E> {
        Ok(Found::Integer(number.into()))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Found, E> {
        Ok(Found::Integer(number.into()))
    }

    fn visit_i128<E>(self, number: i128) -> Result<Found, E> {
        Ok(Found::Integer(number))
    }

    fn visit_u128<E>(self, number: u128) -> Result<Found, E> {
        Ok(i128::try_from(number).map_or_else(|_| Found::Other(number.to_string()), Found::Integer))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Found, E> {
        Ok(Found::Other(format!("the float {number}")))
    }

    fn visit_str<E>(self, text: &str) -> Result<Found, E> {
        Ok(Found::Text(text.to_owned()))
    }

    fn visit_string<E>(self, text: String) -> Result<Found, E> {
        Ok(Found::Text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Found, A::Error> {
        let mut list = Vec::new();
        while let Some(item) = items.next_element()? {
            list.push(item);
        }
        Ok(Found::List(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Found, A::Error> {
        let mut table = Vec::new();
        while let Some((key, value)) = entries.next_entry::<String, Found>()? {
            if key == DATETIME_KEY
                && let Found::Text(datetime) = value
            {
                return Ok(Found::Other(format!("the datetime {datetime}")));
            }
            table.push((key, value));
        }
        Ok(Found::Table(table))
    }
}

/// `true` or `false`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Found::deserialize(deserializer)? {
            Found::Bool(flag) => Ok(Self(flag)),
            other => Err(de::Error::custom(format!(
                "expected true or false, found {}",
                other.describe()
            ))),
        }
    }
}

/// A string.
#[derive(Clone, Debug)]
pub(super) struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Found::deserialize(deserializer)? {
            Found::Text(text) => Ok(Self(text)),
            other => {
                Err(de::Error::custom(format!("expected a string, found {}", other.describe())))
            }
        }
    }
}

/// A value a file names from a fixed list.
pub(super) trait Named: Copy + Sized + 'static {
    /// Every name, with its value, in the order errors list them.
    fn choices() -> Vec<(&'static str, Self)>;
}

/// The names of `T`, quoted, as errors list them.
pub(super) fn names<T: Named>() -> String {
    quoted_list(&T::choices().into_iter().map(|(name, _)| name).collect::<Vec<_>>())
}

pub(super) fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
    quoted.join(", ")
}

/// One of the names of `T`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pick<T>(pub T);

impl<'de, T: Named> Deserialize<'de> for Pick<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let found = Found::deserialize(deserializer)?;
        if let Found::Text(text) = &found
            && let Some((_, value)) = T::choices().into_iter().find(|(name, _)| name == text)
        {
            return Ok(Self(value));
        }
        Err(de::Error::custom(format!(
            "expected one of {}, found {}",
            names::<T>(),
            found.describe()
        )))
    }
}

/// `Named` for types with a `name()`, from their values in the order errors list them.
macro_rules! named {
    ($($kind:ty: [$($value:ident),+];)+) => {$(
        impl Named for $kind {
            fn choices() -> Vec<(&'static str, Self)> {
                [$(Self::$value),+].map(|value| (value.name(), value)).to_vec()
            }
        }
    )+};
}

named! {
    CpuKind: [IntelHwp, AmdCppc, IntelLegacy, Arm64];
    CounterSourceKind: [AperfMperf, None, AperfMperfZeros, AperfMperfFaulting, FixedPmc, Amu];
    ThreadMode: [Single, PerProcessor];
    SleepState: [S3, S4];
}

impl Named for DeviceIdStyle {
    fn choices() -> Vec<(&'static str, Self)> {
        Self::CHOICES.to_vec()
    }
}

impl Named for PoolBlock {
    fn choices() -> Vec<(&'static str, Self)> {
        vec![
            ("processor-table", Self::ProcessorTable),
            ("saved-pmu-control", Self::SavedPmuControl),
        ]
    }
}

/// `Named` for the engine's `Parameters` choices (which also give the registry numbers the
/// driver reads).
macro_rules! engine_named {
    ($($kind:ty: $choices:expr;)+) => {$(
        impl Named for $kind {
            fn choices() -> Vec<(&'static str, Self)> {
                $choices.iter().map(|choice| (choice.name, choice.value)).collect()
            }
        }
    )+};
}

engine_named! {
    FeedbackCounterPolicy: FEEDBACK_COUNTER_CHOICES;
    CounterSourcePreference: COUNTER_SOURCE_CHOICES;
    ReservationPolicy: PMU_RESERVATION_CHOICES;
}

/// `table.key`, the field path an error names (`key` alone at the top).
pub(super) fn at(table: &str, key: &str) -> String {
    if table.is_empty() { key.to_owned() } else { format!("{table}.{key}") }
}

/// An error about `key` of the table at `table`.
pub(super) fn fail(table: &str, key: &str, message: &str) -> ScenarioError {
    ScenarioError::field(at(table, key), message.to_owned())
}

/// An integer in `range`, or the error naming `field`.
pub(super) fn integer(
    field: &str,
    found: &Found,
    range: &RangeInclusive<u32>,
) -> Result<u32, ScenarioError> {
    let expected = if *range.end() == u32::MAX {
        format!("expected an integer >= {}", range.start())
    } else {
        format!("expected an integer in {}..={}", range.start(), range.end())
    };
    match found {
        Found::Integer(number) => {
            u32::try_from(*number).ok().filter(|number| range.contains(number)).ok_or_else(|| {
                ScenarioError::field(field.to_owned(), format!("{expected}, found {number}"))
            })
        }
        other => Err(ScenarioError::field(
            field.to_owned(),
            format!("{expected}, found {}", other.describe()),
        )),
    }
}

/// A required integer in `range`.
pub(super) fn required_u32(
    field: &str,
    found: Option<&Found>,
    range: RangeInclusive<u32>,
) -> Result<u32, ScenarioError> {
    found.map_or_else(
        || {
            Err(ScenarioError::field(
                field.to_owned(),
                format!("missing; expected an integer in {}..={}", range.start(), range.end()),
            ))
        },
        |found| integer(field, found, &range),
    )
}

/// An optional integer in `range`.
pub(super) fn optional_u32(
    field: &str,
    found: Option<&Found>,
    range: RangeInclusive<u32>,
) -> Result<Option<u32>, ScenarioError> {
    found.map(|found| integer(field, found, &range)).transpose()
}

/// A required top-level table.
pub(super) fn required_table<T>(key: &str, table: Option<T>) -> Result<T, ScenarioError> {
    table.ok_or_else(|| {
        ScenarioError::field(key.to_owned(), format!("missing; expected a [{key}] table"))
    })
}

/// A required string.
pub(super) fn required_text<'a>(
    field: &str,
    text: Option<&'a Text>,
) -> Result<&'a str, ScenarioError> {
    text.map(|text| text.0.as_str()).ok_or_else(|| {
        ScenarioError::field(field.to_owned(), "missing; expected a string".to_owned())
    })
}

/// `[core, reference]`: two non-negative integers (range-checked against the counter width
/// once the whole scenario is known).
pub(super) fn counter_values(
    field: &str,
    found: Option<&Found>,
) -> Result<Option<[u64; 2]>, ScenarioError> {
    let expected = "expected a list of two non-negative integers [core, reference]";
    match found {
        None => Ok(None),
        Some(Found::List(items)) => {
            let values: Option<Vec<u64>> = items
                .iter()
                .map(|item| match item {
                    Found::Integer(number) => u64::try_from(*number).ok(),
                    _ => None,
                })
                .collect();
            if let Some(&[core, reference]) = values.as_deref() {
                return Ok(Some([core, reference]));
            }
            let found: Vec<String> = items.iter().map(Found::describe).collect();
            Err(ScenarioError::field(
                field.to_owned(),
                format!("{expected}, found [{}]", found.join(", ")),
            ))
        }
        Some(other) => Err(ScenarioError::field(
            field.to_owned(),
            format!("{expected}, found {}", other.describe()),
        )),
    }
}

/// An optional list of `count` strings of `length` UTF-16 code units each.
pub(super) fn string_list(
    field: &str,
    found: Option<&Found>,
    count: RangeInclusive<u32>,
    length: RangeInclusive<u32>,
) -> Result<Option<Vec<String>>, ScenarioError> {
    let Some(found) = found else { return Ok(None) };
    let Found::List(items) = found else {
        return Err(ScenarioError::field(
            field.to_owned(),
            format!("expected a list of strings, found {}", found.describe()),
        ));
    };
    let number = u32::try_from(items.len()).unwrap_or(u32::MAX);
    if !count.contains(&number) {
        return Err(ScenarioError::field(
            field.to_owned(),
            format!("expected {}..={} strings, found {number}", count.start(), count.end()),
        ));
    }
    let mut strings = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_field = format!("{field}[{index}]");
        let Found::Text(text) = item else {
            return Err(ScenarioError::field(
                item_field,
                format!("expected a string, found {}", item.describe()),
            ));
        };
        let units = u32::try_from(text.encode_utf16().count()).unwrap_or(u32::MAX);
        if !length.contains(&units) {
            return Err(ScenarioError::field(
                item_field,
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

/// `"all"` or a non-empty list of distinct processor indexes below `processors`.
pub(super) fn processor_set(
    field: &str,
    found: Option<&Found>,
    processors: u32,
) -> Result<ProcessorSet, ScenarioError> {
    let highest = processors - 1;
    let expected =
        format!("expected \"all\" or a non-empty list of processor indexes in 0..={highest}");
    match found {
        None => Err(ScenarioError::field(field.to_owned(), format!("missing; {expected}"))),
        Some(Found::Text(text)) if text == "all" => Ok(ProcessorSet::All),
        Some(Found::List(items)) if !items.is_empty() => {
            // Which indexes were listed: one flag per processor (a list may name 2048).
            let mut seen = vec![false; usize::try_from(processors).unwrap_or(0)];
            let mut list = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let number = match item {
                    Found::Integer(number) => {
                        u32::try_from(*number).ok().filter(|number| *number <= highest)
                    }
                    _ => None,
                }
                .ok_or_else(|| {
                    ScenarioError::field(
                        format!("{field}[{index}]"),
                        format!(
                            "expected a processor index in 0..={highest}, found {}",
                            item.describe()
                        ),
                    )
                })?;
                let listed = usize::try_from(number).ok().and_then(|i| seen.get_mut(i));
                if listed.is_some_and(|listed| std::mem::replace(listed, true)) {
                    return Err(ScenarioError::field(
                        format!("{field}[{index}]"),
                        format!("processor {number} is listed twice"),
                    ));
                }
                list.push(number);
            }
            Ok(ProcessorSet::List(list))
        }
        Some(other) => Err(ScenarioError::field(
            field.to_owned(),
            format!("{expected}, found {}", other.describe()),
        )),
    }
}
