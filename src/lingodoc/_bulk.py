"""What ``translate_many`` does without I/O: splitting, ordering, pacing and the first error.

The clients run workers that ask a ``Bulk`` what to do next, send the batch it
hands out through the client's normal ``_send`` (so every batch gets the retry
policy), and report back. The workers, and how they wait for a rate-limit
reset, are what differs between the flavours: ``run_workers`` runs them in
threads for ``Client`` (``pace`` waits until the reset or a stop),
``async_run_workers`` in tasks for ``AsyncClient`` (``async_pace`` sleeps; a
stop cancels it). The ``Bulk`` is shared by the workers and guards its state
with a lock, which it never holds across I/O.

Pacing: every batch's response reports ``X-RateLimit-Remaining`` and when
the window resets. A worker may start a batch while the last remaining count
heard exceeds the batches already in flight (each of those may still use up
one request); otherwise it waits until the reset, on the SDK clock, and then
goes on, unless ``translate_many`` stops first (an error, Ctrl-C, cancellation),
which ends the wait at once. A reset more than 60 s away (the longest wait the
retry policy accepts) is not waited for: the batch is sent, and if the service
refuses it the ``RateLimited`` error ends ``translate_many`` as it would end
``translate_batch``. Before the first response, the client's own
``rate_limit`` (from its last response) is used, if its window has not reset.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lingodoc import _clock
from lingodoc._constants import MAX_BATCH_ITEMS, MAX_SERVER_WAIT

if TYPE_CHECKING:
    from lingodoc._call import Call
    from lingodoc._models import BatchTranslation, RateLimit

DEFAULT_BATCH_SIZE = MAX_BATCH_ITEMS
DEFAULT_MAX_CONCURRENCY = 4
# Responses to requests sent at nearly the same time report resets that differ
# by rounding (a reset in whole seconds): within this, they are one window.
_SAME_WINDOW = 1.0
# RateLimit.reset_at is rounded to the microsecond: waking a hair before the
# service's reset would meet the 429 the pacing is there to avoid.
_ROUNDING = 2e-6


class Batch:
    """One slice of the texts, ready to send; its translations go to ``results[start:]``."""

    __slots__ = ("call", "start")

    def __init__(self, start: int, call: Call[BatchTranslation]) -> None:
        self.start = start
        self.call = call


class Bulk:
    """The shared state of one ``translate_many``.

    Args:
        texts: The texts, already checked.
        batch_size: Texts per request.
        max_concurrency: Requests in flight at most.
        make_call: Builds the request of one batch from its texts.
        rate_limit: The client's last known rate limit, if any.
    """

    def __init__(
        self,
        texts: list[str],
        *,
        batch_size: int,
        max_concurrency: int,
        make_call: Callable[[list[str]], Call[BatchTranslation]],
        rate_limit: RateLimit | None,
    ) -> None:
        self._texts = texts
        self._batch_size = batch_size
        self._make_call = make_call
        batches = -(-len(texts) // batch_size)
        self.workers = min(max_concurrency, batches)
        # Filled in place, by index, as batches come back in any order.
        self._results: list[str] = [""] * len(texts)
        self._next_start = 0
        self._in_flight = 0
        self._error: BaseException | None = None
        self._stopped = False
        # Set with _stopped: a worker waiting for a rate-limit reset wakes at once.
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._remaining: int | None = None
        self._reset_at = 0.0
        if rate_limit is not None:
            self._learn(rate_limit)

    @property
    def stopped(self) -> bool:
        """Whether a batch failed, or `stop` was called: the batches in flight are moot."""
        return self._stopped

    def next(self) -> Batch | float | None:
        """Return what a worker does next: send a batch, sleep this long, or stop (``None``)."""
        with self._lock:
            if self._stopped or self._next_start >= len(self._texts):
                return None
            wait = self._pacing_wait()
            if wait > 0:
                return wait
            start = self._next_start
            self._next_start += self._batch_size
            self._in_flight += 1
            chunk = self._texts[start : start + self._batch_size]
        return Batch(start, self._make_call(chunk))

    def done(self, batch: Batch, result: BatchTranslation) -> None:
        """Record a batch's translations and the rate limit its response reported."""
        translations = result.translations
        with self._lock:
            self._results[batch.start : batch.start + len(translations)] = translations
            self._in_flight -= 1
            if result.rate_limit is not None:
                self._learn(result.rate_limit)

    def failed(self, error: BaseException) -> None:
        """Record a batch's error: the first one recorded is raised, and nothing more starts."""
        with self._lock:
            self._in_flight -= 1
            if self._error is None:
                self._error = error
            self._stopped = True
        self.stopping.set()

    def stop(self) -> None:
        """Hand out no further batch (the caller is giving up)."""
        with self._lock:
            self._stopped = True
        self.stopping.set()

    def result(self) -> list[str]:
        """Return the translations in input order.

        Raises:
            Exception: The first error a batch raised.
        """
        if self._error is not None:
            raise self._error
        return self._results

    def _learn(self, rate_limit: RateLimit) -> None:
        reset_at = rate_limit.reset_at.timestamp() + _ROUNDING
        if self._remaining is None or reset_at > self._reset_at + _SAME_WINDOW:
            self._remaining, self._reset_at = rate_limit.remaining, reset_at  # a new window
        elif reset_at >= self._reset_at - _SAME_WINDOW:
            # Responses arrive out of order: the lowest count is the latest.
            self._remaining = min(self._remaining, rate_limit.remaining)
        # else: a late answer from the window before; it tells nothing now.

    def _pacing_wait(self) -> float:
        if self._remaining is None:
            return 0.0
        wait = self._reset_at - _clock.current().time()
        if wait <= 0:
            self._remaining = None  # the window has reset: what we knew is stale
            return 0.0
        if self._remaining - self._in_flight > 0 or wait > MAX_SERVER_WAIT:
            return 0.0
        return wait


def pace(bulk: Bulk, seconds: float) -> None:
    """Wait ``seconds`` for the rate-limit reset, on the SDK clock; end at once when ``bulk`` stops.

    A thread cannot be cancelled: the first error (or Ctrl-C, in this thread or
    the one that ran ``run_workers``) stops the ``Bulk``, and that wakes the wait.
    """
    _clock.wait(bulk.stopping, seconds)


async def async_pace(bulk: Bulk, seconds: float) -> None:
    """Wait ``seconds`` for the rate-limit reset, on the SDK clock, without blocking the loop.

    A stop needs no wake-up here: ``async_run_workers`` cancels the waiting tasks.
    """
    await _clock.async_sleep(seconds)


def run_workers(worker: Callable[[Bulk], None], bulk: Bulk) -> None:
    """Run ``bulk.workers`` copies of ``worker`` in threads (this one among them) until done.

    Whatever happens here (an error, Ctrl-C), no further batch starts, and no
    thread is left running when it returns or raises.
    """
    if bulk.workers == 1:
        worker(bulk)
        return
    # Imported here: most programs never need a thread pool.
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(bulk.workers - 1, thread_name_prefix="lingodoc-many")
    try:
        for _ in range(bulk.workers - 1):
            pool.submit(worker, bulk)
        worker(bulk)
    finally:
        bulk.stop()
        pool.shutdown(wait=True)


async def async_run_workers(worker: Callable[[Bulk], Awaitable[None]], bulk: Bulk) -> None:
    """Run ``bulk.workers`` copies of ``worker`` as tasks until done, or until one fails.

    On the first failure (or when the awaiting task is cancelled) the batches
    in flight are cancelled; no task is left running when it returns or raises.
    """
    if bulk.workers == 1:
        await worker(bulk)
        return
    import asyncio

    tasks = {asyncio.ensure_future(worker(bulk)) for _ in range(bulk.workers)}
    try:
        pending = tasks
        while pending and not bulk.stopped:  # until all are done, or one failed
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    finally:
        bulk.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
