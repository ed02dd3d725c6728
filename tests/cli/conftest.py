"""Fixtures for the command line: a served emulator and a way to run `lingodoc` against it.

``cli`` runs each command in a process of its own, forked from one that has imported
lingodoc already (tests/cli/forked.py); ``run_command`` starts any command, such as
`python -m lingodoc` or the console script, as a subprocess.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer
from tests.cli.forked import run_forked
from tests.waiting import PATIENCE

SRC = str(Path(lingodoc.__file__).resolve().parents[1])


@dataclass
class Run:
    """What one run of the command gave."""

    code: int
    out: str
    err: str

    @property
    def error(self) -> str:
        """The error line; asserts it is the only one and that no traceback came with it."""
        assert "Traceback" not in self.err, self.err
        errors = [line for line in self.err.splitlines() if line.startswith("lingodoc: error:")]
        assert len(errors) == 1, self.err
        assert self.err.rstrip("\n").splitlines()[-1] == errors[0]
        return errors[0]


RunCLI = Callable[..., Run]


def child_env(**variables: str | None) -> dict[str, str]:
    """The environment of a child process: no LINGODOC_* but those given, this source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINGODOC_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    env.update({k: v for k, v in variables.items() if v is not None})
    return env


def run_command(
    command: Sequence[str],
    *,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = PATIENCE,
) -> Run:
    result = subprocess.run(
        list(command),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


def start_job(server: EmulatorServer, document_id: str = "doc_welcome") -> str:
    """Start translating a document into German; return the translation id."""
    with lingodoc.Client(server.api_key, base_url=server.base_url) as client:
        return client.translate_document(document_id, target_language="de").translation_id


@pytest.fixture(autouse=True)
def clock() -> None:
    # Replaces the suite's fake clock: the command runs in another process on the real
    # clock, and the emulator serving it must move its jobs on the same one.
    return None


@pytest.fixture
def emulator() -> Emulator:
    return Emulator(job_duration=0.3)


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        yield running


@pytest.fixture
def env(server: EmulatorServer) -> dict[str, str]:
    """The environment a user has after exporting the two variables `lingodoc emulator` prints."""
    return child_env(LINGODOC_BASE_URL=server.base_url, LINGODOC_API_KEY=server.api_key)


def text(printed: bytes) -> str:
    """What a process printed, read as text as ``subprocess.run(text=True)`` reads it."""
    return io.TextIOWrapper(io.BytesIO(printed), encoding="utf-8").read()


@pytest.fixture
def cli(env: dict[str, str]) -> RunCLI:
    """Run `lingodoc ARGS` against the emulator, in a process of its own; ``env=`` replaces
    the environment, ``timeout=`` (seconds) fails a run that hangs rather than wait for it."""

    def run(
        *args: str, stdin: str | None = None, env: dict[str, str] = env, timeout: float = PATIENCE
    ) -> Run:
        stdin_bytes = (stdin or "").encode()
        code, out, err = run_forked(list(args), env=env, stdin=stdin_bytes, timeout=timeout)
        return Run(code, text(out), text(err))

    return run
