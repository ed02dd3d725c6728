"""``translate_many``: the requests it sends against the minimum, in-process.

Each round makes a corpus (seeded per round) of ``--texts`` short lines, a share of them
repeats of earlier ones and some blank, and translates it with ``Client.translate_many`` and
``AsyncClient.translate_many`` (batches of ``--batch-size``, 4 at once) against a fresh
in-process ``lingodoc.emulator.Emulator``. The minimum is
``ceil(distinct non-blank texts / batch size)`` requests, each distinct non-blank text sent
once. Counted: the emulator's ``requests`` (each ``POST /translate/batch``) and the texts
the requests carried (read by a transport in front of the emulator's). Every result is
checked against the emulator's own translation. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import threading
from operator import truediv
from typing import Any

import httpx
from _common import emit, summary

import lingodoc
from lingodoc.emulator import Emulator, translate_text

WORDS = ["the", "cat", "dog", "house", "red", "small", "good", "night", "world", "hello"]


class Counting(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """The emulator's transport, counting the texts each batch request carries."""

    def __init__(self, emulator: Emulator) -> None:
        self.inner = emulator.transport()
        self.texts = 0
        self.lock = threading.Lock()  # Client.translate_many sends from threads

    def count(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/translate/batch"):
            with self.lock:
                self.texts += len(json.loads(request.content)["texts"])

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count(request)
        return self.inner.handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count(request)
        return await self.inner.handle_async_request(request)


def corpus(count: int, repeats: float, blanks: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts: list[str] = []
    for _ in range(count):
        if texts and rng.random() < repeats:
            texts.append(rng.choice(texts))
        elif rng.random() < blanks:
            texts.append(rng.choice(["", " ", "\n"]))
        else:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(2, 8))) + f" {rng.random():.6f}")
    return texts


def run(texts: list[str], batch_size: int, asynchronous: bool) -> dict[str, Any]:
    emulator = Emulator(rate_limit=10**9, seed_documents=False)
    counting = Counting(emulator)
    if asynchronous:

        async def translate() -> list[str]:
            http = httpx.AsyncClient(transport=counting)
            async with lingodoc.AsyncClient(
                emulator.api_key, base_url=emulator.base_url, http_client=http
            ) as client:
                return await client.translate_many(
                    texts, source_language="en", target_language="de", batch_size=batch_size
                )

        results = asyncio.run(translate())
    else:
        http = httpx.Client(transport=counting)
        with lingodoc.Client(
            emulator.api_key, base_url=emulator.base_url, http_client=http
        ) as sync:
            results = sync.translate_many(
                texts, source_language="en", target_language="de", batch_size=batch_size
            )
    wanted = [translate_text(text, "en", "de") if text.strip() else text for text in texts]
    distinct = len({text for text in texts if text.strip()})
    return {
        "requests": sum(r.path.endswith("/translate/batch") for r in emulator.requests),
        "minimum": math.ceil(distinct / batch_size),
        "texts_sent": counting.texts,
        "distinct": distinct,
        "correct": results == wanted,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--repeats", type=float, default=0.3, help="share of repeated texts")
    parser.add_argument("--blanks", type=float, default=0.02, help="share of blank texts")
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args()
    result: dict[str, Any] = {**vars(args), "cases": {}}
    cases = {"Client": False, "AsyncClient": True}
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    for seed in range(args.rounds):  # the two take turns, on the same corpus in a round
        texts = corpus(args.texts, args.repeats, args.blanks, seed)
        for name, asynchronous in cases.items():
            samples[name].append(run(texts, args.batch_size, asynchronous))
    for name, runs in samples.items():
        result["cases"][name] = {
            **{key: summary([r[key] for r in runs]) for key in ("requests", "minimum")},
            "over_minimum": summary([truediv(r["requests"], r["minimum"]) for r in runs]),
            "texts_over_distinct": summary([r["texts_sent"] / r["distinct"] for r in runs]),
            "all_correct": all(r["correct"] for r in runs),
        }
    emit(result)


if __name__ == "__main__":
    main()
