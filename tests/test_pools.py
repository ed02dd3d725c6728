"""The SDK's own http clients split their connections into small pools (``ShardedTransport``).

httpcore's pool costs more per call with every connection it holds (its scans are
quadratic), so the SDK's transport routes each request to one of several pools of at
most ``SHARD_SIZE`` connections. These tests drive the transport with fake pools, whose
connections are counted, and check which pool each request goes to; then that a client
the SDK makes is wired that way (and a caller's http client is not).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc._async_network import SHARD_SIZE, AsyncBackend, AsyncShardedTransport
from lingodoc._base_client import DEFAULT_LIMITS
from lingodoc._sync_network import Backend, ShardedTransport
from lingodoc.emulator import Emulator, EmulatorServer
from tests.conftest import API_KEY, BASE_URL, call, close


class FakeConnection:
    """One connection of a fake pool: in use, idle, or closed."""

    def __init__(self) -> None:
        self.idle = False
        self.closed = False
        self.interrupts_close: BaseException | None = None

    def is_idle(self) -> bool:
        return self.idle and not self.closed

    def is_closed(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True
        if self.interrupts_close is not None:  # as a cancellation met in its close
            raise self.interrupts_close

    async def aclose(self) -> None:
        self.close()


class FakePool:
    """Stands in for one pool (httpx's transport): opens a connection when none is idle."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pool = SimpleNamespace(connections=[])  # as httpx's transport -> httpcore
        self.requests = 0
        self.failing = False
        self.cancelled_in: BaseException | None = None
        self.closed = False

    def _handle(self) -> httpx.Response:
        self.requests += 1
        if self.failing:
            raise httpx.ConnectError("refused")
        if self.cancelled_in is not None:
            raise self.cancelled_in
        connections = self._pool.connections
        connection = next((c for c in connections if c.is_idle()), None)
        if connection is None:
            connection = FakeConnection()
            connections.append(connection)
        connection.idle = False
        return httpx.Response(200, stream=FakeBody(connection))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._handle()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._handle()

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.close()


class FakeBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body that gives its connection back (idle) when closed."""

    def __init__(self, connection: FakeConnection) -> None:
        self.connection = connection
        self.closes = 0
        # As httpcore leaves a connection whose task was cancelled as it gave it back.
        self.left_in_use = False
        self.fails_to_close = False
        self.interrupted_by: BaseException | None = None  # a cancellation met in its close

    def __iter__(self) -> Any:
        yield b"body"

    async def __aiter__(self) -> Any:
        yield b"body"

    def close(self) -> None:
        self.closes += 1
        if self.fails_to_close:
            raise httpx.ReadError("connection reset")
        if self.interrupted_by is not None:  # as httpcore#1093: the connection stays in use
            raise self.interrupted_by
        if not self.left_in_use:
            self.connection.idle = True

    async def aclose(self) -> None:
        self.close()


class Driver:
    """One test body for both transports: sends, closes and reads, awaiting if async."""

    def __init__(self, flavour: str, max_connections: int) -> None:
        self.pools: list[FakePool] = []

        def make(size: int) -> Any:
            self.pools.append(FakePool(size))
            return self.pools[-1]

        kind = ShardedTransport if flavour == "sync" else AsyncShardedTransport
        self.transport: Any = kind(make, max_connections)
        self.asynchronous = flavour == "async"

    async def _maybe(self, result: Any) -> Any:
        return await result if inspect.isawaitable(result) else result

    async def send(self) -> httpx.Response:
        request = httpx.Request("POST", BASE_URL + "/translate")
        if self.asynchronous:
            response: httpx.Response = await self.transport.handle_async_request(request)
        else:
            response = self.transport.handle_request(request)
        return response

    async def close_body(self, response: httpx.Response) -> None:
        stream: Any = response.stream
        await self._maybe(stream.aclose() if self.asynchronous else stream.close())

    async def read(self, response: httpx.Response) -> bytes:
        if self.asynchronous:
            return b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
        return b"".join(response.stream)  # type: ignore[arg-type]

    async def close(self) -> None:
        await self._maybe(self.transport.aclose() if self.asynchronous else self.transport.close())

    async def abandon(self, response: httpx.Response) -> None:
        """Close ``response`` as a cancelled task may: its connection stays in use, serving none."""
        stream: Any = response.stream
        stream._stream.left_in_use = True
        await self.close_body(response)

    def connections(self) -> list[int]:
        return [len(pool._pool.connections) for pool in self.pools]

    def requests(self) -> list[int]:
        return [pool.requests for pool in self.pools]


@pytest.fixture
def flavour(request: pytest.FixtureRequest) -> str:
    """The transport under test, ``ShardedTransport`` or ``AsyncShardedTransport``: "sync" or
    "async", the async one on asyncio and trio (tests/conftest.py: pytest_generate_tests)."""
    return str(request.param)


def test_the_pools_together_hold_the_connections_asked_for(flavour: str) -> None:
    sizes = Driver(flavour, 10).transport._sizes
    assert SHARD_SIZE == 4
    assert sizes == [4, 4, 2]
    assert Driver(flavour, 8).transport._sizes == [4, 4]
    assert Driver(flavour, 1).transport._sizes == [1]
    assert Driver(flavour, 10).transport.max_connections == 10


async def test_no_pool_is_made_before_a_request_needs_it(flavour: str) -> None:
    driver = Driver(flavour, 100)
    assert driver.transport.shards == [None] * 25
    response = await driver.send()
    assert len(driver.pools) == 1
    assert driver.transport.shards[0] is driver.pools[0]
    assert driver.transport.shards[1:] == [None] * 24
    assert driver.pools[0].size == SHARD_SIZE
    await driver.close_body(response)


async def test_requests_fill_the_first_pool_before_opening_another(flavour: str) -> None:
    driver = Driver(flavour, 12)
    open_ = [await driver.send() for _ in range(6)]
    assert driver.connections() == [4, 2]
    assert driver.transport._loads == [4, 2, 0]
    for response in open_:
        await driver.close_body(response)
    assert driver.transport._loads == [0, 0, 0]


async def test_calls_one_at_a_time_reuse_one_connection(flavour: str) -> None:
    driver = Driver(flavour, 100)
    for _ in range(20):
        response = await driver.send()
        assert await driver.read(response) == b"body"
        await driver.close_body(response)
    assert driver.connections() == [1]
    assert driver.requests() == [20]


async def test_a_pool_with_an_idle_connection_comes_before_one_with_room(flavour: str) -> None:
    driver = Driver(flavour, 12)
    first = [await driver.send() for _ in range(6)]  # pool 0: 4 in use, pool 1: 2
    for response in first[4:]:  # pool 1's two connections now idle
        await driver.close_body(response)
    await driver.close_body(first[0])
    driver.pools[0]._pool.connections.pop(0)  # that one then closed (say, by the server)
    # Pool 0 has room for one more connection, pool 1 two idle ones: those are taken.
    again = [await driver.send() for _ in range(2)]
    assert driver.requests() == [4, 4]
    assert driver.connections() == [3, 2]
    assert driver.transport._loads == [3, 2, 0]
    # Then room in pool 0 (a connection opened), before pool 2.
    again.append(await driver.send())
    assert driver.connections() == [4, 2]
    for response in first[1:4] + again:
        await driver.close_body(response)
    assert driver.transport._loads == [0, 0, 0]


async def test_with_every_pool_full_a_request_waits_at_the_shortest_queue(flavour: str) -> None:
    driver = Driver(flavour, 8)
    held = [await driver.send() for _ in range(8)]
    await driver.close_body(held.pop(0))  # pool 0 again has an idle connection...
    held.append(await driver.send())  # ... taken at once
    assert driver.transport._loads == [4, 4]
    await driver.close_body(held.pop(5))  # pool 1: 3 in flight
    held.append(await driver.send())
    held.append(await driver.send())  # full again: the next waits in pool 0 (4 vs 4)
    assert driver.transport._loads == [5, 4]
    held.append(await driver.send())
    assert driver.transport._loads == [5, 5]
    for response in held:
        await driver.close_body(response)
    assert driver.transport._loads == [0, 0]


async def test_past_every_connection_a_request_waits_where_fewest_wait(flavour: str) -> None:
    driver = Driver(flavour, 10)  # pools of 4, 4 and 2
    held = [await driver.send() for _ in range(10)]
    assert driver.transport._loads == [4, 4, 2]
    held += [await driver.send() for _ in range(4)]
    # Queues of 1, 1 and 1 after three; the fourth goes to the first of them.
    assert driver.transport._loads == [6, 5, 3]
    for response in held:
        await driver.close_body(response)


async def test_a_connection_that_serves_no_request_is_not_taken_for_an_idle_one(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    held = [await driver.send() for _ in range(4)]
    await driver.abandon(held[0])  # two connections left in use by no request
    await driver.abandon(held[1])
    await driver.close_body(held[2])  # one idle
    assert driver.transport._loads == [1, 0]
    held.append(await driver.send())  # the idle one
    assert (driver.transport._loads, driver.connections()) == ([2, 0], [4])
    # Pool 0 has 4 connections and 2 requests, but no connection free: the next goes on.
    held.append(await driver.send())
    assert (driver.transport._loads, driver.connections()) == ([2, 1], [4, 1])
    assert driver.transport.shards[0] is driver.pools[0]  # still serving: kept
    for response in held[3:]:
        await driver.close_body(response)
    assert driver.transport._loads == [0, 0]


async def test_a_pool_whose_connections_all_serve_no_request_is_replaced_and_closed(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    for response in [await driver.send() for _ in range(4)]:
        await driver.abandon(response)  # as after four cancelled calls: the pool is stuck
    assert driver.transport._loads == [0, 0]

    def fail() -> None:
        closes.append("tried")
        raise OSError("cannot close")

    async def fail_async() -> None:
        fail()

    closes: list[str] = []
    driver.pools[0].close = fail  # type: ignore[method-assign]
    driver.pools[0].aclose = fail_async  # type: ignore[method-assign]
    response = await driver.send()  # not failed by the old pool's close
    assert closes == ["tried"]
    assert driver.transport.shards[0] is driver.pools[1]  # a new pool in its place...
    assert driver.pools[1]._pool.connections[0].is_idle() is False  # ... serving the call
    assert driver.transport._loads == [1, 0]
    assert await driver.read(response) == b"body"
    await driver.close_body(response)
    assert driver.transport._loads == [0, 0]
    # The old pool was closed (its close failed: nothing else to do with it) and is gone.
    assert driver.requests() == [4, 1]
    again = await driver.send()
    assert driver.requests() == [4, 2]
    await driver.close_body(again)


async def test_an_old_pool_of_connections_serving_none_is_closed(flavour: str) -> None:
    driver = Driver(flavour, 8)
    for response in [await driver.send() for _ in range(3)]:
        await driver.abandon(response)
    response = await driver.send()
    assert driver.pools[0].closed
    assert all(connection.is_closed() for connection in driver.pools[0]._pool.connections)
    assert driver.transport.shards == [driver.pools[1], None]
    await driver.close_body(response)


async def test_a_body_that_fails_to_close_still_counts_out(flavour: str) -> None:
    driver = Driver(flavour, 8)
    response = await driver.send()
    stream: Any = response.stream
    stream._stream.fails_to_close = True
    with pytest.raises(httpx.ReadError):
        await driver.close_body(response)
    assert driver.transport._loads == [0, 0]


class Cancelled(BaseException):
    """As asyncio's CancelledError and trio's Cancelled: a BaseException, not an Exception."""


async def test_a_pool_where_a_request_was_cancelled_takes_no_more_and_is_replaced_once_idle(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    held = [await driver.send() for _ in range(2)]
    driver.pools[0].cancelled_in = Cancelled()
    with pytest.raises(Cancelled):
        await driver.send()
    driver.pools[0].cancelled_in = None
    assert driver.transport._loads == [2, 0]
    await driver.close_body(held.pop())  # an idle connection in pool 0, and room...
    held.append(await driver.send())  # ... but the request goes to pool 1
    assert driver.transport._loads == [1, 1]
    for response in held:
        await driver.close_body(response)
    # Pool 0's last request is out: the next request replaces it, and it is closed (the
    # request itself takes pool 1's idle connection).
    response = await driver.send()
    assert driver.transport.shards[0] is driver.pools[2]
    assert driver.pools[0].closed
    assert all(connection.is_closed() for connection in driver.pools[0]._pool.connections)
    assert driver.transport._loads == [0, 1]
    await driver.close_body(response)
    assert driver.transport._tainted == set()


async def test_a_body_whose_close_was_cancelled_leaves_its_pool_to_be_replaced(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    first, second = await driver.send(), await driver.send()
    stream: Any = first.stream
    stream._stream.interrupted_by = Cancelled()
    with pytest.raises(Cancelled):
        await driver.close_body(first)
    assert driver.transport._loads == [1, 0]
    third = await driver.send()  # not to pool 0, where a connection may be left in use
    assert driver.transport._loads == [1, 1]
    await driver.close_body(second)
    await driver.close_body(third)
    await driver.close_body(await driver.send())
    assert driver.pools[0].closed
    assert driver.transport.shards == [driver.pools[2], driver.pools[1]]


async def test_with_every_pool_taken_a_request_queues_where_none_was_cancelled(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    held = [await driver.send() for _ in range(8)]
    driver.pools[0].cancelled_in = Cancelled()
    await driver.close_body(held.pop(0))
    with pytest.raises(Cancelled):
        await driver.send()  # to pool 0's idle connection, and cancelled there
    assert driver.transport._loads == [3, 4]
    # Pool 0 has an idle connection, but a call was cancelled there; pool 1 a queue.
    held.append(await driver.send())
    assert driver.transport._loads == [3, 5]
    for response in held:
        await driver.close_body(response)


async def test_closing_a_replaced_pool_goes_past_a_cancelled_connection_close(
    flavour: str,
) -> None:
    driver = Driver(flavour, 8)
    for response in [await driver.send() for _ in range(4)]:
        await driver.abandon(response)
    connections = driver.pools[0]._pool.connections
    connections[1].interrupts_close = Cancelled()
    with pytest.raises(Cancelled):  # the caller's cancellation goes on...
        await driver.send()
    assert all(connection.is_closed() for connection in connections)  # ... once all closed
    assert driver.pools[0].closed
    assert driver.transport._loads == [0, 0]
    assert driver.transport.shards[0] is driver.pools[1]
    response = await driver.send()  # the new pool serves
    assert driver.requests() == [4, 1]
    await driver.close_body(response)


def _cannot_make(size: int) -> Any:
    raise MemoryError


async def test_a_pool_that_cannot_be_made_counts_nothing(flavour: str) -> None:
    driver = Driver(flavour, 8)
    held = [await driver.send() for _ in range(4)]
    driver.transport._make = _cannot_make
    with pytest.raises(MemoryError):
        await driver.send()  # pool 1 is needed
    assert driver.transport._loads == [4, 0]
    for response in held:
        await driver.close_body(response)


async def test_closing_goes_on_past_a_pool_that_fails_to_close(flavour: str) -> None:
    driver = Driver(flavour, 12)
    held = [await driver.send() for _ in range(9)]
    for response in held:
        await driver.close_body(response)

    def fail() -> None:
        raise OSError("cannot close")

    async def fail_async() -> None:
        fail()

    driver.pools[0].close = fail  # type: ignore[method-assign]
    driver.pools[0].aclose = fail_async  # type: ignore[method-assign]
    with pytest.raises(OSError, match="cannot close"):  # the first pool's close failed...
        await driver.close()
    assert [pool.closed for pool in driver.pools] == [False, True, True]  # ... not the others'


async def test_a_request_that_fails_counts_out_of_its_pool(flavour: str) -> None:
    driver = Driver(flavour, 8)
    response = await driver.send()
    driver.pools[0].failing = True
    with pytest.raises(httpx.ConnectError):
        await driver.send()
    assert driver.transport._loads == [1, 0]
    await driver.close_body(response)
    assert driver.transport._loads == [0, 0]


async def test_a_body_closed_twice_counts_out_once(flavour: str) -> None:
    driver = Driver(flavour, 8)
    kept = await driver.send()
    response = await driver.send()
    await driver.close_body(response)
    await driver.close_body(response)
    assert driver.transport._loads == [1, 0]
    await driver.close_body(kept)
    assert driver.transport._loads == [0, 0]


async def test_closing_the_transport_closes_every_pool_it_made(flavour: str) -> None:
    driver = Driver(flavour, 12)
    held = [await driver.send() for _ in range(5)]
    for response in held:
        await driver.close_body(response)
    await driver.close()
    assert [pool.closed for pool in driver.pools] == [True, True]
    assert driver.transport.shards[2] is None


# Wiring: the SDK's own http client, and a caller's --------------------------------------


async def test_the_sdks_own_http_client_splits_its_pool(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL)
    transport: Any = client._shared.http._transport
    sharded = ShardedTransport if client_class is lingodoc.Client else AsyncShardedTransport
    assert type(transport) is sharded
    assert transport.max_connections == 100
    assert client._shared.limiter.ceiling == 100
    # Each pool is httpx's own, of SHARD_SIZE connections, keeping to the deadlines.
    shard = transport._make(SHARD_SIZE)
    backend = Backend if client_class is lingodoc.Client else AsyncBackend
    assert isinstance(shard._pool._network_backend, backend)
    assert shard._pool._max_connections == SHARD_SIZE
    assert shard._pool._max_keepalive_connections == SHARD_SIZE
    assert shard._pool._keepalive_expiry == DEFAULT_LIMITS.keepalive_expiry
    await close(client)


async def test_a_callers_http_client_keeps_its_own_transport(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
) -> None:
    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    http: Any = kind(limits=httpx.Limits(max_connections=7))
    theirs = http._transport
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    assert client._shared.http._transport is theirs
    assert client._shared.limiter.ceiling == 7
    await close(client)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


async def test_proxied_urls_keep_httpxs_proxy_transport_and_no_proxy_hosts_get_the_pools(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "api.lingodoc.test")
    client = client_class(API_KEY, base_url=BASE_URL)
    http: Any = client._shared.http
    sharded = ShardedTransport if client_class is lingodoc.Client else AsyncShardedTransport
    direct = http._transport_for_url(httpx.URL(BASE_URL))
    assert type(direct) is sharded
    proxied = http._transport_for_url(httpx.URL("https://elsewhere.example/v1"))
    assert type(proxied) is not sharded
    assert type(proxied._pool).__name__.endswith("HTTPProxy")
    backend = Backend if client_class is lingodoc.Client else AsyncBackend
    assert isinstance(proxied._pool._network_backend, backend)  # keeps to the deadline too
    await close(client)


def documents_request(server: EmulatorServer) -> httpx.Request:
    """A ``GET /documents`` to ``server``, sent by hand past the SDK (its key attached)."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    return httpx.Request("GET", server.base_url + "/documents", headers=headers)


async def test_a_real_pool_stuck_with_connections_serving_no_request_is_replaced(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
) -> None:
    # httpcore leaves a connection in use, by no request, when a task is cancelled as it
    # gives it back (encode/httpcore#1093): four of them stopped a pool of 4 for good, and
    # every call sent there waited out its pool timeout. Here four are left so by hand.
    with Emulator().serve() as server:
        client = client_class(server.api_key, base_url=server.base_url, timeout=5, max_retries=0)
        try:
            await call(client, "list_documents")
            transport: Any = client._shared.http._transport
            stuck = transport.shards[0]
            request = documents_request(server)
            if isinstance(client, lingodoc.AsyncClient):
                held = [await stuck.handle_async_request(request) for _ in range(SHARD_SIZE)]
            else:
                held = [stuck.handle_request(request) for _ in range(SHARD_SIZE)]
            connections = stuck._pool.connections
            assert len(connections) == SHARD_SIZE
            assert not any(c.is_idle() or c.is_closed() for c in connections)
            result = await call(
                client, "translate", "cat", source_language="en", target_language="de"
            )
            assert result.translated_text == "Katze"
            assert transport.shards[0] is not stuck  # a new pool in its place
            assert all(connection.is_closed() for connection in connections)
            assert transport._loads[0] == 0
            del held
        finally:
            await close(client)


@pytest.mark.asyncio_only  # on trio, httpcore's shield holds: no connection is left so
async def test_bodies_whose_close_asyncio_cancelled_leave_no_pool_stuck() -> None:
    # The real thing: four response bodies whose close a task cancellation interrupts
    # after one turn of the loop leave their connections in use by no request.
    with Emulator().serve() as server:
        client = lingodoc.AsyncClient(
            server.api_key, base_url=server.base_url, timeout=5, max_retries=0
        )
        try:
            http: Any = client._shared.http
            transport = http._transport
            request = documents_request(server)
            held = [await http.send(request, stream=True) for _ in range(SHARD_SIZE)]
            stuck = transport.shards[0]
            connections = stuck._pool.connections
            for response in held:
                closing = asyncio.ensure_future(response.aclose())
                await asyncio.sleep(0)
                closing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await closing
            assert transport._loads[0] == 0
            assert not any(c.is_idle() or c.is_closed() for c in connections)
            assert transport._tainted == {0}
            result = await client.translate("cat", source_language="en", target_language="de")
            assert result.translated_text == "Katze"
            assert transport.shards[0] is not stuck
            assert all(connection.is_closed() for connection in connections)
        finally:
            await client.aclose()
