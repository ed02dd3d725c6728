"""OpenTelemetry (docs/configuration.md#tracing): looked up in ``sys.modules``, never imported.

The SDK's own transports, and ``DefaultAioHttpClient``'s, are not the ``httpx.HTTPTransport``
the instrumentation wraps: while it is on, they send through its public transport
(`Traced`) around `_Masked`, which masks the key in an error before it is recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx

from lingodoc._redaction import KeyMask
from lingodoc._version import __version__

_API = "opentelemetry.trace"
_HTTPX = "opentelemetry.instrumentation.httpx"

# The attempts of the call whose span is current: counted by `attempted`. next() on an
# itertools.count is atomic, so translate_many's threads count without a lock.
_attempts: contextvars.ContextVar[itertools.count[int] | None] = contextvars.ContextVar(
    "lingodoc_attempts", default=None
)
_tracer: Any = None  # lingodoc's tracer, once the API is imported
_NO_SPAN = contextlib.nullcontext()


def call(
    name: str, body: Mapping[str, Any] | None = None, texts: Sequence[str] | None = None
) -> contextlib.AbstractContextManager[object]:
    """The INTERNAL span of a call of the method ``name`` (its attempts' are the CLIENT spans)."""
    trace = sys.modules.get(_API)
    if trace is None:
        return _NO_SPAN
    global _tracer
    if _tracer is None:  # a proxy until the application sets its tracer provider
        _tracer = trace.get_tracer("lingodoc", __version__)
    body = body or {}
    languages = ("source_language", "target_language")
    attributes: dict[str, Any] = {f"lingodoc.{n}": body[n] for n in languages if n in body}
    if texts is not None:
        attributes["lingodoc.texts"] = len(texts)
        attributes["lingodoc.characters"] = sum(map(len, texts))
    return _span(f"lingodoc.{name}", attributes, trace.SpanKind.INTERNAL)


@contextlib.contextmanager
def _span(name: str, attributes: dict[str, Any], kind: Any) -> Iterator[object]:
    attempts = itertools.count()
    with _tracer.start_as_current_span(name, kind=kind, attributes=attributes) as span:
        token = _attempts.set(attempts)
        try:
            yield span
        finally:
            _attempts.reset(token)
            span.set_attribute("lingodoc.attempts", next(attempts))


def attempted() -> None:
    """Count an attempt of the call whose span is current, if any."""
    attempts = _attempts.get()
    if attempts is not None:
        next(attempts)


def http_on() -> bool:
    """Whether OpenTelemetry's httpx instrumentation is on (``instrument()`` was called)."""
    # None: the module is not imported, or is being imported.
    instrumentor = getattr(sys.modules.get(_HTTPX), "HTTPXClientInstrumentor", None)
    return instrumentor is not None and bool(instrumentor().is_instrumented_by_opentelemetry)


class _Masked:
    """What the instrumentation's transport wraps (and records the errors of): ``send``, masked."""

    def __init__(self, send: Any) -> None:
        self.send = send

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return self.send(request)  # type: ignore[no-any-return]
        except Exception as exc:
            error = _masked(exc, request)
        raise error  # out of the except: the original is not its context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self.send(request)  # type: ignore[no-any-return]
        except Exception as exc:
            error = _masked(exc, request)
        raise error


def _masked(error: Exception, request: httpx.Request) -> Exception:
    """``error``; or if it or a cause shows the key (a server's echo), a masked copy, no causes."""
    key_mask = KeyMask(request.headers.get("Authorization", "").removeprefix("Bearer "))
    shown = "".join(traceback.format_exception(error))  # as the span would record it
    if key_mask(shown) == shown:
        return error  # as it was: its type, attributes and causes
    message = key_mask(str(error))
    try:
        copy = type(error)(message)
    except TypeError:  # a type that takes more than a message: a transport error says it
        copy = httpx.TransportError(f"{type(error).__name__}: {message}")
    return copy.with_traceback(error.__traceback__)


class Traced:
    """A transport that sends with its ``send``: through the instrumentation's while `http_on`.

    That one is made once, from the global tracer provider: a ``tracer_provider`` or hooks of
    ``instrument()`` are unknown. Two threads may both make one: either will do.
    """

    traced: Any = None
    send: Callable[[httpx.Request], Any]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not http_on():
            return self.send(request)  # type: ignore[no-any-return]
        if self.traced is None:
            self.traced = sys.modules[_HTTPX].SyncOpenTelemetryTransport(_Masked(self.send))
        return self.traced.handle_request(request)  # type: ignore[no-any-return]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not http_on():
            return await self.send(request)  # type: ignore[no-any-return]
        if self.traced is None:
            self.traced = sys.modules[_HTTPX].AsyncOpenTelemetryTransport(_Masked(self.send))
        return await self.traced.handle_async_request(request)  # type: ignore[no-any-return]
