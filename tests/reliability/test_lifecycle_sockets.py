"""Closing a client mid-flight, and an AsyncClient met by another event loop, over real sockets.

Against the emulator served on loopback; the sockets are counted by the operating system
(``/proc/self/fd``: tests/reliability/sockets.py). Linux only.

The calls in flight when a client is closed wait for answers that the emulator's ``slow``
fault holds back for ``SLOW`` seconds (a real wait, short): they end when it ends.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer
from tests.reliability.sockets import (
    LINUX_ONLY,
    assert_all_closed,
    client_connections,
    expected_for,
    text_for,
    wait_until,
)

# The async tests here drive asyncio itself (ensure_future, run) against real sockets.
pytestmark = [LINUX_ONLY, pytest.mark.asyncio_only]

SENDERS = 16
SLOW = 0.5
CLOSED = "has been closed; create a new one to send requests"


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(rate_limit=10**9)


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        yield running


def arrived(emulator: Emulator, count: int) -> bool:
    return sum(1 for r in emulator.requests if r.path == "/v1/translate") >= count


def outcome(value: object) -> object:
    """A translation as its text, an error as (type name, message)."""
    if isinstance(value, BaseException):
        return type(value).__name__, str(value)
    return value


def test_close_while_16_threads_send_ends_every_call_cleanly_and_leaves_no_socket(
    server: EmulatorServer, emulator: Emulator
) -> None:
    # Every call in flight at once (the adaptive limit would start with fewer).
    client = lingodoc.Client(server.api_key, base_url=server.base_url, max_in_flight=16)
    # Each thread's first call is held by the server, so all 16 are in flight at close().
    emulator.inject("slow", times=SENDERS, method="POST", path="/translate", delay=SLOW)
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
    assert wait_until(lambda: arrived(emulator, SENDERS)), "the calls did not all arrive"
    assert client_connections(server.port) == SENDERS
    client.close()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)

    # The calls in flight got their answers (nothing was closed under them: no "Bad file
    # descriptor"); the next call of each thread was refused; no other outcome.
    assert {t: [outcome(o) for o in outcomes[t]] for t in range(SENDERS)} == {
        t: [expected_for(t, 0), ("LingodocError", f"this Client {CLOSED}")] for t in range(SENDERS)
    }
    # The last call out closed the pool: not one socket is left, at once.
    assert_all_closed(server.port)


async def test_aclose_while_16_tasks_send_ends_every_call_cleanly_and_leaves_no_socket(
    server: EmulatorServer, emulator: Emulator
) -> None:
    # Every call in flight at once (the adaptive limit would start with fewer).
    client = lingodoc.AsyncClient(server.api_key, base_url=server.base_url, max_in_flight=16)
    emulator.inject("slow", times=SENDERS, method="POST", path="/translate", delay=SLOW)

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
    started = time.monotonic()
    while not arrived(emulator, SENDERS):
        assert time.monotonic() - started < 5, "the calls did not all arrive"
        await asyncio.sleep(0.01)
    await client.aclose()
    outcomes = await asyncio.wait_for(asyncio.gather(*tasks), 30)

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
