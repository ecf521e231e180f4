"""Parses PowerShell scripts with tree-sitter's PowerShell grammar and reports syntax errors,
unapproved verbs and state-changing scripts without ShouldProcess.

Usage: check.py FILE.ps1...  (exit 1 on any finding, 2 on unreadable input)

Conventions enforced (PowerShell's own, as `Get-Verb` and PSScriptAnalyzer's
PSUseApprovedVerbs / PSUseShouldProcessForStateChangingFunctions define them):
- A script named `Verb-Noun.ps1`, and every `function Verb-Noun` in any script, uses an
  approved verb (APPROVED_VERBS, the list `Get-Verb` prints on PowerShell 7.4). A script whose
  name has no `-` (a dot-sourced library such as PpmPep.Common.ps1) is exempt by name, not its
  functions.
- A script or function whose verb changes the system (STATE_CHANGING_VERBS) declares
  `[CmdletBinding(SupportsShouldProcess ...)]` in its own param block and calls
  `$PSCmdlet.ShouldProcess(` — so `-WhatIf` and `-Confirm` work.

The grammar (PyPI tree-sitter-powershell) rejects one valid construct these scripts use: a
command argument that is an array written as comma-separated barewords, e.g.
`Format-List TimeCreated, Id`. PowerShell parses that as one array argument; the grammar stops
at the first comma. Such an error node -- a child of `command_elements` made only of `,` and
bareword (`simple_name`) nodes, starting with `,` -- is reported as accepted, with its
location, never silently. Any other error node fails the file.
"""

import os
import re
import sys

import tree_sitter
import tree_sitter_powershell

APPROVED_VERBS = frozenset(
    verb.lower()
    for verb in [
        "Add",
        "Clear",
        "Close",
        "Copy",
        "Enter",
        "Exit",
        "Find",
        "Format",
        "Get",
        "Hide",
        "Join",
        "Lock",
        "Move",
        "New",
        "Open",
        "Optimize",
        "Pop",
        "Push",
        "Redo",
        "Remove",
        "Rename",
        "Reset",
        "Resize",
        "Search",
        "Select",
        "Set",
        "Show",
        "Skip",
        "Split",
        "Step",
        "Switch",
        "Undo",
        "Unlock",
        "Watch",
        "Connect",
        "Disconnect",
        "Read",
        "Receive",
        "Send",
        "Write",
        "Backup",
        "Checkpoint",
        "Compare",
        "Compress",
        "Convert",
        "ConvertFrom",
        "ConvertTo",
        "Dismount",
        "Edit",
        "Expand",
        "Export",
        "Group",
        "Import",
        "Initialize",
        "Limit",
        "Merge",
        "Mount",
        "Out",
        "Publish",
        "Restore",
        "Save",
        "Sync",
        "Unpublish",
        "Update",
        "Debug",
        "Measure",
        "Ping",
        "Repair",
        "Resolve",
        "Test",
        "Trace",
        "Approve",
        "Assert",
        "Build",
        "Complete",
        "Confirm",
        "Deny",
        "Deploy",
        "Disable",
        "Enable",
        "Install",
        "Invoke",
        "Register",
        "Request",
        "Restart",
        "Resume",
        "Start",
        "Stop",
        "Submit",
        "Suspend",
        "Uninstall",
        "Unregister",
        "Wait",
        "Block",
        "Grant",
        "Protect",
        "Revoke",
        "Unblock",
        "Unprotect",
        "Use",
    ]
)

# Verbs whose commands change the system: they must support -WhatIf/-Confirm.
STATE_CHANGING_VERBS = frozenset(
    verb.lower()
    for verb in [
        "Add",
        "Clear",
        "Disable",
        "Enable",
        "Initialize",
        "Install",
        "New",
        "Register",
        "Remove",
        "Rename",
        "Reset",
        "Restart",
        "Set",
        "Start",
        "Stop",
        "Uninstall",
        "Unregister",
        "Update",
    ]
)

SHOULD_PROCESS_DECLARED = re.compile(
    r"CmdletBinding\s*\([^)]*SupportsShouldProcess(?!\s*=\s*\$false)", re.IGNORECASE
)
SHOULD_PROCESS_CALLED = re.compile(r"\$PSCmdlet\.ShouldProcess\s*\(", re.IGNORECASE)

KNOWN_GAP = "comma-separated bareword array argument (valid PowerShell; grammar gap)"


def known_gap(node):
    """Whether an error node is the grammar's bareword-array gap."""
    if node.parent is None or node.parent.type != "command_elements":
        return False
    kinds = [child.type for child in node.children]
    if not kinds or kinds[0] != ",":
        return False
    return all(
        kind == ("," if index % 2 == 0 else "simple_name")
        for index, kind in enumerate(kinds)
    )


def error_nodes(node):
    """The outermost error or missing nodes under `node`."""
    if node.is_error or node.is_missing:
        yield node
        return
    if node.has_error:
        for child in node.children:
            yield from error_nodes(child)


def text_of(node):
    """The source text of a node."""
    return node.text.decode("utf-8", "replace")


def own_param_block(body):
    """The param block of a script (the root) or a function body, if any."""
    for child in body.children:
        if child.type == "param_block":
            return child
        if child.type in ("script_block", "script_block_body", "function_statement"):
            continue
    for child in body.children:
        if child.type == "script_block":
            return own_param_block(child)
    return None


def functions(node):
    """Every function statement under node: (name, statement)."""
    if node.type == "function_statement":
        for child in node.children:
            if child.type == "function_name":
                yield text_of(child), node
                break
    for child in node.children:
        yield from functions(child)


def convention_findings(path, root):
    """Verb and ShouldProcess findings: (row, message)."""
    findings = []
    commands = []
    stem = (
        os.path.basename(path)[: -len(".ps1")]
        if path.lower().endswith(".ps1")
        else os.path.basename(path)
    )
    if "-" in stem:
        commands.append((stem, root, 0, "script"))
    for name, statement in functions(root):
        commands.append((name, statement, statement.start_point[0], "function"))
    for name, node, row, kind in commands:
        if "-" not in name:
            continue
        verb = name.split("-", 1)[0].lower()
        if verb not in APPROVED_VERBS:
            findings.append(
                (
                    row,
                    f"{kind} {name}: '{name.split('-', 1)[0]}' is not an approved verb (Get-Verb)",
                )
            )
            continue
        if verb in STATE_CHANGING_VERBS:
            if kind == "script":
                block = own_param_block(root)
                declared = block is not None and SHOULD_PROCESS_DECLARED.search(
                    text_of(block)
                )
                # A script's own ShouldProcess calls: its text outside its function definitions.
                own_text = text_of(root)
                for _, statement in functions(root):
                    own_text = own_text.replace(text_of(statement), "")
            else:
                body = text_of(node)
                declared = SHOULD_PROCESS_DECLARED.search(body)
                own_text = body
            if not declared:
                findings.append(
                    (
                        row,
                        f"{kind} {name} changes the system but declares no [CmdletBinding(SupportsShouldProcess)]",
                    )
                )
            elif not SHOULD_PROCESS_CALLED.search(own_text):
                findings.append(
                    (
                        row,
                        f"{kind} {name} declares SupportsShouldProcess but never calls $PSCmdlet.ShouldProcess(",
                    )
                )
    return findings


def main(paths):
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
    failed = False
    for path in paths:
        try:
            with open(path, "rb") as file:
                source = file.read()
        except OSError as error:
            print(f"{path}: cannot read: {error}", file=sys.stderr)
            return 2
        lines = source.split(b"\n")
        errors = accepted = 0
        root = parser.parse(source).root_node
        for row, message in convention_findings(path, root):
            errors += 1
            print(f"{path}:{row + 1}: convention: {message}")
        for node in error_nodes(root):
            row, column = node.start_point
            text = lines[row].decode("utf-8", "replace").strip()
            if known_gap(node):
                accepted += 1
                print(f"{path}:{row + 1}:{column + 1}: accepted: {KNOWN_GAP}: {text}")
            else:
                errors += 1
                kind = "missing token" if node.is_missing else "syntax error"
                print(f"{path}:{row + 1}:{column + 1}: {kind}: {text}")
        failed |= errors > 0
        print(
            f"{path}: {'FAIL' if errors else 'ok'} ({errors} error(s), {accepted} accepted)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: check.py FILE.ps1...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
