"""``translate_many``'s worker threads or tasks, and their coordinator (the caller's).

Whatever ends a run (an error, Ctrl-C, cancellation, an error from ``on_progress``), no
further batch starts, nothing answered is lost, and no thread or task outlives the call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from lingodoc._bulk import Bulk
from lingodoc._callbacks import async_report, report
from lingodoc._signals import ctrl_c_held


def hand_over(bulk: Bulk) -> None:
    """Nothing to do: the coordinator is another thread, which runs when it can."""


async def async_hand_over(bulk: Bulk) -> None:
    """Let the coordinator store an answered batch before the next is sent.

    Else a task whose requests never suspend (the emulator's) sends every batch first: an
    error from ``on_progress`` could stop nothing.
    """
    await bulk.events.handed_over()


def keep(bulk: Bulk, every: bool) -> None:
    """Store in the cache what `Bulk.unstored` hands over (``every``: a pause, or the end)."""
    if (items := bulk.unstored(every)) and bulk.cache is not None:
        bulk.cache.keep(items)


async def async_keep(bulk: Bulk, every: bool) -> None:
    """`keep`, awaited."""
    if (items := bulk.unstored(every)) and bulk.cache is not None:
        await bulk.cache.async_keep(items)


def run_workers(worker: Callable[[Bulk], None], bulk: Bulk) -> None:
    """Run ``bulk.workers`` copies of ``worker`` in threads, coordinating from this one."""
    import queue

    bulk.events = queue.SimpleQueue()
    report(bulk.on_progress, bulk.start())
    if bulk.workers == 0:
        return
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(bulk.workers, thread_name_prefix="lingodoc-many")
    try:
        with ctrl_c_held():
            for _ in range(bulk.workers):
                # In this thread's context, as a task is in its spawner's: the call's span
                # (_tracing) is the parent of the worker's requests'.
                pool.submit(contextvars.copy_context().run, worker, bulk)
        while bulk.running and not bulk.stopping.is_set():  # a failed batch stops the rest
            try:
                # In 0.2 s slices: else a Ctrl-C just before get() waits for the next event.
                progress = bulk.take(bulk.events.get(timeout=0.2))
            except queue.Empty:
                continue
            if progress is not None:  # None: a worker ended, not the run
                report(bulk.on_progress, progress)
                keep(bulk, every=progress.waiting_until is not None)
        while (progress := bulk.record_next()) is not None:  # stopped: those answered before
            report(bulk.on_progress, progress)
    finally:
        with ctrl_c_held():  # a second Ctrl-C must not leave a worker asleep till the reset
            bulk.stop()
        bulk.drain()
        try:
            pool.shutdown(wait=True)  # the batches in flight finish
        finally:
            bulk.drain()  # and are kept, even if a second Ctrl-C ends the wait for them
            keep(bulk, every=True)


class TaskEvents:
    """``Bulk.events`` for tasks: events only wake the coordinator (batches wait in ``Bulk``)."""

    def __init__(self) -> None:
        import anyio.lowlevel  # and anyio

        self._anyio = anyio
        self._events: deque[object] = deque()
        self._arrived: anyio.Event | None = None  # set by the next put, while waited on
        self._taken: anyio.Event | None = None  # set by the next get, while waited on

    def put_nowait(self, event: object) -> None:
        self._events.append(event)
        if self._arrived is not None:
            self._arrived.set()

    async def get(self) -> object:
        while not self._events:
            self._arrived = self._anyio.Event()
            try:
                await self._arrived.wait()
            finally:
                self._arrived = None
        if self._taken is not None:
            self._taken.set()
            self._taken = None
        return self._events.popleft()

    async def handed_over(self) -> None:
        """Yield; then, if the coordinator is woken for an event but has not taken it, wait."""
        await self._anyio.lowlevel.checkpoint()
        if self._events and self._arrived is not None:
            if self._taken is None:
                self._taken = self._anyio.Event()
            await self._taken.wait()


async def async_run_workers(
    worker: Callable[[Bulk], Coroutine[Any, Any, None]], bulk: Bulk
) -> None:
    """`run_workers` as tasks: those in flight are cancelled at the end; no exception group."""
    import anyio.lowlevel  # and anyio

    events = bulk.events = TaskEvents()
    await async_report(bulk.on_progress, bulk.start())
    if bulk.workers == 0:
        return
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as group:
            for _ in range(bulk.workers):
                group.start_soon(worker, bulk)
            try:
                while bulk.running and not bulk.stopping.is_set():  # a failed batch stops the rest
                    progress = bulk.take(await events.get())
                    if progress is not None:  # None: a worker ended, not the run
                        await async_report(bulk.on_progress, progress)
                        await async_keep(bulk, every=progress.waiting_until is not None)
                while (progress := bulk.record_next()) is not None:
                    await async_report(bulk.on_progress, progress)
            except Exception as exc:  # from on_progress: raised below, outside the group
                failure = exc
            finally:
                bulk.stop()
                group.cancel_scope.cancel()  # the workers, at once: drain() never yields to them
                bulk.drain()
        # Cancelled from outside, the workers may all end before the coordinator's wait is
        # (asyncio keeps a wait that has its result): never a result then.
        await anyio.lowlevel.checkpoint_if_cancelled()
    finally:
        bulk.drain()
        with anyio.CancelScope(shield=True):  # paid for: stored even when cancelled
            await async_keep(bulk, every=True)
    if failure is not None:
        raise failure
