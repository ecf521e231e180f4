//! The `ppm-sim` command line: see [`ppm_sim::cli`].

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = std::io::stdout();
    // Stderr unlocked: it locks per write, so that processor threads can show progress on it
    // while the run is under way (a lock held here for the whole run would block them).
    let code = ppm_sim::cli::main(
        &std::env::args_os().skip(1).collect::<Vec<_>>(),
        &mut stdout.lock(),
        &mut std::io::stderr(),
    );
    let _ = std::io::stdout().flush();
    ExitCode::from(code)
}
