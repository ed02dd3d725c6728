"""A minimal HTTP/1.1 server on 127.0.0.1 for the benchmarks: the spec's answer, after a delay.

It does the least that HTTP/1.1 with keep-alive needs (split requests on ``Content-Length``,
answer each with the same prepared bytes), so that a row measures the clients, not the
server. Every request gets the spec's success envelope of ``POST /translate`` and its
headers, ``--delay`` seconds after it arrived (a server that far away). Not for tests: it
checks nothing.

Run as a script, it serves until stdin closes or ``--max-seconds`` pass, and prints one JSON
line with ``base_url`` and ``api_key`` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading

from _common import ENVELOPE, KEY, RESPONSE_HEADERS

BODY = json.dumps(ENVELOPE).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    + b"".join(f"{name}: {value}\r\n".encode() for name, value in RESPONSE_HEADERS)
    + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)


class _Protocol(asyncio.Protocol):
    """Answers every complete request on a connection, in order, with ``RESPONSE``."""

    def __init__(self, delay: float) -> None:
        self.buffer = b""
        self.delay = delay

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        answers = 0
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = self.buffer[:end].lower()
            length = 0
            at = head.find(b"\r\ncontent-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at + 2)
                length = int(head[at + 17 : stop if stop >= 0 else None])
            if len(self.buffer) < end + 4 + length:
                break
            self.buffer = self.buffer[end + 4 + length :]
            answers += 1
        if not answers:
            return
        if self.delay:
            loop = asyncio.get_running_loop()
            loop.call_later(self.delay, self._answer, answers)
        else:
            self._answer(answers)

    def _answer(self, answers: int) -> None:
        if not self.transport.is_closing():
            self.transport.write(RESPONSE * answers)


async def _serve(delay: float, max_seconds: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Protocol(delay), "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(json.dumps({"base_url": f"http://127.0.0.1:{port}/v1", "api_key": KEY}), flush=True)
    stdin_closed = asyncio.Event()
    # Until the parent closes our stdin (or exits), or the time limit passes.
    threading.Thread(
        target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stdin_closed.set)),
        daemon=True,
    ).start()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stdin_closed.wait(), max_seconds)
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--max-seconds", type=float, default=900)
    args = parser.parse_args()
    asyncio.run(_serve(args.delay, args.max_seconds))


if __name__ == "__main__":
    main()
