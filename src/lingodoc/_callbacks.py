"""``on_progress``: checked before the first request, and called with what a call reports."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TypeVar

from lingodoc._exceptions import InvalidArgumentType

T = TypeVar("T")

_CANNOT_AWAIT = "which Client cannot await: pass a plain function, or use AsyncClient"


def is_async(function: object) -> bool:
    """Whether calling ``function`` makes a coroutine (``async def``, or an async ``__call__``)."""
    call = getattr(function, "__call__", None)  # noqa: B004  # an object's async __call__
    return any(map(inspect.iscoroutinefunction, (function, call)))


def check(on_progress: object, *, awaits: bool) -> None:
    """Check an ``on_progress``: callable, and no ``async def`` unless the client awaits it."""
    if on_progress is not None and not callable(on_progress):
        raise InvalidArgumentType("on_progress must be callable")
    if not awaits and is_async(on_progress):
        raise InvalidArgumentType(
            f"on_progress is a coroutine function (async def), {_CANNOT_AWAIT}"
        )


def report(on_progress: Callable[[T], object] | None, value: T) -> None:
    """Call ``on_progress`` with ``value``, if it is set; refuse a coroutine it returns."""
    if on_progress is not None:
        result = on_progress(value)
        if inspect.iscoroutine(result):  # closed, so never awaited
            result.close()
            raise InvalidArgumentType(f"on_progress returned a coroutine, {_CANNOT_AWAIT}")


async def async_report(on_progress: Callable[[T], object] | None, value: T) -> None:
    """Call ``on_progress`` with ``value``, if it is set, awaiting what it returns."""
    if on_progress is not None:
        result = on_progress(value)
        if inspect.isawaitable(result):
            await result
