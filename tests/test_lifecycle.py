"""Closing a client: its pool, its copies, calls in flight; an AsyncClient met by another loop.

First with respx (no sockets); then over real loopback connections to the emulator, with the
sockets counted by the operating system (``/proc/self/fd``: tests/reliability/sockets.py, Linux
only). There the calls in flight when a client is closed wait for answers that the emulator
holds back until the test has closed it (`Holding`), however slow the machine.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import gc
import pickle
import random
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import httpx
import pytest
import respx

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer, Reply
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, failure, pool_of
from tests.reliability.sockets import (
    LINUX_ONLY,
    assert_all_closed,
    client_connections,
    expected_for,
    text_for,
)
from tests.waiting import PATIENCE, async_wait_until, wait_until

STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}
OTHER_LOOP = "was first used in another event loop"


def closing_then(
    client: lingodoc.Client | lingodoc.AsyncClient, answer: httpx.Response, seen: list[Any]
) -> Callable[[httpx.Request], Any]:
    """A respx side effect that closes ``client`` while its request is in flight, then answers.

    ``seen`` gets the pool the request went through, and whether it was closed at that moment.
    """
    if isinstance(client, lingodoc.AsyncClient):

        async def async_effect(request: httpx.Request) -> httpx.Response:
            pool = pool_of(client)
            await client.aclose()
            seen.extend([pool, pool.is_closed])
            return answer

        return async_effect

    def effect(request: httpx.Request) -> httpx.Response:
        pool = pool_of(client)
        client.close()
        seen.extend([pool, pool.is_closed])
        return answer

    return effect


# A client in other processes.


def for_a_pool(client: Any) -> bytes:
    """Pickled as a process pool sends a call: a bound method in a partial."""
    call = functools.partial(client.translate, source_language="en", target_language="de")
    return pickle.dumps(call)


@pytest.mark.parametrize("copier", [for_a_pool, copy.deepcopy, copy.copy])
async def test_a_client_cannot_be_pickled_or_copied_and_says_what_to_do(
    client: lingodoc.Client, copier: Callable[[object], object]
) -> None:
    with pytest.raises(TypeError) as refused:
        copier(client)
    assert str(refused.value) == (
        f"a lingodoc.{type(client).__name__} cannot be pickled or copied: it holds this "
        "process's connections. Make one in each process (a pool's initializer), or a copy "
        "with with_options()"
    )


# Closing a client and its copies.


async def test_closed_client_refuses_to_send(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    await close(client)
    assert client.is_closed
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(client, "get_translation", "tr_1")
    assert not route.called


def test_sync_context_manager_closes_its_own_pools(api: respx.MockRouter) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    with lingodoc.Client(API_KEY, base_url=BASE_URL) as client:
        client.get_translation("tr_1")  # the main thread's own pool, then the shared one
        pools = [pool_of(client), client._shared.owned]
        assert [pool.is_closed for pool in pools] == [False, False]
    assert client.is_closed
    assert [pool.is_closed for pool in pools] == [True, True]


async def test_async_context_manager_closes_its_own_pool() -> None:
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        pool = pool_of(client)
        assert not pool.is_closed
    assert client.is_closed
    assert pool.is_closed


async def test_a_passed_in_http_client_is_never_closed(api: respx.MockRouter) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    with httpx.Client() as sync_http:
        with lingodoc.Client(API_KEY, base_url=BASE_URL, http_client=sync_http) as client:
            assert client.get_translation("tr_1").progress == 5
        assert client.is_closed
        assert not sync_http.is_closed
    async with httpx.AsyncClient() as async_http:
        async with lingodoc.AsyncClient(
            API_KEY, base_url=BASE_URL, http_client=async_http
        ) as aclient:
            assert (await aclient.get_translation("tr_1")).progress == 5
        assert not async_http.is_closed


async def test_sending_through_a_closed_passed_in_http_client_is_a_clear_error(
    api: respx.MockRouter,
) -> None:
    http = httpx.Client()
    http.close()
    client = lingodoc.Client(API_KEY, base_url=BASE_URL, http_client=http)
    with pytest.raises(lingodoc.LingodocError, match="http_client") as caught:
        client.get_translation("tr_1")
    assert not isinstance(caught.value, lingodoc.APIConnectionError)


async def test_closing_a_copy_leaves_the_original_open(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    copy = client.with_options(max_retries=0)
    await close(copy)
    assert copy.is_closed
    assert not client.is_closed
    assert (await call(client, "get_translation", "tr_1")).progress == 5


async def test_closing_the_original_closes_its_copies(client: lingodoc.Client) -> None:
    copy = client.with_options(max_retries=0)
    await close(client)
    assert copy.is_closed
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(copy, "get_translation", "tr_1")


async def test_a_copy_of_a_closed_client_stays_closed(client: lingodoc.Client) -> None:
    await close(client)
    assert client.with_options(timeout=5).is_closed
    copy = client.with_options(max_retries=1)
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(copy, "list_documents")


# Closing while calls are in flight.


async def test_a_call_in_flight_at_close_gets_its_answer_and_the_pool_closes_after_it(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    pool_closed_in_flight: list[bool] = []
    answer = httpx.Response(200, json=envelope(STATUS))
    route = api.get("/translations/tr_1").mock(
        side_effect=closing_then(client, answer, pool_closed_in_flight)
    )
    status = await call(client, "get_translation", "tr_1")
    assert status.progress == 5
    # Not closed under the request that was using it, and closed as soon as it ended.
    pool, closed_in_flight = pool_closed_in_flight
    assert closed_in_flight is False
    assert pool.is_closed
    assert route.call_count == 1
    with pytest.raises(lingodoc.LingodocError, match="has been closed") as refused:
        await call(client, "get_translation", "tr_1")
    assert type(refused.value) is lingodoc.LingodocError
    assert route.call_count == 1


async def test_a_pool_that_fails_to_close_after_the_last_call_does_not_take_its_answer(
    client: lingodoc.Client, api: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool: Any = client._shared.owned  # the shared one: a Client's, from another thread
    closes: list[str] = []

    def fail() -> None:
        closes.append("tried")
        raise OSError("close failed")

    async def fail_async() -> None:
        fail()

    is_async = isinstance(client, lingodoc.AsyncClient)
    monkeypatch.setattr(pool, "aclose" if is_async else "close", fail_async if is_async else fail)
    answer = httpx.Response(200, json=envelope(STATUS))
    api.get("/translations/tr_1").mock(side_effect=closing_then(client, answer, []))
    if is_async:
        status = await call(client, "get_translation", "tr_1")
    else:
        status = await anyio.to_thread.run_sync(client.get_translation, "tr_1")
    assert status.progress == 5  # the answer, not the pool's OSError
    assert closes == ["tried"]  # closed (tried) by the call, the last out


async def test_a_call_in_flight_at_close_is_not_retried_and_says_client_closed(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    pool_closed_in_flight: list[bool] = []
    answer = httpx.Response(503, json=failure("SERVICE_UNAVAILABLE"))
    route = api.get("/translations/tr_1").mock(
        side_effect=closing_then(client, answer, pool_closed_in_flight)
    )
    with pytest.raises(lingodoc.APIConnectionError, match="client closed") as caught:
        await call(client, "get_translation", "tr_1")
    assert str(caught.value) == (
        "GET /translations/tr_1 was not retried: client closed "
        "(the last attempt failed with ServerError)"
    )
    assert isinstance(caught.value.__cause__, lingodoc.ServerError)
    assert route.call_count == 1  # a 503 is retried, but not once the client is closed
    pool, closed_in_flight = pool_closed_in_flight
    assert closed_in_flight is False
    assert pool.is_closed


async def test_a_call_closed_in_flight_does_not_wait_for_a_retry_it_will_not_make(
    client: lingodoc.Client, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    answer = httpx.Response(503, json=failure("SERVICE_UNAVAILABLE"))
    api.get("/translations/tr_1").mock(side_effect=closing_then(client, answer, []))
    with (
        fake_clock() as clock,
        caplog.at_level("INFO", logger="lingodoc"),
        pytest.raises(lingodoc.APIConnectionError, match="not retried: client closed"),
    ):
        await call(client, "get_translation", "tr_1")
    assert clock.sleeps == []  # no backoff before a retry that would be refused
    assert "retrying" not in caplog.text  # nor a log line announcing it


async def test_a_wait_closed_in_flight_ends_without_another_poll_interval(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    answer = httpx.Response(503, json=failure("SERVICE_UNAVAILABLE"))
    route = api.get("/translations/tr_1").mock(side_effect=closing_then(client, answer, []))
    with (
        fake_clock() as clock,
        pytest.raises(lingodoc.APIConnectionError, match="client closed"),
    ):
        await call(client, "wait_for_translation", "tr_1", timeout=600, poll_interval=30)
    assert clock.sleeps == []  # a closed client's failure is not ridden out until the deadline
    assert route.call_count == 1


class ClosingClock(FakeClock):
    """A fake clock that closes ``client`` in the first wait before a retry."""

    def __init__(self, client: lingodoc.Client | lingodoc.AsyncClient) -> None:
        super().__init__()
        self.client = client

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if isinstance(self.client, lingodoc.Client):
            self.client.close()

    async def async_sleep(self, seconds: float) -> None:
        if isinstance(self.client, lingodoc.AsyncClient):
            await self.client.aclose()
        await super().async_sleep(seconds)


async def test_a_client_closed_during_the_wait_before_a_retry_opens_no_new_connection(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    pools: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        pools.append(pool_of(client))
        return httpx.Response(502, json=failure("BAD_GATEWAY"))

    route = api.post("/translate").mock(side_effect=answer)
    with (
        fake_clock(ClosingClock(client)) as clock,
        pytest.raises(lingodoc.APIConnectionError, match="client closed") as caught,
    ):
        await call(client, "translate", "Hi", source_language="en", target_language="de")
    assert len(clock.sleeps) == 1
    assert route.call_count == 1
    assert isinstance(caught.value.__cause__, lingodoc.ServerError)
    assert pools[0].is_closed


async def test_closing_a_copy_in_flight_stops_its_retries_and_leaves_the_pool_open(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    copy = client.with_options(max_retries=3)
    pool_closed_in_flight: list[bool] = []
    answer = httpx.Response(503, json=failure("SERVICE_UNAVAILABLE"))
    route = api.get("/translations/tr_1").mock(
        side_effect=[
            closing_then(copy, answer, pool_closed_in_flight),
            httpx.Response(200, json=envelope(STATUS)),
        ]
    )
    with pytest.raises(lingodoc.APIConnectionError, match="not retried: client closed"):
        await call(copy, "get_translation", "tr_1")
    assert route.call_count == 1
    # The copy is closed, not the pool it shares: the original goes on sending.
    assert not client.is_closed
    pool, closed_in_flight = pool_closed_in_flight
    assert (closed_in_flight, pool.is_closed) == (False, False)
    assert (await call(client, "get_translation", "tr_1")).progress == 5
    assert route.call_count == 2


# An AsyncClient and the event loops it meets.


def test_an_async_client_used_in_a_second_asyncio_run_says_so_every_time(
    api: respx.MockRouter,
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)  # made outside any loop: fine
    assert asyncio.run(client.get_translation("tr_1")).progress == 5
    for _ in range(3):  # every time, not every other time
        with pytest.raises(lingodoc.LingodocError) as caught:
            asyncio.run(client.get_translation("tr_1"))
        assert type(caught.value) is lingodoc.LingodocError
        assert str(caught.value) == (
            "this AsyncClient was first used in another event loop; create the client inside "
            "the loop that uses it (e.g. inside the coroutine passed to asyncio.run), or "
            "aclose() it there"
        )
    # Its copies, translate_many and `async with` alike; nothing was sent.
    with pytest.raises(lingodoc.LingodocError, match=OTHER_LOOP):
        asyncio.run(client.with_options(timeout=5).get_translation("tr_1"))
    with pytest.raises(lingodoc.LingodocError, match=OTHER_LOOP):
        asyncio.run(client.translate_many(["a"], source_language="en", target_language="de"))

    async def enter() -> None:
        async with client:
            pass

    with pytest.raises(lingodoc.LingodocError, match=OTHER_LOOP):
        asyncio.run(enter())
    assert route.call_count == 1
    assert not client.is_closed
    asyncio.run(client.aclose())  # the first loop is closed: closing from here is fine
    assert client.is_closed


def test_an_async_client_belongs_to_the_loop_it_is_first_used_in_not_made_in(
    api: respx.MockRouter,
) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))

    async def make() -> lingodoc.AsyncClient:
        return lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)

    client = asyncio.run(make())

    async def use_twice() -> list[int]:
        return [(await client.get_translation("tr_1")).progress for _ in range(2)]

    assert asyncio.run(use_twice()) == [5, 5]
    asyncio.run(client.aclose())


def test_aclose_from_another_loop_while_the_first_is_open_is_refused_and_changes_nothing(
    api: respx.MockRouter,
) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(client.get_translation("tr_1"))
        with pytest.raises(lingodoc.LingodocError, match="still open") as caught:
            asyncio.run(client.aclose())
        assert type(caught.value) is lingodoc.LingodocError
        assert not client.is_closed
        assert not pool_of(client).is_closed
        # Closed where it belongs.
        first.run_until_complete(client.aclose())
    finally:
        first.close()
    assert client.is_closed
    assert pool_of(client).is_closed


def test_an_async_client_on_a_passed_in_http_client_can_be_closed_from_any_loop(
    api: respx.MockRouter,
) -> None:
    # It owns no connections: closing it closes none (as the pytest plugin's fixture does).
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    http = httpx.AsyncClient()
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http)
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(client.get_translation("tr_1"))
        asyncio.run(client.aclose())
        assert client.is_closed
        assert not http.is_closed
        first.run_until_complete(http.aclose())
    finally:
        first.close()


def test_an_async_client_on_a_custom_transport_holds_no_loop_and_serves_any(
    api: respx.MockRouter,
) -> None:
    # An in-memory transport (httpx.MockTransport, the emulator's) opens no connection that
    # belongs to a loop: nothing to refuse.
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=envelope(STATUS)))
    http = httpx.AsyncClient(transport=transport)
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=http)
    assert [asyncio.run(client.get_translation("tr_1")).progress for _ in range(3)] == [5, 5, 5]
    asyncio.run(client.aclose())


def test_a_client_shared_by_two_threads_loops_is_refused_in_the_second(
    api: respx.MockRouter,
) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)
    assert asyncio.run(client.get_translation("tr_1")).progress == 5
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            asyncio.run(client.get_translation("tr_1"))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(10)
    assert [type(error) for error in errors] == [lingodoc.LingodocError]
    assert OTHER_LOOP in str(errors[0])
    asyncio.run(client.aclose())


def test_a_blocking_client_is_not_bound_to_any_event_loop(api: respx.MockRouter) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = lingodoc.Client(API_KEY, base_url=BASE_URL)

    async def inside() -> int:
        return client.get_translation("tr_1").progress

    assert asyncio.run(inside()) == 5
    assert asyncio.run(inside()) == 5
    assert client.get_translation("tr_1").progress == 5
    client.close()


# What a RuntimeError out of httpx is reported as.


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (
            RuntimeError("Event loop is closed"),
            "GET /translations/tr_1 could not be sent: Event loop is closed: the http_client "
            "passed to {name} holds connections of another event loop; create it inside the "
            "loop that uses it",
        ),
        (
            RuntimeError("something else"),
            "GET /translations/tr_1 could not be sent: something else",
        ),
    ],
)
async def test_a_runtime_error_from_the_http_client_says_what_happened(
    client_class: type[lingodoc.Client], raised: RuntimeError, message: str
) -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise raised

    transport = httpx.MockTransport(fail)
    http: httpx.Client | httpx.AsyncClient = (
        httpx.AsyncClient(transport=transport)
        if client_class is lingodoc.AsyncClient
        else httpx.Client(transport=transport)
    )
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http, max_retries=0)
    with pytest.raises(lingodoc.LingodocError) as caught:
        await call(client, "get_translation", "tr_1")
    assert type(caught.value) is lingodoc.LingodocError
    assert str(caught.value) == message.format(name=client_class.__name__)
    assert "was the http_client closed?" not in str(caught.value)
    await close(client)


async def test_a_closed_passed_in_http_client_is_named_as_the_cause(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    http: httpx.Client | httpx.AsyncClient = (
        httpx.AsyncClient() if client_class is lingodoc.AsyncClient else httpx.Client()
    )
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    with pytest.raises(lingodoc.LingodocError) as caught:
        await call(client, "get_translation", "tr_1")
    assert str(caught.value) == (
        f"GET /translations/tr_1 could not be sent: the http_client passed to "
        f"{client_class.__name__} has been closed"
    )
    assert not isinstance(caught.value, lingodoc.APIConnectionError)


def test_the_loop_is_told_apart_by_run_for_asyncio_and_trio() -> None:
    from lingodoc._http import current_loop

    async def twice() -> tuple[object, object]:
        return current_loop(), current_loop()

    first, again = asyncio.run(twice())
    second, _ = asyncio.run(twice())
    assert first is again
    assert first is not None
    assert second is not first
    import trio  # a test dependency (pyproject.toml)

    one, same = trio.run(twice)
    other, _ = trio.run(twice)
    assert one is same
    assert one is not None
    assert other is not one


# Over real sockets, against the emulator on loopback.
SENDERS = 16
CLOSED = "has been closed; create a new one to send requests"


class Holding(Emulator):
    """The emulator, answering the next ``hold`` POST /translate only once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(rate_limit=10**9)
        self.hold = 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        reply = super().handle(method, target, headers, body)  # in emulator.requests from here
        if (method, target) == ("POST", "/v1/translate"):
            with self._lock:
                held, self.hold = self.hold > 0, max(0, self.hold - 1)
            if held:
                self.release.wait(PATIENCE)
        return reply


@pytest.fixture
def emulator() -> Holding:
    return Holding()


@pytest.fixture
def server(emulator: Holding) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        try:
            yield running
        finally:
            emulator.release.set()  # a test that failed holding answers leaves none behind


def arrived(emulator: Emulator, count: int) -> bool:
    return sum(1 for r in emulator.requests if r.path == "/v1/translate") >= count


def outcome(value: object) -> object:
    """A translation as its text, an error as (type name, message)."""
    if isinstance(value, BaseException):
        return type(value).__name__, str(value)
    return value


@LINUX_ONLY
def test_close_while_16_threads_send_ends_every_call_cleanly_and_leaves_no_socket(
    server: EmulatorServer, emulator: Holding
) -> None:
    # Every call in flight at once (the adaptive limit would start with fewer).
    client = lingodoc.Client(server.api_key, base_url=server.base_url, max_in_flight=16)
    # Each thread's first call is held by the server, so all 16 are in flight at close().
    emulator.hold = SENDERS
    outcomes: dict[int, list[object]] = {}

    def sender(thread: int) -> None:
        mine: list[object] = []
        for i in range(100):  # bounded; the second call already finds the client closed
            try:
                result = client.translate(text_for(thread, i), source_language="en",
                                          target_language="de")  # fmt: skip
            except Exception as exc:
                mine.append(exc)
                break
            mine.append(result.translated_text)
        outcomes[thread] = mine

    threads = [threading.Thread(target=sender, args=(t,)) for t in range(SENDERS)]
    for thread in threads:
        thread.start()
    wait_until(lambda: arrived(emulator, SENDERS), "the 16 calls all arrived")
    assert client_connections(server.port) == SENDERS
    client.close()
    emulator.release.set()
    for thread in threads:
        thread.join(PATIENCE)
    assert not any(thread.is_alive() for thread in threads)

    # The calls in flight got their answers (nothing was closed under them: no "Bad file
    # descriptor"); the next call of each thread was refused; no other outcome.
    assert {t: [outcome(o) for o in outcomes[t]] for t in range(SENDERS)} == {
        t: [expected_for(t, 0), ("LingodocError", f"this Client {CLOSED}")] for t in range(SENDERS)
    }
    # The last call out closed the pool: not one socket is left, at once.
    assert_all_closed(server.port)


def test_a_main_thread_call_closed_from_another_thread_keeps_its_connection_until_it_ends(
    api: respx.MockRouter,
) -> None:
    # The main thread's connection is its own, taken without a lock: close() from another
    # thread leaves it to the call using it, which closes it as it ends.
    client = lingodoc.Client(API_KEY, base_url=BASE_URL)
    seen: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        closer = threading.Thread(target=client.close)
        closer.start()
        closer.join(10)
        pool = pool_of(client)
        seen.extend([pool, pool.is_closed, client.is_closed])
        return httpx.Response(200, json=envelope(STATUS))

    api.get("/translations/tr_1").mock(side_effect=answer)
    assert client.get_translation("tr_1").progress == 5
    pool, closed_in_flight, client_closed = seen
    assert (closed_in_flight, client_closed) == (False, True)
    assert pool.is_closed  # by the call, as it ended
    assert pool_of(client) is None


@LINUX_ONLY
def test_close_from_another_thread_at_any_moment_of_a_main_thread_call_leaves_no_socket(
    server: EmulatorServer, emulator: Emulator
) -> None:
    rng = random.Random(7)
    for _ in range(40):  # bounded: 40 clients, each closed once, before or during its call
        # Answered 3 ms late: about half the closes land while the call waits for it.
        emulator.inject("slow", times=1, method="POST", path="/translate", delay=0.003)
        client = lingodoc.Client(server.api_key, base_url=server.base_url, max_retries=0)
        closer = threading.Timer(rng.uniform(0, 0.006), client.close)
        closer.start()
        try:
            result = client.translate(text_for(1), source_language="en", target_language="de")
            got = result.translated_text
        except lingodoc.LingodocError as exc:
            got = outcome(exc)
        closer.join(10)
        emulator.clear_faults()
        assert got in (
            expected_for(1),  # sent before the close
            ("LingodocError", f"this Client {CLOSED}"),  # refused, closed before the call
            ("APIConnectionError", "POST /translate was not sent: client closed"),
        ), got
        assert client.is_closed
        assert client_connections(server.port) == 0, got


@LINUX_ONLY
@pytest.mark.asyncio_only
async def test_aclose_while_16_tasks_send_ends_every_call_cleanly_and_leaves_no_socket(
    server: EmulatorServer, emulator: Holding
) -> None:
    # Every call in flight at once (the adaptive limit would start with fewer).
    client = lingodoc.AsyncClient(server.api_key, base_url=server.base_url, max_in_flight=16)
    emulator.hold = SENDERS

    async def sender(task: int) -> list[object]:
        mine: list[object] = []
        for i in range(100):
            try:
                result = await client.translate(text_for(task, i), source_language="en",
                                                target_language="de")  # fmt: skip
            except Exception as exc:
                mine.append(exc)
                break
            mine.append(result.translated_text)
        return mine

    tasks = [asyncio.ensure_future(sender(t)) for t in range(SENDERS)]
    await async_wait_until(lambda: arrived(emulator, SENDERS), "the 16 calls all arrived")
    await client.aclose()
    emulator.release.set()
    outcomes = await asyncio.wait_for(asyncio.gather(*tasks), PATIENCE)

    assert [[outcome(o) for o in mine] for mine in outcomes] == [
        [expected_for(t, 0), ("LingodocError", f"this AsyncClient {CLOSED}")]
        for t in range(SENDERS)
    ]
    assert_all_closed(server.port)


def released() -> None:
    """Let the garbage collector close what a finished event loop left open, without a warning.

    Python warns of a connection closed by the collector (a ResourceWarning, an error here).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


async def translate(client: lingodoc.AsyncClient, text: str = "Hello") -> str:
    result = await client.translate(text, source_language="en", target_language="de")
    return result.translated_text


@LINUX_ONLY
def test_an_async_client_reused_in_a_second_asyncio_run_is_refused_every_time(
    server: EmulatorServer,
) -> None:
    client = lingodoc.AsyncClient(server.api_key, base_url=server.base_url, max_retries=0)
    assert asyncio.run(translate(client)) == "Hallo"
    for _ in range(3):  # every time, not every other time
        with pytest.raises(lingodoc.LingodocError, match="first used in another event loop"):
            asyncio.run(translate(client))
    assert client_connections(server.port) == 1  # the first loop's, kept alive, untouched
    # From another loop, once the first is closed: closed, its connection left to the
    # garbage collector (no public API closes a socket of a closed loop).
    asyncio.run(client.aclose())
    assert client.is_closed
    del client
    released()
    assert_all_closed(server.port)


async def translate_three(client: lingodoc.AsyncClient) -> list[str]:
    import trio

    results: list[str] = []

    async def one(i: int) -> None:
        results.append(await translate(client, text_for(i)))

    async with trio.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(one, i)
    return sorted(results)


@LINUX_ONLY
@pytest.mark.parametrize("closed_from", ["trio", "asyncio"])
def test_an_async_client_of_a_finished_trio_run_is_refused_and_closed_from_another(
    server: EmulatorServer, closed_from: str
) -> None:
    import trio

    client = lingodoc.AsyncClient(server.api_key, base_url=server.base_url, max_retries=0)
    assert trio.run(translate_three, client) == sorted(expected_for(i) for i in range(3))
    assert client_connections(server.port) == 3  # kept alive, of a run now finished
    for _ in range(2):  # every time, not every other time
        with pytest.raises(lingodoc.LingodocError, match="first used in another event loop"):
            trio.run(translate, client)
    if closed_from == "trio":
        trio.run(client.aclose)
    else:
        asyncio.run(client.aclose())
    assert client.is_closed
    del client
    released()
    assert_all_closed(server.port)
