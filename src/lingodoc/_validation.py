"""Checks of what the caller gives, made before anything is sent.

Each refusal is a typed error whose message names the argument and quotes at most about
100 characters of what was given, never a header's value (it may be a secret).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Sequence
from urllib.parse import quote, unquote

import httpx

from lingodoc._constants import MAX_TEXT_LENGTH
from lingodoc._exceptions import (
    InvalidArgument,
    InvalidArgumentType,
    InvalidLanguage,
    LingodocError,
    TextTooLong,
)

# Messages quote at most this many characters of what they were given, so a
# megabyte-long id does not become a megabyte-long exception (or log line).
QUOTE_LIMIT = 100


def sendable_key(key: str) -> bool:
    """Whether ``key`` can go in an ``Authorization`` header whole: printable ASCII, no spaces."""
    return bool(key) and key.isprintable() and key.isascii() and not any(c.isspace() for c in key)


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Return ``text``, or its first ``limit`` characters, ``...`` and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def shown(value: object) -> str:
    """Return ``repr(value)`` for a message, cut to about 100 characters.

    Every message that quotes an argument, or something the server sent, quotes
    it through this function.
    """
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return f"{value[:QUOTE_LIMIT]!r}... ({len(value):,} characters)"
    try:
        text = repr(value)
    except Exception:  # an int past sys.get_int_max_str_digits(), a broken __repr__
        return f"<{type(value).__name__} too long to show>"
    return cut(text)


def has_dot_segment(path: str, *, decoded: bool = False) -> bool:
    """Whether a server could read ``path`` as stepping up (``..``) or staying (``.``).

    A segment counts if it is ``.`` or ``..``, with a backslash read as ``/`` (as
    some servers do) and a ``;parameter`` stripped (as Java servers do).

    Args:
        path: The path, or an id that will be one segment.
        decoded: Check it once percent-decoded too: ``%2e%2e`` is ``..``, and
            ``%2f`` or ``%5c`` make new segments, for a server that decodes
            before it normalises.
    """
    forms = (path, unquote(path)) if decoded and "%" in path else (path,)
    return any(
        part.split(";", 1)[0] in (".", "..")
        for form in forms
        for part in form.replace("\\", "/").split("/")
    )


def language(value: object, argument: str) -> str:
    """Return the language code folded to lower case.

    Raises:
        InvalidLanguage: If ``value`` is not two ASCII letters. Whether a
            well-formed code is supported is the server's call.
    """
    if isinstance(value, str) and len(value) == 2 and value.isascii() and value.isalpha():
        return value.lower()
    raise InvalidLanguage(
        f"{argument} must be a two-letter ISO 639-1 code such as 'en', not {shown(value)}",
        code="INVALID_LANGUAGE",
    )


def text(value: object) -> str:
    """Return ``value`` if it is a text the service can take.

    Raises:
        InvalidArgumentType: If it is not a string.
        TextTooLong: If it has more than 10,000 characters.
    """
    if not isinstance(value, str):
        raise InvalidArgumentType(f"text must be a str, not {type(value).__name__}")
    if len(value) > MAX_TEXT_LENGTH:
        raise TextTooLong(
            f"text has {len(value):,} characters; the limit is {MAX_TEXT_LENGTH:,}",
            code="TEXT_TOO_LONG",
        )
    return value


def texts(values: object) -> list[str]:
    """Return the batch as a list of strings, each checked, so that nothing is sent for a bad one.

    Errors name the item by its index in ``values``.

    Raises:
        InvalidArgumentType: If it is a single string or holds anything but strings.
        InvalidArgument: If it is empty.
        TextTooLong: If an item has more than 10,000 characters.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InvalidArgumentType(f"texts must be a list of str, not {type(values).__name__}")
    batch = list(values)
    if not batch:
        raise InvalidArgument("texts must not be empty")
    # The loops run in C, once over a million texts; the slow search for the index
    # only runs when one of them fails.
    if not set(map(type, batch)) <= {str}:
        for index, item in enumerate(batch):
            if not isinstance(item, str):
                raise InvalidArgumentType(
                    f"texts[{index}] must be a str, not {type(item).__name__}"
                )
    if max(map(len, batch)) > MAX_TEXT_LENGTH:
        for index, item in enumerate(batch):
            if len(item) > MAX_TEXT_LENGTH:
                raise TextTooLong(
                    f"texts[{index}] has {len(item):,} characters; the limit is "
                    f"{MAX_TEXT_LENGTH:,}",
                    code="TEXT_TOO_LONG",
                )
    return batch


def optional(value: object, argument: str, kind: type) -> object:
    """Return ``value`` if it is ``None`` or of ``kind``.

    Raises:
        InvalidArgumentType: Otherwise.
    """
    if value is None or isinstance(value, kind):
        return value
    raise InvalidArgumentType(
        f"{argument} must be a {kind.__name__} or None, not {type(value).__name__}"
    )


def path_segment(value: object, argument: str) -> str:
    """Return an id escaped for use as one path segment.

    ``/``, ``?``, ``#``, ``%`` and every other character that is not
    unreserved are percent-encoded.

    Raises:
        InvalidArgumentType: If it is not a string.
        InvalidArgument: If it is empty, or is ``.`` or ``..``, or has such a part
            between slashes or backslashes (``a/../b``): escaped or not, a
            server that decodes the path first would read it as a step up.
    """
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{argument} must be a str, not {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{argument} must not be empty")
    if has_dot_segment(value):
        raise InvalidArgument(
            f"{argument} must not be '.' or '..', nor hold them between slashes, not "
            f"{shown(value)}: a server would read it as a step in the path, reaching "
            "another endpoint"
        )
    try:
        return quote(value, safe="")
    except UnicodeEncodeError:  # a lone surrogate: no URL can carry it
        raise InvalidArgument(
            f"{argument} cannot be sent in a URL: {shown(value)} is not valid Unicode text"
        ) from None


def positive_int(value: object, argument: str) -> int:
    """Return ``value`` if it is an int of at least 1.

    Raises:
        InvalidArgumentType: If it is not an int (``bool`` included).
        InvalidArgument: If it is below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{argument} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidArgument(f"{argument} must be at least 1, not {shown(value)}")
    return value


def is_number(value: object) -> bool:
    """Whether ``value`` is an int or a float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_float(value: object) -> float:
    """``value`` as a float: NaN if it is not a number, infinite if too large for one."""
    if not is_number(value):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]  # a number
    except OverflowError:  # an int past the largest float
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def timeout(value: object, error: type[LingodocError] = InvalidArgument) -> httpx.Timeout:
    """Return a timeout given as a positive number of seconds, or an ``httpx.Timeout``.

    Raises:
        LingodocError: ``error`` if it is not a positive finite number (a call's own
            timeout of the wrong type is an ``InvalidArgumentType``).
    """
    if isinstance(value, httpx.Timeout):
        return value
    seconds = as_float(value)
    if math.isfinite(seconds) and seconds > 0:
        return httpx.Timeout(seconds)
    if error is InvalidArgument and not is_number(value):
        error = InvalidArgumentType
    raise error(
        "timeout must be a positive number of seconds or an httpx.Timeout, "
        f"not {shown(value)} (None leaves it unset; for no limit at all pass "
        "httpx.Timeout(None))"
    )


# RFC 9110: a header name is a token. A value here is printable ASCII, with inner spaces or
# tabs only (a CR or LF would end the header and start another).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t]*[\x21-\x7e])*)?")
# Headers that frame the body or manage the connection: httpx and httpcore set them from
# the request itself, and a second, different one breaks or smuggles a request.
_TRANSPORT_HEADERS = frozenset(
    {
        "connection",
        "content-length",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def headers(value: object, argument: str, error: type[LingodocError]) -> httpx.Headers:
    """Return headers to send with every request (``default_headers``) or one call.

    Raises:
        LingodocError: ``error`` (or ``InvalidArgumentType`` for a call's headers of the
            wrong type) if one cannot be sent, or would frame the body or manage the
            connection; the message never quotes a value.
    """
    problem: str | None
    try:
        checked = httpx.Headers(value)  # type: ignore[arg-type]  # checked below
    except (TypeError, ValueError, AttributeError) as exc:
        # UnicodeEncodeError is a ValueError: header values must be ASCII.
        if error is InvalidArgument and not isinstance(exc, UnicodeEncodeError):
            error = InvalidArgumentType
        problem = str(exc)
    else:
        problem = _header_problem(checked)
        if problem is None:
            return checked
    # Raised outside the except block, so that no chained context keeps httpx's frames.
    raise error(f"{argument} cannot be sent as HTTP headers: {problem}")


def _header_problem(checked: httpx.Headers) -> str | None:
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
    return None


def relative_path(path: object) -> str:
    """Return ``path`` with a leading slash if it stays under ``base_url``.

    Refused: an absolute URL, a path starting ``//`` or with a backslash, and a path with
    a ``.`` or ``..`` segment as written or once percent-decoded (``%2e%2e``, ``.%2E``, or
    ``..`` between a ``%2f`` or ``%5c``): a server or proxy that decodes before
    normalising would read it as a step up.

    Raises:
        InvalidArgumentType: If it is not a string.
        InvalidArgument: If it would leave ``base_url``.
    """
    if not isinstance(path, str):
        raise InvalidArgumentType(f"path must be a str, not {type(path).__name__}")
    route = path.split("?", 1)[0]
    if (
        "://" in route
        or route.startswith(("//", "\\", "/\\"))
        or has_dot_segment(route, decoded=True)
    ):
        raise InvalidArgument(
            f"path must be relative to base_url, such as '/documents', not {shown(path)}: "
            "requests never leave base_url, so the API key never goes to another host"
        )
    return path if path.startswith("/") else f"/{path}"


def callback(on_progress: object, *, awaits: bool) -> None:
    """Check an ``on_progress``: callable, and no ``async def`` unless the client awaits it.

    Raises:
        InvalidArgumentType: If it is not callable, or is a coroutine function (or an
            object whose ``__call__`` is one) and the client is ``Client``.
    """
    if on_progress is None:
        return
    if not callable(on_progress):
        raise InvalidArgumentType("on_progress must be callable")
    call = getattr(on_progress, "__call__", None)  # noqa: B004  # an object's async __call__
    if not awaits and (
        inspect.iscoroutinefunction(on_progress) or inspect.iscoroutinefunction(call)
    ):
        raise InvalidArgumentType(
            "on_progress is a coroutine function (async def), which Client cannot await: "
            "pass a plain function, or use AsyncClient"
        )


def not_awaitable(result: object) -> None:
    """Refuse what a ``Client``'s ``on_progress`` returned if it must be awaited.

    Raises:
        InvalidArgumentType: If it is a coroutine (closed here, so it is never left
            un-awaited).
    """
    if inspect.iscoroutine(result):
        result.close()
        raise InvalidArgumentType(
            "on_progress returned a coroutine, which Client cannot await: "
            "pass a plain function, or use AsyncClient"
        )
