"""The SDK's network streams and backend, async: each step cut to the attempt's deadline.

Written by hand; ``scripts/unasync.py`` generates ``_sync_network.py`` from it.
``_network.install`` puts them in place. Here too: the transport of the SDK's own http
clients, which splits the connection pool into small ones (``AsyncShardedTransport``).
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpcore
import httpx

from lingodoc import _tls
from lingodoc._deadline import Step, limit

SocketOption = Any  # httpcore's SOCKET_OPTION, which it does not export

# The most connections in one of the SDK's pools (see AsyncShardedTransport).
SHARD_SIZE = 4


class AsyncStream(httpcore.AsyncNetworkStream):
    """A network stream whose reads and writes keep to the attempt's deadline."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with Step(timeout, httpcore.ReadTimeout, "the response") as step:
            return await self._stream.read(max_bytes, step.timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with Step(timeout, httpcore.WriteTimeout, "sending the request") as step:
            return await self._stream.write(buffer, step.timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        # The SDK's clients get a stand-in for the default context, built here at the
        # first handshake that needs it (see _tls); a proxy's own context passes as it is.
        ssl_context = _tls.resolve(ssl_context)
        return AsyncStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class AsyncBackend(httpcore.AsyncNetworkBackend):
    """A network backend whose connections keep to the attempt's deadline."""

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
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return AsyncStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout, _ = limit(timeout, httpcore.ConnectTimeout, "connecting")
        return AsyncStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class AsyncShardedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, its connections split into pools of at most ``SHARD_SIZE``.

    httpcore's pool, on every request and every response, checks each of its
    connections and, for each idle one, goes through all of them again (see
    encode/httpcore#1035): the cost of a call grows with the square of the connections
    held. Past some 24 connections that cost outgrows the round trip it was to hide:
    gathering 1,000 calls to a server 20 ms away, raw httpx ran at about 1,000 calls a
    second with 24 in flight and at 280 with 32, the client's CPU busy in those scans.
    In pools of 4, more calls in flight are worth having: the SDK's default then ran
    such a gather at about 1,450 calls a second instead of 550-600, and one 100 ms away
    at 590 instead of 170-190 (on a 2-core machine, the server on it).

    Each request goes to the first pool with an idle connection, else to the first
    with room for one more (or, all full, to the one with the fewest waiting), and
    counts there until its response is closed. So the connections held are about
    those the calls in flight need, as with one pool: spread evenly, each pool would
    open its own for the same few calls, and filled in order only, a pool with room
    would open new ones while another's sat idle. A pool is made when first needed.
    Proxied URLs keep httpx's own proxy transports (the client's mounts).

    Args:
        make: Builds the transport of one pool, given its most connections.
        max_connections: The most connections of all pools together.
    """

    def __init__(
        self, make: Callable[[int], httpx.AsyncHTTPTransport], max_connections: int
    ) -> None:
        self.max_connections = max(1, max_connections)
        full, rest = divmod(self.max_connections, SHARD_SIZE)
        self._sizes = [SHARD_SIZE] * full + ([rest] if rest else [])
        self._make = make
        self.shards: list[httpx.AsyncHTTPTransport | None] = [None] * len(self._sizes)
        self._loads = [0] * len(self._sizes)
        self._tainted: set[int] = set()  # pools where a request was cancelled (see _choose)
        # Shared by the tasks of one loop, or the threads of a Client: the counts must
        # not lose an update, nor two callers make the same pool.
        self._lock = threading.Lock()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            index, retired = self._choose()
            shard = self.shards[index]
            if shard is None:
                shard = self.shards[index] = self._make(self._sizes[index])
            self._loads[index] += 1
        try:
            if retired is not None:
                await _close_every_connection(retired)
        except BaseException:
            self._release(index)
            raise
        try:
            response = await shard.handle_async_request(request)
        except BaseException as exc:
            self._release(index, cancelled=not isinstance(exc, Exception))
            raise
        response.stream = AsyncReleasingStream(response.stream, self, index)
        return response

    def _choose(self) -> tuple[int, httpx.AsyncHTTPTransport | None]:
        """The pool for the next request, and a pool it retired (with the lock held).

        A task cancelled in httpcore may leave its connection in use by no request,
        for good (encode/httpcore#1093: httpcore's shield does not hold against
        asyncio's own cancellation): in one pool of 100 each takes a connection; four
        stop a pool of 4. So a pool where a request was cancelled takes no more
        requests while another can, and once none of its requests is left it is
        replaced by a new one (the old one closed, outside the lock). A connection in
        use beyond a pool's requests, wherever it came from, is not counted as idle,
        and a pool with no request and such connections is replaced the same way.
        """
        loads, sizes, tainted = self._loads, self._sizes, self._tainted
        retired = None
        for index in tainted:
            if not loads[index]:
                tainted.discard(index)  # and out of the loop: the set has changed
                retired = self.shards[index]
                self.shards[index] = self._make(sizes[index])
                break
        queues = []
        room = -1  # the first pool with room for one more connection
        for index, shard in enumerate(self.shards):
            if shard is None:  # made in order: none further
                if room < 0:
                    room = index
                break
            load = loads[index]
            connections = shard._pool.connections
            # Connections in use (by its requests, or by none) and requests waiting.
            taken = load
            # Fewer requests than connections: one is idle, unless some serve none. (As
            # many or more: none is free either way, and nothing to count; so a pool
            # that is busy, as most are with many calls in flight, costs no more.)
            if load < len(connections):
                idle = busy = 0
                for connection in connections:
                    if connection.is_idle():
                        idle += 1
                    elif not connection.is_closed():
                        busy += 1
                if busy > load and not load and retired is None:  # only connections of none
                    retired, busy = shard, 0
                    shard = self.shards[index] = self._make(sizes[index])
                    tainted.discard(index)
                # Idle connections the requests already counted here do not wait for.
                if (idle if busy >= load else idle + busy - load) > 0 and index not in tainted:
                    return index, retired
                if busy > load:
                    taken = busy
            if taken < sizes[index] and room < 0 and index not in tainted:
                room = index
            queues.append((index in tainted, taken - sizes[index]))
        if room >= 0:
            return room, retired
        # All busy (more requests than connections: translate_many's batches, which take
        # no turn under the client's limit, on top of a limit at the pools' size; or
        # pools where requests were cancelled): the shortest queue of a pool where none
        # was. It waits for a connection of that pool, where one pool would have given
        # it any: the price of small pools past their size.
        return queues.index(min(queues)), retired

    def _release(self, index: int, *, cancelled: bool = False) -> None:
        with self._lock:
            self._loads[index] -= 1
            if cancelled:
                self._tainted.add(index)

    async def aclose(self) -> None:
        error: Exception | None = None
        for shard in self.shards:  # every pool, even past one that fails to close
            if shard is not None:
                try:
                    await shard.aclose()
                except Exception as exc:  # raised below, once all are closed
                    error = error or exc
        if error is not None:
            raise error


class AsyncReleasingStream(httpx.AsyncByteStream):
    """A response body that counts its request out of its pool when closed."""

    def __init__(self, stream: Any, transport: AsyncShardedTransport, index: int) -> None:
        self._stream = stream
        self._transport: AsyncShardedTransport | None = transport
        self._index = index

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        transport, self._transport = self._transport, None
        cancelled = False
        try:
            await self._stream.aclose()
        except BaseException as exc:
            cancelled = not isinstance(exc, Exception)
            raise
        finally:  # once the connection is idle again (or closed): see _choose
            if transport is not None:
                transport._release(self._index, cancelled=cancelled)


async def _close_every_connection(pool: httpx.AsyncHTTPTransport) -> None:
    """Close a pool no request uses: each of its connections, even past a cancellation.

    Each connection's close shuts its socket before it awaits anything, so one cancelled
    does not keep the others open. A failure to close is moot (no request is left to
    tell); a cancellation is raised once every connection is closed.
    """
    interrupted: BaseException | None = None
    closes = [connection.aclose for connection in pool._pool.connections]
    for close in [*closes, pool.aclose]:
        try:
            await close()
        except Exception:
            pass
        except BaseException as exc:
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted
