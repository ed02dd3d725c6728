"""The client's cache: a text found is not sent, the key holds all that changes a translation.

Each test runs on Client and AsyncClient (asyncio and trio) against a respx router; the
cache is a plain dict with the two methods of the protocol (tests/test_sqlite_cache.py
tests the built-in one).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import httpx
import pytest
import respx

import lingodoc
from lingodoc import _cache, _endpoints
from lingodoc._options import call_options
from lingodoc.testing import FakeClock
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, sent_json

LANGS = {"source_language": "en", "target_language": "de"}


class DictCache:
    """The protocol on a dict, counting what the client asks of it."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.lookups: list[list[str]] = []
        self.stores: list[dict[str, str]] = []

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        self.lookups.append(list(keys))
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.stores.append(dict(items))
        self.data.update(items)


class FailingCache:
    """A store whose every lookup and store raises."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        raise ConnectionError("the cache is down")

    def set_many(self, items: Mapping[str, str]) -> None:
        raise ConnectionError("the cache is down")


def translator(request: httpx.Request) -> httpx.Response:
    """The service: ``[de] text`` for each text, with a request id and rate-limit headers."""
    body = httpx.Request(request.method, request.url, content=request.content).read()
    sent = __import__("json").loads(body)
    headers = {"X-Request-Id": "req_1", "X-RateLimit-Limit": "9", "X-RateLimit-Remaining": "8"}
    headers["X-RateLimit-Reset"] = "60"
    if "texts" in sent:
        data: Any = {"translations": [f"[de] {text}" for text in sent["texts"]]}
    else:
        data = {"translated_text": f"[de] {sent['text']}", **LANGS}
    return httpx.Response(200, json=envelope(data), headers=headers)


@pytest.fixture
def routes(api: respx.MockRouter) -> tuple[respx.Route, respx.Route]:
    """The two translate endpoints, answering as `translator`."""
    return (
        api.post("/translate").mock(side_effect=translator),
        api.post("/translate/batch").mock(side_effect=translator),
    )


@pytest.fixture
async def cached(
    client_class: type[lingodoc.Client], anyio_backend: str
) -> Any:  # a Client or AsyncClient with a DictCache
    instance = client_class(API_KEY, base_url=BASE_URL, cache=DictCache())
    yield instance
    await close(instance)


def store_of(client: Any) -> DictCache:
    cache: DictCache = client._cache.cache
    return cache


def translations(stored: Mapping[str, str]) -> dict[str, str]:
    """What a store holds, by key: each value is its key's first 16 hex digits, then this."""
    assert all(value[:16] == key[:16] for key, value in stored.items()), stored
    return {key: value[16:] for key, value in stored.items()}


async def test_a_text_translated_once_is_not_sent_again(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    first = await call(cached, "translate", "Hello", **LANGS)
    again = await call(cached, "translate", "Hello", **LANGS)
    assert routes[0].call_count == 1
    assert (first.cached, again.cached) == (False, True)
    assert again == first  # the same translation and languages
    assert first.request_id == "req_1"
    assert first.rate_limit is not None
    assert (again.request_id, again.rate_limit, again.http_response) == (None, None, None)


async def test_a_call_whose_texts_are_all_found_sends_nothing(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate_batch", ["one", "two"], **LANGS)
    routes[1].mock(side_effect=httpx.ConnectError("no network"))
    result = await call(cached, "translate_batch", ["two", "one"], **LANGS)
    assert result.translations == ["[de] two", "[de] one"]
    assert (result.cached, result.cache_hits, result.request_id) == (True, 2, None)
    assert await call(cached, "translate_many", ["one", "two", "one"], **LANGS) == [
        "[de] one", "[de] two", "[de] one",
    ]  # fmt: skip
    assert routes[1].call_count == 1


async def test_translate_and_the_batch_methods_share_entries_both_ways(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate", "one", **LANGS)
    await call(cached, "translate_batch", ["two"], **LANGS)
    batch = await call(cached, "translate_batch", ["one"], **LANGS)
    text = await call(cached, "translate", "two", **LANGS)
    many = await call(cached, "translate_many", ["one", "two"], **LANGS)
    assert (batch.cached, text.cached, many) == (True, True, ["[de] one", "[de] two"])
    assert (routes[0].call_count, routes[1].call_count) == (1, 1)


async def test_a_partly_cached_batch_sends_only_the_texts_missed_in_one_request(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate_batch", ["b", "d"], **LANGS)
    result = await call(cached, "translate_batch", ["a", "b", "c", "d", "a"], **LANGS)
    assert sent_json(routes[1])["texts"] == ["a", "c", "a"]
    assert result.translations == ["[de] a", "[de] b", "[de] c", "[de] d", "[de] a"]
    assert (result.cached, result.cache_hits) == (False, 2)
    # The request that translated the texts missed is the one reported.
    assert result.request_id == "req_1"
    assert result.rate_limit is not None
    assert result.http_response is not None
    assert result.http_response.json()["data"]["translations"] == ["[de] a", "[de] c", "[de] a"]
    assert translations(store_of(cached).stores[-1]) == {
        key: f"[de] {text}" for key, text in zip(keys_for(["a", "c"]), "ac", strict=True)
    }


def keys_for(texts: list[str], **options: Any) -> list[str]:
    """The keys the client at BASE_URL gives these texts, English to German."""
    call = _endpoints.translate_batch(texts, "en", "de", call_options(**options))
    keys = _cache.keys_of(_cache.service_of(BASE_URL), call, None)
    assert keys is not None
    return [keys(text) for text in texts]


async def test_a_call_with_cache_false_neither_looks_up_nor_stores(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate", "Hello", **LANGS)
    again = await call(cached, "translate", "Hello", cache=False, **LANGS)
    await call(cached, "translate_batch", ["x"], cache=False, **LANGS)
    await call(cached, "translate_many", ["y"], cache=False, **LANGS)
    assert again.cached is False
    assert routes[0].call_count == 2
    assert routes[1].call_count == 2
    assert len(store_of(cached).lookups) == 1
    assert len(store_of(cached).data) == 1


async def test_cache_must_be_a_bool_per_call(cached: lingodoc.Client) -> None:
    with pytest.raises(lingodoc.InvalidArgumentType, match="cache must be a bool"):
        await call(cached, "translate", "Hello", cache="no", **LANGS)


async def test_with_options_swaps_or_drops_the_cache(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    other = DictCache()
    await call(cached.with_options(cache=False), "translate", "one", **LANGS)
    await call(cached.with_options(cache=other), "translate", "two", **LANGS)
    await call(cached.with_options(timeout=5), "translate", "three", **LANGS)
    assert list(translations(other.data).values()) == ["[de] two"]
    assert sorted(translations(store_of(cached).data).values()) == ["[de] three"]


def test_an_object_without_the_methods_is_refused(client_class: type[lingodoc.Client]) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match=r"get_many and set_many.*not dict"):
        client_class(API_KEY, base_url=BASE_URL, cache={})  # type: ignore[arg-type]


# 10**400: added to the clock at its first failure, an OverflowError out of the call.
@pytest.mark.parametrize(
    "retry_after", [10**400, float("nan"), "30", True], ids=["huge", "nan", "str", "bool"]
)
def test_a_cache_whose_retry_after_is_no_number_of_seconds_is_refused(
    client_class: type[lingodoc.Client], retry_after: object
) -> None:
    store = FailingCache()
    store.retry_after = retry_after  # type: ignore[attr-defined]
    with pytest.raises(
        lingodoc.ConfigurationError, match=r"^the cache's retry_after must be a finite number"
    ):
        client_class(API_KEY, base_url=BASE_URL, cache=store)


def test_the_class_of_a_cache_is_refused_with_how_to_make_one(
    client_class: type[lingodoc.Client],
) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as refused:
        client_class(API_KEY, base_url=BASE_URL, cache=lingodoc.SQLiteCache)  # type: ignore[arg-type]
    assert refused.value.message.endswith(
        'such as lingodoc.SQLiteCache("translations.db"), not the class SQLiteCache'
    )


async def test_a_class_that_is_a_store_through_class_methods_is_used(
    client_class: type[lingodoc.Client], routes: tuple[respx.Route, respx.Route]
) -> None:
    class ClassStore:  # made here: its data is this test's alone
        data: ClassVar[dict[str, str]] = {}

        @classmethod
        def get_many(cls, keys: Sequence[str]) -> Mapping[str, str]:
            return {key: cls.data[key] for key in keys if key in cls.data}

        @classmethod
        def set_many(cls, items: Mapping[str, str]) -> None:
            cls.data.update(items)

    client = client_class(API_KEY, base_url=BASE_URL, cache=ClassStore)
    await call(client, "translate", "one", **LANGS)
    again = await call(client, "translate", "one", **LANGS)
    await close(client)
    assert again.cached
    assert routes[0].call_count == 1


class AsyncCall:
    """An object whose ``__call__`` is async: calling it makes a coroutine too."""

    async def __call__(self, argument: object) -> dict[str, str]:
        return {}


class AsyncUnderPlainNames:
    """Async methods under the names a client calls without awaiting."""

    async def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {}

    async def set_many(self, items: Mapping[str, str]) -> None:
        pass


class AsyncCallUnderPlainNames:
    """The same with objects whose ``__call__`` is async."""

    get_many = AsyncCall()
    set_many = AsyncCall()


@pytest.mark.parametrize("kind", [AsyncUnderPlainNames, AsyncCallUnderPlainNames])
def test_async_methods_under_the_plain_names_are_refused(
    client_class: type[lingodoc.Client], kind: type
) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as refused:
        client_class(API_KEY, base_url=BASE_URL, cache=kind())
    assert refused.value.message == (
        f"the get_many and set_many of {kind.__name__} must not be async: name async ones "
        "aget_many and aset_many, which an AsyncClient awaits"
    )


class ListingCache(DictCache):
    """A store whose lookups answer a list, not a mapping."""

    def get_many(self, keys: Sequence[str]) -> Any:
        return list(super().get_many(keys).values())


async def test_a_lookup_that_is_not_a_mapping_is_logged_as_such_and_the_texts_sent(
    client_class: type[lingodoc.Client],
    routes: tuple[respx.Route, respx.Route],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, cache=ListingCache())
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        text = await call(client, "translate", "one", **LANGS)
    await close(client)
    assert text.translated_text == "[de] one"
    assert [r.getMessage() for r in caplog.records] == [
        "the cache's lookup failed (TypeError: get_many returned list, not a mapping of keys); "
        "the translations are sent and returned without it"
    ]


class AwaitedCache(DictCache):
    """The async twins alone would do for an AsyncClient; these record that they ran."""

    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        self.lookups.append(["awaited", *keys])
        return {key: self.data[key] for key in keys if key in self.data}

    async def aset_many(self, items: Mapping[str, str]) -> None:
        self.stores.append({"awaited": "yes", **items})
        self.data.update(items)


async def test_an_async_client_awaits_the_async_methods_and_a_client_calls_the_others(
    client_class: type[lingodoc.Client], routes: tuple[respx.Route, respx.Route]
) -> None:
    cache = AwaitedCache()
    client = client_class(API_KEY, base_url=BASE_URL, cache=cache)
    await call(client, "translate", "one", **LANGS)
    await close(client)
    awaited = client_class is not lingodoc.Client
    assert (cache.lookups[0][0] == "awaited") is awaited
    assert ("awaited" in cache.stores[0]) is awaited


class OnlyAsync:
    """The async twins alone, storing in a dict."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {key: self.data[key] for key in keys if key in self.data}

    async def aset_many(self, items: Mapping[str, str]) -> None:
        self.data.update(items)


def test_an_async_cache_alone_is_refused_by_a_client() -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="get_many and set_many, such as"):
        lingodoc.Client(API_KEY, base_url=BASE_URL, cache=OnlyAsync())  # type: ignore[arg-type]


async def test_an_async_cache_alone_serves_an_async_client(
    routes: tuple[respx.Route, respx.Route],
) -> None:
    cache = OnlyAsync()
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, cache=cache) as client:
        await client.translate("one", **LANGS)
        again = await client.translate("one", **LANGS)
    assert list(translations(cache.data).values()) == ["[de] one"]
    assert again.cached
    assert routes[0].call_count == 1


async def test_a_failing_cache_never_loses_a_translation_and_is_logged_once(
    client_class: type[lingodoc.Client],
    routes: tuple[respx.Route, respx.Route],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, cache=FailingCache())
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        text = await call(client, "translate", "one", **LANGS)
        batch = await call(client, "translate_batch", ["two"], **LANGS)
        many = await call(client, "translate_many", ["three", "four"], batch_size=1, **LANGS)
    await close(client)
    assert (text.translated_text, batch.translations, many) == (
        "[de] one", ["[de] two"], ["[de] three", "[de] four"],
    )  # fmt: skip
    failures = [r for r in caplog.records if "the cache's" in r.getMessage()]
    assert [r.levelname for r in failures][:2] == ["WARNING", "DEBUG"]
    assert {r.levelname for r in failures[1:]} == {"DEBUG"}
    assert "ConnectionError: the cache is down" in failures[0].getMessage()


class Outage(DictCache):
    """A store that is down until told otherwise, asking to be left alone 10 s after a failure."""

    retry_after = 10
    down = True
    asked = 0  # lookups and stores, failed or not

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        self.asked += 1
        if self.down:
            raise ConnectionError("the cache is down")
        return super().get_many(keys)

    def set_many(self, items: Mapping[str, str]) -> None:
        self.asked += 1
        if self.down:
            raise ConnectionError("the cache is down")
        super().set_many(items)


async def test_a_failing_store_is_left_alone_for_its_retry_after_then_used_again(
    client_class: type[lingodoc.Client],
    routes: tuple[respx.Route, respx.Route],
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Outage()
    client = client_class(API_KEY, base_url=BASE_URL, cache=store)
    asked = []
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        await call(client, "translate", "one", **LANGS)  # its lookup fails; its store waits
        asked.append(store.asked)
        store.down = False
        clock.advance(9.9)  # up, but not asked yet
        await call(client, "translate_batch", ["one", "two"], **LANGS)
        asked.append(store.asked)
        clock.advance(0.1)
        await call(client, "translate", "one", **LANGS)  # looked up, missed, stored
        asked.append(store.asked)
        found = await call(client, "translate", "one", **LANGS)
    await close(client)
    assert asked == [1, 1, 3]
    assert (translations(store.data), found.cached) == ({store.lookups[0][0]: "[de] one"}, True)
    logged = [
        (r.levelname, r.getMessage()) for r in caplog.records if "the cache" in r.getMessage()
    ]
    assert logged == [
        ("WARNING", "the cache's lookup failed (ConnectionError: the cache is down); the "
                    "translations are sent and returned without it, and it is not asked for 10 s"),
        ("INFO", "the cache works again: translations are looked up and stored"),
    ]  # fmt: skip
    assert (routes[0].call_count, routes[1].call_count) == (2, 1)  # the last one found


class FullDisk(DictCache):
    """Lookups work; every store fails, as on a full disk."""

    def set_many(self, items: Mapping[str, str]) -> None:
        raise OSError(28, "No space left on device")


async def test_a_store_that_keeps_failing_is_warned_once_though_lookups_work(
    client_class: type[lingodoc.Client],
    routes: tuple[respx.Route, respx.Route],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, cache=FullDisk())
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        for text in ("one", "two", "three"):
            await call(client, "translate", text, **LANGS)
    await close(client)
    logged = [r.levelname for r in caplog.records if "the cache" in r.getMessage()]
    assert logged == ["WARNING", "DEBUG", "DEBUG"]  # no "works again" after each lookup
    assert routes[0].call_count == 3


class StoreOutage(DictCache):
    """Lookups work; the first store fails; it asks to be left alone 10 s after a failure."""

    retry_after = 10
    failed = False

    def set_many(self, items: Mapping[str, str]) -> None:
        if not self.failed:
            self.failed = True
            raise ConnectionError("read-only replica")
        super().set_many(items)


async def test_a_failed_store_is_tried_again_after_retry_after_and_then_stores(
    client_class: type[lingodoc.Client],
    routes: tuple[respx.Route, respx.Route],
    clock: FakeClock,
) -> None:
    store = StoreOutage()
    client = client_class(API_KEY, base_url=BASE_URL, cache=store)
    await call(client, "translate", "one", **LANGS)  # its store fails
    clock.advance(10)
    await call(client, "translate", "two", **LANGS)  # looked up, then stored
    found = await call(client, "translate", "two", **LANGS)
    await close(client)
    assert (sorted(translations(store.data).values()), found.cached) == (["[de] two"], True)


async def test_translate_many_looks_up_the_distinct_texts_and_sends_the_misses(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate_batch", ["t1", "t3", "t5"], **LANGS)
    texts = [f"t{number}" for number in range(7)] + ["t0", " "]
    progress: list[lingodoc.BulkProgress] = []
    done: dict[int, str] = {}
    result = await call(
        cached, "translate_many", texts, batch_size=2, on_progress=progress.append,
        done=done, **LANGS,
    )  # fmt: skip
    assert result == [f"[de] {text}" if text.strip() else text for text in texts]
    assert done == dict(enumerate(result))
    # One lookup of the distinct, non-blank texts (up to a thousand at a time).
    assert [len(keys) for keys in store_of(cached).lookups[1:]] == [7]
    # The misses t0, t2, t4, t6: two batches of two, sent at once (in either order).
    sent = sorted(body["texts"] for body in sent_bodies(routes[1])[1:])
    assert sent == [["t0", "t2"], ["t4", "t6"]]
    assert (progress[0].cache_hits, progress[0].cache_misses) == (3, 4)
    assert (progress[0].done, progress[0].requests_left) == (4, 2)  # t1, t3, t5 and the blank
    assert progress[-1] == (9, 9, 2, 0, progress[-1].rate_limit, None, 3, 4)
    # The first batch's, then those of this run in one store, at its end (under 1,000).
    assert [len(stored) for stored in store_of(cached).stores] == [3, 4]


async def test_translate_many_looks_up_and_stores_a_thousand_at_a_time_the_rest_at_the_end(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    texts = [f"t{number}" for number in range(2_500)]
    await call(cached, "translate_many", texts, max_concurrency=1, **LANGS)
    assert [len(keys) for keys in store_of(cached).lookups] == [1_000, 1_000, 500]
    assert [len(stored) for stored in store_of(cached).stores] == [1_000, 1_000, 500]
    assert len(store_of(cached).data) == 2_500


async def test_a_run_stopped_by_an_error_stores_what_was_paid_for(
    cached: lingodoc.Client, api: respx.MockRouter
) -> None:
    answers = iter([translator, translator, lambda request: httpx.Response(400, json={})])
    api.post("/translate/batch").mock(side_effect=lambda request: next(answers)(request))
    texts = [f"t{number}" for number in range(300)]
    with pytest.raises(lingodoc.APIError):
        await call(cached, "translate_many", texts, max_concurrency=1, **LANGS)
    stored = translations(store_of(cached).data)
    assert sorted(stored.values()) == sorted(f"[de] {t}" for t in texts[:200])


def sent_bodies(route: respx.Route) -> list[Any]:
    import json

    return [json.loads(sent.request.content) for sent in route.calls]


# Each changes one part of the key from the first call; each must be a miss.
KEY_PARTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("text", {}, {"text": "Hello!"}),
    ("source language", {}, {"source_language": "fr"}),
    ("target language", {}, {"target_language": "es"}),
    ("style", {}, {"style": "formal"}),
    ("style changed", {"style": "formal"}, {"style": "casual"}),
    ("an extra_body field", {}, {"extra_body": {"glossary_id": "g1"}}),
    ("an extra_body value", {"extra_body": {"glossary": "g1"}}, {"extra_body": {"glossary": "g2"}}),
    ("an extra_body type", {"extra_body": {"level": 1}}, {"extra_body": {"level": "1"}}),
    ("an extra_query parameter", {}, {"extra_query": {"model": "next"}}),
    ("an extra_query value", {"extra_query": {"model": "a"}}, {"extra_query": {"model": "b"}}),
    ("the order of a repeated extra_query name", {"extra_query": {"g": ["a", "b"]}},
     {"extra_query": {"g": ["b", "a"]}}),
]  # fmt: skip


@pytest.mark.parametrize(("part", "first", "second"), KEY_PARTS, ids=[p[0] for p in KEY_PARTS])
async def test_a_change_in_any_part_of_the_key_is_a_miss(
    cached: lingodoc.Client,
    api: respx.MockRouter,
    part: str,
    first: dict[str, Any],
    second: dict[str, Any],
) -> None:
    route = api.post("/translate").mock(side_effect=translator)
    arguments = {"text": "Hello", **LANGS, **first}
    await call(cached, "translate", **arguments)
    await call(cached, "translate", **{**arguments, **second})
    assert route.call_count == 2
    await call(cached, "translate", **{**arguments, **second})
    assert route.call_count == 2  # and the second, asked again, is a hit


async def test_headers_are_not_part_of_the_key(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    await call(cached, "translate", "Hello", extra_headers={"X-Trace": "1"}, **LANGS)
    again = await call(cached, "translate", "Hello", extra_headers={"X-Trace": "2"}, **LANGS)
    assert again.cached
    assert routes[0].call_count == 1


async def test_an_extra_body_that_json_cannot_sort_is_sent_and_not_cached(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    mixed = {"options": {1: "a", "b": "c"}}  # httpx sends it; sorted keys cannot be
    for _ in range(2):
        result = await call(cached, "translate", "Hello", extra_body=mixed, **LANGS)
        assert result.translated_text == "[de] Hello"
    assert routes[0].call_count == 2
    assert store_of(cached).lookups == []


async def test_an_extra_body_that_replaces_the_text_is_never_cached(
    cached: lingodoc.Client, routes: tuple[respx.Route, respx.Route]
) -> None:
    for _ in range(2):
        await call(cached, "translate", "Hello", extra_body={"text": "Bye"}, **LANGS)
    assert routes[0].call_count == 2
    assert store_of(cached).lookups == []


@pytest.mark.parametrize(
    ("url", "same"),
    [
        ("https://API.lingodoc.test/v1", True),
        ("https://api.lingodoc.test:443/v1", True),
        ("https://api.lingodoc.test:8443/v1", False),
        ("https://eu.lingodoc.test/v1", False),
        ("https://api.lingodoc.test/v2", False),
    ],
)
def test_the_service_in_the_key_is_the_base_url_as_httpx_normalises_it(
    url: str, same: bool
) -> None:
    template = _endpoints.translate("Hello", "en", "de", None, None)
    ours = _cache.keys_of(_cache.service_of(BASE_URL), template, None)
    theirs = _cache.keys_of(_cache.service_of(url), template, None)
    assert ours is not None
    assert theirs is not None
    assert (ours("Hello") == theirs("Hello")) is same


async def test_another_service_or_port_is_a_miss_through_the_client(
    client_class: type[lingodoc.Client],
) -> None:
    shared = DictCache()
    urls = [BASE_URL, "https://api.lingodoc.test:8443/v1", "https://eu.lingodoc.test/v1"]
    for url in [*urls, BASE_URL.replace("api.", "API.")]:  # the last: BASE_URL again
        with respx.mock(base_url=url, assert_all_called=False) as router:
            router.post("/translate").mock(side_effect=translator)
            client = client_class(API_KEY, base_url=url, cache=shared)
            result = await call(client, "translate", "Hello", **LANGS)
            await close(client)
        assert result.cached is (url not in urls)
    assert len(shared.data) == 3


async def test_the_query_parameters_of_an_http_client_of_yours_are_in_the_key(
    client_class: type[lingodoc.Client], routes: tuple[respx.Route, respx.Route]
) -> None:
    shared = DictCache()
    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    for glossary in ("g1", "g2", "g1"):
        http = kind(params={"glossary": glossary})
        client = client_class(API_KEY, base_url=BASE_URL, cache=shared, http_client=http)
        await call(client, "translate", "Hello", **LANGS)
        await close(client)
        await call(http, "aclose" if kind is httpx.AsyncClient else "close")
    assert routes[0].call_count == 2
    assert [dict(sent.request.url.params) for sent in routes[0].calls] == [
        {"glossary": "g1"}, {"glossary": "g2"},
    ]  # fmt: skip


def test_the_key_is_a_stable_digest_that_holds_no_key_of_the_api() -> None:
    # Pinned: the same on every machine, process and Python; a change here empties every
    # user's cache, so it must come with a new _KEY_VERSION.
    assert keys_for(["Hello"]) == [
        "eb376a78b671763336fdc022b0af51a197214d7a964592ecb7c00d522850e1b8"
    ]
