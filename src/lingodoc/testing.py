"""Helpers for testing code that uses lingodoc without real waiting; not imported by lingodoc."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from lingodoc import _clock

__all__ = ["FakeClock", "fake_clock"]

_SLEEPS_SHOWN = 5  # in the repr


class FakeClock(_clock.SystemClock):
    """A clock that moves only when something sleeps on it or calls `advance`: no real waiting.

    Args:
        start: The Unix time it starts at; by default the real time now.

    Attributes:
        sleeps: Every sleep requested through this clock, in seconds, in order.
    """

    def __init__(self, *, start: float | None = None) -> None:
        self._lock = threading.RLock()
        self._monotonic = 0.0
        self._wall = time.time() if start is None else float(start)
        self.sleeps: list[float] = []

    def __repr__(self) -> str:
        """``FakeClock(monotonic=12.5, sleeps=[5.0, 5.0, 2.5])``, only the last sleeps of many."""
        with self._lock:
            monotonic, sleeps = self._monotonic, list(self.sleeps)
        # The last sleeps are the ones that tell what a test was waiting for when it failed.
        shown = [repr(seconds) for seconds in sleeps[-_SLEEPS_SHOWN:]]
        if len(sleeps) > _SLEEPS_SHOWN:
            shown.insert(0, f"<{len(sleeps) - _SLEEPS_SHOWN} earlier>")
        return f"FakeClock(monotonic={monotonic!r}, sleeps=[{', '.join(shown)}])"

    def monotonic(self) -> float:
        """Return the fake monotonic time.

        Returns:
            The seconds slept (or advanced) since the clock was made.
        """
        return self._monotonic

    def time(self) -> float:
        """Return the fake wall-clock time.

        Returns:
            The Unix time: the start time plus the seconds slept (or advanced) since.
        """
        return self._wall

    def advance(self, seconds: float) -> None:
        """Move the clock forward without recording a sleep.

        Args:
            seconds: How far to move it.

        Raises:
            ValueError: If ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._monotonic += seconds
            self._wall += seconds

    def sleep(self, seconds: float) -> None:
        """Record the sleep and move the clock forward at once.

        Args:
            seconds: The sleep asked for; a negative one counts as 0.
        """
        seconds = max(0.0, float(seconds))
        with self._lock:  # the sleep recorded and the clock moved as one
            self.sleeps.append(seconds)
            self.advance(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Record a sleep of ``seconds`` unless ``event`` is set; return at once either way.

        Args:
            event: What ends the sleep early.
            seconds: The longest sleep asked for; a negative one counts as 0.

        Returns:
            Whether ``event`` is set.
        """
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()

    async def async_sleep(self, seconds: float) -> None:
        """Like `sleep`, then yield to the event loop once (where a cancelled task stops).

        Args:
            seconds: The sleep asked for; a negative one counts as 0.
        """
        import anyio.lowlevel

        self.sleep(seconds)
        await anyio.lowlevel.checkpoint()


@contextmanager
def fake_clock(clock: FakeClock | None = None) -> Iterator[FakeClock]:
    """Make every lingodoc wait instant for the duration of the ``with`` block.

    Args:
        clock: The clock to install; a new [`FakeClock`][lingodoc.testing.FakeClock] by default.

    Yields:
        The installed clock, to inspect ``sleeps`` or call ``advance``.
    """
    installed = FakeClock() if clock is None else clock
    previous = _clock.install(installed)
    try:
        yield installed
    finally:
        _clock.install(previous)
