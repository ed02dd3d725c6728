"""The key is masked in what httpx and httpcore log, whenever their loggers were made.

httpx 0.28 imports httpcore (and httpcore makes its loggers) only when it builds its first
transport, and httpcore imports its HTTP/2, proxy and SOCKS modules only when a request
needs them: a filter put on the loggers that exist when the client is made would miss
those. So the first check runs in a fresh process, as an application would: logging set
up at DEBUG before lingodoc is imported, one client, and a loopback server (real sockets,
through httpcore) that echoes the key in its reason phrase and in a header.
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

import lingodoc
from lingodoc import _redaction
from tests.conftest import call, close
from tests.reliability.fault_server import FaultServer, status
from tests.reliability.test_secrets import API_KEY, BASE_URL, ClientClass, assert_hidden

SRC = str(Path(lingodoc.__file__).resolve().parents[1])
ROOT = str(Path(__file__).resolve().parents[2])

SYNC_SCRIPT = """
    import logging, sys
    logging.basicConfig(level=logging.DEBUG)  # before lingodoc, httpx or httpcore is imported
    import lingodoc

    key, base_url = sys.argv[1:]
    client = lingodoc.Client(key, base_url=base_url, max_retries=0, timeout=5.0)
    try:
        client.list_documents()
    except lingodoc.ServerError as error:
        print("raised", type(error).__name__)
    client.close()
"""

ASYNC_SCRIPT = """
    import asyncio, logging, sys
    logging.basicConfig(level=logging.DEBUG)  # before lingodoc, httpx or httpcore is imported
    import lingodoc

    async def main(key, base_url):
        client = lingodoc.AsyncClient(key, base_url=base_url, max_retries=0, timeout=5.0)
        try:
            await client.list_documents()
        except lingodoc.ServerError as error:
            print("raised", type(error).__name__)
        await client.aclose()

    asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.parametrize("script", [SYNC_SCRIPT, ASYNC_SCRIPT], ids=["sync", "async"])
def test_a_fresh_process_logging_at_debug_never_prints_a_key_the_server_echoes(
    script: str,
) -> None:
    body = json.dumps({"success": False, "error": {"code": "X", "message": "m"}}).encode()
    echo = f"Bearer {API_KEY}"
    server = FaultServer([status(500, body, {"X-Echo": echo}, reason=echo)])
    base_url = server.base_url()
    try:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script), API_KEY, base_url],
            capture_output=True,
            text=True,
            env={"PATH": "", "PYTHONPATH": SRC},
            cwd=ROOT,
            timeout=60,
        )
    finally:
        server.stop()
    assert (result.returncode, result.stdout) == (0, "raised ServerError\n"), result.stderr
    lines = result.stderr.splitlines()
    # The lines that quote what the server sent are there, each with the key masked.
    assert any(line.startswith("DEBUG:httpcore.connection:connect_tcp.started") for line in lines)
    headers = [
        line
        for line in lines
        if line.startswith("DEBUG:httpcore.http11:receive_response_headers.complete")
    ]
    assert len(headers) == 1, result.stderr
    assert "b'Bearer ****QZ7X'" in headers[0]  # the reason phrase
    assert "(b'X-Echo', b'Bearer ****QZ7X')" in headers[0]
    request_line = f'INFO:httpx:HTTP Request: GET {base_url}/documents "HTTP/1.1 500'
    assert f'{request_line} Bearer ****QZ7X"' in lines
    assert_hidden(result.stdout + result.stderr, "the output of a process logging at DEBUG")


def mock_client(client_class: ClientClass) -> lingodoc.Client | lingodoc.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"success": True, "data": []})

    transport = httpx.MockTransport(answer)
    http = httpx.Client(transport=transport) if client_class is lingodoc.Client else (
        httpx.AsyncClient(transport=transport))  # fmt: skip
    return client_class(API_KEY, base_url=BASE_URL, http_client=http)  # type: ignore[arg-type]


def masks(name: str) -> bool:
    """Whether the logger ``name`` masks the key in its records."""
    logger = logging.getLogger(name)
    record = logger.makeRecord(name, logging.INFO, __file__, 1, "got %s", (API_KEY,), None)
    return bool(logger.filter(record)) and record.getMessage() == "got ****QZ7X"


_names = itertools.count()


async def test_an_http_logger_made_after_the_client_masks_the_key_from_the_next_request(
    client_class: ClientClass,
) -> None:
    client = mock_client(client_class)
    n = next(_names)
    later, child = f"httpcore.later{n}", f"httpx.parent{n}.child"
    logging.getLogger(later)
    logging.getLogger(child)  # and its parent, a placeholder until someone asks for it
    await call(client, "list_documents")
    assert masks(later)
    assert masks(child)
    assert masks(f"httpx.parent{n}")
    assert not masks(f"elsewhere{n}")  # the application's other loggers are left alone
    await close(client)


async def test_the_check_for_new_http_loggers_looks_at_names_only_when_a_logger_was_made(
    client_class: ClientClass, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = mock_client(client_class)
    looks: list[None] = []
    look = _redaction._filter_http_loggers

    def counted() -> None:
        looks.append(None)
        look()

    monkeypatch.setattr(_redaction, "_filter_http_loggers", counted)
    for _ in range(3):
        await call(client, "list_documents")
    assert looks == []
    logging.getLogger(f"unrelated{next(_names)}")
    await call(client, "list_documents")
    await call(client, "list_documents")
    assert looks == [None]
    await close(client)


def test_only_http_loggers_get_the_filter() -> None:
    client = lingodoc.Client(API_KEY, base_url=BASE_URL)
    filtered = {
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and _redaction._filter in logger.filters
    }
    client.close()
    assert {"httpx", "httpcore", "httpcore.http11", "httpcore.http2", "hpack.hpack"} <= filtered
    assert {name.split(".")[0] for name in filtered} == {"httpx", "httpcore", "hpack"}
