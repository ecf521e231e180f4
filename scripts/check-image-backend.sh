#!/usr/bin/env bash
# The image backend (docs/image-backend.md): every built-in scenario run against the machine
# code of the linked driver image of its architecture (target/driver-image/x64 and arm64), by
# `ppm-sim validate --pep image --verifier`, after the runner's own lint and tests.
#
# Usage: scripts/check-image-backend.sh [--self-test]
#   (no option)  scripts/image-runner.sh --self-test (ruff, pytest of tools/image), then
#                `ppm-sim validate --pep image --verifier` over every built-in scenario (the
#                release ppm-sim of scripts/lib/setup.sh's release_ppm_sim, in the shared
#                target/): each scenario under Driver Verifier's rules, then each
#                architecture's systematic runs (docs/verifier.md), its output and wall time
#                printed; then
#                sim/tests/scenarios/registry-issues.toml on both backends: the ignored registry
#                values the image lists in its State key must be the engine's, line for line
#   --self-test  also proves the checks can fail: three copies of the image broken on purpose
#                (ppm_image.broken_image, written to target/image/self-test/,
#                the real image never modified) must each fail `validate default` with a named
#                check, and the unbroken image must pass it:
#                  kmdf-index         WdfDriverCreate called through KMDF table index 117
#                                     -> image.kmdf_table (and image.bugcheck)
#                  swapped-callbacks  PEP_INFORMATION's DPM and PPM callback fields swapped
#                                     -> dpm.processors_accepted (and ppm.boot_queries)
#                  early-return       the PPM callback returns TRUE before writing its output
#                                     -> capabilities.consistent (and ppm.null_data_refused)
#                and the ARM64 image with its AMU guards' scope tables emptied must fail
#                `validate arm64` with image.bugcheck (the AMU fault unhandled: 0x1E).
#                Driver Verifier's rules must fail too (docs/verifier.md, "Each rule can
#                fail"): `validate single --verifier` with PPM_VERIFIER_TEST=max-irql=
#                KeGetCurrentProcessorNumberEx:2 (a routine FEEDBACK_READ calls, ruled as if
#                the image called it above its IRQL) -> image.irql; with
#                PPM_VERIFIER_TEST=skip-frees (every free skipped) -> the low resources runs
#                whose DriverEntry fails leak; the guard-less ARM64 image under `validate arm64
#                --verifier` -> the access faults bugcheck.
# Needs the image and its stack.txt: scripts/check-driver-image.sh builds and checks both
# (scripts/build-driver-image.sh builds the image alone). Exit 1 when a check fails, 2 when
# the image is missing or the arguments are wrong.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
SELF_TEST=false
case "${1:-}" in
    "") ;;
    --self-test) SELF_TEST=true ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
if [[ $# -gt 1 ]]; then
    echo "usage: $0 [--self-test]" >&2
    exit 2
fi
LOG_NAME=check-image-backend
# shellcheck source=scripts/lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"

IMAGE=$ROOT/target/driver-image/x64/ppm_pep.sys
for arch in x64 arm64; do
    if [[ ! -f $ROOT/target/driver-image/$arch/ppm_pep.sys ]]; then
        echo "check-image-backend: no image at target/driver-image/$arch/ppm_pep.sys: build it" \
            "with \`bash scripts/build-driver-image.sh --arch $arch\` (or" \
            "scripts/check-driver-image.sh, which builds both and writes their stack.txt)" >&2
        exit 2
    fi
    if [[ ! -f $ROOT/target/driver-image/$arch/stack.txt ]]; then
        echo "check-image-backend: no target/driver-image/$arch/stack.txt beside the image (the" \
            "static stack figures image.stack compares with): run \`bash scripts/check-driver-image.sh\`" >&2
        exit 2
    fi
done

echo "== the runner: ruff, pytest"
start=$SECONDS
bash scripts/image-runner.sh --self-test
echo "   $((SECONDS - start)) s"

echo "== ppm-sim (release, line tables: the build scripts/measure-read-path.sh uses too)"
start=$SECONDS
SIM=$(release_ppm_sim)
echo "   $((SECONDS - start)) s"

echo "== ppm-sim validate --pep image --verifier (every built-in scenario, Driver Verifier's rules)"
start=${EPOCHREALTIME/./}
status=0
"$SIM" validate --pep image --verifier || status=1
elapsed=$(( (${EPOCHREALTIME/./} - start) / 100000 ))
echo "   $((elapsed / 10)).$((elapsed % 10)) s (validate --pep image --verifier)"
if [[ $status -ne 0 ]]; then
    echo "check-image-backend: validate --pep image --verifier failed" >&2
fi

echo "== ppm-sim run --pep image: the ignored registry values, read back from the image's State"
# The image writes ConfigurationIssue1, ... itself; its list must be the engine's, line for line.
registry_issues=sim/tests/scenarios/registry-issues.toml
ignored() { "$SIM" run "$registry_issues" "$@" | sed -n '/^configuration: /,/^$/p'; }
from_engine=$(ignored --pep engine) || status=1
from_image=$(ignored --pep image) || status=1
if [[ -n $from_image && $from_image == "$from_engine" ]]; then
    echo "   $(head -n 1 <<<"$from_image") the same from both backends"
else
    echo "check-image-backend: the image lists other ignored values than the engine:" >&2
    diff <(echo "$from_engine") <(echo "$from_image") >&2 || true
    status=1
fi

if $SELF_TEST; then
    # shellcheck source=scripts/lib/self-test.sh
    source "$ROOT/scripts/lib/self-test.sh"
    echo "== self-test: broken images must fail named checks"
    start=$SECONDS
    broken=$ROOT/target/image/self-test
    mkdir -p "$broken"
    PY=$ROOT/target/image/venv/bin/python
    export PYTHONPATH=$ROOT/tools/image
    validate() {
        "$SIM" validate default --pep image --image "$1"
    }
    # The unbroken image passes the scenario the broken ones fail.
    if validate "$IMAGE" >"$broken/unbroken.log" 2>&1; then
        echo "   unbroken image: validate default passed"
    else
        echo "self-test: the unbroken image fails validate default (see $broken/unbroken.log)" >&2
        status=1
    fi
    # Per broken image: the FAIL line expect_refused requires, then others the same run must
    # also print.
    declare -A expected=(
        [kmdf-index]='^  FAIL image\.kmdf_table +table entries src/ never calls: .*\(index 117\)'
        [swapped-callbacks]='^  FAIL dpm\.processors_accepted +\\_SB\.CPU0: PREPARE_DEVICE returned FALSE'
        [early-return]='^  FAIL capabilities\.consistent +processor 0: FeedbackCounterCount 0 '
    )
    declare -A also=(
        [kmdf-index]='^  FAIL image\.bugcheck +bugcheck 0x1e at DriverEntry\+0x[0-9a-f]+: KMDF function table index 117'
        [swapped-callbacks]='^  FAIL ppm\.boot_queries +QUERY_PLATFORM_STATES: FALSE'
        [early-return]='^  FAIL ppm\.null_data_refused +QUERY_CAPABILITIES with NULL data: returned TRUE'
    )
    for kind in kmdf-index swapped-callbacks early-return; do
        image=$broken/$kind.sys
        log=$broken/$kind.log
        rm -f "$image"
        if ! "$PY" -m ppm_image.broken_image "$kind" "$IMAGE" "$image" | sed 's/^/   /'; then
            echo "self-test $kind: the image could not be broken as intended" >&2
            status=1
            continue
        fi
        if ! expect_refused "$kind" "${expected[$kind]}" "$log" validate "$image"; then
            status=1
        elif line=$(grep -m1 -E "${also[$kind]}" "$log"); then
            echo "   also:    $line"
        else
            echo "self-test $kind: no line matching ${also[$kind]} (see $log)" >&2
            status=1
        fi
    done
    # The ARM64 image with every AMU guard's scope table emptied (the image check's patch,
    # its map and stack.txt copied beside it): the arm64
    # scenario's AMU fault is then an exception no frame handles.
    arm64=$ROOT/target/driver-image/arm64
    kind=arm64-scope-removed
    image=$broken/$kind.arm64/ppm_pep.sys
    log=$broken/$kind.log
    mkdir -p "$(dirname "$image")"
    rm -f "$image"
    if ! "$PY" -m ppm_image.broken_image "$kind" "$arm64/ppm_pep.sys" "$image" | sed 's/^/   /'; then
        echo "self-test $kind: the image could not be broken as intended" >&2
        status=1
    elif ! expect_refused "$kind" \
        '^  FAIL image\.bugcheck +bugcheck 0x1e at ppm_amu_read_[a-z0-9]+\+0x0: exception 0xc000001d not handled' \
        "$log" "$SIM" validate arm64 --pep image --image "$image"; then
        status=1
    fi
    # Driver Verifier's rules, each made to fail (docs/verifier.md).
    if ! expect_refused "verifier-guardless-access" \
        '^  FAIL arm64: mrs of 0xdea[01] at 0x[0-9a-f]+ faulting \((boot|runtime)\): bugcheck 0x1e' \
        "$broken/verifier-guardless-access.log" \
        "$SIM" validate arm64 --pep image --verifier --image "$image"; then
        status=1
    fi
    if ! PPM_VERIFIER_TEST=max-irql=KeGetCurrentProcessorNumberEx:2 expect_refused \
        "verifier-irql" \
        '^  FAIL image\.irql +KeGetCurrentProcessorNumberEx called at IRQL 15 from 0x[0-9a-f]+, allowed up to IRQL 2' \
        "$broken/verifier-irql.log" "$SIM" validate single --pep image --verifier; then
        status=1
    fi
    if ! PPM_VERIFIER_TEST=skip-frees expect_refused "verifier-skipped-free" \
        '^  FAIL x64: [A-Za-z0-9]+ at 0x[0-9a-f]+ failing \(call [0-9]+\): [0-9]+ pool blocks leaked' \
        "$broken/verifier-skipped-free.log" "$SIM" validate single --pep image --verifier; then
        status=1
    fi
    echo "   $((SECONDS - start)) s (self-test)"
fi
exit "$status"
