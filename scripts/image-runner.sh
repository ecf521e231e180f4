#!/usr/bin/env bash
# The dev-only image runner of `ppm-sim --pep image` (docs/image-backend.md): the runner
# binary (tools/image/runner, built here in release when missing or older than its sources),
# which loads Unicorn (GPL-2.0, never in a shipped binary) and capstone at run time from the
# image backend's virtualenv (target/image/venv, pinned in tools/image/requirements.txt,
# reinstalled only when that file changes).
#
# Usage: scripts/image-runner.sh [--setup-only | --self-test]
#   (no option)   prepares the venv and the runner and runs it: commands on stdin,
#                 answers and host requests on stdout (the line protocol), diagnostics on stderr
#   --setup-only  prepares the venv and the runner and exits
#   --self-test   ruff check, ruff format --check and pytest over tools/image: a fake ppm-sim
#                 (tests/fake_host.py) driving the runner as ppm-sim starts it. The tests boot
#                 target/driver-image/x64/ppm_pep.sys and target/driver-image/arm64/ppm_pep.sys:
#                 build them first with scripts/build-driver-image.sh --arch x64 / --arch arm64
# Environment: PPM_RUNNER_WRAPPER, a command (words split at spaces) the runner runs under, e.g.
# scripts/measure-image-runner.sh's callgrind.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOL=$ROOT/tools/image
VENV=$ROOT/target/image/venv
# The tests' compiled bytecode is kept under target/, never beside the sources.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=$ROOT/target/image/pycache
export PYTHONPATH=$TOOL

mode=run
case "${1:-}" in
    --setup-only) mode=setup; shift ;;
    --self-test) mode=self-test; shift ;;
esac
if [[ $mode != run && $# -gt 0 ]]; then
    echo "usage: $0 [--setup-only | --self-test]" >&2
    exit 2
fi

# The virtualenv (scripts/lib/setup.sh). Progress goes to stderr: stdout belongs to the protocol.
LOG_NAME=image-runner
# shellcheck source=scripts/lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"
python_venv "$VENV" "$TOOL/requirements.txt"

# The runner's path, built (release, quietly, its output on stderr) when it is missing
# or older than a file of its crate, of the doorbell and image-file crates it uses, or the lock
# file.
runner_binary() {
    local binary=${CARGO_TARGET_DIR:-$ROOT/target}/release/ppm-image-runner
    if [[ ! -x $binary ]] || [[ -n $(find "$ROOT/tools/image/runner" "$ROOT/tools/image/doorbell" "$ROOT/tools/image/file" "$ROOT/Cargo.lock" -newer "$binary" -print -quit) ]]; then
        (cd "$ROOT" && cargo build --release --quiet -p ppm-image-runner) >&2 || return 1
    fi
    echo "$binary"
}

case $mode in
    setup)
        runner_binary >/dev/null || { echo "image-runner: cannot build the runner" >&2; exit 2; }
        exit 0
        ;;
    self-test)
        for arch in x64 arm64; do
            if [[ ! -f $ROOT/target/driver-image/$arch/ppm_pep.sys ]]; then
                echo "image-runner: no image at target/driver-image/$arch/ppm_pep.sys (run scripts/build-driver-image.sh --arch $arch)" >&2
                exit 2
            fi
        done
        PPM_RUNNER_BINARY=$(runner_binary) || { echo "image-runner: cannot build the runner" >&2; exit 2; }
        export PPM_RUNNER_BINARY
        cd "$TOOL"
        "$VENV/bin/ruff" check --no-cache -q .
        "$VENV/bin/ruff" format --no-cache --check -q .
        exec "$VENV/bin/python" -m pytest -q
        ;;
    run)
        read -ra wrapper <<<"${PPM_RUNNER_WRAPPER:-}"
        binary=$(runner_binary) || { echo "image-runner: cannot build the runner" >&2; exit 2; }
        exec "${wrapper[@]}" "$binary" "$@"
        ;;
esac
