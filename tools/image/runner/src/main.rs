//! The image runner of `ppm-sim --pep image` (docs/image-backend.md): maps `ppm_pep.sys` into
//! Unicorn, binds its imports and the KMDF function table to stubs, executes `ppm-sim`'s
//! commands, and turns each kernel call and machine instruction into a host request. Its
//! subcommands: `check` (the linked image's checks, docs/driver-image.md), `describe` (what it
//! reads of an image), `layout` (its figures, as the tests read them).
//!
//! Unicorn (GPL-2.0) and capstone are not linked: they are loaded at run time from the image
//! backend's virtual environment (the `PyPI` wheels `tools/image/requirements.txt` pins), so no
//! binary of this workspace contains them (docs/image-backend.md, "Runner internals").

mod arch;
mod arm64_unwind;
mod capstone;
mod check_image;
mod commands;
mod ddi_rules;
mod hooks;
mod image;
mod kmdf;
mod layout;
mod outcome;
mod printf;
mod protocol;
mod runner;
mod seh;
mod services;
mod stack;
mod unicorn;
mod unwinding;
mod verifier;
mod watchdog;

use std::process::ExitCode;

/// The environment variable naming Unicorn's library (else the virtual environment's).
const UNICORN_VARIABLE: &str = "PPM_UNICORN_LIB";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => ExitCode::from(serve()),
        Some("describe") => printed(image::describe_command(&args[1..])),
        Some("layout") if args.len() > 1 => {
            printed(Err(format!("layout takes no argument, got '{}'", args[1])))
        }
        Some("layout") => printed(layout::describe()),
        Some("check") => ExitCode::from(check_image::check_command(&args[1..])),
        Some(other) => {
            eprintln!(
                "image-runner: unexpected argument '{other}' (the runner takes none: commands come \
                 on stdin; see docs/image-backend.md; `describe IMAGE MAP ARCH` prints what it reads \
                 from an image; `layout` prints its figures; `check IMAGE --map MAP --imports DIR \
                 [--arch x64|arm64] [--objdump PATH] [--stack-report FILE]` checks a linked image)"
            );
            ExitCode::from(2)
        }
    }
}

/// A subcommand's answer: its text on stdout and success, or its error as one line on stderr
/// and exit status 2.
fn printed(answer: Result<String, String>) -> ExitCode {
    match answer {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("ppm-image-runner: {error}");
            ExitCode::from(2)
        }
    }
}

/// Serves `ppm-sim`'s commands on stdin and stdout: the exit status.
fn serve() -> u8 {
    let doorbell = match protocol::Doorbell::from_environment() {
        Ok(doorbell) => doorbell,
        Err(error) => {
            eprintln!("image-runner: {error}");
            return 2;
        }
    };
    let library = capstone::venv_library(UNICORN_VARIABLE, "unicorn/lib/libunicorn.so.2");
    let loaded = library
        .ok_or_else(|| {
            format!("no Unicorn library: set {UNICORN_VARIABLE} or create target/image/venv")
        })
        .and_then(|path| unicorn::load(&path));
    if let Err(error) = loaded {
        eprintln!("image-runner: {error}");
        return 2;
    }
    let hang_seconds = match layout::hang_seconds_from_environment() {
        Ok(seconds) => seconds,
        Err(error) => {
            eprintln!("image-runner: {error}");
            return 2;
        }
    };
    // Boxed and never moved: the hooks reach the runner through its address.
    let mut runner = Box::new(runner::Runner::new(protocol::Channel::new(doorbell)));
    runner.hang_seconds = hang_seconds;
    runner.serve()
}
