"""A cache that breaks during a run never loses a paid translation nor gives a wrong one.

Each test runs on Client and AsyncClient (asyncio and trio), in-process on the emulator
(tests/conftest.py's ``emulated``). A ``translate_many`` of 1,831 texts (30 of them translated
by an earlier run, 1,500 new ones in 15 batches of 100, one at a time) stores what it is
answered 1,000 translations at a time and the rest at its end (docs/caching.md): the fault
strikes as its first store has ended, between two stores of the run.

Whatever the fault, the run returns every translation, right; it sends each new text once,
and nothing the cache held; each translation stored after the fault is in the cache
afterwards, as the next run opens it (but for a file overwritten in place: NOTICED_LATER); no
damaged file is left at the path; and the cache never holds a translation for another text.
The same client then goes on: it sends exactly what the cache lost, and after that nothing.

The Redis test (marker ``redis``) starts a redis-server of its own (tests/redis_server.py).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import select
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import lingodoc
from lingodoc import _cache, _endpoints
from lingodoc.emulator import Emulator, translate_text
from lingodoc.testing import FakeClock
from tests.conftest import call
from tests.redis_server import RedisServer, require_redis_server, running_redis
from tests.reliability.cache_helpers import LANGS, ROOT, WAIT, Recording, corpus

BATCH = 100
EARLIER = corpus(300, repeats=0, seed=11, tag="e")  # an earlier run's, in the cache
FRESH = corpus(1_800, repeats=1 / 6, seed=12, tag="f")  # 1,500 distinct texts: 15 batches
RUN = EARLIER[:30] + FRESH + [" "]  # found, sent, and a blank one (never sent)
# Other texts' entries, stored after the earlier run's, under keys that sort apart from the
# run's (digests): a file of many pages that a run never reads nor writes, as a cache in use
# for long has. (Were the run's stores to rewrite every page, a damage would be undone before
# anything read it.)
OTHERS = {f"{number:064x}": f"other {number}" for number in range(2_000)}
MANY = {**LANGS, "batch_size": BATCH, "max_concurrency": 1}  # one batch at a time


@pytest.fixture
def emulator() -> Recording:
    return Recording()


@functools.cache
def key_of(text: str) -> str:
    """The cache key that ``emulated``'s clients give ``text`` (English to German)."""
    template = _endpoints.batch([], "en", "de", None)  # translate_many's, without its texts
    keys = _cache.keys_of(_cache.service_of(Emulator.base_url), template, None)
    assert keys is not None
    return keys(text)


def keys_of(texts: Sequence[str]) -> dict[str, str]:
    """The texts of their cache keys."""
    return {key_of(text): text for text in texts}


@functools.cache
def german(text: str) -> str:
    """The emulator's translation of ``text`` (each asked many times: worked out once)."""
    return translate_text(text, "en", "de")


def right(texts: Sequence[str]) -> list[str]:
    return [german(text) for text in texts]


def held(get_many: Callable[[list[str]], Mapping[str, str]], texts: Sequence[str]) -> set[str]:
    """The texts whose translation the cache holds; each must be that text's own."""
    keyed = keys_of(texts)
    found = get_many(list(keyed))
    assert set(found) <= set(keyed)
    for key, value in found.items():  # the key's first 16 hex digits, then the translation
        assert value == key[:16] + german(keyed[key]), keyed[key]
    return {keyed[key] for key in found}


def soundness(path: Path) -> str:
    """``PRAGMA integrity_check`` of the file at ``path`` (read only): ``ok``, or what is wrong."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as file:
            return "\n".join(row[0] for row in file.execute("PRAGMA integrity_check"))[:300]
    except sqlite3.DatabaseError as exc:
        return f"{type(exc).__name__}: {exc}"


def in_file(path: Path, texts: Sequence[str]) -> set[str]:
    """What `held` finds in the file at ``path``, opened as the next run opens it."""
    with lingodoc.SQLiteCache(path) as cache:
        return held(cache.get_many, texts)


async def run(client: Any, texts: Sequence[str] = RUN) -> list[str]:
    translations: list[str] = await call(client, "translate_many", list(texts), **MANY)
    return translations


async def earlier_run(client: Any, cache: Any, emulator: Recording) -> None:
    """An earlier run, which left the translations of EARLIER in ``cache``."""
    assert await run(client.with_options(cache=cache), EARLIER) == right(EARLIER)
    emulator.forget()


def check_the_run(emulator: Recording, translations: list[str], missed: Sequence[str]) -> None:
    """Every translation returned, right; each text missed sent once, and nothing else."""
    assert translations == right(RUN)
    assert sorted(emulator.sent()) == sorted(set(missed))
    assert len(emulator.batches) == -(-len(set(missed)) // BATCH)


def stored_after_the_fault(stores: list[set[str]]) -> set[str]:
    """The texts of the run's stores after its first (the fault struck between the two)."""
    assert len(stores) >= 2, "the run stored once: no fault struck between two stores"
    texts = keys_of(RUN)
    return {texts[key] for keys in stores[1:] for key in keys}


class Breaking(lingodoc.SQLiteCache):
    """The built-in cache; ``fault``, if set, strikes once, as a store has ended."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.fault: Callable[[], object] | None = None
        self.stores: list[set[str]] = []  # the keys of each store asked of it

    def set_many(self, items: Mapping[str, str]) -> None:
        self.stores.append(set(items))
        super().set_many(items)
        fault, self.fault = self.fault, None
        if fault is not None:
            fault()


async def goes_on(client: Any, emulator: Recording, holds: set[str]) -> None:
    """The same client sends exactly the texts the cache lacks, then nothing."""
    emulator.forget()
    assert await run(client) == right(RUN)
    assert sorted(emulator.sent()) == sorted(set(RUN) - holds - {" "})
    emulator.forget()
    assert await run(client) == right(RUN)
    assert emulator.batches == []


# The SQLite file, deleted, replaced, truncated or overwritten during a run ------------------


def deleted(path: Path, backup: Path) -> None:
    path.unlink()  # as `rm cache.db` does: its -wal and -shm stay


def deleted_with_its_logs(path: Path, backup: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def replaced_by_a_backup(path: Path, backup: Path) -> None:
    os.replace(backup, path)  # an older copy: it holds EARLIER, not OTHERS


def truncated(path: Path, backup: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def overwritten_with_garbage(path: Path, backup: Path) -> None:
    with open(path, "r+b") as file:  # the same file, its bytes garbage
        file.write(garbage(path.stat().st_size))


def replaced_by_garbage(path: Path, backup: Path) -> None:
    scratch = path.with_name("garbage")
    # SQLite's header, then garbage: a damaged database. A file that is not SQLite at all
    # is refused and left as it is (tests/test_sqlite_cache.py).
    scratch.write_bytes(b"SQLite format 3\x00" + garbage(path.stat().st_size - 16))
    os.replace(scratch, path)  # a new file at the path


# Each fault, and whether it damages the file (moved aside, one warning) or not.
FAULTS = {
    "deleted": (deleted, False),
    "deleted with its -wal and -shm": (deleted_with_its_logs, False),
    "replaced by a backup": (replaced_by_a_backup, False),
    "truncated": (truncated, True),
    "overwritten with garbage": (overwritten_with_garbage, True),
    "replaced by garbage": (replaced_by_garbage, True),
}
# Bytes overwritten in place, at the same size, show only when SQLite reads them: the cache
# never opens the file itself (closing a descriptor would drop SQLite's locks), so the run
# ends without noticing, and the next run moves the file aside. Its entries are lost to the
# cache, not to the caller: every translation was returned.
NOTICED_LATER = {"overwritten with garbage"}


def damage_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "lingodoc" and "damaged" in record.getMessage()
    ]


def moved_aside(path: Path) -> list[Path]:
    return sorted(
        found
        for found in path.parent.iterdir()
        if found.name.startswith(f"{path.name}.damaged-")
        and not found.name.endswith(("-wal", "-shm"))
    )


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_the_sqlite_file_broken_during_a_run_loses_no_paid_translation(
    emulated: Any,
    emulator: Recording,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fault: str,
) -> None:
    break_file, damages = FAULTS[fault]
    path, backup = tmp_path / "cache.db", tmp_path / "backup.db"
    cache = Breaking(path)
    await earlier_run(emulated, cache, emulator)
    cache.close()  # as a run ends: every entry in the file itself, none in its -wal
    shutil.copyfile(path, backup)  # a backup of the cache as it was then
    cache.set_many(OTHERS)  # and it went on
    cache.close()
    client = emulated.with_options(cache=cache)
    cache.stores.clear()
    cache.fault = lambda: break_file(path, backup)
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        translations = await run(client)
        check_the_run(emulator, translations, FRESH)
        cache.close()  # the run ends
        if fault not in NOTICED_LATER:
            assert soundness(path) == "ok"  # a damaged file is never left at the path
        holds = in_file(path, RUN)  # the next run starts
        assert soundness(path) == "ok"  # from then on, at the latest
    if fault not in NOTICED_LATER:
        assert stored_after_the_fault(cache.stores) <= holds
    if fault == "replaced by a backup":
        assert set(EARLIER[:30]) <= holds
    warnings, aside = damage_warnings(caplog), moved_aside(path)
    if damages:
        assert len(aside) == 1
        assert len(warnings) == 1
        assert str(path) in warnings[0]
        assert str(aside[0]) in warnings[0]
    else:
        assert (warnings, aside) == ([], [])
    await goes_on(client, emulator, holds)


WRITER = """
import sys
import lingodoc
cache = lingodoc.SQLiteCache(sys.argv[1])
tag = sys.argv[2]
written = 0
print(written, flush=True)  # ready
for line in sys.stdin:  # each line: how many transactions to write now; then how many are
    for _ in range(int(line)):
        cache.set_many({f"{tag}{written:06x}{n:054x}": f"{tag} {written}.{n}" for n in range(20)})
        written += 1
    print(written, flush=True)
"""


class Writer:
    """A process writing entries of its own into the file, 20 a transaction, when asked."""

    def __init__(self, path: Path, tag: str) -> None:
        self.tag = tag
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.written = 0  # transactions committed, as it last said

    def said(self) -> int:
        """Wait (at most WAIT seconds) for its next report: how many it has written so far."""
        assert self.process.stdout is not None
        if not select.select([self.process.stdout], [], [], WAIT)[0]:
            raise AssertionError(f"the writer {self.tag} said nothing for {WAIT} s")
        line = self.process.stdout.readline()
        assert line, f"the writer {self.tag} ended: {self.stop()}"
        self.written = int(line)
        return self.written

    def write(self, transactions: int) -> None:
        """Ask for more, and go on without waiting: it writes while the client runs."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{transactions}\n")
        self.process.stdin.flush()

    def stop(self) -> str:
        """Let it finish what it was asked, and end; its stderr."""
        out, err = self.process.communicate(timeout=WAIT)  # its stdin closed: it ends
        if out.split():
            self.written = int(out.split()[-1])
        return err

    def entries(self) -> dict[str, str]:
        return {
            f"{self.tag}{written:06x}{n:054x}": f"{self.tag} {written}.{n}"
            for written in range(self.written)
            for n in range(20)
        }


async def test_two_processes_writing_the_file_during_a_run_lose_nothing_and_mix_nothing(
    emulated: Any, emulator: Recording, tmp_path: Path
) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path)
    await earlier_run(emulated, cache, emulator)
    writers = [Writer(path, tag) for tag in ("a0a0", "b1b1")]
    try:
        for writer in writers:
            assert writer.said() == 0  # ready

        def meanwhile(number: int) -> None:
            if number in (1, 6, 12):  # they write as the run sends, and stores (after 10)
                for writer in writers:
                    writer.write(5)
            if number == 6:  # what they were asked at the first batch is written
                for writer in writers:
                    assert writer.said() == 5

        emulator.on_batch = meanwhile
        translations = await run(emulated.with_options(cache=cache))
        emulator.on_batch = None
    finally:
        errors = [writer.stop() for writer in writers]
    assert [writer.process.returncode for writer in writers] == [0, 0], errors
    assert [writer.written for writer in writers] == [15, 15]
    check_the_run(emulator, translations, FRESH)
    cache.close()
    assert in_file(path, [*EARLIER, *FRESH]) == set(EARLIER) | set(FRESH)  # nothing lost
    with lingodoc.SQLiteCache(path) as reader:
        for writer in writers:  # and the writers' own entries, each as written
            assert reader.get_many(list(writer.entries())) == writer.entries()


# A store that raises -------------------------------------------------------------------------


class Flaky:
    """Fails the first ``failing`` operation ("lookup" or "store") asked of it; keeps its keys."""

    def __init__(self, failing: str) -> None:
        self.failing = failing
        self.failed: list[str] | None = None  # the keys of the operation that failed

    def check(self, operation: str, keys: Sequence[str]) -> None:
        if operation == self.failing and self.failed is None:
            self.failed = list(keys)
            raise ConnectionError(f"the {operation} failed")


class DictStore:
    """A store of one's own, with the async twins too (an AsyncClient awaits them)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.flaky: Flaky | None = None

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        if self.flaky is not None:
            self.flaky.check("lookup", keys)
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        if self.flaky is not None:
            self.flaky.check("store", list(items))
        self.data.update(items)

    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return self.get_many(keys)

    async def aset_many(self, items: Mapping[str, str]) -> None:
        self.set_many(items)


class FlakySQLiteCache(lingodoc.SQLiteCache):
    """The built-in store, failing as SQLite does when another writer holds the file too long."""

    flaky: Flaky | None = None

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        self._check("lookup", keys)
        return super().get_many(keys)

    def set_many(self, items: Mapping[str, str]) -> None:
        self._check("store", list(items))
        super().set_many(items)

    def _check(self, operation: str, keys: Sequence[str]) -> None:
        if self.flaky is not None:
            try:
                self.flaky.check(operation, keys)
            except ConnectionError:
                raise sqlite3.OperationalError("database is locked") from None


@pytest.mark.parametrize("store", ["a store of your own", "SQLiteCache"])
@pytest.mark.parametrize("failing", ["store", "lookup"])
async def test_a_store_that_raises_mid_run_is_logged_and_loses_no_paid_translation(
    emulated: Any,
    emulator: Recording,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    store: str,
    failing: str,
) -> None:
    cache: DictStore | FlakySQLiteCache
    if store == "SQLiteCache":
        cache = FlakySQLiteCache(tmp_path / "cache.db")
        get_many = lingodoc.SQLiteCache(tmp_path / "cache.db").get_many
    else:
        cache = DictStore()
        get_many = cache.get_many
    await earlier_run(emulated, cache, emulator)
    # The run's first store (its first 1,000 translations, more to come), or its first
    # lookup (its first 100 texts', 30 of them found by the earlier run).
    flaky = cache.flaky = Flaky(failing)
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        translations = await run(emulated.with_options(cache=cache))
    failed = [r.getMessage() for r in caplog.records if f"the cache's {failing}" in r.getMessage()]
    assert len(failed) == 1
    cache.flaky = None
    assert flaky.failed is not None
    texts = keys_of(RUN)
    unseen = {texts[key] for key in flaky.failed} if failing == "lookup" else set()
    check_the_run(emulator, translations, set(FRESH) | (unseen & set(EARLIER)))
    holds = held(get_many, RUN)
    if failing == "store":
        lost = {texts[key] for key in flaky.failed}
        assert 0 < len(lost) < len(set(FRESH))  # a store of the run, not its only one
        assert holds == set(RUN) - {" "} - lost
    else:
        assert set(EARLIER[:30]) <= unseen
        assert holds == set(RUN) - {" "}
    await goes_on(emulated.with_options(cache=cache), emulator, holds)


# Redis stopped mid-run ------------------------------------------------------------------------


@pytest.mark.redis
async def test_redis_stopped_mid_run_loses_no_translation_and_is_used_again_when_back(
    emulated: Any,
    emulator: Recording,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    require_redis_server()
    with running_redis() as first:
        cache = BreakingRedis(first.url, retry_after=30)
        client = emulated.with_options(cache=cache)
        try:
            await earlier_run(emulated, cache, emulator)
            cache.stores.clear()
            cache.fault = first.stop  # as the run's first store has ended
            with caplog.at_level(logging.WARNING, logger="lingodoc"):
                translations = await run(client)
            check_the_run(emulator, translations, FRESH)
            assert len(cache.stores) >= 2  # it struck between two stores of the run
            warnings = [r.getMessage() for r in caplog.records if "Redis at" in r.getMessage()]
            assert len(warnings) == 1
            assert f"Redis at {first.url} failed" in warnings[0]
            port = first.port
            # Back, empty (it keeps nothing on disk): once retry_after is over, used again.
            with running_redis(port) as second:
                clock.advance(30)
                emulator.forget()
                assert await run(client) == right(RUN)
                assert sorted(emulator.sent()) == sorted(set(RUN) - {" "})
                assert in_redis(second, RUN) == set(RUN) - {" "}
                emulator.forget()
                assert await run(client) == right(RUN)
                assert emulator.batches == []
        finally:
            await call(cache, "aclose")


class BreakingRedis(lingodoc.RedisCache):
    """RedisCache, recording each store tried; ``fault``, if set, strikes once, as one has ended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fault: Callable[[], object] | None = None
        self.stores: list[set[str]] = []

    def set_many(self, items: Mapping[str, str]) -> None:
        try:
            super().set_many(items)
        finally:  # a store that failed too
            self._stored(items)

    async def aset_many(self, items: Mapping[str, str]) -> None:
        before = len(self.stores)
        try:
            await super().aset_many(items)  # on trio, set_many in a worker thread
        finally:
            if len(self.stores) == before:  # on asyncio, redis.asyncio
                self._stored(items)

    def _stored(self, items: Mapping[str, str]) -> None:
        self.stores.append(set(items))
        fault, self.fault = self.fault, None
        if fault is not None:
            fault()


def in_redis(server: RedisServer, texts: Sequence[str]) -> set[str]:
    """What `held` finds in ``server`` (under the keys RedisCache gives entries)."""

    def get_many(keys: list[str]) -> dict[str, str]:
        values = server.admin.mget([f"lingodoc:{key}" for key in keys])
        return {key: value.decode() for key, value in zip(keys, values, strict=True) if value}

    return held(get_many, texts)
