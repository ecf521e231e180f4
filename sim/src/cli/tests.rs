//! Unit tests of the parent module.

use super::*;

fn cli(args: &[&str]) -> (u8, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let code = main(&args, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
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
        &["validate", "--list", "single"],
        &["run", "--json", "--json", "sim/scenarios/single.toml"],
        &["bench", "--processors", "2", "--processors", "3"],
        &["run", "a.toml", "b.toml"],
        &["valdate"],
        &["--bogus"],
        &["run", "sim/scenarios/single.toml", "--verifier"],
        &["validate", "single", "--verifier"],
        &["validate", "--list", "--verifier"],
        &["bench", "--pep", "image", "--iterations", "5"],
        &["bench", "--pep", "kernel"],
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with("ppm-sim: ") && err.ends_with('\n') && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let (_, _, err) = cli(&["run", "--json", "--json", "x.toml"]);
    assert_eq!(
        err,
        "ppm-sim: run: the argument '--json' cannot be used multiple times; see `ppm-sim run --help`\n"
    );
    let (_, _, err) = cli(&["valdate"]);
    assert!(err.contains("a similar subcommand exists: 'validate'"), "{err}");
    let (_, _, err) = cli(&["validate", "single", "--verifier"]);
    assert_eq!(
        err,
        "ppm-sim: --verifier needs --pep image (Driver Verifier's rules are held to the linked image)\n"
    );
}

#[test]
fn a_negative_number_is_refused_naming_the_flag_and_the_range() {
    for (args, expected) in [
        (
            &["bench", "--iterations", "-5"][..],
            "bench: invalid value '-5' for '--iterations <N>': expected an integer in 1..=10000000000",
        ),
        (
            &["bench", "--processors", "-1"],
            "bench: invalid value '-1' for '--processors <P>': expected an integer in 1..=2048",
        ),
        (
            &["run", "x.toml", "--plot", "p.svg", "--plot-processors", "-1"],
            "run: invalid value '-1' for '--plot-processors <LIST>': expected processor indexes \
             (0 or more) separated by commas, e.g. 0,5,63; `-1` is not one",
        ),
        (&["run", "x.toml", "--plot", "p.svg", "--plot-processors", "0,-3"], "`-3` is not one"),
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.lines().count() == 1 && err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "no `-- -1` tip: {err}");
    }
}

#[test]
fn help_and_version_print_to_stdout_and_exit_0() {
    for (args, expected) in [
        (&["--help"][..], "Usage: ppm-sim [COMMAND]"),
        (&["-h"], "Usage: ppm-sim [COMMAND]"),
        (&["help", "run"], "Usage: ppm-sim run [OPTIONS] <FILE.toml>"),
        (&["run", "--help"], "Usage: ppm-sim run [OPTIONS] <FILE.toml>"),
        (&["validate", "--help"], "Usage: ppm-sim validate [OPTIONS] [NAME]"),
        (&["bench", "-h"], "Usage: ppm-sim bench [OPTIONS]"),
        (&["--version"], "ppm-sim 0.1.0"),
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(code, EXIT_PASSED, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(out.contains(expected), "{args:?}: {out}");
    }
}

#[test]
fn validate_runs_one_built_in_or_lists_them() {
    let (code, out, err) = cli(&["validate", "single"]);
    assert_eq!(code, EXIT_PASSED, "{err}");
    assert!(out.starts_with("scenario single: 1 x86-64 processor ("), "{out}");
    assert!(out.ends_with("single: 29 passed, 7 not applicable (36 checks)\n"), "{out}");
    let (code, out, _) = cli(&["validate", "single", "--json"]);
    assert_eq!(code, EXIT_PASSED);
    let suite: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(suite["scenarios"].as_array().map(Vec::len), Some(1));
    assert_eq!(suite["scenarios"][0]["scenario"], "single");
    let (code, out, _) = cli(&["validate", "--list"]);
    assert_eq!(code, EXIT_PASSED);
    assert_eq!(out.lines().count(), builtin::SOURCES.len());
    assert!(
        out.lines().any(|line| line.starts_with("single ")
            && line.contains(" 1 processor   1 processor at a steady 2400 MHz")),
        "{out}"
    );
    let (_, out, _) = cli(&["validate", "--list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed[0]["name"], builtin::DEFAULT);
    assert_eq!(listed[0]["processors"], 8);
}

#[test]
fn trace_rows_sum_to_the_reported_rates_and_plots_are_valid() {
    let dir = std::env::temp_dir().join(format!("ppm-sim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let (csv_path, svg_path, png_path) = (dir.join("t.csv"), dir.join("t.svg"), dir.join("t.png"));
    let path = |path: &Path| path.to_str().expect("UTF-8 path").to_owned();
    let (code, out, err) = cli(&[
        "run",
        "../sim/scenarios/turbo-burst.toml",
        "--json",
        "--trace",
        &path(&csv_path),
        "--plot",
        &path(&svg_path),
    ]);
    assert_eq!(code, EXIT_PASSED, "{err}");
    assert!(err.contains("reads written to") && err.contains("plot written to"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    let mut reader = csv::Reader::from_path(&csv_path).expect("the trace");
    let headers = reader.headers().expect("a header").clone();
    let column = |name: &str| headers.iter().position(|header| header == name).expect(name);
    let (processor, counter, served) =
        (column("processor"), column("counter_index"), column("served"));
    let (delta_nominal, delta_actual) = (column("delta_nominal"), column("delta_actual"));
    let mut sums = vec![(0_i128, 0_i128, 0_usize); 8];
    for row in reader.records() {
        let row = row.expect("a row");
        let index: usize = row[processor].parse().expect("a processor");
        sums[index].2 += 1;
        if &row[counter] != "0" || &row[served] != "true" || row[delta_nominal].is_empty() {
            continue;
        }
        sums[index].0 += row[delta_nominal].parse::<i128>().expect("a delta");
        sums[index].1 += row[delta_actual].parse::<i128>().expect("a delta");
    }
    let rate = report["engine"]["nominal_mhz"].as_f64().expect("the nominal rate");
    for (index, (nominal, actual, rows)) in sums.iter().enumerate() {
        let entry = &report["processors"][index];
        assert_eq!(entry["reads"].as_u64(), u64::try_from(*rows).ok(), "one row per read");
        #[allow(clippy::cast_precision_loss)]
        let summed = (*nominal > 0).then(|| rate * *actual as f64 / *nominal as f64);
        match (summed, entry["measured_mhz"].as_f64()) {
            (Some(summed), Some(reported)) => {
                assert!((summed - reported).abs() < 0.05, "{index}: {summed} vs {reported}");
            }
            (summed, reported) => assert_eq!(summed, reported, "processor {index}"),
        }
    }
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG");
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default());
    assert!(
        tree.is_ok() && svg.contains("Processor Information(0,7)"),
        "a valid SVG of 8 processors"
    );
    let (code, _, err) = cli(&[
        "run",
        "../sim/scenarios/turbo-burst.toml",
        "--plot",
        &path(&png_path),
        "--plot-processors",
        "0,5",
        "--plot-view",
        "percent",
    ]);
    assert_eq!(code, EXIT_PASSED, "{err}");
    let png = std::fs::read(&png_path).expect("the PNG");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_plot_and_trace_options_are_refused_before_the_run() {
    for (args, expected) in [
        (&["--plot", "t.gif"][..], "--plot: t.gif: expected a file name ending in .svg or .png"),
        (&["--plot", "t.svg", "--plot-processors", "0,8"], "processor 8 does not exist"),
        (&["--plot", "t.svg", "--plot-processors", "1,1"], "listed twice"),
        (&["--plot", "t.svg", "--plot-processors", "x"], "`x` is not one"),
        (&["--plot-processors", "0"], "--plot"),
        (&["--plot-view", "percent"], "--plot"),
        (
            &["--plot", "t.svg", "--plot-view", "ghz"],
            "invalid value 'ghz' for '--plot-view <VIEW>'",
        ),
        (&["--trace", "/nonexistent/dir/t.csv"], "--trace: /nonexistent/dir/t.csv: cannot create"),
        (&["--plot", "/nonexistent/dir/t.svg"], "--plot: /nonexistent/dir/t.svg: cannot create"),
    ] {
        let mut all = vec!["run", "../sim/scenarios/turbo-burst.toml"];
        all.extend_from_slice(args);
        let (code, out, err) = cli(&all);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert!(err.contains(expected) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

#[test]
fn standard_input_is_read_with_the_same_cap_and_errors_name_it() {
    let text = builtin::source("single").expect("built-in");
    let scenario = read_scenario(text.as_bytes(), "<stdin>").expect("valid");
    assert_eq!(scenario.name, "single");
    let error = read_scenario(&b"name = 1"[..], "<stdin>").expect_err("invalid");
    assert!(error.starts_with("<stdin>: "), "{error}");
    let endless = std::io::repeat(b'#');
    let error = read_scenario(endless, "<stdin>").expect_err("too large");
    assert_eq!(error, "<stdin>: larger than 4194304 bytes, the limit of a scenario file");
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
        out.starts_with(
            "bench: 1000 PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO calls through the C ABI over 3 \
             processors of an x64 (APERF/MPERF) platform in "
        ),
        "{out}"
    );
    let (code, out, err) = cli(&["bench", "--iterations", "10", "--arch", "arm64"]);
    assert_eq!(code, EXIT_PASSED, "{err}");
    assert!(
        out.contains("over 1 processor of an arm64 (the Activity Monitors) platform in "),
        "{out}"
    );
    let (code, out, _) =
        cli(&["bench", "--iterations", "10", "--notification=platform-counter-read"]);
    assert_eq!(code, EXIT_PASSED);
    assert!(
        out.contains("baseline platform counter read calls")
            && out.contains("over 1 processor of an x64"),
        "{out}"
    );
}

#[test]
fn a_file_over_the_limit_is_refused_without_reading_it_all() {
    let path = std::env::temp_dir().join(format!("ppm-sim-cli-big-{}.toml", std::process::id()));
    let comment = "#".repeat(usize::try_from(MAX_SCENARIO_BYTES).expect("fits") + 1);
    std::fs::write(&path, comment).expect("temporary file");
    let (code, out, err) = cli(&["run", path.to_str().expect("UTF-8 path")]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, EXIT_USAGE);
    assert!(out.is_empty());
    assert!(err.ends_with("larger than 4194304 bytes, the limit of a scenario file\n"), "{err}");
    // A device that never ends is refused the same way.
    if Path::new("/dev/zero").exists() {
        let (code, _, err) = cli(&["run", "/dev/zero"]);
        assert_eq!(code, EXIT_USAGE, "{err}");
        assert!(err.contains("the limit of a scenario file"), "{err}");
    }
}

#[test]
fn a_bad_file_names_the_file_the_line_and_the_field() {
    let path = std::env::temp_dir().join(format!("ppm-sim-cli-test-{}.toml", std::process::id()));
    std::fs::write(&path, "name = \"x\"\n[platform]\nprocessors = 5000\nnominal_mhz = 2000\n[pofx]\nduration_ms = 10\n")
            .expect("temporary file");
    let (code, out, err) = cli(&["run", path.to_str().expect("UTF-8 path")]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, EXIT_USAGE);
    assert!(out.is_empty());
    assert_eq!(
        err,
        format!(
            "ppm-sim: {}: line 3, column 14: field `platform.processors`: expected an integer in 1..=2048, found 5000\n",
            path.display()
        )
    );
}

#[test]
fn a_missing_image_is_named_as_given() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/single.toml");
    for args in [
        &["run", scenario, "--pep", "image", "--image", "/nonexistent/ppm_pep.sys"][..],
        &["validate", "single", "--pep", "image", "--image", "/nonexistent/ppm_pep.sys"],
        &["validate", "--pep", "image", "--image", "/nonexistent/ppm_pep.sys"],
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        // What is wrong, not a suggestion to give the --image that was given.
        assert_eq!(err, "ppm-sim: --image /nonexistent/ppm_pep.sys: no such file\n", "{args:?}");
    }
    // --image names the image of --pep image, and --pep takes the two backends only.
    let (code, _, err) = cli(&["run", scenario, "--image", "x.sys"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    let (code, _, err) = cli(&["run", scenario, "--pep", "firmware"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    assert!(err.contains("engine") && err.contains("image"), "{err}");
}

/// An image directory for one test: `ppm_pep.sys` and, optionally, its map and `stack.txt`.
struct ImageDirectory(std::path::PathBuf);

impl ImageDirectory {
    fn new(name: &str, image: &[u8]) -> Self {
        let directory =
            std::env::temp_dir().join(format!("ppm-sim-image-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).expect("temporary directory");
        std::fs::write(directory.join("ppm_pep.sys"), image).expect("image");
        Self(directory)
    }

    fn with(self, name: &str, text: &str) -> Self {
        std::fs::write(self.0.join(name), text).expect("file");
        self
    }

    /// `run single.toml --pep image --image THIS`: (exit code, stdout, stderr).
    fn run(&self) -> (u8, String, String) {
        let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/single.toml");
        let image = self.0.join("ppm_pep.sys");
        cli(&["run", scenario, "--pep", "image", "--image", &image.to_string_lossy()])
    }

    /// Exit 2, nothing on stdout, one line on stderr naming `file` and saying `what`.
    fn assert_refused(&self, file: &str, what: &str) {
        let (code, out, err) = self.run();
        assert_eq!(code, EXIT_USAGE, "{err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let named = format!("ppm-sim: {}: ", self.0.join(file).display());
        assert!(err.starts_with(&named) && err.contains(what), "`{named}…{what}` in: {err}");
    }
}

impl Drop for ImageDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The map lld-link writes with `minimal_image`.
const MAP: &str = " ppm_pep\n\n Timestamp is 12345678 (Thu Sep 30 00:00:00 1979)\n\n Preferred load \
                   address is 0000000140000000\n\n entry point at        0001:00000000\n";

#[test]
fn a_garbage_or_truncated_image_is_refused_before_any_run() {
    use crate::image::pe::minimal_image;
    ImageDirectory::new("garbage", b"MZ").assert_refused("ppm_pep.sys", "not a PE image");
    ImageDirectory::new("text", b"this is not a driver\n")
        .assert_refused("ppm_pep.sys", "not a PE image ('Unable to read the DOS Header");
    let whole = minimal_image(0x8664);
    ImageDirectory::new("truncated", &whole[..0x300])
        .assert_refused("ppm_pep.sys", "truncated: section .text extends past the end of the file");
    ImageDirectory::new("arm64", &minimal_image(0xAA64))
        .assert_refused("ppm_pep.sys", "an arm64 image, and the scenario's processors are x64");
}

#[test]
fn a_map_or_stack_txt_of_another_image_is_refused_before_any_run() {
    use crate::image::pe::minimal_image;
    let image = minimal_image(0x8664);
    ImageDirectory::new("no-map", &image)
        .assert_refused("ppm_pep.map", "the linker map beside the image cannot be read");
    ImageDirectory::new("other-map", &image)
        .with("ppm_pep.map", &MAP.replace("12345678", "0badf00d"))
        .assert_refused("ppm_pep.map", "the map of another image");
    ImageDirectory::new("no-stack", &image)
        .with("ppm_pep.map", MAP)
        .assert_refused("stack.txt", "cannot be read");
    ImageDirectory::new("old-stack", &image)
        .with("ppm_pep.map", MAP)
        .with("stack.txt", "stack FxDriverEntry: 100 bytes\n")
        .assert_refused("stack.txt", "does not name its image");
    ImageDirectory::new("other-stack", &image)
        .with("ppm_pep.map", MAP)
        .with(
            "stack.txt",
            "image TimeDateStamp 0x0badf00d CheckSum 0x00000000 SizeOfImage 0x2000\n",
        )
        .assert_refused("stack.txt", "the stack figures of another image");
}
