"""The emulator's state: API keys and their rate-limit windows, documents, jobs and faults.

Nothing here speaks HTTP; the router turns this state into answers. A `State` is not
thread-safe by itself: whoever reads or changes it holds its `lock`, which is what the
methods of [`Emulator`][lingodoc.emulator.Emulator] do, and the router for the whole of a
request, so that a request meets one consistent state from its fault to its answer.
"""

from __future__ import annotations

import fnmatch
import json
import math
import random
import secrets
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple, Protocol, get_args

from lingodoc import _clock
from lingodoc._validation import sendable_key

Permission = Literal["read_only", "read_write", "full_access"]
"""The permission levels of an API key, for [`create_key`][lingodoc.emulator.Emulator.create_key].

``"read_only"`` may list documents and read translations; ``"read_write"`` and
``"full_access"`` may also start translations (the two are the same for the endpoints
emulated).
"""
FaultKind = Literal["rate_limit", "server_error", "disconnect", "slow"]
"""The faults [`inject`][lingodoc.emulator.Emulator.inject] can make the next requests meet.

``"rate_limit"`` (a 429), ``"server_error"`` (a 5xx), ``"disconnect"`` (the connection drops
with no answer) and ``"slow"`` (the answer comes late).
"""

WINDOW = 3600  # seconds: the service's limits are per hour
SERVER_ERRORS = {
    500: "INTERNAL_ERROR",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}
_PERMISSIONS = get_args(Permission)
_FAULTS = get_args(FaultKind)


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
    """One request the emulator saw, as kept in [`requests`][lingodoc.emulator.Emulator.requests].

    Attributes:
        method: The HTTP method.
        path: The path as sent, percent-encoded, without the query.
        status: The status answered, or ``None`` when the connection was dropped.
    """

    method: str
    path: str
    status: int | None


class Settings(Protocol):
    """The settings that may change at any time, so they are read when needed, never copied.

    [`Emulator`][lingodoc.emulator.Emulator] holds them (and checks them as they are set).
    """

    @property
    def rate_limit(self) -> int:
        """Requests per hour and key."""

    @property
    def reset_style(self) -> str:
        """``"seconds"`` or ``"unix"``: how ``X-RateLimit-Reset`` is sent."""

    @property
    def job_duration(self) -> float:
        """Seconds a document translation spends in ``processing``."""

    @property
    def queue_time(self) -> float:
        """Seconds a new job waits in ``pending`` first."""


def check_number(name: str, value: object, *, whole: bool = False, minimum: float = 0.0) -> Any:
    """Return ``value`` if it is a finite number (an int if ``whole``) of at least ``minimum``.

    Raises:
        TypeError: If it is not a number (or not an int when ``whole``); a bool is neither.
        ValueError: If it is not finite or less than ``minimum`` (``name`` says which).
    """
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        kind = "an int" if whole else "a number"
        raise TypeError(f"{name} must be {kind}, not {type(value).__name__}")
    if not (math.isfinite(value) and value >= minimum):
        least = f" of at least {minimum:g}" if minimum > -math.inf else ""
        raise ValueError(f"{name} must be a finite number{least}, not {value!r}")
    return value


def iso(timestamp: float) -> str:
    """Format a Unix time as the service does: ``2024-05-01T12:00:00Z``."""
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def count(number: int, noun: str) -> str:
    """``1 request``, ``2 requests``, ``1,000 requests``: a count for a message."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def mask(key: str) -> str:
    """Name a key in a message without giving it away: `` ending in 'WXYZ'``, or ``""``.

    By its last four characters only if it has at least 12: of a shorter one (a custom
    key may be short), they would give most of it away.
    """
    return f" ending in '{key[-4:]}'" if len(key) >= 12 else ""


@dataclass
class Key:
    """An API key, and the window in which its requests are counted."""

    name: str
    permission: str
    expires_at: float | None
    revoked: bool = False
    window_start: float = -math.inf
    used: int = 0

    def in_window(self, now: float) -> bool:
        """Whether the window opened by the key's first counted request is still open."""
        return now < self.window_start + WINDOW

    def resets_in(self, now: float) -> int:
        """Whole seconds (at least 1) until the key's window closes."""
        return max(1, math.ceil(self.window_start + WINDOW - now))


@dataclass
class Job:
    """A document translation; its status follows from the clock (see `view`)."""

    translation_id: str
    document_id: str
    target_language: str
    queued: bool
    runs_from: float  # when it leaves pending
    duration: float
    finishes_at: float
    failure: str | None

    def view(self, now: float) -> dict[str, Any]:
        """The job's status record at time ``now``, as ``GET /translations/{id}`` shows it."""
        # Worked out from the clock when asked, so no thread has to run the job.
        ran = now - self.runs_from
        done = ran / self.duration if self.duration > 0 else float(ran >= 0)
        view: dict[str, Any] = {
            "translation_id": self.translation_id,
            "status": "processing",
            "progress": max(0, min(90, int(done * 10) * 10)),
            "document_id": self.document_id,
            "target_language": self.target_language,
        }
        if ran < 0 and self.queued:
            view["status"] = "pending"
        elif self.failure is not None and done >= 0.5:
            view.update(status="failed", progress=50)
            view["error"] = {"code": "TRANSLATION_FAILED", "message": self.failure}
        elif done >= 1:
            view.update(status="completed", progress=100, completed_at=iso(self.finishes_at))
        return view


@dataclass
class Fault:
    """An injected fault with the ``times`` it has left, checked as it is made.

    The arguments are those of [`Emulator.inject`][lingodoc.emulator.Emulator.inject] (``kind``
    is its ``fault``), which raises what this raises.

    Raises:
        ValueError: On an unknown fault or an argument out of range.
        TypeError: If ``times`` or ``retry_after`` is not an int, or ``delay`` not a number.
    """

    kind: str
    times: int
    method: str | None
    path: str | None
    status: int
    retry_after: int
    delay: float

    def __post_init__(self) -> None:
        if self.kind not in _FAULTS:
            raise ValueError(f"fault must be one of {_FAULTS}, not {self.kind!r}")
        check_number("times", self.times, whole=True, minimum=1)
        check_number("retry_after", self.retry_after, whole=True)
        check_number("delay", self.delay)
        if self.kind == "server_error" and self.status not in SERVER_ERRORS:
            raise ValueError(f"status must be 500, 502, 503 or 504, not {self.status!r}")
        method, path = self.method, self.path
        if method is not None and not (str(method).isascii() and str(method).isalpha()):
            raise ValueError(f"method must be an HTTP method such as 'GET', not {method!r}")
        if path is not None and not str(path).startswith("/"):
            raise ValueError(f"path must start with '/', such as '/translate', not {path!r}")
        # Matched against the path after /v1, which is what users see in the spec.
        if path is not None and path.startswith("/v1/"):
            self.path = path[3:]
        self.method = method.upper() if method else None

    def matches(self, method: str, path: str) -> bool:
        """Whether a request (its upper-case method, its path after ``/v1``) meets this fault."""
        if self.method not in (None, method):
            return False
        return self.path is None or fnmatch.fnmatchcase(path, self.path)


class State:
    """Everything the emulator knows, changed only by whoever holds ``lock``.

    Args:
        settings: Where the settings that may change at any time are read.
        clock: A clock to pin; ``None`` reads the SDK's clock in force at each use.
    """

    def __init__(self, settings: Settings, clock: Clock | None) -> None:
        self.settings = settings
        self.lock = threading.Lock()
        self.keys: dict[str, Key] = {}
        self.documents: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, Job] = {}
        self.faults: list[Fault] = []
        self.job_failures: list[tuple[str | None, str]] = []  # (document or any, message)
        self.log: deque[RequestRecord] = deque(maxlen=10_000)
        # The command line's --latency and --fail: seconds added to every answer, and the
        # faults a request meets at random, each with its probability (1 at most in all).
        self.latency = 0.0
        self.chances: list[tuple[Fault, float]] = []
        self.draws = random.Random()
        self._pinned = clock
        self._offset = 0.0
        self._last_clock: Clock | None = None  # the clock of the last reading, and the time
        self._last_now = -math.inf

    @property
    def clock(self) -> Clock:
        """The clock in use: the pinned one, else the SDK's clock in force right now."""
        return self._pinned if self._pinned is not None else _clock.current()

    def now(self) -> float:
        """The emulator's time: its clock's plus what `advance` added, never going back."""
        # Wall time, not monotonic time: the real clock and a FakeClock (which starts at the
        # real time) agree on it, so a job or window survives a switch from one to the other.
        clock = self.clock
        now = clock.time() + self._offset
        if clock is not self._last_clock:
            # Back on the real clock after a FakeClock that ran ahead of it (or on one that
            # starts earlier): time goes on from where it was, so a completed job stays
            # completed and a rate-limit window does not last longer than an hour.
            if now < self._last_now:
                self._offset += self._last_now - now
                now = self._last_now
            self._last_clock = clock
        self._last_now = now
        return now

    def advance(self, seconds: float) -> None:
        """As [`Emulator.advance`][lingodoc.emulator.Emulator.advance] documents."""
        self._offset += check_number("seconds", seconds)

    def add_key(
        self, name: str, permission: str, expires_at: datetime | float | None, secret: str | None
    ) -> str:
        """As [`Emulator.create_key`][lingodoc.emulator.Emulator.create_key] documents."""
        if permission not in _PERMISSIONS:
            raise ValueError(f"permission must be one of {_PERMISSIONS}, not {permission!r}")
        if isinstance(expires_at, datetime):
            if expires_at.tzinfo is None:
                expires_at = expires_at.replace(tzinfo=timezone.utc)
            expires_at = expires_at.timestamp()
        elif expires_at is not None:
            expires_at = float(check_number("expires_at", expires_at, minimum=-math.inf))
        if secret is not None and not (isinstance(secret, str) and sendable_key(secret)):
            # Refused here, not by the first request that sends it (or by the SDK's client).
            raise ValueError(  # without the value: it is a key
                "a key must be a non-empty str of printable ASCII without spaces (it is "
                "sent in the Authorization header)"
            )
        secret = secret if secret is not None else "ld_" + secrets.token_hex(16)
        if secret in self.keys:
            raise ValueError("that key already exists")
        self.keys[secret] = Key(name, permission, expires_at)
        return secret

    def revoke_key(self, secret: str) -> None:
        """As [`Emulator.revoke_key`][lingodoc.emulator.Emulator.revoke_key] documents."""
        if secret not in self.keys:
            raise KeyError(f"no such key{mask(secret)}")
        self.keys[secret].revoked = True

    def add_document(
        self, document_id: str | None, name: str, fields: dict[str, Any]
    ) -> dict[str, Any]:
        """As [`Emulator.add_document`][lingodoc.emulator.Emulator.add_document] documents."""
        document_id = document_id if document_id is not None else "doc_" + secrets.token_hex(6)
        record: dict[str, Any] = {
            "document_id": document_id,
            "name": name,
            "created_at": iso(self.now()),
        }
        record.update(fields)
        try:
            json.dumps(record, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"document fields must be JSON values: {exc}") from None
        self.documents[document_id] = record
        return dict(record)

    def take_fault(self, method: str, path: str) -> Fault | None:
        """Use once the first injected fault that a request meets, else draw one of `chances`.

        Args:
            method: The request's method, upper-case.
            path: Its path after ``/v1`` (or the whole path, outside ``/v1``).

        Returns:
            The injected fault, dropped once it has no ``times`` left, or the one drawn;
            ``None`` if none.
        """
        for fault in self.faults:
            if fault.matches(method, path):
                fault.times -= 1
                if fault.times <= 0:
                    self.faults.remove(fault)
                return fault
        # One draw per request: each fault takes a slice of [0, 1) as wide as its chance.
        draw = self.draws.random()
        for fault, chance in self.chances:
            if draw < chance:
                return fault
            draw -= chance
        return None

    def start_job(self, document_id: str, target_language: str) -> Job:
        """Start a translation of a document, taking the first job failure injected for it.

        Args:
            document_id: The document, which exists.
            target_language: The language to translate it into.

        Returns:
            The new job, which now shows in ``jobs``.
        """
        failure = None
        for index, (wanted, message) in enumerate(self.job_failures):
            if wanted in (None, document_id):
                failure = message
                del self.job_failures[index]
                break
        now = self.now()
        queue_time, duration = self.settings.queue_time, self.settings.job_duration
        job = Job(
            translation_id="tr_" + secrets.token_hex(8),
            document_id=document_id,
            target_language=target_language,
            queued=queue_time > 0,
            runs_from=now + queue_time,
            duration=duration,
            finishes_at=now + queue_time + duration,
            failure=failure,
        )
        self.jobs[job.translation_id] = job
        return job

    def spend(self, key: Key) -> int | None:
        """Count one request of ``key`` against the rate limit, opening a window if none is open.

        Args:
            key: The key the request authenticated with.

        Returns:
            ``None`` when the request was counted; when the key has used up its window, the
            seconds until that window closes (and the request is not counted).
        """
        now = self.now()
        if not key.in_window(now):
            key.window_start, key.used = now, 0
        if key.used >= self.settings.rate_limit:
            return key.resets_in(now)
        key.used += 1
        return None

    def window(self, key: Key | None) -> tuple[int, int]:
        """Return the requests ``key`` has left and the seconds until its window closes.

        Args:
            key: The key of the request, or ``None`` if it has none (a fresh window is shown).

        Returns:
            ``(remaining, seconds)``.
        """
        now, limit = self.now(), self.settings.rate_limit
        if key is None or not key.in_window(now):
            return limit, WINDOW
        return max(0, limit - key.used), key.resets_in(now)
