"""Memory per client: building N clients after the first, against ``httpx.Client()``.

Each sample is a fresh interpreter that imports everything and builds one client (what all
clients share, the imports and the SDK's one SSL context per certificate setting, is then
built), then builds ``--clients`` more and reports, per client: the Python memory kept
(tracemalloc) and the process memory added (RSS, which also sees OpenSSL's allocations, such
as an SSL context's certificate store). Then it times building ``--clients`` more, without
tracemalloc. Cases take turns in interleaved rounds. The SDK's clients are given an
``https://`` base URL. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from functools import partial

from _common import BASE_URL, KEY, emit, interleaved, summary

CHILD = """
import gc, json, os, time, tracemalloc
import httpx, lingodoc
make = {
    "lingodoc.Client": lambda: lingodoc.Client(KEY, base_url=BASE_URL),
    "lingodoc.AsyncClient": lambda: lingodoc.AsyncClient(KEY, base_url=BASE_URL),
    "httpx.Client": httpx.Client,
}[NAME]
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
first = make()  # kept: what every client shares is built by now
gc.collect()
before = rss()
tracemalloc.start()
clients = [make() for _ in range(COUNT)]
traced, added = tracemalloc.get_traced_memory()[0], rss() - before
tracemalloc.stop()
started = time.perf_counter()  # the time to build one, out of tracemalloc's way
more = [make() for _ in range(COUNT)]
elapsed = time.perf_counter() - started
print(json.dumps({"kib": traced / COUNT / 1024, "rss_kib": added / COUNT / 1024,
                  "build_us": elapsed / COUNT * 1e6}))
"""
CASES = ("lingodoc.Client", "lingodoc.AsyncClient", "httpx.Client")


def sample(name: str, count: int, kept: dict[str, list[dict[str, float]]]) -> float:
    prelude = f"NAME = {name!r}; COUNT = {count}; KEY = {KEY!r}; BASE_URL = {BASE_URL!r}\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + CHILD],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode:
        raise RuntimeError(out.stderr)
    measured: dict[str, float] = json.loads(out.stdout)
    kept[name].append(measured)
    return measured["kib"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", type=int, default=200)
    args = parser.parse_args()
    kept: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
    interleaved({name: partial(sample, name, args.clients, kept) for name in CASES}, args.rounds)
    emit(
        {
            "clients": args.clients,
            "cases": {
                name: {key: summary([s[key] for s in runs]) for key in runs[0]}
                for name, runs in kept.items()
            },
        }
    )


if __name__ == "__main__":
    main()
