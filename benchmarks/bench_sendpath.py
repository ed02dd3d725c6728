"""The send path's cost per call: ``translate()`` against a tuned raw httpx call, in-process.

The raw call is the fastest httpx makes: the ``httpx.Request`` built once, then
``client.send(request)`` and ``json.loads(response.content)`` each call. Every answer is
the spec's envelope with its rate-limit and ``X-Request-Id`` headers. Two benchmarks, each
for ``Client`` against ``httpx.Client`` and ``AsyncClient`` against ``httpx.AsyncClient``
(on asyncio):

``caller``: what the SDK itself adds. ``lingodoc.Client(..., http_client=httpx.Client(
transport=T))`` against ``httpx.Client(transport=T)``, ``T`` one ``httpx.MockTransport``
under both: below the http client, the two run the same code.

``socket``: the whole stack over a fake socket below httpcore. ``lingodoc.Client(...)`` on
its own transport against ``httpx.Client()`` on httpx's default one. ``connect_tcp`` of
``httpcore.SyncBackend`` and ``httpcore.AnyIOBackend`` is replaced on the class (httpx's
default transport takes no network backend) by one that returns an in-memory stream,
which answers each request with the prepared bytes of the response. Both sides run whole:
their clients, transports, httpcore's connections and h11; only the socket is left out.

Interleaved rounds of ``--calls`` calls each; reported per round: each side's time per
call, the µs the SDK adds (SDK - raw) and the ratio raw / SDK (above 1: the SDK is faster).
Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from unittest import mock

import httpcore
import httpx
from _common import (
    BASE_URL,
    ENVELOPE,
    KEY,
    PAYLOAD,
    RESPONSE_HEADERS,
    TEXT,
    TRANSLATION,
    emit,
    interleaved,
    paired,
    summary,
    timed,
)

import lingodoc
from lingodoc._framing import Framing

Call = Callable[[], str]
AsyncCall = Callable[[], Awaitable[str]]
BODY = json.dumps(ENVELOPE).encode()
URL = BASE_URL + "/translate"
# The request of the raw calls, built once: what the SDK sends, less what it adds itself.
REQUEST = httpx.Request(
    "POST",
    URL,
    headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    content=json.dumps(PAYLOAD).encode(),
)
# The request's head on the wire, as the SDK's transport follows it (its method).
REQUEST_WIRE = b"POST /v1/translate HTTP/1.1\r\nHost: api.lingodoc.test\r\n\r\n"
# The response on the wire, as the fake socket sends it.
WIRE = b"".join(
    [
        b"HTTP/1.1 200 OK\r\n",
        *(f"{name}: {value}\r\n".encode() for name, value in RESPONSE_HEADERS),
        f"Content-Length: {len(BODY)}\r\n\r\n".encode(),
        BODY,
    ]
)


class _Socket:
    """An in-memory connection: one answer owed per request head written, sent at a read."""

    answered = 0  # by every connection: each side checks that its call went through one

    def __init__(self) -> None:
        self.owed = 0

    def take(self, buffer: bytes) -> None:
        self.owed += buffer.count(b"\r\n\r\n")  # the end of a request's head

    def answer(self) -> bytes:
        if not self.owed:
            return b""  # as a closed connection: nothing was asked
        self.owed -= 1
        _Socket.answered += 1
        return WIRE


class FakeStream(httpcore.NetworkStream):
    def __init__(self) -> None:
        self.socket = _Socket()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.socket.answer()

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.socket.take(buffer)

    def close(self) -> None:
        pass

    def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return self


class AsyncFakeStream(httpcore.AsyncNetworkStream):
    def __init__(self) -> None:
        self.socket = _Socket()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.socket.answer()

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.socket.take(buffer)

    async def aclose(self) -> None:
        pass

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return self


def _connect(self: object, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
    return FakeStream()


async def _aconnect(self: object, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
    return AsyncFakeStream()


@contextlib.contextmanager
def fake_sockets() -> Iterator[None]:
    """Every connection httpcore's own backends make, in-memory while the block runs."""
    with (
        mock.patch.object(httpcore.SyncBackend, "connect_tcp", _connect),
        mock.patch.object(httpcore.AnyIOBackend, "connect_tcp", _aconnect),
    ):
        yield


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers=RESPONSE_HEADERS, content=BODY)


def raw_call(client: httpx.Client) -> Call:
    def call() -> str:
        return json.loads(client.send(REQUEST).content)["data"]["translated_text"]  # type: ignore[no-any-return]

    return call


def raw_acall(client: httpx.AsyncClient) -> AsyncCall:
    async def call() -> str:
        response = await client.send(REQUEST)
        return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

    return call


def framed(call: Call) -> Call:
    """``call``, and h11's reading of its response, as the SDK's transport follows each one.

    The floor over a fake socket: the raw call plus the check the SDK may not skip (`Framing`).
    """
    framing = Framing()

    def floor() -> str:
        framing.wrote(REQUEST_WIRE)
        framing.read(WIRE)
        return call()

    return floor


def framed_async(call: AsyncCall) -> AsyncCall:
    framing = Framing()

    async def floor() -> str:
        framing.wrote(REQUEST_WIRE)
        framing.read(WIRE)
        return await call()

    return floor


def deadlined(call: AsyncCall) -> AsyncCall:
    """``call`` within a deadline: the floor on a caller's ``AsyncClient``, where the SDK
    bounds each attempt as a whole with the cheapest public cancel scope (``asyncio.timeout``).
    """

    async def floor() -> str:
        async with asyncio.timeout(30):
            return await call()

    return floor


def sdk_call(client: lingodoc.Client) -> Call:
    def call() -> str:
        return client.translate(TEXT, source_language="en", target_language="de").translated_text

    return call


def sdk_acall(client: lingodoc.AsyncClient) -> AsyncCall:
    async def call() -> str:
        result = await client.translate(TEXT, source_language="en", target_language="de")
        return result.translated_text

    return call


def clients(
    stack: contextlib.AsyncExitStack, transport: httpx.MockTransport | None
) -> tuple[Call, Call, AsyncCall, AsyncCall]:
    """Raw and SDK calls, sync then async: ``transport`` under both, else each its default."""
    raw, araw = httpx.Client(transport=transport), httpx.AsyncClient(transport=transport)
    http = None if transport is None else httpx.Client(transport=transport)
    ahttp = None if transport is None else httpx.AsyncClient(transport=transport)
    sdk = lingodoc.Client(KEY, base_url=BASE_URL, http_client=http)
    asdk = lingodoc.AsyncClient(KEY, base_url=BASE_URL, http_client=ahttp)
    for client in (raw, sdk):
        stack.callback(client.close)
    for aclient in (araw, asdk):
        stack.push_async_callback(aclient.aclose)
    return raw_call(raw), sdk_call(sdk), raw_acall(araw), sdk_acall(asdk)


def timed_async(
    loop: asyncio.AbstractEventLoop, call: AsyncCall, count: int
) -> Callable[[], float]:
    async def many() -> float:
        started = time.perf_counter()
        for _ in range(count):
            await call()
        return (time.perf_counter() - started) / count

    return lambda: loop.run_until_complete(many())


def measure(
    raw: Callable[[], float], floor: Callable[[], float], sdk: Callable[[], float], rounds: int
) -> dict[str, Any]:
    """The three cases warmed up, then measured in interleaved rounds, summarised.

    ``floor``: the raw call plus what the SDK may not skip (the same as ``raw`` if nothing).
    """
    raw(), floor(), sdk()  # lazy imports, pydantic's validators, caches, connections
    samples = interleaved({"raw": raw, "floor": floor, "lingodoc": sdk}, rounds)
    raw_s, floor_s, sdk_s = samples["raw"], samples["floor"], samples["lingodoc"]
    return {
        "raw_us": summary([s * 1e6 for s in raw_s]),
        "sdk_us": summary([s * 1e6 for s in sdk_s]),
        "overhead_us": paired(sdk_s, raw_s, lambda a, b: (a - b) * 1e6),
        "ratio": paired(raw_s, sdk_s, lambda a, b: a / b),
        "floor_ratio": paired(raw_s, floor_s, lambda a, b: a / b),
    }


def check(call: Call, socket: bool) -> None:
    """One call answered right, and by a fake socket if ``socket`` (not the network)."""
    answered = _Socket.answered
    assert call() == TRANSLATION
    assert _Socket.answered == answered + socket, "not sent through httpcore's own backend"


def both(
    loop: asyncio.AbstractEventLoop,
    calls: tuple[Call, Call, AsyncCall, AsyncCall],
    count: int,
    rounds: int,
    socket: bool,
) -> dict[str, Any]:
    raw, sdk, araw, asdk = calls
    check(raw, socket)
    check(sdk, socket)
    check(lambda: loop.run_until_complete(araw()), socket)
    check(lambda: loop.run_until_complete(asdk()), socket)
    floor, afloor = (framed(raw), framed_async(araw)) if socket else (raw, deadlined(araw))
    return {
        "sync": measure(timed(raw, count), timed(floor, count), timed(sdk, count), rounds),
        "async": measure(
            timed_async(loop, araw, count),
            timed_async(loop, afloor, count),
            timed_async(loop, asdk, count),
            rounds,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    transport = httpx.MockTransport(answer)
    with fake_sockets():
        result = {
            "calls_per_round": args.calls,
            "caller": both(loop, clients(stack, transport), args.calls, args.rounds, socket=False),
            "socket": both(loop, clients(stack, None), args.calls, args.rounds, socket=True),
        }
        loop.run_until_complete(stack.aclose())
    loop.close()
    emit(result)


if __name__ == "__main__":
    main()
