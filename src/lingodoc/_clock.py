"""Where lingodoc reads the time and sleeps.

Every wait in the SDK (retry backoff, 429 waits, polling, pacing) and every reading of
the time (rate-limit resets, poll deadlines) goes through the clock returned by
`current`. Tests swap it for a `lingodoc.testing.FakeClock`, so no
test of the SDK, or of an application built on it, has to really sleep.
"""

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
        # A sleep that ends early when `event` is set; Ctrl-C ends it too.
        return event.wait(max(0.0, seconds))

    async def async_sleep(self, seconds: float) -> None:
        # Through anyio (httpx's own dependency), so it sleeps under asyncio and trio alike.
        # Imported here: a program that never awaits should not pay for it.
        import anyio

        await anyio.sleep(seconds)


_current: SystemClock = SystemClock()


def current() -> SystemClock:
    """Return the clock in force (the system clock unless a test swapped it)."""
    return _current


def sleep(seconds: float) -> None:
    """Sleep on the clock in force (looked up now, so a test's swap takes effect)."""
    _current.sleep(seconds)


def wait(event: threading.Event, seconds: float) -> bool:
    """Sleep on the clock in force until ``event`` is set (at most ``seconds``); True if set."""
    return _current.wait(event, seconds)


async def async_sleep(seconds: float) -> None:
    """Sleep on the clock in force without blocking the event loop (asyncio or trio)."""
    await _current.async_sleep(seconds)


async def async_wait(event: threading.Event, seconds: float) -> bool:
    """Sleep on the clock in force; True if ``event`` is set by then.

    The async twin of `wait` (asyncio or trio): a task needs no early wake-up, since
    whoever sets ``event`` cancels the task too (``translate_many``'s task group).
    """
    await _current.async_sleep(seconds)
    return event.is_set()


def install(clock: SystemClock) -> SystemClock:
    """Make ``clock`` the clock in force and return the one it replaces."""
    global _current
    previous, _current = _current, clock
    return previous
