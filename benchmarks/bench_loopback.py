"""Target 2: ``translate()`` over loopback, against a fast server and against the emulator.

Two servers, each in a child process on 127.0.0.1: ``_fast_server.py``, which answers the
spec's envelope at once (so the rows show the clients' own cost), and ``Emulator().serve()``
(what a user's tests run against). Against each:

- sequential calls: lingodoc's ``Client.translate()`` against tuned raw httpx (the URL and
  headers built once, the body encoded with ``json.dumps``, ``Client.send()``,
  ``json.loads``), naive raw httpx (``post(json=...)``, ``.json()``), and the floor: the
  same request bytes written to a plain socket and the answer read back and decoded, no
  HTTP library at all;
- a fixed number of workers (``--concurrency``), each making calls one after another on one
  shared ``AsyncClient``, against tuned raw ``httpx.AsyncClient`` with as many workers.
  Raw httpx gets lingodoc's default pool (keep-alive for every connection).

Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
from _common import (
    TEXT,
    emit,
    emulator_process,
    fast_server_process,
    interleaved,
    per_op,
    summary,
)

import lingodoc

# lingodoc's own pool limits: keep-alive for every connection the pool may open.
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)
# and its timeout: with httpx's 5 s default, 64 connects at once on a loaded machine can time out
TIMEOUT = httpx.Timeout(30.0)
PAYLOAD = {"text": TEXT, "source_language": "en", "target_language": "de"}


def tuned_parts(
    http: httpx.Client | httpx.AsyncClient, base_url: str, key: str
) -> tuple[httpx.URL, list[tuple[str, str]]]:
    """What a hand-tuned client builds once: the parsed URL and the full header list."""
    headers = httpx.Headers(http.headers)
    headers["Authorization"] = f"Bearer {key}"
    headers["Content-Type"] = "application/json"
    return httpx.URL(base_url + "/translate"), list(headers.multi_items())


class SocketClient:
    """The floor: one keep-alive connection, the request as bytes, the answer split by hand."""

    def __init__(self, base_url: str, key: str) -> None:
        url = httpx.URL(base_url)
        self.sock = socket.create_connection((url.host, url.port or 80))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (
            f"POST {url.path}/translate HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        ).encode()
        self.buffer = b""

    def call(self) -> str:
        body = json.dumps(PAYLOAD).encode()
        self.sock.sendall(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            self.buffer += self.sock.recv(65536)
        head = self.buffer[:end].lower()
        at = head.index(b"content-length:") + 15
        length = int(head[at : head.find(b"\r\n", at) if b"\r\n" in head[at:] else None])
        while len(self.buffer) < end + 4 + length:
            self.buffer += self.sock.recv(65536)
        content = self.buffer[end + 4 : end + 4 + length]
        self.buffer = self.buffer[end + 4 + length :]
        return json.loads(content)["data"]["translated_text"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.sock.close()


def sequential(base_url: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    naive = httpx.Client(headers={"Authorization": f"Bearer {key}"}, limits=LIMITS, timeout=TIMEOUT)
    tuned = httpx.Client(limits=LIMITS, timeout=TIMEOUT)
    url, headers = tuned_parts(tuned, base_url, key)
    sdk = lingodoc.Client(key, base_url=base_url)
    floor = SocketClient(base_url, key)

    def naive_call() -> str:
        return naive.post(url, json=PAYLOAD).json()["data"]["translated_text"]  # type: ignore[no-any-return]

    def tuned_call() -> str:
        request = httpx.Request("POST", url, headers=headers, content=json.dumps(PAYLOAD).encode())
        return json.loads(tuned.send(request).content)["data"]["translated_text"]  # type: ignore[no-any-return]

    def sdk_call() -> str:
        return sdk.translate(TEXT, source_language="en", target_language="de").translated_text

    cases: dict[str, Callable[[], str]] = {
        "socket": floor.call,
        "tuned": tuned_call,
        "naive": naive_call,
        "lingodoc": sdk_call,
    }
    answers = {name: case() for name, case in cases.items()}
    assert len(set(answers.values())) == 1, answers
    for _ in range(100):  # warm up: connections, caches, lazy imports
        for case in cases.values():
            case()
    samples = interleaved(
        {name: per_op(case, args.calls) for name, case in cases.items()}, args.seq_rounds
    )
    for closing in (naive.close, tuned.close, sdk.close, floor.close):
        closing()
    return {name: summary(values) for name, values in samples.items()}


def concurrent(base_url: str, key: str, args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.new_event_loop()
    tuned = httpx.AsyncClient(limits=LIMITS, timeout=TIMEOUT)
    url, headers = tuned_parts(tuned, base_url, key)
    sdk = lingodoc.AsyncClient(key, base_url=base_url)

    async def tuned_call() -> str:
        request = httpx.Request("POST", url, headers=headers, content=json.dumps(PAYLOAD).encode())
        response = await tuned.send(request)
        return json.loads(response.content)["data"]["translated_text"]  # type: ignore[no-any-return]

    async def sdk_call() -> str:
        result = await sdk.translate(TEXT, source_language="en", target_language="de")
        return result.translated_text

    def workers(function: Callable[[], Any]) -> Callable[[], float]:
        async def worker() -> None:
            for _ in range(args.per_worker):
                await function()

        async def all_workers() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(args.concurrency)))
            return (time.perf_counter() - started) / (args.concurrency * args.per_worker)

        return lambda: loop.run_until_complete(all_workers())

    cases = {"tuned": workers(tuned_call), "lingodoc": workers(sdk_call)}
    for case in cases.values():  # open the connections: a full round each
        case()
    samples = interleaved(cases, args.rounds)
    loop.run_until_complete(tuned.aclose())
    loop.run_until_complete(sdk.aclose())
    loop.close()
    return {name: summary(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9, help="rounds with workers")
    parser.add_argument("--seq-rounds", type=int, default=15, help="sequential rounds")
    parser.add_argument("--calls", type=int, default=300, help="calls per sequential case")
    parser.add_argument("--concurrency", type=int, default=64, help="workers")
    parser.add_argument("--per-worker", type=int, default=10)
    args = parser.parse_args()

    servers: dict[str, Any] = {}
    for name, process in (("fast", fast_server_process), ("emulator", emulator_process)):
        with process() as server:
            base_url, key = server["base_url"], server["api_key"]
            servers[name] = {
                "sequential": sequential(base_url, key, args),
                "concurrent": concurrent(base_url, key, args),
            }
    emit({"servers": servers, "concurrency": args.concurrency})


if __name__ == "__main__":
    main()
