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
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

    Answers each with two JSON lines on stdout, both carrying the request's ``id``: the
    child's pid, then its exit code.
    """
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
        out.write(json.dumps({"id": request["id"], "pid": pid}) + "\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"id": request["id"], "code": os.waitstatus_to_exitcode(status)}))
        out.write("\n")
        out.flush()


def _start_server() -> subprocess.Popen[bytes]:
    src = str(Path(__import__("lingodoc").__file__).resolve().parents[1])
    path = os.pathsep.join([str(ROOT), src, os.environ.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.cli.forked import serve; serve()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,  # unbuffered: select() on the pipe sees every byte not yet read
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
    )


class Server:
    """The server of forked runs, started at the first run, and what it answers.

    Its records are read from an unbuffered pipe into :attr:`pending`, and a record is taken
    from there before the pipe is waited on: two records can arrive in one read. Each run
    has an id, and a record of another run (one that timed out) is dropped, so that a run
    never takes another's exit code.

    ``start`` makes the server process, ``kill`` sends a signal to a pid, and ``wait`` is
    how long the server may take to answer beside a run's own time (it only forks, waits
    and writes, so a minute is a machine stalled): the runner's own tests
    (tests/cli/test_forked_runner.py) replace them.
    """

    def __init__(
        self,
        start: Callable[[], subprocess.Popen[bytes]] = _start_server,
        kill: Callable[[int, int], None] = os.kill,
        wait: float = 60.0,
    ) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.pending = b""
        self.runs = 0
        self._start = start
        self._kill = kill
        self._wait = wait

    def started(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
            self.pending = b""
        return self.process

    def stop(self) -> None:
        """End the server (at the end of the test run): it exits at the end of its input."""
        if self.process is not None:
            process, self.process = self.process, None
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.close()
            try:
                process.wait(self._wait)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()

    def _record(self, run: int, key: str, timeout: float) -> Any:
        """The value of ``key`` in run ``run``'s next record; ``None`` if none in ``timeout``."""
        assert self.process is not None
        assert self.process.stdout is not None
        stream = self.process.stdout
        deadline = time.monotonic() + timeout
        while True:
            line, newline, rest = self.pending.partition(b"\n")
            if newline:
                self.pending = rest
                record: dict[str, Any] = json.loads(line)
                if record["id"] == run:
                    return record[key]
                continue  # a record of a run that timed out
            left = max(0.0, deadline - time.monotonic())
            if not select.select([stream], [], [], left)[0]:
                return None
            read = stream.read(65536)
            assert read, "the server of forked runs stopped"
            self.pending += read

    def run(self, request: dict[str, Any], timeout: float) -> int:
        """Run ``request`` (args, env, files); its exit code.

        Raises:
            AssertionError: The run took longer than ``timeout`` seconds (it is killed), or
                the server did not answer.
        """
        with self.lock:
            process = self.started()
            assert process.stdin is not None
            self.runs += 1
            run = self.runs
            process.stdin.write(json.dumps({**request, "id": run}).encode() + b"\n")
            process.stdin.flush()
            pid = self._record(run, "pid", self._wait)
            if pid is None:
                self.stop()  # the next run starts a new server
                raise AssertionError("the server of forked runs did not answer")
            code = self._record(run, "code", timeout)
            if code is None:
                with contextlib.suppress(ProcessLookupError):  # it ended as its time ran out
                    self._kill(pid, signal.SIGKILL)
                code = self._record(run, "code", self._wait)
                if code is None:
                    self.stop()
                    raise AssertionError("the server of forked runs did not answer")
                if code == -signal.SIGKILL:
                    command = " ".join(request["args"])
                    raise AssertionError(f"lingodoc {command} ran past {timeout} s")
            assert isinstance(code, int)
            return code


_server = Server()
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
