"""Reading a response: the envelope, the error it may hold, and its headers.

The service answers ``{"success": true, "data": ...}`` or
``{"success": false, "error": {"code": ..., "message": ...}}``. This module is
the one place that turns a response into either its ``data`` or the
exception it stands for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from lingodoc._exceptions import APIError, RateLimited, UnexpectedResponse, error_class
from lingodoc._models import RateLimit

BODY_EXCERPT_CHARS = 500


def unwrap(
    status_code: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    rate_limit: RateLimit | None,
    now: float,
    redact: Callable[[str], str],
) -> Any:
    """Return the ``data`` of a success envelope.

    Raises:
        APIError: The subclass the error code, else the status, stands for.
        UnexpectedResponse: If the body is not the envelope.
    """
    fields: dict[str, Any] = {
        "status_code": status_code,
        "rate_limit": rate_limit,
        "request_id": headers.get("x-request-id"),
    }
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError):
        envelope = None
    success = envelope.get("success") if isinstance(envelope, dict) else None
    is_2xx = 200 <= status_code < 300

    if success is True and is_2xx and envelope.get("data") is not None:
        return envelope["data"]

    error = envelope.get("error") if success is False else None
    if isinstance(error, dict):
        code = error.get("code") if isinstance(error.get("code"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
        cls = error_class(code, status_code)
        if cls is not APIError or not is_2xx:
            fields["retry_after"] = _retry_after(headers, rate_limit, now, cls)
            raise cls(redact(message or "no message given"), code=code, **fields)

    raise UnexpectedResponse(
        redact(_describe(envelope, success, is_2xx)),
        body=redact(body[: BODY_EXCERPT_CHARS * 4].decode("utf-8", "replace")[:BODY_EXCERPT_CHARS]),
        retry_after=_retry_after(headers, rate_limit, now, UnexpectedResponse),
        **fields,
    )


def _describe(envelope: Any, success: Any, is_2xx: bool) -> str:
    if envelope is None:
        return "the response body is not JSON"
    if success is True and not is_2xx:
        return "a success envelope came with an error status"
    if success is True:
        return "the success envelope holds no data"
    if success is False:
        return "the failure envelope holds no error object"
    return "the response body is not the service's envelope"


def _retry_after(
    headers: Mapping[str, str], rate_limit: RateLimit | None, now: float, cls: type[APIError]
) -> float | None:
    """Seconds the response asks to wait: ``Retry-After``, else (429 only) the reset."""
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    if cls is RateLimited and rate_limit is not None:
        return rate_limit.seconds_until_reset(now)
    return None
