"""Repeat runs never pay twice: a script, the command line, and processes sharing one cache.

Each run is a process of its own (the script of tests/reliability/cache_helpers.py, or
`lingodoc batch`), against one emulator served over loopback HTTP in this process, whose
batch requests are counted and whose texts are kept. Every distinct text of a corpus has a
translation of its own (its number is kept), so a translation handed to another text, lost
or duplicated is seen: each run's output is compared with the emulator's ``translate_text``.

The Redis tests (marker ``redis``) start a redis-server of their own (tests/redis_server.py);
CI runs them with ``python -m pytest -m redis -n 0``. The three processes that start at once
on one SQLite file cost seconds of CPU: marked ``stress``, run apart as CI does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lingodoc
from lingodoc.emulator import EmulatorServer
from tests.cli.forked import run_forked
from tests.redis_server import require_redis_server, running_redis
from tests.reliability.cache_helpers import (
    Recording,
    Script,
    batches_for,
    child_env,
    corpus,
    expected,
    run_script,
    translate,
)

TEXTS = 10_000
REPEATS = 0.3  # of the texts repeat an earlier one: 7,000 distinct
BATCH = 100


@pytest.fixture(autouse=True)
def clock() -> None:
    # Replaces the suite's fake clock: the runs are processes on the real clock.
    return None


@pytest.fixture(scope="module")
def emulator() -> Recording:
    # Generous: no run here waits for a rate-limit window.
    return Recording(rate_limit=1_000_000)


@pytest.fixture(scope="module")
def served(emulator: Recording) -> Iterator[EmulatorServer]:
    """One server for the module's tests (each counts its own requests)."""
    with emulator.serve() as server:
        yield server


@pytest.fixture
def server(served: EmulatorServer, emulator: Recording) -> EmulatorServer:
    emulator.forget()
    return served


def changed(texts: list[str]) -> list[str]:
    """``texts`` with a tenth of them changed: every tenth text, 950 of them into 710 new
    distinct texts (some repeated), 50 into an old text moved there (not new)."""
    out = list(texts)
    for number, position in enumerate(range(0, len(texts), 10)):
        if number % 20 == 19:
            out[position] = texts[(position + 1) % len(texts)]  # an old text, moved here
        else:
            out[position] = f"good morning, this text changed {number % 733}"
    return out


def test_a_rerun_in_a_new_process_sends_nothing_and_a_changed_tenth_sends_only_its_batches(
    server: EmulatorServer, emulator: Recording, tmp_path: Path
) -> None:
    texts = corpus(TEXTS, repeats=REPEATS, seed=1)
    distinct = set(texts)
    assert len(distinct) == 7_000
    path = tmp_path / "cache.db"

    def in_this_process(texts: list[str]) -> dict[str, Any]:
        cache = lingodoc.SQLiteCache(path)
        return translate(texts, cache, base_url=server.base_url, api_key=server.api_key)

    first = in_this_process(texts)
    assert first["translations"] == expected(texts)
    assert (first["hits"], first["misses"]) == (0, 7_000)
    assert len(emulator.batches) == batches_for(7_000)
    assert sorted(emulator.sent()) == sorted(distinct)  # each distinct text once

    emulator.forget()
    again = run_script(server, texts, tmp_path, "again", ["--sqlite", str(path)])
    assert emulator.batches == []  # 0 requests
    assert again["translations"] == first["translations"]
    assert (again["hits"], again["misses"]) == (7_000, 0)

    new_texts = changed(texts)
    new = set(new_texts) - distinct
    assert sum(a != b for a, b in zip(texts, new_texts, strict=True)) == TEXTS // 10
    assert len(new) == 710
    emulator.forget()
    third = in_this_process(new_texts)
    assert len(emulator.batches) == batches_for(len(new)) == 8
    assert sorted(emulator.sent()) == sorted(new)
    assert third["translations"] == expected(new_texts)
    assert (third["hits"], third["misses"]) == (len(set(new_texts)) - len(new), len(new))


def test_lingodoc_batch_with_a_cache_reruns_for_nothing_and_sends_only_what_changed(
    server: EmulatorServer, emulator: Recording, tmp_path: Path
) -> None:
    texts = corpus(TEXTS, repeats=REPEATS, seed=2)
    cache = tmp_path / "cache.db"
    env = child_env(server.base_url, server.api_key)

    def batch(lines: list[str], name: str) -> str:
        source = tmp_path / f"{name}.txt"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out = tmp_path / f"{name}.de.txt"
        command = [
            "batch", str(source), "--to", "de", "--cache", str(cache), "-o", str(out),
            "--batch-size", str(BATCH),
        ]  # fmt: skip
        code, _, err = run_forked(command, env=env, timeout=60)
        assert code == 0, err.decode()
        assert out.read_text(encoding="utf-8").splitlines() == expected(lines)
        return err.decode()

    err = batch(texts, "first")
    assert len(emulator.batches) == batches_for(7_000)
    assert f"lingodoc: cache {cache}: 0 found, 7,000 sent" in err

    emulator.forget()
    err = batch(texts, "again")
    assert emulator.batches == []
    assert f"lingodoc: cache {cache}: 7,000 found, 0 sent" in err

    new_texts = changed(texts)
    new = set(new_texts) - set(texts)
    emulator.forget()
    err = batch(new_texts, "third")
    assert len(emulator.batches) == batches_for(len(new)) == 8
    assert sorted(emulator.sent()) == sorted(new)
    assert f"lingodoc: cache {cache}: {len(set(new_texts)) - len(new):,} found, 710 sent" in err


def at_once(scripts: list[Script]) -> list[dict[str, object]]:
    """Let ``scripts`` (started with ``wait``) go together once all are ready; their reports."""
    try:
        for script in scripts:
            script.ready()
        for script in scripts:
            script.go()
        return [script.result() for script in scripts]
    finally:
        for script in scripts:  # none is left behind, waiting for a word that never comes
            script.kill()


def check_at_once(emulator: Recording, texts: list[str], reports: list[dict[str, object]]) -> None:
    """Every process got every translation right, for at most 3 times the fewest requests."""
    for report in reports:
        assert report["translations"] == expected(texts)
    fewest = batches_for(len(set(texts)))
    assert fewest <= len(emulator.batches) <= 3 * fewest
    assert set(emulator.sent()) == set(texts)
    # No text went out more often than there were processes.
    assert max(Counter(emulator.sent()).values()) <= 3


def made(cache: list[str]) -> Any:
    """The cache the script's arguments name, made in this process."""
    kind, where = cache
    return lingodoc.SQLiteCache(where) if kind == "--sqlite" else lingodoc.RedisCache(where)


# Three Pythons starting at once cost seconds of CPU: run apart, with -m stress.
@pytest.mark.stress
def test_three_processes_on_one_sqlite_file_at_once_get_every_translation_right(
    server: EmulatorServer, emulator: Recording, tmp_path: Path
) -> None:
    texts = corpus(3_000, repeats=REPEATS, seed=3)
    cache = ["--sqlite", str(tmp_path / "cache.db")]
    scripts = [Script(server, texts, tmp_path, f"p{n}", cache, wait=True) for n in range(3)]
    check_at_once(emulator, texts, at_once(scripts))
    emulator.forget()
    after = translate(texts, made(cache), base_url=server.base_url, api_key=server.api_key)
    assert after["translations"] == expected(texts)
    assert emulator.batches == []


# Redis: a redis-server of the test's own ----------------------------------------------------


@pytest.fixture
def redis_url() -> Iterator[str]:
    require_redis_server()
    with running_redis() as redis_server:
        yield redis_server.url


@pytest.mark.redis
def test_three_processes_share_a_redis_cache_and_a_fourth_sends_nothing(
    server: EmulatorServer, emulator: Recording, tmp_path: Path, redis_url: str
) -> None:
    texts = corpus(TEXTS, repeats=REPEATS, seed=4)
    cache = ["--redis", redis_url]
    thirds = [texts[n::3] for n in range(3)]
    scripts = [Script(server, part, tmp_path, f"third{n}", cache) for n, part in enumerate(thirds)]
    for part, script in zip(thirds, scripts, strict=True):
        assert script.result()["translations"] == expected(part)
    assert set(emulator.sent()) == set(texts)
    emulator.forget()
    fourth = run_script(server, texts, tmp_path, "fourth", cache)
    assert emulator.batches == []
    assert fourth["translations"] == expected(texts)
    assert (fourth["hits"], fourth["misses"]) == (7_000, 0)


@pytest.mark.redis
def test_three_processes_on_one_redis_at_once_get_every_translation_right(
    server: EmulatorServer, emulator: Recording, tmp_path: Path, redis_url: str
) -> None:
    texts = corpus(3_000, repeats=REPEATS, seed=5)
    cache = ["--redis", redis_url]
    scripts = [Script(server, texts, tmp_path, f"p{n}", cache, wait=True) for n in range(3)]
    check_at_once(emulator, texts, at_once(scripts))
    emulator.forget()
    after = translate(texts, made(cache), base_url=server.base_url, api_key=server.api_key)
    assert after["translations"] == expected(texts)
    assert emulator.batches == []
