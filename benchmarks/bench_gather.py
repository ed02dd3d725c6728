"""Target 3: a naive ``asyncio.gather`` of many ``AsyncClient.translate()`` calls.

What a user writes first: one ``AsyncClient`` with its defaults and
``await asyncio.gather(*(client.translate(...) for _ in range(10_000)))``. Against the minimal
fast server on loopback, it is compared with the same gather through the same SDK given an
``http_client`` whose pool holds 1, 4, 16 or 100 connections (the SDK's limit on calls in
flight is then bounded by that pool), and with raw httpx doing the best hand-written
equivalent (URL and headers built once, ``send()``, a pool of 4 and a semaphore of 4 in
front of it, so that no request queues inside httpcore's pool; and one at a time, a pool of
1 and a semaphore of 1: on loopback the client's CPU sets the pace, and side by side with
semaphores of 1 to 4, one at a time was raw httpx's fastest, since more in flight only
adds work per call). A second part does the same
against the server answering after ``--delay`` seconds, as a distant server does: there the
default must not be throttled (a fixed pool of 4 shows what a small fixed limit costs, a
fixed ``max_in_flight=100`` what a large one does; raw httpx runs 16 at once there).

Each case makes a fresh client per round (a script's first gather: connections opened and
the limit learnt within the run). Rounds are interleaved. The goal's measure: the setting
with the best median is "the best pool setting", and default/best is the median over the
rounds of default/that setting in the same round. The ratio against the best of *each*
round is reported as well, but it is biased low: on this machine every loopback figure
swings by a third between rounds, and the largest of four such figures beats any one
setting's. So the loopback part also runs the default a second time under another name
(``default, again``): the same setting, so its ratios show what noise alone gives (an A/A
control). Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
from _common import TEXT, TRANSLATION, emit, fast_server_process, interleaved, summary

import lingodoc

CONTROL = "default, again"  # the default measured twice: the A/A control
PAYLOAD = {"text": TEXT, "source_language": "en", "target_language": "de"}


def sdk_case(
    loop: asyncio.AbstractEventLoop,
    server: dict[str, str],
    calls: int,
    pool: int | None,
    max_in_flight: int | None = None,
) -> Callable[[], float]:
    """A naive gather through a fresh AsyncClient; ``pool``: its http_client's connections."""

    async def run() -> float:
        http = None
        if pool is not None:
            limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
            http = httpx.AsyncClient(limits=limits, timeout=30.0)
        client = lingodoc.AsyncClient(
            server["api_key"],
            base_url=server["base_url"],
            http_client=http,
            max_in_flight=max_in_flight,
        )
        started = time.perf_counter()
        results = await asyncio.gather(
            *(
                client.translate(TEXT, source_language="en", target_language="de")
                for _ in range(calls)
            )
        )
        elapsed = time.perf_counter() - started
        assert results[-1].translated_text == TRANSLATION
        await client.aclose()
        if http is not None:
            await http.aclose()
        return elapsed / calls

    return lambda: loop.run_until_complete(run())


def raw_case(
    loop: asyncio.AbstractEventLoop, server: dict[str, str], calls: int, pool: int
) -> Callable[[], float]:
    """Tuned raw httpx: request parts built once, ``send()``, at most ``pool`` in flight."""

    async def run() -> float:
        limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
        http = httpx.AsyncClient(limits=limits, timeout=30.0)
        url = httpx.URL(server["base_url"] + "/translate")
        headers = {"Authorization": f"Bearer {server['api_key']}", "Accept": "application/json"}
        content = json.dumps(PAYLOAD).encode()
        headers["Content-Type"] = "application/json"
        gate = asyncio.Semaphore(pool)

        async def one() -> str:
            async with gate:
                request = http.build_request("POST", url, content=content, headers=headers)
                response = await http.send(request)
                return response.json()["data"]["translated_text"]  # type: ignore[no-any-return]

        started = time.perf_counter()
        results = await asyncio.gather(*(one() for _ in range(calls)))
        elapsed = time.perf_counter() - started
        assert results[-1] == TRANSLATION
        await http.aclose()
        return elapsed / calls

    return lambda: loop.run_until_complete(run())


def measure(
    cases: dict[str, Callable[[], float]], rounds: int, settings: list[str]
) -> dict[str, Any]:
    """Run the cases interleaved; req/s of each, and the default against the best setting.

    ``settings``: the SDK settings the default is compared with (not the default itself,
    nor the A/A control).
    """
    samples = interleaved(cases, rounds)
    rates = {name: [1 / seconds for seconds in values] for name, values in samples.items()}
    medians = {name: statistics.median(values) for name, values in rates.items()}
    best = max(settings, key=lambda name: medians[name])

    def paired(name: str, other: str) -> dict[str, Any]:
        return summary([a / b for a, b in zip(rates[name], rates[other], strict=True)])

    def over_round_best(name: str) -> dict[str, Any]:
        return summary([rates[name][i] / max(rates[s][i] for s in settings) for i in range(rounds)])

    result: dict[str, Any] = {
        "req_per_s": {name: summary(values) for name, values in rates.items()},
        "best_setting": best,
        "default_over_best": paired("default", best),
        "default_over_round_best": over_round_best("default"),
        "default_over_raw": paired("default", "raw httpx"),
    }
    if CONTROL in rates:
        result["control"] = {
            "over_default": paired(CONTROL, "default"),
            "over_best": paired(CONTROL, best),
            "over_round_best": over_round_best(CONTROL),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000, help="calls per loopback gather")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pools", default="1,4,16,100", help="pool sizes to compare with")
    parser.add_argument("--delay", type=float, default=0.02, help="the distant server's delay")
    parser.add_argument("--distant-calls", type=int, default=1_000)
    parser.add_argument("--distant-rounds", type=int, default=3)
    parser.add_argument("--burst-delay", type=float, default=0.1, help="the bursts' server delay")
    parser.add_argument("--bursts", default="20,50", help="sizes of the small bursts")
    parser.add_argument("--burst-rounds", type=int, default=3)
    args = parser.parse_args()
    pools = [int(size) for size in args.pools.split(",")]

    loop = asyncio.new_event_loop()
    result: dict[str, Any] = {"calls": args.calls, "pools": pools}
    with fast_server_process() as server:
        loopback: dict[str, Callable[[], float]] = {
            "default": sdk_case(loop, server, args.calls, None)
        }
        for size in pools:
            loopback[f"pool {size}"] = sdk_case(loop, server, args.calls, size)
        loopback["raw httpx"] = raw_case(loop, server, args.calls, 4)
        loopback["raw httpx, one at a time"] = raw_case(loop, server, args.calls, 1)
        loopback[CONTROL] = sdk_case(loop, server, args.calls, None)
        # Warm up (imports, the server's first connections) with a small gather of each kind.
        sdk_case(loop, server, 200, None)()
        raw_case(loop, server, 200, 4)()
        result["loopback"] = measure(loopback, args.rounds, [f"pool {size}" for size in pools])

    with fast_server_process(delay=args.delay) as server:
        calls = args.distant_calls
        distant: dict[str, Callable[[], float]] = {
            "default": sdk_case(loop, server, calls, None),
            "max_in_flight 100": sdk_case(loop, server, calls, None, max_in_flight=100),
            "pool 4": sdk_case(loop, server, calls, 4),
            "raw httpx": raw_case(loop, server, calls, 16),
        }
        result["distant"] = measure(distant, args.distant_rounds, ["max_in_flight 100", "pool 4"])
        result["distant"]["delay"] = args.delay
        result["distant"]["calls"] = calls
    # What most code does: a small gather to a distant server. Without a limit every call
    # goes out at once (max_in_flight=100, the pool's size); the default must not hold the
    # burst back while it learns.
    with fast_server_process(delay=args.burst_delay) as server:
        bursts: dict[str, Any] = {"delay": args.burst_delay}
        for size in (int(size) for size in args.bursts.split(",")):
            cases = {
                "default": sdk_case(loop, server, size, None),
                "max_in_flight 100": sdk_case(loop, server, size, None, max_in_flight=100),
            }
            samples = interleaved(cases, args.burst_rounds)
            bursts[str(size)] = {
                "seconds": {
                    name: summary([per_call * size for per_call in values])
                    for name, values in samples.items()
                },
            }
        result["bursts"] = bursts
    loop.close()
    emit(result)


if __name__ == "__main__":
    main()
