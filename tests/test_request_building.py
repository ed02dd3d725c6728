"""Requests are built as httpx's build_request would build them, though without it on the fast path.

lingodoc keeps the parsed URL and the merged headers between calls (see
``BaseClient._build_request``); these tests pin that what goes out is the same, and that
what the caller's own http client holds (headers, cookies, query parameters) still counts,
even when it changes after the lingodoc client was made.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, BASE_URL, call, close, envelope

STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}
TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}


def http_client(client_class: type[Any], **kwargs: Any) -> httpx.Client | httpx.AsyncClient:
    kind = httpx.AsyncClient if client_class is lingodoc.AsyncClient else httpx.Client
    return kind(**kwargs)  # type: ignore[no-any-return]


async def test_the_request_is_the_one_build_request_would_make(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    http = http_client(client_class, headers={"X-Proxy-Token": "p", "Accept": "text/html"})
    client = client_class(
        API_KEY, base_url=BASE_URL, http_client=http, default_headers={"X-Team": "docs"}
    )
    for make in (
        lambda: client._translate_call("Hi", "en", "de", None),
        lambda: client._get_translation_call("tr/1"),
        lambda: client._raw_call("GET", "/documents?page=2", None, {"size": 5}),
        # A POST without a body (Content-Length: 0), and a body of non-ASCII text.
        lambda: client._raw_call("POST", "/documents/doc_1/translate", None, None),
        lambda: client._raw_call("PUT", "/glossaries/g", [1.5, "Grüße ☃", {"a": None}], None),
    ):
        built = client._build_request(make())
        call_ = make()
        expected = http.build_request(
            call_.method,
            BASE_URL + call_.path,
            json=call_.json,
            params=call_.params,
            headers=client._headers,
            timeout=client.timeout,
        )
        assert built.method == expected.method
        assert built.url == expected.url
        assert built.headers.raw == expected.headers.raw
        assert built.content == expected.content
        assert built.extensions == expected.extensions
    await close(client)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/json; charset=utf-8"},
        {"Host": "api.lingodoc.test"},
        {"Transfer-Encoding": "chunked"},
    ],
)
async def test_a_header_httpx_sets_itself_is_merged_as_build_request_merges_it(
    client_class: type[Any], api: respx.MockRouter, headers: dict[str, str]
) -> None:
    # Set on the http client (default_headers refuses the transport ones): httpx then
    # keeps it, or decides on the others by it, as build_request does.
    http = http_client(client_class, headers=headers)
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    call_ = client._translate_call("Hi", "en", "de", None)
    built = client._build_request(call_)
    expected = http.build_request(
        "POST",
        BASE_URL + "/translate",
        json=call_.json,
        headers=client._headers,
        timeout=client.timeout,
    )
    assert built.headers.raw == expected.headers.raw
    assert built.content == expected.content
    await close(client)


async def test_the_http_clients_own_headers_are_sent_and_changes_to_them_count(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    http = http_client(client_class, headers={"X-Proxy-Token": "one"})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    await call(client, "get_translation", "tr_1")
    assert route.calls.last.request.headers["X-Proxy-Token"] == "one"
    http.headers["X-Proxy-Token"] = "two"
    http.headers["Authorization"] = "Bearer not-the-key"
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert headers["X-Proxy-Token"] == "two"
    assert headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    await close(client)


async def test_cookies_and_query_parameters_of_the_http_client_are_sent(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(
        json=envelope(STATUS), headers={"Set-Cookie": "lb=node-7; Path=/"}
    )
    http = http_client(client_class, params={"tenant": "acme"})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    await call(client, "get_translation", "tr_1")
    first = route.calls.last.request
    assert first.url.params["tenant"] == "acme"
    assert "cookie" not in first.headers
    await call(client, "get_translation", "tr_1")  # the cookie the service set goes back
    assert route.calls.last.request.headers["Cookie"] == "lb=node-7"
    await close(client)


async def test_a_query_written_in_a_request_path_is_kept_beside_the_http_clients_params(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    # httpx's build_request replaces a URL's query with the client's params.
    route = api.get("/documents").respond(json=envelope([]))
    http = http_client(client_class, params={"tenant": "acme"})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    await call(client, "request", "GET", "/documents?page=2&tag=a&tag=b")
    assert route.calls.last.request.url.params.multi_items() == [
        ("tenant", "acme"), ("page", "2"), ("tag", "a"), ("tag", "b"),
    ]  # fmt: skip
    await call(client, "request", "GET", "/documents?page=2", params={"page": 3})
    assert route.calls.last.request.url.params.multi_items() == [("tenant", "acme"), ("page", "3")]
    await close(client)


async def test_with_options_sends_its_own_timeout(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    await call(client, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 30
    slow = client.with_options(timeout=120)
    await call(slow, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 120
    await call(client, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 30


@pytest.mark.parametrize("count", [1, 200])
async def test_many_different_paths_each_reach_their_own_url(
    client: lingodoc.Client, api: respx.MockRouter, count: int
) -> None:
    route = api.get(path__regex=r"/translations/(?P<tid>[^/]+)$").mock(
        side_effect=lambda request, tid: httpx.Response(
            200, json=envelope(STATUS | {"translation_id": tid})
        )
    )
    for number in range(count):
        await call(client, "get_translation", f"tr_{number}")
        assert route.calls.last.request.url.path == f"/v1/translations/tr_{number}"
    assert len(client._urls) <= 64  # the cache of parsed URLs stays bounded


async def test_each_request_gets_its_own_copy_of_the_kept_headers(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    # The headers of a direct request are copied from ones kept per client, and each
    # request's Content-Length set on its copy: one request's length must never show up in
    # another's, nor in the kept ones. Their encoding is the one httpx would work out (a
    # UTF-8 header of the http client's makes it "utf-8", not "ascii").
    http = http_client(client_class, headers={"X-Team": "Grüße".encode()})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    calls = [
        client._translate_call("Hi", "en", "de", None),
        client._translate_call("A much longer text, to change the length", "en", "de", None),
        client._raw_call("POST", "/documents/doc_1/translate", None, None),
        client._raw_call("GET", "/documents", None, None),
        client._translate_call("Hi again", "en", "de", None),
    ]
    built = [client._build_request(call_) for call_ in calls]
    for call_, request in zip(calls, built, strict=True):
        expected = http.build_request(
            call_.method,
            BASE_URL + call_.path,
            json=call_.json,
            headers=client._headers,
            timeout=client.timeout,
        )
        assert request.headers.raw == expected.headers.raw
        assert request.content == expected.content
        assert request.headers.encoding == expected.headers.encoding == "utf-8"
    assert [request.headers.get("Content-Length") for request in built] == [
        "59",
        "97",
        "0",
        None,
        "65",
    ]
    # A header added to the http client afterwards makes new kept headers.
    http.headers["X-Proxy-Token"] = "p"
    assert client._build_request(calls[0]).headers["X-Proxy-Token"] == "p"
    assert "x-proxy-token" not in built[0].headers
    await close(client)


async def test_the_headers_of_a_request_read_as_httpxs_own(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    # A direct request's headers are looked up by name in C (httpx's cookie jar reads them
    # all after every response): every way of reading them answers as httpx.Headers does,
    # a header sent twice included.
    http = http_client(
        client_class, headers=[("X-Dup", "a"), ("X-Team", "Grüße".encode()), ("x-dup", "b")]
    )
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    request = client._build_request(client._translate_call("Hi", "en", "de", None))
    sent = request.headers
    plain = httpx.Headers(sent.raw)
    assert isinstance(sent, httpx.Headers)
    assert type(sent) is not httpx.Headers  # the direct path was taken
    assert dict(sent) == dict(plain)
    assert list(sent.keys()) == list(plain.keys())
    assert list(sent) == list(plain)
    assert sent["x-dup"] == plain["x-dup"] == "a, b"
    for name in [*plain.keys(), "HOST", "Content-length", "x-team"]:
        assert sent[name] == plain[name]
        assert sent.get(name) == plain.get(name)
    with pytest.raises(KeyError):
        sent["X-Missing"]
    assert sent.get("x-missing") is None
    assert "x-missing" not in sent
    assert repr(sent) == repr(plain)
    assert API_KEY not in repr(sent)
    await close(client)
