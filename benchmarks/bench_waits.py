"""Waits that should cost nothing: stopping the served emulator, a cache whose Redis is down.

The suite checks how these are done (an accept loop woken, not polled; no try of Redis within
``retry_after``; a silent Redis cut at ``socket_timeout``) without timing them: a test that
times them fails on a crowded machine. Their figures are measured here, ``--calls`` times a
round each:

- ``emulator stop``: leaving ``with Emulator().serve():`` with a keep-alive connection open
  (its thread blocked reading the next request), after one request;
- ``Redis refused, first call``: a client's first lookup in a new ``RedisCache`` whose URL has
  nothing listening: its one try, refused, and its warning;
- ``Redis refused, later calls``: the lookups after that one, within ``retry_after``: no try;
- ``Redis silent, first call``: a client's first lookup in a new cache against a server that
  accepts connections and never answers, over ``--socket-timeout``: about 1 if it is cut there.

A client's lookup is the SDK's `CacheUse.look_up`, which logs a failure and backs off.

Cases take turns in interleaved rounds. Needs redis-py (the ``redis`` extra), not a
redis-server. Prints JSON.
"""

from __future__ import annotations

import argparse
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
from _common import emit, interleaved, summary

import lingodoc
from lingodoc._cache import CacheUse
from lingodoc.emulator import Emulator

KEY = "0" * 64  # a cache key is a digest: 64 hex characters


def emulator_stop(calls: int) -> float:
    """Seconds per stop of a served emulator, one keep-alive connection open."""
    emulator = Emulator()
    took = 0.0
    for _ in range(calls):
        with httpx.Client() as client:
            with emulator.serve() as server:
                client.get(f"{server.base_url}/documents")  # a 401: no key, as good
                started = time.perf_counter()
            took += time.perf_counter() - started
    return took / calls


def free_port() -> int:
    """A port nothing listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def refused_first(calls: int) -> float:
    """Seconds per first call of a new cache whose Redis refuses the connection."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    took = 0.0
    for _ in range(calls):
        with lingodoc.RedisCache(url) as cache:
            use = CacheUse(cache, awaits=False)
            started = time.perf_counter()
            assert use.look_up([KEY]) == {}
            took += time.perf_counter() - started
    return took / calls


def refused_later(calls: int) -> float:
    """Seconds per call within ``retry_after`` of the first, refused, one."""
    with lingodoc.RedisCache(f"redis://127.0.0.1:{free_port()}/0", retry_after=3600) as cache:
        use = CacheUse(cache, awaits=False)
        assert use.look_up([KEY]) == {}  # the one try
        started = time.perf_counter()
        for _ in range(calls):
            assert use.look_up([KEY]) == {}
        return (time.perf_counter() - started) / calls


@contextmanager
def silent_server() -> Iterator[str]:
    """A server that accepts connections and never answers; its Redis URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stopping = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stopping.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        stopping.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def silent_first(url: str, calls: int, socket_timeout: float) -> float:
    """A new cache's first call against the silent server, over ``socket_timeout``."""
    took = 0.0
    for _ in range(calls):
        with lingodoc.RedisCache(url, socket_timeout=socket_timeout) as cache:
            use = CacheUse(cache, awaits=False)
            started = time.perf_counter()
            assert use.look_up([KEY]) == {}
            took += time.perf_counter() - started
    return took / calls / socket_timeout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20, help="calls of each case a round")
    parser.add_argument("--socket-timeout", type=float, default=0.25)
    args = parser.parse_args()
    # Each new cache warns once that its Redis is down: kept out of the output.
    logging.getLogger("lingodoc").addHandler(logging.NullHandler())
    logging.getLogger("lingodoc").propagate = False
    calls = args.calls
    with silent_server() as silent_url:
        cases: dict[str, Callable[[], float]] = {
            "emulator stop": lambda: emulator_stop(calls) * 1e3,
            "Redis refused, first call": lambda: refused_first(calls) * 1e3,
            "Redis refused, later calls": lambda: refused_later(100 * calls) * 1e6,
            "Redis silent, first call": lambda: silent_first(
                silent_url, max(1, calls // 5), args.socket_timeout
            ),
        }
        samples = interleaved(cases, args.rounds)
    emit(
        {
            "rounds": args.rounds,
            "socket_timeout": args.socket_timeout,
            "emulator_stop_ms": summary(samples["emulator stop"]),
            "refused_first_ms": summary(samples["Redis refused, first call"]),
            "refused_later_us": summary(samples["Redis refused, later calls"]),
            "silent_over_timeout": summary(samples["Redis silent, first call"]),
        }
    )


if __name__ == "__main__":
    main()
