"""AsyncClient under trio itself: ``trio.run``, nurseries and cancel scopes, no anyio in the test.

The whole async suite runs on trio too (tests/conftest.py); these tests drive trio directly,
as a trio program does: the retry after a 503, the wait for a translation, translate_many,
and the client's binding to its trio run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import respx
import trio

import lingodoc
from lingodoc.emulator import Emulator, translate_text
from lingodoc.testing import FakeClock
from tests.conftest import API_KEY, BASE_URL, envelope, failure

LANGS = {"source_language": "en", "target_language": "de"}


def test_translate_is_retried_after_a_503(api: respx.MockRouter, clock: FakeClock) -> None:
    route = api.post("/translate").mock(
        side_effect=[
            httpx.Response(503, json=failure("UNAVAILABLE"), headers={"Retry-After": "2"}),
            httpx.Response(
                200,
                json=envelope(
                    {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
                ),
            ),
        ]
    )

    async def main() -> str:
        async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
            return (await client.translate("Hello", **LANGS)).translated_text

    assert trio.run(main) == "Hallo"
    assert route.call_count == 2
    assert clock.sleeps == [2.0]


def test_wait_for_translation_polls_and_waits_out_a_429(clock: FakeClock) -> None:
    emulator = Emulator()
    emulator.inject("rate_limit", retry_after=30)
    seen: list[int] = []

    async def on_progress(status: lingodoc.TranslationStatus) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(status.progress)

    async def main() -> lingodoc.TranslationStatus:
        async with emulator.async_client() as client:
            job = await client.translate_document("doc_welcome", target_language="de")
            return await client.wait_for_translation(job, on_progress=on_progress)

    status = trio.run(main)
    assert status.status == "completed"
    assert clock.sleeps == [30.0, 5.0, 5.0]
    assert [r.status for r in emulator.requests][:2] == [429, 200]
    assert seen[-1] == 100
    assert len(seen) == 3


def test_translate_many_sends_batches_side_by_side_and_paces_itself(clock: FakeClock) -> None:
    emulator = Emulator(rate_limit=3)  # 3 requests an hour: the rest after the reset
    texts = [f"text {i}" for i in range(10)]
    reports: list[lingodoc.BulkProgress] = []

    async def main() -> list[str]:
        async with emulator.async_client() as client:
            return await client.translate_many(
                texts,
                batch_size=2,
                max_concurrency=3,
                wait_for_rate_limit=True,
                on_progress=reports.append,
                **LANGS,
            )

    assert trio.run(main) == [translate_text(text, "en", "de") for text in texts]
    statuses = [r.status for r in emulator.requests]
    assert statuses == [200] * 5  # paced: never refused
    assert len(clock.sleeps) >= 1
    assert max(clock.sleeps) == pytest.approx(3600, abs=2)
    assert [r.done for r in reports if r.waiting_until is None][-1] == 10
    assert any(r.waiting_until is not None for r in reports)


def test_cancelling_translate_many_from_a_cancel_scope_keeps_the_answered_batches() -> None:
    emulator = Emulator()
    done: dict[int, str] = {}
    texts = [f"text {i}" for i in range(1_000)]
    living: list[int] = []

    async def main() -> None:
        async with emulator.async_client() as client:
            living.append(trio.lowlevel.current_statistics().tasks_living)
            with trio.CancelScope() as scope:

                def progress(report: lingodoc.BulkProgress) -> None:
                    if report.requests == 3:
                        scope.cancel()

                await client.translate_many(
                    texts, max_concurrency=2, on_progress=progress, done=done, **LANGS
                )
                raise AssertionError("translate_many was not cancelled")
            assert scope.cancelled_caught
            living.append(trio.lowlevel.current_statistics().tasks_living)
            # The client goes on, in the same run.
            assert (await client.translate("Hello", **LANGS)).translated_text == "Hallo"

    trio.run(main)
    assert living[0] == living[1]  # no worker left behind
    assert 300 <= len(done) < 1_000
    assert len(done) % 100 == 0  # whole batches
    assert all(done[i] == translate_text(texts[i], "en", "de") for i in done)


def test_cancelling_the_wait_from_a_cancel_scope_stops_polling(clock: FakeClock) -> None:
    emulator = Emulator(job_duration=1_000.0)
    polls: list[int] = []

    async def main() -> None:
        async with emulator.async_client() as client:
            job = await client.translate_document("doc_welcome", target_language="de")
            with trio.CancelScope() as scope:

                def cancel_after_two(status: lingodoc.TranslationStatus) -> None:
                    polls.append(status.progress)
                    if len(polls) == 2:
                        scope.cancel()

                await client.wait_for_translation(job, on_progress=cancel_after_two)
                raise AssertionError("the wait was not cancelled")
            assert scope.cancelled_caught

    trio.run(main)
    assert len(polls) == 2
    assert [r.method for r in emulator.requests] == ["POST", "GET", "GET"]  # two polls
    # The sleep after the second poll is recorded, then cancelled at its first yield.
    assert clock.sleeps == [5.0, 5.0]


def test_an_async_client_used_in_one_trio_run_is_refused_in_another(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    api.get("/translations/tr_1").mock(
        return_value=httpx.Response(
            200, json=envelope({"translation_id": "tr_1", "status": "processing", "progress": 5})
        )
    )
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)

    async def progress() -> int:
        return (await client.get_translation("tr_1")).progress

    async def twice() -> list[int]:
        return [await progress(), await progress()]

    assert trio.run(twice) == [5, 5]
    for run in (lambda: trio.run(progress), lambda: asyncio.run(progress())):
        with pytest.raises(lingodoc.LingodocError, match="first used in another event loop"):
            run()
    # The first run is over: closing from another run is fine (it holds no connection here).
    trio.run(client.aclose)
    assert client.is_closed


def test_an_async_client_in_use_in_a_running_trio_run_cannot_be_closed_from_another() -> None:
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)
    outcome: list[Any] = []

    async def first() -> None:
        client._gate()  # bound to this run, as by a first call
        # While this run is going, another (in a thread) may not close the pool.

        def close_elsewhere() -> None:
            try:
                trio.run(client.aclose)
            except lingodoc.LingodocError as exc:
                outcome.append(str(exc))

        await trio.to_thread.run_sync(close_elsewhere)

    trio.run(first)
    assert outcome == [
        "this AsyncClient was first used in another event loop, which is still open and "
        "owns its connections: aclose() it in that loop"
    ]
    assert not client.is_closed
    trio.run(client.aclose)  # that run is over now
    assert client.is_closed
