"""What Client and AsyncClient share: configuration, and all logic that does no I/O.

The two clients only send, read, sleep and close; building requests, reading
responses, checking arguments and deciding when a wait is over live here, so
the sync and async paths cannot drift apart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc import _bulk, _clock, _envelope, _lazy, _validation
from lingodoc._body import ACCEPT_ENCODING, BodyReader
from lingodoc._call import (
    Call,
    Failure,
    ShapeError,
    batch_call,
    model_parser,
    parse_data,
    parse_documents,
)
from lingodoc._constants import (
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
    LingodocError,
    TranslationFailed,
    UnexpectedResponse,
    WaitTimeout,
)
from lingodoc._logging import configure_from_env, logger
from lingodoc._redaction import KeyMask, mask, raise_scrubbed, watch_http_logs
from lingodoc._version import __version__

if TYPE_CHECKING:
    from lingodoc._models import (
        BatchTranslation,
        Document,
        RateLimit,
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

USER_AGENT = (
    f"lingodoc-python/{__version__} httpx/{httpx.__version__} "
    f"python/{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
)


class _Shared(Generic[HttpClientT]):
    """What a client shares with its ``with_options`` copies: the HTTP client and live state.

    Closing is safe while calls are in flight: every attempt enters (refused once closed)
    and leaves, and the pool is closed when the client is closed and no attempt is left
    in it, by whichever of the two comes last. So no socket is ever closed under an
    attempt that is using it (in threads, its descriptor could be reused by another
    connection and read from), and none opened by an attempt already in flight outlives
    it. This class is an AsyncClient's, without a lock: the pool it closes is its own,
    and so bound to one event loop, one thread (``_check_open`` refuses the others).
    ``_ThreadShared`` is a Client's.
    """

    def __init__(self, http: HttpClientT, *, owned: bool) -> None:
        self.http: HttpClientT = http
        self.owned = owned
        # An AsyncClient's connections belong to the event loop that opened them, the
        # first it is used in: those of httpx's own transport (a custom one, such as
        # httpx.MockTransport or the emulator's, may hold none).
        self.loop_bound = isinstance(http, httpx.AsyncClient) and (
            owned or isinstance(getattr(http, "_transport", None), httpx.AsyncHTTPTransport)
        )
        # Kept, not a weak reference, so that a new loop at the same address is never
        # taken for it.
        self.loop: object | None = None
        self.closed = False
        self.rate_limit: RateLimit | None = None
        self._in_flight = 0
        self._pool_closing = False
        self._lock = threading.Lock()  # taken by _ThreadShared, and to bind a loop

    def enter(self) -> bool:
        """Count an attempt in flight; ``False`` (and not counted) if the client is closed."""
        if self.closed:
            return False
        self._in_flight += 1
        return True

    def leave(self) -> bool:
        """End an attempt; ``True`` if the caller must now close the pool (it was the last)."""
        self._in_flight -= 1
        return self.closed and self._take_pool_close()

    def close(self, *, loop_gone: bool = False) -> bool:
        """Mark the client closed; ``True`` if the caller must now close the pool.

        Args:
            loop_gone: The loop the connections belong to is closed: no attempt still
                counted in flight can ever end, and the sockets are closed here first
                (see ``_close_dead_sockets``).
        """
        self.closed = True
        if loop_gone:
            self._in_flight = 0
        take = self._take_pool_close()
        if take and loop_gone:
            _close_dead_sockets(self.http)
        return take

    def _take_pool_close(self) -> bool:
        if self.closed and self._in_flight == 0 and self.owned and not self._pool_closing:
            self._pool_closing = True
            return True
        return False

    def use_loop(self, loop: object) -> bool:
        """Bind an AsyncClient to ``loop`` if it is not yet bound; whether it is bound to it."""
        with self._lock:
            if self.loop is None:
                self.loop = loop
            return self.loop is loop


class _ThreadShared(_Shared[HttpClientT]):
    """A Client's shared state: the same, each step under the lock, for threads."""

    # enter and leave run on every attempt: written out, not through super().

    def enter(self) -> bool:
        """Count an attempt in flight; ``False`` (and not counted) if the client is closed."""
        with self._lock:
            if self.closed:
                return False
            self._in_flight += 1
            return True

    def leave(self) -> bool:
        """End an attempt; ``True`` if the caller must now close the pool (it was the last)."""
        with self._lock:
            self._in_flight -= 1
            return self.closed and self._take_pool_close()

    def close(self, *, loop_gone: bool = False) -> bool:
        """Mark the client closed; ``True`` if the caller must now close the pool."""
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
    """Whether ``loop`` (from ``running_loop``) is an event loop that has been closed."""
    is_closed = getattr(loop, "is_closed", None)
    return bool(is_closed()) if callable(is_closed) else False


def _close_dead_sockets(http: httpx.Client | httpx.AsyncClient) -> None:
    """Close the sockets of ``http``'s pooled connections, whose asyncio event loop is closed.

    Such a connection can never be used again, nor closed the usual way: closing an
    asyncio transport schedules its last step (closing the socket) on its loop, and a
    closed loop refuses to. So each transport is closed as far as it goes (``abort``),
    and that last step is run here. This reaches into httpx, httpcore and anyio objects
    (``tests/reliability/test_lifecycle_sockets.py`` fails if they change shape); it is best
    effort: whatever it cannot reach stays open until garbage collected.
    """
    if not isinstance(http, httpx.AsyncClient):
        return
    import asyncio

    mounts: dict[Any, Any] = getattr(http, "_mounts", {})
    for transport in (getattr(http, "_transport", None), *mounts.values()):
        pool = getattr(transport, "_pool", None)  # httpx -> its httpcore pool
        for connection in getattr(pool, "connections", ()):
            # Through proxy connections to the HTTP/1.1 or HTTP/2 connection, then its
            # network stream (httpcore's), anyio's stream, TLS layers, the asyncio transport.
            for _ in range(8):
                inner = getattr(connection, "_connection", None)
                if inner is None:
                    break
                connection = inner
            stream = getattr(getattr(connection, "_network_stream", None), "_stream", None)
            for _ in range(8):
                inner = getattr(stream, "transport_stream", None)
                if inner is None:
                    break
                stream = inner
            socket_transport = getattr(stream, "_transport", None)
            if not isinstance(socket_transport, asyncio.Transport):
                continue
            # abort() stops at "Event loop is closed", when it would schedule the last step.
            with contextlib.suppress(RuntimeError):
                socket_transport.abort()
            finish = getattr(socket_transport, "_call_connection_lost", None)
            if callable(finish) and getattr(socket_transport, "_sock", None) is not None:
                with contextlib.suppress(Exception):  # best effort; it closes the socket first
                    finish(None)


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
    if not key.isprintable() or any(c.isspace() for c in key) or not key.isascii():
        return ConfigurationError(
            f"api_key (or {API_KEY_ENV}) holds spaces or characters that cannot be "
            "sent in a header; check it was copied whole"
        )
    return key


def _check_base_url(base_url: object) -> str:
    if base_url is not None and not isinstance(base_url, str):
        raise ConfigurationError(f"base_url must be a str, not {type(base_url).__name__}")
    raw = _resolve(base_url, "base_url", BASE_URL_ENV)
    problem = None
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        problem = str(exc)
    if problem is not None:
        # Raised outside the except block, as in _headers: a half-built httpx.URL in a
        # chained context would break a traceback shown with its locals.
        raise ConfigurationError(f"base_url {raw!r} is not a valid URL: {problem}")
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"base_url must be an absolute https:// URL such as "
            f"'https://api.example.com/v1', not {raw!r} (from base_url or {BASE_URL_ENV})"
        )
    if url.scheme == "http" and not is_loopback(url.host):
        raise ConfigurationError(
            f"base_url {raw!r} uses http://, which would send the API key in clear text; "
            "use https:// (http:// is allowed only for localhost and loopback addresses)"
        )
    if "?" in raw or "#" in raw:
        raise ConfigurationError(f"base_url must not have a query or fragment: {raw!r}")
    return str(url).rstrip("/")


def _check_timeout(timeout: object) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if timeout is None:
        return httpx.Timeout(None)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
        seconds = math.nan
    else:
        seconds = float(timeout)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(
            f"timeout must be a positive number of seconds, an httpx.Timeout or None, "
            f"not {timeout!r}"
        )
    return httpx.Timeout(seconds)


def _headers(default_headers: Mapping[str, str] | None) -> httpx.Headers:
    headers = httpx.Headers(
        {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING, "User-Agent": USER_AGENT}
    )
    try:
        headers.update(default_headers or {})
    except (TypeError, ValueError, AttributeError) as exc:
        # UnicodeEncodeError is a ValueError: header values must be ASCII.
        problem = str(exc)
    else:
        return headers
    # Raised outside the except block, so that no chained context keeps httpx's frames
    # (a half-built Headers, whose repr fails, breaks a traceback shown with its locals).
    raise ConfigurationError(f"default_headers cannot be sent as HTTP headers: {problem}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_max_retries(max_retries: object) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigurationError(f"max_retries must be an int >= 0, not {max_retries!r}")
    return max_retries


def _check_relative_path(path: object) -> str:
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    route = path.split("?", 1)[0]
    refused = (
        "://" in route
        or route.startswith(("//", "\\", "/\\"))
        or any(part in (".", "..") for part in route.replace("\\", "/").split("/"))
    )
    if refused:
        raise ValueError(
            f"path must be relative to base_url, such as '/documents', not {path!r}: "
            "requests never leave base_url, so the API key never goes to another host"
        )
    return path if path.startswith("/") else f"/{path}"


WaitError = TypeVar("WaitError", TranslationFailed, WaitTimeout)


class Waiter:
    """The rules of ``wait_for_translation``, apart from the polling and sleeping."""

    def __init__(
        self,
        poll_call: Call[TranslationStatus],
        *,
        poll_interval: float,
        timeout: float | None,
        on_progress: Callable[[TranslationStatus], object] | None,
        redact: Callable[[str], str],
    ) -> None:
        if not _is_number(poll_interval):
            raise TypeError(f"poll_interval must be a number, not {poll_interval!r}")
        if not (math.isfinite(poll_interval) and poll_interval > 0):
            raise ValueError(f"poll_interval must be a positive number, not {poll_interval!r}")
        if timeout is not None and not _is_number(timeout):
            raise TypeError(f"timeout must be a number or None, not {timeout!r}")
        if timeout is not None and not timeout >= 0:  # also refuses NaN
            raise ValueError(f"timeout must be None or >= 0 seconds, not {timeout!r}")
        if on_progress is not None and not callable(on_progress):
            raise TypeError("on_progress must be callable")
        self.poll_call = poll_call
        self.poll_interval = float(poll_interval)
        self.timeout = timeout
        self.on_progress = on_progress
        self.redact = redact
        self.last: TranslationStatus | None = None
        self.deadline = None if timeout is None else _clock.current().monotonic() + timeout

    def finished(self, status: TranslationStatus) -> TranslationStatus | Failure | None:
        """Record a poll's status and say whether the wait is over.

        Returns:
            The status if it is completed, a ``Failure``
            holding ``TranslationFailed`` if the translation failed, else ``None``.
        """
        self.last = status
        if self.on_progress is not None:
            self.on_progress(status)
        if status.status == _lazy.TranslationState.COMPLETED:
            return status
        if status.status == _lazy.TranslationState.FAILED:
            return Failure(self._masked(TranslationFailed(status)))
        return None

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
            # A reset of 0 must not turn into a tight loop of refused polls.
            delay = min(max(wanted, min(MIN_RATE_LIMIT_WAIT, self.poll_interval)), MAX_POLL_WAIT)
        if self.deadline is None:
            return delay
        remaining = self.deadline - _clock.current().monotonic()
        if remaining <= 0 or (wanted is not None and wanted > remaining):
            assert self.timeout is not None
            return Failure(self._masked(WaitTimeout(self.last, self.timeout)))
        return min(delay, remaining)

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
            delay.error.__cause__ = error
            delay.error.__suppress_context__ = True
        return delay

    def _masked(self, error: WaitError) -> WaitError:
        # The message quotes the translation id the server sent, and the status is
        # what it sent: either may echo the key, and an exception must never hold it.
        error.args = tuple(self.redact(a) if isinstance(a, str) else a for a in error.args)
        if error.status is not None:
            changes = {
                name: self.redact(value)
                for name, value in error.status
                if isinstance(value, str) and self.redact(value) != value
            }
            if changes:
                error.status = error.status.model_copy(update=changes)
        return error


class BaseClient(Generic[HttpClientT]):
    """Configuration and I/O-free logic shared by `Client` and `AsyncClient`."""

    _http_client_type: type[HttpClientT]
    base_url: str
    """The service address, up to and including ``/v1``, without a trailing slash."""
    timeout: httpx.Timeout
    """The timeout of each attempt."""
    max_retries: int
    """Extra attempts after a failure that may pass."""
    _api_key: str
    _headers: httpx.Headers

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: HttpClientT | None = None,
    ) -> None:
        configure_from_env()
        refused = self._use_api_key(api_key)
        del api_key  # out of the locals that a traceback through __init__ may show
        if refused is not None:
            raise_scrubbed(refused)
        self.base_url = _check_base_url(base_url)
        self.timeout = _check_timeout(timeout)
        self.max_retries = _check_max_retries(max_retries)
        if http_client is not None and not isinstance(http_client, self._http_client_type):
            raise ConfigurationError(
                f"http_client must be an {self._http_client_type.__module__}."
                f"{self._http_client_type.__qualname__}, not {type(http_client).__name__}"
            )
        self._headers = _headers(default_headers)
        # Set last, and case-insensitively, so no default header can replace the key.
        self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._key_mask = KeyMask(self._api_key)
        watch_http_logs(self._key_mask)
        shared = _Shared if self._http_client_type is httpx.AsyncClient else _ThreadShared
        self._shared: _Shared[HttpClientT] = shared(
            self._new_http_client() if http_client is None else http_client,
            owned=http_client is None,
        )
        self._view_closed = False
        self._is_copy = False
        # Caches for building requests (see _build_request); copies share them.
        self._urls: dict[str, httpx.URL] = {}
        self._merged_headers: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]] = ([], [])
        self._extensions: tuple[httpx.Timeout, dict[str, Any]] = (self.timeout, {})

    def _use_api_key(self, api_key: object) -> ConfigurationError | None:
        """Keep the key to send; return the error that refuses it instead (see ``_api_key``)."""
        key = _api_key(api_key)
        if isinstance(key, ConfigurationError):
            return key
        self._api_key = key
        return None

    def _new_http_client(self) -> HttpClientT:
        return self._http_client_type(
            timeout=self.timeout, limits=DEFAULT_LIMITS, follow_redirects=False
        )

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state of the most recent response that reported one, or ``None``."""
        return self._shared.rate_limit

    @property
    def is_closed(self) -> bool:
        """Whether this client (or the client it was copied from) has been closed."""
        return self._view_closed or self._shared.closed

    def __repr__(self) -> str:
        # getattr: a traceback shown with its locals reprs a client whose __init__ failed.
        base_url, key = getattr(self, "base_url", None), getattr(self, "_api_key", "")
        return f"{type(self).__name__}(base_url={base_url!r}, api_key={mask(key)!r})"

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
            timeout: Seconds or an ``httpx.Timeout``; ``None`` keeps this
                client's timeout.
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
            copy.timeout = _check_timeout(timeout)
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
        self, text: str, source_language: str, target_language: str, style: str | None
    ) -> Call[TextTranslation]:
        body = {
            "text": _validation.text(text),
            "source_language": _validation.language(source_language, "source_language"),
            "target_language": _validation.language(target_language, "target_language"),
        }
        if _validation.optional(style, "style", str) is not None:
            body["style"] = style  # type: ignore[assignment]
        return Call("POST", "/translate", model_parser(_lazy.TextTranslation), json=body)

    def _translate_batch_call(
        self, texts: Sequence[str], source_language: str, target_language: str
    ) -> Call[BatchTranslation]:
        return batch_call(
            _validation.texts(texts),
            _validation.language(source_language, "source_language"),
            _validation.language(target_language, "target_language"),
        )

    def _bulk_plan(
        self,
        texts: Sequence[str],
        source_language: str,
        target_language: str,
        batch_size: int,
        max_concurrency: int,
    ) -> _bulk.Bulk:
        """Check the arguments of ``translate_many`` and plan its batches.

        Raises:
            LingodocError: If the client is closed.
            TypeError: If ``texts`` is not a list of strings, or a size is not an int.
            ValueError: If ``texts`` is empty or a size is below 1.
            InvalidLanguage: If a code is malformed.
        """
        self._check_open()
        checked = _validation.texts(texts)
        source = _validation.language(source_language, "source_language")
        target = _validation.language(target_language, "target_language")
        return _bulk.Bulk(
            checked,
            batch_size=_validation.positive_int(batch_size, "batch_size"),
            max_concurrency=_validation.positive_int(max_concurrency, "max_concurrency"),
            make_call=lambda chunk: batch_call(chunk, source, target),
            rate_limit=self.rate_limit,
        )

    def _translate_document_call(
        self,
        document_id: str,
        target_language: str,
        style: str | None,
        use_translation_memory: bool | None,
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
        return Call("POST", path, model_parser(_lazy.TranslationJob), json=body, idempotent=False)

    def _get_translation_call(self, translation_id: str) -> Call[TranslationStatus]:
        path = f"/translations/{_validation.path_segment(translation_id, 'translation_id')}"
        return Call("GET", path, model_parser(_lazy.TranslationStatus))

    def _waiter(
        self,
        job_or_id: TranslationJob | str,
        poll_interval: float,
        timeout: float | None,
        on_progress: Callable[[TranslationStatus], object] | None,
    ) -> Waiter:
        translation_id = (
            job_or_id.translation_id if isinstance(job_or_id, _lazy.TranslationJob) else job_or_id
        )
        return Waiter(
            self._get_translation_call(translation_id),
            poll_interval=poll_interval,
            timeout=timeout,
            on_progress=on_progress,
            redact=self._key_mask,
        )

    def _list_documents_call(self) -> Call[list[Document]]:
        return Call("GET", "/documents", parse_documents)

    def _raw_call(
        self, method: str, path: str, json: Any, params: Mapping[str, Any] | None
    ) -> Call[Any]:
        if not isinstance(method, str) or not method.isalpha():
            raise ValueError(f"method must be an HTTP method such as 'GET', not {method!r}")
        method = method.upper()
        path = _check_relative_path(path)
        return Call(
            method, path, parse_data, json=json, params=params,
            idempotent=method in IDEMPOTENT_METHODS,
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
            if http.params or http.cookies:
                return http.build_request(
                    call.method,
                    url,
                    json=call.json,
                    params=call.params,
                    headers=self._headers,
                    extensions=extensions,
                )
            return httpx.Request(
                call.method,
                url,
                json=call.json,
                params=call.params,
                headers=self._headers_for(http),
                extensions=extensions,
            )
        except httpx.InvalidURL as exc:
            raise ValueError(f"{call.description} is not a valid request path: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{call.description} cannot be sent: {exc}") from None

    def _headers_for(self, http: httpx.Client | httpx.AsyncClient) -> list[tuple[bytes, bytes]]:
        """The http client's headers with ours on top, as ``build_request`` merges them."""
        theirs = http.headers.raw
        seen, merged = self._merged_headers
        if theirs != seen or not merged:
            ours = self._headers.raw
            replaced = {name.lower() for name, _ in ours}
            merged = [(name, value) for name, value in theirs if name.lower() not in replaced]
            merged += ours
            self._merged_headers = (theirs, merged)
        return merged

    def _body_reader(self, response: httpx.Response) -> BodyReader:
        limit = MAX_BODY_BYTES if response.is_success else MAX_ERROR_BODY_BYTES
        return BodyReader(response, limit, self.timeout.read)

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
        self._log(call, response.status_code, attempt, started)
        now = _clock.current().time()
        rate_limit = _lazy.parse_rate_limit(response.headers.raw, now)
        if rate_limit is not None:
            self._shared.rate_limit = rate_limit
        if len(body) > MAX_BODY_BYTES:
            raise UnexpectedResponse(
                f"the response body is larger than {MAX_BODY_BYTES:,} bytes",
                status_code=response.status_code,
                rate_limit=rate_limit,
                request_id=_envelope.request_id(response.headers, self._redact),
            )
        data = _envelope.unwrap(
            response.status_code,
            response.headers,
            body,
            rate_limit=rate_limit,
            now=now,
            redact=self._redact,
        )
        try:
            return call.parse(data, rate_limit)
        except ShapeError as exc:
            shape_error = exc
        # Raised outside the except block, so no chained exception keeps the data.
        raise UnexpectedResponse(
            self._redact(str(shape_error)),
            body=_envelope.excerpt(json.dumps(shape_error.data, default=str), self._redact),
            status_code=response.status_code,
            rate_limit=rate_limit,
            request_id=_envelope.request_id(response.headers, self._redact),
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


__all__ = ["BaseClient", "Call", "Failure", "Waiter", "mask"]
