//! The lexer of the module-graph test: Rust source with comments, strings and character
//! literals stripped, as identifiers and punctuation marks.

/// A token of stripped Rust source: an identifier or one punctuation mark (`::` is one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    Punct(&'static str),
    Other,
}

impl Token {
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self, Self::Ident(ident) if ident == name)
    }

    pub fn is_punct(&self, punct: &str) -> bool {
        matches!(self, Self::Punct(mark) if *mark == punct)
    }
}

/// The characters of one source file, with the skips the lexer needs.
struct Chars(Vec<char>);

fn ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Chars {
    /// The character at `index`, NUL past the end.
    fn at(&self, index: usize) -> char {
        self.0.get(index).copied().unwrap_or('\0')
    }

    /// The index after the quoted literal whose opening quote is at `start`.
    fn skip_quoted(&self, start: usize, quote: char) -> usize {
        let mut j = start + 1;
        while j < self.0.len() {
            match self.0[j] {
                '\\' => j += 2,
                c if c == quote => return j + 1,
                _ => j += 1,
            }
        }
        self.0.len()
    }

    /// The index after the raw string whose `#`s (or opening quote) start at `start`.
    fn skip_raw(&self, start: usize) -> usize {
        let mut j = start;
        let mut hashes = 0;
        while self.at(j) == '#' {
            hashes += 1;
            j += 1;
        }
        j += 1; // The opening quote.
        while j < self.0.len() {
            if self.0[j] == '"' && (1..=hashes).all(|k| self.at(j + k) == '#') {
                return j + 1 + hashes;
            }
            j += 1;
        }
        self.0.len()
    }

    /// The index after the character literal, lifetime or label whose quote is at `start`.
    fn skip_char_or_lifetime(&self, start: usize) -> usize {
        if self.at(start + 1) == '\\' {
            self.skip_quoted(start, '\'')
        } else if self.at(start + 2) == '\'' {
            start + 3
        } else {
            self.skip_ident(start + 1)
        }
    }

    /// The index after the identifier characters from `start`.
    fn skip_ident(&self, start: usize) -> usize {
        let mut j = start;
        while ident_continue(self.at(j)) {
            j += 1;
        }
        j
    }

    /// The index after the comment starting at `start` (`//` or `/*`, nested), or `None`.
    fn skip_comment(&self, start: usize) -> Option<usize> {
        match (self.at(start), self.at(start + 1)) {
            ('/', '/') => Some(
                self.0
                    .iter()
                    .skip(start)
                    .position(|&c| c == '\n')
                    .map_or(self.0.len(), |at| start + at),
            ),
            ('/', '*') => {
                let mut depth = 0usize;
                let mut j = start;
                while j < self.0.len() {
                    if self.at(j) == '/' && self.at(j + 1) == '*' {
                        depth += 1;
                        j += 2;
                    } else if self.at(j) == '*' && self.at(j + 1) == '/' {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            return Some(j);
                        }
                    } else {
                        j += 1;
                    }
                }
                Some(self.0.len())
            }
            _ => None,
        }
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.0[from..to].iter().collect()
    }
}

/// Splits `source` into tokens, dropping comments, string and character literals, lifetimes
/// and numbers.
pub fn tokenize(source: &str) -> Vec<Token> {
    let chars = Chars(source.chars().collect());
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.0.len() {
        let c = chars.at(i);
        if let Some(after) = chars.skip_comment(i) {
            i = after;
        } else if c.is_whitespace() || c.is_ascii_digit() {
            // Numbers are skipped whole (`0x1F`, `1_000u32`).
            i = if c.is_ascii_digit() { chars.skip_ident(i) } else { i + 1 };
        } else if c == '"' {
            i = chars.skip_quoted(i, '"');
        } else if c == '\'' {
            i = chars.skip_char_or_lifetime(i);
        } else if ident_start(c) {
            let start = i;
            i = chars.skip_ident(i);
            let next = chars.at(i);
            match chars.text(start, i).as_str() {
                "r" | "br" | "cr"
                    if next == '"' || (next == '#' && !ident_start(chars.at(i + 1))) =>
                {
                    i = chars.skip_raw(i);
                }
                "r" if next == '#' => {
                    // A raw identifier: `r#name`.
                    let name = i + 1;
                    i = chars.skip_ident(name);
                    tokens.push(Token::Ident(chars.text(name, i)));
                }
                "b" | "c" if next == '"' => i = chars.skip_quoted(i, '"'),
                "b" if next == '\'' => i = chars.skip_char_or_lifetime(i),
                ident => tokens.push(Token::Ident(ident.to_owned())),
            }
        } else if c == ':' && chars.at(i + 1) == ':' {
            tokens.push(Token::Punct("::"));
            i += 2;
        } else {
            let punct = ["{", "}", ",", "*", ";", "#", "[", "]", "(", ")", "<", "$", ".", "!"]
                .into_iter()
                .find(|mark| mark.starts_with(c));
            tokens.push(punct.map_or(Token::Other, Token::Punct));
            i += 1;
        }
    }
    tokens
}
