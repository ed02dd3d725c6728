"""What a server sends never acts on the terminal: `lingodoc` prints its control characters
as escapes (``\\x1b``, ``\\x9b``, ``\\r``, ...), in results, statuses, ids, names, progress,
error messages and tracebacks, and a line break of the server's never starts a line of output.

The server here is a small loopback HTTP server (real sockets, as the command runs in its
own process) whose every text holds a clear-screen, an OSC 52 clipboard write, a window
title, a C1 CSI, a carriage return and a line break followed by a forged error line.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import lingodoc
from lingodoc.cli import _VisibleFormatter, main
from lingodoc.cli._progress import Progress
from lingodoc.cli._visible import visible
from tests.cli.conftest import child_env
from tests.cli.forked import run_forked

HOSTILE = "A\x1b[2J\x1b]52;c;SGVsbG8=\x07\x1b]0;title\x07\x9b6n\rB\nlingodoc: error: forged"
# How the command shows it on one line.
SHOWN = r"A\x1b[2J\x1b]52;c;SGVsbG8=\x07\x1b]0;title\x07\x9b6n\rB\nlingodoc: error: forged"
# As it shows in a line where the server's line breaks became spaces (a batch line, an error).
ONE_LINE = SHOWN.replace(r"\r", " ").replace(r"\n", " ")
KEY = "ld_" + "0" * 28 + "WXYZ"
# Any control character (C0, DEL, C1) but the line break that ends each line of output.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


class Handler(BaseHTTPRequestHandler):
    """The service, with a hostile text in every field the command prints."""

    def do_GET(self) -> None:
        if self.path == "/v1/documents":
            self.answer(200, [{"id": f"doc_{HOSTILE}", "name": HOSTILE}, {"id": "doc_ok"}])
        elif self.path == "/v1/translations/tr_status":  # every field the status line shows
            self.answer(200, {"translation_id": "tr_status", "status": HOSTILE, "progress": 40,
                              "document_id": HOSTILE, "target_language": HOSTILE})  # fmt: skip
        elif self.path == "/v1/translations/tr_done":
            self.answer(200, {"translation_id": "tr_done", "status": "completed", "progress": 100,
                              "document_id": HOSTILE, "target_language": HOSTILE})  # fmt: skip
        elif self.path == "/v1/translations/tr_failed":
            self.answer(200, {"translation_id": "tr_failed", "status": "failed", "progress": 50,
                              "error": {"message": HOSTILE}})  # fmt: skip
        else:  # an error: message, code and request id (a raw C1 byte in a header)
            body = {"success": False, "error": {"code": f"E{HOSTILE}", "message": HOSTILE}}
            self.send(400, json.dumps(body).encode(), {"X-Request-Id": "req_\x9b2J"})

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/translate":
            self.answer(200, {"translated_text": HOSTILE, "source_language": "en",
                              "target_language": "de"})  # fmt: skip
        elif self.path == "/v1/translate/batch":
            self.answer(200, {"translations": [HOSTILE for _ in sent["texts"]]})
        else:  # /v1/documents/{id}/translate: the job of that document (another is refused)
            document_id = self.path.split("/")[3]
            self.answer(200, {"document_id": document_id, "translation_id": f"tr_{HOSTILE}",
                              "status": HOSTILE})  # fmt: skip

    def answer(self, status: int, data: Any) -> None:
        self.send(status, json.dumps({"success": True, "data": data}).encode(), {})

    def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)  # encoded as latin-1: "\x9b" is the byte 0x9b
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def run(base_url: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `lingodoc ARGS` in a process of its own (forked: tests/cli/forked.py); check and
    decode what it printed."""
    code, out, err = run_forked(
        ["--max-retries", "0", *args],
        env=child_env(LINGODOC_BASE_URL=base_url, LINGODOC_API_KEY=KEY),
        stdin=stdin.encode(),
        timeout=30,
    )
    for printed in (out, err):
        assert not re.search(b"[\x1b\r\x07]", printed), printed
        text = printed.decode("utf-8")  # a C1 character would be b"\xc2\x9b" here
        assert not CONTROL.search(text), text
    return code, out.decode(), err.decode()


def test_translate_prints_the_translation_with_escapes_and_its_own_line_breaks(
    base_url: str,
) -> None:
    # The translation is the whole output: its lines are those of the text translated.
    code, out, err = run(base_url, "translate", "Hello\nworld", "--to", "de")
    assert (code, err) == (0, "")
    assert out == SHOWN.replace(r"\n", "\n") + "\n"


def on_a_terminal(base_url: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `lingodoc ARGS` with its stdout on a terminal (a pty); check what it printed."""
    import pty
    import select
    import tty

    main_fd, terminal = pty.openpty()
    tty.setraw(terminal)  # no "\n" -> "\r\n": the bytes as the command wrote them
    with subprocess.Popen(
        [sys.executable, "-m", "lingodoc", "--max-retries", "0", *args],
        stdin=subprocess.PIPE,
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=child_env(LINGODOC_BASE_URL=base_url, LINGODOC_API_KEY=KEY),
    ) as process:
        os.close(terminal)
        assert process.stdin is not None
        assert process.stderr is not None
        process.stdin.write(stdin.encode())
        process.stdin.close()
        printed = b""
        while select.select([main_fd], [], [], 30)[0]:  # bounded: 30 s without output
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # EIO: the command has exited, closing the terminal
                break
            if not chunk:
                break
            printed += chunk
        os.close(main_fd)
        err = process.stderr.read()
        code = process.wait(timeout=30)
    for output in (printed, err):
        assert not re.search(b"[\x1b\r\x07]", output), output
        assert not CONTROL.search(output.decode("utf-8")), output
    return code, printed.decode(), err.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="a pty is POSIX")
def test_batch_on_a_terminal_prints_one_line_per_line_with_escapes(base_url: str) -> None:
    code, out, err = on_a_terminal(base_url, "batch", "-", "--to", "de", stdin="Hello\nworld\n")
    assert code == 0
    assert err.splitlines() == ["  0%  0/2 texts  0/1 request", "100%  2/2 texts  1/1 request"]
    assert out == f"{ONE_LINE}\n{ONE_LINE}\n"  # the server's line breaks become spaces


def test_batch_to_a_pipe_or_a_file_writes_the_translations_exactly(
    base_url: str, tmp_path: Path
) -> None:
    # Not a terminal: the output is data. A plain line's line breaks still become spaces.
    env = child_env(LINGODOC_BASE_URL=base_url, LINGODOC_API_KEY=KEY)
    command = [sys.executable, "-m", "lingodoc", "--max-retries", "0", "batch", "--to", "de"]
    piped = subprocess.run(
        [*command, "-", "-q"], input=b"Hello\n", capture_output=True, env=env, timeout=30
    )
    assert (piped.returncode, piped.stderr) == (0, b"")
    assert piped.stdout.decode() == " ".join(HOSTILE.splitlines()) + "\n"
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_bytes(b'id,text\r\n1,"two\r\nlines"\r\n')
    written = subprocess.run(
        [*command, str(source), "-o", str(out), "-q"], capture_output=True, env=env, timeout=30
    )
    assert (written.returncode, written.stderr) == (0, b"")
    with out.open(encoding="utf-8", newline="") as stream:
        assert list(csv.reader(stream)) == [
            ["id", "text", "text_de"],
            ["1", "two\r\nlines", HOSTILE],
        ]


def test_documents_lists_ids_and_names_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "documents")
    assert (code, err) == (0, "")
    first, second = out.splitlines()  # no line forged
    assert first == f"doc_{SHOWN}  {SHOWN}"
    assert second == "doc_ok"


def test_document_prints_the_job_and_its_note_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "document", "doc_1", "--to", "de")
    assert code == 0
    assert out == f"tr_{SHOWN}  {SHOWN.lower()}  doc_1\n"  # a state is lower-cased
    assert err == f"lingodoc: started; follow it with `lingodoc wait tr_{SHOWN}`\n"


def test_status_prints_every_field_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "status", "tr_status")
    assert (code, err) == (0, "")
    assert out == f"tr_status  {SHOWN.lower()}  40%  {SHOWN} -> {SHOWN}\n"


def test_wait_prints_the_status_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "wait", "tr_done", "--interval", "0.01")
    assert (code, err) == (0, "completed 100%\n")
    assert out == f"tr_done  completed  100%  {SHOWN} -> {SHOWN}\n"


def test_a_failed_translation_shows_the_reason_with_escapes_on_one_line(base_url: str) -> None:
    code, out, err = run(base_url, "wait", "tr_failed", "--interval", "0.01")
    assert (code, out) == (3, "")
    progress, error = err.splitlines()
    assert progress == "failed 50%"
    assert error == (
        f"lingodoc: error: translation tr_failed failed at 50%: {ONE_LINE}; check the document, "
        "then start a new translation"
    )


def test_an_error_of_the_service_is_one_line_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "status", "tr_error")
    assert (code, out) == (1, "")
    [error] = err.splitlines()  # the server's line break forged no line
    assert error.startswith(f"lingodoc: error: {ONE_LINE} (400 E{ONE_LINE}, request req_\\x9b2J)")


def test_with_json_an_error_of_the_service_is_escaped_json_on_stdout_too(base_url: str) -> None:
    code, out, err = run(base_url, "--json", "status", "tr_error")
    assert code == 1
    assert not CONTROL.search(out)  # each a JSON escape
    error = json.loads(out)
    assert error["code"] == f"E{HOSTILE}"  # exactly as sent
    assert error["message"] == HOSTILE  # exactly as sent: a JSON string quotes it whole
    assert err.startswith(f"lingodoc: error: {ONE_LINE} (400 E{ONE_LINE}, request req_\\x9b2J)")


def test_the_verbose_traceback_shows_the_servers_message_with_escapes(base_url: str) -> None:
    code, out, err = run(base_url, "--verbose", "status", "tr_error")
    assert (code, out) == (1, "")
    assert "Traceback (most recent call last):" in err
    assert "GET /translations/tr_error -> 400" in err
    assert f": {SHOWN}\n" in err  # the exception's message in the traceback
    assert not any(line.startswith("lingodoc: error: forged") for line in err.splitlines())


@pytest.mark.parametrize(
    "command",
    [
        ["translate", "Hello", "--to", "de"],
        ["batch", "-", "--to", "de"],
        ["documents"],
        ["document", "doc_1", "--to", "de"],
        ["status", "tr_status"],
    ],
)
def test_json_output_escapes_every_control_character_and_keeps_the_text(
    base_url: str, command: list[str]
) -> None:
    code, out, _ = run(base_url, "--json", *command, stdin="Hello\n")
    assert code == 0
    assert r"\u001b]52;c;SGVsbG8=\u0007" in out
    assert r"\u009b6n\rB\nlingodoc: error: forged" in out
    assert any(HOSTILE in text for text in strings(json.loads(out)))  # exactly as sent


def strings(data: Any) -> list[str]:
    """Every string in a JSON document."""
    if isinstance(data, str):
        return [data]
    values = data.values() if isinstance(data, dict) else data if isinstance(data, list) else []
    return [text for value in values for text in strings(value)]


# -- in process: the progress lines, Ctrl-C's hint, the log lines -----------------------------


def hostile_status() -> lingodoc.TranslationStatus:
    return lingodoc.TranslationStatus(translation_id="tr_1", status=HOSTILE, progress=40)


@pytest.mark.parametrize("bar", [False, True])
def test_progress_shows_a_state_with_escapes(bar: bool) -> None:
    stream = io.StringIO()
    progress = Progress(stream, bar=bar)
    progress(hostile_status())
    progress.close()
    shown = stream.getvalue().removeprefix("\r")  # the bar's own carriage return
    assert not CONTROL.search(shown), shown
    assert f"{SHOWN.lower()}" in shown
    assert shown.count("\n") == 1


def test_ctrl_c_names_a_job_id_of_the_server_with_escapes(
    base_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lingodoc.Client, "wait_for_translation", interrupted)
    code = main(["--api-key", KEY, "--base-url", base_url, "document", "doc_1", "--to", "de",
                 "--wait"])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 130
    assert not CONTROL.search(printed.out + printed.err)
    assert printed.err.splitlines()[-1] == (
        f"lingodoc: interrupted; the translation goes on: `lingodoc wait tr_{SHOWN}` resumes"
    )


def test_log_lines_show_control_characters_as_escapes() -> None:
    record = logging.makeLogRecord({"msg": "GET %s -> 400", "args": (HOSTILE,), "name": "x"})
    assert _VisibleFormatter("%(message)s").format(record) == f"GET {SHOWN} -> 400"


@pytest.mark.parametrize(
    ("text", "shown", "layout"),
    [
        ("\x00\x07\x08\x0b\x0c\x1b\x7f", r"\x00\x07\x08\x0b\x0c\x1b\x7f", False),
        ("\x80\x85\x9b\x9f", r"\x80\x85\x9b\x9f", False),
        ("a\tb\nc\rd", r"a\tb\nc\rd", False),
        ("a\tb\nc\rd", "a\tb\nc\\rd", True),
        ("\ud800", r"\ud800", False),
        ("Grüße, 日本, \\x1b, ¡\xa0", "Grüße, 日本, \\x1b, ¡\xa0", False),
        (42, "42", False),
    ],
)
def test_visible(text: object, shown: str, layout: bool) -> None:
    assert visible(text, layout=layout) == shown
