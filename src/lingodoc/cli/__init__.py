"""The ``lingodoc`` command: translate texts, files and documents from a shell.

``lingodoc --help`` lists the commands; the guide is ``docs/cli.md``. Built on the public
``lingodoc.Client`` only. ``import lingodoc`` does not import this package (nor
argparse), so the SDK stays light for applications that never use the command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

import lingodoc
from lingodoc._constants import API_KEY_ENV, BASE_URL_ENV
from lingodoc.cli._commands import Handler, run_emulator
from lingodoc.cli._errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    explain,
)
from lingodoc.cli._parser import build_parser

__all__ = ["main"]


def _client(args: argparse.Namespace) -> lingodoc.Client:
    # Checked here rather than left to Client(), to name the flags rather than the arguments.
    if not (args.api_key or os.environ.get(API_KEY_ENV, "").strip()):
        raise lingodoc.ConfigurationError(f"no API key: set {API_KEY_ENV} or pass --api-key")
    if not (args.base_url or os.environ.get(BASE_URL_ENV, "").strip()):
        raise lingodoc.ConfigurationError(
            f"no service address: set {BASE_URL_ENV} (the address up to and including /v1; "
            "`lingodoc emulator` prints one) or pass --base-url"
        )
    settings = {"timeout": args.timeout, "max_retries": args.max_retries}
    return lingodoc.Client(
        args.api_key or None,
        base_url=args.base_url or None,
        **{name: value for name, value in settings.items() if value is not None},
    )


def _log_to_stderr() -> None:
    logger = logging.getLogger("lingodoc")
    logger.setLevel(logging.DEBUG)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    """Run the ``lingodoc`` command.

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` by default.

    Returns:
        The exit code: 0 success, 1 an error of the service or the network, 2 wrong
        usage or configuration, 3 the translation failed, 4 the wait timed out,
        130 interrupted, 141 stdout closed early.
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # Unknown options go on to the emulator; for any other command they are a mistake.
        if extra and args.command != "emulator":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version, or a usage error, already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command == "emulator":
        return run_emulator(args, extra)

    base_url = args.base_url or os.environ.get(BASE_URL_ENV, "").strip()
    handler: Handler = args.handler
    try:
        with _client(args) as client:
            base_url = client.base_url
            if args.verbose:
                _log_to_stderr()  # after Client(), which applies LINGODOC_LOG
            return handler(client, args)
    except KeyboardInterrupt:
        job = getattr(args, "translation_id", None) if args.command != "status" else None
        goes_on = f"; the translation goes on: `lingodoc wait {job}` resumes" if job else ""
        print(f"lingodoc: interrupted{goes_on}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`lingodoc batch big.txt | head`): stop quietly, and keep
        # Python from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # explained in one line; the traceback only with --verbose
        code, message = explain(exc, args, base_url)
        if args.verbose:
            traceback.print_exc()
        print(f"lingodoc: error: {' '.join(message.split())}", file=sys.stderr)
        return code
