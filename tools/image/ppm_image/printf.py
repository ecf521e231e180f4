"""DbgPrintEx's format, as the kernel's CRT formats it: %s %d %i %u %x %X %lu %ld %lx %llu
%lld %llx %p %c %% and %ws (%ls, %S), with flags (-, 0, +, space, #), width and precision
(numbers or *), and the length modifiers h, hh, l, ll, I64, I32, z. `l` is 32 bits (LLP64)."""

from __future__ import annotations

import re
from collections.abc import Callable

_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|I64|I32|I|z|w)?([a-zA-Z%])")
MAX_TEXT = 4096


def unicode_conversions(fmt: bytes) -> list[str]:
    """The Unicode conversions of `fmt` (%C, %S, %lc, %ls, %wc, %ws, %wZ): DbgPrintEx allows
    them only at PASSIVE_LEVEL."""
    found = []
    for match in _SPEC.finditer(fmt):
        length, conversion = match.group(4), match.group(5)
        wide = length in (b"l", b"w") and conversion in (b"c", b"s", b"Z")
        if wide or (length is None and conversion in (b"C", b"S")):
            found.append(match.group(0).decode("latin-1"))
    return found


def format_message(
    fmt: bytes,
    next_arg: Callable[[], int],
    read_string: Callable[[int], str],
    read_wide_string: Callable[[int], str],
) -> str:
    out: list[str] = []
    position = 0
    for match in _SPEC.finditer(fmt):
        out.append(fmt[position : match.start()].decode("latin-1"))
        position = match.end()
        flags, width, precision, length, conversion = (
            (g.decode() if g is not None else None) for g in match.groups()
        )
        conversion = conversion or ""
        if conversion == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(_signed(next_arg() & 0xFFFFFFFF, 32))
        if precision == "*":
            precision = str(_signed(next_arg() & 0xFFFFFFFF, 32))
        bits = 64 if length in ("ll", "I64", "I", "z") else 32
        if conversion in "diuxXo":
            value = next_arg() & ((1 << bits) - 1)
            if length == "h":
                value &= 0xFFFF
            elif length == "hh":
                value &= 0xFF
            if conversion in "di":
                text = _python_format(flags, width, precision, "d", _signed(value, bits))
            elif conversion == "u":
                text = _python_format(flags, width, precision, "d", value)
            else:
                text = _python_format(flags, width, precision, conversion, value)
        elif conversion == "p":
            text = f"{next_arg():016X}"
        elif conversion == "c":
            text = chr(next_arg() & 0xFF)
        elif conversion == "s" and length not in ("w", "l"):
            text = read_string(next_arg())
            if precision is not None:
                text = text[: int(precision)]
            text = _pad(flags, width, text)
        elif conversion == "S" or conversion == "s":  # %S, %ws, %ls: UTF-16
            text = read_wide_string(next_arg())
            if precision is not None:
                text = text[: int(precision)]
            text = _pad(flags, width, text)
        else:
            text = match.group(0).decode("latin-1")
        out.append(text)
        if sum(len(part) for part in out) > MAX_TEXT:
            break
    out.append(fmt[position:].decode("latin-1"))
    return "".join(out)[:MAX_TEXT]


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def _pad(flags: str | None, width: str | None, text: str) -> str:
    if not width:
        return text
    return text.ljust(int(width)) if flags and "-" in flags else text.rjust(int(width))


def _python_format(
    flags: str | None, width: str | None, precision: str | None, kind: str, value: int
) -> str:
    flags = flags or ""
    digits = format(abs(value), {"d": "d", "x": "x", "X": "X", "o": "o"}[kind])
    if precision is not None:
        digits = digits.zfill(int(precision))
    prefix = "-" if value < 0 else ("+" if "+" in flags else (" " if " " in flags else ""))
    if "#" in flags and kind in "xX" and value:
        prefix += "0x" if kind == "x" else "0X"
    text = prefix + digits
    if width and len(text) < int(width):
        if "-" in flags:
            text = text.ljust(int(width))
        elif "0" in flags and precision is None:
            text = prefix + digits.zfill(int(width) - len(prefix))
        else:
            text = text.rjust(int(width))
    return text
