"""request(): any call under base_url, and never outside it; the query in the path and params."""

from __future__ import annotations

import json
from typing import Any

import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, http_client_for


async def test_request_returns_the_unwrapped_data(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.patch("/documents/doc_1").respond(json=envelope({"name": "new.docx"}))
    data = await call(
        client, "request", "patch", "/documents/doc_1", json={"name": "new.docx"}, params={"v": 2}
    )
    assert data == {"name": "new.docx"}
    request = route.calls.last.request
    assert request.method == "PATCH"
    assert str(request.url) == f"{BASE_URL}/documents/doc_1?v=2"
    assert json.loads(request.content) == {"name": "new.docx"}
    assert request.headers["Authorization"].startswith("Bearer ")


async def test_request_accepts_a_path_without_leading_slash(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/workspaces").respond(json=envelope([]))
    assert await call(client, "request", "GET", "workspaces") == []
    assert route.called


@pytest.mark.parametrize(
    "path",
    [
        "https://evil.example.com/steal",
        "//evil.example.com/steal",
        "/../admin",
        "/documents/../../x",
        "\\\\evil.example.com",
        "/documents\\..\\..\\admin",
    ],
)
async def test_request_refuses_paths_that_leave_base_url(
    client: lingodoc.Client, api: respx.MockRouter, path: str
) -> None:
    route = api.route().respond(json=envelope({}))
    with pytest.raises(ValueError, match="relative to base_url"):
        await call(client, "request", "GET", path)
    assert not route.called


async def test_request_keeps_a_colon_in_the_path_under_base_url(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/documents:search").respond(json=envelope([]))
    assert await call(client, "request", "POST", "documents:search", json={"q": "x"}) == []
    assert route.calls.last.request.url.host == "api.lingodoc.test"


async def test_request_refuses_a_body_that_is_not_json(client: lingodoc.Client) -> None:
    with pytest.raises(TypeError, match="JSON"):
        await call(client, "request", "POST", "/webhooks", json={"when": object()})


@pytest.mark.parametrize("path", ["/documents/\x00", "/doc\nX-Injected: 1"])
async def test_request_refuses_a_path_with_control_characters(
    client: lingodoc.Client, api: respx.MockRouter, path: str
) -> None:
    route = api.route().respond(json=envelope({}))
    with pytest.raises(ValueError, match="not a valid request path"):
        await call(client, "request", "GET", path)
    assert not route.called


@pytest.mark.parametrize("method", ["", "GET /x", 5])
async def test_request_refuses_a_bad_method(client: lingodoc.Client, method: object) -> None:
    with pytest.raises(ValueError, match="method"):
        await call(client, "request", method, "/documents")


@pytest.mark.parametrize(
    "path",
    [
        "documents/%2e%2e/%2e%2e/x",
        "/documents/%2E%2E/admin",
        "/documents/%2E./admin",
        "/documents/.%2e/admin",
        "/%2e/documents",
        "%2e%2e",
        "/documents%2f..%2fadmin",
        "/documents%2F%2E%2E%2Fadmin",
        "/documents%5c..%5cadmin",
        "/documents/..;/admin",
        "/documents/%2e%2e;x=1/admin",
    ],
)
async def test_request_refuses_dot_segments_hidden_by_percent_encoding(
    client: lingodoc.Client, api: respx.MockRouter, path: str
) -> None:
    route = api.route().respond(json=envelope({}))
    with pytest.raises(ValueError, match="path must be relative to base_url"):
        await call(client, "request", "GET", path)
    assert not route.called


@pytest.mark.parametrize(
    "path",
    ["/documents/%2e%2e%2e", "/documents/a%2Fb", "/documents/v1.2/.well", "/documents/a..b;v=1"],
)
async def test_request_sends_paths_whose_dots_are_not_segments_as_written(
    client: lingodoc.Client, api: respx.MockRouter, path: str
) -> None:
    route = api.route().respond(json=envelope({}))
    await call(client, "request", "GET", path)
    assert route.calls.last.request.url.raw_path.decode() == f"/v1{path}"


@pytest.mark.parametrize(
    ("path", "params", "query"),
    [
        ("x?y=1", {"z": 2}, "y=1&z=2"),
        ("/x?y=1&z=5", {"z": 2}, "y=1&z=2"),  # a key in both: params win
        ("/x?y=1&y=3", {"y": [5, 6]}, "y=5&y=6"),
        ("/x?y=1&flag", {"z": "a b"}, "y=1&flag=&z=a+b"),
        ("/x?y=1#fragment", {"z": 2}, "y=1&z=2"),
        ("/x", {"z": 2}, "z=2"),
    ],
)
async def test_request_merges_the_query_in_the_path_with_params(
    client: lingodoc.Client, api: respx.MockRouter, path: str, params: dict, query: str
) -> None:
    route = api.get("/x").respond(json=envelope({}))
    await call(client, "request", "GET", path, params=params)
    assert route.calls.last.request.url.query.decode() == query


@pytest.mark.parametrize("params", [None, {}])
async def test_request_sends_the_query_in_the_path_as_written_without_params(
    client: lingodoc.Client, api: respx.MockRouter, params: object
) -> None:
    route = api.get("/x").respond(json=envelope({}))
    await call(client, "request", "GET", "/x?a=b%2Bc&flag&a=%20", params=params)
    assert route.calls.last.request.url.query == b"a=b%2Bc&flag&a=%20"


@pytest.mark.parametrize(
    ("http_params", "path", "params", "query"),
    [
        ({"tenant": "acme", "z": 0}, "/x?y=1", {"z": 2}, "tenant=acme&z=2&y=1"),
        ({"tenant": "acme"}, "/x?page=2&tag=a&tag=b", None, "tenant=acme&page=2&tag=a&tag=b"),
        ({"tenant": "acme"}, "/x?page=2", {"page": 3}, "tenant=acme&page=3"),
    ],
)
async def test_request_merges_the_query_in_the_path_with_the_http_clients_params(
    client_class: type[lingodoc.Client],
    api: respx.MockRouter,
    http_params: dict[str, Any],
    path: str,
    params: dict[str, Any] | None,
    query: str,
) -> None:
    # httpx's build_request replaces a URL's query with the client's params.
    http = http_client_for(client_class, params=http_params)
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    route = api.get("/x").respond(json=envelope({}))
    await call(client, "request", "GET", path, params=params)
    assert route.calls.last.request.url.query.decode() == query
    await close(client)


@pytest.mark.parametrize("params", [5, [1, 2]])
async def test_request_refuses_params_that_are_not_query_parameters(
    client: lingodoc.Client, api: respx.MockRouter, params: object
) -> None:
    route = api.route().respond(json=envelope({}))
    with pytest.raises(TypeError, match="params cannot be sent as query parameters"):
        await call(client, "request", "GET", "/x?y=1", params=params)
    assert not route.called
