//! `ppm_sim::Scenario::from_toml_str` on arbitrary text: it never panics; a refusal says what
//! was expected (a non-empty message) and displays; an accepted scenario respects the
//! documented bounds (1..=2048 processors, a name). (A field path may be empty: TOML allows the
//! empty key `'' = 1`, reported as an unknown field named "".)
#![no_main]

use libfuzzer_sys::fuzz_target;
use ppm_sim::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Scenario::from_toml_str(text) {
        Ok(scenario) => {
            assert!((1..=2048).contains(&scenario.platform.processors));
            assert!(!scenario.name.is_empty());
        }
        Err(error) => {
            assert!(!error.message.is_empty(), "an error without a message");
            assert!(!error.to_string().is_empty());
        }
    }
});
