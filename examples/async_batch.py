"""Translate many texts at once with lingodoc.AsyncClient.

Three ways, from the simplest:

1. ``translate_many``: any number of texts; the client splits them into batches, sends the
   batches side by side and returns the translations in input order.
2. ``translate_batch`` into several languages at once, with ``asyncio.gather``.
3. Single ``translate`` calls for texts that arrive one by one, a few at a time with a
   semaphore, each failure handled on its own.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set, and
otherwise against the local emulator, in-process.

    python examples/async_batch.py
"""

from __future__ import annotations

import asyncio
import os
import time

import lingodoc

SENTENCES = [
    "Good morning",
    "Thank you",
    "Hello world",
    "Good night",
    "The cat and the dog",
    "My friend",
    "Welcome",
    "Yes please",
]


def connect() -> lingodoc.AsyncClient:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        return lingodoc.AsyncClient()  # reads the two variables
    from lingodoc.emulator import Emulator

    print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process")
    return Emulator().async_client()


async def translate_one(
    client: lingodoc.AsyncClient, text: str, target: str, limit: asyncio.Semaphore
) -> str:
    async with limit:  # at most a few requests in flight
        try:
            result = await client.translate(text, source_language="en", target_language=target)
        except lingodoc.APIError as error:  # one failure must not sink the others
            return f"<failed: {error.code}>"
        except lingodoc.APIConnectionError as error:  # nor one the network caused
            return f"<failed: {type(error).__name__}>"
        return result.translated_text


async def main() -> None:
    async with connect() as client:
        # 1. Many texts: 1,000 here, sent as 10 batches of 100, 4 at a time.
        texts = [SENTENCES[i % len(SENTENCES)] for i in range(1000)]
        started = time.perf_counter()
        german = await client.translate_many(
            texts, source_language="en", target_language="de", batch_size=100, max_concurrency=4
        )
        elapsed = time.perf_counter() - started
        print(f"1. translate_many: {len(german)} texts in {elapsed:.2f} s")
        for text, translation in list(zip(texts, german, strict=True))[:3]:
            print(f"   {text!r} -> {translation!r}")

        # 2. One batch per language, all at once.
        languages = ["de", "fr", "es"]
        batches = await asyncio.gather(
            *(
                client.translate_batch(SENTENCES[:3], source_language="en", target_language=lang)
                for lang in languages
            )
        )
        print("2. translate_batch into three languages at once:")
        for lang, batch in zip(languages, batches, strict=True):
            print(f"   {lang}: {batch.translations}")

        # 3. Single texts, three in flight at most; "xx" is not a language.
        limit = asyncio.Semaphore(3)
        jobs = [("Good day", "fr"), ("Thank you", "es"), ("Hello", "xx"), ("Good night", "de")]
        results = await asyncio.gather(
            *(translate_one(client, text, target, limit) for text, target in jobs)
        )
        print("3. translate, a few at a time, each failure on its own:")
        for (text, target), result in zip(jobs, results, strict=True):
            print(f"   {text!r} -> {target}: {result!r}")

        if client.rate_limit is not None:
            print(f"Requests left this hour: {client.rate_limit.remaining}")


if __name__ == "__main__":
    asyncio.run(main())
