"""Generate the blocking client from the async one: ``_async_client.py`` -> ``_sync_client.py``.

The request path is written once, as ``AsyncClient``; ``Client`` is the same code
with ``async``/``await`` taken out and the async names replaced by their blocking
twins. Run it after editing ``src/lingodoc/_async_client.py``:

    python scripts/unasync.py          # rewrite src/lingodoc/_sync_client.py
    python scripts/unasync.py --check  # exit 1 if the generated file is stale (CI)

The rules are two lists. ``PHRASES`` replaces whole phrases of the docstrings where the
two flavours really differ (threads and tasks, Ctrl-C and cancellation); each must match
at least once, so a reworded docstring cannot silently drop one. ``NAMES`` then replaces
words, on word boundaries, in code and text alike. The result is formatted with ruff
(the version pinned in pyproject.toml), so it is exactly what ``ruff format`` keeps.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "lingodoc" / "_async_client.py"
TARGET = ROOT / "src" / "lingodoc" / "_sync_client.py"

PHRASES = [
    (
        '"""[`AsyncClient`][lingodoc.AsyncClient]: the one source of the request path.\n\n'
        "This module is written by hand; ``_sync_client.py`` is generated from it by\n"
        "``scripts/unasync.py`` (run ``python scripts/unasync.py`` after editing, CI\n"
        "checks that the generated file is current).",
        '"""[`Client`][lingodoc.Client], generated from ``_async_client.py``: do not edit.\n\n'
        "Edit ``_async_client.py`` and run ``python scripts/unasync.py``; CI checks\n"
        "that this file is current.",
    ),
    (
        "An async client for the lingodoc service, under asyncio or trio.",
        "A blocking client for the lingodoc service.",
    ),
    (
        "Safe to share between the tasks of one event loop (or trio run).",
        "Safe to share between threads.",
    ),
    ("Use it in an `async with` block, or await", "Use it in a `with` block, or call"),
    (
        # Only an AsyncClient takes a DefaultAioHttpClient.
        " A\n            [`DefaultAioHttpClient`][lingodoc.DefaultAioHttpClient] is the"
        " exception:\n            it is handed over, and closed with this client.",
        "",
    ),
    ("\n            With a ``DefaultAioHttpClient``, 100.", ""),
    ("``max_concurrency`` tasks,", "``max_concurrency`` threads,"),
    (
        "the batches in flight are cancelled, and that first error is raised.\n"
        "        Cancelling the awaiting task cancels them too.\n"
        "        No task is left running",
        "the batches in flight are finished (with their retries) and kept, and that\n"
        "        first error is raised. Ctrl-C stops it the same way, and raises\n"
        "        KeyboardInterrupt once the batches in flight are kept.\n"
        "        No thread is left running",
    ),
    (
        "in the calling task, one call at\n"
        "                a time; a coroutine function is awaited.",
        "in the calling thread, one call at\n"
        "                a time; a coroutine function is refused (``TypeError``).",
    ),
    ("other tasks are sending", "other threads are sending"),
    (
        # aclose's Raises: only an AsyncClient belongs to an event loop.
        "\n\n        Raises:\n            LingodocError: If the client was first used in another"
        " event loop that is still\n                open: its connections belong to that loop,"
        " so close it there.\n",
        "\n",
    ),
    (
        "on_progress: Called with each status read, after every poll; a coroutine\n"
        "                function is awaited before the next poll.",
        "on_progress: Called with each status read, after every poll; a coroutine\n"
        "                function is refused with ``TypeError`` before the first poll.",
    ),
    (
        "Cancelling the awaiting\n        task stops the polling at once;",
        "Ctrl-C\n        stops the polling at once;",
    ),
]

NAMES = {
    "AsyncClient": "Client",
    "AsyncClientT": "ClientT",
    "AsyncIterator": "Iterator",
    "AsyncRetrying": "Retrying",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "close",
    "aiter_raw": "iter_raw",
    "asynccontextmanager": "contextmanager",
    "async_limit": "limit",
    "async_shield": "shield",
    "async_sleep": "sleep",
    "async_wait": "wait",
    "async_run_workers": "run_workers",
    "async_report": "report",
    "async_hand_over": "hand_over",
}
# Keywords: `async def`/`async with`/`async for` lose `async`, and `await x` becomes `x`.
KEYWORDS = [(re.compile(r"\basync (def|with|for)\b"), r"\1"), (re.compile(r"\bawait "), "")]
WORD = re.compile(r"\b(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")\b")


def unasync(source: str) -> str:
    """Return the blocking twin of the async module ``source``.

    Raises:
        SystemExit: If one of the phrases is not in ``source``.
    """
    for phrase, replacement in PHRASES:
        if phrase not in source:
            raise SystemExit(f"unasync: the source no longer has the phrase {phrase!r}")
        source = source.replace(phrase, replacement)
    for pattern, replacement in KEYWORDS:
        source = pattern.sub(replacement, source)
    return WORD.sub(lambda match: NAMES[match.group(1)], source)


def formatted(code: str, target: Path) -> str:
    """Return ``code`` as ``ruff`` leaves it in ``target``: imports sorted, then formatted.

    Sorted, because a renamed import (``AsyncIterator`` -> ``Iterator``) can move in its line.
    """
    for command in (["check", "--fix-only", "--select", "I"], ["format"]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(target), "-"],
            input=code,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(f"unasync: ruff {command[0]} failed:\n{result.stderr}")
        code = result.stdout
    return code


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) the generated modules; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for source, target in ((SOURCE, TARGET),):
        generated = formatted(unasync(source.read_text(encoding="utf-8")), target)
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        name = target.relative_to(ROOT)
        if generated == current:
            if args.check:
                print(f"unasync: {name} is current")
        elif not args.check:
            target.write_text(generated, encoding="utf-8")
            print(f"unasync: wrote {name}")
        else:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True),
                generated.splitlines(keepends=True),
                f"{target.name} (in the tree)",
                f"{target.name} (generated)",
            )
            sys.stdout.writelines(diff)
            print(f"unasync: {name} is stale: run `python scripts/unasync.py`", file=sys.stderr)
            stale = 1
    return stale


if __name__ == "__main__":
    sys.exit(main())
