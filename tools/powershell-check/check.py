"""Parses PowerShell scripts with tree-sitter's PowerShell grammar and reports syntax errors.

Usage: check.py FILE.ps1...  (exit 1 on any syntax error, 2 on unreadable input)

The grammar (PyPI tree-sitter-powershell) rejects one valid construct these scripts use: a
command argument that is an array written as comma-separated barewords, e.g.
`Format-List TimeCreated, Id`. PowerShell parses that as one array argument; the grammar stops
at the first comma. Such an error node -- a child of `command_elements` made only of `,` and
bareword (`simple_name`) nodes, starting with `,` -- is reported as accepted, with its
location, never silently. Any other error node fails the file.
"""

import sys

import tree_sitter
import tree_sitter_powershell

KNOWN_GAP = "comma-separated bareword array argument (valid PowerShell; grammar gap)"


def known_gap(node):
    """Whether an error node is the grammar's bareword-array gap."""
    if node.parent is None or node.parent.type != "command_elements":
        return False
    kinds = [child.type for child in node.children]
    if not kinds or kinds[0] != ",":
        return False
    return all(kind == ("," if index % 2 == 0 else "simple_name") for index, kind in enumerate(kinds))


def error_nodes(node):
    """The outermost error or missing nodes under `node`."""
    if node.is_error or node.is_missing:
        yield node
        return
    if node.has_error:
        for child in node.children:
            yield from error_nodes(child)


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
        for node in error_nodes(parser.parse(source).root_node):
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
        print(f"{path}: {'FAIL' if errors else 'ok'} ({errors} error(s), {accepted} accepted)")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: check.py FILE.ps1...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
