//! Build script of the `ppm-pep` driver.
//!
//! Building for Windows on a Windows host: `wdk_build::configure_wdk_binary_build()` reads the
//! `[package.metadata.wdk.driver-model]` section (KMDF 1.31), finds the WDK, and emits the
//! kernel linker settings (`/DRIVER`, `/ENTRY:FxDriverEntry`, the WDK library paths, ...). It
//! fails unless the C runtime is linked statically (`+crt-static`, see `.cargo/config.toml`).
//!
//! Anywhere else it does nothing: `wdk-build` is a `cfg(windows)` build-dependency, so a
//! non-Windows host compiles this script with no dependency at all, and on a Windows host a
//! non-Windows target (`CARGO_CFG_TARGET_OS`) is left alone as well.

#[cfg(windows)]
fn main() -> Result<(), wdk_build::ConfigError> {
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "windows") {
        wdk_build::configure_wdk_binary_build()
    } else {
        Ok(())
    }
}

#[cfg(not(windows))]
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
