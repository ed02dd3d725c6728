"""One deadline per attempt, headers and body included (httpx times each step on its own).

docs/reliability.md says where each client enforces it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from typing import Any

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "lingodoc_deadline", default=None
)


@contextlib.contextmanager
def limit(seconds: float | None) -> Iterator[None]:
    """Give the attempt run inside the block ``seconds`` in all (``None``: no limit)."""
    # Real time, not the SDK's clock: it bounds socket I/O, which a fake clock does not speed up.
    token = _deadline.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


@contextlib.contextmanager
def async_limit(seconds: float | None) -> Iterator[None]:
    """`limit`, and the attempt cancelled at its deadline (``TimeoutError``), asyncio or trio."""
    import anyio  # here: a program that never awaits should not import it

    with limit(seconds), anyio.fail_after(seconds):
        yield


def shield() -> contextlib.AbstractContextManager[Any]:
    """Nothing to shield in a thread: it cannot be cancelled (the twin of `async_shield`)."""
    return contextlib.nullcontext()


def async_shield() -> contextlib.AbstractContextManager[Any]:
    """Shield closing a response from cancellation, which can leave a connection busy for good."""
    import anyio

    return anyio.CancelScope(shield=True)  # encode/httpcore#1093; closing never waits on I/O


def left() -> float | None:
    """Seconds left before the current attempt's deadline (0 once past); ``None``: no limit."""
    deadline = _deadline.get()
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)
