//! Rust symbols as a reader knows them, for messages (a crash's place, the functions that never
//! ran): `ppm_pep::driver::evt_driver_unload`, not `_RNvNtCs80f4lHhQpFG_7ppm_pep6driver…`.

/// A symbol as a reader knows it: a Rust v0 symbol as its path
/// ([`ppm_image_file::demangle`]), anything else (a C name, a legacy `_ZN…` symbol) as it is.
#[must_use]
pub fn readable(name: &str) -> String {
    if name.starts_with("_R") { ppm_image_file::demangle(name) } else { name.to_owned() }
}

/// `text` with every Rust v0 symbol in it (a word starting `_R`, up to a `+` offset) made
/// [`readable`]: for messages that quote the runner (`bugcheck 0x50 at _RNv…+0x1c`).
#[must_use]
pub fn readable_symbols(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let start = word
                .find("_R")
                .filter(|&at| at == 0 || !word.as_bytes()[at - 1].is_ascii_alphanumeric());
            let Some(start) = start else { return word.to_owned() };
            let (head, symbol) = word.split_at(start);
            let end = symbol
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
                .unwrap_or(symbol.len());
            let (symbol, tail) = symbol.split_at(end);
            format!("{head}{}{tail}", readable(symbol))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_in_a_message_are_made_readable() {
        assert_eq!(
            readable_symbols(
                "bugcheck at _RNvNtCs80f4lHhQpFG_7ppm_pep6driver17evt_driver_unload+0x1c: read (in _RNvCs1_4core5panic)"
            ),
            "bugcheck at ppm_pep::driver::evt_driver_unload+0x1c: read (in core::panic)"
        );
        assert_eq!(readable_symbols("FxDriverEntry+0x10"), "FxDriverEntry+0x10");
    }

    #[test]
    fn a_v0_symbol_is_its_path() {
        let name = "_RNvNtCs80f4lHhQpFG_7ppm_pep6driver17evt_driver_unload";
        assert_eq!(readable(name), "ppm_pep::driver::evt_driver_unload");
    }
}
