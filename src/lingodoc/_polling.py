"""The rules of ``wait_for_translation``: after each poll, the end of the wait, or a sleep.

The statuses held here are as the server sent them (they may echo the key): the client
raises what ends the wait again without these frames (`raise_scrubbed`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from lingodoc import _callbacks, _clock, _lazy, _retry
from lingodoc._exceptions import APIConnectionError, APIError, TranslationFailed, WaitTimeout
from lingodoc._validation import LONGEST_WAIT, seconds

if TYPE_CHECKING:
    from lingodoc._endpoints import Call
    from lingodoc._models import TranslationStatus

MIN_RATE_LIMIT_WAIT, MAX_POLL_WAIT = 1.0, 3600.0  # the bounds of one wait for a 429's reset
# Polls in a row that read a state the SDK does not know before the wait gives up: a state
# added to the service must not make a wait endless.
MAX_UNKNOWN_STATES = 3


class Waiter:
    """One ``wait_for_translation``, its arguments checked: deadline, last status, next step."""

    def __init__(
        self,
        call: Call[TranslationStatus],
        *,
        poll_interval: object,
        timeout: object,
        on_progress: Callable[[TranslationStatus], object] | None,
        redact: Callable[[str], str],
        awaits: bool,
    ) -> None:
        interval = seconds(poll_interval, "poll_interval", most=LONGEST_WAIT)
        limit = math.inf
        if timeout is not None:
            hint = "None waits as long as it takes"
            limit = seconds(timeout, "timeout", zero=True, most=math.inf, hint=hint)
        _callbacks.check(on_progress, awaits=awaits)
        self.call, self.poll_interval = call, interval
        self.timeout = cast("float | None", timeout)  # as given: WaitTimeout shows 3 s, not 3.0
        self.on_progress, self.redact = on_progress, redact
        self.last: TranslationStatus | None = None
        # A timeout past the longest wait (an infinite one) waits as None does.
        self.deadline = None if limit > LONGEST_WAIT else _clock.current().monotonic() + limit
        self.unknown_states = self.rate_limited = 0  # polls in a row with either

    def after_status(self, status: TranslationStatus) -> float | None:
        """Record a poll's status: ``None`` if completed, else the sleep before the next poll."""
        self.last = status
        self.rate_limited = 0
        state = status.status
        if state == _lazy.TranslationState.COMPLETED:
            return None
        if state == _lazy.TranslationState.FAILED:
            raise self._masked(TranslationFailed(status))
        known = isinstance(state, _lazy.TranslationState)
        self.unknown_states = 0 if known else self.unknown_states + 1
        if self.unknown_states < MAX_UNKNOWN_STATES:
            return self.delay()
        error = TranslationFailed(status)
        error.args = (
            f"translation {status.translation_id} is in the state "
            f"{state if len(state) <= 40 else state[:40] + '...'!r}, which this version of "
            f"lingodoc does not know: it stopped waiting after {MAX_UNKNOWN_STATES} polls in "
            "a row in such a state (check the translation with get_translation, or upgrade "
            "lingodoc)",
        )
        raise self._masked(error)

    def delay(self, wanted: float | None = None) -> float:
        """Seconds to sleep before the next poll: the interval, or ``wanted`` (a 429's reset)."""
        delay = self.poll_interval
        if wanted is not None:
            # A short reset must not turn into a tight loop of refused polls.
            delay = min(max(wanted, min(MIN_RATE_LIMIT_WAIT, self.poll_interval)), MAX_POLL_WAIT)
        if self.deadline is None:
            return delay
        remaining = self.deadline - _clock.current().monotonic()
        if remaining <= 0 or (wanted is not None and wanted > remaining):
            assert self.timeout is not None
            raise self._masked(WaitTimeout(self.last, self.timeout))
        return min(delay, remaining)

    def after_rate_limit(self, wanted: float | None) -> float:
        """The sleep after a 429: the wait asked for, or a backoff growing with each 429."""
        self.rate_limited += 1
        return self.delay(_retry.server_wait(wanted, self.rate_limited))

    def after_failure(self, error: APIError | APIConnectionError) -> float:
        """With a timeout, a poll's 5xx or network failure is ridden out; else raised again."""
        transient = isinstance(error, APIConnectionError) or (error.status_code or 0) >= 500
        if self.deadline is None or not transient:
            raise error.with_traceback(None)
        try:
            return self.delay()
        except WaitTimeout as timeout:  # without the traceback: its frames hold statuses
            raise timeout from error.with_traceback(None)

    def _masked(self, error: TranslationFailed | WaitTimeout) -> TranslationFailed | WaitTimeout:
        # The message and the status are what the server sent: either may echo the key.
        error.args = tuple(self.redact(a) if isinstance(a, str) else a for a in error.args)
        if error.status is not None:
            changes = {}
            for name, value in error.status:  # an unknown field (``error``) may be an object
                if (masked := _redact_json(value, self.redact)) is not value:
                    changes[name] = masked
            # A copy keeps the request id and rate limit, not the response (with the key).
            error.status = error.status.model_copy(update=changes)
        return error


def _redact_json(value: object, redact: Callable[[str], str]) -> object:
    """``value`` (JSON) with the key masked in its strings and names; itself if none changed.

    Masked as JSON text: json's parser reads values nested deeper than a recursive walk could.
    """
    if not isinstance(value, (str, dict, list)):
        return value
    try:
        text = value if isinstance(value, str) else json.dumps(value)
    except (ValueError, RecursionError):  # deeper than this stack can write: never shown
        return "(too deeply nested to show)"
    if (masked := redact(text)) == text:
        return value
    try:
        return masked if isinstance(value, str) else json.loads(masked)
    except ValueError:  # the mask's last characters broke the JSON: the text, masked
        return masked
