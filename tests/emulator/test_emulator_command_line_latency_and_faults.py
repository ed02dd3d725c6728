"""The served emulator slowed and made to fail from its command line: --latency, --fail, --seed."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc.emulator import EmulatorServer
from lingodoc.emulator import __main__ as emulator_command
from tests.conftest import call, close
from tests.emulator.conftest import http
from tests.waiting import PATIENCE, wait_until

TRANSLATE = {"text": "Welcome", "source_language": "en", "target_language": "fr"}


@contextmanager
def served(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[EmulatorServer]:
    """Run the command line with ``args`` in a thread, on any free port, until the block ends."""
    servers: queue.Queue[EmulatorServer] = queue.Queue()
    done = threading.Event()

    class Recorded(emulator_command._CommandLineEmulator):
        @contextmanager
        def serve(self, *args: Any, **kwargs: Any) -> Iterator[EmulatorServer]:
            with super().serve(*args, **kwargs) as server:
                servers.put(server)
                yield server

    def sleep(seconds: float) -> None:  # where it waits for Ctrl-C: until the block ends
        done.wait(PATIENCE)
        raise KeyboardInterrupt

    monkeypatch.setattr(emulator_command, "_CommandLineEmulator", Recorded)
    monkeypatch.setattr(emulator_command, "time", SimpleNamespace(sleep=sleep))
    codes: list[int] = []
    command = [*args, "--port", "0", "--quiet"]
    thread = threading.Thread(target=lambda: codes.append(emulator_command.main(command)))
    thread.start()
    try:
        yield servers.get(timeout=PATIENCE)
    finally:
        done.set()
        thread.join(PATIENCE)
    assert codes == [0]


@pytest.mark.anyio
async def test_latency_holds_each_response_at_least_that_long(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with served(["--latency", "150"], monkeypatch) as server:
        client = client_class(server.api_key, base_url=server.base_url)
        try:
            for _ in range(2):  # a new connection, then a kept-alive one
                started = time.monotonic()
                result = await call(
                    client, "translate", "cat", source_language="en", target_language="fr"
                )
                assert time.monotonic() - started >= 0.15  # a lower bound only
                assert result.translated_text == "chat"
        finally:
            await close(client)


def test_latency_holds_each_response_without_holding_up_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answered: list[object] = []

    def send(server: EmulatorServer) -> None:
        with http(server.emulator, base_url=server.base_url, timeout=PATIENCE * 2) as plain:
            try:
                answered.append(plain.post("/translate", json=TRANSLATE))
            except httpx.HTTPError as error:  # cut short when the server stops
                answered.append(error)

    with served(["--latency", "3600000"], monkeypatch) as server:  # an hour
        senders = [threading.Thread(target=send, args=(server,)) for _ in range(4)]
        for sender in senders:
            sender.start()
        emulator = server.emulator
        wait_until(lambda: len(emulator.requests) == 4, "four requests handled, each held an hour")
        assert answered == []
    for sender in senders:
        sender.join(PATIENCE)
    assert len(answered) == 4
    assert all(isinstance(outcome, httpx.HTTPError) for outcome in answered)


@pytest.mark.anyio
async def test_fail_with_probability_1_fails_every_request_and_the_client_retries_it(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with served(["--fail", "server_error:1"], monkeypatch) as server:
        client = client_class(server.api_key, base_url=server.base_url, max_retries=2)
        try:
            with pytest.raises(lingodoc.ServerError) as raised:
                await call(client, "translate", "cat", source_language="en", target_language="fr")
        finally:
            await close(client)
        statuses = [record.status for record in server.emulator.requests]
    assert raised.value.status_code == 503
    assert raised.value.code == "SERVICE_UNAVAILABLE"
    assert statuses == [503, 503, 503]  # the first attempt and two retries


def test_fail_with_probability_0_fails_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        served(["--fail", "disconnect:0"], monkeypatch) as server,
        http(server.emulator, base_url=server.base_url) as plain,
    ):
        statuses = [plain.post("/translate", json=TRANSLATE).status_code for _ in range(5)]
    assert statuses == [200] * 5


def failures(seed: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The statuses of 16 requests to an emulator that fails 503 or 429 half the time."""
    args = ["--fail", "server_error:0.3", "--fail", "rate_limit:0.2", "--seed", seed]
    with (
        served(args, monkeypatch) as server,
        http(server.emulator, base_url=server.base_url) as plain,
    ):
        return [plain.post("/translate", json=TRANSLATE).status_code for _ in range(16)]


def test_the_same_seed_draws_the_same_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    first = failures("7", monkeypatch)
    assert failures("7", monkeypatch) == first
    assert {200, 429, 503} <= set(first)
    assert failures("8", monkeypatch) != first
