"""A cancel scope around an `AsyncClient` call leaves the client's pool whole.

Closing a response hands its connection back to httpcore's pool; a cancellation that cut
that short would leave the connection busy for good (encode/httpcore#1115), and with
``max_in_flight=1`` every later call would wait on it. httpcore (1.0.9 on) shields its
own close, so the SDK adds no scope of its own: these tests hold it to that, on the SDK's
own transport over an in-memory connection, on asyncio and on trio.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from unittest import mock

import anyio
import httpcore

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


async def test_a_scope_cancelled_as_the_answer_arrives_leaves_the_connection_to_the_next_call() -> (
    None
):
    server = Server()
    with mock.patch.object(httpcore.AnyIOBackend, "connect_tcp", server.connect_tcp):
        async with lingodoc.AsyncClient(
            API_KEY, base_url="http://127.0.0.1:9/v1", max_in_flight=1, timeout=5
        ) as client:
            with anyio.CancelScope() as scope:
                server.on_answer = scope.cancel  # delivered at the call's next checkpoint
                await client.translate("Hello", source_language="en", target_language="de")
            assert scope.cancel_called
            server.on_answer = None
            # One connection: left busy, this call would wait for it until its pool timeout.
            result = await client.translate("Hello", source_language="en", target_language="de")
    assert result.translated_text == "Hallo"
    assert server.connections == 1  # handed back idle, and reused
