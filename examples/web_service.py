"""A small async web service that translates with lingodoc.AsyncClient.

    POST /translate   {"text": "Hello world", "to": "de", "from": "en"}
                      -> 200 {"translated_text": "Hallo Welt", "source_language": "en", ...}
    GET  /health      -> 200 {"ok": true}

It is built on the standard library alone (asyncio streams), but its shape is the one to
use with any async framework (Starlette, FastAPI, aiohttp, ...):

* one ``AsyncClient`` for the life of the process, shared by all requests (it pools
  connections and is safe to share between the tasks of one event loop), closed at shutdown;
* the handlers ``await`` the client, so a slow translation never blocks other requests;
* the SDK's exceptions become HTTP answers: the caller's mistakes a 400, a spent rate limit
  a 503 with ``Retry-After``, any other failure of the service a 502.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set, and
otherwise against the local emulator, in-process. Serves on 127.0.0.1 until Ctrl-C:

    python examples/web_service.py --port 8080
    curl -s localhost:8080/translate -d '{"text": "Hello world", "to": "de"}'
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
from typing import Any
from urllib.parse import urlsplit

import lingodoc

MAX_HEAD = 16 * 1024  # request line and headers
MAX_BODY = 64 * 1024
READ_TIMEOUT = 10.0  # seconds for a client to send its request

REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class BadRequest(Exception):
    """The request cannot be read; the message says why."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Reply:
    """A JSON answer."""

    def __init__(self, status: int, body: dict[str, Any], **headers: str) -> None:
        self.status = status
        self.body = body
        self.headers = headers


class TranslationService:
    """The application: routes requests and awaits the shared lingodoc client."""

    def __init__(self, client: lingodoc.AsyncClient) -> None:
        self.client = client

    async def handle(self, method: str, path: str, body: bytes) -> Reply:
        if path == "/health":
            return Reply(200, {"ok": True}) if method == "GET" else Reply(405, {"error": "GET"})
        if path != "/translate":
            return Reply(404, {"error": f"no such path: {path}"})
        if method != "POST":
            return Reply(405, {"error": "use POST"}, Allow="POST")
        try:
            payload = json.loads(body)
            text, target = payload["text"], payload["to"]
            source = payload.get("from", "en")
            if not all(isinstance(value, str) for value in (text, target, source)):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return Reply(400, {"error": 'send JSON: {"text": "...", "to": "de", "from": "en"}'})
        return await self.translate(text, source, target)

    async def translate(self, text: str, source: str, target: str) -> Reply:
        try:
            result = await self.client.translate(
                text, source_language=source, target_language=target
            )
        except (lingodoc.TextTooLong, lingodoc.InvalidLanguage) as error:
            return Reply(400, {"error": error.message, "code": error.code})
        except lingodoc.RateLimited as error:
            # The SDK already waited for a reset within 60 s; this one is further off.
            retry_after = str(round(error.retry_after or 60))
            return Reply(503, {"error": "busy, try again later"}, **{"Retry-After": retry_after})
        except (lingodoc.APIError, lingodoc.APIConnectionError) as error:
            # Say which request failed (for the logs), never the details of the upstream.
            request_id = getattr(error, "request_id", None)
            return Reply(502, {"error": "the translation service failed", "request_id": request_id})
        return Reply(
            200,
            {
                "translated_text": result.translated_text,
                "source_language": result.source_language,
                "target_language": result.target_language,
            },
        )

    async def serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer one request on a connection, then close it."""
        try:
            try:
                method, path, body = await asyncio.wait_for(read_request(reader), READ_TIMEOUT)
            except BadRequest as error:
                reply = Reply(error.status, {"error": str(error)})
            except (asyncio.LimitOverrunError, ValueError):
                reply = Reply(400, {"error": "malformed request"})
            else:
                reply = await self.handle(method, path, body)
            writer.write(encode(reply))
            await writer.drain()
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away or stalled: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")  # the server's limit bounds it
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest("malformed request line")
    headers = {}
    for line in filter(None, header_lines):
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))  # ValueError: a 400
    if length < 0:
        raise BadRequest("malformed Content-Length")
    if length > MAX_BODY:
        raise BadRequest(f"body too large: at most {MAX_BODY} bytes", status=413)
    body = await reader.readexactly(length)
    return parts[0].upper(), urlsplit(parts[1]).path, body


def encode(reply: Reply) -> bytes:
    body = json.dumps(reply.body).encode()
    head = [
        f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, '')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in reply.headers.items()),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def start(client: lingodoc.AsyncClient, host: str, port: int) -> asyncio.Server:
    """Start serving on ``host:port`` (0: any free port); the caller closes the server."""
    service = TranslationService(client)
    return await asyncio.start_server(service.serve_connection, host, port, limit=MAX_HEAD)


def connect() -> lingodoc.AsyncClient:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        return lingodoc.AsyncClient()
    from lingodoc.emulator import Emulator

    print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process")
    return Emulator().async_client()


async def main(host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C still interrupts
            loop.add_signal_handler(signum, stop.set)
    async with connect() as client:
        server = await start(client, host, port)
        async with server:
            bound = server.sockets[0].getsockname()
            print(f"Serving on http://{bound[0]}:{bound[1]} (Ctrl-C to stop)", flush=True)
            await stop.wait()
    print("Stopped.", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    arguments = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(arguments.host, arguments.port))
