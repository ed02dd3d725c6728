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
  the same request built once, ``json.loads(await response.read())``, a naive gather;
- what ``DefaultAioHttpClient`` stands on, without the SDK, each on such a session: a bare
  ``httpx_aiohttp.HttpxAiohttpClient``'s ``post(...)`` and ``.json()``, and its
  ``AiohttpTransport.handle_async_request`` called directly with the request built once
  (what lingodoc calls), its body read and ``json.loads``. The ratio of lingodoc + aiohttp to
  raw aiohttp cannot go past the transport's.

Each case counts the answers it got, and the errors by type (a gather collects them all,
``return_exceptions=True``). Requests per second; ratios case / baseline in the same round;
and the CPU time per call (``time.process_time()`` of this, the client's, process over the
gather, divided by the calls; the server is a process of its own). Prints JSON.
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


class Tally:
    """What a case's round counted: answers and errors by type, and the CPU time per call."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.cpu_us = 0.0


async def gather(one: Callable[[], Awaitable[str]], calls: int, tally: Tally) -> float:
    cpu = time.process_time()
    started = time.perf_counter()
    results = await asyncio.wait_for(
        asyncio.gather(*(one() for _ in range(calls)), return_exceptions=True), GUARD
    )
    elapsed = time.perf_counter() - started
    tally.cpu_us = (time.process_time() - cpu) / calls * 1e6
    for result in results:
        tally.outcomes["answers" if result == TRANSLATION else type(result).__name__] += 1
    return calls / elapsed


async def sdk(server: dict[str, str], calls: int, aio: bool, tally: Tally) -> float:
    http = lingodoc.DefaultAioHttpClient() if aio else None
    async with lingodoc.AsyncClient(
        server["api_key"], base_url=server["base_url"], http_client=http
    ) as client:

        async def one() -> str:
            result = await client.translate(TEXT, source_language="en", target_language="de")
            return result.translated_text

        return await gather(one, calls, tally)


async def raw_httpx(server: dict[str, str], calls: int, pool: int, tally: Tally) -> float:
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


def aiohttp_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))


async def bare_httpx_aiohttp(
    server: dict[str, str], calls: int, direct: bool, tally: Tally
) -> float:
    from httpx_aiohttp import AiohttpTransport, HttpxAiohttpClient

    url = httpx.URL(server["base_url"] + "/translate")
    headers = {"Authorization": f"Bearer {server['api_key']}", "Content-Type": "application/json"}
    transport = AiohttpTransport(client=aiohttp_session)
    async with HttpxAiohttpClient(transport=transport, headers=headers, timeout=60.0) as http:
        request = httpx.Request("POST", url, headers=headers, content=BODY)

        async def through_transport() -> str:
            response = await transport.handle_async_request(request)
            assert isinstance(response.stream, httpx.AsyncByteStream)
            body = b"".join([chunk async for chunk in response.stream])
            await response.aclose()
            return json.loads(body)["data"]["translated_text"]  # type: ignore[no-any-return]

        async def through_client() -> str:
            response = await http.post(url, content=BODY)
            return response.json()["data"]["translated_text"]  # type: ignore[no-any-return]

        return await gather(through_transport if direct else through_client, calls, tally)


async def raw_aiohttp(server: dict[str, str], calls: int, tally: Tally) -> float:
    url = server["base_url"] + "/translate"
    headers = {"Authorization": f"Bearer {server['api_key']}", "Content-Type": "application/json"}
    async with aiohttp_session() as session:

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
    makers: dict[str, Callable[[Tally], Awaitable[float]]] = {
        "lingodoc": lambda tally: sdk(server, calls, False, tally),
        "lingodoc + aiohttp": lambda tally: sdk(server, calls, True, tally),
        **{f"raw httpx, pool {n}": partial(raw_httpx, server, calls, n) for n in pools},
        "raw aiohttp": lambda tally: raw_aiohttp(server, calls, tally),
        "bare HttpxAiohttpClient": partial(bare_httpx_aiohttp, server, calls, False),
        "bare AiohttpTransport": partial(bare_httpx_aiohttp, server, calls, True),
    }
    tallies: dict[str, list[Tally]] = {name: [] for name in makers}

    def case(name: str) -> Callable[[], float]:
        def run() -> float:
            tally = Tally()
            tallies[name].append(tally)
            return loop.run_until_complete(makers[name](tally))

        return run

    rates = interleaved({name: case(name) for name in makers}, rounds)
    loop.close()
    best = max(pools, key=lambda n: statistics.median(rates[f"raw httpx, pool {n}"]))
    floor = rates[f"raw httpx, pool {best}"]
    result: dict[str, Any] = {"calls": calls, "rounds": rounds, "best_pool": best, "cases": {}}
    for name, values in rates.items():
        errors = sum((tally.outcomes for tally in tallies[name]), Counter())
        errors.pop("answers", None)
        result["cases"][name] = {
            "req_per_s": summary(values),
            "cpu_us_per_call": summary([tally.cpu_us for tally in tallies[name]]),
            "answers": summary([tally.outcomes["answers"] for tally in tallies[name]]),
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
