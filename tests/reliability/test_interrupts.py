"""A Ctrl-C (or any exception a signal handler raises) at any point of a sync call leaves the
``Client`` usable, over real loopback HTTP.

A REPL or Jupyter user calls on the main thread and presses Ctrl-C: a ``KeyboardInterrupt``
can then be raised between any two bytecodes of the call, in the SDK, in httpx, in httpcore
or in ``http.cookiejar``, while a lock or a turn of ``max_in_flight`` is held or a request is
queued in the pool. The client must come out of it usable: a later call, from another thread
or from the main thread, is answered (the right translation) within its timeout, never
refused with a pool timeout for good, never blocked for good on a lock, never failed with a
bare ``AssertionError`` from inside httpcore. The interrupted call itself raises the
``KeyboardInterrupt`` or a ``lingodoc.LingodocError``, or returns its translation.

Timeout decorators raise an ordinary exception from SIGALRM instead: the same holds for a
handler that raises ``TimeoutError`` (which httpcore maps, inside a socket call, to its own
error: a ``LingodocError`` caused by it) or an ``Exception`` subclass of the caller's. Never
an h11 or httpcore error, an ``AssertionError`` or a ``TypeError``.

Ctrl-C is played by SIGALRM (``signal.setitimer``), whose handler raises
``KeyboardInterrupt`` on the main thread, a random time into the call: from 0.05 ms to a
little past a typical call's duration (measured first), and for some calls over a slow
answer (the emulator's ``slow`` fault), so that interrupts land while waiting on the
response too. A wedge must not hang the suite: each clean call from another thread runs in
a daemon thread joined with a bound, and every call on the main thread, interrupted or not,
runs under a SIGALRM watchdog (an interrupted call can block for good after its
``KeyboardInterrupt``, on a lock it holds itself). A failure tells the seed of the random
delays, the call it happened after and where the stuck call was blocked. The seed differs
from run to run; set ``LINGODOC_INTERRUPT_SEED`` to replay a series of delays (the timing,
on real sockets, is never replayed exactly). At the end, ``close()`` must leave no
connection open, none of an interrupted call's either (counted in /proc on Linux, once the
garbage collector has run).

A socket that the interrupt catches while it is being made (in ``socket.create_connection``,
or in httpcore's ``connect_tcp`` before it hands the connection over) belongs to their frames
only: nothing in the SDK can reach it, and it is closed when Python frees the interrupted
call, with a ResourceWarning. Those warnings are allowed here; the count of connections
left open after the collection is what is checked.

A signal lands between any two bytecodes, at random; to cover every point of a call, the
same exceptions are also raised by a trace function (``sys.settrace``) at each line the main
thread runs in a call, one line after the other: the SDK, httpx, httpcore and h11 alike.

The quick versions run in the suite; the long ones (1,000 interrupted calls each) run apart,
with -m stress. Real time throughout: these are socket-level tests, and they stay short.
Signals are delivered to the main thread only: pytest-xdist runs each test on its worker's
main thread, and each test asserts that it is there. POSIX only (``signal.setitimer``).
"""

from __future__ import annotations

import collections
import contextvars
import functools
import gc
import os
import random
import signal
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import pytest

import lingodoc
from lingodoc import _sync_transport
from lingodoc.emulator import Emulator, EmulatorServer
from tests.reliability.sockets import client_connections, expected_for, text_for

pytestmark = [
    pytest.mark.skipif(
        not hasattr(signal, "setitimer"), reason="interrupts the calls with SIGALRM (POSIX)"
    ),
    # Sockets caught being made by the interrupt are closed when collected (docstring).
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
    # An interrupt that lands in a finalizer or a callback run by the garbage collector (a
    # finished checker thread leaving threading's WeakSet, hypothesis's gc callback) is
    # printed and dropped by Python itself: it never reaches the SDK.
    pytest.mark.filterwarnings(
        r"ignore:(?s)Exception ignored in.*(KeyboardInterrupt|TimeoutError|HandlerTimeout)"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

# Each clean call's own timeout, and how much longer it may take before it counts as wedged:
# a call that is not wedged ends within its timeout, answered or not. Both far past a call's
# few milliseconds, so that a crowded machine (16 threads calling, and other processes) never
# times one out: only a wedged client waits them out.
TIMEOUT = 10.0
SLACK = 10.0
# The share of interrupted calls answered late by the emulator, and how late (real time).
SLOW_SHARE = 0.25
SLOW_ANSWER = 0.005
# The earliest interrupt, and the latest as a multiple of a typical call's duration.
EARLIEST = 0.00005
LATEST = 1.5
THREADS = 16
PAUSE = 0.01  # each thread's, between its calls
# Interrupted calls of the quick and the stress versions.
QUICK_ONE_THREAD = 120
QUICK_SHARED = 20
STRESS = 3_000  # one thread: about 3 s per 1,000 calls
STRESS_SHARED = 1_000  # among 16 threads: about 9 s
# Whether connections can be counted (tests/reliability/sockets.py reads /proc: Linux).
COUNTS_CONNECTIONS = Path("/proc/self/net/tcp").exists()


class HandlerTimeout(Exception):
    """What a timeout decorator's SIGALRM handler raises: an ordinary exception."""


# What the handler raises: Ctrl-C, and what timeout decorators raise.
RAISED = pytest.mark.parametrize(
    "raised", [KeyboardInterrupt, TimeoutError, HandlerTimeout], ids=lambda kind: kind.__name__
)


class Wedged(BaseException):
    """A call on the main thread still blocked WEDGED seconds on: raised by the watchdog."""


# How long a call may take, past its own timeout or a KeyboardInterrupt, before it is wedged.
WEDGED = TIMEOUT + SLACK


@contextmanager
def alarm(seconds: float, raised: type[BaseException]) -> Iterator[None]:
    """Raise ``raised`` on the main thread ``seconds`` (real time) into the block, unless over.

    Then a watchdog: ``Wedged`` every WEDGED seconds until the block ends, so a call that
    blocks for good after the first exception (say, on a lock its own thread holds) cannot
    hang the suite. The timer is disarmed and the old handler put back whatever happens,
    even if an exception arrives as the block ends.
    """
    assert threading.current_thread() is threading.main_thread(), "signals need the main thread"
    fired = [0]
    armed = [True]

    def handler(signum: int, frame: object) -> None:
        if armed[0]:
            fired[0] += 1
            raise raised if fired[0] == 1 else Wedged

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, WEDGED)
            yield
        finally:
            armed[0] = False  # from here on, a late signal raises nothing
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def isolated(call: Callable[[], str]) -> str:
    """Run ``call`` in a copy of the thread's context, in a generator's frame of its own.

    An exception raised at any point can leave behind what was being undone when it came:
    the SDK's deadline of an attempt (raised as ``Limit.__exit__`` starts) and, raised by a
    trace function in an ``except`` block, the exception being handled (a CPython 3.11+ flaw).
    Here both stay in the copy and the generator, and the tests that run next never see them.
    """

    def frame() -> Iterator[str]:
        yield contextvars.copy_context().run(call)

    return next(frame())


def translate(client: lingodoc.Client, *ids: int) -> str:
    return client.translate(
        text_for(*ids), source_language="en", target_language="de", timeout=TIMEOUT
    ).translated_text


def current_frames() -> dict[int, FrameType]:
    """``sys._current_frames()``, with the garbage collector off meanwhile.

    Before Python 3.11.9 and 3.12.3 a collection it sets off can deallocate a
    ``threading.local`` and deadlock the interpreter (python/cpython#106883): seen here.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()


def where(thread: threading.Thread) -> str:
    """The stack of ``thread`` now: where a wedged call is blocked."""
    frame = current_frames().get(thread.ident or -1)
    return "".join(traceback.format_stack(frame)) if frame is not None else "(thread ended)"


def where_they_are(threads: list[threading.Thread]) -> str:
    """Where ``threads`` are now: how many at each innermost line."""
    frames = current_frames()
    places = collections.Counter(
        f"{Path(top.filename).name}:{top.lineno} in {top.name}"
        for thread in threads
        if (frame := frames.get(thread.ident or -1)) is not None
        for top in traceback.extract_stack(frame)[-1:]
    )
    return "; ".join(f"{count} at {place}" for place, count in places.most_common())


def in_another_thread(call: Callable[[], str], expected: str) -> str | None:
    """Run ``call`` in a daemon thread; what went wrong (``None``: it returned ``expected``).

    A call that outlives its timeout by SLACK is wedged: the thread is left blocked (it is a
    daemon) and the report says where.
    """
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True, name="clean call")
    started = time.monotonic()
    thread.start()
    thread.join(WEDGED)
    if thread.is_alive():
        return f"a call with timeout={TIMEOUT} still blocked after {WEDGED} s in:\n" + (
            where(thread)
        )
    if outcome != [expected]:
        took = time.monotonic() - started
        return f"expected {expected!r}, got {outcome[0]!r} after {took:.2f} s"
    return None


def on_the_main_thread(call: Callable[[], str], expected: str) -> str | None:
    """Run ``call`` on the main thread under a watchdog; what went wrong (``None``: all right)."""
    started = time.monotonic()
    try:
        with alarm(WEDGED, Wedged):
            got: object = call()
    except Wedged:
        return f"a call with timeout={TIMEOUT} still blocked after {WEDGED} s in:\n" + (
            traceback.format_exc()
        )
    except Exception as exc:
        got = exc
    if got != expected:
        return f"expected {expected!r}, got {got!r} after {time.monotonic() - started:.2f} s"
    return None


@dataclass
class Series:
    """Calls on the main thread, each interrupted a random time in; what came of them."""

    client: lingodoc.Client
    emulator: Emulator
    seed: int
    typical: float  # a typical call's duration, seconds
    raised: type[BaseException]  # what the signal handler raises
    rng: random.Random = field(init=False)
    interrupted: int = 0  # calls that raised what the handler raised
    answered: int = 0  # calls that returned their translation before it
    failed: int = 0  # calls that raised a LingodocError (a connection error, say)
    last: str = ""  # the last call's delay and outcome, for a failure's report

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def call(self, number: int) -> None:
        """Make call ``number``, interrupted; fail the test if it raised something else."""
        slow = self.rng.random() < SLOW_SHARE
        latest = LATEST * self.typical + (SLOW_ANSWER if slow else 0.0)
        delay = self.rng.uniform(EARLIEST, latest)
        if slow:
            self.emulator.clear_faults()  # one left by a call interrupted before it was sent
            self.emulator.inject("slow", method="POST", path="/translate", delay=SLOW_ANSWER)
        self.last = f"call {number}, interrupted after {delay * 1000:.3f} ms" + (
            f" over a {SLOW_ANSWER * 1000:.0f} ms answer" if slow else ""
        )

        def interrupted() -> str:
            with alarm(delay, self.raised):
                return translate(self.client, 0, number)

        try:
            got = isolated(interrupted)
        except Wedged:
            pytest.fail(
                f"{self.context()}: the interrupted call still blocked {WEDGED} s after its "
                f"{self.raised.__name__}, in:\n{traceback.format_exc()}"
            )
        except self.raised:
            self.interrupted += 1
            return
        except lingodoc.LingodocError:
            self.failed += 1
            return
        except BaseException:
            pytest.fail(f"{self.context()}: the interrupted call raised:\n{traceback.format_exc()}")
        assert got == expected_for(0, number), self.context()
        self.answered += 1

    def context(self) -> str:
        return (
            f"seed {self.seed} ({self.last}; {self.interrupted} interrupted, "
            f"{self.answered} answered, {self.failed} failed before)"
        )

    def summary(self) -> str:
        return (
            f"seed {self.seed}: {self.interrupted} interrupted, {self.answered} answered, "
            f"{self.failed} failed; delays up to {LATEST * self.typical * 1000:.2f} ms"
        )


def new_seed() -> int:
    given = os.environ.get("LINGODOC_INTERRUPT_SEED")
    return int(given) if given else random.SystemRandom().randrange(2**32)


def typical_call(client: lingodoc.Client, ids: int) -> float:
    """The median duration of a clean call on the main thread (seconds), after a warm-up."""
    durations = []
    for i in range(15):
        started = time.perf_counter()
        assert translate(client, ids, i) == expected_for(ids, i)
        durations.append(time.perf_counter() - started)
    return statistics.median(durations[5:])


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls make no OpenTelemetry span, even if another test of this worker imported it.

    A span takes a lock of its own that an exception at the wrong line leaves taken (its
    ``end()`` then waits for good, seen in CI): OpenTelemetry's, not the SDK's.
    """
    from lingodoc import _tracing

    monkeypatch.setattr(_tracing, "_API", "opentelemetry.trace, not in this test")
    monkeypatch.setattr(_tracing, "_HTTPX", "opentelemetry.instrumentation.httpx, not here")


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(rate_limit=10**9)  # no 429: the limit never interferes


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        yield running


@pytest.fixture
def client(server: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[lingodoc.Client]:
    # No retries: a retry would hide a failure of the clean calls. No keep-alive expiry:
    # httpcore's pool may close an expired connection it has just handed to another thread's
    # call (encode/httpcore#1110, scripts/httpcore_pool_race.py); without it, nothing closes
    # a connection under a call but the SDK, which these tests are about.
    monkeypatch.setattr(_sync_transport, "KEEPALIVE_EXPIRY", None)
    instance = lingodoc.Client(server.api_key, base_url=server.base_url, max_retries=0)
    yield instance
    # A wedged client may block in close() too: closed in a thread that is not waited out.
    closing = threading.Thread(target=instance.close, daemon=True, name="close")
    closing.start()
    closing.join(WEDGED)


def closing_closes_every_connection(client: lingodoc.Client, server: EmulatorServer) -> None:
    """``close()`` returns, and leaves no connection open, none of an interrupted call's either.

    Collected first: a socket caught being made by an interrupt is closed then (docstring).
    """
    closing = threading.Thread(target=client.close, daemon=True, name="close")
    closing.start()
    closing.join(WEDGED)
    if closing.is_alive():
        pytest.fail(f"close() still blocked after {WEDGED} s in:\n{where(closing)}")
    gc.collect()
    if COUNTS_CONNECTIONS:
        left = client_connections(server.port)
        assert left == 0, f"{left} connections to the emulator still open after close()"


def ends_usable(client: lingodoc.Client, server: EmulatorServer, series: Series) -> None:
    """After a series: the REPL user's next call, on the main thread, then close()."""
    problem = on_the_main_thread(lambda: translate(client, 2), expected_for(2))
    if problem:
        pytest.fail(f"{series.context()}: then a clean call on the main thread: {problem}")
    closing_closes_every_connection(client, server)
    # A TimeoutError raised in a socket call reaches the caller as a LingodocError (httpcore's).
    landed = series.interrupted + (series.failed if series.raised is TimeoutError else 0)
    assert landed > 0, series.summary()


# One thread: each interrupted call followed by a clean one from another thread.


def interrupted_calls_then_clean_calls(
    client: lingodoc.Client, server: EmulatorServer, calls: int, raised: type[BaseException]
) -> None:
    emulator = server.emulator
    assert threading.current_thread() is threading.main_thread(), "signals need the main thread"
    series = Series(client, emulator, new_seed(), typical_call(client, 5), raised)
    print(series.summary())  # shown with pytest -s, and on a failure
    for number in range(calls):
        series.call(number)
        emulator.clear_faults()  # the clean call is answered at once
        clean = functools.partial(translate, client, 1, number)
        problem = in_another_thread(clean, expected_for(1, number))
        if problem:
            pytest.fail(f"{series.context()}: then a clean call from another thread: {problem}")
    print(series.summary())
    ends_usable(client, server, series)


@RAISED
@pytest.mark.parametrize(
    "calls", [QUICK_ONE_THREAD, pytest.param(STRESS, marks=pytest.mark.stress)]
)
def test_a_call_interrupted_at_any_point_leaves_the_client_usable_from_another_thread(
    client: lingodoc.Client, server: EmulatorServer, calls: int, raised: type[BaseException]
) -> None:
    interrupted_calls_then_clean_calls(client, server, calls, raised)


# 16 threads share the client, calling in a loop, while the main thread's calls are interrupted.


def interrupted_calls_among_busy_threads(
    client: lingodoc.Client, server: EmulatorServer, calls: int, raised: type[BaseException]
) -> None:
    emulator = server.emulator
    assert threading.current_thread() is threading.main_thread(), "signals need the main thread"
    stop = threading.Event()
    errors: list[str] = []
    done = [0] * THREADS
    # Bounded, but never reached before the main thread is done.
    most = 40 * calls

    def worker(thread: int) -> None:
        try:
            for i in range(most):
                got = translate(client, 10 + thread, i)
                assert got == expected_for(10 + thread, i), got
                done[thread] += 1
                # A pause between calls: a thread that asked for a turn of max_in_flight gets
                # the one just given back, before its giver takes it again (16 threads going
                # at once would starve a 17th).
                if stop.wait(PAUSE):
                    return
        except BaseException:
            errors.append(f"thread {thread}, call {done[thread]}:\n{traceback.format_exc()}")

    workers = [
        threading.Thread(target=worker, args=(t,), daemon=True, name=f"worker {t}")
        for t in range(THREADS)
    ]
    for thread in workers:
        thread.start()
    try:
        # The duration of a call with the 16 threads at it.
        series = Series(client, emulator, new_seed(), typical_call(client, 5), raised)
        print(series.summary())
        for number in range(calls):
            series.call(number)
            emulator.clear_faults()
            clean = functools.partial(translate, client, 3, number)
            problem = in_another_thread(clean, expected_for(3, number))
            if problem:
                pytest.fail(
                    f"{series.context()}: then a clean call from another thread: {problem}\n"
                    f"The {THREADS} threads: {where_they_are(workers)}"
                )
            if errors:
                pytest.fail(f"{series.context()}: a thread's call failed: {errors[0]}")
    finally:
        stop.set()
        emulator.clear_faults()
        # Each thread's last call ends within its timeout, if the client is not wedged.
        deadline = time.monotonic() + WEDGED
        for thread in workers:
            thread.join(max(deadline - time.monotonic(), 0.0))
    print(series.summary(), f"; the threads' calls: {sum(done)}")
    stuck = [thread for thread in workers if thread.is_alive()]
    if stuck:
        pytest.fail(
            f"{series.context()}: {len(stuck)} of the threads still blocked "
            f"({where_they_are(stuck)}), the first in:\n{where(stuck[0])}"
        )
    if errors:
        pytest.fail(f"{series.context()}: a thread's call failed: {errors[0]}")
    assert all(done), done  # each thread called, and every result was checked
    problem = in_another_thread(lambda: translate(client, 4), expected_for(4))
    if problem:
        pytest.fail(f"{series.context()}: then a clean call from another thread: {problem}")
    ends_usable(client, server, series)


@RAISED
@pytest.mark.parametrize(
    "calls", [QUICK_SHARED, pytest.param(STRESS_SHARED, marks=pytest.mark.stress)]
)
def test_calls_interrupted_while_16_threads_share_the_client_leave_it_usable(
    client: lingodoc.Client, server: EmulatorServer, calls: int, raised: type[BaseException]
) -> None:
    interrupted_calls_among_busy_threads(client, server, calls, raised)


# The same exceptions raised at each line a call runs, one after the other (sys.settrace).


def lines_of(call: Callable[[], str]) -> int:
    """How many lines the main thread runs in ``call`` (line events of the trace)."""
    count = [0]

    def tracer(frame: FrameType, event: str, arg: object) -> object:
        if event == "line":
            count[0] += 1
        return tracer

    sys.settrace(tracer)
    try:
        isolated(call)  # as raising_at runs it, line for line
    finally:
        sys.settrace(None)
    return count[0]


def raising_at(line: int, raised: type[BaseException], call: Callable[[], str]) -> str:
    """Run ``call``, raising ``raised`` as its ``line``-th line is about to run."""
    count = [0]

    def tracer(frame: FrameType, event: str, arg: object) -> object:
        if event == "line":
            count[0] += 1
            if count[0] == line:
                sys.settrace(None)
                raise raised("raised at a line of the call")
        return tracer

    sys.settrace(tracer)
    try:
        return isolated(call)
    finally:
        sys.settrace(None)


@RAISED
@pytest.mark.parametrize("every", [29, pytest.param(1, marks=pytest.mark.stress)])
def test_an_exception_raised_at_any_line_of_a_call_leaves_the_client_usable(
    client: lingodoc.Client, server: EmulatorServer, every: int, raised: type[BaseException]
) -> None:
    assert threading.current_thread() is threading.main_thread(), "signals need the main thread"
    call = functools.partial(translate, client, 6)
    expected = expected_for(6)
    assert call() == expected  # connected: the sweep starts from a reused connection
    lines = lines_of(call)
    outcomes: collections.Counter[str] = collections.Counter()
    for line in range(1, lines + 1, every):
        where_raised = f"{raised.__name__} raised at line {line} of {lines}"
        try:
            with alarm(WEDGED, Wedged):
                got = raising_at(line, raised, call)
                outcomes["answered" if got == expected else f"answered {got!r}"] += 1
        except Wedged:
            pytest.fail(
                f"{where_raised}: the call still blocked after {WEDGED} s in:\n"
                f"{traceback.format_exc()}"
            )
        except raised:
            outcomes["raised"] += 1
        except lingodoc.LingodocError:
            outcomes["LingodocError"] += 1
        except BaseException:
            pytest.fail(f"{where_raised}: the call raised:\n{traceback.format_exc()}")
        problem = on_the_main_thread(call, expected)
        if problem:
            pytest.fail(f"{where_raised}: then a clean call: {problem}")
    assert set(outcomes) <= {"answered", "raised", "LingodocError"}, outcomes
    assert outcomes["raised"] + outcomes["LingodocError"] > 0, outcomes
    closing_closes_every_connection(client, server)


# An exception raised as the response is closed, once it is read: the call's, not swallowed.


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_exception_raised_while_the_response_is_closed_is_the_calls(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    from lingodoc import _async_transport, _sync_transport

    module = _sync_transport if kind == "sync" else _async_transport
    name = "close" if kind == "sync" else "aclose"
    closing = getattr(module.ResponseStream, name)
    raised = [False]

    def once() -> None:
        if not raised[0]:
            raised[0] = True
            raise HandlerTimeout("raised as the response is closed")

    if kind == "sync":

        def close(self: object) -> None:
            once()
            closing(self)

        monkeypatch.setattr(module.ResponseStream, name, close)
        with lingodoc.Client(server.api_key, base_url=server.base_url, max_retries=0) as client:
            with pytest.raises(HandlerTimeout):
                translate(client, 7)
            assert translate(client, 7) == expected_for(7)  # and the client goes on
        return

    async def aclose(self: object) -> None:
        once()
        await closing(self)

    monkeypatch.setattr(module.ResponseStream, name, aclose)

    async def calls() -> str:
        async with lingodoc.AsyncClient(
            server.api_key, base_url=server.base_url, max_retries=0
        ) as client:
            with pytest.raises(HandlerTimeout):
                await client.translate(text_for(7), source_language="en", target_language="de")
            result = await client.translate(text_for(7), source_language="en", target_language="de")
            return result.translated_text

    import anyio

    assert anyio.run(calls) == expected_for(7)
