"""What the cache's reliability tests share: corpora, a recording emulator, a script run apart.

``python -m tests.reliability.cache_helpers`` (from the repository's root) is the script the
repeat-run tests start in processes of their own: it translates the texts of a JSON file with
``translate_many`` and a cache (an `SQLiteCache` file, or a `RedisCache`), against the
service that ``LINGODOC_BASE_URL`` and ``LINGODOC_API_KEY`` name, and writes what it got to
another JSON file. It imports lingodoc and the standard library alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import lingodoc
from lingodoc.emulator import WORDS, Emulator, Reply, translate_text

ROOT = Path(__file__).resolve().parents[2]
LANGS = {"source_language": "en", "target_language": "de"}
WAIT = 60.0  # seconds at most for a script run apart (its start, its run, its report)


def corpus(total: int, *, repeats: float, seed: int, tag: str = "") -> list[str]:
    """``total`` texts of which a fraction ``repeats`` repeat an earlier one, shuffled.

    Each distinct text is words of the emulator's table and a number of its own, so that
    its translation (``translate_text``) is unique to it: a translation handed to another
    text is seen at once.
    """
    rng = random.Random(seed)
    words = sorted(WORDS)
    distinct_count = total - round(total * repeats)
    distinct = [f"{' '.join(rng.sample(words, 3))} {tag}{n}" for n in range(distinct_count)]
    texts = distinct + [rng.choice(distinct) for _ in range(total - distinct_count)]
    rng.shuffle(texts)
    return texts


def expected(texts: Sequence[str]) -> list[str]:
    """What the emulator translates ``texts`` into, English to German."""
    return [translate_text(text, "en", "de") for text in texts]


def batches_for(distinct: int, batch_size: int = 100) -> int:
    """The fewest batch requests for ``distinct`` texts: ceil(distinct / batch_size)."""
    return -(-distinct // batch_size)


class Recording(Emulator):
    """The emulator, keeping the texts of each batch request as it arrives (thread-safe).

    ``on_batch``, if set, is called with the number of each batch request (1 for the first)
    as it arrives, before it is answered: a test acts between two batches with it.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lock = threading.Lock()
        self.batches: list[list[str]] = []
        self.on_batch: Callable[[int], None] | None = None

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if method == "POST" and target.split("?")[0].endswith("/translate/batch"):
            with self.lock:
                self.batches.append(json.loads(body)["texts"])
                number = len(self.batches)
            if self.on_batch is not None:
                self.on_batch(number)
        return super().handle(method, target, headers, body)

    def sent(self) -> list[str]:
        """Every text the batch requests carried, in order (a text sent twice is there twice)."""
        with self.lock:
            return [text for texts in self.batches for text in texts]

    def forget(self) -> None:
        """Start counting afresh."""
        with self.lock:
            self.batches.clear()


# The script run apart -----------------------------------------------------------------------


def child_env(base_url: str, api_key: str) -> dict[str, str]:
    """The environment of a script run apart: the service's two variables, this source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINGODOC_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env.update(LINGODOC_BASE_URL=base_url, LINGODOC_API_KEY=api_key)
    return env


class Script:
    """``python -m tests.reliability.cache_helpers`` on ``texts``, started in a process.

    ``cache``: ``["--sqlite", path]`` or ``["--redis", url]``. With ``wait``, the script
    prints ``ready`` once it has its cache and client, then waits for `go`.
    """

    def __init__(
        self,
        server: Any,
        texts: Sequence[str],
        directory: Path,
        name: str,
        cache: Sequence[str],
        *,
        wait: bool = False,
    ) -> None:
        self.texts_path = directory / f"{name}.in.json"
        self.out_path = directory / f"{name}.out.json"
        self.texts_path.write_text(json.dumps(list(texts)), encoding="utf-8")
        command = [
            sys.executable, "-m", "tests.reliability.cache_helpers",
            "--texts", str(self.texts_path), "--out", str(self.out_path), *cache,
        ]  # fmt: skip
        if wait:
            command.append("--wait")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_env(server.base_url, server.api_key),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self) -> None:
        """Wait (at most WAIT seconds) for the script's ``ready``."""
        assert self.process.stdout is not None
        if not select.select([self.process.stdout], [], [], WAIT)[0]:
            self.process.kill()
            raise AssertionError(f"the script was not ready within {WAIT} s")
        line = self.process.stdout.readline()
        assert line == "ready\n", line + self.finish_failed()

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        """End the script if it still runs (a test that failed leaves none behind)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=WAIT)

    def finish_failed(self) -> str:
        self.process.kill()
        _, err = self.process.communicate(timeout=WAIT)
        return err

    def result(self) -> dict[str, Any]:
        """Wait for the script (at most WAIT seconds); what it wrote."""
        try:
            _, err = self.process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate(timeout=WAIT)
            raise AssertionError(f"the script ran past {WAIT} s") from None
        assert self.process.returncode == 0, err
        report: dict[str, Any] = json.loads(self.out_path.read_text(encoding="utf-8"))
        return report


def run_script(
    server: Any, texts: Sequence[str], directory: Path, name: str, cache: Sequence[str]
) -> dict[str, Any]:
    """Run the script to its end; what it wrote (``translations``, ``hits``, ``misses``)."""
    return Script(server, texts, directory, name, cache).result()


def translate(
    texts: Sequence[str],
    cache: Any,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    batch_size: int = 100,
    ready: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """What the script does: ``translate_many`` with ``cache`` (closed after); its report.

    ``ready``: called once the client is made, before the call.
    """
    progress: list[lingodoc.BulkProgress] = []
    with cache, lingodoc.Client(api_key, base_url=base_url, cache=cache) as client:
        if ready is not None:
            ready()
        translations = client.translate_many(
            texts, **LANGS, batch_size=batch_size, on_progress=progress.append
        )
    last = progress[-1]
    return {"translations": translations, "hits": last.cache_hits, "misses": last.cache_misses}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sqlite")
    parser.add_argument("--redis")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--wait", action="store_true")
    args = parser.parse_args(argv)
    texts = json.loads(Path(args.texts).read_text(encoding="utf-8"))
    cache: Any = (
        lingodoc.SQLiteCache(args.sqlite) if args.sqlite else lingodoc.RedisCache(args.redis)
    )

    def ready() -> None:  # then wait for the word to go
        print("ready", flush=True)
        sys.stdin.readline()

    report = translate(texts, cache, batch_size=args.batch_size, ready=ready if args.wait else None)
    Path(args.out).write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main()
