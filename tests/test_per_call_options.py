"""Per-call options: ``timeout=``, ``extra_headers=``, ``extra_query=`` and ``extra_body=``.

Each reaches the request of that call only (every batch of ``translate_many``, every poll
of ``wait_for_translation``), never the client's other calls; a bad one is refused before
anything is sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, BASE_URL, call, close, envelope

Client = lingodoc.Client | lingodoc.AsyncClient

LANGS = {"source_language": "en", "target_language": "de"}
TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}
COMPLETED = {"translation_id": "tr_1", "status": "completed", "progress": 100}
JOB = {"translation_id": "tr_1", "document_id": "doc_1", "status": "processing"}


def batch_answer(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["texts"]
    return httpx.Response(200, json=envelope({"translations": [t.upper() for t in texts]}))


def routes(api: respx.MockRouter) -> dict[str, respx.Route]:
    """Every endpoint the methods below call, answering as the service does."""
    return {
        "translate": api.post("/translate").respond(json=envelope(TRANSLATION)),
        "batch": api.post("/translate/batch").mock(side_effect=batch_answer),
        "document": api.post("/documents/doc_1/translate").respond(json=envelope(JOB)),
        "status": api.get("/translations/tr_1").respond(json=envelope(STATUS)),
        "documents": api.get("/documents").respond(json=envelope([{"document_id": "doc_1"}])),
        "raw": api.get("/glossaries").respond(json=envelope([])),
    }


# Each method that takes timeout=, with the route it calls.
TIMED: dict[str, tuple[str, Callable[[Client, Any], Any]]] = {
    "translate": ("translate", lambda c, o: call(c, "translate", "Hi", **LANGS, **o)),
    "translate_batch": ("batch", lambda c, o: call(c, "translate_batch", ["a"], **LANGS, **o)),
    "translate_many": ("batch", lambda c, o: call(c, "translate_many", ["a"], **LANGS, **o)),
    "translate_document": (
        "document",
        lambda c, o: call(c, "translate_document", "doc_1", target_language="de", **o),
    ),
    "get_translation": ("status", lambda c, o: call(c, "get_translation", "tr_1", **o)),
    "list_documents": ("documents", lambda c, o: call(c, "list_documents", **o)),
    "request": ("raw", lambda c, o: call(c, "request", "GET", "/glossaries", **o)),
}
# And those that take extra_query= and extra_body= too.
QUERIED = {name: TIMED[name] for name in TIMED if name != "request"}
WITH_BODY = {
    name: TIMED[name]
    for name in ("translate", "translate_batch", "translate_many", "translate_document")
}


async def with_and_without(
    client: Client, api: respx.MockRouter, method: str, options: dict[str, Any]
) -> tuple[httpx.Request, httpx.Request]:
    """The request ``method`` sends with ``options``, then the one it sends without them."""
    route_name, send = TIMED[method]
    route = routes(api)[route_name]
    await send(client, options)
    sent_with = route.calls.last.request
    await send(client, {})
    return sent_with, route.calls.last.request


SEND: dict[str, Callable[[Client, Any], Any]] = {name: send for name, (_, send) in TIMED.items()}
SEND["wait_for_translation"] = lambda c, o: call(c, "wait_for_translation", "tr_1", **o)


async def refused_before_sending(
    client: Client,
    api: respx.MockRouter,
    options: dict[str, Any],
    error: type[Exception],
    message: str,
    methods: list[str],
) -> list[Exception]:
    """Call each of ``methods`` with ``options``: each must raise; nothing may be sent."""
    sent = routes(api)
    raised = []
    for method in methods:
        with pytest.raises(error, match=message) as caught:
            await SEND[method](client, options)
        raised.append(caught.value)
    assert not any(route.called for route in sent.values())
    return raised


# timeout= ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", TIMED)
async def test_a_call_timeout_is_that_calls_and_leaves_the_clients(
    client: Client, api: respx.MockRouter, method: str
) -> None:
    sent_with, sent_without = await with_and_without(client, api, method, {"timeout": 120})
    assert sent_with.extensions["timeout"] == {
        "connect": 120,
        "read": 120,
        "write": 120,
        "pool": 120,
    }
    assert client.timeout == httpx.Timeout(30)
    assert sent_without.extensions["timeout"]["read"] == 30


async def test_a_call_timeout_may_be_an_httpx_timeout(
    client: Client, api: respx.MockRouter
) -> None:
    route = routes(api)["translate"]
    await call(client, "translate", "Hi", **LANGS, timeout=httpx.Timeout(5, read=90))
    assert route.calls.last.request.extensions["timeout"] == {
        "connect": 5,
        "read": 90,
        "write": 5,
        "pool": 5,
    }


async def test_every_attempt_of_a_retried_call_keeps_its_timeout(
    client: Client, api: respx.MockRouter
) -> None:
    seen: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"]["read"])
        if len(seen) == 1:
            return httpx.Response(503, json={"success": False, "error": {"code": "X"}})
        return httpx.Response(200, json=envelope(TRANSLATION))

    api.post("/translate").mock(side_effect=answer)
    await call(client, "translate", "Hi", **LANGS, timeout=7)
    assert seen == [7, 7]


async def test_a_call_timeout_beats_a_with_options_copys(
    client: Client, api: respx.MockRouter
) -> None:
    route = routes(api)["translate"]
    slow = client.with_options(timeout=300)
    await call(slow, "translate", "Hi", **LANGS, timeout=2)
    assert route.calls.last.request.extensions["timeout"]["read"] == 2
    await call(slow, "translate", "Hi", **LANGS)
    assert route.calls.last.request.extensions["timeout"]["read"] == 300
    assert slow.timeout == httpx.Timeout(300)


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        (0, lingodoc.InvalidArgument),
        (-1, lingodoc.InvalidArgument),
        (math.nan, lingodoc.InvalidArgument),
        (math.inf, lingodoc.InvalidArgument),
        ("30", lingodoc.InvalidArgumentType),
        (True, lingodoc.InvalidArgumentType),
    ],
)
async def test_a_bad_call_timeout_is_refused_before_sending(
    client: Client, api: respx.MockRouter, timeout: Any, error: type[Exception]
) -> None:
    message = "timeout must be a finite number of seconds, more than 0"
    methods = ["translate", "translate_many"]
    await refused_before_sending(client, api, {"timeout": timeout}, error, message, methods)


async def test_a_call_timeout_longer_than_python_can_wait_is_refused_before_sending(
    client: Client, api: respx.MockRouter
) -> None:
    # Past the longest wait a socket raises OverflowError: a Client's call did, after checks.
    message = "^timeout must be a finite number of seconds, more than 0 and at most 9,223"
    methods = ["translate", "translate_many"]
    error = lingodoc.InvalidArgument
    await refused_before_sending(client, api, {"timeout": 1e300}, error, message, methods)


# extra_headers= ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", TIMED)
async def test_extra_headers_are_sent_with_that_call_only(
    client: Client, api: respx.MockRouter, method: str
) -> None:
    options = {"extra_headers": {"X-Trace": "abc", "User-Agent": "mine/1"}}
    sent_with, sent_without = await with_and_without(client, api, method, options)
    assert sent_with.headers["X-Trace"] == "abc"
    assert sent_with.headers.get_list("User-Agent") == ["mine/1"]
    assert sent_with.headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    assert "X-Trace" not in sent_without.headers
    assert sent_without.headers["User-Agent"].startswith("lingodoc-python/")


async def test_extra_headers_replace_a_default_header_of_the_same_name(
    client_class: type[Client], api: respx.MockRouter
) -> None:
    route = routes(api)["translate"]
    client = client_class(
        API_KEY, base_url=BASE_URL, default_headers={"X-Team": "docs", "X-Keep": "1"}
    )
    await call(client, "translate", "Hi", **LANGS, extra_headers={"x-team": "legal"})
    headers = route.calls.last.request.headers
    assert headers.get_list("X-Team") == ["legal"]
    assert headers["X-Keep"] == "1"
    await call(client, "translate", "Hi", **LANGS)
    assert route.calls.last.request.headers.get_list("X-Team") == ["docs"]
    await close(client)


@pytest.mark.parametrize("name", ["Authorization", "authorization"])
async def test_extra_headers_cannot_replace_the_authorization(
    client: Client, api: respx.MockRouter, name: str
) -> None:
    raised = await refused_before_sending(
        client,
        api,
        {"extra_headers": {name: "Bearer other"}},
        lingodoc.InvalidArgument,
        "cannot replace 'Authorization'",
        ["translate", "wait_for_translation", "request"],
    )
    assert not any("Bearer other" in str(error) for error in raised)


@pytest.mark.parametrize(
    ("headers", "error", "message"),
    [
        ({"Content-Length": "5"}, lingodoc.InvalidArgument, "frames the body"),
        ({"Transfer-Encoding": "chunked"}, lingodoc.InvalidArgument, "frames the body"),
        ({"X-Bad": "a\r\nX-Injected: 1"}, lingodoc.InvalidArgument, "line break"),
        ({"Bad Name": "1"}, lingodoc.InvalidArgument, "not a valid header name"),
        ({"X-Accent": "café"}, lingodoc.InvalidArgument, "cannot be sent as HTTP headers"),
        (
            {"X-Number": 5},
            lingodoc.InvalidArgumentType,
            "value of 'X-Number' must be a str, not int",
        ),
        ([("X-Trace", "abc")], lingodoc.InvalidArgumentType, "extra_headers must be a mapping"),
        ("X-Trace: abc", lingodoc.InvalidArgumentType, "extra_headers must be a mapping"),
    ],
)
async def test_bad_extra_headers_are_refused_before_sending(
    client: Client, api: respx.MockRouter, headers: Any, error: type[Exception], message: str
) -> None:
    methods = ["translate", "translate_many", "wait_for_translation"]
    await refused_before_sending(client, api, {"extra_headers": headers}, error, message, methods)


# extra_query= -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", QUERIED)
async def test_extra_query_is_sent_with_that_call_only(
    client: Client, api: respx.MockRouter, method: str
) -> None:
    options = {"extra_query": {"trace": "abc", "tags": ["a", "b"], "n": 3}}
    sent_with, sent_without = await with_and_without(client, api, method, options)
    params = sent_with.url.params
    assert params.get_list("tags") == ["a", "b"]
    assert (params["trace"], params["n"]) == ("abc", "3")
    assert not sent_without.url.params


async def test_extra_query_is_sent_with_every_poll_of_a_wait(
    client: Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").mock(
        side_effect=[
            httpx.Response(200, json=envelope(STATUS)),
            httpx.Response(200, json=envelope(STATUS)),
            httpx.Response(200, json=envelope(COMPLETED)),
        ]
    )
    await call(
        client,
        "wait_for_translation",
        "tr_1",
        extra_query={"trace": "abc"},
        extra_headers={"X-Trace": "abc"},
    )
    assert route.call_count == 3
    assert [c.request.url.params.get("trace") for c in route.calls] == ["abc"] * 3
    assert [c.request.headers.get("X-Trace") for c in route.calls] == ["abc"] * 3


async def test_options_are_sent_with_every_batch_of_translate_many(
    client: Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch").mock(side_effect=batch_answer)
    result = await call(
        client,
        "translate_many",
        [f"t{i}" for i in range(5)],
        **LANGS,
        batch_size=2,
        timeout=9,
        extra_headers={"X-Trace": "abc"},
        extra_query={"trace": "abc"},
        extra_body={"glossary_id": "g_1"},
    )
    assert result == ["T0", "T1", "T2", "T3", "T4"]
    assert route.call_count == 3
    for sent in route.calls:
        request = sent.request
        assert request.url.params["trace"] == "abc"
        assert request.headers["X-Trace"] == "abc"
        assert request.extensions["timeout"]["read"] == 9
        assert json.loads(request.content)["glossary_id"] == "g_1"


@pytest.mark.parametrize(
    "query",
    [{"filter": {"nested": 1}}, {"filter": object()}, [("a", "b")], "a=b"],
    ids=["nested", "object", "list", "str"],
)
async def test_bad_extra_query_is_refused_before_sending(
    client: Client, api: respx.MockRouter, query: Any
) -> None:
    await refused_before_sending(
        client,
        api,
        {"extra_query": query},
        lingodoc.InvalidArgumentType,
        "extra_query",
        ["get_translation", "translate_many"],
    )


# extra_body= ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", WITH_BODY)
async def test_extra_body_is_merged_into_that_calls_body(
    client: Client, api: respx.MockRouter, method: str
) -> None:
    options = {"extra_body": {"glossary_id": "g_1", "formality": {"level": 2}}}
    sent_with, sent_without = await with_and_without(client, api, method, options)
    body = json.loads(sent_with.content)
    assert body["glossary_id"] == "g_1"
    assert body["formality"] == {"level": 2}
    assert body["target_language"] == "de"
    assert "glossary_id" not in json.loads(sent_without.content)


async def test_extra_body_replaces_a_field_the_sdk_sets(
    client: Client, api: respx.MockRouter
) -> None:
    route = routes(api)["translate"]
    extra = {"style": "legal-v2", "target_language": "de-CH"}
    await call(client, "translate", "Hi", **LANGS, style="formal", extra_body=extra)
    assert json.loads(route.calls.last.request.content) == {
        "text": "Hi",
        "source_language": "en",
        "target_language": "de-CH",
        "style": "legal-v2",
    }
    assert extra == {"style": "legal-v2", "target_language": "de-CH"}  # not changed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tags": {"a", "b"}}, "extra_body cannot be sent as JSON"),
        ({"score": math.nan}, "extra_body cannot be sent as JSON"),
        ({1: "one"}, "field names must be str"),
        ({None: 1}, "extra_body's field names must be str, not NoneType"),  # not sent as "null"
        (["glossary_id", "g_1"], "extra_body must be a mapping"),
    ],
    ids=["set", "nan", "int-key", "none-key", "list"],
)
async def test_bad_extra_body_is_refused_before_sending(
    client: Client, api: respx.MockRouter, body: Any, message: str
) -> None:
    await refused_before_sending(
        client,
        api,
        {"extra_body": body},
        lingodoc.InvalidArgumentType,
        message,
        ["translate", "translate_many", "translate_document"],
    )


# With an http_client of the caller's (requests built by its build_request) ----------------


async def test_options_reach_a_request_built_through_the_callers_http_client(
    client_class: type[Client], api: respx.MockRouter
) -> None:
    route = routes(api)["translate"]
    kind = httpx.AsyncClient if client_class is lingodoc.AsyncClient else httpx.Client
    http = kind(params={"tenant": "acme"}, headers={"X-Proxy": "p"})
    client = client_class(
        API_KEY, base_url=BASE_URL, http_client=http, default_headers={"X-Team": "docs"}
    )
    await call(
        client,
        "translate",
        "Hi",
        **LANGS,
        timeout=4,
        extra_headers={"X-Team": "legal", "X-Proxy": "q"},
        extra_query={"trace": "abc"},
        extra_body={"glossary_id": "g_1"},
    )
    request = route.calls.last.request
    assert dict(request.url.params) == {"tenant": "acme", "trace": "abc"}
    assert request.headers.get_list("X-Team") == ["legal"]
    assert request.headers.get_list("X-Proxy") == ["q"]
    assert request.headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    assert request.extensions["timeout"]["read"] == 4
    assert json.loads(request.content)["glossary_id"] == "g_1"
    await close(client)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()
