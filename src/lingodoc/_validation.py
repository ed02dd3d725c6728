"""Checks of what the caller gives, before sending; a message quotes at most ~100 characters."""

from __future__ import annotations

import math
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from urllib.parse import quote, unquote

import httpx

from lingodoc._constants import MAX_TEXT_LENGTH
from lingodoc._exceptions import (
    InvalidArgument,
    InvalidArgumentType,
    InvalidLanguage,
    LingodocError,
    TextTooLong,
    shown,
)


def sendable_key(key: str) -> bool:
    """Whether ``key`` can go in a header whole: printable ASCII, no spaces."""
    return bool(key) and key.isprintable() and key.isascii() and not any(c.isspace() for c in key)


def wrong_type(argument: str, expected: str, value: object) -> InvalidArgumentType:
    """The error for ``value`` given as ``argument``, which must be ``expected`` (``a str``)."""
    return InvalidArgumentType(f"{argument} must be {expected}, not {type(value).__name__}")


def has_dot_segment(path: str, *, decoded: bool = False) -> bool:
    """Whether a segment could be ``.`` or ``..`` to a server (a backslash as ``/``, ``;x`` cut)."""
    forms = (path, unquote(path)) if decoded and "%" in path else (path,)
    return any(
        part.split(";", 1)[0] in (".", "..")
        for form in forms
        for part in form.replace("\\", "/").split("/")
    )


def language(value: object, argument: str) -> str:
    """Return the language code in lower case; ``InvalidLanguage`` unless two ASCII letters."""
    if isinstance(value, str) and len(value) == 2 and value.isascii() and value.isalpha():
        return value.lower()
    raise InvalidLanguage(
        f"{argument} must be a two-letter ISO 639-1 code such as 'en', not {shown(value)}",
        code="INVALID_LANGUAGE",
    )


def text(value: object, argument: str = "text") -> str:
    """Return ``value``; ``InvalidArgumentType`` unless a str, ``TextTooLong`` if too long."""
    if not isinstance(value, str):
        raise wrong_type(argument, "a str", value)
    if len(value) > MAX_TEXT_LENGTH:
        raise TextTooLong(
            f"{argument} has {len(value):,} characters; the limit is {MAX_TEXT_LENGTH:,}",
            code="TEXT_TOO_LONG",
        )
    return value


def texts(values: object) -> list[str]:
    """Return the batch as a list, each item checked as `text` checks one; no str, no ``[]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise wrong_type("texts", "a list of str", values)
    batch = list(values)
    if not batch:
        raise InvalidArgument("texts must not be empty")
    # Checked in C, fast over a million texts; one by one only to find the first refused.
    if not set(map(type, batch)) <= {str} or max(map(len, batch)) > MAX_TEXT_LENGTH:
        for index, item in enumerate(batch):  # a str subclass passes
            text(item, f"texts[{index}]")
    return batch


def optional(value: object, argument: str, kind: type) -> object:
    """Return ``value`` if it is ``None`` or of ``kind``, else raise ``InvalidArgumentType``."""
    if value is None or isinstance(value, kind):
        return value
    raise wrong_type(argument, f"a {kind.__name__} or None", value)


def path_segment(value: object, argument: str) -> str:
    """Return an id percent-encoded as one path segment; refuse one a server reads as a step up."""
    if not isinstance(value, str):
        error = wrong_type(argument, "a str", value)
        if isinstance(getattr(value, argument, None), str):  # a result in place of its id
            error.hint = f"pass its .{argument}"
        raise error
    if not value:
        raise InvalidArgument(f"{argument} must not be empty")
    if has_dot_segment(value):
        raise InvalidArgument(
            f"{argument} must not be '.' or '..', nor hold them between slashes, not {shown(value)}"
            ": a server would read it as a step in the path, reaching another endpoint"
        )
    try:
        return quote(value, safe="")
    except UnicodeEncodeError:  # a lone surrogate: no URL can carry it
        raise InvalidArgument(
            f"{argument} cannot be sent in a URL: {shown(value)} is not valid Unicode text"
        ) from None


# The longest wait of Python's sockets, locks and sleeps (292 years on Linux): past it, they
# raise OverflowError mid-call, so a timeout or an interval past it is refused up front.
LONGEST_WAIT = threading.TIMEOUT_MAX
_LARGEST = sys.float_info.max
_UNSET = "give seconds or an httpx.Timeout; None leaves it unset, httpx.Timeout(None) no limit"


def count(
    value: object,
    argument: str,
    *,
    least: int = 1,
    error: type[LingodocError] = InvalidArgument,
    hint: str | None = None,
) -> int:
    """Return ``value``, an int of at least ``least``; else ``error`` (no int: ...Type)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= least:
            return value
    elif error is InvalidArgument:
        error = InvalidArgumentType
    raise error(f"{argument} must be an int, {least} or more, not {shown(value)}", hint=hint)


def seconds(
    value: object,
    argument: str,
    *,
    zero: bool = False,
    most: float = _LARGEST,
    error: type[LingodocError] = InvalidArgument,
    hint: str | None = None,
) -> float:
    """Return ``value``, seconds as an int or a float, as a float; else raise ``error``.

    More than 0 (``zero``: or 0), finite or at most ``most`` (``math.inf``: an int too large
    for a float is infinite); not a number (a bool, a str) is ``InvalidArgumentType``.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (value >= 0 if zero else value > 0) and value <= most:
            return float(value) if value <= _LARGEST else math.inf
    elif error is InvalidArgument:
        error = InvalidArgumentType
    bounds = "0 or more" if zero else "more than 0"
    if most < _LARGEST:
        bounds += f" and at most {most:,.0f}"
    kind = "a number" if most == math.inf else "a finite number"
    raise error(f"{argument} must be {kind} of seconds, {bounds}, not {shown(value)}", hint=hint)


def timeout(value: object, error: type[LingodocError] = InvalidArgument) -> httpx.Timeout:
    """Return an ``httpx.Timeout``, given as one or as positive seconds; else raise ``error``."""
    if isinstance(value, httpx.Timeout):
        return value
    return httpx.Timeout(seconds(value, "timeout", most=LONGEST_WAIT, error=error, hint=_UNSET))


# RFC 9110: a name is a token, a value printable ASCII with inner blanks (a CR or LF ends it).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t]*[\x21-\x7e])*)?")
# httpx sets these from the request itself: a second, different one breaks or smuggles it.
_TRANSPORT_HEADERS = frozenset({
    "connection", "content-length", "keep-alive", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade",
})  # fmt: skip


def headers(value: object, argument: str, error: type[LingodocError]) -> httpx.Headers:
    """Return headers to send, or raise ``error`` for one that cannot or must not be sent."""
    try:
        checked = httpx.Headers(value)  # type: ignore[arg-type]  # checked below
    except (TypeError, ValueError, AttributeError) as exc:
        # A non-ASCII value (UnicodeEncodeError) is a bad value, not a wrong type.
        if error is InvalidArgument and not isinstance(exc, UnicodeEncodeError):
            error = InvalidArgumentType
        problem = str(exc)
        if isinstance(value, Mapping):  # httpx's message names no header: name it
            for name, header in value.items():
                if not isinstance(header, (str, bytes)):
                    kind = type(header).__name__
                    problem = f"the value of {shown(name)} must be a str, not {kind}"
                    break
    else:
        problem = _header_problem(checked)
        if not problem:
            return checked
    # Raised outside the except block, so that no chained context keeps httpx's frames.
    raise error(f"{argument} cannot be sent as HTTP headers: {problem}")


def _header_problem(checked: httpx.Headers) -> str:
    for raw_name, raw_value in checked.raw:
        name = raw_name.decode("ascii", "replace")
        if not _HEADER_NAME.fullmatch(name):
            return f"{name!r} is not a valid header name"
        if name.lower() in _TRANSPORT_HEADERS:
            return (
                f"{name!r} frames the body or manages the connection, which httpx does "
                "for each request; remove it"
            )
        if not _HEADER_VALUE.fullmatch(raw_value.decode("ascii", "replace")):
            return (
                f"the value of {name!r} holds a line break or another control character, "
                "or starts or ends with a space"
            )
    return ""


def relative_path(path: object) -> str:
    """Return ``path`` with a leading slash; refuse one that could leave ``base_url``."""
    if not isinstance(path, str):
        raise wrong_type("path", "a str", path)
    route = path.split("?", 1)[0]
    leaves = "://" in route or route.startswith(("//", "\\", "/\\"))
    if leaves or has_dot_segment(route, decoded=True):
        raise InvalidArgument(
            f"path must be relative to base_url, such as '/documents', not {shown(path)}: "
            "requests never leave base_url, so the API key never goes to another host"
        )
    return path if path.startswith("/") else f"/{path}"
