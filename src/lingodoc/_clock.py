"""Where lingodoc reads the time and sleeps: tests swap in a `lingodoc.testing.FakeClock`."""

from __future__ import annotations

import threading
import time


class SystemClock:
    """The real clock: ``time.monotonic``, ``time.time`` and real sleeps."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        # Within what a lock's wait takes: a Retry-After of 1e15 s would raise OverflowError.
        return event.wait(min(max(0.0, seconds), threading.TIMEOUT_MAX))

    async def async_sleep(self, seconds: float) -> None:
        import anyio  # here: a program that never awaits should not import it

        await anyio.sleep(seconds)


_current: SystemClock = SystemClock()


def current() -> SystemClock:
    """Return the clock in force (the system clock unless a test swapped it)."""
    return _current


def wait(event: threading.Event | None, seconds: float) -> None:
    """Sleep ``seconds`` on the clock in force (tests swap it), or until ``event`` is set."""
    if event is None:
        _current.sleep(seconds)
    else:
        _current.wait(event, seconds)


async def async_wait(event: threading.Event | None, seconds: float) -> None:
    """`wait`, not blocking the event loop; it never wakes early (the event's setter cancels it)."""
    await _current.async_sleep(seconds)


def install(clock: SystemClock) -> SystemClock:
    """Make ``clock`` the clock in force and return the one it replaces."""
    global _current
    previous, _current = _current, clock
    return previous
