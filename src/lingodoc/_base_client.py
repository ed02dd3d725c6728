"""What Client and AsyncClient share: configuration, and all logic that does no I/O.

The two clients only send, read, sleep and close; building requests, reading
responses, checking arguments and deciding when a wait is over live here, so
the sync and async paths cannot drift apart.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import math
import os
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, KeysView, Mapping, MutableMapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc import _bulk, _clock, _deadline, _envelope, _lazy, _retry, _validation
from lingodoc._body import ACCEPT_ENCODING, BodyReader
from lingodoc._call import (
    Call,
    Failure,
    Options,
    ShapeError,
    batch_call,
    body_reader,
    job_parser,
    model_parser,
    parse_data,
    parse_documents,
    status_parser,
)
from lingodoc._constants import (
    ALLOW_HTTP_HOST_ENV,
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    is_loopback,
)
from lingodoc._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConfigurationError,
    InvalidArgument,
    InvalidArgumentType,
    LingodocError,
    TranslationFailed,
    UnexpectedResponse,
    WaitTimeout,
)
from lingodoc._limiter import Limiter
from lingodoc._logging import configure_from_env, logger
from lingodoc._redaction import KeyMask, mask, raise_scrubbed, watch_http_logs
from lingodoc._validation import shown
from lingodoc._version import __version__

if TYPE_CHECKING:
    from lingodoc._models import (
        BatchTranslation,
        Document,
        RateLimit,
        RateLimitHeaders,
        TextTranslation,
        TranslationJob,
        TranslationStatus,
    )

T = TypeVar("T")
HttpClientT = TypeVar("HttpClientT", httpx.Client, httpx.AsyncClient)
Self = TypeVar("Self", bound="BaseClient[Any]")

# A 429 while polling is waited out; these bound one such wait.
MIN_RATE_LIMIT_WAIT = 1.0
MAX_POLL_WAIT = 3600.0
# An attempt cut short by a caller's deadline (a poll of wait_for_translation) still
# gets this long: the poll made at the deadline is a last look, not a certain timeout.
MIN_ATTEMPT_TIME = 1.0
# Polls in a row that read a state the SDK does not know before the wait gives up
# (TranslationFailed): a state added to the service must not make a wait endless.
MAX_UNKNOWN_STATES = 3
# A success body is read whole; an error body only far enough to show its
# start, so a broken proxy cannot make a client load megabytes of HTML.
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024
# Methods that HTTP defines as safe to repeat.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)
# Parsed request URLs kept per client: parsing one costs more than the rest of
# building the request. Polling many translation ids must not grow it forever.
URL_CACHE_SIZE = 64
# What a result's response streams once it is read: the body is in its content already.
_EMPTY_STREAM = httpx.ByteStream(b"")

USER_AGENT = (
    f"lingodoc-python/{__version__} httpx/{httpx.__version__} "
    f"python/{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
)


# This process, as an object made anew in every forked child: comparing it is cheaper than
# asking the system for the process id on every request.
_process = object()


class _Ticket:
    """A call waiting for its turn: woken with a slot (``granted``), or by close without one.

    ``admitted``: the call took its slot and counts in flight (see ``_give_up``).
    """

    __slots__ = ("admitted", "event", "granted", "loop")

    def __init__(self, event: Any, loop: object | None = None) -> None:
        self.event = event  # an anyio.Event (tasks) or a threading.Event (threads)
        self.loop = loop  # a task's event loop (``running_loop``); None for a thread
        self.granted = False
        self.admitted = False

    def wake_from_anywhere(self) -> None:
        """Wake the waiter, also from a thread other than its event loop's.

        ``close`` may run there: an AsyncClient with an ``http_client`` passed in can be
        closed from any event loop. An anyio event must be set in its own loop's thread
        (from another, asyncio's waiter is not woken, trio's ``set`` raises), so it is
        handed to that loop; if the loop is closed or its run over, nothing waits on it.
        """
        loop = self.loop
        if loop is None or loop is running_loop():
            self.event.set()
            return
        call_soon = getattr(loop, "call_soon_threadsafe", None)  # asyncio's loop
        if call_soon is None:
            call_soon = loop.run_sync_soon  # type: ignore[attr-defined]  # a trio token
        with contextlib.suppress(RuntimeError):  # closed, or trio's RunFinishedError
            call_soon(self.event.set)


def _pool_size(http: httpx.Client | httpx.AsyncClient) -> int:
    """The most connections ``http``'s pool opens: httpx's own transport's; else the default."""
    transport = getattr(http, "_transport", None)
    size = getattr(transport, "max_connections", None)  # the SDK's own (_network)
    if size is None:
        pool = getattr(transport, "_pool", None)  # httpx -> httpcore
        size = getattr(pool, "_max_connections", None)
    if isinstance(size, int) and size > 0:
        return size
    return DEFAULT_LIMITS.max_connections or 1


class _Shared(Generic[HttpClientT]):
    """What a client shares with its ``with_options`` copies: the HTTP client and live state.

    Closing is safe while calls are in flight: every attempt enters (refused once closed)
    and leaves, and the pool is closed when the client is closed and no attempt is left
    in it, by whichever of the two comes last. So no socket is ever closed under an
    attempt that is using it (in threads, its descriptor could be reused by another
    connection and read from), and none opened by an attempt already in flight outlives
    it. This class is an AsyncClient's, without a lock: the pool it closes is its own,
    and so bound to one event loop, one thread (``_check_open`` refuses the others).
    Only ``close`` may come from another (an ``http_client`` passed in can be closed from
    any loop): it wakes each waiter in the waiter's own loop. ``_ThreadShared`` is a
    Client's.

    Entering also takes one of ``limiter.limit`` slots: past them, a call waits for its
    turn, first come first served, before its attempt starts (so the wait is not part of
    the attempt's timeout, opens no connection and is never retried). A waiter cancelled
    (or interrupted) leaves the queue, or passes on the slot it was just given; closing
    wakes every waiter, to be refused. Tasks wait with ``async_enter`` (anyio, asyncio or
    trio), threads with ``enter``.

    A child process made by ``os.fork()`` must not use the connections it
    inherited: the parent uses the same sockets, and either could read the
    other's response. So ``http``, on first use in another process, replaces
    the SDK's own HTTP client with a new one (the inherited one is left as it
    is: closing it could wait on a lock held in the parent at the fork), and
    refuses a caller's one that was used before the fork.
    """

    def __init__(
        self,
        http: HttpClientT,
        *,
        new_http: Callable[[], HttpClientT] | None,
        max_in_flight: int | None = None,
    ) -> None:
        self._http: HttpClientT = http
        self._new_http: Callable[[], HttpClientT] | None = new_http
        self.owned = new_http is not None
        # An AsyncClient's connections belong to the event loop that opened them, the
        # first it is used in: those of httpx's own transport (a custom one, such as
        # httpx.MockTransport or the emulator's, may hold none).
        self.loop_bound = isinstance(http, httpx.AsyncClient) and (
            self.owned or isinstance(getattr(http, "_transport", None), httpx.AsyncHTTPTransport)
        )
        # Kept, not a weak reference, so that a new loop at the same address is never
        # taken for it.
        self.loop: object | None = None
        self.closed = False
        # The last response's rate-limit headers; the RateLimit is made when asked for.
        self.rate_limit: RateLimitHeaders | None = None
        self._in_flight = 0
        ceiling = _pool_size(http)
        if self.owned and max_in_flight is not None and max_in_flight > ceiling:
            # The SDK's own connections are in pools of 4 (``_network``): a call past them
            # would wait inside one pool, for one of its 4 connections and within its own
            # timeout. Here it waits for the first turn of all, outside its timeout.
            max_in_flight = ceiling
        self.limiter = Limiter(ceiling, max_in_flight)
        self._slots = 0  # taken: by the attempts in flight, and by waiters given one
        self._waiters: deque[_Ticket] = deque()
        self._pool_closing = False
        self._lock = threading.Lock()  # taken by _ThreadShared, and to bind a loop
        self._process = _process
        self._used = False

    @property
    def http(self) -> HttpClientT:
        """The HTTP client to send through, in this process."""
        self.in_this_process()
        self._used = True
        return self._http

    def _after_fork(self, *, closing: bool = False) -> None:
        """Make this state the child's own, on its first use after ``os.fork()``.

        Args:
            closing: The first use is closing the client: then no new HTTP client is
                made, and the inherited one is not closed (it is the parent's).
        """
        with _fork_lock:
            if self._process is _process:
                return
            if self._new_http is None:
                if self._used and not closing:
                    raise LingodocError(
                        "this client's http_client was used before os.fork(), so its "
                        "connections are shared with the parent process; create the "
                        "http_client and the client in the child process"
                    )
            elif not self.closed and not closing:
                self._http = self._new_http()
            # The parent's threads, their attempts in flight and its event loop are not
            # in the child, and the lock may have been held by one of them at the fork.
            self._lock = threading.Lock()
            self._in_flight = 0
            self._slots = 0
            self._waiters = deque()
            # Learnt afresh, on the child's own connections; and a fork in the turn an
            # AsyncClient counts a burst in would leave the child a limit held at 1.
            limiter = self.limiter
            self.limiter = Limiter(limiter.ceiling, None if limiter.adaptive else limiter.limit)
            self._pool_closing = closing  # a pool still the parent's is never closed here
            self.loop = None
            self._process = _process

    def in_this_process(self, *, closing: bool = False) -> None:
        """Do what a forked child must before it uses, or closes, the state it inherited."""
        if self._process is not _process:
            self._after_fork(closing=closing)

    def _take(self, queue: bool) -> bool | None:
        """Enter at once: ``True``; ``False`` if the client is closed; ``None``: wait.

        ``queue=False`` (a batch of ``translate_many``) enters at once and takes no slot:
        its ``max_concurrency`` bounds it, and a run of batches must not keep the other
        calls of the client waiting until it ends.
        """
        if self.closed:
            return False
        if not queue:
            self._in_flight += 1
            return True
        if self._slots < self.limiter.limit and not self._waiters:
            self._slots += 1
            self._in_flight += 1
            return True
        return None

    def _admit(self, ticket: _Ticket) -> bool:
        """Enter with the slot a waiter was woken with; ``False`` if closed meanwhile."""
        if not ticket.granted:
            return False
        if self.closed:
            ticket.granted = False
            self._release()
            return False
        ticket.admitted = True
        self._in_flight += 1
        return True

    def _give_up(self, ticket: _Ticket) -> None:
        """A waiter cancelled or interrupted: out of the queue, or its slot passed on.

        Also after it was woken (a task cancelled before it ran again, Ctrl-C in a thread
        before it returned), and after close took it out of the queue.
        """
        if ticket.admitted:
            ticket.admitted = ticket.granted = False
            self._in_flight -= 1
            self._release()
        elif ticket.granted:
            ticket.granted = False
            self._release()
        else:
            with contextlib.suppress(ValueError):  # close() emptied the queue
                self._waiters.remove(ticket)

    def _release(self) -> None:
        self._slots -= 1
        self._grant()

    def _grant(self) -> None:
        """Wake the first waiters, as many as the limit lets in, each with a slot."""
        waiters, limit = self._waiters, self.limiter.limit
        while waiters and self._slots < limit:
            try:
                ticket = waiters.popleft()
            except IndexError:  # emptied meanwhile by close() in another thread
                return
            ticket.granted = True
            self._slots += 1
            ticket.event.set()

    async def async_enter(self, *, queue: bool = True) -> bool:
        """Count an attempt in flight, waiting for a slot; ``False`` if the client is closed.

        For tasks (asyncio or trio) of the loop the client belongs to.

        Args:
            queue: Wait for a slot past the limit; ``False`` takes one at once, past the
                limit if need be (``translate_many``, whose ``max_concurrency`` bounds it).
        """
        entered = self._take(queue)
        if entered and queue and self._slots == 1 and self.limiter.opening:
            await self._count_burst()
        if entered is not None:
            return entered
        import anyio  # here: only a call that has to wait needs it

        ticket = _Ticket(anyio.Event(), running_loop())
        self._waiters.append(ticket)
        if self.closed:  # by another thread's loop meanwhile, which may not have seen it
            self._give_up(ticket)
            return False
        try:
            await ticket.event.wait()
            return self._admit(ticket)
        except BaseException:  # cancelled: anyio's cancellation, whatever its class
            self._give_up(ticket)
            raise

    async def _count_burst(self) -> None:
        """Hold the other calls for one turn of the event loop, and count them.

        The call that found the client idle, while the limit is still being learnt, has
        its slot. The calls started with it (an ``asyncio.gather``: every task runs to
        here in the same turn) queue behind it meanwhile, and their number decides where
        the limit starts (``Limiter.first_burst``) before any of them is let in. A task
        cancelled here leaves as an attempt that got no answer: its slot goes to the queue,
        and if the client was closed meanwhile, the last out closes the pool.
        """
        import anyio  # httpx's dependency; its transport imports it on asyncio anyway

        limiter = self.limiter
        limit, limiter.limit = limiter.limit, 1  # no sample can come: no other slot is taken
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            limiter.limit = limit
            if self.leave(None):
                http = self.http
                if isinstance(http, httpx.AsyncClient):  # always: only tasks count bursts
                    with contextlib.suppress(Exception):  # the cancellation goes on, unmasked
                        await http.aclose()
            raise
        limiter.limit = limit
        limiter.first_burst(len(self._waiters) + 1)
        self._grant()

    def enter(self, *, queue: bool = True) -> bool:
        """Count an attempt in flight, waiting for a slot; ``False`` if the client is closed.

        For threads; Ctrl-C (KeyboardInterrupt) ends the wait. ``queue`` as for
        ``async_enter``.
        """
        with self._lock:
            entered = self._take(queue)
            if entered is not None:
                return entered
            ticket = _Ticket(threading.Event())
            self._waiters.append(ticket)
        try:
            ticket.event.wait()
            with self._lock:
                return self._admit(ticket)
        except BaseException:  # KeyboardInterrupt, also once woken or admitted
            with self._lock:
                self._give_up(ticket)
            raise

    def leave(self, rtt: float | None = None, *, slot: bool = True) -> bool:
        """End an attempt; ``True`` if the caller must now close the pool (it was the last).

        Args:
            rtt: Seconds the attempt took to get its answer, for the adaptive limit;
                ``None`` if it got none.
            slot: The attempt held a slot (it entered with ``queue=True``).
        """
        if rtt is not None:
            self.limiter.sample(rtt, self._in_flight)
        self._in_flight -= 1
        if slot:  # _release, written out: this runs on every attempt
            self._slots -= 1
            if self._waiters:
                self._grant()
        return self.closed and self._take_pool_close()

    def close(self, *, loop_gone: bool = False) -> bool:
        """Mark the client closed; ``True`` if the caller must now close the pool.

        Args:
            loop_gone: The loop the connections belong to is closed: no attempt still
                counted in flight can ever end, and the sockets are closed here first
                (see ``_close_dead_sockets``).
        """
        self.in_this_process(closing=True)
        self.closed = True
        waiters, self._waiters = self._waiters, deque()
        if loop_gone:  # their loop cannot run them: nothing to wake
            self._in_flight = self._slots = 0
        else:  # each wakes without a slot, and is refused
            # Popped, not iterated: from another thread (an AsyncClient's, see
            # ``_Ticket.wake_from_anywhere``), its loop may be granting a slot meanwhile.
            while waiters:
                try:
                    ticket = waiters.popleft()
                except IndexError:
                    break
                ticket.wake_from_anywhere()
        take = self._take_pool_close()
        if take and loop_gone:
            _close_dead_sockets(self._http)
        return take

    def _take_pool_close(self) -> bool:
        if self.closed and self._in_flight == 0 and self.owned and not self._pool_closing:
            self._pool_closing = True
            return True
        return False

    def use_loop(self, loop: object) -> bool:
        """Bind an AsyncClient to ``loop`` if it is not yet bound; whether it is bound to it."""
        self.in_this_process()  # a forked child's loop is its own: the parent's binding goes
        with self._lock:
            if self.loop is None:
                self.loop = loop
            return self.loop is loop


class _ThreadShared(_Shared[HttpClientT]):
    """A Client's shared state: the same, each step under the lock, for threads."""

    # leave runs on every attempt: written out, not through super(). (``enter``, the
    # threads' way in, is the base class's: it waits under this lock.)

    def leave(self, rtt: float | None = None, *, slot: bool = True) -> bool:
        """End an attempt; ``True`` if the caller must now close the pool (it was the last)."""
        with self._lock:
            return super().leave(rtt, slot=slot)

    def close(self, *, loop_gone: bool = False) -> bool:
        """Mark the client closed; ``True`` if the caller must now close the pool."""
        self.in_this_process(closing=True)  # before the lock, which may be the parent's
        with self._lock:
            return super().close(loop_gone=loop_gone)


def running_loop() -> object | None:
    """Return the event loop the caller runs in (asyncio), or its trio run; ``None`` outside one.

    Called on every call of an AsyncClient, so it must be cheap: no exception raised on
    the asyncio path, neither asyncio nor trio imported here, no dependency (such as
    sniffio). About 20 ns on Python 3.12+; on 3.10 and 3.11, whose asyncio asks the
    process id on each call (a system call), 0.1-0.3 µs.
    """
    asyncio = sys.modules.get("asyncio")
    loop: object | None = None if asyncio is None else asyncio._get_running_loop()
    trio = sys.modules.get("trio")
    if loop is None and trio is not None:
        with contextlib.suppress(RuntimeError):  # not in a trio run either
            loop = trio.lowlevel.current_trio_token()
    return loop


def loop_is_closed(loop: object) -> bool:
    """Whether ``loop`` (from ``running_loop``) is an event loop that has been closed.

    For a trio run (its token), whether the run has finished.
    """
    is_closed = getattr(loop, "is_closed", None)
    if callable(is_closed):
        return bool(is_closed())
    trio = sys.modules.get("trio")
    if trio is not None and isinstance(loop, trio.lowlevel.TrioToken):
        try:
            loop.run_sync_soon(_nothing)  # refused once the run is over
        except trio.RunFinishedError:
            return True
    return False


def _nothing() -> None:
    pass


def _close_dead_sockets(http: httpx.Client | httpx.AsyncClient) -> None:
    """Close the sockets of ``http``'s pooled connections, whose event loop is closed.

    Such a connection can never be used again, nor closed the usual way: closing an
    asyncio transport schedules its last step (closing the socket) on its loop, and a
    closed loop refuses to. So each transport is closed as far as it goes (``abort``),
    and that last step is run here. A trio socket (of a finished trio run) is closed
    here, and its connection taken out of the pool, whose close would call trio from
    whatever loop runs it. This reaches into httpx, httpcore and anyio objects
    (``tests/reliability/test_lifecycle_sockets.py`` fails if they change shape); it is best
    effort: whatever it cannot reach stays open until garbage collected.
    """
    if not isinstance(http, httpx.AsyncClient):
        return
    import asyncio

    trio = sys.modules.get("trio")  # a trio socket can only come from a trio run
    mounts: dict[Any, Any] = getattr(http, "_mounts", {})
    direct = getattr(http, "_transport", None)
    shards = getattr(direct, "shards", ())  # the SDK's own transport's pools (_network)
    for transport in (direct, *shards, *mounts.values()):
        pool: Any = getattr(transport, "_pool", None)  # httpx -> its httpcore pool
        for top in getattr(pool, "connections", ()):  # a copy of the pool's list
            connection = top
            # Through proxy connections to the HTTP/1.1 or HTTP/2 connection, then its
            # network stream (httpcore's), anyio's stream, TLS layers, the asyncio transport.
            for _ in range(8):
                inner = getattr(connection, "_connection", None)
                if inner is None:
                    break
                connection = inner
            # Its network stream: the SDK's deadline wrapper (_network), httpcore's, anyio's,
            # TLS layers, down to the one holding the asyncio transport.
            stream = getattr(connection, "_network_stream", None)
            for _ in range(8):
                inner = getattr(stream, "_stream", None)
                inner = inner or getattr(stream, "transport_stream", None)
                if inner is None:
                    break
                stream = inner
            socket_transport = getattr(stream, "_transport", None)
            # httpcore's trio backend ends at a trio.SocketStream (.socket); anyio's, at its
            # own stream (._trio_socket).
            trio_socket = getattr(stream, "socket", None) or getattr(stream, "_trio_socket", None)
            if trio is not None and isinstance(trio_socket, trio.socket.SocketType):
                with contextlib.suppress(Exception):  # best effort, as below
                    trio_socket._sock.close()  # the run is over: not trio's socket close
                    pool._connections.remove(top)
                continue
            if not isinstance(socket_transport, asyncio.Transport):
                continue
            # abort() stops at "Event loop is closed", when it would schedule the last step.
            with contextlib.suppress(RuntimeError):
                socket_transport.abort()
            finish = getattr(socket_transport, "_call_connection_lost", None)
            if callable(finish) and getattr(socket_transport, "_sock", None) is not None:
                with contextlib.suppress(Exception):  # best effort; it closes the socket first
                    finish(None)


_fork_lock = threading.Lock()


def _in_a_forked_child() -> None:
    # The child may have been forked while another thread of the parent held the lock.
    global _fork_lock, _process
    _fork_lock = threading.Lock()
    _process = object()


if hasattr(os, "register_at_fork"):  # POSIX only, as fork is
    os.register_at_fork(after_in_child=_in_a_forked_child)

# The environment variables that httpx reads when it builds a client (trust_env).
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _new_http_client(
    http_client_type: type[HttpClientT], timeout: httpx.Timeout, trust_env: bool
) -> HttpClientT:
    """Build the SDK's own HTTP client; a setting of the environment it cannot use is refused.

    Raises:
        ConfigurationError: If a proxy or certificate variable of the
            environment is unusable; it names the variable, not its value.
    """
    # Imported here: they import httpcore, which `import lingodoc` does not need.
    from lingodoc import _network, _tls

    try:
        # One SSL context per certificate setting, shared by the SDK's clients, and the
        # default one built at the first TLS handshake (see _tls): httpx would build one
        # for each client, ~20 ms and ~850 KiB, even for an http:// base URL.
        verify = _tls.verify_for(trust_env)
        http = http_client_type(
            verify=verify,
            timeout=timeout,
            limits=DEFAULT_LIMITS,
            follow_redirects=False,
            trust_env=trust_env,
        )
    except (OSError, ImportError, ValueError, httpx.InvalidURL) as exc:
        # OSError: an SSL_CERT_FILE that is missing or not certificates (ssl.SSLError).
        # The others: a proxy URL httpx cannot use (socks5:// without socksio, ftp://,
        # a bad port...).
        certificates = isinstance(exc, OSError)
        problem = f"{type(exc).__name__}: {_masked_urls(str(exc))}"
    else:
        # Small pools, and every socket read and write keeps to the attempt's deadline.
        _network.install(http, verify=verify, trust_env=trust_env, limits=DEFAULT_LIMITS)
        return http
    if certificates:  # httpx reads SSL_CERT_DIR only without SSL_CERT_FILE
        names = [next((name for name in _tls.CERTIFICATE_ENV if os.environ.get(name)), "")]
    else:
        names = [name for name, value in os.environ.items() if value and name.upper() in _PROXY_ENV]
    where = ", ".join(sorted(filter(None, names))) or "the proxy or certificate settings"
    raise ConfigurationError(
        f"{where} in the environment cannot be used to build the HTTP client "
        f"({problem}); fix or unset it, or pass an http_client"
    )


def _masked_urls(text: str) -> str:
    """``text`` with the password of every URL in it masked."""
    return re.sub(r"(://[^/\s:@]*):[^/\s@]*@", r"\1:****@", text)


def _missing(argument: str, variable: str) -> ConfigurationError:
    return ConfigurationError(
        f"no {argument.replace('_', ' ')} given: pass {argument}=... "
        f"or set the {variable} environment variable"
    )


def _resolve(value: str | None, argument: str, variable: str) -> str:
    if value is None:
        value = os.environ.get(variable)
    if not value or not value.strip():
        raise _missing(argument, variable)
    return value.strip()


def _api_key(value: object) -> str | ConfigurationError:
    """Return the key to send, or the error that refuses it.

    The error is returned, not raised: this frame holds the key, and a
    traceback shown with its locals must not print it (see ``raise_scrubbed``).
    """
    if value is not None and not isinstance(value, str):
        return ConfigurationError(f"api_key must be a str, not {type(value).__name__}")
    key = (os.environ.get(API_KEY_ENV) if value is None else value) or ""
    key = key.strip()
    if not key:
        return _missing("api_key", API_KEY_ENV)
    if not _validation.sendable_key(key):
        return ConfigurationError(
            f"api_key (or {API_KEY_ENV}) holds spaces or characters that cannot be "
            "sent in a header; check it was copied whole"
        )
    return key


def _shown_url(raw: str) -> str:
    """``raw`` as an error message may quote it: a password before an ``@`` is masked."""
    start = raw.find("://") + 3 if "://" in raw else 0
    at = raw.rfind("@")
    if at < start or ":" not in raw[start:at]:
        return _validation.cut(raw)
    user = raw[start:at].split(":", 1)[0]
    return _validation.cut(f"{raw[:start]}{user}:****{raw[at:]}")


def _check_allow_http_host(value: object) -> str | None:
    """Return the host named by ``allow_http_host`` (or its variable), folded; ``None`` if unset.

    An empty or blank ``LINGODOC_ALLOW_HTTP_HOST`` is unset (as ``VAR=`` in a compose
    file leaves it); an empty argument is refused, as it names no host.

    Raises:
        ConfigurationError: If the argument is not a string, or is empty.
    """
    if value is None:
        named = os.environ.get(ALLOW_HTTP_HOST_ENV, "").strip()
        return _host_key(named) if named else None
    if not isinstance(value, str):
        raise ConfigurationError(
            f"allow_http_host must be a str (a host name such as 'emulator') or None, "
            f"not {type(value).__name__}"
        )
    if not value.strip():
        raise ConfigurationError(
            "allow_http_host must name a host, such as 'emulator', not an empty string "
            "(None leaves it unset)"
        )
    return _host_key(value.strip())


def _host_key(host: str) -> str:
    """``host`` as two names of one host compare: lower case, an IPv6 address without brackets."""
    return host.lower().strip("[]")


def _check_base_url(base_url: object, allow_http_host: str | None) -> str | ConfigurationError:
    """Return the base URL to send to, or the error that refuses it.

    The error is returned, not raised: the URL may hold a password (which is
    refused, and masked in the message), and a traceback shown with its locals
    must not print it (see ``raise_scrubbed``).

    Args:
        base_url: The argument, or ``None`` to read ``LINGODOC_BASE_URL``.
        allow_http_host: The host (from ``_check_allow_http_host``) to which
            ``http://`` is allowed, besides loopback ones.
    """
    if base_url is not None and not isinstance(base_url, str):
        return ConfigurationError(f"base_url must be a str, not {type(base_url).__name__}")
    try:
        raw = _resolve(base_url, "base_url", BASE_URL_ENV)
    except ConfigurationError as exc:
        return exc
    where = f"base_url {_shown_url(raw)!r}"
    if base_url is None:
        where += f" (from {BASE_URL_ENV})"
    if "\\" in raw or not raw.isprintable() or any(c.isspace() for c in raw):
        # "https://api.example.com\\@evil.com" is evil.com to httpx, another host to others.
        return ConfigurationError(
            f"{where} holds a backslash, a space or a control character; "
            "write the address as a plain URL such as 'https://api.example.com/v1'"
        )
    start = raw.find("://") + 3 if "://" in raw else 0
    authority = raw[start:].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in authority:
        # httpx would send it as Basic authentication, instead of the key.
        return ConfigurationError(
            f"{where} holds a user name or password (before '@'); remove it: "
            "the SDK authenticates with the API key only"
        )
    problem = None
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        problem = str(exc)
    if problem is not None:
        # Returned outside the except block, as in _headers: a half-built httpx.URL in a
        # chained context would break a traceback shown with its locals.
        return ConfigurationError(f"{where} is not a valid URL: {problem}")
    if url.scheme not in ("http", "https") or not url.host or url.userinfo:
        return ConfigurationError(
            f"base_url must be an absolute https:// URL such as "
            f"'https://api.example.com/v1', not {_shown_url(raw)!r} "
            f"(from base_url or {BASE_URL_ENV})"
        )
    if (
        url.scheme == "http"
        and not is_loopback(url.host)
        and allow_http_host != _host_key(url.host)
    ):
        if allow_http_host is None:
            opt_in = (
                f" and, for a host on a network you trust (a docker-compose service), the "
                f"host named by allow_http_host= or {ALLOW_HTTP_HOST_ENV}"
            )
        else:
            opt_in = (
                f", but the opt-in (allow_http_host or {ALLOW_HTTP_HOST_ENV}) names the host "
                f"{_validation.shown(allow_http_host)}, not {_validation.shown(url.host)}"
            )
        return ConfigurationError(
            f"{where} uses http://, which would send the API key in clear text; "
            f"use https:// (http:// is allowed only for localhost and loopback addresses"
            f"{opt_in})"
        )
    if "?" in raw or "#" in raw:
        return ConfigurationError(f"{where} must not have a query or fragment")
    return str(url).rstrip("/")


def _proxy_problem(http: httpx.Client | httpx.AsyncClient, url: str) -> str | None:
    """Why ``http`` would send a request for ``url`` through a proxy; ``None`` if it goes straight.

    httpx chooses the transport of a request by its URL, among the mounts that its
    ``proxy=``, ``mounts=`` and (with ``trust_env``) the proxy variables of the
    environment made, ``NO_PROXY`` excluded. That choice (``_transport_for_url``, private)
    is asked first; a transport of httpx's own is a proxy if its pool is one. A transport
    of the caller's own (a mock, the emulator's) is taken as it is. If httpx no longer has
    that method, the environment's variables are read again as httpx reads them.
    """
    target = httpx.URL(url)
    transport_for_url = getattr(http, "_transport_for_url", None)
    transport: object = None
    if callable(transport_for_url):
        with contextlib.suppress(Exception):
            transport = transport_for_url(target)
    if transport is not None:
        pool = getattr(transport, "_pool", None)  # httpx's transport -> its httpcore pool
        if pool is None or not type(pool).__name__.endswith("Proxy"):
            return None  # a direct pool, or a transport of the caller's own
    else:
        import urllib.request

        if not http.trust_env:
            return None
        proxies = urllib.request.getproxies_environment()
        if not (proxies.get("http") or proxies.get("all")):
            return None
        # Not in typeshed, but in urllib.request since Python 3.2 (what urllib itself uses).
        if urllib.request.proxy_bypass_environment(target.host, proxies):  # type: ignore[attr-defined]
            return None
    variables = _proxy_variables() if http.trust_env else []
    if variables:
        return (
            f"it trusts the environment (trust_env=True) and {' or '.join(variables)} "
            f"names a proxy, which {target.host!r} is not excluded from by NO_PROXY "
            "(or its proxy= or mounts= setting names one)"
        )
    return f"its proxy= or mounts= setting sends requests for {target.host!r} through a proxy"


def _proxy_variables() -> list[str]:
    """The proxy variables of the environment that may apply to an ``http://`` URL."""
    return sorted(
        name
        for name, value in os.environ.items()
        if value.strip() and name.upper() in ("HTTP_PROXY", "ALL_PROXY")
    )


def _httpx_default_timeout(http_client_type: type[Any]) -> object:
    """The timeout an httpx client gets when its creator sets none (5 s in httpx 0.28)."""
    import inspect  # only here: needed only when an http_client is passed in

    return inspect.signature(http_client_type).parameters["timeout"].default


def _check_timeout(
    timeout: object, http_client: httpx.Client | httpx.AsyncClient | None
) -> httpx.Timeout:
    """Return the timeout of each attempt.

    ``None`` means "not set": the timeout of ``http_client`` if its creator set
    one, else ``DEFAULT_TIMEOUT``. No limit at all is ``httpx.Timeout(None)``.
    """
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if timeout is None:
        if http_client is not None and http_client.timeout != _httpx_default_timeout(
            type(http_client)
        ):
            return http_client.timeout
        return httpx.Timeout(DEFAULT_TIMEOUT)
    seconds = _as_float(timeout)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(_timeout_refused(timeout))
    return httpx.Timeout(seconds)


def _timeout_refused(timeout: object) -> str:
    return (
        "timeout must be a positive number of seconds or an httpx.Timeout, "
        f"not {_validation.shown(timeout)} "
        "(None leaves it unset; for no limit at all pass httpx.Timeout(None))"
    )


# RFC 9110: a header name is a token. A value here is printable ASCII, with inner
# spaces or tabs only (a CR or LF would end the header and start another).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t]*[\x21-\x7e])*)?")
# Headers that frame the body or manage the connection: httpx and httpcore set them
# from the request itself, and a second, different one breaks or smuggles a request.
_TRANSPORT_HEADERS = frozenset(
    {
        "connection",
        "content-length",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def _headers(default_headers: Mapping[str, str] | None) -> httpx.Headers:
    headers = httpx.Headers(
        {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING, "User-Agent": USER_AGENT}
    )
    problem: str | None
    try:
        extra = httpx.Headers(default_headers or {})
    except (TypeError, ValueError, AttributeError) as exc:
        # UnicodeEncodeError is a ValueError: header values must be ASCII.
        problem = str(exc)
    else:
        problem = _header_problem(extra)
    if problem is None:
        headers.update(extra)
        return headers
    # Raised outside the except block, so that no chained context keeps httpx's frames
    # (a half-built Headers, whose repr fails, breaks a traceback shown with its locals).
    raise ConfigurationError(f"default_headers cannot be sent as HTTP headers: {problem}")


def _header_problem(headers: httpx.Headers) -> str | None:
    """What is wrong with these headers, in words that never quote a value (it may be a secret)."""
    for raw_name, raw_value in headers.raw:
        name = raw_name.decode("ascii", "replace")
        if not _HEADER_NAME.fullmatch(name):
            return f"{name!r} is not a valid header name"
        if name.lower() in _TRANSPORT_HEADERS:
            return (
                f"{name!r} frames the body or manages the connection, which httpx does "
                "for each request; remove it"
            )
        if not _HEADER_VALUE.fullmatch(raw_value.decode("ascii", "replace")):
            return (
                f"the value of {name!r} holds a line break or another control character, "
                "or starts or ends with a space"
            )
    return None


def call_options(
    timeout: object = None,
    extra_headers: object = None,
    extra_query: object = None,
    extra_body: object = None,
) -> Options | None:
    """Check a call's own options; ``None`` if none is set (the common case).

    Raises:
        InvalidArgumentType: If an option has the wrong type, or ``extra_body`` cannot be
            sent as JSON.
        InvalidArgument: If ``timeout`` is not a positive number, or ``extra_headers``
            holds a header the SDK refuses (see ``_extra_headers``).
    """
    if timeout is None and extra_headers is None and extra_query is None and extra_body is None:
        return None
    return Options(
        timeout=None if timeout is None else _call_timeout(timeout),
        headers=None if extra_headers is None else _extra_headers(extra_headers),
        query=None if extra_query is None else _extra_query(extra_query),
        body=None if extra_body is None else _extra_body(extra_body),
    )


def _call_timeout(timeout: object) -> httpx.Timeout:
    """A call's ``timeout=``: the rules of the client's, but a bad one is the caller's error."""
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if not _is_number(timeout):
        raise InvalidArgumentType(_timeout_refused(timeout))
    seconds = _as_float(timeout)
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidArgument(_timeout_refused(timeout))
    return httpx.Timeout(seconds)


def _extra_headers(extra_headers: object) -> list[tuple[bytes, bytes]]:
    """A call's ``extra_headers=``, checked as ``default_headers`` are, as raw header pairs.

    ``Authorization`` is refused, not silently replaced (as it is in ``default_headers``):
    a call that asks for its own is a mistake to say at once.
    """
    if not isinstance(extra_headers, Mapping):
        raise InvalidArgumentType(
            f"extra_headers must be a mapping of header names to values, "
            f"not {type(extra_headers).__name__}"
        )
    error: type[LingodocError] = InvalidArgument
    problem: str | None
    try:
        headers = httpx.Headers(extra_headers)
    except UnicodeEncodeError as exc:  # a value (or name) that is not ASCII
        problem = str(exc)
    except (TypeError, ValueError, AttributeError) as exc:
        error, problem = InvalidArgumentType, str(exc)
    else:
        problem = _header_problem(headers)
        if problem is None and "authorization" in headers:
            problem = "it cannot replace 'Authorization', which carries the client's API key"
        if problem is None:
            return headers.raw
    # Raised outside the except block, as in _headers: no chained httpx frames.
    raise error(f"extra_headers cannot be sent as HTTP headers: {problem}")


# What a query parameter's value may be (or a list or tuple of): httpx writes anything
# else as its str(), such as "{'a': 1}" for a dict, which no service means to read.
_QUERY_VALUE_TYPES = (str, int, float, bool, type(None))


def _extra_query(extra_query: object) -> httpx.QueryParams:
    """A call's ``extra_query=``, as httpx sends it.

    Names are str; values str, int, float, bool or ``None`` (an empty value), or a list
    or tuple of them (the parameter repeated).
    """
    if not isinstance(extra_query, Mapping):
        raise InvalidArgumentType(
            f"extra_query must be a mapping of parameter names to values, "
            f"not {type(extra_query).__name__}"
        )
    for name, value in extra_query.items():
        if not isinstance(name, str):
            raise InvalidArgumentType(
                f"extra_query's parameter names must be str, not {type(name).__name__}"
            )
        values = value if isinstance(value, (list, tuple)) else (value,)
        bad = next((v for v in values if not isinstance(v, _QUERY_VALUE_TYPES)), None)
        if bad is not None:
            raise InvalidArgumentType(
                f"extra_query[{name!r}] cannot be sent as a query parameter: a value must be "
                f"a str, int, float, bool or None, or a list of them, not {type(bad).__name__}"
            )
    return httpx.QueryParams(extra_query)


def _extra_body(extra_body: object) -> dict[str, Any]:
    """A call's ``extra_body=``: a copy, checked to be sendable as httpx will send it."""
    if not isinstance(extra_body, Mapping):
        raise InvalidArgumentType(
            f"extra_body must be a mapping of JSON field names to values, "
            f"not {type(extra_body).__name__}"
        )
    body = dict(extra_body)
    name = next((name for name in body if not isinstance(name, str)), None)
    if name is not None:
        raise InvalidArgumentType(
            f"extra_body's field names must be str, not {type(name).__name__}"
        )
    try:
        json.dumps(body, allow_nan=False)  # as httpx encodes a body
    except (TypeError, ValueError, RecursionError) as exc:
        problem = str(exc)
    else:
        return body
    raise InvalidArgumentType(f"extra_body cannot be sent as JSON: {_validation.cut(problem)}")


def _as_float(value: object) -> float:
    """``value`` as a float: NaN if it is not a number, infinite if too large for one."""
    if not _is_number(value):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int past the largest float
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_max_retries(max_retries: object) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigurationError(
            f"max_retries must be an int >= 0, not {_validation.shown(max_retries)}"
        )
    return max_retries


def _check_max_in_flight(max_in_flight: object) -> int | None:
    if max_in_flight is None:
        return None
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise ConfigurationError(
            "max_in_flight must be an int >= 1, or None to adapt it to the round trips "
            f"measured, not {_validation.shown(max_in_flight)}"
        )
    return max_in_flight


def _check_relative_path(path: object) -> str:
    """Return ``path`` with a leading slash if it stays under ``base_url``.

    Refused: an absolute URL, a path starting ``//`` or with a backslash, and a
    path with a ``.`` or ``..`` segment as written or once percent-decoded
    (``%2e%2e``, ``.%2E``, or ``..`` between a ``%2f`` or ``%5c``): a server or
    proxy that decodes before normalising would read it as a step up.

    Raises:
        InvalidArgumentType: If it is not a string.
        InvalidArgument: If it would leave ``base_url``.
    """
    if not isinstance(path, str):
        raise InvalidArgumentType(f"path must be a str, not {type(path).__name__}")
    route = path.split("?", 1)[0]
    refused = (
        "://" in route
        or route.startswith(("//", "\\", "/\\"))
        or _validation.has_dot_segment(route, decoded=True)
    )
    if refused:
        raise InvalidArgument(
            f"path must be relative to base_url, such as '/documents', not "
            f"{_validation.shown(path)}: requests never leave base_url, so the API key "
            "never goes to another host"
        )
    return path if path.startswith("/") else f"/{path}"


def _merge_query(path: str, params: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """Move the query written in ``path`` into ``params``; ``params`` win for a key in both.

    httpx would replace the query of the URL with ``params``, silently
    dropping the one in the path.
    """
    route, mark, query = path.partition("?")
    try:
        merged = httpx.QueryParams(params)
        if mark:
            merged = httpx.QueryParams(query.partition("#")[0]).merge(merged)
    except (TypeError, ValueError, AttributeError) as exc:
        problem = str(exc)
    else:
        return route if mark else path, merged
    # Raised outside the except block, as in _headers: no chained httpx frames.
    raise InvalidArgumentType(
        f"params cannot be sent as query parameters: {_validation.cut(problem)}"
    )


# The lower-case name of an item of httpx.Headers's list (name, lower-case name, value).
_folded_name = itemgetter(1)


class _SentHeaders(httpx.Headers):
    """The headers of the SDK's direct requests: ``httpx.Headers``, read by name in C.

    After every response, httpx's cookie jar copies the request's headers into a dict
    (``dict(request.headers)``): it lists the names, then looks each one up, and httpx
    scans the whole list in Python for each. For the SDK's eight headers that was more
    work than its retry loop. Here the names are listed and found with list methods; the
    answers are httpx's (a name sent twice is left to httpx, which joins the values).
    """

    def keys(self) -> KeysView[str]:
        """The header names, lower case and in order, as ``httpx.Headers.keys``."""
        encoding = self._encoding or self.encoding  # the property works it out once
        names = map(bytes.decode, map(_folded_name, self._list), repeat(encoding))
        return dict.fromkeys(names).keys()

    def __getitem__(self, key: str) -> str:
        encoding = self._encoding or self.encoding
        folded = key.lower().encode(encoding)
        names = list(map(_folded_name, self._list))
        if names.count(folded) == 1:
            return self._list[names.index(folded)][2].decode(encoding)
        return super().__getitem__(key)  # none (KeyError), or several

    def __repr__(self) -> str:
        # As httpx.Headers shows itself (the key masked), under its name.
        return "Headers" + super().__repr__()[len(type(self).__name__) :]


# Headers httpx sets on a request itself (or reads to decide whether to): with any of them
# among the merged headers, a request is made by httpx.Request, not _direct_request.
_AUTO_HEADERS = frozenset({b"host", b"content-length", b"content-type", b"transfer-encoding"})
# Encodes a JSON body as httpx does (httpx._content.encode_json), made once rather than
# on every call.
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _has_cookies(http: httpx.Client | httpx.AsyncClient) -> bool:
    """Whether ``http`` may hold cookies (``bool(http.cookies)`` counts them all, each call).

    The jar's own dict of domains: empty, it holds none; not empty, it may (cleared
    cookies leave their domain behind), and ``build_request`` merges whatever there is.
    """
    jar = http.cookies.jar
    domains = getattr(jar, "_cookies", None)  # http.cookiejar.CookieJar's, since Python 2
    return bool(jar) if not isinstance(domains, dict) else bool(domains)


def _build_with(
    http: httpx.Client | httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    json: Any,
    params: Any,
    headers: Any,
    extensions: dict[str, Any],
) -> httpx.Request:
    """``http.build_request``, for an http client with query parameters or cookies of its own.

    With parameters of its own, httpx replaces the query of the URL (one written in a
    ``request()`` path) with them: that query is moved into the parameters first.
    """
    if url.query and http.params:
        params = httpx.QueryParams(url.query.decode("ascii")).merge(params or {})
        url = url.copy_with(query=None)
    return http.build_request(
        method, url, json=json, params=params, headers=headers, extensions=extensions
    )


WaitError = TypeVar("WaitError", TranslationFailed, WaitTimeout)


def _is_coroutine_function(function: object) -> bool:
    """Whether calling ``function`` makes a coroutine: an ``async def``, or an object with one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004
    )


class Waiter:
    """The rules of ``wait_for_translation``, apart from the polling and sleeping.

    Args:
        poll_call: The request of one poll.
        poll_interval: Seconds between polls.
        timeout: Seconds to wait in all, or ``None``.
        on_progress: Called with each status read.
        redact: Masks the key in what the server sent.
        awaits: Whether the client awaits what ``on_progress`` returns (``AsyncClient``):
            if not, an ``async def`` callback is refused before the first poll.

    Raises:
        InvalidArgumentType: If an argument has the wrong type, or ``on_progress`` is a
            coroutine function and the client cannot await it.
        InvalidArgument: If ``poll_interval`` or ``timeout`` is out of range.
    """

    def __init__(
        self,
        poll_call: Call[TranslationStatus],
        *,
        poll_interval: float,
        timeout: float | None,
        on_progress: Callable[[TranslationStatus], object] | None,
        redact: Callable[[str], str],
        awaits: bool = False,
    ) -> None:
        if not _is_number(poll_interval):
            raise InvalidArgumentType(f"poll_interval must be a number, not {shown(poll_interval)}")
        if not (math.isfinite(_as_float(poll_interval)) and poll_interval > 0):
            raise InvalidArgument(
                f"poll_interval must be a positive number, not {shown(poll_interval)}"
            )
        if timeout is not None and not _is_number(timeout):
            raise InvalidArgumentType(f"timeout must be a number or None, not {shown(timeout)}")
        if timeout is not None and not _as_float(timeout) >= 0:  # also refuses NaN
            raise InvalidArgument(f"timeout must be None or >= 0 seconds, not {shown(timeout)}")
        if on_progress is not None and not callable(on_progress):
            raise InvalidArgumentType("on_progress must be callable")
        if on_progress is not None and not awaits and _is_coroutine_function(on_progress):
            raise InvalidArgumentType(
                "on_progress is a coroutine function (async def), which Client cannot await: "
                "pass a plain function, or wait with AsyncClient"
            )
        self.poll_call = poll_call
        self.poll_interval = float(poll_interval)
        self.timeout = timeout
        self.on_progress = on_progress
        self.redact = redact
        self.last: TranslationStatus | None = None
        limit = None if timeout is None else _as_float(timeout)
        # An infinite timeout (or an int too large for a float) waits as None does.
        self.deadline = (
            None if limit is None or math.isinf(limit) else _clock.current().monotonic() + limit
        )
        self._unknown_states = 0  # polls in a row that read a state the SDK does not know
        self._rate_limited = 0  # 429s in a row

    def report(self, status: TranslationStatus) -> None:
        """Call ``on_progress`` with a poll's status (``Client``).

        Raises:
            InvalidArgumentType: If ``on_progress`` returned a coroutine, which ``Client``
                cannot await (it is closed, so it never runs).
        """
        if self.on_progress is None:
            return
        result = self.on_progress(status)
        if inspect.iscoroutine(result):
            result.close()
            raise InvalidArgumentType(
                "on_progress returned a coroutine, which Client cannot await: "
                "pass a plain function, or wait with AsyncClient"
            )

    async def async_report(self, status: TranslationStatus) -> None:
        """Call ``on_progress`` with a poll's status, awaiting it if it is a coroutine."""
        if self.on_progress is None:
            return
        result = self.on_progress(status)
        if inspect.iscoroutine(result):
            await result

    def finished(self, status: TranslationStatus) -> TranslationStatus | Failure | None:
        """Record a poll's status and say whether the wait is over.

        A state the SDK does not know (a plain string, not a
        [`TranslationState`][lingodoc.TranslationState]) is polled again, but read
        on ``MAX_UNKNOWN_STATES`` polls in a row it ends the wait: the service may
        have added a final state (``cancelled``), and a wait must not poll for ever.

        Returns:
            The status if it is completed, a ``Failure`` holding ``TranslationFailed``
            if the translation failed or stayed in unknown states, else ``None``.
        """
        self.last = status
        self._rate_limited = 0
        state = status.status
        if state == _lazy.TranslationState.COMPLETED:
            return status
        if state == _lazy.TranslationState.FAILED:
            return Failure(self._masked(TranslationFailed(status)))
        if isinstance(state, _lazy.TranslationState):
            self._unknown_states = 0
            return None
        self._unknown_states += 1
        if self._unknown_states < MAX_UNKNOWN_STATES:
            return None
        shown = state if len(state) <= 40 else f"{state[:40]}..."
        error = TranslationFailed(status)
        error.args = (
            f"translation {status.translation_id} is in the state {shown!r}, which this "
            f"version of lingodoc does not know: it stopped waiting after "
            f"{MAX_UNKNOWN_STATES} polls in a row in such a state (check the translation "
            f"with get_translation, or upgrade lingodoc)",
        )
        return Failure(self._masked(error))

    def delay(self, wanted: float | None = None) -> float | Failure:
        """Return how long to sleep before the next poll.

        Args:
            wanted: A wait the service asked for (a 429's reset), instead of
                the poll interval.

        Returns:
            Seconds, or a ``Failure`` holding ``WaitTimeout`` if the deadline
            has passed, or falls before the end of a wait the service asked for.
        """
        if wanted is None:
            delay = self.poll_interval
        else:
            # A short reset must not turn into a tight loop of refused polls.
            delay = min(max(wanted, min(MIN_RATE_LIMIT_WAIT, self.poll_interval)), MAX_POLL_WAIT)
        if self.deadline is None:
            return delay
        remaining = self.deadline - _clock.current().monotonic()
        if remaining <= 0 or (wanted is not None and wanted > remaining):
            assert self.timeout is not None
            return Failure(self._masked(WaitTimeout(self.last, self.timeout)))
        return min(delay, remaining)

    def delay_after_rate_limit(self, wanted: float | None) -> float | Failure:
        """Return how long to sleep after a poll was refused with a 429.

        Args:
            wanted: The wait the service asked for (``Retry-After``, or the reset).

        Returns:
            That wait; or, if the service named none or a reset already past,
            an exponential backoff with jitter that grows with each 429 in a row
            (never a tight loop of refused polls). A ``Failure`` holding
            ``WaitTimeout`` as ``delay`` says.
        """
        self._rate_limited += 1
        if wanted is not None and wanted > 0:
            return self.delay(wanted=wanted)
        return self.delay(wanted=_retry.backoff(self._rate_limited))

    def delay_after_failure(self, error: LingodocError) -> float | Failure:
        """Return how long to sleep after a poll failed even after the client's retries.

        With a timeout, a transient failure (a 5xx, the network) is ridden
        out like a poll that found the job unfinished, until the deadline.

        Returns:
            Seconds; or a ``Failure`` holding ``error`` itself if there is no
            timeout or it is not transient, or ``WaitTimeout`` (caused by
            ``error``) if the deadline has passed.
        """
        transient = isinstance(error, APIConnectionError) or (
            isinstance(error, APIError) and (error.status_code or 0) >= 500
        )
        if self.deadline is None or not transient:
            return Failure(error)
        delay = self.delay()
        if isinstance(delay, Failure):  # as `raise timeout from error` would chain them
            # Without its traceback: the frames it passed hold earlier statuses as sent.
            delay.error.__cause__ = error.with_traceback(None)
            delay.error.__suppress_context__ = True
        return delay

    def _masked(self, error: WaitError) -> WaitError:
        # The message quotes the translation id the server sent, and the status is
        # what it sent: either may echo the key, and an exception must never hold it.
        error.args = tuple(self.redact(a) if isinstance(a, str) else a for a in error.args)
        if error.status is not None:
            changes = {}
            for name, value in error.status:
                # A field the SDK does not know (the reason of a failure, ``error``) may
                # be an object: its strings are masked too.
                masked = _redact_json(value, self.redact)
                if masked is not value:
                    changes[name] = masked
            # Always a copy: it keeps the request id and rate limit, not the response, whose
            # request holds the key (see _models.Origin).
            error.status = error.status.model_copy(update=changes)
        return error


def _redact_json(value: object, redact: Callable[[str], str]) -> object:
    """``value`` (a JSON value) with the key masked in its strings; itself if none changed.

    Without recursion: json's parser reads values nested deeper than Python's recursion
    limit lets a function walk, and a status is masked on the way to a typed error.
    """
    containers: list[dict[Any, Any] | list[Any]] = []  # each before what it holds
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            containers.append(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            containers.append(item)
            pending.extend(item)
    masked: dict[int, object] = {}

    def new(item: object) -> object:
        if isinstance(item, str):
            text = redact(item)
            return item if text == item else text
        return masked.get(id(item), item)

    for container in reversed(containers):  # what a container holds is done before it
        if isinstance(container, dict):
            pairs = {redact(str(key)): new(item) for key, item in container.items()}
            if list(pairs) != list(container) or any(
                a is not b for a, b in zip(pairs.values(), container.values(), strict=True)
            ):
                masked[id(container)] = pairs
        else:
            elements = [new(item) for item in container]
            if any(a is not b for a, b in zip(elements, container, strict=True)):
                masked[id(container)] = elements
    return new(value)


class BaseClient(Generic[HttpClientT]):
    """Configuration and I/O-free logic shared by `Client` and `AsyncClient`."""

    _http_client_type: type[HttpClientT]
    base_url: str
    """The service address, up to and including ``/v1``, without a trailing slash."""
    timeout: httpx.Timeout
    """The timeout of each attempt (``httpx.Timeout(None)``: no limit)."""
    max_retries: int
    """Extra attempts after a failure that may pass."""
    _api_key: str
    _headers: httpx.Headers

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: HttpClientT | None = None,
        allow_http_host: str | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        configure_from_env()
        refused = self._use_api_key(api_key)
        del api_key  # out of the locals that a traceback through __init__ may show
        if refused is not None:
            raise_scrubbed(refused)
        checked = _check_base_url(base_url, _check_allow_http_host(allow_http_host))
        del base_url  # it may hold a password (refused, and masked in the error)
        if isinstance(checked, ConfigurationError):
            raise_scrubbed(checked)
        self.base_url = checked
        if http_client is not None and not isinstance(http_client, self._http_client_type):
            raise ConfigurationError(
                f"http_client must be an {self._http_client_type.__module__}."
                f"{self._http_client_type.__qualname__}, not {type(http_client).__name__}"
            )
        if self.base_url.startswith("http://"):
            self._check_http_opt_in(http_client)
        self.timeout = _check_timeout(timeout, http_client)
        self.max_retries = _check_max_retries(max_retries)
        in_flight = _check_max_in_flight(max_in_flight)
        self._headers = _headers(default_headers)
        # Set last, and case-insensitively, so no default header can replace the key.
        self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._key_mask = KeyMask(self._api_key)
        shared = _Shared if self._http_client_type is httpx.AsyncClient else _ThreadShared
        if http_client is None:
            # No proxy of the environment for http:// (a loopback host, or the host the
            # opt-in names): it would get the key in clear text. Nothing else there
            # matters without TLS.
            new_http = functools.partial(
                _new_http_client,
                self._http_client_type,
                self.timeout,
                trust_env=not self.base_url.startswith("http://"),
            )
            self._shared: _Shared[HttpClientT] = shared(
                new_http(), new_http=new_http, max_in_flight=in_flight
            )
        else:
            self._shared = shared(http_client, new_http=None, max_in_flight=in_flight)
        watch_http_logs(self._key_mask)  # after the http client made its loggers
        self._view_closed = False
        self._is_copy = False
        # Caches for building requests (see _build_request); copies share them.
        self._urls: dict[str, httpx.URL] = {}
        self._merged_headers: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], bool] = (
            [],
            [],
            False,
        )
        # The Host header of every request: all go to base_url's host and port.
        self._host_header: bytes | None = None
        # The headers of direct requests, made for the merged list they hold (_header_forms).
        self._header_templates: (
            tuple[list[tuple[bytes, bytes]], tuple[httpx.Headers, httpx.Headers, httpx.Headers]]
            | None
        ) = None
        self._extensions: tuple[httpx.Timeout, dict[str, Any]] = (self.timeout, {})
        self._attempt_plan: _deadline.Plan | None = None

    def _check_http_opt_in(self, http_client: HttpClientT | None) -> None:
        """For an ``http://`` host allowed by the opt-in (not loopback): warn, refuse a proxy.

        Raises:
            ConfigurationError: If ``http_client`` would send through a proxy, which
                would get the key in clear text.
        """
        host = httpx.URL(self.base_url).host
        if is_loopback(host):
            return
        problem = None if http_client is None else _proxy_problem(http_client, self.base_url)
        if problem is not None:
            raise ConfigurationError(
                f"base_url {self.base_url!r} uses http:// (allowed for {host!r} by "
                f"allow_http_host or {ALLOW_HTTP_HOST_ENV}), but the http_client passed "
                f"would send its requests through a proxy, which would get the API key in "
                f"clear text: {problem}. Add {host!r} to NO_PROXY, pass an http_client "
                "made with trust_env=False and no proxy, or use https://"
            )
        logger.warning(
            "base_url %r uses http:// (allowed for %r by allow_http_host or %s): the API "
            "key %s is sent in clear text to %s, readable by anyone on that network",
            self.base_url,
            host,
            ALLOW_HTTP_HOST_ENV,
            mask(self._api_key),
            host,
        )

    def _use_api_key(self, api_key: object) -> ConfigurationError | None:
        """Keep the key to send; return the error that refuses it instead (see ``_api_key``)."""
        key = _api_key(api_key)
        if isinstance(key, ConfigurationError):
            return key
        self._api_key = key
        return None

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state of the most recent response that reported one, or ``None``."""
        headers = self._shared.rate_limit
        return None if headers is None else headers.model()

    @property
    def is_closed(self) -> bool:
        """Whether this client (or the client it was copied from) has been closed."""
        return self._view_closed or self._shared.closed

    def __repr__(self) -> str:
        # getattr: a traceback shown with its locals reprs a client whose __init__ failed.
        base_url, key = getattr(self, "base_url", None), getattr(self, "_api_key", "")
        shown = f"{type(self).__name__}(base_url={base_url!r}, api_key={mask(key)!r}"
        timeout: httpx.Timeout | None = getattr(self, "timeout", None)
        if timeout is not None:
            limits = {timeout.connect, timeout.read, timeout.write, timeout.pool}
            # One number for the four, else (no limit, or several) httpx's own repr.
            single = next(iter(limits)) if len(limits) == 1 else None
            shown += f", timeout={timeout if single is None else single!r}"
        if hasattr(self, "max_retries"):
            shown += f", max_retries={self.max_retries!r}"
        return shown + ")"

    def with_options(
        self: Self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Self:
        """Return a copy with other settings that shares this client's connection pool.

        Closing the copy leaves the pool open; closing the original closes
        both.

        Args:
            timeout: Seconds or an ``httpx.Timeout`` for each attempt;
                ``httpx.Timeout(None)`` for no limit; ``None`` (not set) keeps
                this client's timeout.
            max_retries: Extra attempts; ``None`` keeps this client's.

        Returns:
            A client of the same class that shares this one's connection pool
            and rate-limit state.

        Raises:
            ConfigurationError: If a setting is invalid.
        """
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        if timeout is not None:
            copy.timeout = _check_timeout(timeout, None)
        if max_retries is not None:
            copy.max_retries = _check_max_retries(max_retries)
        copy._is_copy = True
        return copy

    def _redact(self, text: str) -> str:
        return self._key_mask(text)

    def _check_open(self) -> None:
        """Refuse a call on a closed client, or on an AsyncClient from another event loop.

        Raises:
            LingodocError: If the client is closed, or (an AsyncClient) was first used in
                another event loop.
        """
        shared = self._shared
        if self._view_closed or shared.closed:
            raise LingodocError(
                f"this {type(self).__name__} has been closed; create a new one to send requests"
            )
        if (
            shared.loop_bound
            and shared.loop is not (loop := running_loop())
            and loop is not None
            and not shared.use_loop(loop)
        ):
            raise LingodocError(self._other_loop_message())

    def _other_loop_message(self) -> str:
        return (
            f"this {type(self).__name__} was first used in another event loop; create the "
            "client inside the loop that uses it (e.g. inside the coroutine passed to "
            "asyncio.run), or aclose() it there"
        )

    def _closing_from_another_loop(self) -> bool:
        """Check that ``aclose`` can close the pool from here; whether its loop is gone.

        An AsyncClient's connections belong to the event loop it was first used in. From
        another loop, its pool can be closed only if that loop is closed (its sockets are
        then closed directly); if the loop is still open, the pool must be closed there.

        Returns:
            Whether the pool's loop is closed (and this is another loop).

        Raises:
            LingodocError: If the client owns its pool and was first used in another event
                loop, which is still open.
        """
        shared = self._shared
        shared.in_this_process(closing=True)  # a forked child: the parent's loop is not here
        if shared.loop is None or not shared.owned or shared.loop is running_loop():
            return False
        if loop_is_closed(shared.loop):
            return True
        raise LingodocError(
            f"this {type(self).__name__} was first used in another event loop, which is still "
            "open and owns its connections: aclose() it in that loop"
        )

    def _closed_in_flight(self, call: Call[Any], previous: BaseException | None) -> LingodocError:
        """The error of a call in flight whose next attempt finds the client closed."""
        if previous is None:
            error = APIConnectionError(f"{call.description} was not sent: client closed")
        else:
            error = APIConnectionError(
                f"{call.description} was not retried: client closed "
                f"(the last attempt failed with {type(previous).__name__})"
            )
            error.__cause__ = previous
            error.__suppress_context__ = True
        return error

    # Building calls -------------------------------------------------------

    def _translate_call(
        self,
        text: str,
        source_language: str,
        target_language: str,
        style: str | None,
        options: Options | None = None,
    ) -> Call[TextTranslation]:
        body = {
            "text": _validation.text(text),
            "source_language": _validation.language(source_language, "source_language"),
            "target_language": _validation.language(target_language, "target_language"),
        }
        if _validation.optional(style, "style", str) is not None:
            body["style"] = style  # type: ignore[assignment]
        model = _lazy.TextTranslation
        return Call(
            "POST", "/translate", model_parser(model), json=body, options=options,
            read_body=body_reader(model),
        )  # fmt: skip

    def _translate_batch_call(
        self,
        texts: Sequence[str],
        source_language: str,
        target_language: str,
        options: Options | None = None,
    ) -> Call[BatchTranslation]:
        return batch_call(
            _validation.texts(texts),
            _validation.language(source_language, "source_language"),
            _validation.language(target_language, "target_language"),
            options,
        )

    def _bulk_plan(
        self,
        texts: Sequence[str],
        source_language: str,
        target_language: str,
        batch_size: int,
        max_concurrency: int,
        wait_for_rate_limit: bool | float,
        on_progress: Callable[[_bulk.BulkProgress], object] | None,
        done: MutableMapping[int, str] | None,
        options: Options | None = None,
    ) -> _bulk.Bulk:
        """Check the arguments of ``translate_many`` and plan its batches.

        Every text is checked here, before the first request.

        Raises:
            LingodocError: If the client is closed.
            InvalidArgumentType: If ``texts`` is not a list of strings, a size is not an int,
                ``on_progress`` is not callable (or is a coroutine function and
                the client cannot await it), or ``done`` is not a mapping of int
                indices to strings.
            InvalidArgument: If ``texts`` is empty, a size is below 1, or ``done`` holds
                an index out of range.
            TextTooLong: If a text has more than 10,000 characters.
            InvalidLanguage: If a code is malformed.
        """
        self._check_open()
        checked = _validation.texts(texts)
        source = _validation.language(source_language, "source_language")
        target = _validation.language(target_language, "target_language")
        size = _validation.positive_int(batch_size, "batch_size")
        concurrency = _validation.positive_int(max_concurrency, "max_concurrency")
        longest_wait = _bulk.max_wait(wait_for_rate_limit)
        if on_progress is not None and not callable(on_progress):
            raise InvalidArgumentType("on_progress must be callable")
        awaits = issubclass(self._http_client_type, httpx.AsyncClient)
        if on_progress is not None and not awaits and _is_coroutine_function(on_progress):
            raise InvalidArgumentType(
                "on_progress is a coroutine function (async def), which Client cannot await: "
                "pass a plain function, or use AsyncClient"
            )
        if done is not None and not isinstance(done, MutableMapping):
            raise InvalidArgumentType(
                f"done must be a dict (or other mutable mapping), not {type(done).__name__}"
            )
        return _bulk.Bulk(
            checked,
            batch_size=size,
            max_concurrency=concurrency,
            make_call=lambda chunk: batch_call(chunk, source, target, options),
            rate_limit=self.rate_limit,
            max_wait=longest_wait,
            done=done,
            on_progress=on_progress,
        )

    def _translate_document_call(
        self,
        document_id: str,
        target_language: str,
        style: str | None,
        use_translation_memory: bool | None,
        options: Options | None = None,
    ) -> Call[TranslationJob]:
        path = f"/documents/{_validation.path_segment(document_id, 'document_id')}/translate"
        body: dict[str, Any] = {
            "target_language": _validation.language(target_language, "target_language")
        }
        if _validation.optional(style, "style", str) is not None:
            body["style"] = style
        if _validation.optional(use_translation_memory, "use_translation_memory", bool) is not None:
            body["use_translation_memory"] = use_translation_memory
        # Starting a job twice would translate (and bill) the document twice.
        return Call(
            "POST", path, job_parser(document_id), json=body, idempotent=False, options=options
        )

    def _get_translation_call(
        self, translation_id: str, options: Options | None = None
    ) -> Call[TranslationStatus]:
        path = f"/translations/{_validation.path_segment(translation_id, 'translation_id')}"
        return Call("GET", path, status_parser(translation_id), options=options)

    def _waiter(
        self,
        job_or_id: TranslationJob | str,
        poll_interval: float,
        timeout: float | None,
        on_progress: Callable[[TranslationStatus], object] | None,
        options: Options | None = None,
    ) -> Waiter:
        translation_id = (
            job_or_id.translation_id if isinstance(job_or_id, _lazy.TranslationJob) else job_or_id
        )
        return Waiter(
            self._get_translation_call(translation_id, options),
            poll_interval=poll_interval,
            timeout=timeout,
            on_progress=on_progress,
            redact=self._key_mask,
            awaits=issubclass(self._http_client_type, httpx.AsyncClient),
        )

    def _list_documents_call(self, options: Options | None = None) -> Call[list[Document]]:
        return Call("GET", "/documents", parse_documents, options=options)

    def _raw_call(
        self,
        method: str,
        path: str,
        json: Any,
        params: Mapping[str, Any] | None,
        options: Options | None = None,
    ) -> Call[Any]:
        if not isinstance(method, str) or not method.isalpha():
            raise InvalidArgument(
                f"method must be an HTTP method such as 'GET', not {_validation.shown(method)}"
            )
        method = method.upper()
        path = _check_relative_path(path)
        if params:
            path, params = _merge_query(path, params)
        return Call(
            method, path, parse_data, json=json, params=params or None,
            idempotent=method in IDEMPOTENT_METHODS, options=options,
        )  # fmt: skip

    # Sending and reading --------------------------------------------------

    def _build_request(self, call: Call[Any]) -> httpx.Request:
        """Return the request for ``call``, as ``http.build_request`` would build it.

        ``build_request`` parses the URL and merges the client's headers into
        ours on every call, which cost more than all the rest of the SDK's
        work on a call. So the parsed URL and the merged headers are kept, and
        the request is made directly; a client with cookies or query
        parameters of its own still goes through ``build_request``.
        """
        http = self._shared.http
        try:
            url = self._urls.get(call.path)
            if url is None:
                if len(self._urls) >= URL_CACHE_SIZE:
                    self._urls.clear()
                url = self._urls[call.path] = httpx.URL(self.base_url + call.path)
            timeout, extensions = self._extensions
            if timeout is not self.timeout or not extensions:
                extensions = {"timeout": self.timeout.as_dict()}
                self._extensions = (self.timeout, extensions)
            if call.options is not None:
                return self._request_with_options(http, call, call.options, url)
            if http.params or _has_cookies(http):
                return _build_with(
                    http, call.method, url, call.json, call.params, self._headers, extensions
                )
            headers = self._headers_for(http)
            if self._merged_headers[2]:
                return self._direct_request(call, url, headers, extensions)
            return httpx.Request(
                call.method,
                url,
                json=call.json,
                params=call.params,
                headers=headers,
                extensions=extensions,
            )
        except httpx.InvalidURL as exc:
            raise InvalidArgument(
                f"{call.description} is not a valid request path: {exc}"
            ) from None
        except TypeError as exc:
            raise InvalidArgumentType(f"{call.description} cannot be sent: {exc}") from None
        except ValueError as exc:  # such as a lone surrogate in a text, NaN in a JSON body
            raise InvalidArgument(f"{call.description} cannot be sent: {exc}") from None

    def _request_with_options(
        self,
        http: httpx.Client | httpx.AsyncClient,
        call: Call[Any],
        options: Options,
        url: httpx.URL,
    ) -> httpx.Request:
        """``_build_request`` for a call with options of its own (``extra_headers=``...).

        Its headers go on top of the client's (``default_headers`` included), its query
        parameters are added to the call's, its body fields merged over the SDK's. The
        ``timeout`` extension is the call's own, if it has one (``_attempt`` sets it).
        """
        timeout = self.timeout if options.timeout is None else options.timeout
        extensions = {"timeout": timeout.as_dict()}
        json, params = options.merge_body(call.json), options.merge_params(call.params)
        if http.params or http.cookies:
            headers = options.merge_headers(self._headers.raw)
            return _build_with(http, call.method, url, json, params, headers, extensions)
        return httpx.Request(
            call.method,
            url,
            json=json,
            params=params,
            headers=options.merge_headers(self._headers_for(http)),
            extensions=extensions,
        )

    def _headers_for(self, http: httpx.Client | httpx.AsyncClient) -> list[tuple[bytes, bytes]]:
        """The http client's headers with ours on top, as ``build_request`` merges them."""
        theirs = http.headers.raw
        seen, merged, _ = self._merged_headers
        if theirs != seen or not merged:
            ours = self._headers.raw
            replaced = {name.lower() for name, _ in ours}
            merged = [(name, value) for name, value in theirs if name.lower() not in replaced]
            merged += ours
            # None of the headers httpx adds to a request, or reads to decide on them: those
            # are then added here (_direct_request), as httpx would add them.
            plain = not any(name.lower() in _AUTO_HEADERS for name, _ in merged)
            self._merged_headers = (theirs, merged, plain)
        return merged

    def _direct_request(
        self,
        call: Call[Any],
        url: httpx.URL,
        headers: list[tuple[bytes, bytes]],
        extensions: dict[str, Any],
    ) -> httpx.Request:
        """The request ``httpx.Request(json=call.json, ...)`` makes, with less work.

        httpx encodes the body with a new JSON encoder, then looks up and adds the
        ``Content-Length``, ``Content-Type`` and ``Host`` headers one at a time, and
        normalises every header twice. Here the body is encoded with one encoder
        configured as httpx's, and the headers are copied from ones made once, in the
        order httpx gives them (see ``_header_forms``). Only for merged headers that hold
        none of those (``_headers_for``'s ``plain``).

        Raises:
            TypeError: If the body cannot be encoded as JSON.
            ValueError: If the body holds NaN or an infinity, or a lone surrogate.
        """
        json_form, empty_form, bare_form = self._header_forms(url, headers)
        if call.json is not None:
            body = _JSON.encode(call.json).encode("utf-8")
            form = json_form
        else:
            body = b""
            form = empty_form if call.method in ("POST", "PUT", "PATCH") else bare_form
        sent = _SentHeaders(form)  # a copy of its list: the kept form is never changed
        if call.json is not None:
            # Replaced where it stands, second to last (see _header_forms): what
            # sent["Content-Length"] = ... does after a scan of the list for it.
            length = str(len(body)).encode("ascii")
            sent._list[-2] = (b"Content-Length", b"content-length", length)
        # The encoding httpx works out from all the headers on first use (reading them
        # for the cookie jar, on every response): the form's, as only ASCII digits differ.
        sent.encoding = form.encoding
        request = httpx.Request(
            call.method,
            url,
            params=call.params,
            stream=httpx.ByteStream(body),
            extensions=extensions,
        )
        request.headers = sent
        # What request.read() sets for a body in memory (request.content), without its
        # generic checks of the stream: this one is the body, whole.
        request._content = body
        return request

    def _header_forms(
        self, url: httpx.URL, headers: list[tuple[bytes, bytes]]
    ) -> tuple[httpx.Headers, httpx.Headers, httpx.Headers]:
        """The headers of a direct request, made once for ``headers`` (a merged list).

        In the order httpx gives them: for a JSON body, ``Host``, the merged headers,
        ``Content-Length`` (a stand-in, replaced for each body) and ``Content-Type``; for
        a POST, PUT or PATCH without one, ``Host``, ``Content-Length: 0`` (httpx puts it
        up front) and the merged headers; else ``Host`` and the merged headers.
        ``httpx.Request`` copies an ``httpx.Headers`` as it is, where it normalises a
        list of pairs one by one: a third of building a request.
        """
        kept = self._header_templates
        if kept is not None and kept[0] is headers:
            return kept[1]
        host = self._host_header
        if host is None:
            host = self._host_header = url.netloc
        forms = (
            httpx.Headers(
                [
                    (b"Host", host),
                    *headers,
                    (b"Content-Length", b"0"),
                    (b"Content-Type", b"application/json"),
                ]
            ),
            httpx.Headers([(b"Host", host), (b"Content-Length", b"0"), *headers]),
            httpx.Headers([(b"Host", host), *headers]),
        )
        # One tuple, swapped whole: threads that race here each get a consistent one.
        self._header_templates = (headers, forms)
        return forms

    def _attempt(
        self, request: httpx.Request, deadline: float | None, options: Options | None = None
    ) -> _deadline.Attempt:
        """Start an attempt at ``request``: its deadline, and its ``timeout`` extension.

        Each attempt has its own deadline (a retry starts afresh), the largest of
        the timeouts away (the call's own ``timeout=`` if it has one, else the
        client's), and never past the caller's ``deadline`` (a
        time on the SDK clock), except that it gets at least ``MIN_ATTEMPT_TIME``:
        the last poll of ``wait_for_translation``, made at its deadline, is a real look.
        """
        left = None
        if deadline is not None:
            left = max(deadline - _clock.current().monotonic(), MIN_ATTEMPT_TIME)
        if options is not None and options.timeout is not None:
            plan = options.plan
            if plan is None:  # kept on the options: the retries reuse it
                plan = options.plan = _deadline.Plan(options.timeout)
        else:
            plan = self._attempt_plan
            if plan is None or plan.timeout is not self.timeout:  # a with_options copy's
                plan = self._attempt_plan = _deadline.Plan(self.timeout)
        attempt = _deadline.Attempt(plan, left)
        request.extensions["timeout"] = attempt.timeouts
        return attempt

    def _body_reader(self, response: httpx.Response, attempt: _deadline.Attempt) -> BodyReader:
        limit = MAX_BODY_BYTES if response.is_success else MAX_ERROR_BODY_BYTES
        return BodyReader(response, limit, attempt)

    def _connection_error(
        self, call: Call[Any], exc: Exception, attempt: int, started: float
    ) -> LingodocError:
        """Return the error to raise for an exception of httpx, chained to a safe copy of it."""
        self._log(call, type(exc).__name__, attempt, started)
        detail = self._redact(str(exc)) or type(exc).__name__
        error: LingodocError
        if isinstance(exc, RuntimeError):
            error = self._runtime_error(call, detail)
        elif isinstance(exc, httpx.TimeoutException):
            error = APITimeoutError(f"{call.description} timed out: {detail}")
        else:
            error = APIConnectionError(f"{call.description} failed: {detail}")
        # The httpx exception holds the request, and so the Authorization
        # header: chain a copy of the same type and message without it.
        try:
            cause: BaseException = type(exc)(detail)
        except TypeError:
            cause = RuntimeError(f"{type(exc).__name__}: {detail}")
        error.__cause__ = cause
        error.__suppress_context__ = True
        return error

    def _runtime_error(self, call: Call[Any], detail: str) -> LingodocError:
        """The error for a RuntimeError out of httpx: a closed client or a foreign event loop.

        The SDK never closes its own pool while an attempt is in flight, so a closed client
        here is one passed in.
        """
        if self._shared.http.is_closed:
            return LingodocError(
                f"{call.description} could not be sent: the http_client passed to "
                f"{type(self).__name__} has been closed"
            )
        if "loop" in detail:
            # "Event loop is closed", "... attached to a different loop": an http_client
            # passed in that had opened connections in another event loop.
            return LingodocError(
                f"{call.description} could not be sent: {detail}: the http_client passed to "
                f"{type(self).__name__} holds connections of another event loop; create it "
                "inside the loop that uses it"
            )
        return LingodocError(f"{call.description} could not be sent: {detail}")

    def _read_response(
        self,
        call: Call[T],
        response: httpx.Response,
        body: bytes,
        attempt: int,
        started: float,
    ) -> T | Failure:
        """Return the result of a response, or the error it reports.

        The error is returned, not raised: the frames that read the body hold it
        as the server sent it (see ``raise_scrubbed``).
        """
        try:
            return self._parse_response(call, response, body, attempt, started)
        except APIError as exc:
            return Failure(exc)

    def _parse_response(
        self,
        call: Call[T],
        response: httpx.Response,
        body: bytes,
        attempt: int,
        started: float,
    ) -> T:
        status_code = response.status_code
        self._log(call, status_code, attempt, started)
        headers = response.headers
        now = _clock.current().time()
        # Only read here: the RateLimit model is made if someone asks for it.
        rate_limit = _lazy.parse_rate_limit(headers, now)
        if rate_limit is not None:
            self._shared.rate_limit = rate_limit
        if len(body) > MAX_BODY_BYTES:
            raise UnexpectedResponse(
                f"the response body is larger than {MAX_BODY_BYTES:,} bytes",
                status_code=status_code,
                rate_limit=_lazy.rate_limit_model(rate_limit),
                request_id=_envelope.request_id(headers, self._key_mask),
            )
        # The quick way first (translate, translate_batch): it returns a result only where
        # unwrap and call.parse would return an equal one, so any error is theirs.
        read_body = call.read_body
        result = None if read_body is None or not 200 <= status_code < 300 else read_body(body)
        if result is None:
            data = _envelope.unwrap(
                status_code, headers, body, rate_limit=rate_limit, now=now, redact=self._key_mask
            )
        # The body was read through a BodyReader (from aiter_raw/iter_raw), so httpx holds
        # none: give the response the body read (decompressed, as httpx's own read keeps
        # it), and result.http_response.content, .text and .json() work without a request.
        response._content = body
        # Nor the connection: its stream (httpcore's pool) and network stream (the socket)
        # would keep them open as long as a result is kept, past a client dropped unclosed.
        response.stream = _EMPTY_STREAM
        response.extensions.pop("network_stream", None)
        origin = _lazy.Origin(rate_limit, response, self._key_mask)
        if result is not None:
            _lazy.set_origin(result, origin)  # type: ignore[arg-type]  # T is a _Result here
            return result
        try:
            return call.parse(data, origin)
        except ShapeError as exc:
            shape_error = exc
        # Raised outside the except block, so no chained exception keeps the data.
        raise UnexpectedResponse(
            self._redact(str(shape_error)),
            body=_envelope.excerpt(json.dumps(shape_error.data, default=str), self._redact),
            status_code=status_code,
            rate_limit=_lazy.rate_limit_model(rate_limit),
            request_id=_envelope.request_id(headers, self._redact),
        )

    def _log(self, call: Call[Any], outcome: object, attempt: int, started: float) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s -> %s in %.1f ms (attempt %d)",
                call.description,
                outcome,
                (time.perf_counter() - started) * 1000,
                attempt,
            )


__all__ = ["BaseClient", "Call", "Failure", "Waiter", "call_options", "mask"]
