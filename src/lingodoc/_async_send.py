"""How `AsyncClient` sends a call: the gate, a turn per attempt, retries (`_retry.Retries`).

Every step without I/O is in ``_base_client``. This module is written by hand;
``_sync_send.py`` (``Client``'s) is generated from it by ``scripts/unasync.py``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, TypeVar

import httpx

from lingodoc import _clock, _deadline, _response, _retry, _tracing
from lingodoc._base_client import BaseClient
from lingodoc._exceptions import LingodocError
from lingodoc._http import Turn
from lingodoc._redaction import check_http_loggers, raise_scrubbed

if TYPE_CHECKING:
    from lingodoc._endpoints import Call

T = TypeVar("T")


class AsyncSending(BaseClient[httpx.AsyncClient]):
    """What sends `AsyncClient`'s calls; the public methods are the client's."""

    async def _send(
        self,
        call: Call[T],
        *,
        deadline: float | None = None,
        stop: threading.Event | None = None,
    ) -> T:
        """Send ``call``, retried as `_retry.Retries` says; its error is raised from here.

        ``deadline``: on the SDK clock, for a poll's attempts and waits; ``stop``: set when
        ``translate_many``'s run is over.
        """
        self._gate()
        check_http_loggers()  # mask the key in the http loggers made since the last call
        request = self._build_request(call)
        retries = _retry.Retries(call, self.max_retries, deadline)
        began = _clock.current().monotonic()  # an error after retries says how long they took
        failed: LingodocError | None = None
        number = 1
        while True:
            async with Turn(self._shared) as turn:
                self._gate(call, failed, stop)  # in the turn: it sends, or close() closes
                try:
                    return await self._attempt(turn, call, request, deadline, number, began)
                except LingodocError as exc:
                    wait = retries.wait_after(exc)
                    if wait is None:
                        # Without the frames below: they hold the response as the server sent it.
                        raise_scrubbed(exc)
                    failed = exc
            self._gate(call, failed, stop)  # no wait for a retry that would be refused
            retries.announce(failed, wait)
            await _clock.async_wait(stop, wait)
            number += 1

    async def _attempt(
        self,
        turn: Turn,
        call: Call[T],
        request: httpx.Request,
        deadline: float | None,
        number: int,
        began: float,
    ) -> T:
        """Attempt ``number`` (from 1) in its ``turn``; ``began``: the first's, SDK clock."""
        _tracing.attempted()
        seconds, what = self._attempt_timeout(call, request, deadline)
        started = time.perf_counter()
        response: httpx.Response | None = None
        failure = None
        closed = False
        try:
            async with _deadline.async_limit(seconds, self._shared.cancel):
                response = await turn.send(request)
                reader = _response.BodyReader(response)
                if not reader.in_memory:
                    stream = response.stream  # as received: the SDK decodes it itself
                    assert isinstance(stream, httpx.AsyncByteStream)
                    async for chunk in stream:
                        if reader.feed(chunk):
                            break
        except (httpx.HTTPError, TimeoutError, RuntimeError) as exc:
            failure = exc
        except BaseException:
            # An interrupt, a cancellation or a signal handler's exception goes on as it came,
            # never replaced by what closing the response it cut short may raise.
            if response is not None:
                with _deadline.async_shield(self._shared.theirs), contextlib.suppress(Exception):
                    await response.aclose()
            raise
        if response is not None and not response.is_closed:  # (one built in memory is)
            # Read, or given up: the http client's failure to close it is not the call's.
            with _deadline.async_shield(self._shared.theirs), contextlib.suppress(httpx.HTTPError):
                await response.aclose()
                closed = True
        if failure is not None:  # raised here, not in the except block, which holds the key
            self._log(call, type(failure).__name__, number, started)
            expired = seconds is not None and time.perf_counter() - started >= seconds
            raise self._connection_error(call, failure, number, began, what if expired else "")
        turn.clean = closed  # the main thread's connection is reused only after this
        assert response is not None
        self._log(call, response.status_code, number, started)
        now = _clock.current().time()
        rate_limit = _response.rate_limit_of(reader.headers, now)
        if rate_limit is not None:
            self._shared.rate_limit = rate_limit
        return _response.read(
            call, response, reader, request, rate_limit,
            now=now, elapsed=time.perf_counter() - started, redact=self._key_mask,
        )  # fmt: skip
