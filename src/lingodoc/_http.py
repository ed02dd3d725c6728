"""The http client a client sends through: built, shared with copies, closed, and forked."""

from __future__ import annotations

import functools
import os
import re
import ssl
import threading
import urllib.request
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc._constants import AIOHTTP_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT
from lingodoc._exceptions import ConfigurationError, LingodocError

if TYPE_CHECKING:
    from lingodoc._models import RateLimit

HttpClientT = TypeVar("HttpClientT", httpx.Client, httpx.AsyncClient)

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


def new_http_client(
    kind: type[HttpClientT], *, timeout: httpx.Timeout, trust_env: bool, connections: int
) -> HttpClientT:
    """Build the SDK's own http client: httpx's pool of ``connections``, no redirects.

    ``Client``'s sends through ``DeadlineTransport``, unless the environment names a proxy
    (httpx's proxy transports then keep each step's own timeout).

    Raises:
        ConfigurationError: If a proxy or certificate variable is unusable (named).
    """
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    verify = ssl_context(trust_env)
    settings: dict[str, Any] = {"verify": verify, "timeout": timeout, "limits": limits}
    # A bool, not the proxies: their URLs may hold a password (a traceback's locals).
    proxied = trust_env and any(
        urllib.request.getproxies_environment().get(s) for s in ("http", "https", "all")
    )
    if kind is httpx.Client and not proxied:
        from lingodoc._transport import DeadlineTransport

        # httpx reads no proxy variable for a client given a transport: none is set.
        settings["transport"] = DeadlineTransport(verify=verify, limits=limits)
    try:
        return kind(follow_redirects=False, trust_env=trust_env, **settings)
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        # A proxy URL httpx cannot use (socks5:// without socksio, ftp://, a bad port...).
        masked = re.sub(r"(://[^/\s:@]*):[^/\s@]*@", r"\1:****@", str(exc))  # passwords
        problem = f"{type(exc).__name__}: {masked}"
    names = [name for name, value in os.environ.items() if value and name.upper() in _PROXY_ENV]
    raise ConfigurationError(
        f"{', '.join(sorted(names)) or 'the proxy settings'} in the environment cannot be used "
        f"to build the HTTP client ({problem}); fix or unset it, or pass an http_client"
    )


class SharedHttp(Generic[HttpClientT]):
    """What a client shares with its ``with_options`` copies: the http client, and its state.

    Closing is safe while calls are in flight: each attempt `enter`s (refused once closed)
    and `leave`s, and the last of the two closes the http client. So no connection is
    closed under an attempt (in threads, its socket could be reused by another connection
    and read from), and none opened by an attempt in flight outlives it.

    A forked child must not use the connections it inherited (parent and child could read
    each other's answers): the SDK's own http client is replaced on its first use there,
    the inherited one left to the parent, and a caller's one used before the fork refused.

    ``http_client`` is the caller's, or ``None`` to build the SDK's own with ``timeout``
    and ``trust_env``; ``aiohttp``: it is a ``DefaultAioHttpClient``, handed over (closed
    with the client), bound to one event loop, with 100 calls in flight by default.
    """

    def __init__(
        self,
        kind: type[HttpClientT],
        http_client: HttpClientT | None,
        *,
        aiohttp: bool,
        max_in_flight: int | None,
        timeout: httpx.Timeout,
        trust_env: bool,
    ) -> None:
        self.is_async = kind is httpx.AsyncClient
        default = AIOHTTP_MAX_IN_FLIGHT if aiohttp else DEFAULT_MAX_IN_FLIGHT
        self.max_in_flight = max_in_flight or default
        self.new_http: functools.partial[HttpClientT] | None = None
        if http_client is None:
            self.new_http = functools.partial(
                new_http_client, kind, timeout=timeout, trust_env=trust_env,
                connections=self.max_in_flight,
            )  # fmt: skip
            http_client = self.new_http()
        self.http: HttpClientT = http_client
        self.owned = self.new_http is not None or aiohttp  # closed with the client
        # Whether its connections belong to the event loop of its first use: no other may.
        self.loop_bound = self.is_async and self.owned
        self.loop: object | None = None  # the loop of the last call (kept: never reused)
        self.turns = self._new_turns()
        self.closed = self.pool_closed = self.used = False
        self.in_flight = 0
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.rate_limit: RateLimit | None = None  # of the last response that reported one

    def _new_turns(self) -> Any:
        if not self.is_async:
            return threading.Semaphore(self.max_in_flight)
        import anyio  # an AsyncClient's turns belong to an event loop: one set per loop

        return anyio.Semaphore(self.max_in_flight)

    def in_this_process(self, *, closing: bool = False) -> None:
        """Make the state a forked child's own (a caller's http client used before is refused)."""
        if self.pid == os.getpid():
            return
        if self.new_http is None and self.used and not closing:
            raise LingodocError(
                "this client's http_client was used before os.fork(), so its connections "
                "are shared with the parent process; create the http_client and the client "
                "in the child process"
            )
        # The parent's threads, their calls in flight and its event loop are not here, and
        # one of them may have held the lock or a turn at the fork.
        self.pid, self.lock, self.turns = os.getpid(), threading.Lock(), self._new_turns()
        self.in_flight, self.loop = 0, None
        if closing or self.closed or self.new_http is None:
            self.pool_closed = True  # the parent's pool is never closed here
        else:
            self.http = self.new_http()

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
        self.loop, self.turns = loop, self._new_turns()

    def enter(self) -> HttpClientT | None:
        """Count an attempt in flight; the http client to send it with, ``None`` if closed."""
        with self.lock:
            if self.closed:
                return None
            self.in_flight += 1
            self.used = True
            return self.http

    def leave(self) -> bool:
        """End an attempt; ``True`` if the caller must now close the http client (the last out)."""
        with self.lock:
            self.in_flight -= 1
            return self._take_close()

    def close(self) -> bool:
        """Mark the client closed; ``True`` if the caller must now close the http client.

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
            return self._take_close()

    def _take_close(self) -> bool:
        if self.closed and self.in_flight == 0 and self.owned and not self.pool_closed:
            self.pool_closed = True
            return True
        return False


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
