"""The cache of the command line: ``batch --cache FILE`` and ``lingodoc cache stats|clear FILE``."""

from __future__ import annotations

import argparse
import json
import os
import sys

import lingodoc
from lingodoc._constants import CACHE_APPLICATION_ID
from lingodoc.cli._checkpoint import refuse_special
from lingodoc.cli._errors import EXIT_OK, UsageError, cache_errors, out
from lingodoc.cli._visible import visible

CACHE_ENV = "LINGODOC_CACHE"
_DAY = 86_400


def cache_path(args: argparse.Namespace) -> str | None:
    """The cache file of a ``batch`` run: ``--cache``, else ``LINGODOC_CACHE``; ``None``: none."""
    path = args.cache or os.environ.get(CACHE_ENV, "").strip() or None
    if path is None and args.cache_max_entries is not None:
        raise UsageError(f"--cache-max-entries limits a cache: give --cache FILE (or {CACHE_ENV})")
    return path


def _existing(path: str) -> str:
    """``path``, which must be a cache: `stats` and `clear` never make one of a file."""
    refuse_special("the cache", path)  # a directory, a pipe: said so, not "no cache"
    if not os.path.isfile(path):
        raise UsageError(f"no cache at {path}")
    with open(path, "rb") as file:  # no connection of ours yet: no lock of SQLite's to drop
        header = file.read(72)
    mark = CACHE_APPLICATION_ID.to_bytes(4, "big")
    ours = header[:16] == b"SQLite format 3\x00" and header[68:] == mark
    # A cache set up in place on an empty file may have its first pages in its -wal still.
    if not (ours or (not header and os.path.isfile(path + "-wal"))):
        raise UsageError(
            f"{path} is not a lingodoc cache (left as it is): give the file that "
            "`lingodoc batch --cache` made"
        )
    return path


def stats(args: argparse.Namespace) -> int:
    """``lingodoc cache stats FILE``: what the cache holds."""
    import sqlite3  # here: the command line loads it only with a cache

    try:
        with cache_errors(args.file):
            held = lingodoc.SQLiteCache.read_stats(_existing(args.file))
    except sqlite3.DatabaseError as exc:  # read, never moved aside here: `batch` would
        damaged = type(exc) is sqlite3.DatabaseError  # what SQLiteCache moves aside
        then = "; a `batch` run with it moves it aside and starts a new one" if damaged else ""
        raise UsageError(
            f"cannot read the cache {args.file} ({exc}): it is left as it is{then}"
        ) from exc
    if args.json:
        out(json.dumps({
            "path": args.file, "entries": held.entries, "namespaces": held.namespaces,
            "oldest": held.oldest and held.oldest.isoformat(),
            "newest": held.newest and held.newest.isoformat(), "bytes": held.size,
        }))  # fmt: skip
        return EXIT_OK
    rows = [
        ("entries", f"{held.entries:,}"),
        ("namespaces", f"{held.namespaces:,}"),
        ("oldest", _when(held.oldest)),
        ("newest", _when(held.newest)),
        ("size", f"{held.size:,} bytes"),
    ]
    lines = [visible(args.file), *(f"  {name:<11} {value}" for name, value in rows)]
    out("\n".join(lines))
    return EXIT_OK


def clear(args: argparse.Namespace) -> int:
    """``lingodoc cache clear FILE [--older-than DAYS]``: delete entries."""
    older_than = None if args.older_than is None else args.older_than * _DAY
    with cache_errors(args.file), lingodoc.SQLiteCache(_existing(args.file)) as cache:
        deleted = cache.clear(older_than=older_than)
    if args.json:
        out(json.dumps({"path": args.file, "deleted": deleted}))
    else:
        out(f"deleted {deleted:,} entr{'y' if deleted == 1 else 'ies'} from {visible(args.file)}")
    return EXIT_OK


def summary(path: str, progress: lingodoc.BulkProgress | None) -> None:
    """Say on stderr what the cache saved a ``batch`` run."""
    if progress is not None:
        hits, misses = progress.cache_hits, progress.cache_misses
        print(
            f"lingodoc: cache {visible(path)}: {hits:,} found, {misses:,} sent",
            file=sys.stderr,
        )


def _when(moment: object) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"
