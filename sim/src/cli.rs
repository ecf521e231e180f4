//! The `ppm-sim` command line (see `docs/cli.md`), parsed with `clap`:
//!
//! - `ppm-sim` — the built-in default scenario, as a table and the checks.
//! - `ppm-sim run FILE.toml [--json] [--trace FILE.csv] [--plot FILE.svg|FILE.png]
//!   [--plot-processors LIST] [--plot-view mhz|percent]` — a scenario file (`-`: standard
//!   input); the output files are written as [`crate::output`] says.
//! - `ppm-sim validate [NAME] [--json] [--list]` — every built-in scenario, one, or the list.
//! - `ppm-sim bench [--iterations N] [--processors P] [--notification NAME] [--arch ARCH]` — PPM
//!   notifications through the C ABI (`FEEDBACK_READ` by default), round robin over `P`
//!   registered processors.
//! - `ppm-sim --help`, `ppm-sim COMMAND --help`, `ppm-sim --version`.
//!
//! Exit status: 0 every check passed, 1 a check failed, 2 unusable input (one line on stderr
//! naming the file, the field and what was expected; nothing on stdout), or an output file
//! that could not be written after the run (the report is still printed; no existing file is
//! changed: see [`crate::output`]).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, Command};

use crate::image::{self, Handoff, PepBackend};
use crate::output::{self, Outputs};
use crate::plot::{self, PlotCollector};
use crate::pofx::RunOptions;
use crate::report::{Report, SuiteReport, plural};
use crate::scenario::Scenario;
use crate::text::escaped;
use crate::trace::TraceFile;
use crate::{bench, builtin};
use progress::Progress;

/// Every check passed.
pub const EXIT_PASSED: u8 = 0;
/// A check failed.
pub const EXIT_FAILED: u8 = 1;
/// Unusable input.
pub const EXIT_USAGE: u8 = 2;

/// The default `bench` iteration count.
pub const DEFAULT_ITERATIONS: u64 = 1_000_000;

/// The most `bench` iterations one run takes.
pub const MAX_ITERATIONS: u64 = 10_000_000_000;

/// The largest scenario file `ppm-sim run` reads (4 MiB: some 40 000 phases).
pub const MAX_SCENARIO_BYTES: u64 = 4 * 1024 * 1024;

const EXIT_STATUS_HELP: &str =
    "Exit status: 0 every check passed, 1 a check failed, 2 unusable input.";

const RUN_EXIT_STATUS_HELP: &str = "Exit status: 0 every check passed, 1 a check failed, 2 \
     unusable input, or an output file that could not be written (the report is still printed \
     and no existing file is changed).";

/// The parsed command line.
#[derive(Debug)]
enum Invocation {
    /// No command: the built-in default scenario.
    Default,
    /// `run FILE [--json] [--trace CSV] [--plot SVG|PNG] [--plot-processors LIST]
    /// [--plot-view mhz|percent]`.
    Run(RunRequest),
    /// `validate [NAME] [--list] [--json] [--pep engine|image] [--image FILE] [--verifier]`.
    Validate { name: Option<String>, list: bool, json: bool, pep: PepBackend, verifier: bool },
    /// `bench [--iterations N] [--processors P] [--notification NAME] [--arch ARCH]`.
    Bench {
        iterations: u64,
        /// `--pep image`: count the images' instructions instead (of both images, or only
        /// `architecture`'s when `--arch` was given).
        image: bool,
        arch_given: bool,
        processors: u32,
        notification: bench::Notification,
        architecture: bench::Architecture,
    },
}

/// What `run` was asked for.
#[derive(Debug)]
struct RunRequest {
    file: PathBuf,
    json: bool,
    trace: Option<PathBuf>,
    plot: Option<PathBuf>,
    plot_processors: Option<Vec<u32>>,
    plot_view: plot::View,
    pep: PepBackend,
    verifier: bool,
}

/// The `clap` command (the builder API: the derive macros emit `allow` attributes that the
/// workspace's `forbid` lints refuse).
fn command() -> Command {
    let json =
        |what: &'static str| Arg::new("json").long("json").action(ArgAction::SetTrue).help(what);
    let pep = || {
        Arg::new("pep")
            .long("pep")
            .value_name("PEP")
            .value_parser(["engine", "image"])
            .help("engine (default): the engine compiled for this host; image: the linked driver's machine code, ppm_pep.sys, under the dev-only image runner (docs/image-backend.md)")
    };
    let verifier = || {
        Arg::new("verifier")
            .long("verifier")
            .action(ArgAction::SetTrue)
            .help("With --pep image: hold the image to Driver Verifier's rules (IRQL per call, special pool and handles, a failure at every fallible call site, a fault at every counter access site, the FEEDBACK_READ instruction budget; docs/verifier.md)")
    };
    let image = || {
        Arg::new("image")
            .long("image")
            .value_name("FILE.sys")
            .requires("pep")
            .value_parser(clap::value_parser!(PathBuf))
            .help("The driver image for --pep image (default: target/driver-image/x64/ppm_pep.sys, or target/driver-image/arm64/ppm_pep.sys for an ARM64 scenario; scripts/check-driver-image.sh builds both, with the ppm_pep.map and stack.txt the image backend reads beside each)")
    };
    Command::new("ppm-sim")
        .version(env!("CARGO_PKG_VERSION"))
        .about("PoFx emulator and conformance checks for the ppm-pep processor PEP")
        .long_about(
            "PoFx emulator and conformance checks for the ppm-pep processor PEP.\n\n\
             Without a command, runs the built-in default scenario (8 processors).",
        )
        .after_help(EXIT_STATUS_HELP)
        .subcommand(
            Command::new("run")
                .about("Run a scenario file: the PEP against the emulated PoFx, then the checks")
                .arg(
                    Arg::new("file")
                        .value_name("FILE.toml")
                        .required(true)
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("The scenario file (TOML, at most 4 MiB); `-` reads standard input"),
                )
                .arg(json("Print the report as JSON"))
                .arg(
                    Arg::new("trace")
                        .long("trace")
                        .value_name("FILE.csv")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Write every OS read as a CSV row (time, processor, counter, counts, served, interval deltas, measured and true MHz); a regular file, not the scenario, replaced only when the run is done"),
                )
                .arg(
                    Arg::new("plot")
                        .long("plot")
                        .value_name("FILE.svg|FILE.png")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Draw every processor's % Processor Performance over the run (an overview), then measured against true MHz for the chosen ones; a regular file, not the scenario or the trace, replaced only when the run is done"),
                )
                .arg(
                    Arg::new("plot_processors")
                        .long("plot-processors")
                        .value_name("LIST")
                        .requires("plot")
                        // `-1` reaches the parser and its message, not clap's `-- -1` tip.
                        .allow_hyphen_values(true)
                        .value_parser(parse_processor_list)
                        .help("The processors to plot in detail, e.g. 0,5,63 (at most 16; default: the first 8; the overview shows all)"),
                )
                .arg(
                    Arg::new("plot_view")
                        .long("plot-view")
                        .value_name("VIEW")
                        .requires("plot")
                        .value_parser(plot::View::NAMES)
                        .help("The detail panels' unit: mhz (default): measured against true MHz; percent: % Processor Performance, measured over nominal as perfmon shows it"),
                )
                .arg(pep())
                .arg(image())
                .arg(verifier())
                .after_help(RUN_EXIT_STATUS_HELP),
        )
        .subcommand(
            Command::new("validate")
                .about("Run the built-in scenarios (the conformance suite), one of them, or list them")
                .arg(
                    Arg::new("name")
                        .value_name("NAME")
                        .help("Run only this built-in scenario and print its full report"),
                )
                .arg(
                    Arg::new("list")
                        .long("list")
                        .action(ArgAction::SetTrue)
                        .conflicts_with("name")
                        .help("List the built-in scenarios with their descriptions instead"),
                )
                .arg(json("Print the suite report (or the list) as JSON"))
                .arg(pep().conflicts_with("list"))
                .arg(image())
                .arg(verifier().conflicts_with("list"))
                .after_help(EXIT_STATUS_HELP),
        )
        .subcommand(bench_command())
}

fn parse_processor_list(value: &str) -> Result<Vec<u32>, String> {
    value
        .split(',')
        .map(|item| {
            item.trim().parse::<u32>().map_err(|_| {
                format!(
                    "expected processor indexes (0 or more) separated by commas, e.g. 0,5,63; \
                     `{}` is not one",
                    item.trim()
                )
            })
        })
        .collect()
}

fn parse_iterations(value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|count| (1..=MAX_ITERATIONS).contains(count))
        .ok_or_else(|| format!("expected an integer in 1..={MAX_ITERATIONS}"))
}

fn parse_processors(value: &str) -> Result<u32, String> {
    value
        .parse::<u32>()
        .ok()
        .filter(|count| (1..=bench::MAX_PROCESSORS).contains(count))
        .ok_or_else(|| format!("expected an integer in 1..={}", bench::MAX_PROCESSORS))
}

fn parse_notification(value: &str) -> Result<bench::Notification, String> {
    bench::Notification::from_name(value).ok_or_else(|| {
        let names: Vec<&str> = bench::Notification::CHOICES.iter().map(|(name, _)| *name).collect();
        format!("expected one of {}", names.join(", "))
    })
}

/// `ppm-sim bench`.
fn bench_command() -> Command {
    Command::new("bench")
        .about("Time PPM notifications through the C ABI, round robin over registered processors")
        .arg(
            Arg::new("iterations")
                .long("iterations")
                .value_name("N")
                .allow_hyphen_values(true)
                .value_parser(parse_iterations)
                .help("Calls to time (1..=10000000000) [default: 1000000]"),
        )
        .arg(
            Arg::new("processors")
                .long("processors")
                .value_name("P")
                .allow_hyphen_values(true)
                .value_parser(parse_processors)
                .help("Processors registered and called round robin (1..=2048) [default: 1]"),
        )
        .arg(
            Arg::new("notification")
                .long("notification")
                .value_name("NAME")
                .value_parser(parse_notification)
                .help(
                    "feedback-read (default), query-capabilities, \
                     query-feedback-counters, query-perf-capabilities, \
                     query-domain-info, or platform-counter-read (the baseline: only \
                     the platform's two counter reads)",
                ),
        )
        .arg(
            Arg::new("arch")
                .long("arch")
                .value_name("ARCH")
                .value_parser(["x64", "arm64"])
                .help("x64 (default: APERF/MPERF) or arm64 (the Activity Monitors); with --pep image: only that image (default: both)"),
        )
        .arg(
            Arg::new("pep")
                .long("pep")
                .value_name("PEP")
                .value_parser(["engine", "image"])
                .conflicts_with_all(["iterations", "processors", "notification"])
                .help("engine (default): time the engine through the C ABI; image: count the instructions each linked image executes per FEEDBACK_READ over a built-in scenario (steady-8 on x64, arm64 on ARM64), held to its budget (docs/verifier.md)"),
        )
        .after_help("Exit status: 0 every call served (with --pep image: every image within its budget), 1 a call refused (over budget), 2 unusable input.")
}

/// The PEP `--pep` and `--image` ask for.
fn backend(matches: &clap::ArgMatches) -> PepBackend {
    match matches.get_one::<String>("pep").map(String::as_str) {
        Some("image") => PepBackend::Image(matches.get_one::<PathBuf>("image").cloned()),
        _ => PepBackend::Engine,
    }
}

/// What `matches` asks for.
fn invocation(matches: &clap::ArgMatches) -> Invocation {
    match matches.subcommand() {
        Some(("run", run)) => Invocation::Run(RunRequest {
            file: run.get_one::<PathBuf>("file").cloned().unwrap_or_default(),
            json: run.get_flag("json"),
            trace: run.get_one::<PathBuf>("trace").cloned(),
            plot: run.get_one::<PathBuf>("plot").cloned(),
            plot_processors: run.get_one::<Vec<u32>>("plot_processors").cloned(),
            plot_view: run
                .get_one::<String>("plot_view")
                .and_then(|name| plot::View::from_name(name))
                .unwrap_or_default(),
            pep: backend(run),
            verifier: run.get_flag("verifier"),
        }),
        Some(("validate", validate)) => Invocation::Validate {
            name: validate.get_one::<String>("name").cloned(),
            list: validate.get_flag("list"),
            json: validate.get_flag("json"),
            pep: backend(validate),
            verifier: validate.get_flag("verifier"),
        },
        Some(("bench", bench)) => Invocation::Bench {
            image: bench.get_one::<String>("pep").is_some_and(|pep| pep == "image"),
            arch_given: bench.get_one::<String>("arch").is_some(),
            iterations: bench.get_one::<u64>("iterations").copied().unwrap_or(DEFAULT_ITERATIONS),
            processors: bench.get_one::<u32>("processors").copied().unwrap_or(1),
            notification: bench
                .get_one::<bench::Notification>("notification")
                .copied()
                .unwrap_or(bench::Notification::FeedbackRead),
            architecture: if bench.get_one::<String>("arch").is_some_and(|arch| arch == "arm64") {
                bench::Architecture::Arm64
            } else {
                bench::Architecture::X64
            },
        },
        _ => Invocation::Default,
    }
}

/// Runs the command line `args` (without the program name), writing to `out` and `err`;
/// returns the exit status.
pub fn main(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let program_and_args = std::iter::once(OsString::from("ppm-sim")).chain(args.iter().cloned());
    let matches = match command().try_get_matches_from(program_and_args) {
        Ok(matches) => matches,
        Err(error) => {
            return match error.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = write!(out, "{}", error.render());
                    EXIT_PASSED
                }
                _ => {
                    let _ = writeln!(err, "ppm-sim: {}", escaped(&one_line(&error, args)));
                    EXIT_USAGE
                }
            };
        }
    };
    match dispatch(invocation(&matches), out, err) {
        Ok(code) => code,
        Err(message) => {
            // Messages name files and values as given: escaped, so the line stays one line.
            let _ = writeln!(err, "ppm-sim: {}", escaped(&message));
            EXIT_USAGE
        }
    }
}

/// A `clap` error as the one line every usage error is: the message without clap's usage
/// block, then where the help is.
fn one_line(error: &clap::Error, args: &[OsString]) -> String {
    let rendered = error.render().to_string();
    let message = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty())
        .fold(String::new(), |mut message, line| {
            if !message.is_empty() {
                message.push_str(if line.starts_with("tip:") { "; " } else { " " });
            }
            message.push_str(line);
            message
        });
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let command = args
        .first()
        .and_then(|first| first.to_str())
        .filter(|first| matches!(*first, "run" | "validate" | "bench"));
    command.map_or_else(
        || format!("{message}; see `ppm-sim --help`"),
        |command| format!("{command}: {message}; see `ppm-sim {command} --help`"),
    )
}

const fn verdict(passed: bool) -> u8 {
    if passed { EXIT_PASSED } else { EXIT_FAILED }
}

fn dispatch(
    invocation: Invocation,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, String> {
    match invocation {
        Invocation::Default => {
            let scenario =
                builtin::get(builtin::DEFAULT).ok_or("the default scenario is missing")?;
            let report = crate::run(&scenario);
            let _ = out.write_all(report.to_text().as_bytes());
            Ok(verdict(report.passed))
        }
        Invocation::Run(request) => run_file(&request, out, err),
        Invocation::Validate { name, list, json, pep, verifier } => {
            validate(name.as_deref(), (list, json, verifier), &pep, out)
        }
        Invocation::Bench { image: true, arch_given, architecture, .. } => {
            bench_image(arch_given.then_some(architecture), out)
        }
        Invocation::Bench { iterations, processors, notification, architecture, .. } => {
            run_bench(iterations, processors, notification, architecture, out)
        }
    }
}

/// `--verifier` is for the image only.
fn verifier_needs_image(verifier: bool, pep: &PepBackend) -> Result<(), String> {
    if verifier && *pep == PepBackend::Engine {
        return Err(
            "--verifier needs --pep image (Driver Verifier's rules are held to the linked image)"
                .to_owned(),
        );
    }
    Ok(())
}

/// One scenario's report on the image; with `verifier`, under Driver Verifier's rules and
/// followed by the systematic runs (`crate::verify_image`), whose verdict joins the report.
fn run_on_image(
    scenario: &Scenario,
    options: &RunOptions,
    image_path: &std::path::Path,
    verifier: bool,
    progress: &Progress,
) -> Result<crate::report::Report, String> {
    if !verifier {
        return Ok(crate::run_image(scenario, options, image_path)?.report);
    }
    let (output, found) = crate::run_image_verified(scenario, options, image_path)?;
    let verdicts = crate::verify_image(
        &[(scenario, image_path.to_path_buf(), found)],
        &|label: &str, scenario: &Scenario| RunOptions {
            read_observer: Some(progress.scenario(label, scenario)),
            ..RunOptions::default()
        },
    )?;
    Ok(output.report.with_verifier(verdicts))
}

fn run_file(request: &RunRequest, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, String> {
    verifier_needs_image(request.verifier, &request.pep)?;
    let file = request.file.as_path();
    let (scenario, input) = if file.as_os_str() == "-" {
        let stdin = std::io::stdin();
        (read_scenario(stdin.lock(), "<stdin>")?, output::Input::Stdin)
    } else {
        (load(file)?, output::Input::File(file))
    };
    if matches!(request.pep, PepBackend::Image(_)) {
        let name =
            if file.as_os_str() == "-" { "<stdin>".to_owned() } else { file.display().to_string() };
        crate::image_limit::check_call_limit(&scenario, &name)?;
    }
    // Every output is checked, and its temporary file created, before the run: a long run
    // does not end in a usage error, and nothing existing is touched until the run is done.
    let collector = request
        .plot
        .as_ref()
        .map(|_| PlotCollector::new(&scenario, request.plot_processors.as_deref()))
        .transpose()?;
    let mut requests = Vec::new();
    if let Some(path) = &request.trace {
        requests.push(output::Request { flag: "--trace", path, extensions: &["csv"] });
    }
    if let Some(path) = &request.plot {
        requests.push(output::Request { flag: "--plot", path, extensions: &["svg", "png"] });
    }
    let mut outputs = Outputs::prepare(input, &requests)?;
    let trace = outputs.take_file("--trace").map(TraceFile::new);
    let progress = Progress::start();
    let mut observer = Some(progress.scenario(&scenario.name, &scenario));
    if let Some(collector) = &collector {
        observer = Some(collector.observer(observer));
    }
    if let Some(trace) = &trace {
        observer = Some(trace.observer(observer));
    }
    let options = RunOptions { read_observer: observer, ..RunOptions::default() };
    let report = match &request.pep {
        PepBackend::Engine => crate::run_with(&scenario, &options),
        PepBackend::Image(image) => {
            let image = image::image_for(&scenario, image.as_deref());
            // One run at a time: the image's two processes may spin.
            let options = RunOptions { handoff: Handoff::for_one_run_at_a_time()?, ..options };
            run_on_image(&scenario, &options, &image, request.verifier, &progress)?
        }
    };
    drop(progress);
    let written =
        write_files(request, (&scenario, &report), trace.as_deref(), collector.as_deref(), outputs);
    // The report is printed whether or not the files could be written.
    write_output(&report, request.json, || report.to_text(), out)?;
    let rows = written.map_err(|error| {
        format!("{error}; no output file was changed (the report is on stdout)")
    })?;
    if let (Some(rows), Some(path)) = (rows, &request.trace) {
        let _ = writeln!(
            err,
            "ppm-sim: trace: {rows} reads written to {}",
            escaped(&path.display().to_string())
        );
    }
    if let Some(path) = &request.plot {
        let _ = writeln!(err, "ppm-sim: plot written to {}", escaped(&path.display().to_string()));
    }
    Ok(verdict(report.passed))
}

/// Finishes the trace and draws the plot into their temporary files, then renames them into
/// place; returns the trace's rows.
fn write_files(
    request: &RunRequest,
    (scenario, report): (&Scenario, &Report),
    trace: Option<&TraceFile>,
    collector: Option<&PlotCollector>,
    outputs: Outputs,
) -> Result<Option<u64>, String> {
    let rows = match (trace, &request.trace) {
        (Some(trace), Some(path)) => Some(trace.finish(path)?),
        _ => None,
    };
    if let (Some(collector), Some(path)) = (collector, &request.plot) {
        let temporary = outputs.temporary("--plot").ok_or("--plot: no temporary file")?;
        let format = plot::Format::of(path)?;
        collector.write((scenario, report), request.plot_view, format, (temporary, path))?;
    }
    outputs.commit()?;
    Ok(rows)
}

/// Reads and validates a scenario file; errors name the file.
///
/// # Errors
/// A one-line message: `FILE: cannot read: …` or `FILE: line L, column C: field `…`: expected …`.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let file = std::fs::File::open(path)
        .map_err(|error| format!("{}: cannot read: {error}", path.display()))?;
    read_scenario(file, &path.display().to_string())
}

/// Reads at most [`MAX_SCENARIO_BYTES`] from `source` (named `name` in errors) and parses it.
fn read_scenario(source: impl Read, name: &str) -> Result<Scenario, String> {
    let mut bytes = Vec::new();
    // At most one byte past the limit is read: a device or a huge file is refused, not slurped.
    source
        .take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("{name}: cannot read: {error}"))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_SCENARIO_BYTES {
        return Err(format!(
            "{name}: larger than {MAX_SCENARIO_BYTES} bytes, the limit of a scenario file"
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{name}: not UTF-8 text (TOML files are UTF-8)"))?;
    Scenario::from_toml_str(&text).map_err(|error| format!("{name}: {error}"))
}

/// Writes `value` as pretty JSON, or `text()` as is.
fn write_output<T: serde::Serialize>(
    value: &T,
    json: bool,
    text: impl FnOnce() -> String,
    out: &mut dyn Write,
) -> Result<(), String> {
    if json {
        let encoded = crate::text::json_pretty(value)
            .map_err(|error| format!("cannot encode the report: {error}"))?;
        let _ = writeln!(out, "{encoded}");
    } else {
        let _ = out.write_all(text().as_bytes());
    }
    Ok(())
}

/// One entry of `validate --list`.
#[derive(Debug, serde::Serialize)]
struct ListedScenario {
    name: &'static str,
    processors: u32,
    description: String,
}

fn validate(
    name: Option<&str>,
    (list, json, verifier): (bool, bool, bool),
    pep: &PepBackend,
    out: &mut dyn Write,
) -> Result<u8, String> {
    verifier_needs_image(verifier, pep)?;
    if list {
        let listed: Vec<ListedScenario> = builtin::all()
            .into_iter()
            .map(|(name, scenario)| ListedScenario {
                name,
                processors: scenario.platform.processors,
                description: scenario.description.unwrap_or_default(),
            })
            .collect();
        let text = || {
            let width = listed.iter().map(|entry| entry.name.len()).max().unwrap_or(0);
            let mut text = String::new();
            for entry in &listed {
                let _ = writeln!(
                    text,
                    "{:<width$}  {:>4} processor{:<1}  {}",
                    entry.name,
                    entry.processors,
                    plural(entry.processors),
                    entry.description
                );
            }
            text
        };
        write_output(&listed, json, text, out)?;
        return Ok(EXIT_PASSED);
    }
    let progress = Progress::start();
    let suite = if let Some(name) = name {
        let scenario = builtin::get(name).ok_or_else(|| {
            format!("validate: no built-in scenario `{name}`; `ppm-sim validate --list` lists them")
        })?;
        let options = RunOptions {
            read_observer: Some(progress.scenario(&format!("validate {name}"), &scenario)),
            ..RunOptions::default()
        };
        match pep {
            PepBackend::Engine => SuiteReport::new(vec![crate::run_with(&scenario, &options)]),
            PepBackend::Image(image) => {
                let image = image::image_for(&scenario, image.as_deref());
                let options = RunOptions { handoff: Handoff::for_one_run_at_a_time()?, ..options };
                SuiteReport::new(vec![run_on_image(
                    &scenario, &options, &image, verifier, &progress,
                )?])
            }
        }
    } else {
        // The suite runs one scenario at a time (the verifier's pool shares processors).
        let handoff = match pep {
            PepBackend::Engine => Handoff::Shared,
            PepBackend::Image(_) => Handoff::for_one_run_at_a_time()?,
        };
        let options = |label: &str, scenario: &Scenario| RunOptions {
            read_observer: Some(progress.scenario(label, scenario)),
            handoff,
            ..RunOptions::default()
        };
        match pep {
            PepBackend::Engine => crate::validate_with(&options),
            PepBackend::Image(image) => {
                crate::validate_image(image.as_deref(), &options, verifier)?
            }
        }
    };
    drop(progress);
    // One scenario prints its full report; the whole suite prints a line per scenario.
    let text = || match (name, suite.scenarios.first()) {
        (Some(_), Some(report)) => report.to_text(),
        _ => suite.to_text(),
    };
    write_output(&suite, json, text, out)?;
    Ok(verdict(suite.passed))
}

/// `bench --pep image`: the instructions each image (or the one of `architecture`) executes
/// per `FEEDBACK_READ` over its built-in scenario, held to its budget.
fn bench_image(
    architecture: Option<bench::Architecture>,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let mut within = true;
    let progress = Progress::start();
    for (arch, name) in [("x64", "steady-8"), ("arm64", "arm64")] {
        let wanted = architecture
            .is_none_or(|wanted| (wanted == bench::Architecture::Arm64) == (arch == "arm64"));
        if !wanted {
            continue;
        }
        let scenario =
            builtin::get(name).ok_or_else(|| format!("bench: no built-in scenario `{name}`"))?;
        let options = RunOptions {
            read_observer: Some(progress.scenario(&format!("bench --pep image {name}"), &scenario)),
            handoff: Handoff::for_one_run_at_a_time()?,
            ..RunOptions::default()
        };
        let image_path = image::image_for(&scenario, None);
        let (_, found) = crate::run_image_verified(&scenario, &options, &image_path)?;
        let cost = image::verifier::cost_verdict(arch, &[found]);
        let _ = writeln!(
            out,
            "bench --pep image: FEEDBACK_READ on the {arch} image ({name}, {} processors): {} reads, image instructions median {} (budget {}), fewest {}, most {} (budget {})",
            scenario.platform.processors,
            cost.feedback_read_calls,
            cost.feedback_read_median,
            cost.median_budget,
            cost.feedback_read_min,
            cost.feedback_read_max,
            cost.max_budget
        );
        for violation in &cost.violations {
            let _ = writeln!(out, "bench --pep image: FAIL {arch}: {violation}");
        }
        within &= cost.violations.is_empty();
    }
    drop(progress);
    Ok(if within { EXIT_PASSED } else { EXIT_FAILED })
}

fn run_bench(
    iterations: u64,
    processors: u32,
    notification: bench::Notification,
    architecture: bench::Architecture,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let result = bench::run(iterations, processors, notification, architecture)
        .map_err(|message| format!("bench: {message}"))?;
    let _ = writeln!(
        out,
        "bench: {} {} calls through the C ABI over {} processor{} of an {} platform in {:.3} ms: \
         {:.2} ns per call",
        result.iterations,
        notification.windows_name(),
        result.processors,
        plural(result.processors),
        architecture.description(),
        result.elapsed.as_secs_f64() * 1e3,
        result.nanoseconds_per_call()
    );
    if !result.served {
        let _ = writeln!(out, "bench: the engine refused some calls");
        return Ok(EXIT_FAILED);
    }
    Ok(EXIT_PASSED)
}

mod progress;

#[cfg(test)]
mod tests;
