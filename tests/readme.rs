//! README.md and the pages under `docs/` stay true.
//!
//! - Every relative link in `README.md` and `docs/*.md` resolves to a file or directory of the
//!   repository, and a `#anchor` to a heading of its page (GitHub's heading slugs); every page
//!   under `docs/` is linked from README.
//! - README stays shorter than [`README_MAX_LINES`]: a newcomer reads it in five minutes.
//! - Every example of `ppm-sim`'s output is what the command prints today. An example is the
//!   fenced block after a line `<!-- ppm-sim output: ARGS -->` (ARGS: the arguments after
//!   `cargo run -p ppm-sim --`, split on spaces; none for the default scenario). The command runs
//!   in-process through `ppm_sim::cli::main` from the repository root; its output is its
//!   standard output followed by its standard error. A line [`ELISION`] stands for one or more
//!   lines left out; every other line must be an output line (trailing spaces ignored), in order,
//!   lines not separated by an elision adjacent, and the block's first and last lines the
//!   output's own unless an elision stands there.
//!
//! Markdown is read with a few rules, not a full parser: fenced code blocks (```` ``` ```` and
//! `~~~`), inline code spans and HTML comments hold no links; a link is `](target)` or a
//! reference definition `[label]: target` at the start of a line; a target with `://` or
//! `mailto:` is external and not checked. The self-tests at the end show each check failing on a
//! broken input.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ppm_sim::cli;

/// README.md has fewer lines than this.
const README_MAX_LINES: usize = 300;

/// The line of an example block that stands for output left out.
const ELISION: &str = "...";

/// The start of the comment that marks the next fenced block as `ppm-sim`'s output.
const OUTPUT_MARKER: &str = "<!-- ppm-sim output:";

/// Pages README links to that other branches are adding. While one is absent, a link to it is
/// not an error; once it exists, [`pages_being_added_are_not_there_yet`] fails until it is taken
/// off this list, so that its links are checked like every other.
const PAGES_BEING_ADDED: &[&str] = &[];

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`, as (path relative to the root, text), README first.
fn pages() -> Vec<(String, String)> {
    let read = |rel: &str| std::fs::read_to_string(root().join(rel)).expect(rel);
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("a docs/ entry").file_name().to_string_lossy().into_owned())
        .filter(|name| Path::new(name).extension().is_some_and(|ext| ext == "md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    let mut pages = vec![("README.md".to_owned(), read("README.md"))];
    pages.extend(docs.into_iter().map(|rel| {
        let text = read(&rel);
        (rel, text)
    }));
    pages
}

/// `text` with fenced code blocks, inline code spans and HTML comments replaced by spaces
/// (newlines kept, so byte offsets and line numbers stay those of `text`). With `keep_spans`,
/// inline code spans stay (heading text keeps its code).
fn blank_code(text: &str, keep_spans: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let opens = if trimmed.starts_with("```") {
            Some("```")
        } else if trimmed.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, opens) {
            (None, Some(marker)) => {
                fence = Some(marker);
                out.push_str(&blank(line));
            }
            (Some(open), Some(marker)) if open == marker => {
                fence = None;
                out.push_str(&blank(line));
            }
            (Some(_), _) => out.push_str(&blank(line)),
            (None, None) => out.push_str(line),
        }
    }
    let out = blank_between(&out, "<!--", "-->");
    if keep_spans { out } else { blank_code_spans(&out) }
}

/// Every character but newlines as a space.
fn blank(text: &str) -> String {
    text.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect()
}

/// Blanks everything from each `open` to the next `close`, both included.
fn blank_between(text: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let Some(len) = rest[start..].find(close).map(|end| end + close.len()) else { break };
        out.push_str(&rest[..start]);
        out.push_str(&blank(&rest[start..start + len]));
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    out
}

/// Blanks inline code spans: a run of N backticks up to the next run of exactly N (which may be
/// on a later line of the paragraph). A run without its closing run is left as it is.
fn blank_code_spans(text: &str) -> String {
    let bytes = text.as_bytes();
    let run_at = |at: usize| bytes[at..].iter().take_while(|&&b| b == b'`').count();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] != b'`' {
            cursor += 1;
            continue;
        }
        let opening = run_at(cursor);
        let mut search = cursor + opening;
        let close = loop {
            match bytes[search..].iter().position(|&b| b == b'`') {
                None => break None,
                Some(skip) => {
                    let run = search + skip;
                    let length = run_at(run);
                    if length == opening {
                        break Some(run);
                    }
                    search = run + length;
                }
            }
        };
        match close {
            Some(run) => {
                out.push_str(&text[copied..cursor]);
                out.push_str(&blank(&text[cursor..run + opening]));
                copied = run + opening;
                cursor = run + opening;
            }
            None => cursor += opening,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every link target of a page outside code, with its line: `](target)` and `[label]: target`.
fn links(text: &str) -> Vec<(usize, String)> {
    let clean = blank_code(text, false);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = clean[from..].find("](") {
        let start = from + at + 2;
        let end = clean[start..].find(')').map_or(clean.len(), |e| start + e);
        let target = clean[start..end].split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        found.push((line_of(text, start), target.to_owned()));
        from = start;
    }
    let mut offset = 0;
    for line in clean.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix('[')
            && let Some((label, target)) = rest.split_once("]:")
            && !label.is_empty()
            && !label.contains(']')
        {
            let target = target.split_whitespace().next().unwrap_or("");
            found.push((line_of(text, offset), target.to_owned()));
        }
        offset += line.len();
    }
    found
}

/// GitHub's anchor for a heading: lower case, letters, digits, `-` and `_` kept, spaces turned
/// into `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (`#` headings outside code), a repeated slug numbered as
/// GitHub does (`name`, `name-1`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for line in blank_code(text, true).lines() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#'));
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 { base.clone() } else { format!("{base}-{count}") };
        *count += 1;
        anchors.insert(anchor);
    }
    anchors
}

/// `base` joined with `relative`, `.` and `..` resolved; `None` when it leaves the root.
fn resolve(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    parts.pop(); // the page itself
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// What a link may point at: `Some(text)` for an existing page (text for its anchors), `Some("")`
/// for another existing file or directory, `None` when nothing is there.
type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// Every broken link of page `rel`, as one line each. Pages on [`PAGES_BEING_ADDED`] that do not
/// exist yet are tolerated.
fn broken_links(rel: &str, text: &str, lookup: &Lookup<'_>) -> Vec<String> {
    let mut broken = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) =
            target.split_once('#').map_or((target.as_str(), None), |(p, a)| (p, Some(a)));
        let (resolved, content) = if path.is_empty() {
            (rel.to_owned(), Some(text.to_owned()))
        } else {
            let Some(resolved) = resolve(rel, path) else {
                broken.push(format!("{rel}:{line}: `{target}` leaves the repository"));
                continue;
            };
            let content = lookup(&resolved);
            (resolved, content)
        };
        let Some(content) = content else {
            if !PAGES_BEING_ADDED.contains(&resolved.as_str()) {
                broken.push(format!("{rel}:{line}: `{target}`: no file {resolved}"));
            }
            continue;
        };
        if let Some(anchor) = anchor
            && Path::new(&resolved).extension().is_some_and(|ext| ext == "md")
            && !anchors(&content).contains(anchor)
        {
            broken.push(format!("{rel}:{line}: `{target}`: {resolved} has no heading #{anchor}"));
        }
    }
    broken
}

/// The file system as a [`Lookup`].
fn on_disk(resolved: &str) -> Option<String> {
    let path = root().join(resolved);
    if path.is_file() {
        Some(if path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("md")) {
            std::fs::read_to_string(&path).ok()?
        } else {
            String::new()
        })
    } else if path.is_dir() {
        Some(String::new())
    } else {
        None
    }
}

/// Every example block of a page: (line of the marker, the arguments, the block's lines).
fn examples(text: &str) -> Vec<(usize, Vec<String>, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix(OUTPUT_MARKER) else { continue };
        let args = rest.trim_end_matches("-->").split_whitespace().map(str::to_owned).collect();
        let mut block = lines[index + 1..].iter().skip_while(|l| l.trim().is_empty());
        let opened = block.next().is_some_and(|l| l.trim_start().starts_with("```"));
        assert!(opened, "line {}: `{OUTPUT_MARKER}` is not followed by a fenced block", index + 1);
        let body = block
            .take_while(|l| !l.trim_start().starts_with("```"))
            .map(|l| (*l).to_owned())
            .collect();
        found.push((index + 1, args, body));
    }
    found
}

/// Where `expected` (with [`ELISION`] lines) does not match `actual`, one message; `None` when
/// it does.
fn example_mismatch(expected: &[String], actual: &[&str]) -> Option<String> {
    let actual: Vec<&str> = actual.iter().map(|l| l.trim_end()).collect();
    let mut position = 0; // the first actual line the next expected line may be
    let mut elided = false; // an elision stands before the next expected line
    let mut first = true;
    for line in expected {
        let line = line.trim_end();
        if line.trim() == ELISION {
            elided = true;
            continue;
        }
        let found = if elided {
            actual[position..].iter().position(|a| *a == line).map(|k| position + k)
        } else {
            actual.get(position).filter(|a| **a == line).map(|_| position)
        };
        let Some(at) = found else {
            let why = if !actual.contains(&line) {
                "is not printed by the command"
            } else if elided {
                "is not printed (after the lines matched before it)"
            } else if first {
                "is not the first line printed (an elision `...` before it would allow lines before)"
            } else {
                "does not follow the line before it (lines left out need an elision `...`)"
            };
            return Some(format!("`{line}` {why}"));
        };
        position = at + 1;
        elided = false;
        first = false;
    }
    if !elided && position < actual.len() {
        return Some(format!(
            "the output goes on after the example's last line (`{}` is next; end the example with `...`)",
            actual[position]
        ));
    }
    None
}

/// Runs `ppm-sim ARGS` in-process: its standard output followed by its standard error.
fn ppm_sim_output(args: &[String]) -> String {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let _ = cli::main(&args, &mut out, &mut err);
    out.extend(err);
    String::from_utf8(out).expect("ppm-sim prints UTF-8")
}

#[test]
fn every_link_resolves() {
    let broken: Vec<String> =
        pages().iter().flat_map(|(rel, text)| broken_links(rel, text, &on_disk)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_linked_from_readme() {
    let pages = pages();
    let (_, readme) = &pages[0];
    let linked: BTreeSet<String> = links(readme)
        .into_iter()
        .filter_map(|(_, target)| resolve("README.md", target.split('#').next().unwrap_or("")))
        .collect();
    let unlinked: Vec<&str> = pages[1..]
        .iter()
        .map(|(rel, _)| rel.as_str())
        .filter(|rel| !linked.contains(*rel))
        .collect();
    assert!(unlinked.is_empty(), "pages README does not link: {unlinked:?}");
}

#[test]
fn pages_being_added_are_not_there_yet() {
    for page in PAGES_BEING_ADDED {
        assert!(
            !root().join(page).exists(),
            "{page} exists now: take it off PAGES_BEING_ADDED in tests/readme.rs so its links are checked"
        );
    }
}

/// Why README's text is too long to read in five minutes; `None` when it is not.
fn readme_too_long(readme: &str) -> Option<String> {
    let lines = readme.lines().count();
    (lines >= README_MAX_LINES).then(|| {
        format!("README.md has {lines} lines; keep it under {README_MAX_LINES}: move reference material into docs/")
    })
}

#[test]
fn readme_reads_in_five_minutes() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    if let Some(why) = readme_too_long(&readme) {
        panic!("{why}");
    }
}

#[test]
fn every_example_output_is_what_ppm_sim_prints() {
    let mut wrong = Vec::new();
    for (rel, text) in pages() {
        for (line, args, expected) in examples(&text) {
            let output = ppm_sim_output(&args);
            let actual: Vec<&str> = output.lines().collect();
            if let Some(why) = example_mismatch(&expected, &actual) {
                let command = if args.is_empty() {
                    "cargo run -p ppm-sim".to_owned()
                } else {
                    format!("cargo run -p ppm-sim -- {}", args.join(" "))
                };
                wrong.push(format!("{rel}:{line} ({command}): {why}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "examples that are not what ppm-sim prints today:\n{}",
        wrong.join("\n")
    );
    let (_, readme) = &pages()[0];
    let readme_examples = examples(readme);
    assert!(
        readme_examples.iter().any(|(_, args, _)| args.is_empty()),
        "README shows no output of `cargo run -p ppm-sim` marked `{OUTPUT_MARKER} -->`"
    );
}

/// The directories whose files may name a page and a section of it, and the file kinds read.
const QUOTING_DIRS: &[&str] =
    &["src", "engine/src", "caller/src", "sim/src", "scripts", "inf", "tools"];
const QUOTING_EXTENSIONS: &[&str] = &["rs", "sh", "ps1", "psm1", "inx", "c", "h"];

/// Every page a source file names, with the section it quotes: `README`, `README.md`,
/// `docs/NAME.md` or `docs\NAME.md`, optionally followed by `, "Section"` or ` "Section"` (a
/// section may wrap onto the next comment line). Returns (page relative to the root, section).
fn quoted_pages(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let preceded = i > 0
            && (bytes[i - 1].is_ascii_alphanumeric()
                || matches!(bytes[i - 1], b'/' | b'\\' | b'-' | b'_'));
        let page = if preceded {
            None
        } else if rest.starts_with("README") {
            let len = if rest.starts_with("README.md") { 9 } else { 6 };
            Some(("README.md".to_owned(), len))
        } else if rest.starts_with("docs/") || rest.starts_with("docs\\") {
            let name: String = rest[5..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            rest[5 + name.len()..]
                .starts_with(".md")
                .then(|| (format!("docs/{name}.md"), 5 + name.len() + 3))
        } else {
            None
        };
        let Some((page, len)) = page else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let after = rest[len..].trim_start_matches(',').trim_start_matches(' ');
        let section = after.strip_prefix('"').and_then(|quoted| quoted.split_once('"')).map(
            |(section, _)| {
                section
                    .split_whitespace()
                    .filter(|word| !matches!(*word, "#" | "//" | "///" | "//!" | ";"))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        );
        found.push((page, section));
        i += len;
    }
    found
}

/// Every file under `dir` (recursively) with one of [`QUOTING_EXTENSIONS`].
fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "target") {
                source_files(&path, files);
            }
        } else if path.extension().is_some_and(|ext| QUOTING_EXTENSIONS.iter().any(|e| ext == *e)) {
            files.push(path);
        }
    }
}

/// Where the quoted pages and sections do not exist, one line each.
fn missing_quotes(file: &str, text: &str, lookup: &Lookup<'_>) -> Vec<String> {
    let mut missing = Vec::new();
    for (page, section) in quoted_pages(text) {
        let Some(content) = lookup(&page) else {
            if !PAGES_BEING_ADDED.contains(&page.as_str()) {
                missing.push(format!("{file} names {page}, which does not exist"));
            }
            continue;
        };
        if let Some(section) = section
            && !anchors(&content).contains(&slug(&section))
        {
            missing
                .push(format!("{file} quotes \"{section}\" of {page}, which has no such heading"));
        }
    }
    missing
}

#[test]
fn every_page_and_section_the_sources_quote_exists() {
    let mut files = Vec::new();
    for dir in QUOTING_DIRS {
        source_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 10, "found only {files:?}");
    let mut quotes = 0;
    let mut missing = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let rel = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
        quotes += quoted_pages(&text).len();
        missing.extend(missing_quotes(&rel, &text, &on_disk));
    }
    assert!(missing.is_empty(), "stale references to the documentation:\n{}", missing.join("\n"));
    assert!(quotes >= 3, "only {quotes} references found: is the scan still reading the sources?");
}

// Self-tests: each check refuses a broken input.

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn self_test_a_missing_file_and_a_missing_heading_are_broken() {
    let page = "# Page\n\n## What the driver does in `DriverEntry`\n\n[a](missing.md), [b](#no-such-heading),\n\
                [c](other.md#there), [d](other.md#gone), [e](#what-the-driver-does-in-driverentry),\n\
                [f](../../outside.md), [g](https://example.invalid/x), [h](dir/)\n\n[ref]: also-missing.txt\n";
    let lookup = |resolved: &str| match resolved {
        "docs/other.md" => Some("# There\n".to_owned()),
        "docs/dir" => Some(String::new()),
        _ => None,
    };
    let broken = broken_links("docs/page.md", page, &lookup);
    assert_eq!(broken.len(), 5, "{broken:#?}");
    for needle in
        ["missing.md", "#no-such-heading", "#gone", "leaves the repository", "also-missing.txt"]
    {
        assert!(broken.iter().any(|b| b.contains(needle)), "{needle} not reported: {broken:#?}");
    }
    assert!(broken[0].starts_with("docs/page.md:5:"), "{broken:#?}");
}

#[test]
fn self_test_links_in_code_and_comments_are_not_links() {
    let page =
        "`[a](missing.md)` and ``[b](`x`)`` <!-- [c](gone.md) -->\n\n```md\n[d](gone.md)\n```\n";
    assert!(links(page).is_empty(), "{:?}", links(page));
}

#[test]
fn self_test_slugs_are_githubs() {
    assert_eq!(
        slug("What the driver does in `DriverEntry`"),
        "what-the-driver-does-in-driverentry"
    );
    assert_eq!(
        slug("Verified here (Linux) / needs Windows (not verified)"),
        "verified-here-linux--needs-windows-not-verified"
    );
    assert_eq!(
        slug("The state key (written by the driver)"),
        "the-state-key-written-by-the-driver"
    );
    let repeated = anchors("# A\n## Notes\n## Notes\n```\n# not a heading\n```\n");
    assert_eq!(repeated.into_iter().collect::<Vec<_>>(), ["a", "notes", "notes-1"]);
}

#[test]
fn self_test_an_example_that_is_not_the_output_is_refused() {
    let actual = ["head", "a", "b", "c", "summary"];
    assert_eq!(example_mismatch(&lines("head\na\n...\nsummary"), &actual), None);
    assert_eq!(example_mismatch(&lines("...\nb  \n..."), &actual), None);
    // a line the command does not print
    let wrong = example_mismatch(&lines("head\n...\nd\n...\nsummary"), &actual);
    assert_eq!(wrong.as_deref(), Some("`d` is not printed by the command"));
    // a line left out without an elision
    assert!(example_mismatch(&lines("head\na\nc\n...\nsummary"), &actual).is_some());
    // out of order
    assert!(example_mismatch(&lines("head\n...\nc\n...\nb\n...\nsummary"), &actual).is_some());
    // lines before the first, or after the last, without an elision
    assert!(example_mismatch(&lines("a\n...\nsummary"), &actual).is_some());
    assert!(example_mismatch(&lines("head\n...\nc"), &actual).is_some());
}

#[test]
fn self_test_a_long_readme_is_refused() {
    assert_eq!(readme_too_long(&"line\n".repeat(299)), None);
    assert!(readme_too_long(&"line\n".repeat(300)).is_some());
}

#[test]
fn self_test_a_stale_quote_in_a_source_is_refused() {
    let source = "//! see README, \"Validate\".\n# see docs\\registry.md, \"Registry\n#  configuration\"\n\
                  ; See docs/gone.md for more. fuzz/README.md is not ours.\n";
    assert_eq!(
        quoted_pages(source),
        [
            ("README.md".to_owned(), Some("Validate".to_owned())),
            ("docs/registry.md".to_owned(), Some("Registry configuration".to_owned())),
            ("docs/gone.md".to_owned(), None),
        ]
    );
    let lookup = |page: &str| match page {
        "README.md" => Some("# ppm-pep\n## Two commands\n".to_owned()),
        "docs/registry.md" => Some("# Registry configuration\n".to_owned()),
        _ => None,
    };
    let missing = missing_quotes("x.rs", source, &lookup);
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(missing[0].contains("\"Validate\" of README.md"), "{missing:#?}");
    assert!(missing[1].contains("docs/gone.md"), "{missing:#?}");
}
