"""Progress on stderr: a bar on a terminal, lines elsewhere.

For a document translation's wait (a line per change), and for `lingodoc batch`'s
``translate_many`` (a line per tenth of the texts, with the rate-limit window and an ETA).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import IO, TYPE_CHECKING, Protocol

from lingodoc import _clock
from lingodoc.cli._visible import visible

if TYPE_CHECKING:
    import lingodoc


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_bar(percent: int, state: str, elapsed: float, width: int = 20) -> str:
    """Render a line of the progress bar: ``[#########-----------]  45%  processing  12s``.

    Args:
        percent: The progress, clamped to 0..100.
        state: The translation's state.
        elapsed: Seconds since the wait began.
        width: Characters between the brackets.

    Returns:
        The line, without a line ending.
    """
    percent = min(100, max(0, percent))
    return f"{progress_bar_only(percent, width)} {percent:>3}%  {state}  {_duration(elapsed)}"


class Progress:
    """Reports a wait on a stream: a bar redrawn in place, or a line per change.

    The CLI gives it stderr, so stdout holds only the result (clean JSON with ``--json``).
    """

    def __init__(self, stream: IO[str], *, bar: bool) -> None:
        self.stream, self.bar = stream, bar
        self.started = time.monotonic()
        self.last: tuple[str, int] | None = None
        self.drawn = 0  # length of the bar on screen; 0 if none

    def __call__(self, status: lingodoc.TranslationStatus) -> None:
        """Show a status read by ``wait_for_translation``."""
        state = (visible(status.status), status.progress)
        if self.bar:
            line = progress_bar(status.progress, state[0], time.monotonic() - self.started)
            # Padded to cover a longer line before it (a state's name can get shorter).
            self.stream.write("\r" + line.ljust(self.drawn))
            self.drawn = max(self.drawn, len(line))
        elif state != self.last:
            self.stream.write(f"{state[0]} {state[1]}%\n")
        self.last = state
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line, so that what follows starts on a line of its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = 0


# -- translate_many: texts done, requests, the rate-limit window, an ETA -----------------------

DEFAULT_WINDOW = 3600.0  # the spec's hourly window, until a run sees one reset after another
_SAME_TIME = 0.001  # seconds: times closer than this are the same


class RateWindow(Protocol):
    """The part of ``lingodoc.RateLimit`` the progress reads."""

    @property
    def limit(self) -> int: ...

    @property
    def remaining(self) -> int: ...

    @property
    def reset_at(self) -> datetime: ...


class BulkState(Protocol):
    """What ``lingodoc.BulkProgress`` tells (``translate_many``'s ``on_progress``)."""

    @property
    def done(self) -> int: ...

    @property
    def total(self) -> int: ...

    @property
    def requests(self) -> int: ...

    @property
    def requests_left(self) -> int: ...

    @property
    def rate_limit(self) -> RateWindow | None: ...

    @property
    def waiting_until(self) -> datetime | None: ...

    @property
    def cache_hits(self) -> int: ...

    @property
    def cache_misses(self) -> int: ...


def eta(
    *,
    now: float,
    busy: float,
    requests: int,
    requests_left: int,
    limit: int | None = None,
    remaining: int | None = None,
    reset_at: float | None = None,
    window: float = DEFAULT_WINDOW,
) -> float | None:
    """Estimate the seconds until the last request is answered.

    While the requests still needed fit in what the window has left, it is the time they
    take at the rate seen so far. Otherwise those beyond it wait for the reset: the time to
    the reset, plus a whole window for each further window they fill, plus the time the
    requests of the last one take.

    Args:
        now: The time now (Unix seconds).
        busy: Seconds spent sending so far, waits for a reset left out.
        requests: Requests answered so far.
        requests_left: Requests still needed.
        limit: Requests per window, if known.
        remaining: Requests left in the current window, if known.
        reset_at: When the current window resets (Unix seconds), if known.
        window: The window's length in seconds.

    Returns:
        Seconds, or ``None`` if nothing tells yet (no request answered, and none to wait for).
    """
    if requests_left <= 0:
        return 0.0
    per_request = busy / requests if requests > 0 else None
    if remaining is not None and reset_at is not None and reset_at <= now:
        # The window has reset since it was heard of: a new one, of unknown start.
        remaining, reset_at = limit, now + window
    if remaining is None or reset_at is None or requests_left <= remaining:
        return per_request * requests_left if per_request is not None else None
    beyond = requests_left - remaining
    per_window = max(1, limit or beyond)
    windows = -(-beyond // per_window)  # the windows after this one that the rest needs
    in_last = beyond - (windows - 1) * per_window
    return (reset_at - now) + (windows - 1) * window + (per_request or 0.0) * in_last


def _clock_time(moment: datetime) -> str:
    # Local time of day: the window resets within the hour, so the date goes without saying.
    return moment.astimezone().strftime("%H:%M:%S")


def bulk_status(
    state: BulkState, eta_seconds: float | None, waiting_until: datetime | None = None
) -> str:
    """Render what a progress report says, as one line (without the bar).

    ``  40%  400/1,000 texts  4/10 requests  window: 0 left, resets 15:04:05  ETA 59m58s``

    With a cache: ``cache: 600 hits, 400 misses`` after the requests (distinct texts).

    Args:
        state: The progress ``translate_many`` reported.
        eta_seconds: The estimate (see `eta`), or ``None`` if unknown.
        waiting_until: The end of a wait for the reset still under way, if the report
            does not say it (only the report that starts a wait does).

    Returns:
        The line, without a line ending.
    """
    percent = state.done * 100 // state.total if state.total else 100
    needed = state.requests + state.requests_left
    parts = [
        f"{percent:>3}%",
        f"{state.done:,}/{state.total:,} texts",
        f"{state.requests:,}/{needed:,} request{'s' * (needed != 1)}",
    ]
    if state.cache_hits or state.cache_misses:
        parts.append(
            f"cache: {plural(state.cache_hits, 'hit')}, {plural(state.cache_misses, 'miss')}"
        )
    window = state.rate_limit
    if window is not None:
        parts.append(f"window: {window.remaining:,} left, resets {_clock_time(window.reset_at)}")
    waiting_until = state.waiting_until or waiting_until
    if waiting_until is not None:
        parts.append(f"waiting for the reset at {_clock_time(waiting_until)}")
    if eta_seconds is not None and state.done < state.total:
        parts.append(f"ETA {_duration(eta_seconds)}")
    return "  ".join(parts)


def plural(count: int, noun: str) -> str:
    """``1 hit``, ``2 hits``, ``1 miss``, ``2 misses``."""
    return f"{count:,} {noun}{'' if count == 1 else 'es' if noun.endswith('s') else 's'}"


def _wall() -> float:
    return _clock.current().time()


class BulkProgressDisplay:
    """Reports ``translate_many``'s progress on a stream: a bar, or a line per 10 %.

    As a bar (on a terminal), the line is redrawn at each report. Otherwise a line is
    written at the first report, at each report that passes a tenth of the texts, and when
    a wait for the rate-limit reset begins.

    ``translate_many`` says when a wait begins (the report with ``waiting_until``), not
    when it ends, and the batches still in flight when it begins are reported during it
    (without ``waiting_until``). So a wait lasts here until the time it was announced for:
    it is shown until then, and left out of the time spent sending.

    Args:
        stream: Where to write: stderr.
        bar: Draw a bar in place, rather than lines.
        clock: Returns the time now (Unix seconds); the SDK's clock by default, so that
            ``lingodoc.testing.fake_clock`` moves it.
        width: The terminal's width, to keep the bar on one line.
    """

    def __init__(
        self,
        stream: IO[str],
        *,
        bar: bool,
        clock: Callable[[], float] = _wall,
        width: int = 80,
    ) -> None:
        self.stream, self.bar, self.clock, self.width = stream, bar, clock, width
        self.started: float | None = None
        self.waited = 0.0  # seconds of waits for a reset over, left out of the sending rate
        self.wait_began: float | None = None  # the wait under way: when it began,
        self.wait_until: datetime | None = None  # and when it ends
        self.window = DEFAULT_WINDOW
        self.last_reset: float | None = None
        self.tenths = -1  # the tenths of the texts done at the last line written
        self.drawn = 0

    def estimate(self, state: BulkState) -> float | None:
        """Return the ETA of ``state``, learning the window's length and the waits from it."""
        now = self.clock()
        if self.started is None:
            self.started = now
        self._follow_wait(now, state.waiting_until)
        window = state.rate_limit
        reset_at = window.reset_at.timestamp() if window is not None else None
        if reset_at is not None and (self.last_reset is None or reset_at > self.last_reset + 1.0):
            # A reset later than the last one by more than rounding: a new window, and the
            # gap between the two is the window's length.
            if self.last_reset is not None:
                self.window = reset_at - self.last_reset
            self.last_reset = reset_at
        waiting = now - self.wait_began if self.wait_began is not None else 0.0  # until now
        return eta(
            now=now,
            busy=max(0.0, now - self.started - self.waited - waiting),
            requests=state.requests,
            requests_left=state.requests_left,
            limit=window.limit if window is not None else None,
            remaining=window.remaining if window is not None else None,
            reset_at=reset_at,
            window=self.window,
        )

    def _follow_wait(self, now: float, announced: datetime | None) -> None:
        """Begin, extend or end the wait under way, as of ``now``."""
        self._end_wait(now)
        if announced is not None:
            if self.wait_began is None:
                self.wait_began, self.wait_until = now, announced
            elif self.wait_until is None or announced > self.wait_until:
                self.wait_until = announced  # a later reset, announced during the wait
        self._end_wait(now)

    def _end_wait(self, now: float) -> None:
        if self.wait_began is None or self.wait_until is None:
            return
        until = self.wait_until.timestamp()
        # Over (the time it lasted is left out of the sending rate): its end is a datetime,
        # to the microsecond, rounded maybe after the time the call waited to.
        if now >= until - _SAME_TIME:
            self.waited += max(0.0, until - self.wait_began)
            self.wait_began = self.wait_until = None

    def __call__(self, state: BulkState) -> None:
        """Show a progress report."""
        # A report that announces a wait says so, even if its end is past when it comes.
        announced, known = state.waiting_until, self.wait_until
        began_waiting = announced is not None and (known is None or announced > known)
        line = bulk_status(state, self.estimate(state), self.wait_until)
        if self.bar:
            percent = state.done * 100 // state.total if state.total else 100
            line = progress_bar_only(percent) + " " + line
            line = line[: max(20, self.width - 1)]  # a wrapped line could not be redrawn
            self.stream.write("\r" + line.ljust(self.drawn))
            self.drawn = max(self.drawn, len(line))
        else:
            tenths = state.done * 10 // state.total if state.total else 10
            if tenths > self.tenths or began_waiting:
                self.stream.write(line + "\n")
            self.tenths = max(self.tenths, tenths)
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line, so that what follows starts on a line of its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = 0


def progress_bar_only(percent: int, width: int = 20) -> str:
    """Render the bar alone: ``[#########-----------]``."""
    filled = min(100, max(0, percent)) * width // 100
    return f"[{'#' * filled}{'-' * (width - filled)}]"
