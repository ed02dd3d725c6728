"""Every result's ``request_id`` and ``http_response``: the response it was read from.

The responses here are streamed (``httpx.ByteStream``), as a network sends them, so the SDK
reads them through its own BodyReader, not httpx's ``read()``: the response must still
give its body (``.content``, ``.text``, ``.json()``) without another request.
"""

from __future__ import annotations

import copy
import gc
import gzip
import json
import pickle
import warnings
import weakref
from datetime import timedelta
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc.emulator import Emulator
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, pool_of, rate_limit_headers

TRANSLATION = {"translated_text": "Hallo Welt", "source_language": "en", "target_language": "de"}
JOB = {"document_id": "doc_1", "translation_id": "tr_1", "status": "processing"}
COMPLETED = {"translation_id": "tr_1", "status": "completed", "progress": 100}
HEADERS = {"X-Request-Id": "req_42", "X-Custom": "custom value", **rate_limit_headers()}


def streamed(
    route: respx.Route,
    data: Any,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    gzipped: bool = False,
) -> bytes:
    """Answer ``route`` with the envelope of ``data``, streamed; return the body as sent."""
    body = json.dumps(envelope(data)).encode()
    sent = dict(HEADERS if headers is None else headers)
    if gzipped:
        sent["Content-Encoding"] = "gzip"
    route.respond(
        status, headers=sent, stream=httpx.ByteStream(gzip.compress(body) if gzipped else body)
    )
    return body


def assert_response(result: Any, body: bytes, *, status: int = 200, method: str, path: str) -> None:
    """``result`` came from the streamed response that sent ``body``, and says so."""
    assert result.request_id == "req_42"
    response = result.http_response
    assert isinstance(response, httpx.Response)
    assert response.status_code == status
    assert response.headers["x-custom"] == "custom value"
    assert response.content == body
    assert response.text == body.decode()
    assert response.json() == json.loads(body)
    assert isinstance(response.elapsed, timedelta)
    assert response.http_version == "HTTP/1.1"
    assert (response.request.method, str(response.request.url)) == (method, BASE_URL + path)
    assert result.rate_limit is not None
    assert result.rate_limit.remaining == int(HEADERS["X-RateLimit-Remaining"])


async def test_translate_result_has_its_response_and_request_id(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    body = streamed(api.post("/translate"), TRANSLATION)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert_response(result, body, method="POST", path="/translate")


async def test_translate_batch_result_has_its_response_and_request_id(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    body = streamed(api.post("/translate/batch"), {"translations": ["Hallo", "Welt"]})
    result = await call(
        client, "translate_batch", ["Hello", "world"], source_language="en", target_language="de"
    )
    assert result.translations == ["Hallo", "Welt"]
    assert_response(result, body, method="POST", path="/translate/batch")


async def test_translate_document_job_has_its_response_and_request_id(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    body = streamed(api.post("/documents/doc_1/translate"), JOB, status=202)
    job = await call(client, "translate_document", "doc_1", target_language="de")
    assert_response(job, body, status=202, method="POST", path="/documents/doc_1/translate")


async def test_get_translation_status_has_its_response_and_request_id(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    body = streamed(api.get("/translations/tr_1"), COMPLETED)
    status = await call(client, "get_translation", "tr_1")
    assert_response(status, body, method="GET", path="/translations/tr_1")


async def test_every_document_of_a_listing_has_the_listing_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    listing = {"documents": [{"document_id": "doc_1"}, {"id": "doc_2", "name": "b.txt"}]}
    body = streamed(api.get("/documents"), listing)
    documents = await call(client, "list_documents")
    assert [document.document_id for document in documents] == ["doc_1", "doc_2"]
    for document in documents:
        assert_response(document, body, method="GET", path="/documents")
    assert documents[0].http_response is documents[1].http_response


async def test_wait_for_translation_returns_the_status_of_the_last_poll_with_its_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    polls = iter(
        [
            (dict(COMPLETED, status="processing", progress=50), "req_1"),
            (COMPLETED, "req_42"),
        ]
    )
    bodies: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        data, request_id = next(polls)
        bodies.append(json.dumps(envelope(data)).encode())
        headers = HEADERS | {"X-Request-Id": request_id}
        return httpx.Response(200, headers=headers, stream=httpx.ByteStream(bodies[-1]))

    api.get("/translations/tr_1").mock(side_effect=answer)
    seen: list[str | None] = []
    status = await call(
        client,
        "wait_for_translation",
        "tr_1",
        poll_interval=1,
        on_progress=lambda polled: seen.append(polled.request_id),
    )
    assert seen == ["req_1", "req_42"]
    assert_response(status, bodies[-1], method="GET", path="/translations/tr_1")


async def test_a_gzipped_response_gives_the_body_decompressed(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    body = streamed(api.post("/translate"), TRANSLATION, gzipped=True)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.http_response.headers["content-encoding"] == "gzip"
    assert_response(result, body, method="POST", path="/translate")


async def test_a_response_read_in_memory_gives_its_body_too(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(json=envelope(TRANSLATION), headers=HEADERS)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.http_response.json() == envelope(TRANSLATION)
    assert result.request_id == "req_42"


async def test_request_id_is_none_when_the_response_sends_none(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.post("/translate"), TRANSLATION, headers={"X-Custom": "custom value"})
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.request_id is None
    assert result.rate_limit is None
    assert result.http_response.headers["x-custom"] == "custom value"


async def test_request_id_masks_an_echo_of_the_key_as_errors_do(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.post("/translate"), TRANSLATION, headers={"X-Request-Id": f"req_{API_KEY}"})
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.request_id == "req_****WXYZ"


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (lingodoc.TextTranslation, TRANSLATION),
        (lingodoc.BatchTranslation, {"translations": ["a"]}),
        (lingodoc.TranslationJob, JOB),
        (lingodoc.TranslationStatus, COMPLETED),
        (lingodoc.Document, {"id": "doc_1"}),
    ],
)
def test_a_result_built_by_hand_has_no_response(model: type[Any], data: dict[str, Any]) -> None:
    nothing = (None, None, None)
    for result in (model(**data), model.model_validate(data), model.model_construct(**data)):
        assert (result.request_id, result.http_response, result.rate_limit) == nothing
        copies = [copy.copy(result), copy.deepcopy(result), pickle.loads(pickle.dumps(result))]
        for copied in copies:
            assert (copied.request_id, copied.http_response, copied.rate_limit) == nothing


async def test_pickle_drops_the_response_and_the_key_but_keeps_request_id_and_rate_limit(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.post("/translate"), TRANSLATION)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert API_KEY in result.http_response.request.headers["authorization"]
    pickled = pickle.dumps(result)
    assert API_KEY.encode() not in pickled
    assert b"Bearer" not in pickled
    restored = pickle.loads(pickled)
    assert restored == result
    assert restored.model_dump() == result.model_dump() == TRANSLATION
    assert restored.rate_limit == result.rate_limit
    assert restored.rate_limit is not None
    assert restored.request_id == "req_42"
    assert restored.http_response is None
    # The original keeps its response.
    assert result.http_response is not None


async def test_the_listing_pickles_without_the_key(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.get("/documents"), [{"id": "doc_1"}, {"id": "doc_2"}])
    documents = await call(client, "list_documents")
    pickled = pickle.dumps(documents)
    assert API_KEY.encode() not in pickled
    assert [d.request_id for d in pickle.loads(pickled)] == ["req_42", "req_42"]


async def test_copies_keep_request_id_and_rate_limit_but_not_the_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.post("/translate"), TRANSLATION)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    copies = [
        copy.copy(result),
        copy.deepcopy(result),
        result.model_copy(),
        result.model_copy(deep=True),
        result.model_copy(update={"translated_text": "Servus"}),
    ]
    for copied in copies:
        assert copied.http_response is None
        assert copied.request_id == "req_42"
        assert copied.rate_limit == result.rate_limit
    assert copies[0] == result
    assert copies[-1].translated_text == "Servus"
    assert result.http_response is not None


async def test_repr_and_dumps_hold_neither_the_response_nor_the_key(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.post("/translate"), TRANSLATION)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    shown = [repr(result), str(result), str(result.model_dump()), result.model_dump_json()]
    for text in shown:
        assert API_KEY not in text
        assert "req_42" not in text
        assert "Response" not in text
    assert result.model_dump() == TRANSLATION
    assert json.loads(result.model_dump_json()) == TRANSLATION


async def test_results_of_different_responses_are_equal_when_the_data_is(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate")
    streamed(route, TRANSLATION)
    first = await call(client, "translate", "Hello", source_language="en", target_language="de")
    streamed(route, TRANSLATION, headers={"X-Request-Id": "req_other"})
    second = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert first.http_response is not second.http_response
    assert first.request_id != second.request_id
    assert first == second


async def test_the_status_a_wait_error_carries_keeps_request_id_but_not_the_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    streamed(api.get("/translations/tr_1"), dict(COMPLETED, status="failed", progress=50))
    with pytest.raises(lingodoc.TranslationFailed) as caught:
        await call(client, "wait_for_translation", "tr_1")
    status = caught.value.status
    assert status.request_id == "req_42"
    assert status.rate_limit is not None
    assert status.http_response is None
    assert API_KEY.encode() not in pickle.dumps(caught.value)


@pytest.fixture
def responses() -> list[weakref.ref[httpx.Response]]:
    """Weak references to every response the client of ``hooked_client`` receives."""
    return []


@pytest.fixture
async def hooked_client(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    api: respx.MockRouter,
    responses: list[weakref.ref[httpx.Response]],
    anyio_backend: str,
) -> Any:
    """A client whose http client records a weak reference to every response."""

    def hook(response: httpx.Response) -> None:
        responses.append(weakref.ref(response))

    async def async_hook(response: httpx.Response) -> None:
        hook(response)

    http: httpx.Client | httpx.AsyncClient
    if client_class is lingodoc.Client:
        http = httpx.Client(event_hooks={"response": [hook]})
    else:
        http = httpx.AsyncClient(event_hooks={"response": [async_hook]})
    instance = client_class(API_KEY, base_url=BASE_URL, http_client=http)  # type: ignore[arg-type]
    yield instance
    await close(instance)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


async def test_translate_many_keeps_no_response_alive(
    hooked_client: lingodoc.Client,
    api: respx.MockRouter,
    responses: list[weakref.ref[httpx.Response]],
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["texts"]
        body = json.dumps(envelope({"translations": [text.upper() for text in texts]})).encode()
        return httpx.Response(200, headers=HEADERS, stream=httpx.ByteStream(body))

    api.post("/translate/batch").mock(side_effect=answer)
    texts = [f"text {number}" for number in range(10)]
    translations = await call(
        hooked_client,
        "translate_many",
        texts,
        source_language="en",
        target_language="de",
        batch_size=2,
        max_concurrency=2,
    )
    assert translations == [text.upper() for text in texts]
    assert len(responses) == 5
    gc.collect()
    assert [ref() for ref in responses] == [None] * 5


async def test_a_result_keeps_its_response_alive_and_lets_it_go_with_it(
    hooked_client: lingodoc.Client,
    api: respx.MockRouter,
    responses: list[weakref.ref[httpx.Response]],
) -> None:
    streamed(api.post("/translate"), TRANSLATION)
    result = await call(
        hooked_client, "translate", "Hello", source_language="en", target_language="de"
    )
    kept = weakref.ref(result.http_response)
    gc.collect()
    assert kept() is result.http_response  # alive as long as the result
    del result
    gc.collect()
    assert kept() is None
    assert responses[0]() is None


async def test_the_emulator_sends_a_request_id_of_its_own_with_every_response(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], anyio_backend: str
) -> None:
    emulator = Emulator()
    http: httpx.Client | httpx.AsyncClient
    if client_class is lingodoc.Client:
        http = httpx.Client(transport=emulator.transport())
    else:
        http = httpx.AsyncClient(transport=emulator.transport())
    client = client_class(emulator.api_key, base_url=BASE_URL, http_client=http)  # type: ignore[arg-type]
    first = await call(client, "translate", "Hello", source_language="en", target_language="de")
    second = await call(client, "list_documents")
    await close(client)
    request_ids = [first.request_id, *(document.request_id for document in second)]
    assert all(isinstance(rid, str) and rid.startswith("req_") for rid in request_ids)
    assert first.request_id != second[0].request_id
    assert first.request_id == first.http_response.headers["x-request-id"]
    assert first.http_response.json()["data"]["translated_text"] == first.translated_text
    assert first.http_response.status_code == 200


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_kept_result_holds_no_connection_of_a_client_dropped_unclosed(kind: str) -> None:
    # Over a real socket: the response httpx returns streams from the pool, through the
    # connection. A result must keep neither once its body is read.
    emulator = Emulator()
    with emulator.serve() as server:
        client: Any
        if kind == "sync":
            client = lingodoc.Client(server.api_key, base_url=server.base_url)
            result = client.translate("Hello", source_language="en", target_language="de")
        else:
            import asyncio

            client = lingodoc.AsyncClient(server.api_key, base_url=server.base_url)
            result = asyncio.run(
                client.translate("Hello", source_language="en", target_language="de")
            )
        pool = weakref.ref(pool_of(client))  # its pool, and its sockets
        response = result.http_response
        assert "network_stream" not in response.extensions
        assert response.json()["data"]["translated_text"] == result.translated_text
        with warnings.catch_warnings():  # the client's socket, dropped unclosed
            warnings.simplefilter("ignore", ResourceWarning)
            del client
            gc.collect()
        assert pool() is None  # the result did not keep the pool (and its sockets) alive
        assert result.http_response.read() == response.content
