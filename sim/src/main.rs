//! The `ppm-sim` command line: see [`ppm_sim::cli`].

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let code = ppm_sim::cli::main(
        &std::env::args_os().skip(1).collect::<Vec<_>>(),
        &mut stdout.lock(),
        &mut stderr.lock(),
    );
    let _ = std::io::stdout().flush();
    ExitCode::from(code)
}
