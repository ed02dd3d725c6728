"""A value carries its key: a store that answers with another key's value is a miss, never served.

The client stores each translation after its key's first 16 hex digits and serves a hit only
with its own key's: a Redis that answers out of step (tests/resp_server.py, a fake one; a
real one with its values swapped is in tests/test_redis_cache.py), an SQLite file whose rows
were swapped, or a store of one's own filled by hand. Each on Client and AsyncClient (asyncio
and trio), through the three methods that consult the cache, on the in-process emulator.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import lingodoc
from lingodoc import _cache, _endpoints
from lingodoc.emulator import Emulator, translate_text
from tests.conftest import call
from tests.resp_server import OutOfStepRedis
from tests.test_cache_properties import DictStore  # the protocol on a dict

LANGS = {"source_language": "en", "target_language": "de"}
# Swapped in pairs: (0, 1), (2, 3), (4, 5); each translated to a text of its own.
TEXTS = ["Good morning", "Good night", "Thank you", "See you soon", "Welcome home", "Goodbye"]
MISMATCH = "the cache returned values that are not those of the keys asked for"


@pytest.fixture
def emulator() -> Emulator:
    return Emulator()


def key_of(text: str) -> str:
    """The key the emulator's clients give ``text``, English to German."""
    template = _endpoints.batch([], "en", "de", None)  # translate_many's, without its texts
    keys = _cache.keys_of(_cache.service_of(Emulator.base_url), template, None)
    assert keys is not None
    return keys(text)


def german(texts: Sequence[str]) -> list[str]:
    return [translate_text(text, "en", "de") for text in texts]


def sent(emulator: Emulator) -> int:
    """The translate requests the emulator has answered."""
    return sum(
        record.path.endswith(("/translate", "/translate/batch")) for record in emulator.requests
    )


async def each_method(client: Any) -> list[str]:
    """TEXTS[0] through translate, TEXTS[2:4] through translate_batch, TEXTS[4:] translate_many."""
    one = await call(client, "translate", TEXTS[0], **LANGS)
    batch = await call(client, "translate_batch", TEXTS[2:4], **LANGS)
    many = await call(client, "translate_many", TEXTS[4:], **LANGS)
    return [one.translated_text, *batch.translations, *many]


EXPECTED = german([TEXTS[0], *TEXTS[2:]])


async def served_right_after(
    client: Any, emulator: Emulator, caplog: pytest.LogCaptureFixture, mismatch: Callable[[], None]
) -> None:
    """Fill the cache, let ``mismatch()`` hand values to other keys, and check what follows.

    Each method sends its texts again (one request each: no value of another key is served)
    and returns their own translations, the mismatch logged once (5 values in 3 lookups); the
    translations are stored anew, so a last round sends nothing.
    """
    assert await call(client, "translate_many", TEXTS, **LANGS) == german(TEXTS)
    mismatch()
    before = sent(emulator)
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        assert await each_method(client) == EXPECTED
    assert sent(emulator) - before == 3
    assert [r.levelname for r in caplog.records if MISMATCH in r.getMessage()] == ["WARNING"]
    assert await each_method(client) == EXPECTED
    assert sent(emulator) - before == 3  # each under its own key


async def test_a_store_sees_each_value_as_its_keys_first_16_digits_then_the_translation(
    emulated: Any,
) -> None:
    store = DictStore()
    await call(emulated.with_options(cache=store), "translate_batch", TEXTS[:2], **LANGS)
    assert store.data == {
        key_of(text): key_of(text)[:16] + translation
        for text, translation in zip(TEXTS[:2], german(TEXTS[:2]), strict=True)
    }


async def test_values_swapped_in_a_store_of_your_own_are_sent_again_and_stored_anew(
    emulated: Any, emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    store = DictStore()
    client = emulated.with_options(cache=store)

    def swap() -> None:
        for first, second in zip(TEXTS[::2], TEXTS[1::2], strict=True):
            a, b = key_of(first), key_of(second)
            store.data[a], store.data[b] = store.data[b], store.data[a]

    await served_right_after(client, emulator, caplog, swap)


async def test_a_value_stored_by_hand_without_the_digits_is_a_miss(
    emulated: Any, emulator: Emulator
) -> None:
    store = DictStore()
    store.data[key_of(TEXTS[0])] = "not the translation"
    result = await call(emulated.with_options(cache=store), "translate", TEXTS[0], **LANGS)
    assert (result.translated_text, result.cached, sent(emulator)) == (
        german(TEXTS[:1])[0],
        False,
        1,
    )
    assert store.data[key_of(TEXTS[0])] == key_of(TEXTS[0])[:16] + german(TEXTS[:1])[0]


def swap_rows(path: Path) -> None:
    """Give each pair of TEXTS the other's row in the file, as an UPDATE by hand would."""
    with contextlib.closing(sqlite3.connect(path)) as file, file:
        for first, second in zip(TEXTS[::2], TEXTS[1::2], strict=True):
            a, b = key_of(first), key_of(second)
            file.execute(
                "UPDATE lingodoc_translations SET translation = CASE key "
                "WHEN :a THEN (SELECT translation FROM lingodoc_translations WHERE key = :b) "
                "ELSE (SELECT translation FROM lingodoc_translations WHERE key = :a) END "
                "WHERE key IN (:a, :b)",
                {"a": a, "b": b},
            )


async def test_swapped_sqlite_rows_are_sent_again_never_served(
    emulated: Any, emulator: Emulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with lingodoc.SQLiteCache(tmp_path / "cache.db") as cache:
        client = emulated.with_options(cache=cache)
        await served_right_after(client, emulator, caplog, lambda: swap_rows(tmp_path / "cache.db"))


@pytest.fixture
def out_of_step() -> Iterator[OutOfStepRedis]:
    server = OutOfStepRedis()
    yield server
    server.close()


async def test_a_redis_answering_with_other_keys_values_is_never_served(
    emulated: Any,
    emulator: Emulator,
    out_of_step: OutOfStepRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = lingodoc.RedisCache(out_of_step.url)
    try:

        def desync() -> None:  # the next 3 lookups, those of each_method's 3 calls
            out_of_step.out_of_step = 3

        await served_right_after(emulated.with_options(cache=cache), emulator, caplog, desync)
        assert (out_of_step.out_of_step, out_of_step.mgets) == (0, 7)  # none failed
    finally:
        await cache.aclose()
