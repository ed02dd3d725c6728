"""The quickstart runs as a user runs it, against the emulator it starts itself.

The other examples run in tests/docs/test_examples_run.py, whose ``run`` this uses: in a
subprocess, with no LINGODOC_* variables, exit code 0 and nothing on stderr.
"""

from __future__ import annotations

from tests.docs.test_examples_run import EXAMPLES, run


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
