"""`lingodoc batch --cache FILE` and `lingodoc cache stats|clear FILE`: re-runs never pay twice."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

import lingodoc
from lingodoc.emulator import translate_text
from tests.cli.conftest import RunCLI, child_env
from tests.cli.test_cli_batch import Recorder


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


def test_another_programs_database_is_refused_as_the_cache(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    theirs = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(theirs)) as connection, connection:
        connection.execute("CREATE TABLE users (name TEXT)")
    run = cli("batch", str(corpus(tmp_path, ["Hello"])), "--to", "de", "--cache", str(theirs))
    assert run.code == 2
    assert f"{str(theirs)!r} is not a lingodoc cache" in run.error
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


def test_stats_of_a_missing_file_makes_none(cli: RunCLI, tmp_path: Path) -> None:
    run = cli("cache", "stats", str(tmp_path / "nothing.db"), env=child_env())
    assert run.code == 2
    assert run.error == f"lingodoc: error: no cache at {tmp_path / 'nothing.db'}"
    assert list(tmp_path.iterdir()) == []


def test_older_than_must_be_a_number_of_days(cli: RunCLI, tmp_path: Path) -> None:
    run = cli("cache", "clear", str(tmp_path / "c.db"), "--older-than", "soon", env=child_env())
    assert run.code == 2
    assert "expected a number of days >= 0, not 'soon'" in run.err
