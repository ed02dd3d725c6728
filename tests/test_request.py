"""Each method sends the spec's request and returns the parsed result, on both clients."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
import respx

import lingodoc
from tests.conftest import BASE_URL, call, envelope

TRANSLATION = {"translated_text": "Hallo Welt", "source_language": "en", "target_language": "de"}
JOB = {
    "document_id": "doc_1",
    "translation_id": "tr_1",
    "status": "processing",
    "estimated_completion": "2026-11-22T10:00:00Z",
}
COMPLETED = {
    "translation_id": "tr_1",
    "status": "completed",
    "progress": 100,
    "document_id": "doc_1",
    "target_language": "de",
    "completed_at": "2026-11-22T10:00:05Z",
}


BATCH = "/translate/batch"


def body(route: respx.Route) -> object:
    return json.loads(route.calls.last.request.content)


async def test_translate_posts_the_text_and_returns_a_text_translation(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    result = await call(
        client, "translate", "Hello world", source_language="en", target_language="de"
    )
    assert isinstance(result, lingodoc.TextTranslation)
    assert (result.translated_text, result.source_language, result.target_language) == (
        "Hallo Welt", "en", "de",
    )  # fmt: skip
    request = route.calls.last.request
    assert request.headers["Content-Type"] == "application/json"
    assert body(route) == {"text": "Hello world", "source_language": "en", "target_language": "de"}


async def test_translate_sends_style_only_when_given(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    await call(
        client, "translate", "Hi", source_language="en", target_language="de", style="formal"
    )
    assert body(route) == {
        "text": "Hi", "source_language": "en", "target_language": "de", "style": "formal",
    }  # fmt: skip
    await call(client, "translate", "Hi", source_language="en", target_language="de", style=None)
    assert "style" not in body(route)  # type: ignore[operator]


async def test_translate_keeps_unicode_text_intact(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    text = "Grüße 👋 \u200b 日本語"
    await call(client, "translate", text, source_language="de", target_language="ja")
    assert body(route)["text"] == text  # type: ignore[index]


async def test_translate_batch_returns_translations_in_input_order(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch").respond(
        json=envelope({"translations": ["eins", "zwei", "drei"]})
    )
    result = await call(
        client,
        "translate_batch",
        ["one", "two", "three"],
        source_language="en",
        target_language="de",
    )
    assert isinstance(result, lingodoc.BatchTranslation)
    assert result.translations == ["eins", "zwei", "drei"]
    assert body(route) == {
        "texts": ["one", "two", "three"], "source_language": "en", "target_language": "de",
    }  # fmt: skip


async def test_translate_batch_accepts_a_tuple(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch").respond(json=envelope({"translations": ["a"]}))
    await call(client, "translate_batch", ("x",), source_language="en", target_language="fr")
    assert body(route)["texts"] == ["x"]  # type: ignore[index]


async def test_translate_document_starts_a_job(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/documents/doc_1/translate").respond(json=envelope(JOB))
    job = await call(client, "translate_document", "doc_1", target_language="de")
    assert isinstance(job, lingodoc.TranslationJob)
    assert (job.document_id, job.translation_id) == ("doc_1", "tr_1")
    assert job.status is lingodoc.TranslationState.PROCESSING
    assert job.estimated_completion == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert body(route) == {"target_language": "de"}


async def test_translate_document_sends_optional_fields_only_when_given(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/documents/doc_1/translate").respond(json=envelope(JOB))
    await call(
        client,
        "translate_document",
        "doc_1",
        target_language="FR",
        style="marketing",
        use_translation_memory=False,
    )
    assert body(route) == {
        "target_language": "fr", "style": "marketing", "use_translation_memory": False,
    }  # fmt: skip


async def test_get_translation_reads_the_status(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(COMPLETED))
    status = await call(client, "get_translation", "tr_1")
    assert isinstance(status, lingodoc.TranslationStatus)
    assert status.status is lingodoc.TranslationState.COMPLETED
    assert (status.progress, status.document_id, status.target_language) == (100, "doc_1", "de")
    assert status.completed_at == datetime(2026, 11, 22, 10, 0, 5, tzinfo=timezone.utc)
    assert route.calls.last.request.content == b""


@pytest.mark.parametrize(
    ("identifier", "raw_path"),
    [
        ("a/b", "/v1/translations/a%2Fb"),
        ("x?y=1#z", "/v1/translations/x%3Fy%3D1%23z"),
        ("...", "/v1/translations/..."),
        ("sp ace", "/v1/translations/sp%20ace"),
        ("50%", "/v1/translations/50%25"),
    ],
)
async def test_ids_are_escaped_so_they_cannot_change_the_path(
    client: lingodoc.Client, api: respx.MockRouter, identifier: str, raw_path: str
) -> None:
    route = api.route().respond(
        json=envelope(COMPLETED | {"translation_id": identifier, "document_id": identifier})
    )
    await call(client, "get_translation", identifier)
    assert route.calls.last.request.url.raw_path.decode() == raw_path
    await call(client, "translate_document", identifier, target_language="de")
    assert (
        route.calls.last.request.url.raw_path.decode()
        == raw_path.replace("/translations/", "/documents/") + "/translate"
    )


async def test_timestamps_without_offset_are_read_as_utc(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(
        json=envelope(COMPLETED | {"completed_at": "2026-11-22T10:00:05"})
    )
    status = await call(client, "get_translation", "tr_1")
    assert status.completed_at.tzinfo is timezone.utc


async def test_unknown_fields_and_states_are_kept(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(
        json=envelope(COMPLETED | {"status": "queued", "priority": "high"})
    )
    status = await call(client, "get_translation", "tr_1")
    assert status.status == "queued"
    assert not isinstance(status.status, lingodoc.TranslationState)
    assert status.model_extra == {"priority": "high"}


@pytest.mark.parametrize(
    "listing",
    [
        [{"document_id": "doc_1", "name": "a.docx"}, {"id": "doc_2", "name": "b.pdf"}],
        {
            "documents": [
                {"document_id": "doc_1", "name": "a.docx"},
                {"id": "doc_2", "name": "b.pdf"},
            ],
            "total": 2,
        },
    ],
    ids=["bare-list", "object"],
)
async def test_list_documents_accepts_both_listing_shapes(
    client: lingodoc.Client, api: respx.MockRouter, listing: object
) -> None:
    api.get("/documents").respond(json=envelope(listing))
    documents = await call(client, "list_documents")
    assert [d.document_id for d in documents] == ["doc_1", "doc_2"]
    assert [d.model_extra["name"] for d in documents] == ["a.docx", "b.pdf"]
    assert all(isinstance(d, lingodoc.Document) for d in documents)


async def test_list_documents_of_another_shape_is_an_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/documents").respond(json=envelope({"items": []}))
    with pytest.raises(lingodoc.UnexpectedResponse, match="documents"):
        await call(client, "list_documents")


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


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "path"),
    [
        (
            "translate_batch",
            (["a"],),
            {"source_language": "en", "target_language": "de"},
            "/translate/batch",
        ),
        ("translate_document", ("doc_1",), {"target_language": "de"}, "/documents/doc_1/translate"),
        ("request", ("POST", "/webhooks"), {"json": {"url": "https://x"}}, "/webhooks"),
    ],
)
async def test_every_request_with_a_body_says_it_is_json(
    client: lingodoc.Client,
    api: respx.MockRouter,
    method: str,
    args: tuple,
    kwargs: dict,
    path: str,
) -> None:
    route = api.post(path).respond(json=envelope({"translations": ["x"]} | JOB))
    await call(client, method, *args, **kwargs)
    assert route.calls.last.request.headers["Content-Type"] == "application/json"


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


async def test_request_merges_the_query_in_the_path_with_the_http_clients_params(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    import httpx

    http_class = httpx.AsyncClient if client_class is lingodoc.AsyncClient else httpx.Client
    http = http_class(params={"tenant": "acme", "z": 0})
    client = client_class("ld_test_key", base_url=BASE_URL, http_client=http)
    route = api.get("/x").respond(json=envelope({}))
    await call(client, "request", "GET", "/x?y=1", params={"z": 2})
    assert route.calls.last.request.url.query.decode() == "tenant=acme&z=2&y=1"


@pytest.mark.parametrize("params", [5, [1, 2]])
async def test_request_refuses_params_that_are_not_query_parameters(
    client: lingodoc.Client, api: respx.MockRouter, params: object
) -> None:
    route = api.route().respond(json=envelope({}))
    with pytest.raises(TypeError, match="params cannot be sent as query parameters"):
        await call(client, "request", "GET", "/x?y=1", params=params)
    assert not route.called
