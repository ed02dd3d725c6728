"""Soak run: mixed traffic with injected faults against the emulator over real HTTP.

Usage::

    python scripts/soak.py [--duration SECONDS] [--threads N] [--tasks N]
                           [--fault-rate F] [--seed N] [--report PATH]

``nox -s soak`` runs it (``nox -s soak -- --duration 30`` for a short run). For
``--duration`` seconds (default 600), one ``lingodoc.Client`` shared by ``--threads`` threads
and one ``lingodoc.AsyncClient`` shared by ``--tasks`` tasks call every method of the SDK
(``translate``, ``translate_batch``, ``translate_many``, ``translate_document`` followed by
``wait_for_translation`` and ``get_translation``, ``list_documents``, ``request()``) and some
deliberately invalid ones, against ``Emulator(job_duration=0.5).serve()`` on 127.0.0.1, on
the real clock, with the SDK's default retries (``max_retries=2``).

Faults. Each call that can carry a fault (all but ``list_documents()`` and the invalid ones) is
given one with the chance ``--fault-rate`` (default 0.014: about 1 % of the HTTP requests):
``rate_limit`` (429, ``Retry-After: 1``), ``server_error`` (500, 502, 503 or 504),
``disconnect`` or ``slow`` (answered 0.1 to 0.8 s late), on the call's first attempt, or on
three attempts in a row (one call in five), which outlasts the retries. Each fault is put in
with ``emulator.inject`` at the moment the call's request reaches the emulator, so it hits that
very call and no other: the call carries a marker (in a text, the ``style`` or the query) or
has a path of its own (its translation id), and the emulator is subclassed only to look for it.

Expected, and not. Every call has one expected outcome, worked out before it is made:

* an invalid input (an unsupported or malformed language code, a text over 10,000
  characters, an unknown document, translation or path) expects the exception it provokes:
  ``InvalidLanguage``, ``TextTooLong`` or ``NotFound``;
* a call given a fault expects what the retry policy makes of it: success when a retry
  absorbs it (any fault on a call that is safe to repeat, and a 429 or 503 on one that is
  not: ``translate_document`` and ``request("POST", ...)``), else the fault's error:
  ``RateLimited``, ``ServerError`` or ``APIConnectionError`` (a disconnect, or a 500, 502 or
  504 on a call that is not safe to repeat, or the same fault on all three attempts of any
  call). ``wait_for_translation`` (with a timeout) rides out failed polls, so it expects
  success whatever its polls are given; ``translate_many`` sends a batch refused with a 429
  again after the reset, so it expects success after any 429s. A slow answer is an
  answer: success.
* every other call expects success, with the exact result (the emulator's translation of
  each text is known, ``lingodoc.emulator.translate_text``; a document translation must
  complete).

An outcome is *unexpected* if its class is not the expected one, a successful result is
wrong, the emulator did not see the faulted attempts the policy implies (a call retried
when it must not be, or not retried when it should), or, at the end, a connection or a
thread of the SDK is left over after closing the clients, or a worker did not stop in time.
The summary (Markdown) lists totals, calls per second, outcomes by class, latencies and the
faults; the exit code is 1 if anything was unexpected, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lingodoc
from lingodoc.emulator import Emulator, FaultKind, Reply, translate_text

# The repository's root, for the connection counting the tests use (pytest puts it on the
# path through pyproject.toml's `pythonpath`; this script is run as a file).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.reliability.sockets import PROC_NET, client_connections

ATTEMPTS = 3  # max_retries=2, the SDK's default
TIMEOUT = 10.0
JOB_DURATION = 0.5
POLL_INTERVAL = 0.1
WAIT_TIMEOUT = 30.0
GRACE = 90.0  # seconds past the duration for the calls in flight to end
TARGETS = ("de", "fr", "es", "ja")
PHRASES = (
    "Hello world",
    "Good morning my friend",
    "Thank you",
    "The cat and the dog",
    "Welcome to this document",
    "Good night",
    "Please translate this",
    "Yes or no",
)
ERROR_OF = {
    "rate_limit": "RateLimited",
    "server_error": "ServerError",
    "disconnect": "APIConnectionError",
}
FAULTS: tuple[FaultKind, ...] = ("rate_limit", "server_error", "disconnect", "slow")
MARKER = re.compile(rb"zqf\d{9}")
_markers = itertools.count(1)


# -- faults that hit exactly the call they were given to -------------------------------------


@dataclass
class Plan:
    """A fault for one call: its ``kind`` on its first ``times`` attempts."""

    key: str  # a marker the call's requests carry, or a path only they use
    kind: FaultKind
    times: int
    status: int = 500
    delay: float = 0.0
    delivered: int = 0


class SoakEmulator(Emulator):
    """The emulator, injecting each planned fault as the request it is planned for arrives."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plans: dict[str, Plan] = {}
        self._plans_lock = threading.Lock()
        self.served = 0
        self.faulted = 0

    def plan(self, plan: Plan) -> None:
        with self._plans_lock:
            self._plans[plan.key] = plan

    def unplan(self, key: str) -> int:
        """Forget a plan; return how many of its faults were delivered."""
        with self._plans_lock:
            return self._plans.pop(key).delivered

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        path = target.split("?", 1)[0]
        # Under one lock: the fault is injected and taken by this request, by no other.
        with self._plans_lock:
            self.served += 1
            plan = None
            if self._plans:
                found = MARKER.search(body) or MARKER.search(target.encode("latin-1", "replace"))
                plan = self._plans.get(found.group().decode() if found else path)
            if plan is not None and plan.delivered < plan.times:
                plan.delivered += 1
                self.faulted += 1
                self.inject(
                    plan.kind,
                    method=method,
                    path=path,
                    status=plan.status,
                    retry_after=1,
                    delay=plan.delay,
                )
            return super().handle(method, target, headers, body)


def expectation(
    plan: Plan | None, *, idempotent: bool, rides_out: bool, resends_429: bool = False
) -> tuple[str, tuple[int, int]]:
    """The outcome a call given ``plan`` must have, and how many faulted attempts it makes.

    The attempts are a range: a slow poll of ``wait_for_translation`` is an answer, and
    whether the next poll (which takes the next slow answer planned) is needed depends on
    how long the job has run by then. ``resends_429``: ``translate_many`` sends a batch
    refused with a 429 (after its retries) again after the reset, so a 429 on three
    attempts in a row is absorbed too.
    """
    if plan is None:
        return "success", (0, 0)
    if resends_429 and plan.kind == "rate_limit":
        return "success", (plan.times, plan.times)
    for attempt in range(1, ATTEMPTS + 1):
        if attempt > plan.times:
            return "success", (plan.times, plan.times)
        if plan.kind == "slow":
            return "success", (attempt, plan.times if rides_out else attempt)
        retried = (
            idempotent
            or plan.kind == "rate_limit"
            or (plan.kind == "server_error" and plan.status == 503)
        )
        if retried and attempt < ATTEMPTS:
            continue
        return ("success" if rides_out else ERROR_OF[plan.kind]), (attempt, attempt)
    raise AssertionError("unreachable")


# -- the calls ---------------------------------------------------------------------------------

Check = Callable[[Any], "str | None"]


@dataclass
class Op:
    """One SDK call to make, with what it must give."""

    name: str
    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    check: Check | None = None
    expected: str = "success"
    plan: Plan | None = None
    expected_faults: tuple[int, int] = (0, 0)  # the least and the most faulted attempts
    then: Callable[[Any], list[Op]] | None = None


@dataclass
class Worker:
    """What one thread or task knows: its document, and the translations it started."""

    name: str
    rng: random.Random
    fault_rate: float
    document: str
    translations: list[str] = field(default_factory=list)
    calls: int = 0

    def fault_key(self, path: str | None = None) -> str | None:
        """With the chance ``fault_rate``, what a fault for the next call is keyed on, else None.

        The key is ``path`` if the call has a path of its own, or a new marker for it to carry.
        """
        if self.rng.random() >= self.fault_rate:
            return None
        return path or f"zqf{next(_markers):09d}"

    def planned(
        self,
        op: Op,
        key: str | None,
        *,
        idempotent: bool,
        rides_out: bool = False,
        resends_429: bool = False,
    ) -> Op:
        """``op`` given a fault keyed on ``key`` (none if None), and the outcome it must have."""
        if key is not None:
            rng = self.rng
            op.plan = Plan(
                key=key,
                kind=rng.choice(FAULTS),
                times=3 if rng.random() < 0.2 else 1,
                status=rng.choice([500, 502, 503, 504]),
                delay=round(rng.uniform(0.1, 0.8), 2),
            )
        op.expected, op.expected_faults = expectation(
            op.plan, idempotent=idempotent, rides_out=rides_out, resends_429=resends_429
        )
        return op

    def text(self) -> str:
        self.calls += 1
        return f"{self.rng.choice(PHRASES)} {self.name} {self.calls}"

    def remember(self, translation_id: str) -> None:
        self.translations.append(translation_id)
        del self.translations[:-20]


def translation_check(texts: list[str], target: str, style: str | None = None) -> Check:
    wanted = [translate_text(text, "en", target, style) for text in texts]

    def check(result: Any) -> str | None:
        if isinstance(result, list):
            got = result
        elif isinstance(result, lingodoc.BatchTranslation):
            got = result.translations
        else:
            if result.target_language != target:
                return f"target {result.target_language!r}"
            got = [result.translated_text]
        if got != wanted:
            return f"wrong translations: {got[:3]!r}... for {wanted[:3]!r}..."
        return None

    return check


def op_translate(w: Worker) -> Op:
    marker = w.fault_key()
    text = w.text() + (f" {marker}" if marker else "")
    target, style = w.rng.choice(TARGETS), w.rng.choice([None, "formal"])
    op = Op(
        "translate", "translate", (text,),
        {"source_language": "en", "target_language": target, "style": style},
        check=translation_check([text], target, style),
    )  # fmt: skip
    return w.planned(op, marker, idempotent=True)


def op_batch(w: Worker, name: str = "translate_batch", size: tuple[int, int] = (2, 20)) -> Op:
    marker = w.fault_key()
    texts = [w.text() for _ in range(w.rng.randint(*size))]
    if marker:
        index = w.rng.randrange(len(texts))
        texts[index] += f" {marker}"
    target = w.rng.choice(TARGETS)
    kwargs: dict[str, Any] = {"source_language": "en", "target_language": target}
    if name == "translate_many":
        kwargs.update(batch_size=50, max_concurrency=3)
    op = Op(name, name, (texts,), kwargs, check=translation_check(texts, target))
    return w.planned(op, marker, idempotent=True, resends_429=name == "translate_many")


def op_document(w: Worker) -> Op:
    marker = w.fault_key()
    target = w.rng.choice(TARGETS)
    kwargs: dict[str, Any] = {"target_language": target, "style": marker}
    if w.rng.random() < 0.5:
        kwargs["use_translation_memory"] = w.rng.random() < 0.5

    def check(job: Any) -> str | None:
        if job.document_id != w.document or job.status != lingodoc.TranslationState.PROCESSING:
            return f"job {job!r}"
        return None

    def then(job: Any) -> list[Op]:
        w.remember(job.translation_id)
        return [op_wait(w, job.translation_id, job), op_get_translation(w, job.translation_id)]

    op = Op("translate_document", "translate_document", (w.document,), kwargs, check, then=then)
    return w.planned(op, marker, idempotent=False)


def completed(translation_id: str) -> Check:
    def check(status: Any) -> str | None:
        if (status.translation_id, status.status, status.progress) != (
            translation_id, lingodoc.TranslationState.COMPLETED, 100,
        ):  # fmt: skip
            return f"status {status!r}"
        return None

    return check


def op_wait(w: Worker, translation_id: str, job: Any) -> Op:
    kwargs = {"poll_interval": POLL_INTERVAL, "timeout": WAIT_TIMEOUT}
    op = Op(
        "wait_for_translation", "wait_for_translation", (job,), kwargs, completed(translation_id)
    )
    key = w.fault_key(f"/v1/translations/{translation_id}")
    return w.planned(op, key, idempotent=True, rides_out=True)


def op_get_translation(w: Worker, translation_id: str) -> Op:
    op = Op(
        "get_translation", "get_translation", (translation_id,), check=completed(translation_id)
    )
    return w.planned(op, w.fault_key(f"/v1/translations/{translation_id}"), idempotent=True)


def op_get_old_translation(w: Worker) -> Op:
    if not w.translations:
        return op_document(w)
    translation_id = w.rng.choice(w.translations)

    def check(status: Any) -> str | None:
        # One started with request() may still run; one that completed must say so whole.
        done = status.status == lingodoc.TranslationState.COMPLETED
        if status.translation_id != translation_id or status.document_id != w.document:
            return f"status {status!r}"
        if done != (status.progress == 100) or done != (status.completed_at is not None):
            return f"status {status!r}"
        return None

    op = Op("get_translation (earlier)", "get_translation", (translation_id,), check=check)
    return w.planned(op, w.fault_key(f"/v1/translations/{translation_id}"), idempotent=True)


def listed(document: str) -> Check:
    def check(result: Any) -> str | None:
        documents = result["documents"] if isinstance(result, dict) else result
        ids = {d["document_id"] if isinstance(d, dict) else d.document_id for d in documents}
        missing = {document, "doc_welcome", "doc_handbook"} - ids
        return f"listing lacks {sorted(missing)}" if missing else None

    return check


def op_list(w: Worker) -> Op:
    # No fault: nothing in this request can carry a marker (request() below lists with one).
    return Op("list_documents", "list_documents", check=listed(w.document))


def op_request(w: Worker) -> Op:
    choice = w.rng.random()
    if choice < 0.5 or not w.translations:
        marker = w.fault_key()
        params = {"q": marker} if marker else None
        op = Op("request GET /documents", "request", ("GET", "/documents"), {"params": params},
                listed(w.document))  # fmt: skip
        return w.planned(op, marker, idempotent=True)
    if choice < 0.75:
        translation_id = w.rng.choice(w.translations)

        def check(data: Any) -> str | None:
            return None if data["translation_id"] == translation_id else f"data {data!r}"

        path = f"/translations/{translation_id}"
        op = Op("request GET /translations/{id}", "request", ("GET", path), check=check)
        return w.planned(op, w.fault_key(f"/v1{path}"), idempotent=True)
    marker = w.fault_key()
    body = {"target_language": w.rng.choice(TARGETS), "style": marker or "formal"}

    def started(data: Any) -> str | None:
        if data["document_id"] != w.document or not data["translation_id"].startswith("tr_"):
            return f"data {data!r}"
        w.remember(data["translation_id"])
        return None

    op = Op("request POST /documents/{id}/translate", "request",
            ("POST", f"/documents/{w.document}/translate"), {"json": body}, started)  # fmt: skip
    return w.planned(op, marker, idempotent=False)


def op_invalid(w: Worker) -> Op:
    n = w.calls = w.calls + 1
    long_text = "x" * 10_001
    cases: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
        ("translate", (w.text(),), {"source_language": "en", "target_language": "xx"},
         "InvalidLanguage"),
        ("translate", (w.text(),), {"source_language": "e1", "target_language": "de"},
         "InvalidLanguage"),
        ("translate", (long_text,), {"source_language": "en", "target_language": "de"},
         "TextTooLong"),
        ("request", ("POST", "/translate"),
         {"json": {"text": long_text, "source_language": "en", "target_language": "de"}},
         "TextTooLong"),
        ("translate_batch", ([w.text(), w.text()],),
         {"source_language": "en", "target_language": "qq"}, "InvalidLanguage"),
        ("get_translation", (f"tr_missing_{w.name}_{n}",), {}, "NotFound"),
        ("translate_document", (f"doc_missing_{w.name}_{n}",), {"target_language": "de"},
         "NotFound"),
        ("request", ("GET", f"/no/such/path/{n}"), {}, "NotFound"),
    ]  # fmt: skip
    method, args, kwargs, expected = w.rng.choice(cases)
    return Op(f"invalid {method} -> {expected}", method, args, kwargs, expected=expected)


MIX: list[tuple[Callable[[Worker], Op], int]] = [
    (op_translate, 25),
    (op_batch, 12),
    (lambda w: op_batch(w, "translate_many", (120, 260)), 3),
    (op_document, 6),
    (op_get_old_translation, 8),
    (op_list, 8),
    (op_request, 12),
    (op_invalid, 10),
]


def next_op(w: Worker) -> Op:
    makers, weights = zip(*MIX, strict=True)
    op: Op = w.rng.choices(makers, weights)[0](w)
    return op


# -- running and counting ----------------------------------------------------------------------


@dataclass
class Stats:
    """What one worker saw; merged at the end."""

    outcomes: Counter[tuple[str, bool]] = field(default_factory=Counter)  # (class, as expected)
    by_op: dict[str, Counter[str]] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    faults: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    calls: int = 0

    def record(
        self, op: Op, outcome: str, result: Any, error: str, elapsed: float, delivered: int
    ) -> bool:
        problems = []
        if outcome != op.expected:
            problems.append(f"expected {op.expected}, got {outcome}{error}")
        elif outcome == "success" and op.check is not None:
            try:
                problem = op.check(result)
            except Exception as exc:  # a result of the wrong shape
                problem = f"check raised {exc!r}"
            if problem:
                problems.append(problem)
        least, most = op.expected_faults
        if op.plan is not None and not least <= delivered <= most:
            wanted = str(least) if least == most else f"{least} to {most}"
            problems.append(f"{delivered} faulted attempts, expected {wanted}")
        ok = not problems
        self.calls += 1
        self.outcomes[outcome, ok] += 1
        kind = "unexpected" if not ok else "success" if outcome == "success" else "expected error"
        self.by_op.setdefault(op.name, Counter())[kind] += 1
        self.latencies.setdefault(op.name, []).append(elapsed)
        if op.plan is not None:
            result_kind = "unexpected" if not ok else "absorbed" if outcome == "success" else (
                "surfaced")  # fmt: skip
            self.faults[op.plan.kind, op.plan.times, result_kind] += 1
        if not ok:
            plan = op.plan
            fault = f" [fault {plan.kind} {plan.status} x{plan.times}]" if plan else ""
            self.unexpected.append(f"{op.name}{fault}: {'; '.join(problems)}")
        return ok and outcome == "success"

    def merge(self, other: Stats) -> None:
        self.outcomes.update(other.outcomes)
        for name, counts in other.by_op.items():
            self.by_op.setdefault(name, Counter()).update(counts)
        for name, values in other.latencies.items():
            self.latencies.setdefault(name, []).extend(values)
        self.faults.update(other.faults)
        self.unexpected.extend(other.unexpected)
        self.calls += other.calls


Call = Callable[[Op], Awaitable[Any]]  # makes an op's call with a client


def sync_call(client: lingodoc.Client) -> Call:
    async def call(op: Op) -> Any:
        return getattr(client, op.method)(*op.args, **op.kwargs)  # blocks; never suspends

    return call


def async_call(client: lingodoc.AsyncClient) -> Call:
    async def call(op: Op) -> Any:
        return await getattr(client, op.method)(*op.args, **op.kwargs)

    return call


async def work(
    call: Call, emulator: SoakEmulator, w: Worker, stats: Stats, deadline: float
) -> None:
    """A worker's calls until ``deadline``, made, checked and counted; for threads and tasks.

    ``call`` is the client's: a task awaits an ``async_call``, a thread runs ``work`` with a
    ``sync_call`` (which blocks and never suspends) through ``run_sync``.
    """
    while time.monotonic() < deadline:
        queue = [next_op(w)]
        while queue:
            op = queue.pop(0)
            if op.plan is not None:
                emulator.plan(op.plan)
            started = time.perf_counter()
            result: Any = None
            error = ""
            try:
                result = await call(op)
                outcome = "success"
            except Exception as exc:
                outcome, error = type(exc).__name__, f" ({str(exc)[:160]})"
            elapsed = time.perf_counter() - started
            delivered = emulator.unplan(op.plan.key) if op.plan is not None else 0
            if stats.record(op, outcome, result, error, elapsed, delivered) and op.then:
                queue.extend(op.then(result))


def run_sync(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` with a ``sync_call`` to its end, in this thread: it never suspends."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("a sync worker suspended")


# -- what is left over ---------------------------------------------------------------------------


def rss_mib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


# -- the run -------------------------------------------------------------------------------------


@dataclass
class Run:
    """The settings and what the whole run measured."""

    duration: float
    threads: int
    tasks: int
    fault_rate: float
    seed: int
    stats: Stats = field(default_factory=Stats)
    elapsed: float = 0.0
    served: int = 0
    faulted: int = 0
    connections_open: int | None = None
    connections_after: int | None = None
    leftover_threads: list[str] = field(default_factory=list)
    stuck_workers: int = 0
    rss: list[tuple[str, float | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def progress(run: Run, all_stats: list[Stats], started: float, stop: threading.Event) -> None:
    while not stop.wait(30):
        calls = sum(s.calls for s in all_stats)
        unexpected = sum(len(s.unexpected) for s in all_stats)
        elapsed = time.monotonic() - started
        run.rss.append((f"{elapsed:.0f} s", rss_mib()))
        print(
            f"[{elapsed:6.0f} s] {calls:,} calls ({calls / elapsed:,.0f}/s), "
            f"unexpected {unexpected}, RSS {rss_mib() or 0:.0f} MiB",
            file=sys.stderr,
            flush=True,
        )


def soak(run: Run) -> None:
    emulator = SoakEmulator(rate_limit=10**9, job_duration=JOB_DURATION)
    workers: list[Worker] = []
    for kind, count in (("t", run.threads), ("a", run.tasks)):
        for number in range(count):
            name = f"{kind}{number}"
            rng = random.Random(f"{run.seed}-{name}")
            document = f"doc_soak_{name}"
            emulator.add_document(document, name=f"Soak document {name}")
            workers.append(Worker(name, rng, run.fault_rate, document))
    stats = [Stats() for _ in workers]  # the threads' first, then the tasks'
    run.rss.append(("start", rss_mib()))
    baseline_threads = set(threading.enumerate())

    with emulator.serve() as server:
        client = lingodoc.Client(server.api_key, base_url=server.base_url, timeout=TIMEOUT)
        aclient = lingodoc.AsyncClient(server.api_key, base_url=server.base_url, timeout=TIMEOUT)
        started = time.monotonic()
        deadline = started + run.duration
        stop_progress = threading.Event()
        reporter = threading.Thread(
            target=progress, args=(run, stats, started, stop_progress), daemon=True
        )
        reporter.start()
        threads = [
            threading.Thread(
                target=run_sync,
                args=(work(sync_call(client), emulator, workers[i], stats[i], deadline),),
                name=f"soak-{workers[i].name}",
                daemon=True,
            )
            for i in range(run.threads)
        ]
        for thread in threads:
            thread.start()

        async def async_part() -> None:
            call = async_call(aclient)
            tasks = [
                asyncio.ensure_future(work(call, emulator, workers[i], stats[i], deadline))
                for i in range(run.threads, len(workers))
            ]
            remaining = deadline + GRACE - time.monotonic()
            done, pending = await asyncio.wait(tasks, timeout=max(1.0, remaining))
            run.stuck_workers += len(pending)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                if task.exception() is not None:
                    run.problems.append(f"an async worker crashed: {task.exception()!r}")
            await aclient.aclose()

        asyncio.run(async_part())
        for thread in threads:
            thread.join(max(1.0, deadline + GRACE - time.monotonic()))
        run.stuck_workers += sum(thread.is_alive() for thread in threads)
        run.elapsed = time.monotonic() - started
        stop_progress.set()
        reporter.join(5)
        run.connections_open = client_connections(server.port) if PROC_NET else None
        client.close()
        run.connections_after = client_connections(server.port) if PROC_NET else None
        run.served, run.faulted = emulator.served, emulator.faulted

    run.rss.append(("end", rss_mib()))
    left = [t for t in threading.enumerate() if t not in baseline_threads and t.is_alive()]
    run.leftover_threads = [t.name for t in left if not t.name.startswith("soak-")]
    for worker_stats in stats:
        run.stats.merge(worker_stats)
    if run.stuck_workers:
        run.problems.append(f"{run.stuck_workers} workers did not stop within {GRACE:.0f} s")
    if run.connections_after:
        run.problems.append(f"{run.connections_after} connections open after closing")
    if run.leftover_threads:
        run.problems.append(f"threads left running: {run.leftover_threads}")


# -- the report ----------------------------------------------------------------------------------


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:,.1f}"


def report(run: Run) -> str:
    s = run.stats
    unexpected = len(s.unexpected) + len(run.problems)
    expected_errors = sum(
        n for (outcome, ok), n in s.outcomes.items() if ok and outcome != "success"
    )
    successes = s.outcomes["success", True]
    faulted_calls = sum(s.faults.values())
    rss = ", ".join(f"{at}: {_na(value, '{:.0f} MiB')}" for at, value in _rss_points(run))
    lines = [
        "## Soak run",
        "",
        f"{run.elapsed:.0f} s of mixed traffic (asked: {run.duration:.0f} s) against "
        f"`Emulator(job_duration={JOB_DURATION}).serve()` on 127.0.0.1, real HTTP/1.1 in the "
        f"same process, real clock: one `Client` shared by {run.threads} threads and one "
        f"`AsyncClient` shared by {run.tasks} tasks, `max_retries=2`, timeout {TIMEOUT:.0f} s, "
        f"a fault given to {run.fault_rate:.1%} of the calls able to carry one (seed {run.seed}; "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs).",
        "",
        "| | |",
        "|---|---|",
        f"| SDK calls | {s.calls:,} ({s.calls / max(run.elapsed, 1e-9):,.1f}/s) |",
        f"| HTTP requests served | {run.served:,} ({run.served / max(run.elapsed, 1e-9):,.1f}/s) |",
        f"| calls given a fault | {faulted_calls:,}; {run.faulted:,} faulted requests "
        f"({run.faulted / max(run.served, 1):.2%} of requests) |",
        f"| successes | {successes:,} |",
        f"| expected errors | {expected_errors:,} |",
        f"| **unexpected** | **{unexpected}** |",
        f"| connections open before / after closing the clients | "
        f"{_na(run.connections_open)} / {_na(run.connections_after)} |",
        f"| SDK threads left after the run | {len(run.leftover_threads)} |",
        f"| RSS | {rss} |",
        "",
        "### Outcomes by class",
        "",
        "| outcome | calls | expected | unexpected |",
        "|---|---:|---:|---:|",
    ]
    classes = sorted({outcome for outcome, _ in s.outcomes}, key=lambda c: (c != "success", c))
    for outcome in classes:
        good, bad = s.outcomes[outcome, True], s.outcomes[outcome, False]
        lines.append(f"| {outcome} | {good + bad:,} | {good:,} | {bad:,} |")
    lines += [
        "",
        "### By call",
        "",
        "| call | calls | success | expected error | unexpected | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(s.by_op):
        counts, values = s.by_op[name], s.latencies[name]
        lines.append(
            f"| {name} | {sum(counts.values()):,} | {counts['success']:,} | "
            f"{counts['expected error']:,} | {counts['unexpected']:,} | {_ms(values, 0.5)} | "
            f"{_ms(values, 0.99)} | {max(values) * 1000:,.1f} |"
        )
    lines += [
        "",
        "### Injected faults",
        "",
        "| fault | attempts faulted | calls | absorbed (success) | surfaced (expected error) "
        "| unexpected |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, times in sorted({(k, t) for k, t, _ in s.faults}):
        fate = {r: s.faults[kind, times, r] for r in ("absorbed", "surfaced", "unexpected")}
        lines.append(
            f"| {kind} | {'first only' if times == 1 else f'{times} in a row'} | "
            f"{sum(fate.values()):,} | {fate['absorbed']:,} | {fate['surfaced']:,} | "
            f"{fate['unexpected']:,} |"
        )
    lines += [
        "",
        "An error is *expected* only when the call provoked it: an invalid input "
        "(`InvalidLanguage`, `TextTooLong`, `NotFound`), or an injected fault that the retry "
        "policy does not absorb (a disconnect or a 500/502/504 on `translate_document` or "
        "`request('POST', ...)`, which are not safe to repeat, or the same fault on all three "
        "attempts of a call, except 429s on `translate_many`, which sends the batch again "
        "after the reset). Everything else must succeed with the exact result, and each "
        "faulted call must have made exactly the attempts the policy implies.",
        "",
    ]
    if unexpected:
        lines.append(f"unexpected: {unexpected}")
        lines.append("")
        for item in (run.problems + s.unexpected)[:100]:
            lines.append(f"- {item}")
    else:
        lines.append("unexpected: 0")
    return "\n".join(lines) + "\n"


def _na(value: float | None, fmt: str = "{}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _rss_points(run: Run) -> list[tuple[str, float | None]]:
    points = run.rss
    if len(points) <= 4:
        return points
    middle = points[1:-1]
    picks = [middle[0], middle[len(middle) // 2], middle[-1]]
    return [points[0], *dict.fromkeys(picks), points[-1]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--threads", type=int, default=6, help="threads sharing the Client")
    parser.add_argument("--tasks", type=int, default=16, help="tasks sharing the AsyncClient")
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.014,
        help="chance that a call able to carry a fault gets one (0.014: about 1%% of requests)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report", type=Path, help="also write the Markdown summary here")
    args = parser.parse_args()
    if not (args.duration > 0 and args.threads >= 0 and args.tasks >= 0):
        parser.error("--duration must be positive, --threads and --tasks at least 0")
    if args.threads + args.tasks == 0 or not 0 <= args.fault_rate <= 1:
        parser.error("no workers, or --fault-rate outside 0-1")
    run = Run(args.duration, args.threads, args.tasks, args.fault_rate, args.seed)
    print(
        f"soak: {args.duration:.0f} s, {args.threads} threads + {args.tasks} tasks, "
        f"fault rate {args.fault_rate:.1%}",
        file=sys.stderr,
        flush=True,
    )
    soak(run)
    text = report(run)
    print(text)
    if args.report is not None:
        args.report.write_text(text)
    return 1 if run.problems or run.stats.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
