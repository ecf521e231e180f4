//! KMDF 1.31 as the driver is built against it: the function table's size
//! (`WdfFunctionTableNumEntries`) and each index's function name, read from the Windows-target
//! check's header, `tools/windows-check/include/kmdf-1.31.h` (which `ppm-sim` and the KMDF
//! stub's build read too). A leaf: it uses no other module of the runner.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repository's root (the binary lives in `<root>/target/<profile>/`; else the current
/// directory's ancestors that hold `tools/image`).
pub fn repository() -> PathBuf {
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|dir| dir.join("tools/image/requirements.txt").is_file())
            .map(Path::to_path_buf)
    });
    from_exe
        .or_else(|| {
            std::env::current_dir().ok().and_then(|dir| {
                dir.ancestors()
                    .find(|dir| dir.join("tools/image/requirements.txt").is_file())
                    .map(Path::to_path_buf)
            })
        })
        .unwrap_or_else(|| PathBuf::from("."))
}

/// KMDF 1.31's function names by table index and its `WdfFunctionTableNumEntries` (the
/// function table's size), from the Windows-target check's header, read once.
pub fn kmdf_header() -> Result<(HashMap<u64, String>, u64), String> {
    let header = repository().join("tools/windows-check/include/kmdf-1.31.h");
    let text = std::fs::read_to_string(&header)
        .map_err(|error| format!("{}: {error}", header.display()))?;
    let count = kmdf_function_count(&text)
        .ok_or_else(|| format!("{}: no WdfFunctionTableNumEntries", header.display()))?;
    Ok((kmdf_names(&text), count))
}

/// The function names by table index in the header's `text` (`WdfXxxTableIndex = N`).
fn kmdf_names(text: &str) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    for line in text.lines() {
        let Some(at) = line.find("TableIndex") else { continue };
        let before = &line[..at];
        let start =
            before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let name = &before[start..];
        if !name.starts_with("Wdf") || name == "WdfFunction" {
            continue;
        }
        let rest = line[at + "TableIndex".len()..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else { continue };
        let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
        if let Ok(index) = digits.parse::<u64>() {
            names.insert(index, name.to_owned());
        }
    }
    names
}

/// `WdfFunctionTableNumEntries = N` in the header's `text`.
fn kmdf_function_count(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line
            .trim_start()
            .strip_prefix("WdfFunctionTableNumEntries")?
            .trim_start()
            .strip_prefix('=')?;
        let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}
