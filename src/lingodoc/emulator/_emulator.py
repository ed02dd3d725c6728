"""The [`Emulator`][lingodoc.emulator.Emulator] users hold: it checks settings and delegates.

What it knows is a `State` (``_state``), changed only under the state's lock. Requests are
answered by a `Router` (``_routing``) over that state, which the in-process transport (through
[`handle`][lingodoc.emulator.Emulator.handle]) and the HTTP server both call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import httpx

from lingodoc._constants import is_loopback
from lingodoc.emulator._routing import Reply, Router
from lingodoc.emulator._state import (
    Clock,
    Fault,
    FaultKind,
    Permission,
    RequestRecord,
    State,
    check_number,
)
from lingodoc.emulator._transport import EmulatorTransport

if TYPE_CHECKING:
    import lingodoc

PLAN_LIMITS: dict[str, int] = {"pro": 1_000, "ultra": 10_000, "team": 5_000, "business": 20_000}
"""Requests per hour and key, per plan (per seat for ``team`` and ``business``)."""


@dataclass(frozen=True)
class EmulatorServer:
    """A running emulator server, as yielded by [`serve`][lingodoc.emulator.Emulator.serve].

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


class _Serving(AbstractContextManager[EmulatorServer]):
    """What `Emulator.serve` returns: the server runs only in its ``with`` block."""

    def __init__(self, serving: AbstractContextManager[EmulatorServer]) -> None:
        self._serving = serving

    def __enter__(self) -> EmulatorServer:
        return self._serving.__enter__()

    def __exit__(self, *exc_info: Any) -> bool | None:
        return self._serving.__exit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        # server = emulator.serve(); server.base_url: say what to write instead.
        raise AttributeError(
            f"the server runs only inside a with block, which gives it its {name}: "
            f"`with emulator.serve() as server:` then `server.{name}`"
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
            ValueError: On an unknown plan or reset style, a number out of range, or an
                ``api_key`` that cannot be sent in a header (empty, or with spaces).
            TypeError: On a number of the wrong type (``rate_limit`` and ``seats`` are ints).
        """
        if plan not in PLAN_LIMITS:
            raise ValueError(f"plan must be one of {sorted(PLAN_LIMITS)}, not {plan!r}")
        check_number("seats", seats, whole=True, minimum=1)
        per_seat = plan in ("team", "business")
        self.rate_limit: int = (
            rate_limit if rate_limit is not None else PLAN_LIMITS[plan] * (seats if per_seat else 1)
        )
        self.reset_style = reset_style
        self.job_duration = job_duration
        self.queue_time = queue_time
        # The state and the router read the settings above from this object when they need
        # them, so a change made at any time takes effect at the next request.
        self._state = State(self, clock)
        self._router = Router(self._state)
        self.api_key: str = self.create_key("emulator", "full_access", key=api_key)
        if seed_documents:
            self.add_document("doc_welcome", name="Welcome to lingodoc", language="en")
            self.add_document("doc_handbook", name="Employee handbook", language="en")

    def __setattr__(self, name: str, value: Any) -> None:
        # The settings that may be changed at any time are checked whenever they are set.
        if name in ("rate_limit", "job_duration", "queue_time"):
            check_number(name, value, whole=name == "rate_limit")
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
        return self._state.clock

    def advance(self, seconds: float) -> None:
        """Move the emulator's time forward, for jobs, expiry and rate-limit windows.

        Args:
            seconds: How far; adds to whatever the clock itself does.

        Raises:
            ValueError: If ``seconds`` is negative or not finite.
        """
        with self._state.lock:
            self._state.advance(seconds)

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
            ValueError: On an unknown permission, a secret already in use, or one that
                cannot be sent in a header (empty, or with spaces).
            TypeError: If ``expires_at`` is neither a ``datetime`` nor a number.
        """
        with self._state.lock:
            return self._state.add_key(name, permission, expires_at, key)

    def revoke_key(self, key: str) -> None:
        """Revoke a key; the next request made with it is refused.

        Requests made with it answer 401 ``UNAUTHORIZED``: ``API key 'NAME' has been revoked.``

        Args:
            key: The secret, as [`create_key`][lingodoc.emulator.Emulator.create_key] returned
                it (or [`api_key`][lingodoc.emulator.Emulator]).

        Raises:
            KeyError: If there is no such key.
        """
        with self._state.lock:
            self._state.revoke_key(key)

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
        with self._state.lock:
            return self._state.add_document(document_id, name, fields)

    @property
    def documents(self) -> dict[str, dict[str, Any]]:
        """Copies of the documents, by identifier, in the order they were added."""
        with self._state.lock:
            return {key: dict(value) for key, value in self._state.documents.items()}

    @property
    def translations(self) -> dict[str, dict[str, Any]]:
        """The status record of every translation job as ``GET /translations/{id}`` shows it."""
        with self._state.lock:
            now = self._state.now()
            return {tid: job.view(now) for tid, job in self._state.jobs.items()}

    @property
    def requests(self) -> list[RequestRecord]:
        """The requests seen so far (the last 10,000), oldest first."""
        with self._state.lock:
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
        injected = Fault(fault, times, method, path, status, retry_after, delay)
        with self._state.lock:
            self._state.faults.append(injected)

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
        with self._state.lock:
            self._state.job_failures.append((document_id, message))

    def clear_faults(self) -> None:
        """Drop every fault and job failure injected and not yet used."""
        with self._state.lock:
            self._state.faults.clear()
            self._state.job_failures.clear()

    # -- the faces ----------------------------------------------------------------------------

    def transport(self) -> EmulatorTransport:
        """Return an httpx transport, sync and async, that answers from this emulator.

        Use it as ``httpx.Client(transport=em.transport())`` or with ``httpx.AsyncClient``.
        It holds no sockets or threads, so leaving it unclosed leaks nothing.

        Returns:
            A new [`EmulatorTransport`][lingodoc.emulator.EmulatorTransport] bound to this
            emulator; its URLs' host is ignored.
        """
        return EmulatorTransport(self)

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_requests: bool = False,
        allow_remote: bool = False,
    ) -> AbstractContextManager[EmulatorServer]:
        """Run the emulator as an HTTP/1.1 server in a background thread, in a ``with`` block.

        Entering the block starts it; leaving stops it, ends open connections and waits for
        its threads.

        Args:
            host: The address to listen on: a loopback one (``localhost``, ``127.0.0.0/8``,
                ``::1``) unless ``allow_remote``.
            port: The port; 0 lets the system pick a free one (see ``.port``).
            log_requests: Whether to print one line per request to stderr.
            allow_remote: Allow any other address (with a warning on stderr): the emulator
                has no TLS and anyone who can reach it can use its keys.

        Returns:
            What ``with`` makes an [`EmulatorServer`][lingodoc.emulator.EmulatorServer], with
            ``base_url`` and ``api_key``.

        Raises:
            ValueError: On a port out of 0-65535, or a host not loopback without ``allow_remote``.
            TypeError: If ``port`` is not an int.
            OSError: If it cannot listen there, such as on a port already in use.
        """
        return _Serving(self._serve(host, port, log_requests, allow_remote))

    @contextmanager
    def _serve(
        self, host: str, port: int, log_requests: bool, allow_remote: bool
    ) -> Iterator[EmulatorServer]:
        # Imported here: only those who serve need http.server and its threads.
        from lingodoc.emulator._server import start

        if not 0 <= check_number("port", port, whole=True) <= 65535:
            raise ValueError(f"port must be 0 to 65535, not {port}")
        if not is_loopback(host):
            if not allow_remote:
                hint = "allow_remote=True (--allow-remote) to listen there anyway"
                raise ValueError(f"{host!r} is not a loopback address; {hint}")
            warning = f"warning: the emulator listens on {host}: reachable by others, no TLS"
            print(warning, file=sys.stderr)

        # "[::1]" as written in a URL is "::1" to the socket.
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        server = start(self, self._router, host, port, log_requests=log_requests)
        try:
            yield EmulatorServer(server.base_url, self.api_key, host, server.port, self)
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
            A new client, with [`base_url`][lingodoc.emulator.Emulator] and an
                ``httpx.Client`` on [`transport`][lingodoc.emulator.Emulator.transport].

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
            A new client, with [`base_url`][lingodoc.emulator.Emulator] and an
                ``httpx.AsyncClient`` on [`transport`][lingodoc.emulator.Emulator.transport].

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
        nothing: whatever goes wrong is an answer (an emulator bug a 500 ``INTERNAL_ERROR``,
        a body over [`MAX_BODY_BYTES`][lingodoc.emulator.MAX_BODY_BYTES] a 413
        ``REQUEST_TOO_LARGE``, which is not recorded).

        Args:
            method: The HTTP method.
            target: The request target: path and optional query, percent-encoded.
            headers: The request headers (names in any case).
            body: The request body.

        Returns:
            The answer, which may ask the face to drop the connection or to answer late.
        """
        return self._router.handle(method, target, headers, body)
