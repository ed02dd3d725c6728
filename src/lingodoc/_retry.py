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

Waits: the one the response asks for (``Retry-After``, a 429's reset), else capped backoff;
an ask under half a second gets the backoff at least (`server_wait`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lingodoc import _clock
from lingodoc._constants import MAX_SERVER_WAIT
from lingodoc._exceptions import APIConnectionError, APIError, LingodocError
from lingodoc._logging import logger

if TYPE_CHECKING:
    import tenacity

    from lingodoc._endpoints import Call

_RETRIED_STATUSES = frozenset({500, 502, 503, 504})
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
        if error.status_code in _NOT_STARTED_STATUSES:
            return True
        return idempotent and error.status_code in _RETRIED_STATUSES
    if isinstance(error, APIConnectionError):
        return idempotent or not error.request_sent
    return False


def backoff(attempt: int) -> float:
    """Return the wait before attempt ``attempt + 1``: a cap of 0.5 s doubling to 8 s, jittered."""
    ceiling = min(8.0, 0.5 * 2.0 ** (attempt - 1))
    # Half fixed: no burst of instant retries; half random: clients that failed together spread.
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def server_wait(asked: float | None, attempt: int) -> float:
    """The wait before attempt ``attempt + 1``: what the server ``asked``, but never a spin.

    An ask of under half a second (or none) gets the backoff, if that is longer.
    """
    if asked is not None and asked >= MIN_SERVER_WAIT:
        return asked
    return max(asked or 0.0, backoff(attempt))


def policy(
    call: Call[Any],
    max_retries: int,
    deadline: float | None,
    halted: Callable[[LingodocError], LingodocError | None],
) -> dict[str, Any]:
    """Return tenacity's ``Retrying`` / ``AsyncRetrying`` options for ``call``.

    No wait passes ``deadline`` (SDK clock, monotonic). ``halted(failure)``: the error that
    ends the call instead of a retry (the client closed, the run stopped), else ``None``;
    it is raised from here.
    """

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number > max_retries:
            return True
        assert state.outcome is not None
        error = halted(state.outcome.exception())  # type: ignore[arg-type]  # a LingodocError
        if error is not None:
            raise error
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
        return server_wait(asked, state.attempt_number)

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
