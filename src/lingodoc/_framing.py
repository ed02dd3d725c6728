"""Where each response on an HTTP/1.1 connection ends, to catch bytes sent past that end.

h11 keeps what it read beyond a response in its buffer and reads it as the answer to the
next request on the connection: a server (or proxy) that sends more than its framing
announced would answer a later call with those bytes. The SDK's transports feed each
connection's bytes to a `Framing`; once it has seen bytes past a response's end, the
connection says it is readable, and httpcore closes it instead of reusing it.
"""

from __future__ import annotations

import re

# httpcore lets h11 read heads of up to 100 KiB: past this, h11 fails the response itself.
_MAX_HEAD = 128 * 1024
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")


class Framing:
    """Follows one connection's responses by their framing: ``Content-Length`` or chunked.

    A response of another kind (read until the connection closes, or one it cannot make
    out) is not followed: h11 closes such a connection, or fails on it, by itself.
    """

    __slots__ = ("_buffer", "_head_request", "_left", "_reading", "_state", "surplus")

    def __init__(self) -> None:
        self.surplus = False  # bytes were read past a response's end: never reuse
        self._reading = True  # so that the first write starts a request
        self._state = "head"  # head, body, size, data, trailer, done, or unknown
        self._buffer = b""
        self._left = 0
        self._head_request = False

    def wrote(self, data: bytes) -> None:
        """Note bytes written: the first write after reading starts the next request."""
        if self._reading:  # httpcore writes a whole request before it reads the response
            self._reading = False
            self._state, self._buffer, self._left = "head", b"", 0
            self._head_request = data.startswith(b"HEAD ")

    def read(self, data: bytes) -> None:
        """Follow bytes read; set ``surplus`` once any lies past the end of a response."""
        self._reading = True
        while data and self._state != "unknown":
            if self._state == "done":
                self.surplus = True
                return
            if self._state in ("body", "data"):  # bytes counted: a body, or a chunk's data
                taken = min(self._left, len(data))
                self._left -= taken
                data = data[taken:]
                if not self._left:
                    self._state = "done" if self._state == "body" else "size"
            else:  # head, size, trailer: lines
                pending, self._buffer = self._buffer + data, b""
                data = self._lines(pending)

    def _lines(self, data: bytes) -> bytes:
        """Read what lines start ``data``; return the rest, or keep a partial line."""
        state = self._state
        if state == "head":
            end = data.find(b"\r\n\r\n")
            if end < 0:
                return self._keep(data)
            self._begin_body(data[:end])
            return data[end + 4 :]
        if state == "size":
            match = _CHUNK_SIZE.match(data)
            if match is None:
                if b"\n" not in data:
                    return self._keep(data)
                self._state = "unknown"  # malformed: h11 fails the response
                return b""
            size = int(match.group(1), 16)
            self._state, self._left = ("data", size + 2) if size else ("trailer", 0)
            return data[match.end() :]
        # The trailer section ends with an empty line (usually at once: no trailers).
        end = 0 if data.startswith(b"\r\n") else data.find(b"\r\n\r\n")
        if end < 0:
            return self._keep(data)
        self._state = "done"
        return data[end + (2 if end == 0 else 4) :]

    def _keep(self, data: bytes) -> bytes:
        """Keep a partial line until more is read; return nothing left to follow now."""
        if len(data) > _MAX_HEAD:
            self._state = "unknown"
        else:
            self._buffer = data
        return b""

    def _begin_body(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if 100 <= status < 200 and status != 101:
            return  # an interim response: the real one follows
        length = encoding = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = value.strip()
            elif name == b"transfer-encoding":
                encoding = value.strip().lower()
        if status in (204, 304) or self._head_request:
            self._state = "done"
        elif encoding is not None:
            self._state = "size" if encoding.endswith(b"chunked") else "unknown"
        elif length is not None and length.isdigit():
            self._state, self._left = ("body", int(length)) if int(length) else ("done", 0)
        else:  # read until the connection closes, or not made out
            self._state = "unknown"
