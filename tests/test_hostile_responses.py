"""Odd and hostile responses: each gives a typed error or a result, and never the key."""

from __future__ import annotations

import gzip
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
    first = lingodoc.TextTranslation(**TRANSLATION)
    second = lingodoc.TextTranslation(**TRANSLATION)
    second._rate_limit = lingodoc.RateLimit.model_construct(limit=1, remaining=0, reset=1)
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
