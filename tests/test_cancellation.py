"""A cancel scope around an `AsyncClient` call leaves the connection it used to the next call.

Closing a response hands its connection back to the pool; a cancellation that cut that
short would leave the connection busy for good, and with one connection every later call
would wait for it. httpcore's pool (1.0.9 on) shields its own close; a caller's http client
may have a transport that awaits before it closes, and the SDK shields that close itself.
Each is tried on an in-memory connection, on asyncio and on trio: the scope is cancelled as
the answer is read, so the cancellation lands at the call's next checkpoint, in the close.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from unittest import mock

import anyio
import httpcore
import httpx
import pytest

import lingodoc
from tests.conftest import API_KEY, envelope

ANSWER = json.dumps(
    envelope({"translated_text": "Hallo", "source_language": "en", "target_language": "de"})
).encode()
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)


class Server:
    """Answers each request at once; ``on_answer`` runs as the answer is read."""

    def __init__(self) -> None:
        self.connections = 0
        self.on_answer: Callable[[], object] | None = None

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        self.connections += 1
        return Connection(self)


class Connection(httpcore.AsyncNetworkStream):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.owed = 0

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.owed += buffer.count(b"\r\n\r\n")  # a request's head ends

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if not self.owed:
            return b""
        self.owed -= 1
        if self.server.on_answer is not None:
            self.server.on_answer()
        return RESPONSE

    async def aclose(self) -> None:
        pass

    def get_extra_info(self, info: str) -> Any:
        return False if info == "is_readable" else None


class CloseAwaits(httpx.AsyncByteStream):
    """A body whose close awaits a checkpoint before it closes the one it wraps."""

    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self.stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            yield chunk

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()
        await self.stream.aclose()


class WrappingTransport(httpx.AsyncBaseTransport):
    """httpx's own transport (one connection), each body wrapped in `CloseAwaits`."""

    def __init__(self) -> None:
        self.transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=1))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.transport.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=CloseAwaits(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.transport.aclose()


@pytest.mark.parametrize("http_client", ["the SDK's own", "a caller's, its close awaiting"])
async def test_a_scope_cancelled_as_the_answer_arrives_leaves_the_connection_to_the_next_call(
    http_client: str,
) -> None:
    server = Server()
    with (
        mock.patch.object(httpcore.AnyIOBackend, "connect_tcp", server.connect_tcp),
        mock.patch.object(httpcore.TrioBackend, "connect_tcp", server.connect_tcp),  # httpx's
    ):
        theirs = (
            httpx.AsyncClient(transport=WrappingTransport()) if "caller" in http_client else None
        )
        async with lingodoc.AsyncClient(
            API_KEY,
            base_url="http://127.0.0.1:9/v1",
            max_in_flight=1,
            timeout=5,
            http_client=theirs,
        ) as client:
            with anyio.CancelScope() as scope:
                server.on_answer = scope.cancel  # delivered at the call's next checkpoint
                await client.translate("Hello", source_language="en", target_language="de")
            assert scope.cancel_called
            server.on_answer = None
            # One connection: left busy, this call would wait for it until its pool timeout.
            result = await client.translate("Hello", source_language="en", target_language="de")
        if theirs is not None:
            await theirs.aclose()
    assert result.translated_text == "Hallo"
    assert server.connections == 1  # handed back idle, and reused
