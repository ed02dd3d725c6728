"""The SDK's own transport for `AsyncClient`: the one source of both transports.

This module is written by hand; ``_sync_transport.py`` (``Client``'s) is generated from
it by ``scripts/unasync.py``.

httpx's transport API over httpcore's public pool. Its streams cut each step to the
attempt's deadline (httpcore gives each read the read timeout afresh), follow each response
with h11 (`_framing`), and are counted while open, so that `Transport.drop` can close them
without the pool, whose locks an interrupted call may have left taken.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, NoReturn

import httpcore
import httpx

from lingodoc import _deadline, _tracing
from lingodoc._constants import KEEPALIVE_EXPIRY
from lingodoc._framing import Framing


class _Stream(httpcore.AsyncNetworkStream):
    """A connection's stream: each step cut to the deadline, its responses' framing followed."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, backend: _Backend) -> None:
        self.stream = stream
        self.backend = backend
        self.framing = Framing()
        backend.streams.add(self)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self.stream.read(max_bytes, _deadline.cut(timeout, httpcore.ReadTimeout))
        self.framing.read(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.framing.wrote(buffer)
        await self.stream.write(buffer, _deadline.cut(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        self.backend.streams.discard(self)
        await self.stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout = _deadline.cut(timeout, httpcore.ConnectTimeout)
        tls = await self.stream.start_tls(ssl_context, server_hostname, timeout)
        self.backend.streams.discard(self)  # the TLS stream holds the socket now
        return _Stream(tls, self.backend)

    def get_extra_info(self, info: str) -> Any:
        # httpcore closes an idle connection that is readable, instead of reusing it.
        if info == "is_readable" and self.framing.closing:
            return True
        return self.stream.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's own backend, its streams wrapped in `_Stream` and counted while open."""

    def __init__(self) -> None:
        self.backend = httpcore.AnyIOBackend()
        self.streams: set[_Stream] = set()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout = _deadline.cut(timeout, httpcore.ConnectTimeout)
        stream = await self.backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Stream(stream, self)


# httpcore's errors, each raised as httpx's error of the same name.
_HTTPCORE_ERRORS = (
    httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
    httpcore.TimeoutException, httpcore.UnsupportedProtocol,
)  # fmt: skip


# Raises an error of a library under httpx as httpx's own.
Raise = Callable[[Exception], NoReturn]


def _raise_as_httpx(exc: Exception) -> NoReturn:
    """Raise httpcore's error as httpx's own, as ``httpx.HTTPTransport`` does."""
    raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc


class ResponseStream(httpx.AsyncByteStream):
    """A response body as httpx's: its ``errors`` raised as httpx's by ``raises``.

    Of httpcore's pool, or of ``DefaultAioHttpClient``'s transport. An iterator, not a
    generator: a body read only in part leaves no generator unfinished.
    """

    def __init__(self, stream: Any, errors: tuple[type[Exception], ...], raises: Raise) -> None:
        self.stream = stream  # iterable, and closed to free its connection
        self.errors, self.raises = errors, raises
        self.chunks: Any = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        self.chunks = self.stream.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.chunks.__anext__()  # type: ignore[no-any-return]
        except self.errors as exc:
            self.raises(exc)

    async def aclose(self) -> None:
        try:
            await self.stream.aclose()
        except self.errors as exc:
            self.raises(exc)


class _OneConnection:
    """One connection, reused while idle: httpcore's pool for a ``Client``'s main thread.

    httpcore's pool, interrupted while it holds its lock, takes that lock again in its own
    error handling and waits on itself for good; a single connection takes no lock again.
    """

    def __init__(self, verify: ssl.SSLContext, backend: _Backend) -> None:
        self.verify, self.backend = verify, backend
        self.connection: httpcore.AsyncHTTPConnection | None = None

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        connection, origin = self.connection, request.url.origin
        if (
            connection is None
            or not (connection.can_handle_request(origin) and connection.is_idle())
            or connection.has_expired()  # closed by the server, or read past a response
        ):
            if connection is not None:
                await connection.aclose()
            connection = self.connection = httpcore.AsyncHTTPConnection(
                origin=origin,
                ssl_context=self.verify,
                keepalive_expiry=KEEPALIVE_EXPIRY,
                network_backend=self.backend,
            )
        return await connection.handle_async_request(request)

    async def aclose(self) -> None:
        if self.connection is not None:
            await self.connection.aclose()


class Transport(_tracing.Traced, httpx.AsyncBaseTransport):
    """``httpx.AsyncHTTPTransport`` (HTTP/1.1) whose connections keep to each attempt's deadline.

    ``single``: one connection, without httpcore's pool and its locks (`_OneConnection`),
    unless through a proxy (httpcore's proxy connections are not public).
    """

    def __init__(
        self,
        connections: int,
        *,
        verify: ssl.SSLContext,
        proxy: httpcore.Proxy | None,
        single: bool = False,
    ) -> None:
        self.backend = _Backend()
        self.proxy = proxy
        self.is_closed = False
        self.pool: httpcore.AsyncConnectionPool | _OneConnection
        if single and proxy is None:
            self.pool = _OneConnection(verify, self.backend)
        else:
            self.pool = httpcore.AsyncConnectionPool(
                ssl_context=verify,
                proxy=proxy,
                max_connections=connections,
                keepalive_expiry=KEEPALIVE_EXPIRY,
                network_backend=self.backend,
            )

    async def send(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the pool, as ``httpx.AsyncHTTPTransport`` does."""
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
        try:
            response = await self.pool.handle_async_request(core_request)
        except _HTTPCORE_ERRORS as exc:
            _raise_as_httpx(exc)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=ResponseStream(response.stream, _HTTPCORE_ERRORS, _raise_as_httpx),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        self.is_closed = True
        await self.pool.aclose()

    async def drop(self) -> None:
        """Close its sockets, not through the pool (see above); a forked parent's stay open."""
        self.is_closed = True
        for stream in list(self.backend.streams):
            with contextlib.suppress(OSError):
                await stream.aclose()
