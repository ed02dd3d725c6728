"""Odd and hostile responses: each gives a typed error or a result, and never the key."""

from __future__ import annotations

import gzip
import json
import traceback

import httpx
import pytest
import respx

import lingodoc
from lingodoc.testing import FakeClock
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, failure

TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}


async def translate(client: lingodoc.Client | lingodoc.AsyncClient) -> lingodoc.TextTranslation:
    return await call(client, "translate", "Hello", source_language="en", target_language="de")  # type: ignore[no-any-return]


@pytest.mark.parametrize("body", [b"Too Many Requests", b"", b"<html>slow down</html>"])
async def test_a_429_whose_body_is_not_the_envelope_is_still_rate_limited(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock, body: bytes
) -> None:
    route = api.post("/translate").mock(
        side_effect=[
            httpx.Response(429, content=body, headers={"X-RateLimit-Reset": "9"}),
            httpx.Response(200, json=envelope(TRANSLATION)),
        ]
    )
    assert (await translate(client)).translated_text == "Hallo"
    assert route.call_count == 2
    assert clock.sleeps == [9.0]


async def test_a_429_with_only_a_far_reset_header_is_raised_at_once(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.post("/translate").respond(
        429, json=failure("RATE_LIMITED"), headers={"X-RateLimit-Reset": "3600"}
    )
    with pytest.raises(lingodoc.RateLimited) as caught:
        await translate(client)
    assert caught.value.retry_after == 3600.0
    assert caught.value.rate_limit is None  # the other two headers were missing
    assert route.call_count == 1
    assert clock.sleeps == []


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "soon"])
async def test_a_retry_after_that_is_not_a_finite_number_is_ignored(
    client: lingodoc.Client, api: respx.MockRouter, value: str
) -> None:
    api.post("/translate").respond(503, json=failure("BUSY"), headers={"Retry-After": value})
    client = client.with_options(max_retries=0)
    with pytest.raises(lingodoc.ServerError) as caught:
        await translate(client)
    assert caught.value.retry_after is None


async def test_a_400_carrying_the_rate_limited_code_is_not_retried(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(400, json=failure("RATE_LIMITED"))
    with pytest.raises(lingodoc.RateLimited):
        await translate(client)
    assert route.call_count == 1


async def test_a_body_that_cannot_be_decompressed_is_a_connection_error(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    api.post("/translate").respond(
        200, stream=httpx.ByteStream(b"not gzip at all"), headers={"Content-Encoding": "gzip"}
    )
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    with pytest.raises(lingodoc.APIConnectionError) as caught:
        await translate(client)
    assert isinstance(caught.value.__cause__, httpx.DecodingError)
    await close(client)


async def test_a_gzipped_envelope_is_read(client: lingodoc.Client, api: respx.MockRouter) -> None:
    body = gzip.compress(b'{"success": true, "data": {"translations": ["a", "b"]}}')
    api.post("/translate/batch").respond(200, content=body, headers={"Content-Encoding": "gzip"})
    result = await call(
        client, "translate_batch", ["x", "y"], source_language="en", target_language="de"
    )
    assert result.translations == ["a", "b"]


DATA = '{"success": true, "data": {"text": "Grüße ☃", "n": [1, 2.5, null]}}'


@pytest.mark.parametrize(
    "body",
    [
        DATA.encode(),
        DATA.encode("utf-8-sig"),
        DATA.encode("utf-16"),  # with a BOM
        DATA.encode("utf-16-le"),  # none: "{" then NUL
        DATA.encode("utf-32-be"),
        # A lone surrogate, as json.loads reads UTF-8 (its "surrogatepass").
        b'{"success": true, "data": {"text": "a\xed\xa0\x80b", "n": []}}',
    ],
)
async def test_a_body_is_read_as_json_loads_reads_it(
    client: lingodoc.Client, api: respx.MockRouter, body: bytes
) -> None:
    api.get("/echo").respond(200, content=body)
    assert await call(client, "request", "GET", "/echo") == json.loads(body)["data"]


@pytest.mark.parametrize("body", [b'{"success": true, "data": ', b"{\xff}", b"{"])
async def test_a_body_that_starts_as_json_and_is_not_is_unexpected(
    client: lingodoc.Client, api: respx.MockRouter, body: bytes
) -> None:
    api.get("/echo").respond(200, content=body)
    with pytest.raises(lingodoc.UnexpectedResponse, match="not JSON"):
        await call(client, "request", "GET", "/echo")


async def test_a_bodiless_204_answers_request_with_none(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.delete("/webhooks/wh_1").respond(204)
    assert await call(client, "request", "DELETE", "/webhooks/wh_1") is None


async def test_a_bodiless_204_is_not_a_translation(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(204)
    with pytest.raises(lingodoc.UnexpectedResponse):
        await translate(client)


async def test_a_batch_answered_with_fewer_translations_is_refused(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate/batch").respond(json=envelope({"translations": ["eins"]}))
    with pytest.raises(lingodoc.UnexpectedResponse, match="1 translations for 3 texts"):
        await call(
            client, "translate_batch", ["a", "b", "c"], source_language="en", target_language="de"
        )


KEY_ECHOES = {
    "truncated": f"invalid key {API_KEY[:14]}...",
    "json-escaped": API_KEY.replace("_", "\\/"),
    "tail": f"key ending {API_KEY[-12:]}",
}


@pytest.mark.parametrize("echo", KEY_ECHOES.values(), ids=KEY_ECHOES.keys())
async def test_partial_echoes_of_the_key_are_masked(
    client: lingodoc.Client, api: respx.MockRouter, echo: str
) -> None:
    api.post("/translate").respond(401, json=failure("UNAUTHORIZED", echo))
    with pytest.raises(lingodoc.Unauthorized) as caught:
        await translate(client)
    shown = str(caught.value)
    assert "****WXYZ" in shown
    for start in range(len(API_KEY) - 8):
        assert API_KEY[start : start + 8] not in shown


def chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(500, content=f"<html>{API_KEY}</html>".encode()),
        httpx.Response(200, json=envelope({"echo": API_KEY})),
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
    ],
    ids=["html", "wrong-shape", "connect", "timeout"],
)
async def test_no_exception_in_the_chain_gives_access_to_the_key(
    client_class: type[lingodoc.Client], api: respx.MockRouter, answer: object
) -> None:
    api.post("/translate").mock(side_effect=[answer])
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    with pytest.raises(lingodoc.LingodocError) as caught:
        await translate(client)
    for link in chain(caught.value):
        assert API_KEY not in repr(vars(link))
        assert API_KEY not in str(link)
        request = getattr(link, "_request", None)
        assert request is None or API_KEY not in str(request.headers)
    printed = "".join(traceback.format_exception(caught.value))
    assert API_KEY not in printed
    await close(client)


def test_results_are_equal_whatever_rate_limit_their_responses_carried() -> None:
    from lingodoc._models import Origin

    first = lingodoc.TextTranslation(**TRANSLATION)
    second = lingodoc.TextTranslation(**TRANSLATION)
    limit = lingodoc.RateLimit.model_construct(limit=1, remaining=0, reset=1)
    second._origin = Origin(limit, "req_1", httpx.Response(200))
    assert second.rate_limit is limit
    assert first == second
    assert first != lingodoc.TextTranslation(**(TRANSLATION | {"translated_text": "Servus"}))


async def test_model_tolerance_for_loose_servers(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/7").respond(
        json=envelope({"translation_id": 7, "status": "COMPLETED", "progress": 99.6})
    )
    api.get("/translations/8").respond(
        json=envelope({"translation_id": "8", "status": "Pending", "progress": None})
    )
    done = await call(client, "get_translation", "7")
    assert (done.translation_id, done.status, done.progress) == (
        "7", lingodoc.TranslationState.COMPLETED, 100,
    )  # fmt: skip
    waiting = await call(client, "get_translation", "8")
    assert (waiting.status, waiting.progress) == (lingodoc.TranslationState.PENDING, 0)
    api.get("/documents").respond(json=envelope([{"id": 42}]))
    assert [d.document_id for d in await call(client, "list_documents")] == ["42"]


# Results are read strictly where the SDK relies on a value: a number is never
# turned into a text (NaN would become the translation 'nan'), a progress is a
# number from 0 to 100, and a status or job of another translation is refused.


def raw_envelope(data: str) -> httpx.Response:
    """A success envelope around ``data`` written as raw JSON (NaN and Infinity included)."""
    body = '{"success": true, "data": ' + data + "}"
    return httpx.Response(200, content=body.encode(), headers={"Content-Type": "application/json"})


STATUS = '"translation_id": "tr_1", "status": "processing"'


@pytest.mark.parametrize(
    "translations",
    ["[1, NaN, -Infinity]", '["eins", 2, "drei"]', '["eins", null, "drei"]',
     '["eins", ["zwei"], "drei"]', '"eins zwei drei"', "null", '{"0": "eins"}'],
)  # fmt: skip
async def test_translations_that_are_not_a_list_of_strings_are_refused(
    client: lingodoc.Client, api: respx.MockRouter, translations: str
) -> None:
    api.post("/translate/batch").mock(
        side_effect=lambda request: raw_envelope('{"translations": ' + translations + "}")
    )
    with pytest.raises(lingodoc.UnexpectedResponse, match="not a BatchTranslation"):
        await call(
            client, "translate_batch", ["a", "b", "c"], source_language="en", target_language="de"
        )
    with pytest.raises(lingodoc.UnexpectedResponse, match="not a BatchTranslation"):
        await call(
            client, "translate_many", ["a", "b", "c"], source_language="en", target_language="de"
        )


@pytest.mark.parametrize(
    "fields",
    ['"translated_text": NaN', '"translated_text": 1', '"translated_text": -Infinity',
     '"translated_text": true', '"translated_text": null', '"translated_text": {"de": "x"}',
     '"source_language": 12', '"target_language": false'],
)  # fmt: skip
async def test_a_translation_whose_texts_are_not_strings_is_refused(
    client: lingodoc.Client, api: respx.MockRouter, fields: str
) -> None:
    sent = {"translated_text": '"Hallo"', "source_language": '"en"', "target_language": '"de"'}
    name, value = fields.split(": ", 1)
    sent[name.strip('"')] = value
    data = "{" + ", ".join(f'"{key}": {raw}' for key, raw in sent.items()) + "}"
    api.post("/translate").respond(
        200, content=('{"success": true, "data": ' + data + "}").encode()
    )
    with pytest.raises(lingodoc.UnexpectedResponse, match=name.strip('"')):
        await translate(client)


@pytest.mark.parametrize(
    "fields",
    ['"status": 1', '"status": NaN', '"status": null', '"translation_id": 7.0',
     '"translation_id": NaN', '"translation_id": true', '"document_id": Infinity',
     '"target_language": 1'],
)  # fmt: skip
async def test_a_status_whose_texts_or_ids_are_not_strings_is_refused(
    client: lingodoc.Client, api: respx.MockRouter, fields: str
) -> None:
    api.get("/translations/tr_1").respond(
        200,
        content=('{"success": true, "data": {' + STATUS + ", " + fields + "}}").encode(),
    )
    with pytest.raises(lingodoc.UnexpectedResponse, match="not a TranslationStatus"):
        await call(client, "get_translation", "tr_1")


@pytest.mark.parametrize(
    "document", ['{"id": NaN}', '{"document_id": 1.5}', '{"id": true}', '{"id": null}']
)
async def test_a_document_whose_id_is_not_a_string_or_an_integer_is_refused(
    client: lingodoc.Client, api: respx.MockRouter, document: str
) -> None:
    api.get("/documents").respond(
        200, content=('{"success": true, "data": [' + document + "]}").encode()
    )
    with pytest.raises(lingodoc.UnexpectedResponse, match="not a Document"):
        await call(client, "list_documents")


@pytest.mark.parametrize(
    "progress", ["150", "-5", "100.6", "-0.4", "true", "false", '"50"', "NaN", "Infinity", "[50]"]
)
async def test_a_progress_that_is_not_a_percentage_is_refused(
    client: lingodoc.Client, api: respx.MockRouter, progress: str
) -> None:
    route = api.get("/translations/tr_1").mock(
        side_effect=lambda request: raw_envelope("{" + STATUS + ', "progress": ' + progress + "}")
    )
    with pytest.raises(lingodoc.UnexpectedResponse, match="progress"):
        await call(client, "get_translation", "tr_1")
    seen: list[object] = []
    with pytest.raises(lingodoc.UnexpectedResponse, match="progress"):
        await call(client, "wait_for_translation", "tr_1", timeout=60, on_progress=seen.append)
    assert seen == []
    assert route.call_count == 2  # refused at once: neither retried nor polled again


@pytest.mark.parametrize(
    ("progress", "read"), [("0", 0), ("100", 100), ("99.6", 100), ("0.4", 0), ("null", 0)]
)
async def test_a_progress_from_0_to_100_is_read_as_a_whole_percentage(
    client: lingodoc.Client, api: respx.MockRouter, progress: str, read: int
) -> None:
    api.get("/translations/tr_1").mock(
        side_effect=lambda request: raw_envelope("{" + STATUS + ', "progress": ' + progress + "}")
    )
    assert (await call(client, "get_translation", "tr_1")).progress == read


async def test_a_status_of_another_translation_is_refused(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    other = {"translation_id": "tr_2", "status": "completed", "progress": 100}
    route = api.get("/translations/tr_1").respond(json=envelope(other))
    with pytest.raises(lingodoc.UnexpectedResponse) as caught:
        await call(client, "get_translation", "tr_1")
    assert caught.value.message == (
        "the status is of translation 'tr_2', not of 'tr_1', "
        "in answer to GET https://api.lingodoc.test/v1/translations/tr_1"
    )
    assert caught.value.status_code == 200
    job = lingodoc.TranslationJob(document_id="doc_1", translation_id="tr_1")
    for job_or_id in ("tr_1", job):
        seen: list[object] = []
        with pytest.raises(lingodoc.UnexpectedResponse, match="'tr_2', not of 'tr_1'"):
            await call(client, "wait_for_translation", job_or_id, on_progress=seen.append)
        assert seen == []  # the other translation's status never reached the caller
    assert route.call_count == 3


async def test_a_status_whose_integer_id_is_the_one_asked_for_is_read(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/42").respond(
        json=envelope({"translation_id": 42, "status": "completed", "progress": 100})
    )
    status = await call(client, "wait_for_translation", "42")
    assert status.translation_id == "42"


async def test_a_job_started_on_another_document_is_refused(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    job = {"document_id": "doc_2", "translation_id": "tr_9", "status": "processing"}
    route = api.post("/documents/doc_1/translate").respond(json=envelope(job))
    with pytest.raises(lingodoc.UnexpectedResponse) as caught:
        await call(client, "translate_document", "doc_1", target_language="de")
    assert caught.value.message == (
        "the job is for document 'doc_2', not for 'doc_1', "
        "in answer to POST https://api.lingodoc.test/v1/documents/doc_1/translate"
    )
    assert '"translation_id": "tr_9"' in (caught.value.body or "")  # the job, for the record
    assert route.call_count == 1


async def test_a_foreign_id_is_quoted_cut_in_the_error(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    other = {"translation_id": "y" * 100_000, "status": "completed"}
    api.get("/translations/tr_1").respond(json=envelope(other))
    with pytest.raises(lingodoc.UnexpectedResponse) as caught:
        await call(client, "get_translation", "tr_1")
    assert "(100,000 characters)" in caught.value.message
    assert len(caught.value.message) < 300
