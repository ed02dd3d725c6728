"""The SDK's network streams and backend, blocking: each step cut to the attempt's deadline.

Generated from ``_async_network.py`` by ``scripts/unasync.py``: do not edit.
``_network.install`` puts them in place.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

from lingodoc import _tls
from lingodoc._deadline import Step, limit

SocketOption = Any  # httpcore's SOCKET_OPTION, which it does not export


class Stream(httpcore.NetworkStream):
    """A network stream whose reads and writes keep to the attempt's deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with Step(timeout, httpcore.ReadTimeout, "the response") as step:
            return self._stream.read(max_bytes, step.timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with Step(timeout, httpcore.WriteTimeout, "sending the request") as step:
            return self._stream.write(buffer, step.timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        # The SDK's clients get a stand-in for the default context, built here at the
        # first handshake that needs it (see _tls); a proxy's own context passes as it is.
        ssl_context = _tls.resolve(ssl_context)
        return Stream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class Backend(httpcore.NetworkBackend):
    """A network backend whose connections keep to the attempt's deadline."""

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
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return Stream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        return Stream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)
