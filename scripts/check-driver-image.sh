#!/usr/bin/env bash
# Builds the Linux-linked driver images (scripts/build-driver-image.sh, x64 and ARM64) and
# checks them the way Windows' loader and a reviewer would (`ppm-image-runner check`, the image
# backend's runner binary, tools/image/runner, built by scripts/image-runner.sh --setup-only;
# see docs/driver-image.md for what each check proves). The checker's own tests are the
# crate's (cargo test -p ppm-image-runner).
#
# Usage: scripts/check-driver-image.sh [--self-test]
#   --self-test  also requires each broken image to fail the check with its own message:
#                an undocumented import, a user-mode import, a writable+executable section, a
#                frame over budget (x64 and ARM64), ARM64 AMU guards without their __except
#                scope, with a handler that is not __C_specific_handler, and making a call
#                (patched copies of the images, ppm_image.broken_image) and an
#                RDMSR outside the __try scope (the x64 SEH shim relinked with clang's inline
#                RDMSR). Nothing is committed: all under target/.
# Output: target/driver-image/<arch>/ppm_pep.sys (+ .pdb, .map), stack.txt (the stack
# figures); exit 1 when a check fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
SELF_TEST=false
case "${1:-}" in
    "") ;;
    --self-test) SELF_TEST=true ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
TOOL=$ROOT/tools/image
VENV=$ROOT/target/image/venv
export PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=$TOOL

# The image backend's virtualenv (scripts/lib/setup.sh): broken_image.py of the self-test.
LOG_NAME=check-driver-image
# shellcheck source=scripts/lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"
python_venv "$VENV" "$TOOL/requirements.txt"
PY=$VENV/bin/python

echo "== the checker (ppm-image-runner, release)"
start=$SECONDS
bash scripts/image-runner.sh --setup-only
CHECKER=${CARGO_TARGET_DIR:-$ROOT/target}/release/ppm-image-runner
echo "   $((SECONDS - start)) s"

objdump=$(command -v llvm-objdump || ls /usr/lib/llvm-*/bin/llvm-objdump 2>/dev/null | tail -n1)
check() {
    local arch=$1 dir=$2 image=$3
    "$CHECKER" check "$image" --map "$dir/ppm_pep.map" --imports "$TOOL/imports" \
        --arch "$arch" --objdump "$objdump" ${4:+--stack-report "$4"}
}

status=0
for arch in x64 arm64; do
    start=$SECONDS
    image=$(bash scripts/build-driver-image.sh --arch "$arch")
    echo "== checks of $image ($(stat -c %s "$image") bytes)"
    dir=$(dirname "$image")
    check "$arch" "$dir" "$image" "$dir/stack.txt" || status=1
    echo "   $((SECONDS - start)) s (build and checks)"
done

if $SELF_TEST; then
    # shellcheck source=scripts/lib/self-test.sh
    source "$ROOT/scripts/lib/self-test.sh"
    echo "== self-test: broken images must fail"
    x64=$ROOT/target/driver-image/x64
    broken=$ROOT/target/driver-image/self-test
    mkdir -p "$broken"
    declare -A expected=(
        [undocumented-import]='import ntoskrnl\.exe!KeBugCheckEy: not in the documented exports'
        [user-mode-import]='import USER32\.dll!.*: USER32\.dll is a user-mode DLL'
        [wx-section]='section \.text is both writable and executable'
        [frame-over-budget]='stack FxDriverEntry: [0-9]+ bytes exceeds its budget of'
        [frame-over-budget-arm64]='stack FxDriverEntry: [0-9]+ bytes exceeds its budget of'
        [rdmsr-outside-try]='ppm_msr_probe_read: rdmsr at 0x[0-9a-f]+ lies outside its __try scope'
        [arm64-scope-removed]='ppm_amu_read_amevcntr00: mrs of AMEVCNTR00_EL0 at 0x[0-9a-f]+ lies outside its __except scope'
        [arm64-foreign-handler]='ppm_amu_read_amcgcr: its handler .* is not __C_specific_handler'
        [arm64-guard-calls]='ppm_amu_read_amevcntr00: the AMU guard makes a call at 0x[0-9a-f]+'
    )
    arm64=$ROOT/target/driver-image/arm64
    for kind in undocumented-import user-mode-import wx-section frame-over-budget \
        frame-over-budget-arm64 rdmsr-outside-try arm64-scope-removed arm64-foreign-handler \
        arm64-guard-calls; do
        arch=x64
        if [[ $kind == arm64-* ]]; then
            arch=arm64 dir=$arm64 image=$broken/$kind.sys
            "$PY" -m ppm_image.broken_image "$kind" "$arm64/ppm_pep.sys" "$image" | sed 's/^/   /'
        elif [[ $kind == rdmsr-outside-try ]]; then
            # The SEH shim with the RDMSR clang inlines (no out-of-line leaf): clang's scope
            # table then covers no instruction of the read probe.
            dir=$broken/$kind
            image=$(PPM_MSR_PROBE_CFLAGS=-DPPM_INLINE_READMSR bash scripts/build-driver-image.sh --arch x64 --out "$dir")
        elif [[ $kind == frame-over-budget-arm64 ]]; then
            arch=arm64 dir=$arm64 image=$broken/$kind.sys
            "$PY" -m ppm_image.broken_image frame-over-budget "$arm64/ppm_pep.sys" "$image" | sed 's/^/   /'
        else
            dir=$x64
            image=$broken/$kind.sys
            "$PY" -m ppm_image.broken_image "$kind" "$x64/ppm_pep.sys" "$image" | sed 's/^/   /'
        fi
        expect_refused "$kind" "${expected[$kind]}" "$broken/$kind.log" \
            check "$arch" "$dir" "$image" || status=1
    done
fi
exit "$status"
