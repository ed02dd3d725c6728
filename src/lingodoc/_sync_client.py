"""[`Client`][lingodoc.Client], generated from ``_async_client.py``: do not edit.

Edit ``_async_client.py`` and run ``python scripts/unasync.py``; CI checks
that this file is current.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx

from lingodoc import _bulk, _cache, _callbacks, _clock, _endpoints, _lazy, _tracing, _workers
from lingodoc._base_client import BaseClient
from lingodoc._exceptions import APIConnectionError, APIError, LingodocError, RateLimited
from lingodoc._options import call_options
from lingodoc._polling import Waiter
from lingodoc._redaction import raise_scrubbed
from lingodoc._sync_send import Sending

if TYPE_CHECKING:
    from lingodoc._bulk import BulkProgress
    from lingodoc._endpoints import Call
    from lingodoc._models import (
        BatchTranslation,
        Document,
        TextTranslation,
        TranslationJob,
        TranslationStatus,
    )

T = TypeVar("T")
ClientT = TypeVar("ClientT", bound="Client")


# BaseClient named again after the send loop's class: the API reference's generator (griffe)
# finds the constructor's parameters, for the Args below, only in a base named here.
class Client(Sending, BaseClient[httpx.Client]):
    """A blocking client for the lingodoc service.

    Safe to share between threads.
    Use it in a `with` block, or call [`close`][lingodoc.Client.close],
    to release its connections.

    Every method that sends also takes the call's own options, keyword-only: ``timeout``
    (for each attempt; on ``wait_for_translation``, the whole wait), ``extra_headers`` (over
    the client's, never ``Authorization``), ``extra_query`` and, with a body, ``extra_body``
    (JSON fields merged over the SDK's). See "Per-call options" in the configuration guide.

    Every method that sends also raises ``InvalidArgumentType`` or ``InvalidArgument`` for a
    bad argument or option (before sending), ``APIError`` (a subclass for each status) for
    an error the service reports, and ``APIConnectionError`` if it cannot be reached.

    Args:
        api_key: The API key; defaults to the ``LINGODOC_API_KEY`` environment variable.
        base_url: The service address up to and including ``/v1``; defaults to
            ``LINGODOC_BASE_URL``. ``https://`` unless the host is loopback or named by
            ``allow_http_host``; no user name or password.
        timeout: Seconds, or an ``httpx.Timeout``, for each attempt (``httpx.Timeout(None)``
            for no limit); ``None``: the ``http_client``'s if its creator set one, else 30 s.
        max_retries: Extra attempts after a failure that may pass; 0 disables retries.
        default_headers: Headers for every request. They cannot replace ``Authorization``,
            frame the body or manage the connection (``Content-Length``, ``Connection``...).
        http_client: An ``httpx.Client`` to send through (proxies, custom
            transports), which stays the caller's: the SDK never closes it.
        allow_http_host: A host, such as a docker-compose service (``"emulator"``), that an
            ``http://`` ``base_url`` may name; defaults to ``LINGODOC_ALLOW_HTTP_HOST``. The
            key goes there in clear text (warned), never through the environment's proxy.
        max_in_flight: The most calls sent at once (with the ``with_options`` copies); past
            it, a call waits for its turn, outside its ``timeout``. ``None``: 16 (the pool's).
            Calls on the main thread take no turn: they have a connection of their
            own, which Ctrl-C cannot leave half-taken for the other threads.
        cache: A translation cache ([`SQLiteCache`][lingodoc.SQLiteCache], or your own
            [`Cache`][lingodoc.Cache]) that ``translate``, ``translate_batch`` and
            ``translate_many`` consult: a text found is not sent. ``None``: no cache.

    Raises:
        ConfigurationError: If the key or the base URL is missing or unusable, another
            setting is invalid, or a proxy or certificate variable cannot be used.
    """

    _http_client_type = httpx.Client

    def __enter__(self: ClientT) -> ClientT:
        self._gate()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and its connections (unless the ``http_client`` was passed in).

        A copy made by [`with_options`][lingodoc.Client.with_options] closes only
        itself. Safe while other threads are sending: later calls are refused, calls in
        flight are not retried, and a connection in use is closed when its request ends.
        """
        if self._view_closed:
            return
        close_http = not self._is_copy and self._shared.close()  # a copy closes only itself
        self._view_closed = True
        if close_http:
            self._shared.owned.close()

    def translate(
        self,
        text: str,
        *,
        source_language: str,
        target_language: str,
        style: str | None = None,
        cache: bool = True,
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
            cache: Whether the client's cache is consulted (``False``: sent, not stored).
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).
            extra_query: This call's own (see the class).
            extra_body: This call's own (see the class).

        Returns:
            The translation; ``.cached`` if it came from the client's cache.

        Raises:
            TextTooLong: If the text exceeds 10,000 characters.
            InvalidLanguage: If a code is malformed or not supported.
            LingodocError: As every method (see the class).
        """
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        call = _endpoints.translate(text, source_language, target_language, style, options)
        texts = [call.json["text"]]
        with _tracing.call("translate", call.json, texts):
            return self._translate(call, texts, cache)

    def translate_batch(
        self,
        texts: Sequence[str],
        *,
        source_language: str,
        target_language: str,
        cache: bool = True,
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
            cache: Whether the client's cache is consulted (``False``: sent, not stored).
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).
            extra_query: This call's own (see the class).
            extra_body: This call's own (see the class).

        Returns:
            The translations, one per text, in input order. With a cache, only the texts
            it misses are sent: ``.cache_hits`` counts those found; ``.cached``, whether all were.

        Raises:
            TextTooLong: If a text has more than 10,000 characters.
            InvalidLanguage: If a code is malformed or not supported.
            LingodocError: As every method (see the class).
        """
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        call = _endpoints.translate_batch(texts, source_language, target_language, options)
        with _tracing.call("translate_batch", call.json, call.json["texts"]):
            return self._translate(call, call.json["texts"], cache)

    def _translate(self, call: Call[T], texts: list[str], use: object) -> T:
        """Send ``call``; with the client's cache (``use``: ``cache=``), only the texts missed."""
        cache_keys = self._cache_keys(call, use)
        if cache_keys is None:
            return self._send(call)
        self._gate()
        cache, keys = cache_keys
        keyed = [keys(text) for text in texts]
        consulted = _cache.Consulted(call, texts, keyed, cache.look_up(keyed))
        result = None if consulted.call is None else self._send(consulted.call)
        if result is not None:
            cache.keep(consulted.entries(result))
        return cast("T", consulted.result(result))

    def translate_many(
        self,
        texts: Sequence[str],
        *,
        source_language: str,
        target_language: str,
        batch_size: int = 100,  # the emulator's limit, _constants.MAX_BATCH_ITEMS
        max_concurrency: int = 4,
        wait_for_rate_limit: bool | float = False,
        on_progress: Callable[[BulkProgress], object] | None = None,
        done: MutableMapping[int, str] | None = None,
        cache: bool = True,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Translate any number of texts in as few requests as the service allows, keeping all work.

        Every text is checked before the first request. Each distinct text is sent once, a
        blank one not at all, each batch with the usual retries; when the rate-limit window
        runs short, it waits for the reset.

        The first error stops it: no further batch is started, a wait for a reset ends at
        once, the batches in flight are finished (with their retries) and kept, and that
        first error is raised. Ctrl-C stops it the same way, and raises
        KeyboardInterrupt once the batches in flight are kept.
        No thread is left running when it returns or raises. Nothing finished is lost: the
        error's ``.partial`` (a [`PartialTranslations`][lingodoc.PartialTranslations]) holds
        the translations done; pass ``done=err.partial.translations`` to resume.

        Args:
            texts: The texts, a non-empty list of strings.
            source_language: ISO 639-1 code of the texts.
            target_language: ISO 639-1 code to translate into.
            batch_size: Texts per request (100: what the emulator accepts).
            max_concurrency: Requests in flight at most.
            wait_for_rate_limit: How long to wait for a window to reset: ``False`` up to
                60 s, as the retries do; ``True`` as long as the service says; or seconds.
            on_progress: Called with a [`BulkProgress`][lingodoc.BulkProgress] before the
                first request, after each batch and as a wait for a reset begins, in the
                calling thread, one call at a time; a coroutine function is refused
                (``TypeError``).
            done: Translations you already have, by index in ``texts`` (not sent); each
                translation made is added to it as its batch is answered.
            cache: Whether the client's cache is consulted first, only its misses sent; the
                translations are stored 1,000 at a time, and at the end however it ends.
            timeout: Each batch request's own, for each attempt (see the class).
            extra_headers: Each batch request's own (see the class).
            extra_query: Each batch request's own (see the class).
            extra_body: Each batch request's own (see the class).

        Returns:
            The translations, one per text, in input order.

        Raises:
            TextTooLong: If a text has more than 10,000 characters.
            InvalidLanguage: If a code is malformed or not supported.
            RateLimited: If the window is spent and resets later than allowed.
            LingodocError: As every method (see the class).
        """
        self._gate()
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        bulk = _bulk.Bulk(
            texts, source_language, target_language, batch_size=batch_size,
            max_concurrency=max_concurrency, wait_for_rate_limit=wait_for_rate_limit,
            on_progress=on_progress, done=done, options=options, rate_limit=self.rate_limit,
            awaits=self._shared.is_async,
        )  # fmt: skip
        with _tracing.call("translate_many", bulk.template.json, texts):
            cache_keys = self._cache_keys(bulk.template, cache)
            if cache_keys is not None:
                store, keys = cache_keys
                for uids, keyed in bulk.look_ups(store, keys):
                    bulk.found(uids, keyed, store.look_up(keyed))
            _workers.run_workers(self._bulk_worker, bulk)
            return bulk.result()

    def _bulk_worker(self, bulk: _bulk.Bulk) -> None:
        try:
            while (step := bulk.next()) is not None:
                if isinstance(step, float):  # the rate-limit reset (a stop ends the wait)
                    _clock.wait(bulk.stopping, step)
                    continue
                try:
                    result = self._send(step.call, stop=bulk.stopping)
                except Exception as exc:
                    bulk.failed(step, exc)  # the run's error, or sent again after the reset
                    continue
                bulk.done(step, result)
                _workers.hand_over(bulk)
        except Exception as exc:  # not a batch's: a worker thread's would be lost unraised
            bulk.stop(exc)
        finally:
            bulk.events.put_nowait(_bulk.EXITED)

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

        Pass the job to [`wait_for_translation`][lingodoc.Client.wait_for_translation].
        Not retried where the service may already have started the job.

        Args:
            document_id: The document's id (not empty, ``.`` or ``..``).
            target_language: ISO 639-1 code to translate into.
            style: A style such as ``"formal"``.
            use_translation_memory: Whether the service uses stored translation memory;
                the service's default if ``None``.
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).
            extra_query: This call's own (see the class).
            extra_body: This call's own (see the class).

        Returns:
            The started job (state ``processing``).

        Raises:
            NotFound: If there is no such document.
            UnexpectedResponse: If the answer is not a job, or a job on another document.
            InvalidLanguage: If the code is malformed or not supported.
            LingodocError: As every method (see the class).
        """
        options = call_options(timeout, extra_headers, extra_query, extra_body)
        call = _endpoints.translate_document(
            document_id, target_language, style, use_translation_memory, options
        )
        with _tracing.call("translate_document", call.json):
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
            translation_id: The job's id (not empty, ``.`` or ``..``), from
                [`translate_document`][lingodoc.Client.translate_document].
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).
            extra_query: This call's own (see the class).

        Returns:
            Its state and progress.

        Raises:
            NotFound: If there is no such translation.
            UnexpectedResponse: If the answer is not a status, or that of another one.
            LingodocError: As every method (see the class).
        """
        options = call_options(timeout, extra_headers, extra_query)
        call = _endpoints.get_translation(translation_id, options)
        with _tracing.call("get_translation"):
            return self._send(call)

    def wait_for_translation(
        self,
        job_or_id: TranslationJob | str,
        *,
        poll_interval: float = 5.0,
        timeout: float | None = 600.0,
        on_progress: Callable[[TranslationStatus], object] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
    ) -> TranslationStatus:
        """Poll a document translation until it completes, for ``timeout`` seconds in all.

        A 429 is waited out until the reset, even with ``max_retries=0``; with a
        ``timeout``, so is a 5xx or network failure, until the deadline. Ctrl-C
        stops the polling at once; the translation goes on on the service.

        Args:
            job_or_id: The job from
                [`translate_document`][lingodoc.Client.translate_document], or its id.
            poll_interval: Seconds between polls.
            timeout: Seconds to wait in all (ten minutes, so that a forgotten limit cannot
                hold a worker for good; ``None``: no limit). Each poll has the client's timeout
                cut to the time left; for another, wait on ``client.with_options(timeout=10)``.
            on_progress: Called with each status read, after every poll; a coroutine
                function is refused with ``TypeError`` before the first poll.
            extra_headers: Each poll's own (see the class).
            extra_query: Each poll's own (see the class).

        Returns:
            The completed status.

        Raises:
            TranslationFailed: If it failed, or stayed in states this version of the SDK
                does not know for 3 polls in a row; ``.status`` holds the last.
            WaitTimeout: If ``timeout`` passed first; ``.status`` holds the last state.
            UnexpectedResponse: If a status read is that of another translation.
            LingodocError: As every method (see the class).
        """
        if isinstance(job_or_id, _lazy.TranslationJob):
            job_or_id = job_or_id.translation_id
        waiter = Waiter(
            _endpoints.get_translation(job_or_id, call_options(None, extra_headers, extra_query)),
            poll_interval=poll_interval,
            timeout=timeout,
            on_progress=on_progress,
            redact=self._key_mask,
            awaits=self._shared.is_async,
        )
        with _tracing.call("wait_for_translation"):
            try:
                return self._poll(waiter)
            except LingodocError as exc:
                # Without the frames below: they hold the statuses as sent (key echoes too).
                raise_scrubbed(exc)

    def _poll(self, waiter: Waiter) -> TranslationStatus:
        while True:
            delay: float | None
            try:
                status = self._send(waiter.call, deadline=waiter.deadline)
            except RateLimited as exc:
                delay = waiter.after_rate_limit(exc.retry_after)
            except (APIError, APIConnectionError) as exc:
                if self.is_closed:  # its retries were refused by the gate: nor is it ridden out
                    raise
                delay = waiter.after_failure(exc)
            else:
                _callbacks.report(waiter.on_progress, status)
                if (delay := waiter.after_status(status)) is None:
                    return status
            _clock.current().sleep(delay)

    def list_documents(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        """List the stored documents.

        Args:
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).
            extra_query: This call's own (see the class).

        Returns:
            The documents, each with at least a ``document_id``.

        Raises:
            LingodocError: As every method (see the class).
        """
        call = _endpoints.list_documents(call_options(timeout, extra_headers, extra_query))
        with _tracing.call("list_documents"):
            return self._send(call)

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

        As the other methods (authentication, envelope, errors, retries, rate limits); only
        GET, HEAD, OPTIONS, PUT and DELETE are retried after a failure the server may have acted on.

        Args:
            method: The HTTP method, such as ``"GET"``.
            path: A path relative to ``base_url``, such as ``"/documents/doc_1"``; absolute
                URLs and ``.`` or ``..`` segments, percent-encoded or not, are refused.
            json: A JSON body; none if ``None``.
            params: Query parameters, merged with a query written in ``path`` (these win).
            timeout: This call's own, for each attempt (see the class).
            extra_headers: This call's own (see the class).

        Returns:
            The ``data`` of the envelope, as plain JSON values.

        Raises:
            LingodocError: As every method (see the class).
        """
        call = _endpoints.raw(method, path, json, params, call_options(timeout, extra_headers))
        with _tracing.call("request"):
            return self._send(call)
