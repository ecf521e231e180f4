//! Rust symbol names as paths, for messages.

/// A Rust symbol as its path `a::b::c`, for messages (not a full demangler):
/// - a v0 symbol (`_R…`): its identifiers joined with `::`, disambiguators, back-references and
///   const values (each up to the next `_`) skipped; an identifier whose length runs past the
///   name ends the path (so a suffix such as `.llvm.123` is no identifier);
/// - a legacy symbol (`_ZN…E`): its identifiers joined with `::` (one whose length runs past
///   the name cut at its end), its hash (`h` and 16 lowercase hex digits, last) left out, and
///   `$LT$`, `$GT$`, `$u20$`, `$RF$`, `$C$` and `..` read as `<`, `>`, ` `, `&`, `,` and `::`;
/// - anything else, a v0 symbol without identifiers or a legacy one whose path is empty, as it
///   is.
#[must_use]
pub fn demangle(name: &str) -> String {
    let path = match (name.strip_prefix("_R"), name.strip_prefix("_ZN")) {
        (Some(body), _) => v0_path(body),
        (None, Some(body)) => legacy_path(body),
        (None, None) => None,
    };
    path.unwrap_or_else(|| name.to_owned())
}

/// A v0 symbol's path from its `body` (the name after `_R`); `None` without identifiers.
fn v0_path(body: &str) -> Option<String> {
    let bytes = body.as_bytes();
    let mut words = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_digit() {
            let digits = bytes[index..].iter().take_while(|byte| byte.is_ascii_digit()).count();
            let length: usize = body[index..index + digits].parse().unwrap_or(0);
            let mut start = index + digits;
            if bytes.get(start) == Some(&b'_') {
                start += 1;
            }
            let end = start.checked_add(length);
            let Some((word, end)) = end.and_then(|end| Some((body.get(start..end)?, end))) else {
                break;
            };
            words.push(word);
            index = end;
        } else if matches!(byte, b's' | b'B' | b'K') {
            // Runs to the next `_`.
            index = body[index..].find('_').map_or(bytes.len(), |end| index + end + 1);
        } else {
            index += 1;
        }
    }
    (!words.is_empty()).then(|| words.join("::"))
}

/// A legacy symbol's path from its `body` (the name after `_ZN`); `None` when it is empty.
fn legacy_path(body: &str) -> Option<String> {
    let body: Vec<char> = body.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(&character) = body.get(index) {
        if character.is_ascii_digit() {
            let digits: String = body[index..].iter().take_while(|c| c.is_ascii_digit()).collect();
            let length = digits.parse::<usize>().unwrap_or(usize::MAX);
            let mut start = index + digits.len();
            if body.get(start) == Some(&'_') {
                start += 1;
            }
            let end = start.saturating_add(length);
            words.push(body.get(start..end.min(body.len())).unwrap_or(&[]).iter().collect());
            index = end;
        } else {
            index += 1;
        }
    }
    let is_hash = |word: &str| {
        word.len() == 17
            && word.starts_with('h')
            && word[1..].bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    };
    if words.last().is_some_and(|word| is_hash(word)) {
        words.pop();
    }
    let mut text = words.join("::");
    for (old, new) in
        [("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","), ("..", "::")]
    {
        text = text.replace(old, new);
    }
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn rust_names_read_as_paths() {
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("_RNvNtCs1pEWN1xWsaF_7ppm_pep3log5print"), "ppm_pep::log::print");
        assert_eq!(demangle("FxDriverEntry"), "FxDriverEntry");
        assert_eq!(
            demangle("_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<u8>"
        );
        assert_eq!(demangle("_ZN"), "_ZN");
        assert_eq!(demangle("_ZN99abc"), "abc");
        assert_eq!(demangle("_RNvCs1_3foo3barB2_3baz"), "foo::bar::baz");
        assert_eq!(demangle("_ZN3a..b3c$C$d$u20$e$RF$"), "a::::c$C::$e&");
        // A v0 identifier's length running past the name ends the path; a legacy one is cut.
        assert_eq!(demangle("_RNvC3foo3bar.llvm.1234567890123"), "foo::bar");
        assert_eq!(demangle("_RNvC3foo3bar.459.rel"), "foo::bar");
        assert_eq!(demangle("_R3ab"), "_R3ab");
        assert_eq!(demangle("_RNvC3foo18446744073709551615x"), "foo");
        // v0 has no hashes: an identifier that looks like one is kept.
        assert_eq!(demangle("_RNvC3foo17h0123456789abcdef"), "foo::h0123456789abcdef");
        // An uppercase digit in the hash: no hash, kept.
        assert_eq!(
            demangle("_ZN4core3fmt9Arguments6as_str17h0123456789abcdeFE"),
            "core::fmt::Arguments::as_str::h0123456789abcdeF"
        );
    }
}
