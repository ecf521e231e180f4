//! Build script of the `ppm-pep` driver.
//!
//! Building for Windows on a Windows host: `wdk_build::Config::from_env_auto()` reads the
//! `[package.metadata.wdk.driver-model]` section (KMDF 1.31), finds the WDK, and
//! `configure_binary_build()` emits the kernel linker settings (`/DRIVER`,
//! `/ENTRY:FxDriverEntry`, the WDK library paths, `BufferOverflowFastFailK.lib`, ...). It fails
//! unless the C runtime is linked statically (`+crt-static`, see `.cargo/config.toml`).
//!
//! On x64 it also compiles `src/msr_probe.c` (RDMSR/WRMSR under SEH) with the `cc` crate, as
//! kernel-mode C:
//! - `/kernel` is **required**: the script fails unless the compiler is MSVC-like and accepts
//!   it. wdk-build links with `/IGNORE:4257` (the warning for a user-mode object in a kernel
//!   image), so a shim compiled without `/kernel` would link silently; this script refuses to
//!   get that far.
//! - the preprocessor definitions (`_AMD64_`, `_KERNEL_MODE`, `KMDF_VERSION_MAJOR`, ...) and the
//!   include paths (`km`, `km\crt`, `shared`, `wdf\kmdf\1.31`) come from wdk-build's
//!   configuration, as `wdk-sys`'s own C shim (`wdf.c`) is compiled.
//! - `/GS` stays on (MSVC's default): wdk-build links `BufferOverflowFastFailK.lib`, the
//!   kernel's stack-cookie support, and the KMDF stub's entry point initialises the cookie. The
//!   shim's two functions have no arrays, so the compiler inserts no check in them anyway.
//!
//! Anywhere else it does nothing: `wdk-build` is a `cfg(windows)` build-dependency, so a
//! non-Windows host compiles this script with no dependency at all, and on a Windows host a
//! non-Windows target (`CARGO_CFG_TARGET_OS`) is left alone as well.

#[cfg(windows)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/msr_probe.c");
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "windows") {
        let config = wdk_build::Config::from_env_auto()?;
        // x64: RDMSR/WRMSR under structured exception handling (src/msr_guard.rs).
        if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "x86_64") {
            compile_msr_probe(&config)?;
        }
        config.configure_binary_build()?;
    }
    Ok(())
}

/// Compiles `src/msr_probe.c` as kernel-mode C with wdk-build's definitions and include paths,
/// or fails the build if the compiler cannot compile for kernel mode.
#[cfg(windows)]
fn compile_msr_probe(config: &wdk_build::Config) -> Result<(), Box<dyn std::error::Error>> {
    let mut build = cc::Build::new();
    let compiler = build.try_get_compiler()?;
    if !compiler.is_like_msvc() {
        return Err(format!(
            "src/msr_probe.c needs an MSVC-compatible compiler (cl.exe or clang-cl) for `/kernel`; \
             the compiler is {} (run cargo from an eWDK or Developer prompt)",
            compiler.path().display()
        )
        .into());
    }
    // `is_flag_supported` compiles a probe with the flag and requires success with an empty
    // stderr: cl.exe answers an unknown option with warning D9002 and exit code 0, which a plain
    // `.flag()` would let through.
    if !build.is_flag_supported("/kernel")? {
        return Err(format!(
            "{} does not accept /kernel: src/msr_probe.c would be a user-mode object in a kernel \
             image (wdk-build links with /IGNORE:4257), so the build stops here",
            compiler.path().display()
        )
        .into());
    }
    for (name, value) in config.preprocessor_definitions() {
        build.define(&name, value.as_deref());
    }
    build
        .includes(config.include_paths()?)
        .flag("/kernel")
        .file("src/msr_probe.c")
        .try_compile("ppm_msr_probe")?;
    Ok(())
}

#[cfg(not(windows))]
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
