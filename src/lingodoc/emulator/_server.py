"""The HTTP face of the emulator: a threaded HTTP/1.1 server with keep-alive, on loopback."""

from __future__ import annotations

import socket
import sys
import threading
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lingodoc.emulator._core import Emulator, EmulatorServer

_MAX_BODY = 16 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "lingodoc-emulator"
    # Headers and body go out in two writes; without this, Nagle's algorithm and delayed ACKs
    # add ~40 ms to every keep-alive request.
    disable_nagle_algorithm = True
    timeout = 60  # idle keep-alive connections are closed after this
    server: _Server

    def _serve(self) -> None:
        emulator = self.server.emulator
        body = self._read_body()
        if body is None:
            # Where this body ends is unknown, so the connection cannot be reused.
            self.close_connection = True
            message = "Malformed body framing, or a body over 16 MiB."
            reply = emulator._error_reply(400, "VALIDATION_ERROR", message)
        else:
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = emulator.handle(self.command, self.path, headers, body)
        if reply.disconnect or (reply.delay and self.server.stopping.wait(reply.delay)):
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def _read_body(self) -> bytes | None:
        try:
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                length = int(self.headers.get("Content-Length", "0"))
                return self.rfile.read(length) if 0 <= length <= _MAX_BODY else None
            chunks, total = [], 0
            while (size := int(self.rfile.readline(100).split(b";")[0], 16)) > 0:
                total += size
                if total > _MAX_BODY:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline(100)
            while self.rfile.readline(100).strip():  # trailer fields, up to the blank line
                pass
            return b"".join(chunks)
        except ValueError:
            return None

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log_requests:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients opening keep-alive connections at once

    def __init__(self, address: tuple[str, int], emulator: Emulator, log_requests: bool) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.emulator = emulator
        self.log_requests = log_requests
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (say, after its read timeout) is no error of ours.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def stop(self) -> None:
        """Stop accepting, end open keep-alive connections and slow answers, and close."""
        self.stopping.set()
        self.shutdown()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.server_close()


def start(
    emulator: Emulator, host: str, port: int, *, log_requests: bool
) -> tuple[_Server, EmulatorServer]:
    """Start serving ``emulator`` in a daemon thread; the caller must call ``stop()``."""
    server = _Server((host, port), emulator, log_requests)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.name = f"lingodoc-emulator-{server.server_address[1]}"
    thread.start()
    bound_port = int(server.server_address[1])
    url_host = f"[{host}]" if ":" in host else host
    base_url = f"http://{url_host}:{bound_port}/v1"
    return server, EmulatorServer(base_url, emulator.api_key, host, bound_port, emulator)
