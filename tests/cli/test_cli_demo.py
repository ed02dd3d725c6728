"""`lingodoc demo`: the quickstart's steps from the installed package, emulator or service."""

from __future__ import annotations

import json
import re

import pytest

from lingodoc.cli import main
from lingodoc.emulator import Emulator, EmulatorServer
from lingodoc.testing import FakeClock, fake_clock
from tests.cli.conftest import RunCLI

# 2027-01-15 08:00:00 UTC: the fake clock's start, so the times printed are known.
START = 1_800_000_000

EXPECTED = [
    "",
    "1. translate: 'Hello world' -> 'Hallo Welt'",
    "2. translate_batch: ['Bienvenue', 'Mon ami', 'Merci']",
    "3. list_documents: doc_welcome (Welcome to lingodoc), doc_handbook (Employee handbook)",
    "   translate_document: job tr_<id> is processing",
    "   ... processing 0%",
    "   ... processing 30%",
    "   ... processing 60%",
    "   ... completed 100%",
    "   completed at 08:00:03 UTC",
    "4. a caught error: InvalidLanguage: INVALID_LANGUAGE (400): Field 'target_language': "
    "'xx' is not a supported language.",
    "5. rate limit: 991 of 1000 requests left, resets at 09:00:00 UTC",
    "",
    "The code of these steps: https://lingodoc.github.io/lingodoc-python/examples/#quickstart",
]


@pytest.mark.parametrize(
    ("configured", "unset"),
    [
        ({}, "LINGODOC_API_KEY and LINGODOC_BASE_URL are not set"),
        ({"LINGODOC_API_KEY": "ld_mine"}, "LINGODOC_BASE_URL is not set"),
        ({"LINGODOC_BASE_URL": "https://lingodoc.example/v1"}, "LINGODOC_API_KEY is not set"),
        ({"LINGODOC_API_KEY": "", "LINGODOC_BASE_URL": " "},
         "LINGODOC_API_KEY and LINGODOC_BASE_URL are not set"),
    ],
    ids=["nothing", "a-key-alone", "an-address-alone", "blank"],
)  # fmt: skip
def test_the_demo_runs_the_quickstarts_steps_on_the_built_in_emulator(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    configured: dict[str, str],
    unset: str,
) -> None:
    # In this process, on a fake clock (the in-process emulator reads it too): no real wait.
    for name, value in configured.items():
        monkeypatch.setenv(name, value)
    with fake_clock(FakeClock(start=START)):
        code = main(["demo"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = re.sub(r"tr_[0-9a-f]+", "tr_<id>", out).splitlines()
    assert lines == [f"{unset}: using the built-in emulator", *EXPECTED]


@pytest.fixture
def emulator() -> Emulator:
    # The service that the `cli` fixture serves, on the real clock: its translations finish
    # at once, so the demo's first poll (the SDK waits a second before the next) finds them done.
    return Emulator(job_duration=0)


def test_the_demo_runs_against_the_service_configured(cli: RunCLI, server: EmulatorServer) -> None:
    run = cli("demo")
    assert (run.code, run.err) == (0, "")
    lines = run.out.splitlines()
    assert lines[0] == f"Using the service at {server.base_url}"
    assert "1. translate: 'Hello world' -> 'Hallo Welt'" in lines
    assert "   ... completed 100%" in lines
    assert any(line.startswith("4. a caught error: InvalidLanguage: ") for line in lines)
    assert any(line.startswith("5. rate limit: ") for line in lines)


def test_a_demo_wait_that_times_out_exits_4_with_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A service whose translation outlasts the demo's 60 s wait. In this process, on a fake
    # clock that the served emulator reads too: no real wait.
    with fake_clock(FakeClock(start=START)), Emulator(job_duration=3600).serve() as server:
        monkeypatch.setenv("LINGODOC_BASE_URL", server.base_url)
        monkeypatch.setenv("LINGODOC_API_KEY", server.api_key)
        code = main(["demo"])
    out, err = capsys.readouterr()
    found = re.search(r"translate_document: job (tr_[0-9a-f]+) is processing", out)
    assert found is not None, out
    job = found[1]
    assert (code, err) == (
        4,
        f"lingodoc: error: translation {job} did not finish within 60 s (last state "
        f"processing, 0%); it goes on: `lingodoc wait {job}` resumes\n",
    )


def test_the_demo_refuses_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json"]) == 2
    out, err = capsys.readouterr()
    refusal = "demo prints text for a reader: --json is for the other commands"
    assert json.loads(out) == {
        "code": None, "hint": None, "message": refusal, "request_id": None, "status": None
    }  # fmt: skip
    assert err == f"lingodoc: error: {refusal}\n"


def test_the_demo_help_says_what_it_does_against_a_configured_service(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "its requests count against your rate limit" in text
    assert "starts a real translation of your first stored document" in text
