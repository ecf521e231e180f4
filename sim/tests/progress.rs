//! Progress on stderr comes from the processor threads while the run is under way: the binary
//! must not hold stderr's lock for the whole run (it did, and a threaded run on a terminal
//! deadlocked).

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_threaded_run_shows_progress_and_finishes() {
    let scenario =
        std::env::temp_dir().join(format!("ppm-sim-progress-{}.toml", std::process::id()));
    std::fs::write(
        &scenario,
        "name = \"progress\"\n[platform]\nprocessors = 16\nnominal_mhz = 2000\n[pofx]\nduration_ms = 3000\nsample_interval_ms = 1\nthreads = \"per-processor\"\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2500\nbusy_percent = 50\n",
    )
    .expect("a temporary scenario");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ppm-sim"))
        .arg("run")
        .arg(&scenario)
        .env("PPM_SIM_PROGRESS", "always")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ppm-sim runs");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("a child") {
            break status;
        }
        if start.elapsed() > Duration::from_mins(2) {
            let _ = child.kill();
            panic!("ppm-sim did not finish in 120 s: processor threads blocked on stderr");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = reader.join().expect("stderr read");
    let _ = std::fs::remove_file(&scenario);
    assert!(status.success(), "{status}: {text}");
    assert!(text.contains("% of about 48016 reads"), "{text:?}");
}

/// Progress on a pipe (a CI log) is whole lines naming what runs; `never` silences it.
#[test]
fn progress_off_a_terminal_is_whole_lines_naming_the_run() {
    let run = |setting: &str| {
        Command::new(env!("CARGO_BIN_EXE_ppm-sim"))
            .args(["validate", "default"])
            .env("PPM_SIM_PROGRESS", setting)
            .output()
            .expect("ppm-sim runs")
    };
    let shown = run("always");
    assert!(shown.status.success());
    let text = String::from_utf8_lossy(&shown.stderr);
    assert!(text.starts_with("ppm-sim: validate default: "), "{text:?}");
    assert!(text.ends_with(" s so far\n") && !text.contains('\r'), "{text:?}");
    let silent = run("never");
    assert!(silent.status.success());
    assert!(silent.stderr.is_empty(), "{:?}", String::from_utf8_lossy(&silent.stderr));
}
