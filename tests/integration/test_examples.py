"""The examples run as a user runs them, so none goes stale."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINGODOC_")}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_quickstart_runs_against_the_emulator_it_starts_itself() -> None:
    result = run_example("quickstart.py")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "started the emulator at http://127.0.0.1:" in out
    assert "'Hello world' -> 'Hallo Welt'" in out
    assert "['Bienvenue', 'Mon ami', 'Merci']" in out
    assert "completed 100%" in out
    assert "InvalidLanguage: INVALID_LANGUAGE (400)" in out
    assert "requests left" in out
    assert result.stderr == ""
