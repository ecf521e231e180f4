#!/usr/bin/env bash
# The dev-only image runner of `ppm-sim --pep image` (docs/image-backend.md): Unicorn (GPL-2.0,
# never in a shipped binary), capstone, pefile and orjson in the image backend's virtualenv
# (target/image/venv, pinned in tools/image/requirements.txt, reinstalled only when that file
# changes).
#
# Usage: scripts/image-runner.sh [--setup-only | --self-test]
#   (no option)   prepares the venv and runs the runner (python -m ppm_image.runner, from
#                 tools/image): commands on stdin,
#                 answers and host requests on stdout (the line protocol), diagnostics on stderr
#   --setup-only  prepares the venv and exits
#   --self-test   ruff check, ruff format --check and pytest over tools/image (the tests
#                 boot target/driver-image/x64/ppm_pep.sys and target/driver-image/arm64/ppm_pep.sys:
#                 build them first with scripts/build-driver-image.sh --arch x64 / --arch arm64)
# Environment: PPM_RUNNER_WRAPPER, a command (words split at spaces) the runner runs under,
# e.g. scripts/measure-image-runner.sh's callgrind.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOL=$ROOT/tools/image
VENV=$ROOT/target/image/venv
# Compiled bytecode is kept under target/ (never beside the sources): a runner starts once per
# scenario and per Driver Verifier run, and compiling its modules afresh cost 0.15 s a start.
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

case $mode in
    setup) exit 0 ;;
    self-test)
        for arch in x64 arm64; do
            if [[ ! -f $ROOT/target/driver-image/$arch/ppm_pep.sys ]]; then
                echo "image-runner: no image at target/driver-image/$arch/ppm_pep.sys (run scripts/build-driver-image.sh --arch $arch)" >&2
                exit 2
            fi
        done
        cd "$TOOL"
        "$VENV/bin/ruff" check --no-cache -q .
        "$VENV/bin/ruff" format --no-cache --check -q .
        exec "$VENV/bin/python" -m pytest -q
        ;;
    run)
        read -ra wrapper <<<"${PPM_RUNNER_WRAPPER:-}"
        exec "${wrapper[@]}" "$VENV/bin/python" -m ppm_image.runner "$@"
        ;;
esac
