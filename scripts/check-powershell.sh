#!/usr/bin/env bash
# Parses every scripts/*.ps1 with a real PowerShell grammar (PyPI tree-sitter and
# tree-sitter-powershell, pinned in tools/powershell-check/requirements.txt, in a venv under target/) and fails on a syntax error, on a
# script or function whose verb is not approved (Get-Verb), and on a state-changing one
# (Set-, Install-, Remove-, ...) without [CmdletBinding(SupportsShouldProcess)] and a
# $PSCmdlet.ShouldProcess( call; see tools/powershell-check/check.py for the rules and the one
# grammar gap it accepts, and reports.
#   --self-test  also requires a script with an unbalanced brace, one with a missing closing
#                parenthesis, one with an unapproved verb, a state-changing script without
#                ShouldProcess, one that declares it but never calls it, and a state-changing
#                function without it to fail; and the accepted construct and a state-changing
#                script with ShouldProcess to pass.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=target/powershell-check/venv
LOG_NAME=check-powershell
# shellcheck source=scripts/lib/setup.sh
source scripts/lib/setup.sh
python_venv "$VENV" tools/powershell-check/requirements.txt
CHECK=("$VENV/bin/python" tools/powershell-check/check.py)
"${CHECK[@]}" scripts/*.ps1
if [[ ${1:-} == --self-test ]]; then
    dir=target/powershell-check/self-test
    mkdir -p "$dir"
    printf 'function Get-Thing {\n    if ($true) {\n        Write-Output 1\n}\n' >"$dir/unbalanced_brace.ps1"
    printf '$x = (1 + 2\nWrite-Output $x\n' >"$dir/missing_paren.ps1"
    printf 'Get-Process | Format-List Name, Id | Out-String\n' >"$dir/bareword_array.ps1"
    printf '[CmdletBinding()]\nparam()\nWrite-Output 1\n' >"$dir/Prepare-Thing.ps1"
    printf '[CmdletBinding()]\nparam([string] $Path)\nRemove-Item -LiteralPath $Path\n' >"$dir/Set-Thing.ps1"
    printf '[CmdletBinding(SupportsShouldProcess)]\nparam([string] $Path)\nRemove-Item -LiteralPath $Path\n' >"$dir/Remove-Unasked.ps1"
    printf 'function Reset-Thing {\n    param([string] $Path)\n    Remove-Item -LiteralPath $Path\n}\n' >"$dir/thinglibrary.ps1"
    printf '[CmdletBinding(SupportsShouldProcess)]\nparam([string] $Path)\nif ($PSCmdlet.ShouldProcess($Path, "remove")) {\n    Remove-Item -LiteralPath $Path\n}\n' >"$dir/Set-Good.ps1"
    for bad in unbalanced_brace missing_paren Prepare-Thing Set-Thing Remove-Unasked thinglibrary; do
        if "${CHECK[@]}" "$dir/$bad.ps1" >/dev/null; then
            echo "check-powershell self-test: $bad.ps1 was not refused" >&2
            exit 1
        fi
        echo "self-test: $bad.ps1 refused"
    done
    "${CHECK[@]}" "$dir/bareword_array.ps1" >/dev/null
    echo "self-test: the accepted construct passes"
    "${CHECK[@]}" "$dir/Set-Good.ps1" >/dev/null
    echo "self-test: a state-changing script with ShouldProcess passes"
fi
