"""The process and network a client runs in, over real loopback sockets.

- A proxy named by the environment never sees a loopback ``http://`` request,
  which carries the key in clear text.
- After ``os.fork()``, parent and child each use connections of their own: the
  child never reads from (or writes to) a socket the parent keeps alive.

The fork tests really fork (POSIX). The child reports through a pipe and leaves
with ``os._exit``, so nothing of pytest runs twice; the parent waits for it with
a bound and kills it past that.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer
from tests.conftest import API_KEY, call, close, pool_of
from tests.reliability.fault_server import FaultServers, failure_body, send_envelope, status
from tests.waiting import PATIENCE

posix_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")


# A proxy in the environment ---------------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[FaultServers]:
    started = FaultServers()
    yield started
    started.stop_all()


@pytest.fixture
def emulator_server() -> Iterator[EmulatorServer]:
    with Emulator().serve() as running:
        yield running


@pytest.mark.aiohttp  # DefaultAioHttpClient keeps the rule too
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
async def test_an_environment_proxy_never_gets_a_loopback_http_request(
    client_class: type[lingodoc.Client],
    emulator_server: EmulatorServer,
    servers: FaultServers,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    # A "proxy" that records what it is sent and answers 502: the key must never reach it.
    proxy = servers(status(502, failure_body("BAD_GATEWAY")))
    monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
    client = client_class(
        emulator_server.api_key, base_url=emulator_server.base_url, max_retries=0, timeout=5
    )
    languages = {"source_language": "en", "target_language": "de"}
    try:
        result = await call(client, "translate", "Hello world", **languages)
    except lingodoc.APIError as exc:  # the proxy's 502
        result = exc
    finally:
        await close(client)
    leaked = [request.headers.get("authorization") for request in proxy.requests]
    assert leaked == []
    assert isinstance(result, lingodoc.TextTranslation)
    assert result.translated_text == "Hallo Welt"


# fork ---------------------------------------------------------------------------------------


class _TranslatingHandler(BaseHTTPRequestHandler):
    """Answers POST /v1/translate with the text and target, and records the client's port."""

    protocol_version = "HTTP/1.1"  # keep-alive: the parent's connection stays open
    # Idle that long, it is closed: however long the child takes, the parent's stays open.
    timeout = PATIENCE
    server: _PortRecordingServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((body["text"], self.client_address[1]))
        data = {
            "translated_text": f"{body['text']} in {body['target_language']}",
            "source_language": body["source_language"],
            "target_language": body["target_language"],
        }
        send_envelope(self, data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _PortRecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _TranslatingHandler)
        self.seen: list[tuple[str, int]] = []  # (text, the client's port), in order

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def port_of(self, text: str) -> int:
        return next(port for seen, port in self.seen if seen == text)


@pytest.fixture
def translator() -> Iterator[_PortRecordingServer]:
    server = _PortRecordingServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _fork() -> int:
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a process with threads (the server's) may deadlock
        # the child; this child only sends one request and reports it.
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def in_child(work: Callable[[], object]) -> Any:
    """Run ``work`` in a forked child; return what it returned (JSON), or raise what it raised."""
    read_end, write_end = os.pipe()
    pid = _fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            try:
                report: dict[str, Any] = {"result": work()}
            except BaseException as exc:
                report = {"error": f"{type(exc).__name__}: {exc}"}
            os.write(write_end, json.dumps(report).encode())
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], PATIENCE)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        chunks = []
        while ready and (chunk := os.read(read_end, 65536)):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        _, code = os.waitpid(pid, 0)
    assert ready, f"the child did not report within {PATIENCE} s"
    assert code == 0, f"the child exited with {code}"
    report = json.loads(b"".join(chunks))
    if "error" in report:
        raise AssertionError(f"in the child: {report['error']}")
    return report["result"]


def _run(coroutine_or_value: Any) -> Any:
    if asyncio.iscoroutine(coroutine_or_value):
        return asyncio.run(coroutine_or_value)
    return coroutine_or_value


def translate(client: lingodoc.Client | lingodoc.AsyncClient, text: str) -> Any:
    """``client.translate`` into German: its result, or the coroutine of an AsyncClient's."""
    return client.translate(text, source_language="en", target_language="de")


@contextmanager
def parent(
    kind: str, base_url: str
) -> Iterator[tuple[lingodoc.Client | lingodoc.AsyncClient, Callable[[Any], str]]]:
    """A client of ``kind`` in the parent, and how the parent reads a translation's text.

    An AsyncClient runs in an event loop of the parent's, open across the fork.
    """
    if kind == "sync":
        with lingodoc.Client(API_KEY, base_url=base_url, timeout=5) as client:
            yield client, lambda result: str(result.translated_text)
        return
    async_client = lingodoc.AsyncClient(API_KEY, base_url=base_url, timeout=5)
    loop = asyncio.new_event_loop()
    try:
        yield async_client, lambda result: str(loop.run_until_complete(result).translated_text)
        loop.run_until_complete(async_client.aclose())
    finally:
        loop.close()


@posix_only
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_forked_child_never_uses_the_parents_connection(
    translator: _PortRecordingServer, kind: str
) -> None:
    with parent(kind, translator.base_url) as (client, text_of):
        assert text_of(translate(client, "parent before")) == "parent before in de"
        inherited = pool_of(client)

        def child() -> dict[str, object]:
            # An AsyncClient in an event loop of the child's own: the parent's is not here.
            text = _run(translate(client, "child")).translated_text
            return {"text": text, "new pool": pool_of(client) is not inherited}

        in_the_child = in_child(child)
        assert text_of(translate(client, "parent after")) == "parent after in de"
        assert pool_of(client) is inherited  # the parent's pool is untouched
    assert in_the_child == {"text": "child in de", "new pool": True}
    # The parent kept its connection alive; the child opened one of its own.
    assert translator.port_of("parent after") == translator.port_of("parent before")
    assert translator.port_of("child") != translator.port_of("parent before")


def _mock_http(client_class: type[Any]) -> httpx.Client | httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        text = json.loads(request.content)["text"]
        data = {"translated_text": f"{text}!", "source_language": "en", "target_language": "de"}
        return httpx.Response(200, json={"success": True, "data": data})

    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    return kind(transport=httpx.MockTransport(answer))


@posix_only
@pytest.mark.parametrize("used_before_fork", [True, False])
def test_a_callers_http_client_is_refused_in_a_child_if_it_was_used_before_the_fork(
    client_class: type[lingodoc.Client], used_before_fork: bool
) -> None:
    http = _mock_http(client_class)
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1", http_client=http)

    def translated(text: str) -> str:
        result = _run(client.translate(text, source_language="en", target_language="de"))
        return str(result.translated_text)

    if used_before_fork:
        assert translated("parent") == "parent!"

    def child() -> list[object]:
        try:
            outcome = translated("child")
        except lingodoc.LingodocError as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        return [outcome, http.is_closed]

    outcome, closed = in_child(child)
    assert closed is False  # the SDK never closes the caller's client
    if used_before_fork:
        assert outcome.startswith("LingodocError: this client's http_client was used before")
        assert "create the http_client and the client in the child" in outcome
    else:
        assert outcome == "child!"
    assert translated("parent again") == "parent again!"  # the parent is unaffected
    _run(close(client))
    _run(http.aclose() if isinstance(http, httpx.AsyncClient) else http.close())


@posix_only
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_forked_child_that_only_closes_leaves_the_parents_pool_alone(
    translator: _PortRecordingServer, kind: str
) -> None:
    with parent(kind, translator.base_url) as (client, text_of):
        assert text_of(translate(client, "parent before")) == "parent before in de"
        holding = threading.Event()
        release = threading.Event()

        def hold_the_lock() -> None:  # a parent thread inside the shared state at the fork
            with client._shared.lock:
                holding.set()
                release.wait(PATIENCE)

        thread = threading.Thread(target=hold_the_lock)
        thread.start()
        assert holding.wait(PATIENCE)

        def child() -> dict[str, object]:
            # Its first and only use: a worker shutting down (an AsyncClient in a loop of the
            # child's own: the parent's loop is still open, but not here).
            _run(close(client))
            return {"closed": client.is_closed}

        try:
            in_the_child = in_child(child)  # hung on the parent's lock before the fix
        finally:
            release.set()
            thread.join()
        assert in_the_child == {"closed": True}
        assert text_of(translate(client, "parent after")) == "parent after in de"
    # The parent's connection lived on: what the child closed was its own copy of it.
    assert translator.port_of("parent after") == translator.port_of("parent before")


@posix_only
def test_a_forked_childs_new_http_client_builds_no_ssl_context(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared context is plain memory, as usable in the child as in the parent.
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    inherited = client._shared.transport
    built: list[object] = []
    original = httpx.create_ssl_context
    monkeypatch.setattr(
        httpx, "create_ssl_context", lambda *a, **k: built.append(k) or original(*a, **k)
    )

    def child() -> dict[str, object]:
        client._shared.in_this_process()  # what the child's first call does
        return {"new pool": client._shared.transport is not inherited, "built": len(built)}

    assert in_child(child) == {"new pool": True, "built": 0}
    _run(close(client))
