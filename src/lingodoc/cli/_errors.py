"""Exit codes, and the one line that explains an error: the problem, then what to do."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone

import lingodoc
from lingodoc import _clock
from lingodoc._constants import API_KEY_ENV, BASE_URL_ENV

EXIT_OK, EXIT_API_ERROR, EXIT_USAGE, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 2, 3, 4
# `lingodoc batch` stopped by the rate limit: not an error to report, a reason to come back.
EXIT_RATE_LIMITED = 5
# 128 + the signal, as shells report a process that a signal stopped.
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141


class UsageError(Exception):
    """A mistake in the command line found after parsing (exit code 2)."""


class CheckpointError(Exception):
    """The checkpoint could not be written to during a run (exit code 1): a full disk."""


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

    def sentence(self) -> str:
        """Say what is kept and how to go on; empty if nothing was done."""
        if not self.done:
            return ""
        count = f"{self.done:,} of {self.total:,} texts"
        if self.checkpoint is None:
            return (
                f"{count} were translated but are not kept: reading stdin, there is no "
                "checkpoint unless --output or --checkpoint is given"
            )
        return (
            f"{count} are done, kept in {self.checkpoint}: add --resume to the same command "
            "to go on without sending them again"
        )


def _in(seconds: float) -> str:
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def rate_limit_stop(exc: lingodoc.RateLimited, kept: Kept) -> str:
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
    if not kept.done:
        return f"the rate limit stopped the batch before any text was done; {when}"
    if kept.checkpoint is None:
        return f"the rate limit stopped the batch: {kept.sentence()}; {when}"
    return (
        f"the rate limit stopped the batch: {kept.done:,} of {kept.total:,} texts are done, "
        f"kept in {kept.checkpoint}; {when}: then add --resume to the same command "
        "(or --wait-for-rate-limit to wait for the reset)"
    )


def as_json(exc: BaseException, message: str) -> str:
    """Return the error as ``--json`` prints it on stdout: one object, for scripts to parse.

    Args:
        exc: The error.
        message: The one line `explain` made of it, also printed on stderr.

    Returns:
        ``{"code", "message", "request_id", "status"}`` in ASCII JSON: the service's error
        code (or the SDK's, such as ``INVALID_LANGUAGE`` for a code refused before sending),
        the message, the request id and the HTTP status, each ``null`` where there is none.
    """
    api = exc if isinstance(exc, lingodoc.APIError) else None
    error = {
        "code": api.code if api else None,
        "message": message,
        "request_id": api.request_id if api else None,  # as the SDK gives it: never the key
        "status": api.status_code if api else None,
    }
    return json.dumps(error, indent=2)


def explain(exc: Exception, args: argparse.Namespace, base_url: str) -> tuple[int, str]:
    """Return the exit code and the message (the problem; what to do) for an error.

    After a `lingodoc batch` that stopped early (``args.kept``), the message also says
    what is kept, and a stop by the rate limit has an exit code and a message of its own.
    """
    kept: Kept | None = getattr(args, "kept", None)
    if kept is None:
        return _explain(exc, args, base_url)
    if isinstance(exc, lingodoc.RateLimited):
        return EXIT_RATE_LIMITED, rate_limit_stop(exc, kept)
    code, message = _explain(exc, args, base_url)
    more = kept.sentence()
    return code, f"{message}; {more}" if more else message


def _explain(exc: Exception, args: argparse.Namespace, base_url: str) -> tuple[int, str]:
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_USAGE, f"the input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    usage = (lingodoc.ConfigurationError, lingodoc.InvalidArgument, lingodoc.InvalidArgumentType)
    if isinstance(exc, (*usage, UsageError)):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, CheckpointError):
        return EXIT_API_ERROR, str(exc)
    if not isinstance(exc, lingodoc.LingodocError):
        return EXIT_API_ERROR, (
            f"unexpected {type(exc).__name__}: {exc}; this is a bug of lingodoc, "
            "please report it with the output of the same command with --verbose"
        )
    if isinstance(exc, lingodoc.TranslationFailed):
        error = (exc.status.model_extra or {}).get("error")
        reason = f": {str(error.get('message')).rstrip('. ')}" if isinstance(error, dict) else ""
        return EXIT_FAILED, (
            f"translation {exc.status.translation_id} failed at {exc.status.progress}%"
            f"{reason}; check the document, then start a new translation"
        )
    if isinstance(exc, lingodoc.WaitTimeout):
        # The id from the wait itself: not every command that waits has it in its arguments
        # (`demo` does not).
        job = exc.status.translation_id if exc.status else getattr(args, "translation_id", None)
        resume = f": `lingodoc wait {job}` resumes" if job else ""
        return EXIT_TIMEOUT, f"{exc}; it goes on{resume}"
    # Each names the address it tried (and the proxy, if any).
    if isinstance(exc, lingodoc.APITimeoutError):
        return EXIT_API_ERROR, f"{exc}; raise --timeout"
    if isinstance(exc, lingodoc.APIConnectionError):
        return EXIT_API_ERROR, (
            f"{exc}; is the service (or `lingodoc emulator`) running, and is the address "
            f"{base_url} ({BASE_URL_ENV} or --base-url) right?"
        )
    if not isinstance(exc, lingodoc.APIError):
        return EXIT_API_ERROR, str(exc)
    if exc.status_code is None:  # refused before sending, like a malformed --to
        # In the terms of the command line: "--to must be a two-letter ISO 639-1 code ..."
        message = exc.message.replace("target_language", "--to")
        return EXIT_USAGE, message.replace("source_language", "--from")
    message = exc.message.rstrip(". ")  # it is followed by more of the sentence
    what = f"{exc.status_code} {exc.code or 'error'}"
    what += f", request {exc.request_id}" if exc.request_id else ""
    if isinstance(exc, lingodoc.Unauthorized):
        return EXIT_API_ERROR, (
            f"the API key was refused ({what}): {message}; check {API_KEY_ENV} "
            "(or --api-key) and that the key has the permission needed"
        )
    if isinstance(exc, lingodoc.RateLimited):
        wait = exc.retry_after
        when = f"retry in {math.ceil(wait)} s" if wait is not None else "retry later"
        return EXIT_API_ERROR, f"rate limited ({what}); {when}"
    if isinstance(exc, lingodoc.NotFound) and getattr(args, "translation_id", None):
        hint = "use an id that `lingodoc document` printed"
        return EXIT_API_ERROR, f"no translation {args.translation_id!r} ({what}); {hint}"
    if isinstance(exc, lingodoc.NotFound) and getattr(args, "document_id", None):
        hint = "`lingodoc documents` lists them"
        return EXIT_API_ERROR, f"no document {args.document_id!r} ({what}); {hint}"
    advice = {
        # In the terms of the local check ("--to must be a two-letter ISO 639-1 code such
        # as 'en'"), which this code passed: what is left is whether the service has it.
        lingodoc.InvalidLanguage: "use a two-letter ISO 639-1 code the service supports, "
        "such as 'en'",
        lingodoc.ServerError: "try again later",
        lingodoc.UnexpectedResponse: f"is {BASE_URL_ENV} the service's address up to /v1?",
        lingodoc.NotFound: f"is {BASE_URL_ENV} the service's address up to /v1?",
    }.get(type(exc))
    return EXIT_API_ERROR, f"{message} ({what})" + (f"; {advice}" if advice else "")
