"""Masking the API key wherever a server may echo it back.

One `KeyMask` per key masks it in every message, field and log line the
SDK makes. `watch_http_logs` applies the masks of every live client to
the log records of httpx and httpcore too, whose lines quote what a server
sent (a reason phrase, response headers) and could echo a key there;
`check_http_loggers`, before each request, extends it to their loggers made
since.
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
_loggers_seen = -1  # how many loggers existed at the last look for http ones

# The packages whose log records quote what a server sent: httpx (the reason phrase),
# httpcore (response headers), hpack (headers of HTTP/2 responses, under httpcore).
_HTTP_PACKAGES = ("httpx", "httpcore", "hpack")
# Their loggers, made here first, so each has the filter from the start, whenever its
# module is imported: httpx 0.28 imports httpcore only when it builds a transport, and
# hpack comes with h2, for HTTP/2 only.
_HTTP_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "hpack",
    "hpack.hpack",
    "hpack.table",
)


def watch_http_logs(key_mask: KeyMask) -> None:
    """Mask this key in the log records of httpx, httpcore and hpack while ``key_mask`` lives.

    A filter only sees records of the logger it is attached to, not of its
    children, so it goes on each of their loggers: those known, made here if
    they do not exist yet, and any other that exists. Loggers made later are
    filtered by `check_http_loggers`, which each request calls. The filter
    costs nothing while the loggers' levels leave them silent (the default).
    """
    with _lock:
        _masks.add(key_mask)
    _filter_http_loggers()


def check_http_loggers() -> None:
    """Filter the http loggers made since the last look; at once if none was made.

    Called before each request: it compares the number of loggers with the
    last count, and looks at their names only when it changed.
    """
    if len(logging.root.manager.loggerDict) != _loggers_seen:
        _filter_http_loggers()


def _filter_http_loggers() -> None:
    global _loggers_seen
    with _lock:
        for name in _HTTP_LOGGERS:
            _add_filter(name)
        names = list(logging.root.manager.loggerDict)
        for name in names:
            if name.split(".", 1)[0] in _HTTP_PACKAGES:
                # Also turns a placeholder (the parent of a logger made first) into a
                # logger, with the filter, so that it is filtered when someone asks for it.
                _add_filter(name)
        # Counted from this snapshot: a logger made since is looked at next time.
        _loggers_seen = len(names)


def _add_filter(name: str) -> None:
    logger = logging.getLogger(name)
    if _filter not in logger.filters:
        logger.addFilter(_filter)


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
