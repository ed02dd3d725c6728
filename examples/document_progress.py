"""Translate stored documents and wait for them: progress, timeouts, resuming, asyncio.

1. Start a document translation and wait for it, printing its progress.
2. Give up waiting after a time limit, keep the translation id, and resume the wait later
   (in a real program: in another process, after a restart, from a task queue).
3. Wait for several documents at once with AsyncClient.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set, and
otherwise against the local emulator, in-process, with jobs that take a second and a half.

    python examples/document_progress.py
"""

from __future__ import annotations

import asyncio
import os

import lingodoc


def connect() -> tuple[lingodoc.Client, lingodoc.AsyncClient, float]:
    """Return a client, an async client and how often to poll, in seconds."""
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        # The service's own client polls every 5 s (the default): mind the rate limit.
        return lingodoc.Client(), lingodoc.AsyncClient(), 5.0
    from lingodoc.emulator import Emulator

    print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process")
    emulator = Emulator(job_duration=1.5)
    return emulator.client(), emulator.async_client(), 0.2


def show_progress(status: lingodoc.TranslationStatus) -> None:
    """An ``on_progress`` callback: called with the status after every poll."""
    bar = "#" * (status.progress // 10)
    print(f"   [{bar:<10}] {status.progress:3}%  {status.status}")


def wait_with_progress(client: lingodoc.Client, document_id: str, poll: float) -> None:
    job = client.translate_document(document_id, target_language="de")
    print(f"1. started {job.translation_id} ({document_id} -> de): {job.status}")
    done = client.wait_for_translation(
        job, poll_interval=poll, timeout=600, on_progress=show_progress
    )
    print(f"   completed at {done.completed_at:%H:%M:%S} UTC")


def give_up_then_resume(client: lingodoc.Client, document_id: str, poll: float) -> None:
    job = client.translate_document(document_id, target_language="fr")
    translation_id = job.translation_id  # all it takes to pick the translation up again
    print(f"2. started {translation_id}; waiting at most {poll * 2:g} s")
    try:
        client.wait_for_translation(job, poll_interval=poll, timeout=poll * 2)
        print("   it finished in time")
        return
    except lingodoc.WaitTimeout as timeout:
        # The translation goes on on the service; only the wait ended.
        last = timeout.status
        seen = f"{last.status} at {last.progress}%" if last else "no answer yet"
        print(f"   gave up waiting ({seen}); the translation goes on")

    # Later, with nothing but the id: look at it, then wait again.
    status = client.get_translation(translation_id)
    print(f"   resumed {translation_id}: {status.status} {status.progress}%")
    try:
        done = client.wait_for_translation(translation_id, poll_interval=poll, timeout=600)
    except lingodoc.TranslationFailed as failure:
        print(f"   it failed at {failure.status.progress}%; start a new translation")
    else:
        print(f"   completed at {done.completed_at:%H:%M:%S} UTC")


async def wait_for_several(
    client: lingodoc.AsyncClient, document_ids: list[str], poll: float
) -> None:
    async with client:
        jobs = await asyncio.gather(
            *(client.translate_document(doc, target_language="es") for doc in document_ids)
        )
        print(f"3. started {len(jobs)} translations; waiting for all of them at once")
        finished = await asyncio.gather(
            *(client.wait_for_translation(job, poll_interval=poll, timeout=600) for job in jobs),
            return_exceptions=True,  # one failure must not hide the others
        )
        for job, outcome in zip(jobs, finished, strict=True):
            if isinstance(outcome, lingodoc.TranslationStatus):
                print(f"   {job.document_id}: {outcome.status} {outcome.progress}%")
            else:
                print(f"   {job.document_id}: {type(outcome).__name__}: {outcome}")


def main() -> None:
    client, async_client, poll = connect()
    with client:
        documents = [document.document_id for document in client.list_documents()]
        print(f"Stored documents: {documents}")
        if not documents:
            print("No documents to translate.")
            return
        wait_with_progress(client, documents[0], poll)
        give_up_then_resume(client, documents[0], poll)
    asyncio.run(wait_for_several(async_client, documents[:3], poll))


if __name__ == "__main__":
    main()
