"""The command line's grammar: commands, options, help."""

from __future__ import annotations

import argparse
import functools
import math
import sys
from typing import Any, NoReturn

import lingodoc
from lingodoc._constants import (
    ALLOW_HTTP_HOST_ENV,
    API_KEY_ENV,
    BASE_URL_ENV,
    LOG_ENV,
    MAX_BATCH_ITEMS,
)
from lingodoc.cli import _cache, _commands, _corpus, _demo

# Every LINGODOC_ variable the command and the client it makes read, by the names they read.
ENVIRONMENT = {
    API_KEY_ENV: "the API key (or --api-key)",
    BASE_URL_ENV: "the address up to and including /v1 (or --base-url)",
    ALLOW_HTTP_HOST_ENV: "a host the service address may reach over http://",
    LOG_ENV: "debug or info: log every request to stderr",
    _cache.CACHE_ENV: "batch: the translation cache file (or --cache)",
}
_WIDTH = max(map(len, ENVIRONMENT)) + 2
_VARIABLES = "".join(f"  {name:<{_WIDTH}}{meaning}\n" for name, meaning in ENVIRONMENT.items())

EPILOG = f"""\
environment:
{_VARIABLES}\
  HTTPS_PROXY, ALL_PROXY, NO_PROXY, SSL_CERT_FILE, SSL_CERT_DIR: as httpx reads them
  (an http:// service address reads none)

exit codes:
  0    success
  1    the service answered with an error, or could not be reached;
       or `batch` could not write its checkpoint (its finished texts are kept);
       or a cache file was locked by another process
  2    wrong usage or configuration (nothing was sent);
       or the Parquet input of `batch` changed during the run (its texts are kept)
  3    the document translation failed
  4    the wait timed out (the translation goes on: `lingodoc wait ID` resumes)
  5    the rate limit stopped `batch` (its finished texts are kept: --resume)
  6    the disk is full: a command could not write its output, `batch` its checkpoint
       (its finished texts are kept: --resume once space is freed), or a cache file
  130  interrupted (Ctrl-C)
  141  stdout was closed before the output was written (`| head`)
  143  stopped by SIGTERM (`docker stop`, systemd), as by Ctrl-C
"""


_SEE_TOP = "environment variables and exit codes: lingodoc --help"


class Refused(Exception):
    """argparse refused the command line: the message of its error, the usage printed.

    Raised rather than exiting, so that the command can print it as ``--json`` asks too.

    Attributes:
        prog: The program or command it is about, such as ``lingodoc translate``.
    """

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise `Refused` (its subcommands' too)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise Refused(self.prog, message)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {value!r}")
    return seconds


def _wait_limit(value: str) -> float:
    if value.strip().lower() == "never":  # the SDK's timeout=None; None here is "not given"
        return math.inf
    try:
        return _seconds(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, or never, not {value!r}"
        ) from None


def _days(value: str) -> float:
    try:
        days = float(value)
    except ValueError:
        days = math.nan
    if not (math.isfinite(days) and days >= 0):
        raise argparse.ArgumentTypeError(f"expected a number of days >= 0, not {value!r}")
    return days


def _identifier(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("expected an id, not an empty string")
    return value


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {value!r}")
    return int(value)


def _positive(value: str) -> int:
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {value!r}")
    return int(value)


# Where `--timeout` after `wait` or `document` lands: until it is only the per-request
# timeout there too, settle_timeouts() decides what it means.
_TIMEOUT_AFTER_A_WAIT = "timeout_after_a_wait"


def _add_global_options(
    parser: argparse.ArgumentParser, *, after: bool, waits: bool, service: bool = True
) -> None:
    """``service=False``: a command that sends nothing takes the service's options unlisted."""
    group = parser.add_argument_group("global options (before or after the command)")
    # After the command the defaults are SUPPRESS: otherwise argparse would let the
    # command's defaults overwrite what was given before the command.
    add = functools.partial(group.add_argument, default=argparse.SUPPRESS if after else None)

    def shown(text: str) -> str:
        return text if service else argparse.SUPPRESS

    add("--api-key", metavar="KEY", help=shown(f"the API key (default: ${API_KEY_ENV})"))
    where = f"the address up to /v1 (default: ${BASE_URL_ENV})"
    add("--base-url", metavar="URL", help=shown(where))
    if waits:
        add(
            "--timeout",
            dest=_TIMEOUT_AFTER_A_WAIT,
            type=_seconds,
            metavar="S",
            help="seconds per request (default: 30); deprecated meaning: after `wait` or "
            "`document --wait` without --wait-timeout, it is still the wait's limit, with a "
            "warning",
        )
    else:
        per_request = shown("seconds per request (default: 30)")
        add("--timeout", type=_seconds, metavar="S", help=per_request)
    retries = shown("retries of a failure (default: 2)")
    add("--max-retries", type=_count, metavar="N", help=retries)
    add("--json", action="store_true", help="print the result as JSON on stdout")
    add("-v", "--verbose", action="store_true", help="log requests; show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the ``lingodoc`` command and its subcommands."""
    raw: dict[str, Any] = {"formatter_class": argparse.RawDescriptionHelpFormatter}
    # The subcommands' parsers are of the same class (add_subparsers' parser_class).
    parser = _Parser(
        prog="lingodoc",
        description="Translate texts, files and documents with the lingodoc service.\n\n"
        "To try it locally, run `lingodoc emulator` in one terminal and export the two\n"
        "variables it prints in another.",
        epilog=EPILOG,
        **raw,
    )
    parser.add_argument("--version", action="version", version=f"lingodoc {lingodoc.__version__}")
    _add_global_options(parser, after=False, waits=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.required = True

    def command(name: str, summary: str, handler: _commands.Handler, *, wait: bool = False) -> Any:
        # The environment and the exit codes are the same for every command: said once.
        sub = commands.add_parser(name, help=summary, description=summary, epilog=_SEE_TOP, **raw)
        sub.set_defaults(handler=handler, command_parser=sub)  # its usage for its mistakes
        if wait:
            limit = "stop waiting after S seconds in all: exit code 4, and the translation "
            limit += "goes on (default: 600, as the SDK's; never: no limit)"
            sub.add_argument("--wait-timeout", type=_wait_limit, metavar="S", help=limit)
            every = "seconds between polls (default: 5)"
            sub.add_argument("--interval", type=_seconds, default=5.0, metavar="S", help=every)
        _add_global_options(sub, after=True, waits=wait)
        return sub

    def languages(sub: argparse.ArgumentParser, *, source: bool = True) -> None:
        if source:
            sub.add_argument(
                "--from",
                dest="source",
                default="en",
                metavar="LANG",
                help="the language of the text (default: en)",
            )
        sub.add_argument(
            "--to",
            dest="target",
            required=True,
            metavar="LANG",
            help="the language to translate into, such as de",
        )

    sub = command("translate", "Translate one text.", _commands.translate)
    sub.add_argument("text", metavar="TEXT", help="the text; - reads it from stdin")
    languages(sub)
    sub.add_argument("--style", help="such as formal or marketing")

    sub = command(
        "batch",
        "Translate a corpus file: plain lines, JSON Lines, CSV or Parquet.",
        _commands.batch,
    )
    sub.description = (
        "Translate every text of a file and write it back with the translations:\n"
        "a translation per line; each JSON object, CSV row or Parquet row with one\n"
        "more field.\n"
        "Progress is kept in a checkpoint file: after Ctrl-C, an error or the rate limit,\n"
        "the same command with --resume goes on without sending the finished texts again."
    )
    sub.add_argument("file", metavar="FILE", help="a UTF-8 text file, or Parquet; - reads stdin")
    languages(sub)
    sub.add_argument("-q", "--quiet", action="store_true", help="show no progress on stderr")
    corpus = sub.add_argument_group("the file")
    corpus.add_argument(
        "--format",
        choices=_corpus.FORMATS,
        help="lines: a text per line; jsonl: a JSON object per line; csv: with a header "
        "row; parquet: needs pyarrow (default: from the extension: .jsonl/.ndjson, .csv, "
        ".parquet, else lines; lines for -)",
    )
    corpus.add_argument(
        "--field",
        "--column",
        metavar="NAME",
        help="the JSON field, or CSV or Parquet column, with the text (default: "
        f"{_corpus.DEFAULT_FIELD})",
    )
    corpus.add_argument(
        "--into",
        metavar="NAME",
        help="the field or column to add the translation as (default: FIELD_LANG, "
        "such as text_de; an existing one is replaced)",
    )
    corpus.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the result to OUT, replaced whole at the end (default: stdout; "
        "Parquet needs OUT)",
    )
    resume = sub.add_argument_group("checkpoint and resume")
    resume.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="where to keep the finished translations (default: OUT.checkpoint with "
        "--output, else FILE.LANG.checkpoint; none for stdin)",
    )
    resume.add_argument(
        "--resume",
        action="store_true",
        help="go on from the checkpoint of an earlier run of the same command",
    )
    resume.add_argument(
        "--cache",
        metavar="FILE",
        help="look each text up in this translation cache (SQLite, made if missing) and "
        f"send only those missed; each translation made is stored (default: {_cache.CACHE_ENV})",
    )
    resume.add_argument(
        "--cache-max-entries",
        type=_positive,
        metavar="N",
        help="keep at most N entries in the cache, deleting the oldest stored (default: no limit)",
    )
    resume.add_argument(
        "--wait-for-rate-limit",
        action="store_true",
        help="when the rate limit is spent, wait for the reset, however far off the service "
        "says it is, rather than stop with exit code 5",
    )
    sending = sub.add_argument_group("sending")
    sending.add_argument(
        "--batch-size",
        type=_positive,
        default=MAX_BATCH_ITEMS,
        metavar="N",
        help=f"texts per request (default: {MAX_BATCH_ITEMS})",
    )
    sending.add_argument(
        "--concurrency",
        type=_positive,
        default=4,
        metavar="N",
        help="requests in flight at most (default: 4)",
    )

    sub = command("document", "Translate a stored document.", _commands.document, wait=True)
    sub.add_argument(
        "document_id", type=_identifier, metavar="DOC_ID", help="the id `lingodoc documents` lists"
    )
    languages(sub, source=False)
    sub.add_argument("--style", help="such as formal or marketing")
    sub.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        help="use the translation memory (default: the service's choice)",
    )
    sub.add_argument("--wait", action="store_true", help="wait for it, showing progress")

    started = "the id `lingodoc document` printed"
    sub = command("status", "Show the state of a document translation.", _commands.status)
    sub.add_argument("translation_id", type=_identifier, metavar="TRANSLATION_ID", help=started)

    sub = command(
        "wait", "Wait for a document translation, showing progress.", _commands.wait, wait=True
    )
    sub.add_argument("translation_id", type=_identifier, metavar="TRANSLATION_ID", help=started)

    command("documents", "List the stored documents.", _commands.documents)

    # A file of this machine: no key, no service (cli.main runs `cache_command` itself).
    summary = "Show or clear a translation cache file (batch --cache)."
    sub = commands.add_parser("cache", help=summary, description=summary, epilog=_SEE_TOP, **raw)
    actions = sub.add_subparsers(dest="action", metavar="ACTION", title="actions")
    actions.required = True
    for name, what, handler in (
        ("stats", "Show what the cache holds.", _cache.stats),
        ("clear", "Delete the cache's entries, or the old ones.", _cache.clear),
    ):
        action = actions.add_parser(name, help=what, description=what, epilog=_SEE_TOP, **raw)
        action.set_defaults(cache_command=handler, command_parser=action)
        action.add_argument("file", metavar="FILE", help="the cache file")
        _add_global_options(action, after=True, waits=False, service=False)
    action.add_argument(
        "--older-than",
        type=_days,
        metavar="DAYS",
        help="only the entries stored more than DAYS days ago (default: all)",
    )

    sub = command("demo", _demo.SUMMARY, _demo.demo)
    sub.description = _demo.DESCRIPTION

    # Every option after `emulator`, --help included, is the emulator's own parser's (it
    # says them all, with their defaults); imported only when this command runs.
    commands.add_parser(
        "emulator",
        help="Run a local stand-in for the service, to try the other commands.",
        add_help=False,
    )
    return parser


def settle_timeouts(args: argparse.Namespace) -> str | None:
    """Decide what ``--timeout`` after ``wait`` or ``document`` means; return a warning, if any.

    It is the per-request timeout, as everywhere, except where it used to be the wait's
    limit: after a command that waits, with no ``--wait-timeout`` given. There it still is,
    for one more release, and the warning returned says what to write instead.

    Args:
        args: The parsed arguments, changed in place.

    Returns:
        The deprecation warning to show, or None.
    """
    after: float | None = vars(args).pop(_TIMEOUT_AFTER_A_WAIT, None)
    if after is None:
        return None
    waits = args.command == "wait" or (args.command == "document" and args.wait)
    if not waits or args.wait_timeout is not None:
        args.timeout = after
        return None
    args.wait_timeout = after
    seconds = int(after) if after.is_integer() else after
    return (
        f"--timeout after `{args.command}` as the wait's limit is deprecated: use "
        f"--wait-timeout {seconds} (in a later release, --timeout after the command will be "
        "the per-request timeout, as it is before the command)"
    )
