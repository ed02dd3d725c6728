"""[`Client`][lingodoc.Client], generated from ``_async_client.py``: do not edit.

Edit ``_async_client.py`` and run ``python scripts/unasync.py``; CI checks
that this file is current.

Both clients are thin: they send, read, sleep and close. Everything that does
no I/O lives in ``_base_client``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from lingodoc import _bulk, _clock, _retry
from lingodoc._base_client import BaseClient, Call, Failure, Waiter, call_options
from lingodoc._exceptions import APIConnectionError, APIError, LingodocError, RateLimited
from lingodoc._redaction import check_http_loggers, raise_scrubbed

if TYPE_CHECKING:
    import tenacity

    from lingodoc._bulk import BulkProgress
    from lingodoc._deadline import Attempt
    from lingodoc._models import (
        BatchTranslation,
        Document,
        TextTranslation,
        TranslationJob,
        TranslationStatus,
    )

T = TypeVar("T")
ClientT = TypeVar("ClientT", bound="Client")

ProgressCallback = Callable[["TranslationStatus"], object]


class Client(BaseClient[httpx.Client]):
    """A blocking client for the lingodoc service.

    Safe to share between threads.
    Use it in a `with` block, or call [`close`][lingodoc.Client.close],
    to release its connections:

    ```python
    with lingodoc.Client() as client:
        result = client.translate("Hello", source_language="en", target_language="de")
    ```

    Args:
        api_key: The API key; defaults to the ``LINGODOC_API_KEY`` environment
            variable.
        base_url: The service address up to and including ``/v1``; defaults
            to ``LINGODOC_BASE_URL``. Must be ``https://`` unless the host is
            loopback or named by ``allow_http_host``, with no user name or password.
        timeout: Seconds, or an ``httpx.Timeout``, for each attempt;
            ``httpx.Timeout(None)`` for no limit. ``None`` (not set) takes the
            ``http_client``'s timeout if its creator set one, else 30 seconds.
        max_retries: Extra attempts after a failure that may pass; 0 disables
            retries.
        default_headers: Headers to send with every request. They cannot
            replace ``Authorization``; headers that frame the body or manage
            the connection (``Content-Length``, ``Transfer-Encoding``,
            ``Connection``...) and values with line breaks are refused.
        http_client: An ``httpx.Client`` to send through (proxies, custom
            transports). It stays the caller's: the SDK never closes it, and
            sends through it as it is set up, proxies included.
        allow_http_host: A host to which an ``http://`` ``base_url`` is allowed,
            such as ``"emulator"`` (a docker-compose service); defaults to
            ``LINGODOC_ALLOW_HTTP_HOST``. The key then goes in clear text to that
            host, which is logged as a warning; never through a proxy.
        max_in_flight: The most calls sent at once (shared with the copies made by
            ``with_options``); past it, a call waits for its turn, first come first
            served, before its attempt starts (so the wait is not part of its
            ``timeout``). ``None`` adapts it to the round trips measured, between 1
            and the connection pool's size (100, or the ``http_client``'s): few on a
            server that answers at once, more on a distant one. A fixed limit above
            the SDK's own 100 connections is held to 100. See "Concurrency" in the
            configuration guide.

    Raises:
        ConfigurationError: If the key or the base URL is missing or unusable
            (``http://`` to a host that is neither loopback nor ``allow_http_host``,
            or to that host through a proxy of the ``http_client``), another
            setting is invalid, or a proxy or certificate variable of the
            environment cannot be used.
    """

    _http_client_type = httpx.Client

    def __enter__(self: ClientT) -> ClientT:
        self._check_open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and its connections (unless the ``http_client`` was passed in).

        Closing a copy made by [`with_options`][lingodoc.Client.with_options]
        closes only the copy.

        Safe while other threads are sending: calls started after it are refused, and calls
        in flight are not retried (they end with ``APIConnectionError``, "client closed").
        A connection in use is closed when its request ends, so none outlives the last
        call in flight.
        """
        if self._view_closed:
            return
        if self._is_copy:
            self._view_closed = True
            return
        loop_gone = self._closing_from_another_loop()
        self._view_closed = True
        if self._shared.close(loop_gone=loop_gone):
            self._shared.http.close()

    def translate(
        self,
        text: str,
        *,
        source_language: str,
        target_language: str,
        style: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> TextTranslation:
        """Translate one text.

        Args:
            text: Up to 10,000 characters.
            source_language: ISO 639-1 code of the text, such as ``"en"``.
            target_language: ISO 639-1 code to translate into.
            style: A style such as ``"formal"`` or ``"marketing"``.
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.
            extra_query: Query parameters to add to the request.
            extra_body: JSON fields to merge into the request body; a field the
                SDK sets is replaced. See "Per-call options" in the configuration guide.

        Returns:
            The translation.

        Raises:
            InvalidArgumentType: If ``text`` is not a string, ``style`` is neither a
                string nor ``None``, an option (``timeout``, ``extra_headers``...) has
                the wrong type, or ``extra_body`` cannot be sent as JSON (a ``TypeError``).
            InvalidArgument: If ``timeout`` is not a positive number, or
                ``extra_headers`` holds a header that cannot be sent (``Authorization``,
                ``Content-Length``, a line break...) (a ``ValueError``).
            TextTooLong: If the text exceeds 10,000 characters (checked before sending).
            InvalidLanguage: If a code is malformed (checked before sending) or
                not supported by the service.
            APIError: For any other error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        call = self._translate_call(text, source_language, target_language, style, options)
        return self._send(call)

    def translate_batch(
        self,
        texts: Sequence[str],
        *,
        source_language: str,
        target_language: str,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> BatchTranslation:
        """Translate several texts in one request.

        Args:
            texts: The texts, a non-empty list of strings.
            source_language: ISO 639-1 code of the texts.
            target_language: ISO 639-1 code to translate into.
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.
            extra_query: Query parameters to add to the request.
            extra_body: JSON fields to merge into the request body; a field the
                SDK sets is replaced. See "Per-call options" in the configuration guide.

        Returns:
            The translations, one per text, in input order.

        Raises:
            InvalidArgument: If ``texts`` is empty, or an option is out of range (as
                for [`translate`][lingodoc.Client.translate]) (a ``ValueError``).
            InvalidArgumentType: If ``texts`` is not a list of strings, or an option
                has the wrong type (a ``TypeError``).
            TextTooLong: If a text has more than 10,000 characters (checked before
                sending; the error names its index).
            InvalidLanguage: If a code is malformed or not supported.
            APIError: For any other error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        call = self._translate_batch_call(texts, source_language, target_language, options)
        return self._send(call)

    def translate_many(
        self,
        texts: Sequence[str],
        *,
        source_language: str,
        target_language: str,
        batch_size: int = _bulk.DEFAULT_BATCH_SIZE,
        max_concurrency: int = _bulk.DEFAULT_MAX_CONCURRENCY,
        wait_for_rate_limit: bool | float = False,
        on_progress: Callable[[BulkProgress], object] | None = None,
        done: MutableMapping[int, str] | None = None,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Translate any number of texts in as few requests as the service allows, keeping all work.

        Every text is checked before the first request. Each distinct text is
        sent once (a duplicate gets the same translation) and a blank one (empty,
        or only whitespace) is not sent at all: it comes back unchanged. The
        distinct texts go in batches of ``batch_size``, as
        [`translate_batch`][lingodoc.Client.translate_batch] requests sent
        by up to ``max_concurrency`` worker threads,
        each with the usual retries. The client paces itself by the rate-limit
        headers: when the requests left in the window do not exceed those in
        flight, it waits for the reset instead of running into 429s, if the
        reset is within ``wait_for_rate_limit``.

        Nothing finished is lost. The first error stops it: no further batch
        is started, a wait for a reset ends at once,
        the batches in flight are finished (with their retries) and kept, and that
        first error is raised. Ctrl-C stops it the same way, and raises
        KeyboardInterrupt once the batches in flight are kept.
        No thread is left running when it returns or raises. The error (a
        [`LingodocError`][lingodoc.LingodocError]) carries the translations
        finished so far as ``.partial``, a
        [`PartialTranslations`][lingodoc.PartialTranslations]; pass
        ``done=err.partial.translations`` to resume with only what is left. A
        ``done`` dict of your own is filled in as batches are answered, so it
        holds every finished translation however the call ends.

        Args:
            texts: The texts, a non-empty list of strings.
            source_language: ISO 639-1 code of the texts.
            target_language: ISO 639-1 code to translate into.
            batch_size: Texts per request. The spec gives no limit; the
                default, 100, is what the emulator accepts, and a service that
                takes fewer refuses the batch (the error is raised).
            max_concurrency: Requests in flight at most (default 4).
            wait_for_rate_limit: How long to wait for a rate-limit window to
                reset, for the pacing and after a 429: ``False`` (default) up
                to 60 s, as the retry policy does, so a spent hourly quota
                raises ``RateLimited``; ``True`` as long as the service says
                (an hour, on an hourly plan), so a corpus larger than the quota
                finishes; or a number of seconds.
            on_progress: Called with a [`BulkProgress`][lingodoc.BulkProgress]
                before the first request, after each batch, and when a wait
                for a reset begins; in the calling thread, one call at
                a time; a coroutine function is refused with ``TypeError``. An error it raises
                stops the call and is raised.
            done: Translations you already have, by index in ``texts``: those
                texts are not sent. Every translation made is added to it as
                its batch is answered (before the ``on_progress`` call that
                counts it).
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of each
                batch request, instead of the client's.
            extra_headers: Headers to send with each batch request (as for
                [`translate`][lingodoc.Client.translate]).
            extra_query: Query parameters to add to each batch request.
            extra_body: JSON fields to merge into each batch's body. See
                "Per-call options" in the configuration guide.

        Returns:
            The translations, one per text, in input order, as plain strings: no
            response of the batches is kept.

        Raises:
            InvalidArgument: If ``texts`` is empty, a size is below 1, ``done``
                holds an index out of range, or an option is out of range (as for
                [`translate`][lingodoc.Client.translate]) (a ``ValueError``).
            InvalidArgumentType: If ``texts`` is not a list of strings, or another
                argument has the wrong type (a ``TypeError``).
            TextTooLong: If a text has more than 10,000 characters (before
                anything is sent; the error names its index).
            InvalidLanguage: If a code is malformed or not supported.
            RateLimited: If the window is spent and its reset is further away
                than ``wait_for_rate_limit`` allows.
            APIError: For any other error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        bulk = self._bulk_plan(
            texts,
            source_language,
            target_language,
            batch_size,
            max_concurrency,
            wait_for_rate_limit,
            on_progress,
            done,
            call_options(timeout, extra_headers, extra_query, extra_body),
        )
        _bulk.run_workers(self._bulk_worker, bulk)
        return bulk.result()

    def _bulk_worker(self, bulk: _bulk.Bulk) -> None:
        try:
            while (step := bulk.next()) is not None:
                if isinstance(step, float):
                    _bulk.pace(bulk, step)
                    continue
                try:
                    result = self._send(step.call, stop=bulk.stopping)
                except Exception as exc:
                    wait = bulk.failed(step, exc)
                    if wait is None:
                        return
                    _bulk.pace(bulk, wait)
                    continue
                bulk.done(step, result)
                _bulk.hand_over(bulk)
        finally:
            bulk.exited()

    def translate_document(
        self,
        document_id: str,
        *,
        target_language: str,
        style: str | None = None,
        use_translation_memory: bool | None = None,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> TranslationJob:
        """Start translating a stored document.

        The job runs on the service; pass the result to
        [`wait_for_translation`][lingodoc.Client.wait_for_translation].
        Not retried where the service may already have started the job.

        Args:
            document_id: The document's id.
            target_language: ISO 639-1 code to translate into.
            style: A style such as ``"formal"``.
            use_translation_memory: Whether the service uses stored
                translation memory; the service's default if ``None``.
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.
            extra_query: Query parameters to add to the request.
            extra_body: JSON fields to merge into the request body; a field the
                SDK sets is replaced. See "Per-call options" in the configuration guide.

        Returns:
            The started job (state ``processing``).

        Raises:
            InvalidArgument: If ``document_id`` is empty, or ``.`` or ``..``, or an
                option is out of range (as for [`translate`][lingodoc.Client.translate])
                (a ``ValueError``).
            InvalidArgumentType: If ``document_id`` is not a string, or another
                argument has the wrong type (a ``TypeError``).
            NotFound: If there is no such document.
            UnexpectedResponse: If the answer is not a job, or is a job on another
                document (the job may have started).
            InvalidLanguage: If the code is malformed or not supported.
            APIError: For any other error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        call = self._translate_document_call(
            document_id,
            target_language,
            style,
            use_translation_memory,
            call_options(timeout, extra_headers, extra_query, extra_body),
        )
        return self._send(call)

    def get_translation(
        self,
        translation_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
    ) -> TranslationStatus:
        """Read the state of a document translation.

        Args:
            translation_id: The job's id, from
                [`translate_document`][lingodoc.Client.translate_document].
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.
            extra_query: Query parameters to add to the request. See
                "Per-call options" in the configuration guide.

        Returns:
            Its state and progress.

        Raises:
            InvalidArgument: If ``translation_id`` is empty, or ``.`` or ``..``, or an
                option is out of range (as for [`translate`][lingodoc.Client.translate])
                (a ``ValueError``).
            InvalidArgumentType: If ``translation_id`` is not a string, or an option has
                the wrong type (a ``TypeError``).
            NotFound: If there is no such translation.
            UnexpectedResponse: If the answer is not a status, or is the status of
                another translation.
            APIError: For any other error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        options = call_options(timeout, extra_headers, extra_query)
        return self._send(self._get_translation_call(translation_id, options))

    def wait_for_translation(
        self,
        job_or_id: TranslationJob | str,
        *,
        poll_interval: float = 5.0,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
    ) -> TranslationStatus:
        """Poll a document translation until it completes.

        A 429 while polling is waited out (until the rate-limit reset), even
        with ``max_retries=0``. With a ``timeout``, a 5xx or network failure
        that outlasts the client's retries is ridden out too, until the deadline.
        Ctrl-C (KeyboardInterrupt) stops the polling at once; the translation goes
        on on the service.

        Args:
            job_or_id: The job from
                [`translate_document`][lingodoc.Client.translate_document],
                or its translation id.
            poll_interval: Seconds between polls.
            timeout: Seconds to wait in all; ``None`` waits as long as it takes.
                Each poll is cut to the time left (the last one, at the deadline,
                gets a second). Each poll's own timeout is the client's: for
                another, wait with a copy, ``client.with_options(timeout=...)``.
            on_progress: Called with each status read, after every poll; a
                coroutine function is refused with ``TypeError`` before
                the first poll.
            extra_headers: Headers to send with each poll (as for
                [`get_translation`][lingodoc.Client.get_translation]).
            extra_query: Query parameters to add to each poll. See
                "Per-call options" in the configuration guide.

        Returns:
            The completed status.

        Raises:
            TranslationFailed: If the translation failed, or stayed in states this
                version of the SDK does not know for 3 polls in a row; ``.status``
                holds the last state.
            WaitTimeout: If ``timeout`` passed first; ``.status`` holds the last state.
            InvalidArgument: If ``poll_interval`` or ``timeout`` is out of range, the
                translation id is empty, or ``extra_headers`` holds a header that cannot
                be sent (a ``ValueError``).
            InvalidArgumentType: If an argument has the wrong type, or
                ``on_progress`` is a coroutine function and the client cannot
                it (a ``TypeError``).
            APIError: For an error other than 429 while polling; an
                ``UnexpectedResponse`` if a poll's answer is not a status, or is
                the status of another translation.
            APIConnectionError: If the service cannot be reached.
        """
        options = call_options(None, extra_headers, extra_query)
        waiter = self._waiter(job_or_id, poll_interval, timeout, on_progress, options)
        try:
            outcome = self._wait_loop(waiter)
        except LingodocError as exc:  # such as the client closed meanwhile: see _wait_loop
            raise_scrubbed(exc)
        if isinstance(outcome, Failure):
            raise_scrubbed(outcome.error)
        return outcome

    def _wait_loop(self, waiter: Waiter) -> TranslationStatus | Failure:
        # The statuses in this frame are as the server sent them (they may echo the key):
        # a failure or a timeout is returned for the caller to raise (see raise_scrubbed).
        while True:
            try:
                status = self._send(waiter.poll_call, deadline=waiter.deadline)
            except RateLimited as exc:
                delay = waiter.delay_after_rate_limit(exc.retry_after)
            except (APIError, APIConnectionError) as exc:
                # Not ridden out once the client is closed: the next poll would be refused.
                delay = Failure(exc) if self.is_closed else waiter.delay_after_failure(exc)
            else:
                waiter.report(status)
                outcome = waiter.finished(status)
                if outcome is not None:
                    return outcome
                delay = waiter.delay()
            if isinstance(delay, Failure):
                return delay
            _clock.sleep(delay)

    def list_documents(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        """List the stored documents.

        Args:
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.
            extra_query: Query parameters to add to the request. See
                "Per-call options" in the configuration guide.

        Returns:
            The documents, each with at least a ``document_id``.

        Raises:
            InvalidArgumentType: If an option (``timeout``, ``extra_headers``...) has the
                wrong type (a ``TypeError``).
            InvalidArgument: If ``timeout`` is not a positive number, or ``extra_headers``
                holds a header that cannot be sent (``Authorization``, ``Content-Length``,
                a line break...) (a ``ValueError``).
            APIError: For an error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        return self._send(
            self._list_documents_call(call_options(timeout, extra_headers, extra_query))
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Call any endpoint under ``base_url``, for parts of the service the SDK does not wrap.

        Same authentication, envelope, errors, retries and rate-limit
        tracking as the other methods. Only GET, HEAD, OPTIONS, PUT and
        DELETE are retried after a failure the server may have acted on.
        It has no ``extra_query`` or ``extra_body``: ``params`` and ``json``
        are the query and the body, whole.

        Args:
            method: The HTTP method, such as ``"GET"``.
            path: A path relative to ``base_url``, such as ``"/documents/doc_1"``;
                absolute URLs and ``.`` or ``..`` segments, percent-encoded
                (``%2e%2e``, ``..%2f``) or not, are refused.
            json: A JSON body; none if ``None``.
            params: Query parameters. A query written in ``path`` is sent as
                written without them; with them, the two are merged (for a key
                in both, the values in ``params`` replace those in ``path``).
            timeout: Seconds, or an ``httpx.Timeout``, for each attempt of this
                call, instead of the client's; ``None`` keeps the client's.
            extra_headers: Headers to send with this call, on top of the
                client's (a header of the same name is replaced); the rules of
                ``default_headers``, and ``Authorization`` is refused.

        Returns:
            The ``data`` of the envelope, as plain JSON values: no response comes with
            it (its rate limit is in ``client.rate_limit``).

        Raises:
            InvalidArgument: If ``method`` is not an HTTP method, ``path`` would leave
                ``base_url``, ``timeout`` is not a positive number, or ``extra_headers``
                holds a header that cannot be sent (a ``ValueError``).
            InvalidArgumentType: If ``path`` is not a string, ``params`` or ``json``
                cannot be sent, or ``timeout`` or ``extra_headers`` has the wrong type
                (a ``TypeError``).
            APIError: For an error the service reports.
            APIConnectionError: If the service cannot be reached.
        """
        options = call_options(timeout, extra_headers)
        return self._send(self._raw_call(method, path, json, params, options))

    def _send(
        self,
        call: Call[T],
        *,
        deadline: float | None = None,
        stop: threading.Event | None = None,
    ) -> T:
        # stop: translate_many's, set when the run ends (an error elsewhere, Ctrl-C); a
        # retry then is neither waited for nor made, and the last failure is raised.
        self._check_open()
        check_http_loggers()  # mask the key in http loggers made since the last call
        request = self._build_request(call)
        # tenacity decides whether and when to retry, from the first failure on: its loop
        # starts there, so a call answered at once (most) never pays for it. The waits it
        # asks for are slept here, on the SDK clock, so one loop serves both flavours.
        attempts: Iterator[tenacity.AttemptManager] | None = None
        shared = self._shared
        failed: BaseException | None = None
        number = 1
        wait = 0.0
        while True:
            if number > 1:  # a retry, after the wait asked for
                if self.is_closed:  # no wait for a retry that would be refused
                    raise_scrubbed(self._closed_in_flight(call, failed))
                if stop is None:
                    _clock.sleep(wait)
                elif stop.is_set() or _clock.wait(stop, wait):
                    assert failed is not None  # a wait comes only after a failed attempt
                    raise_scrubbed(failed)
            # Closed meanwhile (this client, or the one it was copied from): no attempt, no
            # new connection, and no retry of this error. Past the client's limit on calls
            # in flight, this waits for a turn: before the attempt, so the wait is not part
            # of its timeout. translate_many's batches (stop) do not, and take no turn: its
            # max_concurrency, the caller's choice, bounds them.
            if self._view_closed:
                raise_scrubbed(self._closed_in_flight(call, failed))
            queued = stop is None
            rtt: float | None = None
            entered = False
            try:
                # Entered inside the try, so that an interruption as it returns cannot
                # keep the slot from the calls waiting for one.
                entered = shared.enter(queue=queued)
                if not entered or self._view_closed:  # closed while the call waited
                    raise_scrubbed(self._closed_in_flight(call, failed))
                started = time.perf_counter()
                outcome = self._send_once(call, request, number, deadline, started)
                if not isinstance(outcome, Failure):
                    # Only a call's answered round trip teaches the limit: a failure may be
                    # fast (refused, a proxy's 503), a batch is not a call.
                    if queued:
                        rtt = time.perf_counter() - started
                    return outcome
            finally:
                # Closed while in flight, and the last attempt out: the pool is closed. A
                # failure to close it is not this call's, which has its outcome.
                if entered and shared.leave(rtt, slot=queued):
                    with contextlib.suppress(Exception):
                        shared.http.close()
            if attempts is None:
                attempts = iter(_retry.retrying(self.max_retries, call, deadline))
                attempt = next(attempts)  # the one just made, for tenacity to judge
            with attempt:
                raise_scrubbed(outcome.error)
            # The next attempt; or, none allowed, tenacity raises the error.
            attempt = next(attempts)
            failed = outcome.error
            number = attempt.retry_state.attempt_number
            wait = attempt.retry_state.upcoming_sleep

    def _send_once(
        self,
        call: Call[T],
        request: httpx.Request,
        attempt: int,
        deadline: float | None,
        started: float,
    ) -> T | Failure:
        # The response and its body are as the server sent them, key echoes and all, so
        # this frame returns its error for _send to raise (see raise_scrubbed). started:
        # when the attempt started (time.perf_counter()), for the log.
        try:
            # One deadline for all of the attempt: connecting, sending, headers and body.
            with self._attempt(request, deadline, call.options) as limits:
                response = self._shared.http.send(request, stream=True, follow_redirects=False)
                try:
                    body = self._read_body(response, limits)
                finally:
                    response.close()
        except (httpx.RequestError, RuntimeError) as exc:
            return Failure(self._connection_error(call, exc, attempt, started))
        return self._read_response(call, response, body, attempt, started)

    def _read_body(self, response: httpx.Response, attempt: Attempt) -> bytes:
        if response.is_stream_consumed:
            return response.content  # built in memory, and read (a mock transport)
        reader = self._body_reader(response, attempt)
        for chunk in response.iter_raw():
            if reader.feed(chunk):
                break
        return reader.body()
