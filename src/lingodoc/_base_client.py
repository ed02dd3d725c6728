"""What Client and AsyncClient share: their settings, and every step of a call without I/O."""

from __future__ import annotations

import functools
import json as _json
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc import _aiohttp, _cache, _clock, _config
from lingodoc._aiohttp import DefaultAioHttpClient
from lingodoc._constants import SLOW_ANSWER, is_loopback
from lingodoc._endpoints import Call, merge_query
from lingodoc._environment import transport_maker
from lingodoc._exceptions import (
    APIConnectionError,
    APITimeoutError,
    ConfigurationError,
    InvalidArgument,
    InvalidArgumentType,
    LingodocError,
)
from lingodoc._http import HttpClientT, SharedHttp
from lingodoc._logging import configure_from_env, logger
from lingodoc._redaction import KeyMask, mask, raise_scrubbed, watch_http_logs
from lingodoc._version import __version__

if TYPE_CHECKING:
    from lingodoc._cache import AsyncCache, Cache, CacheUse, Keys
    from lingodoc._models import RateLimit

Self = TypeVar("Self", bound="BaseClient[Any]")

# A poll's attempt at its deadline still gets this long: a last look, not a certain timeout.
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
    # The timeouts of an attempt (an httpx.Timeout, and what _attempt_timeout made of it).
    _steps: tuple[httpx.Timeout, Mapping[str, float | None], float | None, str] | None
    # A caller's http client's headers as last seen, and the SDK's over them (plain, JSON).
    _merged_headers: tuple[list[tuple[bytes, bytes]], httpx.Headers, httpx.Headers] | None

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
        cache: Cache | AsyncCache | None = None,
    ) -> None:
        configure_from_env()
        settings = _config.credentials(api_key, base_url, allow_http_host)
        # Out of the locals a traceback may show (base_url may hold a password, masked in errors).
        del api_key, base_url
        if isinstance(settings, ConfigurationError):
            raise_scrubbed(settings)
        self._api_key, self.base_url = settings
        del settings
        _config.http_client_kind(http_client, self._http_client_type)
        url = httpx.URL(self.base_url)
        host = url.host
        clear_text = self.base_url.startswith("http://")
        aiohttp = isinstance(http_client, DefaultAioHttpClient)
        if clear_text and not is_loopback(host):
            self._check_clear_text(host, None if aiohttp else http_client)
        self.timeout = _config.timeout(timeout, http_client)
        self.max_retries = _config.max_retries(max_retries)
        limit = _config.max_in_flight(max_in_flight)
        self._headers = _config.headers(default_headers, USER_AGENT)
        # Set last, and case-insensitively, so no default header can replace the key.
        self._headers["Authorization"] = f"Bearer {self._api_key}"
        # With the Host, and a JSON body's type, that httpx would add: _new_request copies them.
        self._request_headers = httpx.Headers(self._headers)
        self._request_headers.setdefault("Host", url.netloc.decode("ascii"))
        self._json_headers = _with_json_type(self._request_headers)
        self._steps = self._merged_headers = None
        self._key_mask = KeyMask(self._api_key)
        # No proxy of the environment for http://: it would get the key in clear text.
        new_transport = direct = None
        if http_client is None:
            is_async = self._http_client_type is httpx.AsyncClient
            new_transport = transport_maker(is_async, self.base_url, trust_env=not clear_text)
        elif aiohttp:
            direct = _aiohttp.hand_over(http_client, proxy_allowed=not clear_text)  # type: ignore[arg-type]
        self._shared: SharedHttp[HttpClientT] = SharedHttp(
            self._http_client_type, http_client, new_transport=new_transport, direct=direct,
            aiohttp=aiohttp, max_in_flight=limit,
        )  # fmt: skip
        self._destination, self._unreachable_hint = _config.destination(
            self.base_url, http_client, aiohttp=aiohttp
        )
        watch_http_logs(self._key_mask)  # after the http client made its loggers
        self._view_closed = self._is_copy = False
        self._cache = self._use_cache(cache)
        self._service = _cache.service_of(self.base_url)  # in each cache key

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
        reported = self._shared.rate_limit
        return None if reported is None else reported.value

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

    def __reduce__(self) -> Any:
        # Pickled for a process pool (a bound method in functools.partial), or deep-copied.
        raise TypeError(
            f"a lingodoc.{type(self).__name__} cannot be pickled or copied: it holds this "
            "process's connections. Make one in each process (a pool's initializer), or a "
            "copy with with_options()"
        )

    def with_options(
        self: Self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
        cache: Cache | AsyncCache | bool | None = None,
    ) -> Self:
        """Return a copy with other settings that shares this client's connection pool.

        Closing the copy leaves the pool open; closing the original closes both.

        Args:
            timeout: Seconds or an ``httpx.Timeout`` for each attempt
                (``httpx.Timeout(None)``: no limit); ``None`` keeps this client's.
            max_retries: Extra attempts; ``None`` keeps this client's.
            cache: Another cache; ``False``: none; ``None`` keeps this client's.

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
        if cache is not None:
            copy._cache = self._use_cache(None if cache is False else cache)
        copy._is_copy = True
        return copy

    def _use_cache(self, cache: object) -> CacheUse | None:
        """The client's use of ``cache`` (``ConfigurationError`` if it is not one)."""
        return None if cache is None else _cache.CacheUse(cache, awaits=self._shared.is_async)

    def _cache_keys(self, call: Call[Any], use: object) -> tuple[CacheUse, Keys] | None:
        """The cache and the keys of ``call``'s texts, if it consults one (``use``: ``cache=``)."""
        if not _cache.check_use(use) or self._cache is None:
            return None
        http = self._shared.http
        # A caller's http client adds its query parameters to each request (_build_request).
        params = http.params if http is not None and self._shared.transport is None else None
        keys = _cache.keys_of(self._service, call, params)
        return None if keys is None else (self._cache, keys)

    def _gate(
        self,
        call: Call[Any] | None = None,
        failed: LingodocError | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        """The one place that decides whether a call goes on; raises the error if not.

        ``failed``: a retry's last error, raised again once ``stop`` is set.
        """
        if self.is_closed:
            if call is None:
                raise LingodocError(
                    f"this {type(self).__name__} has been closed; create a new one to send requests"
                )
            if failed is None:
                raise APIConnectionError(
                    f"{call.description} was not sent: client closed", request_sent=False
                )
            raise APIConnectionError(
                f"{call.description} was not retried: client closed "
                f"(the last attempt failed with {type(failed).__name__})",
                request_sent=not isinstance(failed, APIConnectionError) or failed.request_sent,
            ) from failed.with_traceback(None)
        if failed is not None and stop is not None and stop.is_set():
            raise failed.with_traceback(None)
        if call is None:  # as a call starts: its turns belong to this process and loop
            self._shared.in_this_process()
            self._shared.check_loop()

    def _build_request(self, call: Call[Any]) -> httpx.Request:
        """The request of ``call``, with a caller's http client's headers, cookies and query."""
        http = self._shared.http
        body, params, path, options = call.json, call.params, call.path, call.options
        if options is not None:
            if options.body is not None and isinstance(body, dict):
                body = {**body, **options.body}
            if options.query is not None:
                params = httpx.QueryParams(params).merge(options.query) if params else options.query
        build: Callable[..., httpx.Request] = _new_request
        headers = self._request_headers if body is None else self._json_headers
        if http is not None and self._shared.transport is None:
            if http.cookies or http.params:
                headers, build = self._headers, http.build_request
            else:
                headers = self._with_headers_of(http, json=body is not None)
        if options is not None and options.headers is not None:
            headers = httpx.Headers(headers)
            headers.update(options.headers)
        if http is not None and http.params and "?" in path:
            # httpx replaces a URL's query with the merged parameters: keep it among them.
            path, params = merge_query(path, params or {})
        try:
            url = _url(self.base_url, path)
            return build(call.method, url, json=body, params=params, headers=headers)
        except httpx.InvalidURL as exc:
            error: type[LingodocError] = InvalidArgument
            problem = f"is not a valid request path: {exc}"
        except TypeError as exc:
            error, problem = InvalidArgumentType, f"cannot be sent: {exc}"
        except ValueError as exc:  # such as a lone surrogate in a text, NaN in a JSON body
            error, problem = InvalidArgument, f"cannot be sent: {exc}"
        except RecursionError:
            error, problem = InvalidArgumentType, "cannot be sent: its JSON is nested too deeply"
        raise error(f"{call.description} {problem}")

    def _with_headers_of(self, http: HttpClientT, *, json: bool) -> httpx.Headers:
        """The SDK's headers over ``http``'s (merged again if they changed); ``json``: typed."""
        theirs = http.headers.raw
        merged = self._merged_headers
        if merged is None or merged[0] != theirs:
            headers = httpx.Headers(http.headers)
            headers.update(self._request_headers)
            self._merged_headers = merged = (theirs, headers, _with_json_type(headers))
        return merged[2] if json else merged[1]

    def _attempt_timeout(
        self, call: Call[Any], request: httpx.Request, deadline: float | None
    ) -> tuple[float | None, str]:
        """Set the timeouts of an attempt on ``request``; return its seconds and what they are."""
        options = call.options
        timeout = options.timeout if options is not None and options.timeout else self.timeout
        cached = self._steps
        if deadline is None and cached is not None and cached[0] is timeout:
            _, steps, seconds, what = cached
        else:
            steps = timeout.as_dict()
            values = [value for value in steps.values() if value is not None]
            seconds = max(values) if len(values) == len(steps) else None
            what = f"the timeout of the attempt ({seconds:g} s)" if seconds is not None else ""
            if deadline is not None:
                left = max(deadline - _clock.current().monotonic(), MIN_ATTEMPT_TIME)
                if seconds is None or left < seconds:
                    seconds = left
                    what = f"the {round(left, 2):g} s left before the wait's deadline"
                    steps = {s: left if v is None or v > left else v for s, v in steps.items()}
            steps = MappingProxyType(steps)  # read by the transports, changed by none
            if deadline is None and timeout is self.timeout:
                self._steps = (timeout, steps, seconds, what)
        # One mapping for many requests, read only. aiohttp would time each read with it too:
        # none ({}: httpx-aiohttp's None for each step), the attempt's deadline cancels it.
        request.extensions["timeout"] = steps if self._shared.pooled else {}
        return seconds, what

    def _connection_error(
        self, call: Call[Any], exc: Exception, number: int, began: float, expired: str
    ) -> LingodocError:
        """The error for a failure of the http client, chained to a copy without the request."""
        detail = self._key_mask(str(exc)) or type(exc).__name__
        if expired:
            detail = f"the response took longer than {expired}"
        # Nothing left this machine: no connection was made, or none was free in time.
        sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
        after = ""
        if number > 1:
            after = f" after {number} attempts over {_clock.current().monotonic() - began:.1f} s"
        error: LingodocError
        to = f"{call.description} to {self._destination}"
        if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
            # ConnectTimeout: is the service there? PoolTimeout: the calls in flight, not it.
            hint: str | None = SLOW_ANSWER
            if isinstance(exc, httpx.ConnectTimeout):
                hint = self._unreachable_hint
            elif isinstance(exc, httpx.PoolTimeout):
                hint = None
            message = f"{to} timed out{after}: {detail}"
            error = APITimeoutError(message, request_sent=sent, hint=hint)
        elif isinstance(exc, RuntimeError):  # a caller's http client: closed, or another loop's
            passed = f"the http_client passed to {type(self).__name__}"
            http = self._shared.http
            if http is not None and http.is_closed:  # never the SDK's own while in flight
                detail = f"{passed} has been closed"
            elif "loop" in detail:  # "Event loop is closed", "... attached to a different loop"
                detail += (
                    f": {passed} holds connections of another event loop; create it inside "
                    "the loop that uses it"
                )
            error = LingodocError(f"{call.description} could not be sent: {detail}")
        elif isinstance(exc, httpx.ConnectError):
            error = APIConnectionError(
                f"{call.description} failed{after}: cannot connect to {self._destination} "
                f"({detail})",
                request_sent=sent,
                hint=self._unreachable_hint,
            )
        else:
            error = APIConnectionError(f"{to} failed{after}: {detail}", request_sent=sent)
        # The httpx exception holds the request, and so the Authorization header: chain a
        # copy of the same type and message without it. The attempt's deadline, passed
        # (TimeoutError of its cancel scope), reads as httpx's: the request may have gone.
        kind = httpx.ReadTimeout if type(exc) is TimeoutError else type(exc)
        try:
            cause: BaseException = kind(detail)
        except TypeError:
            cause = RuntimeError(f"{type(exc).__name__}: {detail}")
        error.__cause__, error.__suppress_context__ = cause, True
        return error

    def _log(self, call: Call[Any], outcome: object, number: int, started: float) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s -> %s in %.1f ms (attempt %d)",
                call.description,
                outcome,
                (time.perf_counter() - started) * 1000,
                number,
            )


@functools.lru_cache(maxsize=64)  # polling many translation ids: keep a few
def _url(base_url: str, path: str) -> httpx.URL:
    """The URL of ``path``: parsing one costs more than the rest of building a request."""
    return httpx.URL(base_url + path)


# As httpx encodes a JSON body; one encoder, not one per json.dumps call.
_JSON = _json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _new_request(
    method: str,
    url: httpx.URL,
    *,
    json: Any,
    params: httpx.QueryParams | Mapping[str, Any] | None,
    headers: httpx.Headers,
) -> httpx.Request:
    """The request ``httpx.Request(..., json=...)`` makes, its headers copied from ``headers``."""
    content = b"" if json is None else _JSON.encode(json).encode("utf-8")
    # httpx.Request copies the headers: the Content-Length goes into its copy.
    request = httpx.Request(
        method, url, params=params, headers=headers, stream=httpx.ByteStream(content)
    )
    if json is not None or method in ("POST", "PUT", "PATCH"):
        request.headers["Content-Length"] = str(len(content))
    request.read()  # as httpx does for a body in memory: request.content is there
    return request


def _with_json_type(headers: httpx.Headers) -> httpx.Headers:
    """``headers`` with the type of a JSON body, unless they have one (as httpx adds it)."""
    typed = httpx.Headers(headers)
    typed.setdefault("Content-Type", "application/json")
    return typed
