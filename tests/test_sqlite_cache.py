"""SQLiteCache: one file shared by threads and processes, private, and never in the way.

The file is real (a temporary directory); times are the fake clock's.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lingodoc
from lingodoc import _sqlite_cache
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock
from tests.conftest import call
from tests.waiting import PATIENCE

LANGS = {"source_language": "en", "target_language": "de"}


def entries(count: int, tag: str = "") -> dict[str, str]:
    return {f"{number:064x}": f"translation {tag}{number}" for number in range(count)}


def test_what_is_stored_is_found_and_nothing_else(tmp_path: Path) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    cache.set_many(entries(3))
    assert cache.get_many([f"{2:064x}", f"{9:064x}", f"{0:064x}"]) == {
        f"{2:064x}": "translation 2", f"{0:064x}": "translation 0",
    }  # fmt: skip
    assert cache.get_many([]) == {}


def test_more_keys_than_one_query_takes_are_looked_up_in_chunks(tmp_path: Path) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    stored = entries(1_234)
    cache.set_many(stored)
    assert cache.get_many(list(stored)) == stored


def test_namespaces_of_one_file_are_apart(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    lingodoc.SQLiteCache(path, namespace="acme").set_many(entries(2, "acme "))
    assert lingodoc.SQLiteCache(path, namespace="globex").get_many(list(entries(2))) == {}
    assert lingodoc.SQLiteCache(path).get_many(list(entries(2))) == {}
    assert lingodoc.SQLiteCache(path, namespace="acme").get_many(list(entries(2))) == entries(
        2, "acme "
    )


def test_an_entry_older_than_max_age_is_a_miss(tmp_path: Path, clock: FakeClock) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db", max_age=60)
    cache.set_many(entries(1))
    clock.advance(59)
    assert cache.get_many(list(entries(1))) == entries(1)
    clock.advance(2)
    assert cache.get_many(list(entries(1))) == {}
    cache.set_many(entries(1))  # stored again: fresh
    assert cache.get_many(list(entries(1))) == entries(1)


def rows(path: Path) -> int:
    """The rows in the file, counted by a plain connection: not what the cache shows."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return int(connection.execute(f"SELECT count(*) FROM {_sqlite_cache._TABLE}").fetchone()[0])


def test_expired_entries_are_deleted_by_a_store_not_only_hidden(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path, max_age=60)
    cache.set_many(entries(50))
    clock.advance(61)
    assert rows(path) == 50  # expired, still there until a store
    cache.set_many({"fresh": "translation"})
    assert rows(path) == 1
    assert cache.get_many(["fresh", *entries(50)]) == {"fresh": "translation"}


def test_a_sweep_deletes_at_most_200_more_than_it_stores(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path, max_age=60)
    cache.set_many(entries(1_000))
    clock.advance(61)
    cache.set_many(entries(10, "new "))  # replaces 10 expired rows: 990 left to sweep
    assert rows(path) == 1_000 - 10 - 210 + 10
    cache.set_many({"fresh": "translation"})
    assert rows(path) == 790 - 201 + 1


def test_opening_a_file_sweeps_it_once(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    lingodoc.SQLiteCache(path).set_many(entries(300))
    clock.advance(61)
    lingodoc.SQLiteCache(path)  # no limit: nothing deleted
    assert rows(path) == 300
    lingodoc.SQLiteCache(path, max_age=60)
    assert rows(path) == 100
    lingodoc.SQLiteCache(path, max_entries=40)
    assert rows(path) == 40


def test_max_entries_deletes_the_oldest_stored_first(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path, max_entries=10)
    stored = entries(25)
    for key, text in stored.items():
        cache.set_many({key: text})
        clock.advance(1)
        assert rows(path) <= 10
    assert rows(path) == 10
    newest = dict(list(stored.items())[-10:])
    assert cache.get_many(list(stored)) == newest
    again = dict.fromkeys(list(stored)[-5:], "again")
    cache.set_many(again)  # replaced: nothing new, nothing deleted
    assert cache.get_many(list(stored)) == {**newest, **again}
    clock.advance(1)
    cache.set_many({"new": "translation"})  # the oldest left goes
    assert cache.get_many(list(stored)) == {**dict(list(newest.items())[1:]), **again}
    assert rows(path) == 10


def test_max_age_deletes_no_other_namespaces_entries(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    kept = lingodoc.SQLiteCache(path, namespace="kept")  # no max_age: kept for ever
    kept.set_many(entries(5))
    clock.advance(61)
    short = lingodoc.SQLiteCache(path, namespace="short", max_age=60)
    short.set_many(entries(5))
    clock.advance(61)
    short.set_many({"fresh": "translation"})
    assert kept.get_many(list(entries(5))) == entries(5)
    assert short.get_many(["fresh", *entries(5)]) == {"fresh": "translation"}
    assert rows(path) == 6


def test_a_cleared_cache_under_max_entries_keeps_what_it_stores(
    tmp_path: Path, clock: FakeClock
) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db", max_entries=5)
    cache.set_many(entries(5))
    assert cache.clear() == 5
    later = {f"{number:064x}": "later" for number in range(100, 103)}
    cache.set_many(later)
    assert cache.get_many(list(later)) == later
    clock.advance(1)
    cache.set_many({f"{number:064x}": "last" for number in range(200, 203)})
    assert cache.stats().entries == 5


def test_max_entries_holds_with_several_connections_storing(
    tmp_path: Path, clock: FakeClock
) -> None:
    # Each counts again after another wrote: none sees only its own stores.
    path = tmp_path / "cache.db"
    caches = [lingodoc.SQLiteCache(path, max_entries=30, namespace=name) for name in "ab"]
    for round in range(20):
        for cache in caches:
            cache.set_many({f"{round} {n}": "translation" for n in range(4)})
            clock.advance(1)
            assert rows(path) <= 30
    assert rows(path) == 30


def test_under_max_entries_the_file_stops_growing(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path, max_entries=2_000)

    def store(first: int) -> int:
        """Store 500 new entries; the file's pages after."""
        cache.set_many({f"{n:064x}": f"translation {n}" for n in range(first, first + 500)})
        clock.advance(1)
        with contextlib.closing(sqlite3.connect(path)) as connection:
            return int(connection.execute("PRAGMA page_count").fetchone()[0])

    full = max(store(first) for first in range(0, 4_000, 500))
    later = [store(first) for first in range(4_000, 40_000, 500)]  # 18 times the limit
    assert rows(path) == 2_000
    assert max(later) <= full * 1.1


def test_the_limits_are_in_the_repr(tmp_path: Path) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db", max_age=60, max_entries=1_000)
    assert (cache.max_age, cache.max_entries) == (60.0, 1_000)
    assert repr(cache) == (
        f"SQLiteCache({str(tmp_path / 'cache.db')!r}, namespace=None, max_age=60.0, "
        "max_entries=1000)"
    )


@pytest.fixture(params=[0o000, 0o022], ids=["umask000", "umask022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask set to 000, then to the usual 022: neither makes a file private."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def modes(folder: Path, *names: str) -> dict[str, int]:
    return {name: stat.S_IMODE(os.lstat(folder / name).st_mode) for name in names}


SIDES = ("cache.db", "cache.db-shm", "cache.db-wal")


def test_the_file_and_its_wal_and_shm_files_are_private(tmp_path: Path, umask: int) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    cache.set_many(entries(5))
    assert modes(tmp_path, *SIDES) == dict.fromkeys(SIDES, 0o600)


@pytest.mark.parametrize("with_logs", [False, True], ids=["alone", "with its -wal and -shm"])
def test_a_cache_of_ones_own_open_to_others_is_made_private_with_one_warning(
    tmp_path: Path, umask: int, caplog: pytest.LogCaptureFixture, with_logs: bool
) -> None:
    path = tmp_path / "cache.db"
    first = lingodoc.SQLiteCache(path)
    first.set_many(entries(2))
    if not with_logs:
        first.close()  # the last connection: its -wal and -shm are gone
    loose = sorted(os.listdir(tmp_path))
    assert loose == (list(SIDES) if with_logs else ["cache.db"])
    for name in loose:
        os.chmod(tmp_path / name, 0o666)
    with caplog.at_level(logging.INFO, logger="lingodoc"):
        cache = lingodoc.SQLiteCache(path)
    assert cache.get_many(list(entries(2))) == entries(2)
    assert modes(tmp_path, *SIDES) == dict.fromkeys(SIDES, 0o600)
    [record] = caplog.records
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        "the translation cache was open to others, made 0600: "
        + ", ".join(f"{path}{suffix} (0666)" for suffix in ("", "-wal", "-shm")[: len(loose)])
    )
    lingodoc.SQLiteCache(path).close()  # once private, nothing more to say
    assert len(caplog.records) == 1


def test_a_second_cache_on_one_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    # A descriptor of the file closed in this process would drop the locks SQLite holds on
    # it: another process closing its connection would then take itself for the last one,
    # and delete the -wal and -shm files the first cache still uses.
    path = tmp_path / "cache.db"
    first = lingodoc.SQLiteCache(path, namespace="a")
    first.set_many(entries(2))
    lingodoc.SQLiteCache(path, namespace="b").set_many(entries(1))
    subprocess.run(
        [sys.executable, "-c", "import lingodoc, sys; lingodoc.SQLiteCache(sys.argv[1]).close()",
         str(path)],
        check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert sorted(os.listdir(tmp_path)) == list(SIDES)
    assert first.get_many(list(entries(2))) == entries(2)


def test_a_symbolic_link_at_the_path_is_refused_dangling_or_not(tmp_path: Path) -> None:
    real = tmp_path / "real.db"
    dangling, link = tmp_path / "dangling.db", tmp_path / "link.db"
    dangling.symlink_to(tmp_path / "target.db")
    lingodoc.SQLiteCache(real).set_many(entries(1))
    link.symlink_to(real)
    before = real.read_bytes()
    for path in (dangling, link):
        with pytest.raises(lingodoc.ConfigurationError) as caught:
            lingodoc.SQLiteCache(path)
        assert caught.value.message == (
            f"{str(path)!r} cannot be the cache (a symbolic link, left as it is); "
            "give the cache a path of its own"
        )
    assert sorted(os.listdir(tmp_path)) == ["dangling.db", "link.db", "real.db"]
    assert real.read_bytes() == before


def another_users(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Make ``path`` another user's; return that user's uid.

    As root, it is given to uid 65534 ("nobody"). Otherwise, where chown is refused, this
    process poses as another user, the file staying its own: either way the test runs.
    """
    if not hasattr(os, "geteuid"):  # Windows: no owners to compare
        reason = "files have no POSIX owner here"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: under CI this test must run, not be skipped")
        pytest.skip(reason)
    try:
        os.chown(path, 65534, 65534)
    except PermissionError:
        owner = path.stat().st_uid
        monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
        return owner
    return 65534


def test_a_file_another_user_owns_is_refused_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.db"
    lingodoc.SQLiteCache(path).close()  # a cache
    owner = another_users(path, monkeypatch)
    os.chmod(path, 0o666)  # which anyone could fill with translations
    before = path.read_bytes()
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        lingodoc.SQLiteCache(path)
    assert caught.value.message == (
        f"{str(path)!r} cannot be the cache (a file of another user, uid {owner}, left as "
        "it is); give the cache a path of its own"
    )
    status = os.stat(path)
    assert (status.st_uid, stat.S_IMODE(status.st_mode)) == (owner, 0o666)
    assert (path.read_bytes(), os.listdir(tmp_path)) == (before, ["cache.db"])


def test_many_threads_share_one_cache(tmp_path: Path) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for round_ in range(20):
                mine = {f"{thread:032x}{round_:032x}": f"{thread}.{round_}"}
                cache.set_many(mine)
                assert cache.get_many(list(mine)) == mine
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert cache.stats().entries == 8 * 20


WRITER = """
import sys
import lingodoc
cache = lingodoc.SQLiteCache(sys.argv[1])
tag = sys.argv[2]
for round_ in range(int(sys.argv[3])):
    cache.set_many({f"{tag}{round_:060x}": f"{tag}.{round_}"})
    print(round_, flush=True)
"""


def test_several_processes_write_one_file_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.db")
    command = [sys.executable, "-c", WRITER, path]
    writers = [
        subprocess.Popen([*command, f"{tag:04x}", "50"], stdout=subprocess.DEVNULL)
        for tag in range(4)
    ]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
    cache = lingodoc.SQLiteCache(path)
    keys = [f"{tag:04x}{round_:060x}" for tag in range(4) for round_ in range(50)]
    assert len(cache.get_many(keys)) == 200


OPENERS, NEW_PATHS = 8, 40


def open_new_paths_at_once(paths: list[str], barrier: Any, number: int, errors: Any) -> None:
    """A child of the test below: on each path, opens the cache as the others do, stores its
    entry, and once all have, reads all of theirs."""
    try:
        mine = {f"{number:064x}": f"opener {number}"}
        for path in paths:
            barrier.wait(PATIENCE)
            cache = lingodoc.SQLiteCache(path)
            cache.set_many(mine)
            barrier.wait(PATIENCE)
            everyone = [f"{other:064x}" for other in range(OPENERS)]
            assert cache.get_many(everyone) == {key: f"opener {int(key, 16)}" for key in everyone}
            cache.close()
    except BaseException as exc:  # reported to the test, then the barrier let go of
        errors.put(f"{path}: {type(exc).__name__}: {exc}")
        barrier.abort()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_processes_opening_a_new_file_at_once_all_use_one_cache(tmp_path: Path) -> None:
    # Processes that each set up the new file met "database is locked" when two switched it
    # to WAL at once: a race that cannot be forced, which these 40 paths used to meet.
    context = multiprocessing.get_context("fork")
    barrier, errors = context.Barrier(OPENERS), context.Queue()
    paths = [str(tmp_path / f"cache{number}.db") for number in range(NEW_PATHS)]
    openers = [
        context.Process(target=open_new_paths_at_once, args=(paths, barrier, number, errors))
        for number in range(OPENERS)
    ]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(PATIENCE)
    reported = []
    while not errors.empty():
        reported.append(errors.get())
    assert (reported, [opener.exitcode for opener in openers]) == ([], [0] * OPENERS)
    # No temporary file is left behind. A WAL file and its index may stay: SQLite deletes them
    # only when the last connection closes alone, and these close at once.
    left = {name.removesuffix("-wal").removesuffix("-shm") for name in os.listdir(tmp_path)}
    assert sorted(left) == sorted(os.path.basename(path) for path in paths)


@pytest.mark.parametrize(
    ("interrupt", "raised"),
    [
        (sqlite3.OperationalError("disk I/O error"), lingodoc.ConfigurationError),
        (KeyboardInterrupt(), KeyboardInterrupt),
    ],
)
def test_a_new_cache_is_never_at_its_path_half_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: BaseException, raised: type
) -> None:
    path = tmp_path / "cache.db"
    seen: list[list[str]] = []

    @contextlib.contextmanager
    def failing(connection: sqlite3.Connection) -> Iterator[None]:
        # As the schema is made: what another process would find in the folder then.
        seen.append(os.listdir(tmp_path))
        raise interrupt
        yield

    monkeypatch.setattr(_sqlite_cache, "_transaction", failing)
    with pytest.raises(raised):
        lingodoc.SQLiteCache(path)
    # Only the file being made was there, under a name of its own.
    assert [len(seen[0]) > 0, "cache.db" in seen[0]] == [True, False]
    assert os.listdir(tmp_path) == []  # and nothing left of it
    monkeypatch.undo()
    cache = lingodoc.SQLiteCache(path)  # the next try makes it
    cache.set_many(entries(1))
    assert cache.get_many(list(entries(1))) == entries(1)
    assert sorted(os.listdir(tmp_path)) == ["cache.db", "cache.db-shm", "cache.db-wal"]


def test_an_empty_file_at_the_path_is_used_as_a_new_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    path.touch()
    cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(1))
    assert lingodoc.SQLiteCache(path).get_many(list(entries(1))) == entries(1)


def test_without_hard_links_a_new_cache_is_set_up_at_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def link(source: str, destination: str) -> None:
        raise PermissionError(1, "Operation not permitted")  # as FAT answers

    monkeypatch.setattr(os, "link", link)
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    cache.set_many(entries(1))
    assert cache.get_many(list(entries(1))) == entries(1)
    assert stat.S_IMODE(os.stat(tmp_path / "cache.db").st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["cache.db", "cache.db-shm", "cache.db-wal"]


def test_a_kill_9_in_the_middle_of_writes_leaves_a_usable_cache(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.db")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, path, "beef", "100000"], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    for _ in range(200):  # it has written 200 entries, and writes on
        writer.stdout.readline()
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    writer.stdout.close()
    cache = lingodoc.SQLiteCache(path)
    keys = [f"beef{round_:060x}" for round_ in range(200)]
    assert len(cache.get_many(keys)) == 200
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    cache.set_many({"after": "the crash"})
    assert cache.get_many(["after"]) == {"after": "the crash"}


def test_a_damaged_cache_is_moved_aside_with_one_warning_and_a_new_one_started(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(2_000))
    cache.close()
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damaged = bytearray(path.read_bytes())
    damaged[4096:] = b"\xff" * (len(damaged) - 4096)  # every page but the first
    path.write_bytes(bytes(damaged))
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        cache = lingodoc.SQLiteCache(path)
        assert cache.get_many(list(entries(3))) == {}
        cache.set_many(entries(3))
        assert cache.get_many(list(entries(3))) == entries(3)
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    aside = [
        name
        for name in os.listdir(tmp_path)
        if name.startswith("cache.db.damaged-") and not name.endswith(("-wal", "-shm"))
    ]
    assert len(aside) == 1
    assert str(path) in warnings[0]
    assert str(tmp_path / aside[0]) in warnings[0]
    assert (tmp_path / aside[0]).read_bytes() == bytes(damaged)  # kept as it was


def test_a_cache_cleared_by_another_process_is_not_taken_for_a_damaged_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.db"

    def checkpoint() -> None:  # as SQLite does on its own, at any time
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(2_000, "old "))
    checkpoint()
    assert len(cache.get_many(list(entries(2_000)))) == 2_000  # the file seen at its size
    cleaner = lingodoc.SQLiteCache(path)  # as `lingodoc cache clear` in another process
    assert cleaner.clear() == 2_000
    cleaner.set_many(entries(3))
    checkpoint()
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        assert cache.get_many(list(entries(3))) == entries(3)  # smaller, and sound
    assert (caplog.records, sorted(os.listdir(tmp_path))) == (
        [],
        ["cache.db", "cache.db-shm", "cache.db-wal"],
    )


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE users (name TEXT)")
    before = path.read_bytes()
    with pytest.raises(lingodoc.ConfigurationError, match="cannot be the cache") as caught:
        lingodoc.SQLiteCache(path)
    assert str(path) in str(caught.value)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["app.db"]


NOT_SQLITE = {
    "a CSV": b"text,translation\nHello,Hallo\n",
    "JSON": b'{"texts": ["Hello"]}',
    "a byte": b"x",
    "garbage": b"\x00garbage" * 500,
    "SQLite's header cut short": b"SQLite format 3",
}


@pytest.mark.parametrize("content", NOT_SQLITE.values(), ids=NOT_SQLITE.keys())
def test_a_file_that_is_not_sqlite_is_refused_and_left_byte_for_byte(
    tmp_path: Path, umask: int, content: bytes
) -> None:
    path = tmp_path / "corpus.csv"
    path.write_bytes(content)
    os.chmod(path, 0o644)
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        lingodoc.SQLiteCache(path)
    assert caught.value.message == (
        f"{str(path)!r} cannot be the cache (not an SQLite file, left as it is); "
        "give the cache a path of its own"
    )
    assert (path.read_bytes(), os.listdir(tmp_path)) == (content, ["corpus.csv"])
    assert modes(tmp_path, "corpus.csv") == {"corpus.csv": 0o644}


def test_a_file_that_is_not_sqlite_put_in_the_caches_place_during_a_run_is_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(1))
    notes = tmp_path / "notes"
    notes.write_bytes(b"my notes\n")
    os.replace(notes, path)
    with pytest.raises(lingodoc.ConfigurationError, match="not an SQLite file"):
        cache.set_many({"after": "replaced"})
    assert path.read_bytes() == b"my notes\n"
    assert [name for name in os.listdir(tmp_path) if "damaged" in name] == []


def test_an_sqlite_header_with_the_rest_unreadable_is_moved_aside_as_damaged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.db"
    damaged = b"SQLite format 3\x00" + b"\xff" * 8176
    path.write_bytes(damaged)
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(1))
    assert cache.get_many(list(entries(1))) == entries(1)
    (aside,) = [name for name in os.listdir(tmp_path) if ".damaged-" in name]
    assert (tmp_path / aside).read_bytes() == damaged  # kept, not deleted
    assert [record.levelname for record in caplog.records] == ["WARNING"]


def test_a_cache_file_deleted_or_replaced_during_a_run_is_started_again_at_its_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path)
    cache.set_many(entries(2))
    for name in os.listdir(tmp_path):
        os.remove(tmp_path / name)
    cache.set_many({"after": "deleted"})  # in the new file, not the unlinked one
    assert lingodoc.SQLiteCache(path).get_many(["after", f"{0:064x}"]) == {"after": "deleted"}
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8176)
    os.replace(garbage, path)  # replaced by a damaged database
    cache.set_many({"again": "stored"})
    assert lingodoc.SQLiteCache(path).get_many(["again"]) == {"again": "stored"}


@pytest.mark.parametrize("special", ["/dev/null", "a directory"])
def test_a_path_that_is_not_a_regular_file_is_a_configuration_error(
    tmp_path: Path, special: str
) -> None:
    path = tmp_path if special == "a directory" else Path(special)
    with pytest.raises(lingodoc.ConfigurationError, match="not a regular file"):
        lingodoc.SQLiteCache(path)


def test_a_child_forked_while_another_thread_holds_the_cache_does_not_wait_for_it(
    tmp_path: Path,
) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    entered, release = threading.Event(), threading.Event()

    def hold(connection: sqlite3.Connection) -> None:
        entered.set()
        release.wait(10)

    holder = threading.Thread(target=cache._file.run, args=(hold,))
    holder.start()
    assert entered.wait(10)
    pid = os.fork()
    if pid == 0:  # the lock is held by a thread that does not exist here
        try:
            cache.set_many({"child": "in time"})
            cache.close()
        finally:
            os._exit(0 if cache.get_many(["child"]) == {"child": "in time"} else 1)
    release.set()
    holder.join()
    assert os.waitpid(pid, 0)[1] == 0
    assert cache.get_many(["child"]) == {"child": "in time"}


def test_a_forked_child_uses_the_cache_and_the_parent_goes_on(tmp_path: Path) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    cache.set_many({"parent": "before"})
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: as a Celery prefork worker would
        try:
            cache.set_many({"child": "wrote"})
            found = cache.get_many(["parent", "child"])
            os.write(write, repr(sorted(found.items())).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        assert pipe.read() == repr([("child", "wrote"), ("parent", "before")])
    assert os.waitpid(pid, 0)[1] == 0
    assert cache.get_many(["parent", "child"]) == {"parent": "before", "child": "wrote"}
    with contextlib.closing(sqlite3.connect(tmp_path / "cache.db")) as connection, connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_stats_and_clear_cover_every_namespace(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "cache.db"
    lingodoc.SQLiteCache(path, namespace="a").set_many(entries(3))
    clock.advance(86_400 * 10)
    cache = lingodoc.SQLiteCache(path, namespace="b")
    cache.set_many(entries(2))
    stats = cache.stats()
    assert (stats.entries, stats.namespaces) == (5, 2)
    assert stats.oldest is not None
    assert stats.newest is not None
    assert (stats.newest - stats.oldest).days == 10
    assert stats.size > 0
    assert cache.clear(older_than=86_400 * 5) == 3
    assert cache.stats().entries == 2
    assert cache.clear() == 2
    assert cache.stats()[:4] == (0, 0, None, None)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_age": 0}, lingodoc.InvalidArgument),
        ({"max_age": float("nan")}, lingodoc.InvalidArgument),
        ({"max_age": "1d"}, lingodoc.InvalidArgumentType),
        ({"namespace": 3}, lingodoc.InvalidArgumentType),
        ({"timeout": -1}, lingodoc.InvalidArgument),
        ({"max_entries": 0}, lingodoc.InvalidArgument),
        ({"max_entries": 1.5}, lingodoc.InvalidArgumentType),
        ({"max_entries": True}, lingodoc.InvalidArgumentType),
        ({"max_entries": "1000"}, lingodoc.InvalidArgumentType),
    ],
)
def test_bad_settings_are_refused(tmp_path: Path, options: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        lingodoc.SQLiteCache(tmp_path / "cache.db", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"max_age": 10**400},  # float() of it: OverflowError
        {"max_age": float("inf")},
        {"timeout": 10**400},
        {"timeout": float("inf")},
        {"timeout": 3_000_000.0},  # SQLite's busy timeout in int ms: it would become no wait
    ],
)
def test_seconds_too_large_or_infinite_are_refused_with_the_sdks_error(
    tmp_path: Path, options: dict[str, object]
) -> None:
    name = next(iter(options))
    with pytest.raises(lingodoc.InvalidArgument, match=f"^{name} must be a finite number of"):
        lingodoc.SQLiteCache(tmp_path / "cache.db", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("older_than", [10**400, float("inf")], ids=["huge", "inf"])
def test_clear_refuses_an_age_too_large_or_infinite(tmp_path: Path, older_than: float) -> None:
    cache = lingodoc.SQLiteCache(tmp_path / "cache.db")
    with pytest.raises(lingodoc.InvalidArgument, match=r"^older_than must be a finite number"):
        cache.clear(older_than=older_than)


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """``path`` may not be written while the block runs: immutable for root, else 0400."""
    if os.geteuid() != 0:
        path.chmod(0o400)
        yield
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("root, on a file system without chattr +i: every file is writable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_cache_that_may_not_be_written_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    lingodoc.SQLiteCache(path).close()
    with unwritable(path), pytest.raises(lingodoc.ConfigurationError) as refused:
        lingodoc.SQLiteCache(path)
    assert (
        refused.value.message == f"cannot open the cache {str(path)!r}: the file may not be written"
    )
    assert isinstance(refused.value.__cause__, PermissionError)  # the CLI's exit code 2


def test_read_stats_reads_the_file_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    cache = lingodoc.SQLiteCache(path)
    cache.set_many({f"{n:064x}": f"t{n}" for n in range(3)})
    cache.close()
    path.chmod(0o644)
    content = path.read_bytes()
    held = lingodoc.SQLiteCache.read_stats(path)
    assert (held.entries, held.namespaces, held.size) == (3, 1, len(content))
    assert (path.read_bytes(), path.stat().st_mode & 0o777) == (content, 0o644)
    assert os.listdir(tmp_path) == ["cache.db"]  # no -wal or -shm left behind either
    damaged = content[:4096] + b"\xff" * (len(content) - 4096)
    path.write_bytes(damaged)
    with pytest.raises(sqlite3.DatabaseError):
        lingodoc.SQLiteCache.read_stats(path)
    assert [name for name in os.listdir(tmp_path) if "damaged" in name] == []  # not moved aside
    assert path.read_bytes() == damaged


@pytest.mark.parametrize("name", [os.fsdecode(b"caf\xe9.db"), "a?b#c%20d.db"])
def test_read_stats_reads_any_name_the_cache_opens(tmp_path: Path, name: str) -> None:
    path = os.path.join(tmp_path, name)
    cache = lingodoc.SQLiteCache(path)
    cache.set_many({"a" * 64: "t"})
    cache.close()
    assert lingodoc.SQLiteCache.read_stats(path).entries == 1
    with pytest.raises(lingodoc.ConfigurationError, match="No such file or directory"):
        lingodoc.SQLiteCache.read_stats(path + ".missing")


def test_a_log_left_without_its_database_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path, wal = tmp_path / "cache.db", tmp_path / "cache.db-wal"
    wal.write_bytes(b"the log of a deleted database, with pages past its header")
    with pytest.raises(lingodoc.ConfigurationError) as refused:
        lingodoc.SQLiteCache(path)
    assert refused.value.message == (
        f"cannot make the cache {str(path)!r}: {str(wal)!r} is there without its database, "
        "and SQLite would read it into the new one"
    )
    assert refused.value.hint == (
        f"remove {str(wal)!r} if a cache there was deleted, or give the cache another path"
    )
    assert (os.listdir(tmp_path), wal.read_bytes()) == (
        ["cache.db-wal"],
        b"the log of a deleted database, with pages past its header",
    )


def test_an_empty_wal_or_a_lone_shm_left_at_the_path_is_no_obstacle(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    (tmp_path / "cache.db-wal").write_bytes(b"")  # no page in it
    (tmp_path / "cache.db-shm").write_bytes(b"\0" * 32)  # rebuilt by the first connection
    cache = lingodoc.SQLiteCache(path)
    cache.set_many({"a" * 64: "t"})
    assert cache.get_many(["a" * 64]) == {"a" * 64: "t"}
    cache.close()


@pytest.mark.parametrize(
    "schema", ["CREATE VIEW v AS SELECT 1 AS x", "PRAGMA user_version = 7"], ids=["view", "version"]
)
def test_another_programs_database_without_tables_is_refused_and_left_as_it_is(
    tmp_path: Path, schema: str
) -> None:
    path = tmp_path / "theirs.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute(schema)
    content = path.read_bytes()
    with pytest.raises(lingodoc.ConfigurationError, match="another program's database"):
        lingodoc.SQLiteCache(path)
    assert (path.read_bytes(), os.listdir(tmp_path)) == (content, ["theirs.db"])


@pytest.mark.parametrize("name", ["a\x00b.db", "new\ud800.db"], ids=["NUL", "surrogate"])
def test_a_path_no_file_system_takes_is_a_configuration_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="cannot open the cache"):
        lingodoc.SQLiteCache(os.path.join(tmp_path, name))
    assert os.listdir(tmp_path) == []


def test_memory_is_refused_rather_than_made_a_file_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for memory in (":memory:", Path(":memory:")):
        with pytest.raises(lingodoc.ConfigurationError) as refused:
            lingodoc.SQLiteCache(memory)
        assert refused.value.message == (
            "SQLiteCache keeps its translations in a file: give it a path, not ':memory:'"
        )
        assert refused.value.hint == (
            "for a cache in memory, pass a store of your own (DictCache, caching guide)"
        )
    assert os.listdir(tmp_path) == []


def test_a_relative_path_names_one_file_whatever_the_working_directory_becomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    cache = lingodoc.SQLiteCache("cache.db")
    cache.set_many({"key": "stored"})
    monkeypatch.chdir(tmp_path / "elsewhere")  # as a daemon or a forked worker may
    cache.close()  # the next use opens the file again, as a forked child does
    assert cache.get_many(["key"]) == {"key": "stored"}
    assert cache.path == str(tmp_path / "here" / "cache.db")
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_relative_path_through_a_link_and_dot_dot_names_the_file_the_system_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "link").symlink_to(tmp_path / "real" / "sub")
    monkeypatch.chdir(tmp_path / "here")
    lingodoc.SQLiteCache("link/../cache.db").set_many({"key": "stored"})
    assert (tmp_path / "real" / "cache.db").is_file()  # as open() would find it
    assert sorted(os.listdir(tmp_path / "here")) == ["link"]


def test_a_relative_path_in_a_deleted_working_directory_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(lingodoc.ConfigurationError) as refused:
        lingodoc.SQLiteCache("cache.db")
    assert refused.value.message == (
        "cannot open the cache 'cache.db': the working directory is gone"
    )
    assert refused.value.hint == "give the cache an absolute path"
    # An absolute path needs no working directory.
    lingodoc.SQLiteCache(tmp_path / "cache.db").set_many({"key": "stored"})
    assert lingodoc.SQLiteCache(tmp_path / "cache.db").get_many(["key"]) == {"key": "stored"}


def test_a_path_in_a_missing_folder_is_a_configuration_error_that_names_the_folder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "missing" / "cache.db"
    with pytest.raises(lingodoc.ConfigurationError) as refused:
        lingodoc.SQLiteCache(path)
    assert (
        refused.value.message == f"cannot open the cache {str(path)!r}: No such file or directory"
    )
    assert refused.value.hint == f"make its folder {str(path.parent)!r} first"
    assert isinstance(refused.value.__cause__, FileNotFoundError)  # why, for the caller to see
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def emulator() -> Emulator:
    return Emulator()


async def test_a_client_stores_up_to_max_entries(emulated: lingodoc.Client, tmp_path: Path) -> None:
    client = emulated.with_options(cache=lingodoc.SQLiteCache(tmp_path / "c.db", max_entries=3))
    await call(client, "translate_many", [f"text {n}" for n in range(10)], **LANGS)
    assert rows(tmp_path / "c.db") == 3


async def test_a_second_run_of_a_script_sends_nothing(
    emulated: lingodoc.Client, emulator: Emulator, tmp_path: Path
) -> None:
    # Two runs, each with a client of its own on one file, as two runs of a script.
    texts = ["Hello", "World", "Hello", "Good morning"]
    path = tmp_path / "cache.db"
    runs = []
    for _ in range(2):
        client = emulated.with_options(cache=lingodoc.SQLiteCache(path))
        progress: list[lingodoc.BulkProgress] = []
        result = await call(client, "translate_many", texts, on_progress=progress.append, **LANGS)
        runs.append((result, progress[-1].cache_hits, progress[-1].cache_misses))
    assert runs[0][0] == runs[1][0]
    assert [run[1:] for run in runs] == [(0, 3), (3, 0)]
    single = await call(client, "translate", "World", **LANGS)
    assert single.cached
    assert single.translated_text == runs[0][0][1]
