"""Every error the service can answer becomes the contract's exception, on both clients."""

from __future__ import annotations

import inspect
import json
import pickle
import re
import traceback
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequest,
    ConfigurationError,
    InvalidArgument,
    InvalidArgumentType,
    InvalidLanguage,
    LingodocError,
    NotFound,
    RateLimit,
    RateLimited,
    ServerError,
    TextTooLong,
    TranslationFailed,
    TranslationStatus,
    Unauthorized,
    UnexpectedResponse,
    WaitTimeout,
)
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock
from tests.conftest import (
    API_KEY,
    BASE_URL,
    call,
    close,
    envelope,
    failure,
    http_client_for,
    rate_limit_headers,
)
from tests.reliability.fault_server import FaultServer

MESSAGE = "Text exceeds 10,000 characters"
NOT_THE_SERVICE = (
    "is base_url= (or LINGODOC_BASE_URL) the service's address, up to and including /v1?"
)
SERVICE_UNREACHABLE = (
    "is the service (or `lingodoc emulator`) running at that address, and is base_url= "
    "(or LINGODOC_BASE_URL) right?"
)
PROXY_UNREACHABLE = (
    "is the proxy running, and should requests to the service go through it? "
    "(NO_PROXY names the hosts that should not)"
)
PASSWORD = "s3cretPassw0rd"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
MISSING = object()
FIELDS = ("status_code", "code", "message", "rate_limit", "request_id", "retry_after", "body",
          "status", "timeout", "hint")  # fmt: skip


@pytest.fixture
async def no_retry(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> AsyncIterator[lingodoc.Client]:
    """A client of the kind under test that never retries."""
    instance = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    yield instance
    await close(instance)


async def translate_error(client: lingodoc.Client, text: str = "Hello") -> Any:
    """Call translate, which must raise; return what it raised."""
    with pytest.raises(LingodocError) as caught:
        await call(client, "translate", text, source_language="en", target_language="de")
    return caught.value


def assert_no_key(text: str) -> None:
    """No run of 6 characters of the key shows (its last 4 may)."""
    for i in range(len(API_KEY) - 5):
        at = text.find(API_KEY[i : i + 6])
        assert at < 0, f"the API key leaks: ...{text[max(0, at - 30) : at + 30]!r}..."


def assert_same_after_pickle(error: LingodocError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (str(copy), copy.args) == (str(error), error.args)
    for field in FIELDS:
        assert getattr(copy, field, MISSING) == getattr(error, field, MISSING), field


# The class: code first, status second ------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "TEXT_TOO_LONG", TextTooLong),
        (400, "INVALID_LANGUAGE", InvalidLanguage),
        (401, "UNAUTHORIZED", Unauthorized),
        (404, "NOT_FOUND", NotFound),
        (422, "TEXT_TOO_LONG", TextTooLong),
        (400, "UNAUTHORIZED", Unauthorized),
    ],
)
async def test_known_code_chooses_the_class_whatever_the_status(
    client: lingodoc.Client, api: respx.MockRouter, status: int, code: str, expected: type[APIError]
) -> None:
    api.post("/translate").respond(status, json=failure(code, MESSAGE))
    error = await translate_error(client)
    assert type(error) is expected
    assert (error.status_code, error.code, error.message) == (status, code, MESSAGE)


@pytest.mark.parametrize(
    ("status", "expected"),
    [(400, BadRequest), (403, BadRequest), (409, BadRequest), (422, BadRequest),
     (401, Unauthorized), (404, NotFound)],
)  # fmt: skip
async def test_unknown_code_gets_the_class_of_its_status_and_keeps_code(
    client: lingodoc.Client, api: respx.MockRouter, status: int, expected: type[APIError]
) -> None:
    api.post("/translate").respond(status, json=failure("SOMETHING_NEW", "new rule"))
    error = await translate_error(client)
    assert type(error) is expected
    assert (error.status_code, error.code, error.message) == (status, "SOMETHING_NEW", "new rule")


async def test_rate_limited_with_a_far_reset_is_raised_at_once(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.post("/translate").respond(
        429, json=failure("RATE_LIMITED", "slow down"), headers=rate_limit_headers(remaining=0)
    )
    error = await translate_error(client)
    assert type(error) is RateLimited
    assert (error.status_code, error.code, error.message) == (429, "RATE_LIMITED", "slow down")
    assert error.retry_after == pytest.approx(3600.0)
    assert (route.call_count, clock.sleeps) == (1, [])


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_5xx_is_a_server_error(
    no_retry: lingodoc.Client, api: respx.MockRouter, status: int
) -> None:
    route = api.post("/translate").respond(status, json=failure("INTERNAL", "oops"))
    error = await translate_error(no_retry)
    assert type(error) is ServerError
    assert (error.status_code, error.code, error.message) == (status, "INTERNAL", "oops")
    assert route.call_count == 1


async def test_success_false_with_known_code_on_200_is_that_error(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(200, json=failure("TEXT_TOO_LONG", MESSAGE))
    error = await translate_error(client)
    assert type(error) is TextTooLong
    assert (error.status_code, error.code) == (200, "TEXT_TOO_LONG")


# Fields and str() -------------------------------------------------------------------


async def test_error_carries_request_id_and_rate_limit_from_headers(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    headers = {"X-Request-Id": "req_123", **rate_limit_headers(1000, 17, 3600)}
    api.post("/translate").respond(400, json=failure("TEXT_TOO_LONG", MESSAGE), headers=headers)
    error = await translate_error(client)
    assert error.request_id == "req_123"
    assert error.rate_limit == RateLimit(
        limit=1000,
        remaining=17,
        reset=3600,
        reset_at=datetime.fromtimestamp(clock.time() + 3600, tz=timezone.utc),
    )
    assert error.retry_after is None


async def test_error_without_headers_has_no_request_id_rate_limit_or_retry_after(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(404, json=failure("NOT_FOUND", "gone"))
    error = await translate_error(client)
    assert (error.request_id, error.rate_limit, error.retry_after) == (None, None, None)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "120"}, 120.0),
        ({"Retry-After": "90", **rate_limit_headers(reset=3600)}, 90.0),  # Retry-After wins
        (rate_limit_headers(reset=3600), 3600.0),  # no Retry-After: from the reset
    ],
)
async def test_rate_limited_retry_after_comes_from_retry_after_else_the_reset(
    client: lingodoc.Client, api: respx.MockRouter, headers: dict[str, str], expected: float
) -> None:
    api.post("/translate").respond(429, json=failure("RATE_LIMITED", "wait"), headers=headers)
    error = await translate_error(client)
    assert isinstance(error, RateLimited)
    assert error.retry_after == pytest.approx(expected)


async def test_retry_after_as_http_date_is_read_as_seconds_from_now(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    when = int(clock.time()) + 300
    headers = {"Retry-After": formatdate(when, usegmt=True)}
    api.post("/translate").respond(429, json=failure("RATE_LIMITED", "wait"), headers=headers)
    error = await translate_error(client)
    assert error.retry_after == pytest.approx(when - clock.time())


async def test_server_error_keeps_retry_after(
    no_retry: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(503, json=failure("MAINTENANCE", "back soon"),
                                   headers={"Retry-After": "30"})  # fmt: skip
    error = await translate_error(no_retry)
    assert (type(error), error.retry_after) == (ServerError, 30.0)


async def test_str_reads_code_status_and_message(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(400, json=failure("TEXT_TOO_LONG", MESSAGE))
    error = await translate_error(client)
    assert str(error) == f"TEXT_TOO_LONG (400): {MESSAGE}"


async def test_local_error_str_has_no_status(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    error = await translate_error(client, "x" * 10_001)
    assert type(error) is TextTooLong
    assert (error.status_code, error.code) == (None, "TEXT_TOO_LONG")
    assert str(error) == f"TEXT_TOO_LONG: {error.message}"
    assert "10,001" in error.message
    assert not api.calls


# Bodies that are not the envelope ---------------------------------------------------

HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
MALFORMED = [
    pytest.param(200, HTML, id="html-200"),
    pytest.param(502, HTML, id="html-502"),
    pytest.param(200, b'{"success": true, "data": {"translated_te', id="truncated-json"),
    pytest.param(200, b"", id="empty"),
    pytest.param(200, b"[1, 2]", id="json-list"),
    pytest.param(200, b'"ok"', id="json-string"),
    pytest.param(200, b"null", id="json-null"),
    pytest.param(200, b'{"success": false}', id="failure-without-error"),
    pytest.param(200, b'{"success": false, "error": "boom"}', id="error-not-an-object"),
    pytest.param(200, json.dumps(failure("WHO_KNOWS")).encode(), id="200-failure-unknown-code"),
    pytest.param(200, b'{"success": true}', id="success-without-data"),
    pytest.param(200, b'{"success": true, "data": null}', id="success-data-null"),
    pytest.param(500, json.dumps(envelope({"x": 1})).encode(), id="success-on-500"),
    pytest.param(200, b'{"translated_text": "Hallo"}', id="no-envelope"),
]


@pytest.mark.parametrize(("status", "content"), MALFORMED)
async def test_body_that_is_not_the_envelope_is_unexpected_response(
    no_retry: lingodoc.Client, api: respx.MockRouter, status: int, content: bytes
) -> None:
    api.post("/translate").respond(status, content=content, headers={"X-Request-Id": "req_7"})
    error = await translate_error(no_retry)
    assert type(error) is UnexpectedResponse
    assert (error.status_code, error.request_id) == (status, "req_7")
    assert error.body == content.decode()
    assert error.message.endswith(", in answer to POST https://api.lingodoc.test/v1/translate")
    assert error.hint == NOT_THE_SERVICE


@pytest.mark.parametrize("data", [{"foo": 1}, [1, 2], "text", {"translated_text": 5}])
async def test_data_of_the_wrong_shape_is_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter, data: object
) -> None:
    api.post("/translate").respond(content=json.dumps(envelope(data)).encode())
    error = await translate_error(client)
    assert type(error) is UnexpectedResponse
    assert error.status_code == 200
    assert error.body == json.dumps(data)
    assert "TextTranslation" in error.message
    assert error.message.endswith(", in answer to POST https://api.lingodoc.test/v1/translate")
    assert error.hint == NOT_THE_SERVICE


async def test_an_answer_that_is_not_the_services_names_the_url_and_asks_about_base_url(
    client_class: type[lingodoc.Client],
) -> None:
    # The service's host without /v1: its web server answers, not the service.
    client = client_class(API_KEY, base_url="https://api.lingodoc.test", max_retries=0)
    with respx.mock(base_url="https://api.lingodoc.test") as host:
        host.post("/translate").respond(404, content=b"<html>Not Found</html>")
        error = await translate_error(client)
    await close(client)
    assert str(error) == (
        "HTTP 404: the response body is not JSON, in answer to POST "
        "https://api.lingodoc.test/translate\n"
        "hint: is base_url= (or LINGODOC_BASE_URL) the service's address, up to and including /v1?"
    )


async def test_the_url_an_unexpected_answer_names_has_no_query_and_no_key(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get(f"/documents/{API_KEY}").respond(501, content=b"Not Implemented")
    with pytest.raises(UnexpectedResponse) as caught:
        await call(client, "request", "GET", f"/documents/{API_KEY}?sig=abc", params={"t": "s3"})
    assert caught.value.message == (
        "the response body is not JSON, in answer to GET "
        f"https://api.lingodoc.test/v1/documents/****{API_KEY[-4:]}"
    )
    for text in (str(caught.value), repr(caught.value)):
        assert_no_key(text)
        assert "sig=" not in text
        assert "s3" not in text


async def test_data_of_the_wrong_shape_keeps_request_id_and_rate_limit(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    headers = {"X-Request-Id": "req_8", **rate_limit_headers(remaining=42)}
    api.post("/translate").respond(json=envelope({"foo": 1}), headers=headers)
    error = await translate_error(client)
    assert type(error) is UnexpectedResponse
    assert error.request_id == "req_8"
    assert error.rate_limit is not None
    assert error.rate_limit.remaining == 42


async def test_html_502_is_retried_then_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(502, content=HTML, headers={"Content-Type": "text/html"})
    error = await translate_error(client)
    assert (type(error), error.status_code, error.body) == (UnexpectedResponse, 502, HTML.decode())
    assert route.call_count == 3  # max_retries=2


async def test_huge_error_body_gives_a_short_excerpt(
    no_retry: lingodoc.Client, api: respx.MockRouter
) -> None:
    huge = b"<html>" + b"<p>internal error</p>" * 250_000  # about 5 MB
    api.post("/translate").respond(500, content=huge)
    error = await translate_error(no_retry)
    assert (type(error), error.status_code) == (UnexpectedResponse, 500)
    assert 0 < len(error.body) <= 500
    assert error.body.startswith("<html><p>internal error</p>")


# Transport failures -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure_", "expected", "sent"),
    [
        (httpx.ConnectError("connection refused"), APIConnectionError, False),
        (httpx.ConnectTimeout("connect timed out"), APITimeoutError, False),
        (httpx.PoolTimeout("no connection free"), APITimeoutError, False),
        (httpx.ReadTimeout("read timed out"), APITimeoutError, True),
        (httpx.RemoteProtocolError("server disconnected"), APIConnectionError, True),
        (httpx.WriteError("broken pipe"), APIConnectionError, True),
    ],
)
async def test_transport_failure_is_a_connection_error_with_the_cause_chained(
    no_retry: lingodoc.Client,
    api: respx.MockRouter,
    failure_: Exception,
    expected: type,
    sent: bool,
) -> None:
    api.post("/translate").mock(side_effect=failure_)
    error = await translate_error(no_retry)
    assert type(error) is expected
    assert isinstance(error, APIConnectionError)
    assert isinstance(error.__cause__, type(failure_))
    assert str(failure_) in str(error)
    # Whether the request may have reached the service: a connection never made, or none
    # free in time, sent nothing.
    assert error.request_sent is sent
    assert pickle.loads(pickle.dumps(error)).request_sent is sent


# Over real sockets: the address tried, and the proxy of the environment ----------------


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy in the environment but those the test sets."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def refusing(no_proxies: None) -> Iterator[FaultServer]:
    """A loopback port bound but not listening: every connection to it is refused."""
    server = FaultServer([], listening=False)
    yield server
    server.stop()


def yours_of_httpx(client_class: type[Any], http: str) -> bool:
    """Whether the run sends through an httpx client of yours (``http="yours"``, no aiohttp)."""
    return http == "yours" and client_class in (lingodoc.Client, lingodoc.AsyncClient)


async def refused_error(client_class: type[Any], http: str, base_url: str) -> Any:
    """The error of a ``translate`` that cannot connect, through the http client named.

    ``http``: ``"own"``, the client's own (the [aiohttp] run: a ``DefaultAioHttpClient``);
    ``"yours"``, an httpx client passed as ``http_client`` (the [aiohttp] run: a
    ``DefaultAioHttpClient`` with headers of its own, sent through by its ``send()``).
    """
    http_client: Any = None
    if yours_of_httpx(client_class, http):
        http_client = http_client_for(client_class)
    elif http == "yours":
        http_client = lingodoc.DefaultAioHttpClient(headers={"X-App": "tests"})
    client = client_class(API_KEY, base_url=base_url, max_retries=0, http_client=http_client)
    error = await translate_error(client)
    await close(client)
    if http_client is not None:
        await call(http_client, "aclose" if isinstance(http_client, httpx.AsyncClient) else "close")
    assert type(error) is APIConnectionError
    assert error.request_sent is False
    return error


@pytest.mark.aiohttp  # over real sockets: on DefaultAioHttpClient too
@pytest.mark.parametrize("http", ["own", "yours"])
async def test_a_refused_connection_names_the_address_tried(
    client_class: type[Any], http: str, refusing: FaultServer
) -> None:
    error = await refused_error(client_class, http, refusing.base_url())
    tried = f"POST /translate failed: cannot connect to http://127.0.0.1:{refusing.port} ("
    assert str(error).startswith(tried)
    assert "proxy" not in str(error)
    # What to check, on a line of its own.
    assert error.hint == SERVICE_UNREACHABLE
    assert str(error).endswith(f")\nhint: {SERVICE_UNREACHABLE}")


@pytest.mark.aiohttp  # over real sockets: on DefaultAioHttpClient too
@pytest.mark.parametrize("http", ["own", "yours"])
async def test_a_refused_proxy_of_the_environment_is_named_without_its_password(
    client_class: type[Any], http: str, refusing: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = f"http://proxy-user:{PASSWORD}@127.0.0.1:{refusing.port}"
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    # The service's host is never looked up: the proxy refuses the connection first.
    error = await refused_error(client_class, http, BASE_URL)
    named = f"http://127.0.0.1:{refusing.port}"
    through = f"through the proxy {named}"
    if yours_of_httpx(client_class, http):  # whose own transport or proxy httpx does not show
        through = f"through the environment's proxy {named} if the http_client uses it"
    assert str(error).startswith(
        f"POST /translate failed: cannot connect to https://api.lingodoc.test:443 {through} ("
    )
    assert error.hint == PROXY_UNREACHABLE  # the proxy refused, not the service
    for text in (
        str(error),
        repr(error),
        repr(error.__cause__),
        pickle.dumps(error).decode("latin-1"),
    ):
        assert PASSWORD not in text
        assert "proxy-user" not in text
        assert_no_key(text)


@pytest.mark.parametrize(
    ("base_url", "environment", "where"),
    [
        # No proxy for http://: it would get the key in clear text.
        ("http://127.0.0.1:8787/v1", {"HTTP_PROXY": "http://127.0.0.1:3128"}, "http://127.0.0.1:8787"),
        ("http://[::1]/v1", {}, "http://[::1]:80"),
        (BASE_URL, {"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "api.lingodoc.test"},
         "https://api.lingodoc.test:443"),
        (BASE_URL, {"ALL_PROXY": f"proxy:{PASSWORD}@proxy.example:3128"},
         "https://api.lingodoc.test:443 through the proxy http://proxy.example:3128"),
    ],
    ids=["http-no-proxy", "ipv6", "no-proxy-names-the-host", "all-proxy-without-scheme"],
)  # fmt: skip
async def test_the_address_named_is_the_one_the_sdk_sends_to(
    client_class: type[Any],
    no_proxies: None,
    monkeypatch: pytest.MonkeyPatch,
    base_url: str,
    environment: dict[str, str],
    where: str,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    client = client_class(API_KEY, base_url=base_url, max_retries=0)
    with respx.mock(base_url=base_url) as service:
        service.post("/translate").mock(side_effect=httpx.ConnectError("refused"))
        error = await translate_error(client)
    assert error.message == f"POST /translate failed: cannot connect to {where} (refused)"
    assert error.hint == (PROXY_UNREACHABLE if "proxy" in where else SERVICE_UNREACHABLE)
    await close(client)


async def test_other_network_failures_name_the_address_too(
    no_retry: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").mock(side_effect=httpx.ReadTimeout("read timed out"))
    error = await translate_error(no_retry)
    assert str(error) == (
        "POST /translate to https://api.lingodoc.test:443 timed out: read timed out\n"
        "hint: if the service is slow rather than stuck, raise timeout= (each attempt's limit)"
    )
    api.post("/translate").mock(side_effect=httpx.RemoteProtocolError("server disconnected"))
    error = await translate_error(no_retry)
    assert str(error) == (
        "POST /translate to https://api.lingodoc.test:443 failed: server disconnected"
    )


# Pickling and the API key -----------------------------------------------------------


async def provoke(kind: str, client: lingodoc.Client, api: respx.MockRouter) -> Any:
    """Make the client raise one kind of error, echoing the key wherever a server could."""
    headers = {"X-Request-Id": "req_9", **rate_limit_headers(remaining=0, reset=3600)}
    route = api.post("/translate")
    status = {"translation_id": "tr_1", "status": "processing", "progress": 40}
    if kind == "bad-request":
        route.respond(400, json=failure("TEXT_TOO_LONG", f"key {API_KEY}: {MESSAGE}"),
                      headers=headers)  # fmt: skip
    elif kind == "rate-limited":
        route.respond(429, json=failure("RATE_LIMITED", f"{API_KEY} is spent"), headers=headers)
    elif kind == "html":
        route.respond(502, content=f"<html>Bearer {API_KEY}</html>".encode(), headers=headers)
    elif kind == "wrong-shape":
        route.respond(json=envelope({"echo": API_KEY}), headers=headers)
    elif kind == "connect":
        route.mock(side_effect=httpx.ConnectError(f"refused for {API_KEY}"))
    elif kind == "failed":
        api.get("/translations/tr_1").respond(json=envelope({**status, "status": "failed"}))
    elif kind == "wait-timeout":
        api.get("/translations/tr_1").respond(json=envelope(status))
    if kind in ("failed", "wait-timeout"):
        with pytest.raises(LingodocError) as caught:
            await call(client, "wait_for_translation", "tr_1", timeout=10)
        return caught.value
    return await translate_error(client, "x" * 10_001 if kind == "local" else "Hello")


KINDS: dict[str, type[LingodocError]] = {
    "bad-request": TextTooLong, "rate-limited": RateLimited, "html": UnexpectedResponse,
    "wrong-shape": UnexpectedResponse, "connect": APIConnectionError, "local": TextTooLong,
    "failed": TranslationFailed, "wait-timeout": WaitTimeout,
}  # fmt: skip


@pytest.fixture(params=KINDS)
async def provoked(
    request: pytest.FixtureRequest, no_retry: lingodoc.Client, api: respx.MockRouter
) -> LingodocError:
    """An error of each kind, raised by a call to a server that echoes the key."""
    error: LingodocError = await provoke(request.param, no_retry, api)
    assert type(error) is KINDS[request.param]
    return error


async def test_error_from_a_call_survives_pickle_with_its_fields(provoked: LingodocError) -> None:
    assert_same_after_pickle(provoked)


STATE = TranslationStatus(translation_id="tr_1", status="failed", progress=40)
LIMIT = RateLimit(limit=10, remaining=0, reset=60,
                  reset_at=datetime(2030, 1, 1, tzinfo=timezone.utc))  # fmt: skip
BUILT = [
    LingodocError("this Client has been closed"),
    ConfigurationError("no api key given", hint="create a key"),
    APIConnectionError("POST /translate failed"),
    APITimeoutError("POST /translate timed out"),
    APIError("teapot", status_code=418, code="TEAPOT"),
    BadRequest("bad", status_code=409, code="CONFLICT", request_id="req_1"),
    InvalidLanguage("source_language must be ...", code="INVALID_LANGUAGE"),
    TextTooLong(MESSAGE, status_code=400, code="TEXT_TOO_LONG", rate_limit=LIMIT),
    Unauthorized("revoked", status_code=401, code="UNAUTHORIZED"),
    NotFound("gone", status_code=404, code="NOT_FOUND"),
    RateLimited("wait", status_code=429, rate_limit=LIMIT, retry_after=12.5),
    ServerError("oops", status_code=503, retry_after=30.0),
    UnexpectedResponse("not JSON", status_code=502, body="<html>", hint="check base_url="),
    TranslationFailed(STATE),
    WaitTimeout(STATE, 30.0),
    WaitTimeout(None, 5.0),
    InvalidArgument("texts must not be empty"),
    InvalidArgumentType("texts must be a list of str, not str"),
]


@pytest.mark.parametrize("error", BUILT, ids=lambda e: type(e).__name__)
def test_error_built_directly_survives_pickle_with_its_fields(error: LingodocError) -> None:
    assert_same_after_pickle(error)


async def test_api_key_never_shows_in_an_error_even_when_echoed(
    provoked: LingodocError,
) -> None:
    pickled = pickle.dumps(provoked).decode("latin-1")
    for text in (str(provoked), repr(provoked), getattr(provoked, "message", ""),
                 getattr(provoked, "body", ""), pickled):  # fmt: skip
        assert_no_key(text)


async def test_api_key_cut_by_the_body_excerpt_does_not_leak_its_start(
    no_retry: lingodoc.Client, api: respx.MockRouter
) -> None:
    page = "<html>" + "x" * 475 + f"Bearer {API_KEY}</html>"  # key at chars 488-522
    api.post("/translate").respond(502, content=page.encode())
    error = await translate_error(no_retry)
    assert isinstance(error, UnexpectedResponse)
    assert_no_key(error.body)


async def test_echoed_key_is_masked_to_its_last_four_characters(
    no_retry: lingodoc.Client, api: respx.MockRouter
) -> None:
    error = await provoke("bad-request", no_retry, api)
    assert error.message == f"key ****{API_KEY[-4:]}: {MESSAGE}"


# The tree ---------------------------------------------------------------------------

TREE = [
    (ConfigurationError, LingodocError), (APIConnectionError, LingodocError),
    (APITimeoutError, APIConnectionError), (APIError, LingodocError),
    (BadRequest, APIError), (InvalidLanguage, BadRequest), (TextTooLong, BadRequest),
    (Unauthorized, APIError), (NotFound, APIError), (RateLimited, APIError),
    (ServerError, APIError), (UnexpectedResponse, APIError),
    (TranslationFailed, LingodocError), (WaitTimeout, LingodocError),
    # Also the built-in error that Python code expects of a bad argument.
    (InvalidArgument, (LingodocError, ValueError)),
    (InvalidArgumentType, (LingodocError, TypeError)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("child", "parent"), TREE, ids=lambda c: c.__name__ if isinstance(c, type) else ""
)
def test_exception_tree_matches_the_contract(child: type, parent: type | tuple[type, ...]) -> None:
    assert child.__bases__ == (parent if isinstance(parent, tuple) else (parent,))
    assert issubclass(child, LingodocError)


def test_tree_and_pickle_cases_cover_every_exported_exception() -> None:
    exported = {
        obj for obj in vars(lingodoc).values()
        if isinstance(obj, type) and issubclass(obj, BaseException)
    }  # fmt: skip
    assert LingodocError.__bases__ == (Exception,)
    assert {child for child, _ in TREE} | {LingodocError} == exported == {type(e) for e in BUILT}


ROOT = Path(__file__).resolve().parents[1]


def drawn_tree(text: str) -> dict[str, str | None]:
    """Each class of the exception tree drawn in ``text``, and the one drawn above it."""
    start = text.index("LingodocError\n")
    line_start = text.rfind("\n", 0, start) + 1
    column = start - line_start  # the tree's indentation
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in text[line_start:].splitlines():
        name = re.search(r"[A-Za-z]+", line[column:])
        if name is None:  # the tree's end: a blank line, or the fence of docs/errors.md
            break
        depth = name.start() // 4
        path[depth:] = [name.group()]
        parents[name.group()] = path[-2] if depth else None
    return parents


@pytest.mark.parametrize("where", ["src/lingodoc/_exceptions.py", "docs/errors.md"])
def test_the_tree_drawn_in_the_code_and_the_docs_is_the_class_tree(where: str) -> None:
    text = (ROOT / where).read_text(encoding="utf-8")
    expected = {child.__name__: child.__bases__[0].__name__ for child, _ in TREE}
    assert drawn_tree(text) == {"LingodocError": None, **expected}


# str(TranslationFailed): the service's reason ------------------------------------------


def failed_status(**extra: Any) -> dict[str, Any]:
    return {"translation_id": "tr_1", "status": "failed", "progress": 50, **extra}


async def wait_error(client: lingodoc.Client, api: respx.MockRouter, status: Any) -> Any:
    api.get("/translations/tr_1").respond(json=envelope(status))
    with pytest.raises(LingodocError) as caught:
        await call(client, "wait_for_translation", "tr_1")
    return caught.value


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ({"code": "TRANSLATION_FAILED", "message": "The file is corrupt."},
         "TRANSLATION_FAILED: The file is corrupt."),
        ({"message": "The file is corrupt."}, "The file is corrupt."),
        ({"code": "UNSUPPORTED_FORMAT"}, "UNSUPPORTED_FORMAT"),
        ("Unsupported file\nformat.", "Unsupported file format."),  # one line
    ],
    ids=["code-and-message", "message", "code", "string"],
)  # fmt: skip
async def test_translation_failed_says_the_services_reason(
    client: lingodoc.Client, api: respx.MockRouter, error: Any, reason: str
) -> None:
    caught = await wait_error(client, api, failed_status(error=error))
    assert isinstance(caught, TranslationFailed)
    assert str(caught) == f"translation tr_1 failed: {reason}"
    assert caught.status.error == error  # kept whole on the status


@pytest.mark.parametrize("error", [None, 42, {"detail": "x"}, ""], ids=repr)
async def test_translation_failed_without_a_readable_reason_says_only_that_it_failed(
    client: lingodoc.Client, api: respx.MockRouter, error: Any
) -> None:
    status = failed_status() if error is None else failed_status(error=error)
    caught = await wait_error(client, api, status)
    assert str(caught) == "translation tr_1 failed"


async def test_a_long_reason_is_cut_and_an_echoed_key_masked_in_message_and_status(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    message = f"bad key {API_KEY} " + "x" * 5000
    caught = await wait_error(client, api, failed_status(error={"code": "E", "message": message}))
    assert len(str(caught)) < 300
    assert "characters)" in str(caught)
    assert f"****{API_KEY[-4:]}" in str(caught)
    pickled = pickle.dumps(caught).decode("latin-1")
    for text in (str(caught), repr(caught), repr(caught.status), pickled):
        assert_no_key(text)
    assert caught.status.error["message"].startswith(f"bad key ****{API_KEY[-4:]} xxx")


@pytest.fixture
def emulator() -> Emulator:
    """The emulator of ``emulated`` (tests/conftest.py): its next job fails."""
    emulator = Emulator()
    emulator.fail_next_job("The file is corrupt.")
    return emulator


async def test_the_emulators_failed_job_reason_reaches_the_message(
    emulated: lingodoc.Client,
) -> None:
    job = await call(emulated, "translate_document", "doc_handbook", target_language="it")
    with pytest.raises(TranslationFailed) as caught:
        await call(emulated, "wait_for_translation", job, poll_interval=1)
    assert str(caught.value).endswith("failed: TRANSLATION_FAILED: The file is corrupt.")


# repr ---------------------------------------------------------------------------------


async def test_repr_of_a_service_error_shows_code_status_and_request_id_not_the_key(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(
        400, json=failure("TEXT_TOO_LONG", f"key {API_KEY}: too long"),
        headers={"X-Request-Id": "req_42"},
    )  # fmt: skip
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await call(client, "translate", "Hi", source_language="en", target_language="de")
    shown = repr(caught.value)
    assert shown == (
        f"TextTooLong(code='TEXT_TOO_LONG', status_code=400, "
        f"message='key ****{API_KEY[-4:]}: too long', request_id='req_42')"
    )
    assert repr(pickle.loads(pickle.dumps(caught.value))) == shown


@pytest.mark.parametrize(
    ("error", "first_line"),
    [
        (ConfigurationError("no base url given", hint="pass base_url="), "no base url given"),
        (APIConnectionError("POST /translate failed", hint="pass base_url="),
         "POST /translate failed"),
        (UnexpectedResponse("not JSON", status_code=502, hint="pass base_url="),
         "HTTP 502: not JSON"),
        (TranslationFailed(STATE, hint="pass base_url="), "translation tr_1 failed"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, LingodocError) else "",
)  # fmt: skip
def test_a_hint_follows_the_message_on_a_line_of_its_own(
    error: LingodocError, first_line: str
) -> None:
    assert str(error) == f"{first_line}\nhint: pass base_url="
    assert error.hint == "pass base_url="
    # The message itself, as code that reads it gets it: without the hint.
    assert error.args == (error.message,)
    assert "hint" not in error.message
    assert repr(error).endswith(", hint='pass base_url=')")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.hint, copy.message) == (str(error), error.hint, error.message)


def test_without_a_hint_str_is_the_message_alone() -> None:
    errors = [ConfigurationError("no key"), UnexpectedResponse("not JSON", status_code=502),
              WaitTimeout(None, 5.0)]  # fmt: skip
    assert [(str(e), e.hint) for e in errors] == [
        ("no key", None), ("HTTP 502: not JSON", None),
        ("the translation did not finish within 5 s", None),
    ]  # fmt: skip
    assert [e.message for e in errors] == [
        "no key", "not JSON", "the translation did not finish within 5 s"
    ]  # fmt: skip


def test_repr_of_a_local_error_leaves_out_what_is_not_set() -> None:
    error = lingodoc.InvalidLanguage("bad code", code="INVALID_LANGUAGE")
    assert repr(error) == "InvalidLanguage(code='INVALID_LANGUAGE', message='bad code')"
    assert repr(lingodoc.ServerError("x" * 1000, status_code=503)).endswith(
        "... (1,000 characters)')"
    )
    assert repr(RateLimited("wait", status_code=429)) == (
        "RateLimited(status_code=429, message='wait')"
    )
    assert repr(UnexpectedResponse("not JSON")) == "UnexpectedResponse(message='not JSON')"
    assert repr(ConfigurationError("no key")) == "ConfigurationError(message='no key')"


# A value for each field an exception's constructor takes.
FIELD_VALUES: dict[str, Any] = {
    "message": "it broke", "status_code": 429, "code": "RATE_LIMITED", "rate_limit": LIMIT,
    "request_id": "req_7", "retry_after": 12.5, "body": "<html>", "request_sent": False,
    "status": STATE, "timeout": 30.0, "hint": "check it",
}  # fmt: skip
EXCEPTIONS = [
    obj
    for obj in map(vars(lingodoc).get, lingodoc.__all__)
    if isinstance(obj, type) and issubclass(obj, BaseException)
]


def with_every_field_set(cls: type[LingodocError]) -> LingodocError:
    """``cls`` built with each argument of its constructors (and its bases'), and ``partial``."""
    names = {
        name
        for klass in cls.__mro__
        if klass.__module__ == "lingodoc" and "__init__" in vars(klass)
        for name, parameter in inspect.signature(klass.__init__).parameters.items()
        if name != "self"
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    }
    # The base class takes its message as any exception does: positionally.
    message = () if names & {"message", "status"} else ("it broke",)
    error = cls(*message, **{name: FIELD_VALUES[name] for name in names})
    error.partial = lingodoc.PartialTranslations(None, ["Hallo"] * 1000 + [None])
    return error


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda cls: cls.__name__)
def test_repr_of_every_exception_shows_each_field_set_and_sums_up_the_rest(
    cls: type[LingodocError],
) -> None:
    error = with_every_field_set(cls)
    shown = repr(error)
    assert shown.startswith(f"{cls.__name__}(")
    # A collection is summed up, never listed.
    assert shown.endswith(", partial=<PartialTranslations: 1,000 of 1,001 texts translated>)")
    fields = dict(vars(error))
    if not isinstance(error, WaitTimeout):  # whose message only repeats its fields
        fields.setdefault("message", error.message)
    for name, value in fields.items():
        if name == "status":  # a record: its scalar fields
            expected = ["translation_id='tr_1'", "state='failed'", "progress=40"]
        elif name == "rate_limit":
            expected = ["rate_limit=<RateLimit: 0 of 10 left, resets at 2030-01-01T00:00:00+00:00>"]
        elif name == "partial":
            continue
        else:
            expected = [f"{name}={value!r}"]
        for text in expected:
            assert text in shown, name
    assert repr(pickle.loads(pickle.dumps(error))) == shown


async def test_repr_of_wait_errors_shows_the_translation_and_its_state(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    caught = await wait_error(client, api, failed_status())
    assert repr(caught) == (
        "TranslationFailed(translation_id='tr_1', state='failed', progress=50, "
        "message='translation tr_1 failed')"
    )
    status = lingodoc.TranslationStatus(translation_id="tr_2", status="processing", progress=5)
    assert repr(lingodoc.WaitTimeout(status, 30.0)) == (
        "WaitTimeout(translation_id='tr_2', state='processing', progress=5, timeout=30.0)"
    )
    assert repr(lingodoc.WaitTimeout(None, 5.0)) == "WaitTimeout(timeout=5.0)"


# Tracebacks: they end at the caller's line, through a few lingodoc frames -------------


@pytest.mark.parametrize(
    ("responses", "expected"),
    [
        ([(400, failure("INVALID_LANGUAGE", MESSAGE))], InvalidLanguage),
        ([(503, failure("SERVER_ERROR"))] * 3, lingodoc.ServerError),  # after 2 retries
    ],
    ids=["not-retried", "retried"],
)
async def test_a_traceback_shows_the_callers_line_and_at_most_4_lingodoc_frames(
    client: lingodoc.Client,
    api: respx.MockRouter,
    responses: list[tuple[int, Any]],
    expected: type[APIError],
) -> None:
    api.post("/translate").side_effect = [httpx.Response(s, json=j) for s, j in responses]
    try:
        if isinstance(client, lingodoc.AsyncClient):
            await client.translate("Hello", source_language="en", target_language="de")
        else:
            client.translate("Hello", source_language="en", target_language="de")
    except expected as caught:
        error: BaseException = caught
    frames = traceback.extract_tb(error.__traceback__)
    assert frames[0].name == "test_a_traceback_shows_the_callers_line_and_at_most_4_lingodoc_frames"
    assert "client.translate(" in (frames[0].line or "")
    below = [Path(frame.filename) for frame in frames[1:]]
    assert 1 <= len(below) <= 4
    assert all(path.parent.name == "lingodoc" for path in below), below  # no tenacity, no
    # concurrent.futures, no httpx: every frame under the caller's is the SDK's own
