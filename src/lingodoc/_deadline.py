"""One deadline per attempt: the wait for a connection, connecting, sending, headers and body.

httpx applies its timeouts step by step (a wait for a free connection, connecting,
each write, each wait for data), so a server that sends its headers or its body a
byte at a time holds a call for as long as it likes. An attempt of the SDK has one
deadline besides: ``Attempt`` holds it, and while an attempt runs it is the
*current* one (a context variable, so each thread and each task sees its own).

Three things enforce it:

- the SDK's own connection pools (``_network``, installed on the http client the
  SDK creates) cut every single socket read and write to the time left, so a
  trickle ends at the deadline, in the headers as in the body;
- ``_body.BodyReader`` checks it between chunks (for any transport);
- the request's ``timeout`` extension (``Attempt.timeouts``) gives no step more
  than the attempt's time: that matters when a caller's deadline cuts the
  attempt short (a poll of ``wait_for_translation``), for any transport.

The deadline is real time (``time.monotonic``), not the SDK's swappable clock: it
bounds socket I/O, which a fake clock in a test does not speed up.
"""

from __future__ import annotations

import contextvars
import time
from types import TracebackType
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    import httpcore

_current: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "lingodoc_attempt", default=None
)


def total(timeout: httpx.Timeout) -> float | None:
    """Return how long one attempt may take in all, for the client's ``timeout``.

    The largest of the connect, read, write and pool timeouts: with a plain number
    (all four the same) that number. ``None`` if any of them is ``None``: the
    caller asked for a step without limit, so the attempt has none either (each
    step keeps its own).
    """
    values = (timeout.connect, timeout.read, timeout.write, timeout.pool)
    if any(value is None for value in values):
        return None
    return max(value for value in values if value is not None)


def _steps(timeout: httpx.Timeout, seconds: float | None) -> dict[str, float | None]:
    """The ``timeout`` extension of httpx: each step's own timeout, no more than ``seconds``."""
    return {
        step: value if seconds is None or (value is not None and value <= seconds) else seconds
        for step, value in timeout.as_dict().items()
    }


class Plan:
    """What a client's timeout allows every attempt; worked out once per timeout, not per attempt.

    Args:
        timeout: The client's timeout.
    """

    __slots__ = ("seconds", "timeout", "timeouts")

    def __init__(self, timeout: httpx.Timeout) -> None:
        self.timeout = timeout
        self.seconds = total(timeout)
        # Shared by the requests of every attempt that no caller's deadline cuts: httpx
        # only reads it.
        self.timeouts = _steps(timeout, self.seconds)


def current() -> Attempt | None:
    """Return the attempt running in this thread or task, if any."""
    return _current.get()


class Attempt:
    """The deadline of one attempt, and the ``timeout`` extension its request carries.

    Use it as a context manager around the attempt's I/O: inside, it is the
    current attempt, which the SDK's connection pool reads.

    Args:
        plan: What the client's timeout allows an attempt.
        left: Seconds left before a deadline of the caller's (a poll of
            ``wait_for_translation``), or ``None``: the attempt is cut to it.
    """

    __slots__ = ("_cut", "_token", "deadline", "seconds", "timeouts")

    def __init__(self, plan: Plan, left: float | None = None) -> None:
        seconds, timeouts = plan.seconds, plan.timeouts
        self._cut = False
        if left is not None and (seconds is None or left < seconds):
            self._cut, seconds = True, max(left, 0.0)
            timeouts = _steps(plan.timeout, seconds)
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.timeouts = timeouts
        self._token: contextvars.Token[Attempt | None] | None = None

    def left(self) -> float | None:
        """Return the seconds left (0 once the deadline has passed), or ``None`` if unlimited."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 0.0)

    def expired(self, what: str = "the response") -> str:
        """Return the message of the timeout error once the deadline has passed."""
        seconds = f"{round(self.seconds or 0.0, 2):g} s"
        if self._cut:
            return f"{what} took longer than the {seconds} left before the wait's deadline"
        return f"{what} took longer than the timeout of the attempt ({seconds})"

    def __enter__(self) -> Attempt:
        self._token = _current.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None


def limit(
    timeout: float | None, error: type[httpcore.TimeoutException], what: str
) -> tuple[float | None, Attempt | None]:
    """Return the timeout cut to the time left, and the attempt if it cut it.

    Raises:
        httpcore.TimeoutException: ``error``, if the deadline has already passed.
    """
    attempt = current()
    left = None if attempt is None else attempt.left()
    if left is None:
        return timeout, None
    assert attempt is not None
    if left <= 0:
        raise error(attempt.expired(what))
    if timeout is None or left < timeout:
        return left, attempt
    return timeout, None


class Step:
    """One network step's timeout cut to the attempt's time left (``with Step(...) as step``).

    A timeout of the step raised inside, when it was the attempt's deadline that cut it, is
    raised again as the attempt's ("... took longer than the timeout of the attempt").
    """

    __slots__ = ("attempt", "error", "timeout", "what")

    def __init__(
        self, timeout: float | None, error: type[httpcore.TimeoutException], what: str
    ) -> None:
        self.timeout, self.attempt = limit(timeout, error, what)
        self.error, self.what = error, what

    def __enter__(self) -> Step:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.attempt is not None and issubclass(exc_type, self.error):
            raise self.error(self.attempt.expired(self.what)) from None
