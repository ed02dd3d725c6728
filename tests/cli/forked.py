"""Run the `lingodoc` command in a process forked from one that has imported it already.

Each run is a process of its own, as `python -m lingodoc` is: its own environment,
standard streams, exit code and signal handlers. What it saves is the start of Python and
the import of lingodoc's command line, about half a second of CPU a run: a server process
started once (:func:`serve`, single-threaded, so that forking it is safe) imports them,
and forks a child for each run.

The console script itself (`python -m lingodoc`), and whatever needs a real start (a
signal sent to the process, a terminal, a reader that goes away), the tests run as
subprocesses. POSIX only: elsewhere :func:`run_forked` starts `python -m lingodoc`.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
AVAILABLE = hasattr(os, "fork")


def _run_command(args: list[str], env: dict[str, str], files: list[str]) -> None:
    """In the forked child: standard streams from ``files`` (in, out, err), then the command."""
    from lingodoc.cli import main

    flags = [os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_TRUNC]
    for fd, (path, flag) in enumerate(zip(files, flags, strict=True)):
        opened = os.open(path, flag)
        os.dup2(opened, fd)
        os.close(opened)
    os.environ.clear()
    os.environ.update(env)
    # As `python -m lingodoc` with PYTHONIOENCODING=utf-8 (tests/cli/conftest.py:child_env).
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = ["lingodoc", *args]
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # reported as the interpreter reports an uncaught exception
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    """The server: for each request (a JSON line on stdin), fork a child that runs it.

    Answers each with two JSON lines on stdout: the child's pid, then its exit code.
    """
    import contextlib
    import importlib
    import pkgutil

    import lingodoc

    # Every module of lingodoc a command may import (most of them lazily), once, here.
    for module in pkgutil.walk_packages(lingodoc.__path__, "lingodoc."):
        if not module.name.endswith(("__main__", "pytest_plugin")):
            with contextlib.suppress(ImportError):  # an optional extra that is not installed
                importlib.import_module(module.name)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the test run is not for us
    out = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                _run_command(request["args"], request["env"], request["files"])
            finally:
                os._exit(70)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        out.flush()


class _Server:
    """The one server of this test process, started at the first run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            src = str(Path(__import__("lingodoc").__file__).resolve().parents[1])
            path = os.pathsep.join([str(ROOT), src, os.environ.get("PYTHONPATH", "")])
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from tests.cli.forked import serve; serve()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": path},
            )
        return self.process

    def stop(self) -> None:
        """End the server (at the end of the test run): it exits at the end of its input."""
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(20)
            assert self.process.stdout is not None
            self.process.stdout.close()

    def answer(self, stream: IO[str], timeout: float) -> dict[str, Any] | None:
        if not select.select([stream], [], [], timeout)[0]:
            return None
        line = stream.readline()
        assert line, "the server of forked runs stopped"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(self, request: dict[str, Any], timeout: float) -> int:
        with self.lock:
            process = self.start()
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            started = self.answer(process.stdout, 20)
            assert started is not None, "the server of forked runs did not answer"
            ended = self.answer(process.stdout, timeout)
            if ended is None:
                os.kill(started["pid"], signal.SIGKILL)
                self.answer(process.stdout, 20)
                raise AssertionError(f"lingodoc {' '.join(request['args'])} ran past {timeout} s")
            code: int = ended["code"]
            return code


_server = _Server()
atexit.register(_server.stop)


def run_forked(
    args: list[str], *, env: dict[str, str], stdin: bytes = b"", timeout: float = 20
) -> tuple[int, bytes, bytes]:
    """Run `lingodoc ARGS` in a process of its own; its exit code, stdout and stderr."""
    if not AVAILABLE:
        command = [sys.executable, "-m", "lingodoc", *args]
        result = subprocess.run(
            command, input=stdin, capture_output=True, env=env, timeout=timeout, check=False
        )
        return result.returncode, result.stdout, result.stderr
    with tempfile.TemporaryDirectory(prefix="lingodoc-cli-") as directory:
        files = [str(Path(directory, name)) for name in ("in", "out", "err")]
        Path(files[0]).write_bytes(stdin)
        for path in files[1:]:
            Path(path).touch()
        code = _server.run({"args": args, "env": env, "files": files}, timeout)
        out, err = (Path(path).read_bytes() for path in files[1:])
    return code, out, err
