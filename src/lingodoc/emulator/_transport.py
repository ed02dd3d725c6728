"""The in-process face of the emulator: one httpx transport for sync and async clients."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import httpx

if TYPE_CHECKING:
    from lingodoc.emulator._routing import Reply
    from lingodoc.emulator._state import Clock


class Responder(Protocol):
    """What the transport needs of an [`Emulator`][lingodoc.emulator.Emulator]."""

    @property
    def clock(self) -> Clock:
        """The clock a ``slow`` fault's delay is waited on."""

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request, as [`Emulator.handle`][lingodoc.emulator.Emulator.handle] does."""


class EmulatorTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport, sync and async, answered by an [`Emulator`][lingodoc.emulator.Emulator].

    The URL's host is ignored. A ``slow`` fault sleeps on the emulator's clock (instant under
    ``lingodoc.testing.fake_clock()``) and raises ``httpx.ReadTimeout`` when the request's read
    timeout is shorter than the delay; a ``disconnect`` fault raises
    ``httpx.RemoteProtocolError``, as httpx does when a server hangs up.

    [`Emulator.transport`][lingodoc.emulator.Emulator.transport] makes one; it holds no sockets
    or threads.

    Args:
        emulator: The emulator that answers the requests.
    """

    def __init__(self, emulator: Responder) -> None:
        self._emulator = emulator

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer a request from a sync ``httpx.Client``.

        Args:
            request: The request, whose body is read here.

        Returns:
            The emulator's answer, after the delay of a ``slow`` fault (on its clock).

        Raises:
            httpx.RemoteProtocolError: For a ``disconnect`` fault: no answer.
            httpx.ReadTimeout: For a ``slow`` fault longer than the request's read timeout,
                after waiting that long.
        """
        reply = self._handle(request, request.read())
        wait, timed_out = _delay(reply, request)
        if wait:
            self._emulator.clock.sleep(wait)
        return _response(reply, request, timed_out)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Answer a request from an ``httpx.AsyncClient``.

        Args:
            request: The request, whose body is read here.

        Returns:
            The emulator's answer, after the delay of a ``slow`` fault (on its clock, without
            blocking the event loop).

        Raises:
            httpx.RemoteProtocolError: For a ``disconnect`` fault: no answer.
            httpx.ReadTimeout: For a ``slow`` fault longer than the request's read timeout,
                after waiting that long.
        """
        reply = self._handle(request, await request.aread())
        wait, timed_out = _delay(reply, request)
        if wait:
            await self._emulator.clock.async_sleep(wait)
        return _response(reply, request, timed_out)

    def _handle(self, request: httpx.Request, body: bytes) -> Reply:
        reply = self._emulator.handle(
            request.method, request.url.raw_path.decode("ascii"), request.headers, body
        )
        if reply.disconnect:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        return reply


def _delay(reply: Reply, request: httpx.Request) -> tuple[float, bool]:
    """Return how long to wait before answering, and whether the client gives up first."""
    read_timeout = request.extensions.get("timeout", {}).get("read")
    if read_timeout is not None and read_timeout < reply.delay:
        return float(read_timeout), True
    return reply.delay, False


def _response(reply: Reply, request: httpx.Request, timed_out: bool) -> httpx.Response:
    if timed_out:
        raise httpx.ReadTimeout("The read operation timed out", request=request)
    content = b"" if request.method == "HEAD" else reply.body
    return httpx.Response(
        reply.status, headers=list(reply.headers.items()), content=content, request=request
    )
