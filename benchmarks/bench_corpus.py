"""Issue 14: a catalogue-like corpus, 30 % duplicates, under a Business plan's rate limit.

Usage::

    python benchmarks/bench_corpus.py [all|volume|fault] [--texts N] [--lines N] [--rounds N]

``volume``: ``translate_many`` (``Client`` and ``AsyncClient``) on ``--texts`` short texts
(1,000,000 by default) of which 30 % repeat earlier ones, against ``Emulator(plan="business")``
(20,000 requests an hour for one seat) served on 127.0.0.1 from a child process that counts
what reaches it: batch requests, their statuses, texts received and texts received twice. The
floor for requests is ``ceil(unique / batch_size)``; for memory, the inputs and the outputs.
Side by side, in interleaved rounds, a hand-written httpx loop doing the best a careful user
would: duplicates removed with a dict, batches of 100 from 4 threads (or 4 tasks), one
``httpx.Client`` made once with the base URL and the key. Peak memory is tracemalloc's peak
during one call, in a process of its own per case, against ``sys.getsizeof`` of the input and
output lists and of their strings (each string object counted once).

``fault``: ``python -m lingodoc batch FILE --to de -o OUT --checkpoint CK`` (a child process,
with ``PYTHONPATH`` on this source tree) on ``--lines`` lines (200,000 by default, 30 %
duplicates), against an emulator served by this process that records every text each request
carries. One uninterrupted run gives the reference output. Then a run is stopped once the
emulator has answered half the requests needed, by SIGINT (Ctrl-C), and run again with
``--resume``; and the same with SIGKILL. Reported: texts sent by each run, texts sent twice
(for SIGINT it must be 0; a kill loses the answers not yet checkpointed, at most the batches
in flight), and whether the output equals the reference.

``all`` (the default) runs both and prints one JSON document; ``serve`` and ``memory-case``
are the child processes' parts. Servers listen on 127.0.0.1 only, every wait is bounded and
every child process has a time limit.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from _common import emit, interleaved, summary

import lingodoc
from lingodoc.emulator import PLAN_LIMITS, Emulator, Reply, translate_text

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
BATCH = 100
CONCURRENCY = 4
PLAN, SEATS = "business", 1
RATE_LIMIT = PLAN_LIMITS[PLAN] * SEATS
LANGS = {"source_language": "en", "target_language": "de"}
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)
DUPLICATES = 0.3
SEED = 14
WINDOW = 3600  # the emulator's rate-limit window, in seconds
CASES = ("sync lingodoc", "sync raw", "async lingodoc", "async raw")
# Time limits, in seconds: for a child's answer, a whole CLI run, the wait for halfway.
SERVER_TIMEOUT = 60
CASE_TIMEOUT = 600
CLI_TIMEOUT = 300
STOP_TIMEOUT = 60


# The corpus ----------------------------------------------------------------------------------

# Catalogue entries: a few of the words are in the emulator's table (good, night, morning,
# dog, cat...), so translations are partly "translated", as real ones would differ from the
# source.
ADJECTIVES = (
    "Classic", "Compact", "Deluxe", "Essential", "Foldable", "Good", "Heavy-duty", "Large",
    "Light", "Modern", "Outdoor", "Portable", "Premium", "Rustic", "Slim", "Small", "Soft",
    "Sturdy", "Vintage", "Washable",
)  # fmt: skip
COLOURS = (
    "black", "blue", "brown", "cream", "green", "grey", "navy", "olive", "orange", "pink",
    "red", "sand", "teal", "white", "yellow",
)  # fmt: skip
MATERIALS = (
    "bamboo", "canvas", "ceramic", "cotton", "glass", "leather", "linen", "oak", "pine",
    "steel", "wool", "walnut",
)  # fmt: skip
NOUNS = (
    "bath towel", "cat bed", "cutting board", "desk lamp", "dog bowl", "dog lead",
    "document folder", "floor cushion", "garden chair", "morning mug", "night lamp",
    "notebook", "picture frame", "plant pot", "serving tray", "shoulder bag", "storage box",
    "table runner", "tea towel", "travel mug", "wall clock", "welcome mat",
)  # fmt: skip
SIZES = ("size S", "size M", "size L", "size XL", "40 cm", "60 cm", "1.5 l", "set of 2")
SKU_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SKU_SPACE = 36**6  # every item number below this has its own reference
SKU_STEP = 1_000_000_007  # a prime (so coprime with 36): item -> reference is one to one


def item_text(item: int) -> str:
    """The catalogue line of item number ``item``: the same text every time it is asked."""
    mixed = (item * 2_654_435_761 + SEED) & 0xFFFFFFFF
    words = []
    for choices in (ADJECTIVES, COLOURS, MATERIALS, NOUNS, SIZES):
        mixed, pick = divmod(mixed, len(choices))
        words.append(choices[pick])
    code, sku = (item * SKU_STEP + SEED) % SKU_SPACE, ""
    for _ in range(6):
        code, digit = divmod(code, 36)
        sku = SKU_DIGITS[digit] + sku
    adjective, colour, material, noun, size = words
    return f"{adjective} {colour} {material} {noun}, {size} - ref. {sku}"


def make_corpus(count: int, duplicates: float = DUPLICATES, seed: int = SEED) -> list[str]:
    """``count`` texts, of which ``round(count * duplicates)`` repeat an earlier one.

    Deterministic for a seed. A repeat is a new string object with the same characters, as
    lines read from a file would be.
    """
    rng = random.Random(seed)
    repeats = set(rng.sample(range(1, count), round(count * duplicates))) if count > 1 else set()
    items: list[int] = []
    fresh = 0
    for position in range(count):
        if position in repeats:
            items.append(items[rng.randrange(position)])
        else:
            items.append(fresh)
            fresh += 1
    return [item_text(item) for item in items]


def footprint(strings: list[str]) -> int:
    """Bytes held by a list and its strings, each string object counted once."""
    seen: set[int] = set()
    total = sys.getsizeof(strings)
    for text in strings:
        if id(text) not in seen:
            seen.add(id(text))
            total += sys.getsizeof(text)
    return total


# The counting emulator -----------------------------------------------------------------------


class CountingEmulator(Emulator):
    """The emulator, counting the batch requests and texts that reach it.

    ``halfway`` set to a number of answered batch requests sets ``reached`` when the
    emulator has answered that many.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._count_lock = threading.Lock()
        self.halfway: int | None = None
        self.reached = threading.Event()
        self.clear()

    def clear(self) -> None:
        """Zero the counts (the texts seen included)."""
        with self._count_lock:
            self.statuses: Counter[int] = Counter()
            self.texts_received = 0
            self.texts_translated = 0
            self.texts_repeated = 0  # translated before, in this count
            self.largest_batch = 0
            self.seen: set[str] = set()
            self.this_run: set[str] = set()

    def new_run(self) -> set[str]:
        """Start a run's own set of texts translated; return the last run's."""
        with self._count_lock:
            last, self.this_run = self.this_run, set()
        return last

    def counts(self) -> dict[str, Any]:
        with self._count_lock:
            return {
                "requests": sum(self.statuses.values()),
                "answered": self.statuses[200],
                "statuses": {str(status): n for status, n in sorted(self.statuses.items())},
                "rate_limited": self.statuses[429],
                "texts_received": self.texts_received,
                "texts_translated": self.texts_translated,
                "distinct_translated": len(self.seen),
                "texts_repeated": self.texts_repeated,
                "largest_batch": self.largest_batch,
            }

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        reply = super().handle(method, target, headers, body)
        if method.upper() != "POST" or not target.split("?", 1)[0].endswith("/translate/batch"):
            return reply
        try:
            texts = [text for text in json.loads(body)["texts"] if isinstance(text, str)]
        except (ValueError, KeyError, TypeError):
            texts = []
        with self._count_lock:
            self.statuses[reply.status] += 1
            self.texts_received += len(texts)
            self.largest_batch = max(self.largest_batch, len(texts))
            if reply.status == 200:
                self.texts_translated += len(texts)
                for text in texts:
                    if text in self.seen:
                        self.texts_repeated += 1
                    else:
                        self.seen.add(text)
                self.this_run.update(texts)
                if self.halfway is not None and self.statuses[200] >= self.halfway:
                    self.reached.set()
        return reply

    def new_window(self) -> None:
        """Let the key's rate-limit window close, so the next run starts a fresh one."""
        self.advance(WINDOW + 1)


def serve(args: argparse.Namespace) -> None:
    """The child process: serve a counting emulator; answer ``stats`` and ``reset`` on stdin.

    Prints one JSON line with ``base_url`` and ``api_key`` once it listens; then, for each
    line read, ``stats`` prints the counts as JSON, ``reset`` zeroes them and lets the rate
    limit's window close (printing ``{}``). Stops when stdin closes or time runs out.
    """
    emulator = CountingEmulator(plan=PLAN, seats=SEATS, seed_documents=False)

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "stats":
                print(json.dumps(emulator.counts()), flush=True)
            elif line.strip() == "reset":
                emulator.clear()
                emulator.new_window()
                print("{}", flush=True)

    with emulator.serve("127.0.0.1", 0) as server:
        ready = {"base_url": server.base_url, "api_key": server.api_key}
        print(json.dumps({**ready, "rate_limit": emulator.rate_limit}), flush=True)
        reader = threading.Thread(target=commands, daemon=True)
        reader.start()
        reader.join(timeout=args.max_seconds)


class ServerProcess:
    """The ``serve`` child, from the benchmark's side."""

    def __init__(self, max_seconds: float) -> None:
        command = [sys.executable, __file__, "serve", "--max-seconds", str(max_seconds)]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self.child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.info = self._ask(None)
        self.base_url: str = self.info["base_url"]
        self.api_key: str = self.info["api_key"]

    def _ask(self, command: str | None) -> dict[str, Any]:
        assert self.child.stdin is not None
        assert self.child.stdout is not None
        if command is not None:
            self.child.stdin.write(command + "\n")
            self.child.stdin.flush()
        answer: list[str] = []
        reader = threading.Thread(
            target=lambda: answer.append(self.child.stdout.readline()), daemon=True
        )
        reader.start()
        reader.join(SERVER_TIMEOUT)
        if not answer or not answer[0]:
            raise RuntimeError(f"the emulator process did not answer {command or 'at start'}")
        return json.loads(answer[0])  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        return self._ask("stats")

    def reset(self) -> None:
        self._ask("reset")

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        try:
            self.child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
        finally:
            assert self.child.stdout is not None
            self.child.stdout.close()


@contextmanager
def server_process(max_seconds: float) -> Iterator[ServerProcess]:
    server = ServerProcess(max_seconds)
    try:
        yield server
    finally:
        server.close()


# The hand-written baselines ------------------------------------------------------------------


def raw_http(base_url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {key}"},
        limits=LIMITS,
        timeout=30.0,
    )


def raw_async_http(base_url: str, key: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.AsyncClient(base_url=base_url, headers=headers, limits=LIMITS, timeout=30.0)


def raw_sync(http: httpx.Client, texts: list[str]) -> list[str]:
    """Duplicates removed with a dict, batches of 100 from 4 threads, fanned back out."""
    found: dict[str, str | None] = dict.fromkeys(texts)
    unique = list(found)
    starts = iter(range(0, len(unique), BATCH))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                start = next(starts, None)
            if start is None:
                return
            chunk = unique[start : start + BATCH]
            response = http.post("/translate/batch", json={"texts": chunk, **LANGS})
            response.raise_for_status()
            translations = response.json()["data"]["translations"]
            for text, translation in zip(chunk, translations, strict=True):
                found[text] = translation  # an existing key: the dict does not grow

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        for future in [pool.submit(worker) for _ in range(CONCURRENCY)]:
            future.result()
    return [found[text] for text in texts]  # type: ignore[misc]


async def raw_async(http: httpx.AsyncClient, texts: list[str]) -> list[str]:
    """As `raw_sync`, with 4 tasks."""
    found: dict[str, str | None] = dict.fromkeys(texts)
    unique = list(found)
    starts = iter(range(0, len(unique), BATCH))

    async def worker() -> None:
        for start in starts:  # shared: each start goes to one worker
            chunk = unique[start : start + BATCH]
            response = await http.post("/translate/batch", json={"texts": chunk, **LANGS})
            response.raise_for_status()
            translations = response.json()["data"]["translations"]
            for text, translation in zip(chunk, translations, strict=True):
                found[text] = translation

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return [found[text] for text in texts]  # type: ignore[misc]


class Runners:
    """The four cases' clients, made once, and a function per case that translates texts."""

    def __init__(self, base_url: str, key: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.http = raw_http(base_url, key)
        self.ahttp = raw_async_http(base_url, key)
        self.sdk = lingodoc.Client(key, base_url=base_url)
        self.asdk = lingodoc.AsyncClient(key, base_url=base_url)
        options = {"batch_size": BATCH, "max_concurrency": CONCURRENCY, **LANGS}
        self.cases: dict[str, Callable[[list[str]], list[str]]] = {
            "sync lingodoc": lambda texts: self.sdk.translate_many(texts, **options),
            "sync raw": lambda texts: raw_sync(self.http, texts),
            "async lingodoc": lambda texts: self.loop.run_until_complete(
                self.asdk.translate_many(texts, **options)
            ),
            "async raw": lambda texts: self.loop.run_until_complete(raw_async(self.ahttp, texts)),
        }

    def close(self) -> None:
        self.http.close()
        self.sdk.close()
        self.loop.run_until_complete(self.ahttp.aclose())
        self.loop.run_until_complete(self.asdk.aclose())
        self.loop.close()


# Volume --------------------------------------------------------------------------------------


def memory_case(args: argparse.Namespace) -> None:
    """The child process of one memory measurement: prints its JSON."""
    runners = Runners(args.base_url, args.api_key)
    run = runners.cases[args.case]
    run([f"Warm-up line {i}" for i in range(BATCH * CONCURRENCY * 2)])  # imports, pools, models
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    texts = make_corpus(args.texts)
    gc.collect()
    tracemalloc.reset_peak()  # the corpus generator's scratch is not the call's
    started = time.perf_counter()
    outputs = run(texts)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    inputs_bytes, outputs_bytes = footprint(texts), footprint(outputs)
    runners.close()
    emit(
        {
            "peak_bytes": peak,
            "inputs_bytes": inputs_bytes,
            "outputs_bytes": outputs_bytes,
            "ratio": peak / (inputs_bytes + outputs_bytes),
            "seconds_under_tracemalloc": elapsed,
            "outputs": len(outputs),
        }
    )


def measure_memory(server: ServerProcess, case: str, texts: int) -> dict[str, Any]:
    server.reset()
    command = [
        sys.executable, __file__, "memory-case", "--case", case, "--texts", str(texts),
        "--base-url", server.base_url, "--api-key", server.api_key,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=CASE_TIMEOUT)
    if result.returncode != 0:
        return {"error": result.stderr[-2000:]}
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def volume(args: argparse.Namespace) -> dict[str, Any]:
    texts = make_corpus(args.texts)
    unique_texts = list(dict.fromkeys(texts))
    unique = len(unique_texts)
    translated = {text: translate_text(text, "en", "de") for text in unique_texts}
    expected = [translated[text] for text in texts]
    del unique_texts, translated
    minimum = math.ceil(unique / BATCH)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CASES}
    with server_process(max_seconds=args.max_seconds) as server:
        runners = Runners(server.base_url, server.api_key)

        def case(name: str) -> Callable[[], float]:
            def timed() -> float:
                server.reset()  # a fresh window and zero counts for every run
                started = time.perf_counter()
                try:
                    out = runners.cases[name](texts)
                except Exception as exc:  # reported, not hidden: the run failed
                    runs[name].append({**server.stats(), "error": repr(exc)[:500]})
                    return math.nan
                elapsed = time.perf_counter() - started
                runs[name].append({**server.stats(), "correct": out == expected})
                return elapsed

            return timed

        samples = interleaved({name: case(name) for name in CASES}, args.rounds)
        runners.close()
        memory = {name: measure_memory(server, name, args.texts) for name in CASES}

    def verdicts(name: str) -> dict[str, Any]:
        made = runs[name]
        return {
            "requests": sorted({run["requests"] for run in made}),
            # Per run: every figure the rounds gave, one if they agree.
            "rate_limited": sorted({run["rate_limited"] for run in made}),
            "texts_sent": sorted({run["texts_received"] for run in made}),
            "texts_repeated": sorted({run["texts_repeated"] for run in made}),
            "largest_batch": max(run["largest_batch"] for run in made),
            "correct": all(run.get("correct", False) for run in made),
            "errors": [run["error"] for run in made if "error" in run],
            "at_minimum": all(
                run["requests"] == minimum and run["texts_received"] == unique for run in made
            ),
        }

    return {
        "texts": len(texts),
        "unique": unique,
        "duplicates": len(texts) - unique,
        "batch_size": BATCH,
        "concurrency": CONCURRENCY,
        "plan": PLAN,
        "seats": SEATS,
        "rate_limit": RATE_LIMIT,
        "min_requests": minimum,
        "without_dedup_requests": math.ceil(len(texts) / BATCH),
        "cases": {
            name: {**summary(samples[name]), **verdicts(name), "runs": runs[name],
                   "memory": memory[name]}
            for name in CASES
        },
    }  # fmt: skip


# Fault ---------------------------------------------------------------------------------------


def cli_env(base_url: str, key: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("LINGODOC_") and name != "PYTHONPATH"
    }
    pythonpath = [str(SRC), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        PYTHONPATH=os.pathsep.join(pythonpath),
        PYTHONDONTWRITEBYTECODE="1",
        LINGODOC_API_KEY=key,
        LINGODOC_BASE_URL=base_url,
    )
    return env


def checkpointed(path: Path, lines: list[str]) -> set[str]:
    """The texts whose translation a checkpoint of ``lingodoc batch`` holds.

    Its format (``lingodoc.cli._checkpoint``): JSON Lines, a header and then one
    ``{"i": index, "t": translation}`` per finished text; a torn last line is ignored, as
    ``--resume`` ignores it.
    """
    if not path.exists():
        return set()
    kept = set()
    with open(path, "rb") as stream:
        for line in stream.read().split(b"\n")[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the torn last line of a killed run
            kept.add(lines[entry["i"]])
    return kept


def cli(
    emulator: CountingEmulator,
    env: dict[str, str],
    corpus: Path,
    out: Path,
    checkpoint: Path | None,
    *,
    resume: bool = False,
    stop: signal.Signals | None = None,
) -> dict[str, Any]:
    """Run ``lingodoc batch`` once, stopping it with ``stop`` at halfway; return what it sent.

    The counts are this run's alone; the texts seen are kept across runs (``emulator.clear()``
    starts a scenario), so ``texts_repeated`` counts texts already translated by an earlier
    run of the same scenario. ``emulator.new_run()`` afterwards gives this run's texts.
    """
    before = emulator.counts()
    emulator.new_run()
    command = [sys.executable, "-m", "lingodoc", "batch", str(corpus), "--to", "de", "-o", str(out)]
    if checkpoint is not None:
        command += ["--checkpoint", str(checkpoint)]
    if resume:
        command.append("--resume")
    emulator.reached.clear()
    stderr_path = out.with_suffix(".stderr")
    started = time.perf_counter()
    signalled_at: dict[str, Any] | None = None
    with open(stderr_path, "w+", encoding="utf-8") as stderr:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            if stop is not None:
                deadline = time.monotonic() + CLI_TIMEOUT
                while not emulator.reached.wait(0.01):
                    if child.poll() is not None or time.monotonic() > deadline:
                        break
                if child.poll() is None:
                    child.send_signal(stop)
                    signalled_at = emulator.counts()
            exit_code: int | str = child.wait(timeout=CLI_TIMEOUT if stop is None else STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            exit_code = "timed out"
        stderr.seek(0)
        stderr_text = stderr.read()
    elapsed = time.perf_counter() - started
    after = emulator.counts()
    ran = {
        name: after[name] - before[name]
        for name in ("requests", "answered", "rate_limited", "texts_received", "texts_translated")
    }
    result: dict[str, Any] = {
        "exit": exit_code,
        "seconds": elapsed,
        **ran,
        "texts_repeated": after["texts_repeated"] - before["texts_repeated"],
    }
    if signalled_at is not None:
        result["signalled_after_requests"] = signalled_at["answered"] - before["answered"]
    expected_exit = {None: 0, signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}[stop]
    if exit_code != expected_exit:
        result["stderr"] = stderr_text[-2000:]
    return result


def fault(args: argparse.Namespace) -> dict[str, Any]:
    lines = make_corpus(args.lines)
    unique = len(set(lines))
    minimum = math.ceil(unique / BATCH)
    # A child started while SIGINT is ignored (a background job) would ignore it too; a
    # handler, unlike SIG_IGN, is reset to the default by exec, and the CLI's Python makes
    # the default a KeyboardInterrupt.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    emulator = CountingEmulator(plan=PLAN, seats=SEATS, seed_documents=False)
    scenarios: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="lingodoc-corpus-") as scratch,
        emulator.serve("127.0.0.1", 0) as server,
    ):
        folder = Path(scratch)
        corpus = folder / "corpus.txt"
        corpus.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        env = cli_env(server.base_url, server.api_key)

        reference_out = folder / "reference.txt"
        emulator.clear()
        emulator.new_window()
        reference = cli(emulator, env, corpus, reference_out, None)
        reference_text = reference_out.read_text(encoding="utf-8") if reference_out.exists() else ""
        expected = "".join(translate_text(line, "en", "de") + "\n" for line in lines)
        reference["matches_emulator"] = reference_text == expected
        scenarios["reference"] = reference

        emulator.halfway = minimum // 2
        for stop in (signal.SIGINT, signal.SIGKILL):
            emulator.clear()
            emulator.new_window()
            out, checkpoint = folder / f"{stop.name}.txt", folder / f"{stop.name}.ckpt"
            first = cli(emulator, env, corpus, out, checkpoint, stop=stop)
            kept = checkpointed(checkpoint, lines)  # read before run 2 ends and deletes it
            sent_first = emulator.new_run()
            second = cli(emulator, env, corpus, out, checkpoint, resume=True)
            sent_second = emulator.new_run()
            counts = emulator.counts()
            output = out.read_text(encoding="utf-8") if out.exists() else None
            scenarios[stop.name] = {
                "run1": first,
                "run2": second,
                "texts_sent": first["texts_received"] + second["texts_received"],
                "requests": first["requests"] + second["requests"],
                "distinct_translated": counts["distinct_translated"],
                "texts_sent_twice": counts["texts_repeated"],
                # What run 1 had translated and kept; what it had translated and lost (sent
                # again by run 2, or not); what run 2 sent of what was kept (must be 0).
                "checkpointed": len(kept),
                "answered_not_checkpointed": len(sent_first - kept),
                "checkpointed_sent_again": len(sent_second & kept),
                "output_matches_reference": output == reference_text,
            }
        emulator.halfway = None
    return {
        "lines": len(lines),
        "unique": unique,
        "duplicates": len(lines) - unique,
        "batch_size": BATCH,
        "concurrency": CONCURRENCY,
        "min_requests": minimum,
        "halfway_requests": minimum // 2,
        "in_flight_texts": BATCH * CONCURRENCY,
        "scenarios": scenarios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "mode", nargs="?", default="all", choices=["all", "volume", "fault", "serve", "memory-case"]
    )
    parser.add_argument("--texts", type=int, default=1_000_000, help="volume: texts")
    parser.add_argument("--lines", type=int, default=200_000, help="fault: lines")
    parser.add_argument("--rounds", type=int, default=3, help="volume: interleaved rounds")
    parser.add_argument("--max-seconds", type=float, default=1800, help="serve: time limit")
    parser.add_argument("--case", choices=CASES, help="memory-case: which")
    parser.add_argument("--base-url", help="memory-case: the emulator")
    parser.add_argument("--api-key", help="memory-case: its key")
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args)
    elif args.mode == "memory-case":
        memory_case(args)
    else:
        result: dict[str, Any] = {}
        if args.mode in ("all", "volume"):
            result["volume"] = volume(args)
        if args.mode in ("all", "fault"):
            result["fault"] = fault(args)
        emit(result)


if __name__ == "__main__":
    main()
