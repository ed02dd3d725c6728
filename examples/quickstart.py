"""lingodoc quickstart: a text, a batch, a document waited on, an error, the rate limit.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set, and
otherwise starts the local emulator (lingodoc.emulator) on a free loopback port.

    python examples/quickstart.py
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import lingodoc


@contextmanager
def connect() -> Iterator[lingodoc.Client]:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        with lingodoc.Client() as client:
            yield client
        return

    from lingodoc.emulator import Emulator

    with Emulator(job_duration=3.0).serve() as server:
        print(
            "LINGODOC_API_KEY / LINGODOC_BASE_URL not set: started the emulator at", server.base_url
        )
        with lingodoc.Client(server.api_key, base_url=server.base_url) as client:
            yield client


def main() -> None:
    with connect() as client:
        result = client.translate("Hello world", source_language="en", target_language="de")
        print(f"\n1. translate: 'Hello world' -> {result.translated_text!r}")

        batch = client.translate_batch(
            ["Welcome", "My friend", "Thanks"], source_language="en", target_language="fr"
        )
        print(f"2. translate_batch: {batch.translations}")

        documents = client.list_documents()
        print(f"3. list_documents: {[d.document_id for d in documents]}")
        if documents:
            job = client.translate_document(documents[0].document_id, target_language="es")
            print(f"   translate_document: job {job.translation_id} is {job.status}")
            done = client.wait_for_translation(
                job,
                poll_interval=1.0,
                timeout=60,
                on_progress=lambda s: print(f"   ... {s.status} {s.progress}%"),
            )
            print(f"   completed at {done.completed_at:%H:%M:%S} UTC")

        try:
            client.translate("Hello", source_language="en", target_language="xx")
        except lingodoc.InvalidLanguage as error:
            print(f"4. a caught error: {type(error).__name__}: {error}")

        limit = client.rate_limit
        if limit is not None:
            print(
                f"5. rate limit: {limit.remaining} of {limit.limit} requests left, "
                f"resets at {limit.reset_at:%H:%M:%S} UTC"
            )


if __name__ == "__main__":
    main()
