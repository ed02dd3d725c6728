"""Waiting in a test for an event or a condition, never for a fixed time.

A test waits for what it needs (an event set, a request that arrived, a file written), and
PATIENCE bounds the wait: far past what it takes on any machine, however crowded (a shared CI
runner, a process stopped for a while), so that only a hung test reaches it and then fails
alone, saying what it waited for. A timeout that a test means to fire (a read timeout against
a server that never answers) is not such a bound: it stays short, and whatever must not time
out beside it gets PATIENCE. Without pytest: scripts/soak.py imports tests/reliability/sockets.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

PATIENCE = 30.0  # seconds
_EVERY = 0.01  # seconds between two looks at a condition


def wait_until(condition: Callable[[], object], what: str, timeout: float = PATIENCE) -> None:
    """Look at ``condition`` (real time) until it holds; fail, saying ``what``, after ``timeout``.

    Raises:
        AssertionError: ``condition()`` was still false ``timeout`` seconds on.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout:g} s")
        time.sleep(_EVERY)


async def async_wait_until(
    condition: Callable[[], object], what: str, timeout: float = PATIENCE
) -> None:
    """`wait_until` in an async test: the event loop runs on meanwhile (asyncio or trio)."""
    import anyio

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout:g} s")
        await anyio.sleep(_EVERY)
