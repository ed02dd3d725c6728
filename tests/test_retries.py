"""The retry rules of API.md ("Retries"), for Client and AsyncClient alike.

Every test counts the requests that reached the router and reads the waits
from the fake clock: nothing really sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc import _retry
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, failure, rate_limit_headers

WHOLE_SECOND = 1_700_000_000.0


@dataclass(frozen=True)
class Op:
    """One client method, the route it calls and what its success returns."""

    name: str
    verb: str
    path: str
    data: Any
    read: Callable[[Any], Any]
    expected: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


LANGS = {"source_language": "en", "target_language": "de"}
STATUS = {"translation_id": "tr_1", "status": "completed", "progress": 100}
TRANSLATE = Op(
    "translate", "POST", "/translate",
    {"translated_text": "Hallo", "source_language": "en", "target_language": "de"},
    lambda r: r.translated_text, "Hallo", ("Hello",), LANGS,
)  # fmt: skip
BATCH = Op(
    "translate_batch", "POST", "/translate/batch", {"translations": ["A", "B"]},
    lambda r: r.translations, ["A", "B"], (["a", "b"],), LANGS,
)  # fmt: skip
DOCUMENT = Op(
    "translate_document", "POST", "/documents/doc_1/translate",
    {"document_id": "doc_1", "translation_id": "tr_1", "status": "processing"},
    lambda r: r.translation_id, "tr_1", ("doc_1",), {"target_language": "de"},
)  # fmt: skip
GET = Op(
    "get_translation", "GET", "/translations/tr_1", STATUS, lambda r: r.progress, 100, ("tr_1",)
)
LIST = Op(
    "list_documents", "GET", "/documents", [{"id": "doc_1"}], lambda r: r[0].document_id, "doc_1"
)

SAFE_OPS = [TRANSLATE, BATCH, GET, LIST]
ALL_OPS = [*SAFE_OPS, DOCUMENT]


def route_of(api: respx.MockRouter, op: Op, *effects: Any) -> respx.Route:
    """Route ``op`` to answer ``effects`` in turn; a trailing success is up to the caller."""
    return api.request(op.verb, op.path).mock(side_effect=list(effects))


def ok(op: Op) -> httpx.Response:
    return httpx.Response(200, json=envelope(op.data))


def error(status: int, code: str = "SERVER_ERROR", **headers: str) -> httpx.Response:
    return httpx.Response(status, json=failure(code), headers=headers)


def limited(reset: int = 7, **headers: str) -> httpx.Response:
    headers = {**rate_limit_headers(remaining=0, reset=reset), **headers}
    return httpx.Response(429, json=failure("RATE_LIMITED"), headers=headers)


def ceiling(attempt: int) -> float:
    return min(8.0, 0.5 * 2 ** (attempt - 1))


def assert_backoff(sleeps: list[float]) -> None:
    for attempt, slept in enumerate(sleeps, start=1):
        assert ceiling(attempt) / 2 <= slept <= ceiling(attempt), (attempt, slept)


async def run(client: Any, op: Op) -> Any:
    return await call(client, op.name, *op.args, **op.kwargs)


# Failures to connect: nothing was sent, so every method retries them.


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
@pytest.mark.parametrize("exc", [httpx.ConnectError, httpx.ConnectTimeout])
async def test_connect_failures_are_retried_for_every_method_until_success(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op, exc: type[Exception]
) -> None:
    route = route_of(api, op, exc, exc, ok(op))
    assert op.read(await run(client, op)) == op.expected
    assert len(route.calls) == 3
    assert len(clock.sleeps) == 2
    assert_backoff(clock.sleeps)


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
@pytest.mark.parametrize(
    ("exc", "raised"),
    [
        (httpx.ConnectError, lingodoc.APIConnectionError),
        (httpx.ConnectTimeout, lingodoc.APITimeoutError),
    ],
)
async def test_connect_failures_raise_after_max_retries_plus_one_attempts(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op, exc: type[Exception], raised: type
) -> None:
    route = route_of(api, op, exc, exc, exc, ok(op))
    with pytest.raises(raised) as info:
        await run(client, op)
    assert type(info.value) is raised
    assert isinstance(info.value.__cause__, exc)
    assert len(route.calls) == 3
    assert len(clock.sleeps) == 2


ORIGIN = "https://api.lingodoc.test:443"


UNREACHABLE = (
    "is the service (or `lingodoc emulator`) running at that address, and is base_url= "
    "(or LINGODOC_BASE_URL) right?"
)
SLOW = "if the service is slow rather than stuck, raise timeout= (each attempt's limit)"


@pytest.mark.parametrize(
    ("failure", "message", "hint"),
    [
        (httpx.ConnectError("refused"),
         f"POST /translate failed after 3 attempts over 31.5 s: cannot connect to {ORIGIN} "
         "(refused)", UNREACHABLE),
        (httpx.ConnectTimeout("connect timed out"),
         f"POST /translate to {ORIGIN} timed out after 3 attempts over 31.5 s: connect timed out",
         UNREACHABLE),
        (httpx.ReadTimeout("read timed out"),
         f"POST /translate to {ORIGIN} timed out after 3 attempts over 31.5 s: read timed out",
         SLOW),
        (httpx.RemoteProtocolError("server disconnected"),
         f"POST /translate to {ORIGIN} failed after 3 attempts over 31.5 s: server disconnected",
         None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else "",
)  # fmt: skip
async def test_a_network_error_after_retries_says_how_many_attempts_over_how_long(
    client: Any,
    api: respx.MockRouter,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
    message: str,
    hint: str | None,
) -> None:
    monkeypatch.setattr(_retry.random, "uniform", lambda a, b: b)  # waits of 0.5 s, then 1 s

    def slow_failure(request: httpx.Request) -> httpx.Response:
        clock.advance(10)  # each attempt takes 10 s on the SDK's clock before it fails
        raise failure

    route = api.post("/translate").mock(side_effect=slow_failure)
    with pytest.raises(lingodoc.APIConnectionError) as caught:
        await run(client, TRANSLATE)
    assert (len(route.calls), clock.sleeps) == (3, [0.5, 1.0])
    assert caught.value.message == message  # 3 x 10 s, and the waits between: 31.5 s
    assert caught.value.hint == hint
    assert str(caught.value) == message + (f"\nhint: {hint}" if hint else "")


# 5xx, read timeouts and dropped connections: only where repeating is safe.


@pytest.mark.parametrize("op", SAFE_OPS, ids=str)
@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retried_for_reads_and_text_translation(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op, status: int
) -> None:
    route = route_of(api, op, error(status), error(status), ok(op))
    assert op.read(await run(client, op)) == op.expected
    assert len(route.calls) == 3
    assert_backoff(clock.sleeps)
    assert len(clock.sleeps) == 2


async def test_server_error_is_raised_once_the_retries_are_spent(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = route_of(api, TRANSLATE, error(500), error(502), error(504), ok(TRANSLATE))
    with pytest.raises(lingodoc.ServerError) as info:
        await run(client, TRANSLATE)
    assert info.value.status_code == 504
    assert len(route.calls) == 3
    assert len(clock.sleeps) == 2


async def test_translate_document_is_retried_on_503(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = route_of(api, DOCUMENT, error(503), ok(DOCUMENT))
    assert (await run(client, DOCUMENT)).translation_id == "tr_1"
    assert len(route.calls) == 2
    assert_backoff(clock.sleeps)


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_translate_document_is_not_retried_on_other_server_errors(
    client: Any, api: respx.MockRouter, clock: FakeClock, status: int
) -> None:
    route = route_of(api, DOCUMENT, error(status), ok(DOCUMENT))
    with pytest.raises(lingodoc.ServerError) as info:
        await run(client, DOCUMENT)
    assert info.value.status_code == status
    assert len(route.calls) == 1
    assert clock.sleeps == []


AFTER_SENDING = [
    (httpx.ReadTimeout, lingodoc.APITimeoutError),
    (httpx.RemoteProtocolError, lingodoc.APIConnectionError),
    (httpx.ReadError, lingodoc.APIConnectionError),
]


@pytest.mark.parametrize("op", SAFE_OPS, ids=str)
@pytest.mark.parametrize(("exc", "raised"), AFTER_SENDING)
async def test_read_timeouts_and_dropped_connections_are_retried_for_safe_methods(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op, exc: type, raised: type
) -> None:
    route = route_of(api, op, exc, ok(op))
    assert op.read(await run(client, op)) == op.expected
    assert len(route.calls) == 2
    assert len(clock.sleeps) == 1


@pytest.mark.parametrize(("exc", "raised"), AFTER_SENDING)
async def test_read_timeouts_and_dropped_connections_are_not_retried_for_translate_document(
    client: Any, api: respx.MockRouter, clock: FakeClock, exc: type, raised: type
) -> None:
    route = route_of(api, DOCUMENT, exc, ok(DOCUMENT))
    with pytest.raises(raised) as info:
        await run(client, DOCUMENT)
    assert type(info.value) is raised
    assert isinstance(info.value.__cause__, exc)
    assert len(route.calls) == 1
    assert clock.sleeps == []


# 429: wait for the reset when it is near, else raise at once.


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
async def test_rate_limit_waits_exactly_until_the_reset_then_succeeds(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op
) -> None:
    route = route_of(api, op, limited(reset=7), ok(op))
    assert op.read(await run(client, op)) == op.expected
    assert len(route.calls) == 2
    assert clock.sleeps == [7.0]


async def test_rate_limit_reset_given_as_unix_time_is_waited_until(
    client: Any, api: respx.MockRouter
) -> None:
    route = route_of(api, GET, limited(reset=int(WHOLE_SECOND) + 12), ok(GET))
    with fake_clock(FakeClock(start=WHOLE_SECOND)) as clock:
        assert (await run(client, GET)).progress == 100
    assert len(route.calls) == 2
    assert clock.sleeps == [12.0]


async def test_retry_after_wins_over_the_rate_limit_reset(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = route_of(api, TRANSLATE, limited(reset=7, **{"Retry-After": "2"}), ok(TRANSLATE))
    assert (await run(client, TRANSLATE)).translated_text == "Hallo"
    assert len(route.calls) == 2
    assert clock.sleeps == [2.0]


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
@pytest.mark.parametrize("headers", [{}, {"Retry-After": "120"}], ids=["reset", "retry-after"])
async def test_rate_limit_further_than_60_seconds_is_raised_at_once(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op, headers: dict[str, str]
) -> None:
    route = route_of(api, op, limited(reset=3600, **headers), ok(op))
    with pytest.raises(lingodoc.RateLimited) as info:
        await run(client, op)
    assert info.value.retry_after == (120.0 if headers else 3600.0)
    assert len(route.calls) == 1
    assert clock.sleeps == []


async def test_rate_limit_is_raised_once_the_retries_are_spent(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = route_of(api, GET, limited(), limited(), limited(), ok(GET))
    with pytest.raises(lingodoc.RateLimited):
        await run(client, GET)
    assert len(route.calls) == 3
    assert clock.sleeps == [7.0, 7.0]


# Waits a server asks for that are shorter than half a second, in each form.
NO_WAIT = {
    "reset-0": {"X-RateLimit-Reset": "0"},
    "reset-past": {"X-RateLimit-Reset": str(int(WHOLE_SECOND) - 60)},  # a Unix time
    "reset-now": {"X-RateLimit-Reset": str(int(WHOLE_SECOND))},
    "retry-after-0": {"Retry-After": "0"},
    "retry-after-0.001": {"Retry-After": "0.001"},
    "retry-after-0.3": {"Retry-After": "0.3"},
    "retry-after-negative": {"Retry-After": "-5"},
    "retry-after-past-date": {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
}


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
@pytest.mark.parametrize("headers", NO_WAIT.values(), ids=NO_WAIT.keys())
async def test_a_429_that_asks_for_no_wait_is_backed_off_exponentially(
    client_class: Any, api: respx.MockRouter, op: Op, headers: dict[str, str]
) -> None:
    # Taken at its word, "wait 0" sent all 51 attempts of max_retries=50 within 27 ms.
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=5)
    route = route_of(api, op, *[limited(**headers) for _ in range(5)], ok(op))
    with fake_clock(FakeClock(start=WHOLE_SECOND)) as clock:
        assert op.read(await run(client, op)) == op.expected
    assert len(route.calls) == 6
    assert len(clock.sleeps) == 5
    assert_backoff(clock.sleeps)  # > 0, growing: 0.25-0.5, 0.5-1, 1-2, 2-4, 4-8
    assert sum(clock.sleeps) >= 1.0
    await close(client)


@pytest.mark.parametrize("asked", ["0.001", "0.3"])
async def test_a_503_that_asks_for_less_than_half_a_second_is_backed_off_too(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, asked: str
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=5)
    answers = [error(503, "UNAVAILABLE", **{"Retry-After": asked}) for _ in range(5)]
    route = route_of(api, DOCUMENT, *answers, ok(DOCUMENT))
    assert (await run(client, DOCUMENT)).translation_id == "tr_1"
    assert len(route.calls) == 6
    assert_backoff(clock.sleeps)
    assert all(slept >= float(asked) for slept in clock.sleeps)  # max(asked, backoff)
    await close(client)


@pytest.mark.parametrize("asked", [0.5, 2.5])
async def test_a_wait_of_half_a_second_or_more_is_kept_as_asked(
    client: Any, api: respx.MockRouter, clock: FakeClock, asked: float
) -> None:
    route = route_of(api, GET, limited(**{"Retry-After": str(asked)}), ok(GET))
    assert (await run(client, GET)).progress == 100
    assert len(route.calls) == 2
    assert clock.sleeps == [asked]


async def test_a_rate_limit_reset_a_fraction_of_a_second_away_is_backed_off(
    client: Any, api: respx.MockRouter
) -> None:
    # The reset is the next whole second, 0.2 s away by the wall clock.
    route = route_of(api, GET, limited(reset=int(WHOLE_SECOND) + 1), ok(GET))
    with fake_clock(FakeClock(start=WHOLE_SECOND + 0.8)) as clock:
        assert (await run(client, GET)).progress == 100
    assert len(route.calls) == 2
    assert len(clock.sleeps) == 1
    assert 0.25 <= clock.sleeps[0] <= 0.5  # max(0.2, the first backoff)


@pytest.mark.parametrize("start", [WHOLE_SECOND, 1_700_000_000.1, 1_712_345_678.987654321])
async def test_rate_limit_wait_is_exact_whatever_the_wall_clock_reads(
    client: Any, api: respx.MockRouter, start: float
) -> None:
    route = route_of(api, GET, limited(reset=7), ok(GET))
    with fake_clock(FakeClock(start=start)) as clock:
        await run(client, GET)
    assert len(route.calls) == 2
    assert clock.sleeps == [7.0]


# Other 4xx: never retried.


@pytest.mark.parametrize("op", ALL_OPS, ids=str)
@pytest.mark.parametrize(
    ("status", "code", "raised"),
    [
        (400, "INVALID_LANGUAGE", lingodoc.InvalidLanguage),
        (401, "UNAUTHORIZED", lingodoc.Unauthorized),
        (404, "NOT_FOUND", lingodoc.NotFound),
        (422, "UNPROCESSABLE", lingodoc.BadRequest),
    ],
)
async def test_client_errors_other_than_429_are_never_retried(
    client: Any,
    api: respx.MockRouter,
    clock: FakeClock,
    op: Op,
    status: int,
    code: str,
    raised: type,
) -> None:
    route = route_of(api, op, error(status, code), ok(op))
    with pytest.raises(raised) as info:
        await run(client, op)
    assert (info.value.status_code, info.value.code) == (status, code)
    assert len(route.calls) == 1
    assert clock.sleeps == []


# max_retries and with_options.


@pytest.mark.parametrize(
    ("effect", "raised"),
    [
        (error(500), lingodoc.ServerError),
        (error(503), lingodoc.ServerError),
        (limited(reset=7), lingodoc.RateLimited),
        (httpx.ConnectError, lingodoc.APIConnectionError),
        (httpx.ReadTimeout, lingodoc.APITimeoutError),
    ],
    ids=["500", "503", "429", "connect", "read-timeout"],
)
async def test_max_retries_zero_makes_a_single_attempt(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, effect: Any, raised: type
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    route = route_of(api, GET, effect, ok(GET))
    with pytest.raises(raised):
        await run(client, GET)
    assert len(route.calls) == 1
    assert clock.sleeps == []
    await close(client)


async def test_max_retries_five_makes_six_attempts(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=5)
    route = route_of(api, GET, *[httpx.ConnectError] * 5, ok(GET))
    assert (await run(client, GET)).progress == 100
    assert len(route.calls) == 6
    assert len(clock.sleeps) == 5
    route.side_effect = [httpx.ConnectError] * 6 + [ok(GET)]
    with pytest.raises(lingodoc.APIConnectionError):
        await run(client, GET)
    assert len(route.calls) == 12
    await close(client)


async def test_with_options_max_retries_zero_leaves_the_original_retrying(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    no_retries = client.with_options(max_retries=0)
    assert (no_retries.max_retries, client.max_retries) == (0, 2)
    route = route_of(api, GET, error(500), error(500), error(500), ok(GET))
    with pytest.raises(lingodoc.ServerError):
        await run(no_retries, GET)
    assert len(route.calls) == 1
    assert (await run(client, GET)).progress == 100
    assert len(route.calls) == 4
    assert len(clock.sleeps) == 2


# Backoff: exponential, jittered, capped.


def test_backoff_stays_within_half_to_full_ceiling_for_every_attempt() -> None:
    for attempt in range(1, 16):
        waits = [_retry.backoff(attempt) for _ in range(200)]
        assert all(ceiling(attempt) / 2 <= w <= ceiling(attempt) for w in waits), attempt
        assert len(set(waits)) > 1, "no jitter"
    assert max(_retry.backoff(40) for _ in range(200)) <= 8.0


@pytest.mark.parametrize(("pick", "factor"), [(lambda a, b: a, 0.5), (lambda a, b: b, 1.0)])
def test_backoff_doubles_from_half_a_second_up_to_eight(
    monkeypatch: pytest.MonkeyPatch, pick: Any, factor: float
) -> None:
    monkeypatch.setattr(_retry.random, "uniform", pick)
    waits = [_retry.backoff(attempt) for attempt in range(1, 9)]
    assert waits == [factor * c for c in (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0)]


async def test_client_backs_off_exponentially_with_jitter_and_a_cap(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=6)
    route = route_of(api, LIST, *[error(500)] * 7, ok(LIST))
    with pytest.raises(lingodoc.ServerError):
        await run(client, LIST)
    assert len(route.calls) == 7
    assert len(clock.sleeps) == 6
    assert_backoff(clock.sleeps)
    assert sum(clock.sleeps) <= 0.5 + 1 + 2 + 4 + 8 + 8
    await close(client)


async def test_client_backoff_ceilings_are_half_one_two_four_eight_eight(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_retry.random, "uniform", lambda a, b: b)
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=6)
    route_of(api, LIST, *[error(502)] * 6, ok(LIST))
    assert (await run(client, LIST))[0].document_id == "doc_1"
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    await close(client)


# request(): retried like the method it stands for.


@pytest.mark.parametrize(
    ("verb", "effect", "attempts"),
    [
        ("GET", error(500), 3),
        ("DELETE", error(500), 3),
        ("POST", error(503), 3),
        ("POST", httpx.ConnectError, 3),
        ("POST", limited(reset=7), 3),
    ],
)
async def test_request_retries_reads_and_posts_that_were_not_started(
    client: Any, api: respx.MockRouter, verb: str, effect: Any, attempts: int
) -> None:
    route = api.request(verb, "/workspaces").mock(
        side_effect=[effect, effect, httpx.Response(200, json=envelope({"id": "ws_1"}))]
    )
    assert await call(client, "request", verb, "/workspaces") == {"id": "ws_1"}
    assert len(route.calls) == attempts


@pytest.mark.parametrize(
    ("effect", "raised"),
    [(error(500), lingodoc.ServerError), (httpx.ReadTimeout, lingodoc.APITimeoutError)],
)
async def test_request_does_not_retry_a_post_the_server_may_have_acted_on(
    client: Any, api: respx.MockRouter, clock: FakeClock, effect: Any, raised: type
) -> None:
    route = api.post("/workspaces").mock(
        side_effect=[effect, httpx.Response(200, json=envelope({"id": "ws_1"}))]
    )
    with pytest.raises(raised):
        await call(client, "request", "POST", "/workspaces", json={"name": "team"})
    assert len(route.calls) == 1
    assert clock.sleeps == []


# Server-asked waits (Retry-After).


@pytest.mark.parametrize("op", [GET, DOCUMENT], ids=str)
async def test_503_retry_after_beyond_60_seconds_is_raised_at_once(
    client: Any, api: respx.MockRouter, clock: FakeClock, op: Op
) -> None:
    route = route_of(api, op, error(503, **{"Retry-After": "120"}), ok(op))
    with pytest.raises(lingodoc.ServerError) as info:
        await run(client, op)
    assert info.value.retry_after == 120.0
    assert len(route.calls) == 1
    assert clock.sleeps == []


async def test_503_retry_after_within_60_seconds_is_waited_out(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = route_of(api, DOCUMENT, error(503, **{"Retry-After": "3"}), ok(DOCUMENT))
    assert (await run(client, DOCUMENT)).translation_id == "tr_1"
    assert len(route.calls) == 2
    assert clock.sleeps == [3.0]


# Each retry sends the same request.


@pytest.mark.parametrize(
    ("op", "effects"),
    [
        (TRANSLATE, [error(500), httpx.ReadTimeout]),
        (BATCH, [limited(reset=1), error(503)]),
        (DOCUMENT, [httpx.ConnectError, error(503)]),
    ],
    ids=str,
)
async def test_every_retry_sends_the_same_request(
    client: Any, api: respx.MockRouter, op: Op, effects: list[Any]
) -> None:
    route = route_of(api, op, *effects, ok(op))
    await run(client, op)
    requests = [c.request for c in route.calls]
    assert len(requests) == 3
    assert {r.content for r in requests} == {requests[0].content}
    assert requests[0].content.startswith(b"{")
    assert b'"target_language":"de"' in requests[0].content
    assert {(r.method, str(r.url), r.headers["Authorization"]) for r in requests} == {
        (op.verb, BASE_URL + op.path, f"Bearer {API_KEY}")
    }
