"""A scripted HTTP/1.1 server on loopback, to inject network faults over real sockets.

A test gives :class:`FaultServer` a script: one action per connection, in order.
Every response carries ``Connection: close``, so each request the client makes
arrives on a connection of its own and takes the next action::

    server = FaultServer([reset_before(), status(200, OK_BODY)])
    client = lingodoc.Client(KEY, base_url=server.base_url())
    ...
    server.stop()
    assert len(server.requests) == 2

A connection refused is a server that is not listening (``listening=False``):
its port is bound, so nothing else takes it, and every connection to it is
refused until :meth:`FaultServer.listen` is called.

Every loop here is bounded: the accept loop ends when the server is stopped or
after :data:`LIFETIME` seconds, and every socket operation has a timeout.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

LIFETIME = 60.0  # seconds a server runs at most, even if nobody stops it
IO_TIMEOUT = 5.0  # seconds any single socket operation may block
POLL = 0.02  # seconds between checks of the stop flag
CHUNK = 64 * 1024

Action = Callable[["FaultServer", socket.socket], None]


@dataclass(frozen=True)
class Received:
    """A request the server read: what a test counts and inspects."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


def envelope_body(data: Any) -> bytes:
    """The JSON of a success envelope around ``data``."""
    return json.dumps({"success": True, "data": data}).encode()


def failure_body(code: str, message: str = "it went wrong") -> bytes:
    """The JSON of a failure envelope."""
    return json.dumps({"success": False, "error": {"code": code, "message": message}}).encode()


def send_envelope(handler: BaseHTTPRequestHandler, data: Any) -> None:
    """Answer the request of an ``http.server`` handler: 200 and a success envelope."""
    payload = envelope_body(data)
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def _head(
    code: int,
    headers: Mapping[str, str],
    length: int,
    reason: str = "Fault",
    *,
    keep_alive: bool = False,
) -> bytes:
    lines = [f"HTTP/1.1 {code} {reason}", f"Content-Length: {length}"]
    lines += [] if keep_alive else ["Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _reset(conn: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a TCP RST instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


# Actions --------------------------------------------------------------------


def status(
    code: int, body: bytes = b"", headers: Mapping[str, str] | None = None, reason: str = "Fault"
) -> Action:
    """Answer with ``code``, ``body`` and ``headers`` (plus Content-Length), then close."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        conn.sendall(_head(code, headers or {}, len(body), reason) + body)

    return act


def with_surplus(body: bytes, surplus: bytes, *, chunked: bool = False) -> Action:
    """Answer 200 with ``body``, keeping the connection open, and ``surplus`` right after it.

    The surplus is past the end that the framing (Content-Length, or ``chunked``: the body
    in two chunks and a trailer) announced, in the same write: a client that reused the
    connection would read it as the answer to its next request. The connection stays open
    until the client closes it (or the server stops).
    """

    def act(server: FaultServer, conn: socket.socket) -> None:
        if chunked:
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            half = len(body) // 2
            framed = b"".join(
                b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:])
            )
            framed += b"0\r\nX-Trailer: 1\r\n\r\n"
        else:
            head = _head(200, {"Content-Type": "application/json"}, len(body), keep_alive=True)
            framed = body
        # Head, body and surplus in one write: they arrive, and are read, together.
        conn.sendall(head + framed + surplus)
        stall()(server, conn)

    return act


def keep_alive(answers: Iterator[bytes]) -> Action:
    """Answer each request on the connection with the next of ``answers``, as it is written.

    The connection stays open for more requests until the client closes it (or the server
    stops). Give every connection of a script the same ``answers``: the n-th request the
    server reads, on whichever connection, gets the n-th answer.
    """

    def act(server: FaultServer, conn: socket.socket) -> None:
        while True:
            answer = next(answers, None)
            if answer is None:  # none left: the client sees the connection close
                return
            conn.sendall(answer)
            if not _readable(server, conn):
                return
            request = _read_request(conn)
            if request is None:  # the client closed the connection
                return
            server.requests.append(request)

    return act


def _readable(server: FaultServer, conn: socket.socket) -> bool:
    """Wait until ``conn`` has bytes or its end to read; False once the server stops."""
    while not server.stopping.is_set():
        if select.select([conn], [], [], POLL)[0]:
            return True
    return False


def response_bytes(code: int, body: bytes) -> bytes:
    """A whole keep-alive HTTP/1.1 response with ``body``: what a server sends (as surplus)."""
    return (
        _head(code, {"Content-Type": "application/json"}, len(body), "OK", keep_alive=True) + body
    )


def _trickle(server: FaultServer, conn: socket.socket, data: bytes, every: float) -> bool:
    """Send ``data`` one byte each ``every`` seconds; False once the client or server stops it."""
    for i in range(len(data)):
        if server.stopping.wait(every):
            return False
        try:
            conn.sendall(data[i : i + 1])
        except OSError:  # the client gave up
            return False
        server.bytes_streamed += 1
    return True


def drip(body: bytes, every: float) -> Action:
    """Send the headers at once, then ``body`` one byte each ``every`` seconds.

    Each wait is far shorter than a read timeout; the whole body takes longer.
    Stops when the client hangs up or the server stops.
    """

    def act(server: FaultServer, conn: socket.socket) -> None:
        conn.sendall(_head(200, {"Content-Type": "application/json"}, len(body)))
        _trickle(server, conn, body, every)

    return act


def head_of(body: bytes) -> bytes:
    """The status line and headers that :func:`drip_head` sends before ``body``."""
    return _head(200, {"Content-Type": "application/json"}, len(body))


def drip_head(body: bytes, every: float) -> Action:
    """Send the status line and headers (:func:`head_of`) one byte each ``every`` seconds,
    then ``body``.

    Each wait is far shorter than a read timeout; the head alone takes longer.
    Stops when the client hangs up or the server stops.
    """

    def act(server: FaultServer, conn: socket.socket) -> None:
        head = head_of(body)
        if _trickle(server, conn, head, every):
            with contextlib.suppress(OSError):
                conn.sendall(body)

    return act


_EXHAUSTED = status(599, b"fault server: script exhausted")


def reset_before() -> Action:
    """Read the request, then reset the connection before any byte of a response."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        _reset(conn)

    return act


def reset_during() -> Action:
    """Send the status line, the headers and part of the body, then reset the connection."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        body = envelope_body({"translated_text": "Hallo"})
        conn.sendall(_head(200, {"Content-Type": "application/json"}, len(body)) + body[:10])
        time.sleep(0.05)  # let the client read the head first
        _reset(conn)

    return act


def truncated() -> Action:
    """Promise a body with Content-Length, send half of it, then close normally (FIN)."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        body = envelope_body({"translated_text": "Hallo"})
        conn.sendall(_head(200, {"Content-Type": "application/json"}, len(body)))
        conn.sendall(body[: len(body) // 2])

    return act


def stall(at_most: float = 10.0) -> Action:
    """Read the request and send nothing until the client hangs up (or the server stops)."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        conn.settimeout(POLL)
        deadline = time.monotonic() + at_most
        while not server.stopping.is_set() and time.monotonic() < deadline:
            try:
                if not conn.recv(CHUNK):
                    return  # the client closed its end
            except TimeoutError:
                continue
            except OSError:
                return

    return act


def endless_headers() -> Action:
    """Send a status line, then header lines without end (100 MB at most)."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        _stream(server, conn, itertools.repeat(b"X-Padding: " + b"y" * 1000 + b"\r\n", 100_000))

    return act


def huge(code: int, size: int = 50 * 1024 * 1024) -> Action:
    """Answer ``code`` with a ``size``-byte HTML body, sent in chunks.

    :attr:`FaultServer.bytes_streamed` tells how much of it went out before
    the client hung up.
    """

    def act(server: FaultServer, conn: socket.socket) -> None:
        conn.sendall(_head(code, {"Content-Type": "text/html"}, size))
        chunk = (b"<p>error</p>" * (CHUNK // 12 + 1))[:CHUNK]
        _stream(server, conn, (chunk[: size - sent] for sent in range(0, size, CHUNK)))

    return act


def _stream(server: FaultServer, conn: socket.socket, pieces: Iterable[bytes]) -> None:
    """Send ``pieces`` until they run out, the client hangs up or the server stops."""
    for piece in pieces:
        if server.stopping.is_set():
            return
        try:
            conn.sendall(piece)
        except OSError:  # reset, broken pipe, or IO_TIMEOUT: the client stopped reading
            return
        server.bytes_streamed += len(piece)


# The server -----------------------------------------------------------------


class FaultServer:
    """A loopback HTTP server that plays a script of faults, one action per connection.

    Attributes:
        requests: Every request read, in order.
        bytes_streamed: Bytes written by :func:`huge` and :func:`endless_headers`.
        errors: Socket errors met while playing the script (for diagnosis).
    """

    def __init__(self, script: Iterable[Action], *, listening: bool = True) -> None:
        self._script = collections.deque(script)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.settimeout(POLL)
        self._listening = threading.Event()
        self.stopping = threading.Event()
        self.requests: list[Received] = []
        self.bytes_streamed = 0
        self.errors: list[Exception] = []
        self._thread = threading.Thread(target=self._serve, name="fault-server", daemon=True)
        self._thread.start()
        if listening:
            self.listen()

    @property
    def port(self) -> int:
        """The port the server is bound to."""
        port: int = self._listener.getsockname()[1]
        return port

    def base_url(self, host: str = "127.0.0.1") -> str:
        """The SDK's base URL for this server, under ``host`` (``localhost`` works too)."""
        return f"http://{host}:{self.port}/v1"

    def listen(self) -> None:
        """Start accepting connections (until now, every one was refused)."""
        self._listener.listen(16)
        self._listening.set()

    def stop(self) -> None:
        """Stop the server and join its thread (each action ends within IO_TIMEOUT of it)."""
        self.stopping.set()
        self._thread.join(timeout=LIFETIME)
        self._listener.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + LIFETIME
        while not self.stopping.is_set() and time.monotonic() < deadline:
            if not self._listening.wait(POLL):
                continue
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                self.errors.append(exc)
                return
            with conn:
                self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(IO_TIMEOUT)
        try:
            request = _read_request(conn)
            if request is None:
                return
            self.requests.append(request)
            action = self._script.popleft() if self._script else _EXHAUSTED
            action(self, conn)
        except (OSError, ValueError) as exc:
            self.errors.append(exc)
        with contextlib.suppress(OSError):  # already reset, or the client is gone
            conn.shutdown(socket.SHUT_WR)


def _read_request(conn: socket.socket) -> Received | None:
    """Read one request (head and Content-Length body); ``None`` if the client hung up."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(CHUNK)
        if not chunk or len(data) > 1024 * 1024:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(CHUNK)
        if not chunk:
            return None
        body += chunk
    return Received(method, path, headers, body)


class FaultServers:
    """The servers a test started, all stopped by :meth:`stop_all` (in a fixture teardown)."""

    def __init__(self) -> None:
        self._servers: list[FaultServer] = []

    def __call__(self, *script: Action, listening: bool = True) -> FaultServer:
        """Start a server playing ``script``."""
        server = FaultServer(script, listening=listening)
        self._servers.append(server)
        return server

    def stop_all(self) -> None:
        """Stop every server and join its thread."""
        for server in self._servers:
            server.stop()
