"""A call's own options (``timeout=``, ``extra_headers=``, ``extra_query=``, ``extra_body=``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from lingodoc import _validation
from lingodoc._exceptions import InvalidArgument, InvalidArgumentType, cut

# A query value's types (or a list of them): httpx would send anything else as its str().
_QUERY_VALUE_TYPES = (str, int, float, bool, type(None))


@dataclass(slots=True, kw_only=True, eq=False, repr=False)  # a repr would show header values
class Options:
    """A call's own options, checked; one object may serve many requests (batches, polls)."""

    timeout: httpx.Timeout | None = None
    headers: httpx.Headers | None = None
    query: httpx.QueryParams | None = None
    body: dict[str, Any] | None = None


def call_options(
    timeout: object = None,
    extra_headers: object = None,
    extra_query: object = None,
    extra_body: object = None,
) -> Options | None:
    """Check a call's own options; ``None`` if none is set."""
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
    # Authorization is refused, not silently replaced as in default_headers: a mistake here.
    _mapping(extra_headers, "extra_headers", "header names")
    headers = _validation.headers(extra_headers, "extra_headers", InvalidArgument)
    if "authorization" in headers:
        raise InvalidArgument(
            "extra_headers cannot be sent as HTTP headers: it cannot replace "
            "'Authorization', which carries the client's API key"
        )
    return headers


def _extra_query(extra_query: object) -> httpx.QueryParams:
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
    body = dict(_mapping(extra_body, "extra_body", "JSON field names"))  # a copy
    for name in body:
        if not isinstance(name, str):
            raise _validation.wrong_type("extra_body's field names", "str", name)
    try:
        json.dumps(body, allow_nan=False)  # as httpx encodes a body
        return body
    except (TypeError, ValueError, RecursionError) as exc:
        problem = str(exc)
    raise InvalidArgumentType(f"extra_body cannot be sent as JSON: {cut(problem)}")
