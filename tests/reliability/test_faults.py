"""Network faults over real loopback sockets: the exact outcome for Client and AsyncClient.

Each test scripts a :class:`FaultServer` (one action per connection) and asserts
what the client returns or raises and how many requests reached the server.
The autouse fake clock makes the SDK's waits instant; socket timeouts stay real: a timeout
meant to run out is SHORT, and one that an answer must beat, after an attempt that ran out
of it, is ROOMY (the process may be stopped meanwhile, as on a crowded machine).
"""

from __future__ import annotations

import functools
import gzip
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import API_KEY, call, close
from tests.reliability.fault_server import (
    Action,
    FaultServer,
    FaultServers,
    drip,
    drip_head,
    endless_headers,
    envelope_body,
    failure_body,
    head_of,
    huge,
    keep_alive,
    reset_before,
    reset_during,
    response_bytes,
    stall,
    status,
    truncated,
    with_surplus,
)
from tests.waiting import PATIENCE

pytestmark = pytest.mark.aiohttp

AnyClient = lingodoc.Client | lingodoc.AsyncClient
MB = 1024 * 1024
TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
JOB = {"document_id": "doc_1", "translation_id": "tr_1", "status": "processing"}
JSON = {"Content-Type": "application/json"}
HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
SHORT = 0.5  # seconds: the attempt's timeout, when every attempt is to run out of it
ROOMY = 2.0  # seconds: the same, when the next attempt is to be answered within it


def ok(data: Any = TRANSLATION) -> Action:
    return status(200, envelope_body(data), JSON)


def server_error(code: int) -> Action:
    return status(code, failure_body("INTERNAL_ERROR"), JSON)


def rate_limited(reset: int) -> Action:
    headers = {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0"}
    return status(
        429, failure_body("RATE_LIMITED"), {**JSON, **headers, "X-RateLimit-Reset": str(reset)}
    )


@pytest.fixture
def servers() -> Iterator[FaultServers]:
    started = FaultServers()
    yield started
    started.stop_all()


Connect = Callable[..., AnyClient]


@pytest.fixture
async def connect(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
) -> AsyncIterator[Connect]:
    """Make clients of the kind under test bound to a fault server; closed at teardown."""
    made: list[AnyClient] = []

    def make(server: FaultServer, **options: Any) -> AnyClient:
        options.setdefault("timeout", 5.0)  # no test may hang on a socket
        client = client_class(API_KEY, base_url=server.base_url(), **options)
        made.append(client)
        return client

    yield make
    for client in made:
        await close(client)


async def translate(client: AnyClient) -> lingodoc.TextTranslation:
    return await call(client, "translate", "Hello", source_language="en", target_language="de")  # type: ignore[no-any-return]


async def translate_document(client: AnyClient) -> lingodoc.TranslationJob:
    return await call(client, "translate_document", "doc_1", target_language="de")  # type: ignore[no-any-return]


async def failure_of(coroutine: Any) -> lingodoc.LingodocError:
    with pytest.raises(lingodoc.LingodocError) as caught:
        await coroutine
    return caught.value


async def failure_with_peak_memory(client: AnyClient) -> tuple[lingodoc.LingodocError, int]:
    """The error of a second ``translate``, and the most memory it allocated at once.

    Memory is counted by tracemalloc, not timed: deterministic on a loaded machine too. The
    first call, which must succeed, imports the result models (the SDK imports them lazily)
    and is not counted.
    """
    assert (await translate(client)).translated_text == "Hallo"
    tracemalloc.start()
    try:
        error = await failure_of(translate(client))
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# Connections that fail ------------------------------------------------------------


async def test_a_refused_connection_is_retried_then_raised_as_connection_error(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    server = servers(listening=False)
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.APIConnectionError
    assert type(error.__cause__) is httpx.ConnectError
    assert len(clock.sleeps) == 2  # 3 attempts, each refused: nothing reached the server
    assert server.requests == []


class ListenOnSleep(FakeClock):
    """A fake clock that makes the server start listening at the client's first backoff."""

    def __init__(self, server: FaultServer) -> None:
        super().__init__()
        self.server = server

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.server.listen()


async def test_a_document_translation_refused_at_connect_is_retried(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(ok(JOB), listening=False)
    client = connect(server, max_retries=2)
    with fake_clock(ListenOnSleep(server)) as clock:
        job = await translate_document(client)
    assert job.translation_id == "tr_1"
    assert len(clock.sleeps) == 1  # refused once, then sent once
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/v1/documents/doc_1/translate")
    ]


FAILED_CONNECTIONS = {
    "reset-before-response": reset_before,
    "reset-during-response": reset_during,
    "truncated-body": truncated,
}


@pytest.mark.parametrize("fault", FAILED_CONNECTIONS.values(), ids=FAILED_CONNECTIONS.keys())
async def test_a_dropped_translate_is_retried_and_succeeds(
    servers: FaultServers, connect: Connect, fault: Callable[[], Action]
) -> None:
    server = servers(fault(), ok())
    result = await translate(connect(server, max_retries=2))
    assert result.translated_text == "Hallo"
    assert len(server.requests) == 2


@pytest.mark.parametrize("fault", FAILED_CONNECTIONS.values(), ids=FAILED_CONNECTIONS.keys())
async def test_a_translate_dropped_every_time_raises_connection_error_after_the_retries(
    servers: FaultServers, connect: Connect, fault: Callable[[], Action]
) -> None:
    server = servers(fault(), fault(), fault())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.APIConnectionError
    assert isinstance(error.__cause__, (httpx.ReadError, httpx.RemoteProtocolError))
    assert len(server.requests) == 3


@pytest.mark.parametrize("fault", FAILED_CONNECTIONS.values(), ids=FAILED_CONNECTIONS.keys())
async def test_a_document_translation_dropped_after_sending_is_not_retried(
    servers: FaultServers, connect: Connect, clock: FakeClock, fault: Callable[[], Action]
) -> None:
    server = servers(fault(), ok(JOB))
    error = await failure_of(translate_document(connect(server, max_retries=2)))
    assert type(error) is lingodoc.APIConnectionError
    assert len(server.requests) == 1  # the job may have started: never sent twice
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("method", "chunked"),
    [("translate", False), ("translate", True), ("translate_document", False)],
)
async def test_bytes_past_a_responses_end_never_answer_the_next_call(
    servers: FaultServers, connect: Connect, method: str, chunked: bool
) -> None:
    # One connection answers the first call and sends a whole second response right after
    # it: reused, it would hand that response to the next call.
    injected = response_bytes(200, envelope_body({**TRANSLATION, "translated_text": "INJECTED"}))
    second = envelope_body(TRANSLATION if method == "translate" else JOB)
    first = with_surplus(envelope_body(TRANSLATION), injected, chunked=chunked)
    server = servers(first, status(200, second, JSON))
    client = connect(server, max_retries=0)
    assert (await translate(client)).translated_text == "Hallo"
    if method == "translate":
        again = await translate(client)
        assert again.translated_text == "Hallo"
        assert again.http_response.content == second  # the second server action's
    else:
        assert (await translate_document(client)).translation_id == "tr_1"
    assert len(server.requests) == 2  # the second on a connection of its own


def answer(text: str) -> bytes:
    return envelope_body({**TRANSLATION, "translated_text": text})


def chunked(body: bytes, extension: bytes = b"", trailer_end: bytes = b"\r\n") -> bytes:
    """``body`` in two chunks, each size line with ``extension``, then a trailer section."""
    half = len(body) // 2
    chunks = b"".join(
        b"%x%s\r\n%s\r\n" % (len(part), extension, part) for part in (body[:half], body[half:])
    )
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head + chunks + b"0\r\nX-T: 1" + trailer_end * 2


def lf(response: bytes) -> bytes:
    return response.replace(b"\r\n", b"\n")


def with_head(body: bytes, old: bytes, new: bytes) -> bytes:
    response = response_bytes(200, body)
    return response.replace(old % len(body), new % ((len(body),) * new.count(b"%d")))


INJECTED = response_bytes(200, answer("INJECTED"))
# A first answer whose framing a hand-written parser once read apart from h11 (the parser
# httpcore reads it with), and a whole second answer right after it, in the same write.
LOOSE_FRAMINGS: dict[str, Callable[[bytes], bytes]] = {
    "bare-lf-head": lambda body: lf(response_bytes(200, body)) + INJECTED,
    "comma-joined-length": lambda body: with_head(body, b": %d", b": %d, %d") + INJECTED,
    "folded-length": lambda body: with_head(body, b": %d", b":\r\n %d") + INJECTED,
    "chunk-extension-with-cr": lambda body: chunked(body, b';x="a\rb"') + INJECTED,
    "bare-lf-trailer": lambda body: chunked(body, trailer_end=b"\n") + lf(INJECTED),
    "bare-lf-both-answers": lambda body: lf(response_bytes(200, body) + INJECTED),
}


AIOHTTP_REFUSES = {"comma-joined-length", "chunk-extension-with-cr"}


def answering_in_turn(framing: str) -> list[Action]:
    """Each connection answers the n-th request with ``answer-n``, the first loosely framed."""
    first = LOOSE_FRAMINGS[framing](answer("answer-1"))
    answers = iter([first, *(response_bytes(200, answer(f"answer-{n}")) for n in (2, 3))])
    return [keep_alive(answers)] * 3


@pytest.mark.parametrize("framing", LOOSE_FRAMINGS)
async def test_each_call_gets_its_own_answer_whatever_the_framing_of_the_one_before(
    servers: FaultServers, connect: Connect, client_class: type[AnyClient], framing: str
) -> None:
    client = connect(servers(*answering_in_turn(framing)), max_retries=0)
    texts = []
    for _ in range(3):
        try:
            texts.append((await translate(client)).translated_text)
        except lingodoc.APIConnectionError:
            texts.append("refused")
    # aiohttp's own parser refuses two of these framings: the call fails, the next are right.
    aiohttp = client_class.__name__ == "AioHttpClient"  # conftest's, however pytest loaded it
    refused = aiohttp and framing in AIOHTTP_REFUSES
    assert texts == ["refused" if refused else "answer-1", "answer-2", "answer-3"]


@pytest.mark.parametrize("framing", LOOSE_FRAMINGS)
def test_each_call_on_a_worker_thread_gets_its_own_answer_whatever_the_framing(
    servers: FaultServers, framing: str
) -> None:
    server = servers(*answering_in_turn(framing))
    with lingodoc.Client(API_KEY, base_url=server.base_url(), max_retries=0, timeout=5.0) as client:

        def three_calls() -> list[str]:
            calls = (
                client.translate("Hi", source_language="en", target_language="de") for _ in "123"
            )
            return [result.translated_text for result in calls]

        with ThreadPoolExecutor(1) as worker:
            texts = worker.submit(three_calls).result(timeout=PATIENCE)
    assert texts == ["answer-1", "answer-2", "answer-3"]


async def test_an_endless_header_section_is_a_connection_error(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(endless_headers())
    error = await failure_of(translate(connect(server, max_retries=0)))
    assert type(error) is lingodoc.APIConnectionError
    assert type(error.__cause__) is httpx.RemoteProtocolError  # httpcore caps a head at 100 KiB
    assert len(server.requests) == 1


# Timeouts ---------------------------------------------------------------------------


async def test_a_stalled_response_times_out_and_is_retried(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(stall(), ok())
    result = await translate(connect(server, timeout=ROOMY, max_retries=2))
    assert result.translated_text == "Hallo"
    assert len(server.requests) == 2


async def test_a_response_stalled_every_time_raises_timeout_after_the_retries(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(stall(), stall())
    started = time.monotonic()
    error = await failure_of(translate(connect(server, timeout=SHORT, max_retries=1)))
    assert type(error) is lingodoc.APITimeoutError
    assert type(error.__cause__) is httpx.ReadTimeout
    assert len(server.requests) == 2
    # A lower bound only: two real read timeouts, not an instant give-up. (No upper bound:
    # wall-clock limits flake on a loaded machine; the outcome above is the check.)
    assert time.monotonic() - started >= 2 * SHORT


async def test_a_stalled_document_translation_times_out_without_retry(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(stall(), ok(JOB))
    error = await failure_of(translate_document(connect(server, timeout=SHORT, max_retries=2)))
    assert type(error) is lingodoc.APITimeoutError
    assert len(server.requests) == 1


# Rate limits ------------------------------------------------------------------------


async def test_a_429_with_the_reset_in_seconds_waits_then_succeeds(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    server = servers(rate_limited(reset=5), ok())
    result = await translate(connect(server, max_retries=2))
    assert result.translated_text == "Hallo"
    assert clock.sleeps == [5.0]
    assert len(server.requests) == 2


async def test_a_429_with_the_reset_as_unix_time_waits_then_succeeds(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    reset = int(clock.time()) + 7
    wait = reset - clock.time()
    server = servers(rate_limited(reset=reset), ok())
    result = await translate(connect(server, max_retries=2))
    assert result.translated_text == "Hallo"
    assert clock.sleeps == [pytest.approx(wait)]
    assert len(server.requests) == 2


async def test_a_document_translation_waits_out_a_429_too(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    server = servers(rate_limited(reset=3), ok(JOB))
    job = await translate_document(connect(server, max_retries=2))
    assert job.translation_id == "tr_1"
    assert clock.sleeps == [3.0]
    assert len(server.requests) == 2


@pytest.mark.parametrize("unix_time", [False, True], ids=["seconds", "unix-time"])
async def test_a_429_with_a_far_reset_is_raised_at_once(
    servers: FaultServers, connect: Connect, clock: FakeClock, unix_time: bool
) -> None:
    reset = int(clock.time()) + 3600 if unix_time else 3600
    expected = reset - clock.time() if unix_time else 3600.0
    server = servers(rate_limited(reset=reset), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.RateLimited
    assert (error.status_code, error.code) == (429, "RATE_LIMITED")
    assert error.retry_after == pytest.approx(expected)
    assert error.rate_limit is not None
    assert error.rate_limit.remaining == 0
    assert len(server.requests) == 1
    assert clock.sleeps == []


# Server errors ----------------------------------------------------------------------


async def test_500_502_503_504_then_200_succeeds_on_the_fifth_attempt(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    server = servers(*(server_error(code) for code in (500, 502, 503, 504)), ok())
    result = await translate(connect(server, max_retries=4))
    assert result.translated_text == "Hallo"
    assert len(server.requests) == 5
    assert len(clock.sleeps) == 4


async def test_500_on_every_attempt_raises_server_error_after_the_retries(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(server_error(500), server_error(500), server_error(500), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.ServerError
    assert (error.status_code, error.code) == (500, "INTERNAL_ERROR")
    assert len(server.requests) == 3


@pytest.mark.parametrize("code", [500, 502, 504])
async def test_a_document_translation_is_not_retried_after_500_502_504(
    servers: FaultServers, connect: Connect, code: int
) -> None:
    server = servers(server_error(code), ok(JOB))
    error = await failure_of(translate_document(connect(server, max_retries=2)))
    assert type(error) is lingodoc.ServerError
    assert error.status_code == code
    assert len(server.requests) == 1


async def test_a_document_translation_is_retried_after_503(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(server_error(503), ok(JOB))
    job = await translate_document(connect(server, max_retries=2))
    assert job.translation_id == "tr_1"
    assert len(server.requests) == 2


# Bodies that are not the envelope ---------------------------------------------------


async def test_an_html_page_with_200_is_an_unexpected_response_not_retried(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(status(200, HTML, {"Content-Type": "text/html"}), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.UnexpectedResponse
    assert (error.status_code, error.code, error.body) == (200, None, HTML.decode())
    assert len(server.requests) == 1


async def test_an_html_502_is_retried_then_an_unexpected_response(
    servers: FaultServers, connect: Connect
) -> None:
    page = status(502, HTML, {"Content-Type": "text/html"})
    server = servers(page, page, page, ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    # Not a ServerError: the body is not the envelope. Its status still drives the retries.
    assert type(error) is lingodoc.UnexpectedResponse
    assert (error.status_code, error.body) == (502, HTML.decode())
    assert len(server.requests) == 3


async def test_an_html_502_then_200_succeeds(servers: FaultServers, connect: Connect) -> None:
    server = servers(status(502, HTML, {"Content-Type": "text/html"}), ok())
    assert (await translate(connect(server, max_retries=2))).translated_text == "Hallo"
    assert len(server.requests) == 2


async def test_an_empty_200_is_an_unexpected_response_not_retried(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(status(200), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.UnexpectedResponse
    assert (error.status_code, error.body) == (200, "")
    assert len(server.requests) == 1


async def test_an_empty_503_is_retried_and_succeeds(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(status(503), ok())
    assert (await translate(connect(server, max_retries=2))).translated_text == "Hallo"
    assert len(server.requests) == 2


# Huge bodies ------------------------------------------------------------------------


async def test_a_50_mb_error_body_is_cut_at_64_kib_without_loading_it(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(ok(), huge(500))
    error, peak = await failure_with_peak_memory(connect(server, max_retries=0))
    assert peak < 2 * MB  # about 0.3 MB; reading the whole body would take 50 MB
    assert type(error) is lingodoc.UnexpectedResponse  # 64 KiB of HTML is not the envelope
    assert error.status_code == 500
    assert error.body.startswith("<p>error</p><p>error</p>")
    assert len(error.body) <= 500
    server.stop()  # waits until the server saw the client hang up
    assert server.bytes_streamed < 16 * MB  # of 50 MB: what the socket buffers took at most


async def test_a_50_mb_success_body_is_refused_past_32_mib(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(huge(200), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.UnexpectedResponse
    assert error.status_code == 200
    assert "larger than 33,554,432 bytes" in error.message
    assert len(server.requests) == 1
    server.stop()
    assert 32 * MB < server.bytes_streamed < 50 * MB


# Compressed bodies --------------------------------------------------------------------


def raw_deflate(data: bytes) -> bytes:
    """Deflate without the zlib wrapper (zlib.compress takes no ``wbits`` before 3.11)."""
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # the zlib-wrapped deflate of RFC 9110
    "raw-deflate": raw_deflate,  # what some send
}


@functools.cache  # compressing 64 MB takes a third of a second: once per process
def bomb(size: int) -> bytes:
    """Gzip of ``size`` zero bytes: a thousandth of that on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MB)
    return b"".join(packer.compress(block) for _ in range(size // MB)) + packer.flush()


@pytest.mark.parametrize("encoding", ENCODERS, ids=ENCODERS.keys())
async def test_a_compressed_answer_is_decoded(
    servers: FaultServers, connect: Connect, encoding: str
) -> None:
    body = ENCODERS[encoding](envelope_body(TRANSLATION))
    name = "deflate" if encoding == "raw-deflate" else encoding
    server = servers(status(200, body, {**JSON, "Content-Encoding": name}))
    result = await translate(connect(server))
    assert (result.translated_text, result.target_language) == ("Hallo", "de")
    # Only what the SDK can decode with a bound on the output is asked for.
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


async def test_a_gzip_bomb_as_an_error_body_is_cut_at_64_kib_without_inflating_it(
    servers: FaultServers, connect: Connect
) -> None:
    compressed = bomb(64 * MB)  # 64 KiB on the wire
    server = servers(ok(), status(500, compressed, {"Content-Encoding": "gzip"}))
    error, peak = await failure_with_peak_memory(connect(server, max_retries=0))
    assert peak < 2 * MB  # httpx would inflate each 64 KiB read whole, up to 64 MB at once
    assert type(error) is lingodoc.UnexpectedResponse
    assert (error.status_code, error.message) == (
        500,
        f"the response body is not JSON, in answer to POST {server.base_url()}/translate",
    )


async def test_a_gzip_bomb_as_a_success_is_refused_past_32_mib(
    servers: FaultServers, connect: Connect
) -> None:
    server = servers(status(200, bomb(64 * MB), {**JSON, "Content-Encoding": "gzip"}), ok())
    error = await failure_of(translate(connect(server, max_retries=2)))
    assert type(error) is lingodoc.UnexpectedResponse
    assert "larger than 33,554,432 bytes" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("encoding", "body", "problem"),
    [
        ("gzip", b"not gzip at all", "not valid gzip"),
        ("br", b"\x0b\x02\x80", "encoded with 'br', which lingodoc does not decode"),
        ("gzip, gzip", gzip.compress(gzip.compress(b"{}")), "encoded with 'gzip,gzip'"),
    ],
    ids=["invalid-gzip", "brotli", "gzip-twice"],
)
async def test_a_body_that_cannot_be_decoded_is_a_connection_error(
    servers: FaultServers, connect: Connect, encoding: str, body: bytes, problem: str
) -> None:
    server = servers(status(200, body, {**JSON, "Content-Encoding": encoding}), ok())
    error = await failure_of(translate_document(connect(server, max_retries=2)))
    assert type(error) is lingodoc.APIConnectionError
    assert problem in str(error)
    assert type(error.__cause__) is httpx.DecodingError
    assert len(server.requests) == 1  # a job was perhaps started: not sent again


# A body that trickles in --------------------------------------------------------------


async def test_a_body_trickling_in_times_out_after_the_read_timeout_in_all(
    servers: FaultServers, connect: Connect
) -> None:
    # One byte every 0.1 s: each read comes well within the 0.5 s read timeout, but
    # the whole body would take 10 s. httpx alone waits for it all.
    body = envelope_body({"translated_text": "x" * 60})
    server = servers(drip(body, every=0.1), ok())
    error = await failure_of(translate(connect(server, timeout=SHORT, max_retries=0)))
    assert type(error) is lingodoc.APITimeoutError
    assert "the response took longer than the timeout of the attempt (0.5 s)" in str(error)
    assert type(error.__cause__) is httpx.ReadTimeout
    server.stop()
    assert server.bytes_streamed < len(body)  # the client hung up before the body's end


async def test_a_body_trickling_in_through_your_own_http_client_times_out_in_all(
    servers: FaultServers, connect: Connect, client_class: type[AnyClient]
) -> None:
    # httpx times each read of your http_client; the SDK bounds the body as a whole.
    body = envelope_body({"translated_text": "x" * 60})
    server = servers(drip(body, every=0.1), ok())
    http = (httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient)()
    error = await failure_of(
        translate(connect(server, timeout=SHORT, max_retries=0, http_client=http))
    )
    assert type(error) is lingodoc.APITimeoutError
    assert "the response took longer than the timeout of the attempt (0.5 s)" in str(error)
    await http.aclose() if isinstance(http, httpx.AsyncClient) else http.close()
    server.stop()
    assert server.bytes_streamed < len(body)  # the client hung up before the body's end


async def test_a_trickling_translate_is_retried_and_a_document_translation_is_not(
    servers: FaultServers, connect: Connect
) -> None:
    slow = drip(envelope_body(TRANSLATION), every=0.1)
    server = servers(slow, ok())
    assert (await translate(connect(server, timeout=ROOMY))).translated_text == "Hallo"
    assert len(server.requests) == 2
    server = servers(drip(envelope_body(JOB), every=0.1), ok(JOB))
    error = await failure_of(translate_document(connect(server, timeout=SHORT)))
    assert type(error) is lingodoc.APITimeoutError
    assert len(server.requests) == 1


# Headers that trickle in: one deadline per attempt, headers included -------------------


async def test_headers_trickling_in_time_out_at_the_deadline_of_the_attempt(
    servers: FaultServers, connect: Connect
) -> None:
    # The status line and headers (about 90 bytes) one byte every 0.1 s: each read comes
    # well within the 0.5 s timeout, the head alone would take 9 s. httpcore gives each
    # read the read timeout afresh, and the body's deadline used to start after the head.
    body = envelope_body(TRANSLATION)
    server = servers(drip_head(body, every=0.1), ok())
    error = await failure_of(translate(connect(server, timeout=SHORT, max_retries=0)))
    assert type(error) is lingodoc.APITimeoutError
    assert "the response took longer than the timeout of the attempt (0.5 s)" in str(error)
    assert type(error.__cause__) is httpx.ReadTimeout
    server.stop()
    assert server.bytes_streamed < len(head_of(body))  # the client hung up before its end
    assert len(server.requests) == 1


async def test_each_attempt_has_a_deadline_of_its_own(
    servers: FaultServers, connect: Connect
) -> None:
    # The first attempt runs out of time in the headers; the retry starts afresh.
    server = servers(drip_head(envelope_body(TRANSLATION), every=0.1), ok())
    assert (await translate(connect(server, timeout=ROOMY))).translated_text == "Hallo"
    assert len(server.requests) == 2


async def test_a_poll_is_cut_to_the_time_left_before_the_waits_deadline(
    servers: FaultServers, connect: Connect, clock: FakeClock
) -> None:
    # Each poll gets no answer. The client's timeout is 30 s; the wait's is 1 s, so the
    # first poll gets 1 s and the last one, at the deadline, gets a last second. Without
    # the cut, a poll would wait out the stall (10 s), which ends by closing: no timeout.
    server = servers(stall(), stall())
    client = connect(server, timeout=30.0, max_retries=0)
    error = await failure_of(call(client, "wait_for_translation", "tr_1", timeout=1))
    assert type(error) is lingodoc.WaitTimeout
    assert type(error.__cause__) is lingodoc.APITimeoutError
    assert "left before the wait's deadline" in str(error.__cause__)
    assert len(server.requests) == 2
    assert clock.sleeps == [1.0]
