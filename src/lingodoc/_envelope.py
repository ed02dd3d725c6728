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
from lingodoc._models import RateLimit, reset_delay

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
        return _unexpected("the response body is not JSON", body, fields, headers, now, redact)
    if not isinstance(envelope, dict) or not isinstance(envelope.get("success"), bool):
        return _unexpected(
            "the response body is not the service's envelope", body, fields, headers, now, redact
        )
    is_2xx = 200 <= status_code < 300

    if envelope["success"]:
        if is_2xx and envelope.get("data") is not None:
            return envelope["data"]
        problem = "holds no data" if is_2xx else "came with an error status"
        return _unexpected(f"the success envelope {problem}", body, fields, headers, now, redact)

    error = envelope.get("error")
    if not isinstance(error, dict):
        return _unexpected(
            "the failure envelope holds no error object", body, fields, headers, now, redact
        )
    code = error.get("code") if isinstance(error.get("code"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    cls = error_class(code, status_code)
    if cls is APIError and is_2xx:
        fields["code"] = code
        return _unexpected(
            f"a failure envelope came with status {status_code}", body, fields, headers, now, redact
        )
    fields["retry_after"] = _retry_after(headers, rate_limit, now, cls)
    raise cls(redact(message or "no message given"), code=code, **fields)


def excerpt(text: str, redact: Callable[[str], str]) -> str:
    """Return the start of a body for an error, with the key masked before it is cut."""
    # Masking first: a key cut in two by the excerpt would no longer be found.
    return redact(text[: BODY_EXCERPT_CHARS * 8])[:BODY_EXCERPT_CHARS]


def _unexpected(
    problem: str,
    body: bytes,
    fields: dict[str, Any],
    headers: Mapping[str, str],
    now: float,
    redact: Callable[[str], str],
) -> Any:
    raise UnexpectedResponse(
        problem,
        body=excerpt(body[: BODY_EXCERPT_CHARS * 32].decode("utf-8", "replace"), redact),
        retry_after=_retry_after(headers, fields["rate_limit"], now, UnexpectedResponse),
        **fields,
    )


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
        # From the raw header: reset_at is rounded to the microsecond, and a
        # wait a hair short of the reset would be refused again.
        return reset_delay(rate_limit.reset, now)
    return None
