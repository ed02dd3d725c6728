"""What the benchmark scripts share: the spec's answer, interleaved rounds, summaries, a server.

Every row compares lingodoc with its baseline side by side: each round runs every case
once, in a rotating order, so drift in the machine's speed (other load, turbo) hits both
sides alike. Each case is reported as min / median / max over the rounds, and each ratio is
taken round by round, then summarised the same way.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KEY = "ld_bench_0123456789abcdef0123456789ab"
BASE_URL = "https://api.lingodoc.test/v1"
TEXT = "Hello world"
TRANSLATION = "Hallo Welt"
PAYLOAD = {"text": TEXT, "source_language": "en", "target_language": "de"}
ENVELOPE = {
    "success": True,
    "data": {"translated_text": TRANSLATION, "source_language": "en", "target_language": "de"},
}
# What the service sends with every answer (the spec's headers).
RESPONSE_HEADERS = [
    ("Content-Type", "application/json"),
    ("X-Request-Id", "req_0123456789abcdef01234567"),
    ("X-RateLimit-Limit", "1000000"),
    ("X-RateLimit-Remaining", "999999"),
    ("X-RateLimit-Reset", "3600"),
]


def timed(call: Callable[[], object], count: int) -> Callable[[], float]:
    """A case: ``count`` calls of ``call`` in a row, returning the seconds per call."""

    def case() -> float:
        started = time.perf_counter()
        for _ in range(count):
            call()
        return (time.perf_counter() - started) / count

    return case


def interleaved(cases: Mapping[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run every case once per round, rotating the order; return each case's samples."""
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            samples[name].append(cases[name]())
    return samples


def summary(values: list[float]) -> dict[str, float]:
    """Min, median and max of a case's samples (or of round-by-round ratios)."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def paired(values: list[float], others: list[float], how: Callable[[float, float], float]) -> Any:
    """``how(a, b)`` for the samples of two cases, round by round, summarised."""
    return summary([how(a, b) for a, b in zip(values, others, strict=True)])


def emit(result: dict[str, Any]) -> None:
    """Print the result as one JSON document on stdout, for run.py."""
    print(json.dumps(result), flush=True)


@contextmanager
def fast_server_process(delay: float = 0.0, max_seconds: float = 900) -> Iterator[dict[str, str]]:
    """Run ``_fast_server.py`` on 127.0.0.1 in a child process; yield its base URL and key.

    A process of its own, so that server and client do not share one GIL. ``delay``: the
    seconds it waits before each answer, as a distant server would. The child stops when
    this block ends, or by itself after ``max_seconds``.
    """
    script = str(Path(__file__).with_name("_fast_server.py"))
    child = subprocess.Popen(
        [sys.executable, script, "--delay", str(delay), "--max-seconds", str(max_seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError("_fast_server.py did not start")
        yield json.loads(line)
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
