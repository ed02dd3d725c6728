"""Per-call cost of ``translate()`` against raw httpx, in-process: two setups, sync and async.

``own transport``: ``lingodoc.Client(KEY, base_url=...)`` with no ``http_client``, on the
SDK's own transport, against a tuned raw ``httpx.Client()``: the ``httpx.Request`` built
once and reused, ``client.send(request)``, ``json.loads(response.content)``. Both run under
respx's default mocker (``with respx.mock(...)``), which patches httpcore's connection pool:
both clients and their transports run whole; the pool and the connection and socket
beneath it are left out, for both alike.

``http_client``: the SDK given the caller's ``httpx.Client(transport=T)``, ``T`` an
``httpx.MockTransport``, against a plain raw call on an ``httpx.Client`` with the same
transport and the Authorization header as a default header: ``client.post(url,
json=payload).json()``.

The same for ``AsyncClient`` against ``httpx.AsyncClient``. Every answer is the spec's
envelope with its rate-limit and ``X-Request-Id`` headers. Reported per round: each side's
time per call, the overhead (SDK - raw, in µs) and the ratio raw / SDK (above 1: the SDK is
faster). Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import respx
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
    timed,
)

import lingodoc

BODY = json.dumps(ENVELOPE).encode()
URL = BASE_URL + "/translate"
AUTHORIZATION = {"Authorization": f"Bearer {KEY}"}


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers=RESPONSE_HEADERS, content=BODY)


TRANSPORT = httpx.MockTransport(answer)


def timed_async(
    loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[object]], count: int
) -> Callable[[], float]:
    async def many() -> float:
        started = time.perf_counter()
        for _ in range(count):
            await call()
        return (time.perf_counter() - started) / count

    return lambda: loop.run_until_complete(many())


def report(samples: dict[str, list[float]]) -> dict[str, Any]:
    raw, sdk = samples["raw"], samples["lingodoc"]
    return {
        "raw_us": summary([s * 1e6 for s in raw]),
        "sdk_us": summary([s * 1e6 for s in sdk]),
        "overhead_us": paired(sdk, raw, lambda a, b: (a - b) * 1e6),
        "ratio": paired(raw, sdk, lambda a, b: a / b),
    }


def measure(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, Any]:
    for case in cases.values():
        case()  # warm up: lazy imports, pydantic's validators, caches, the pools
    return report(interleaved(cases, rounds))


def both(
    loop: asyncio.AbstractEventLoop,
    calls: int,
    rounds: int,
    sync: tuple[Callable[[], str], Callable[[], str]],
    asynchronous: tuple[Callable[[], Awaitable[str]], Callable[[], Awaitable[str]]],
    before: Callable[[], object] = lambda: None,
) -> dict[str, Any]:
    """Each (raw, SDK) pair checked, then measured; ``before`` runs ahead of each case."""

    def case(timer: Callable[[], float]) -> Callable[[], float]:
        return lambda: (before(), timer())[1]

    raw, sdk = sync
    araw, asdk = asynchronous
    assert raw() == sdk() == TRANSLATION
    assert loop.run_until_complete(araw()) == loop.run_until_complete(asdk()) == TRANSLATION
    return {
        "sync": measure(
            {"raw": case(timed(raw, calls)), "lingodoc": case(timed(sdk, calls))}, rounds
        ),
        "async": measure(
            {
                "raw": case(timed_async(loop, araw, calls)),
                "lingodoc": case(timed_async(loop, asdk, calls)),
            },
            rounds,
        ),
    }


def sdk_translate(client: lingodoc.Client) -> Callable[[], str]:
    def call() -> str:
        return client.translate(TEXT, source_language="en", target_language="de").translated_text

    return call


def sdk_atranslate(client: lingodoc.AsyncClient) -> Callable[[], Awaitable[str]]:
    async def call() -> str:
        result = await client.translate(TEXT, source_language="en", target_language="de")
        return result.translated_text

    return call


def own_transport(loop: asyncio.AbstractEventLoop, calls: int, rounds: int) -> dict[str, Any]:
    """The SDK's own transport against a tuned raw call, both under respx's default mocker."""
    headers = {**AUTHORIZATION, "Content-Type": "application/json"}
    request = httpx.Request("POST", URL, headers=headers, content=json.dumps(PAYLOAD).encode())
    with respx.mock(assert_all_called=False) as router:
        router.post(URL).respond(200, headers=RESPONSE_HEADERS, content=BODY)

        raw = httpx.Client()
        sdk = sdk_translate(lingodoc.Client(KEY, base_url=BASE_URL))

        def raw_call() -> str:
            return json.loads(raw.send(request).content)["data"]["translated_text"]  # type: ignore[no-any-return]

        araw = httpx.AsyncClient()
        asdk_client = lingodoc.AsyncClient(KEY, base_url=BASE_URL)
        asdk = sdk_atranslate(asdk_client)

        async def araw_call() -> str:
            response = await araw.send(request)
            return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

        # respx records every call: forget them before each case, lest they pile up.
        result = both(loop, calls, rounds, (raw_call, sdk), (araw_call, asdk), router.reset)
        loop.run_until_complete(asdk_client.aclose())
        loop.run_until_complete(araw.aclose())
    return result


def http_client(loop: asyncio.AbstractEventLoop, calls: int, rounds: int) -> dict[str, Any]:
    """The SDK on the caller's ``httpx.Client``, against a plain ``post(json=).json()``."""
    raw = httpx.Client(transport=TRANSPORT, headers=AUTHORIZATION)
    sdk = sdk_translate(
        lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=TRANSPORT))
    )

    def raw_call() -> str:
        return raw.post(URL, json=PAYLOAD).json()["data"]["translated_text"]  # type: ignore[no-any-return]

    araw = httpx.AsyncClient(transport=TRANSPORT, headers=AUTHORIZATION)
    asdk_client = lingodoc.AsyncClient(
        KEY, base_url=BASE_URL, http_client=httpx.AsyncClient(transport=TRANSPORT)
    )
    asdk = sdk_atranslate(asdk_client)

    async def araw_call() -> str:
        response = await araw.post(URL, json=PAYLOAD)
        return response.json()["data"]["translated_text"]  # type: ignore[no-any-return]

    result = both(loop, calls, rounds, (raw_call, sdk), (araw_call, asdk))
    loop.run_until_complete(asdk_client.aclose())
    loop.run_until_complete(araw.aclose())
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    emit(
        {
            "calls_per_round": args.calls,
            "own_transport": own_transport(loop, args.calls, args.rounds),
            "http_client": http_client(loop, args.calls, args.rounds),
        }
    )
    loop.close()


if __name__ == "__main__":
    main()
