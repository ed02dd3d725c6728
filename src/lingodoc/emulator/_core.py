"""The emulator's state and request handling, shared by the in-process transport and the server.

Everything here is a function of the request and the emulator's state: :meth:`Emulator.handle`
takes (method, target, headers, body) and returns a :class:`Reply`. The faces (``_transport``
and ``_server``) only move bytes and carry out the two faults that are about the connection
rather than the answer: dropping it and answering late.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import math
import secrets
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol
from urllib.parse import unquote, urlsplit

import httpx

from lingodoc import _clock
from lingodoc.emulator._translate import SUPPORTED_LANGUAGES, translate_text

if TYPE_CHECKING:
    import lingodoc
    from lingodoc.emulator._transport import EmulatorTransport

Permission = Literal["read_only", "read_write", "full_access"]
"""The permission levels of an API key, for :meth:`Emulator.create_key`.

``"read_only"`` may list documents and read translations; ``"read_write"`` and
``"full_access"`` may also start translations (the two are the same for the endpoints
emulated).
"""
FaultKind = Literal["rate_limit", "server_error", "disconnect", "slow"]
"""The faults :meth:`Emulator.inject` can make the next requests meet.

``"rate_limit"`` (a 429), ``"server_error"`` (a 5xx), ``"disconnect"`` (the connection drops
with no answer) and ``"slow"`` (the answer comes late).
"""

MAX_TEXT_CHARS = 10_000
"""Longest text accepted by ``/translate`` and per item of ``/translate/batch``."""
MAX_BATCH_ITEMS = 100
"""Most texts accepted by one ``/translate/batch`` request."""
PLAN_LIMITS: dict[str, int] = {"pro": 1_000, "ultra": 10_000, "team": 5_000, "business": 20_000}
"""Requests per hour and key, per plan (per seat for ``team`` and ``business``)."""

_WINDOW = 3600
_PERMISSIONS = ("read_only", "read_write", "full_access")
_FAULTS = ("rate_limit", "server_error", "disconnect", "slow")
_SERVER_ERRORS = {
    500: "INTERNAL_ERROR",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}


class Clock(Protocol):
    """What the emulator needs of a clock, for ``Emulator(clock=...)``.

    ``lingodoc.testing.FakeClock`` is one; any object with these three methods will do.
    """

    def time(self) -> float:
        """Return the wall-clock time.

        Returns:
            Unix time in seconds: jobs, key expiry and rate-limit windows all follow it.
        """

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds`` (a ``slow`` fault's delay, in-process).

        Args:
            seconds: How long, 0 or more.
        """

    async def async_sleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop.

        Args:
            seconds: How long, 0 or more.
        """


class RequestRecord(NamedTuple):
    """One request the emulator saw, as kept in :attr:`Emulator.requests`.

    Attributes:
        method: The HTTP method.
        path: The path as sent, percent-encoded, without the query.
        status: The status answered, or ``None`` when the connection was dropped.
    """

    method: str
    path: str
    status: int | None


@dataclass(frozen=True)
class Reply:
    """The answer of :meth:`Emulator.handle`, for a face to send.

    Attributes:
        status: The HTTP status (0 when the connection is to be dropped).
        headers: The response headers, without ``Content-Length``.
        body: The JSON body.
        delay: Seconds to wait before answering (a ``slow`` fault).
        disconnect: Whether to drop the connection without answering instead.
    """

    status: int
    headers: dict[str, str]
    body: bytes
    delay: float = 0.0
    disconnect: bool = False


@dataclass(frozen=True)
class EmulatorServer:
    """A running emulator server, as yielded by :meth:`Emulator.serve`.

    Attributes:
        base_url: The address up to and including ``/v1``, for ``LINGODOC_BASE_URL``.
        api_key: The emulator's ready-made Full Access key, for ``LINGODOC_API_KEY``.
        host: The address the server listens on.
        port: The port it listens on (the one picked by the system when ``port=0``).
        emulator: The emulator behind it, to add keys, documents and faults while it runs.
    """

    base_url: str
    api_key: str = field(repr=False)
    host: str
    port: int
    emulator: Emulator


class _Fail(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


@dataclass
class _Key:
    name: str
    permission: str
    expires_at: float | None
    revoked: bool = False
    window_start: float = -math.inf
    used: int = 0


@dataclass
class _Job:
    translation_id: str
    document_id: str
    target_language: str
    queued: bool
    runs_from: float  # when it leaves pending
    duration: float
    finishes_at: float
    failure: str | None


@dataclass
class _Fault:
    kind: str
    times: int
    method: str | None
    path: str | None
    status: int
    retry_after: int
    delay: float


@dataclass
class _State:
    keys: dict[str, _Key] = field(default_factory=dict)
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, _Job] = field(default_factory=dict)
    faults: list[_Fault] = field(default_factory=list)
    job_failures: list[tuple[str | None, str]] = field(default_factory=list)
    log: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=10_000))


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _in_window(key: _Key, now: float) -> bool:
    return now < key.window_start + _WINDOW


def _number(name: str, value: object, *, whole: bool = False, minimum: float = 0.0) -> Any:
    """Return ``value`` if it is a finite number (an int if ``whole``) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        kind = "an int" if whole else "a number"
        raise TypeError(f"{name} must be {kind}, not {type(value).__name__}")
    if not (math.isfinite(value) and value >= minimum):
        least = f" of at least {minimum:g}" if minimum > -math.inf else ""
        raise ValueError(f"{name} must be a finite number{least}, not {value!r}")
    return value


def _is_loopback(host: str) -> bool:
    try:
        return host.lower() == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _mask(key: str) -> str:
    return f"ending in '{key[-4:]}'" if len(key) >= 12 else "(too short to be a key)"


def _field(body: Mapping[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    value = body.get(name)
    if value is None:
        if required:
            raise _Fail(400, "VALIDATION_ERROR", f"Field '{name}' is required.")
        return None
    if not isinstance(value, kind):
        kinds = {str: "a string", list: "an array of strings", bool: "a boolean"}
        raise _Fail(400, "VALIDATION_ERROR", f"Field '{name}' must be {kinds[kind]}.")
    return value


def _language(body: Mapping[str, Any], name: str) -> str:
    code: str = _field(body, name, str)
    if code not in SUPPORTED_LANGUAGES:
        raise _Fail(
            400,
            "INVALID_LANGUAGE",
            f"Field '{name}': {code[:20]!r} is not a supported language "
            "(use a lower-case ISO 639-1 code such as 'en' or 'de').",
        )
    return code


def _check_length(text: str, name: str) -> None:
    if len(text) > MAX_TEXT_CHARS:
        raise _Fail(
            400,
            "TEXT_TOO_LONG",
            f"Field '{name}' has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}.",
        )


class Emulator:
    """An in-memory stand-in for the lingodoc service (see the package documentation).

    Attributes:
        base_url: The base URL for in-process use; the transport ignores its host.
        api_key: A ready-made Full Access key.
        rate_limit: Requests per hour and key; may be changed at any time.
        reset_style: How ``X-RateLimit-Reset`` is sent: ``"seconds"`` until the window resets,
            or the ``"unix"`` time at which it does.
        job_duration: Seconds a document translation spends in ``processing``.
        queue_time: Seconds a new job waits in ``pending`` first (0: none, as in the spec).
    """

    base_url = "https://emulator.lingodoc.test/v1"

    def __init__(
        self,
        *,
        plan: str = "pro",
        seats: int = 1,
        rate_limit: int | None = None,
        reset_style: Literal["seconds", "unix"] = "seconds",
        job_duration: float = 6.0,
        queue_time: float = 0.0,
        clock: Clock | None = None,
        api_key: str | None = None,
        seed_documents: bool = True,
    ) -> None:
        """Create an emulator with one Full Access key and, by default, two documents.

        Args:
            plan: ``"pro"``, ``"ultra"``, ``"team"`` or ``"business"``; sets the rate limit.
            seats: Seats of a ``team`` or ``business`` plan, which multiply its limit.
            rate_limit: Requests per hour and key, overriding the plan's figure.
            reset_style: ``"seconds"`` or ``"unix"``, for ``X-RateLimit-Reset``.
            job_duration: Seconds a document translation takes once it runs.
            queue_time: Seconds a new job is ``pending`` before it runs.
            clock: A clock to pin; by default the SDK's clock in force is read at each use,
                so ``lingodoc.testing.fake_clock()`` moves jobs and rate-limit windows.
            api_key: The value of the ready-made key; random by default.
            seed_documents: Whether to add ``doc_welcome`` and ``doc_handbook``.

        Raises:
            ValueError: On an unknown plan or reset style, or a number out of range.
            TypeError: On a number of the wrong type (``rate_limit`` and ``seats`` are ints).
        """
        if plan not in PLAN_LIMITS:
            raise ValueError(f"plan must be one of {sorted(PLAN_LIMITS)}, not {plan!r}")
        _number("seats", seats, whole=True, minimum=1)
        per_seat = plan in ("team", "business")
        self.rate_limit = (
            rate_limit if rate_limit is not None else PLAN_LIMITS[plan] * (seats if per_seat else 1)
        )
        self.reset_style = reset_style
        self.job_duration = job_duration
        self.queue_time = queue_time
        self._clock = clock
        self._offset = 0.0
        self._lock = threading.Lock()
        self._state = _State()
        self.api_key = self.create_key("emulator", "full_access", key=api_key)
        if seed_documents:
            self.add_document("doc_welcome", name="Welcome to lingodoc", language="en")
            self.add_document("doc_handbook", name="Employee handbook", language="en")

    def __setattr__(self, name: str, value: Any) -> None:
        # The settings that may be changed at any time are checked whenever they are set.
        if name in ("rate_limit", "job_duration", "queue_time"):
            _number(name, value, whole=name == "rate_limit")
        elif name == "reset_style" and value not in ("seconds", "unix"):
            raise ValueError(f"reset_style must be 'seconds' or 'unix', not {value!r}")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        return (
            f"Emulator(rate_limit={self.rate_limit}, keys={len(self._state.keys)}, "
            f"documents={len(self._state.documents)}, jobs={len(self._state.jobs)})"
        )

    # -- time ---------------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The clock in use: the pinned one, else the SDK's clock in force right now."""
        return self._clock if self._clock is not None else _clock.current()

    def _wall(self) -> float:
        # Wall time, not monotonic time: the real clock and a FakeClock (which starts at the
        # real time) agree on it, so a job or window survives a switch from one to the other.
        return self.clock.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Move the emulator's time forward, for jobs, expiry and rate-limit windows.

        Args:
            seconds: How far; adds to whatever the clock itself does.

        Raises:
            ValueError: If ``seconds`` is negative or not finite.
        """
        _number("seconds", seconds)
        with self._lock:
            self._offset += seconds

    # -- keys and documents -------------------------------------------------------------------

    def create_key(
        self,
        name: str,
        permission: Permission = "read_write",
        expires_at: datetime | float | None = None,
        *,
        key: str | None = None,
    ) -> str:
        """Create an API key and return its secret value.

        Args:
            name: A label, used in error messages.
            permission: ``"read_only"``, ``"read_write"`` or ``"full_access"``.
            expires_at: When it stops working: a ``datetime`` (naive means UTC) or Unix time.
            key: The secret to use; random (``ld_`` and 32 hex digits) by default.

        Returns:
            The secret, to send as ``Authorization: Bearer <secret>``.

        Raises:
            ValueError: On an unknown permission or a secret already in use.
            TypeError: If ``expires_at`` is neither a ``datetime`` nor a number.
        """
        if permission not in _PERMISSIONS:
            raise ValueError(f"permission must be one of {_PERMISSIONS}, not {permission!r}")
        if isinstance(expires_at, datetime):
            if expires_at.tzinfo is None:
                expires_at = expires_at.replace(tzinfo=timezone.utc)
            expires_at = expires_at.timestamp()
        elif expires_at is not None:
            expires_at = float(_number("expires_at", expires_at, minimum=-math.inf))
        secret = key if key is not None else "ld_" + secrets.token_hex(16)
        with self._lock:
            if secret in self._state.keys:
                raise ValueError("that key already exists")
            self._state.keys[secret] = _Key(name, permission, expires_at)
        return secret

    def revoke_key(self, key: str) -> None:
        """Revoke a key; the next request made with it is refused.

        Requests made with it answer 401 ``UNAUTHORIZED``, as for a key that never existed.

        Args:
            key: The secret, as :meth:`create_key` returned it (or :attr:`api_key`).

        Raises:
            KeyError: If there is no such key.
        """
        with self._lock:
            if key not in self._state.keys:
                raise KeyError(f"no such key {_mask(key)}")
            self._state.keys[key].revoked = True

    def add_document(
        self, document_id: str | None = None, *, name: str = "Untitled document", **fields: Any
    ) -> dict[str, Any]:
        """Add (or replace) a document that can then be listed and translated.

        Args:
            document_id: Its identifier; ``doc_`` and random hex by default.
            name: Its name.
            **fields: Anything else to show in the listing (JSON values).

        Returns:
            A copy of the stored record: ``document_id``, ``name``, ``created_at`` and ``fields``.

        Raises:
            TypeError: If a field is not a JSON value (the listing could not be sent).
        """
        document_id = document_id if document_id is not None else "doc_" + secrets.token_hex(6)
        record = {"document_id": document_id, "name": name, "created_at": _iso(self._wall())}
        record.update(fields)
        try:
            json.dumps(record, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"document fields must be JSON values: {exc}") from None
        with self._lock:
            self._state.documents[document_id] = record
        return dict(record)

    @property
    def documents(self) -> dict[str, dict[str, Any]]:
        """Copies of the documents, by identifier, in the order they were added."""
        with self._lock:
            return {key: dict(value) for key, value in self._state.documents.items()}

    @property
    def translations(self) -> dict[str, dict[str, Any]]:
        """The status record of every translation job as ``GET /translations/{id}`` shows it."""
        with self._lock:
            return {tid: self._job_view(job) for tid, job in self._state.jobs.items()}

    @property
    def requests(self) -> list[RequestRecord]:
        """The requests seen so far (the last 10,000), oldest first."""
        with self._lock:
            return list(self._state.log)

    # -- faults -------------------------------------------------------------------------------

    def inject(
        self,
        fault: FaultKind,
        times: int = 1,
        *,
        method: str | None = None,
        path: str | None = None,
        status: int = 500,
        retry_after: int = 1,
        delay: float = 5.0,
    ) -> None:
        """Make the next ``times`` matching requests fail in the way ``fault`` names.

        Faults queue up: each request takes the first injected fault that matches it and is
        left, so ``inject("server_error", 2)`` then ``inject("rate_limit")`` answers 500, 500,
        429. A request that takes a fault skips authentication and the rate limit.

        Args:
            fault: ``"rate_limit"`` (429 ``RATE_LIMITED`` with ``Retry-After``),
                ``"server_error"`` (``status`` with ``INTERNAL_ERROR`` and the like),
                ``"disconnect"`` (the connection drops before the request is handled) or
                ``"slow"`` (the request is handled at once and answered ``delay`` seconds later,
                so a client that gives up first still had its request carried out).
            times: How many requests it applies to.
            method: Only requests with this method (``"GET"``, ``"POST"``).
            path: Only requests whose path after ``/v1``, as sent (percent-encoded), matches
                this ``fnmatch`` pattern, such as ``"/translate"`` or ``"/translations/*"``.
            status: For ``server_error``: 500, 502, 503 or 504.
            retry_after: For ``rate_limit``: seconds sent in ``Retry-After`` and the reset.
            delay: For ``slow``: seconds before the answer.

        Raises:
            ValueError: On an unknown fault or an argument out of range.
            TypeError: If ``times`` or ``retry_after`` is not an int, or ``delay`` not a number.
        """
        if fault not in _FAULTS:
            raise ValueError(f"fault must be one of {_FAULTS}, not {fault!r}")
        _number("times", times, whole=True, minimum=1)
        _number("retry_after", retry_after, whole=True)
        _number("delay", delay)
        if fault == "server_error" and status not in _SERVER_ERRORS:
            raise ValueError(f"status must be 500, 502, 503 or 504, not {status!r}")
        if method is not None and not (str(method).isascii() and str(method).isalpha()):
            raise ValueError(f"method must be an HTTP method such as 'GET', not {method!r}")
        if path is not None and not str(path).startswith("/"):
            raise ValueError(f"path must start with '/', such as '/translate', not {path!r}")
        if path is not None and path.startswith("/v1/"):
            path = path[3:]
        upper = method.upper() if method else None
        with self._lock:
            self._state.faults.append(_Fault(fault, times, upper, path, status, retry_after, delay))

    def fail_next_job(
        self,
        message: str = "The document could not be translated.",
        *,
        document_id: str | None = None,
    ) -> None:
        """Make the next document translation started (of ``document_id``, if given) fail.

        The job runs to 50 % and then shows ``status: "failed"`` with
        ``error: {"code": "TRANSLATION_FAILED", "message": message}``, so that
        ``wait_for_translation`` raises ``lingodoc.TranslationFailed``. Calls queue up: each
        job started takes the first failure that matches it.

        Args:
            message: The ``error.message`` of the failed job.
            document_id: Only a job of this document; by default the next job of any.
        """
        with self._lock:
            self._state.job_failures.append((document_id, message))

    def clear_faults(self) -> None:
        """Drop every fault and job failure injected and not yet used."""
        with self._lock:
            self._state.faults.clear()
            self._state.job_failures.clear()

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._state.faults:
            if fault.method not in (None, method):
                continue
            if fault.path is not None and not fnmatch.fnmatchcase(path, fault.path):
                continue
            fault.times -= 1
            if fault.times <= 0:
                self._state.faults.remove(fault)
            return fault
        return None

    # -- the faces ----------------------------------------------------------------------------

    def transport(self) -> EmulatorTransport:
        """Return an httpx transport, sync and async, that answers from this emulator.

        Use it as ``httpx.Client(transport=em.transport())`` or with ``httpx.AsyncClient``.
        It holds no sockets or threads, so leaving it unclosed leaks nothing.

        Returns:
            A new :class:`EmulatorTransport` bound to this emulator; its URLs' host is ignored.
        """
        from lingodoc.emulator._transport import EmulatorTransport

        return EmulatorTransport(self)

    @contextmanager
    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_requests: bool = False,
        allow_remote: bool = False,
    ) -> Iterator[EmulatorServer]:
        """Run the emulator as an HTTP/1.1 server in a background thread.

        Leaving the ``with`` block stops it, ends open connections and waits for its threads.

        Args:
            host: The address to listen on: a loopback one (``localhost``, ``127.0.0.0/8``,
                ``::1``) unless ``allow_remote``.
            port: The port; 0 lets the system pick a free one (see ``.port``).
            log_requests: Whether to print one line per request to stderr.
            allow_remote: Allow any other address (with a warning on stderr): the emulator
                has no TLS and anyone who can reach it can use its keys.

        Yields:
            An :class:`EmulatorServer` with ``base_url`` and ``api_key``.

        Raises:
            ValueError: On a port out of 0-65535, or a host not loopback without ``allow_remote``.
            TypeError: If ``port`` is not an int.
            OSError: If it cannot listen there, such as on a port already in use.
        """
        from lingodoc.emulator._server import start

        if not 0 <= _number("port", port, whole=True) <= 65535:
            raise ValueError(f"port must be 0 to 65535, not {port}")
        if not _is_loopback(host):
            if not allow_remote:
                hint = "allow_remote=True (--allow-remote) to listen there anyway"
                raise ValueError(f"{host!r} is not a loopback address; {hint}")
            warning = f"warning: the emulator listens on {host}: reachable by others, no TLS"
            print(warning, file=sys.stderr)

        server, info = start(self, host, port, log_requests=log_requests)
        try:
            yield info
        finally:
            server.stop()

    def client(self, api_key: str | None = None, **kwargs: Any) -> lingodoc.Client:
        """Return a ``lingodoc.Client`` bound to this emulator in-process.

        Close it as usual. Its ``httpx.Client``, which the SDK leaves to its owner, needs no
        closing: the in-process transport holds no sockets.

        Args:
            api_key: The key to use; the ready-made Full Access key by default.
            **kwargs: More arguments for ``lingodoc.Client`` (``timeout``, ``max_retries``,
                ``default_headers``); not ``base_url`` or ``http_client``, which it sets.

        Returns:
            A new client, with :attr:`base_url` and an ``httpx.Client`` on :meth:`transport`.

        Raises:
            ConfigurationError: If ``api_key`` or a setting is unusable (a key with spaces,
                a negative ``max_retries``...), as ``lingodoc.Client`` raises it.
            TypeError: On an argument ``lingodoc.Client`` does not take, or one given twice.
        """
        import lingodoc

        http_client = httpx.Client(transport=self.transport())
        key = api_key if api_key is not None else self.api_key
        return lingodoc.Client(key, base_url=self.base_url, http_client=http_client, **kwargs)

    def async_client(self, api_key: str | None = None, **kwargs: Any) -> lingodoc.AsyncClient:
        """Return a ``lingodoc.AsyncClient`` bound to this emulator in-process.

        Close it as usual (``await client.aclose()`` or ``async with``); the in-process
        transport holds no sockets, so its ``httpx.AsyncClient`` needs no closing.

        Args:
            api_key: The key to use; the ready-made Full Access key by default.
            **kwargs: More arguments for ``lingodoc.AsyncClient`` (``timeout``, ``max_retries``,
                ``default_headers``); not ``base_url`` or ``http_client``, which it sets.

        Returns:
            A new client, with :attr:`base_url` and an ``httpx.AsyncClient`` on
            :meth:`transport`.

        Raises:
            ConfigurationError: If ``api_key`` or a setting is unusable (a key with spaces,
                a negative ``max_retries``...), as ``lingodoc.AsyncClient`` raises it.
            TypeError: On an argument ``lingodoc.AsyncClient`` does not take, or one given
                twice.
        """
        import lingodoc

        http_client = httpx.AsyncClient(transport=self.transport())
        key = api_key if api_key is not None else self.api_key
        return lingodoc.AsyncClient(key, base_url=self.base_url, http_client=http_client, **kwargs)

    # -- requests -----------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request.

        This is what both faces call: the in-process transport and the HTTP server. It raises
        nothing: whatever goes wrong is an answer (an emulator bug a 500 ``INTERNAL_ERROR``).

        Args:
            method: The HTTP method.
            target: The request target: path and optional query, percent-encoded.
            headers: The request headers (names in any case).
            body: The request body.

        Returns:
            The answer, which may ask the face to drop the connection or to answer late.
        """
        # An absolute-form target (http://host/v1/...) is reduced to its path.
        path = target.split("?", 1)[0] if target.startswith("/") else urlsplit(target).path
        method, headers = method.upper(), {name.lower(): value for name, value in headers.items()}
        with self._lock:
            try:
                reply = self._handle(method, path, headers, body)
            except Exception as exc:  # an emulator bug must not take the server down
                reply = self._reply(500, _error("INTERNAL_ERROR", f"Emulator error: {exc!r}"), None)
            self._state.log.append(
                RequestRecord(method, path, None if reply.disconnect else reply.status)
            )
        return reply

    def _error_reply(self, status: int, code: str, message: str) -> Reply:
        with self._lock:
            return self._reply(status, _error(code, message), None)

    def _handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        relative = path[3:] if path == "/v1" or path.startswith("/v1/") else None
        fault = self._take_fault(method, relative if relative is not None else path)
        if fault is not None and fault.kind == "disconnect":
            return Reply(0, {}, b"", disconnect=True)
        key: _Key | None = None
        try:
            if fault is not None and fault.kind in ("rate_limit", "server_error"):
                with suppress(_Fail):
                    key = self._authenticate(headers)
                raise self._fault_error(fault, key)
            key = self._authenticate(headers)
            self._count(key)
            handler, params, writes = self._route(method, relative)
            if writes and key.permission == "read_only":
                raise _Fail(
                    401,
                    "UNAUTHORIZED",
                    f"API key '{key.name}' has Read Only permission, which cannot start "
                    "translations; use a Read & Write or Full Access key.",
                )
            payload = self._parse_body(headers, body) if method == "POST" else {}
            content: dict[str, Any] = {"success": True, "data": handler(self, params, payload)}
            reply = self._reply(200, content, key)
        except _Fail as fail:
            reply = self._reply(fail.status, _error(fail.code, fail.message), key, fail.headers)
        if fault is not None and fault.kind == "slow":
            return Reply(reply.status, reply.headers, reply.body, delay=fault.delay)
        return reply

    def _reply(
        self,
        status: int,
        content: dict[str, Any],
        key: _Key | None,
        extra: dict[str, str] | None = None,
    ) -> Reply:
        headers = {
            "Content-Type": "application/json",
            "X-Request-Id": "req_" + secrets.token_hex(12),
            **self._limit_headers(key),
            **(extra or {}),
        }
        return Reply(status, headers, json.dumps(content).encode())

    def _reset_header(self, seconds: int) -> str:
        return str(math.ceil(self._wall()) + seconds if self.reset_style == "unix" else seconds)

    def _limit_headers(self, key: _Key | None) -> dict[str, str]:
        now = self._wall()
        remaining, reset = self.rate_limit, _WINDOW
        if key is not None and _in_window(key, now):
            remaining = max(0, self.rate_limit - key.used)
            reset = max(1, math.ceil(key.window_start + _WINDOW - now))
        return {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": self._reset_header(reset),
        }

    def _count(self, key: _Key) -> None:
        now = self._wall()
        if not _in_window(key, now):
            key.window_start, key.used = now, 0
        if key.used >= self.rate_limit:
            wait = max(1, math.ceil(key.window_start + _WINDOW - now))
            raise _Fail(
                429,
                "RATE_LIMITED",
                f"Rate limit of {self.rate_limit} requests per hour reached; retry in {wait} s.",
                {"Retry-After": str(wait)},
            )
        key.used += 1

    def _fault_error(self, fault: _Fault, key: _Key | None) -> _Fail:
        if fault.kind == "rate_limit":
            headers = {
                "Retry-After": str(fault.retry_after),
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": self._reset_header(fault.retry_after),
            }
            message = f"Rate limit reached (injected); retry in {fault.retry_after} s."
            return _Fail(429, "RATE_LIMITED", message, headers)
        code = _SERVER_ERRORS[fault.status]
        return _Fail(fault.status, code, f"Injected server error ({fault.status}).")

    def _authenticate(self, headers: Mapping[str, str]) -> _Key:
        header = headers.get("authorization")
        if header is None:
            message = "Missing Authorization header; send 'Authorization: Bearer <API key>'."
            raise _Fail(401, "UNAUTHORIZED", message)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            message = "Malformed Authorization header; expected 'Bearer <API key>'."
            raise _Fail(401, "UNAUTHORIZED", message)
        key = self._state.keys.get(token)
        if key is None or key.revoked:
            message = f"Invalid API key {_mask(token)}: it does not exist or has been revoked."
            raise _Fail(401, "UNAUTHORIZED", message)
        if key.expires_at is not None and self._wall() >= key.expires_at:
            message = f"API key '{key.name}' expired at {_iso(key.expires_at)}."
            raise _Fail(401, "UNAUTHORIZED", message)
        return key

    def _route(self, method: str, relative: str | None) -> tuple[_Handler, list[str], bool]:
        if relative is None:
            raise _Fail(404, "NOT_FOUND", "Not found: every endpoint is under /v1.")
        segments = [unquote(part) for part in relative.split("/")[1:]]
        if len(segments) > 1 and not segments[-1]:
            segments.pop()  # a trailing slash is harmless
        allowed = []
        for pattern, route_method, handler, writes in _ROUTES:
            if len(pattern) != len(segments):
                continue
            if any(
                part is not None and part != seg
                for part, seg in zip(pattern, segments, strict=True)
            ):
                continue
            if route_method == method or (method, route_method) == ("HEAD", "GET"):
                params = [seg for part, seg in zip(pattern, segments, strict=True) if part is None]
                return handler, params, writes
            allowed.append(route_method)
        if allowed:
            raise _Fail(
                405,
                "METHOD_NOT_ALLOWED",
                f"Method {method} is not allowed here; use {', '.join(allowed)}.",
                {"Allow": ", ".join(allowed)},
            )
        raise _Fail(404, "NOT_FOUND", f"No endpoint at /v1{relative[:100]}.")

    def _parse_body(self, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if body and content_type != "application/json":
            message = f"Content-Type must be application/json, not {content_type[:40]!r}."
            raise _Fail(400, "VALIDATION_ERROR", message)
        try:
            payload = json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # also too deep, or a number too long
            message = f"The request body is not valid JSON: {str(exc)[:200]}."
            raise _Fail(400, "VALIDATION_ERROR", message) from None
        if not isinstance(payload, dict):
            raise _Fail(400, "VALIDATION_ERROR", "The request body must be a JSON object.")
        return payload

    # -- endpoints ----------------------------------------------------------------------------

    def _translate(self, _: list[str], body: dict[str, Any]) -> dict[str, Any]:
        text: str = _field(body, "text", str)
        source, target = _language(body, "source_language"), _language(body, "target_language")
        style: str | None = _field(body, "style", str, required=False)
        _check_length(text, "text")
        return {
            "translated_text": translate_text(text, source, target, style),
            "source_language": source,
            "target_language": target,
        }

    def _translate_batch(self, _: list[str], body: dict[str, Any]) -> dict[str, Any]:
        texts: list[Any] = _field(body, "texts", list)
        source, target = _language(body, "source_language"), _language(body, "target_language")
        if not texts or len(texts) > MAX_BATCH_ITEMS:
            message = f"Field 'texts' must hold 1 to {MAX_BATCH_ITEMS} items, not {len(texts)}."
            raise _Fail(400, "VALIDATION_ERROR", message)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise _Fail(400, "VALIDATION_ERROR", f"Field 'texts[{index}]' must be a string.")
            _check_length(text, f"texts[{index}]")
        return {"translations": [translate_text(text, source, target) for text in texts]}

    def _translate_document(self, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
        document_id = params[0]
        if document_id not in self._state.documents:
            raise _Fail(404, "NOT_FOUND", f"Document {document_id[:80]!r} not found.")
        target = _language(body, "target_language")
        _field(body, "style", str, required=False)
        _field(body, "use_translation_memory", bool, required=False)
        failure = None
        for index, (wanted, message) in enumerate(self._state.job_failures):
            if wanted in (None, document_id):
                failure = message
                del self._state.job_failures[index]
                break
        job = _Job(
            translation_id="tr_" + secrets.token_hex(8),
            document_id=document_id,
            target_language=target,
            queued=self.queue_time > 0,
            runs_from=self._wall() + self.queue_time,
            duration=self.job_duration,
            finishes_at=self._wall() + self.queue_time + self.job_duration,
            failure=failure,
        )
        self._state.jobs[job.translation_id] = job
        return {
            "document_id": document_id,
            "translation_id": job.translation_id,
            "status": "pending" if job.queued else "processing",
            "estimated_completion": _iso(job.finishes_at),
        }

    def _get_translation(self, params: list[str], _: dict[str, Any]) -> dict[str, Any]:
        job = self._state.jobs.get(params[0])
        if job is None:
            raise _Fail(404, "NOT_FOUND", f"Translation {params[0][:80]!r} not found.")
        return self._job_view(job)

    def _list_documents(self, _: list[str], __: dict[str, Any]) -> dict[str, Any]:
        return {"documents": [dict(doc) for doc in self._state.documents.values()]}

    def _job_view(self, job: _Job) -> dict[str, Any]:
        # A job's state is worked out from the clock when asked, so no thread has to run it.
        ran = self._wall() - job.runs_from
        done = ran / job.duration if job.duration > 0 else float(ran >= 0)
        view: dict[str, Any] = {
            "translation_id": job.translation_id,
            "status": "processing",
            "progress": max(0, min(90, int(done * 10) * 10)),
            "document_id": job.document_id,
            "target_language": job.target_language,
        }
        if ran < 0 and job.queued:
            view["status"] = "pending"
        elif job.failure is not None and done >= 0.5:
            view.update(status="failed", progress=50)
            view["error"] = {"code": "TRANSLATION_FAILED", "message": job.failure}
        elif done >= 1:
            view.update(status="completed", progress=100, completed_at=_iso(job.finishes_at))
        return view


def _error(code: str, message: str) -> dict[str, Any]:
    return {"success": False, "error": {"code": code, "message": message}}


_Handler = Callable[[Emulator, list[str], dict[str, Any]], dict[str, Any]]

# (path segments after /v1 with None for a parameter, method, handler, starts a translation)
_ROUTES: tuple[tuple[tuple[str | None, ...], str, _Handler, bool], ...] = (
    (("translate",), "POST", Emulator._translate, True),
    (("translate", "batch"), "POST", Emulator._translate_batch, True),
    (("documents",), "GET", Emulator._list_documents, False),
    (("documents", None, "translate"), "POST", Emulator._translate_document, True),
    (("translations", None), "GET", Emulator._get_translation, False),
)
