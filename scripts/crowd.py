"""Run a command on a crowded machine, as a shared CI runner is: the suite must pass there.

    python scripts/crowd.py load -- python -m pytest -q -p no:cacheprovider
    python scripts/crowd.py pause -- python -m pytest -q -p no:cacheprovider tests/cli -n 2

``load``: beside the command, three busy loops per core and, per core, a loop that starts
``python3 -c pass`` over and over (what the machine's other jobs do); each is killed by its
pid when the command ends. ``pause``: the command's child processes (pytest-xdist's workers)
are stopped (SIGSTOP) for 0.4 s in every 1.2 s, as a descheduled process is, then resumed.
Exits with the command's exit code. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

BUSY = "while True: pass"
SPAWNING = "import subprocess, sys\nwhile True: subprocess.run([sys.executable, '-c', 'pass'])"


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def signal_all(pids: list[int], signal_number: int) -> None:
    """Send ``signal_number`` to each of ``pids`` that is still there."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal_number)


def load(command: list[str]) -> int:
    """Run ``command`` beside the crowd; its exit code."""
    cores = os.cpu_count() or 1
    crowd = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(3 * cores)]
    crowd += [subprocess.Popen([sys.executable, "-c", SPAWNING]) for _ in range(cores)]
    print(f"crowd.py: {3 * cores} busy loops, {cores} spawning loops", file=sys.stderr)
    try:
        return subprocess.run(command, check=False).returncode
    finally:
        for process in crowd:
            process.kill()
            process.wait()


def pause(command: list[str], stop: float, every: float) -> int:
    """Run ``command``, its children stopped ``stop`` seconds in ``every``; its exit code."""
    process = subprocess.Popen(command)
    ended = threading.Event()

    def stall() -> None:
        while not ended.wait(every - stop):
            stopped = children(process.pid)
            signal_all(stopped, signal.SIGSTOP)
            ended.wait(stop)
            signal_all(stopped, signal.SIGCONT)

    staller = threading.Thread(target=stall, daemon=True)
    staller.start()
    try:
        return process.wait()
    finally:
        ended.set()
        staller.join()


def main() -> int:
    """The command line; the command's exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["load", "pause"])
    parser.add_argument("--stop", type=float, default=0.4, help="seconds stopped (pause)")
    parser.add_argument("--every", type=float, default=1.2, help="in every so many seconds")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    if args.mode == "load":
        return load(command)
    if not Path("/proc/self/task").is_dir():
        parser.error("pause finds the command's processes in /proc, which this system lacks")
    return pause(command, args.stop, args.every)


if __name__ == "__main__":
    sys.exit(main())
