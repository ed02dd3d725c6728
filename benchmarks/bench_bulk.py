"""Target 4: ``translate_many`` on 100,000 short texts against ``Emulator().serve()``.

``throughput``: lingodoc's ``Client.translate_many`` against a hand-written httpx loop doing
the same batches (100 texts) with the same concurrency (4 threads), and the same for
``AsyncClient`` against ``httpx.AsyncClient`` with 4 worker tasks; interleaved rounds.

``memory``: the peak of Python allocations (tracemalloc) during one ``translate_many``, in a
process of its own, against the size of the inputs plus the outputs.

Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from _common import emit, emulator_process, interleaved, summary

import lingodoc

BATCH = 100
CONCURRENCY = 4
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)


def make_texts(count: int) -> list[str]:
    # Short, distinct texts, as a user's strings would be.
    return [f"Hello world, item {i}" for i in range(count)]


def sized(strings: list[str]) -> int:
    """Bytes held by a list of strings and the strings themselves."""
    return sys.getsizeof(strings) + sum(sys.getsizeof(text) for text in strings)


# The hand-written baselines ------------------------------------------------------------------


def raw_sync(http: httpx.Client, url: str, texts: list[str]) -> list[str]:
    results: list[str] = [""] * len(texts)
    starts = iter(range(0, len(texts), BATCH))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                start = next(starts, None)
            if start is None:
                return
            chunk = texts[start : start + BATCH]
            body = {"texts": chunk, "source_language": "en", "target_language": "de"}
            response = http.post(url, json=body)
            response.raise_for_status()
            results[start : start + len(chunk)] = response.json()["data"]["translations"]

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        for future in [pool.submit(worker) for _ in range(CONCURRENCY)]:
            future.result()
    return results


async def raw_async(http: httpx.AsyncClient, url: str, texts: list[str]) -> list[str]:
    results: list[str] = [""] * len(texts)
    starts = iter(range(0, len(texts), BATCH))

    async def worker() -> None:
        for start in starts:  # shared: each start goes to one worker
            chunk = texts[start : start + BATCH]
            body = {"texts": chunk, "source_language": "en", "target_language": "de"}
            response = await http.post(url, json=body)
            response.raise_for_status()
            results[start : start + len(chunk)] = response.json()["data"]["translations"]

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return results


# Modes ---------------------------------------------------------------------------------------


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    texts = make_texts(args.texts)
    with emulator_process() as server:
        base_url, key = server["base_url"], server["api_key"]
        url = base_url + "/translate/batch"
        auth = {"Authorization": f"Bearer {key}"}
        loop = asyncio.new_event_loop()
        http = httpx.Client(headers=auth, limits=LIMITS, timeout=30.0)
        ahttp = httpx.AsyncClient(headers=auth, limits=LIMITS, timeout=30.0)
        sdk = lingodoc.Client(key, base_url=base_url)
        asdk = lingodoc.AsyncClient(key, base_url=base_url)
        options = {"batch_size": BATCH, "max_concurrency": CONCURRENCY}
        langs = {"source_language": "en", "target_language": "de"}

        def timed(run: Callable[[], list[str]]) -> Callable[[], float]:
            def case() -> float:
                started = time.perf_counter()
                out = run()
                elapsed = time.perf_counter() - started
                assert len(out) == len(texts)
                assert out[-1].endswith(str(len(texts) - 1))
                return elapsed

            return case

        cases = {
            "sync raw": timed(lambda: raw_sync(http, url, texts)),
            "sync lingodoc": timed(lambda: sdk.translate_many(texts, **langs, **options)),
            "async raw": timed(lambda: loop.run_until_complete(raw_async(ahttp, url, texts))),
            "async lingodoc": timed(
                lambda: loop.run_until_complete(asdk.translate_many(texts, **langs, **options))
            ),
        }
        small = texts[: BATCH * CONCURRENCY * 2]
        assert raw_sync(http, url, small) == sdk.translate_many(small, **langs, **options)
        samples = interleaved(cases, args.rounds)
        http.close()
        sdk.close()
        loop.run_until_complete(ahttp.aclose())
        loop.run_until_complete(asdk.aclose())
        loop.close()
    return {
        "texts": len(texts),
        "batch_size": BATCH,
        "concurrency": CONCURRENCY,
        "cases": {name: summary(values) for name, values in samples.items()},
    }


def memory(args: argparse.Namespace) -> dict[str, Any]:
    with emulator_process() as server:
        base_url, key = server["base_url"], server["api_key"]
        options = {"batch_size": BATCH, "max_concurrency": CONCURRENCY}
        langs = {"source_language": "en", "target_language": "de"}
        loop = asyncio.new_event_loop()
        http = httpx.Client(headers={"Authorization": f"Bearer {key}"}, limits=LIMITS, timeout=30.0)
        sdk = lingodoc.Client(key, base_url=base_url)
        asdk = lingodoc.AsyncClient(key, base_url=base_url)
        runs: dict[str, Callable[[list[str]], list[str]]] = {
            "sync lingodoc": lambda texts: sdk.translate_many(texts, **langs, **options),
            "async lingodoc": lambda texts: loop.run_until_complete(
                asdk.translate_many(texts, **langs, **options)
            ),
            "sync raw": lambda texts: raw_sync(http, base_url + "/translate/batch", texts),
        }
        results = {}
        for name, run in runs.items():
            run(make_texts(BATCH * CONCURRENCY * 2))  # warm up: imports, pools, models
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            texts = make_texts(args.texts)
            inputs = sized(texts)
            tracemalloc.reset_peak()
            outputs_list = run(texts)
            peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            outputs = sized(outputs_list)
            results[name] = {
                "peak_bytes": peak,
                "inputs_bytes": inputs,
                "outputs_bytes": outputs,
                "ratio": peak / (inputs + outputs),
            }
            del texts, outputs_list
            gc.collect()
        http.close()
        sdk.close()
        loop.run_until_complete(asdk.aclose())
        loop.close()
    return {"texts": args.texts, "cases": results}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["throughput", "memory"])
    parser.add_argument("--texts", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    emit(throughput(args) if args.mode == "throughput" else memory(args))


if __name__ == "__main__":
    main()
