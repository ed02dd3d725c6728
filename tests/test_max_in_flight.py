"""max_in_flight: the most calls a client (and its copies) sends at once; the others wait.

The wait for a turn comes before an attempt starts: it is not part of its timeout, opens no
connection, and ends with a refusal if the client is closed meanwhile.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import httpx
import pytest
import respx

import lingodoc
from lingodoc.testing import FakeClock
from tests.conftest import API_KEY, BASE_URL, close, envelope
from tests.waiting import PATIENCE, wait_until

RESULT = envelope({"translated_text": "Hallo", "source_language": "en", "target_language": "de"})
LANGS = {"source_language": "en", "target_language": "de"}


class Counting:
    """A respx side effect that records the most calls at once.

    A thread's call waits until ``fill`` calls are in flight: threads start one by one, and
    each would be answered before the next has started. Never more than PATIENCE in all: if
    they never fill (the limit is too low), the calls go on at once and the peak says so.
    """

    def __init__(self, fill: int = 1) -> None:
        self.now = self.peak = 0
        self.fill = fill
        self.changed = threading.Condition()
        self.deadline = time.monotonic() + PATIENCE

    def enter(self) -> None:
        with self.changed:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.changed.notify_all()

    def leave(self) -> httpx.Response:
        with self.changed:
            self.now -= 1
        return httpx.Response(200, json=RESULT)

    async def answer(self, request: httpx.Request) -> httpx.Response:
        self.enter()
        await anyio.sleep(0.001)  # the others run meanwhile
        return self.leave()

    def answer_sync(self, request: httpx.Request) -> httpx.Response:
        self.enter()
        with self.changed:
            left = self.deadline - time.monotonic()
            self.changed.wait_for(lambda: self.peak >= self.fill, timeout=max(0.0, left))
        return self.leave()


async def gather(client: lingodoc.AsyncClient, calls: int) -> list[str]:
    results: list[str] = []

    async def one() -> None:
        results.append((await client.translate("Hi", **LANGS)).translated_text)

    async with anyio.create_task_group() as tasks:
        for _ in range(calls):
            tasks.start_soon(one)
    return results


def threads(client: lingodoc.Client, calls: int) -> list[str]:
    results: list[str] = []

    def one() -> None:
        results.append(client.translate("Hi", **LANGS).translated_text)

    started = [threading.Thread(target=one) for _ in range(calls)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(PATIENCE)
    return results


@pytest.mark.parametrize(("limit", "calls", "peak"), [(2, 40, 2), (None, 60, 16)])
async def test_calls_past_the_limit_wait_their_turn_and_all_get_answers(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    api: respx.MockRouter,
    limit: int | None,
    calls: int,
    peak: int,
) -> None:
    counting = Counting(fill=peak)
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=limit)
    if isinstance(client, lingodoc.AsyncClient):
        api.post("/translate").mock(side_effect=counting.answer)
        results = await gather(client, calls)
    else:
        api.post("/translate").mock(side_effect=counting.answer_sync)
        results = threads(client, calls)
    assert results == ["Hallo"] * calls
    assert counting.peak == peak  # the default, 16, fills up: no fewer, no more
    await close(client)


async def test_copies_share_the_turns_of_the_client_they_come_from(api: respx.MockRouter) -> None:
    counting = Counting()
    api.post("/translate").mock(side_effect=counting.answer)
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, max_in_flight=3)
    copy = client.with_options(timeout=5)
    await gather(client, 10)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(gather, client, 10)
        tasks.start_soon(gather, copy, 10)
    assert counting.peak == 3
    await client.aclose()


async def test_the_wait_for_a_turn_is_not_part_of_the_attempts_timeout(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    # The first call holds the only turn for 100 s of the fake clock (past the 30 s
    # timeout); the second one's attempt, and its deadline, start after it.
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, max_in_flight=1)
    release, started = anyio.Event(), []

    async def answer(request: httpx.Request) -> httpx.Response:
        started.append(clock.monotonic())
        if len(started) == 1:
            await release.wait()
            clock.advance(100)
        return httpx.Response(200, json=RESULT)

    api.post("/translate").mock(side_effect=answer)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(gather, client, 1)
        await anyio.wait_all_tasks_blocked()
        tasks.start_soon(gather, client, 1)
        await anyio.wait_all_tasks_blocked()
        assert started == [0.0]  # the second waits for its turn
        release.set()
    assert started == [0.0, 100.0]
    await client.aclose()


async def test_a_call_waiting_for_its_turn_when_the_client_closes_is_refused(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=1)
    arrived, release = threading.Event(), threading.Event()
    outcomes: list[Any] = []

    def hold(request: httpx.Request) -> httpx.Response:
        arrived.set()
        release.wait(PATIENCE)
        return httpx.Response(200, json=RESULT)

    route = api.post("/translate").mock(side_effect=hold)

    def one() -> None:
        try:
            outcomes.append(client.translate("Hi", **LANGS).translated_text)  # type: ignore[union-attr]
        except lingodoc.LingodocError as exc:
            outcomes.append(str(exc))

    if isinstance(client, lingodoc.AsyncClient):

        async def one_async() -> None:
            try:
                outcomes.append((await client.translate("Hi", **LANGS)).translated_text)
            except lingodoc.LingodocError as exc:
                outcomes.append(str(exc))

        async def hold_async(request: httpx.Request) -> httpx.Response:
            arrived.set()
            while not release.is_set():
                await anyio.sleep(0.001)
            return httpx.Response(200, json=RESULT)

        route.mock(side_effect=hold_async)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one_async)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(one_async)
            await anyio.wait_all_tasks_blocked()
            await client.aclose()
            release.set()
    else:
        # The turns, counting the calls that asked for one: the second waits for its turn
        # once it has asked (the first holds the only one).
        asked = Asking(1)
        client._shared.turns = asked
        first, second = threading.Thread(target=one), threading.Thread(target=one)
        first.start()
        assert arrived.wait(PATIENCE)
        second.start()
        wait_until(lambda: asked.count == 2, "the second call waits for its turn")
        client.close()
        release.set()
        first.join(PATIENCE)
        second.join(PATIENCE)
    # The call in flight gets its answer; the one waiting is refused, unsent.
    assert sorted(outcomes) == ["Hallo", "POST /translate was not sent: client closed"]
    assert route.call_count == 1
    assert client._shared.owned.is_closed  # by the call in flight, the last out


class Asking(threading.Semaphore):
    """A Client's turns (a semaphore), counting the calls that asked for one."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.count = 0

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        self.count += 1
        return super().acquire(blocking, timeout)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_closing_from_another_threads_loop_refuses_the_waiting_calls_in_their_own_loop(
    backend: str,
) -> None:
    # With an http_client passed in, aclose() may run in any event loop. The call waiting for
    # a turn in the loop that uses the client is woken there and refused; the call in flight
    # gets its answer.
    release = threading.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        # Holds the one turn until this thread has closed the client.
        assert await anyio.to_thread.run_sync(release.wait, PATIENCE)
        return httpx.Response(200, json=RESULT)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http, max_in_flight=1)
    queued = threading.Event()
    outcomes: list[str] = []

    async def use_the_client() -> None:
        async def one() -> None:
            try:
                outcomes.append((await client.translate("Hi", **LANGS)).translated_text)
            except lingodoc.LingodocError as exc:
                outcomes.append(str(exc))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one)  # in flight
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(one)  # waits for its turn
            await anyio.wait_all_tasks_blocked()
            queued.set()

    loop_thread = threading.Thread(
        target=anyio.run, args=(use_the_client,), kwargs={"backend": backend}, daemon=True
    )
    loop_thread.start()
    assert queued.wait(PATIENCE)
    anyio.run(client.aclose)  # in an event loop of this thread's own
    release.set()
    loop_thread.join(PATIENCE)
    assert not loop_thread.is_alive()
    assert sorted(outcomes) == ["Hallo", "POST /translate was not sent: client closed"]
    assert not http.is_closed  # the caller's


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True])
def test_max_in_flight_must_be_a_positive_int_or_none(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], bad: object
) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="max_in_flight must be an int, 1 or"):
        client_class(API_KEY, base_url=BASE_URL, max_in_flight=bad)  # type: ignore[arg-type]


def test_a_default_aiohttp_client_lets_its_pool_of_100_be_used() -> None:
    client = lingodoc.AsyncClient(
        API_KEY, base_url=BASE_URL, http_client=lingodoc.DefaultAioHttpClient()
    )
    assert client._shared.max_in_flight == 100
    assert lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)._shared.max_in_flight == 16
