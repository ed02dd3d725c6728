"""One deadline per attempt, headers and body included (httpx times each step on its own)."""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from types import TracebackType
from typing import Any

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "lingodoc_deadline", default=None
)


class Limit:
    """Give the attempt run inside the block ``seconds`` in all (``None``: no limit).

    ``with`` sets the deadline that the SDK's own streams and the body reader keep to;
    ``async with`` also cancels the attempt at the deadline (``TimeoutError``) with anyio's
    ``fail_after`` if ``cancel`` (see `async_limit`).
    """

    __slots__ = ("_cancel", "_scope", "_seconds", "_token")

    def __init__(self, seconds: float | None, cancel: str | None) -> None:
        self._seconds = seconds
        self._cancel = None if seconds is None else cancel
        self._scope: Any = None

    def __enter__(self) -> None:
        # Real time, not the SDK's clock: it bounds socket I/O, which a fake clock cannot speed.
        seconds = self._seconds
        self._token = _deadline.set(None if seconds is None else time.monotonic() + seconds)

    def __exit__(self, *exc_info: object) -> None:
        _deadline.reset(self._token)

    async def __aenter__(self) -> None:
        self.__enter__()
        if self._cancel:
            import anyio  # here: a program that never awaits should not import it

            self._scope = anyio.fail_after(self._seconds)
            self._scope.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.__exit__()  # first: the scope's own exit may raise (TimeoutError)
        return None if self._scope is None else self._scope.__exit__(kind, exc, tb)


def async_limit(
    seconds: float | None, cancel: str | None
) -> contextlib.AbstractAsyncContextManager[Any]:
    """The `Limit` of an `AsyncClient`'s attempt; ``cancel``: how it cancels it, if it does.

    ``"asyncio"``: ``asyncio.timeout``, the cheapest public scope, where it exists: it
    cancels the attempt at its end, so the attempt needs no deadline of the SDK's.
    """
    if cancel == "asyncio" and seconds is not None and sys.version_info >= (3, 11):
        import asyncio

        return asyncio.timeout(seconds)
    return Limit(seconds, cancel)


def shield(theirs: bool) -> contextlib.AbstractContextManager[Any]:
    """Nothing to shield in a thread: it cannot be cancelled (the twin of `async_shield`)."""
    return contextlib.nullcontext()


def async_shield(theirs: bool) -> contextlib.AbstractContextManager[Any]:
    """Shield closing a response of a caller's http client (``theirs``) from cancel scopes.

    Its transport may await before it hands the connection back, and a cancellation there
    can leave the connection busy for good; httpcore's pool shields its own close.
    """
    if not theirs:
        return contextlib.nullcontext()
    import anyio

    return anyio.CancelScope(shield=True)


def left() -> float | None:
    """Seconds left before the current attempt's deadline (0 once past); ``None``: no limit."""
    deadline = _deadline.get()
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def cut(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before the deadline, or ``error`` once it has passed."""
    remaining = left()
    if remaining is None:
        return timeout
    if remaining <= 0:
        raise error("the attempt took longer than its timeout")
    return remaining if timeout is None else min(timeout, remaining)
