"""A client's life: turns among ``max_in_flight``, closing in flight, forks, event loops."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc._constants import AIOHTTP_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT
from lingodoc._exceptions import LingodocError

if TYPE_CHECKING:
    from lingodoc._models import Reported

HttpClientT = TypeVar("HttpClientT", httpx.Client, httpx.AsyncClient)
Send = Callable[[httpx.Request], Any]


class SharedHttp(Generic[HttpClientT]):
    """What a client shares with its ``with_options`` copies: where requests go, and its state.

    Requests go straight to the SDK's own transport or a ``DefaultAioHttpClient``'s
    (``direct``), else through the caller's http client's ``send()``. A ``Client``'s calls
    on the main thread, where Ctrl-C and signal handlers' exceptions land, share nothing
    with other threads: they use a one-connection transport of their own (`Turn`).

    Closing is safe in flight: the last of `close` and the attempts' `leave` closes what the
    client owns. A forked child never uses the connections it inherited.
    """

    def __init__(
        self,
        kind: type[HttpClientT],
        http_client: HttpClientT | None,
        *,
        new_transport: Callable[..., Any] | None,
        direct: Any,
        aiohttp: bool,
        max_in_flight: int | None,
    ) -> None:
        self.is_async = kind is httpx.AsyncClient
        default = AIOHTTP_MAX_IN_FLIGHT if aiohttp else DEFAULT_MAX_IN_FLIGHT
        self.max_in_flight = max_in_flight or default
        self.http: HttpClientT | None = http_client  # None: the SDK's own transport
        self.new_transport = new_transport
        self.transport = direct if new_transport is None else new_transport(self.max_in_flight)
        # What is closed with the client: the SDK's own transport, or a DefaultAioHttpClient.
        self.owned: Any = http_client if aiohttp else (self.transport if new_transport else None)
        self.theirs = self.owned is None  # a caller's httpx client, its transport unknown
        self.send: Send = self._sender()
        # Whether responses come from httpcore's pool (the SDK's own, or an httpx client's).
        self.pooled = not aiohttp
        self.main: Any = None  # the main thread's own transport (Client)
        self.main_in_use = self.main_dirty = False  # its flags: Turn sets them (see there)
        # Whether its connections belong to the event loop of its first use: no other may.
        self.loop_bound = self.is_async and self.owned is not None
        self.loop: object | None = None  # the loop of the last call (kept: never reused)
        self.cancel: str | None = None  # how an AsyncClient's attempt is cancelled (async_limit)
        self.turns = self._new_turns()
        self.closed = self.pool_closed = self.used = False
        self.in_flight = 0
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.rate_limit: Reported | None = None  # of the last response that reported one

    def _sender(self) -> Send:
        """What sends an attempt: the transport itself, or the caller's client's ``send()``."""
        if self.transport is None:
            assert self.http is not None
            return functools.partial(self.http.send, stream=True, follow_redirects=False)
        if self.is_async:
            return self.transport.handle_async_request  # type: ignore[no-any-return]
        return self.transport.handle_request  # type: ignore[no-any-return]

    def _new_turns(self) -> Any:
        if not self.is_async:
            return threading.Semaphore(self.max_in_flight)
        import anyio  # an AsyncClient's turns belong to an event loop: one set per loop

        return anyio.Semaphore(self.max_in_flight, fast_acquire=True)

    def in_this_process(self, *, closing: bool = False) -> None:
        """Make the state a forked child's own (a caller's http client used before is refused)."""
        if self.pid == os.getpid():
            return
        if self.new_transport is None and self.used and not closing:
            raise LingodocError(
                "this client's http_client was used before os.fork(), so its connections "
                "are shared with the parent process; create the http_client and the client "
                "in the child process"
            )
        # The parent's threads, their calls in flight and its event loop are not here, and
        # one of them may have held the lock or a turn at the fork.
        self.pid, self.lock, self.turns = os.getpid(), threading.Lock(), self._new_turns()
        self.in_flight, self.loop = 0, None
        self.drop_main()  # this process's copies of the parent's sockets (a Client's only)
        if self.new_transport is not None and not self.is_async:
            self.transport.drop()
        if closing or self.closed or self.new_transport is None:
            self.pool_closed = True  # the parent's pool is never closed here
        else:
            self.transport = self.owned = self.new_transport(self.max_in_flight)
            self.send = self._sender()

    def check_loop(self) -> None:
        """Bind an ``AsyncClient`` to the event loop it runs in, or refuse another."""
        if not self.is_async or self.loop is (loop := current_loop()):
            return
        if self.loop is not None and self.loop_bound:
            raise LingodocError(
                "this AsyncClient was first used in another event loop; create the client "
                "inside the loop that uses it (e.g. inside the coroutine passed to "
                "asyncio.run), or aclose() it there"
            )
        import asyncio

        self.loop, self.turns = loop, self._new_turns()
        if self.new_transport is None:  # not the SDK's streams: async_limit cancels the attempt
            self.cancel = "asyncio" if isinstance(loop, asyncio.AbstractEventLoop) else "anyio"

    def drop_main(self) -> None:
        """Close the main thread's transport (no call on the main thread is using it)."""
        lane, self.main = self.main, None
        if lane is not None:
            lane.drop()

    def enter(self) -> Send:
        """Count an attempt in flight (if the client owns what it sends with); return its sender."""
        self.used = True
        if not self.theirs:  # else nothing waits for the last attempt to close it
            with self.lock:
                self.in_flight += 1
        return self.send

    def leave(self) -> bool:
        """End an attempt; ``True`` if the caller must now close what the client owns (last out)."""
        if self.theirs:
            return False
        with self.lock:
            self.in_flight -= 1
            return self._take_close()

    def close(self) -> bool:
        """Mark the client closed; ``True`` if the caller must now close what it owns."""
        self.in_this_process(closing=True)
        if self.loop_bound and self.loop is not None and self.loop is not current_loop():
            if _is_open(self.loop):
                raise LingodocError(
                    "this AsyncClient was first used in another event loop, which is still "
                    "open and owns its connections: aclose() it in that loop"
                )
            # That loop is over: its connections cannot be closed from here, and are
            # released with the http client when it is garbage collected.
            self.pool_closed = True
        with self.lock:
            self.closed = True
            close_now = self._take_close()
        if not self.main_in_use:  # else the main thread's turn drops it as it ends
            self.drop_main()
        return close_now

    def _take_close(self) -> bool:
        if self.closed and self.in_flight == 0 and self.owned is not None and not self.pool_closed:
            self.pool_closed = True
            return True
        return False


class Turn:
    """One attempt's turn: ``with`` it (``Client``) or ``async with`` it; send with its ``send``.

    The attempt sets ``clean`` once its response is read and closed. On a ``Client``'s main
    thread no turn is taken and no lock: its own transport is marked in use and dirty, and
    stays dirty unless the attempt ended clean. `SharedHttp.close` marks the client closed
    before it looks whether that transport is in use; the turn marks it in use before the
    gate looks whether the client is closed: so either the call sends or close closes it.
    """

    __slots__ = ("_main", "_shared", "_turns", "clean", "send")

    def __init__(self, shared: SharedHttp[Any]) -> None:
        self._shared = shared
        self.clean = False

    def __enter__(self) -> Turn:
        shared = self._shared
        self._main = threading.current_thread() is threading.main_thread()
        if not self._main:
            self._turns = shared.turns  # given back to the one taken (a fork replaces it)
            self._turns.acquire()
            self.send = shared.enter()
        elif shared.new_transport is None:  # a caller's http client: nothing of the SDK's
            shared.used = True
            self.send = shared.send
        else:  # the main thread's own transport, rebuilt unless the last call left it clean
            lane = shared.main
            if lane is None or shared.main_dirty:
                if lane is not None:
                    lane.drop()
                # One call at a time; kept once whole: an interrupt leaves the dirty one there.
                lane = shared.main = shared.new_transport(1, single=True)
            shared.main_in_use = shared.main_dirty = True
            self.send = lane.handle_request
        return self

    def __exit__(self, *exc_info: object) -> None:
        shared = self._shared
        if self._main:  # (with a caller's http client, there is no main transport to drop)
            # First, before any call (an interrupt can land at one): close() may now drop it.
            shared.main_in_use = False
            shared.main_dirty = not self.clean
            if shared.closed:
                shared.drop_main()
            return
        try:
            if shared.leave():
                with contextlib.suppress(Exception):
                    shared.owned.close()
        finally:
            self._turns.release()

    async def __aenter__(self) -> Turn:
        turns = self._turns = self._shared.turns  # given back to the one taken (a loop's own)
        if turns.value:  # a free turn, taken without anyio's checkpoint
            turns.acquire_nowait()
        else:
            await turns.acquire()
        self.send = self._shared.enter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self._shared.leave():
                with contextlib.suppress(Exception):
                    await self._shared.owned.aclose()
        finally:
            self._turns.release()


def current_loop() -> object:
    """The running asyncio event loop, or the token of the running trio run."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not asyncio, so trio: anyio runs on nothing else
        import trio

        return trio.lowlevel.current_trio_token()


def _is_open(loop: object) -> bool:
    """Whether the event loop (or trio run) `current_loop` returned can still run anything."""
    import asyncio

    if isinstance(loop, asyncio.AbstractEventLoop):
        return not loop.is_closed()
    import trio

    try:
        loop.run_sync_soon(lambda: None)  # type: ignore[attr-defined]  # a trio token
    except trio.RunFinishedError:
        return False
    return True
