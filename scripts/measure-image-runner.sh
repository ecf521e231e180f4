#!/usr/bin/env bash
# Measures what one scenario on the image costs the two processes of `--pep image`, in
# instructions, with callgrind: ppm-sim's own, and the image runner's main thread.
#
# Usage: scripts/measure-image-runner.sh [SCENARIO | FILE.toml]   (default: nested-reads)
#
# Runs `ppm-sim validate SCENARIO --pep image` (a built-in scenario) or `ppm-sim run FILE
# --pep image` once, ppm-sim under callgrind (the runner it starts not traced) and the runner
# under a callgrind of its own (scripts/image-runner.sh's PPM_RUNNER_WRAPPER), and prints both
# counts. Two things are held fixed, each of which moved the runner's count by up to 5 % from
# run to run: address-space randomisation is off (`setarch -R`: where ppm-sim's payloads lie
# decides which pages the calls share, so what the runner maps, compares and protects), and
# only the runner's main thread is counted (the hang watchdog's thread wakes on the wall
# clock); and the two processes share a processor, waiting on their pipes
# (PPM_IMAGE_HANDOFF=shared: a spinning wait's instructions would count the wall clock's time).
# Run to run the runner's figure then agrees to a few thousand
# instructions; ppm-sim's moves by its progress lines only (one per 10 s). Wall-clock time on the 2-core VM varies by
# 15 % between runs of the same code: compare these figures instead.
#
# Exit status: 0 with the figures; 1 when the scenario failed; 2 when it cannot measure.
# Environment: CARGO_TARGET_DIR (default <repo>/target).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG_NAME=measure-image-runner
# shellcheck source=scripts/lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"

die() {
    echo "$LOG_NAME: $*" >&2
    exit 2
}

if (($# > 1)); then
    die "usage: $0 [SCENARIO | FILE.toml] (one at most)"
fi
SCENARIO="${1:-nested-reads}"
if [[ $SCENARIO == *.toml ]]; then
    [[ -f $SCENARIO ]] || die "no scenario file $SCENARIO"
    COMMAND=(run "$SCENARIO")
else
    COMMAND=(validate "$SCENARIO")
fi
for arch in x64 arm64; do
    [[ -f $ROOT/target/driver-image/$arch/ppm_pep.sys ]] ||
        die "no image at target/driver-image/$arch/ppm_pep.sys (run scripts/build-driver-image.sh --arch $arch)"
done
command -v valgrind >/dev/null 2>&1 || debian_install valgrind || die "valgrind is missing (install it: apt-get install valgrind)"
command -v setarch >/dev/null 2>&1 || die "setarch is missing (util-linux)"
BIN="$(release_ppm_sim)" || die "cannot build ppm-sim"
"$ROOT/scripts/image-runner.sh" --setup-only || die "cannot prepare the image runner"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# PPM_RUNNER_WRAPPER is split at spaces.
[[ $WORK != *[[:space:]]* ]] || die "the temporary directory $WORK holds a space (set TMPDIR)"

export PPM_IMAGE_HANDOFF=shared
export PPM_RUNNER_WRAPPER="valgrind --tool=callgrind --separate-threads=yes -q --callgrind-out-file=$WORK/runner.out"
status=0
setarch "$(uname -m)" -R valgrind --tool=callgrind -q --callgrind-out-file="$WORK/ppm-sim.out" \
    "$BIN" "${COMMAND[@]}" --pep image >"$WORK/report" 2>"$WORK/log" || status=$?
if ((status == 2)) || [[ ! -f $WORK/ppm-sim.out ]]; then
    cat "$WORK/log" >&2
    die "ppm-sim could not run ${COMMAND[*]} --pep image"
fi

# The count of a callgrind output (its `totals:` or `summary:` line).
instructions() {
    awk '/^(totals|summary):/ { print $2; exit }' "$1"
}
# The runner's main thread is its first (callgrind names the files OUT-01, OUT-02, ...).
runner_out=$(find "$WORK" -name 'runner.out*-01' | head -n 1)
[[ -n $runner_out ]] || die "the runner left no callgrind output"
sim=$(instructions "$WORK/ppm-sim.out")
runner=$(instructions "$runner_out")
tail -n 1 "$WORK/report"
# 1234567 as 1 234 567.
grouped() {
    sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\| \)/\1 \2\3/' -e 'ta' <<<"$1"
}
printf '%s: %s on the image: ppm-sim %s instructions, the runner (main thread) %s\n' \
    "$LOG_NAME" "$SCENARIO" "$(grouped "$sim")" "$(grouped "$runner")"
if ((status != 0)); then
    echo "$LOG_NAME: the scenario failed (exit $status): the figures are of a failing run" >&2
    exit 1
fi
