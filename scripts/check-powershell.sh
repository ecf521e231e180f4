#!/usr/bin/env bash
# Parses every scripts/*.ps1 with a real PowerShell grammar (PyPI tree-sitter 0.26.1 and
# tree-sitter-powershell 0.26.4, in a venv under target/) and fails on a syntax error; see
# tools/powershell-check/check.py for the one grammar gap it accepts, and reports.
#   --self-test  also requires a script with an unbalanced brace and one with a missing
#                closing parenthesis to fail, and the accepted construct alone to pass.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=target/powershell-check/venv
if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c 'import tree_sitter_powershell' 2>/dev/null; then
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
        if [[ $(id -u) -eq 0 ]]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            rm -rf "$VENV"
            python3 -m venv "$VENV"
        else
            echo "check-powershell: python3 -m venv failed (install python3-venv)" >&2
            exit 1
        fi
    fi
    "$VENV/bin/pip" install -q --disable-pip-version-check tree-sitter==0.26.1 tree-sitter-powershell==0.26.4
fi
CHECK=("$VENV/bin/python" tools/powershell-check/check.py)
"${CHECK[@]}" scripts/*.ps1
if [[ ${1:-} == --self-test ]]; then
    dir=target/powershell-check/self-test
    mkdir -p "$dir"
    printf 'function Get-Thing {\n    if ($true) {\n        Write-Output 1\n}\n' >"$dir/unbalanced-brace.ps1"
    printf '$x = (1 + 2\nWrite-Output $x\n' >"$dir/missing-paren.ps1"
    printf 'Get-Process | Format-List Name, Id | Out-String\n' >"$dir/bareword-array.ps1"
    for bad in unbalanced-brace missing-paren; do
        if "${CHECK[@]}" "$dir/$bad.ps1" >/dev/null; then
            echo "check-powershell self-test: $bad.ps1 was not refused" >&2
            exit 1
        fi
        echo "self-test: $bad.ps1 refused"
    done
    "${CHECK[@]}" "$dir/bareword-array.ps1" >/dev/null
    echo "self-test: the accepted construct passes"
fi
