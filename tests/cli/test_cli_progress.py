"""Progress while waiting: a bar on a terminal, a line per change otherwise, always on stderr."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

import lingodoc
from lingodoc.cli._progress import Progress, progress_bar
from lingodoc.emulator import EmulatorServer
from tests.cli.conftest import RunCLI


def status(state: str, progress: int) -> lingodoc.TranslationStatus:
    return lingodoc.TranslationStatus(translation_id="tr_1", status=state, progress=progress)


@pytest.mark.parametrize(
    ("percent", "state", "elapsed", "line"),
    [
        (0, "pending", 0.0, "[--------------------]   0%  pending  0s"),
        (45, "processing", 12.7, "[#########-----------]  45%  processing  12s"),
        (100, "completed", 65, "[####################] 100%  completed  1m05s"),
        (130, "processing", 3725, "[####################] 100%  processing  1h02m"),
        (-5, "processing", -1, "[--------------------]   0%  processing  0s"),
    ],
)
def test_progress_bar(percent: int, state: str, elapsed: float, line: str) -> None:
    assert progress_bar(percent, state, elapsed) == line


def test_progress_bar_width() -> None:
    assert progress_bar(50, "processing", 1, width=10) == "[#####-----]  50%  processing  1s"


def test_bar_mode_redraws_one_line_and_ends_it() -> None:
    stream = io.StringIO()
    progress = Progress(stream, bar=True)
    progress(status("processing", 10))
    progress(status("processing", 90))
    progress(status("failed", 90))  # shorter than the line before: padded over
    progress.close()
    progress.close()  # once is enough
    frames = stream.getvalue().split("\r")[1:]
    assert [frame.split()[1] for frame in frames] == ["10%", "90%", "90%"]
    assert frames[2] == "[##################--]  90%  failed  0s    \n"


def test_line_mode_prints_only_changes() -> None:
    stream = io.StringIO()
    progress = Progress(stream, bar=False)
    polls = [("pending", 0), ("pending", 0), ("processing", 0), ("processing", 0)]
    polls += [("processing", 50), ("completed", 100)]
    for state, percent in polls:
        progress(status(state, percent))
    progress.close()
    assert stream.getvalue() == "pending 0%\nprocessing 0%\nprocessing 50%\ncompleted 100%\n"


def test_without_a_terminal_a_line_per_change_on_stderr(cli: RunCLI) -> None:
    run = cli("--json", "document", "doc_welcome", "--to", "de", "--wait", "--interval", "0.02")
    assert run.code == 0, run.err
    assert json.loads(run.out)["status"] == "completed"  # stdout: the result alone
    started, *lines = run.err.splitlines()
    assert re.fullmatch(r"lingodoc: translation tr_\w+ of doc_welcome started", started)
    assert all(re.fullmatch(r"processing \d*0%", line) for line in lines[:-1]), lines
    assert lines[-1] == "completed 100%"
    assert len(lines) == len(set(lines)) >= 3


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_on_a_terminal_a_bar_on_stderr_and_clean_json_on_stdout(
    server: EmulatorServer, env: dict[str, str]
) -> None:
    import pty

    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "lingodoc", "--json", "document", "doc_welcome"]
    command += ["--to", "de", "--wait", "--interval", "0.05"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=env) as process:
        os.close(follower)
        screen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            screen += chunk
        out, _ = process.communicate(timeout=10)
    os.close(leader)
    assert process.returncode == 0, screen
    assert json.loads(out)["status"] == "completed"
    text = screen.decode()
    bars = re.findall(r"\r(\[[#-]{20}\] +\d+%  \w+  \d+s) *", text)
    assert bars[0] == "[--------------------]   0%  processing  0s"
    assert bars[-1].startswith("[####################] 100%  completed  ")
    assert len(bars) >= 3
    assert text.endswith("\n")  # the bar's line is ended (a terminal shows \n as \r\n)
