"""The emulator as a real HTTP server, on the command line, and as a pytest plugin."""

from __future__ import annotations

import contextlib
import json
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
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator, Reply
from lingodoc.emulator import __main__ as emulator_command
from lingodoc.emulator.__main__ import main

pytest_plugins = ["pytester"]

SRC = str(Path(lingodoc.__file__).resolve().parents[1])
TRANSLATE = {"text": "Welcome", "source_language": "en", "target_language": "fr"}


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def local_port(response: httpx.Response) -> int:
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


def exchange(port: int, data: bytes) -> bytes:
    """Send raw bytes on a new connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(data)
        answer = b""
        # A server closing with some of a refused request unread may reset the connection.
        with contextlib.suppress(ConnectionResetError):
            while chunk := connection.recv(65536):
                answer += chunk
    return answer


def split(answer: bytes) -> tuple[str, dict[str, str], bytes]:
    """The status line, the headers (lower-case names) and the body of one raw answer."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return status, {name.lower(): value for name, value in headers.items()}, body


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
    assert head.status_code == 200  # answered as GET
    assert head.headers["content-length"] == after.headers["content-length"]
    assert head.content == b""
    assert chunked.request.headers["transfer-encoding"] == "chunked"
    assert chunked.json()["data"]["translated_text"] == "sí"
    assert after.status_code == 200
    assert len(ports) == 1  # all on one kept-alive connection


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: -3\r\n",
        b"Content-Length: x\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: gzip\r\nContent-Length: 2\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        # What int() takes and HTTP does not: a sign, an underscore; and two lengths.
        b"Content-Length: +4\r\n",
        b"Content-Length: 0_4\r\n",
        b"Content-Length: 4\r\nContent-Length: 3\r\n",
        b"Content-Length: 4, 3\r\n",
    ],
)
def test_malformed_body_framing_is_refused_and_the_connection_closed(framing: bytes) -> None:
    assert_refused_and_closed(framing + b"\r\nzz\r\n")


@pytest.mark.parametrize("size", [b"0x2", b"+2", b"0_2", b"2 2"])
def test_a_chunk_size_that_is_not_hex_digits_is_refused_and_the_connection_closed(
    size: bytes,
) -> None:
    assert_refused_and_closed(b"Transfer-Encoding: chunked\r\n\r\n" + size + b"\r\nzz\r\n0\r\n\r\n")


def assert_refused_and_closed(tail: bytes) -> None:
    """Send a POST whose headers and body end with ``tail``: 400, and the server closes."""
    with Emulator().serve() as server:
        # Read until the server closes (a connection left open times out: the test fails).
        answer = exchange(server.port, b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + tail)
    assert answer.startswith(b"HTTP/1.1 400")
    assert b'"code": "VALIDATION_ERROR"' in answer


def test_a_length_repeated_with_the_same_value_is_read() -> None:
    body = b'{"text": "cat", "source_language": "en", "target_language": "de"}'
    length = str(len(body)).encode()
    with Emulator().serve() as server:
        answer = exchange(
            server.port,
            b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Authorization: Bearer " + server.api_key.encode() + b"\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + length + b"\r\nContent-Length: " + length + b"\r\n\r\n" + body,
        )
    assert answer.startswith(b"HTTP/1.1 200")
    assert b'"translated_text": "Katze"' in answer


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


def test_absolute_form_target_is_reduced_to_its_path() -> None:
    em = Emulator()
    with em.serve() as server:
        answer = exchange(
            server.port,
            b"GET http://127.0.0.1/v1/documents?page=2 HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {em.api_key}\r\nConnection: close\r\n\r\n".encode(),
        )
    assert answer.startswith(b"HTTP/1.1 200")
    assert em.requests[-1] == ("GET", "/v1/documents", 200)


@pytest.mark.parametrize(
    ("request_head", "status", "code", "allow"),
    [
        (
            b"PROPFIND /v1/documents HTTP/1.1\r\nConnection: close\r\nAUTH",
            405,
            "METHOD_NOT_ALLOWED",
            "GET",
        ),
        (
            b"TRACE /v1/translate HTTP/1.1\r\nConnection: close\r\nAUTH",
            405,
            "METHOD_NOT_ALLOWED",
            "POST",
        ),
        (b"PROPFIND /v1/documents HTTP/1.1\r\nConnection: close\r\n", 401, "UNAUTHORIZED", None),
        (b"GARBAGE\r\n", 400, "BAD_REQUEST", None),
        (b"GET /v1/documents HTTP/1.1 extra\r\n", 400, "BAD_REQUEST", None),
        (b"GET /v1/documents HTTP/2.0\r\n", 505, "BAD_REQUEST", None),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n", 414, "REQUEST_TOO_LARGE", None),
        (b"GET /v1/documents HTTP/1.1\r\n" + b"X-A: b\r\n" * 101, 431, "REQUEST_TOO_LARGE", None),
    ],
    ids=["PROPFIND", "TRACE", "no key", "garbage", "four words", "HTTP/2", "414", "431"],
)
def test_http_servers_own_errors_come_in_the_envelope(
    request_head: bytes, status: int, code: str, allow: str | None
) -> None:
    em = Emulator()
    auth = f"Authorization: Bearer {em.api_key}\r\n".encode()
    with em.serve() as server:
        answer = exchange(server.port, request_head.replace(b"AUTH", auth) + b"\r\n")
    status_line, headers, body = split(answer)
    assert status_line.startswith(f"HTTP/1.1 {status} ")
    assert headers["content-type"] == "application/json"
    assert headers["x-ratelimit-limit"] == "1000"
    assert headers["x-request-id"].startswith("req_")
    assert headers.get("allow") == allow
    assert int(headers["content-length"]) == len(body)
    assert json.loads(body)["error"]["code"] == code
    assert json.loads(body)["success"] is False


def test_stop_joins_every_thread_of_the_server() -> None:
    em = Emulator()
    before = set(threading.enumerate())
    with em.serve() as server:
        idle = [httpx.Client(base_url=server.base_url, timeout=10) for _ in range(4)]
        for client in idle:  # keep-alive connections left open
            client.get("/documents")
        em.inject("slow", times=2, delay=30)  # two answers still to come when it stops
        waiting = [threading.Thread(target=lambda c=c: suppress_get(c)) for c in idle[:2]]
        for thread in waiting:
            thread.start()
        deadline = time.monotonic() + 10
        while len(em.requests) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(em.requests) == 6, em.requests
    left = set(threading.enumerate()) - before - set(waiting)
    for thread in waiting:
        thread.join(10)
    for client in idle:
        client.close()
    assert left == set()


def suppress_get(client: httpx.Client) -> None:
    with contextlib.suppress(httpx.HTTPError):
        client.get("/documents")


def test_stopping_takes_no_polling_interval() -> None:
    em = Emulator()
    exits = []
    for _ in range(5):
        with em.serve():
            started = time.perf_counter()
        exits.append(time.perf_counter() - started)
    assert min(exits) < 0.02


def test_serve_refuses_a_host_that_is_not_loopback_or_a_bad_port(
    capsys: pytest.CaptureFixture[str],
) -> None:
    em = Emulator()
    for host in ("0.0.0.0", "", "192.0.2.1", "example.com"):
        with pytest.raises(ValueError, match="not a loopback address"), em.serve(host):
            pass
    for port in (-1, 65536):
        with pytest.raises(ValueError, match="port"), em.serve(port=port):
            pass
    for host in ("localhost", "127.0.0.2"):
        with em.serve(host) as server:
            assert server.host == host
    for host in ("::1", "[::1]"):  # IPv6 loopback, bare or as written in a URL
        with em.serve(host) as server:
            assert server.host == "::1"
            assert server.base_url == f"http://[::1]:{server.port}/v1"
            with lingodoc.Client(server.api_key, base_url=server.base_url) as client:
                result = client.translate("cat", source_language="en", target_language="fr")
            assert result.translated_text == "chat"
    with em.serve("0.0.0.0", allow_remote=True) as server:
        assert server.port > 0
    assert "warning: the emulator listens on 0.0.0.0" in capsys.readouterr().err


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


def start_command_line(code: str | None = None) -> tuple[subprocess.Popen[str], str, int]:
    """Run the emulator (``code``, or ``python -m lingodoc.emulator``); return its URL and port."""
    args = ["-c", code] if code else ["-m", "lingodoc.emulator", "--port", "0", "--quiet"]
    process = subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    banner: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: banner.put(process.stdout.readline()), daemon=True).start()
    try:
        url = re.search(r"running at (http://127\.0\.0\.1:(\d+)/v1)", banner.get(timeout=20))
    except queue.Empty:
        url = None
    if url is None:
        process.kill()
        pytest.fail(f"the emulator did not start: {process.communicate()[1]}")
    return process, url[1], int(url[2])


def stop_command_line(process: subprocess.Popen[str], *signals: signal.Signals) -> str:
    """Send the signals; return stderr once the process has exited, within a few seconds."""
    try:
        for stop in signals:
            process.send_signal(stop)
        _, stderr = process.communicate(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return stderr


@pytest.mark.parametrize("signals", [[signal.SIGINT]] * 3 + [[signal.SIGINT, signal.SIGTERM]])
def test_command_line_stops_at_once_with_a_keep_alive_connection_open(
    signals: list[signal.Signals],
) -> None:
    process, _, port = start_command_line()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(b"GET /v1/documents HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 401")
        stderr = stop_command_line(process, *signals)
    # A second signal while it stops is not another interruption: exit 0, no traceback.
    # One that comes after the stop is over (the sender descheduled between its two
    # kills, on a loaded machine) finds the default handlers back, as any program's, and
    # ends the process by that signal; the stop itself was as clean.
    late = -signals[-1] if len(signals) > 1 else 0
    assert process.returncode in {0, late}, stderr
    assert "Traceback" not in stderr
    assert stderr.strip() == "lingodoc emulator stopped"


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX threads only")
def test_command_line_stops_on_a_signal_caught_by_another_thread() -> None:
    # A Ctrl-C the kernel hands to some other thread: Python's handler still runs on the main
    # thread, but only once that thread wakes up.
    code = (
        "import signal, sys, threading\n"
        "from lingodoc.emulator.__main__ import main\n"
        "def relay():\n"
        "    sys.stdin.readline()\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
        "threading.Thread(target=relay, daemon=True).start()\n"
        "sys.exit(main(['--port', '0', '--quiet']))\n"
    )
    process, _, _ = start_command_line(code)
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    stderr = stop_command_line(process)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "99999"], "--port: must be a number from 0 to 65535, not '99999'"),
        (["--port", "-1"], "--port: must be a number from 0 to 65535, not '-1'"),
        (["--port", "http"], "--port: must be a number from 0 to 65535, not 'http'"),
        (["--job-duration", "nan"], "job_duration must be a finite number"),
        (["--job-duration", "-1"], "job_duration must be a finite number"),
        (["--host", "0.0.0.0"], "'0.0.0.0' is not a loopback address"),
        (["--queue-time", "-1"], "queue_time must be a finite number"),
        (["--api-key", ""], "a key must be a non-empty str of printable ASCII"),
        (["--api-key", "ld key"], "a key must be a non-empty str of printable ASCII"),
    ],
)
def test_command_line_refuses_bad_options_as_a_usage_error(args: list[str], message: str) -> None:
    if "--port" not in args:
        args = [*args, "--port", "0"]
    result = subprocess.run(
        [sys.executable, "-m", "lingodoc.emulator", *args, "--quiet"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=10,  # rather than serve, as it did on 0.0.0.0
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stderr.startswith("usage: python -m lingodoc.emulator")
    assert "Traceback" not in result.stderr


def test_command_line_passes_each_setting_to_the_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    made: dict[str, object] = {}

    class Made(Exception):
        pass

    def emulator(**settings: object) -> None:
        made.update(settings)
        raise Made  # not served: the settings are what this test is about

    monkeypatch.setattr(emulator_command, "Emulator", emulator)
    with pytest.raises(Made):
        main(
            [
                *("--port", "0", "--queue-time", "2.5", "--job-duration", "3"),
                *("--rate-limit", "7", "--plan", "team", "--seats", "2"),
                *("--reset-style", "unix", "--api-key", "ld_k_1"),
            ]
        )
    assert made == {
        "plan": "team",
        "seats": 2,
        "rate_limit": 7,
        "reset_style": "unix",
        "job_duration": 3.0,
        "queue_time": 2.5,
        "api_key": "ld_k_1",
    }


def test_command_line_reports_a_port_in_use_in_one_line_suggesting_port_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["--port", str(port), "--quiet"])
    assert code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"python -m lingodoc.emulator: error: port {port} on 127.0.0.1 is in use; "
        "pass --port 0 to listen on any free port\n"
    )


def test_command_line_errors_carry_the_command_the_user_typed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `lingodoc emulator` runs this main() with its own name, which its errors then carry.
    with pytest.raises(SystemExit) as exited:
        main(["--port", "99999"], prog="lingodoc emulator")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: lingodoc emulator ")
    assert err.splitlines()[-1] == (
        "lingodoc emulator: error: argument --port: must be a number from 0 to 65535, not '99999'"
    )


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

    def test_the_fake_clock_installed_first_is_the_one_used(_clock, lingodoc_clock):
        assert lingodoc_clock is _clock
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
        with fake_clock() as clock:
            yield clock
"""


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_pytest_fixtures_in_auto_and_strict_mode(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
    )
    pytester.makeconftest(textwrap.dedent(PLUGIN_CONFTEST))
    pytester.makepyfile(textwrap.dedent(PLUGIN_TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}")
    result.assert_outcomes(passed=5)


ANYIO_TESTS = """
    import pytest

    pytestmark = pytest.mark.anyio

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(request):
        return request.param

    async def test_async_client(
        lingodoc_emulator, lingodoc_async_client, lingodoc_clock, anyio_backend
    ):
        import sniffio

        assert sniffio.current_async_library() == anyio_backend  # really on trio, too
        lingodoc_emulator.inject("server_error", status=503)
        result = await lingodoc_async_client.translate(
            "Hello", source_language="en", target_language="fr"
        )
        assert result.translated_text == "Bonjour"
        job = await lingodoc_async_client.translate_document("doc_welcome", target_language="de")
        await lingodoc_async_client.wait_for_translation(job)
        many = await lingodoc_async_client.translate_many(
            ["Hello", "Good night", "Hello"], source_language="en", target_language="de",
            batch_size=1,
        )
        assert many == ["Hallo", "Gut Nacht", "Hallo"]  # the emulator translates word by word
        assert lingodoc_clock.sleeps[-2:] == [5.0, 5.0]
"""


@pytest.mark.parametrize(
    "asyncio_plugin",
    [["-p", "no:asyncio"], ["-o", "asyncio_mode=strict"]],
    ids=["without-pytest-asyncio", "beside-pytest-asyncio-in-strict-mode"],
)
def test_pytest_fixtures_under_anyio_on_asyncio_and_trio(
    pytester: pytest.Pytester, asyncio_plugin: list[str]
) -> None:
    # As docs/testing.md says: anyio's plugin alone, or beside pytest-asyncio in strict mode
    # (in auto mode, pytest-asyncio would run the trio test on asyncio).
    pytester.makeini(
        "[pytest]\nfilterwarnings = error\n"
        + ("asyncio_default_fixture_loop_scope = function\n" if "-o" in asyncio_plugin else "")
    )
    pytester.makeconftest(textwrap.dedent(PLUGIN_CONFTEST))
    pytester.makepyfile(textwrap.dedent(ANYIO_TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider", *asyncio_plugin, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_async_client?trio? PASSED*"])


FAKE_CLOCK_TESTS = """
    import time

    def test_waits_and_429s_are_instant_and_recorded(
        lingodoc_emulator, lingodoc_client, lingodoc_clock
    ):
        started = time.monotonic()
        lingodoc_emulator.inject("rate_limit", retry_after=30)
        job = lingodoc_client.translate_document("doc_welcome", target_language="de")
        done = lingodoc_client.wait_for_translation(job)
        assert done.status == "completed"
        assert lingodoc_clock.sleeps == [30.0, 5.0, 5.0]
        assert [r.status for r in lingodoc_emulator.requests][:2] == [429, 200]
        assert time.monotonic() - started < 5

    async def test_async_too(lingodoc_async_client, lingodoc_clock):
        job = await lingodoc_async_client.translate_document("doc_welcome", target_language="fr")
        await lingodoc_async_client.wait_for_translation(job)
        assert lingodoc_clock.sleeps == [5.0, 5.0]
"""

REAL_CLOCK_CONFTEST = """
    import pytest

    @pytest.fixture
    def lingodoc_clock():
        return None
"""

REAL_CLOCK_TESTS = """
    from lingodoc import _clock
    from lingodoc.testing import FakeClock

    def test_opted_out(lingodoc_clock, lingodoc_client):
        assert lingodoc_clock is None
        assert not isinstance(_clock.current(), FakeClock)
        assert lingodoc_client.list_documents()
"""


def test_pytest_fixtures_run_on_a_fake_clock_unless_told_not_to(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makeconftest(
        "from lingodoc.emulator.pytest_plugin import (\n"
        "    lingodoc_async_client, lingodoc_client, lingodoc_clock, lingodoc_emulator,\n"
        ")\n"
    )
    pytester.makepyfile(test_fake=textwrap.dedent(FAKE_CLOCK_TESTS))
    real = pytester.mkpydir("real")
    (real / "conftest.py").write_text(textwrap.dedent(REAL_CLOCK_CONFTEST))
    (real / "test_real.py").write_text(textwrap.dedent(REAL_CLOCK_TESTS))
    # In a subprocess: this test's own fake clock must not be the one the fixtures find.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=3)


class CountingEmulator(Emulator):
    """A subclass that overrides handle(), as scripts/soak.py does to inject faults."""

    def __init__(self) -> None:
        super().__init__()
        self.handled: list[str] = []

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        self.handled.append(f"{method} {target}")
        return super().handle(method, target, headers, body)


def test_serve_answers_through_handle_so_a_subclass_sees_every_request() -> None:
    em = CountingEmulator()
    with em.serve() as server, lingodoc.Client(em.api_key, base_url=server.base_url) as client:
        result = client.translate("cat", source_language="en", target_language="fr")
    assert result.translated_text == "chat"
    assert em.handled == ["POST /v1/translate"]
