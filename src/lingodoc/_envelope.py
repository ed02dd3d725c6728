"""Reading a response: the envelope, the error it may hold, and its headers.

The service answers ``{"success": true, "data": ...}`` or
``{"success": false, "error": {"code": ..., "message": ...}}``. This module is
the one place that turns a response into either its ``data`` or the
exception it stands for. (``_call.body_reader`` reads the plain success case of
``translate`` and ``translate_batch`` straight into a result, and leaves every other
body to this module; ``tests/test_hostile_responses.py`` reads odd bodies both ways.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lingodoc import _lazy
from lingodoc._exceptions import APIError, RateLimited, UnexpectedResponse, error_class

if TYPE_CHECKING:
    from lingodoc._models import RateLimitHeaders

BODY_EXCERPT_CHARS = 500


def unwrap(
    status_code: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    rate_limit: RateLimitHeaders | None,
    now: float,
    redact: Callable[[str], str],
) -> Any:
    """Return the ``data`` of a success envelope (``None`` for a bodiless 204).

    Raises:
        APIError: The subclass the error code, else the status, stands for; a
            429 is always ``RateLimited``, whatever its body.
        UnexpectedResponse: If the body is not the envelope.
    """
    if status_code == 204 and not body:
        return None
    envelope = _decode(body)
    # The common case first, with nothing built for the others.
    if type(envelope) is dict and envelope.get("success") is True and 200 <= status_code < 300:
        data = envelope.get("data")
        if data is not None:
            return data
    fields: dict[str, Any] = {
        "status_code": status_code,
        "rate_limit": None if rate_limit is None else rate_limit.model(),
        "request_id": request_id(headers, redact),
    }
    is_2xx = 200 <= status_code < 300
    code = None
    if envelope is _NOT_JSON:
        problem = "the response body is not JSON"
    elif not isinstance(envelope, dict) or not isinstance(envelope.get("success"), bool):
        problem = "the response body is not the service's envelope"
    elif envelope["success"]:
        if is_2xx and envelope.get("data") is not None:
            return envelope["data"]
        problem = "the success envelope " + ("holds no data" if is_2xx else "has an error status")
    elif not isinstance(error := envelope.get("error"), dict):
        problem = "the failure envelope holds no error object"
    else:
        code = error.get("code") if isinstance(error.get("code"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
        cls = error_class(code, status_code)
        # The class follows the code as sent; what the error keeps is masked, as a
        # server may echo the key in any field.
        code = None if code is None else redact(code)
        if cls is not APIError or not is_2xx:
            retry_after = _retry_after(headers, now, cls)
            raise cls(
                redact(message or "no message given"), code=code, retry_after=retry_after, **fields
            )
        problem = f"a failure envelope came with status {status_code}"

    # Raised here, outside any except block, so no chained exception keeps the raw body.
    if status_code == 429:
        # The spec does not show the 429 body; whatever it is, it means "slow down".
        retry_after = _retry_after(headers, now, RateLimited)
        raise RateLimited(problem, code=code, retry_after=retry_after, **fields)
    raise UnexpectedResponse(
        problem,
        code=code,
        body=excerpt(body[: BODY_EXCERPT_CHARS * 32].decode("utf-8", "replace"), redact),
        retry_after=_retry_after(headers, now, UnexpectedResponse),
        **fields,
    )


_NOT_JSON = object()


# What json.loads uses when given no options.
_DECODER = json.JSONDecoder()


def _decode(body: bytes) -> Any:
    try:
        if body[:1] == b"{" and body[1:2] != b"\x00":
            # What json.loads(body) does, without its look at the first bytes for a BOM
            # or UTF-16/32 (a third of the time on a small body): starting with "{" and
            # no NUL after it, json.detect_encoding says UTF-8.
            return _DECODER.decode(body.decode("utf-8", "surrogatepass"))
        return json.loads(body)
    except (ValueError, RecursionError):
        return _NOT_JSON


def request_id(headers: Mapping[str, str], redact: Callable[[str], str]) -> str | None:
    """Return the ``X-Request-Id`` for an error, with the key masked: servers echo headers too."""
    value = headers.get("x-request-id")
    return None if value is None else redact(value)


def excerpt(text: str, redact: Callable[[str], str]) -> str:
    """Return the start of a body for an error, with the key masked before it is cut."""
    # Masking first: a key cut in two by the excerpt would no longer be found.
    return redact(text[: BODY_EXCERPT_CHARS * 8])[:BODY_EXCERPT_CHARS]


def _retry_after(headers: Mapping[str, str], now: float, cls: type[APIError]) -> float | None:
    """Seconds the response asks to wait: ``Retry-After``, else (429 only) the reset."""
    value = headers.get("retry-after")
    if value is not None:
        seconds = _seconds(value, now)
        if seconds is not None:
            return seconds
    if cls is RateLimited:
        try:
            # The raw header, not RateLimit.reset_at: that is rounded to the
            # microsecond, and a wait a hair short of the reset is refused again.
            return _lazy.reset_delay(int(headers["x-ratelimit-reset"]), now)
        except (KeyError, ValueError, OverflowError):  # OverflowError: beyond any float
            pass
    return None


def _seconds(retry_after: str, now: float) -> float | None:
    """Read ``Retry-After`` (seconds or an HTTP date); ``None`` if it is neither or not finite."""
    try:
        seconds = float(retry_after)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(retry_after).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
