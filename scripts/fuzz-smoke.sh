#!/usr/bin/env bash
# A short, deterministic fuzzing pass over every cargo-fuzz target: each replays its committed
# corpus (fuzz/corpus/<target>, regression seeds included) and then fuzzes RUNS more inputs from
# a fixed seed, under AddressSanitizer with debug assertions and overflow checks (`-O -a`:
# optimized, with the assertions that `-O` alone drops). It keeps the harness honest: a
# harness that no longer matches the engine (a notification the engine now answers but the
# harness still calls "unhandled") fails here, not months later in a long run.
#
# Usage: scripts/fuzz-smoke.sh            (RUNS, default 20000 per target)
#
# Each target's fuzzing (replay and RUNS inputs, after the build) must finish within
# MAX_SECONDS (default 60, libFuzzer's own count of seconds): a slower target fails the smoke
# (exit 1), so that CI's pass stays short. The ppm_notification corpus holds a seed that
# resumes from a system state on the fixed-counter source (the engine re-enables the fixed
# counters, a write pmc::DECLARED_WRITES allows; the harness asserts every write against it).
#
# Needs cargo-fuzz (installed from crates.io when missing) and a nightly compiler for
# -Zsanitizer: the installed stable toolchain is used with RUSTC_BOOTSTRAP=1. The long runs
# are in fuzz/README.md. Exit 0 clean, 1 a target crashed, 2 could not build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-20000}"
MAX_SECONDS="${MAX_SECONDS:-60}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked --version 0.13.2 --quiet
fi

cd "$ROOT/fuzz"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

build() {
    if ! cargo fuzz build -O -a "$@" >"$WORK/build.log" 2>&1; then
        tail -30 "$WORK/build.log"
        echo "fuzz-smoke: cargo fuzz build $* failed" >&2
        exit 2
    fi
}

run() {
    local target="$1"
    shift
    mkdir -p "$WORK/$target" "artifacts/$target"
    local seeds
    seeds="$(find "corpus/$target" -type f | wc -l)"
    if ! cargo fuzz run -O -a "$@" "$target" "$WORK/$target" "corpus/$target" -- \
        -seed=1 -runs="$RUNS" -artifact_prefix="artifacts/$target/" >"$WORK/$target.log" 2>&1; then
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$WORK/$target.log" | head -20
        echo "fuzz-smoke: $target crashed; the input is in fuzz/artifacts/$target/ (replay: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -O -a $target <file>)" >&2
        exit 1
    fi
    local summary seconds
    summary="$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$WORK/$target.log" | tail -1)"
    seconds="$(echo "$summary" | awk '{print $5}')"
    echo "   $target: $seeds committed seeds replayed, $(echo "$summary" | awk '{print $2}') runs in ${seconds:-?} s, no crash"
    if [ -z "$seconds" ] || [ "$seconds" -gt "$MAX_SECONDS" ]; then
        echo "fuzz-smoke: $target took ${seconds:-an unknown number of} seconds, over MAX_SECONDS=$MAX_SECONDS" >&2
        exit 1
    fi
}

build
for target in ppm_notification dpm_notification sequence; do
    run "$target"
done
build --features scenario scenario_parser
run scenario_parser --features scenario
