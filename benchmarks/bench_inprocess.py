"""Target 1: one ``translate()`` per call through an in-process ``httpx.MockTransport``.

lingodoc's ``Client.translate()`` against two hand-written raw httpx calls, through the same
transport returning the spec's envelope; the same for ``AsyncClient`` against
``httpx.AsyncClient``:

- ``tuned``, the baseline: the best hand-written equivalent. The URL and the headers are built
  once; each call encodes its JSON body to bytes, makes the ``httpx.Request`` itself,
  ``send()``s it and reads ``json.loads(response.content)["data"]["translated_text"]``.
- ``naive``: what most code writes, ``post(url, json=...)`` and ``.json()``, which makes
  httpx parse the URL and merge the client's headers on every call.

Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import httpx
from _common import (
    BASE_URL,
    ENVELOPE,
    KEY,
    RESPONSE_HEADERS,
    TEXT,
    TRANSLATION,
    emit,
    interleaved,
    per_op,
    summary,
)

import lingodoc

BODY = json.dumps(ENVELOPE).encode()
URL = BASE_URL + "/translate"


def handler(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers=RESPONSE_HEADERS, content=BODY)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    transport = httpx.MockTransport(handler)
    auth = {"Authorization": f"Bearer {KEY}"}

    url = httpx.URL(URL)
    # What lingodoc sends besides the body: the key, and a JSON body's content type.
    headers = httpx.Headers({**auth, "Content-Type": "application/json"})

    def body() -> bytes:
        payload = {"text": TEXT, "source_language": "en", "target_language": "de"}
        return json.dumps(payload).encode()

    tuned = httpx.Client(transport=transport)
    naive = httpx.Client(transport=transport, headers=auth)
    sdk = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=transport))

    def raw_call() -> str:
        response = tuned.send(httpx.Request("POST", url, headers=headers, content=body()))
        return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

    def naive_call() -> str:
        response = naive.post(
            URL, json={"text": TEXT, "source_language": "en", "target_language": "de"}
        )
        return response.json()["data"]["translated_text"]  # type: ignore[no-any-return]

    def sdk_call() -> str:
        return sdk.translate(TEXT, source_language="en", target_language="de").translated_text

    loop = asyncio.new_event_loop()
    atuned = httpx.AsyncClient(transport=transport)
    anaive = httpx.AsyncClient(transport=transport, headers=auth)
    asdk = lingodoc.AsyncClient(
        KEY, base_url=BASE_URL, http_client=httpx.AsyncClient(transport=transport)
    )

    async def araw_call() -> str:
        request = httpx.Request("POST", url, headers=headers, content=body())
        response = await atuned.send(request)
        return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

    async def anaive_call() -> str:
        payload = {"text": TEXT, "source_language": "en", "target_language": "de"}
        response = await anaive.post(URL, json=payload)
        return response.json()["data"]["translated_text"]  # type: ignore[no-any-return]

    async def asdk_call() -> str:
        result = await asdk.translate(TEXT, source_language="en", target_language="de")
        return result.translated_text

    def async_case(function, count):  # type: ignore[no-untyped-def]
        async def many() -> float:
            started = loop.time()
            for _ in range(count):
                await function()
            return (loop.time() - started) / count

        return lambda: loop.run_until_complete(many())

    for check in (raw_call, naive_call, sdk_call):
        assert check() == TRANSLATION
    for acheck in (araw_call, anaive_call, asdk_call):
        assert loop.run_until_complete(acheck()) == TRANSLATION
    # Warm up: caches, lazy imports, pydantic's validators.
    for _ in range(300):
        raw_call()
        naive_call()
        sdk_call()
    for afunction in (araw_call, anaive_call, asdk_call):
        async_case(afunction, 300)()

    sync = interleaved(
        {
            "tuned": per_op(raw_call, args.calls),
            "naive": per_op(naive_call, args.calls),
            "lingodoc": per_op(sdk_call, args.calls),
        },
        args.rounds,
    )
    asynchronous = interleaved(
        {
            "tuned": async_case(araw_call, args.calls),
            "naive": async_case(anaive_call, args.calls),
            "lingodoc": async_case(asdk_call, args.calls),
        },
        args.rounds,
    )
    emit(
        {
            "sync": {name: summary(values) for name, values in sync.items()},
            "async": {name: summary(values) for name, values in asynchronous.items()},
            "calls_per_round": args.calls,
        }
    )


if __name__ == "__main__":
    main()
