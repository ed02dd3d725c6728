"""A cache that breaks during a run never loses a paid translation nor gives a wrong one.

Each test runs on Client and AsyncClient (asyncio and trio), in-process on the emulator
(tests/conftest.py's ``emulated``). A ``translate_many`` of 90 texts (30 of them translated by
an earlier run, 60 new ones in 6 batches of 10, one at a time) meets the fault as its third
batch request arrives: two batches are answered and stored, four are to come.

Whatever the fault, the run returns every translation, right; it sends each new text once,
and nothing the cache held; each translation paid for after the fault is in the cache
afterwards, as the next run opens it; and the cache never holds a translation for another
text. The same client then goes on: it sends exactly what the cache lost, and after that
nothing.

The Redis test (marker ``redis``) starts a redis-server of its own (tests/redis_server.py).
"""

from __future__ import annotations

import contextlib
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

BATCH = 10
FAULT_AT = 3  # the fault strikes as this batch request arrives
EARLIER = corpus(300, repeats=0, seed=11, tag="e")  # an earlier run's, in the cache
FRESH = corpus(75, repeats=0.2, seed=12, tag="f")  # 60 distinct texts, in 6 batches
RUN = EARLIER[:30] + FRESH + [" "]  # found, sent, and a blank one (never sent)
# Other texts' entries, stored after the earlier run's: a file of many pages, most of which
# a run never reads nor writes, as a cache in use for long is. (In a file as small as one
# run's, the run's own stores rewrite every page: the damage is undone before it is read.)
OTHERS = {f"{number:064x}": f"other {number}" for number in range(2_000)}
MANY = {**LANGS, "batch_size": BATCH, "max_concurrency": 1}  # one batch at a time


@pytest.fixture
def emulator() -> Recording:
    return Recording()


def keys_of(texts: Sequence[str]) -> dict[str, str]:
    """The texts of the cache keys that ``emulated``'s clients give them (English to German)."""
    template = _endpoints.batch([], "en", "de", None)  # translate_many's, without its texts
    keys = _cache.keys_of(_cache.service_of(Emulator.base_url), template, None)
    assert keys is not None
    return {keys(text): text for text in texts}


def right(texts: Sequence[str]) -> list[str]:
    return [translate_text(text, "en", "de") for text in texts]


def held(get_many: Callable[[list[str]], Mapping[str, str]], texts: Sequence[str]) -> set[str]:
    """The texts whose translation the cache holds; each must be that text's own."""
    keyed = keys_of(texts)
    found = get_many(list(keyed))
    assert set(found) <= set(keyed)
    for key, translation in found.items():
        assert translation == translate_text(keyed[key], "en", "de"), keyed[key]
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


def paid_after_the_fault(emulator: Recording) -> set[str]:
    """The texts of the batches sent from the fault on."""
    with emulator.lock:
        return {text for texts in emulator.batches[FAULT_AT - 1 :] for text in texts}


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
    os.replace(backup, path)  # a copy taken before the run: it holds EARLIER


def truncated(path: Path, backup: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def overwritten_with_garbage(path: Path, backup: Path) -> None:
    with open(path, "r+b") as file:  # the same file, its bytes garbage
        file.write(garbage(path.stat().st_size))


def replaced_by_garbage(path: Path, backup: Path) -> None:
    scratch = path.with_name("garbage")
    scratch.write_bytes(garbage(path.stat().st_size))
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
    cache = lingodoc.SQLiteCache(path)
    await earlier_run(emulated, cache, emulator)
    cache.set_many(OTHERS)
    cache.close()  # as a run ends: every entry in the file itself, none in its -wal
    shutil.copyfile(path, backup)
    client = emulated.with_options(cache=cache)
    emulator.on_batch = lambda number: break_file(path, backup) if number == FAULT_AT else None
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        translations = await run(client)
        emulator.on_batch = None
        check_the_run(emulator, translations, FRESH)
        cache.close()  # the run ends
        if fault not in NOTICED_LATER:
            assert soundness(path) == "ok"  # a damaged file is never left at the path
        holds = in_file(path, RUN)  # the next run starts
        assert soundness(path) == "ok"  # from then on, at the latest
    if fault not in NOTICED_LATER:
        assert paid_after_the_fault(emulator) <= holds
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
import select, sys
import lingodoc
cache = lingodoc.SQLiteCache(sys.argv[1])
tag = sys.argv[2]
for round_ in range(100_000):
    if select.select([sys.stdin], [], [], 0)[0]:  # stdin closed: the test has seen enough
        break
    cache.set_many({f"{tag}{round_:06x}{n:054x}": f"{tag} {round_}.{n}" for n in range(20)})
    print(round_, flush=True)
"""


class Writer:
    """A process writing entries of its own into the file, 20 a transaction, until stopped."""

    def __init__(self, path: Path, tag: str) -> None:
        self.tag = tag
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.rounds = 0  # reported so far
        self._partial = b""

    def _read(self, timeout: float) -> bool:
        assert self.process.stdout is not None
        if not select.select([self.process.stdout], [], [], timeout)[0]:
            return False
        chunk = os.read(self.process.stdout.fileno(), 65536)
        assert chunk, f"the writer {self.tag} ended: {self.stop()}"
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        self.rounds += len(lines)
        return True

    def wrote_again(self) -> None:
        """Wait (at most WAIT seconds) until a transaction begun from now on is committed."""
        while self._read(0):  # what it reported already
            pass
        target = self.rounds + 2  # the one under way may have begun before
        for _ in range(100_000):
            if self.rounds >= target:
                return
            assert self._read(WAIT), f"the writer {self.tag} wrote nothing for {WAIT} s"
        raise AssertionError("unreachable: each read brings a round")

    def stop(self) -> str:
        """Stop it; the rounds it wrote are counted; its stderr."""
        out, err = self.process.communicate(timeout=WAIT)  # its stdin closed: it stops
        self.rounds += (self._partial + out).count(b"\n")
        self._partial = b""
        return err.decode()

    def entries(self) -> dict[str, str]:
        return {
            f"{self.tag}{round_:06x}{n:054x}": f"{self.tag} {round_}.{n}"
            for round_ in range(self.rounds)
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
            writer.wrote_again()  # both write while the client runs

        def meanwhile(number: int) -> None:
            if number in (1, FAULT_AT):
                for writer in writers:
                    writer.wrote_again()

        emulator.on_batch = meanwhile
        translations = await run(emulated.with_options(cache=cache))
        emulator.on_batch = None
    finally:
        errors = [writer.stop() for writer in writers]
    assert [writer.process.returncode for writer in writers] == [0, 0], errors
    check_the_run(emulator, translations, FRESH)
    cache.close()
    assert in_file(path, [*EARLIER, *FRESH]) == set(EARLIER) | set(FRESH)  # nothing lost
    with lingodoc.SQLiteCache(path) as reader:
        for writer in writers:  # and the writers' own entries, each as written
            assert writer.rounds >= 4
            assert reader.get_many(list(writer.entries())) == writer.entries()


# A store that raises -------------------------------------------------------------------------


class Flaky:
    """Fails the ``failing`` operation ("lookup" or "store") the ``nth`` time it is asked."""

    def __init__(self, failing: str, nth: int) -> None:
        self.failing, self.nth = failing, nth
        self.asked = {"lookup": 0, "store": 0}

    def check(self, operation: str) -> None:
        self.asked[operation] += 1
        if operation == self.failing and self.asked[operation] == self.nth:
            raise ConnectionError(f"the {operation} failed")


class DictStore:
    """A store of one's own, with the async twins too (an AsyncClient awaits them)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.flaky: Flaky | None = None

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        if self.flaky is not None:
            self.flaky.check("lookup")
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        if self.flaky is not None:
            self.flaky.check("store")
        self.data.update(items)

    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return self.get_many(keys)

    async def aset_many(self, items: Mapping[str, str]) -> None:
        self.set_many(items)


class FlakySQLiteCache(lingodoc.SQLiteCache):
    """The built-in store, failing as SQLite does when another writer holds the file too long."""

    flaky: Flaky | None = None

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        self._check("lookup")
        return super().get_many(keys)

    def set_many(self, items: Mapping[str, str]) -> None:
        self._check("store")
        super().set_many(items)

    def _check(self, operation: str) -> None:
        if self.flaky is not None:
            try:
                self.flaky.check(operation)
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
    # The run's store (translate_many stores its 60 translations once, at the end), or its
    # first lookup (the first 10 texts').
    cache.flaky = Flaky(failing, 1)
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        translations = await run(emulated.with_options(cache=cache))
    failed = [r.getMessage() for r in caplog.records if f"the cache's {failing}" in r.getMessage()]
    assert len(failed) == 1
    cache.flaky = None
    unseen = RUN[:BATCH] if failing == "lookup" else []  # looked up in the failed lookup
    check_the_run(emulator, translations, set(FRESH) | (set(unseen) & set(EARLIER)))
    holds = held(get_many, RUN)
    if failing == "store":
        assert holds == set(EARLIER[:30])  # what the earlier run stored, nothing more
    else:
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
        cache = lingodoc.RedisCache(first.url, retry_after=30)
        client = emulated.with_options(cache=cache)
        try:
            await earlier_run(emulated, cache, emulator)

            def stop(number: int) -> None:
                if number == FAULT_AT:
                    first.stop()

            emulator.on_batch = stop
            with caplog.at_level(logging.WARNING, logger="lingodoc"):
                translations = await run(client)
            emulator.on_batch = None
            check_the_run(emulator, translations, FRESH)
            warnings = [r.getMessage() for r in caplog.records if "RedisCache" in r.getMessage()]
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


def in_redis(server: RedisServer, texts: Sequence[str]) -> set[str]:
    """What `held` finds in ``server`` (under the keys RedisCache gives entries)."""

    def get_many(keys: list[str]) -> dict[str, str]:
        values = server.admin.mget([f"lingodoc:{key}" for key in keys])
        return {key: value.decode() for key, value in zip(keys, values, strict=True) if value}

    return held(get_many, texts)
