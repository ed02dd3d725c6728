"""A call's own options: ``timeout=``, ``extra_headers=``, ``extra_query=``, ``extra_body=``.

`call_options` checks them before anything is sent; ``None`` when none is set (most calls).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from lingodoc import _validation
from lingodoc._exceptions import InvalidArgument, InvalidArgumentType

# What a query value may be (or a list or tuple of): httpx sends anything else as its str().
_QUERY_VALUE_TYPES = (str, int, float, bool, type(None))


@dataclass(slots=True, kw_only=True, eq=False, repr=False)  # a repr would show header values
class Options:
    """A call's own options, already checked (one object may serve many requests).

    Args:
        timeout: The timeout of each attempt, instead of the client's.
        headers: Headers sent on top of the client's (``Authorization`` excluded).
        query: Query parameters added to the request's.
        body: JSON fields merged into the body, over those the SDK sets.
    """

    timeout: httpx.Timeout | None = None
    headers: httpx.Headers | None = None
    query: httpx.QueryParams | None = None
    body: dict[str, Any] | None = None

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

    ``InvalidArgumentType`` for an option of the wrong type or an ``extra_body`` not JSON;
    ``InvalidArgument`` for a ``timeout`` not positive, or a header the SDK refuses.
    """
    if timeout is None and extra_headers is None and extra_query is None and extra_body is None:
        return None
    return Options(
        timeout=None if timeout is None else _validation.timeout(timeout),
        headers=None if extra_headers is None else _extra_headers(extra_headers),
        query=None if extra_query is None else _extra_query(extra_query),
        body=None if extra_body is None else _extra_body(extra_body),
    )


def _mapping(value: object, argument: str, names: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise _validation.wrong_type(argument, f"a mapping of {names} to values", value)
    return value


def _extra_headers(extra_headers: object) -> httpx.Headers:
    """``extra_headers=``, checked as ``default_headers`` are, and refusing ``Authorization``.

    (Not silently replaced, as in ``default_headers``: a call that asks for it is a mistake.)
    """
    _mapping(extra_headers, "extra_headers", "header names")
    headers = _validation.headers(extra_headers, "extra_headers", InvalidArgument)
    if "authorization" in headers:
        raise InvalidArgument(
            "extra_headers cannot be sent as HTTP headers: it cannot replace "
            "'Authorization', which carries the client's API key"
        )
    return headers


def _extra_query(extra_query: object) -> httpx.QueryParams:
    """``extra_query=``: names are str; values str, int, float, bool or None, or lists of them."""
    query = _mapping(extra_query, "extra_query", "parameter names")
    for name, value in query.items():
        if not isinstance(name, str):
            raise _validation.wrong_type("extra_query's parameter names", "str", name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        bad = next((v for v in values if not isinstance(v, _QUERY_VALUE_TYPES)), None)
        if bad is not None:
            raise InvalidArgumentType(
                f"extra_query[{name!r}] cannot be sent as a query parameter: a value must be "
                f"a str, int, float, bool or None, or a list of them, not {type(bad).__name__}"
            )
    return httpx.QueryParams(query)


def _extra_body(extra_body: object) -> dict[str, Any]:
    """``extra_body=``: a copy, checked to be sendable as httpx will send it."""
    body = dict(_mapping(extra_body, "extra_body", "JSON field names"))
    name = next((name for name in body if not isinstance(name, str)), None)
    if name is not None:
        raise _validation.wrong_type("extra_body's field names", "str", name)
    try:
        json.dumps(body, allow_nan=False)  # as httpx encodes a body
    except (TypeError, ValueError, RecursionError) as exc:
        problem = str(exc)
    else:
        return body
    raise InvalidArgumentType(f"extra_body cannot be sent as JSON: {_validation.cut(problem)}")
