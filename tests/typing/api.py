"""The public API as a user's type checker sees it: checked, never run.

`mypy --strict tests/typing` and `pyright` (strict, configured in pyproject.toml) check this
file in CI (.ci/run). Every call is written as users write it, and `assert_type` pins what the
checkers infer, so a lost or loosened annotation fails CI. The lines marked with
`# type: ignore[...]` and `# pyright: ignore[...]` are misuses that must stay errors: mypy's
warn_unused_ignores and pyright's reportUnnecessaryTypeIgnoreComment fail if they pass.

pytest does not collect it (its name does not start with ``test_``), and nothing imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx
from typing_extensions import assert_type

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer, EmulatorTransport, RequestRecord
from lingodoc.testing import FakeClock, fake_clock


def on_status(status: lingodoc.TranslationStatus) -> None:
    assert_type(status.progress, int)


def results_built_by_hand() -> None:
    # As a user's own tests build them: the fields are the constructor's arguments.
    status = lingodoc.TranslationStatus(translation_id="tr_1", status="completed", progress=100)
    assert_type(status.rate_limit, lingodoc.RateLimit | None)
    text = lingodoc.TextTranslation(
        translated_text="Hallo", source_language="en", target_language="de"
    )
    assert_type(text.translated_text, str)


def on_bulk(progress: lingodoc.BulkProgress) -> None:
    assert_type(progress.done, int)
    assert_type(progress.total, int)
    assert_type(progress.requests, int)
    assert_type(progress.requests_left, int)
    assert_type(progress.rate_limit, lingodoc.RateLimit | None)
    assert_type(progress.waiting_until, datetime | None)
    assert_type(progress.cache_hits, int)
    assert_type(progress.cache_misses, int)


class DictCache:
    """A user's own cache: the two methods of lingodoc.Cache, on a dict."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.data.update(items)


class OnlyAsyncCache:
    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {}

    async def aset_many(self, items: Mapping[str, str]) -> None:
        return None


async def caches() -> None:
    sqlite = lingodoc.SQLiteCache("translations.db", namespace="acme", max_age=86_400)
    assert_type(sqlite.stats().entries, int)
    assert_type(lingodoc.SQLiteCache("c.db", max_entries=1_000_000).max_entries, int | None)
    assert_type(sqlite.clear(older_than=3600), int)
    redis = lingodoc.RedisCache("redis://localhost:6379/0", namespace="acme")
    own: lingodoc.Cache = DictCache()
    with lingodoc.Client("ld_key", cache=sqlite) as client:
        text = client.translate("Hello", source_language="en", target_language="de", cache=False)
        assert_type(text.cached, bool)
        batch = client.translate_batch(["a"], source_language="en", target_language="de")
        assert_type(batch.cached, bool)
        assert_type(batch.cache_hits, int)
        client.translate_many(["a"], source_language="en", target_language="de", cache=True)
        assert_type(client.with_options(cache=own), lingodoc.Client)
        assert_type(client.with_options(cache=False), lingodoc.Client)
        client.translate("Hello", source_language="en", target_language="de", cache="no")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    async with lingodoc.AsyncClient("ld_key", cache=redis) as async_client:
        text = await async_client.translate("Hello", source_language="en", target_language="de")
        assert_type(text.cached, bool)
    lingodoc.AsyncClient("ld_key", cache=OnlyAsyncCache())
    lingodoc.Client("ld_key", cache={})  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def sync_client() -> None:
    lingodoc.Client(max_in_flight=8).close()
    lingodoc.Client(max_in_flight="8").close()  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with lingodoc.Client() as client:
        assert_type(client, lingodoc.Client)
        assert_type(client.base_url, str)
        assert_type(client.timeout, httpx.Timeout)
        assert_type(client.max_retries, int)
        assert_type(client.is_closed, bool)

        text = client.translate("Hello", source_language="en", target_language="de", style=None)
        assert_type(text, lingodoc.TextTranslation)
        assert_type(text.translated_text, str)
        assert_type(text.source_language, str)
        assert_type(text.target_language, str)
        assert_type(text.rate_limit, lingodoc.RateLimit | None)
        assert_type(text.request_id, str | None)
        assert_type(text.http_response, httpx.Response | None)
        if text.http_response is not None:
            assert_type(text.http_response.status_code, int)
            assert_type(text.http_response.json(), Any)

        batch = client.translate_batch(["a", "b"], source_language="en", target_language="fr")
        assert_type(batch, lingodoc.BatchTranslation)
        assert_type(batch.translations, list[str])

        done: dict[int, str] = {}
        many = client.translate_many(
            ["a", "b", "a"],
            source_language="en",
            target_language="fr",
            batch_size=50,
            max_concurrency=4,
            wait_for_rate_limit=3600.0,
            on_progress=on_bulk,
            done=done,
        )
        assert_type(many, list[str])
        client.translate_many(
            ["a"], source_language="en", target_language="fr", wait_for_rate_limit=True
        )

        job = client.translate_document("doc_1", target_language="es", use_translation_memory=True)
        assert_type(job, lingodoc.TranslationJob)
        assert_type(job.translation_id, str)
        assert_type(job.document_id, str)
        assert_type(job.status, lingodoc.TranslationState | str)
        assert_type(job.estimated_completion, datetime | None)

        status = client.get_translation(job.translation_id)
        assert_type(status, lingodoc.TranslationStatus)
        finished = client.wait_for_translation(
            job, poll_interval=1, timeout=60, on_progress=on_status
        )
        assert_type(finished, lingodoc.TranslationStatus)
        assert_type(finished.status, lingodoc.TranslationState | str)
        assert_type(finished.completed_at, datetime | None)
        assert_type(finished.document_id, str | None)
        if isinstance(finished.status, lingodoc.TranslationState):  # else a state new to the SDK
            assert_type(finished.status, lingodoc.TranslationState)
        client.wait_for_translation(job.translation_id, on_progress=lambda s: print(s.progress))

        documents = client.list_documents()
        assert_type(documents, list[lingodoc.Document])
        assert_type(documents[0].document_id, str)
        for document in documents:
            assert_type(document.name, str | None)
            assert_type(document.created_at, datetime | None)
            assert_type(document.language, str | None)
        assert_type(documents[0].model_extra, dict[str, Any] | None)

        assert_type(client.request("GET", "/documents", params={"limit": 5}), Any)
        assert_type(client.with_options(timeout=5, max_retries=0), lingodoc.Client)

        # Per-call options.
        headers = {"X-Trace": "abc"}
        query: dict[str, Any] = {"trace": "abc", "tags": ["a", "b"]}
        text = client.translate(
            "Hello",
            source_language="en",
            target_language="de",
            timeout=5,
            extra_headers=headers,
            extra_query=query,
            extra_body={"glossary_id": "g_1"},
        )
        assert_type(text, lingodoc.TextTranslation)
        client.translate_batch(
            ["a"], source_language="en", target_language="fr", timeout=httpx.Timeout(5, read=60),
            extra_body={"glossary_id": "g_1"},
        )  # fmt: skip
        client.translate_many(
            ["a"], source_language="en", target_language="fr", timeout=2.5,
            extra_headers=headers, extra_query=query, extra_body={"glossary_id": "g_1"},
        )  # fmt: skip
        client.translate_document(
            "doc_1", target_language="es", timeout=None, extra_body={"glossary_id": "g_1"}
        )
        client.get_translation("tr_1", timeout=5, extra_headers=headers, extra_query=query)
        client.wait_for_translation("tr_1", extra_headers=headers, extra_query=query)
        client.list_documents(timeout=5, extra_headers=headers, extra_query=query)
        client.request("GET", "/glossaries", timeout=5, extra_headers=headers)

        limit = client.rate_limit
        assert_type(limit, lingodoc.RateLimit | None)
        if limit is not None:
            assert_type(limit.remaining, int)
            assert_type(limit.reset_at, datetime)

        # Misuses that must stay type errors.
        client.translate(["Hello"], source_language="en", target_language="de")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        client.translate("Hi", source_language="en", target_language="de", timeout="5")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        client.translate("Hi", source_language="en", target_language="de", extra_headers={"X": 1})  # type: ignore[dict-item]  # pyright: ignore[reportArgumentType]
        client.get_translation("tr_1", extra_body={"a": 1})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        client.request("GET", "/documents", extra_query={"a": 1})  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        client.wait_for_translation("tr_1", timeout=httpx.Timeout(5))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        client.get_translation("tr_1", 5)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        client.translate("Hello", "en", "de")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
        client.translate_many(
            ["a"],
            source_language="en",
            target_language="fr",
            on_progress=on_status,  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        )
    client.close()


async def async_client() -> None:
    async with lingodoc.AsyncClient(
        "ld_key",
        base_url="https://api.example.test/v1",
        timeout=httpx.Timeout(10),
        max_retries=2,
        max_in_flight=None,
    ) as client:
        assert_type(client, lingodoc.AsyncClient)
        text = await client.translate("Hello", source_language="en", target_language="de")
        assert_type(text, lingodoc.TextTranslation)
        batch = await client.translate_batch(["a"], source_language="en", target_language="fr")
        assert_type(batch, lingodoc.BatchTranslation)
        many = await client.translate_many(
            ["a"], source_language="en", target_language="fr", on_progress=print, done={0: "x"}
        )
        assert_type(many, list[str])
        job = await client.translate_document("doc_1", target_language="es")
        assert_type(job, lingodoc.TranslationJob)
        assert_type(await client.get_translation("tr_1"), lingodoc.TranslationStatus)
        assert_type(
            await client.wait_for_translation(job, timeout=None), lingodoc.TranslationStatus
        )
        assert_type(await client.list_documents(), list[lingodoc.Document])
        assert_type(batch.request_id, str | None)
        assert_type(batch.http_response, httpx.Response | None)
        assert_type(await client.request("POST", "/glossaries", json={"a": 1}), Any)
        assert_type(
            await client.translate(
                "Hello", source_language="en", target_language="de", timeout=5,
                extra_headers={"X-Trace": "abc"}, extra_query={"n": 1}, extra_body={"a": 1},
            ),
            lingodoc.TextTranslation,
        )  # fmt: skip
        await client.translate_many(
            ["a"], source_language="en", target_language="fr", extra_body={"glossary_id": "g_1"}
        )
        await client.wait_for_translation(job, extra_query={"trace": "abc"})
        await client.list_documents(timeout=httpx.Timeout(None))
        assert_type(client.with_options(max_retries=1), lingodoc.AsyncClient)
        assert_type(client.rate_limit, lingodoc.RateLimit | None)
        # Not awaited: the coroutine is not the result.
        pending = client.translate("Hello", source_language="en", target_language="de")
        _forgot: lingodoc.TextTranslation = pending  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
        await pending
    await client.aclose()


def errors(client: lingodoc.Client) -> None:
    try:
        client.translate_many(["a"], source_language="en", target_language="fr")
    except lingodoc.RateLimited as error:
        assert_type(error.retry_after, float | None)
        assert_type(error.status_code, int | None)
        assert_type(error.code, str | None)
        assert_type(error.message, str)
        assert_type(error.request_id, str | None)
        assert_type(error.rate_limit, lingodoc.RateLimit | None)
    except lingodoc.UnexpectedResponse as error:
        assert_type(error.body, str)
    except lingodoc.APIError as error:
        assert_type(error, lingodoc.APIError)
    except lingodoc.TranslationFailed as error:
        assert_type(error.status, lingodoc.TranslationStatus)
    except lingodoc.WaitTimeout as error:
        assert_type(error.status, lingodoc.TranslationStatus | None)
        assert_type(error.timeout, float)
    except lingodoc.LingodocError as error:
        partial = error.partial
        assert_type(partial, lingodoc.PartialTranslations | None)
        if partial is not None:
            assert_type(partial.total, int)
            assert_type(partial.translations, dict[int, str])
            assert_type(partial.remaining, list[int])
            client.translate_many(
                ["a"], source_language="en", target_language="fr", done=partial.translations
            )
    assert issubclass(lingodoc.APITimeoutError, lingodoc.APIConnectionError)
    assert issubclass(lingodoc.InvalidLanguage, lingodoc.BadRequest)
    assert issubclass(lingodoc.TextTooLong, lingodoc.BadRequest)
    assert issubclass(lingodoc.ConfigurationError, lingodoc.LingodocError)
    assert_type(lingodoc.__version__, str)


def testing() -> None:
    with fake_clock() as clock:
        assert_type(clock, FakeClock)
        clock.advance(30)
        assert_type(clock.sleeps, list[float])
        assert_type(clock.monotonic(), float)
        assert_type(clock.time(), float)
    with fake_clock(FakeClock(start=0)) as pinned:
        assert_type(pinned, FakeClock)


def emulator() -> None:
    em = Emulator(plan="team", seats=3, reset_style="unix", clock=FakeClock())
    assert_type(em.api_key, str)
    assert_type(em.rate_limit, int)
    assert_type(em.base_url, str)
    em.rate_limit = 10
    key = em.create_key("ci", "read_only", expires_at=3600.0)
    assert_type(key, str)
    em.revoke_key(key)
    em.add_document("doc_1", name="Manual", language="en")
    em.inject("server_error", times=2, status=503, path="/translate")
    em.fail_next_job()
    em.advance(5)
    assert_type(em.requests, list[RequestRecord])
    assert_type(em.requests[0].status, int | None)
    assert_type(em.client(), lingodoc.Client)
    assert_type(em.async_client(max_retries=0), lingodoc.AsyncClient)
    transport = em.transport()
    assert_type(transport, EmulatorTransport)
    httpx.Client(transport=transport)
    httpx.AsyncClient(transport=transport)
    with em.serve(port=0) as server:
        assert_type(server, EmulatorServer)
        assert_type(server.base_url, str)
        assert_type(server.port, int)
        lingodoc.Client(server.api_key, base_url=server.base_url)

    em.inject("meteor")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    em.create_key("ci", "admin")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
