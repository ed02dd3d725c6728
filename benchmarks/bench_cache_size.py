"""The size of an `SQLiteCache` file, and what keeping it that size costs a store.

A file is filled to ``--entries`` entries by ``SQLiteCache.set_many`` in stores of 10,000,
as a run would fill it: 64-hex keys (SHA-256 digests, as the client makes them) and typical
short translations (2 to 6 words) after the key's first digits, as the client stores them.
Its size is taken once the cache is closed (SQLite then folds its ``-wal`` file in). A copy
is opened with a limit, which adds the index on ``stored`` that sweeps use: the time that
first opening takes, and the size after.

Then each round stores ``--store`` new entries ``--stores`` times on each case, in a rotating
order, each case on a copy of its own of the full file:

- no limit, on the file as filled: the baseline;
- no limit, on a file with the index: what the index costs a store;
- ``max_age`` so short that every entry has expired: each store deletes the most a sweep
  deletes (``--store`` plus 200);
- ``max_entries`` equal to the entries: each store deletes as many of the oldest as it adds.

Also: ``SELECT count(*)`` on the full file, which a store with ``max_entries`` makes when
another connection has written since its last store, and each file's size after the rounds.
Prints JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from _common import emit, interleaved, paired, summary

import lingodoc
from lingodoc._cache import SEAL  # the digits of its key the client puts in a value

WORDS = [
    "der",
    "die",
    "das",
    "und",
    "ist",
    "nicht",
    "ein",
    "eine",
    "Haus",
    "Welt",
    "gut",
    "Tag",
    "Nacht",
    "Morgen",
    "danke",
    "bitte",
    "heute",
    "schnell",
    "klein",
    "groß",
    "neue",
    "Kunden",
    "Rechnung",
    "Bestellung",
    "Lieferung",
    "Konto",
    "Passwort",
    "senden",
]
FILL = 10_000  # entries per store while filling


def entries(numbers: range, rng: random.Random) -> dict[str, str]:
    """Entries as the client stores them: a SHA-256 key; its first digits, a translation."""
    stored = {}
    for number in numbers:
        key = hashlib.sha256(str(number).encode()).hexdigest()
        stored[key] = key[:SEAL] + " ".join(rng.choices(WORDS, k=rng.randint(2, 6)))
    return stored


def size(path: str) -> int:
    """Bytes on disk, as `cache stats` counts them: the file and its -wal."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def fill(path: str, count: int) -> tuple[float, float]:
    """Fill a new cache at ``path``; the seconds it took, and the mean translation length."""
    rng = random.Random(0)
    started, characters = time.perf_counter(), 0
    with lingodoc.SQLiteCache(path) as cache:
        for start in range(0, count, FILL):
            chunk = entries(range(start, min(start + FILL, count)), rng)
            characters += sum(len(value) - SEAL for value in chunk.values())
            cache.set_many(chunk)
    return time.perf_counter() - started, characters / count


def storing(
    cache: lingodoc.SQLiteCache, numbers: Iterator[int], store: int, stores: int
) -> Callable[[], float]:
    """A case: ``stores`` stores of ``store`` new entries each; the seconds per store."""
    rng = random.Random(1)

    def case() -> float:
        starts = [next(numbers) for _ in range(stores)]
        batches = [entries(range(start, start + store), rng) for start in starts]
        started = time.perf_counter()
        for batch in batches:
            cache.set_many(batch)
        return (time.perf_counter() - started) / stores

    return case


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--store", type=int, default=100, help="entries per timed store")
    parser.add_argument("--stores", type=int, default=10, help="timed stores per round")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    result: dict[str, Any] = {
        "entries": args.entries, "store": args.store, "stores": args.stores,
        "rounds": args.rounds,
    }  # fmt: skip
    with contextlib.ExitStack() as stack:
        directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="lingodoc-bench-"))
        base = os.path.join(directory, "filled.sqlite")
        result["fill_s"], result["translation_chars"] = fill(base, args.entries)
        result["bytes"] = size(base)
        copies = {}
        for name in ("no limit, the index made", "max_age", "max_entries"):
            copies[name] = os.path.join(directory, f"{len(copies)}.sqlite")
            shutil.copyfile(base, copies[name])
        started = time.perf_counter()
        lingodoc.SQLiteCache(copies["no limit, the index made"], max_age=10**9).close()
        result["index_s"] = time.perf_counter() - started
        result["indexed_bytes"] = size(copies["no limit, the index made"])
        for name in ("max_age", "max_entries"):  # the index made outside the timing
            lingodoc.SQLiteCache(copies[name], max_age=10**9).close()
        with contextlib.closing(sqlite3.connect(copies["max_age"])) as connection:
            counts = []
            for _ in range(5):
                started = time.perf_counter()
                connection.execute("SELECT count(*) FROM lingodoc_translations").fetchone()
                counts.append(time.perf_counter() - started)
        result["count_ms"] = summary([seconds * 1000 for seconds in counts])
        caches = {
            "no limit": lingodoc.SQLiteCache(base),
            "no limit, the index made": lingodoc.SQLiteCache(copies["no limit, the index made"]),
            # Every entry expired: each store sweeps the most it may.
            "max_age": lingodoc.SQLiteCache(copies["max_age"], max_age=1e-6),
            "max_entries": lingodoc.SQLiteCache(copies["max_entries"], max_entries=args.entries),
        }
        for cache in caches.values():
            stack.callback(cache.close)
        numbers = iter(range(args.entries, 10**12, args.store))  # new keys for every store
        cases = {
            name: storing(cache, numbers, args.store, args.stores) for name, cache in caches.items()
        }
        samples = interleaved(cases, args.rounds)
        base_samples = samples["no limit"]
        result["cases"] = {
            name: {
                "ms": summary([seconds * 1000 for seconds in samples[name]]),
                "ratio": paired(samples[name], base_samples, lambda a, b: a / b),
                "entries_after": cache.stats().entries,
            }
            for name, cache in caches.items()
        }
        for cache in caches.values():
            cache.close()  # the -wal folded in
        for name, cache in caches.items():
            result["cases"][name]["bytes_after"] = size(cache.path)
    emit(result)


if __name__ == "__main__":
    main()
