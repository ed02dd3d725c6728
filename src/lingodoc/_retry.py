"""The retry policy, shared by Client and AsyncClient, as tenacity's options.

=====================================  ==========================  ===================
failure                                reads, translate, batch     translate_document
=====================================  ==========================  ===================
could not connect (nothing was sent)   retried                     retried
429 with the reset within 60 s         waits for the reset         waits for the reset
429 with the reset further off         raised at once              raised at once
503                                    retried                     retried
500, 502, 504                          retried                     raised
read timeout, dropped connection       retried                     raised
any other 4xx                          raised                      raised
=====================================  ==========================  ===================

``max_retries`` bounds the extra attempts. Waits grow exponentially with jitter, capped,
unless the response said how long to wait (``Retry-After``, or the rate-limit reset for a
429); a wait longer than 60 s is not waited out, and a wait of 0 (or a time already past)
is backed off like no wait at all. Each call makes its own ``tenacity.Retrying`` (or
``AsyncRetrying``) from `policy`, and sleeps on the SDK clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from lingodoc import _clock
from lingodoc._constants import MAX_SERVER_WAIT
from lingodoc._exceptions import APIConnectionError, APIError
from lingodoc._logging import logger

if TYPE_CHECKING:
    import tenacity

BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 8.0

_RETRIED_STATUSES = frozenset({500, 502, 503, 504})
# Statuses that prove the server did not act on the request, so even a call that starts
# something (a document translation) can be sent again.
_NOT_STARTED_STATUSES = frozenset({429, 503})
# Failures before the request left this machine.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether another attempt may be made after ``error``.

    Args:
        error: What the attempt raised.
        idempotent: Whether the request is safe to repeat even if the server may have
            acted on it.
    """
    if isinstance(error, APIError):
        if error.retry_after is not None and error.retry_after > MAX_SERVER_WAIT:
            return False
        if error.status_code in _NOT_STARTED_STATUSES:
            return True
        return idempotent and error.status_code in _RETRIED_STATUSES
    if isinstance(error, APIConnectionError):
        return idempotent or isinstance(error.__cause__, _NOT_SENT_ERRORS)
    return False


def backoff(attempt: int) -> float:
    """Return the wait before attempt ``attempt + 1``: exponential, capped, with jitter."""
    ceiling = min(BACKOFF_MAX, BACKOFF_INITIAL * 2.0 ** (attempt - 1))
    # Half fixed, half random: never a burst of instant retries, and clients that failed
    # together spread out.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def policy(
    max_retries: int,
    *,
    idempotent: bool,
    description: str,
    deadline: float | None = None,
    give_up: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """Return the options of tenacity's ``Retrying`` / ``AsyncRetrying`` for one call.

    Args:
        max_retries: Extra attempts allowed.
        idempotent: Whether the call is safe to repeat after the server may have acted.
        description: ``METHOD /path``, for the log.
        deadline: A monotonic time on the SDK clock that no wait may pass (a poll's).
        give_up: Whether to make no more attempts whatever the failure (the client was
            closed), asked before each wait.

    Returns:
        ``stop``, ``retry``, ``wait``, ``before_sleep`` and ``reraise``: once no more
        attempts are allowed, tenacity raises the last error itself.
    """

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number > max_retries or give_up():
            return True
        # Nor a wait that would pass the caller's own deadline (the poller's). tenacity
        # works out the wait (upcoming_sleep) before it asks whether to stop.
        now = _clock.current().monotonic()
        return deadline is not None and now + state.upcoming_sleep > deadline

    def retry(state: tenacity.RetryCallState) -> bool:
        assert state.outcome is not None
        error = state.outcome.exception()
        return error is not None and is_retryable(error, idempotent=idempotent)

    def wait(state: tenacity.RetryCallState) -> float:
        assert state.outcome is not None
        error = state.outcome.exception()
        asked = error.retry_after if isinstance(error, APIError) else None
        # A wait of 0 (`Retry-After: 0`, a date or a reset already past) asks for nothing:
        # taken at its word, it would send every retry at once. Back off instead.
        return asked if asked is not None and asked > 0 else backoff(state.attempt_number)

    def log(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None
        assert state.next_action is not None
        error = state.outcome.exception()
        logger.info(
            "retrying %s in %.2f s after %s (attempt %d of %d)",
            description,
            state.next_action.sleep,
            f"{type(error).__name__} {error.status_code}"
            if isinstance(error, APIError)
            else type(error).__name__,
            state.attempt_number + 1,
            max_retries + 1,
        )

    return {"stop": stop, "retry": retry, "wait": wait, "before_sleep": log, "reraise": True}
