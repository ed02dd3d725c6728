"""The ``lingodoc`` command: translate texts, files and documents from a shell.

``lingodoc --help`` lists the commands; the guide is ``docs/cli.md``. Built on the public
``lingodoc.Client`` only. ``import lingodoc`` does not import this package (nor
argparse), so the SDK stays light for applications that never use the command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import traceback

import lingodoc
from lingodoc._constants import API_KEY_ENV, BASE_URL_ENV
from lingodoc.cli._commands import Handler, run_emulator
from lingodoc.cli._demo import emulated_client, unset
from lingodoc.cli._errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    STDOUT,
    Explained,
    Kept,
    NoKey,
    Terminated,
    WriteError,
    as_json,
    explain,
)
from lingodoc.cli._parser import Refused, build_parser, settle_timeouts
from lingodoc.cli._visible import visible

__all__ = ["main"]


def _client(args: argparse.Namespace) -> lingodoc.Client:
    if args.command == "demo" and unset(args):
        return emulated_client(args)  # the demo needs no account
    key = args.api_key or os.environ.get(API_KEY_ENV, "").strip()
    url = args.base_url or os.environ.get(BASE_URL_ENV, "").strip()
    # Checked here rather than left to Client(), to name the flags rather than the arguments.
    set_key = f"set {API_KEY_ENV} or pass --api-key"
    set_url = (
        f"set {BASE_URL_ENV} (the address up to and including /v1; `lingodoc emulator` prints "
        "one) or pass --base-url"
    )
    if not key and not url:
        raise NoKey(f"no API key and no service address: {set_key}, and {set_url}")
    if not key:
        raise NoKey(f"no API key: {set_key}")
    if not url:
        raise lingodoc.ConfigurationError(f"no service address: {set_url}")
    settings = {"timeout": args.timeout, "max_retries": args.max_retries}
    return lingodoc.Client(
        args.api_key or None,
        base_url=args.base_url or None,
        **{name: value for name, value in settings.items() if value is not None},
    )


class _VisibleFormatter(logging.Formatter):
    """Formats a log line with its control characters shown as escapes: one line, inert."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def _log_to_stderr(verbose: bool) -> None:
    """Log requests to stderr with ``--verbose``; the lines (also ``LINGODOC_LOG``'s) inert."""
    logger = logging.getLogger("lingodoc")
    if verbose:
        logger.setLevel(logging.DEBUG)
        if not logger.handlers:
            logger.addHandler(logging.StreamHandler(sys.stderr))
    for handler in logger.handlers:  # the SDK's, for LINGODOC_LOG, or the one above
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr:
            handler.setFormatter(
                _VisibleFormatter("%(asctime)s %(name)s %(levelname)s %(message)s")
            )


def _print_traceback(error: BaseException) -> None:
    """Print the traceback of ``error`` with what its messages quote of a server made inert.

    The lines of the traceback keep their line breaks; the messages of the exceptions
    (which may hold text a server sent) get none, nor any other control character.
    """
    messages = set()
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [error]
    while todo:  # the error and the chain of its causes and contexts
        link = todo.pop()
        if link is not None and not any(link is known for known in seen):
            seen.append(link)
            messages.update(traceback.format_exception_only(type(link), link))
            todo += [link.__cause__, link.__context__]
    for chunk in traceback.format_exception(type(error), error, error.__traceback__):
        if chunk in messages:
            sys.stderr.write(visible(chunk.removesuffix("\n")) + "\n")
        else:
            sys.stderr.write(visible(chunk, layout=True))


def _stdout_to_devnull() -> None:
    """Point stdout at the null device: its reader is gone, and Python flushes it at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)  # stdout's descriptor is a copy of it now


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _print_json(exc: BaseException, explained: Explained) -> None:
    """With ``--json``: print the error on stdout too, where a script reads the result."""
    try:
        print(as_json(exc, explained), flush=True)
    except OSError:  # the reader is gone: stderr still says it, and exit is quiet
        _stdout_to_devnull()


def main(argv: list[str] | None = None) -> int:
    """Run the ``lingodoc`` command.

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` by default.

    Returns:
        The exit code: 0 success, 1 an error of the service or the network (or of
        writing a batch's checkpoint, or a cache file locked by another process), 2 wrong
        usage or configuration (or a batch's Parquet input changed during the run), 3 the
        translation failed, 4 the wait timed out, 5 the rate limit stopped a batch, 6 a
        full disk stopped a command's output, a batch or a cache file, 130 interrupted,
        141 stdout closed early, 143 stopped by SIGTERM (its work kept, as after Ctrl-C).
    """
    parser = build_parser()
    tokens = sys.argv[1:] if argv is None else argv
    try:
        args, extra = parser.parse_known_args(tokens)
        # Unknown options go on to the emulator; for any other command they are a mistake.
        if extra and args.command != "emulator":
            args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except Refused as exc:  # its usage printed; nothing parsed to ask, so --json is looked for
        if "--json" in (tokens[: tokens.index("--")] if "--" in tokens else tokens):
            _print_json(exc, Explained(EXIT_USAGE, str(exc)))
        print(f"{exc.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help or --version, printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    deprecated = settle_timeouts(args)
    if deprecated is not None:
        print(f"lingodoc: warning: {deprecated}", file=sys.stderr)
    if args.command == "emulator":
        return run_emulator(extra)

    base_url = args.base_url or os.environ.get(BASE_URL_ENV, "").strip()
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    try:
        if args.command == "cache":  # a file of this machine: no key, no service
            return int(args.cache_command(args))
        handler: Handler = args.handler
        with _client(args) as client:
            base_url = client.base_url
            _log_to_stderr(args.verbose)  # after Client(), which applies LINGODOC_LOG
            return handler(client, args)
    except KeyboardInterrupt as exc:
        job = getattr(args, "translation_id", None) if args.command != "status" else None
        goes_on = f"the translation goes on: `lingodoc wait {job}` resumes" if job else ""
        if isinstance(exc, Terminated):
            interrupted = Explained(EXIT_TERMINATED, "stopped by SIGTERM").also(goes_on)
        else:
            interrupted = Explained(EXIT_INTERRUPTED, "interrupted").also(goes_on)
        kept: Kept | None = getattr(args, "kept", None)
        if kept is not None:
            interrupted = interrupted.also(kept.sentence())
        if args.json:
            _print_json(exc, interrupted)
        print(f"lingodoc: {visible(interrupted.line)}", file=sys.stderr)
        return interrupted.exit_code
    except BrokenPipeError:
        # The reader went away (`lingodoc batch big.txt | head`): stop quietly, and keep
        # Python from complaining when it flushes stdout at exit.
        _stdout_to_devnull()
        kept = getattr(args, "kept", None)
        if kept is not None and kept.checkpoint is not None:  # else it would be a surprise
            print(f"lingodoc: stdout was closed early; {kept.sentence()}", file=sys.stderr)
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # explained in one line; the traceback only with --verbose
        explained = explain(exc, args, base_url)
        if args.verbose:
            _print_traceback(exc)
        if isinstance(exc, WriteError) and exc.file == STDOUT:
            _stdout_to_devnull()  # what stdout holds of the output cannot be written either
        if args.json:  # in JSON, the service's message as it came (line breaks escaped)
            _print_json(exc, explained)
        line = " ".join(explained.line.split())  # one line: the server's line breaks as spaces
        print(f"lingodoc: error: {visible(line)}", file=sys.stderr)  # what it sent, inert
        return explained.exit_code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
