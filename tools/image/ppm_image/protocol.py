"""The line protocol of docs/image-backend.md: one JSON object per line each way."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

import orjson

MAX_LINE_BYTES = 64 << 20


class ProtocolError(Exception):
    """ppm-sim sent something the protocol does not allow (a one-line reason)."""


class Channel:
    """stdin/stdout of the runner: commands and answers in, answers and host requests out.
    Given no streams, it uses file descriptors 0 and 1 unbuffered-by-line directly (one
    os.write per line: the text layers' flush cost counted on a 6-request FEEDBACK_READ)."""

    def __init__(self, reader: IO[str] | None = None, writer: IO[str] | None = None):
        self.reader = reader
        self.writer = writer
        self.input = sys.stdin.buffer if reader is None else None

    def send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        if self.writer is None:
            while data:
                data = data[os.write(1, data) :]
        else:
            self.writer.write(data.decode())
            self.writer.flush()

    def receive(self) -> dict[str, Any] | None:
        if self.input is not None:
            line = self.input.readline(MAX_LINE_BYTES + 1)
        else:
            line = self.reader.readline(MAX_LINE_BYTES + 1)
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
        return message


def integer(message: dict[str, Any], key: str, bits: int = 64) -> int:
    value = message.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise ProtocolError(f"{key!r}: expected an unsigned {bits}-bit integer, got {value!r}")
    return value


def hex_bytes(message: dict[str, Any], key: str) -> bytes:
    value = message.get(key)
    if not isinstance(value, str):
        raise ProtocolError(f"{key!r}: expected a hex string, got {value!r}")
    try:
        return bytes.fromhex(value)
    except ValueError as error:
        raise ProtocolError(f"{key!r}: not a hex string") from error
