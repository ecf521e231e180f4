//! `ppm-sim run --trace/--plot` never destroys a file it was not asked to write, and a failed
//! run leaves every existing file as it was: each case here destroyed a file (or the report)
//! before outputs were checked up front and written beside their place, then renamed.

use std::path::Path;
use std::process::{Command, Output};

/// A small valid scenario: 2 processors, 200 ms (a trace of some 800 rows, about 80 KB).
const SCENARIO: &str = "name = \"outputs\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n\
    [pofx]\nduration_ms = 200\nsample_interval_ms = 1\n[[phase]]\nstart_ms = 0\n\
    processors = \"all\"\nfrequency_mhz = 2500\nbusy_percent = 100\n";

mod common;

use common::{Scratch, ppm_sim, text};

/// Exit 2, one line on stderr containing `expected`, nothing on stdout.
fn assert_refused(output: &Output, expected: &str) {
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "stdout: {out}\nstderr: {err}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    assert!(err.starts_with("ppm-sim: ") && err.lines().count() == 1, "one line: {err}");
    assert!(err.contains(expected), "`{expected}` in: {err}");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the file is still there")
}

#[test]
fn a_trace_onto_the_scenario_is_refused_and_the_scenario_kept() {
    let scratch = Scratch::new("onto-input");
    let scenario = scratch.write("v.toml", SCENARIO);
    // The case: it exited 0 with the scenario replaced by CSV.
    let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), &scenario]);
    assert_refused(&output, "--trace");
    assert_eq!(read(&scenario), SCENARIO);
    // The same with a scenario whose name ends in .csv: the extension is right, the file is
    // the input.
    let named_csv = scratch.write("s.csv", SCENARIO);
    let output = ppm_sim(&[Path::new("run"), &named_csv, Path::new("--trace"), &named_csv]);
    assert_refused(&output, "is the scenario file");
    assert_eq!(read(&named_csv), SCENARIO);
    // Another name for the input: `dir/../s.csv`, a hard link and a symbolic link.
    let dotted = scratch.0.join("..").join(scratch.0.file_name().expect("a name")).join("s.csv");
    let output = ppm_sim(&[Path::new("run"), &named_csv, Path::new("--trace"), &dotted]);
    assert_refused(&output, "is the scenario file");
    let hard = scratch.path("hard.csv");
    std::fs::hard_link(&named_csv, &hard).expect("a hard link");
    let output = ppm_sim(&[Path::new("run"), &named_csv, Path::new("--trace"), &hard]);
    assert_refused(&output, "is the scenario file");
    #[cfg(unix)]
    {
        let link = scratch.path("link.csv");
        std::os::unix::fs::symlink(&scenario, &link).expect("a symbolic link");
        let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), &link]);
        assert_refused(&output, "is the scenario file");
        assert_eq!(read(&scenario), SCENARIO);
        // `run -` with standard input redirected from the file the trace would replace.
        let output = Command::new(env!("CARGO_BIN_EXE_ppm-sim"))
            .args([Path::new("run"), Path::new("-"), Path::new("--trace"), &named_csv])
            .stdin(std::fs::File::open(&named_csv).expect("the scenario"))
            .output()
            .expect("ppm-sim runs");
        assert_refused(&output, "is the file standard input reads the scenario from");
    }
    assert_eq!(read(&named_csv), SCENARIO);
}

#[test]
fn trace_and_plot_on_one_file_are_refused_and_the_file_kept() {
    let scratch = Scratch::new("one-file");
    let scenario = scratch.write("v.toml", SCENARIO);
    let shared = scratch.write("x.svg", "old picture");
    // The case: both were reported written, and the trace was gone.
    let output = ppm_sim(&[
        Path::new("run"),
        &scenario,
        Path::new("--trace"),
        &shared,
        Path::new("--plot"),
        &shared,
    ]);
    assert_refused(&output, "--trace");
    assert_eq!(read(&shared), "old picture");
    // Right extensions, one file: the plot's name is a symbolic link to the trace.
    #[cfg(unix)]
    {
        let trace = scratch.write("t.csv", "old trace");
        let plot = scratch.path("p.svg");
        std::os::unix::fs::symlink(&trace, &plot).expect("a symbolic link");
        let output = ppm_sim(&[
            Path::new("run"),
            &scenario,
            Path::new("--trace"),
            &trace,
            Path::new("--plot"),
            &plot,
        ]);
        assert_refused(&output, "is also the --trace file");
        assert_eq!(read(&trace), "old trace");
    }
    assert_eq!(scratch.names().iter().filter(|name| name.contains(".tmp")).count(), 0);
}

#[test]
fn a_refused_output_leaves_the_other_output_as_it_was() {
    let scratch = Scratch::new("refused-other");
    let scenario = scratch.write("v.toml", SCENARIO);
    let keep = scratch.write("keep.svg", "keep me");
    // The case: exit 2, but keep.svg had already been truncated.
    let output = ppm_sim(&[
        Path::new("run"),
        &scenario,
        Path::new("--plot"),
        &keep,
        Path::new("--trace"),
        Path::new("/nonexistent/t.csv"),
    ]);
    assert_refused(&output, "--trace: /nonexistent/t.csv: cannot create");
    assert_eq!(read(&keep), "keep me");
    assert_eq!(scratch.names(), ["keep.svg", "v.toml"], "no temporary file left behind");
}

#[test]
fn a_device_as_output_is_refused_before_the_run() {
    let scratch = Scratch::new("device");
    let scenario = scratch.write("v.toml", SCENARIO);
    // The case: /dev/full ran to the end, then exited 2 with the report lost.
    for device in ["/dev/full", "/dev/null", "/dev/stdout"] {
        if !Path::new(device).exists() {
            continue;
        }
        let output =
            ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), Path::new(device)]);
        assert_refused(&output, &format!("--trace: {device}: not a regular file"));
        let output =
            ppm_sim(&[Path::new("run"), &scenario, Path::new("--plot"), Path::new(device)]);
        assert_refused(&output, &format!("--plot: {device}: "));
    }
}

/// A write that fails mid-run (the disk fills up: here the file-size limit): the report is
/// still printed, stderr says what happened, the existing trace is as it was and no temporary
/// file is left.
#[cfg(target_os = "linux")]
#[test]
fn a_write_that_fails_mid_run_keeps_the_report_and_the_old_file() {
    let scratch = Scratch::new("mid-run");
    let scenario = scratch.write("v.toml", SCENARIO);
    let trace = scratch.write("t.csv", "old trace");
    let plot = scratch.write("p.svg", "old picture");
    // `ulimit -f 8`: no file may grow past 4 KiB (512-byte blocks in sh); SIGXFSZ ignored, so
    // the write fails with EFBIG as on a full disk.
    let output = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_ppm-sim"))
        .args([
            Path::new("run"),
            &scenario,
            Path::new("--trace"),
            &trace,
            Path::new("--plot"),
            &plot,
        ])
        .output()
        .expect("sh runs");
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "stdout: {out}\nstderr: {err}");
    assert!(out.starts_with("scenario outputs: 2 x86-64 processors"), "the report: {out}");
    assert!(out.contains("checks:") || out.contains("passed"), "the report: {out}");
    assert!(
        err.contains(&format!("--trace: {}: cannot write", trace.display()))
            && err.contains("no output file was changed"),
        "{err}"
    );
    assert_eq!(read(&trace), "old trace");
    assert_eq!(read(&plot), "old picture");
    assert_eq!(scratch.names(), ["p.svg", "t.csv", "v.toml"], "no temporary file left behind");
}

#[test]
fn outputs_replace_existing_files_whole_and_leave_nothing_else() {
    let scratch = Scratch::new("replace");
    let scenario = scratch.write("v.toml", SCENARIO);
    let trace = scratch.write("t.csv", "old trace");
    let plot = scratch.write("p.svg", "old picture");
    let output = ppm_sim(&[
        Path::new("run"),
        &scenario,
        Path::new("--trace"),
        &trace,
        Path::new("--plot"),
        &plot,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(read(&trace).starts_with("time_ms,processor,"));
    assert!(read(&plot).starts_with("<svg"));
    assert_eq!(scratch.names(), ["p.svg", "t.csv", "v.toml"]);
    // Through a symbolic link: the file it names is replaced, the link stays a link.
    #[cfg(unix)]
    {
        let target = scratch.write("target.csv", "old trace");
        let link = scratch.path("link.csv");
        std::os::unix::fs::symlink(&target, &link).expect("a symbolic link");
        let output = ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), &link]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        assert!(read(&target).starts_with("time_ms,processor,"));
        let link_metadata = std::fs::symlink_metadata(&link).expect("the link");
        assert!(link_metadata.file_type().is_symlink());
    }
}

#[test]
fn a_trace_needs_the_csv_extension() {
    let scratch = Scratch::new("extension");
    let scenario = scratch.write("v.toml", SCENARIO);
    let output =
        ppm_sim(&[Path::new("run"), &scenario, Path::new("--trace"), &scratch.path("t.txt")]);
    assert_refused(&output, "expected a file name ending in .csv");
    assert_eq!(scratch.names(), ["v.toml"]);
}

/// `PPM_IMAGE_HANDOFF` (docs/image-backend.md, "Two processes") takes `spinning` or `shared`:
/// anything else stops an image run with exit code 2 and a line naming the variable, before
/// any runner starts; the engine does not read it.
#[test]
fn a_wrong_image_handoff_is_refused() {
    let scratch = Scratch::new("handoff");
    let scenario = scratch.write("v.toml", SCENARIO);
    let with_handoff = |value: &str, args: &[&Path]| {
        Command::new(env!("CARGO_BIN_EXE_ppm-sim"))
            .args(args)
            .env("PPM_IMAGE_HANDOFF", value)
            .output()
            .expect("ppm-sim runs")
    };
    let expected = "PPM_IMAGE_HANDOFF must be `spinning` or `shared`, not `fast`";
    let image = [Path::new("--pep"), Path::new("image")];
    let output = with_handoff("fast", &[&[Path::new("run"), &scenario][..], &image].concat());
    assert_refused(&output, expected);
    for args in [&[Path::new("validate"), Path::new("single")][..], &[Path::new("validate")]] {
        assert_refused(&with_handoff("fast", &[args, &image].concat()), expected);
    }
    let output = with_handoff("fast", &[Path::new("run"), &scenario]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}
