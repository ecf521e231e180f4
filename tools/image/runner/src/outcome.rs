//! How an operation of the runner ends when it does not answer: the image crashed the machine
//! ([`Crash`], a bugcheck) or the runner cannot go on ([`Fatal`]), and the result type of the
//! runner's operations ([`Outcome`]). Below the runner's state, which every other module uses:
//! Driver Verifier's rules raise crashes too.

use serde_json::Value;

use crate::protocol::Fatal;
use crate::unicorn;

/// What Windows would bugcheck for: ends the command with a CRASH (the runner's, and Driver
/// Verifier's rules in `verifier.rs` raise it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    /// The bugcheck code.
    pub code: u64,
    /// Its four parameters.
    pub parameters: [u64; 4],
    /// What happened.
    pub what: String,
    /// Where (0: the program counter when reported).
    pub address: u64,
}

impl Crash {
    /// A crash with up to four `parameters` (the rest 0).
    pub fn new(
        code: u64,
        parameters: impl AsRef<[u64]>,
        what: impl Into<String>,
        address: u64,
    ) -> Self {
        let mut all = [0; 4];
        for (slot, value) in all.iter_mut().zip(parameters.as_ref()) {
            *slot = *value;
        }
        Self { code, parameters: all, what: what.into(), address }
    }

    /// The crash a `done`'s `crash` object describes (a nested call's, raised again).
    pub fn from_json(crash: &Value) -> Result<Self, Fatal> {
        let object = crash.as_object().ok_or_else(|| Fatal::new("a crash must be an object"))?;
        let mut parameters = [0; 4];
        if let Some(Value::Array(values)) = object.get("parameters") {
            for (slot, value) in parameters.iter_mut().zip(values) {
                *slot = value.as_u64().unwrap_or(0);
            }
        }
        Ok(Self {
            code: object.get("code").and_then(Value::as_u64).unwrap_or(0),
            parameters,
            what: object.get("what").and_then(Value::as_str).unwrap_or("").to_owned(),
            address: object.get("address").and_then(Value::as_u64).unwrap_or(0),
        })
    }
}

/// Why an operation of the runner stopped: the image crashed the machine, or the runner cannot
/// go on.
#[derive(Debug)]
pub enum Stop {
    /// A bugcheck.
    Crash(Crash),
    /// A protocol violation or a failure of the runner.
    Fatal(Fatal),
}

impl From<Fatal> for Stop {
    fn from(fatal: Fatal) -> Self {
        Self::Fatal(fatal)
    }
}

impl From<Crash> for Stop {
    fn from(crash: Crash) -> Self {
        Self::Crash(crash)
    }
}

impl From<unicorn::UcError> for Stop {
    fn from(error: unicorn::UcError) -> Self {
        Self::Fatal(Fatal::new(format!("runner bug in a hook: UcError({})", error.message())))
    }
}

/// A result of the runner's operations.
pub type Outcome<T> = Result<T, Stop>;
