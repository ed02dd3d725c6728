"""Helpers shared by the benchmark scripts: timing in interleaved rounds, medians, JSON output.

Every benchmark compares lingodoc with a baseline measured in the same process and the same
run: each round times every case once, in a rotating order, and the result is the median
over the rounds, so drift in the machine's speed (turbo, other load) hits both sides alike.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

KEY = "ld_bench_0123456789abcdef0123456789ab"
BASE_URL = "https://api.lingodoc.test/v1"
TEXT = "Hello world"
TRANSLATION = "Hallo Welt"
ENVELOPE = {
    "success": True,
    "data": {"translated_text": TRANSLATION, "source_language": "en", "target_language": "de"},
}
# What the emulator (and, per the spec, the service) sends with every answer.
RESPONSE_HEADERS = [
    ("Content-Type", "application/json"),
    ("X-Request-Id", "req_0123456789abcdef01234567"),
    ("X-RateLimit-Limit", "1000000"),
    ("X-RateLimit-Remaining", "999999"),
    ("X-RateLimit-Reset", "3600"),
]


def interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run every case once per round, rotating the order; return each case's samples.

    Each case runs a bounded amount of work and returns its measure (seconds per operation).
    """
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            samples[name].append(cases[name]())
    return samples


def per_op(function: Callable[[], object], count: int) -> Callable[[], float]:
    """Return a case that calls ``function`` ``count`` times and gives seconds per call."""

    def case() -> float:
        started = time.perf_counter()
        for _ in range(count):
            function()
        return (time.perf_counter() - started) / count

    return case


def summary(samples: list[float]) -> dict[str, Any]:
    """Median and spread of a case's samples."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "rounds": len(samples),
        "samples": samples,
    }


def emit(result: dict[str, Any]) -> None:
    """Print the result as one JSON document on stdout, for run.py."""
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


@contextmanager
def emulator_process(rate_limit: int = 10**9, max_seconds: float = 900) -> Iterator[dict[str, str]]:
    """Run ``Emulator().serve()`` on 127.0.0.1 in a child process; yield its base URL and key.

    A process of its own, so the server and the client under test do not share one GIL
    (on 2 cores each gets one). The child stops when this block ends, or by itself after
    ``max_seconds``.
    """
    arguments = ["--rate-limit", str(rate_limit), "--max-seconds", str(max_seconds)]
    with server_process("_server.py", arguments) as server:
        yield server


@contextmanager
def fast_server_process(delay: float = 0.0, max_seconds: float = 900) -> Iterator[dict[str, str]]:
    """Run ``_fast_server.py`` (the spec's answer, at once) on 127.0.0.1 in a child process.

    ``delay``: seconds the server waits before each answer, as a distant server would.
    """
    arguments = ["--delay", str(delay), "--max-seconds", str(max_seconds)]
    with server_process("_fast_server.py", arguments) as server:
        yield server


@contextmanager
def server_process(script: str, arguments: list[str]) -> Iterator[dict[str, str]]:
    """Run a server script of this folder in a child process; yield the JSON line it prints."""
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name(script)), *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"{script} did not start")
        yield json.loads(line)  # type: ignore[no-any-return]
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
