"""translate_many: batches side by side, in input order, paced; no work lost, no request wasted.

Every test runs on Client (threads) and AsyncClient (tasks), against a respx router or the
in-process emulator (which reads the fake clock, so an hourly window passes at once).
Batches are made to finish out of order with events, never with real sleeps; waits are
read from the fake clock.
"""

from __future__ import annotations

import json
import math
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest
import respx

import lingodoc
from lingodoc import _bulk, _clock
from lingodoc.emulator import Emulator, translate_text
from lingodoc.emulator._routing import Reply
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import (
    API_KEY,
    BASE_URL,
    call,
    cancelled_midway,
    envelope,
    failure,
    rate_limit_headers,
    running_tasks,
)
from tests.waiting import PATIENCE

LANGS = {"source_language": "en", "target_language": "de"}
BATCH = "/translate/batch"
WAIT = PATIENCE  # the longest an event is waited for, so a broken test fails instead of hanging

Client = lingodoc.Client | lingodoc.AsyncClient


def sent_texts(request: httpx.Request) -> list[str]:
    texts: list[str] = json.loads(request.content)["texts"]
    return texts


def answer(request: httpx.Request, headers: dict[str, str] | None = None) -> httpx.Response:
    """A batch response translating each text to upper case."""
    translations = [text.upper() for text in sent_texts(request)]
    return httpx.Response(200, json=envelope({"translations": translations}), headers=headers)


def texts(count: int) -> list[str]:
    return [f"t{i}" for i in range(count)]


def upper(items: list[str]) -> list[str]:
    return [text.upper() for text in items]


class Gates:
    """Events that a side effect can wait on without blocking the other batches.

    Threads for Client (whose requests are sent from several threads), anyio
    events for AsyncClient (whose side effects must be coroutines), asyncio or trio.
    """

    def __init__(self, client: Client, count: int) -> None:
        self.is_async = isinstance(client, lingodoc.AsyncClient)
        self.events: list[Any] = [
            anyio.Event() if self.is_async else threading.Event() for _ in range(count)
        ]

    def side_effect(
        self, handle: Callable[[httpx.Request], Any], after: Callable[[httpx.Request], Any]
    ) -> Callable[[httpx.Request], Any]:
        """Run ``handle`` (which may return an event to wait for first), then ``after``."""
        if self.is_async:

            async def async_effect(request: httpx.Request) -> Any:
                event = handle(request)
                if event is not None:
                    with anyio.fail_after(WAIT):
                        await event.wait()
                return after(request)

            return async_effect

        def effect(request: httpx.Request) -> Any:
            event = handle(request)
            if event is not None:
                assert event.wait(WAIT), "the batch waited for was never answered"
            return after(request)

        return effect


def ctrl_c() -> None:
    """Press Ctrl-C: a SIGINT for the main thread, sent from any thread."""
    main = threading.main_thread().ident
    assert main is not None
    signal.pthread_kill(main, signal.SIGINT)


@contextmanager
def interrupter(press: Callable[[], None], handler: Any = None) -> Iterator[threading.Thread]:
    """A thread that runs ``press`` (which calls ctrl_c()), for the test to start when ready.

    Meanwhile SIGINT goes to ``handler`` (Python's own Ctrl-C handler by default, even where
    the tests run with SIGINT ignored); at the end, the thread is joined and the handler
    restored.
    """
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, handler or signal.default_int_handler)
    thread = threading.Thread(target=press, name="test-ctrl-c")
    try:
        yield thread
    finally:
        if thread.ident is not None:
            thread.join(WAIT)
        signal.signal(signal.SIGINT, previous)


def threads_and_tasks() -> tuple[set[threading.Thread], int]:
    """The SDK's threads alive (not those of other tests, which may end meanwhile), and the
    tasks running (asyncio or trio)."""
    return {t for t in threading.enumerate() if t.name.startswith("lingodoc")}, running_tasks()


class CountingEmulator(Emulator):
    """The emulator, keeping the texts of every batch request it answers, and its statuses."""

    def __init__(self, *, fail_batch: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches: list[list[str]] = []
        self.statuses: list[int] = []
        self.fail_batch = fail_batch  # this batch request (0 for the first) gets a 500

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if target.endswith("/translate/batch") and len(self.statuses) == self.fail_batch:
            self.inject("server_error", path="/translate/batch")
        reply = super().handle(method, target, headers, body)
        if target.endswith("/translate/batch"):
            self.statuses.append(reply.status)
            if reply.status == 200:
                self.batches.append(json.loads(body)["texts"])
        return reply

    @property
    def texts_sent(self) -> list[str]:
        return [text for batch in self.batches for text in batch]


@pytest.fixture
def flavour(request: pytest.FixtureRequest) -> str:
    """ "sync" or "async", on asyncio and trio (tests/conftest.py: pytest_generate_tests)."""
    return str(request.param)


@pytest.fixture
def make(flavour: str) -> Iterator[Any]:
    """Make a client of the kind under test for an emulator; closed after the test."""
    made: list[Client] = []

    def factory(emulator: Emulator, **kwargs: Any) -> Client:
        client: Client = (
            emulator.client(**kwargs) if flavour == "sync" else emulator.async_client(**kwargs)
        )
        made.append(client)
        return client

    yield factory
    for client in made:
        if isinstance(client, lingodoc.Client):
            client.close()


def expected(texts: list[str]) -> list[str]:
    return [text if not text.strip() else translate_text(text, "en", "de") for text in texts]


def corpus(count: int, *, distinct: int) -> list[str]:
    """``count`` short texts of which ``distinct`` differ: the rest repeat earlier ones."""
    return [f"Hello world, item {i % distinct}" for i in range(count)]


# Order and splitting ----------------------------------------------------------------------


async def test_translations_come_back_in_input_order_whatever_order_batches_finish(
    client: Client, api: respx.MockRouter
) -> None:
    items = texts(10)  # batches t0-t2, t3-t5, t6-t8, t9: all four in flight at once
    gates = Gates(client, 4)
    finished: list[int] = []

    def hold(request: httpx.Request) -> Any:
        index = int(sent_texts(request)[0][1:]) // 3
        # Each batch answers only after the next one did: they finish in reverse.
        return gates.events[index + 1] if index + 1 < 4 else None

    def release(request: httpx.Request) -> httpx.Response:
        index = int(sent_texts(request)[0][1:]) // 3
        finished.append(index)
        gates.events[index].set()
        return answer(request)

    api.post(BATCH).mock(side_effect=gates.side_effect(hold, release))
    result = await call(client, "translate_many", items, batch_size=3, max_concurrency=4, **LANGS)
    assert finished == [3, 2, 1, 0]
    assert result == upper(items)
    assert isinstance(result, list)


@pytest.mark.parametrize(
    ("count", "batch_size", "sizes"),
    [
        (250, 100, [100, 100, 50]),
        (201, None, [100, 100, 1]),  # the default batch size is 100
        (7, 3, [3, 3, 1]),
        (5, 50, [5]),
        (4, 1, [1, 1, 1, 1]),
    ],
)
async def test_texts_are_split_into_batches_of_batch_size(
    client: Client, api: respx.MockRouter, count: int, batch_size: int | None, sizes: list[int]
) -> None:
    route = api.post(BATCH).mock(side_effect=answer)
    items = texts(count)
    options = {} if batch_size is None else {"batch_size": batch_size}
    result = await call(
        client, "translate_many", items, source_language="EN", target_language="de", **options
    )
    assert result == upper(items)
    bodies = [json.loads(c.request.content) for c in route.calls]
    assert sorted(len(body["texts"]) for body in bodies) == sorted(sizes)
    # Each batch is a contiguous slice, and together they are the input, once.
    assert sorted(text for body in bodies for text in body["texts"]) == sorted(items)
    for body in bodies:
        start = items.index(body["texts"][0])
        assert body["texts"] == items[start : start + len(body["texts"])]
        assert (body["source_language"], body["target_language"]) == ("en", "de")


async def test_no_more_batches_are_in_flight_than_max_concurrency(
    client: Client, api: respx.MockRouter
) -> None:
    lock = threading.Lock()
    in_flight, most = 0, 0
    gates = Gates(client, 1)

    def enter(request: httpx.Request) -> Any:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            if in_flight == 3:
                gates.events[0].set()  # three at once: let them all go on
        return gates.events[0]

    def leave(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight
        with lock:
            in_flight -= 1
        return answer(request)

    api.post(BATCH).mock(side_effect=gates.side_effect(enter, leave))
    items = texts(30)
    result = await call(client, "translate_many", items, batch_size=2, max_concurrency=3, **LANGS)
    assert result == upper(items)
    assert most == 3


# Duplicates and blank texts ---------------------------------------------------------------


async def test_duplicates_are_sent_once_and_fanned_back_out_in_order(make: Any) -> None:
    emulator = CountingEmulator()
    texts = corpus(1_000, distinct=700)
    result = await call(make(emulator), "translate_many", texts, **LANGS)
    assert result == expected(texts)
    assert sorted(emulator.texts_sent) == sorted(set(texts))
    assert len(emulator.batches) == math.ceil(700 / 100)  # the minimum for batches of 100


async def test_blank_texts_come_back_unchanged_and_are_not_sent(make: Any) -> None:
    emulator = CountingEmulator()
    texts = ["", "Hello world", "   ", "\n\t", "Thank you", ""]
    result = await call(make(emulator), "translate_many", texts, **LANGS)
    assert result == ["", "Hallo Welt", "   ", "\n\t", "Danke du", ""]
    assert emulator.batches == [["Hello world", "Thank you"]]


async def test_only_blank_texts_need_no_request(make: Any) -> None:
    emulator = CountingEmulator()
    assert await call(make(emulator), "translate_many", ["", " "], **LANGS) == ["", " "]
    assert emulator.statuses == []


# The first error --------------------------------------------------------------------------


async def test_the_first_error_is_raised_as_is_and_no_further_batch_starts(
    client: Client, api: respx.MockRouter
) -> None:
    def effect(request: httpx.Request) -> httpx.Response:
        if sent_texts(request) == ["t3"]:
            return httpx.Response(400, json=failure("TEXT_TOO_LONG", "t3 is too long"))
        return answer(request)

    route = api.post(BATCH).mock(side_effect=effect)
    before = threads_and_tasks()
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await call(client, "translate_many", texts(20), batch_size=1, max_concurrency=1, **LANGS)
    assert caught.value.status_code == 400
    assert caught.value.code == "TEXT_TOO_LONG"
    assert [sent_texts(c.request) for c in route.calls] == [["t0"], ["t1"], ["t2"], ["t3"]]
    assert threads_and_tasks() == before


async def test_the_first_error_stops_concurrent_workers_and_leaves_nothing_running(
    client: Client, api: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates = Gates(client, 1)
    seen: list[str] = []
    record_failure = _bulk.Bulk.failed

    def failed(bulk: _bulk.Bulk, batch: _bulk.Batch, error: BaseException) -> float | None:
        wait = record_failure(bulk, batch, error)
        # t0-t2 are answered only once t3, handed to the fourth worker, has failed: its
        # failure recorded, not only answered (answered, the run has not seen it yet).
        gates.events[0].set()
        return wait

    monkeypatch.setattr(_bulk.Bulk, "failed", failed)

    def hold(request: httpx.Request) -> Any:
        seen.extend(sent_texts(request))
        return None if sent_texts(request) == ["t3"] else gates.events[0]

    def respond(request: httpx.Request) -> httpx.Response:
        if sent_texts(request) == ["t3"]:
            return httpx.Response(404, json=failure("NOT_FOUND", "gone"))
        return answer(request)

    api.post(BATCH).mock(side_effect=gates.side_effect(hold, respond))
    before = threads_and_tasks()
    with pytest.raises(lingodoc.NotFound, match="gone"):
        await call(client, "translate_many", texts(200), batch_size=1, max_concurrency=4, **LANGS)
    assert sorted(seen) == ["t0", "t1", "t2", "t3"]
    assert threads_and_tasks() == before


async def test_batches_in_flight_when_one_fails_are_cancelled_or_finished(
    client: Client, api: respx.MockRouter
) -> None:
    gates = Gates(client, 1)
    cancelled: list[str] = []
    seen: list[list[str]] = []  # respx records no call whose side effect was cancelled

    if gates.is_async:

        async def effect(request: httpx.Request) -> httpx.Response:
            seen.append(sent_texts(request))
            if sent_texts(request) == ["t0"]:
                try:
                    with anyio.fail_after(WAIT):
                        await gates.events[0].wait()  # never set
                except anyio.get_cancelled_exc_class():
                    cancelled.append("t0")
                    raise
                raise AssertionError("t0 was not cancelled")
            return httpx.Response(500, json=failure("BOOM"), headers={"Retry-After": "0"})

    else:

        def effect(request: httpx.Request) -> httpx.Response:  # type: ignore[misc]
            seen.append(sent_texts(request))
            if sent_texts(request) == ["t0"]:
                # A thread cannot be cancelled: t0 is finished, after t1 failed.
                assert gates.events[0].wait(WAIT)
                return answer(request)
            gates.events[0].set()
            return httpx.Response(400, json=failure("BOOM"))

    api.post(BATCH).mock(side_effect=effect)
    before = threads_and_tasks()
    with pytest.raises((lingodoc.ServerError, lingodoc.BadRequest)):
        await call(
            client.with_options(max_retries=0),
            "translate_many",
            texts(50),
            batch_size=1,
            max_concurrency=2,
            **LANGS,
        )
    if gates.is_async:
        assert sorted(seen) == [["t0"], ["t1"]]
    else:
        # The thread that finishes t0 races the one recording t1's failure: it may take one
        # more batch before the run stops, never two.
        assert sorted(seen) in ([["t0"], ["t1"]], [["t0"], ["t1"], ["t2"]])
    assert cancelled == (["t0"] if gates.is_async else [])
    assert threads_and_tasks() == before


async def test_a_batch_that_fails_once_is_retried_and_all_translations_come_back(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    failed: list[str] = []

    def effect(request: httpx.Request) -> httpx.Response:
        if sent_texts(request)[0] == "t4" and not failed:
            failed.append("t4")
            return httpx.Response(503, json=failure("UNAVAILABLE"))
        return answer(request)

    route = api.post(BATCH).mock(side_effect=effect)
    items = texts(10)
    result = await call(client, "translate_many", items, batch_size=2, max_concurrency=3, **LANGS)
    assert result == upper(items)
    assert route.call_count == 6  # five batches, one of them twice
    assert len(clock.sleeps) == 1  # the retry's backoff
    assert 0 < clock.sleeps[0] <= 0.5


async def test_a_closed_client_refuses_before_sending(
    client: Client, api: respx.MockRouter
) -> None:
    route = api.post(BATCH).mock(side_effect=answer)
    await (client.aclose() if isinstance(client, lingodoc.AsyncClient) else _sync(client.close))
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(client, "translate_many", texts(3), **LANGS)
    assert route.call_count == 0


async def _sync(function: Callable[[], object]) -> None:
    function()


# The finished work is kept ----------------------------------------------------------------


async def failed_run(
    make: Any, texts: list[str], *, fail_batch: int, **options: Any
) -> tuple[CountingEmulator, Client, lingodoc.ServerError]:
    """translate_many one batch at a time, with no retry, where batch ``fail_batch`` gets a 500.

    Returns the emulator, the client and the error raised.
    """
    emulator = CountingEmulator(fail_batch=fail_batch)
    client = make(emulator, max_retries=0)
    with pytest.raises(lingodoc.ServerError) as info:
        await call(client, "translate_many", texts, max_concurrency=1, **options, **LANGS)
    return emulator, client, info.value


async def test_an_error_carries_the_finished_translations_and_the_indices_left(
    make: Any,
) -> None:
    texts = corpus(500, distinct=300)  # distinct texts 0..299; 300..499 repeat 0..199
    _, _, error = await failed_run(make, texts, fail_batch=2)
    partial = error.partial
    assert isinstance(partial, lingodoc.PartialTranslations)
    # Batches 0 and 1 (distinct texts 0..199) were answered; their duplicates too.
    finished = [i for i in range(500) if i % 300 < 200]
    assert sorted(partial.translations) == finished
    assert all(partial.translations[i] == expected([texts[i]])[0] for i in finished)
    assert partial.remaining == [i for i in range(500) if i % 300 >= 200]
    assert partial.total == 500
    assert repr(partial) == "<PartialTranslations: 400 of 500 texts translated>"
    if sys.version_info >= (3, 11):
        assert any("400 of 500 texts translated" in note for note in error.__notes__)


async def test_passing_the_partial_translations_as_done_sends_only_what_is_left(
    make: Any,
) -> None:
    texts = corpus(500, distinct=300)
    emulator, client, error = await failed_run(make, texts, fail_batch=2)
    assert error.partial is not None
    sent_before = len(emulator.texts_sent)
    done = error.partial.translations
    result = await call(client, "translate_many", texts, done=done, **LANGS)
    assert result == expected(texts)
    resent = emulator.texts_sent[sent_before:]
    assert sorted(resent) == sorted({texts[i] for i in range(200, 300)})
    assert len(done) == 500  # filled in as the batches were answered


async def test_a_done_dict_of_your_own_keeps_every_answered_batch_when_a_later_one_fails(
    make: Any,
) -> None:
    texts = corpus(300, distinct=300)
    done: dict[int, str] = {}
    await failed_run(make, texts, fail_batch=1, done=done)
    assert done == dict(enumerate(expected(texts[:100])))


async def test_partial_translations_travel_with_a_pickled_error(make: Any) -> None:
    _, _, error = await failed_run(make, ["a", "b", "a", "c"], fail_batch=1, batch_size=2)
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, lingodoc.ServerError)
    assert copy.partial is not None
    assert (copy.partial.translations, copy.partial.remaining) == (
        {0: "[de] a", 1: "[de] b", 2: "[de] a"},
        [3],
    )
    assert lingodoc.APIError("x").partial is None  # only translate_many sets it


# Pacing -----------------------------------------------------------------------------------


async def test_waits_for_the_reset_when_no_requests_are_left(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    remaining = iter([2, 1, 0, 9, 8, 7])

    def effect(request: httpx.Request) -> httpx.Response:
        return answer(request, rate_limit_headers(limit=10, remaining=next(remaining), reset=30))

    route = api.post(BATCH).mock(side_effect=effect)
    items = texts(6)
    result = await call(client, "translate_many", items, batch_size=1, max_concurrency=1, **LANGS)
    assert result == upper(items)
    assert route.call_count == 6
    # After the third batch left 0 requests, the fourth waited for the reset.
    assert clock.sleeps == [pytest.approx(30.0, abs=1e-3)]


async def test_concurrent_batches_pace_themselves_and_never_meet_a_429(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    # A service allowing 4 requests per 20 s window, on the fake clock.
    lock = threading.Lock()
    window = {"end": clock.time() + 20.0, "used": 0}
    statuses: list[int] = []

    def effect(request: httpx.Request) -> httpx.Response:
        with lock:
            now = clock.time()
            if now >= window["end"]:
                window["end"], window["used"] = now + 20.0, 0
            reset = math.ceil(window["end"] - now)
            if window["used"] >= 4:
                statuses.append(429)
                headers = rate_limit_headers(limit=4, remaining=0, reset=reset)
                return httpx.Response(429, json=failure("RATE_LIMITED"), headers=headers)
            window["used"] += 1
            statuses.append(200)
            headers = rate_limit_headers(limit=4, remaining=4 - int(window["used"]), reset=reset)
        return answer(request, headers)

    api.post(BATCH).mock(side_effect=effect)
    items = texts(24)
    result = await call(client, "translate_many", items, batch_size=2, max_concurrency=3, **LANGS)
    assert result == upper(items)
    assert statuses == [200] * 12
    assert clock.sleeps
    assert all(0 < wait <= 20.001 for wait in clock.sleeps)


async def test_the_clients_last_rate_limit_paces_the_first_batch(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.post("/translate").respond(
        json=envelope({"translated_text": "X", "source_language": "en", "target_language": "de"}),
        headers=rate_limit_headers(limit=10, remaining=0, reset=12),
    )
    api.post(BATCH).mock(side_effect=answer)
    await call(client, "translate", "x", **LANGS)
    result = await call(client, "translate_many", texts(3), **LANGS)
    assert result == upper(texts(3))
    assert clock.sleeps == [pytest.approx(12.0, abs=1e-3)]


async def test_a_reset_more_than_a_minute_away_is_not_waited_for(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    remaining = iter([0, 0, 0])

    def effect(request: httpx.Request) -> httpx.Response:
        left = next(remaining, None)
        if left is None:
            return httpx.Response(
                429, json=failure("RATE_LIMITED"), headers=rate_limit_headers(remaining=0)
            )
        return answer(request, rate_limit_headers(remaining=left, reset=3600))

    api.post(BATCH).mock(side_effect=effect)
    with pytest.raises(lingodoc.RateLimited) as caught:
        await call(client, "translate_many", texts(5), batch_size=1, max_concurrency=1, **LANGS)
    assert caught.value.retry_after == 3600
    assert clock.sleeps == []


# More texts than the hour's quota ---------------------------------------------------------


async def test_a_spent_quota_raises_rate_limited_with_every_finished_translation(
    make: Any,
) -> None:
    # The case, scaled down: a plan of 10 requests an hour, 1,001 distinct texts.
    # Four batches go out before any answer tells how many requests are left, so which
    # batch meets the 429 varies; what was answered is kept, whichever it is.
    emulator = CountingEmulator(rate_limit=10)
    texts = corpus(1_001, distinct=1_001)
    with pytest.raises(lingodoc.RateLimited) as info:
        await call(make(emulator), "translate_many", texts, **LANGS)
    partial = info.value.partial
    assert partial is not None
    assert len(emulator.batches) == 10  # the hour's requests: every one was answered
    answered = set(emulator.texts_sent)
    assert partial.translations == {
        i: expected([text])[0] for i, text in enumerate(texts) if text in answered
    }
    assert len(partial.translations) in (1_000, 901)  # the lone 1,001st text, or a 100
    assert sorted([*partial.translations, *partial.remaining]) == list(range(1_001))


async def test_wait_for_rate_limit_waits_out_the_hour_and_uses_the_minimum_of_requests(
    make: Any, clock: FakeClock
) -> None:
    emulator = CountingEmulator(rate_limit=10)
    texts = corpus(1_001, distinct=1_001)
    result = await call(make(emulator), "translate_many", texts, wait_for_rate_limit=True, **LANGS)
    assert result == expected(texts)
    assert len(emulator.batches) == 11  # ceil(1,001 / 100)
    assert 429 not in emulator.statuses  # paced, never refused
    assert max(clock.sleeps) == pytest.approx(3600, abs=2)


async def test_wait_for_rate_limit_counts_the_requests_already_used_this_hour(
    make: Any, clock: FakeClock
) -> None:
    emulator = CountingEmulator(rate_limit=10)
    client = make(emulator)
    for _ in range(5):  # half of the hour's requests, used elsewhere
        await call(client, "translate", "Hello", **LANGS)
    texts = corpus(600, distinct=600)
    result = await call(client, "translate_many", texts, wait_for_rate_limit=True, **LANGS)
    assert result == expected(texts)
    assert len(emulator.batches) == 6
    assert 429 not in emulator.statuses


async def test_a_reset_beyond_the_longest_wait_allowed_raises_rate_limited(
    make: Any, clock: FakeClock
) -> None:
    emulator = CountingEmulator(rate_limit=2)
    texts = corpus(300, distinct=300)
    with pytest.raises(lingodoc.RateLimited) as info:
        await call(make(emulator), "translate_many", texts, wait_for_rate_limit=600, **LANGS)
    assert info.value.partial is not None
    assert len(info.value.partial.translations) == 200
    assert all(sleep <= 600 for sleep in clock.sleeps)


async def test_a_429_is_sent_again_after_the_reset_when_waiting_is_allowed(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    # A server that does not send the headers the pacing reads: the 429 is its only word.
    answers = iter(
        [
            httpx.Response(429, json=failure("RATE_LIMITED"), headers={"Retry-After": "1800"}),
            httpx.Response(200, json=envelope({"translations": ["A"]})),
        ]
    )
    api.post("/translate/batch").mock(side_effect=lambda request: next(answers))
    result = await call(client, "translate_many", ["a"], wait_for_rate_limit=True, **LANGS)
    assert result == ["A"]
    assert clock.sleeps == [pytest.approx(1800, abs=1e-3)]


async def test_a_429_asking_past_the_last_date_pauses_till_then_and_keeps_its_batch(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    # 1e15 s is past what a datetime holds; "as long as it takes" is what was asked for.
    answers = iter(
        [
            httpx.Response(429, json=failure("RATE_LIMITED"), headers={"Retry-After": "1e15"}),
            httpx.Response(200, json=envelope({"translations": ["A"]})),
        ]
    )
    api.post("/translate/batch").mock(side_effect=lambda request: next(answers))
    seen: list[lingodoc.BulkProgress] = []
    result = await call(
        client.with_options(max_retries=0), "translate_many", ["a"],
        wait_for_rate_limit=True, on_progress=seen.append, **LANGS,
    )  # fmt: skip
    assert result == ["A"]
    pauses = [progress.waiting_until for progress in seen if progress.waiting_until]
    assert pauses == [datetime(9999, 12, 31, tzinfo=timezone.utc)]


class BrokenClock(FakeClock):
    """A clock whose waits fail: what a worker does between requests, failing."""

    def wait(self, event: threading.Event, seconds: float) -> bool:
        raise RuntimeError("the clock broke")

    async def async_sleep(self, seconds: float) -> None:
        raise RuntimeError("the clock broke")


async def test_a_worker_failing_between_requests_ends_the_run_with_its_error(
    client: Client, api: respx.MockRouter
) -> None:
    refusal = httpx.Response(429, json=failure("RATE_LIMITED"), headers={"Retry-After": "30"})
    route = api.post("/translate/batch").mock(return_value=refusal)
    with fake_clock(BrokenClock()), pytest.raises(RuntimeError, match="the clock broke"):
        await call(
            client.with_options(max_retries=0), "translate_many", ["a"],
            wait_for_rate_limit=True, **LANGS,
        )  # fmt: skip
    assert route.call_count == 1  # the wait for the reset failed: nothing was sent again


def test_the_system_clock_waits_no_longer_than_a_lock_can() -> None:
    asked: list[float] = []

    class Event(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            asked.append(timeout or 0.0)
            return True

    assert _clock.SystemClock().wait(Event(), 1e15) is True
    assert asked == [threading.TIMEOUT_MAX]


async def test_a_batch_refused_again_and_again_ends_the_run(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    refusal = httpx.Response(429, json=failure("RATE_LIMITED"), headers={"Retry-After": "1800"})
    route = api.post("/translate/batch").mock(return_value=refusal)
    with pytest.raises(lingodoc.RateLimited):
        await call(
            client.with_options(max_retries=0),
            "translate_many",
            ["a"],
            wait_for_rate_limit=True,
            **LANGS,
        )
    assert route.call_count == 4  # the first send and three after a reset: then it gives up


async def test_a_429_without_rate_limit_headers_is_waited_out_before_any_batch_is_resent(
    client: Client, api: respx.MockRouter, clock: FakeClock
) -> None:
    # A proxy refusing everything for 30 s, with Retry-After and no X-RateLimit headers.
    # No batch may go out again before then (the refused one was resent at once by the
    # other workers, refused three times more, and the run ended).
    opens_at = clock.time() + 30
    refusals = 0

    def effect(request: httpx.Request) -> httpx.Response:
        nonlocal refusals
        if clock.time() < opens_at:
            refusals += 1
            wait = str(math.ceil(opens_at - clock.time()))
            return httpx.Response(429, json=failure("RATE_LIMITED"), headers={"Retry-After": wait})
        texts = json.loads(request.content)["texts"]
        return httpx.Response(200, json=envelope({"translations": [t.upper() for t in texts]}))

    api.post("/translate/batch").mock(side_effect=effect)
    result = await call(
        client.with_options(max_retries=0),
        "translate_many",
        ["a", "b", "c", "d", "e", "f", "g", "h"],
        batch_size=1,
        wait_for_rate_limit=True,
        **LANGS,
    )
    assert result == ["A", "B", "C", "D", "E", "F", "G", "H"]
    assert refusals <= 4  # the batches already in flight when the first 429 came


def bulk_of(texts: list[str]) -> _bulk.Bulk:
    """The plan of a run over ``texts``, a batch each, all at once, its events kept here."""
    bulk = _bulk.Bulk(
        texts, "en", "de", batch_size=1, max_concurrency=len(texts), wait_for_rate_limit=True,
        on_progress=None, done=None, options=None, rate_limit=None, awaits=False,
    )  # fmt: skip
    bulk.events = queue.SimpleQueue()
    return bulk


def test_a_refused_batch_is_resent_after_the_backoff_when_the_wait_asked_is_shorter() -> None:
    # Retry-After: 0.001 (or 0, or a date just past) must not resend at once: the
    # resend waits for the usual backoff, as a retry does. Shared by Client and AsyncClient.
    bulk = bulk_of(["a"])
    batch = bulk.next()
    assert isinstance(batch, _bulk.Batch)
    bulk.failed(batch, lingodoc.RateLimited("slow down", status_code=429, retry_after=0.001))
    wait = bulk.next()
    assert isinstance(wait, float)
    assert 0.25 <= wait <= 0.5 + 1e-3  # the first backoff, not 0.001


def test_after_a_429_without_headers_no_worker_sends_before_its_retry_after() -> None:
    # The rule behind the test above, without threads: on the fake clock the worker that
    # met the 429 sleeps at once, which hides the race. Shared by Client and AsyncClient.
    bulk = bulk_of(["a", "b"])
    first = bulk.next()
    assert isinstance(first, _bulk.Batch)
    refusal = lingodoc.RateLimited("slow down", status_code=429, retry_after=30.0)
    bulk.failed(first, refusal)
    # This worker, and another, ask what to do: wait out the same 30 s, not send now.
    assert bulk.next() == pytest.approx(30.0, abs=1e-3)
    assert bulk.next() == pytest.approx(30.0, abs=1e-3)


def test_ctrl_c_during_a_retry_wait_makes_no_further_attempt(api: respx.MockRouter) -> None:
    # A batch failed with a 503 and waits its back-off; Ctrl-C comes meanwhile. The wait
    # ends at once and the batch is not sent again (it was: 5 s later).
    attempts: list[str] = []
    waiting = threading.Event()

    class Clock(FakeClock):
        def wait(self, event: threading.Event, seconds: float) -> bool:
            waiting.set()
            assert event.wait(WAIT)  # really blocks, until the run stops
            return True

    def effect(request: httpx.Request) -> httpx.Response:
        attempts.append(json.loads(request.content)["texts"][0])
        return httpx.Response(503, json=failure("UNAVAILABLE"))

    api.post("/translate/batch").mock(side_effect=effect)

    def press_ctrl_c() -> None:
        if waiting.wait(WAIT):
            ctrl_c()

    with (
        interrupter(press_ctrl_c) as pressing,
        fake_clock(Clock()),
        lingodoc.Client(API_KEY, base_url=BASE_URL) as client,
    ):
        pressing.start()
        with pytest.raises(KeyboardInterrupt):
            client.translate_many(["a"], **LANGS)
    assert attempts == ["a"]


async def test_an_error_elsewhere_ends_an_async_retry_wait_with_no_further_attempt(
    api: respx.MockRouter,
) -> None:
    # The async twin of the test above, on asyncio and trio: a batch waits its back-off
    # after a 503 when another batch's 400 ends the run. The wait ends at once (the task
    # group cancels it) and the batch is not sent again.
    attempts: list[str] = []
    sleeping = anyio.Event()

    class Clock(FakeClock):
        async def async_sleep(self, seconds: float) -> None:
            sleeping.set()
            await anyio.sleep(WAIT)  # really blocks, until the run stops

    async def effect(request: httpx.Request) -> httpx.Response:
        text = json.loads(request.content)["texts"][0]
        attempts.append(text)
        if text == "a":
            return httpx.Response(503, json=failure("UNAVAILABLE"))
        with anyio.fail_after(WAIT):
            await sleeping.wait()
        return httpx.Response(400, json=failure("INVALID_REQUEST"))

    api.post("/translate/batch").mock(side_effect=effect)
    from lingodoc.testing import fake_clock

    with fake_clock(Clock()), anyio.fail_after(WAIT):
        async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
            with pytest.raises(lingodoc.APIError) as info:
                await client.translate_many(["a", "b"], batch_size=1, **LANGS)
    assert info.value.status_code == 400
    assert sorted(attempts) == ["a", "b"]


def test_a_second_ctrl_c_still_keeps_what_was_answered_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first Ctrl-C waits for the two batches in flight; one is answered during that
    # wait, then a second Ctrl-C ends it. The answered batch is kept (it was lost).
    emulator = CountingEmulator()
    in_flight = threading.Barrier(3)
    release_first, release_second = threading.Event(), threading.Event()
    started = iter(range(1_000))
    # Set once the run hands out no further batch (the first Ctrl-C is taken), and once a
    # worker has handed an answered batch back to it.
    stopped, handed_back = threading.Event(), threading.Event()
    stop, record = _bulk.Bulk.stop, _bulk.Bulk.done

    def stopping(bulk: _bulk.Bulk) -> None:
        stop(bulk)
        stopped.set()

    def recorded(bulk: _bulk.Bulk, batch: Any, result: Any) -> None:
        record(bulk, batch, result)
        handed_back.set()

    monkeypatch.setattr(_bulk.Bulk, "stop", stopping)
    monkeypatch.setattr(_bulk.Bulk, "done", recorded)

    def handle(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if target.endswith("/translate/batch"):
            order = next(started)
            if order < 2:
                in_flight.wait(WAIT)  # a barrier: BrokenBarrierError if they never are
            assert (release_first if order == 0 else release_second).wait(WAIT)
        return CountingEmulator.handle(emulator, method, target, headers, body)

    emulator.handle = handle  # type: ignore[method-assign]

    def press_ctrl_c_twice() -> None:
        in_flight.wait(WAIT)
        ctrl_c()
        # Taken before the second (two SIGINTs close together are one KeyboardInterrupt).
        assert stopped.wait(WAIT), "the first Ctrl-C was never taken"
        release_first.set()
        # The first batch answered, and recorded by its worker.
        assert handed_back.wait(WAIT), "the first batch was never handed back"
        ctrl_c()

    done: dict[int, str] = {}
    texts = corpus(1_000, distinct=1_000)
    with interrupter(press_ctrl_c_twice) as pressing, emulator.client() as client:
        pressing.start()
        with pytest.raises(KeyboardInterrupt):
            client.translate_many(texts, max_concurrency=2, done=done, **LANGS)
        release_second.set()  # the batch the second Ctrl-C left behind may finish
        for thread in threading.enumerate():
            if thread.name.startswith("lingodoc-many"):
                thread.join(WAIT)
    first = emulator.batches[0]
    assert done == {i: expected([t])[0] for i, t in enumerate(texts) if t in set(first)}


# Arguments, checked before the first request ----------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"texts": []}, ValueError, "texts must not be empty"),
        ({"texts": "one text"}, TypeError, "texts must be a list of str"),
        ({"texts": ["a", 2]}, TypeError, r"texts\[1\] must be a str"),
        ({"batch_size": 0}, ValueError, "batch_size must be an int, 1 or more"),
        ({"batch_size": -5}, ValueError, "batch_size must be an int, 1 or more"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
        ({"batch_size": True}, TypeError, "batch_size must be an int"),
        ({"batch_size": "10"}, TypeError, "batch_size must be an int"),
        ({"max_concurrency": 0}, ValueError, "max_concurrency must be an int, 1 or more"),
        ({"max_concurrency": None}, TypeError, "max_concurrency must be an int"),
        ({"source_language": "english"}, lingodoc.InvalidLanguage, "source_language"),
        ({"target_language": "d"}, lingodoc.InvalidLanguage, "target_language"),
    ],
)
async def test_arguments_are_checked_before_any_request(
    client: Client,
    api: respx.MockRouter,
    arguments: dict[str, Any],
    error: type[Exception],
    match: str,
) -> None:
    route = api.post(BATCH).mock(side_effect=answer)
    options: dict[str, Any] = {"texts": ["a", "b"], **LANGS, **arguments}
    items = options.pop("texts")
    with pytest.raises(error, match=match):
        await call(client, "translate_many", items, **options)
    assert route.call_count == 0


@pytest.mark.parametrize("method", ["translate_many", "translate_batch"])
async def test_a_text_too_long_is_refused_by_its_index_before_any_request(
    client: Client, api: respx.MockRouter, method: str
) -> None:
    route = api.post("/translate/batch")
    texts = ["fine"] * 90
    texts[77] = "x" * 10_001
    with pytest.raises(lingodoc.TextTooLong, match=r"texts\[77\] has 10,001 characters"):
        await call(client, method, texts, **LANGS)
    assert route.call_count == 0


async def test_translate_many_names_the_index_in_the_whole_list_not_in_its_batch(
    client: Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch")
    texts = ["fine"] * 100_000
    texts[77_777] = "x" * 10_001
    with pytest.raises(lingodoc.TextTooLong, match=r"texts\[77777\]"):
        await call(client, "translate_many", texts, **LANGS)
    texts[77_777] = b"bytes"  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"texts\[77777\] must be a str, not bytes"):
        await call(client, "translate_many", texts, **LANGS)
    assert route.call_count == 0


@pytest.mark.parametrize(
    ("done", "error", "message"),
    [
        ({5: "x"}, ValueError, "done holds index 5, but texts has 3"),
        ({-1: "x"}, ValueError, "done holds index -1"),
        ({"0": "x"}, TypeError, "done's keys must be int indices, not str"),
        ({True: "x"}, TypeError, "done's keys must be int indices, not bool"),
        ({0: None}, TypeError, r"done\[0\] must be a str, not NoneType"),
        ([("a", "b")], TypeError, "done must be a dict"),
    ],
)
async def test_a_bad_done_is_refused_before_any_request(
    client: Client, api: respx.MockRouter, done: Any, error: type[Exception], message: str
) -> None:
    route = api.post("/translate/batch")
    with pytest.raises(error, match=message):
        await call(client, "translate_many", ["a", "b", "c"], done=done, **LANGS)
    assert route.call_count == 0


@pytest.mark.parametrize(
    ("value", "error"),
    [("yes", TypeError), (None, TypeError), (-1, ValueError), (math.nan, ValueError)],
)
async def test_a_bad_wait_for_rate_limit_is_refused(
    client: Client, api: respx.MockRouter, value: Any, error: type[Exception]
) -> None:
    route = api.post("/translate/batch")
    with pytest.raises(error, match="wait_for_rate_limit"):
        await call(client, "translate_many", ["a"], wait_for_rate_limit=value, **LANGS)
    assert route.call_count == 0


# Against the emulator ---------------------------------------------------------------------


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(rate_limit=100_000)


async def test_the_emulator_translates_many_texts_in_order(
    emulated: Client, emulator: Emulator
) -> None:
    items = [f"Hello world {i}" if i % 3 else f"good night {i}" for i in range(1_050)]
    before = threads_and_tasks()
    result = await call(emulated, "translate_many", items, **LANGS)
    assert result == [translate_text(text, "en", "de") for text in items]
    assert len(emulator.requests) == 11
    assert {record.path for record in emulator.requests} == {"/v1/translate/batch"}
    assert threads_and_tasks() == before


async def test_the_emulator_server_error_is_retried_within_translate_many(
    emulated: Client, emulator: Emulator
) -> None:
    emulator.inject("server_error", times=2, path=BATCH)
    items = [f"cat {i}" for i in range(300)]
    result = await call(emulated, "translate_many", items, **LANGS)
    assert result == [translate_text(text, "en", "de") for text in items]
    assert sorted(record.status for record in emulator.requests) == [200, 200, 200, 500, 500]


async def test_the_emulator_rate_limit_ends_translate_many_with_rate_limited(
    emulated: Client, emulator: Emulator, clock: FakeClock
) -> None:
    emulator.rate_limit = 3  # per hour: the reset is too far off to wait for
    with pytest.raises(lingodoc.RateLimited):
        await call(emulated, "translate_many", texts(10), batch_size=1, max_concurrency=1, **LANGS)
    assert [record.status for record in emulator.requests] == [200, 200, 200, 429]
    assert clock.sleeps == []


async def cancel_translate_many_with_batches_in_flight(
    api: respx.MockRouter, *, asyncio_task: bool
) -> None:
    started = anyio.Event()
    cancelled: list[str] = []
    in_flight: list[str] = []

    async def effect(request: httpx.Request) -> httpx.Response:
        in_flight.extend(sent_texts(request))
        if len(in_flight) == 6:  # both batches are in flight
            started.set()
        try:
            with anyio.fail_after(WAIT):
                await anyio.Event().wait()  # never answered
        except anyio.get_cancelled_exc_class():
            cancelled.extend(sent_texts(request))
            raise
        raise AssertionError("the batch was not cancelled")

    api.post(BATCH).mock(side_effect=effect)
    before = threads_and_tasks()
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        await cancelled_midway(
            lambda: client.translate_many(texts(12), batch_size=3, max_concurrency=2, **LANGS),
            started,
            asyncio_task=asyncio_task,
        )
    assert sorted(cancelled) == ["t0", "t1", "t2", "t3", "t4", "t5"]
    assert threads_and_tasks() == before


async def test_cancelling_the_awaiting_task_cancels_the_batches_in_flight(
    api: respx.MockRouter,
) -> None:
    await cancel_translate_many_with_batches_in_flight(api, asyncio_task=False)


@pytest.mark.asyncio_only  # asyncio's own Task.cancel(), as asyncio code cancels
async def test_cancelling_the_awaiting_asyncio_task_cancels_the_batches_in_flight(
    api: respx.MockRouter,
) -> None:
    await cancel_translate_many_with_batches_in_flight(api, asyncio_task=True)


# Progress ---------------------------------------------------------------------------------


async def test_progress_is_reported_before_the_first_request_and_after_each_batch(
    make: Any,
) -> None:
    emulator = CountingEmulator()
    seen: list[lingodoc.BulkProgress] = []
    texts = ["", *corpus(250, distinct=200)]
    await call(
        make(emulator), "translate_many", texts, max_concurrency=1, on_progress=seen.append, **LANGS
    )
    assert [(p.done, p.total, p.requests, p.requests_left) for p in seen] == [
        (1, 251, 0, 2),
        (1 + 150, 251, 1, 1),  # distinct texts 0..99, of which 0..49 appear twice
        (251, 251, 2, 0),
    ]
    assert seen[0].rate_limit is None
    assert seen[-1].rate_limit is not None
    assert seen[-1].rate_limit.remaining == 998
    assert all(p.waiting_until is None for p in seen)


async def test_progress_reports_a_wait_for_the_reset_with_its_end(
    make: Any, clock: FakeClock
) -> None:
    emulator = CountingEmulator(rate_limit=1)
    seen: list[lingodoc.BulkProgress] = []
    started = clock.time()
    await call(
        make(emulator),
        "translate_many",
        corpus(200, distinct=200),
        wait_for_rate_limit=True,
        on_progress=seen.append,
        **LANGS,
    )
    waits = [p.waiting_until for p in seen if p.waiting_until is not None]
    assert len(waits) == 1  # however many workers wait for it, one report
    assert waits[0] is not None
    assert waits[0].timestamp() == pytest.approx(started + 3600, abs=2)
    assert (seen[-1].done, seen[-1].waiting_until) == (200, None)


async def test_progress_is_called_in_the_callers_thread(make: Any) -> None:
    threads: set[int] = set()
    await call(
        make(CountingEmulator()),
        "translate_many",
        corpus(1_000, distinct=1_000),
        on_progress=lambda progress: threads.add(threading.get_ident()),
        **LANGS,
    )
    assert threads == {threading.get_ident()}


async def test_an_error_from_on_progress_stops_the_run_and_is_raised(
    make: Any, flavour: str
) -> None:
    raised = threading.Event()

    class Emulator(CountingEmulator):
        def handle(
            self, method: str, target: str, headers: Mapping[str, str], body: bytes
        ) -> Reply:
            # Client: the second batch is answered only once the callback has raised, so
            # that the test sees where the run stops, not how fast its threads are.
            if flavour == "sync" and len(self.batches) == 1:
                assert raised.wait(WAIT)
            return super().handle(method, target, headers, body)

    emulator = Emulator()
    done: dict[int, str] = {}

    def stop_after_the_first_batch(progress: lingodoc.BulkProgress) -> None:
        if progress.requests == 1:
            raised.set()
            raise RuntimeError("the progress bar broke")

    with pytest.raises(RuntimeError, match="the progress bar broke"):
        await call(
            make(emulator),
            "translate_many",
            corpus(1_000, distinct=1_000),
            max_concurrency=1,
            on_progress=stop_after_the_first_batch,
            done=done,
            **LANGS,
        )
    # The batch reported; with Client the one in flight is finished too, and kept.
    assert len(emulator.batches) == (2 if flavour == "sync" else 1)
    assert len(done) == 100 * len(emulator.batches)


async def test_an_async_progress_callback_is_awaited() -> None:
    emulator = CountingEmulator()
    seen: list[int] = []

    async def report(progress: lingodoc.BulkProgress) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(progress.done)

    async with emulator.async_client() as client:
        await client.translate_many(corpus(200, distinct=200), on_progress=report, **LANGS)
    assert seen == [0, 100, 200]


def test_client_refuses_an_async_progress_callback_before_any_request() -> None:
    emulator = CountingEmulator()

    async def report(progress: lingodoc.BulkProgress) -> None:
        pass

    with emulator.client() as client, pytest.raises(TypeError, match="coroutine function"):
        client.translate_many(["a"], on_progress=report, **LANGS)
    assert emulator.statuses == []


# A pacing wait ends at once when translate_many stops -------------------------------------


class PacingClock(FakeClock):
    """A fake clock whose waits really block (up to WAIT s), so that a stop can end them.

    Attributes:
        started: Set when a wait (or sleep) starts; a test's side effect waits on it.
        outcomes: How each wait ended: "woken" (its event was set), "slept out" (it ran
            its full length), "cancelled" or "interrupted".
    """

    def __init__(self, started: Any) -> None:
        super().__init__()
        self.started = started
        self.outcomes: list[str] = []
        self.two_waiting = threading.Event()

    def _begin(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if len(self.sleeps) == 2:
            self.two_waiting.set()
        self.started.set()

    @staticmethod
    def _block(event: threading.Event, seconds: float) -> bool:
        # In slices of 50 ms: a signal that lands just before a blocking wait begins is
        # handled only when that wait ends (a race Ctrl-C by hand does not hit).
        end = time.monotonic() + min(seconds, WAIT)
        while not event.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return False
            event.wait(min(left, 0.05))
        return True

    def sleep(self, seconds: float) -> None:
        self._begin(seconds)
        try:
            self._block(threading.Event(), seconds)
        except BaseException:
            self.outcomes.append("interrupted")
            raise
        self.outcomes.append("slept out")

    def wait(self, event: threading.Event, seconds: float) -> bool:
        self._begin(seconds)
        try:
            woken = self._block(event, seconds)
        except BaseException:
            self.outcomes.append("interrupted")
            raise
        self.outcomes.append("woken" if woken else "slept out")
        return woken

    async def async_sleep(self, seconds: float) -> None:
        self._begin(seconds)
        try:
            await anyio.sleep(min(seconds, WAIT))
        except anyio.get_cancelled_exc_class():
            self.outcomes.append("cancelled")
            raise
        self.outcomes.append("slept out")


def spent(request: httpx.Request) -> httpx.Response:
    """A batch answered, leaving no request in a window that resets in 50 s."""
    return answer(request, rate_limit_headers(limit=10, remaining=0, reset=50))


async def test_an_error_in_another_batch_ends_the_pacing_wait_at_once(
    client: Client, api: respx.MockRouter
) -> None:
    # Two batches in flight. The first answer leaves no request until the reset, 50 s away,
    # so its worker waits; the second fails with a 400 once that wait has started. The
    # error must be raised then, not after the reset (it came 55 s late).
    gates = Gates(client, 2)
    both_sent, pacing = gates.events
    arrivals: list[str] = []

    def hold(request: httpx.Request) -> Any:
        arrivals.extend(sent_texts(request))
        if len(arrivals) == 1:
            return both_sent
        both_sent.set()
        return pacing

    def respond(request: httpx.Request) -> httpx.Response:
        if sent_texts(request) == arrivals[:1]:
            return spent(request)
        return httpx.Response(400, json=failure("INVALID_LANGUAGE", "no such language"))

    route = api.post(BATCH).mock(side_effect=gates.side_effect(hold, respond))
    before = threads_and_tasks()
    with (
        fake_clock(PacingClock(pacing)) as clock,
        pytest.raises(lingodoc.InvalidLanguage, match="no such language"),
    ):
        await call(client, "translate_many", texts(4), batch_size=1, max_concurrency=2, **LANGS)
    assert route.call_count == 2
    assert clock.sleeps == [pytest.approx(50.0, abs=1e-3)]
    # Woken by the error (threads), or cancelled (tasks): never slept out.
    assert clock.outcomes == ["cancelled" if gates.is_async else "woken"]
    assert threads_and_tasks() == before


def test_ctrl_c_during_a_pacing_wait_ends_translate_many_at_once(api: respx.MockRouter) -> None:
    # Both worker threads wait for a reset 50 s away; Ctrl-C arrives in this thread, which
    # coordinates them. It must surface at once, and wake the workers instead of waiting
    # for them (Ctrl-C took 49 s).
    api.post(BATCH).mock(side_effect=spent)
    clock = PacingClock(threading.Event())

    def press_ctrl_c() -> None:
        if clock.two_waiting.wait(WAIT):  # both workers
            ctrl_c()

    with (
        interrupter(press_ctrl_c) as pressing,
        fake_clock(clock),
        lingodoc.Client(API_KEY, base_url=BASE_URL) as client,
    ):
        pressing.start()
        with pytest.raises(KeyboardInterrupt):
            client.translate_many(texts(4), batch_size=1, max_concurrency=2, **LANGS)
    assert clock.sleeps == [pytest.approx(50.0, abs=1e-3)] * 2
    assert clock.outcomes == ["woken", "woken"]
    assert [
        t.name for t in threading.enumerate() if t.name.startswith("lingodoc-many") and t.is_alive()
    ] == []


def test_fake_clock_wait_sleeps_unless_the_event_is_set() -> None:
    clock = FakeClock(start=0)
    event = threading.Event()
    assert clock.wait(event, 30) is False
    assert (clock.sleeps, clock.monotonic(), clock.time()) == ([30.0], 30.0, 30.0)
    event.set()
    assert clock.wait(event, 30) is True
    assert (clock.sleeps, clock.monotonic()) == ([30.0], 30.0)


# Interruption -----------------------------------------------------------------------------


def test_ctrl_c_keeps_the_batches_in_flight_and_starts_no_more() -> None:
    # Two batches in flight when Ctrl-C comes; their answers come after it. A worker may
    # take one more batch before Ctrl-C takes effect; that one waits for it. All are kept:
    # the service did the work (and counted the requests).
    emulator = CountingEmulator()
    both_in_flight, answer, interrupted = threading.Barrier(3), threading.Event(), threading.Event()
    started = iter(range(1_000))

    def handle(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if target.endswith("/translate/batch"):
            if next(started) < 2:
                both_in_flight.wait(WAIT)
                assert answer.wait(WAIT)
            else:
                assert interrupted.wait(WAIT)
        return CountingEmulator.handle(emulator, method, target, headers, body)

    def on_ctrl_c(signum: int, frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    emulator.handle = handle  # type: ignore[method-assign]

    def press_ctrl_c() -> None:
        both_in_flight.wait(WAIT)
        ctrl_c()
        answer.set()

    done: dict[int, str] = {}
    texts = corpus(1_000, distinct=1_000)
    with interrupter(press_ctrl_c, on_ctrl_c) as pressing, emulator.client() as client:
        pressing.start()
        with pytest.raises(KeyboardInterrupt):
            client.translate_many(texts, max_concurrency=2, done=done, **LANGS)
    assert 2 <= len(emulator.batches) <= 4  # the two, and at most one more per worker
    answered = {text for batch in emulator.batches for text in batch}
    assert done == {i: expected([text])[0] for i, text in enumerate(texts) if text in answered}
    assert [
        t for t in threading.enumerate() if t.name.startswith("lingodoc-many") and t.is_alive()
    ] == []


def test_ctrl_c_while_a_batch_is_being_stored_still_stores_it_whole() -> None:
    # Python raises KeyboardInterrupt between any two bytecodes: here, at the first
    # translation stored into done.
    class InterruptedOnce(dict[int, str]):
        interrupted = False

        def __setitem__(self, index: int, translation: str) -> None:
            if not self.interrupted:
                self.interrupted = True
                raise KeyboardInterrupt
            super().__setitem__(index, translation)

    emulator = CountingEmulator()
    done = InterruptedOnce()
    texts = corpus(300, distinct=300)
    with emulator.client() as client, pytest.raises(KeyboardInterrupt):
        client.translate_many(texts, max_concurrency=1, done=done, **LANGS)
    answered = {text for batch in emulator.batches for text in batch}
    assert len(answered) >= 100
    assert dict(done) == {i: expected([t])[0] for i, t in enumerate(texts) if t in answered}


async def cancel_translate_many_after_three_batches(*, asyncio_task: bool) -> None:
    emulator = CountingEmulator()
    three_answered = anyio.Event()
    done: dict[int, str] = {}

    def count(progress: lingodoc.BulkProgress) -> None:
        if progress.requests == 3:
            three_answered.set()

    async with emulator.async_client() as client:
        await cancelled_midway(
            lambda: client.translate_many(
                corpus(1_000, distinct=1_000), max_concurrency=1, on_progress=count, done=done,
                **LANGS,
            ),
            three_answered,
            asyncio_task=asyncio_task,
        )  # fmt: skip
    assert len(done) == 100 * len(emulator.batches)
    assert 300 <= len(done) < 1_000


async def test_cancelling_keeps_the_answered_batches_in_done() -> None:
    await cancel_translate_many_after_three_batches(asyncio_task=False)


@pytest.mark.asyncio_only  # asyncio's own Task.cancel(), as asyncio code cancels
async def test_cancelling_the_asyncio_task_keeps_the_answered_batches_in_done() -> None:
    await cancel_translate_many_after_three_batches(asyncio_task=True)
