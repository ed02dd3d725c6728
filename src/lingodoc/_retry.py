"""The retry policy, shared by Client and AsyncClient, as tenacity's strategies.

Which failures are retried, for which calls: the table of docs/retries.md, `is_retryable`.
Waits: `server_wait`'s, the response's ask (``Retry-After``, a 429's reset) or backoff.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from lingodoc import _clock
from lingodoc._constants import MAX_SERVER_WAIT
from lingodoc._exceptions import APIConnectionError, APIError, LingodocError
from lingodoc._logging import logger

if TYPE_CHECKING:
    import tenacity

    from lingodoc._endpoints import Call

_RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})  # for a call safe to resend
# The server did not act on the request: even a call that starts something may be resent.
_NOT_STARTED_STATUSES = frozenset({429, 503})
# A wait the server asks for below this is no reason to resend sooner than the backoff:
# "0.001", "0", a date just past or a reset due now would make a burst of requests.
MIN_SERVER_WAIT = 0.5


def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether ``error`` allows another attempt (``idempotent``: safe even if the server acted)."""
    if isinstance(error, APIError):
        if error.retry_after is not None and error.retry_after > MAX_SERVER_WAIT:
            return False
        return error.status_code in (_RETRIED_STATUSES if idempotent else _NOT_STARTED_STATUSES)
    if isinstance(error, APIConnectionError):
        return idempotent or not error.request_sent
    return False


def backoff(attempt: int) -> float:
    """Return the wait before attempt ``attempt + 1``: a cap of 0.5 s doubling to 8 s, jittered."""
    ceiling = min(8.0, 0.5 * 2.0 ** (attempt - 1))
    # Half fixed: no burst of instant retries; half random: clients that failed together spread.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def server_wait(asked: float | None, attempt: int) -> float:
    """The wait before attempt ``attempt + 1``: ``asked``, raised to the backoff if under 0.5 s."""
    if asked is not None and asked >= MIN_SERVER_WAIT:
        return asked
    return max(asked or 0.0, backoff(attempt))


class Retries:
    """One call's retry policy, as tenacity's ``retry``, ``stop`` and ``wait`` strategies."""

    __slots__ = ("_call", "_deadline", "_max_retries", "_state")

    def __init__(self, call: Call[Any], max_retries: int, deadline: float | None) -> None:
        self._call, self._max_retries, self._deadline = call, max_retries, deadline
        self._state: tenacity.RetryCallState | None = None

    def wait_after(self, error: LingodocError) -> float | None:
        """Seconds to wait before the next attempt after ``error``; ``None``: it ends the call."""
        import tenacity  # a call that never fails never imports it

        state = self._state
        if state is None:  # a state names a retry manager, which these strategies never ask
            state = self._state = tenacity.RetryCallState(tenacity.Retrying(), None, (), {})
        else:
            state.prepare_for_next_attempt()
        state.set_exception((type(error), error, None))
        idempotent = self._call.idempotent
        retry = tenacity.retry_if_exception(lambda exc: is_retryable(exc, idempotent=idempotent))
        if not retry(state):
            return None
        asked = error.retry_after if isinstance(error, APIError) else None
        state.upcoming_sleep = server_wait(asked, state.attempt_number)
        if tenacity.stop_after_attempt(self._max_retries + 1)(state):
            return None
        deadline = self._deadline
        if deadline is not None and _clock.current().monotonic() + state.upcoming_sleep > deadline:
            return None
        return state.upcoming_sleep

    def announce(self, error: LingodocError | None, wait: float) -> None:
        """Log the retry after ``error`` that the client is about to wait ``wait`` seconds for."""
        status = f" {error.status_code}" if isinstance(error, APIError) else ""
        number = 2 if self._state is None else self._state.attempt_number + 1
        logger.info(
            "retrying %s in %.2f s after %s (attempt %d of %d)",
            self._call.description,
            wait,
            type(error).__name__ + status,
            number,
            self._max_retries + 1,
        )
