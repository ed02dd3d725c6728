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
        return event.wait(max(0.0, seconds))

    async def async_sleep(self, seconds: float) -> None:
        import anyio  # here: a program that never awaits should not import it

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
    """`async_sleep`; True if ``event`` is set by then (no early wake-up: its setter cancels us)."""
    await _current.async_sleep(seconds)
    return event.is_set()


def install(clock: SystemClock) -> SystemClock:
    """Make ``clock`` the clock in force and return the one it replaces."""
    global _current
    previous, _current = _current, clock
    return previous
