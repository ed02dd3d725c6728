"""translate_many: batches sent side by side, in input order, paced, stopped at the first error.

Every test runs on Client (threads) and AsyncClient (tasks). Batches are made to
finish out of order with events, never with real sleeps; waits are read from
the fake clock.
"""

from __future__ import annotations

import json
import math
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest
import respx

import lingodoc
from lingodoc import _bulk
from lingodoc.emulator import Emulator, translate_text
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import (
    API_KEY,
    BASE_URL,
    call,
    envelope,
    failure,
    rate_limit_headers,
    running_tasks,
)

LANGS = {"source_language": "en", "target_language": "de"}
BATCH = "/translate/batch"
WAIT = 10.0  # the longest an event is waited for, so a broken test fails instead of hanging

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


def threads_and_tasks() -> tuple[int, int]:
    """Threads alive and tasks running (asyncio or trio)."""
    return threading.active_count(), running_tasks()


# Order and splitting -----------------------------------------------------------------------


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


# The first error ---------------------------------------------------------------------------


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
    assert sorted(seen) == [["t0"], ["t1"]]
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


# Pacing ------------------------------------------------------------------------------------


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


# Arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"texts": []}, ValueError, "texts must not be empty"),
        ({"texts": "one text"}, TypeError, "texts must be a list of str"),
        ({"texts": ["a", 2]}, TypeError, r"texts\[1\] must be a str"),
        ({"batch_size": 0}, ValueError, "batch_size must be at least 1"),
        ({"batch_size": -5}, ValueError, "batch_size must be at least 1"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
        ({"batch_size": True}, TypeError, "batch_size must be an int"),
        ({"batch_size": "10"}, TypeError, "batch_size must be an int"),
        ({"max_concurrency": 0}, ValueError, "max_concurrency must be at least 1"),
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


# Against the emulator ----------------------------------------------------------------------


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(rate_limit=100_000)


@pytest.fixture  # "sync" or "async", on asyncio and trio: tests/conftest.py
async def emulated(request: pytest.FixtureRequest, emulator: Emulator) -> AsyncIterator[Client]:
    """A Client or AsyncClient bound to the emulator in-process."""
    if request.param == "sync":
        with emulator.client() as sync_client:
            yield sync_client
    else:
        async with emulator.async_client() as async_client:
            yield async_client


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


async def test_cancelling_the_awaiting_task_cancels_the_batches_in_flight(
    api: respx.MockRouter,
) -> None:
    # Cancelled from a cancel scope: a task cancelled (asyncio) or a nursery (trio).
    started = anyio.Event()
    cancelled: list[str] = []
    in_flight: list[str] = []
    outcome: list[str] = []

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

        async def translate_many() -> None:
            try:
                await client.translate_many(texts(12), batch_size=3, max_concurrency=2, **LANGS)
            except anyio.get_cancelled_exc_class():
                outcome.append("cancelled")
                raise
            outcome.append("returned")

        async with anyio.create_task_group() as group:
            group.start_soon(translate_many)
            with anyio.fail_after(WAIT):
                await started.wait()
            group.cancel_scope.cancel()
    assert outcome == ["cancelled"]
    assert sorted(cancelled) == ["t0", "t1", "t2", "t3", "t4", "t5"]
    assert threads_and_tasks() == before


@pytest.mark.asyncio_only  # asyncio's own Task.cancel(), as asyncio code cancels
async def test_cancelling_the_awaiting_asyncio_task_cancels_the_batches_in_flight(
    api: respx.MockRouter,
) -> None:
    import asyncio

    started = asyncio.Event()
    cancelled: list[str] = []
    in_flight: list[str] = []

    async def effect(request: httpx.Request) -> httpx.Response:
        in_flight.extend(sent_texts(request))
        if len(in_flight) == 6:  # both batches are in flight
            started.set()
        try:
            await asyncio.wait_for(asyncio.Event().wait(), WAIT)  # never answered
        except asyncio.CancelledError:
            cancelled.extend(sent_texts(request))
            raise
        raise AssertionError("the batch was not cancelled")

    api.post(BATCH).mock(side_effect=effect)
    before = threads_and_tasks()
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        task = asyncio.ensure_future(
            client.translate_many(texts(12), batch_size=3, max_concurrency=2, **LANGS)
        )
        await asyncio.wait_for(started.wait(), WAIT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert sorted(cancelled) == ["t0", "t1", "t2", "t3", "t4", "t5"]
    assert threads_and_tasks() == before


# A pacing wait ends at once when translate_many stops ---------------------------------------


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
    main = threading.main_thread()
    assert threading.current_thread() is main

    def press_ctrl_c() -> None:
        if clock.two_waiting.wait(WAIT):  # both workers
            assert main.ident is not None
            signal.pthread_kill(main.ident, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter = threading.Thread(target=press_ctrl_c, name="test-ctrl-c")
    try:
        with fake_clock(clock), lingodoc.Client(API_KEY, base_url=BASE_URL) as client:
            interrupter.start()
            with pytest.raises(KeyboardInterrupt):
                client.translate_many(texts(4), batch_size=1, max_concurrency=2, **LANGS)
    finally:
        interrupter.join(WAIT)
        signal.signal(signal.SIGINT, previous)
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
