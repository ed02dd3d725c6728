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

Waits: the one the response asks for (``Retry-After``, a 429's reset), else capped backoff.
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

    from lingodoc._endpoints import Call

_RETRIED_STATUSES = frozenset({500, 502, 503, 504})
# The server did not act on the request: even a call that starts something may be resent.
_NOT_STARTED_STATUSES = frozenset({429, 503})
# Failures before the request left this machine.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether ``error`` allows another attempt (``idempotent``: safe even if the server acted)."""
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
    """Return the wait before attempt ``attempt + 1``: a cap of 0.5 s doubling to 8 s, jittered."""
    ceiling = min(8.0, 0.5 * 2.0 ** (attempt - 1))
    # Half fixed: no burst of instant retries; half random: clients that failed together spread.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def policy(
    call: Call[Any], max_retries: int, deadline: float | None, give_up: Callable[[], bool]
) -> dict[str, Any]:
    """Return tenacity's ``Retrying`` / ``AsyncRetrying`` options for ``call``.

    No wait passes ``deadline`` (SDK clock, monotonic); ``give_up()`` (client closed) stops.
    """

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number > max_retries or give_up():
            return True
        # tenacity works out the wait (upcoming_sleep) before it asks whether to stop.
        now = _clock.current().monotonic()
        return deadline is not None and now + state.upcoming_sleep > deadline

    def retry(state: tenacity.RetryCallState) -> bool:
        assert state.outcome is not None
        error = state.outcome.exception()
        return error is not None and is_retryable(error, idempotent=call.idempotent)

    def wait(state: tenacity.RetryCallState) -> float:
        assert state.outcome is not None
        error = state.outcome.exception()
        asked = error.retry_after if isinstance(error, APIError) else None
        # A wait of 0 (or a time already past), taken at its word, would resend at once.
        return asked if asked is not None and asked > 0 else backoff(state.attempt_number)

    def log(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None
        assert state.next_action is not None
        error = state.outcome.exception()
        status = f" {error.status_code}" if isinstance(error, APIError) else ""
        logger.info(
            "retrying %s in %.2f s after %s (attempt %d of %d)",
            call.description,
            state.next_action.sleep,
            type(error).__name__ + status,
            state.attempt_number + 1,
            max_retries + 1,
        )

    return {"stop": stop, "retry": retry, "wait": wait, "before_sleep": log, "reraise": True}
