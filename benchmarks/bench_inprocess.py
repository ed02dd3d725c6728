"""Per-call overhead: ``translate()`` against a tuned raw httpx call, in-process.

Both send through the same ``httpx.MockTransport``, which answers with the spec's envelope
and headers, so only the client code is timed. The baseline is the best hand-written raw
httpx call: the URL and the headers built once; each call encodes its JSON body, makes the
``httpx.Request``, ``send()``s it and reads ``json.loads(response.content)``. The SDK is
given an ``httpx.Client`` (``httpx.AsyncClient``) on that transport. Sync and async.

Reported per round: each side's time per call, the overhead (SDK - raw, in µs) and the
ratio raw / SDK (1 would be no overhead at all). Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import httpx
from _common import (
    BASE_URL,
    ENVELOPE,
    KEY,
    PAYLOAD,
    RESPONSE_HEADERS,
    TEXT,
    TRANSLATION,
    emit,
    interleaved,
    paired,
    summary,
)

import lingodoc

BODY = json.dumps(ENVELOPE).encode()
TRANSPORT = httpx.MockTransport(
    lambda request: httpx.Response(200, headers=RESPONSE_HEADERS, content=BODY)
)
URL = httpx.URL(BASE_URL + "/translate")
HEADERS = httpx.Headers({"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})


def timed(call: Callable[[], object], count: int) -> Callable[[], float]:
    def case() -> float:
        started = time.perf_counter()
        for _ in range(count):
            call()
        return (time.perf_counter() - started) / count

    return case


def timed_async(
    loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[object]], count: int
) -> Callable[[], float]:
    async def many() -> float:
        started = time.perf_counter()
        for _ in range(count):
            await call()
        return (time.perf_counter() - started) / count

    return lambda: loop.run_until_complete(many())


def report(samples: dict[str, list[float]]) -> dict[str, object]:
    raw, sdk = samples["raw httpx"], samples["lingodoc"]
    return {
        "raw_us": summary([s * 1e6 for s in raw]),
        "sdk_us": summary([s * 1e6 for s in sdk]),
        "overhead_us": paired(sdk, raw, lambda a, b: (a - b) * 1e6),
        "ratio": paired(raw, sdk, lambda a, b: a / b),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    raw = httpx.Client(transport=TRANSPORT)
    sdk = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=TRANSPORT))

    def raw_call() -> str:
        request = httpx.Request("POST", URL, headers=HEADERS, content=json.dumps(PAYLOAD).encode())
        return json.loads(raw.send(request).content)["data"]["translated_text"]  # type: ignore[no-any-return]

    def sdk_call() -> str:
        return sdk.translate(TEXT, source_language="en", target_language="de").translated_text

    loop = asyncio.new_event_loop()
    araw = httpx.AsyncClient(transport=TRANSPORT)
    asdk = lingodoc.AsyncClient(
        KEY, base_url=BASE_URL, http_client=httpx.AsyncClient(transport=TRANSPORT)
    )

    async def araw_call() -> str:
        request = httpx.Request("POST", URL, headers=HEADERS, content=json.dumps(PAYLOAD).encode())
        response = await araw.send(request)
        return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

    async def asdk_call() -> str:
        result = await asdk.translate(TEXT, source_language="en", target_language="de")
        return result.translated_text

    sync_cases = {"raw httpx": timed(raw_call, args.calls), "lingodoc": timed(sdk_call, args.calls)}
    async_cases = {
        "raw httpx": timed_async(loop, araw_call, args.calls),
        "lingodoc": timed_async(loop, asdk_call, args.calls),
    }
    assert raw_call() == sdk_call() == TRANSLATION
    assert loop.run_until_complete(araw_call()) == loop.run_until_complete(asdk_call())
    for case in [*sync_cases.values(), *async_cases.values()]:
        case()  # warm up: lazy imports, pydantic's validators, caches
    emit(
        {
            "calls_per_round": args.calls,
            "sync": report(interleaved(sync_cases, args.rounds)),
            "async": report(interleaved(async_cases, args.rounds)),
        }
    )
    loop.run_until_complete(asdk.aclose())
    loop.close()


if __name__ == "__main__":
    main()
