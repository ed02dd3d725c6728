"""The HTTP face of the emulator: a threaded HTTP/1.1 server with keep-alive, on loopback."""

from __future__ import annotations

import errno
import re
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lingodoc.emulator._routing import BODY_TOO_LARGE, MAX_BODY_BYTES, Answers, Reply, Router

# Bodies over this, and chunked ones (of unknown length), are read and answered by a pool of
# _LARGE_BODY_THREADS threads. That caps the large bodies held at once, and keeps their memory
# in those threads: the C allocator keeps what a thread frees for that thread's reuse, so
# large bodies read by any of many threads would leave the process that much larger.
_LARGE_BODY = 1024 * 1024
_LARGE_BODY_THREADS = 2
# accept() errors that leave the connection waiting: out of descriptors (the process's or the
# system's) or of kernel memory. Its listening socket stays ready, so the accept loop pauses.
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_ACCEPT_PAUSE = 0.1  # seconds
_DIGITS = re.compile(r"[0-9]+")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]+")


def _chunk_size(line: bytes) -> int:
    """The size a chunk's first line gives (hex digits, then any extension after ``;``).

    Raises:
        ValueError: If it is not hex digits (``int(..., 16)`` would take ``0x3c`` or ``+3c``).
    """
    size = line.split(b";")[0].strip()
    if not _HEX_DIGITS.fullmatch(size):
        raise ValueError("not a chunk size")
    return int(size, 16)


class _TooLarge(Exception):
    """A request body over ``MAX_BODY_BYTES``."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "lingodoc-emulator"
    # Headers and body go out in two writes; without this, Nagle's algorithm and delayed ACKs
    # add ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    timeout = 60  # idle keep-alive connections are closed after this
    server: _Server

    def __getattr__(self, name: str) -> Callable[[], None]:
        # Every method (PROPFIND, TRACE...) reaches the emulator, which answers 405 with Allow.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _serve(self) -> None:
        reply, unread = self._answer()
        if unread:
            # Where the request ends is unknown, so the connection cannot be reused.
            self.close_connection = True
        if reply.disconnect or (reply.delay and self.server.stopping.wait(reply.delay)):
            self.close_connection = True
            return
        self._send(reply)

    def _answer(self) -> tuple[Reply, bool]:
        """Read the body and answer; the flag says whether some of the request was left unread."""
        router = self.server.router
        try:
            length = self._body_length()
            if length is not None and length > MAX_BODY_BYTES:
                raise _TooLarge
            if length is None or length > _LARGE_BODY:
                answer = self.server.large_bodies.submit(self._read_and_handle, length)
                return answer.result(), False
            return self._read_and_handle(length), False
        except _TooLarge:
            return router.error_reply(413, "REQUEST_TOO_LARGE", BODY_TOO_LARGE), True
        except ValueError:
            message = "Unsupported or malformed body framing."
            return router.error_reply(400, "VALIDATION_ERROR", message), True

    def _read_and_handle(self, length: int | None) -> Reply:
        """Read a body of ``length`` bytes (``None``: chunked) and answer the request.

        Raises:
            _TooLarge: If a chunked body grows over the limit.
            ValueError: On a chunk size that is not hex digits.
        """
        body = self.rfile.read(length) if length is not None else self._read_chunks()
        headers = dict(self.headers.items())
        return self.server.answers.handle(self.command, self.path, headers, body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Answer http.server's own refusals (a garbled or huge request line...) in the envelope."""
        self.log_error("code %d, message %s", code, message)
        if self.request_version in ("", "HTTP/0.9"):  # not parsed yet: answer in HTTP/1.1
            self.request_version = self.protocol_version
        self.close_connection = True
        name = "REQUEST_TOO_LARGE" if code in (413, 414, 431) else "BAD_REQUEST"
        text = (message or HTTPStatus(code).phrase)[:200]
        self._send(self.server.router.error_reply(code, name, f"{text}."))

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def _body_length(self) -> int | None:
        """The body's length as Content-Length gives it (0 without one); ``None`` if chunked.

        Raises:
            ValueError: On another transfer coding (gzip...: where the body ends is unknown)
                or a Content-Length that is not one number.
        """
        encoding = ", ".join(self.headers.get_all("Transfer-Encoding", [])).strip().lower()
        if encoding == "chunked":
            return None
        if encoding:
            raise ValueError("unsupported transfer coding")
        # Digits only, and one value (repeated, at most): int() would also take "+60", "6_0"
        # or " 60 ", and of two lengths either could be the real one.
        lengths = {
            value.strip()
            for field in self.headers.get_all("Content-Length", ["0"])
            for value in field.split(",")
        }
        if len(lengths) != 1 or not _DIGITS.fullmatch(next(iter(lengths))):
            raise ValueError("malformed Content-Length")
        return int(lengths.pop())

    def _read_chunks(self) -> bytes:
        """Read a chunked body.

        Raises:
            _TooLarge: As soon as it grows over the limit.
            ValueError: On a chunk size that is not hex digits.
        """
        chunks, total = [], 0
        while (size := _chunk_size(self.rfile.readline(100))) > 0:
            total += size
            if total > MAX_BODY_BYTES:
                raise _TooLarge
            chunks.append(self.rfile.read(size))
            self.rfile.readline(100)
        while self.rfile.readline(100).strip():  # trailer fields, up to the blank line
            pass
        return b"".join(chunks)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log_requests:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients opening keep-alive connections at once
    timeout = 0  # for handle_request(): serve_forever() calls it when a connection is ready

    def __init__(
        self, address: tuple[str, int], answers: Answers, router: Router, log_requests: bool
    ) -> None:
        host = address[0]
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.answers = answers
        self.router = router
        self.port = int(self.server_address[1])  # the one the system picked for port 0
        # The host as given rather than as bound, so that "localhost" stays "localhost".
        url_host = f"[{host}]" if ":" in host else host
        self.base_url = f"http://{url_host}:{self.port}/v1"
        self.log_requests = log_requests
        self.stopping = threading.Event()
        name = f"lingodoc-emulator-{self.port}"
        self.large_bodies = ThreadPoolExecutor(_LARGE_BODY_THREADS, f"{name}-large-body")
        self.loop = threading.Thread(target=self.serve_forever, name=name, daemon=True)
        self._wake, self._waker = socket.socketpair()  # stop() writes to _waker
        # Made here, in the caller's thread: made in the loop's, it could meet a process out of
        # descriptors by then and end the loop before it ever accepts.
        self._selector = selectors.DefaultSelector()
        self._selector.register(self, selectors.EVENT_READ)
        self._selector.register(self._wake, selectors.EVENT_READ)
        self._connections: set[socket.socket] = set()
        self._workers: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept connections until stop(), which wakes it at once (no polling interval)."""
        while not self.stopping.is_set():
            ready = [key.fileobj for key, _ in self._selector.select()]
            if self in ready and not self.stopping.is_set():
                self.handle_request()

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept a connection; out of descriptors, pause before the accept loop tries again.

        The connection stays in the listening socket's queue, so that socket stays ready:
        without the pause, the loop would retry at once, at full CPU, until a descriptor is
        freed. The caller (``handle_request``) drops the error, and the next accept takes it.
        """
        try:
            return super().get_request()
        except OSError as error:
            if error.errno in _OUT_OF_RESOURCES:
                self.stopping.wait(_ACCEPT_PAUSE)
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        args = (request, client_address)
        thread = threading.Thread(target=self.process_request_thread, args=args, daemon=True)
        with self._lock:
            self._connections.add(request)
            self._workers = {alive for alive in self._workers if alive.is_alive()} | {thread}
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (say, after its read timeout) is no error of ours, nor is a
        # request cut short by stop().
        if not isinstance(sys.exc_info()[1], ConnectionError) and not self.stopping.is_set():
            super().handle_error(request, client_address)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, end open connections and slow answers, close, and join the threads."""
        deadline = time.monotonic() + timeout
        self.stopping.set()
        with suppress(OSError):
            self._waker.send(b"\0")
        self.loop.join(timeout)
        with self._lock:
            connections = list(self._connections)
            threads = [thread for thread in self._workers if thread.is_alive()]
        for connection in connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.server_close()
        self._selector.close()
        self.large_bodies.shutdown()  # quick: their connections are shut down
        self._wake.close()
        self._waker.close()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def start(answers: Answers, router: Router, host: str, port: int, *, log_requests: bool) -> _Server:
    """Start serving in a daemon thread; the caller must call ``stop()``.

    Args:
        answers: What answers the requests: the emulator (or a subclass of it that
            overrides ``handle``, as the soak does), called as the in-process transport
            calls it.
        router: What answers, in the error envelope, a request too broken to hand over.
        host: The address to listen on (checked by the caller).
        port: The port, 0 for any free one.
        log_requests: Whether to print one line per request to stderr.

    Returns:
        The running server, with its ``base_url`` and ``port``.

    Raises:
        OSError: If it cannot listen there.
    """
    server = _Server((host, port), answers, router, log_requests)
    # Its threads (and the connection threads they start) block SIGINT and SIGTERM, so these
    # reach a thread that can act on them rather than leave the main thread asleep.
    masked = hasattr(signal, "pthread_sigmask")
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals) if masked else set()
    try:
        server.loop.start()
    finally:
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return server
