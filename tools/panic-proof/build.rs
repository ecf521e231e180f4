//! Makes every undefined symbol a link error, so that a reference to the undefined panic symbol
//! (see `src/lib.rs`) fails the build. libc only resolves the `mem*` intrinsics the compiler
//! may emit.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,--no-undefined");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--gc-sections");
    println!("cargo:rustc-link-lib=c");
    println!("cargo:rerun-if-changed=build.rs");
}
