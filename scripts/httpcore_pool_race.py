"""Show encode/httpcore#1110 side by side: raw httpx and lingodoc meet it alike.

httpcore's pool can close a connection it has just handed to another thread's request: a
pass that finds the connection's keep-alive expired (or it idle and readable) closes it after
the request has started on it, which then fails with ``[Errno 9] Bad file descriptor``. Any
keep-alive expiry has the race; a tiny one makes it frequent. The tests of
tests/reliability/test_interrupts.py turn the expiry off, so that any such error is the SDK's.

    python scripts/httpcore_pool_race.py [SECONDS]
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from collections.abc import Callable

import httpx

import lingodoc
from lingodoc import _sync_transport
from lingodoc.emulator import Emulator

EXPIRY = 0.002  # seconds of keep-alive: each idle connection expires almost at once
THREADS = 16


def hammer(name: str, call: Callable[[str], object], seconds: float) -> None:
    """Call ``call`` from 16 threads for ``seconds``; print how many failed, and how."""
    errors: collections.Counter[str] = collections.Counter()
    done = [0]
    stop = time.monotonic() + seconds

    def worker(thread: int) -> None:
        for number in range(10**9):
            if time.monotonic() > stop:
                return
            try:
                call(f"text {thread} {number}")
                done[0] += 1
            except Exception as exc:  # counted, whatever it is
                errors[f"{type(exc).__name__}: {str(exc)[-40:]}"] += 1
            time.sleep(0.001 * (thread % 7))  # uneven: some connections sit idle

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"{name}: {done[0]:,} calls answered, {sum(errors.values())} failed", dict(errors))


def main() -> None:
    """Raw httpx, then lingodoc's own transport, each against a served emulator."""
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    emulator = Emulator(rate_limit=10**9)
    body = {"source_language": "en", "target_language": "de"}
    with emulator.serve() as server:
        limits = httpx.Limits(max_connections=THREADS, keepalive_expiry=EXPIRY)
        headers = {"Authorization": f"Bearer {emulator.api_key}"}
        url = server.base_url + "/translate"
        with httpx.Client(limits=limits, headers=headers) as raw:
            hammer("raw httpx", lambda text: raw.post(url, json={"text": text, **body}), seconds)
        _sync_transport.KEEPALIVE_EXPIRY = EXPIRY  # the pool the client builds next
        with lingodoc.Client(emulator.api_key, base_url=server.base_url, max_retries=0) as sdk:
            hammer("lingodoc", lambda text: sdk.translate(text, **body), seconds)


if __name__ == "__main__":
    main()
