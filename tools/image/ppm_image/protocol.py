"""The line protocol of docs/image-backend.md: one JSON object per line each way; the pages a
message names in `pages` follow its line as raw bytes."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

import orjson

from .layout import MAX_CALL_PAGES, PAGE

if TYPE_CHECKING:
    from .native import Doorbell

MAX_LINE_BYTES = 64 << 20


class ProtocolError(Exception):
    """ppm-sim sent something the protocol does not allow (a one-line reason)."""


class Channel:
    """stdin/stdout of the runner: commands and answers in, answers and host requests out.
    Given no streams, it uses file descriptors 0 and 1 unbuffered-by-line directly (one
    os.write per line: the text layers' flush cost counted on a 6-request FEEDBACK_READ).
    With a `doorbell` (a spinning handoff), each message sent rings it and each one received
    is waited for on it first."""

    def __init__(
        self,
        reader: IO[bytes] | None = None,
        writer: IO[str] | None = None,
        doorbell: Doorbell | None = None,
    ):
        self.writer = writer
        self.input = sys.stdin.buffer if reader is None else reader
        self.doorbell = doorbell

    def send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        if self.writer is None:
            while data:
                data = data[os.write(1, data) :]
        else:
            self.writer.write(data.decode())
            self.writer.flush()
        if self.doorbell is not None:
            self.doorbell.ring()

    def receive(self) -> dict[str, Any] | None:
        if self.doorbell is not None:
            self.doorbell.wait()
        line = self.input.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES:
            raise ProtocolError(f"a line longer than {MAX_LINE_BYTES} bytes")
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise ProtocolError(f"not JSON: {error} in {line[:80]!r}") from error
        if not isinstance(message, dict):
            raise ProtocolError(f"not a JSON object: {line[:80]!r}")
        if "pages" in message:
            message["pages"] = self._pages(message["pages"])
        return message

    def _pages(self, pages: Any) -> list[list[Any]]:
        """A message's `pages`, [[address, 4096], ...]: each with its page's bytes, which follow
        the line, in order, in place of the length."""
        if not isinstance(pages, list) or len(pages) > MAX_CALL_PAGES:
            raise ProtocolError(f"'pages' must be a list of at most {MAX_CALL_PAGES} pages")
        out = []
        for entry in pages:
            if not isinstance(entry, list) or len(entry) != 2 or entry[1] != PAGE:
                raise ProtocolError(f"each page must be [address, {PAGE}], got {entry!r}")
            data = self.input.read(PAGE)
            if len(data) != PAGE:
                raise ProtocolError(f"the input ended inside the bytes of page {entry[0]!r}")
            out.append([entry[0], data])
        return out


def integer(message: dict[str, Any], key: str, bits: int = 64) -> int:
    """`message[key]`, an unsigned `bits`-bit integer."""
    return unsigned(message.get(key), key, bits)


def unsigned(value: Any, what: str, bits: int = 64) -> int:
    """`value` (named `what` in the error), an unsigned `bits`-bit integer: an int, not a bool
    (`type`, not `isinstance`: one check on the path of every call)."""
    if type(value) is not int or not 0 <= value < (1 << bits):
        raise ProtocolError(f"{what!r}: expected an unsigned {bits}-bit integer, got {value!r}")
    return value


def hex_bytes(message: dict[str, Any], key: str) -> bytes:
    value = message.get(key)
    if not isinstance(value, str):
        raise ProtocolError(f"{key!r}: expected a hex string, got {value!r}")
    try:
        return bytes.fromhex(value)
    except ValueError as error:
        raise ProtocolError(f"{key!r}: not a hex string") from error
