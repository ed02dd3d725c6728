"""The limit on calls in flight: the adaptive algorithm, and the wait for a turn.

The algorithm (``_limiter.Limiter``) is fed round trips as numbers, from simulated servers:
no clock, no sockets. The waiting is tested on the shared state of both flavours (threads
for ``Client``, tasks on asyncio and trio for ``AsyncClient``) and through the clients.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import statistics
import threading
import time
from collections import deque
from typing import Any

import anyio
import httpx
import pytest
import respx

import lingodoc
from lingodoc import _base_client, _limiter
from lingodoc._base_client import _Shared, _ThreadShared, _Ticket
from lingodoc._limiter import Limiter
from lingodoc.testing import FakeClock
from tests.conftest import API_KEY, BASE_URL, call, close, envelope

RESULT = envelope({"translated_text": "Hallo", "source_language": "en", "target_language": "de"})


# The algorithm.


def run(limiter: Limiter, rtt_of: Any, samples: int) -> list[int]:
    """Feed ``samples`` round trips, each ``rtt_of(limit)`` with the limit in flight."""
    seen = []
    for _ in range(samples):
        limit = limiter.limit
        limiter.sample(rtt_of(limit), limit)
        seen.append(limiter.limit)
    return seen


def cpu_bound(in_flight: int) -> float:
    """A server on this machine: the client's CPU serves one attempt at a time (1 ms each)."""
    return 0.001 * max(in_flight, 1) + 0.0002


def distant(in_flight: int) -> float:
    """A server 20 ms away: round trips stay at 20 ms until the CPU (1 ms a call) is full."""
    return max(0.020, 0.001 * in_flight)


def test_a_fixed_limit_never_moves() -> None:
    limiter = Limiter(100, fixed=7)
    assert run(limiter, cpu_bound, 500)[-1] == 7
    assert not limiter.adaptive


def test_the_adaptive_limit_starts_small_and_within_the_pool() -> None:
    assert Limiter(100).limit == _limiter.INITIAL_LIMIT == 16
    assert Limiter(2).limit == 2
    assert Limiter(0).limit == 1
    assert Limiter(0).ceiling == 1


def test_on_a_cpu_bound_server_the_limit_stays_small() -> None:
    limiter = Limiter(100)
    limits = run(limiter, cpu_bound, 5000)
    assert min(limits[1000:]) >= 1
    assert max(limits[1000:]) <= 6


def test_a_limit_grown_on_a_distant_server_comes_down_when_the_cpu_becomes_the_bottleneck() -> None:
    limiter = Limiter(100)
    assert statistics.median(run(limiter, distant, 3000)[-500:]) >= 16
    limits = run(limiter, cpu_bound, 5000)
    assert max(limits[-1000:]) <= 6


def test_on_a_distant_server_the_limit_grows_to_what_the_round_trip_holds() -> None:
    limiter = Limiter(100)
    limits = run(limiter, distant, 5000)
    # 20 in flight fill the CPU (20 ms / 1 ms): not throttled far below, nor far above
    # (but for the windows that measure the round trip afresh, at a quarter of the limit).
    assert statistics.median(limits[-1000:]) >= 16
    assert max(limits[-1000:]) <= 30
    assert sum(limit < 16 for limit in limits[-1000:]) < 50


def knee_with_quick_calls() -> Any:
    """A server 20 ms away, with a client whose every call costs more past 20 in flight.

    httpcore's pool scans its connections each time it hands out a request and takes one
    back, so past some point every connection more adds work to every call: the round
    trip climbs steeply. Now and then a call still meets no queue (every 97th here), and
    its window's shortest round trip then says that nothing queues.
    """
    count = itertools.count()

    def rtt(in_flight: int) -> float:
        if next(count) % 97 == 0:
            return 0.020
        return 0.020 * max(1.0, in_flight / 20) ** 2

    return rtt


def test_once_it_has_come_down_the_limit_grows_by_one_a_window_not_by_half() -> None:
    limiter = Limiter(100)
    limits = run(limiter, knee_with_quick_calls(), 6000)
    # It grew by half a window (16, 24), went past the knee and came down; from then on a
    # window with a quick call adds one, instead of jumping half past the knee each time
    # (to 31-32, and the client's every call dearer while it comes back down).
    assert max(limits[:200]) == 24
    assert statistics.median(limits[-3000:]) >= 20
    assert max(limits[-3000:]) <= 23


def test_before_it_has_ever_come_down_the_limit_grows_by_half_a_window() -> None:
    limiter = Limiter(100)
    limits = run(limiter, lambda n: 0.100, 16 + 24 + 36)  # 100 ms away: never queued
    assert sorted(set(limits)) == [16, 24, 36, 54]


def test_a_first_burst_to_a_distant_server_is_not_held_back_by_a_probe() -> None:
    limiter = Limiter(100)
    limits = run(limiter, lambda n: 0.100, 64)  # 100 ms away: the first windows of a burst
    assert min(limits) >= _limiter.INITIAL_LIMIT
    assert limits[-1] > _limiter.INITIAL_LIMIT


def test_a_first_window_on_this_machine_is_followed_by_a_probe() -> None:
    limiter = Limiter(100)
    limits = run(limiter, cpu_bound, _limiter.INITIAL_LIMIT)
    assert limits[-1] == _limiter.INITIAL_LIMIT // 4


def test_a_large_first_burst_is_let_in_one_call_at_a_time() -> None:
    limiter = Limiter(100)
    limiter.first_burst(_limiter.LARGE_BURST)  # a burst that fits: not held back
    assert limiter.limit == _limiter.INITIAL_LIMIT
    limiter.first_burst(_limiter.LARGE_BURST + 1)
    assert limiter.limit == 1
    # A fixed limit, and a pool of one, are left as they are.
    fixed = Limiter(100, fixed=50)
    fixed.first_burst(10_000)
    assert fixed.limit == 50
    single = Limiter(1)
    single.first_burst(10_000)
    assert single.limit == 1


def test_a_large_first_burst_to_a_distant_server_is_let_in_at_its_second_answer() -> None:
    limiter = Limiter(100)
    limiter.first_burst(10_000)
    assert run(limiter, distant, 2) == [1, _limiter.INITIAL_LIMIT]  # two of 20 ms: distant
    assert not limiter.opening  # known now: a burst is no longer counted
    limits = run(limiter, distant, 200)
    assert min(limits) == _limiter.INITIAL_LIMIT  # and no probe after the first window
    assert limits[-1] > _limiter.INITIAL_LIMIT
    small = Limiter(8)  # never past the pool
    small.first_burst(10_000)
    assert run(small, distant, 2) == [1, 8]


def test_a_slow_first_answer_alone_does_not_make_a_server_distant() -> None:
    # The first call opens the connection (over TLS, a few round trips): 30 ms from a
    # server 5 ms away. The second, on the same connection, tells.
    limiter = Limiter(100)
    limiter.first_burst(10_000)
    answers = iter([0.030, 0.005])
    limits = run(limiter, lambda n: next(answers, 0.005), _limiter.MIN_WINDOW - 1)
    assert set(limits) == {1}  # still the first window, one call at a time
    assert limiter.opening


def test_a_large_first_burst_on_this_machine_measures_its_first_window_one_at_a_time() -> None:
    limiter = Limiter(100)
    limiter.first_burst(10_000)
    window = _limiter.MIN_WINDOW
    limits = run(limiter, cpu_bound, window + 2 * window + 3 * window)
    # The first window at 1 is the probe: the limit grows from there, with no probe after
    # it, and opens no more connections than it needs (each stays in httpcore's scans).
    assert limits[: window - 1] == [1] * (window - 1)
    assert limits[window - 1] == 2
    assert min(limits[window - 1 :]) == 2
    assert limiter.base == pytest.approx(cpu_bound(1))
    # 1 ms of CPU per call: two in flight already queue one, and the limit stays there.
    assert max(limits) == 2


def test_a_large_first_burst_to_a_nearby_server_doubles_its_limit_until_calls_queue() -> None:
    limiter = Limiter(100)
    limiter.first_burst(10_000)

    def five_ms_away(in_flight: int) -> float:  # 1 ms of the client's CPU a call
        return max(0.005, 0.001 * in_flight)

    limits = run(limiter, five_ms_away, 8 + 8 + 8 + 8 + 500)
    # From 1 it doubles each window (by half, it took 4 windows more to reach 16), to 8,
    # past where the round trip starts to grow (5 in flight), and comes back down.
    assert [limits[n] for n in (0, 7, 15, 23)] == [1, 2, 4, 8]
    assert statistics.median(limits[-200:]) in (5, 6, 7)


def test_doubling_from_a_large_first_burst_stops_at_the_initial_limit() -> None:
    limiter = Limiter(100)
    limiter.first_burst(10_000)
    # 4 in flight queue a little (grown by one, to 5), the others not at all: 5 doubles
    # to 10, and 10 to 16, not 20; past 16 it grows by half, as any limit in slow start.
    limits = run(limiter, lambda n: 0.0123 if n == 4 else 0.010, 8 * 5 + 10 + 16 + 24)
    assert sorted(set(limits)) == [1, 2, 4, 5, 10, 16, 24, 36]


def test_bursts_are_counted_only_until_the_first_window_is_over() -> None:
    limiter = Limiter(100)
    assert limiter.opening
    run(limiter, cpu_bound, _limiter.INITIAL_LIMIT)
    assert not limiter.opening
    assert not Limiter(100, fixed=7).opening


def test_the_pool_size_bounds_the_limit() -> None:
    limiter = Limiter(8)
    assert max(run(limiter, distant, 2000)) == 8


def test_a_limit_not_filled_does_not_grow() -> None:
    limiter = Limiter(100)
    for _ in range(2000):
        limiter.sample(0.020, 1)  # one call at a time: nothing says more would help
    assert limiter.limit <= _limiter.INITIAL_LIMIT  # never filled: never grown


def test_a_server_that_became_slower_is_not_taken_for_queueing() -> None:
    limiter = Limiter(100)
    run(limiter, distant, 3000)
    before = limiter.limit
    # The same server, now 100 ms away: the old 20 ms minimum would read as a long queue.
    limits = run(limiter, lambda n: max(0.100, 0.001 * n), 5000)
    assert before >= 16
    assert statistics.median(limits[-1000:]) >= before


def test_round_trips_a_clock_cannot_tell_apart_change_nothing() -> None:
    limiter = Limiter(100)
    assert set(run(limiter, lambda n: 0.0, 500)) == {_limiter.INITIAL_LIMIT}


# Waiting for a turn: the shared state, in each flavour.


def shared(kind: type[_Shared[Any]], limit: int) -> _Shared[Any]:
    http = httpx.AsyncClient() if kind is _Shared else httpx.Client()
    return kind(http, new_http=None, max_in_flight=limit)


async def test_tasks_past_the_limit_wait_and_get_their_turn_first_come_first_served() -> None:
    state = shared(_Shared, 1)
    assert await state.async_enter()
    order: list[int] = []

    async def waiter(number: int) -> None:
        assert await state.async_enter()
        order.append(number)
        state.leave(0.001)

    async with anyio.create_task_group() as tasks:
        for number in range(5):
            tasks.start_soon(waiter, number)
            await anyio.wait_all_tasks_blocked()
        assert order == []
        assert len(state._waiters) == 5
        state.leave(0.001)
    assert order == [0, 1, 2, 3, 4]
    assert state._slots == 0
    assert state._in_flight == 0


async def test_a_cancelled_task_leaves_the_queue_and_a_woken_one_passes_its_turn_on() -> None:
    state = shared(_Shared, 1)
    assert await state.async_enter()
    entered: list[str] = []

    async def waiter(name: str) -> None:
        assert await state.async_enter()
        entered.append(name)

    async with anyio.create_task_group() as tasks:
        scopes: dict[str, anyio.CancelScope] = {}
        for name in ("a", "b", "c"):

            async def scoped(name: str = name) -> None:
                with anyio.CancelScope() as scope:
                    scopes[name] = scope
                    await waiter(name)

            tasks.start_soon(scoped)
            await anyio.wait_all_tasks_blocked()
        scopes["a"].cancel()  # still queued: leaves the queue
        await anyio.wait_all_tasks_blocked()
        assert len(state._waiters) == 2
        # b is cancelled, and given the slot before it runs: it passes the slot on to c.
        scopes["b"].cancel()
        state.leave(None)
        await anyio.wait_all_tasks_blocked()
        assert entered == ["c"]
        state.leave(None)
    assert state._slots == 0
    assert state._waiters == type(state._waiters)()


async def test_closing_wakes_every_waiting_task_to_be_refused() -> None:
    state = shared(_Shared, 1)
    assert await state.async_enter()
    answers: list[bool] = []

    async def waiter() -> None:
        answers.append(await state.async_enter())

    async with anyio.create_task_group() as tasks:
        for _ in range(3):
            tasks.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
        state.close()
    assert answers == [False, False, False]
    assert state.leave(None) is False  # the caller's own pool: not the SDK's to close


def start_waiting(state: _Shared[Any], results: list[Any], name: object) -> threading.Thread:
    """A thread that enters ``state`` (waiting for its turn), records it and leaves."""

    def enter() -> None:
        try:
            entered = state.enter()
        except KeyboardInterrupt:
            results.append((name, "interrupted"))
            return
        results.append((name, entered))
        if entered:
            state.leave(0.001)

    thread = threading.Thread(target=enter)
    thread.start()
    return thread


def wait_for_queue(state: _Shared[Any], length: int) -> None:
    """Until ``length`` threads wait (each thread queues at once, or enters)."""
    for _ in range(10_000_000):
        with state._lock:
            if len(state._waiters) >= length:
                return
        threading.Event().wait(0.0001)
    raise AssertionError("the threads never queued")


def test_threads_past_the_limit_wait_and_get_their_turn_first_come_first_served() -> None:
    state = shared(_ThreadShared, 1)
    assert state.enter()
    results: list[Any] = []
    threads = []
    for number in range(4):
        threads.append(start_waiting(state, results, number))
        wait_for_queue(state, number + 1)
    assert results == []
    state.leave(0.001)
    for thread in threads:
        thread.join(10)
    assert results == [(0, True), (1, True), (2, True), (3, True)]
    assert state._slots == 0
    assert state._in_flight == 0


def test_closing_wakes_every_waiting_thread_to_be_refused() -> None:
    state = shared(_ThreadShared, 1)
    assert state.enter()
    results: list[Any] = []
    threads = []
    for number in range(3):
        threads.append(start_waiting(state, results, number))
        wait_for_queue(state, number + 1)
    state.close()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [(0, False), (1, False), (2, False)]


def test_an_interrupted_thread_leaves_the_queue_or_passes_its_turn_on() -> None:
    state = shared(_ThreadShared, 1)
    assert state.enter()

    class Interrupted:
        """An event whose wait is ended by Ctrl-C, after the slot may have been given."""

        def __init__(self) -> None:
            self.set_called = False

        def set(self) -> None:
            self.set_called = True

        def wait(self) -> None:
            raise KeyboardInterrupt

    original = threading.Event
    try:
        threading.Event = Interrupted  # type: ignore[misc]
        with pytest.raises(KeyboardInterrupt):
            state.enter()
    finally:
        threading.Event = original  # type: ignore[misc]
    assert len(state._waiters) == 0  # left the queue
    assert state._slots == 1  # only the first call's
    state.leave(None)
    assert state._slots == 0


# Through the clients.


async def translate_at_once(client: lingodoc.AsyncClient, calls: int) -> list[Any]:
    """``calls`` translations started together in one task group (as a ``gather``)."""
    results: list[Any] = []

    async def one() -> None:
        results.append(await client.translate("Hi", source_language="en", target_language="de"))

    async with anyio.create_task_group() as tasks:
        for _ in range(calls):
            tasks.start_soon(one)
    return results


async def test_a_gather_far_past_the_limit_waits_its_turn_instead_of_failing(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> None:
    route = api.post("/translate").mock(return_value=httpx.Response(200, json=RESULT))
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=2)
    try:
        if isinstance(client, lingodoc.AsyncClient):
            results = await translate_at_once(client, 50)
        else:
            results = [
                client.translate("Hi", source_language="en", target_language="de") for _ in range(5)
            ]
        assert all(result.translated_text == "Hallo" for result in results)
        assert route.call_count == len(results)
        assert client._shared._slots == 0
        assert client._shared._in_flight == 0
    finally:
        await close(client)


async def test_the_wait_for_a_turn_is_not_part_of_the_attempts_timeout(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    api: respx.MockRouter,
    clock: FakeClock,
) -> None:
    # Two calls, one at a time: the first holds the only turn for 100 s of the fake clock
    # (past the 30 s timeout); the second's attempt starts, and its deadline with it, after.
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=1)
    starts: list[float] = []
    attempt = client._attempt

    def spy(*args: Any) -> Any:
        starts.append(clock.monotonic())
        return attempt(*args)

    client._attempt = spy  # type: ignore[method-assign]
    holder: dict[str, Any] = {}
    if isinstance(client, lingodoc.AsyncClient):
        release = anyio.Event()

        async def slow(request: httpx.Request) -> httpx.Response:
            if not starts[1:]:
                holder.setdefault("first", True)
                await release.wait()
                clock.advance(100)
            return httpx.Response(200, json=RESULT)

        api.post("/translate").mock(side_effect=slow)

        async def one() -> None:
            await client.translate("Hi", source_language="en", target_language="de")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(one)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(one)
            await anyio.wait_all_tasks_blocked()
            assert len(client._shared._waiters) == 1
            assert starts == [0.0]
            release.set()
    else:
        gate = threading.Event()

        def slow_sync(request: httpx.Request) -> httpx.Response:
            if len(starts) == 1 and "first" not in holder:
                holder["first"] = True
                gate.wait(10)
                clock.advance(100)
            return httpx.Response(200, json=RESULT)

        api.post("/translate").mock(side_effect=slow_sync)
        first = threading.Thread(
            target=client.translate,
            args=("Hi",),
            kwargs={"source_language": "en", "target_language": "de"},
        )
        first.start()
        for _ in range(100_000):
            if holder:
                break
            threading.Event().wait(0.0001)
        second = threading.Thread(
            target=client.translate,
            args=("Hi",),
            kwargs={"source_language": "en", "target_language": "de"},
        )
        second.start()
        wait_for_queue(client._shared, 1)
        assert starts == [0.0]
        gate.set()
        first.join(10)
        second.join(10)
    assert starts == [0.0, 100.0]
    assert api.calls.call_count == 2
    await close(client)


async def test_a_call_waiting_for_its_turn_when_the_client_closes_is_refused(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=1)
    shared = client._shared
    assert shared.enter() if client_class is lingodoc.Client else await shared.async_enter()
    errors: list[BaseException] = []
    route = api.post("/translate").mock(return_value=httpx.Response(200, json=RESULT))

    async def waiting_call() -> None:
        try:
            await call(client, "translate", "Hi", source_language="en", target_language="de")
        except lingodoc.LingodocError as exc:
            errors.append(exc)

    if isinstance(client, lingodoc.AsyncClient):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(waiting_call)
            await anyio.wait_all_tasks_blocked()
            await client.aclose()
    else:

        def run_call() -> None:
            try:
                client.translate("Hi", source_language="en", target_language="de")
            except lingodoc.LingodocError as exc:
                errors.append(exc)

        thread = threading.Thread(target=run_call)
        thread.start()
        wait_for_queue(shared, 1)
        client.close()
        thread.join(10)
    assert [str(error) for error in errors] == ["POST /translate was not sent: client closed"]
    assert isinstance(errors[0], lingodoc.APIConnectionError)
    assert route.call_count == 0
    assert shared.leave(None) is True  # the turn taken above: the last out closes the pool


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True])
def test_max_in_flight_must_be_a_positive_int_or_none(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], bad: object
) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="max_in_flight must be an int >= 1"):
        client_class(API_KEY, base_url=BASE_URL, max_in_flight=bad)  # type: ignore[arg-type]


def test_the_adaptive_limit_is_bounded_by_the_pool_of_an_http_client_passed_in(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
) -> None:
    http_class = httpx.AsyncClient if client_class is lingodoc.AsyncClient else httpx.Client
    http = http_class(limits=httpx.Limits(max_connections=3))
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)  # type: ignore[arg-type]
    assert client._shared.limiter.ceiling == 3
    own = client_class(API_KEY, base_url=BASE_URL)
    assert own._shared.limiter.ceiling == 100
    # A copy shares the limit, as it shares the pool.
    assert own.with_options(timeout=5)._shared.limiter is own._shared.limiter


async def test_a_fixed_limit_above_the_sdks_own_connections_is_held_to_them(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> None:
    # The 10 calls past the SDK's 100 connections wait for a turn (the first connection
    # of all to come free), not inside one of its pools of 4, for one of its connections.
    calls, answering, peak = 110, [0], [0]
    is_async = client_class is lingodoc.AsyncClient
    async_release, thread_release = anyio.Event(), threading.Event()

    def arrived() -> None:
        answering[0] += 1
        peak[0] = max(peak[0], answering[0])

    async def answer_async(request: httpx.Request) -> httpx.Response:
        arrived()
        await async_release.wait()
        answering[0] -= 1
        return httpx.Response(200, json=RESULT)

    def answer(request: httpx.Request) -> httpx.Response:
        with lock:
            arrived()
        thread_release.wait(30)
        with lock:
            answering[0] -= 1
        return httpx.Response(200, json=RESULT)

    lock = threading.Lock()
    api.post("/translate").mock(side_effect=answer_async if is_async else answer)
    client = client_class(API_KEY, base_url=BASE_URL, max_in_flight=500)
    results: list[Any] = []

    def waiting() -> int:
        with client._shared._lock:
            return len(client._shared._waiters)

    try:
        assert client._shared.limiter.limit == 100
        if isinstance(client, lingodoc.AsyncClient):

            async def one() -> None:
                results.append(
                    await client.translate("Hi", source_language="en", target_language="de")
                )

            async with anyio.create_task_group() as tasks:
                for _ in range(calls):
                    tasks.start_soon(one)
                await anyio.wait_all_tasks_blocked()
                assert (answering[0], waiting()) == (100, 10)
                async_release.set()
        else:
            sync_client = client

            def one_thread() -> None:
                results.append(
                    sync_client.translate("Hi", source_language="en", target_language="de")
                )

            threads = [threading.Thread(target=one_thread) for _ in range(calls)]
            for thread in threads:
                thread.start()
            for _ in range(10_000_000):  # until every thread answers or waits (bounded)
                with lock:
                    if answering[0] + waiting() >= calls:
                        break
                threading.Event().wait(0.0001)
            assert (answering[0], waiting()) == (100, 10)
            thread_release.set()
            for thread in threads:
                thread.join(30)
        assert [result.translated_text for result in results] == ["Hallo"] * calls
        assert peak[0] == 100
    finally:
        thread_release.set()
        await close(client)
    # An http_client of your own keeps the limit given: it may multiplex (HTTP/2).
    http_class = httpx.AsyncClient if is_async else httpx.Client
    own = http_class(limits=httpx.Limits(max_connections=3))
    client = client_class(API_KEY, base_url=BASE_URL, http_client=own, max_in_flight=10)  # type: ignore[arg-type]
    assert client._shared.limiter.limit == 10
    await close(client)
    if isinstance(own, httpx.AsyncClient):
        await own.aclose()
    else:
        own.close()


async def test_translate_manys_batches_take_no_turn_so_a_run_of_them_keeps_no_call_waiting() -> (
    None
):
    # Its max_concurrency (the caller's choice) bounds its batches: they enter at once and
    # hold no slot, so a call still gets the client's turns while batches come and go.
    for state in (shared(_Shared, 1), shared(_ThreadShared, 1)):
        for _ in range(3):
            assert state._take(queue=False)
        assert (state._slots, state._in_flight) == (0, 3)
        assert state._take(queue=True)  # a call: the one turn is free
        assert state._take(queue=True) is None  # the next waits
        for _ in range(3):
            state.leave(None, slot=False)
        assert (state._slots, state._in_flight) == (1, 1)
        state.leave(None)
        assert (state._slots, state._in_flight) == (0, 0)


@pytest.mark.asyncio_only  # asyncio's race: a task cancelled after it was woken
async def test_a_task_woken_by_close_and_then_cancelled_raises_its_cancellation() -> None:
    state = shared(_Shared, 1)
    assert await state.async_enter()
    waiter = asyncio.ensure_future(state.async_enter())
    await asyncio.sleep(0)  # it waits for a turn
    state.close()  # wakes it, without a slot
    waiter.cancel()  # before it runs again
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert state._waiters == deque()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_closing_from_another_threads_loop_refuses_the_waiting_calls_in_their_own_loop(
    backend: str,
) -> None:
    # With an http_client passed in, aclose() may run in any event loop. The calls waiting
    # for a turn in the loop that uses the client are woken there: setting their events
    # from this thread left asyncio's asleep and made trio's raise out of aclose().
    http = httpx.AsyncClient(transport=httpx.MockTransport(lambda _: httpx.Response(200)))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http, max_in_flight=1)
    queued, errors = threading.Event(), []

    async def use_the_client() -> None:
        assert await client._shared.async_enter()  # the one turn: the next call waits

        async def waiting_call() -> None:
            try:
                await client.translate("Hi", source_language="en", target_language="de")
            except lingodoc.LingodocError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(waiting_call)
            await anyio.wait_all_tasks_blocked()
            queued.set()

    loop_thread = threading.Thread(
        target=anyio.run, args=(use_the_client,), kwargs={"backend": backend}, daemon=True
    )
    loop_thread.start()
    assert queued.wait(10)
    asyncio.run(client.aclose())
    loop_thread.join(10)
    assert not loop_thread.is_alive()
    assert [str(error) for error in errors] == ["POST /translate was not sent: client closed"]


async def test_a_task_that_queues_as_another_thread_closes_the_client_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The close lands between the task's look at the queue and its place in it (here at
    # the one call in between): nothing would ever wake it.
    state = shared(_Shared, 1)
    assert await state.async_enter()
    find_loop = _base_client.running_loop

    def closed_meanwhile() -> object | None:
        state.close()
        return find_loop()

    monkeypatch.setattr(_base_client, "running_loop", closed_meanwhile)
    with anyio.fail_after(10):
        assert await state.async_enter() is False
    assert state._waiters == deque()
    assert (state._slots, state._in_flight) == (1, 1)  # only the turn taken above


def test_a_waiter_whose_loop_is_closed_is_not_woken_and_close_goes_on() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    woken: list[bool] = []
    ticket = _Ticket(type("Event", (), {"set": lambda self: woken.append(True)})(), loop)
    state = shared(_Shared, 1)
    state._waiters.append(ticket)
    assert state.close() is False  # nothing in flight, and the pool is not the SDK's
    assert woken == []
    assert state._waiters == deque()


def test_a_thread_interrupted_as_it_is_admitted_gives_its_slot_back() -> None:
    state = shared(_ThreadShared, 1)
    assert state.enter()
    admit = state._admit

    def interrupted(ticket: Any) -> bool:
        admit(ticket)  # entered...
        raise KeyboardInterrupt  # ...and Ctrl-C before the caller knew

    state._admit = interrupted  # type: ignore[method-assign]
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            state.enter()
        except KeyboardInterrupt as exc:
            outcome.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    while not state._waiters:
        time.sleep(0.001)
    state.leave(None)  # its turn
    thread.join(5)
    assert len(outcome) == 1
    assert (state._slots, state._in_flight) == (0, 0)
    state._admit = admit  # type: ignore[method-assign]
    assert state.enter()  # the turn was not lost


class AsyncCounter:
    """A server that answers after a few turns of the event loop, counting calls in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.seen: list[int] = []  # calls in flight as each arrived

    async def answer(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.seen.append(self.in_flight)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        self.in_flight -= 1
        return httpx.Response(200, json=RESULT)


@pytest.mark.parametrize(
    ("calls", "first_limit"),
    [(_limiter.LARGE_BURST + 1, 1), (20, _limiter.INITIAL_LIMIT)],
)
async def test_an_async_clients_first_gather_is_counted_and_a_large_one_starts_lower(
    calls: int, first_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However slow this machine's first answers, the server is not taken for distant.
    monkeypatch.setattr(_limiter, "DISTANT_RTT", math.inf)
    # Every task of a gather reaches the client in the same turn of the event loop: the
    # first waits one turn, so they are counted before any is let in. A large burst is then
    # let in one call at a time, not 16 (on loopback each connection it opened would stay
    # in httpcore's scans).
    counter = AsyncCounter()
    http = httpx.AsyncClient(transport=httpx.MockTransport(counter.answer))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http)
    async with client:
        results = await translate_at_once(client, calls)
    assert len(results) == calls
    assert all(result.translated_text == "Hallo" for result in results)
    # Within the first window (as many answers as the limit, at least 8), no more than
    # the first limit are in flight, and the burst fills it.
    window = max(_limiter.MIN_WINDOW, first_limit)
    assert max(counter.seen[:window]) == first_limit
    assert not client._shared.limiter.opening  # the first window is over: no more counting
    assert (client._shared._slots, client._shared._in_flight) == (0, 0)


async def test_a_large_first_burst_to_a_distant_server_lets_in_the_initial_limit_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every answer counts as distant here: after the two that tell, the calls waiting are
    # let in up to the initial limit at once, not one at a time.
    monkeypatch.setattr(_limiter, "DISTANT_RTT", 0.0)
    counter = AsyncCounter()
    http = httpx.AsyncClient(transport=httpx.MockTransport(counter.answer))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http)
    calls = _limiter.LARGE_BURST + 1
    async with client:
        assert len(await translate_at_once(client, calls)) == calls
    assert len(counter.seen) == calls
    assert counter.seen[:2] == [1, 1]
    first_window = counter.seen[2 : 2 + _limiter.INITIAL_LIMIT]
    assert first_window == list(range(1, _limiter.INITIAL_LIMIT + 1))  # before any answer


class Cancelled(BaseException):
    """A cancellation, as anyio's of any backend is to the code it interrupts."""


async def test_a_call_cancelled_while_its_burst_is_counted_gives_its_turn_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cancelled in the turn it waits while the others queue.
    state = _Shared(httpx.AsyncClient(), new_http=None)
    waiter = _Ticket(threading.Event())

    async def cancelled_turn() -> None:
        state._waiters.append(waiter)  # a call of the same burst, queued meanwhile
        raise Cancelled

    monkeypatch.setattr(anyio.lowlevel, "checkpoint", cancelled_turn)
    with pytest.raises(Cancelled):
        await state.async_enter()
    assert state.limiter.limit == _limiter.INITIAL_LIMIT  # restored, not left at 1
    assert waiter.granted  # the queue was let go: it has the turn given back
    assert (state._slots, state._in_flight) == (1, 0)  # the waiter's slot, not yet entered


async def test_a_call_cancelled_while_its_burst_is_counted_closes_the_pool_if_the_client_closed(
    api: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The usual shutdown: the client closed while the call holds its turn (so the last
    # attempt out must close the pool), then the call's task cancelled.
    api.post("/translate").mock(return_value=httpx.Response(200, json=RESULT))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, max_retries=0)
    state = client._shared
    checkpoint = anyio.lowlevel.checkpoint
    calls: list[bool] = []

    async def closed_then_cancelled() -> None:
        if calls:  # httpx's own checkpoints, closing the pool
            return await checkpoint()
        calls.append(state.close())  # in flight: the pool is left to the last out
        raise Cancelled

    monkeypatch.setattr(anyio.lowlevel, "checkpoint", closed_then_cancelled)
    with pytest.raises(Cancelled):
        await client.translate("Hi", source_language="en", target_language="de")
    assert calls == [False]
    assert state._http.is_closed
    assert (state._slots, state._in_flight) == (0, 0)
    assert state.limiter.limit == _limiter.INITIAL_LIMIT


def test_a_forked_child_learns_the_limit_afresh_even_if_forked_while_it_was_held() -> None:
    # A fork (from another thread) in the turn an AsyncClient counts a burst in: the
    # parent's stack holds the limit to restore, so the child must not inherit the 1.
    state = _Shared(httpx.AsyncClient(), new_http=None)
    state.limiter.limit = 1
    state._process = object()  # as the child sees the state it inherited
    state.in_this_process()
    assert (state.limiter.limit, state.limiter.opening) == (_limiter.INITIAL_LIMIT, True)
    fixed = _Shared(httpx.AsyncClient(), new_http=None, max_in_flight=7)
    fixed._process = object()
    fixed.in_this_process()
    assert (fixed.limiter.limit, fixed.limiter.adaptive) == (7, False)


async def test_only_an_answered_call_teaches_the_adaptive_limit(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> None:
    # A failure may come back fast (a refused connection, a proxy's 503, a 404): taken for
    # the unloaded round trip, it would make every later call look queued.
    route = api.post("/translate")
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    sampled: list[float] = []
    client._shared.limiter.sample = lambda rtt, in_flight: sampled.append(rtt)  # type: ignore[method-assign]
    try:
        route.mock(return_value=httpx.Response(404, json={"success": False, "error": {
            "code": "NOT_FOUND", "message": "no such thing"}}))  # fmt: skip
        with pytest.raises(lingodoc.APIError):
            await call(client, "translate", "Hi", source_language="en", target_language="de")
        route.mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(lingodoc.APIConnectionError):
            await call(client, "translate", "Hi", source_language="en", target_language="de")
        assert sampled == []
        route.mock(return_value=httpx.Response(200, json=RESULT))
        await call(client, "translate", "Hi", source_language="en", target_language="de")
        assert len(sampled) == 1
        assert sampled[0] >= 0.0
        assert (client._shared._slots, client._shared._in_flight) == (0, 0)
    finally:
        await close(client)
