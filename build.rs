//! Build script of the `ppm-pep` driver.
//!
//! Building for Windows on a Windows host: `wdk_build::configure_wdk_binary_build()` reads the
//! `[package.metadata.wdk.driver-model]` section (KMDF 1.31), finds the WDK, and emits the
//! kernel linker settings (`/DRIVER`, `/ENTRY:FxDriverEntry`, the WDK library paths, ...). It
//! fails unless the C runtime is linked statically (`+crt-static`, see `.cargo/config.toml`).
//!
//! On x64 it also compiles `src/msr_probe.c` (RDMSR/WRMSR under SEH) with the `cc` crate.
//!
//! Anywhere else it does nothing: `wdk-build` is a `cfg(windows)` build-dependency, so a
//! non-Windows host compiles this script with no dependency at all, and on a Windows host a
//! non-Windows target (`CARGO_CFG_TARGET_OS`) is left alone as well.

#[cfg(windows)]
fn main() -> Result<(), wdk_build::ConfigError> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/msr_probe.c");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "windows") {
        // x64: RDMSR/WRMSR under structured exception handling (src/msr_guard.rs). MSVC
        // compiles it for kernel mode; the WDK's link settings come from wdk-build below.
        if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "x86_64") {
            cc::Build::new()
                .file("src/msr_probe.c")
                .define("_KERNEL_MODE", None)
                .flag_if_supported("/kernel")
                .flag_if_supported("/GS-")
                .compile("ppm_msr_probe");
        }
        wdk_build::configure_wdk_binary_build()
    } else {
        Ok(())
    }
}

#[cfg(not(windows))]
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
