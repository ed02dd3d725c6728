"""``Client``'s own transport: httpx's, every socket step cut to the attempt's deadline.

httpcore gives each read the read timeout afresh: headers or a body sent a byte at a time
never time out. `DeadlineTransport` is ``httpx.HTTPTransport`` on httpcore's public pool,
with a network backend whose streams cut each connect, handshake, read and write to the
time left (``_deadline.left``). Imported when a ``Client`` builds its http client.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from lingodoc import _deadline


def _cut(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left, or ``error`` if the deadline has passed."""
    remaining = _deadline.left()
    if remaining is None:
        return timeout
    if remaining <= 0:
        raise error("the attempt took longer than its timeout")
    return remaining if timeout is None else min(timeout, remaining)


class _Stream(httpcore.NetworkStream):
    """A connection's stream, each read and write cut to the attempt's deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self.stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, _cut(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, _cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _cut(timeout, httpcore.ConnectTimeout)
        return _Stream(self.stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own backend, its streams keeping to the deadline."""

    def __init__(self) -> None:
        self.backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _cut(timeout, httpcore.ConnectTimeout)
        return _Stream(self.backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)


# httpcore's errors, each raised as httpx's error of the same name.
_HTTPCORE_ERRORS = (
    httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
    httpcore.TimeoutException, httpcore.UnsupportedProtocol,
)  # fmt: skip


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as httpx's own, as ``httpx.HTTPTransport`` does."""
    try:
        yield
    except _HTTPCORE_ERRORS as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Any) -> None:
        self.stream = stream  # httpcore's pool's: iterable, and closed to free its connection

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self.stream

    def close(self) -> None:
        with _httpx_errors():
            self.stream.close()


class DeadlineTransport(httpx.BaseTransport):
    """``httpx.HTTPTransport`` (HTTP/1.1), whose connections keep to each attempt's deadline.

    Args:
        verify: The SSL context of its TLS connections.
        limits: Its pool's limits.
    """

    def __init__(self, *, verify: ssl.SSLContext, limits: httpx.Limits) -> None:
        self.pool = httpcore.ConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the pool, as ``httpx.HTTPTransport`` does."""
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self.pool.handle_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        """Close every connection of the pool."""
        self.pool.close()
