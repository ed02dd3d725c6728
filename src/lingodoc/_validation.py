"""Checks made before a request is sent, to save a round trip for a certain refusal."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from lingodoc._constants import MAX_TEXT_LENGTH
from lingodoc._exceptions import InvalidLanguage, TextTooLong


def language(value: object, argument: str) -> str:
    """Return the language code folded to lower case.

    Raises:
        InvalidLanguage: If ``value`` is not two ASCII letters. Whether a
            well-formed code is supported is the server's call.
    """
    if isinstance(value, str) and len(value) == 2 and value.isascii() and value.isalpha():
        return value.lower()
    raise InvalidLanguage(
        f"{argument} must be a two-letter ISO 639-1 code such as 'en', not {value!r}",
        code="INVALID_LANGUAGE",
    )


def text(value: object) -> str:
    """Return ``value`` if it is a text the service can take.

    Raises:
        TypeError: If it is not a string.
        TextTooLong: If it has more than 10,000 characters.
    """
    if not isinstance(value, str):
        raise TypeError(f"text must be a str, not {type(value).__name__}")
    if len(value) > MAX_TEXT_LENGTH:
        raise TextTooLong(
            f"text has {len(value):,} characters; the limit is {MAX_TEXT_LENGTH:,}",
            code="TEXT_TOO_LONG",
        )
    return value


def texts(values: object) -> list[str]:
    """Return the batch as a list of strings.

    Raises:
        TypeError: If it is a single string or holds anything but strings.
        ValueError: If it is empty.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"texts must be a list of str, not {type(values).__name__}")
    batch = list(values)
    if not batch:
        raise ValueError("texts must not be empty")
    for index, item in enumerate(batch):
        if not isinstance(item, str):
            raise TypeError(f"texts[{index}] must be a str, not {type(item).__name__}")
    return batch


def optional(value: object, argument: str, kind: type) -> object:
    """Return ``value`` if it is ``None`` or of ``kind``.

    Raises:
        TypeError: Otherwise.
    """
    if value is None or isinstance(value, kind):
        return value
    raise TypeError(f"{argument} must be a {kind.__name__} or None, not {type(value).__name__}")


def path_segment(value: object, argument: str) -> str:
    """Return an id escaped for use as one path segment.

    ``/``, ``?``, ``#`` and ``%`` are percent-encoded, and so are the dots of
    ``.`` and ``..``, which URL normalisation would otherwise turn into a
    different path.

    Raises:
        TypeError: If it is not a string.
        ValueError: If it is empty.
    """
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{argument} must not be empty")
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def positive_int(value: object, argument: str) -> int:
    """Return ``value`` if it is an int of at least 1.

    Raises:
        TypeError: If it is not an int (``bool`` included).
        ValueError: If it is below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{argument} must be at least 1, not {value}")
    return value
