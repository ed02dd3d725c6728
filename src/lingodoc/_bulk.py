"""``translate_many`` without I/O: dedup, batches, pacing by the rate limit, progress, kept work.

A worker starts a batch while the ``X-RateLimit-Remaining`` last heard exceeds the batches
in flight; else it waits for the reset (within ``wait_for_rate_limit``; past it, a 429 ends
the run). A batch refused with a 429 is sent again after the reset, within that limit.
"""

from __future__ import annotations

import math
import sys
import threading
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import accumulate
from typing import TYPE_CHECKING, Any, NamedTuple

from lingodoc import _callbacks, _clock, _endpoints, _retry, _validation
from lingodoc._constants import MAX_SERVER_WAIT
from lingodoc._exceptions import InvalidArgument, LingodocError, PartialTranslations, RateLimited

if TYPE_CHECKING:
    from lingodoc._cache import CacheUse, Keys
    from lingodoc._endpoints import Call
    from lingodoc._models import BatchTranslation, RateLimit
    from lingodoc._options import Options

_SAME_WINDOW = 1.0  # resets that differ by less (rounding) are one window
_ROUNDING = 2e-6  # reset_at is rounded to the microsecond: never wake a hair early
_LATEST = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp()  # as late as a datetime goes
# A batch refused this many times in a row, each after the reset named, ends the run.
MAX_REFUSALS = 3
# Events with no data (a worker puts EXITED as it ends): answered batches wait in the Bulk,
# never only in a queue (taking an item and keeping it are two steps; Ctrl-C may come between).
ANSWERED = "answered"
EXITED = "exited"
# The coordinator caches translations once this many wait (a worker never waits for the cache).
STORE_AT_ONCE = 1_000
# Keys looked up in the cache at once, before the first request: few round trips to a store.
LOOK_UP_AT_ONCE = 1_000


class BulkProgress(NamedTuple):
    """How far a ``translate_many`` has got, as passed to its ``on_progress``.

    Attributes:
        done: Texts translated so far, duplicates, blank ones and those in ``done`` included.
        total: The number of texts.
        requests: Batch requests answered so far in this call.
        requests_left: Batch requests still needed, at least.
        rate_limit: The rate-limit window as last reported by the service, or ``None``.
        waiting_until: Until when (timezone-aware) the call pauses for a reset, else ``None``.
        cache_hits: Distinct texts the client's cache held (not sent); 0 without a cache.
        cache_misses: Distinct texts looked up in the cache and not found (sent).
    """

    done: int
    total: int
    requests: int
    requests_left: int
    rate_limit: RateLimit | None
    waiting_until: datetime | None
    cache_hits: int = 0
    cache_misses: int = 0


@dataclass(slots=True, eq=False)
class Batch:
    """One batch, ready to send: the distinct texts ``uids`` (indices into the plan's texts)."""

    uids: list[int]
    call: Call[BatchTranslation]
    refusals: int = 0  # 429s in a row, each after waiting for the reset


class Pause(NamedTuple):
    """An event: a worker pauses until ``waiting_until``, in the window ``rate_limit``."""

    waiting_until: datetime | None = None
    rate_limit: RateLimit | None = None


def max_wait(value: object) -> float:
    """The longest wait for a reset, in seconds, that ``wait_for_rate_limit`` (checked) allows."""
    if isinstance(value, bool):
        return math.inf if value else MAX_SERVER_WAIT
    hint = f"or a bool: True waits as long as the service says, False up to {MAX_SERVER_WAIT:g} s"
    return _validation.seconds(value, "wait_for_rate_limit", zero=True, most=math.inf, hint=hint)


class Bulk:
    """The shared state of one ``translate_many``, its arguments checked, every text included."""

    def __init__(
        self,
        texts: object,
        source_language: object,
        target_language: object,
        *,
        batch_size: object,
        max_concurrency: object,
        wait_for_rate_limit: object,
        on_progress: Callable[[BulkProgress], object] | None,
        done: object,
        options: Options | None,
        rate_limit: RateLimit | None,
        awaits: bool,
    ) -> None:
        checked = _validation.texts(texts)
        source = _validation.language(source_language, "source_language")
        target = _validation.language(target_language, "target_language")
        self._batch_size = _validation.count(batch_size, "batch_size")
        self._concurrency = _validation.count(max_concurrency, "max_concurrency")
        self._max_wait = max_wait(wait_for_rate_limit)
        _callbacks.check(on_progress, awaits=awaits)
        if done is not None and not isinstance(done, MutableMapping):
            raise _validation.wrong_type("done", "a dict (or other mutable mapping)", done)
        self._call_args = source, target, options  # a batch's request: its texts, and these
        self.template = _endpoints.batch([], *self._call_args)  # what every batch sends besides
        self._done_map: MutableMapping[int, str] | None = done
        self.on_progress, self.total = on_progress, len(checked)
        # Each distinct text gets an id, its rank of first appearance; _order maps each
        # input to its id, and is None when every text is distinct (id = index). Id u's
        # inputs are _grouped[_starts[u] : _starts[u + 1]], _grouped built if done is kept.
        seen = Counter(checked)  # each distinct text, in order of first appearance: how often
        self._texts, self._order = checked, None
        self._starts, self._grouped = array("q"), array("q")  # 8 bytes an entry
        if len(seen) < len(checked):
            self._texts = list(seen)
            self._starts = array("q", accumulate(seen.values(), initial=0))
            for uid, text in enumerate(self._texts):
                seen[text] = uid  # from now on, each text's id
            self._order = array("q", map(seen.__getitem__, checked))
        del seen  # the largest structure here
        # Blank texts are their own translation: not sent.
        self._results: list[str | None] = [
            text if not text or text.isspace() else None for text in self._texts
        ]
        if done:
            self._take(done)
        self.cache_hits = self.cache_misses = 0
        self.cache: CacheUse | None = None  # and its keys, once the texts are looked up
        self._keys: Keys | None = None
        self._unstored: dict[str, str] = {}  # translations recorded, not yet in the cache
        self._plan()
        # _answered, _translated: counted by the coordinator as it stores answered batches, so
        # that a report agrees with itself and with what ``done`` holds; it alone: no lock.
        self._answered = self._translated = self._in_flight = 0
        self._error: BaseException | None = None
        # Set in the lock as a batch fails or `stop` is called: nothing more starts after it.
        self.stopping = threading.Event()  # a paused worker wakes at once
        self._lock = threading.RLock()  # failed stops in its hold
        self._remaining: int | None = None
        self._reset_at = self._not_before = 0.0  # _not_before: after a 429, its wait's end
        # The window last heard by the workers, and as of the last batch stored (a report
        # shows that one: the workers may have heard of a newer one since).
        self._rate_limit = self._reported_rate_limit = rate_limit
        self._reported_pause = -math.inf
        self.events: Any = None  # set by the runner: ANSWERED, EXITED or a Pause
        # Answered, not yet stored into done; with the window each answer reported.
        self._unrecorded: deque[tuple[Batch, RateLimit | None]] = deque()
        if rate_limit is not None:
            self._learn(rate_limit)

    def _plan(self) -> None:
        """The batches: the distinct texts without a translation, ``batch_size`` at a time."""
        self._todo = [uid for uid, result in enumerate(self._results) if result is None]
        self._next = 0  # in _todo
        self._retry: list[Batch] = []  # refused with a 429, to send again after the reset
        self._batches = -(-len(self._todo) // self._batch_size)
        self.workers = self.running = min(self._concurrency, self._batches)

    def look_ups(self, cache: CacheUse, keys: Keys) -> Iterator[tuple[list[int], list[str]]]:
        """The ids and keys of the texts to look up, `LOOK_UP_AT_ONCE` at a time, for `found`."""
        self.cache, self._keys = cache, keys
        for start in range(0, len(self._todo), LOOK_UP_AT_ONCE):
            uids = self._todo[start : start + LOOK_UP_AT_ONCE]
            yield uids, [keys(self._texts[uid]) for uid in uids]
        looked_up = len(self._todo)
        self._plan()
        self.cache_misses = len(self._todo)
        self.cache_hits = looked_up - self.cache_misses

    def found(self, uids: list[int], keys: list[str], found: Mapping[str, str]) -> None:
        """Take the translations the cache held for these texts."""
        for uid, key in zip(uids, keys, strict=True):
            self._results[uid] = found.get(key)

    def unstored(self, every: bool) -> dict[str, str]:
        """What the coordinator caches now: all if ``every`` (a pause, the end), else a full lot."""
        if not every and len(self._unstored) < STORE_AT_ONCE:
            return {}
        items, self._unstored = self._unstored, {}
        return items

    def _inputs_of(self, uid: int) -> Sequence[int]:
        """The input indices holding distinct text ``uid`` (asked only when ``done`` is kept)."""
        if self._order is None:
            return (uid,)
        if not self._grouped:  # each group filled from its end, the inputs in order
            grouped, ends = array("q", [0]) * self.total, self._starts[1:]
            for index in range(self.total - 1, -1, -1):
                ends[self._order[index]] -= 1
                grouped[ends[self._order[index]]] = index
            self._grouped = grouped
        return self._grouped[self._starts[uid] : self._starts[uid + 1]]

    def _take(self, done: Mapping[int, str]) -> None:
        """Use the translations the caller already has, checked, as results."""
        for index, translation in done.items():
            if isinstance(index, bool) or not isinstance(index, int):
                raise _validation.wrong_type("done's keys", "int indices", index)
            if not 0 <= index < self.total:
                raise InvalidArgument(
                    f"done holds index {index}, but texts has {self.total:,}: is it from "
                    "another list?"
                )
            if not isinstance(translation, str):
                raise _validation.wrong_type(f"done[{index}]", "a str", translation)
            uid = index if self._order is None else self._order[index]
            if self._results[uid] is None:
                self._results[uid] = translation

    def _weight(self, uid: int) -> int:
        return 1 if self._order is None else self._starts[uid + 1] - self._starts[uid]

    def next(self) -> Batch | float | None:
        """Return what a worker does next: send a batch, sleep this long, or stop (``None``)."""
        with self._lock:
            if self.stopping.is_set() or (not self._retry and self._next >= len(self._todo)):
                return None
            now = _clock.current().time()
            wait = self._not_before - now  # after a 429
            if wait <= 0 and self._remaining is not None:
                window = self._reset_at - now
                if window <= 0:
                    self._remaining = None  # the window has reset: what we knew is stale
                elif self._remaining <= self._in_flight and window <= self._max_wait:
                    wait = window
            if wait > 0:
                self._announce(now + wait)
                return wait
            self._in_flight += 1
            if self._retry:
                return self._retry.pop()
            uids = self._todo[self._next : self._next + self._batch_size]
            self._next += self._batch_size
        return Batch(uids, _endpoints.batch([self._texts[uid] for uid in uids], *self._call_args))

    def done(self, batch: Batch, result: BatchTranslation) -> None:
        """Record a batch's translations and the rate limit its response reported."""
        with self._lock:
            for uid, translation in zip(batch.uids, result.translations, strict=True):
                self._results[uid] = translation
            self._in_flight -= 1
            if result.rate_limit is not None:
                self._learn(result.rate_limit)
            self._unrecorded.append((batch, result.rate_limit))
        self.events.put_nowait(ANSWERED)

    def failed(self, batch: Batch, error: BaseException) -> None:
        """Record a batch's error: the run's (the first is raised), or a 429 to resend later."""
        with self._lock:
            self._in_flight -= 1
            if isinstance(error, RateLimited) and not self.stopping.is_set():
                batch.refusals += 1
                asked = error.retry_after
                if asked is not None and asked <= self._max_wait and batch.refusals <= MAX_REFUSALS:
                    if error.rate_limit is not None:
                        self._learn(error.rate_limit)
                        self._remaining = 0  # refused: whatever was reported before, none are left
                    # Without rate-limit headers (a proxy's 429) the pacing would send it at once.
                    wait = _retry.server_wait(asked, batch.refusals) + _ROUNDING
                    until = _clock.current().time() + wait
                    self._not_before = max(self._not_before, until)
                    self._retry.append(batch)  # first: nothing below may lose it
                    self._announce(until)
                    return
            self.stop(error)  # in the same hold of the lock: no batch starts after it

    def take(self, event: object) -> BulkProgress | None:
        """Take a worker's event; the progress to report, if any (in the order things happened)."""
        if event is EXITED:
            self.running -= 1
            return None
        return self.progress(event) if isinstance(event, Pause) else self.record_next()

    def stop(self, error: BaseException | None = None) -> None:
        """Hand out no further batch: the caller gives up, or a worker failed with ``error``."""
        with self._lock:
            if self._error is None:
                self._error = error
            self.stopping.set()

    def _announce(self, until: float) -> None:
        # The coordinator reports a pause once, however many workers wait for it.
        if until > self._reported_pause + _SAME_WINDOW:
            self._reported_pause = until
            # A wait past what a datetime holds (a Retry-After of 1e15 s) shows as its end.
            waiting_until = datetime.fromtimestamp(min(until, _LATEST), timezone.utc)
            self.events.put_nowait(Pause(waiting_until, self._rate_limit))

    def _learn(self, rate_limit: RateLimit) -> None:
        self._rate_limit = rate_limit
        reset_at = rate_limit.reset_at.timestamp() + _ROUNDING
        if self._remaining is None or reset_at > self._reset_at + _SAME_WINDOW:
            self._remaining, self._reset_at = rate_limit.remaining, reset_at  # a new window
        elif reset_at >= self._reset_at - _SAME_WINDOW:  # not from the window before
            # Answers arrive out of order: the lowest count is the latest.
            self._remaining = min(self._remaining, rate_limit.remaining)

    def progress(self, pause: Pause | None = None) -> BulkProgress:
        """Return the progress now; with ``pause``, as the call starts that pause."""
        waiting_until, rate_limit = pause or Pause()
        return BulkProgress(
            self._translated, self.total, self._answered, self._batches - self._answered,
            rate_limit or self._reported_rate_limit, waiting_until,
            self.cache_hits, self.cache_misses,
        )  # fmt: skip

    def record_next(self) -> BulkProgress | None:
        """Store the oldest answered batch into ``done``; return the progress, or None if none."""
        with self._lock:
            if not self._unrecorded:
                return None
            batch, rate_limit = self._unrecorded[0]
        if self._done_map is not None:
            for uid in batch.uids:
                for index in self._inputs_of(uid):
                    self._done_map[index] = self._results[uid]  # type: ignore[assignment]
        if self._keys is not None:
            keys, texts, results = self._keys, self._texts, self._results
            self._unstored.update((keys(texts[uid]), results[uid]) for uid in batch.uids)  # type: ignore[misc]
        with self._lock:
            self._unrecorded.popleft()  # only now: after Ctrl-C in between, stored again
        self._translated += sum(self._weight(uid) for uid in batch.uids)
        self._answered += 1
        if rate_limit is not None:
            self._reported_rate_limit = rate_limit
        return self.progress()

    def start(self) -> BulkProgress:
        """Store what needs no request (blank texts, duplicates of done ones) into ``done``."""
        for uid, translation in enumerate(self._results):
            if translation is not None:
                self._translated += self._weight(uid)
                for index in self._inputs_of(uid) if self._done_map is not None else ():
                    self._done_map.setdefault(index, translation)  # type: ignore[union-attr]
        return self.progress()

    def drain(self) -> None:
        """Store the batches answered but not yet recorded into ``done`` (the run is over)."""
        while self.record_next() is not None:
            pass

    def result(self) -> list[str]:
        """The translations in input order, or the first error (with ``.partial``) raised."""
        if (error := self._error) is not None:
            if isinstance(error, LingodocError):
                error.partial = partial = PartialTranslations(self._order, self._results)
                if sys.version_info >= (3, 11):  # notes are new in 3.11
                    error.add_note(
                        f"translate_many stopped with {partial.total - len(partial.remaining):,} "
                        f"of {partial.total:,} texts translated: .partial holds them, and "
                        "passing .partial.translations as done= resumes"
                    )
            raise error
        results: list[Any] = self._results  # all str by now
        return results if self._order is None else list(map(results.__getitem__, self._order))
