"""Each error path of `lingodoc`: one line on stderr that says what to do, and an exit code."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest
import respx

import lingodoc
from lingodoc.cli import _stdout_to_devnull, main
from lingodoc.cli._errors import NoKey, explain
from lingodoc.cli._parser import build_parser, settle_timeouts
from lingodoc.emulator import Emulator, EmulatorServer, Reply
from lingodoc.testing import fake_clock
from tests.cli.conftest import RunCLI, child_env, start_job
from tests.waiting import PATIENCE

BAD_KEY = "ld_" + "0" * 28 + "WXYZ"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- configuration and usage: exit code 2, nothing sent ----------------------------------------


def test_missing_api_key_names_the_variable_and_the_flag(
    cli: RunCLI, server: EmulatorServer, emulator: Emulator
) -> None:
    run = cli("translate", "Hello", "--to", "de", env=child_env(LINGODOC_BASE_URL=server.base_url))
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        "lingodoc: error: no API key: set LINGODOC_API_KEY or pass --api-key; create a key in "
        "your lingodoc account settings; to try lingodoc without one, run `lingodoc demo`, or "
        "`lingodoc emulator` in another terminal and export what it prints"
    )
    assert emulator.requests == []


def test_missing_key_and_base_url_are_one_error_naming_both(cli: RunCLI) -> None:
    run = cli("documents", env=child_env())
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        "lingodoc: error: no API key and no service address: set LINGODOC_API_KEY or pass "
        "--api-key, and set LINGODOC_BASE_URL (the address up to and including /v1; "
        "`lingodoc emulator` prints one) or pass --base-url; create a key in your lingodoc "
        "account settings; to try lingodoc without one, run `lingodoc demo`, or "
        "`lingodoc emulator` in another terminal and export what it prints"
    )


def test_missing_base_url_names_the_variable_and_the_flag(cli: RunCLI) -> None:
    run = cli("documents", env=child_env(LINGODOC_API_KEY=BAD_KEY))
    assert run.code == 2
    assert "set LINGODOC_BASE_URL" in run.error
    assert "--base-url" in run.error
    assert "lingodoc emulator" in run.error


def test_a_clear_text_base_url_to_another_host_is_refused(cli: RunCLI) -> None:
    run = cli("--base-url", "http://example.com/v1", "documents")
    assert run.code == 2
    assert "uses http://" in run.error


def test_a_malformed_language_is_refused_in_the_terms_of_the_command_line(
    cli: RunCLI, emulator: Emulator
) -> None:
    run = cli("translate", "Hello", "--to", "deu")
    assert run.code == 2
    assert run.error.startswith("lingodoc: error: --to must be a two-letter ISO 639-1 code")
    assert emulator.requests == []


@pytest.mark.parametrize("code", ["de", "DE", "De", " de", "de ", "deu", "d\u00e9", "d1"])
def test_a_language_code_follows_the_sdks_one_rule_in_every_command(
    cli: RunCLI, server: EmulatorServer, emulator: Emulator, code: str
) -> None:
    # The SDK's rule, in every command: two ASCII letters, upper case folded to lower case,
    # anything else refused before sending, in the same words (in the command line's terms).
    refused: lingodoc.InvalidLanguage | None = None
    with lingodoc.Client(server.api_key, base_url=server.base_url) as client:
        try:
            result = client.translate("Hello", source_language="en", target_language=code)
        except lingodoc.InvalidLanguage as error:
            refused = error
    emulator.requests.clear()
    for command in (["translate", "Hello"], ["batch", "-", "-q"], ["document", "doc_welcome"]):
        run = cli(*command, "--to", code, stdin="Hello\n")
        if refused is None:
            assert result.target_language == "de"
            assert run.code == 0, run.err
            if command[0] != "document":
                assert run.out == f"{result.translated_text}\n", command
        else:
            assert refused.status_code is None  # locally
            message = refused.message.replace("target_language", "--to")
            assert (run.code, run.out, run.error) == (2, "", f"lingodoc: error: {message}")
    if refused is not None:
        assert emulator.requests == []


def test_an_unsupported_language_has_one_hint_that_agrees_with_the_local_rule(
    cli: RunCLI,
) -> None:
    run = cli("translate", "Hello", "--to", "xx")
    assert (run.code, run.out) == (1, "")
    assert re.fullmatch(
        r"lingodoc: error: Field 'target_language': 'xx' is not a supported language "
        r"\(400 INVALID_LANGUAGE, request req_\w+\); use a two-letter ISO 639-1 code the "
        r"service supports, such as 'en'",
        run.error,
    ), run.error
    assert run.error.count("ISO 639-1") == 1
    assert run.error.count("use ") == 1


def test_an_unreadable_file(cli: RunCLI, tmp_path: Path) -> None:
    run = cli("batch", str(tmp_path / "missing.txt"), "--to", "de")
    assert run.code == 2
    assert run.error.startswith(f"lingodoc: error: cannot read {tmp_path / 'missing.txt'}")


def test_a_file_that_is_not_utf8(cli: RunCLI, tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Grüße\n".encode("latin-1"))
    run = cli("batch", str(path), "--to", "de")
    assert run.code == 2
    assert "is not UTF-8 text" in run.error


def test_translate_of_stdin_that_is_not_utf8_says_so_and_sends_nothing(
    emulator: Emulator, env: dict[str, str]
) -> None:
    # In a process of its own, without PYTHONIOENCODING, as users run it: Python's stdin
    # then reads undecodable bytes as surrogates (surrogateescape) rather than failing.
    child = {name: value for name, value in env.items() if name != "PYTHONIOENCODING"}
    result = subprocess.run(
        [sys.executable, "-m", "lingodoc", "translate", "-", "--to", "de"],
        input="Grüße\n".encode("latin-1"),
        capture_output=True,
        env=child,
        timeout=PATIENCE,
        check=False,
    )
    assert (result.returncode, result.stderr) == (
        2,
        b"lingodoc: error: the input is not UTF-8 text (invalid start byte at byte 2)\n",
    )
    assert emulator.requests == []


def test_a_line_over_the_limit_is_named_by_its_number(cli: RunCLI, emulator: Emulator) -> None:
    run = cli("batch", "-", "--to", "de", stdin="Hello\n" + "x" * 10_001 + "\n")
    assert run.code == 2
    assert "line 2: the line has 10,001 characters; the limit is 10,000" in run.error
    assert emulator.requests == []


def test_a_usage_error_prints_the_usage_and_exits_2(cli: RunCLI, emulator: Emulator) -> None:
    run = cli("translate", "Hello")
    assert (run.code, run.out) == (2, "")
    assert run.err.startswith("usage: lingodoc translate")
    assert run.err.splitlines()[-1] == (
        "lingodoc translate: error: the following arguments are required: --to"
    )
    assert "Traceback" not in run.err
    assert emulator.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "the following arguments are required: COMMAND"),
        (("translate", "Hello", "--to", "de", "--bogus"), "unrecognized arguments: --bogus"),
        (("--timeout", "0", "documents"), "expected a positive number of seconds"),
        (("wait", "tr_1", "--interval", "soon"), "expected a positive number of seconds"),
        (
            ("wait", "tr_1", "--wait-timeout", "0"),
            "argument --wait-timeout: expected a positive number of seconds, or never, not '0'",
        ),
        (("--max-retries", "-1", "documents"), "expected a whole number >= 0"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        (("status", ""), "argument TRANSLATION_ID: expected an id, not an empty string"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    # In-process: argparse refuses these before anything else runs.
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: lingodoc")
    assert message in err.splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "prog", "unknown"),
    [
        (("batch", "in.txt", "--to", "de", "--ouput", "x.txt"), "lingodoc batch", "--ouput x.txt"),
        (("cache", "stats", "c.db", "--jsn"), "lingodoc cache stats", "--jsn"),
    ],
)
def test_an_unknown_option_is_refused_with_its_commands_usage(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], prog: str, unknown: str
) -> None:
    assert main(list(args)) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"usage: {prog} [-h]")
    assert err[-1] == f"{prog}: error: unrecognized arguments: {unknown}"


# -- the service: exit code 1 ------------------------------------------------------------------


def test_a_refused_key_says_to_check_it_and_never_shows_it(cli: RunCLI) -> None:
    run = cli("--api-key", BAD_KEY, "translate", "Hello", "--to", "de")
    assert run.code == 1
    assert run.error.startswith("lingodoc: error: the API key was refused (401 UNAUTHORIZED")
    assert "check LINGODOC_API_KEY (or --api-key)" in run.error
    assert BAD_KEY not in run.err
    assert BAD_KEY[:-4] not in run.err


def test_a_key_without_the_permission(cli: RunCLI, emulator: Emulator, env: dict[str, str]) -> None:
    reader = emulator.create_key("reader", "read_only")
    run = cli("translate", "Hello", "--to", "de", env={**env, "LINGODOC_API_KEY": reader})
    assert run.code == 1
    assert "Read Only" in run.error
    assert "permission" in run.error


def test_rate_limited_says_when_to_retry(cli: RunCLI, emulator: Emulator) -> None:
    emulator.inject("rate_limit", retry_after=120)
    run = cli("--max-retries", "0", "translate", "Hello", "--to", "de")
    assert run.code == 1
    assert run.error.startswith("lingodoc: error: rate limited (429 RATE_LIMITED")
    assert run.error.endswith("; retry in 120 s")


def test_a_spent_hourly_limit_says_when_to_retry(
    cli: RunCLI, emulator: Emulator, server: EmulatorServer
) -> None:
    emulator.rate_limit = 1
    with lingodoc.Client(server.api_key, base_url=server.base_url) as client:
        client.list_documents()
    run = cli("documents")
    assert run.code == 1
    assert "rate limited" in run.error
    # The window is an hour from the first request: 3600 s, less the time this took.
    assert re.search(r"; retry in (3600|35\d\d) s$", run.error), run.error


def test_unknown_document(cli: RunCLI) -> None:
    run = cli("document", "doc_nope", "--to", "de")
    assert run.code == 1
    assert run.error.startswith("lingodoc: error: no document 'doc_nope' (404 NOT_FOUND")
    assert run.error.endswith("; `lingodoc documents` lists them")


@pytest.mark.parametrize("command", ["status", "wait"])
def test_unknown_translation(cli: RunCLI, command: str) -> None:
    run = cli(command, "tr_nope")
    assert run.code == 1
    assert run.error.startswith("lingodoc: error: no translation 'tr_nope' (404 NOT_FOUND")


def test_a_server_error_says_to_try_again(cli: RunCLI, emulator: Emulator) -> None:
    emulator.inject("server_error", times=3)
    run = cli("documents", "--max-retries", "0")
    assert run.code == 1
    assert run.error.endswith("(500 INTERNAL_ERROR, request " + run.error.split("request ")[1])
    assert run.error.endswith("; try again later")


def test_an_answer_that_is_not_the_services_names_the_url_and_gives_one_hint(
    cli: RunCLI, emulator: Emulator, server: EmulatorServer
) -> None:
    def not_json(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        return Reply(501, {"Content-Type": "text/plain"}, b"Not Implemented")

    emulator.handle = not_json  # type: ignore[method-assign]
    run = cli("documents")
    assert run.code == 1
    # The CLI's hint, in flag terms, and not the SDK's as well.
    assert run.error == (
        "lingodoc: error: the response body is not JSON, in answer to GET "
        f"{server.base_url}/documents (501 error); is LINGODOC_BASE_URL (or --base-url) the "
        "service's address, up to and including /v1?"
    )


def test_connection_refused_names_the_address_and_asks_whether_the_service_runs(
    cli: RunCLI,
) -> None:
    port = closed_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    run = cli("--base-url", base_url, "--max-retries", "0", "documents")
    assert run.code == 1
    tried = f"lingodoc: error: GET /documents failed: cannot connect to http://127.0.0.1:{port} ("
    assert run.error.startswith(tried)
    assert run.error.endswith(
        "; is the service (or `lingodoc emulator`) running, and is the address "
        f"{base_url} (LINGODOC_BASE_URL or --base-url) right?"
    )
    # That hint alone: not the SDK's too, in its own terms.
    assert run.error.count("lingodoc emulator") == 1
    assert "hint:" not in run.error


def test_no_answer_in_time_names_the_address_and_says_to_raise_the_timeout(
    cli: RunCLI, emulator: Emulator, server: EmulatorServer
) -> None:
    # Answered only as the server stops: the 0.2 s timeout ends the request first, however
    # slowly the command runs.
    emulator.inject("slow", times=1, delay=PATIENCE)
    run = cli("documents", "--max-retries", "0", "--timeout", "0.2")
    assert run.code == 1
    tried = f"lingodoc: error: GET /documents to http://127.0.0.1:{server.port} timed out: "
    assert run.error.startswith(tried)
    assert run.error.endswith("; raise --timeout")


SERVICE = "https://api.lingodoc.test/v1"


@pytest.mark.parametrize(
    ("failure", "proxy", "hint"),
    [
        (httpx.ConnectTimeout("connect timed out"), None,
         f"is the service (or `lingodoc emulator`) running, and is the address {SERVICE} "
         "(LINGODOC_BASE_URL or --base-url) right?"),
        (httpx.ReadTimeout("read timed out"), None, "raise --timeout"),
        (httpx.PoolTimeout("no connection free"), None, None),
        (httpx.ConnectError("refused"), "http://proxy.example:3128",
         "is the proxy running, and should requests to the service go through it? (NO_PROXY "
         "names the hosts that should not)"),
    ],
    ids=["connect-timeout", "read-timeout", "pool-timeout", "proxy-refused"],
)  # fmt: skip
def test_a_network_errors_hint_is_the_sdks_in_the_command_lines_terms(
    monkeypatch: pytest.MonkeyPatch, failure: Exception, proxy: str | None, hint: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    if proxy is not None:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
    with (
        respx.mock(base_url=SERVICE) as service,
        lingodoc.Client(BAD_KEY, base_url=SERVICE, max_retries=0) as client,
    ):
        service.get("/documents").mock(side_effect=failure)
        with pytest.raises(lingodoc.APIConnectionError) as caught:
            client.list_documents()
    explained = explain(caught.value, argparse.Namespace(), SERVICE)
    assert (explained.exit_code, explained.hint) == (1, hint)
    assert explained.problem == caught.value.message  # the SDK's hint is not said twice


def test_verbose_shows_the_traceback_and_the_requests(cli: RunCLI) -> None:
    run = cli("--verbose", "status", "tr_nope")
    assert run.code == 1
    assert "Traceback" in run.err
    assert "GET /translations/tr_nope -> 404" in run.err
    assert run.err.splitlines()[-1].startswith("lingodoc: error: no translation 'tr_nope'")


REFUSED_KEY = "check LINGODOC_API_KEY (or --api-key) and that the key has the permission needed"


@pytest.mark.parametrize(
    ("args", "exit_code", "error"),
    [
        (["translate", "Hello", "--to", "xx"], 1, {
            "code": "INVALID_LANGUAGE", "status": 400,
            "message": "Field 'target_language': 'xx' is not a supported language.",
            "hint": "use a two-letter ISO 639-1 code the service supports, such as 'en'"}),
        (["--api-key", BAD_KEY, "documents"], 1, {
            "code": "UNAUTHORIZED", "status": 401,
            "message": "Invalid API key ending in 'WXYZ': it does not exist.",
            "hint": REFUSED_KEY}),
        (["status", "tr_nope", "--json"], 1, {  # --json after the command
            "code": "NOT_FOUND", "status": 404, "message": "Translation 'tr_nope' not found.",
            "hint": "use an id that `lingodoc document` printed"}),
        (["document", "doc_nope", "--to", "de"], 1, {
            "code": "NOT_FOUND", "status": 404, "message": "Document 'doc_nope' not found.",
            "hint": "`lingodoc documents` lists them"}),
        (["--max-retries", "0", "translate", "Hello", "--to", "de"], 1, {
            "code": "RATE_LIMITED", "status": 429,
            "message": "Rate limit reached (injected); retry in 120 s.", "hint": "retry in 120 s"}),
        (["--max-retries", "0", "documents"], 1, {
            "code": "INTERNAL_ERROR", "status": 500, "message": "Injected server error (500).",
            "hint": "try again later"}),
    ],
)  # fmt: skip
def test_with_json_an_error_of_the_service_has_its_message_and_the_hint_apart(
    cli: RunCLI, emulator: Emulator, args: list[str], exit_code: int, error: dict[str, object]
) -> None:
    if error["code"] == "RATE_LIMITED":
        emulator.inject("rate_limit", retry_after=120)
    if error["code"] == "INTERNAL_ERROR":
        emulator.inject("server_error")
    run = cli(*(args if "--json" in args else ["--json", *args]))
    assert run.code == exit_code, run.err
    printed = json.loads(run.out)
    assert re.fullmatch(r"req_[0-9a-f]{24}", printed.pop("request_id"))
    assert printed == error
    # stderr has the line, in the command line's terms, with the same hint and request id.
    assert run.error.endswith(f"; {error['hint']}")
    assert f"{error['status']} {error['code']}, request req_" in run.error


@pytest.mark.parametrize(
    ("args", "exit_code", "code", "message", "hint"),
    [
        (["translate", "Hello", "--to", "deu"], 2, "INVALID_LANGUAGE",  # refused locally
         "--to must be a two-letter ISO 639-1 code such as 'en', not 'deu'", None),
        (["batch", "-", "--to", "de", "--format", "csv"], 2, None,  # not the service's
         "--json is for plain lines; csv output is the input's format, with the "
         "translations added", None),
        (["documents", "--api-key", ""], 2, None,
         "no API key: set LINGODOC_API_KEY or pass --api-key", NoKey.hint),
    ],
)  # fmt: skip
def test_with_json_an_error_without_a_service_message_has_the_problem_as_message(
    cli: RunCLI,
    env: dict[str, str],
    args: list[str],
    exit_code: int,
    code: str,
    message: str,
    hint: str | None,
) -> None:
    no_key = {"LINGODOC_API_KEY": ""} if "" in args else {}
    run = cli("--json", *args, stdin="", env={**env, **no_key})
    assert run.code == exit_code, run.err
    assert json.loads(run.out) == {
        "code": code, "hint": hint, "message": message, "request_id": None, "status": None
    }  # fmt: skip
    assert run.error == f"lingodoc: error: {message}" + (f"; {hint}" if hint else "")


def test_with_json_a_connection_error_has_the_problem_as_message(cli: RunCLI) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    run = cli("--json", "--base-url", base_url, "--max-retries", "0", "documents")
    assert run.code == 1
    printed = json.loads(run.out)
    message = printed.pop("message")
    assert printed == {
        "code": None,
        "hint": "is the service (or `lingodoc emulator`) running, and is the address "
        f"{base_url} (LINGODOC_BASE_URL or --base-url) right?",
        "request_id": None,
        "status": None,
    }
    # The SDK's message: the address tried, then the network's words.
    assert message.startswith(f"GET /documents failed: cannot connect to {base_url[:-3]} (")
    assert run.error == f"lingodoc: error: {message}; {printed['hint']}"


def test_with_json_the_message_of_a_service_that_echoes_the_key_is_masked(
    cli: RunCLI, emulator: Emulator, env: dict[str, str]
) -> None:
    def echoing(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        sent = next(value for name, value in headers.items() if name.lower() == "authorization")
        message = f"Key {sent!r} refused.\nTry another."
        error = {"success": False, "error": {"code": "UNAUTHORIZED", "message": message}}
        return Reply(401, {"Content-Type": "application/json"}, json.dumps(error).encode())

    emulator.handle = echoing  # type: ignore[method-assign]
    run = cli("--json", "documents", env={**env, "LINGODOC_API_KEY": BAD_KEY})
    assert run.code == 1
    assert json.loads(run.out) == {
        "code": "UNAUTHORIZED",
        "hint": REFUSED_KEY,
        "message": "Key 'Bearer ****WXYZ' refused.\nTry another.",  # as sent, but the key
        "request_id": None,
        "status": 401,
    }
    assert run.error == (  # on one line on stderr
        "lingodoc: error: the API key was refused (401 UNAUTHORIZED): Key 'Bearer ****WXYZ' "
        f"refused. Try another; {REFUSED_KEY}"
    )
    assert BAD_KEY[3:-4] not in run.out + run.err


@pytest.mark.parametrize(
    ("args", "prog", "message"),
    [
        (["--json", "translate", "hi"], "lingodoc translate",
         "the following arguments are required: --to"),
        (["wait", "tr_1", "--wait-timeout", "0", "--json"], "lingodoc wait",
         "argument --wait-timeout: expected a positive number of seconds, or never, not '0'"),
        (["--json", "translate", "hi", "--to", "de", "--bogus"], "lingodoc translate",
         "unrecognized arguments: --bogus"),
        (["--json"], "lingodoc", "the following arguments are required: COMMAND"),
    ],
)  # fmt: skip
def test_with_json_a_mistake_in_the_command_line_is_on_stdout_too(
    capsys: pytest.CaptureFixture[str], args: list[str], prog: str, message: str
) -> None:
    # In-process: argparse refuses these before anything else runs.
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "code": None, "hint": None, "message": message, "request_id": None, "status": None
    }  # fmt: skip
    assert err.startswith(f"usage: {prog}")
    assert err.splitlines()[-1] == f"{prog}: error: {message}"


def test_without_json_a_mistake_in_the_command_line_leaves_stdout_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `--json` after `--` is a text, not the option.
    assert main(["translate", "--", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == (
        "lingodoc translate: error: the following arguments are required: --to"
    )


def test_with_json_ctrl_c_is_on_stdout_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lingodoc.Client, "wait_for_translation", interrupted)
    code = main(["--json", "wait", "tr_1", "--api-key", BAD_KEY,
                 "--base-url", "http://127.0.0.1:9/v1"])  # fmt: skip
    out, err = capsys.readouterr()
    hint = "the translation goes on: `lingodoc wait tr_1` resumes"
    assert code == 130
    assert json.loads(out) == {
        "code": None, "hint": hint, "message": "interrupted", "request_id": None, "status": None
    }  # fmt: skip
    assert err == f"lingodoc: interrupted; {hint}\n"


def test_stdout_sent_to_the_null_device_leaves_no_descriptor_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `lingodoc ... | head` comes to once the reader is gone.
    with open(tmp_path / "stdout", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        probe = os.open(os.devnull, os.O_RDONLY)  # the lowest descriptor free
        os.close(probe)
        _stdout_to_devnull()
        after = os.open(os.devnull, os.O_RDONLY)
        os.close(after)
        print("gone", file=stdout, flush=True)
    assert after == probe
    assert (tmp_path / "stdout").read_text() == ""


# -- the translation: exit codes 3 and 4 -------------------------------------------------------


def test_a_failed_translation_exits_3_with_the_reason(cli: RunCLI, emulator: Emulator) -> None:
    emulator.fail_next_job("The file is corrupt.")
    run = cli("document", "doc_welcome", "--to", "de", "--wait", "--interval", "0.05")
    assert (run.code, run.out) == (3, "")
    reason = "failed at 50%: The file is corrupt; check the document, then start a new translation"
    assert run.error.endswith(reason)
    assert "failed 50%" in run.err.splitlines()


def test_with_json_a_failed_translation_has_the_hint_apart(cli: RunCLI, emulator: Emulator) -> None:
    emulator.fail_next_job("The file is corrupt.")
    run = cli("--json", "document", "doc_welcome", "--to", "de", "--wait", "--interval", "0.05")
    assert run.code == 3
    problem = run.error.removeprefix("lingodoc: error: ").split("; ")[0]
    assert re.fullmatch(r"translation tr_\w+ failed at 50%: The file is corrupt", problem)
    assert json.loads(run.out) == {
        "code": None,
        "hint": "check the document, then start a new translation",
        "message": problem,
        "request_id": None,
        "status": None,
    }


def test_a_wait_that_times_out_exits_4_and_says_how_to_resume(
    cli: RunCLI, emulator: Emulator, server: EmulatorServer
) -> None:
    emulator.job_duration = 3600  # still at 0% at the last poll, however slow the command
    translation_id = start_job(server)
    run = cli("wait", translation_id, "--wait-timeout", "0.2", "--interval", "0.05")
    assert (run.code, run.out) == (4, "")
    assert run.error == (
        f"lingodoc: error: translation {translation_id} did not finish within 0.2 s "
        f"(last state processing, 0%); it goes on: `lingodoc wait {translation_id}` resumes"
    )
    assert "warning" not in run.err


def test_document_wait_timeout(cli: RunCLI, emulator: Emulator) -> None:
    emulator.job_duration = 60
    command = ("--json", "document", "doc_welcome", "--to", "de", "--wait")
    run = cli(*command, "--wait-timeout", "0.1")
    assert run.code == 4
    assert "did not finish within 0.1 s" in run.error
    hint = f"it goes on: `lingodoc wait {json.loads(run.out)['message'].split()[1]}` resumes"
    assert json.loads(run.out) == {  # --json: the error on stdout too, for the script
        "code": None,
        "hint": hint,
        "message": run.error.removeprefix("lingodoc: error: ").removesuffix(f"; {hint}"),
        "request_id": None,
        "status": None,
    }
    assert "warning" not in run.err


@pytest.mark.parametrize("command", ["wait", "document"])
def test_a_wait_without_wait_timeout_ends_after_the_sdks_ten_minutes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # As the SDK's: a script that forgets --wait-timeout must not hang for good either.
    # In this process, on a fake clock that the served emulator reads too: no real wait.
    with fake_clock(), Emulator(job_duration=3600).serve() as server:
        monkeypatch.setenv("LINGODOC_BASE_URL", server.base_url)
        monkeypatch.setenv("LINGODOC_API_KEY", server.api_key)
        args = ["wait", start_job(server)] if command == "wait" else ["document", "doc_welcome"]
        code = main([*args, "--to", "de", "--wait"] if command == "document" else args)
    assert code == 4
    assert "did not finish within 600 s (last state processing, 10%)" in capsys.readouterr().err


def test_wait_timeout_never_waits_past_the_ten_minutes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_clock(), Emulator(job_duration=700).serve() as server:
        monkeypatch.setenv("LINGODOC_BASE_URL", server.base_url)
        monkeypatch.setenv("LINGODOC_API_KEY", server.api_key)
        code = main(["wait", start_job(server), "--wait-timeout", "never"])
    assert code == 0
    assert "  completed  100%  doc_welcome -> de" in capsys.readouterr().out


def test_the_wait_limit_the_help_states_is_the_sdks_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sdk = inspect.signature(lingodoc.Client.wait_for_translation).parameters["timeout"].default
    assert sdk == 600
    for command in ("wait", "document"):
        assert main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert f"(default: {sdk:g}, as the SDK's; never: no limit)" in text


DEPRECATED_WAIT_TIMEOUT = (
    "lingodoc: warning: --timeout after `{command}` as the wait's limit is deprecated: use "
    "--wait-timeout {seconds} (in a later release, --timeout after the command will be the "
    "per-request timeout, as it is before the command)"
)


@pytest.mark.parametrize("command", ["wait", "document"])
def test_timeout_after_a_wait_is_still_its_limit_with_a_deprecation_warning(
    cli: RunCLI, emulator: Emulator, server: EmulatorServer, command: str
) -> None:
    # What `wait --timeout S` meant before --wait-timeout: a script using it keeps working.
    emulator.job_duration = 60
    args = ["wait", start_job(server)] if command == "wait" else ["document", "doc_welcome"]
    args += ["--to", "de", "--wait"] if command == "document" else []
    run = cli(*args, "--timeout", "0.2", "--interval", "0.05")
    assert (run.code, run.out) == (4, "")
    assert "did not finish within 0.2 s" in run.error
    assert run.err.splitlines()[0] == DEPRECATED_WAIT_TIMEOUT.format(command=command, seconds=0.2)


def settled(*argv: str) -> tuple[object, object, str]:
    """Parse as `lingodoc ARGV` does: the per-request timeout, the wait's, and any warning."""
    args, _ = build_parser().parse_known_args(argv)
    warning = settle_timeouts(args)
    assert not hasattr(args, "timeout_after_a_wait")
    return args.timeout, getattr(args, "wait_timeout", None), warning or ""


@pytest.mark.parametrize(
    ("argv", "timeout", "wait_timeout"),
    [
        (["wait", "tr_1"], None, None),
        (["--timeout", "7", "wait", "tr_1"], 7.0, None),
        (["wait", "tr_1", "--wait-timeout", "600"], None, 600.0),
        (["--timeout", "7", "wait", "tr_1", "--wait-timeout", "600"], 7.0, 600.0),
        # With --wait-timeout given, --timeout after the command is the per-request one.
        (["wait", "tr_1", "--wait-timeout", "600", "--timeout", "7"], 7.0, 600.0),
        (["wait", "tr_1", "--timeout", "7", "--wait-timeout", "600"], 7.0, 600.0),
        (["document", "d", "--to", "de", "--wait", "--wait-timeout", "60", "--timeout", "7"],
         7.0, 60.0),
        # `document` without --wait does not wait: --timeout there was ignored, and is now
        # the per-request timeout.
        (["document", "d", "--to", "de", "--timeout", "7"], 7.0, None),
        (["--timeout", "3", "translate", "Hi", "--to", "de", "--timeout", "7"], 7.0, None),
        (["documents", "--timeout", "7"], 7.0, None),
    ],
)  # fmt: skip
def test_timeout_is_the_per_request_timeout_and_wait_timeout_the_waits(
    argv: list[str],
    timeout: float | None,
    wait_timeout: float | None,
) -> None:
    assert settled(*argv) == (timeout, wait_timeout, "")


@pytest.mark.parametrize(
    ("argv", "timeout", "wait_timeout", "warning"),
    [
        (["wait", "tr_1", "--timeout", "600"], None, 600.0, ("wait", "600")),
        (["--timeout", "7", "wait", "tr_1", "--timeout", "600"], 7.0, 600.0, ("wait", "600")),
        (["document", "d", "--to", "de", "--wait", "--timeout", "1.5"], None, 1.5,
         ("document", "1.5")),
    ],
)  # fmt: skip
def test_timeout_after_a_wait_without_wait_timeout_is_deprecated(
    argv: list[str],
    timeout: float | None,
    wait_timeout: float,
    warning: tuple[str, str],
) -> None:
    command, seconds = warning
    said = DEPRECATED_WAIT_TIMEOUT.format(command=command, seconds=seconds)
    assert settled(*argv) == (
        timeout, wait_timeout, said.removeprefix("lingodoc: warning: ")
    )  # fmt: skip


def test_wait_help_names_both_timeouts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wait", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--wait-timeout S stop waiting after S seconds in all: exit code 4" in text
    assert "--timeout S seconds per request (default: 30); deprecated meaning" in text


def test_a_reader_that_goes_away_stops_the_output_quietly(env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "lingodoc", "batch", "-", "--to", "de"]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as process:
        assert process.stdout is not None
        process.stdout.close()  # like `| head` having read enough
        _, err = process.communicate(b"Hello\n" * 300, timeout=20)
    assert process.returncode == 141
    # Nothing but the progress (which ends before the output is written): no error.
    assert all(re.match(rb" *\d+%  \d+/300 texts", line) for line in err.splitlines()), err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full: a disk always full")
@pytest.mark.parametrize(
    ("command", "buffered"),
    [
        (["translate", "Hello", "--to", "de"], True),
        (["translate", "Hello", "--to", "de"], False),
        (["--json", "translate", "Hello", "--to", "de"], True),
        (["documents"], True),
        (["cache", "stats", "{cache}"], True),
    ],
)
def test_a_full_disk_on_stdout_exits_6_whatever_the_command(
    env: dict[str, str], tmp_path: Path, command: list[str], buffered: bool
) -> None:
    cache = tmp_path / "translations.db"
    lingodoc.SQLiteCache(cache).close()
    args = [arg.format(cache=cache) for arg in command]
    # Block-buffered (Python's default for a file): the write fails only as stdout is flushed.
    child = {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED" or not buffered}
    if not buffered:
        child["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "lingodoc", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=child,
            timeout=PATIENCE,
            check=False,
        )
    assert (result.returncode, result.stderr) == (  # nothing more, such as Python at exit
        6,
        "lingodoc: error: cannot write stdout: No space left on device; free some space, "
        "then run the same command again\n",
    )
