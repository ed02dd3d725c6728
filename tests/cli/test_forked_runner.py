"""The runner of forked `lingodoc` runs (tests/cli/forked.py): each run gets its own exit code.

The server's answers are written by the test into a pipe, in one write or late, as a machine
that deschedules the test process delivers them; the kill is the test's, so a child can end
just as its time runs out.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.conftest import RunCLI
from tests.cli.forked import AVAILABLE, Server

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="forked runs need os.fork (POSIX)")

REQUEST = {"args": ["--version"], "env": {}, "files": []}


class FakeServer:
    """A server process whose answers the test writes: pipes for its stdin and stdout."""

    def __init__(self) -> None:
        answers_out, self.answers = os.pipe()
        self.stdout = open(answers_out, "rb", buffering=0)  # noqa: SIM115
        requests_in, requests_out = os.pipe()
        self.stdin = open(requests_out, "wb", buffering=0)  # noqa: SIM115
        self.requests = open(requests_in, "rb")  # noqa: SIM115
        self.stopped = False

    def answer(self, *records: dict[str, Any]) -> None:
        """Write ``records`` as the server does, all in one write."""
        os.write(self.answers, b"".join(json.dumps(r).encode() + b"\n" for r in records))

    def request(self) -> dict[str, Any]:
        """The next request the runner sent."""
        request: dict[str, Any] = json.loads(self.requests.readline())
        return request

    def poll(self) -> int | None:
        return 0 if self.stopped else None

    def wait(self, timeout: float | None = None) -> int:
        self.stopped = True
        return 0

    def close(self) -> None:
        for stream in (self.stdout, self.stdin, self.requests):
            stream.close()
        os.close(self.answers)


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    """Every fake server started, in order."""
    started: list[FakeServer] = []
    yield started
    for server in started:
        server.close()


def runner(servers: list[FakeServer], kill: Any, wait: float = 0.0) -> Server:
    """A runner on fake servers and ``kill``; ``wait``: the time the server has to answer."""

    def start() -> Any:
        servers.append(FakeServer())
        return servers[-1]

    return Server(start=start, kill=kill, wait=wait)


def no_kill(pid: int, signal_number: int) -> None:
    raise AssertionError(f"killed {pid}, which was not late")


def test_both_records_arriving_in_one_read_give_the_exit_code_at_once(
    servers: list[FakeServer],
) -> None:
    server = runner(servers, no_kill)
    server.started().answer({"id": 1, "pid": 101}, {"id": 1, "code": 3})
    # No time at all: both records are in one read, the second is taken from what was read.
    assert server.run(REQUEST, timeout=0) == 3
    assert servers[0].request() == {**REQUEST, "id": 1}


def test_a_child_that_ends_just_as_its_time_runs_out_gives_its_own_exit_code(
    servers: list[FakeServer],
) -> None:
    killed: list[tuple[int, int]] = []

    def kill(pid: int, signal_number: int) -> None:
        killed.append((pid, signal_number))
        servers[0].answer({"id": 1, "code": 0})  # it ended, and the server reaped it
        raise ProcessLookupError(pid)

    server = runner(servers, kill)
    server.started().answer({"id": 1, "pid": 101})
    assert server.run(REQUEST, timeout=0) == 0
    assert killed == [(101, signal.SIGKILL)]


def test_a_killed_run_fails_and_the_next_run_gets_its_own_exit_code(
    servers: list[FakeServer],
) -> None:
    def kill(pid: int, signal_number: int) -> None:
        servers[0].answer({"id": 1, "code": -signal_number})

    server = runner(servers, kill)
    server.started().answer({"id": 1, "pid": 101})
    with pytest.raises(AssertionError, match=r"lingodoc --version ran past 0 s"):
        server.run(REQUEST, timeout=0)
    # A record of the first run that comes again, before the second run's own, is not its.
    servers[0].answer({"id": 1, "code": 0}, {"id": 2, "pid": 102}, {"id": 2, "code": 4})
    assert server.run(REQUEST, timeout=0) == 4
    assert [servers[0].request()["id"] for _ in range(2)] == [1, 2]


def test_a_server_that_stops_answering_is_replaced_and_the_next_run_gets_its_own_exit_code(
    servers: list[FakeServer],
) -> None:
    # The kill is sent, but the server never says the child ended: the next run must not
    # read what that server says later.
    server = runner(servers, lambda pid, signal_number: None)
    server.started().answer({"id": 1, "pid": 101})
    with pytest.raises(AssertionError, match="the server of forked runs did not answer"):
        server.run(REQUEST, timeout=0)
    assert servers[0].stopped
    assert servers[0].stdout.closed  # what it says later is never read
    server.started().answer({"id": 2, "pid": 102}, {"id": 2, "code": 5})
    assert server.run(REQUEST, timeout=0) == 5
    assert len(servers) == 2


def test_a_real_run_that_is_killed_fails_alone(cli: RunCLI) -> None:
    # `lingodoc emulator` serves until it is stopped: it can only run past its time.
    with pytest.raises(AssertionError, match=r"lingodoc emulator --port 0 ran past 0.5 s"):
        cli("emulator", "--port", "0", timeout=0.5)
    version = cli("--version")
    assert (version.code, version.err) == (0, "")
    assert version.out.startswith("lingodoc ")
