"""How many attempts a client lets in flight at once: the limit, and how it adapts.

No I/O and no clock: the clients time each attempt and hand the durations in, and the
waiting (threads or tasks) lives in ``_base_client._Shared``. So the algorithm is tested
with plain numbers.

Why a limit at all: httpcore's pool scans its connections and its queue of waiting
requests on every request and every response, so a ``gather`` of thousands of calls
spends its time in those scans (and may end in ``PoolTimeout``), and every connection
opened stays in the scans. A call waiting here costs nothing of the kind. Why adaptive: a
server on this machine is answered fastest with a few calls in flight (the client's CPU is
the bottleneck), a distant one needs as many as fit in its round trip.

The rule is TCP Vegas's, counted in attempts: ``base`` is the round trip with nothing
queued (the shortest seen), ``rtt`` the shortest of the last window of attempts, and
``limit * (1 - base / rtt)`` estimates how many of the attempts in flight are queued (on
this machine's CPU, or the server's) rather than being served. Few queued: the limit
grows; many: it shrinks toward the point where more in flight only adds waiting. It grows
by half a window (doubling up to the initial limit) until it first comes down, then by one
(TCP's slow start, then its congestion avoidance).
"""

from __future__ import annotations

import math

# The limit a client starts with: 16, so that a burst of up to 16 calls to a distant
# server goes out at once, as without a limit (starting at 4 held a gather of 20 calls to
# a server 100 ms away to ~950 ms instead of ~170 ms). It grows by half each window while
# nothing queues, and the first window after it is a probe (below), so ``base`` is soon
# measured with few in flight.
INITIAL_LIMIT = 16
# ... unless the client's first burst of calls is larger than this (an AsyncClient counts
# the tasks that call it within one turn of the event loop, see ``first_burst``): then it
# lets one call in at a time, and the first two answers decide. Both DISTANT_RTT or
# slower: the server is distant, and the limit goes to INITIAL_LIMIT at once (or the
# pool's size). Two, because the first pays for the connection (TCP, TLS) and the
# client's first-call set-up: over TLS, a server 5-10 ms away answers a first call in
# more than 20 ms. Otherwise the first window runs one call at a time (it is the probe
# that measures ``base``) and the limit doubles from 1.
# On loopback every connection a first burst opens stays in httpcore's scans until idle
# for 5 s: a gather of 10,000 calls was some 25% slower starting at 16 than at 4, and 5%
# slower starting at 4 (the limit settling at 2, the 2 idle connections left in the scans)
# than at 1. (Measured with the SDK's connections in one pool of 100; they are now in pools
# of 4, see ``AsyncShardedTransport``, which makes each connection cost less.)
LARGE_BURST = 128
# Attempts measured before each update: at least this many, and at least the limit (about
# one round trip of every attempt in flight). Few, so a slow server is not held long at the
# initial limit.
MIN_WINDOW = 8
# Queued attempts (Vegas's alpha and beta) below which the limit grows, above which it
# shrinks; between them it holds. Scaled with the limit's logarithm, as in Netflix's
# concurrency-limits, so a large limit is not held to a queue of two or three.
ALPHA = 1.0
BETA = 2.0
# ... and alpha at most this many queued per attempt in flight (a quarter of each round
# trip spent waiting). Alpha alone let a limit of 2 grow while nearly one of its two
# attempts was queued: on loopback (the client's CPU the bottleneck) it grew to 3, where
# 2 and 1 were 6% faster.
ALPHA_PER_ATTEMPT = 0.25
# Every this many windows, one window runs at a quarter of the limit to measure ``base``
# afresh (as TCP BBR's ProbeRTT): the server, or the path to it, may have become slower,
# and an old, shorter ``base`` would read that as queueing and throttle the client. With
# few calls queued, that window's shortest round trip is the one with nothing queued.
PROBE_EVERY = 32
# The first window is followed by a probe as well, unless its shortest round trip is at
# least this long: no client's own work makes 16 calls take that long, so the server is
# distant and the probe would only hold a first burst back (a gather of 50 calls to a
# server 100 ms away took 560 ms with it, 230 ms without any limit). The same line tells
# a distant server from the first answers of a large first burst (LARGE_BURST).
DISTANT_RTT = 0.020
# Answers of a large first burst that must each take DISTANT_RTT or more for the server
# to be taken for distant.
DISTANT_ANSWERS = 2


class Limiter:
    """The limit on attempts in flight: fixed, or adapted to the round trips measured.

    Args:
        ceiling: The largest limit (the connection pool's size).
        fixed: A fixed limit (``max_in_flight=``); ``None`` adapts it within
            ``[1, ceiling]``.
    """

    def __init__(self, ceiling: int, fixed: int | None = None) -> None:
        self.ceiling = max(1, ceiling)
        self.adaptive = fixed is None
        self.limit = fixed if fixed is not None else min(INITIAL_LIMIT, self.ceiling)
        self._estimate = float(self.limit)
        self.base = math.inf  # the shortest round trip seen (since the last re-basing)
        self._count = 0
        self._shortest = math.inf
        self._busiest = 0
        self._windows = PROBE_EVERY - 1  # the first window is followed by a probe
        # The first window is not yet over: an AsyncClient then counts a burst of calls
        # that finds it idle (``_Shared.async_enter``) and tells ``first_burst``.
        self.opening = self.adaptive
        self._probing: float | None = None  # the limit to return to after a probe window
        # Growing fast (by half a window, or doubling below INITIAL_LIMIT) while nothing
        # queues, until the limit first comes down (see ``_update``).
        self._slow_start = True
        # A large first burst is let in one call at a time: the answers still to come
        # before it is known whether the server is distant (``first_burst``). If none
        # comes (every call failed), the limit stays at 1 until one does.
        self._held = 0

    def first_burst(self, calls: int) -> None:
        """Let in one call at a time if the first burst holds more than ``LARGE_BURST`` calls.

        The first answers then decide: from a distant server, the limit goes to
        ``INITIAL_LIMIT`` (or the pool's size); otherwise this first window is the probe,
        and the limit grows from 1.

        Args:
            calls: The calls that came to the idle client together, before any was let in.
        """
        if self.adaptive and calls > LARGE_BURST and self.limit > 1:
            self.limit, self._estimate = 1, 1.0
            self._windows = 0  # no probe after this window: it is one
            self._held = DISTANT_ANSWERS

    def sample(self, rtt: float, in_flight: int) -> None:
        """Record one attempt's round trip; update the limit once a window is full.

        Args:
            rtt: Seconds from the attempt's start to its end (response read).
            in_flight: Attempts in flight when it ended, itself included.
        """
        if not self.adaptive:
            return
        if self._held:
            if rtt < DISTANT_RTT:  # near: this first window is the probe
                self._held = 0
            else:
                self._held -= 1
                if not self._held:  # a distant server: no reason to hold the burst back
                    self.opening = False
                    self.limit = min(INITIAL_LIMIT, self.ceiling)
                    self._estimate = float(self.limit)
                    self._count, self._shortest, self._busiest = 0, math.inf, 0
                    return
        # Compared, not min() and max(): this runs on every call.
        self._count += 1
        if rtt < self._shortest:
            self._shortest = rtt
        if in_flight > self._busiest:
            self._busiest = in_flight
        if self._count >= MIN_WINDOW and self._count >= self.limit:
            self._update()

    def _update(self) -> None:
        # The window's shortest round trip, as Vegas takes the last round's: a mean would
        # read the jitter of a distant server (or of a loaded machine) as queueing.
        rtt = self._shortest
        shortest, busiest = self._shortest, self._busiest
        self._count, self._shortest, self._busiest = 0, math.inf, 0
        if self._probing is not None:  # the probe window: base measured afresh
            if shortest > 0.0:
                self.base = shortest
            self._estimate, self._probing = self._probing, None
            self.limit = int(self._estimate)
            return
        if shortest < self.base:
            self.base = shortest
        base = self.base
        if rtt <= 0.0 or base <= 0.0:  # a clock too coarse to tell: nothing learnt
            return
        self._windows += 1
        if self._windows == PROBE_EVERY and self.opening and shortest >= DISTANT_RTT:
            self._windows = 0  # a distant server: the first probe is not needed
        self.opening = False
        if self._windows >= PROBE_EVERY:
            self._windows = 0
            self._probing = self._estimate
            self.limit = max(1, int(self._estimate / 4))
            return
        queued = self._estimate * (1.0 - base / rtt)
        scale = max(1.0, math.log10(self._estimate))
        alpha, beta = min(ALPHA * scale, ALPHA_PER_ATTEMPT * self._estimate), BETA * scale
        estimate = self._estimate
        if queued < alpha:
            # Not limited by this limit (too few calls to fill it): no evidence to grow on.
            if busiest < self.limit:
                return
            # Nothing queued at all: far below the best, grow fast (as Vegas's slow start),
            # until the limit has once come down. After that the best is known to be near,
            # and growth is by one a window, as TCP's congestion avoidance: by half, a limit
            # held just under the point where queueing starts would jump far past it every
            # time a window saw no queue, and the client's connection pool costs more per
            # call with every connection it holds (a gather to a server 20 ms away bounced
            # between 22 and 38 in flight and ran at 0.6 x a fixed 16).
            # Below INITIAL_LIMIT (a large first burst, grown from 1) it doubles, as TCP's
            # slow start: by half, it took 4 windows more to reach 16 (1, 2, 3, 4, 6...).
            if self._slow_start and queued < alpha / 2:
                if estimate < INITIAL_LIMIT:
                    estimate = min(2 * estimate, INITIAL_LIMIT)
                else:
                    estimate += estimate / 2
            else:
                estimate += 1.0
        elif queued > beta:
            estimate -= max(1.0, (queued - beta) / 2)
            self._slow_start = False
        self._estimate = min(max(estimate, 1.0), float(self.ceiling))
        self.limit = int(self._estimate)


__all__ = ["Limiter"]
