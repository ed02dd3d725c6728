"""Exit codes, and the one line that explains an error: the problem, then what to do."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import lingodoc
from lingodoc import _clock
from lingodoc._constants import (
    API_KEY_ENV,
    BASE_URL_ENV,
    NOT_THE_SERVICE,
    SERVICE_UNREACHABLE,
    SLOW_ANSWER,
)

EXIT_OK, EXIT_API_ERROR, EXIT_USAGE, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 2, 3, 4
# `lingodoc batch` stopped by the rate limit: not an error to report, a reason to come back.
EXIT_RATE_LIMITED = 5
# `lingodoc batch` stopped by a full disk: its work is kept, to finish once there is room.
EXIT_DISK_FULL = 6
# 128 + the signal, as shells report a process that a signal stopped.
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE, EXIT_TERMINATED = 130, 141, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM (``docker stop``, systemd, ``kill``), taken as Ctrl-C is: the work is kept."""


class UsageError(Exception):
    """A mistake in the command line found after parsing (exit code 2)."""


class NoKey(UsageError):
    """No API key given (exit code 2): the line says where keys come from, and the emulator."""

    hint = (
        "create a key in your lingodoc account settings; to try lingodoc without one, run "
        "`lingodoc demo`, or `lingodoc emulator` in another terminal and export what it prints"
    )


# The errors of a write that finds no room: the disk is full, or the user's quota on it.
NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
STDOUT = "stdout"


class WriteError(Exception):
    """A file of `lingodoc batch` could not be written (exit code 1, or 6 if the disk is full).

    Attributes:
        file: What could not be written: a path, ``the checkpoint PATH`` or `STDOUT`.
        no_space: Whether the disk (or the quota on it) was full.
    """

    def __init__(self, file: str, error: OSError) -> None:
        super().__init__(f"cannot write {file}: {error.strerror or error}")
        self.file = file
        self.no_space = error.errno in NO_SPACE


def out(text: str) -> None:
    """Print ``text`` on stdout, flushed, so that a write that fails does so here.

    Raises:
        BrokenPipeError: If the reader went away (`main` then stops quietly).
        WriteError: If stdout cannot be written, a full disk say (exit code 6 then).
    """
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise WriteError(STDOUT, exc) from exc


class CheckpointError(WriteError):
    """The checkpoint could not be written to during a run: a full disk, a file size limit."""


class CacheError(Exception):
    """The cache file could not be used: a full disk, a lock held elsewhere, no right to write.

    Attributes:
        explained: Its exit code (6, 1 or 2), the problem, naming the file, and what to do.
    """

    def __init__(self, explained: Explained) -> None:
        super().__init__(explained.line)
        self.explained = explained


# SQLite's primary result codes by their messages, for Pythons before 3.11, whose
# sqlite3.Error has no sqlite_errorcode: 3 PERM, 5 BUSY, 8 READONLY, 10 IOERR, 13 FULL,
# 14 CANTOPEN.
_SQLITE_CODES = {
    "access permission denied": 3,
    "database is locked": 5,
    "attempt to write a readonly database": 8,
    "disk I/O error": 10,
    "database or disk is full": 13,
    "unable to open database file": 14,
}
_KINDS = {3: "denied", 5: "locked", 8: "denied", 13: "full", 14: "denied"}
_DENIED = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def cache_failure(error: BaseException, path: str) -> str | None:
    """What stopped the cache at ``path``: ``"full"``, ``"locked"`` or ``"denied"``.

    Args:
        error: What `SQLiteCache` raised: a ``ConfigurationError`` (its cause is looked at),
            an ``OSError`` or an ``sqlite3.Error``.
        path: The cache file.

    Returns:
        ``"full"`` for a full disk or quota, ``"locked"`` for a lock another process held
        past the busy timeout, ``"denied"`` for a read-only file system or no permission;
        ``None`` for anything else.
    """
    import sqlite3  # only here: the command line loads it only with a cache

    if isinstance(error, lingodoc.ConfigurationError) and error.__cause__ is not None:
        error = error.__cause__
    if isinstance(error, OSError):
        return "full" if error.errno in NO_SPACE else "denied" if error.errno in _DENIED else None
    if not isinstance(error, sqlite3.Error):
        return None
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _SQLITE_CODES.get(str(error))
    if primary != 10 or not hasattr(os, "statvfs"):
        return _KINDS.get(primary or 0)
    # A disk I/O error, which SQLite does not explain (a -shm file it cannot grow or open
    # for writing): a read-only file system says so; else a full disk, or a quota, which
    # no statvfs shows.
    try:
        disk = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return "full"
    return "denied" if disk.f_flag & os.ST_RDONLY else "full"


@contextlib.contextmanager
def cache_errors(path: str) -> Iterator[None]:
    """Say a full disk, a lock held elsewhere or no right to write the cache as a `CacheError`."""
    try:
        yield
    except Exception as exc:
        kind = cache_failure(exc, path)
        if kind is None:
            raise
        reason = exc.__cause__ if isinstance(exc, lingodoc.ConfigurationError) else exc
        why = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        if kind == "full":
            explained = Explained(
                EXIT_DISK_FULL,
                f"cannot write the cache {path}: {why}",
                "free some space (or raise your disk quota), then run the same command again",
            )
        elif kind == "locked":
            explained = Explained(
                EXIT_API_ERROR,
                f"the cache {path} is locked by another process ({why})",
                "try again when the other process ends",
            )
        else:
            explained = Explained(
                EXIT_USAGE,
                f"cannot use the cache {path}: {why}",
                "check that you may write to it and to its folder, on a file system that is "
                "not read-only",
            )
        raise CacheError(explained) from exc


@dataclass
class Kept:
    """What a `lingodoc batch` that stopped early had done, and where it is kept.

    Attributes:
        done: Texts with a translation (resumed ones included).
        total: Texts in the file.
        checkpoint: The checkpoint file that keeps them, or ``None`` if there is none.
    """

    done: int
    total: int
    checkpoint: str | None

    def sentence(self, when: str = "") -> str:
        """Say what is kept and how to go on, ``when`` (``"once ..., "``); empty if none is."""
        if not self.done:
            return ""
        count = f"{self.done:,} of {self.total:,} texts"
        if self.checkpoint is None:
            return (
                f"{count} were translated but are not kept: reading stdin, there is no "
                "checkpoint unless --output or --checkpoint is given"
            )
        return (
            f"{count} are done, kept in {self.checkpoint}: {when}add --resume to the same "
            "command to go on without sending them again"
        )


def _in(seconds: float) -> str:
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def rate_limit_stop(exc: lingodoc.RateLimited, kept: Kept) -> Explained:
    """Say that the rate limit stopped a batch: what is done, when to go on, and how."""
    now = _clock.current().time()
    reset: float | None = None
    if exc.rate_limit is not None:
        reset = exc.rate_limit.reset_at.timestamp()
    elif exc.retry_after is not None:
        reset = now + exc.retry_after
    if reset is None:
        when = "the service did not say when its window resets: try again later"
    else:
        local = datetime.fromtimestamp(reset, timezone.utc).astimezone()
        when = f"the window resets at {local:%H:%M:%S} (in {_in(reset - now)})"
    stopped = "the rate limit stopped the batch"
    if not kept.done:
        return Explained(EXIT_RATE_LIMITED, f"{stopped} before any text was done", when)
    if kept.checkpoint is None:
        return Explained(EXIT_RATE_LIMITED, stopped, f"{kept.sentence()}; {when}", joint=": ")
    return Explained(
        EXIT_RATE_LIMITED,
        stopped,
        f"{kept.done:,} of {kept.total:,} texts are done, kept in {kept.checkpoint}; {when}: "
        "then add --resume to the same command (or --wait-for-rate-limit to wait for the reset)",
        joint=": ",
    )


@dataclass(frozen=True)
class Explained:
    """An error as the command says it: its exit code, the problem and what to do.

    Attributes:
        exit_code: The exit code.
        problem: What went wrong, in the command line's terms.
        hint: What to do about it, or ``None``.
        joint: What joins the two in the line printed.
    """

    exit_code: int
    problem: str
    hint: str | None = None
    joint: str = "; "

    @property
    def line(self) -> str:
        """The one line printed on stderr: the problem, then what to do."""
        return self.problem if self.hint is None else f"{self.problem}{self.joint}{self.hint}"

    def also(self, more: str) -> Explained:
        """Return it with ``more`` to do after its hint."""
        if not more:
            return self
        return replace(self, hint=more if self.hint is None else f"{self.hint}; {more}")


def as_json(exc: BaseException, explained: Explained) -> str:
    """Return the error as ``--json`` prints it on stdout: one object, for scripts to parse.

    Args:
        exc: The error.
        explained: What `explain` made of it, also printed on stderr.

    Returns:
        ``{"code", "hint", "message", "request_id", "status"}`` in ASCII JSON: the service's
        error code (or the SDK's, such as ``INVALID_LANGUAGE`` for a code refused before
        sending), the service's message as it sent it (the API key masked, as in every
        message of the SDK), or else the problem in the command line's terms, what to do,
        the request id and the HTTP status, each ``null`` where there is none.
    """
    api = exc if isinstance(exc, lingodoc.APIError) else None
    answered = api is not None and api.status_code is not None
    error = {
        "code": api.code if api else None,
        "hint": explained.hint,
        "message": api.message if api is not None and answered else explained.problem,
        "request_id": api.request_id if api else None,  # as the SDK gives it: never the key
        "status": api.status_code if api else None,
    }
    return json.dumps(error, indent=2)


def explain(exc: Exception, args: argparse.Namespace, base_url: str) -> Explained:
    """Return the exit code, the problem and what to do about an error.

    After a `lingodoc batch` that stopped early (``args.kept``), what to do also says what
    is kept; a stop by the rate limit, or by a full disk, has an exit code and a message of
    its own.
    """
    kept: Kept | None = getattr(args, "kept", None)
    if isinstance(exc, WriteError) and exc.no_space:
        return disk_full(exc, kept)
    if kept is None:
        return _explain(exc, args, base_url)
    if isinstance(exc, lingodoc.RateLimited):
        return rate_limit_stop(exc, kept)
    return _explain(exc, args, base_url).also(kept.sentence())


def disk_full(exc: WriteError, kept: Kept | None) -> Explained:
    """Say which file a full disk refused, what is kept, and how to finish once there is room."""
    if kept is not None and kept.done and kept.checkpoint is not None:
        return Explained(EXIT_DISK_FULL, str(exc), kept.sentence("once space is freed, "))
    again = "free some space, then run the same command again"
    return Explained(EXIT_DISK_FULL, str(exc), again).also(kept.sentence() if kept else "")


def _explain(exc: Exception, args: argparse.Namespace, base_url: str) -> Explained:
    if isinstance(exc, UnicodeDecodeError):
        return Explained(
            EXIT_USAGE, f"the input is not UTF-8 text ({exc.reason} at byte {exc.start})"
        )
    if isinstance(exc, NoKey):
        return Explained(EXIT_USAGE, str(exc), exc.hint)
    # The SDK's hint, if any, after its message (in str() it is on a line of its own).
    usage = (lingodoc.ConfigurationError, lingodoc.InvalidArgument, lingodoc.InvalidArgumentType)
    if isinstance(exc, usage):
        return Explained(EXIT_USAGE, exc.message, exc.hint)
    if isinstance(exc, UsageError):
        return Explained(EXIT_USAGE, str(exc))
    if isinstance(exc, CacheError):
        return exc.explained
    if isinstance(exc, WriteError):
        return Explained(EXIT_API_ERROR, str(exc))
    if not isinstance(exc, lingodoc.LingodocError):
        return Explained(
            EXIT_API_ERROR,
            f"unexpected {type(exc).__name__}: {exc}",
            "this is a bug of lingodoc, please report it with the output of the same command "
            "with --verbose",
        )
    if isinstance(exc, lingodoc.TranslationFailed):
        error = (exc.status.model_extra or {}).get("error")
        reason = f": {str(error.get('message')).rstrip('. ')}" if isinstance(error, dict) else ""
        return Explained(
            EXIT_FAILED,
            f"translation {exc.status.translation_id} failed at {exc.status.progress}%{reason}",
            "check the document, then start a new translation",
        )
    if isinstance(exc, lingodoc.WaitTimeout):
        # The id from the wait itself: not every command that waits has it in its arguments
        # (`demo` does not).
        job = exc.status.translation_id if exc.status else getattr(args, "translation_id", None)
        resume = f": `lingodoc wait {job}` resumes" if job else ""
        return Explained(EXIT_TIMEOUT, exc.message, f"it goes on{resume}")
    # Each names the address it tried (and the proxy, if any), and the SDK's hint says what
    # to check: said in the command's flags, where they differ from the SDK's arguments.
    if isinstance(exc, lingodoc.APIConnectionError):  # timeouts too
        return Explained(EXIT_API_ERROR, exc.message, _in_flag_terms(exc.hint, base_url))
    if not isinstance(exc, lingodoc.APIError):
        return Explained(EXIT_API_ERROR, exc.message, exc.hint)
    if exc.status_code is None:  # refused before sending, like a malformed --to
        # In the terms of the command line: "--to must be a two-letter ISO 639-1 code ..."
        message = exc.message.replace("target_language", "--to")
        return Explained(EXIT_USAGE, message.replace("source_language", "--from"))
    message = exc.message.rstrip(". ")  # it is followed by more of the sentence
    what = f"{exc.status_code} {exc.code or 'error'}"
    what += f", request {exc.request_id}" if exc.request_id else ""
    if isinstance(exc, lingodoc.Unauthorized):
        return Explained(
            EXIT_API_ERROR,
            f"the API key was refused ({what}): {message}",
            f"check {API_KEY_ENV} (or --api-key) and that the key has the permission needed",
        )
    if isinstance(exc, lingodoc.RateLimited):
        wait = exc.retry_after
        when = f"retry in {math.ceil(wait)} s" if wait is not None else "retry later"
        return Explained(EXIT_API_ERROR, f"rate limited ({what})", when)
    if isinstance(exc, lingodoc.NotFound) and getattr(args, "translation_id", None):
        hint = "use an id that `lingodoc document` printed"
        return Explained(EXIT_API_ERROR, f"no translation {args.translation_id!r} ({what})", hint)
    if isinstance(exc, lingodoc.NotFound) and getattr(args, "document_id", None):
        hint = "`lingodoc documents` lists them"
        return Explained(EXIT_API_ERROR, f"no document {args.document_id!r} ({what})", hint)
    advice = {
        # In the terms of the local check ("--to must be a two-letter ISO 639-1 code such
        # as 'en'"), which this code passed: what is left is whether the service has it.
        lingodoc.InvalidLanguage: "use a two-letter ISO 639-1 code the service supports, "
        "such as 'en'",
        lingodoc.ServerError: "try again later",
        lingodoc.UnexpectedResponse: _in_flag_terms(exc.hint, base_url),
        lingodoc.NotFound: _in_flag_terms(NOT_THE_SERVICE, base_url),
    }.get(type(exc))
    return Explained(EXIT_API_ERROR, f"{message} ({what})", advice)


def _in_flag_terms(hint: str | None, base_url: str) -> str | None:
    """The SDK's ``hint`` as the command line says it: its flags, the address it used."""
    if hint == SERVICE_UNREACHABLE:
        return (
            f"is the service (or `lingodoc emulator`) running, and is the address "
            f"{base_url} ({BASE_URL_ENV} or --base-url) right?"
        )
    if hint == NOT_THE_SERVICE:
        return f"is {BASE_URL_ENV} (or --base-url) the service's address, up to and including /v1?"
    return "raise --timeout" if hint == SLOW_ANSWER else hint
