"""A naive ``asyncio.gather`` of N ``translate()`` calls against a server 20 ms away.

What a user writes first: one ``AsyncClient`` and
``await asyncio.gather(*(client.translate(...) for _ in range(N)))``, against
``_fast_server.py --delay 0.02`` on loopback (every answer 20 ms after its request). Cases,
each with a fresh client per round (a script's first gather, connections opened within it):

- ``lingodoc``: ``AsyncClient()`` on its default transport (httpx's pool);
- ``lingodoc + aiohttp``: ``AsyncClient(http_client=lingodoc.DefaultAioHttpClient())``;
- ``raw httpx``: the best hand-written httpx, the URL and headers built once, ``send()``,
  ``json.loads`` of the content, behind an ``asyncio.Semaphore`` as large as the pool
  (without one, a gather past the pool's size ends in ``PoolTimeout``), at each size of
  ``--pools``. Its floor is the size with the best median in the first row (httpcore's pool
  gets slower past about 16 connections in flight); later rows use that size alone;
- ``raw aiohttp``, its floor: one ``aiohttp.ClientSession`` on a ``TCPConnector(limit=100)``,
  the same request built once, ``json.loads(await response.read())``, a naive gather.

Each case counts the answers it got, and the errors by type (a gather collects them all,
``return_exceptions=True``). Requests per second; ratios case / baseline in the same round.
Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from functools import partial
from operator import truediv
from typing import Any

import aiohttp
import httpx
from _common import (
    PAYLOAD,
    TEXT,
    TRANSLATION,
    emit,
    fast_server_process,
    interleaved,
    paired,
    summary,
)

import lingodoc

BODY = json.dumps(PAYLOAD).encode()
GUARD = 600.0  # seconds: no gather here comes near it; past it, a case fails


async def gather(one: Callable[[], Awaitable[str]], calls: int, tally: Counter[str]) -> float:
    started = time.perf_counter()
    results = await asyncio.wait_for(
        asyncio.gather(*(one() for _ in range(calls)), return_exceptions=True), GUARD
    )
    elapsed = time.perf_counter() - started
    for result in results:
        tally["answers" if result == TRANSLATION else type(result).__name__] += 1
    return calls / elapsed


async def sdk(server: dict[str, str], calls: int, aio: bool, tally: Counter[str]) -> float:
    http = lingodoc.DefaultAioHttpClient() if aio else None
    async with lingodoc.AsyncClient(
        server["api_key"], base_url=server["base_url"], http_client=http
    ) as client:

        async def one() -> str:
            result = await client.translate(TEXT, source_language="en", target_language="de")
            return result.translated_text

        return await gather(one, calls, tally)


async def raw_httpx(server: dict[str, str], calls: int, pool: int, tally: Counter[str]) -> float:
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    url = httpx.URL(server["base_url"] + "/translate")
    headers = httpx.Headers(
        {"Authorization": f"Bearer {server['api_key']}", "Content-Type": "application/json"}
    )
    turns = asyncio.Semaphore(pool)
    async with httpx.AsyncClient(limits=limits, timeout=60.0) as http:

        async def one() -> str:
            async with turns:
                response = await http.send(
                    httpx.Request("POST", url, headers=headers, content=BODY)
                )
            return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

        return await gather(one, calls, tally)


async def raw_aiohttp(server: dict[str, str], calls: int, tally: Counter[str]) -> float:
    url = server["base_url"] + "/translate"
    headers = {"Authorization": f"Bearer {server['api_key']}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=100)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> str:
            async with session.post(url, data=BODY, headers=headers) as response:
                body = await response.read()
            return json.loads(body)["data"]["translated_text"]  # type: ignore[no-any-return]

        return await gather(one, calls, tally)


def measure(server: dict[str, str], calls: int, rounds: int, pools: list[int]) -> dict[str, Any]:
    """One row: the cases in interleaved rounds; raw httpx at each pool size in ``pools``.

    Raw httpx's floor is the pool size with the best median; the ratios are against it.
    """
    loop = asyncio.new_event_loop()
    makers: dict[str, Callable[[Counter[str]], Awaitable[float]]] = {
        "lingodoc": lambda tally: sdk(server, calls, False, tally),
        "lingodoc + aiohttp": lambda tally: sdk(server, calls, True, tally),
        **{f"raw httpx, pool {n}": partial(raw_httpx, server, calls, n) for n in pools},
        "raw aiohttp": lambda tally: raw_aiohttp(server, calls, tally),
    }
    tallies: dict[str, list[Counter[str]]] = {name: [] for name in makers}

    def case(name: str) -> Callable[[], float]:
        def run() -> float:
            tally: Counter[str] = Counter()
            tallies[name].append(tally)
            return loop.run_until_complete(makers[name](tally))

        return run

    rates = interleaved({name: case(name) for name in makers}, rounds)
    loop.close()
    best = max(pools, key=lambda n: statistics.median(rates[f"raw httpx, pool {n}"]))
    floor = rates[f"raw httpx, pool {best}"]
    result: dict[str, Any] = {"calls": calls, "rounds": rounds, "best_pool": best, "cases": {}}
    for name, values in rates.items():
        errors = sum(tallies[name], Counter())
        errors.pop("answers", None)
        result["cases"][name] = {
            "req_per_s": summary(values),
            "answers": summary([tally["answers"] for tally in tallies[name]]),
            "errors": dict(errors),
            "vs raw httpx": paired(values, floor, truediv),
            "vs raw aiohttp": paired(values, rates["raw aiohttp"], truediv),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", default="3000,10000", help="gather sizes, one row each")
    parser.add_argument("--rounds", default="5,3", help="rounds for each gather size")
    parser.add_argument("--delay", type=float, default=0.02, help="the server's delay (s)")
    parser.add_argument("--pools", default="8,16,32", help="raw httpx's pool sizes to try")
    args = parser.parse_args()
    sizes = [int(n) for n in args.calls.split(",")]
    rounds = [int(n) for n in args.rounds.split(",")]
    pools = [int(n) for n in args.pools.split(",")]
    result: dict[str, Any] = {"delay": args.delay, "gathers": []}
    with fast_server_process(delay=args.delay) as server:
        measure(server, 200, 1, pools)  # warm up: imports, the first connections
        for calls, count in zip(sizes, rounds, strict=True):
            result["gathers"].append(measure(server, calls, count, pools))
            pools = [result["gathers"][0]["best_pool"]]  # later rows: the first row's best
    emit(result)


if __name__ == "__main__":
    main()
