//! Build script of the check's `wdk-sys` replacement: generates, with bindgen and the settings
//! of `wdk_build::BuilderExt::wdk_default` (wdk-build 0.6.0), the files the real `wdk-sys`
//! 0.5.2 `include!`s from `OUT_DIR` — `constants.rs`, `types.rs`, `ntddk.rs`, `wdf.rs`,
//! `wdf_function_count.rs`, `call_unsafe_wdf_function_binding.rs`, `test_stubs.rs` — from
//! Debian's mingw-w64 kernel headers (`ntifs.h`, `ntddk.h`, `ntstrsafe.h`) and this check's
//! `include/` declarations (KMDF 1.31 and the few kernel items mingw-w64 lacks), for KMDF 1.31.
//!
//! Environment: `PPM_MINGW_INCLUDE` (default `/usr/share/mingw-w64/include`),
//! `PPM_CHECK_INCLUDE` (this check's `include/`), and `CLANG_PATH` with `LIBCLANG_PATH` (one
//! LLVM's clang and libclang, set by `scripts/lib/windows-target.sh`).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use bindgen::callbacks::{ItemInfo, ItemKind, ParseCallbacks};
use bindgen::{Builder, CodegenConfig, EnumVariation, Formatter, RustEdition, RustTarget};

/// KMDF 1.31's function-table symbol, which `wdk-build` renames to `WdfFunctions`.
const WDF_FUNCTIONS_SYMBOL: &str = "WdfFunctions_01031";

#[derive(Debug)]
struct Rename;

impl ParseCallbacks for Rename {
    fn generated_name_override(&self, item: ItemInfo<'_>) -> Option<String> {
        (matches!(item.kind, ItemKind::Var) && item.name == WDF_FUNCTIONS_SYMBOL)
            .then(|| "WdfFunctions".to_owned())
    }
}

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let mingw = env::var("PPM_MINGW_INCLUDE").unwrap_or_else(|_| "/usr/share/mingw-w64/include".into());
    let extra = env::var("PPM_CHECK_INCLUDE").expect("PPM_CHECK_INCLUDE: the check's include/");
    println!("cargo::rerun-if-env-changed=PPM_MINGW_INCLUDE");
    println!("cargo::rerun-if-env-changed=PPM_CHECK_INCLUDE");
    println!("cargo::rerun-if-env-changed=CLANG_PATH");
    println!("cargo::rerun-if-env-changed=LIBCLANG_PATH");
    println!("cargo::rerun-if-changed={extra}");
    println!("cargo::rustc-check-cfg=cfg(driver_model__driver_type, values(\"WDM\",\"KMDF\",\"UMDF\"))");
    println!("cargo::rustc-cfg=driver_model__driver_type=\"KMDF\"");

    // wdk-build's base headers (ntifs.h, ntddk.h, ntstrsafe.h); dpfilter.h is included by the
    // WDK's wdm.h but not by mingw-w64's.
    let base = "#include <ntifs.h>\n#include <ntddk.h>\n#include <ntstrsafe.h>\n#include <dpfilter.h>\n\
                #include \"kernel-extras.h\"\n";
    let all = format!("{base}#include \"kmdf-1.31.h\"\n");
    let generate = |name: &str, header: &str, config: CodegenConfig, wdf_only: bool| {
        let mut builder = wdk_default(&mingw, &extra)
            .with_codegen_config(config)
            .header_contents(&format!("{name}-input.h"), header);
        if wdf_only {
            builder = builder.allowlist_file("(?i).*wdf.*");
        }
        let path = out.join(format!("{name}.rs"));
        builder
            .generate()
            .unwrap_or_else(|error| panic!("bindgen {name}.rs: {error}"))
            .write_to_file(&path)
            .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
    };
    let functions = (CodegenConfig::TYPES | CodegenConfig::VARS).complement();
    generate("constants", &all, CodegenConfig::VARS, false);
    generate("types", &all, CodegenConfig::TYPES, false);
    generate("ntddk", base, functions, false);
    generate("wdf", &all, functions, true);
    write(&out, "wdf_function_count.rs", &function_count());
    write(&out, "call_unsafe_wdf_function_binding.rs", &call_macro(&out.join("types.rs")));
    write(
        &out,
        "test_stubs.rs",
        &format!(
            "use crate::WDFFUNC;\n/// Stub of the function table symbol for test builds.\n\
             #[unsafe(no_mangle)]\npub static mut {WDF_FUNCTIONS_SYMBOL}: *const WDFFUNC = core::ptr::null();\n"
        ),
    );
}

/// `wdk_build::BuilderExt::wdk_default` for KMDF 1.31 on the target being built, with mingw-w64
/// in place of the WDK's include directories.
fn wdk_default(mingw: &str, extra: &str) -> Builder {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("CARGO_CFG_TARGET_ARCH");
    // mingw-w64's headers parse for x86_64 only (their ARM64 paths need varargs clang rejects):
    // both targets' bindings are generated for x64 and the ARM64 build then asserts every
    // generated layout test against the aarch64 layout of the same types (both are LLP64).
    let mut defines = vec!["_WIN64", "_AMD64_", "AMD64"];
    defines.extend(["_KERNEL_MODE", "KMDF_VERSION_MAJOR=1", "KMDF_VERSION_MINOR=31"]);
    println!("cargo::warning=bindings for {arch}: generated from the x86_64 mingw-w64 headers");
    // wdk-build's flags, less -fms-compatibility (it makes clang pose as MSVC, and mingw-w64's
    // headers then find no varargs and reject clang's own intrinsics) and
    // -fdelayed-template-parsing (C++ only).
    let flags = [
        "-fms-extensions",
        "--warn-=no-nonportable-include-path",
        "--warn-=no-pragma-pack",
        "--warn-=no-ignored-attributes",
        "--warn-=no-ignored-pragma-intrinsic",
        "--warn-=no-visibility",
        "--warn-=no-switch",
        "--warn-=no-comment",
        "--warn-=no-deprecated-declarations",
        "--warn-=no-invalid-token-paste",
        "--warn-=no-microsoft",
    ];
    Builder::default()
        .use_core()
        .derive_default(true)
        .generate_cstr(true)
        .detect_include_paths(false)
        .clang_arg("--target=x86_64-w64-mingw32")
        .clang_arg("-fno-builtin")
        .clang_arg("-nostdinc")
        .clang_arg(format!("--include-directory={extra}"))
        .clang_arg(format!("--include-directory={mingw}/ddk"))
        .clang_arg(format!("--include-directory={mingw}"))
        .clang_args(clang_resource_include())
        .clang_args(defines.iter().map(|define| format!("--define-macro={define}")))
        .clang_args(flags)
        .blocklist_item("ExAllocatePoolWithTag")
        .blocklist_item("ExAllocatePoolWithQuotaTag")
        .blocklist_item("ExAllocatePoolWithTagPriority")
        .blocklist_item("ExAllocatePool")
        .opaque_type("_KGDTENTRY64")
        .opaque_type("_KIDTENTRY64")
        .blocklist_item(".*MCG_CAP(?:__bindgen.*)?")
        // clang's AMX intrinsics (amxintrin.h, reached through mingw-w64's intrin.h): a packed
        // and aligned type Rust cannot express, and not in the WDK's headers.
        .blocklist_item("__tile1024i.*")
        .must_use_type("NTSTATUS")
        .must_use_type("HRESULT")
        .default_enum_style(EnumVariation::ModuleConsts)
        .parse_callbacks(Box::new(Rename))
        .formatter(Formatter::Prettyplease)
        .rust_target(RustTarget::stable(91, 0).expect("a Rust target bindgen knows"))
        .rust_edition(RustEdition::Edition2024)
}

/// clang's own headers (`stddef.h`, intrinsics), which `-nostdinc` drops with the host's: those
/// of `CLANG_PATH`, the clang whose LLVM's libclang `LIBCLANG_PATH` makes bindgen load (another
/// version's libclang rejects these headers' builtins).
fn clang_resource_include() -> Vec<String> {
    let clang = env::var("CLANG_PATH").expect("CLANG_PATH: the clang of LIBCLANG_PATH's LLVM");
    let output = std::process::Command::new(&clang)
        .arg("-print-resource-dir")
        .output()
        .unwrap_or_else(|error| panic!("{clang} -print-resource-dir: {error}"));
    assert!(output.status.success(), "{clang} -print-resource-dir failed");
    let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    vec![format!("--include-directory={dir}/include")]
}

/// `wdf_function_count.rs` as `wdk-sys` generates it for KMDF >= 1.25.
fn function_count() -> String {
    "#[allow(clippy::must_use_candidate)]\n\
     /// Returns the number of functions available in the WDF function table.\n\
     /// Should not be used in public API.\n\
     pub fn get_wdf_function_count() -> usize {\n    \
     // SAFETY: `crate::WdfFunctionCount` is generated as a mutable static, but is not supposed to be ever mutated by WDF.\n    \
     (unsafe { crate::WdfFunctionCount }) as usize\n}\n"
        .to_owned()
}

/// `call_unsafe_wdf_function_binding.rs` as `wdk-sys` generates it: the `macro_rules!` front of
/// `wdk-macros`' procedural macro, which reads the generated `types.rs`.
fn call_macro(types: &Path) -> String {
    let mut text = String::new();
    let _ = write!(
        text,
        "/// Calls a WDF function by name through the function table (see wdk-sys).\n\
         #[macro_export]\nmacro_rules! call_unsafe_wdf_function_binding {{\n    \
         ( $($tt:tt)* ) => {{\n        $crate::__proc_macros::call_unsafe_wdf_function_binding! (\n            \
         r\"{}\",\n            $($tt)*\n        )\n    }}\n}}\n",
        types.display()
    );
    text
}

fn write(out: &Path, name: &str, text: &str) {
    let path = out.join(name);
    fs::write(&path, text).unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
}
