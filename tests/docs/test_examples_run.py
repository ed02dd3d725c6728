"""Every example runs as a user runs it: in a subprocess, with no LINGODOC_* variables set.

With no configuration, each example starts the emulator by itself; these tests check that it
finishes in time, writes nothing to stderr, and prints what it is meant to show.

The cluster recipes are run elsewhere, by the tests ``ELSEWHERE`` names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TINY_APP = EXAMPLES / "tiny_app"
TIMEOUT = 60  # seconds for any one example; each takes a few
# Examples that tests elsewhere run, each with the test module that does.
ELSEWHERE = {
    # On a Dask cluster with a redis-server, which the suite does not install: `nox -s cluster`.
    "examples/dask_column.py": "tests/cluster/test_dask_column.py",
    # In Spark's local mode, on the Java that .ci/run installs: `nox -s cluster` too.
    "examples/spark_column.py": "tests/cluster/test_spark_column.py",
}


def clean_env() -> dict[str, str]:
    """The environment without lingodoc's variables (or pytest's, for the nested runs)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("LINGODOC_", "PYTEST_"))}


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    return result


def test_quickstart_runs_against_the_emulator_it_starts_itself() -> None:
    out = run(str(EXAMPLES / "quickstart.py")).stdout
    for shown in (
        "started the emulator at http://127.0.0.1:",
        "'Hello world' -> 'Hallo Welt'",
        "['Bienvenue', 'Mon ami', 'Merci']",
        "completed 100%",
        "InvalidLanguage: INVALID_LANGUAGE (400)",
        "requests left",
    ):
        assert shown in out, out


def test_async_batch() -> None:
    out = run(str(EXAMPLES / "async_batch.py")).stdout
    assert "using the emulator, in-process" in out
    assert "1. translate_many: 1000 texts in " in out
    assert "'Good morning' -> 'Gut Morgen'" in out
    assert "fr: ['Bon matin', 'Merci tu', 'Bonjour monde']" in out
    assert "'Hello' -> xx: '<failed: INVALID_LANGUAGE>'" in out
    assert "'Good night' -> de: 'Gut Nacht'" in out
    assert "Requests left this hour: " in out


def test_document_progress() -> None:
    out = run(str(EXAMPLES / "document_progress.py")).stdout
    assert "Stored documents: ['doc_welcome', 'doc_handbook']" in out
    assert "%  processing\n" in out  # progress lines while it runs (how many: timing)
    assert "[##########] 100%  completed" in out
    assert "gave up waiting (processing at " in out
    assert "the translation goes on" in out
    assert "   resumed tr_" in out
    assert "3. started 2 translations" in out
    assert "doc_welcome: completed 100%" in out
    assert "doc_handbook: completed 100%" in out


def test_error_handling() -> None:
    out = run(str(EXAMPLES / "error_handling.py")).stdout
    expected = [
        "-> '13,000 characters sent in two parts: Hallo Welt. Hallo Welt....'",
        '-> "(not translated: INVALID_LANGUAGE (400): ',
        "-> NotFound: NOT_FOUND (404): ",
        "-> Unauthorized: UNAUTHORIZED (401): Invalid API key ending in '0000'",
        "-> ConfigurationError: base_url 'http://api.example.com/v1' uses http://",
        "-> 'Bon jour'",
        "the emulator saw: [500, 500, 200]",
        "-> '(not translated: SERVICE_UNAVAILABLE 503, request req_",
        "-> 'Gracias'",
        "-> '(not translated: rate limited, try again in 600 s)'",
        "-> APIConnectionError: POST /translate to https://emulator.lingodoc.test:443 ",
        "stopped at 50%",
        "-> TranslationFailed: translation tr_",
    ]
    for line in expected:
        assert line in out
    assert "ld_this_key_does_not_exist" not in out  # the key is never shown


def test_web_service_answers_itself_over_uvicorn_and_stops() -> None:
    out = run(str(EXAMPLES / "web_service.py")).stdout  # and uvicorn logged nothing to stderr
    assert out.startswith("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator")
    asked = re.findall(r"POST http://127\.0\.0\.1:\d+/translate (.*)\n  -> (\d+) (.*)", out)
    [(german, ok, translated), (unknown, refused, why)] = asked
    assert json.loads(german) == {"text": "Hello world", "source": "en", "target": "de"}
    assert (ok, json.loads(translated)) == ("200", {"translation": "Hallo Welt"})
    assert json.loads(unknown)["target"] == "xx"
    assert refused == "422"
    assert "'xx' is not a supported language" in json.loads(why)["detail"]
    assert out.endswith("Stopped.\n")


def test_tiny_app_runs() -> None:
    out = run("app.py", cwd=TINY_APP).stdout
    assert "de: Willkommen, mein Freund" in out
    assert "fr: Bienvenue, mon ami" in out
    assert "handbook in German: completed at " in out


def test_tiny_app_tests_pass_with_the_lingodoc_fixtures() -> None:
    # Without hypothesis's plugin, which the app's tests do not use: its import takes seconds.
    result = run(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", cwd=TINY_APP
    )
    summary = result.stdout.strip().splitlines()[-1]
    passed = re.match(r"(\d+) passed in ", summary)  # and nothing failed, skipped or warned
    assert passed, result.stdout
    assert int(passed.group(1)) >= 10


@pytest.mark.parametrize(
    "example", sorted(path.relative_to(ROOT).as_posix() for path in EXAMPLES.rglob("*.py"))
)
def test_every_example_is_run_by_a_test(example: str) -> None:
    if example in ELSEWHERE:
        tests = (ROOT / ELSEWHERE[example]).read_text(encoding="utf-8")
        assert Path(example).name in tests, f"{ELSEWHERE[example]} does not run {example}"
        return
    tests = Path(__file__).read_text(encoding="utf-8") + (
        Path(__file__).parent / "test_web_service_example.py"
    ).read_text(encoding="utf-8")
    name = Path(example).name
    covered = name in tests or example.startswith("examples/tiny_app/tests/")
    assert covered, f"{example} is not run by any test"
