"""Run the emulator in the foreground: ``python -m lingodoc.emulator --port 7318``."""

from __future__ import annotations

import argparse
import errno
import math
import os
import secrets
import signal
import sys
import threading
import time
from types import FrameType
from typing import get_args

from lingodoc._constants import API_KEY_ENV, BASE_URL_ENV
from lingodoc.emulator._emulator import PLAN_LIMITS, Emulator
from lingodoc.emulator._state import Fault, FaultKind, count

_KINDS = get_args(FaultKind)


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 65535, not {text!r}")
    return int(text)


def _as_option(message: str) -> str:
    """The emulator's refusal of a setting, worded for the option that gave it (``--seats``)."""
    name, _, rest = message.partition(" must ")
    if name == "a key":
        name = "api_key"
    if not rest or not name.isidentifier():
        return message
    return f"argument --{name.replace('_', '-')}: must {rest}"


def _latency(text: str) -> float:
    try:
        milliseconds = float(text)
    except ValueError:
        milliseconds = math.nan
    if not (math.isfinite(milliseconds) and milliseconds >= 0):
        raise argparse.ArgumentTypeError(f"must be milliseconds, 0 or more, not {text!r}")
    return milliseconds


def _fail(text: str) -> tuple[str, float]:
    kind, _, chance = text.rpartition(":")
    if kind not in _KINDS:
        kinds = ", ".join(_KINDS)
        raise argparse.ArgumentTypeError(f"must be KIND:P, KIND one of {kinds}, not {text!r}")
    try:
        probability = float(chance)
    except ValueError:
        probability = math.nan
    if not 0 <= probability <= 1:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"P must be from 0 to 1, not {chance!r}")
    return kind, probability


# The errors of bind() that mean another program listens there (WSAEADDRINUSE on Windows).
_IN_USE = {errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", errno.EADDRINUSE)}


class _CommandLineEmulator(Emulator):
    """The emulator with the command line's own settings: ``--latency`` and ``--fail``."""

    def hold_and_fail(self, latency: float, fail: list[tuple[str, float]], seed: int) -> None:
        # Kept in the state, so that a drawn fault takes the path of an injected one.
        # server_error answers 503: the SDK retries it for every call.
        state = self._state
        state.latency = latency
        state.draws.seed(seed)
        state.chances = [
            (Fault(kind, 1, method=None, path=None, status=503, retry_after=1, delay=5.0), chance)
            for kind, chance in fail
        ]


def main(argv: list[str] | None = None, *, prog: str = "python -m lingodoc.emulator") -> int:
    """Serve the emulator until Ctrl-C (or SIGTERM).

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` by default.
        prog: The command as the user typed it, which starts its usage and error lines:
            ``lingodoc emulator`` runs this with ``prog="lingodoc emulator"``.

    Returns:
        The exit code: 0 after a clean stop, 1 if the server could not start (such as on
        a port already in use: one line on stderr says so, without a traceback), 2 for
        wrong options.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run a local stand-in for the lingodoc service in the foreground, until "
        "Ctrl-C.",
        epilog="It prints the two variables to export in another terminal:\n"
        f"  {BASE_URL_ENV}=http://127.0.0.1:7318/v1\n  {API_KEY_ENV}=ld_...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    limits = ", ".join(f"{plan} {limit:,}" for plan, limit in PLAN_LIMITS.items())
    parser.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=7318, help="port, 0 for any (default: 7318)")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument(
        "--api-key",
        help="value of the ready-made key (default: random; pass the one printed to keep it "
        "after a restart)",
    )
    parser.add_argument(
        "--plan",
        choices=sorted(PLAN_LIMITS),
        help=f"the plan, which sets the requests per hour and key: {limits}, team and "
        "business per seat (default: pro)",
    )
    parser.add_argument(
        "--seats",
        type=int,
        default=1,
        help="seats of a team or business plan, which multiply its limit (default: 1)",
    )
    parser.add_argument(
        "--rate-limit", type=int, help="requests per hour and key, in place of the plan's"
    )
    parser.add_argument(
        "--reset-style",
        choices=["seconds", "unix"],
        default="seconds",
        help="X-RateLimit-Reset as the seconds until the window resets, or as the Unix time "
        "it resets at (default: seconds)",
    )
    parser.add_argument(
        "--job-duration", type=float, default=6.0, help="seconds per document (default: 6)"
    )
    parser.add_argument(
        "--queue-time", type=float, default=0.0, help="seconds a new job is pending (default: 0)"
    )
    parser.add_argument(
        "--latency",
        type=_latency,
        default=0.0,
        metavar="MS",
        help="hold each response this many milliseconds (default: 0)",
    )
    parser.add_argument(
        "--fail",
        type=_fail,
        action="append",
        default=[],
        metavar="KIND:P",
        help=f"fail each request with the fault KIND ({', '.join(_KINDS)}; server_error "
        "answers 503) with probability P; once per KIND",
    )
    parser.add_argument(
        "--seed", type=int, metavar="N", help="seed of the --fail draws, to repeat them"
    )
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    args = parser.parse_args(argv)
    kinds = [kind for kind, _ in args.fail]
    if len(set(kinds)) < len(kinds):
        parser.error("argument --fail: give each KIND once")
    if math.fsum(probability for _, probability in args.fail) > 1:
        parser.error("argument --fail: the probabilities add up to more than 1")
    seed = args.seed if args.seed is not None else secrets.randbelow(1_000_000)

    try:
        emulator = _CommandLineEmulator(
            plan=args.plan or "pro",
            seats=args.seats,
            rate_limit=args.rate_limit,
            reset_style=args.reset_style,
            job_duration=args.job_duration,
            queue_time=args.queue_time,
            api_key=args.api_key,
        )
    except (TypeError, ValueError) as exc:
        parser.error(_as_option(str(exc)))
    emulator.hold_and_fail(args.latency / 1000, args.fail, seed)
    stopping = False

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if not stopping:  # a second Ctrl-C while stopping is not another interruption
            stopping = True
            raise KeyboardInterrupt

    previous = {}
    if threading.current_thread() is threading.main_thread():
        # Stop as cleanly on `kill` or `docker stop` as on Ctrl-C.
        previous = {
            stop: signal.signal(stop, interrupt) for stop in (signal.SIGINT, signal.SIGTERM)
        }
    export = "set" if os.name == "nt" else "export"
    started = False
    try:
        with emulator.serve(
            args.host, args.port, log_requests=not args.quiet, allow_remote=args.allow_remote
        ) as server:
            started = True
            print(
                f"lingodoc emulator running at {server.base_url} (Ctrl-C to stop)\n"
                f"API key (Full Access): {server.api_key}\n"
                f"{_keep_key(args.api_key, server.api_key)}"
                f"Rate limit: {_limit(args, emulator.rate_limit)}\n"
                f"{_slowed(args.latency, args.fail, seed)}\n"
                "To point the SDK and the CLI at it:\n"
                f"  {export} LINGODOC_BASE_URL={server.base_url}\n"
                f"  {export} LINGODOC_API_KEY={server.api_key}",
                flush=True,
            )
            while True:  # short sleeps: a signal caught by another thread ends them late
                time.sleep(0.5)
    except KeyboardInterrupt:
        print("lingodoc emulator stopped", file=sys.stderr, flush=True)
    except (OSError, ValueError) as exc:
        if started:
            raise
        if isinstance(exc, ValueError):  # a host it refuses
            parser.error(str(exc))
        print(f"{prog}: error: {_cannot_listen(args.host, args.port, exc)}", file=sys.stderr)
        return 1
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    return 0


def _keep_key(given: str | None, key: str) -> str:
    """The line that says how to keep a random key after a restart; none for a given key."""
    return "" if given is not None else f"To keep this key after a restart: --api-key {key}\n"


def _limit(args: argparse.Namespace, limit: int) -> str:
    """The rate limit in use, where it comes from and, by default, how to change it."""
    per_key = f"{count(limit, 'request')} an hour per key"
    if args.rate_limit is not None:
        return f"{per_key} (--rate-limit {args.rate_limit})"
    if args.plan is None:
        more = f"--plan ultra ({PLAN_LIMITS['ultra']:,} an hour) or --rate-limit N"
        return f"{per_key} (plan pro, the default)\n  for more: {more}"
    seats = f", {count(args.seats, 'seat')}" if args.plan in ("team", "business") else ""
    return f"{per_key} (plan {args.plan}{seats})"


def _slowed(latency: float, fail: list[tuple[str, float]], seed: int) -> str:
    """The lines that say the latency and the faults in use; none without them."""
    lines = f"Latency: each response held {latency:g} ms\n" if latency else ""
    if fail:
        odds = ", ".join(
            f"{kind}{' (503)' if kind == 'server_error' else ''} with probability {p:g}"
            for kind, p in fail
        )
        lines += f"Faults: {odds}; --seed {seed} repeats the draws\n"
    return lines


def _cannot_listen(host: str, port: int, error: OSError) -> str:
    """Say in one line why the server could not listen on ``host:port``, and what to do."""
    if error.errno in _IN_USE:
        return f"port {port} on {host} is in use; pass --port 0 to listen on any free port"
    return f"cannot listen on {host}:{port}: {error.strerror or error}"


if __name__ == "__main__":
    sys.exit(main())
