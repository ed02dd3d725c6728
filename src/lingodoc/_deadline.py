"""One deadline per attempt, headers and body included.

httpx applies its timeouts step by step: a wait for a connection, connecting, each write,
each wait for data. A server that sends its headers or its body a byte at a time holds a
call for as long as it likes. So each attempt also has one deadline for all of it:

- ``AsyncClient``: `async_limit` is ``anyio.fail_after`` around the attempt, which cancels
  it at the deadline whatever transport sends it (httpx's own, aiohttp's, a caller's);
- ``Client``: a thread cannot be cancelled, so the SDK's own http client sends through
  ``_transport.DeadlineTransport``, which cuts every connect, read and write to the time
  `left`. With an ``http_client`` of the caller's, each step keeps its own timeout;
- the body is checked between chunks (``_response.BodyReader``), for any transport.

The deadline is real time (``time.monotonic``), not the SDK's swappable clock: it bounds
socket I/O, which a fake clock in a test does not speed up.
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
    """Shield closing a response from cancellation.

    httpcore cancelled while it hands a connection back to its pool can leave the
    connection marked busy for good (encode/httpcore#1093); closing takes no network wait.
    """
    import anyio

    return anyio.CancelScope(shield=True)


def left() -> float | None:
    """Seconds left before the current attempt's deadline (0 once past); ``None``: no limit."""
    deadline = _deadline.get()
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)
