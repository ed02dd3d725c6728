"""Masking the API key wherever a server may echo it back.

One `KeyMask` per key masks it in every message, field and log line the
SDK makes. `watch_http_logs` applies the masks of every live client to
the log records of httpx and httpcore too, whose lines quote what a server
sent (a reason phrase, response headers) and could echo a key there.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from typing import NoReturn
from urllib.parse import quote

# A run of this many characters of the key is masked: servers echo keys
# truncated ("ld_live_0123...") as well as whole.
WINDOW = 8


def mask(api_key: str) -> str:
    """Return the key as the SDK shows it: its last 4 characters at most.

    A key shorter than 12 characters shows none of them, since 4 would be a
    third of it.
    """
    return f"****{api_key[-4:]}" if len(api_key) >= 12 else "****"


class KeyMask:
    """Masks one key: whole, and any ``WINDOW`` characters in a row of it.

    Each is looked for as sent, JSON-escaped, slash-escaped and URL-quoted,
    the forms in which servers echo a key. Every run of text covered by such
    windows becomes ``****`` plus the key's last 4 characters. The cost is
    linear in the key and in the text, so a long key (a JWT, say) is no slower
    to mask than a short one.
    """

    __slots__ = ("__weakref__", "_key", "_replacement", "_windows")

    def __init__(self, api_key: str) -> None:
        self._key = api_key
        self._replacement = mask(api_key)
        forms = {
            api_key,
            json.dumps(api_key)[1:-1],
            api_key.replace("/", "\\/"),
            quote(api_key, safe=""),
        }
        self._windows = frozenset(
            form[start : start + WINDOW]
            for form in forms
            for start in range(len(form) - WINDOW + 1)
        )

    def __repr__(self) -> str:
        return f"KeyMask({self._replacement!r})"

    def __call__(self, text: str) -> str:
        """Return ``text`` with every echo of the key masked."""
        if len(self._key) < WINDOW:
            return text.replace(self._key, self._replacement) if text and self._key else text
        if len(text) < WINDOW:
            return text
        # Mark the runs of text covered by windows of the key, then replace each
        # run: overlapping or touching windows make one run, so a key echoed
        # whole becomes one mask, not one per window.
        runs: list[tuple[int, int]] = []
        start = end = -1
        for position in range(len(text) - WINDOW + 1):
            if text[position : position + WINDOW] in self._windows:
                if position <= end:
                    end = position + WINDOW
                else:
                    if end > 0:
                        runs.append((start, end))
                    start, end = position, position + WINDOW
        if end < 0:
            return text
        runs.append((start, end))
        pieces, done = [], 0
        for start, end in runs:
            pieces += [text[done:start], self._replacement]
            done = end
        pieces.append(text[done:])
        return "".join(pieces)


class _HttpLogFilter(logging.Filter):
    """Masks the keys of every live client in the records of one http logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _lock:
            masks = list(_masks)
        if masks:
            message = record.getMessage()
            masked = message
            for key_mask in masks:
                masked = key_mask(masked)
            if masked != message:
                record.msg, record.args = masked, None
        return True


_masks: weakref.WeakSet[KeyMask] = weakref.WeakSet()
_lock = threading.Lock()
_filter = _HttpLogFilter()
_loggers_seen = 0  # how many loggers existed at the last look for http ones


def watch_http_logs(key_mask: KeyMask) -> None:
    """Mask this key in httpx's and httpcore's log records while ``key_mask`` lives.

    A filter only sees records of the logger it is attached to, not of its
    children, so it goes on every httpx and httpcore logger that exists:
    importing httpx has created them all. It costs nothing while their
    levels leave those loggers silent (the default).
    """
    global _loggers_seen
    with _lock:
        _masks.add(key_mask)
        names = list(logging.root.manager.loggerDict)
        if len(names) == _loggers_seen:
            return
        for name in ("httpx", "httpcore", *names):
            if name.split(".", 1)[0] in ("httpx", "httpcore"):
                logger = logging.getLogger(name)
                if _filter not in logger.filters:
                    logger.addFilter(_filter)
        _loggers_seen = len(logging.root.manager.loggerDict)


def raise_scrubbed(error: BaseException) -> NoReturn:
    """Raise ``error`` without the traceback of the frames that built it.

    Every error the SDK builds from what a server sent, or near the API key,
    is raised here. The frames that built it hold in their locals the body as
    the server sent it (which may echo the key) or the key itself, and a
    traceback shown with its locals (``capture_locals``, error trackers)
    would print them. So the functions that see such data *return* their
    error, and their caller, which holds nothing secret, raises it here.
    """
    raise error.with_traceback(None)
