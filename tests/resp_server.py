"""A fake Redis on 127.0.0.1 that answers out of step, as a desynced connection or proxy would.

It speaks just enough RESP (2 and 3) for `RedisCache`: ``HELLO`` names the protocol, ``MSET``
and ``SET`` store, ``MGET`` answers, anything else (``CLIENT SETINFO``) is ``+OK``. While
``out_of_step`` is above 0, each ``MGET`` counts it down and answers every key it holds with
the value of another key it holds: a reply that belongs to someone else's question.
Bounded: a few connections, small commands; anything bigger closes the connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import BinaryIO

MAX_CONNECTIONS = 16
MAX_ARGUMENTS = 10_000
MAX_BULK = 1 << 20  # bytes of one argument


def read_command(stream: BinaryIO) -> list[bytes] | None:
    """One command (a RESP array of bulk strings); ``None`` at its end or past the bounds."""
    header = stream.readline(32)
    if not header.startswith(b"*") or not 0 < int(header[1:]) <= MAX_ARGUMENTS:
        return None
    arguments = []
    for _ in range(int(header[1:])):
        size = stream.readline(32)
        if not size.startswith(b"$") or not 0 <= int(size[1:]) <= MAX_BULK:
            return None
        arguments.append(stream.read(int(size[1:]) + 2)[:-2])
    return arguments


def bulk(value: bytes | None) -> bytes:
    return b"$-1\r\n" if value is None else b"$%d\r\n%s\r\n" % (len(value), value)


class OutOfStepRedis:
    """The fake server, serving in threads of its own until `close`."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}
        self.out_of_step = 0  # the next MGETs answered out of step
        self.mgets = 0  # answered, in step or not
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        self._connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while len(self._connections) < MAX_CONNECTIONS:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            self._connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as stream:
            try:
                while (command := read_command(stream)) is not None:
                    connection.sendall(self._answer(command))
            except (OSError, ValueError):  # closed, or not RESP
                return

    def _answer(self, command: list[bytes]) -> bytes:
        name, arguments = command[0].upper(), command[1:]
        with self._lock:
            if name == b"MGET":
                self.mgets += 1
                held = sorted(self.values)
                if self.out_of_step <= 0 or len(held) < 2:
                    values = [self.values.get(key) for key in arguments]
                else:  # each key held answered with the value of the next key held
                    self.out_of_step -= 1
                    after = dict(zip(held, held[1:] + held[:1], strict=True))
                    values = [
                        self.values[after[key]] if key in after else None for key in arguments
                    ]
                return b"*%d\r\n%s" % (len(values), b"".join(map(bulk, values)))
            if name == b"HELLO":  # the protocol redis-py asks for, which answers in a map
                return b"%%1\r\n$5\r\nproto\r\n:%s\r\n" % (arguments or [b"2"])[0]
            if name in (b"MSET", b"SET"):
                pairs = arguments if name == b"MSET" else arguments[:2]  # SET's PX ignored
                self.values.update(zip(pairs[::2], pairs[1::2], strict=True))
        return b"+OK\r\n"

    def close(self) -> None:
        # shutdown, not close alone, wakes the threads blocked in accept and recv.
        for each in (self._listener, *self._connections):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()
