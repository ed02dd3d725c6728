"""The translation cache: ``translate_many`` fully cached, and a first run with an empty cache.

**Cached**: ``Client.translate_many`` of ``--texts`` distinct short texts, every one of them
already in the client's cache, so that nothing is sent. The baseline is the best plain
store: a dict with the two methods of the protocol (``get_many`` a dict comprehension,
``set_many`` ``dict.update``). Beside it, ``lingodoc.SQLiteCache`` on a file in a temporary
directory and ``lingodoc.RedisCache`` on a ``redis-server`` that this script starts on a
free port of 127.0.0.1 (without persistence) and stops. Each store is filled by a first run
of the same texts against the in-process emulator, then every round times one fully cached
run on each. The floors of the two stores, measured in the same rounds: the same lookups
made on the store directly, with the keys already computed, in the same chunks (a
request's worth each): ``SELECT key, translation ... WHERE key IN (...)`` of 500 keys at
most, as SQLiteCache makes it, on a plain ``sqlite3`` connection to the same file
(``BareSQLite``), and ``MGET`` on a plain ``redis.Redis``.

**First run**: ``translate_many`` of ``--first-texts`` distinct texts against the emulator
served in a process of its own (``python -m lingodoc.emulator --latency 10``: each answer
held 10 ms, as a network would), with no cache against each store empty (a fresh dict, a
new SQLite file, a flushed Redis). The client and the store are made outside the timing;
the run alone is timed. The floors of the two stores, in the same rounds: the plainest
store on each, made by hand (``BareSQLite``: SQLiteCache's table, one ``SELECT`` and one
``INSERT``; ``BareRedis``: one ``MGET`` and one ``MSET``), nothing checked.

Every case runs ``batch_size`` texts a request (the emulator's limit, ``MAX_BATCH_ITEMS``)
and 4 at once (the default ``max_concurrency``), on emulators whose rate limit is lifted
(the ``pro`` plan's 1,000 requests an hour would stop the filling runs). Each result is
checked: a fully cached run before the rounds returns the first run's translations, and
the timed ones send no request (counted after the rounds); each first run sends every text
once (``on_progress`` counts the requests) and returns the emulator's translations. Without
redis-py or ``redis-server`` the Redis rows are left out, and the result says why. Prints
JSON.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from _common import emit, interleaved, paired, summary, timed

import lingodoc
from lingodoc._sqlite_cache import _CHUNK, _SCHEMA, _TABLE  # SQLiteCache's, for its floors
from lingodoc.emulator import MAX_BATCH_ITEMS, Emulator, translate_text

WORDS = ["the", "cat", "dog", "house", "red", "small", "good", "night", "world", "hello"]
SOURCE, TARGET = "en", "de"
REDIS_PREFIX = "lingodoc:"  # RedisCache's keys without a namespace, for its floor
STARTUP_DEADLINE = 10.0  # seconds redis-server may take to answer a PING


class DictStore:
    """The baseline: the plainest store that meets the protocol, a dict and two methods.

    ``asked`` records the key lists of ``get_many`` while it is not ``None``: the chunks the
    floors look up, exactly as the client asks for them.
    """

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.asked: list[list[str]] | None = None

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        if self.asked is not None:
            self.asked.append(list(keys))
        data = self.data
        return {key: data[key] for key in keys if key in data}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.data.update(items)


def corpus(count: int, seed: int) -> list[str]:
    """``count`` distinct short lines (2 to 8 words, then a number that makes each unique)."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 8))) + f" {n}" for n in range(count)]


def translate(client: lingodoc.Client, texts: list[str], batch_size: int) -> list[str]:
    return client.translate_many(
        texts, source_language=SOURCE, target_language=TARGET, batch_size=batch_size
    )


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def redis_server(max_seconds: float) -> Iterator[tuple[str, str]]:
    """Run ``redis-server`` on a free port of 127.0.0.1; yield its URL and version.

    Without persistence, in a temporary directory. It stops when this block ends; under
    coreutils' ``timeout`` (when there is one) also by itself after ``max_seconds``, should
    this process be killed first.

    Raises:
        RuntimeError: If redis-py or redis-server is missing, or the server does not start.
    """
    try:
        import redis
    except ImportError:
        raise RuntimeError('redis-py is not installed (pip install "lingodoc[redis]")') from None
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not installed")
    version = subprocess.run(
        [server, "--version"], capture_output=True, text=True, timeout=10
    ).stdout.split()
    release = next((word[2:] for word in version if word.startswith("v=")), "?")
    port = free_port()
    bound = shutil.which("timeout")
    command = [
        *([bound, "--kill-after", "5", str(max_seconds)] if bound else []),
        server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--logfile", "",
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lingodoc-bench-redis-") as directory:
        child = subprocess.Popen(
            command, cwd=directory, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            url = f"redis://127.0.0.1:{port}/0"
            probe = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
            deadline = time.monotonic() + STARTUP_DEADLINE
            while True:
                try:
                    probe.ping()
                    break
                except (redis.RedisError, OSError):
                    if child.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server did not start on port {port}") from None
                    time.sleep(0.05)
            probe.close()
            yield url, release
        finally:
            child.terminate()  # timeout passes the SIGTERM on to redis-server
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def sqlite_floor(path: str, chunks: list[list[str]]) -> Callable[[], object]:
    """SQLiteCache's lookups made by hand: the same SELECTs per chunk, on a plain connection."""
    store = BareSQLite(path)

    def look_up() -> int:
        return sum(len(store.get_many(keys)) for keys in chunks)

    return look_up


def redis_floor(url: str, chunks: list[list[str]]) -> Callable[[], object]:
    """RedisCache's lookups made by hand: one MGET per chunk, the values decoded."""
    import redis

    client = redis.Redis.from_url(url)
    names = [[REDIS_PREFIX + key for key in keys] for keys in chunks]

    def look_up() -> int:
        found = 0
        for keys, chunk in zip(chunks, names, strict=True):
            values = client.mget(chunk)
            decoded = {
                k: v.decode() for k, v in zip(keys, values, strict=True) if isinstance(v, bytes)
            }
            found += len(decoded)
        return found

    return look_up


class BareRedis:
    """RedisCache's floor on a first run: one ``MGET`` and one ``MSET`` by hand, nothing checked."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        values = self.client.mget([REDIS_PREFIX + key for key in keys])
        return {k: v.decode() for k, v in zip(keys, values, strict=True) if isinstance(v, bytes)}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.client.mset({REDIS_PREFIX + key: value for key, value in items.items()})

    def close(self) -> None:
        self.client.close()


class BareSQLite:
    """SQLiteCache's floor on a first run: its table and journal, a ``SELECT`` and an ``INSERT``."""

    def __init__(self, path: str) -> None:
        self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.connection.execute("PRAGMA journal_mode = WAL")  # as SQLiteCache opens a file
        self.connection.execute("PRAGMA synchronous = NORMAL")
        self.connection.execute(_SCHEMA)

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(keys), _CHUNK):  # as SQLiteCache queries
            chunk = keys[start : start + _CHUNK]
            query = (
                f"SELECT key, translation FROM {_TABLE} WHERE namespace = ? "
                f"AND key IN ({','.join('?' * len(chunk))})"
            )
            found.update(self.connection.execute(query, ["", *chunk]).fetchall())
        return found

    def set_many(self, items: Mapping[str, str]) -> None:
        now = time.time()
        self.connection.execute("BEGIN")  # one transaction, one commit: as SQLiteCache stores
        self.connection.executemany(
            f"INSERT OR REPLACE INTO {_TABLE} VALUES ('', ?, ?, ?)",
            [(key, value, now) for key, value in items.items()],
        )
        self.connection.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()


def seconds_and_rate(samples: list[float], texts: int) -> dict[str, Any]:
    return {"s": summary(samples), "texts_per_s": summary([texts / s for s in samples])}


def cached(
    stores: dict[str, object],
    floors: dict[str, Callable[[str, list[list[str]]], Callable[[], object]]],
    texts: list[str],
    batch_size: int,
    rounds: int,
    directory: str,
    redis_url: str | None,
) -> dict[str, Any]:
    """The fully cached rows: each store filled by a first run, then timed side by side."""
    emulator = Emulator(rate_limit=10**9, seed_documents=False)
    clients = {name: emulator.client(cache=store) for name, store in stores.items()}
    wanted: list[str] | None = None
    for client in clients.values():  # fill each store by a first run
        first = translate(client, texts, batch_size)
        assert wanted is None or first == wanted, "the emulator's translations changed"
        wanted = first
    filled = len(emulator.requests)
    dict_store = stores["dict"]
    assert isinstance(dict_store, DictStore)
    dict_store.asked = []
    for client in clients.values():  # warm up; the dict store records the chunks asked
        assert translate(client, texts, batch_size) == wanted, "a cached run went wrong"
    chunks, dict_store.asked = dict_store.asked, None
    assert len(emulator.requests) == filled, "a fully cached run sent a request"
    cases = {name: timed(functools.partial(translate, client, texts, batch_size), 1)
             for name, client in clients.items()}  # fmt: skip
    places = {"sqlite3": os.path.join(directory, "cache.sqlite"), "redis": redis_url or ""}
    for name, floor in floors.items():
        look_up = floor(places[name], chunks)
        assert look_up() == len(texts), f"the {name} floor did not find every text"
        cases[f"{name} floor"] = timed(look_up, 1)
    samples = interleaved(cases, rounds)
    base = samples["dict"]
    result: dict[str, Any] = {
        "cases": {
            name: {
                **seconds_and_rate(samples[name], len(texts)),
                "ratio": paired(samples[name], base, lambda a, b: a / b),
            }
            for name in clients
        },
        "floors": {name: {"s": summary(samples[f"{name} floor"])} for name in floors},
        "lookups": len(chunks),
        "requests": len(emulator.requests) - filled,  # during the timed rounds: 0
        "all_correct": True,  # checked above; a wrong run stops the script
    }
    for client in clients.values():
        client.close()
    return result


@contextmanager
def served_emulator(latency_ms: float, max_seconds: float) -> Iterator[tuple[str, str]]:
    """Run ``python -m lingodoc.emulator --latency MS`` on a free port; yield its URL and key.

    Its rate limit is lifted (the ``pro`` plan's would stop the runs). It stops when this
    block ends; under coreutils' ``timeout`` (when there is one) also by itself after
    ``max_seconds``, should this process be killed first.
    """
    bound = shutil.which("timeout")
    command = [
        *([bound, "--kill-after", "5", str(max_seconds)] if bound else []),
        sys.executable, "-m", "lingodoc.emulator", "--port", "0", "--quiet",
        "--rate-limit", str(10**9), "--latency", str(latency_ms),
    ]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        said = {}
        for line in child.stdout:  # what it prints once it listens
            name, _, value = line.strip().partition("=")
            if name.endswith(("LINGODOC_BASE_URL", "LINGODOC_API_KEY")):
                said[name.split()[-1]] = value
            if len(said) == 2:
                break
        else:
            raise RuntimeError("the emulator ended before it listened")
        yield said["LINGODOC_BASE_URL"], said["LINGODOC_API_KEY"]
    finally:
        child.terminate()
        child.wait(timeout=30)


def first_runs(
    stores: dict[str, Callable[[], object]],
    texts: list[str],
    batch_size: int,
    rounds: int,
    served: tuple[str, str],
) -> dict[str, Any]:
    """The first-run rows: no cache against each store empty, over a served emulator.

    Where users meet a first run: the emulator in a process of its own, holding each answer
    its ``--latency``, so that the store's work overlaps with the requests as it does over
    a network.
    """
    wanted = [translate_text(text, SOURCE, TARGET) for text in texts]
    minimum = math.ceil(len(texts) / batch_size)
    base_url, key = served
    checks: list[bool] = []

    def case(make: Callable[[], object] | None) -> Callable[[], float]:
        def run() -> float:
            store = None if make is None else make()
            client = lingodoc.Client(api_key=key, base_url=base_url, cache=store)
            sent: list[int] = []
            out: list[list[str]] = []

            def translate_all() -> None:
                out.append(client.translate_many(
                    texts, source_language=SOURCE, target_language=TARGET,
                    batch_size=batch_size, on_progress=lambda done: sent.append(done.requests),
                ))  # fmt: skip

            seconds = timed(translate_all, 1)()
            checks.append(out[0] == wanted and sent[-1] == minimum)
            client.close()
            close = getattr(store, "close", None)
            if close is not None:
                close()
            return seconds

        return run

    cases = {"no cache": case(None), **{name: case(make) for name, make in stores.items()}}
    samples = interleaved(cases, rounds)
    base = samples["no cache"]
    return {
        "cases": {
            name: {
                **seconds_and_rate(samples[name], len(texts)),
                "ratio": paired(samples[name], base, lambda a, b: a / b),
            }
            for name in cases
        },
        "requests": minimum,
        "all_correct": all(checks),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=25)  # a noisy machine needs many
    parser.add_argument("--texts", type=int, default=100_000, help="texts of a cached run")
    parser.add_argument("--first-texts", type=int, default=20_000, help="texts of a first run")
    parser.add_argument("--batch-size", type=int, default=MAX_BATCH_ITEMS)
    parser.add_argument("--latency", type=float, default=10, help="the served emulator's, ms")
    parser.add_argument("--max-seconds", type=float, default=900, help="the servers' limit")
    args = parser.parse_args()
    if not 1 <= args.batch_size <= MAX_BATCH_ITEMS:
        parser.error(f"--batch-size: 1 to {MAX_BATCH_ITEMS}, what the emulator accepts")
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "texts": args.texts,
        "first_texts": args.first_texts,
        "batch_size": args.batch_size,
        "max_concurrency": 4,  # translate_many's default, used by every case
        "latency_ms": args.latency,
    }
    with ExitStack() as stack:
        directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="lingodoc-bench-"))
        redis_url: str | None = None
        try:
            redis_url, result["redis_server"] = stack.enter_context(redis_server(args.max_seconds))
        except RuntimeError as exc:
            result["redis_missing"] = str(exc)
        sqlite = lingodoc.SQLiteCache(os.path.join(directory, "cache.sqlite"))
        stack.callback(sqlite.close)
        stores: dict[str, object] = {"dict": DictStore(), "SQLiteCache": sqlite}
        floors: dict[str, Callable[[str, list[list[str]]], Callable[[], object]]] = {
            "sqlite3": sqlite_floor
        }
        fresh: dict[str, Callable[[], object]] = {"dict": DictStore}
        counter = iter(range(10**9))
        fresh["SQLiteCache"] = lambda: lingodoc.SQLiteCache(
            os.path.join(directory, f"first-{next(counter)}.sqlite")
        )
        fresh["sqlite3 floor"] = lambda: BareSQLite(
            os.path.join(directory, f"first-{next(counter)}.sqlite")
        )
        if redis_url is not None:
            import redis

            url = redis_url
            result["redis_py"] = redis.__version__
            stores["RedisCache"] = shared = lingodoc.RedisCache(url)
            stack.callback(shared.close)
            floors["redis"] = redis_floor
            flusher = redis.Redis.from_url(url)

            def empty_redis() -> object:
                flusher.flushdb()  # the cached rows are done by then
                return lingodoc.RedisCache(url)

            def empty_bare_redis() -> object:
                flusher.flushdb()
                return BareRedis(url)

            fresh["RedisCache"] = empty_redis
            fresh["redis floor"] = empty_bare_redis
        # First runs first, as in a fresh process: not beside the cached runs' 100,000 entries,
        # which each of Python's full collections would go over again.
        served = stack.enter_context(served_emulator(args.latency, args.max_seconds))
        result["first_run"] = first_runs(
            fresh, corpus(args.first_texts, seed=1), args.batch_size, args.rounds, served
        )
        texts = corpus(args.texts, seed=0)
        result["cached"] = cached(
            stores, floors, texts, args.batch_size, args.rounds, directory, redis_url
        )
    emit(result)


if __name__ == "__main__":
    main()
