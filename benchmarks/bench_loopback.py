"""Target 2: ``translate()`` over loopback against ``Emulator().serve()`` in another process.

Sequential ``Client.translate()`` against raw ``httpx.Client`` posting to the same server,
and ``AsyncClient`` with 64 calls in flight against raw ``httpx.AsyncClient`` at the same
concurrency. Both sides use the same connection-pool limits, so that neither pays for
reconnecting. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx
from _common import TEXT, emit, emulator_process, interleaved, per_op, summary

import lingodoc

# lingodoc's own pool limits: keep-alive for every connection the pool may open.
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9, help="rounds with calls in flight")
    parser.add_argument("--seq-rounds", type=int, default=15, help="sequential rounds")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-worker", type=int, default=15)
    args = parser.parse_args()

    with emulator_process() as server:
        base_url, key = server["base_url"], server["api_key"]
        url = base_url + "/translate"
        auth = {"Authorization": f"Bearer {key}"}

        raw = httpx.Client(headers=auth, limits=LIMITS)
        sdk = lingodoc.Client(key, base_url=base_url)

        def raw_call() -> str:
            payload = {"text": TEXT, "source_language": "en", "target_language": "de"}
            return raw.post(url, json=payload).json()["data"]["translated_text"]  # type: ignore[no-any-return]

        def sdk_call() -> str:
            return sdk.translate(TEXT, source_language="en", target_language="de").translated_text

        assert raw_call() == sdk_call()
        for _ in range(100):
            raw_call()
            sdk_call()
        sequential = interleaved(
            {"raw": per_op(raw_call, args.calls), "lingodoc": per_op(sdk_call, args.calls)},
            args.seq_rounds,
        )
        raw.close()
        sdk.close()

        loop = asyncio.new_event_loop()
        araw = httpx.AsyncClient(headers=auth, limits=LIMITS)
        asdk = lingodoc.AsyncClient(key, base_url=base_url)

        async def araw_call() -> object:
            payload = {"text": TEXT, "source_language": "en", "target_language": "de"}
            response = await araw.post(url, json=payload)
            return response.json()["data"]["translated_text"]

        async def asdk_call() -> object:
            result = await asdk.translate(TEXT, source_language="en", target_language="de")
            return result.translated_text

        def concurrent(function, per_worker):  # type: ignore[no-untyped-def]
            async def worker() -> None:
                for _ in range(per_worker):
                    await function()

            async def all_workers() -> float:
                started = time.perf_counter()
                await asyncio.gather(*(worker() for _ in range(args.concurrency)))
                return (time.perf_counter() - started) / (args.concurrency * per_worker)

            return lambda: loop.run_until_complete(all_workers())

        # Open the connections and let the server's threads settle: a full round each.
        concurrent(araw_call, args.per_worker)()
        concurrent(asdk_call, args.per_worker)()
        parallel = interleaved(
            {
                "raw": concurrent(araw_call, args.per_worker),
                "lingodoc": concurrent(asdk_call, args.per_worker),
            },
            args.rounds,
        )
        loop.run_until_complete(araw.aclose())
        loop.run_until_complete(asdk.aclose())
        loop.close()

    emit(
        {
            "sequential": {name: summary(values) for name, values in sequential.items()},
            "concurrent": {name: summary(values) for name, values in parallel.items()},
            "concurrency": args.concurrency,
        }
    )


if __name__ == "__main__":
    main()
