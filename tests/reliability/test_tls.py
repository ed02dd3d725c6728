"""TLS over real sockets: certificates verified as httpx verifies them, one shared context.

A server whose certificate is signed by a test authority (``tls/ca.pem``; ``tls/server.pem``
is its certificate for 127.0.0.1 and localhost, with the key, valid until 2126), reached
directly and through a CONNECT proxy. "Certifi" below is the authority list httpx verifies
with by default; a test that must trust the test authority that way points
``certifi.where`` at it.
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
import httpx
import pytest

import lingodoc
from lingodoc import _environment
from tests.conftest import API_KEY, call, close
from tests.reliability.fault_server import send_envelope

HERE = Path(__file__).resolve().parent / "tls"
CA = str(HERE / "ca.pem")
SERVER_CERT = str(HERE / "server.pem")
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]


@pytest.fixture(autouse=True)
def no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No certificate or proxy variable set."""
    for name in [*PROXY_VARIABLES, "SSL_CERT_FILE", "SSL_CERT_DIR"]:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The trust_env of every SSL context the SDK builds from now on."""
    built: list[bool] = []
    original = httpx.create_ssl_context

    def counting(
        verify: Any = True, *args: Any, trust_env: bool = True, **kwargs: Any
    ) -> ssl.SSLContext:
        if not isinstance(verify, ssl.SSLContext):  # one given is passed through, not built
            built.append(trust_env)
        return original(verify, *args, trust_env=trust_env, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    return built


# A TLS server, and a CONNECT proxy --------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = {"translated_text": f"{body['text']}!", "source_language": "en",
                "target_language": "de"}  # fmt: skip
        send_envelope(self, data)

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
def fresh_contexts() -> Iterator[None]:
    """The SDK's shared contexts are built afresh in the test, and again after it."""
    _environment._context.cache_clear()
    yield
    _environment._context.cache_clear()


@pytest.fixture
def trust_the_test_ca_by_default(monkeypatch: pytest.MonkeyPatch, fresh_contexts: None) -> None:
    """httpx's default authorities (certifi's) are the test authority, for this test.

    The SDK's shared contexts are built afresh, with the test authority.
    """
    monkeypatch.setattr(certifi, "where", lambda: CA)


LANGUAGES = {"source_language": "en", "target_language": "de"}


async def test_clients_share_one_default_context(
    client_class: type[lingodoc.Client], builds: list[bool]
) -> None:
    clients = [
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1"),
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1", timeout=5),
        client_class(API_KEY, base_url="http://127.0.0.1:8787/v1"),
    ]
    # At most one, the first client's of this process: httpx would build one for each.
    assert builds in ([], [False])
    assert _environment.ssl_context(False) is _environment.ssl_context(False)
    for client in clients:
        await close(client)


def test_the_shared_context_verifies_as_httpx_does() -> None:
    shared, httpx_default = _environment.ssl_context(False), httpx.create_ssl_context()
    assert shared.verify_mode == httpx_default.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname is True
    assert shared.get_ca_certs() == httpx_default.get_ca_certs()
    assert shared.minimum_version == httpx_default.minimum_version
    assert shared.options == httpx_default.options


@pytest.mark.aiohttp
async def test_clients_share_the_default_context_over_real_handshakes(
    client_class: type[lingodoc.Client], tls_server: _TLSServer, trust_the_test_ca_by_default: None
) -> None:
    first = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    second = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    assert (await call(first, "translate", "one", **LANGUAGES)).translated_text == "one!"
    assert (await call(second, "translate", "two", **LANGUAGES)).translated_text == "two!"
    await close(first)
    await close(second)


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
async def test_clients_of_one_certificate_setting_share_its_context(
    client_class: type[lingodoc.Client],
    builds: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    fresh_contexts: None,
) -> None:
    monkeypatch.setenv(variable, CA if variable == "SSL_CERT_FILE" else str(HERE))
    clients = [client_class(API_KEY, base_url="https://api.lingodoc.test/v1") for _ in range(3)]
    assert builds == [True]  # when the first client is made: an unusable file is refused then
    for client in clients:
        await close(client)


async def test_a_certificate_file_changed_or_replaced_is_read_again(
    builds: list[bool], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_contexts: None
) -> None:
    bundle, rotated = tmp_path / "bundle.pem", tmp_path / "rotated.pem"
    bundle.write_text(Path(CA).read_text())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    first = _environment.ssl_context(True)
    assert _environment.ssl_context(True) is first
    # Replaced by one of the same size and mtime (cp -p, rsync -a, reproducible images).
    rotated.write_text(Path(CA).read_text())
    stat = bundle.stat()
    os.utime(rotated, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(rotated, bundle)
    second = _environment.ssl_context(True)
    assert second is not first
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert len(_environment.ssl_context(True).get_ca_certs()) > 100
    assert builds == [True, True, True]


async def test_an_unusable_certificate_file_is_refused_naming_the_variable(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("not a certificate")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with pytest.raises(lingodoc.ConfigurationError, match="SSL_CERT_FILE"):
        client_class(API_KEY, base_url="https://api.lingodoc.test/v1")
    bundle.write_text(Path(CA).read_text())
    await close(client_class(API_KEY, base_url="https://api.lingodoc.test/v1"))


@pytest.mark.aiohttp
async def test_a_server_certificate_the_default_authorities_do_not_know_is_refused(
    client_class: type[lingodoc.Client], tls_server: _TLSServer, anyio_backend: str
) -> None:
    client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    with pytest.raises(lingodoc.APIConnectionError) as caught:
        await call(client, "translate", "one", **LANGUAGES)
    await close(client)
    if anyio_backend != "trio":  # whose error says only ConnectError
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


@pytest.mark.aiohttp
async def test_ssl_cert_file_is_trusted_as_httpx_trusts_it(
    client_class: type[lingodoc.Client], tls_server: _TLSServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
    assert (await call(client, "translate", "one", **LANGUAGES)).translated_text == "one!"
    await close(client)


async def test_a_loopback_http_client_ignores_ssl_cert_file(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch, builds: list[bool]
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(Path(CA).parent / "missing.pem"))
    client = client_class(API_KEY, base_url="http://127.0.0.1:8787/v1")  # not refused
    assert True not in builds
    await close(client)


@pytest.mark.aiohttp
async def test_https_through_a_connect_proxy_verifies_inside_the_tunnel(
    client_class: type[lingodoc.Client],
    tls_server: _TLSServer,
    trust_the_test_ca_by_default: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = _ConnectProxy()
    with running(proxy):
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
        client = client_class(API_KEY, base_url=tls_server.base_url, max_retries=0, timeout=5)
        result = await call(client, "translate", "via proxy", **LANGUAGES)
        await close(client)
    assert result.translated_text == "via proxy!"
    assert proxy.tunnelled == [f"127.0.0.1:{tls_server.server_address[1]}"]


async def test_a_callers_http_client_keeps_its_own_context(
    client_class: type[lingodoc.Client], builds: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", CA)
    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    http = kind(verify=ssl.create_default_context())
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1", http_client=http)
    assert client._shared.http is http
    assert builds == []  # none built or shared for it
    await close(client)
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()
