"""What Client and AsyncClient share: their settings, and every step of a call without I/O."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc import _clock, _config, _endpoints, _lazy, _response, _retry
from lingodoc._aiohttp import DefaultAioHttpClient
from lingodoc._constants import is_loopback
from lingodoc._endpoints import Call, ShapeError, merge_query
from lingodoc._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConfigurationError,
    InvalidArgument,
    InvalidArgumentType,
    LingodocError,
    UnexpectedResponse,
)
from lingodoc._http import HttpClientT, SharedHttp
from lingodoc._logging import configure_from_env, logger
from lingodoc._polling import Waiter
from lingodoc._redaction import KeyMask, mask, raise_scrubbed, watch_http_logs
from lingodoc._version import __version__

if TYPE_CHECKING:
    from lingodoc._models import RateLimit, TranslationJob
    from lingodoc._options import Options

T = TypeVar("T")
Self = TypeVar("Self", bound="BaseClient[Any]")

# An attempt cut short by a poll's deadline still gets this long: the poll made at the
# deadline is a last look, not a certain timeout.
MIN_ATTEMPT_TIME = 1.0

USER_AGENT = (
    f"lingodoc-python/{__version__} httpx/{httpx.__version__} "
    f"python/{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
)


class BaseClient(Generic[HttpClientT]):
    """Configuration and the I/O-free steps shared by `Client` and `AsyncClient`."""

    _http_client_type: type[HttpClientT]
    base_url: str
    """The service address, up to and including ``/v1``, without a trailing slash."""
    timeout: httpx.Timeout
    """The timeout of each attempt (``httpx.Timeout(None)``: no limit)."""
    max_retries: int
    """Extra attempts after a failure that may pass."""
    _api_key: str

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        default_headers: Mapping[str, str] | None = None,
        http_client: HttpClientT | None = None,
        allow_http_host: str | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        configure_from_env()
        key = _config.api_key(api_key)
        del api_key  # out of the locals that a traceback through __init__ may show
        if isinstance(key, ConfigurationError):
            raise_scrubbed(key)
        self._api_key = key
        del key
        checked = _config.base_url(base_url, _config.allow_http_host(allow_http_host))
        del base_url  # it may hold a password (refused, and masked in the error)
        if isinstance(checked, ConfigurationError):
            raise_scrubbed(checked)
        self.base_url = checked
        _config.http_client_kind(http_client, self._http_client_type)
        host = httpx.URL(checked).host
        if checked.startswith("http://") and not is_loopback(host):
            self._check_clear_text(host, http_client)
        self.timeout = _config.timeout(timeout, http_client)
        self.max_retries = _config.max_retries(max_retries)
        limit = _config.max_in_flight(max_in_flight)
        self._headers = _config.headers(default_headers, USER_AGENT)
        # Set last, and case-insensitively, so no default header can replace the key.
        self._headers["Authorization"] = f"Bearer {self._api_key}"
        self._key_mask = KeyMask(self._api_key)
        # No proxy of the environment for http:// (a loopback host, or the host the opt-in
        # names): it would get the key in clear text.
        self._shared: SharedHttp[HttpClientT] = SharedHttp(
            self._http_client_type, http_client, max_in_flight=limit, timeout=self.timeout,
            aiohttp=isinstance(http_client, DefaultAioHttpClient),
            trust_env=not checked.startswith("http://"),
        )  # fmt: skip
        watch_http_logs(self._key_mask)  # after the http client made its loggers
        self._view_closed = self._is_copy = False
        self._urls: dict[str, httpx.URL] = {}

    def _check_clear_text(self, host: str, http_client: HttpClientT | None) -> None:
        """For ``http://`` to the host the opt-in names: warn, and refuse a proxy (clear text)."""
        variables = _config.environment_proxy(http_client, self.base_url) if http_client else None
        if variables:
            raise ConfigurationError(
                f"base_url {self.base_url!r} uses http:// (allowed for {host!r} by "
                f"allow_http_host), but the http_client passed trusts the environment "
                f"(trust_env=True) and {variables} names a proxy, which would get the API key "
                f"in clear text. Add {host!r} to NO_PROXY, pass an http_client made with "
                "trust_env=False, or use https://"
            )
        logger.warning(
            "base_url %r uses http:// (allowed for %r by allow_http_host): the API key %s is "
            "sent in clear text to %s, readable by anyone on that network",
            self.base_url,
            host,
            mask(self._api_key),
            host,
        )

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state of the most recent response that reported one, or ``None``."""
        return self._shared.rate_limit

    @property
    def is_closed(self) -> bool:
        """Whether this client (or the client it was copied from) has been closed."""
        return self._view_closed or self._shared.closed

    def __repr__(self) -> str:
        # getattr: a traceback shown with its locals reprs a client whose __init__ failed.
        base_url, key = getattr(self, "base_url", None), getattr(self, "_api_key", "")
        shown = f"{type(self).__name__}(base_url={base_url!r}, api_key={mask(key)!r}"
        timeout: httpx.Timeout | None = getattr(self, "timeout", None)
        if timeout is not None:
            limits = {timeout.connect, timeout.read, timeout.write, timeout.pool}
            # One number for the four, else (no limit, or several) httpx's own repr.
            single = next(iter(limits)) if len(limits) == 1 else None
            shown += f", timeout={timeout if single is None else single!r}"
        if hasattr(self, "max_retries"):
            shown += f", max_retries={self.max_retries!r}"
        return shown + ")"

    def with_options(
        self: Self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Self:
        """Return a copy with other settings that shares this client's connection pool.

        Closing the copy leaves the pool open; closing the original closes both.

        Args:
            timeout: Seconds or an ``httpx.Timeout`` for each attempt
                (``httpx.Timeout(None)``: no limit); ``None`` keeps this client's.
            max_retries: Extra attempts; ``None`` keeps this client's.

        Returns:
            A client of the same class sharing this one's pool, turns and rate limit.

        Raises:
            ConfigurationError: If a setting is invalid.
        """
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        if timeout is not None:
            copy.timeout = _config.timeout(timeout, None)
        if max_retries is not None:
            copy.max_retries = _config.max_retries(max_retries)
        copy._is_copy = True
        return copy

    def _check_open(self) -> None:
        """Refuse (``LingodocError``) a closed client, another event loop, a forked pool."""
        if self.is_closed:
            raise LingodocError(
                f"this {type(self).__name__} has been closed; create a new one to send requests"
            )
        self._shared.in_this_process()
        self._shared.check_loop()

    def _closed_in_flight(self, call: Call[Any], failed: LingodocError | None) -> LingodocError:
        """The error of a call whose next attempt finds the client closed."""
        if failed is None:
            return APIConnectionError(f"{call.description} was not sent: client closed")
        error = APIConnectionError(
            f"{call.description} was not retried: client closed "
            f"(the last attempt failed with {type(failed).__name__})"
        )
        error.__cause__, error.__suppress_context__ = failed.with_traceback(None), True
        return error

    def _not_retried(
        self, call: Call[Any], error: LingodocError, failed: LingodocError | None
    ) -> LingodocError:
        """What a call ends with: ``error``, or "not retried" if the client closed first.

        That is, if ``error`` is the last attempt's failure (``failed``) and was retryable.
        """
        retryable = _retry.is_retryable(error, idempotent=call.idempotent)
        if error is failed and self.is_closed and retryable:
            return self._closed_in_flight(call, error)
        return error

    def _retrying(
        self, call: Call[Any], deadline: float | None, stop: threading.Event | None
    ) -> dict[str, Any]:
        """The retry policy's options for ``call``, stopped once the client is closed."""
        give_up = stop.is_set if stop is not None else lambda: False
        return _retry.policy(call, self.max_retries, deadline, lambda: self.is_closed or give_up())

    def _build_request(self, call: Call[Any]) -> httpx.Request:
        """The request of ``call``, or ``InvalidArgument(Type)`` if it cannot be sent.

        A caller's http client builds it (its headers, cookies and query parameters go
        too); the SDK's own, holding no cookie, needs no merging: the request is made here.
        """
        http = self._shared.http
        headers, body, params, path = self._headers, call.json, call.params, call.path
        options = call.options
        if options is not None:
            if options.headers is not None:
                headers = httpx.Headers(headers)
                headers.update(options.headers)
            if options.body is not None and isinstance(body, dict):
                body = {**body, **options.body}
            if options.query is not None:
                params = httpx.QueryParams(params).merge(options.query) if params else options.query
        if http.params and "?" in path:
            # httpx replaces a URL's query with the merged parameters: keep it among them.
            path, params = merge_query(path, params or {})
        own = self._shared.new_http is not None and not http.cookies
        build: Callable[..., httpx.Request] = httpx.Request if own else http.build_request
        try:
            return build(call.method, self._url(path), json=body, params=params, headers=headers)
        except httpx.InvalidURL as exc:
            error: type[LingodocError] = InvalidArgument
            problem = f"is not a valid request path: {exc}"
        except TypeError as exc:
            error, problem = InvalidArgumentType, f"cannot be sent: {exc}"
        except ValueError as exc:  # such as a lone surrogate in a text, NaN in a JSON body
            error, problem = InvalidArgument, f"cannot be sent: {exc}"
        raise error(f"{call.description} {problem}")

    def _attempt_timeout(
        self, call: Call[Any], request: httpx.Request, deadline: float | None
    ) -> tuple[float | None, str]:
        """Set the timeouts of an attempt on ``request``; return its seconds and what they are.

        An attempt gets the largest of its timeouts in all (the call's own, else the
        client's), and no more than the time left before the caller's ``deadline`` (a
        poll's), but at least ``MIN_ATTEMPT_TIME``; ``None``: no limit.
        """
        options = call.options
        timeout = options.timeout if options is not None and options.timeout else self.timeout
        steps = timeout.as_dict()
        values = [value for value in steps.values() if value is not None]
        seconds = max(values) if len(values) == len(steps) else None
        what = f"the timeout of the attempt ({seconds:g} s)" if seconds is not None else ""
        if deadline is not None:
            left = max(deadline - _clock.current().monotonic(), MIN_ATTEMPT_TIME)
            if seconds is None or left < seconds:
                seconds, what = left, f"the {round(left, 2):g} s left before the wait's deadline"
        if seconds is not None:
            steps = {step: seconds if v is None or v > seconds else v for step, v in steps.items()}
        request.extensions["timeout"] = steps
        return seconds, what

    def _connection_error(
        self, call: Call[Any], exc: Exception, number: int, started: float, expired: str
    ) -> LingodocError:
        """The error for a failure of the http client, chained to a copy without the request.

        ``exc``: httpx's, ``TimeoutError`` (the attempt's deadline) or ``RuntimeError`` (a
        closed http client, another event loop); ``expired``: the deadline, if it passed.
        """
        self._log(call, type(exc).__name__, number, started)
        detail = self._key_mask(str(exc)) or type(exc).__name__
        if expired:
            detail = f"the response took longer than {expired}"
        error: LingodocError
        if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
            error = APITimeoutError(f"{call.description} timed out: {detail}")
        elif isinstance(exc, RuntimeError):
            error = self._runtime_error(call, detail)
        else:
            error = APIConnectionError(f"{call.description} failed: {detail}")
        # The httpx exception holds the request, and so the Authorization header: chain a
        # copy of the same type and message without it. The attempt's deadline, passed
        # (TimeoutError of anyio.fail_after), reads as httpx's: the request may have gone.
        kind = httpx.ReadTimeout if type(exc) is TimeoutError else type(exc)
        try:
            cause: BaseException = kind(detail)
        except TypeError:
            cause = RuntimeError(f"{type(exc).__name__}: {detail}")
        error.__cause__, error.__suppress_context__ = cause, True
        return error

    def _runtime_error(self, call: Call[Any], detail: str) -> LingodocError:
        """The error for a RuntimeError of a caller's http client: closed, or of another loop."""
        passed = f"the http_client passed to {type(self).__name__}"
        if self._shared.http.is_closed:  # never the SDK's own while an attempt is in flight
            detail = f"{passed} has been closed"
        elif "loop" in detail:  # "Event loop is closed", "... attached to a different loop"
            detail += (
                f": {passed} holds connections of another event loop; create it inside the "
                "loop that uses it"
            )
        return LingodocError(f"{call.description} could not be sent: {detail}")

    def _read_response(
        self,
        call: Call[T],
        response: httpx.Response,
        reader: _response.BodyReader,
        number: int,
        started: float,
    ) -> T | LingodocError:
        """The result of a response, or its error: returned, as this frame holds the body."""
        status_code, headers = response.status_code, response.headers
        self._log(call, status_code, number, started)
        now = _clock.current().time()
        rate_limit = _lazy.parse_rate_limit(headers, now)
        if rate_limit is not None:
            self._shared.rate_limit = rate_limit
        request_id = headers.get("x-request-id")
        if request_id is not None:  # masked: servers echo headers too
            request_id = self._key_mask(request_id)
        fields = {"status_code": status_code, "rate_limit": rate_limit, "request_id": request_id}
        body = reader.body()
        if len(body) > _response.MAX_BODY_BYTES:
            return UnexpectedResponse(
                f"the response body is larger than {_response.MAX_BODY_BYTES:,} bytes", **fields
            )
        try:
            data = _response.unwrap(
                status_code, headers, body, rate_limit, request_id, now=now, redact=self._key_mask
            )
        except APIError as exc:
            return exc
        try:
            origin = _lazy.Origin(rate_limit, request_id, _kept(response, reader))
            return call.parse(data, origin)
        except ShapeError as exc:
            shape_error = exc
        return UnexpectedResponse(
            self._key_mask(str(shape_error)),
            body=_response.excerpt(json.dumps(shape_error.data, default=str), self._key_mask),
            **fields,
        )

    def _waiter(
        self, job_or_id: TranslationJob | str, options: Options | None, **settings: Any
    ) -> Waiter:
        """The rules of one ``wait_for_translation`` (``settings``: `Waiter`'s)."""
        if isinstance(job_or_id, _lazy.TranslationJob):
            job_or_id = job_or_id.translation_id
        return Waiter(
            _endpoints.get_translation(job_or_id, options),
            redact=self._key_mask,
            awaits=self._shared.is_async,
            **settings,
        )

    def _url(self, path: str) -> httpx.URL:
        """The URL of ``path``: parsing one costs more than the rest of building a request."""
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= 64:  # polling many translation ids: keep a few
                self._urls.clear()
            url = self._urls[path] = httpx.URL(self.base_url + path)
        return url

    def _log(self, call: Call[Any], outcome: object, number: int, started: float) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s -> %s in %.1f ms (attempt %d)",
                call.description,
                outcome,
                (time.perf_counter() - started) * 1000,
                number,
            )


def _kept(response: httpx.Response, reader: _response.BodyReader) -> Callable[[], httpx.Response]:
    """What makes the ``http_response`` of a result: the body read, and no connection."""
    if reader.in_memory:  # built in memory and read (a mock transport's): as it is
        return lambda: response
    status_code, headers, raw, request, elapsed = (
        response.status_code, response.headers, reader.raw_body(), response.request,
        response.elapsed,
    )  # fmt: skip
    extensions = {k: v for k, v in response.extensions.items() if k != "network_stream"}

    def make() -> httpx.Response:
        kept = httpx.Response(status_code, headers=headers, content=raw, request=request)
        kept.extensions, kept.elapsed = extensions, elapsed
        return kept

    return make
