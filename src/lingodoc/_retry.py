"""The retry policy, shared by Client and AsyncClient.

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

``max_retries`` bounds the extra attempts. Waits grow exponentially with
jitter, capped, unless the response said how long to wait (``Retry-After``,
or the rate-limit reset for a 429); a wait longer than 60 s is not waited out,
and a wait of 0 (or a time already past) is backed off like no wait at all.

Each call runs in a plain tenacity loop (``retrying``) whose options come from
``policy``. tenacity decides; the client sleeps the waits it asks for, on the SDK
clock (awaiting them in ``AsyncClient``), so both flavours run the same loop:

    for attempt in retrying(...):
        if attempt.retry_state.attempt_number > 1:
            _clock.sleep(attempt.retry_state.upcoming_sleep)
        with attempt:
            ...  # one attempt
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import httpx

from lingodoc import _clock
from lingodoc._constants import MAX_SERVER_WAIT
from lingodoc._exceptions import APIConnectionError, APIError
from lingodoc._logging import logger

if TYPE_CHECKING:
    import tenacity

    from lingodoc._call import Call

BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 8.0

_RETRIED_STATUSES = frozenset({500, 502, 503, 504})
# Statuses that prove the server did not act on the request, so even a call
# that starts something (a document translation) can be sent again.
_NOT_STARTED_STATUSES = frozenset({429, 503})
# Failures before the request left this machine.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def server_wait(error: BaseException) -> float | None:
    """Return the wait the service asked for (``Retry-After``, or a 429's reset)."""
    if isinstance(error, APIError):
        wait: float | None = error.retry_after
        return wait
    return None


def is_retryable(error: BaseException, *, idempotent: bool) -> bool:
    """Whether another attempt may be made after ``error``.

    Args:
        error: What the attempt raised.
        idempotent: Whether the request is safe to repeat even if the server
            may have acted on it.
    """
    wait = server_wait(error)
    if wait is not None and wait > MAX_SERVER_WAIT:
        return False
    if isinstance(error, APIConnectionError):
        return idempotent or isinstance(error.__cause__, _NOT_SENT_ERRORS)
    if isinstance(error, APIError) and error.status_code is not None:
        if error.status_code in _NOT_STARTED_STATUSES:
            return True
        return idempotent and error.status_code in _RETRIED_STATUSES
    return False


def backoff(attempt: int) -> float:
    """Return the wait before attempt ``attempt + 1``: exponential, capped, with jitter."""
    ceiling = min(BACKOFF_MAX, BACKOFF_INITIAL * 2.0 ** (attempt - 1))
    # Half fixed, half random: never a burst of instant retries, and clients
    # that failed together spread out.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _wait(state: tenacity.RetryCallState) -> float:
    assert state.outcome is not None
    error = state.outcome.exception()
    wait = server_wait(error) if error is not None else None
    # A wait of 0 (`Retry-After: 0`, a date or a reset already past) asks for nothing:
    # taken at its word, it would send every retry at once. Back off instead.
    return wait if wait is not None and wait > 0 else backoff(state.attempt_number)


def policy(
    max_retries: int, *, idempotent: bool, description: str, deadline: float | None = None
) -> dict[str, Any]:
    """Return the options of tenacity's ``Retrying``/``AsyncRetrying`` for one call.

    Args:
        max_retries: Extra attempts allowed.
        idempotent: Whether the call is safe to repeat after the server may have acted.
        description: ``METHOD /path``, for the log.
        deadline: A monotonic time on the SDK clock that no wait may pass.

    Returns:
        ``stop``, ``retry``, ``wait``, ``before_sleep`` and ``reraise``: tenacity
        raises the last error itself once no more attempts are allowed.
    """

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number > max_retries:
            return True
        # Nor a wait that would pass the caller's own deadline (the poller's).
        if deadline is None:
            return False
        return _clock.current().monotonic() + state.upcoming_sleep > deadline

    def retry(state: tenacity.RetryCallState) -> bool:
        assert state.outcome is not None
        error = state.outcome.exception()
        return error is not None and is_retryable(error, idempotent=idempotent)

    def log(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None
        assert state.next_action is not None
        logger.info(
            "retrying %s in %.2f s after %s (attempt %d of %d)",
            description,
            state.next_action.sleep,
            _summary(state.outcome.exception()),
            state.attempt_number + 1,
            max_retries + 1,
        )

    return {
        "stop": stop,
        "retry": retry,
        "wait": _wait,
        "before_sleep": log,
        "reraise": True,
    }


# The Retrying objects of calls without a deadline of their own, by their settings
# (max_retries, idempotent, method, path).
_retryings: dict[tuple[int, bool, str, str], tenacity.Retrying] = {}
# Settings kept at most: polling many translation ids must not grow it for ever.
RETRYING_CACHE_SIZE = 256


def retrying(max_retries: int, call: Call[Any], deadline: float | None = None) -> tenacity.Retrying:
    """Return tenacity's loop for one call, with the options of ``policy``.

    It does not sleep: each attempt after the first comes after a wait of
    ``attempt.retry_state.upcoming_sleep``, which the caller sleeps on the SDK clock.

    A call without a ``deadline`` gets the loop kept for its settings: a ``Retrying`` holds
    no state of its own between loops (each loop's is in its ``RetryCallState``, the rest
    is per thread and set afresh on every step, between which no other code runs), so
    calls in other threads and tasks may share it; making one costs more than the loop.
    It is found by the call's method and path, so ``call.description`` (for the log) is
    made only for a new one.
    """
    import tenacity  # here, not at the top: `import lingodoc` stays light

    if deadline is not None:  # a poll with a deadline: its stop reads that deadline
        return tenacity.Retrying(
            sleep=_no_sleep,
            **policy(
                max_retries,
                idempotent=call.idempotent,
                description=call.description,
                deadline=deadline,
            ),
        )
    key = (max_retries, call.idempotent, call.method, call.path)
    found = _retryings.get(key)
    if found is None:
        if len(_retryings) >= RETRYING_CACHE_SIZE:
            _retryings.clear()
        found = _retryings[key] = tenacity.Retrying(
            sleep=_no_sleep,
            **policy(max_retries, idempotent=call.idempotent, description=call.description),
        )
    return found


def _no_sleep(seconds: float) -> None:
    pass


def _summary(error: BaseException | None) -> str:
    if isinstance(error, APIError):
        return f"{type(error).__name__} {error.status_code}"
    return type(error).__name__
