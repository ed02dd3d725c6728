"""`lingodoc batch --cache FILE` and `lingodoc cache stats|clear FILE`: re-runs never pay twice."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import sqlite3
from pathlib import Path

import pytest

import lingodoc
from lingodoc.cli import main
from lingodoc.cli._errors import cache_failure
from lingodoc.emulator import EmulatorServer, translate_text
from tests.cli.conftest import RunCLI, child_env
from tests.cli.test_cli_batch import Recorder, batch_in_process, checkpoint_lines, de, phrases
from tests.test_sqlite_cache import unwritable


@pytest.fixture
def emulator() -> Recorder:
    """The emulator, recording the texts of each batch request."""
    return Recorder()


def batches(emulator: Recorder) -> list[list[str]]:
    """The texts of each batch request the emulator has received."""
    return emulator.received


def corpus(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_second_run_with_the_cache_sends_only_the_new_texts(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    first = corpus(tmp_path, ["Hello", "Thank you", "Hello"])
    run = cli("batch", str(first), "--to", "de", "--cache", str(cache))
    assert run.code == 0, run.err
    assert f"lingodoc: cache {cache}: 0 found, 2 sent" in run.err
    second = corpus(tmp_path, ["Hello", "Good morning", "Thank you"])
    run = cli("batch", str(second), "--to", "de", "--cache", str(cache))
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        translate_text(text, "en", "de") for text in ("Hello", "Good morning", "Thank you")
    ]
    assert batches(emulator) == [["Hello", "Thank you"], ["Good morning"]]
    assert "cache: 2 hits, 1 miss" in run.err  # the progress line
    assert f"lingodoc: cache {cache}: 2 found, 1 sent" in run.err  # and the summary


def test_lingodoc_cache_in_the_environment_is_the_cache(
    cli: RunCLI, emulator: Recorder, env: dict[str, str], tmp_path: Path
) -> None:
    cache = tmp_path / "env.db"
    path = corpus(tmp_path, ["Hello"])
    with_cache = {**env, "LINGODOC_CACHE": str(cache)}
    for _ in range(2):
        assert cli("batch", str(path), "--to", "de", env=with_cache).code == 0
    assert batches(emulator) == [["Hello"]]
    assert lingodoc.SQLiteCache(cache).stats().entries == 1


def test_the_cache_cannot_be_the_input_the_output_or_the_checkpoint(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    path = corpus(tmp_path, ["Hello"])
    out = tmp_path / "out.txt"
    named = ((path, "the input"), (out, "--output"), (tmp_path / "c.ckpt", "the checkpoint"))
    for cache, other in named:
        run = cli(
            "batch", str(path), "--to", "de", "-o", str(out), "--checkpoint",
            str(tmp_path / "c.ckpt"), "--cache", str(cache),
        )  # fmt: skip
        assert run.code == 2
        assert f"{other} " in run.error
        assert f"the cache {cache} are the same file" in run.error
    assert emulator.requests == []
    assert path.read_text(encoding="utf-8") == "Hello\n"


@pytest.mark.parametrize("log", ["-wal", "-shm"])
def test_the_output_cannot_be_a_log_file_of_the_cache(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, log: str
) -> None:
    path, cache = corpus(tmp_path, ["Hello"]), tmp_path / "c.db"
    out = tmp_path / f"c.db{log}"  # SQLite deletes it as the cache closes
    run = cli("batch", str(path), "--to", "de", "-o", str(out), "--cache", str(cache))
    assert (run.code, run.error) == (
        2,
        f"lingodoc: error: --output {out} and the cache's {log} file {out} are the same file: "
        "give each a path of its own",
    )
    assert emulator.requests == []


def test_another_programs_database_is_refused_as_the_cache(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    theirs = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(theirs)) as connection, connection:
        connection.execute("CREATE TABLE users (name TEXT)")
    run = cli("batch", str(corpus(tmp_path, ["Hello"])), "--to", "de", "--cache", str(theirs))
    assert run.code == 2
    assert f"{str(theirs)!r} cannot be the cache" in run.error
    assert emulator.requests == []


def test_resume_with_a_cache_goes_on_from_the_checkpoint_and_a_rerun_sends_nothing(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    texts = [f"Hello world {number}" for number in range(50)]
    path, cache = corpus(tmp_path, texts), tmp_path / "cache.db"
    emulator.rate_limit = 3  # 5 batches of 10 needed
    command = ("batch", str(path), "--to", "de", "--batch-size", "10", "--cache", str(cache))
    run = cli(*command, "-o", str(tmp_path / "out.txt"))
    assert run.code == 5, run.err  # the rate limit stopped it: 30 done, in the checkpoint
    assert lingodoc.SQLiteCache(cache).stats().entries == 30  # and in the cache
    emulator.advance(3600)  # the window resets
    resumed = cli(*command, "-o", str(tmp_path / "out.txt"), "--resume")
    assert resumed.code == 0, resumed.err
    assert resumed.err.startswith("lingodoc: resuming: 30 of 50 texts were done before\n")
    assert f"lingodoc: cache {cache}: 0 found, 20 sent" in resumed.err
    expected = [translate_text(text, "en", "de") for text in texts]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() == expected
    sent = len(emulator.requests)
    again = cli(*command, "-o", str(tmp_path / "again.txt"))
    assert again.code == 0, again.err
    assert f"lingodoc: cache {cache}: 50 found, 0 sent" in again.err
    assert len(emulator.requests) == sent  # nothing sent
    assert (tmp_path / "again.txt").read_text(encoding="utf-8").splitlines() == expected


def test_cache_max_entries_keeps_the_newest_in_the_cache(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    path = corpus(tmp_path, ["Hello", "Thank you", "Good morning"])
    run = cli("batch", str(path), "--to", "de", "--cache", str(cache), "--cache-max-entries", "2")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        translate_text(text, "en", "de") for text in ("Hello", "Thank you", "Good morning")
    ]
    with contextlib.closing(sqlite3.connect(cache)) as connection:
        assert connection.execute("SELECT count(*) FROM lingodoc_translations").fetchone() == (2,)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--cache-max-entries", "0"], "expected a whole number >= 1, not '0'"),
        (["--cache-max-entries", "lots"], "expected a whole number >= 1, not 'lots'"),
        (
            ["--cache-max-entries", "10"],
            "--cache-max-entries limits a cache: give --cache FILE (or LINGODOC_CACHE)",
        ),
    ],
)
def test_cache_max_entries_must_be_a_whole_number_for_a_cache(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, options: list[str], error: str
) -> None:
    run = cli("batch", str(corpus(tmp_path, ["Hello"])), "--to", "de", *options)
    assert run.code == 2
    assert error in run.err
    assert emulator.requests == []


def test_stats_and_clear(cli: RunCLI, tmp_path: Path, env: dict[str, str]) -> None:
    cache = tmp_path / "cache.db"
    lingodoc.SQLiteCache(cache).set_many({f"{n:064x}": f"t{n}" for n in range(3)})
    no_service = child_env()  # no key, no address: the cache is a local file
    run = cli("cache", "stats", str(cache), env=no_service)
    assert run.code == 0, run.err
    assert run.out.splitlines()[:3] == [str(cache), "  entries     3", "  namespaces  1"]
    run = cli("cache", "stats", str(cache), "--json", env=no_service)
    assert json.loads(run.out)["entries"] == 3
    run = cli("cache", "clear", str(cache), "--older-than", "1", env=no_service)
    assert (run.code, run.out) == (0, f"deleted 0 entries from {cache}\n")
    run = cli("cache", "clear", str(cache), env=no_service)
    assert (run.code, run.out) == (0, f"deleted 3 entries from {cache}\n")
    assert lingodoc.SQLiteCache(cache).stats().entries == 0


@pytest.mark.parametrize("action", ["stats", "clear"])
def test_the_help_of_cache_lists_no_option_of_the_service(
    action: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["cache", action, "--help"]) == 0
    text = capsys.readouterr().out
    assert f"usage: lingodoc cache {action} [-h] [--json] [-v]" in text
    for unused in ("--api-key", "--base-url", "--timeout", "--max-retries"):
        assert unused not in text
    # Still taken, as after any command: a shell alias may add them to every lingodoc line.
    cache = tmp_path / "cache.db"
    lingodoc.SQLiteCache(cache).close()
    assert main(["cache", action, str(cache), "--api-key", "ld_x", "--timeout", "3"]) == 0


def stored_cache(path: Path, entries: int = 3) -> bytes:
    """A cache of ``entries`` at ``path``, closed, readable by others (0644); its bytes."""
    cache = lingodoc.SQLiteCache(path)
    cache.set_many({f"{n:064x}": f"t{n}" for n in range(entries)})
    cache.close()
    path.chmod(0o644)
    return path.read_bytes()


def test_stats_only_reads_the_file_and_leaves_its_mode(cli: RunCLI, tmp_path: Path) -> None:
    cache = tmp_path / "cache.db"
    content = stored_cache(cache)
    run = cli("cache", "stats", str(cache), env=child_env())
    assert run.out.splitlines()[:2] == [str(cache), "  entries     3"], run.err
    assert (cache.read_bytes(), cache.stat().st_mode & 0o777) == (content, 0o644)
    assert sorted(tmp_path.iterdir()) == [cache]  # nor -wal or -shm left beside it


def test_stats_of_a_damaged_cache_says_so_and_leaves_it_as_it_is(
    cli: RunCLI, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    content = bytearray(stored_cache(cache, 300))
    content[4096:] = b"\xff" * (len(content) - 4096)  # every page but the first
    cache.write_bytes(bytes(content))
    run = cli("cache", "stats", str(cache), env=child_env())
    assert run.code == 2
    assert run.error.startswith(f"lingodoc: error: cannot read the cache {cache} (")
    assert run.error.endswith(
        "): it is left as it is; a `batch` run with it moves it aside and starts a new one"
    )
    assert (cache.read_bytes(), [p.name for p in tmp_path.iterdir() if "damaged" in p.name]) == (
        bytes(content),
        [],
    )


def test_stats_of_a_cache_whose_table_was_dropped_says_it_cannot_be_read(
    cli: RunCLI, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    stored_cache(cache)
    with contextlib.closing(sqlite3.connect(cache, isolation_level=None)) as connection:
        connection.execute("DROP TABLE lingodoc_translations")
    run = cli("cache", "stats", str(cache), env=child_env())
    assert (run.code, run.error) == (  # not damaged: no batch would move it aside
        2,
        f"lingodoc: error: cannot read the cache {cache} (no such table: "
        "lingodoc_translations): it is left as it is",
    )


def test_stats_of_entries_edited_by_hand_shows_no_time_for_them(
    cli: RunCLI, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.db"
    stored_cache(cache)
    with contextlib.closing(sqlite3.connect(cache, isolation_level=None)) as connection:
        connection.execute("UPDATE lingodoc_translations SET stored = 'abc'")
    run = cli("cache", "stats", str(cache), env=child_env())
    assert run.out.splitlines()[1:5] == [
        "  entries     3",
        "  namespaces  1",
        "  oldest      -",
        "  newest      -",
    ], run.err


def test_stats_of_a_missing_file_makes_none(cli: RunCLI, tmp_path: Path) -> None:
    run = cli("cache", "stats", str(tmp_path / "nothing.db"), env=child_env())
    assert run.code == 2
    assert run.error == f"lingodoc: error: no cache at {tmp_path / 'nothing.db'}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["stats", "clear"])
def test_stats_and_clear_of_a_directory_say_it_is_one(
    cli: RunCLI, tmp_path: Path, command: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    run = cli("cache", command, str(folder), env=child_env())
    assert run.code == 2
    assert run.error == (
        f"lingodoc: error: the cache {folder} is a directory, not a regular file: give another path"
    )
    assert [path.name for path in tmp_path.iterdir()] == ["folder"]
    assert list(folder.iterdir()) == []


def test_older_than_must_be_a_number_of_days(cli: RunCLI, tmp_path: Path) -> None:
    run = cli("cache", "clear", str(tmp_path / "c.db"), "--older-than", "soon", env=child_env())
    assert run.code == 2
    assert "expected a number of days >= 0, not 'soon'" in run.err


# -- a full disk, a lock held elsewhere, no right to write: said in words ----------------------


def fail_with(message: str, code: int | None = None) -> sqlite3.OperationalError:
    """An error as SQLite raises it: before Python 3.11, without ``sqlite_errorcode``."""
    error = sqlite3.OperationalError(message)
    if code is not None:
        error.sqlite_errorcode = code  # type: ignore[attr-defined]  # as 3.11+ sets it
    return error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (fail_with("database or disk is full"), "full"),
        (fail_with("SQLite said something else", 13), "full"),  # SQLITE_FULL, by its code
        (OSError(errno.ENOSPC, "No space left on device"), "full"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "full"),
        (fail_with("database is locked"), "locked"),
        (fail_with("database is locked", 5 | 3 << 8), "locked"),  # SQLITE_BUSY_SNAPSHOT
        (fail_with("attempt to write a readonly database"), "denied"),
        (fail_with("unable to open database file", 14), "denied"),
        (fail_with("access permission denied"), "denied"),
        (OSError(errno.EROFS, "Read-only file system"), "denied"),
        (OSError(errno.EACCES, "Permission denied"), "denied"),
        (OSError(errno.EPERM, "Operation not permitted"), "denied"),
        (OSError(errno.ENOENT, "No such file or directory"), None),
        (fail_with("no such table: t"), None),  # a bug of ours, said as one
        (sqlite3.DatabaseError("file is not a database"), None),
        (ValueError("database is locked"), None),
    ],
)
def test_a_cache_failure_is_told_by_its_code_or_else_its_message(
    error: Exception, kind: str | None
) -> None:
    assert cache_failure(error, "c.db") == kind
    refused = lingodoc.ConfigurationError(f"cannot open the cache 'c.db': {error}")
    refused.__cause__ = error  # as SQLiteCache raises it when it cannot open the file
    assert cache_failure(refused, "c.db") == kind
    assert cache_failure(lingodoc.ConfigurationError("not a lingodoc cache"), "c.db") is None


def test_real_sqlite_errors_are_told_apart(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN EXCLUSIVE")
        other = sqlite3.connect(path, timeout=0.01)
        with contextlib.closing(other), pytest.raises(sqlite3.OperationalError) as locked:
            other.execute("SELECT * FROM t")
    assert cache_failure(locked.value, path) == "locked"
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with contextlib.closing(read_only), pytest.raises(sqlite3.OperationalError) as denied:
        read_only.execute("INSERT INTO t VALUES (1)")
    assert cache_failure(denied.value, path) == "denied"


@pytest.mark.parametrize(
    ("flags", "free", "kind"),
    # Free space or not: a quota, which statvfs does not show, is full all the same.
    [(os.ST_RDONLY, 10**9, "denied"), (0, 0, "full"), (0, 512 * 1024, "full"), (0, 10**9, "full")],
)
def test_a_disk_io_error_is_told_by_the_file_system(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flags: int, free: int, kind: str | None
) -> None:
    # SQLite says "disk I/O error" when it cannot grow the -shm file (a full disk, a quota), or
    # open it for writing (a read-only file system): the file system tells which.
    seen: list[str] = []

    def statvfs(folder: str) -> os.statvfs_result:
        seen.append(folder)
        return os.statvfs_result(
            (4096, 4096, 10**6, free // 4096, free // 4096, 0, 0, 0, flags, 255)
        )

    monkeypatch.setattr(os, "statvfs", statvfs)
    shm_size = 10 | 19 << 8  # SQLITE_IOERR_SHMSIZE
    for error in (fail_with("disk I/O error"), fail_with("disk I/O error", shm_size)):
        assert cache_failure(error, str(tmp_path / "c.db")) == kind
    assert seen == [str(tmp_path)] * 2


def existing_cache(tmp_path: Path) -> Path:
    path = tmp_path / "cache.db"
    with lingodoc.SQLiteCache(path) as cache:
        cache.set_many({"0" * 64: "Hallo"})
    return path


FAILURES = {  # what SQLite raises, the exit code, and what the line says
    "full": (
        "database or disk is full", 6,
        "cannot write the cache {}: database or disk is full; free some space (or raise your "
        "disk quota), then run the same command again",
    ),
    "read-only": (
        "attempt to write a readonly database", 2,
        "cannot use the cache {}: attempt to write a readonly database; check that you may "
        "write to it and to its folder, on a file system that is not read-only",
    ),
    "locked": (
        "database is locked", 1,
        "the cache {} is locked by another process (database is locked); try again when the "
        "other process ends",
    ),
}  # fmt: skip


def test_batch_with_a_cache_it_may_not_write_exits_2_before_sending(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    cache, path = existing_cache(tmp_path), corpus(tmp_path, ["Hello"])
    with unwritable(cache):  # else SQLite opens it read-only, and every store fails
        run = cli("batch", str(path), "--to", "de", "--cache", str(cache))
    assert (run.code, run.error) == (
        2,
        f"lingodoc: error: cannot use the cache {cache}: the file may not be written; check "
        "that you may write to it and to its folder, on a file system that is not read-only",
    )
    assert emulator.requests == []


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("command", ["stats", "clear", "batch"])
def test_a_cache_that_cannot_be_opened_is_said_in_words_and_batch_sends_nothing(
    server: EmulatorServer,
    emulator: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    failure: str,
) -> None:
    message, code, line = FAILURES[failure]
    cache, source = existing_cache(tmp_path), tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")

    def connect(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError(message)

    monkeypatch.setattr(sqlite3, "connect", connect)
    if command == "batch":
        out = tmp_path / "out.txt"
        assert (
            batch_in_process(
                server, str(source), "--to", "de", "-o", str(out), "--cache", str(cache)
            )
            == code
        )
        assert emulator.requests == []  # refused before anything is sent
        assert not out.exists()
    else:
        assert main(["cache", command, str(cache)]) == code
    assert capsys.readouterr().err == f"lingodoc: error: {line.format(cache)}\n"


def test_clear_while_another_process_writes_exits_1_and_stats_still_reads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cache = existing_cache(tmp_path)

    class Impatient(lingodoc.SQLiteCache):  # the busy timeout cut from 10 s, for the CLI's cache
        def __init__(self, path: str) -> None:
            super().__init__(path, timeout=0.01)

    monkeypatch.setattr(lingodoc, "SQLiteCache", Impatient)
    with contextlib.closing(sqlite3.connect(cache, isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")  # the write lock, held
        assert main(["cache", "clear", str(cache)]) == 1
        assert capsys.readouterr().err == (
            f"lingodoc: error: the cache {cache} is locked by another process (database is "
            "locked); try again when the other process ends\n"
        )
        assert main(["cache", "stats", str(cache), "--json"]) == 0  # WAL: readers never wait
        assert json.loads(capsys.readouterr().out)["entries"] == 1
        writer.execute("ROLLBACK")
    assert main(["cache", "clear", str(cache)]) == 0
    assert capsys.readouterr().out == f"deleted 1 entry from {cache}\n"


def test_batch_whose_cache_another_process_holds_exits_1_before_sending(
    server: EmulatorServer,
    emulator: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    cache, source = existing_cache(tmp_path), tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")
    monkeypatch.setattr(
        lingodoc, "SQLiteCache", functools.partial(lingodoc.SQLiteCache, timeout=0.01)
    )
    with contextlib.closing(sqlite3.connect(cache, isolation_level=None)) as holder:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # no reader either, until it ends
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("DELETE FROM lingodoc_translations")
        assert batch_in_process(server, str(source), "--to", "de", "--cache", str(cache)) == 1
    assert capsys.readouterr().err == (
        f"lingodoc: error: the cache {cache} is locked by another process (database is "
        "locked); try again when the other process ends\n"
    )
    assert emulator.requests == []


def test_a_cache_that_fails_during_a_run_warns_once_and_the_run_goes_on(
    server: EmulatorServer,
    emulator: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    def full(self: lingodoc.SQLiteCache, items: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(lingodoc.SQLiteCache, "set_many", full)  # each store, on a full disk
    source, out, cache = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "cache.db"
    source.write_text("".join(f"{text}\n" for text in phrases(50)), encoding="utf-8")
    command = (
        str(source),
        "--to",
        "de",
        "-o",
        str(out),
        "--batch-size",
        "10",
        "--cache",
        str(cache),
        "-q",
    )
    emulator.rate_limit = 3  # 3 of the 5 batches, then a stop that keeps them
    with caplog.at_level(logging.WARNING, logger="lingodoc"):
        assert batch_in_process(server, *command) == 5
    kept = checkpoint_lines(tmp_path / "out.txt.checkpoint")  # the 3 batches answered
    assert len(kept) == 30
    assert kept == {i: de(phrases(50)[i]) for i in kept}
    assert [record.getMessage() for record in caplog.records] == [
        "the cache's store failed (OperationalError: database or disk is full); the "
        "translations are sent and returned without it"
    ]
    emulator.advance(3600)  # the window resets
    assert batch_in_process(server, *command, "--resume") == 0
    assert out.read_text(encoding="utf-8").splitlines() == [de(t) for t in phrases(50)]
    assert sorted(emulator.translated()) == sorted(phrases(50))  # each text paid for once


@pytest.mark.parametrize(
    ("command", "name", "content"),
    [
        (("cache", "stats"), "corpus.csv", b"text\nHello\n"),
        (("cache", "stats", "--json"), "corpus.csv", b"text\nHello\n"),
        (("cache", "clear"), "data.json", b'{"texts": ["Hello"]}\n'),
        (("cache", "stats"), "empty.db", b""),
        # Another program's damaged database: SQLite's header, no lingodoc mark, garbage.
        (("cache", "clear"), "theirs.db", b"SQLite format 3\x00" + bytes(84) + b"garbage" * 99),
    ],
    ids=["stats", "stats --json", "clear", "stats, empty", "clear, another's damaged"],
)
def test_stats_and_clear_of_a_file_that_is_no_cache_change_nothing(
    cli: RunCLI, tmp_path: Path, command: tuple[str, ...], name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    path.chmod(0o644)  # a cache open to others would be made 0600: this must not be
    run = cli(*command[:2], str(path), *command[2:], env=child_env())
    assert run.code == 2
    assert run.error == (
        f"lingodoc: error: {path} is not a lingodoc cache (left as it is): give the file that "
        "`lingodoc batch --cache` made"
    )
    assert (path.read_bytes(), sorted(tmp_path.iterdir())) == (content, [path])
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_mistyped_cache_is_refused_before_anything_is_sent(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes\n")
    path = corpus(tmp_path, ["Hello"])
    run = cli("batch", str(path), "--to", "de", "--cache", str(notes))
    assert run.code == 2
    assert f"{str(notes)!r} cannot be the cache (not an SQLite file" in run.error
    assert emulator.requests == []
    assert (notes.read_bytes(), sorted(tmp_path.iterdir())) == (b"my notes\n", [path, notes])


def test_stats_of_a_symbolic_link_is_refused(cli: RunCLI, tmp_path: Path) -> None:
    real, link = tmp_path / "cache.db", tmp_path / "link.db"
    lingodoc.SQLiteCache(real).close()
    link.symlink_to(real)
    run = cli("cache", "stats", str(link), env=child_env())
    assert run.code == 2
    assert f"{str(link)!r} cannot be the cache (a symbolic link, left as it is)" in run.error
