"""Masking the API key wherever a server may echo it back, in the SDK's messages and logs.

One `KeyMask` per key; `watch_http_logs` applies every live client's to httpx's loggers too.
"""

from __future__ import annotations

import logging
import string
import threading
import weakref
from typing import NoReturn
from urllib.parse import quote

# A run of this many characters of the key is masked: servers echo keys truncated too.
WINDOW = 8
GRAM = WINDOW // 2

# The backslash escapes an echo may show the key with: as sent, slashes escaped, JSON (with
# slashes escaped too, as PHP does), repr of a str or bytes quoted with ' and quoted with ".
_ESCAPES = ("", "/", '\\"', '\\"/', "\\'", "\\")
# ASCII letters only (the key is ASCII): a Unicode fold may change the length of a text.
_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def mask(api_key: str) -> str:
    """Return the key as the SDK shows it: its last 4 characters, none if shorter than 12."""
    return f"****{api_key[-4:]}" if len(api_key) >= 12 else "****"


def mask_password(text: str) -> str:
    """``text`` with a URL password masked: from the first ``:`` past ``://`` to the last ``@``."""
    start = text.find("://") + 3 if "://" in text else 0
    at = text.rfind("@")
    if at < start or ":" not in text[start:at]:
        return text
    return f"{text[:start]}{text[start:at].split(':', 1)[0]}:****{text[at:]}"


class KeyMask:
    """Masks one key: any ``WINDOW`` characters of it in a row, in any case, as sent or escaped.

    Escaped means URL-quoted or backslash-escaped as ``_ESCAPES`` lists, so a key holding
    quotes or backslashes is masked in JSON and in ``repr`` of a str or bytes (h11's errors).
    """

    __slots__ = ("__weakref__", "_grams", "_key", "_replacement", "_windows")

    def __init__(self, api_key: str) -> None:
        self._key = api_key
        self._replacement = mask(api_key)
        escaped = ("".join(f"\\{c}" if c in e else c for c in api_key) for e in _ESCAPES)
        forms = {quote(api_key, safe=""), *escaped}
        folded = {form.translate(_FOLD) for form in forms}  # as __call__ compares texts
        self._windows = frozenset(
            form[start : start + WINDOW]
            for form in folded
            for start in range(len(form) - WINDOW + 1)
        )
        # Any window holds one of these at a position that is a multiple of GRAM in the
        # text: a text with none there holds no window (most texts, found in a few steps).
        self._grams = frozenset(
            form[start : start + GRAM] for form in folded for start in range(len(form))
        )

    def __repr__(self) -> str:
        return f"KeyMask({self._replacement!r})"

    def __call__(self, text: str) -> str:
        """Return ``text`` with every echo of the key masked, whatever the case of its letters."""
        if len(self._key) < WINDOW:
            return text.replace(self._key, self._replacement) if text and self._key else text
        if len(text) < WINDOW:  # too short to hold a window (a request id, say)
            return text
        folded = text.lower()  # fast; to ASCII it folds only A-Z and the Kelvin sign (to k)
        if len(folded) != len(text):  # a letter became two ("İ"): positions would shift
            folded = text.translate(_FOLD)
        grams = self._grams
        if not any(folded[at : at + GRAM] in grams for at in range(0, len(folded), GRAM)):
            return text
        pieces: list[str] = []
        done = -1  # where the last run of windows ends
        for position in range(len(text) - WINDOW + 1):
            if folded[position : position + WINDOW] in self._windows:
                if position > done:  # a new run: overlapping or touching windows make one
                    pieces += [text[max(done, 0) : position], self._replacement]
                done = position + WINDOW
        return text if done < 0 else "".join(pieces) + text[done:]


def _filter(record: logging.LogRecord) -> bool:
    """Mask the keys of every live client in a record of an http logger."""
    with _lock:
        masks = list(_masks)
    if masks:
        masked = message = record.getMessage()
        for key_mask in masks:
            masked = key_mask(masked)
        if masked != message:
            record.msg, record.args = masked, None
    return True


_masks: weakref.WeakSet[KeyMask] = weakref.WeakSet()
_lock = threading.Lock()
_loggers_seen = -1  # how many loggers existed at the last look for http ones

# Their records quote what a server sent: a reason phrase, response headers (hpack: HTTP/2).
_HTTP_PACKAGES = ("httpx", "httpcore", "hpack")
# Made here first, so each has the filter before its module is imported (httpcore's is lazy).
_HTTP_LOGGERS = (
    "httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2",
    "httpcore.proxy", "httpcore.socks", "hpack", "hpack.hpack", "hpack.table",
)  # fmt: skip


def watch_http_logs(key_mask: KeyMask) -> None:
    """Mask this key in the log records of httpx, httpcore and hpack while ``key_mask`` lives."""
    with _lock:
        _masks.add(key_mask)
    check_http_loggers()


def check_http_loggers() -> None:
    """Filter the http loggers made since the last look (before each request; cheap if none)."""
    global _loggers_seen
    if len(logging.root.manager.loggerDict) == _loggers_seen:
        return
    # A filter sees only its own logger's records, not its children's: it goes on each.
    with _lock:
        # The listed ones are made here if not yet; the snapshot counts them as made.
        names = {*_HTTP_LOGGERS, *logging.root.manager.loggerDict}
        for name in names:
            if name.split(".", 1)[0] in _HTTP_PACKAGES:
                # A placeholder too: it becomes a logger, filtered (addFilter adds it once).
                logging.getLogger(name).addFilter(_filter)
        # Counted from this snapshot: a logger made since is looked at next time.
        _loggers_seen = len(names)


def raise_scrubbed(error: BaseException) -> NoReturn:
    """Raise ``error`` without the frames that built it, whose locals may hold the key."""
    raise error.with_traceback(None)
