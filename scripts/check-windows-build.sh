#!/usr/bin/env bash
# The Windows-target check, on Linux: compiles ppm-engine and type-checks the driver crate
# (ppm-pep) for x86_64-pc-windows-msvc and aarch64-pc-windows-msvc, with the workspace lint set
# and clippy, warnings denied.
#
# The driver is checked against the real windows-drivers-rs crates from crates.io (wdk 0.5.0,
# wdk-alloc 0.4.2, wdk-panic 0.5.0, wdk-macros 0.5.2, and wdk-sys 0.5.2's own src/) with two
# replacements applied for this check only (cargo --config patch, in a copy of the workspace):
#   - wdk-sys: its bindings, which the real build script generates from the WDK, are generated
#     here by bindgen with wdk-build's settings from Debian's mingw-w64 kernel headers plus
#     tools/windows-check/include/ (KMDF 1.31 and the few kernel items mingw-w64 lacks, from
#     their documentation);
#   - wdk-build: a stand-in that emits the KMDF cfg (the real one needs the WDK).
# Nothing is linked by this check (scripts/build-driver-image.sh links the image): see docs/verification.md, "Verified here (Linux) / needs Windows (not verified)".
#
# Usage: scripts/check-windows-build.sh [--self-test]
#   --self-test  also checks two broken copies of the driver (a kernel call with a wrong
#                argument type, a misspelled kernel function) and fails unless both are refused.
# Needs (installed with apt-get when missing and running as root): rustc-web, rust-web-src,
# rust-web-clippy (Rust 1.96 with its library source, for -Zbuild-std), mingw-w64-x86-64-dev,
# libclang-dev, clang, llvm (llvm-nm, llvm-objdump), binutils (ar). Network: crates.io (and
# Debian when packages are missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
WORK=$ROOT/target/windows-check
TARGETS=(x86_64-pc-windows-msvc aarch64-pc-windows-msvc)
SELF_TEST=false
case "${1:-}" in
    "") ;;
    --self-test) SELF_TEST=true ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac

LOG_NAME=check-windows-build
# shellcheck source=scripts/lib/windows-target.sh
source "$ROOT/scripts/lib/windows-target.sh"
# shellcheck source=scripts/lib/self-test.sh
source "$ROOT/scripts/lib/self-test.sh"
windows_target_packages
windows_target_env
export CARGO_TARGET_DIR=$WORK/target
# clippy-driver as the workspace wrapper is what cargo-clippy sets up; CLIPPY_ARGS carries
# its flags, separated by __CLIPPY_HACKERY__.
export RUSTC_WORKSPACE_WRAPPER=/usr/bin/clippy-driver
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
windows_target_wdk_crates "$WORK"
copy_workspace() { windows_target_copy_workspace "$1"; }

check_driver() {
    local workspace=$1 target=$2
    # wdk-macros caches the WDF function table it parsed from the generated types.rs in the
    # `scratch` crate's OUT_DIR and never invalidates it: drop it, so that the macro always
    # sees the bindings of this run.
    rm -rf "$CARGO_TARGET_DIR"/debug/build/scratch-*/out/wdk_macros_ast_fragments
    (cd "$workspace" && cargo check -q "${BUILD_STD[@]}" --target "$target" -p ppm-pep \
        "${WDK_PATCH[@]}")
}

status=0
for target in "${TARGETS[@]}"; do
    echo "== ppm-engine for $target"
    start=$SECONDS
    cargo check -q "${BUILD_STD[@]}" --target "$target" -p ppm-engine || status=1
    echo "   $((SECONDS - start)) s"
done
copy_workspace "$WORK/driver"
for target in "${TARGETS[@]}"; do
    echo "== ppm-pep (the driver) for $target, against generated bindings"
    start=$SECONDS
    check_driver "$WORK/driver" "$target" || status=1
    echo "   $((SECONDS - start)) s"
done

# The engine's ARM64 instructions (`MRS` of the ID and timer registers, `DAIF` masking,
# `CNTVCT_EL0`) are inline assembly that `cargo check` never assembles: build a throwaway crate
# that calls each for aarch64-pc-windows-msvc, so LLVM assembles them, and look for every one in
# the object.
echo "== the engine's ARM64 instructions, assembled for aarch64-pc-windows-msvc"
asm_crate="$WORK/arm64-asm"
rm -rf "$asm_crate"
mkdir -p "$asm_crate/src"
cat >"$asm_crate/Cargo.toml" <<TOML
[package]
name = "arm64-asm"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
ppm-engine = { path = "$ROOT/engine" }
[workspace]
TOML
cat >"$asm_crate/src/lib.rs" <<'RUST'
#![no_std]
use ppm_engine::arm64::{SystemRegister, instructions};
/// Every instruction the ARM64 kernel platform executes.
#[inline(never)]
pub fn every_instruction() -> u64 {
    let mut sum = 0_u64;
    for register in [SystemRegister::IdAa64Pfr0El1, SystemRegister::CntfrqEl0] {
        sum = sum.wrapping_add(instructions::read(register).unwrap_or(0));
    }
    sum.wrapping_add(instructions::with_interrupts_masked(instructions::read_virtual_count))
}
RUST
start=$SECONDS
if (cd "$asm_crate" && CARGO_TARGET_DIR="$WORK/arm64-asm-target" \
    cargo build -q --release "${BUILD_STD[@]}" --target aarch64-pc-windows-msvc); then
    objdump_tool=$(command -v llvm-objdump || ls /usr/lib/llvm-*/bin/llvm-objdump 2>/dev/null | tail -n1)
    rlib=$(ls "$WORK"/arm64-asm-target/aarch64-pc-windows-msvc/release/deps/libarm64_asm-*.rlib | head -n1)
    listing="$WORK/arm64-asm.txt"
    (cd "$WORK" && rm -rf arm64-asm-objects && mkdir arm64-asm-objects && cd arm64-asm-objects \
        && ar x "$rlib" && "$objdump_tool" -d --triple=aarch64-pc-windows-msvc ./*.o) >"$listing"
    for instruction in "mrs.*ID_AA64PFR0_EL1" "mrs.*CNTFRQ_EL0" "mrs.*CNTVCT_EL0" \
        "mrs.*DAIF" "msr.*DAIFSet, #3" "msr.*DAIF, x"; do
        if ! grep -Eq "$instruction" "$listing"; then
            echo "check-windows-build: '$instruction' not in the ARM64 object ($listing)" >&2
            status=1
        fi
    done
else
    status=1
fi
echo "   $((SECONDS - start)) s"

# The SEH shim the x64 driver links (src/msr_probe.c): compiled as clang compiles for the MSVC
# target, warnings denied; both functions defined and the SEH handler referenced, i.e. the
# __try/__except really produced unwind data and a handler call.
echo "== src/msr_probe.c (RDMSR/WRMSR under SEH) for x86_64-pc-windows-msvc"
llvm_nm=$(command -v llvm-nm || ls /usr/lib/llvm-*/bin/llvm-nm 2>/dev/null | tail -n1)
if clang --target=x86_64-pc-windows-msvc -fms-extensions -O2 -Wall -Wextra -Werror \
    -c src/msr_probe.c -o "$WORK/msr_probe.obj"; then
    symbols=$("$llvm_nm" "$WORK/msr_probe.obj")
    for wanted in "T ppm_msr_probe_read" "T ppm_msr_probe_write" "U __C_specific_handler"; do
        if ! grep -q "$wanted" <<<"$symbols"; then
            echo "msr_probe.obj: missing '$wanted'" >&2
            status=1
        fi
    done
else
    status=1
fi

# The Linux build depends on no windows-drivers-rs crate and no tracelogging: they are
# `cfg(windows)` dependencies of the driver only.
echo "== the Linux dependency tree has no wdk or tracelogging crate"
linux_tree=$(cargo tree -q --workspace --target x86_64-unknown-linux-gnu -e normal,build,dev --prefix none)
if grep -E '^(wdk|tracelogging)' <<<"$linux_tree"; then
    echo "check-windows-build: the crates above are in the Linux build" >&2
    status=1
fi
if ! cargo tree -q -p ppm-pep --target x86_64-pc-windows-msvc -e normal --prefix none | grep -q '^tracelogging v'; then
    echo "check-windows-build: the Windows driver no longer depends on tracelogging" >&2
    status=1
fi

if $SELF_TEST; then
    # Each broken copy must be refused: a check that cannot fail is no check.
    # name -> sed expression applied to src/kernel_services.rs, and the rustc error expected.
    declare -A breakages=(
        [wrong-argument-type]='s/KeQueryMaximumProcessorCountEx(ALL_GROUPS)/KeQueryMaximumProcessorCountEx(u32::from(ALL_GROUPS))/'
        [misspelled-function]='s/ExFreePool(allocation/ExFreePoool(allocation/'
    )
    declare -A expected=(
        [wrong-argument-type]='error\[E0308\]: mismatched types'
        [misspelled-function]='error\[E0425\]: cannot find function.* `ExFreePoool`'
    )
    for name in "${!breakages[@]}"; do
        copy_workspace "$WORK/broken-$name"
        file=$WORK/broken-$name/src/kernel_services.rs
        before=$(md5sum <"$file")
        sed -i "${breakages[$name]}" "$file"
        if [[ $(md5sum <"$file") == "$before" ]]; then
            echo "self-test $name: the injection did not apply (src/kernel_services.rs changed?)" >&2
            status=1
            continue
        fi
        echo "== self-test: $name must be refused"
        expect_refused "$name" "${expected[$name]}" "$WORK/broken-$name.log" \
            check_driver "$WORK/broken-$name" x86_64-pc-windows-msvc || status=1
    done
fi
exit "$status"
