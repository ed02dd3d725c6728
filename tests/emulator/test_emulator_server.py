"""The emulator as a real HTTP server: serve(), its framing, keep-alive, threads and stop."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import selectors
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc.emulator import MAX_BODY_BYTES, Emulator, Reply
from tests.emulator.conftest import http
from tests.waiting import PATIENCE, wait_until

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


def test_serve_outside_a_with_block_says_to_use_one() -> None:
    serving = Emulator().serve()
    with pytest.raises(AttributeError) as caught:
        serving.base_url  # noqa: B018  # what a user who forgot `with` writes
    assert "with emulator.serve() as server:" in str(caught.value)
    assert "server.base_url" in str(caught.value)
    with serving as server:  # the same object still serves, once entered
        assert server.base_url.startswith("http://127.0.0.1:")


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


def body_of(size: int) -> bytes:
    """A request of /translate ``size`` bytes long: TRANSLATE, then spaces (still JSON)."""
    request = json.dumps(TRANSLATE).encode()
    return request + b" " * (size - len(request))


@pytest.mark.parametrize("face", ["in-process", "Content-Length", "chunked"])
def test_a_body_over_the_limit_is_413_in_the_envelope_and_one_at_the_limit_passes(
    face: str,
) -> None:
    em = Emulator()
    with contextlib.ExitStack() as stack:
        base_url = None if face == "in-process" else stack.enter_context(em.serve()).base_url
        client = stack.enter_context(http(em, base_url=base_url, timeout=30))
        answers = []
        for size in (MAX_BODY_BYTES, MAX_BODY_BYTES + 1):
            body = body_of(size)
            # An iterator is sent chunked, in two chunks.
            content = iter([body[:1000], body[1000:]]) if face == "chunked" else body
            answers.append(
                client.post(
                    "/translate", content=content, headers={"Content-Type": "application/json"}
                )
            )
    at_the_limit, over = answers
    assert at_the_limit.status_code == 200
    assert at_the_limit.json()["data"]["translated_text"] == "Bienvenue"
    assert over.status_code == 413
    assert over.json() == {
        "success": False,
        "error": {
            "code": "REQUEST_TOO_LARGE",
            "message": "The request body is over the limit of 16,777,216 bytes (16 MiB).",
        },
    }
    assert over.headers["x-request-id"].startswith("req_")
    assert over.headers["x-ratelimit-limit"] == "1000"
    if face != "in-process":
        assert over.request.headers.get("transfer-encoding") == (
            "chunked" if face == "chunked" else None
        )
        assert over.headers["connection"] == "close"  # the rest of it was never read
    assert [r.status for r in em.requests] == [200]  # a body refused unread is not recorded


class ThreadsEmulator(Emulator):
    """Records the thread that answers each request."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        self.threads.append(threading.current_thread().name)
        return super().handle(method, target, headers, body)


def test_large_bodies_are_read_and_answered_by_two_threads() -> None:
    em = ThreadsEmulator()
    large = body_of(2 * 1024 * 1024)
    with (
        em.serve() as server,
        http(em, base_url=server.base_url, timeout=30) as client,
        ThreadPoolExecutor(max_workers=6) as pool,
    ):
        headers = {"Content-Type": "application/json"}

        def post(content: Any) -> int:
            return client.post("/translate", content=content, headers=headers).status_code

        chunked = [iter([large]), iter([large])]  # sent chunked
        statuses = list(pool.map(post, [large] * 6 + chunked))
        small = post(json.dumps(TRANSLATE).encode())
    assert [*statuses, small] == [200] * 9
    *large_threads, small_thread = em.threads
    assert {name.rsplit("_", 1)[0] for name in large_threads} == {
        f"lingodoc-emulator-{server.port}-large-body"
    }
    assert len(set(large_threads)) <= 2
    assert "large-body" not in small_thread  # on its connection's own thread


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
        wait_until(lambda: len(em.requests) == 6, "the two slow requests arrived")
    left = set(threading.enumerate()) - before - set(waiting)
    for thread in waiting:
        thread.join(PATIENCE)
    for client in idle:
        client.close()
    assert left == set()


def suppress_get(client: httpx.Client) -> None:
    with contextlib.suppress(httpx.HTTPError):
        client.get("/documents")


def test_stopping_takes_no_polling_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    # The accept loop waits on its sockets with no timeout, and stop() wakes it: nothing
    # polls. (How long a stop takes is a figure of benchmarks/bench_waits.py.)
    waits: list[float | None] = []
    select_ = selectors.DefaultSelector.select

    def recorded(self: selectors.BaseSelector, timeout: float | None = None) -> Any:
        if threading.current_thread().name.startswith("lingodoc-emulator-"):
            waits.append(timeout)  # the accept loop's
        return select_(self, timeout)

    monkeypatch.setattr(selectors.DefaultSelector, "select", recorded)
    em = Emulator()
    with em.serve() as server, http(em, base_url=server.base_url) as client:
        assert client.get("/documents").status_code == 200  # accepted: the loop has waited
    assert waits
    assert set(waits) == {None}


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


# A served emulator that runs out of file descriptors, in a process of its own: its limit is
# lowered, then taken up by open files until the parent says "free". "cpu" asks for the CPU
# time the process has used.
OUT_OF_DESCRIPTORS = """
import os, resource, sys
from lingodoc.emulator import Emulator

resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
with Emulator().serve() as server:
    held = []
    while len(held) < 64:
        try:
            held.append(open(os.devnull, "rb"))
        except OSError:
            break
    print(server.port, server.api_key, len(held), flush=True)
    for line in sys.stdin:
        if line.strip() == "cpu":
            times = os.times()
            print(times.user + times.system, flush=True)
        elif line.strip() == "free":
            for held_file in held:
                held_file.close()
            print("freed", flush=True)
        else:
            break
"""


def ask(process: subprocess.Popen[str], command: str | None = None) -> str:
    """Send ``command`` (if any) to the process, and return the line it answers."""
    assert process.stdin is not None
    assert process.stdout is not None
    if command is not None:
        process.stdin.write(command + "\n")
        process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], PATIENCE)
    assert ready, f"no answer to {command!r}"
    return process.stdout.readline().strip()


@contextlib.contextmanager
def child(script: str) -> Iterator[subprocess.Popen[str]]:
    """A Python process running ``script``, spoken to with `ask`; it stops as its stdin closes."""
    with subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    ) as process:
        try:
            yield process
        finally:
            try:
                process.communicate(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                process.kill()
                raise


@pytest.mark.skipif(os.name != "posix", reason="resource.setrlimit is POSIX only")
@pytest.mark.parametrize(
    "wait",
    [
        0.0,
        # Seconds out of descriptors, over which the CPU it uses is measured: a real wait, so
        # run apart with -m stress.
        pytest.param(3.0, marks=pytest.mark.stress),
    ],
    ids=["answered", "idle"],
)
def test_out_of_descriptors_it_waits_idle_and_answers_once_they_are_freed(wait: float) -> None:
    with child(OUT_OF_DESCRIPTORS) as process:
        port, key, held = ask(process).split()
        assert int(held) < 64  # opened until none was left
        with socket.create_connection(("127.0.0.1", int(port)), timeout=20) as connection:
            connection.sendall(
                f"GET /v1/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            # The connection waits in the listening socket's queue: accepting it fails.
            used = -float(ask(process, "cpu"))
            time.sleep(wait)
            used += float(ask(process, "cpu"))
            assert ask(process, "free") == "freed"
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
    assert process.returncode == 0
    assert answer.startswith(b"HTTP/1.1 200")
    if wait:
        # Retrying the accept at once would take the whole wait in CPU time, waiting idle next
        # to none: a bound with a wide margin, for the stress run alone (apart, on an idle
        # machine), never one of the suite's.
        assert used < 0.2 * wait


SERVED = """
import sys
from lingodoc.emulator import Emulator

with Emulator().serve() as server:
    print(server.port, server.api_key, flush=True)
    sys.stdin.read()  # until the test closes it
"""


def memory_mib(pid: int) -> tuple[int, int]:
    """A process's peak and current resident memory, in MiB (Linux)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    fields = dict(line.split(":", 1) for line in status.splitlines())
    return int(fields["VmHWM"].split()[0]) // 1024, int(fields["VmRSS"].split()[0]) // 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
@pytest.mark.stress  # 384 MiB sent at once: run apart, with -m stress
def test_many_large_bodies_at_once_are_answered_within_a_bounded_memory() -> None:
    clients = 24
    body = body_of(MAX_BODY_BYTES)
    with child(SERVED) as process:
        port, key = ask(process).split()
        before, _ = memory_mib(process.pid)
        with (
            httpx.Client(
                base_url=f"http://127.0.0.1:{port}/v1",
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                limits=httpx.Limits(max_connections=clients),
                timeout=120,
            ) as client,
            ThreadPoolExecutor(max_workers=clients) as pool,
        ):
            responses = list(
                pool.map(lambda _: client.post("/translate", content=body), range(clients))
            )
        peak, _ = memory_mib(process.pid)
    assert [r.status_code for r in responses] == [200] * clients
    # Read all at once, by as many threads, the bodies alone would take 384 MiB, and the C
    # allocator would keep much of it; the server reads and answers two at a time.
    assert peak - before < 256, (before, peak)
