"""What the caller's own http client holds (headers, cookies, query parameters) goes out too.

Even when it changes after the lingodoc client was made.
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
