"""Checks made before a request is sent, to save a round trip for a certain refusal."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, unquote

from lingodoc._constants import MAX_TEXT_LENGTH
from lingodoc._exceptions import (
    InvalidArgument,
    InvalidArgumentType,
    InvalidLanguage,
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
