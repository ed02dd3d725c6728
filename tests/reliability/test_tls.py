"""The SSL contexts of the SDK's own HTTP clients (issue 16): shared, and built only when needed.

Over real TLS on loopback: a server whose certificate is signed by a test authority
(``tls/ca.pem``; ``tls/server.pem`` is its certificate for 127.0.0.1 and localhost, with
the key, valid until 2126), reached directly and through a CONNECT proxy. "Certifi"
below is the authority list httpx verifies with by default; a test that must trust the
test authority that way points ``certifi.where`` at it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import certifi
import httpcore
import httpx
import pytest

import lingodoc
from lingodoc import _tls
from lingodoc._async_network import AsyncStream
from lingodoc._sync_network import Stream
from tests.conftest import API_KEY, call, close

HERE = Path(__file__).resolve().parent / "tls"
CA = str(HERE / "ca.pem")
SERVER_CERT = str(HERE / "server.pem")
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict[Any, ssl.SSLContext]:
    """No context shared from another test, no certificate or proxy variable set."""
    contexts: dict[Any, ssl.SSLContext] = {}
    monkeypatch.setattr(_tls, "_contexts", contexts)
    for name in [*PROXY_VARIABLES, *_tls.CERTIFICATE_ENV]:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return contexts


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The trust_env of every SSL context httpx builds from now on."""
    built: list[bool] = []
    original = httpx.create_ssl_context

    def counting(verify: Any = True, *args: Any, **kwargs: Any) -> ssl.SSLContext:
        if not isinstance(verify, ssl.SSLContext):  # one given is passed through, not built
            built.append(kwargs.get("trust_env", True))
        return original(verify, *args, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    monkeypatch.setattr(httpx._config, "create_ssl_context", counting)
    monkeypatch.setattr(httpx._transports.default, "create_ssl_context", counting)
    return built


def context_of(client: lingodoc.Client | lingodoc.AsyncClient) -> ssl.SSLContext:
    """The SSL context the pools of a client's http client are given."""
    return pool_context(client._shared.http)


def pool_context(http: httpx.Client | httpx.AsyncClient) -> ssl.SSLContext:
    """The SSL context the pools of the SDK's own ``http`` are given (made when first needed)."""
    transport: Any = http._transport
    shard = next((shard for shard in transport.shards if shard is not None), None)
    if shard is None:  # no pool used yet: one made as the client makes them
        shard = transport._make(1)
    context: ssl.SSLContext = shard._pool._ssl_context
    return context


# A TLS server, and a CONNECT proxy --------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = {"translated_text": f"{body['text']}!", "source_language": "en",
                "target_language": "de"}  # fmt: skip
        payload = json.dumps({"success": True, "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(SERVER_CERT)
        # The handshake happens in the handler's thread, at its first read: a client
        # that refuses the certificate does not stop the server.
        self.socket = context.wrap_socket(
            self.socket, server_side=True, do_handshake_on_connect=False
        )

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that refused the certificate

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}/v1"


@contextlib.contextmanager
def running(server: ThreadingHTTPServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def tls_server() -> Iterator[_TLSServer]:
    server = _TLSServer()
    with running(server):
        yield server


class _ConnectHandler(BaseHTTPRequestHandler):
    """Tunnels a CONNECT to its target and relays bytes both ways; records what it tunnelled."""

    server: _ConnectProxy

    def do_CONNECT(self) -> None:
        host, port = self.path.rsplit(":", 1)
        self.server.tunnelled.append(self.path)
        with socket.create_connection((host, int(port)), timeout=5) as upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            relay = threading.Thread(target=_pipe, args=(upstream, self.connection), daemon=True)
            relay.start()
            _pipe(self.connection, upstream)
            relay.join(timeout=5)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _pipe(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            target.sendall(chunk)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


class _ConnectProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ConnectHandler)
        self.tunnelled: list[str] = []


@pytest.fixture
def trust_the_test_ca_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx's default authorities (certifi's) are the test authority, for this test."""
    monkeypatch.setattr(certifi, "where", lambda: CA)


LANGUAGES = {"source_language": "en", "target_language": "de"}


# Construction builds no context; clients share one -----------------------------------------


async def test_building_clients_builds_no_ssl_context(
    client_class: type[lingodoc.Client], builds: list[bool], fresh: dict[Any, ssl.SSLContext]
) -> None:
    clients = [
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1"),
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1", timeout=5),
        client_class(API_KEY, base_url="http://127.0.0.1:8787/v1"),
    ]
    assert [context_of(client) for client in clients] == [_tls.DEFERRED] * 3
    assert builds == []
    assert fresh == {}
    for client in clients:
        await close(client)


async def test_clients_share_the_default_context_built_at_the_first_handshake(
    client_class: type[lingodoc.Client],
    tls_server: _TLSServer,
    trust_the_test_ca_by_default: None,
    builds: list[bool],
    fresh: dict[Any, ssl.SSLContext],
) -> None:
    first = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    second = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    assert (await call(first, "translate", "one", **LANGUAGES)).translated_text == "one!"
    assert (await call(second, "translate", "two", **LANGUAGES)).translated_text == "two!"
    assert builds == [False]  # one context, for both: httpx's default, without the environment
    (shared,) = fresh.values()
    assert shared is not _tls.DEFERRED
    assert context_of(first) is context_of(second) is _tls.DEFERRED
    await close(first)
    await close(second)


def test_threads_that_race_for_the_default_context_build_it_once(
    builds: list[bool], fresh: dict[Any, ssl.SSLContext]
) -> None:
    barrier = threading.Barrier(8)
    got: list[ssl.SSLContext] = []

    def resolve() -> None:
        barrier.wait(timeout=10)
        got.append(_tls.resolve(_tls.DEFERRED))

    threads = [threading.Thread(target=resolve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(got) == 8
    assert len({id(context) for context in got}) == 1
    assert builds == [False]


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
async def test_clients_of_one_certificate_setting_share_its_context(
    client_class: type[lingodoc.Client],
    builds: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, CA if variable == "SSL_CERT_FILE" else str(HERE))
    first = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    second = lingodoc.AsyncClient(API_KEY, base_url="https://api.lingodoc.test/v1")
    # Built when the clients are (an unusable file is refused there), once for both.
    assert builds == [True]
    assert context_of(first) is context_of(second)
    assert context_of(first) is not _tls.DEFERRED
    await close(first)
    await second.aclose()


async def test_a_changed_certificate_setting_gets_a_context_of_its_own(
    client_class: type[lingodoc.Client],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    ours = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    certifis = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    # The same path, its file replaced by another with other contents.
    bundle = tmp_path / "bundle.pem"
    bundle.write_text(Path(CA).read_text())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    before = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    bundle.write_text(Path(CA).read_text() + Path(certifi.where()).read_text())
    after = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    contexts = [context_of(client) for client in (ours, certifis, before, after)]
    assert len({id(context) for context in contexts}) == 4
    counts = [len(context.get_ca_certs()) for context in contexts]
    assert counts[0] == counts[2] == 1
    assert counts[1] > 100
    assert counts[3] == counts[1] + 1
    for client in (ours, certifis, before, after):
        await close(client)


async def test_a_bundle_swapped_for_one_of_the_same_size_and_mtime_gets_a_context_of_its_own(
    client_class: type[lingodoc.Client],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # cp -p, rsync -a and reproducible images keep a file's mtime: a rotated bundle of the
    # same size must still be read again.
    bundle, rotated = tmp_path / "bundle.pem", tmp_path / "rotated.pem"
    bundle.write_text(Path(CA).read_text())
    rotated.write_text(Path(CA).read_text())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    before = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    stat = bundle.stat()
    os.utime(rotated, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(rotated, bundle)
    assert (bundle.stat().st_size, bundle.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    after = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    assert context_of(after) is not context_of(before)
    for client in (before, after):
        await close(client)


async def test_an_unusable_certificate_file_is_refused_and_a_fixed_one_then_used(
    client_class: type[lingodoc.Client],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    fresh: dict[Any, ssl.SSLContext],
) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("not a certificate")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with pytest.raises(lingodoc.ConfigurationError, match="SSL_CERT_FILE"):
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    assert fresh == {}  # a failure is not kept
    bundle.write_text(Path(CA).read_text())
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    assert len(context_of(client).get_ca_certs()) == 1
    await close(client)


# Verifying is unchanged ------------------------------------------------------------------


def test_the_shared_contexts_verify_as_httpx_does() -> None:
    default = _tls.resolve(_tls.DEFERRED)
    httpx_default = httpx.create_ssl_context()
    for context in (default, _tls.verify_for(trust_env=False)):
        assert context.verify_mode == ssl.CERT_REQUIRED
    assert default.check_hostname is True
    assert default.verify_mode == httpx_default.verify_mode
    assert default.get_ca_certs() == httpx_default.get_ca_certs()
    assert default.minimum_version == httpx_default.minimum_version
    assert default.options == httpx_default.options
    # The stand-in trusts no one: a handshake made with it by mistake fails.
    assert _tls.DEFERRED.verify_mode == ssl.CERT_REQUIRED
    assert _tls.DEFERRED.check_hostname is True
    assert _tls.DEFERRED.get_ca_certs() == []


async def test_a_server_certificate_the_default_authorities_do_not_know_is_refused(
    client_class: type[lingodoc.Client], tls_server: _TLSServer, anyio_backend: str
) -> None:
    client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    with pytest.raises(lingodoc.APIConnectionError) as caught:
        await call(client, "translate", "one", **LANGUAGES)
    await close(client)
    if anyio_backend != "trio":  # whose error says only ConnectError
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


async def test_ssl_cert_file_is_trusted_as_httpx_trusts_it(
    client_class: type[lingodoc.Client], tls_server: _TLSServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    assert (await call(client, "translate", "one", **LANGUAGES)).translated_text == "one!"
    await close(client)


async def test_a_loopback_http_client_ignores_ssl_cert_file_as_before(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch, builds: list[bool]
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    client = client_class(API_KEY, base_url="http://127.0.0.1:8787/v1")
    assert context_of(client) is _tls.DEFERRED
    assert builds == []
    await close(client)


async def test_https_through_a_connect_proxy_uses_the_shared_context_inside_the_tunnel(
    client_class: type[lingodoc.Client],
    tls_server: _TLSServer,
    trust_the_test_ca_by_default: None,
    monkeypatch: pytest.MonkeyPatch,
    fresh: dict[Any, ssl.SSLContext],
) -> None:
    proxy = _ConnectProxy()
    with running(proxy):
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
        result = await call(client, "translate", "via proxy", **LANGUAGES)
        await close(client)
    assert result.translated_text == "via proxy!"
    assert proxy.tunnelled == [f"127.0.0.1:{tls_server.server_address[1]}"]
    assert len(fresh) == 1


# The streams swap the stand-in, and nothing else --------------------------------------------


class _RecordingStream(httpcore.NetworkStream, httpcore.AsyncNetworkStream):  # type: ignore[misc]
    def __init__(self) -> None:
        self.contexts: list[ssl.SSLContext] = []

    def start_tls(self, ssl_context: ssl.SSLContext, *args: Any) -> _RecordingStream:
        self.contexts.append(ssl_context)
        return self


class _AsyncRecordingStream(_RecordingStream):
    async def start_tls(  # type: ignore[override]
        self, ssl_context: ssl.SSLContext, *args: Any
    ) -> _RecordingStream:
        self.contexts.append(ssl_context)
        return self


async def test_the_sdk_streams_hand_shake_with_the_shared_context_in_place_of_the_stand_in() -> (
    None
):
    own = ssl.create_default_context()  # a proxy's, or any other: passed as it is
    sync_inner, async_inner = _RecordingStream(), _AsyncRecordingStream()
    for context in (_tls.DEFERRED, own):
        Stream(sync_inner).start_tls(context, "example.test")
        await AsyncStream(async_inner).start_tls(context, "example.test")
    shared = _tls.resolve(_tls.DEFERRED)
    assert sync_inner.contexts == async_inner.contexts == [shared, own]
    assert shared is not _tls.DEFERRED


# A caller's http client is the caller's -------------------------------------------------------


async def test_a_callers_http_client_keeps_its_own_context(
    client_class: type[lingodoc.Client],
    builds: list[bool],
    fresh: dict[Any, ssl.SSLContext],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    theirs = ssl.create_default_context()
    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    http = kind(verify=theirs)
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1", http_client=http)
    assert client._shared.http is http
    assert http._transport._pool._ssl_context is theirs  # type: ignore[attr-defined]
    assert fresh == {}  # none built or shared for it
    await close(client)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


def test_the_contexts_kept_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for number in range(_tls.MAX_CONTEXTS + 3):
        bundle = tmp_path / f"{number}.pem"
        bundle.write_text(Path(CA).read_text())
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        _tls.verify_for(trust_env=True)
    assert len(_tls._contexts) == _tls.MAX_CONTEXTS
    assert ("SSL_CERT_FILE", str(tmp_path / "0.pem")) not in {key[:2] for key in _tls._contexts}
