"""The emulator as a real HTTP server, on the command line, and as a pytest plugin."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator
from lingodoc.emulator.__main__ import main

pytest_plugins = ["pytester"]

SRC = str(Path(lingodoc.__file__).resolve().parents[1])
TRANSLATE = {"text": "Welcome", "source_language": "en", "target_language": "fr"}


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def local_port(response: httpx.Response) -> int:
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


def test_serve_yields_a_loopback_base_url_and_the_key() -> None:
    em = Emulator()
    with em.serve() as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        with httpx.Client(base_url=server.base_url, headers=headers) as client:
            response = client.post("/translate", json=TRANSLATE)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.base_url)
    assert server.base_url.endswith(f":{server.port}/v1")
    assert server.api_key == em.api_key
    assert server.emulator is em
    assert em.api_key not in repr(server)
    assert response.http_version == "HTTP/1.1"
    assert response.json()["data"] == {
        "translated_text": "Bienvenue",
        "source_language": "en",
        "target_language": "fr",
    }
    assert response.headers["x-ratelimit-remaining"] == "999"
    assert response.headers["x-request-id"].startswith("req_")


def test_server_stops_on_exit() -> None:
    with Emulator().serve() as server:
        pass
    with httpx.Client() as client, pytest.raises(httpx.ConnectError):
        client.get(f"{server.base_url}/documents")


def test_exit_ends_open_keep_alive_connections() -> None:
    em = Emulator()
    with em.serve() as server:
        connection = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        request = (
            f"GET /v1/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {em.api_key}\r\n\r\n"
        )
        connection.sendall(request.encode())
        first = connection.recv(65536)
    with connection:
        rest = b""
        for _ in range(10):  # read to the end of the stream, whatever the chunking
            chunk = connection.recv(65536)
            if not chunk:
                break
            rest += chunk
    assert first.startswith(b"HTTP/1.1 200")
    assert b"HTTP/1.1" not in rest  # nothing but the rest of that one answer
    assert chunk == b""  # then the server closed the connection


def test_revocation_applies_on_an_open_keep_alive_connection() -> None:
    em = Emulator()
    key = em.create_key("doomed")
    with (
        em.serve() as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}
        ) as client,
    ):
        first = client.get("/documents")
        em.revoke_key(key)
        second = client.get("/documents")
        ports = {local_port(first), local_port(second)}
    assert first.status_code == 200
    assert second.status_code == 401
    assert len(ports) == 1  # the same connection


def test_head_gets_no_body_and_chunked_bodies_are_read() -> None:
    em = Emulator()
    body = [b'{"text": "yes", ', b'"source_language": "en", "target_language": "es"}']
    headers = {"Authorization": f"Bearer {em.api_key}", "Content-Type": "application/json"}
    with em.serve() as server, httpx.Client(base_url=server.base_url, headers=headers) as client:
        head = client.head("/documents")
        chunked = client.post("/translate", content=iter(body))
        after = client.get("/documents")
        ports = {local_port(head), local_port(chunked), local_port(after)}
    assert head.status_code == 405
    assert head.headers["allow"] == "GET"
    assert head.content == b""
    assert chunked.request.headers["transfer-encoding"] == "chunked"
    assert chunked.json()["data"]["translated_text"] == "sí"
    assert after.status_code == 200
    assert len(ports) == 1  # all on one kept-alive connection


@pytest.mark.parametrize(
    "framing",
    [b"Content-Length: -3\r\n", b"Content-Length: x\r\n", b"Transfer-Encoding: chunked\r\n"],
)
def test_malformed_body_framing_is_refused_and_the_connection_closed(framing: bytes) -> None:
    with (
        Emulator().serve() as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as connection,
    ):
        connection.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\nzz\r\n")
        answer = b""
        for _ in range(10):  # read to the end of the stream, whatever the chunking
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400")
    assert b'"code": "VALIDATION_ERROR"' in answer
    assert chunk == b""  # closed by the server


def test_64_concurrent_keep_alive_connections() -> None:
    em = Emulator()
    clients = 64
    barrier = threading.Barrier(clients, timeout=30)
    tls = ssl.create_default_context()  # unused on http://, but costly to make 64 times

    def session(base_url: str) -> tuple[set[int], list[int]]:
        with httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {em.api_key}"},
            limits=httpx.Limits(max_connections=1),
            timeout=30,
            verify=tls,
        ) as client:
            responses = [client.post("/translate", json=TRANSLATE)]
            barrier.wait()  # all 64 connections are open at this point
            responses += [client.get("/documents") for _ in range(3)]
            return {local_port(r) for r in responses}, [r.status_code for r in responses]

    with em.serve() as server, ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(session, [server.base_url] * clients))

    ports = [port for session_ports, _ in results for port in session_ports]
    assert all(len(session_ports) == 1 for session_ports, _ in results)  # one kept-alive
    assert len(set(ports)) == clients  # and 64 different ones
    assert all(statuses == [200, 200, 200, 200] for _, statuses in results)
    assert len(em.requests) == clients * 4


def test_sdk_client_over_real_http() -> None:
    em = Emulator(job_duration=0)
    with em.serve() as server, lingodoc.Client(server.api_key, base_url=server.base_url) as client:
        translated = client.translate("my dog", source_language="en", target_language="de")
        job = client.translate_document("doc_welcome", target_language="de")
        status = client.get_translation(job.translation_id)
    assert translated.translated_text == "mein Hund"
    assert status.status == "completed"


# -- command line -------------------------------------------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_command_line_prints_url_and_key_and_stops_cleanly(stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "lingodoc.emulator", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None

    def read_lines() -> None:
        for line in process.stdout or ():
            lines.put(line)

    reader = threading.Thread(target=read_lines)
    reader.start()
    try:
        output = [lines.get(timeout=20) for _ in range(6)]  # bounded wait for the banner
        url = re.search(r"running at (http://127\.0\.0\.1:\d+/v1)", output[0])
        key = re.search(r"API key \(Full Access\): (ld_[0-9a-f]{32})$", output[1].strip())
        assert url is not None
        assert key is not None
        with httpx.Client(headers={"Authorization": f"Bearer {key[1]}"}) as client:
            response = client.post(f"{url[1]}/translate", json=TRANSLATE)
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        reader.join(timeout=5)

    assert response.json()["data"]["translated_text"] == "Bienvenue"
    assert output[4].strip() == f"export LINGODOC_BASE_URL={url[1]}"
    assert output[5].strip() == f"export LINGODOC_API_KEY={key[1]}"
    assert process.returncode == 0
    assert "Traceback" not in stderr
    assert "stopped" in stderr


def test_command_line_reports_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["--port", str(port), "--quiet"])
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_importing_lingodoc_does_not_import_the_emulator() -> None:
    script = (
        "import sys, lingodoc\n"
        "assert 'lingodoc.emulator' not in sys.modules\n"
        "import lingodoc.emulator.pytest_plugin, lingodoc.emulator\n"
        "assert 'http.server' not in sys.modules  # only when serving\n"
        "print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
        check=False,
    )
    assert result.stdout.strip() == "ok", result.stderr


# -- pytest plugin ------------------------------------------------------------------------

PLUGIN_TESTS = """
    import pytest
    from lingodoc.emulator import Emulator

    USED = []

    def test_emulator(lingodoc_emulator):
        assert isinstance(lingodoc_emulator, Emulator)
        assert lingodoc_emulator.translations == {}

    def test_client(lingodoc_emulator, lingodoc_client):
        USED.append(lingodoc_client)
        lingodoc_emulator.inject("server_error")
        result = lingodoc_client.translate("Hello", source_language="en", target_language="de")
        assert result.translated_text == "Hallo"
        assert [r.status for r in lingodoc_emulator.requests] == [500, 200]

    @pytest.mark.asyncio
    async def test_async_client(lingodoc_async_client):
        USED.append(lingodoc_async_client)
        result = await lingodoc_async_client.translate(
            "Hello", source_language="en", target_language="fr"
        )
        assert result.translated_text == "Bonjour"

    def test_clients_were_closed_after_their_tests():
        assert [client.is_closed for client in USED] == [True, True]
"""

# Imported rather than registered with -p, so this works whether or not the pytest11 entry
# point is installed.
PLUGIN_CONFTEST = """
    import pytest
    from lingodoc.emulator.pytest_plugin import (
        lingodoc_async_client, lingodoc_client, lingodoc_emulator,
    )
    from lingodoc.testing import fake_clock

    @pytest.fixture(autouse=True)
    def _clock():
        with fake_clock():
            yield
"""


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_pytest_fixtures_in_auto_and_strict_mode(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
    )
    pytester.makeconftest(textwrap.dedent(PLUGIN_CONFTEST))
    pytester.makepyfile(textwrap.dedent(PLUGIN_TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}")
    result.assert_outcomes(passed=4)
