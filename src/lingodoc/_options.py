"""A call's own options: ``timeout=``, ``extra_headers=``, ``extra_query=``, ``extra_body=``.

`call_options` checks them once, before anything is sent, and returns ``None`` when none is
set (the common case), so the request path only tests for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from lingodoc import _validation
from lingodoc._exceptions import InvalidArgument, InvalidArgumentType

# What a query parameter's value may be (or a list or tuple of): httpx writes anything
# else as its str(), such as "{'a': 1}" for a dict, which no service means to read.
_QUERY_VALUE_TYPES = (str, int, float, bool, type(None))


class Options:
    """A call's own options, already checked. One object may serve many requests.

    Args:
        timeout: The timeout of each attempt, instead of the client's.
        headers: Headers sent on top of the client's (``Authorization`` excluded).
        query: Query parameters added to the request's.
        body: JSON fields merged into the body, over those the SDK sets.
    """

    __slots__ = ("body", "headers", "query", "timeout")

    def __init__(
        self,
        *,
        timeout: httpx.Timeout | None = None,
        headers: httpx.Headers | None = None,
        query: httpx.QueryParams | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        self.timeout = timeout
        self.headers = headers
        self.query = query
        self.body = body

    def merge_params(self, params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``params`` with the query parameters added (replacing those of the same name)."""
        if self.query is None:
            return params
        return httpx.QueryParams(params).merge(self.query) if params else self.query

    def merge_body(self, body: Any) -> Any:
        """The body the SDK built (a dict) with the extra fields merged over it."""
        if self.body is None or not isinstance(body, dict):
            return body
        return {**body, **self.body}


def call_options(
    timeout: object = None,
    extra_headers: object = None,
    extra_query: object = None,
    extra_body: object = None,
) -> Options | None:
    """Check a call's own options; ``None`` if none is set.

    Raises:
        InvalidArgumentType: If an option has the wrong type, or ``extra_body`` cannot be
            sent as JSON.
        InvalidArgument: If ``timeout`` is not a positive number, or ``extra_headers``
            holds a header the SDK refuses.
    """
    if timeout is None and extra_headers is None and extra_query is None and extra_body is None:
        return None
    return Options(
        timeout=None if timeout is None else _validation.timeout(timeout),
        headers=None if extra_headers is None else _extra_headers(extra_headers),
        query=None if extra_query is None else _extra_query(extra_query),
        body=None if extra_body is None else _extra_body(extra_body),
    )


def _extra_headers(extra_headers: object) -> httpx.Headers:
    """``extra_headers=``, checked as ``default_headers`` are.

    ``Authorization`` is refused, not silently replaced (as it is in ``default_headers``):
    a call that asks for its own is a mistake to say at once.
    """
    if not isinstance(extra_headers, Mapping):
        raise InvalidArgumentType(
            f"extra_headers must be a mapping of header names to values, "
            f"not {type(extra_headers).__name__}"
        )
    headers = _validation.headers(extra_headers, "extra_headers", InvalidArgument)
    if "authorization" in headers:
        raise InvalidArgument(
            "extra_headers cannot be sent as HTTP headers: it cannot replace "
            "'Authorization', which carries the client's API key"
        )
    return headers


def _extra_query(extra_query: object) -> httpx.QueryParams:
    """``extra_query=``: names are str; values str, int, float, bool or None, or lists of them."""
    if not isinstance(extra_query, Mapping):
        raise InvalidArgumentType(
            f"extra_query must be a mapping of parameter names to values, "
            f"not {type(extra_query).__name__}"
        )
    for name, value in extra_query.items():
        if not isinstance(name, str):
            raise InvalidArgumentType(
                f"extra_query's parameter names must be str, not {type(name).__name__}"
            )
        values = value if isinstance(value, (list, tuple)) else (value,)
        bad = next((v for v in values if not isinstance(v, _QUERY_VALUE_TYPES)), None)
        if bad is not None:
            raise InvalidArgumentType(
                f"extra_query[{name!r}] cannot be sent as a query parameter: a value must be "
                f"a str, int, float, bool or None, or a list of them, not {type(bad).__name__}"
            )
    return httpx.QueryParams(extra_query)


def _extra_body(extra_body: object) -> dict[str, Any]:
    """``extra_body=``: a copy, checked to be sendable as httpx will send it."""
    if not isinstance(extra_body, Mapping):
        raise InvalidArgumentType(
            f"extra_body must be a mapping of JSON field names to values, "
            f"not {type(extra_body).__name__}"
        )
    body = dict(extra_body)
    name = next((name for name in body if not isinstance(name, str)), None)
    if name is not None:
        raise InvalidArgumentType(
            f"extra_body's field names must be str, not {type(name).__name__}"
        )
    try:
        json.dumps(body, allow_nan=False)  # as httpx encodes a body
    except (TypeError, ValueError, RecursionError) as exc:
        problem = str(exc)
    else:
        return body
    raise InvalidArgumentType(f"extra_body cannot be sent as JSON: {_validation.cut(problem)}")
