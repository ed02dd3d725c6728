"""X-RateLimit-* headers become RateLimit values on results, errors and the client."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc.testing import FakeClock
from tests.conftest import call, envelope, failure, rate_limit_headers

TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 10}
JOB = {"document_id": "doc_1", "translation_id": "tr_1", "status": "processing"}


async def translate(client: lingodoc.Client) -> Any:
    return await call(client, "translate", "Hello", source_language="en", target_language="de")


def at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc)


def reply(headers: dict[str, str], status: int = 200, content: bytes | None = None) -> Any:
    """A translate response with these headers (a success unless content is given)."""
    if content is None:
        return httpx.Response(status, json=envelope(TRANSLATION), headers=headers)
    return httpx.Response(status, content=content, headers=headers)


@pytest.mark.parametrize("reset", [3600, 1, 0, 10**9])
async def test_reset_up_to_10_9_is_seconds_from_now(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock, reset: int
) -> None:
    api.post("/translate").respond(
        json=envelope(TRANSLATION), headers=rate_limit_headers(reset=reset)
    )
    result = await translate(client)
    assert result.rate_limit.reset == reset
    assert result.rate_limit.reset_at == at(clock.time() + reset)


@pytest.mark.parametrize("reset", [1_900_000_000, 10**9 + 1])
async def test_reset_above_10_9_is_a_unix_time(
    client: lingodoc.Client, api: respx.MockRouter, reset: int
) -> None:
    api.post("/translate").respond(
        json=envelope(TRANSLATION), headers=rate_limit_headers(reset=reset)
    )
    result = await translate(client)
    assert result.rate_limit.reset == reset
    assert result.rate_limit.reset_at == at(reset)


async def test_unix_time_reset_does_not_depend_on_the_clock(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.post("/translate").respond(
        json=envelope(TRANSLATION), headers=rate_limit_headers(reset=1_900_000_000)
    )
    first = await translate(client)
    clock.advance(500)
    second = await translate(client)
    assert first.rate_limit.reset_at == second.rate_limit.reset_at == at(1_900_000_000)


async def test_negative_reset_is_now(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.post("/translate").respond(json=envelope(TRANSLATION), headers=rate_limit_headers(reset=-5))
    result = await translate(client)
    assert (result.rate_limit.reset, result.rate_limit.reset_at) == (-5, at(clock.time()))


async def test_rate_limit_fields_have_the_contract_types(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(
        json=envelope(TRANSLATION), headers=rate_limit_headers(1000, 999, 3600)
    )
    rate_limit = (await translate(client)).rate_limit
    assert isinstance(rate_limit, lingodoc.RateLimit)
    values = (rate_limit.limit, rate_limit.remaining, rate_limit.reset)
    assert values == (1000, 999, 3600)
    assert [type(v) for v in values] == [int, int, int]
    assert isinstance(rate_limit.reset_at, datetime)
    assert rate_limit.reset_at.utcoffset() == timedelta(0)


async def test_rate_limit_prints_as_a_one_line_summary(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").side_effect = [
        reply(rate_limit_headers(10_000, 9_998, 1_900_000_000)),
        reply(rate_limit_headers(10_000, 9_997, 1_900_000_000), 400,
              json.dumps(failure("TEXT_TOO_LONG", "too long")).encode()),
    ]  # fmt: skip
    rate_limit = (await translate(client)).rate_limit
    summary = "<RateLimit: 9,998 of 10,000 left, resets at 2030-03-17T17:46:40+00:00>"
    assert (str(rate_limit), repr(rate_limit), f"{rate_limit}") == (summary,) * 3
    # An exception's repr shows the rate limit it carries in the same words.
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await translate(client)
    assert repr(caught.value) == (
        "TextTooLong(code='TEXT_TOO_LONG', status_code=400, message='too long', rate_limit="
        "<RateLimit: 9,997 of 10,000 left, resets at 2030-03-17T17:46:40+00:00>)"
    )


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="none"),
        pytest.param({"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "5"}, id="no-reset"),
        pytest.param({"X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "60"}, id="no-limit"),
        pytest.param({"X-RateLimit-Limit": "1000", "X-RateLimit-Reset": "60"}, id="no-remaining"),
        pytest.param({**rate_limit_headers(), "X-RateLimit-Limit": "lots"}, id="limit-word"),
        pytest.param(
            {**rate_limit_headers(), "X-RateLimit-Remaining": "1.5"}, id="remaining-float"
        ),
        pytest.param({**rate_limit_headers(), "X-RateLimit-Reset": "soon"}, id="reset-word"),
        pytest.param({**rate_limit_headers(), "X-RateLimit-Reset": ""}, id="reset-empty"),
        pytest.param(
            {**rate_limit_headers(), "X-RateLimit-Reset": "Wed, 21 Oct 2026 07:28:00 GMT"},
            id="reset-http-date",
        ),
        pytest.param({**rate_limit_headers(), "X-RateLimit-Reset": str(10**30)}, id="reset-huge"),
        # A Unix time past the year 9999, which no datetime holds.
        pytest.param(
            {**rate_limit_headers(), "X-RateLimit-Reset": "253402300800"}, id="reset-year-10000"
        ),
        # A header sent twice: which of the two is meant cannot be told.
        pytest.param(
            [*rate_limit_headers().items(), ("x-ratelimit-remaining", "4")], id="remaining-twice"
        ),
        pytest.param(
            [*rate_limit_headers().items(), ("X-RateLimit-Reset", "60")], id="reset-twice"
        ),
    ],
)
async def test_missing_partial_or_non_integer_headers_give_no_rate_limit(
    client: lingodoc.Client,
    api: respx.MockRouter,
    headers: dict[str, str] | list[tuple[str, str]],
) -> None:
    api.post("/translate").respond(json=envelope(TRANSLATION), headers=headers)
    result = await translate(client)
    assert result.translated_text == "Hallo"
    assert (result.rate_limit, client.rate_limit) == (None, None)


async def test_client_rate_limit_is_none_before_any_response(client: lingodoc.Client) -> None:
    assert client.rate_limit is None


async def test_each_result_keeps_the_rate_limit_of_its_own_response(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.post("/translate").side_effect = [
        reply(rate_limit_headers(1000, 999, 3600)),
        reply(rate_limit_headers(1000, 998, 3000)),
    ]
    first_now = clock.time()
    first = await translate(client)
    clock.advance(600)
    second = await translate(client)
    assert (first.rate_limit.remaining, first.rate_limit.reset_at) == (999, at(first_now + 3600))
    assert (second.rate_limit.remaining, second.rate_limit.reset_at) == (
        998, at(first_now + 600 + 3000),
    )  # fmt: skip
    assert client.rate_limit == second.rate_limit


async def test_a_rate_limit_read_late_counts_from_its_response_and_is_one_object(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    # The RateLimit is built when first asked for: not from the clock of that moment.
    api.post("/translate").respond(
        json=envelope(TRANSLATION), headers=rate_limit_headers(1000, 999, 60)
    )
    arrived = clock.time()
    result = await translate(client)
    clock.advance(3000)
    assert result.rate_limit.reset_at == at(arrived + 60)
    assert client.rate_limit is result.rate_limit


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "route", "data"),
    [
        ("translate", ("Hi",), {"source_language": "en", "target_language": "de"},
         ("POST", "/translate"), TRANSLATION),
        ("translate_batch", (["Hi"],), {"source_language": "en", "target_language": "de"},
         ("POST", "/translate/batch"), {"translations": ["Hallo"]}),
        ("translate_document", ("doc_1",), {"target_language": "de"},
         ("POST", "/documents/doc_1/translate"), JOB),
        ("get_translation", ("tr_1",), {}, ("GET", "/translations/tr_1"), STATUS),
    ],
)  # fmt: skip
async def test_every_result_model_carries_its_rate_limit(
    client: lingodoc.Client,
    api: respx.MockRouter,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    route: tuple[str, str],
    data: dict[str, Any],
) -> None:
    verb, path = route
    getattr(api, verb.lower())(path).respond(
        json=envelope(data), headers=rate_limit_headers(500, 123, 60)
    )
    result = await call(client, method, *args, **kwargs)
    assert (result.rate_limit.limit, result.rate_limit.remaining) == (500, 123)
    assert result.rate_limit == client.rate_limit


async def test_every_listed_document_carries_the_rate_limit(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/documents").respond(
        json=envelope([{"id": "doc_1"}, {"id": "doc_2"}]), headers=rate_limit_headers(remaining=7)
    )
    documents = await call(client, "list_documents")
    assert [d.document_id for d in documents] == ["doc_1", "doc_2"]
    assert [d.rate_limit.remaining for d in documents] == [7, 7]


async def test_request_escape_hatch_tracks_the_rate_limit(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/workspaces").respond(json=envelope([]), headers=rate_limit_headers(remaining=3))
    assert await call(client, "request", "GET", "/workspaces") == []
    assert client.rate_limit is not None
    assert client.rate_limit.remaining == 3


@pytest.mark.parametrize(
    ("status", "content", "expected"),
    [
        (404, json.dumps(failure("NOT_FOUND")).encode(), lingodoc.NotFound),
        (400, json.dumps(failure("SOMETHING_NEW")).encode(), lingodoc.BadRequest),
        (200, b"<html>proxy says no</html>", lingodoc.UnexpectedResponse),
    ],
)
async def test_error_response_rate_limit_updates_the_client_and_is_on_the_exception(
    client: lingodoc.Client, api: respx.MockRouter, status: int, content: bytes, expected: type
) -> None:
    api.post("/translate").side_effect = [
        reply(rate_limit_headers(remaining=10)),
        reply(rate_limit_headers(remaining=9), status, content),
    ]
    first = await translate(client)
    assert client.rate_limit == first.rate_limit
    with pytest.raises(lingodoc.APIError) as caught:
        await translate(client)
    assert type(caught.value) is expected
    assert caught.value.rate_limit == client.rate_limit != first.rate_limit
    assert (first.rate_limit.remaining, client.rate_limit.remaining) == (10, 9)  # type: ignore[union-attr]


async def test_rate_limited_error_carries_the_spent_limit(
    client: lingodoc.Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.post("/translate").respond(
        429, json=failure("RATE_LIMITED", "slow down"), headers=rate_limit_headers(1000, 0, 3600)
    )
    with pytest.raises(lingodoc.RateLimited) as caught:
        await translate(client)
    assert caught.value.rate_limit == lingodoc.RateLimit(
        limit=1000, remaining=0, reset=3600, reset_at=at(clock.time() + 3600)
    )
    assert client.rate_limit == caught.value.rate_limit
