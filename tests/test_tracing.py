"""OpenTelemetry: a span per call, and one HTTP client span per attempt when httpx is instrumented.

Against the emulator served on loopback, so that the SDK's own transports (and
DefaultAioHttpClient's) send for real. The global tracer provider can be set once per
process: the module sets it (or joins one already set) and drops its spans after.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import lingodoc
from lingodoc import _tracing
from lingodoc.emulator import Emulator, EmulatorServer
from tests.conftest import API_KEY, call, close, http_client_for
from tests.reliability.fault_server import Action, FaultServer, failure_body

pytestmark = pytest.mark.aiohttp  # client_class runs on DefaultAioHttpClient too

TEXTS = ["Hello", "world", "Good", "day", "Cat", "Dog"]


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()  # it keeps no span of the later tests of this process


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    exporter.clear()
    return exporter


@pytest.fixture
def instrumented() -> Iterator[None]:
    HTTPXClientInstrumentor().instrument()
    yield
    HTTPXClientInstrumentor().uninstrument()


@pytest.fixture(scope="module")
def emulator() -> Emulator:
    return Emulator(rate_limit=10**6)


@pytest.fixture(scope="module")
def served(emulator: Emulator) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        yield running


@pytest.fixture
def server(served: EmulatorServer, emulator: Emulator) -> EmulatorServer:
    emulator.clear_faults()
    return served


@pytest.fixture
async def client(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> AsyncIterator[lingodoc.Client | lingodoc.AsyncClient]:
    instance = client_class(server.api_key, base_url=server.base_url)
    yield instance
    await close(instance)


def http_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.kind is SpanKind.CLIENT]


def span_named(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    (found,) = [span for span in exporter.get_finished_spans() if span.name == name]
    return found


def attributes(span: ReadableSpan) -> Mapping[str, Any]:
    return span.attributes or {}


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


async def test_a_retried_call_records_one_http_span_per_attempt_under_its_own(
    client: lingodoc.Client, server: EmulatorServer, spans: InMemorySpanExporter, instrumented: None
) -> None:
    url = f"{server.base_url}/translate"
    with httpx.Client() as http:  # a plain httpx request: its span is the model
        http.post(url, json={})
    (plain,) = spans.get_finished_spans()
    spans.clear()
    server.emulator.inject("server_error", status=503)  # then the retry passes
    await call(client, "translate", "Hello world", source_language="en", target_language="de")
    own = span_named(spans, "lingodoc.translate")
    assert own.kind is SpanKind.INTERNAL
    assert own.status.status_code is StatusCode.UNSET
    assert dict(attributes(own)) == {
        "lingodoc.source_language": "en",
        "lingodoc.target_language": "de",
        "lingodoc.texts": 1,
        "lingodoc.characters": 11,
        "lingodoc.attempts": 2,
    }
    attempts = http_spans(spans)
    assert [(s.name, dict(attributes(s))) for s in attempts] == [
        ("POST", {"http.method": "POST", "http.url": url, "http.status_code": status})
        for status in (503, 200)
    ]
    assert [parent_of(s) for s in attempts] == [own.context.span_id] * 2
    assert {s.context.trace_id for s in attempts} == {own.context.trace_id}
    # As a plain request's, in the semantic conventions the instrumentation is set to.
    assert [set(attributes(s)) for s in attempts] == [set(attributes(plain))] * 2


async def test_a_callers_http_client_gets_the_instrumentations_span_and_no_second(
    client_class: type[lingodoc.Client], server: EmulatorServer, spans: InMemorySpanExporter,
    instrumented: None,
) -> None:  # fmt: skip
    server.emulator.inject("server_error", status=503)
    http = http_client_for(client_class)
    client = client_class(server.api_key, base_url=server.base_url, http_client=http)
    try:
        await call(client, "translate", "Hello", source_language="en", target_language="de")
    finally:
        await close(client)
        await call(http, "aclose" if isinstance(http, httpx.AsyncClient) else "close")
    own = span_named(spans, "lingodoc.translate")
    attempts = http_spans(spans)
    assert [attributes(s)["http.status_code"] for s in attempts] == [503, 200]
    assert [parent_of(s) for s in attempts] == [own.context.span_id] * 2


@pytest.mark.asyncio_only  # aiohttp runs on asyncio alone
async def test_a_default_aiohttp_client_sending_through_its_send_records_one_span(
    server: EmulatorServer, spans: InMemorySpanExporter, instrumented: None
) -> None:
    # With headers of its own, requests go through its send(), not straight to its transport.
    http = lingodoc.DefaultAioHttpClient(headers={"X-Team": "docs"})
    async with lingodoc.AsyncClient(
        server.api_key, base_url=server.base_url, http_client=http
    ) as client:
        await client.translate("Hello", source_language="en", target_language="de")
    (attempt,) = http_spans(spans)
    assert attributes(attempt)["http.status_code"] == 200
    assert parent_of(attempt) == span_named(spans, "lingodoc.translate").context.span_id


async def test_without_the_instrumentation_only_the_call_has_a_span(
    client: lingodoc.Client, spans: InMemorySpanExporter
) -> None:
    await call(client, "translate", "Hello", source_language="en", target_language="de")
    (only,) = spans.get_finished_spans()
    assert only.name == "lingodoc.translate"
    assert attributes(only)["lingodoc.attempts"] == 1


async def test_each_method_has_its_span(
    client: lingodoc.Client, spans: InMemorySpanExporter, instrumented: None
) -> None:
    await call(
        client, "translate_batch", ["Hello", "Cat"], source_language="en", target_language="fr"
    )
    job = await call(client, "translate_document", "doc_welcome", target_language="de")
    await call(client, "get_translation", job.translation_id)
    await call(client, "list_documents")
    await call(client, "request", "GET", "/documents")
    names = [s.name for s in spans.get_finished_spans() if s.kind is SpanKind.INTERNAL]
    assert names == [
        "lingodoc.translate_batch", "lingodoc.translate_document", "lingodoc.get_translation",
        "lingodoc.list_documents", "lingodoc.request",
    ]  # fmt: skip
    batch = attributes(span_named(spans, "lingodoc.translate_batch"))
    assert (batch["lingodoc.texts"], batch["lingodoc.characters"]) == (2, 8)
    assert (batch["lingodoc.source_language"], batch["lingodoc.target_language"]) == ("en", "fr")
    document = attributes(span_named(spans, "lingodoc.translate_document"))
    assert dict(document) == {"lingodoc.target_language": "de", "lingodoc.attempts": 1}
    assert len(http_spans(spans)) == 5


async def test_a_failed_call_has_an_error_span_with_its_exception(
    client_class: type[lingodoc.Client], server: EmulatorServer, spans: InMemorySpanExporter,
    instrumented: None,
) -> None:  # fmt: skip
    client = client_class("ld_not_a_key_of_this_emulator", base_url=server.base_url)
    try:
        with pytest.raises(lingodoc.Unauthorized):
            await call(client, "translate", "Hello", source_language="en", target_language="de")
    finally:
        await close(client)
    own = span_named(spans, "lingodoc.translate")
    assert own.status.status_code is StatusCode.ERROR
    (event,) = own.events
    assert event.name == "exception"
    assert (event.attributes or {})["exception.type"] == "lingodoc.Unauthorized"
    assert attributes(own)["lingodoc.attempts"] == 1
    (attempt,) = http_spans(spans)
    assert attributes(attempt)["http.status_code"] == 401


def every_string(span: ReadableSpan) -> Iterator[str]:
    """The name, attribute values, events and status of ``span``, as text."""
    yield span.name
    yield str(span.status.description)
    mappings: list[Mapping[str, Any]] = [attributes(span), span.resource.attributes]
    for event in span.events:
        yield event.name
        mappings.append(event.attributes or {})
    for mapping in mappings:
        for name, value in mapping.items():
            yield f"{name}={value}"


@pytest.mark.parametrize("headers", ["not-captured", "captured-sanitized", "captured"])
async def test_the_key_is_in_no_span_unless_its_header_is_captured_unsanitized(
    client_class: type[lingodoc.Client], server: EmulatorServer, spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch, headers: str,
) -> None:  # fmt: skip
    if headers != "not-captured":  # every request header: the caution of the docs
        monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST", ".*")
    if headers == "captured-sanitized":  # what the docs advise
        sanitized = "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SANITIZE_FIELDS"
        monkeypatch.setenv(sanitized, "Authorization")
    HTTPXClientInstrumentor().instrument()
    client = client_class(server.api_key, base_url=server.base_url)
    try:
        await call(client, "translate", "Hello", source_language="en", target_language="de")
        with pytest.raises(lingodoc.NotFound):  # an error, and its exception recorded
            await call(client, "get_translation", "tr_missing")
    finally:
        HTTPXClientInstrumentor().uninstrument()
        await close(client)
    recorded = spans.get_finished_spans()
    assert len(recorded) == 4
    found = [text for span in recorded for text in every_string(span) if server.api_key in text]
    captured = "http.request.header.authorization="
    expected = [True, True] if headers == "captured" else []  # the header of each request
    assert [text.startswith(captured) for text in found] == expected


def assert_key_in_no_span(spans: Sequence[ReadableSpan], key: str) -> None:
    """No 8 characters of ``key`` in a row, in any case, in any name, attribute, event or status."""
    windows = {key[start : start + 8].lower() for start in range(len(key) - 7)}
    shown = [
        (span.name, text)
        for span in spans
        for text in every_string(span)
        if any(window in text.lower() for window in windows)
    ]
    assert shown == []


def answer(head: str, body: bytes = b"") -> Callable[[str], bytes]:
    """A response whose ``head`` (lines, without Content-Length unless it holds one) echoes
    the key: ``{key}`` as sent, ``{upper}`` and ``{lower}`` in one case."""

    def bytes_for(key: str) -> bytes:
        lines = head.format(key=key, upper=key.upper(), lower=key.lower())
        if "Content-Length" not in lines:
            lines += f"\r\nContent-Length: {len(body)}"
        return f"{lines}\r\nConnection: close\r\n\r\n".encode("latin-1") + body

    return bytes_for


ECHOES = {
    # aiohttp quotes the line it cannot parse; h11 quotes a status line it cannot.
    "content-length": answer("HTTP/1.1 200 OK\r\nContent-Length: {key}", b"{}"),
    "status-line": answer("HTTP/1.1 {key}"),
    "reason": answer("HTTP/1.1 503 {key}"),
    "headers": answer(
        'HTTP/1.1 401 Unauthorized\r\nX-Echo: {key}\r\nWWW-Authenticate: Bearer realm="{upper}"',
        failure_body("unauthorized"),
    ),
    "redirect": answer("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1/{lower}"),
    "body": answer(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json",
        failure_body("bad_request", f"not a key: {API_KEY}"),
    ),
}


def echoing(response: Callable[[str], bytes]) -> Action:
    """Answer with ``response`` of the key the request carried, then close."""

    def act(server: FaultServer, conn: socket.socket) -> None:
        key = server.requests[-1].headers["authorization"].removeprefix("Bearer ")
        conn.sendall(response(key))

    return act


async def failure_of_translate(client: lingodoc.Client | lingodoc.AsyncClient) -> BaseException:
    try:
        with pytest.raises(lingodoc.LingodocError) as raised:
            await call(client, "translate", "Hello", source_language="en", target_language="de")
    finally:
        await close(client)
    return raised.value


@pytest.mark.parametrize("echo", sorted(ECHOES))
async def test_no_span_shows_the_key_a_server_echoes(
    client_class: type[lingodoc.Client], spans: InMemorySpanExporter, instrumented: None,
    echo: str,
) -> None:  # fmt: skip
    server = FaultServer([echoing(ECHOES[echo])])
    try:
        await failure_of_translate(client_class(API_KEY, base_url=server.base_url(), max_retries=0))
    finally:
        server.stop()
    recorded = spans.get_finished_spans()
    assert len(http_spans(spans)) == 1
    assert span_named(spans, "lingodoc.translate").status.status_code is StatusCode.ERROR
    assert_key_in_no_span(recorded, API_KEY)


@pytest.mark.parametrize("echo", ["content-length", "status-line"])
async def test_an_error_masked_for_the_instrumentation_reaches_the_caller_as_without_it(
    client_class: type[lingodoc.Client], spans: InMemorySpanExporter, echo: str
) -> None:
    server = FaultServer([echoing(ECHOES[echo])] * 2)
    errors: list[BaseException] = []
    try:
        for on in (False, True):
            if on:
                HTTPXClientInstrumentor().instrument()
            client = client_class(API_KEY, base_url=server.base_url(), max_retries=0)
            try:
                errors.append(await failure_of_translate(client))
            finally:
                if on:
                    HTTPXClientInstrumentor().uninstrument()
    finally:
        server.stop()
    plain, traced = [(type(e), str(e), getattr(e, "request_sent", None)) for e in errors]
    assert traced == plain
    assert len(http_spans(spans)) == 1


REQUEST = httpx.Request(
    "POST", "http://127.0.0.1/v1/translate", headers={"Authorization": f"Bearer {API_KEY}"}
)


def test_an_error_that_shows_no_key_reaches_the_instrumentation_as_it_was() -> None:
    error = httpx.ConnectError("refused")
    error.__cause__ = OSError("no route to host")
    assert _tracing._masked(error, REQUEST) is error


class Coded(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message, code)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (httpx.ReadError(f"echo {API_KEY.upper()}"), httpx.ReadError("echo ****WXYZ")),
        (httpx.ReadError("closed"), httpx.ReadError("closed")),  # its cause shows the key
        (Coded(f"echo {API_KEY}", 1), httpx.TransportError("Coded: ('echo ****WXYZ', 1)")),
    ],
)
def test_an_error_that_shows_the_key_reaches_the_instrumentation_masked_without_causes(
    error: Exception, expected: Exception
) -> None:
    error.__cause__ = error.__context__ = OSError(API_KEY)
    masked = _tracing._masked(error, REQUEST)
    assert (type(masked), str(masked)) == (type(expected), str(expected))
    assert (masked.__cause__, masked.__context__) == (None, None)


async def test_translate_many_is_the_parent_of_its_batches_from_threads_or_tasks(
    client: lingodoc.Client, spans: InMemorySpanExporter, instrumented: None
) -> None:
    await call(
        client, "translate_many", TEXTS, source_language="en", target_language="de",
        batch_size=1, max_concurrency=3,
    )  # fmt: skip
    own = span_named(spans, "lingodoc.translate_many")
    assert (attributes(own)["lingodoc.texts"], attributes(own)["lingodoc.attempts"]) == (6, 6)
    assert attributes(own)["lingodoc.characters"] == sum(map(len, TEXTS))
    batches = http_spans(spans)
    assert [parent_of(s) for s in batches] == [own.context.span_id] * len(TEXTS)


async def test_wait_for_translation_is_the_parent_of_its_polls(
    client: lingodoc.Client, spans: InMemorySpanExporter, instrumented: None
) -> None:
    job = await call(client, "translate_document", "doc_welcome", target_language="fr")
    spans.clear()
    await call(client, "wait_for_translation", job, poll_interval=2.0)
    own = span_named(spans, "lingodoc.wait_for_translation")
    polls = http_spans(spans)
    assert len(polls) >= 2  # the job takes 6 s on the fake clock
    assert attributes(own)["lingodoc.attempts"] == len(polls)
    assert {parent_of(s) for s in polls} == {own.context.span_id}


class DictCache:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.data.update(items)


async def test_a_call_the_cache_answers_has_its_span_and_no_attempt(
    client_class: type[lingodoc.Client], server: EmulatorServer, spans: InMemorySpanExporter,
    instrumented: None,
) -> None:  # fmt: skip
    client = client_class(server.api_key, base_url=server.base_url, cache=DictCache())
    try:
        for _ in range(2):
            await call(client, "translate", "Hello", source_language="en", target_language="de")
    finally:
        await close(client)
    calls = [s for s in spans.get_finished_spans() if s.name == "lingodoc.translate"]
    assert [attributes(s)["lingodoc.attempts"] for s in calls] == [1, 0]
    assert len(http_spans(spans)) == 1


def test_a_program_that_never_imports_opentelemetry_does_not_load_it() -> None:
    code = (
        "import sys\n"
        "from lingodoc.emulator import Emulator\n"
        "with Emulator().client() as client:\n"
        "    client.translate('Hello', source_language='en', target_language='de')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
