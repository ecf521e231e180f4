//! The check's `wdk-build`: the entry points the build scripts of `wdk`, `wdk-alloc` and
//! `wdk-panic` (and the driver's, on a Windows host) call, emitting what the real crate emits
//! for a KMDF driver's libraries — the `driver_model__driver_type` cfg — and nothing else.

use std::fmt;

/// The real crate's error type, reduced to what a build script's `main` needs.
#[derive(Debug)]
pub struct ConfigError;

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("wdk-build (check stand-in)")
    }
}

impl std::error::Error for ConfigError {}

/// Emits the KMDF cfg, as the real crate does for a KMDF driver's dependency.
///
/// # Errors
/// Never.
pub fn configure_wdk_library_build() -> Result<(), ConfigError> {
    println!(
        "cargo::rustc-check-cfg=cfg(driver_model__driver_type, values(\"WDM\",\"KMDF\",\"UMDF\"))"
    );
    println!("cargo::rustc-cfg=driver_model__driver_type=\"KMDF\"");
    Ok(())
}

/// Nothing to configure: the check type-checks, it does not link.
///
/// # Errors
/// Never.
pub const fn configure_wdk_binary_build() -> Result<(), ConfigError> {
    Ok(())
}
