"""A real redis-server for the tests: started on 127.0.0.1 and a free port, stopped after.

Shared by tests/test_redis_cache.py (the ``redis`` marker) and tests/cluster (the ``cluster``
marker). Nothing here is a fake: it runs Debian's ``redis-server`` (.ci/run installs it), and
under ``CI=true`` a missing one fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

STARTUP_DEADLINE = 10.0  # seconds a redis-server may take to accept connections


def free_port() -> int:
    """A port nothing listens on now: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """A redis-server on 127.0.0.1, without persistence, in a directory of its own."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._directory = tempfile.TemporaryDirectory(prefix="lingodoc-redis-")
        command = [
            "redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--logfile", "",
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command,
            cwd=self._directory.name,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._output: list[bytes] = []
        self._ready = threading.Event()
        # Its log is read to the end (a full pipe would stop the server); its readiness too.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.admin = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._output.append(line)
            if b"Ready to accept connections" in line:
                self._ready.set()
        self._ready.set()  # it exited: wait_ready() says so

    def wait_ready(self) -> None:
        if not self._ready.wait(STARTUP_DEADLINE) or self._process.poll() is not None:
            log = b"".join(self._output).decode(errors="replace")
            raise RuntimeError(f"redis-server on port {self.port} did not start:\n{log}")
        assert self.admin.ping()

    def stop(self) -> None:
        self.admin.close()
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(10)
        assert self._process.stdout is not None
        self._process.stdout.close()
        self._directory.cleanup()

    def info(self, section: str) -> dict[str, Any]:
        return dict(self.admin.info(section))

    def connections_received(self) -> int:
        """Connections the server accepted since it started (the admin's among them)."""
        return int(self.info("stats")["total_connections_received"])

    def calls(self, command: str) -> int:
        """How often ``command`` ran since the last CONFIG RESETSTAT."""
        return int(self.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))

    def clients(self) -> int:
        return int(self.info("clients")["connected_clients"])

    def wait_clients(self, count: int) -> int:
        """The connected clients once they are ``count`` (a closed connection is seen a little
        later), or as they are after 5 s."""
        deadline = time.monotonic() + 5
        while (now := self.clients()) != count and time.monotonic() < deadline:
            time.sleep(0.005)  # the server's own pace, not a wait of the cache's
        return now


@contextmanager
def running_redis(port: int | None = None) -> Iterator[RedisServer]:
    """A redis-server on ``port`` (a free one by default; tried anew if it was taken)."""
    for attempt in range(3):
        server = RedisServer(free_port() if port is None else port)
        try:
            server.wait_ready()
        except RuntimeError:
            server.stop()
            if port is not None or attempt == 2:
                raise
            continue
        try:
            yield server
        finally:
            server.stop()
        return


def require_redis_server(tests: str = "the redis tests") -> None:
    """Skip the test without redis-server; fail it under CI, where a skip is not a pass.

    Args:
        tests: What the failure under CI names: the tests that must run there.
    """
    if shutil.which("redis-server") is None:
        reason = "redis-server is not installed (apt-get install -y redis-server)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: under CI {tests} must run, not be skipped")
        pytest.skip(reason)
