"""The SDK's connection pools: every socket read and write cut to the attempt's deadline.

httpcore gives each read the read timeout afresh, so headers or a body sent a
byte at a time never time out. ``install`` wraps the network backend of the
pools of an http client the SDK created: while an attempt is current (see
``_deadline``), each connect, TLS handshake, read and write gets its own timeout
or the time left, whichever is shorter, and none starts once the deadline has
passed. Outside an attempt the wrappers do nothing.

Imported when the SDK creates its http client (which imports httpcore anyway),
so that ``import lingodoc`` stays light.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import httpcore
import httpx

from lingodoc import _deadline

SocketOption = Any  # httpcore's SOCKET_OPTION, which it does not export


def install(http: httpx.Client | httpx.AsyncClient) -> None:
    """Make the pools of ``http`` (direct and through proxies) keep to the attempt's deadline.

    Only httpx's own transports are changed; any other is left as it is.
    """
    transports = [getattr(http, "_transport", None), *getattr(http, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, (_Backend, _AsyncBackend)):
            continue
        if isinstance(backend, httpcore.NetworkBackend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
        elif isinstance(backend, httpcore.AsyncNetworkBackend):
            pool._network_backend = _AsyncBackend(backend)  # type: ignore[union-attr]


def _limit(
    timeout: float | None, error: type[httpcore.TimeoutException], what: str
) -> tuple[float | None, _deadline.Attempt | None]:
    """Return the timeout cut to the time left, and the attempt if it cut it.

    Raises:
        httpcore.TimeoutException: ``error``, if the deadline has already passed.
    """
    attempt = _deadline.current()
    left = None if attempt is None else attempt.left()
    if left is None:
        return timeout, None
    assert attempt is not None
    if left <= 0:
        raise error(attempt.expired(what))
    if timeout is None or left < timeout:
        return left, attempt
    return timeout, None


class _Step:
    """One network step's timeout cut to the attempt's time left (``with _Step(...) as step``).

    A timeout of the step raised inside, when it was the attempt's deadline that cut it, is
    raised again as the attempt's ("... took longer than the timeout of the attempt").
    """

    __slots__ = ("attempt", "error", "timeout", "what")

    def __init__(
        self, timeout: float | None, error: type[httpcore.TimeoutException], what: str
    ) -> None:
        self.timeout, self.attempt = _limit(timeout, error, what)
        self.error, self.what = error, what

    def __enter__(self) -> _Step:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.attempt is not None and issubclass(exc_type, self.error):
            raise self.error(self.attempt.expired(self.what)) from None


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _Step(timeout, httpcore.ReadTimeout, "the response") as step:
            return self._stream.read(max_bytes, step.timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _Step(timeout, httpcore.WriteTimeout, "sending the request") as step:
            return self._stream.write(buffer, step.timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        return _Stream(
            self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        return _Stream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _Step(timeout, httpcore.ReadTimeout, "the response") as step:
            return await self._stream.read(max_bytes, step.timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _Step(timeout, httpcore.WriteTimeout, "sending the request") as step:
            return await self._stream.write(buffer, step.timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        return _AsyncStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _AsyncStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout, _ = _limit(timeout, httpcore.ConnectTimeout, "connecting")
        return _AsyncStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)
