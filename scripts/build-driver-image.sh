#!/usr/bin/env bash
# Links the real driver image, ppm_pep.sys, on Linux: a test artifact, never shipped.
#
# `cargo rustc --release` of the driver crate (src/ and ppm-engine, -Zbuild-std=core,alloc)
# for x86_64-pc-windows-msvc or aarch64-pc-windows-msvc, linked by lld-link with the arguments
# wdk-build 0.6.0 emits for a KMDF driver (configure_binary_build: /DRIVER /NODEFAULTLIB
# /SUBSYSTEM:NATIVE /KERNEL /ENTRY:FxDriverEntry /IGNORE:4257 /NXCOMPAT /DYNAMICBASE /MAP
# /MAPINFO:EXPORTS /OPT:REF,ICF /INTEGRITYCHECK /MANIFEST:NO; rustc adds /DEBUG, hence the
# PDB), against:
#   - import libraries made here by llvm-dlltool from tools/image/imports/*.def
#     (ntoskrnl.exe, HAL.dll, WDFLDR.SYS: every name a documented export, its documentation
#     named beside it) in place of the WDK's ntoskrnl.lib, hal.lib and WdfLdr.lib;
#   - tools/image/stubs/kmdf_stub.c, the project's stand-in for the WDK's WdfDriverEntry.lib
#     (FxDriverEntry and the KMDF 1.31 statics);
#   - on x64, src/msr_probe.c's MSVC branch (tools/image/stubs/msr_probe_msvc.c), compiled by
#     clang with -fasync-exceptions, in place of build.rs' MSVC compile.
# The crate is compiled with the bindings and wdk-build stand-in of the Windows-target check
# (scripts/lib/windows-target.sh). build.rs does nothing on a Linux host.
#
# Usage: scripts/build-driver-image.sh [--arch x64|arm64] [--out DIR]   (default x64)
# Output: target/driver-image/<arch>/ (or DIR) ppm_pep.sys, ppm_pep.pdb, ppm_pep.map, build.log
# and the link's inputs (the import libraries, the C objects); the image's path is the one
# line printed on stdout, everything else goes to stderr. The files named are overwritten.
# Environment: PPM_MSR_PROBE_CFLAGS, extra clang flags of the SEH shim (the self-test builds
# its RDMSR-outside-__try variant with -DPPM_INLINE_READMSR).
# One build at a time (the workspace copy and cargo's target dir under target/driver-image/work
# are shared by both architectures).
# Needs: what scripts/lib/windows-target.sh lists, plus lld-19 (lld-link); apt-installed when
# missing and running as root. Network: crates.io (and Debian when packages are missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
LOG_NAME=build-driver-image
ARCH=x64
OUT=
while (($#)); do
    case "$1" in
        --out)
            [[ $# -ge 2 ]] || { echo "$LOG_NAME: --out needs a directory" >&2; exit 2; }
            OUT=$2
            shift 2
            ;;
        --arch)
            [[ $# -ge 2 ]] || { echo "$LOG_NAME: --arch needs a value: x64 or arm64" >&2; exit 2; }
            ARCH=$2
            shift 2
            ;;
        *) echo "usage: $0 [--arch x64|arm64] [--out DIR]" >&2; exit 2 ;;
    esac
done
case "$ARCH" in
    x64) TARGET=x86_64-pc-windows-msvc DLLTOOL_MACHINE=i386:x86-64 ;;
    arm64) TARGET=aarch64-pc-windows-msvc DLLTOOL_MACHINE=arm64 ;;
    *) echo "$LOG_NAME: --arch must be x64 or arm64, not '$ARCH'" >&2; exit 2 ;;
esac

LLD_LINK=/usr/lib/llvm-19/bin/lld-link
# shellcheck source=scripts/lib/windows-target.sh
source "$ROOT/scripts/lib/windows-target.sh"
windows_target_packages "lld-19:$LLD_LINK" >&2
windows_target_env

OUT=${OUT:-$ROOT/target/driver-image/$ARCH}
WORK=$ROOT/target/driver-image/work
mkdir -p "$OUT" "$WORK"
windows_target_wdk_crates "$WORK" >&2
windows_target_copy_workspace "$WORK/driver"
export CARGO_TARGET_DIR=$WORK/target

dlltool=$(command -v llvm-dlltool || ls /usr/lib/llvm-*/bin/llvm-dlltool | tail -n1)

# Import libraries, one per kernel module, from the project's .def files.
libs=()
for def in "$ROOT"/tools/image/imports/*.def; do
    lib=$OUT/$(basename "$def" .def).lib
    module=$(awk '$1 == "LIBRARY" { print $2; exit }' "$def")
    [[ -n $module ]] || { echo "$LOG_NAME: $def has no LIBRARY line" >&2; exit 1; }
    "$dlltool" -m "$DLLTOOL_MACHINE" -d "$def" -D "$module" -l "$lib"
    libs+=("$lib")
done

# tracelogging 1.2.4 declares `UuidCreate` under `#[link(name = "rpcrt4")]` (its user-mode
# `Guid::new`, which the driver never calls), so rustc names rpcrt4.lib on every link line of a
# crate that depends on it, kernel_mode or not. An import library with no export satisfies that
# name and can never add an import: a call to anything of RPCRT4 would be an undefined symbol,
# and the image check refuses any module but the three kernel ones. (On Windows, link.exe finds
# the SDK's user-mode rpcrt4.lib through the eWDK prompt's LIB; unused, it adds nothing.)
empty_libs=$OUT/empty-libs
mkdir -p "$empty_libs"
printf 'LIBRARY RPCRT4.dll\nEXPORTS\n' >"$empty_libs/rpcrt4.def"
"$dlltool" -m "$DLLTOOL_MACHINE" -d "$empty_libs/rpcrt4.def" -D RPCRT4.dll -l "$empty_libs/rpcrt4.lib"

# The C objects: the KMDF stub stand-in, and on x64 the SEH shim's MSVC branch.
kmdf_count=$(sed -n 's/^ *WdfFunctionTableNumEntries = \([0-9]*\),.*/\1/p' "$ROOT/tools/windows-check/include/kmdf-1.31.h")
[[ -n $kmdf_count ]] || { echo "$LOG_NAME: WdfFunctionTableNumEntries not found in kmdf-1.31.h" >&2; exit 1; }
# -fasynchronous-unwind-tables: .pdata/.xdata for every function, as MSVC emits (-ffreestanding
# alone drops them).
cflags=(--target="$TARGET" -fms-extensions -ffreestanding -fasynchronous-unwind-tables
    -fno-stack-protector -D_KERNEL_MODE -O2 -Wall -Wextra -Werror)
objects=("$OUT/kmdf_stub.obj")
clang "${cflags[@]}" -DPPM_WDF_FUNCTION_COUNT="$kmdf_count" \
    -c "$ROOT/tools/image/stubs/kmdf_stub.c" -o "$OUT/kmdf_stub.obj"
if [[ $ARCH == x64 ]]; then
    # -fasync-exceptions: MSVC's /EHa semantics, hardware exceptions inside __try. clang's C
    # __try still covers calls only, hence the calls msr_probe_msvc.c routes RDMSR/WRMSR
    # through; the image check reads the scope table to prove the instructions are covered.
    clang "${cflags[@]}" -fasync-exceptions ${PPM_MSR_PROBE_CFLAGS:-} \
        -c "$ROOT/tools/image/stubs/msr_probe_msvc.c" -o "$OUT/msr_probe.obj"
    objects+=("$OUT/msr_probe.obj")
fi

# wdk-build 0.6.0's configure_binary_build for a KMDF driver (the map written here), then:
#   /RELEASE     the CheckSum, which link.exe sets by default for /SUBSYSTEM:NATIVE and lld-link
#                only when asked;
#   /DRIVER:WDM  IMAGE_DLLCHARACTERISTICS_WDM_DRIVER, which link.exe sets only for
#                /DRIVER:WDM, not for wdk-build's plain /DRIVER (see docs/driver-image.md:
#                the cargo make image lacks the flag);
# and the project's inputs.
link_args=(/DRIVER /NODEFAULTLIB /SUBSYSTEM:NATIVE /KERNEL /ENTRY:FxDriverEntry /IGNORE:4257
    /NXCOMPAT /DYNAMICBASE "/MAP:$OUT/ppm_pep.map" /MAPINFO:EXPORTS /OPT:REF,ICF /INTEGRITYCHECK
    /MANIFEST:NO /RELEASE /DRIVER:WDM "/LIBPATH:$empty_libs" "${objects[@]}" "${libs[@]}")
rustc_args=(-C "linker=$LLD_LINK")
for arg in "${link_args[@]}"; do
    rustc_args+=(-C "link-arg=$arg")
done

start=$SECONDS
echo "== ppm_pep.sys for $TARGET (cargo rustc --release, lld-link)" >&2
# wdk-macros caches the WDF function table it parsed in the `scratch` crate's OUT_DIR and
# never invalidates it (see check-windows-build.sh).
rm -rf "$CARGO_TARGET_DIR"/release/build/scratch-*/out/wdk_macros_ast_fragments
# cargo's output (the generated bindings' warnings on every run) goes to a log, shown on failure.
log=$OUT/build.log
if ! (cd "$WORK/driver" && cargo rustc -q --release "${BUILD_STD[@]}" --target "$TARGET" -p ppm-pep \
    --lib --crate-type cdylib "${WDK_PATCH[@]}" -- "${rustc_args[@]}") >"$log" 2>&1; then
    grep -E -A12 '^(error|lld-link: error)' "$log" | head -n 80 >&2 || tail -n 40 "$log" >&2
    echo "$LOG_NAME: the build failed (full output: $log)" >&2
    exit 1
fi
built=$CARGO_TARGET_DIR/$TARGET/release
cp "$built/ppm_pep.dll" "$OUT/ppm_pep.sys"
cp "$built/ppm_pep.pdb" "$OUT/ppm_pep.pdb"
echo "   $((SECONDS - start)) s" >&2
echo "$OUT/ppm_pep.sys"
