"""Connections counted by the operating system, for the tests over real loopback sockets.

The sockets this process holds (``/proc/self/fd``) that are connected to a port
(``/proc/self/net/tcp``). A server running in this process too has its side of each
connection (local port = the server's) told apart from the client's (remote port = the
server's). Linux only: the tests that count connections are skipped elsewhere.

scripts/soak.py counts its connections here too (``PROC_NET`` says whether it can).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

from lingodoc.emulator import translate_text
from tests.waiting import wait_until

# Whether connections can be counted here: through /proc, on Linux.
PROC_NET = sys.platform.startswith("linux") and Path("/proc/self/net/tcp").exists()
try:
    import pytest
except ModuleNotFoundError:  # scripts/soak.py imports this module without pytest (nox -s soak)
    pass
else:
    LINUX_ONLY = pytest.mark.skipif(not PROC_NET, reason="counts connections through /proc (Linux)")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
_CLOSE_WAIT = "08"


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile by another thread
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _tcp_entries() -> Iterator[tuple[int, int, str, str]]:
    """(local port, remote port, state, inode) of every TCP socket in this network namespace."""
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            yield int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16), state, inode


def client_connections(port: int) -> int:
    """Sockets this process holds that are connected to ``port``: the clients' connections.

    Not one in CLOSE_WAIT, whose server has gone: an earlier test's, not yet collected, whose
    server had the same port (the tests' servers are given free ports, which come again).
    """
    ours = _socket_inodes()
    return sum(
        1
        for _, remote, state, inode in _tcp_entries()
        if remote == port and state != _CLOSE_WAIT and inode in ours
    )


def server_connections(port: int) -> int:
    """Sockets this process holds that the server on ``port`` accepted (not the listener)."""
    ours = _socket_inodes()
    return sum(
        1
        for local, _, state, inode in _tcp_entries()
        if local == port and state != _LISTEN and inode in ours
    )


def text_for(*ids: int) -> str:
    return "Hello world " + " ".join(map(str, ids))


def expected_for(*ids: int) -> str:
    expected = "Hallo Welt " + " ".join(map(str, ids))
    # The emulator's own function agrees: the mapping checked is the one it serves.
    assert translate_text(text_for(*ids), "en", "de") == expected
    return expected


def assert_all_closed(port: int) -> None:
    """No connection left on the client's side, at once, nor on the server's soon after."""
    assert client_connections(port) == 0
    # The server's threads close their side when they read the client's FIN.
    wait_until(lambda: server_connections(port) == 0, "the server's side closed too")
