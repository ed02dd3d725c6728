"""Where a client's requests go: the SDK's own transport or a caller's http client, shared.

`SharedHttp` is what a client shares with its ``with_options`` copies: what requests are
sent through, the turns among ``max_in_flight``, closing while calls are in flight, forks,
an ``AsyncClient``'s event loop, and the last rate limit.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import ssl
import threading
import urllib.request
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc._constants import AIOHTTP_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT, KEEPALIVE_EXPIRY
from lingodoc._deadline import Limit
from lingodoc._exceptions import ConfigurationError, LingodocError

if TYPE_CHECKING:
    import httpcore

    from lingodoc._models import RateLimit

HttpClientT = TypeVar("HttpClientT", httpx.Client, httpx.AsyncClient)
# Sends one request: a transport's handle_request, or an http client's send().
Send = Callable[[httpx.Request], Any]

# The environment variables httpx reads when it builds a client (trust_env).
_CERTIFICATE_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")

# One context per certificate setting: the variables, and the file's identity (a bundle
# replaced in place, even with its size and mtime kept, is read again).
_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}


def ssl_context(trust_env: bool) -> ssl.SSLContext:
    """The SSL context, as httpx's default, shared per certificate setting (httpx: per client).

    Raises:
        ConfigurationError: If ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` is unusable (named).
    """
    values = tuple(os.environ.get(name, "") for name in _CERTIFICATE_ENV) if trust_env else ()
    key: tuple[object, ...] = values if any(values) else ()
    if key:
        try:
            found = os.stat(values[0] or values[1])
            key += (found.st_dev, found.st_ino, found.st_ctime_ns, found.st_mtime_ns)
        except OSError:  # building the context says what is wrong
            pass
    context = _contexts.get(key)
    if context is not None:
        return context
    try:  # two threads may both build it: either will do
        built = httpx.create_ssl_context(trust_env=bool(key))
    except OSError as exc:  # missing, or not certificates (ssl.SSLError)
        problem = f"{type(exc).__name__}: {exc}"
    else:
        while len(_contexts) >= 8:  # a process that keeps changing SSL_CERT_FILE: the last few
            del _contexts[next(iter(_contexts))]
        _contexts[key] = built
        return built
    name = "SSL_CERT_FILE" if values[0] else "SSL_CERT_DIR"  # httpx reads one, in this order
    raise ConfigurationError(
        f"{name} in the environment cannot be used to build the HTTP client "
        f"({problem}); fix or unset it, or pass an http_client"
    )


def named_proxy(url: httpx.URL, *, all_proxy: bool = True) -> str | None:
    """The proxy URL the environment names for ``url``, as written; ``None`` if none or bypassed.

    ``all_proxy``: ``ALL_PROXY`` counts too, as for httpx (aiohttp reads no such variable).
    """
    proxies = urllib.request.getproxies_environment()
    named = proxies.get(url.scheme) or (proxies.get("all") if all_proxy else None)
    # Not in typeshed, but in urllib.request since Python 3.2 (what urllib itself uses).
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return None if not named or bypass(url.host, proxies) else named


def proxy_for(url: httpx.URL) -> httpcore.Proxy | ConfigurationError | None:
    """The proxy the environment names for ``url`` (httpx's variables, ``NO_PROXY`` too).

    Or the error, returned: this frame holds the proxy's URL, which may hold a password.
    """
    named = named_proxy(url)
    if named is None:
        return None
    import httpcore

    try:
        proxy = httpx.Proxy(named if "://" in named else f"http://{named}")
        scheme = proxy.url.scheme
        if scheme not in ("http", "https", "socks5", "socks5h"):
            raise ValueError(f"Unknown scheme for proxy URL {named!r}")
        if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
            # httpcore imports it at the first connection: say so now.
            raise ImportError("a SOCKS proxy needs the socksio package: pip install socksio")

        return httpcore.Proxy(
            url=httpcore.URL(
                scheme=proxy.url.raw_scheme,
                host=proxy.url.raw_host,
                port=proxy.url.port,
                target=proxy.url.raw_path,
            ),
            auth=proxy.raw_auth,
            headers=proxy.headers.raw,
            ssl_context=proxy.ssl_context,
        )
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        # A proxy URL that cannot be used (socks5:// without socksio, ftp://, a bad port...).
        masked = re.sub(r"(://[^/\s:@]*):[^/\s@]*@", r"\1:****@", str(exc))  # passwords
        problem = f"{type(exc).__name__}: {masked}"
    names = [name for name, value in os.environ.items() if value and name.upper() in _PROXY_ENV]
    return ConfigurationError(
        f"{', '.join(sorted(names)) or 'the proxy settings'} in the environment cannot be used "
        f"to build the HTTP client ({problem}); fix or unset it, or pass an http_client"
    )


def transport_maker(is_async: bool, url: str, *, trust_env: bool) -> Callable[[int], Any]:
    """What builds the SDK's own transport to ``url``, given its number of connections.

    ``trust_env``: take the certificates and the proxy from the environment.

    Raises:
        ConfigurationError: If a proxy or certificate variable is unusable (named).
    """
    verify = ssl_context(trust_env)
    proxy = proxy_for(httpx.URL(url)) if trust_env else None
    if isinstance(proxy, ConfigurationError):
        raise proxy
    if is_async:
        from lingodoc._async_transport import Transport
    else:
        from lingodoc._sync_transport import Transport  # type: ignore[assignment]
    return lambda connections: Transport(verify=verify, connections=connections, proxy=proxy)


def _drop(transport: Any) -> None:
    """Close a sync transport's connections at once, without its pool and the pool's locks.

    For a pool that no call is using but that may be in any state: one an interrupted call
    left, or a forked child's copy of its parent's (closing the child's sockets leaves the
    parent's connections open).
    """
    transport.is_closed = True
    for stream in list(transport.backend.streams):
        with contextlib.suppress(OSError):
            stream.close()


class OneConnection:
    """The main thread's one connection, reused while idle, in place of httpcore's pool.

    httpcore's pool, interrupted between taking its lock and returning from that, takes the
    same lock again in its own error handling and waits on itself for good: the interrupted
    call never ends. A single connection's error handling takes no lock again. The main
    thread makes one call at a time, so one connection is all it needs.

    Args:
        transport: The main thread's transport: its SSL context and network backend.
    """

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.connection: httpcore.HTTPConnection | None = None

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        """Send ``request`` on the connection, or a new one if it cannot take it."""
        import httpcore

        connection, origin = self.connection, request.url.origin
        if (
            connection is None
            or not (connection.can_handle_request(origin) and connection.is_idle())
            or connection.has_expired()  # closed by the server, or read past a response
        ):
            if connection is not None:
                connection.close()
            connection = self.connection = httpcore.HTTPConnection(
                origin=origin,
                ssl_context=self.transport.verify,
                keepalive_expiry=KEEPALIVE_EXPIRY,
                network_backend=self.transport.backend,
            )
        return connection.handle_request(request)

    def close(self) -> None:
        """Close the connection."""
        if self.connection is not None:
            self.connection.close()


class SharedHttp(Generic[HttpClientT]):
    """What a client shares with its ``with_options`` copies: where requests go, and its state.

    The SDK's own transport is sent through directly, as is a ``DefaultAioHttpClient``'s
    (``direct``); a caller's http client through its ``send()``.

    A ``Client``'s calls on the main thread, where Ctrl-C lands, take no turn and use a
    transport of their own with one connection (`OneConnection`): an interrupt can leave a
    lock or a pool half-taken at any point, so nothing they touch is shared with other
    threads, and the next call on the main thread finds it dirty and builds a new one
    (`_Turn`). Other threads and tasks wait for a turn among ``max_in_flight``.

    Closing is safe while calls are in flight: each attempt `enter`s (refused once closed)
    and `leave`s, and the last of the two closes what the client owns. So no connection is
    closed under an attempt (in threads, its socket could be reused by another connection
    and read from), and none opened by an attempt in flight outlives it.

    A forked child must not use the connections it inherited (parent and child could read
    each other's answers): the SDK's own transport is replaced on its first use there, the
    inherited one left to the parent, and a caller's http client used before the fork refused.
    """

    def __init__(
        self,
        kind: type[HttpClientT],
        http_client: HttpClientT | None,
        *,
        new_transport: Callable[[int], Any] | None,
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
        self.owned: Any = self.transport if new_transport is not None else None
        if aiohttp:
            self.owned = http_client
        self.send: Send = self._sender()
        # Whether responses come from httpcore's pool (the SDK's own, or an httpx client's).
        self.pooled = not aiohttp
        self.main: Any = None  # the main thread's own transport (Client)
        # Set while the main thread sends: in_use always cleared after, dirty only if no
        # interrupt (a BaseException not an Exception) came through.
        self.main_in_use = self.main_dirty = False
        # Whether its connections belong to the event loop of its first use: no other may.
        self.loop_bound = self.is_async and self.owned is not None
        self.loop: object | None = None  # the loop of the last call (kept: never reused)
        self.on_asyncio = False
        self.turns = self._new_turns()
        self.closed = self.pool_closed = self.used = False
        self.in_flight = 0
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.rate_limit: RateLimit | None = None  # of the last response that reported one

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

    def limit(self, seconds: float | None) -> Limit:
        """The deadline of an attempt of ``seconds``: its steps cut to it, or it cancelled at it.

        The SDK's own transports cut each socket step to the deadline; an ``AsyncClient``
        on another http client has the attempt cancelled at it.
        """
        cancel = self.is_async and self.new_transport is None
        return Limit(seconds, cancel=cancel, on_asyncio=self.on_asyncio)

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
        if not self.is_async:  # this process's copies of the parent's sockets
            for transport in (self.main, self.transport if self.new_transport else None):
                if transport is not None:
                    _drop(transport)
        self.main, self.main_in_use, self.main_dirty = None, False, False
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
        self.on_asyncio = isinstance(loop, asyncio.AbstractEventLoop)

    def turn(self) -> _Turn:
        """A turn for one attempt of a ``Client``: ``with`` it, to get what sends it."""
        return _Turn(self)

    def async_turn(self) -> _AsyncTurn:
        """A turn for one attempt of an ``AsyncClient``: ``async with`` it, as `turn`."""
        return _AsyncTurn(self)

    def main_lane(self) -> Any:
        """The main thread's own transport, rebuilt if an interrupt left the last one dirty."""
        lane = self.main
        if lane is None or self.main_dirty:
            if lane is not None:
                _drop(lane)
            assert self.new_transport is not None
            lane = self.new_transport(1)  # one call at a time on this thread
            if lane.proxy is None:  # httpcore's proxy connections are not public: pooled
                lane.pool = OneConnection(lane)
            self.main = lane  # made whole first: an interrupt leaves the dirty one in place
        return lane

    def drop_main(self) -> None:
        """Close the main thread's transport (no call on the main thread is using it)."""
        lane, self.main = self.main, None
        if lane is not None:
            _drop(lane)

    def enter(self) -> Send | None:
        """Count an attempt in flight; what sends it, ``None`` if closed."""
        with self.lock:
            if self.closed:
                return None
            self.in_flight += 1
            self.used = True
            return self.send

    def leave(self) -> bool:
        """End an attempt; ``True`` if the caller must now close what the client owns (last out)."""
        with self.lock:
            self.in_flight -= 1
            return self._take_close()

    def close(self) -> bool:
        """Mark the client closed; ``True`` if the caller must now close what it owns.

        Refused (``LingodocError``) from an event loop other than an open one that owns the
        connections.
        """
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


class _Turn:
    """A ``Client``'s turn for one attempt; ``with`` it gives what sends it, ``None`` if closed.

    On the main thread, where Ctrl-C lands, no turn is taken and no lock: the main thread's
    own transport is marked in use and dirty, and left dirty by an interrupt (a
    ``BaseException`` that is not an ``Exception``), so that the next call builds a new one.
    `SharedHttp.close`, on another thread, marks the client closed before it looks whether
    the transport is in use; this turn marks it in use before it looks whether the client
    is closed: so either the call sends, or close closes it, never both.
    """

    __slots__ = ("_main", "_send", "_shared", "_turns")

    def __init__(self, shared: SharedHttp[Any]) -> None:
        self._shared = shared

    def __enter__(self) -> Send | None:
        shared = self._shared
        self._main = threading.current_thread() is threading.main_thread()
        if not self._main:
            self._turns = shared.turns  # given back to the one taken (a fork replaces it)
            self._turns.acquire()
            self._send = shared.enter()
        elif shared.new_transport is None:  # a caller's http client: nothing of the SDK's
            shared.used = True
            self._send = shared.send
        else:
            lane = shared.main_lane()
            shared.main_in_use = shared.main_dirty = True
            self._send = None if shared.closed else lane.handle_request
        return self._send

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        shared = self._shared
        if self._main:
            if shared.new_transport is not None:
                # First, before any call (an interrupt can land at one): close() may now drop it.
                shared.main_in_use = False
                if exc is None or isinstance(exc, Exception):  # httpcore cleans up after those
                    shared.main_dirty = False
                if shared.closed:
                    shared.drop_main()
            return
        try:
            if self._send is not None and shared.leave():
                with contextlib.suppress(Exception):
                    shared.owned.close()
        finally:
            self._turns.release()


class _AsyncTurn:
    """An ``AsyncClient``'s turn among ``max_in_flight``: ``async with`` gives what sends."""

    __slots__ = ("_send", "_shared", "_turns")

    def __init__(self, shared: SharedHttp[Any]) -> None:
        self._shared = shared

    async def __aenter__(self) -> Send | None:
        self._turns = self._shared.turns  # given back to the one taken (another loop's: new)
        await self._turns.acquire()
        self._send = self._shared.enter()
        return self._send

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        shared = self._shared
        try:
            if self._send is not None and shared.leave():
                with contextlib.suppress(Exception):
                    await shared.owned.aclose()
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
