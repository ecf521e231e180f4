//! The `ppm-sim` command line (see `design.md`):
//!
//! - `ppm-sim` — the built-in default scenario, as a table and the checks.
//! - `ppm-sim run FILE.toml [--json]` — a scenario file.
//! - `ppm-sim validate [--json]` — every built-in scenario.
//! - `ppm-sim bench [--iterations N] [--processors P] [--notification NAME]` — PPM
//!   notifications through the C ABI (`FEEDBACK_READ` by default), round robin over `P`
//!   registered processors.
//! - `ppm-sim --help`.
//!
//! Exit status: 0 every check passed, 1 a check failed, 2 unusable input (one line on stderr
//! naming the file, the field and what was expected; nothing on stdout).

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use crate::report::Report;
use crate::scenario::Scenario;
use crate::{bench, builtin};

/// Every check passed.
pub const EXIT_PASSED: u8 = 0;
/// A check failed.
pub const EXIT_FAILED: u8 = 1;
/// Unusable input.
pub const EXIT_USAGE: u8 = 2;

/// The default `bench` iteration count.
pub const DEFAULT_ITERATIONS: u64 = 1_000_000;

const USAGE: &str = "\
ppm-sim: PoFx emulator and conformance checks for the ppm-pep processor PEP

usage:
  ppm-sim                          run the built-in default scenario (8 processors)
  ppm-sim run FILE.toml [--json]   run a scenario file
  ppm-sim validate [--json]        run every built-in scenario (the conformance suite)
  ppm-sim bench [--iterations N] [--processors P] [--notification NAME]
                                   time N calls through the C ABI (default 1000000), round
                                   robin over P registered processors (1..=2048, default 1);
                                   NAME: feedback-read (default), query-capabilities,
                                   query-feedback-counters, query-perf-capabilities,
                                   query-domain-info, platform-counter-read (the baseline:
                                   only the platform's two counter reads)
  ppm-sim --help                   this text

exit status: 0 every check passed, 1 a check failed, 2 unusable input
";

/// Runs the command line `args` (without the program name), writing to `out` and `err`;
/// returns the exit status.
pub fn main(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match dispatch(args, out) {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "ppm-sim: {message}");
            EXIT_USAGE
        }
    }
}

const fn verdict(passed: bool) -> u8 {
    if passed { EXIT_PASSED } else { EXIT_FAILED }
}

fn dispatch(args: &[OsString], out: &mut dyn Write) -> Result<u8, String> {
    let Some(command) = args.first() else {
        let scenario = builtin::get(builtin::DEFAULT).ok_or("the default scenario is missing")?;
        let report = crate::run(&scenario);
        let _ = out.write_all(report.to_text().as_bytes());
        return Ok(verdict(report.passed));
    };
    let rest = &args[1..];
    match command.to_str() {
        Some("--help" | "-h" | "help") => {
            let _ = out.write_all(USAGE.as_bytes());
            Ok(EXIT_PASSED)
        }
        Some("--version" | "-V") => {
            let _ = writeln!(out, "ppm-sim {}", env!("CARGO_PKG_VERSION"));
            Ok(EXIT_PASSED)
        }
        Some("run") => run_file(rest, out),
        Some("validate") => validate(rest, out),
        Some("bench") => run_bench(rest, out),
        _ => Err(format!("unknown command `{}`; try `ppm-sim --help`", command.to_string_lossy())),
    }
}

fn run_file(args: &[OsString], out: &mut dyn Write) -> Result<u8, String> {
    let mut json = false;
    let mut file: Option<&OsString> = None;
    for arg in args {
        match arg.to_str() {
            Some("--json") => json = true,
            Some(option) if option.starts_with('-') && option.len() > 1 => {
                return Err(format!(
                    "run: unknown option `{option}`; usage: ppm-sim run FILE.toml [--json]"
                ));
            }
            _ if file.is_none() => file = Some(arg),
            _ => {
                return Err(format!(
                    "run: unexpected argument `{}`; usage: ppm-sim run FILE.toml [--json]",
                    arg.to_string_lossy()
                ));
            }
        }
    }
    let file = file.ok_or("run: missing scenario file; usage: ppm-sim run FILE.toml [--json]")?;
    let scenario = load(Path::new(file))?;
    let report = crate::run(&scenario);
    write_report(&report, json, out)?;
    Ok(verdict(report.passed))
}

/// The largest scenario file `ppm-sim run` reads (4 MiB: some 40 000 phases).
pub const MAX_SCENARIO_BYTES: u64 = 4 * 1024 * 1024;

/// Reads and validates a scenario file; errors name the file.
///
/// # Errors
/// A one-line message: `FILE: cannot read: …` or `FILE: field `…`: expected …`.
pub fn load(path: &Path) -> Result<Scenario, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)
        .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
    let mut bytes = Vec::new();
    // At most one byte past the limit is read: a device or a huge file is refused, not slurped.
    file.take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_SCENARIO_BYTES {
        return Err(format!(
            "{}: larger than {MAX_SCENARIO_BYTES} bytes, the limit of a scenario file",
            path.display()
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: not UTF-8 text (TOML files are UTF-8)", path.display()))?;
    Scenario::from_toml_str(&text).map_err(|error| format!("{}: {error}", path.display()))
}

fn write_report(report: &Report, json: bool, out: &mut dyn Write) -> Result<(), String> {
    if json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|error| format!("cannot encode the report: {error}"))?;
        let _ = writeln!(out, "{text}");
    } else {
        let _ = out.write_all(report.to_text().as_bytes());
    }
    Ok(())
}

fn validate(args: &[OsString], out: &mut dyn Write) -> Result<u8, String> {
    let mut json = false;
    for arg in args {
        match arg.to_str() {
            Some("--json") => json = true,
            _ => {
                return Err(format!(
                    "validate: unexpected argument `{}`; usage: ppm-sim validate [--json]",
                    arg.to_string_lossy()
                ));
            }
        }
    }
    let suite = crate::validate();
    if json {
        let text = serde_json::to_string_pretty(&suite)
            .map_err(|error| format!("cannot encode the report: {error}"))?;
        let _ = writeln!(out, "{text}");
    } else {
        let _ = out.write_all(suite.to_text().as_bytes());
    }
    Ok(verdict(suite.passed))
}

fn run_bench(args: &[OsString], out: &mut dyn Write) -> Result<u8, String> {
    const BENCH_USAGE: &str =
        "usage: ppm-sim bench [--iterations N] [--processors P] [--notification NAME]";
    let mut iterations = DEFAULT_ITERATIONS;
    let mut processors = 1;
    let mut notification = bench::Notification::FeedbackRead;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy();
        let (option, inline) = match arg.split_once('=') {
            Some((option, value)) => (option, Some(value.to_owned())),
            None => (arg.as_ref(), None),
        };
        if !matches!(option, "--iterations" | "--processors" | "--notification") {
            return Err(format!("bench: unexpected argument `{arg}`; {BENCH_USAGE}"));
        }
        let value = match inline {
            Some(value) => value,
            None => args
                .next()
                .map(|value| value.to_string_lossy().into_owned())
                .ok_or_else(|| format!("bench: {option} needs a value; {BENCH_USAGE}"))?,
        };
        match option {
            "--iterations" => {
                iterations = value
                    .parse::<u64>()
                    .ok()
                    .filter(|count| (1..=10_000_000_000).contains(count))
                    .ok_or_else(|| {
                        format!("bench: --iterations: expected an integer in 1..=10000000000, found `{value}`")
                    })?;
            }
            "--processors" => {
                processors = value
                    .parse::<u32>()
                    .ok()
                    .filter(|count| (1..=bench::MAX_PROCESSORS).contains(count))
                    .ok_or_else(|| {
                        format!(
                            "bench: --processors: expected an integer in 1..={}, found `{value}`",
                            bench::MAX_PROCESSORS
                        )
                    })?;
            }
            _ => {
                notification = bench::Notification::from_name(&value).ok_or_else(|| {
                    let names: Vec<&str> =
                        bench::Notification::CHOICES.iter().map(|(name, _)| *name).collect();
                    format!(
                        "bench: --notification: expected one of {}, found `{value}`",
                        names.join(", ")
                    )
                })?;
            }
        }
    }
    let result = bench::run(iterations, processors, notification)
        .map_err(|message| format!("bench: {message}"))?;
    let _ = writeln!(
        out,
        "bench: {} {} calls through the C ABI over {} processor{} in {:.3} ms: {:.2} ns per call",
        result.iterations,
        notification.windows_name(),
        result.processors,
        if result.processors == 1 { "" } else { "s" },
        result.elapsed.as_secs_f64() * 1e3,
        result.nanoseconds_per_call()
    );
    if !result.served {
        let _ = writeln!(out, "bench: the engine refused some calls");
        return Ok(EXIT_FAILED);
    }
    Ok(EXIT_PASSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> (u8, String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let code = main(&args, &mut out, &mut err);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn usage_errors_are_one_line_and_exit_2() {
        for args in [
            &["frobnicate"][..],
            &["run"],
            &["run", "/nonexistent/x.toml"],
            &["bench", "--iterations", "zero"],
            &["bench", "--processors", "4096"],
            &["bench", "--notification", "idle-execute"],
            &["bench", "--processors"],
            &["validate", "x"],
        ] {
            let (code, out, err) = cli(args);
            assert_eq!(code, EXIT_USAGE, "{args:?}");
            assert!(out.is_empty(), "{args:?}: {out}");
            assert!(
                err.starts_with("ppm-sim: ") && err.ends_with('\n') && err.lines().count() == 1,
                "{args:?}: {err}"
            );
        }
        let (code, out, _) = cli(&["--help"]);
        assert_eq!(code, EXIT_PASSED);
        assert!(out.contains("ppm-sim run FILE.toml"));
    }

    #[test]
    fn bench_takes_processors_and_a_notification() {
        let (code, out, err) = cli(&[
            "bench",
            "--iterations=1000",
            "--processors",
            "3",
            "--notification",
            "query-domain-info",
        ]);
        assert_eq!(code, EXIT_PASSED, "{err}");
        assert!(
            out.starts_with("bench: 1000 PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO calls through the C ABI over 3 processors in "),
            "{out}"
        );
        let (code, out, _) =
            cli(&["bench", "--iterations", "10", "--notification=platform-counter-read"]);
        assert_eq!(code, EXIT_PASSED);
        assert!(
            out.contains("baseline platform counter read calls")
                && out.contains("over 1 processor in"),
            "{out}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_without_reading_it_all() {
        let path =
            std::env::temp_dir().join(format!("ppm-sim-cli-big-{}.toml", std::process::id()));
        let comment = "#".repeat(usize::try_from(MAX_SCENARIO_BYTES).expect("fits") + 1);
        std::fs::write(&path, comment).expect("temporary file");
        let (code, out, err) = cli(&["run", path.to_str().expect("UTF-8 path")]);
        let _ = std::fs::remove_file(&path);
        assert_eq!(code, EXIT_USAGE);
        assert!(out.is_empty());
        assert!(
            err.ends_with("larger than 4194304 bytes, the limit of a scenario file\n"),
            "{err}"
        );
        // A device that never ends is refused the same way.
        if Path::new("/dev/zero").exists() {
            let (code, _, err) = cli(&["run", "/dev/zero"]);
            assert_eq!(code, EXIT_USAGE, "{err}");
            assert!(err.contains("the limit of a scenario file"), "{err}");
        }
    }

    #[test]
    fn a_bad_file_names_the_file_and_the_field() {
        let path =
            std::env::temp_dir().join(format!("ppm-sim-cli-test-{}.toml", std::process::id()));
        std::fs::write(&path, "name = \"x\"\n[platform]\nprocessors = 5000\nnominal_mhz = 2000\n[pofx]\nduration_ms = 10\n")
            .expect("temporary file");
        let (code, out, err) = cli(&["run", path.to_str().expect("UTF-8 path")]);
        let _ = std::fs::remove_file(&path);
        assert_eq!(code, EXIT_USAGE);
        assert!(out.is_empty());
        assert_eq!(
            err,
            format!(
                "ppm-sim: {}: field `platform.processors`: expected an integer in 1..=2048, found 5000\n",
                path.display()
            )
        );
    }
}
