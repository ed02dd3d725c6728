"""Each command of `lingodoc`, run as a real process against a served emulator."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import lingodoc
from lingodoc.cli import main
from lingodoc.cli._parser import ENVIRONMENT
from lingodoc.emulator import Emulator, EmulatorServer, translate_text
from tests.cli.conftest import RunCLI, child_env, run_command, start_job

STATUS_LINE = re.compile(r"tr_\w+  completed  100%  doc_welcome -> de  completed \S+")


# -- translate ---------------------------------------------------------------------------------


def test_translate_prints_the_translation(cli: RunCLI) -> None:
    run = cli("translate", "Hello world", "--to", "de")
    assert (run.code, run.out, run.err) == (0, "Hallo Welt\n", "")


def test_translate_json_with_source_and_style(cli: RunCLI) -> None:
    run = cli("--json", "translate", "Thank you", "--from", "en", "--to", "DE", "--style", "formal")
    assert run.code == 0, run.err
    assert json.loads(run.out) == {
        "translated_text": translate_text("Thank you", "en", "de", "formal"),
        "source_language": "en",
        "target_language": "de",
    }


def test_translate_dash_reads_stdin_without_its_final_newline(cli: RunCLI) -> None:
    run = cli("translate", "-", "--to", "fr", stdin="Good night\n")
    assert (run.code, run.out) == (0, translate_text("Good night", "en", "fr") + "\n")


def test_global_options_are_accepted_after_the_command(cli: RunCLI, server: EmulatorServer) -> None:
    run = cli(
        "translate", "Hello", "--to", "es", "--json", "--max-retries", "0", "--timeout", "5",
        "--api-key", server.api_key, "--base-url", server.base_url,
        env=child_env(),
    )  # fmt: skip
    assert run.code == 0, run.err
    assert json.loads(run.out)["translated_text"] == "Hola"


def test_an_option_after_the_command_wins_over_the_same_before_it(
    cli: RunCLI, server: EmulatorServer
) -> None:
    run = cli("--base-url", "http://127.0.0.1:1/v1", "documents", "--base-url", server.base_url)
    assert run.code == 0, run.err


# -- documents, status, wait -------------------------------------------------------------------


def test_documents_lists_ids_and_names(cli: RunCLI) -> None:
    run = cli("documents")
    assert run.code == 0, run.err
    assert [line.split()[0] for line in run.out.splitlines()] == ["doc_welcome", "doc_handbook"]


def test_documents_json_is_an_array_of_the_records(cli: RunCLI, emulator: Emulator) -> None:
    emulator.add_document("doc_notes", name="Notes", pages=3)  # no language: none is shown
    run = cli("documents", "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == list(emulator.documents.values())


def test_document_starts_a_translation_and_says_how_to_follow_it(cli: RunCLI) -> None:
    run = cli("document", "doc_welcome", "--to", "de", "--style", "formal", "--no-memory")
    assert run.code == 0, run.err
    translation_id, state, document = run.out.split()
    assert (state, document) == ("processing", "doc_welcome")
    assert f"lingodoc wait {translation_id}" in run.err


def test_document_json_is_the_job(cli: RunCLI) -> None:
    run = cli("--json", "document", "doc_handbook", "--to", "fr", "--memory")
    assert run.code == 0, run.err
    job = json.loads(run.out)
    assert job["document_id"] == "doc_handbook"
    assert job["status"] == "processing"
    assert job["translation_id"].startswith("tr_")
    assert job["estimated_completion"].endswith("Z")


def test_document_wait_shows_progress_on_stderr_and_the_result_on_stdout(cli: RunCLI) -> None:
    run = cli("document", "doc_welcome", "--to", "de", "--wait", "--interval", "0.05")
    assert run.code == 0, run.err
    assert STATUS_LINE.fullmatch(run.out.strip()), run.out
    assert run.err.splitlines()[-1] == "completed 100%"


def test_status_shows_the_state(cli: RunCLI, emulator: Emulator, server: EmulatorServer) -> None:
    emulator.job_duration = 60  # still running when the command reads it, however slow
    translation_id = start_job(server)
    run = cli("status", translation_id)
    assert run.code == 0, run.err
    assert re.fullmatch(rf"{translation_id}  processing  \d+%  doc_welcome -> de\n", run.out)


def test_status_json(cli: RunCLI, emulator: Emulator, server: EmulatorServer) -> None:
    emulator.job_duration = 60
    translation_id = start_job(server)
    run = cli("status", translation_id, "--json")
    assert run.code == 0, run.err
    status = json.loads(run.out)
    assert (status["translation_id"], status["status"]) == (translation_id, "processing")
    assert status["completed_at"] is None


def test_wait_prints_the_completed_status(cli: RunCLI, server: EmulatorServer) -> None:
    translation_id = start_job(server)
    run = cli("wait", translation_id, "--interval", "0.05")
    assert run.code == 0, run.err
    assert STATUS_LINE.fullmatch(run.out.strip())
    assert translation_id in run.out


def test_wait_json(cli: RunCLI, server: EmulatorServer) -> None:
    translation_id = start_job(server)
    run = cli("--json", "wait", translation_id, "--interval", "0.05", "--wait-timeout", "10")
    assert run.code == 0, run.err
    assert json.loads(run.out)["status"] == "completed"


# -- emulator, help, the console script --------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["translate", "batch", "document", "status", "wait", "documents", "demo", "emulator"],
)
def test_every_command_has_help_naming_the_variables(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert f"usage: lingodoc {command}" in text
    assert "LINGODOC_API_KEY" in text
    assert "LINGODOC_BASE_URL" in text


@pytest.mark.parametrize(
    "command", ["translate", "batch", "document", "status", "wait", "documents", "emulator"]
)
def test_the_environment_and_exit_codes_are_in_the_top_level_help_only(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "\nexit codes:\n" not in text
    assert "LINGODOC_LOG" not in text
    assert "130  interrupted" not in text
    if command != "emulator":
        assert text.rstrip().endswith("environment variables and exit codes: lingodoc --help")
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert (text.count("\nexit codes:\n"), text.count("LINGODOC_LOG")) == (1, 1)


def test_the_help_of_wait_for_rate_limit_sets_no_limit_it_does_not_keep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It waits as long as the service says: an "up to an hour" would be a promise not kept.
    assert main(["batch", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "wait for the reset, however far off the service says it is" in text
    assert "hour" not in text


def test_top_level_help_lists_commands_variables_and_exit_codes(cli: RunCLI) -> None:
    run = cli("--help")
    assert run.code == 0
    commands = ("translate", "batch", "document", "status", "wait", "documents", "demo")
    for word in (*commands, "emulator"):
        assert f"\n    {word} " in run.out
    assert "LINGODOC_API_KEY" in run.out
    assert "LINGODOC_BASE_URL" in run.out
    assert "exit codes:" in run.out
    assert "130  interrupted" in run.out


def variables_named_in(text: str) -> list[str]:
    return re.findall(r"\bLINGODOC_[A-Z][A-Z_]*\b", text)


def test_the_help_and_the_guide_list_every_lingodoc_variable_the_code_reads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A LINGODOC_ name in the source is a variable that the SDK or the command reads (or
    # prints, for the user to set): a new one is listed, or this fails.
    source = Path(lingodoc.__file__).parent
    read = {name for path in source.rglob("*.py") for name in variables_named_in(path.read_text())}
    assert set(ENVIRONMENT) == read
    assert main(["--help"]) == 0
    help_text = capsys.readouterr().out
    section = help_text.split("\nenvironment:\n")[1].split("\n\n")[0]
    assert re.findall(r"^  (LINGODOC_\w+)  ", section, re.MULTILINE) == list(ENVIRONMENT)
    guide = (source.parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = guide.split("\n## Environment variables\n")[1].split("\n## ")[0]
    assert sorted(re.findall(r"^\| `(LINGODOC_\w+)` \|", table, re.MULTILINE)) == sorted(read)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"lingodoc {lingodoc.__version__}\n"


def test_the_lingodoc_console_script(env: dict[str, str]) -> None:
    name = "lingodoc.exe" if os.name == "nt" else "lingodoc"
    script = Path(sys.executable).parent / name
    if not script.exists():
        pytest.skip(
            f"no console script at {script}: reinstall the package (pip install -e .) "
            "after pyproject.toml declares [project.scripts] lingodoc"
        )
    run = run_command([str(script), "translate", "Hello world", "--to", "de"], env=env)
    assert (run.code, run.out) == (0, "Hallo Welt\n"), run.err


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")],
    ids=["SIGINT", "SIGTERM"],
)
def test_ctrl_c_or_sigterm_while_waiting_exits_without_a_traceback(
    emulator: Emulator,
    server: EmulatorServer,
    env: dict[str, str],
    stop: signal.Signals,
    code: int,
    said: str,
) -> None:
    if signal.getsignal(stop) == signal.SIG_IGN:
        # As under `pytest &` in a script: the child would inherit it and never stop.
        pytest.skip(f"{stop.name} is ignored in this process, and so would be in the command")
    emulator.job_duration = 60
    translation_id = start_job(server)
    command = [sys.executable, "-m", "lingodoc", "wait", translation_id, "--interval", "0.05"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stderr is not None
            assert process.stderr.readline().startswith("processing")
            process.send_signal(stop)
            _, err = process.communicate(timeout=10)
        finally:
            process.kill()  # a no-op if it has stopped, as it should have
    assert process.returncode == code
    assert "Traceback" not in err
    resume = f"`lingodoc wait {translation_id}` resumes"
    assert err.endswith(f"lingodoc: {said}; the translation goes on: {resume}\n")


def test_a_command_run_in_process_gives_back_the_sigterm_handler_it_found(
    tmp_path: Path,
) -> None:
    def mine(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        assert main(["cache", "stats", str(tmp_path / "missing.db")]) == 2
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)
