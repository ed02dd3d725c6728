"""Progress on stderr: a bar on a terminal, a line per change otherwise.

While `wait` or `document --wait` polls a translation, and while `batch` works through a
corpus (the ETA, the status line, bar and lines, in process and on fake times).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import pytest

import lingodoc
from lingodoc.cli._progress import BulkProgressDisplay, Progress, bulk_status, eta, progress_bar
from lingodoc.emulator import Emulator, Reply
from lingodoc.testing import FakeClock
from tests.cli.conftest import RunCLI
from tests.waiting import PATIENCE

NOW = 1_800_000_000.0  # a fixed "now", in Unix seconds


class Stepping(Emulator):
    """The emulator on a clock of its own that moves only as a job is polled: a quarter of
    the job at each poll, so the command sees the same progress however fast it polls."""

    def __init__(self) -> None:
        super().__init__(job_duration=1.0, clock=FakeClock())

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        reply = super().handle(method, target, headers, body)
        if method == "GET" and target.startswith("/v1/translations/"):
            self.advance(0.25)
        return reply


@pytest.fixture
def emulator() -> Emulator:
    return Stepping()


@dataclass(frozen=True)
class Window:
    limit: int
    remaining: int
    reset_at: datetime


@dataclass(frozen=True)
class State:
    done: int = 0
    total: int = 1000
    requests: int = 0
    requests_left: int = 10
    rate_limit: Window | None = None
    waiting_until: datetime | None = None
    cache_hits: int = 0
    cache_misses: int = 0


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def local(seconds: float) -> str:
    return at(seconds).astimezone().strftime("%H:%M:%S")


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
    # A line per poll (Stepping), each change once.
    progress = ["processing 0%", "processing 20%", "processing 50%", "processing 70%"]
    assert lines == [*progress, "completed 100%"]


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_on_a_terminal_a_bar_on_stderr_and_clean_json_on_stdout(env: dict[str, str]) -> None:
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
        out, _ = process.communicate(timeout=PATIENCE)
    os.close(leader)
    assert process.returncode == 0, screen
    assert json.loads(out)["status"] == "completed"
    text = screen.decode()
    bars = re.findall(r"\r(\[[#-]{20}\] +\d+%  \w+  \d+s) *", text)
    # The first poll sees 0% (Stepping); the seconds are the command's own, real, ones.
    assert re.fullmatch(r"\[-{20}\]   0%  processing  \d+s", bars[0])
    assert bars[-1].startswith("[####################] 100%  completed  ")
    assert len(bars) >= 3
    assert text.endswith("\n")  # the bar's line is ended (a terminal shows \n as \r\n)


# -- batch: the ETA ----------------------------------------------------------------------------


def test_eta_is_unknown_before_any_answer_and_zero_when_nothing_is_left() -> None:
    assert eta(now=NOW, busy=0, requests=0, requests_left=10) is None
    assert eta(now=NOW, busy=5, requests=10, requests_left=0) == 0.0


def test_eta_from_the_rate_when_the_rest_fits_in_the_window() -> None:
    # 4 requests in 2 s: 0.5 s each; 6 to go, and 100 left in the window.
    assert eta(now=NOW, busy=2, requests=4, requests_left=6) == 3.0
    window = {"limit": 100, "remaining": 6, "reset_at": NOW + 600}
    assert eta(now=NOW, busy=2, requests=4, requests_left=6, **window) == 3.0


def test_eta_waits_for_the_reset_when_the_rest_does_not_fit() -> None:
    # 2 left in the window, 5 needed: the 3 beyond it go after the reset in 600 s.
    window = {"limit": 100, "remaining": 2, "reset_at": NOW + 600}
    assert eta(now=NOW, busy=2, requests=4, requests_left=5, **window) == 600 + 3 * 0.5


def test_eta_counts_a_whole_window_for_each_further_window_the_rest_fills() -> None:
    # 250 beyond what is left, 100 per window: two windows full, 50 in the third.
    window = {"limit": 100, "remaining": 0, "reset_at": NOW + 60}
    estimate = eta(now=NOW, busy=1, requests=10, requests_left=250, window=3600, **window)
    assert estimate == 60 + 2 * 3600 + 50 * 0.1


def test_eta_with_a_window_that_has_reset_since_it_was_heard_of() -> None:
    window = {"limit": 10, "remaining": 0, "reset_at": NOW - 5}
    # A new window of 10: the 4 needed fit, at the rate seen.
    assert eta(now=NOW, busy=2, requests=2, requests_left=4, **window) == 4.0
    # 15 needed: 10 now, 5 after a window of unknown start, taken as a whole one from now.
    assert eta(now=NOW, busy=2, requests=2, requests_left=15, window=100, **window) == 100 + 5


def test_eta_before_any_answer_but_with_a_reset_to_wait_for() -> None:
    window = {"limit": 3, "remaining": 0, "reset_at": NOW + 90}
    assert eta(now=NOW, busy=0, requests=0, requests_left=2, **window) == 90.0


# -- batch: the status line --------------------------------------------------------------------


def test_the_status_line_says_done_requests_window_and_eta() -> None:
    state = State(400, 1000, 4, 6, Window(10, 0, at(NOW + 3598)))
    assert bulk_status(state, 3601.2) == (
        f" 40%  400/1,000 texts  4/10 requests  window: 0 left, resets {local(NOW + 3598)}"
        "  ETA 1h00m"
    )


def test_the_status_line_while_waiting_and_without_a_window_or_an_eta() -> None:
    assert bulk_status(State(requests_left=1), None) == "  0%  0/1,000 texts  0/1 request"
    waiting = State(5, 10, 1, 1, Window(1, 0, at(NOW + 30)), at(NOW + 30))
    assert bulk_status(waiting, 31) == (
        f" 50%  5/10 texts  1/2 requests  window: 0 left, resets {local(NOW + 30)}"
        f"  waiting for the reset at {local(NOW + 30)}  ETA 31s"
    )
    assert bulk_status(State(10, 10, 1, 0), 0.0) == "100%  10/10 texts  1/1 request"


def test_the_status_line_counts_cache_hits_and_misses_when_a_cache_is_used() -> None:
    cached = State(7, 10, 0, 1, cache_hits=1, cache_misses=3)
    assert bulk_status(cached, None) == " 70%  7/10 texts  0/1 request  cache: 1 hit, 3 misses"
    assert bulk_status(State(10, 10, 0, 0, cache_hits=10), None) == (
        "100%  10/10 texts  0/0 requests  cache: 10 hits, 0 misses"
    )


# -- batch: bar and lines ----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def test_lines_at_the_start_at_each_tenth_and_when_a_wait_begins() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = BulkProgressDisplay(stream, bar=False, clock=clock)
    window = Window(5, 4, at(NOW + 3600))
    progress(State(0, 100, 0, 20))
    for done in (4, 8, 12, 16):  # 12 passes 10 %: one line
        clock.now += 1
        progress(State(done, 100, done // 4, 20 - done // 4, replace(window, remaining=4)))
    clock.now += 1
    resets = at(NOW + 3600)
    waiting = State(20, 100, 5, 15, Window(5, 0, resets), resets)
    progress(waiting)  # a wait begins: a line, though no tenth was passed
    progress(waiting)  # still waiting: none
    clock.now = NOW + 3600  # the wait took an hour, left out of the sending rate
    progress(State(40, 100, 10, 10, Window(5, 0, at(NOW + 7200))))
    progress(State(100, 100, 20, 0, Window(5, 0, at(NOW + 10800))))
    progress.close()  # lines need no ending
    clock_at = local(NOW + 3600)
    # At 12 %: 1 s a request, 17 to go, 4 left in a window of 5 an hour: the 13 beyond
    # it take the two windows after this one and 3 requests of the third: 3h.
    # At 40 %: the hour's wait left out, 0.5 s a request; 10 to go, 5 an hour: 2h.
    assert stream.getvalue().splitlines() == [
        "  0%  0/100 texts  0/20 requests",
        f" 12%  12/100 texts  3/20 requests  window: 4 left, resets {clock_at}  ETA 3h00m",
        f" 20%  20/100 texts  5/20 requests  window: 0 left, resets {clock_at}"
        f"  waiting for the reset at {clock_at}  ETA 3h00m",
        f" 40%  40/100 texts  10/20 requests  window: 0 left, resets {local(NOW + 7200)}"
        "  ETA 2h00m",
        f"100%  100/100 texts  20/20 requests  window: 0 left, resets {local(NOW + 10800)}",
    ]
    # The window's length was learned from the resets: an hour apart.
    assert progress.window == 3600


def test_the_rate_leaves_the_waits_out() -> None:
    clock = Clock()
    progress = BulkProgressDisplay(io.StringIO(), bar=False, clock=clock)
    progress(State(0, 100, 0, 10))
    clock.now += 2  # two requests in 2 s
    progress(State(20, 100, 2, 8))
    progress(State(20, 100, 2, 8, Window(2, 0, at(clock.now + 100)), at(clock.now + 100)))
    clock.now += 100  # the wait
    estimate = progress.estimate(State(20, 100, 2, 8, Window(2, 2, at(clock.now + 3600))))
    # 1 s a request (2 in the 2 s of sending, not in the 102 s since the start); 8 to go,
    # 2 an hour: the reset, two more windows, and 2 s for the last two requests.
    assert progress.waited == 100
    assert estimate == 3600 + 2 * 3600 + 2 * 1.0


def test_the_bar_is_redrawn_in_place_fits_the_terminal_and_is_ended() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = BulkProgressDisplay(stream, bar=True, clock=clock, width=60)
    progress(State(0, 10, 0, 2, Window(100, 99, at(NOW + 60))))
    clock.now += 1
    progress(State(5, 10, 1, 1, Window(100, 98, at(NOW + 60))))
    progress(State(10, 10, 2, 0))  # shorter: padded over what was there
    progress.close()
    progress.close()  # once is enough
    frames = stream.getvalue().split("\r")[1:]
    assert [frame.split("]")[0] for frame in frames] == [
        "[--------------------",
        "[##########----------",
        "[####################",
    ]
    assert all(len(frame.rstrip("\n")) <= 59 for frame in frames)
    assert frames[0].startswith("[--------------------]   0%  0/10 texts  0/2 requests  wind")
    assert frames[2].rstrip() == "[####################] 100%  10/10 texts  2/2 requests"
    assert frames[2].endswith(" \n")  # padded, then the line ended once


def test_a_wait_lasts_until_its_end_though_the_batches_in_flight_report_during_it() -> None:
    # What translate_many reports with 4 workers, 1 s a request and 10 requests an hour:
    # the pause is announced (waiting_until) while 4 batches are in flight; their answers
    # come a second later, reported without waiting_until, then nothing until the reset.
    stream, clock = io.StringIO(), Clock()
    progress = BulkProgressDisplay(stream, bar=True, clock=clock, width=200)
    reset, reset2 = NOW + 3600, NOW + 7200
    progress(State(0, 25, 0, 25))
    for k in range(1, 7):  # answered 1..6, a second each
        clock.now = NOW + k
        progress(State(k, 25, k, 25 - k, Window(10, 10 - k, at(reset))))
    progress(State(6, 25, 6, 19, Window(10, 4, at(reset)), at(reset)))  # the pause, at 6 s
    clock.now = NOW + 7
    for k in range(7, 11):  # the 4 in flight, answered during the pause
        progress(State(k, 25, k, 25 - k, Window(10, 10 - k, at(reset))))
    # Still waiting, and shown so: an hour's wait is no time spent sending.
    assert progress.wait_until == at(reset)
    assert f"waiting for the reset at {local(reset)}" in stream.getvalue().split("\r")[-1]
    for k in range(11, 14):  # after the reset, a second each
        clock.now = reset + (k - 10)
        progress(State(k, 25, k, 25 - k, Window(10, 20 - k, at(reset2))))
    assert "waiting" not in stream.getvalue().split("\r")[-1]
    assert progress.wait_until is None
    assert progress.waited == 3600 - 6  # from its announcement to the reset
    # Sending took 6 s before the pause and 3 s after it (the answers during it are left
    # out with it): 9 s for 13 requests. 12 to go, 7 left in this window: 5 after the reset.
    estimate = progress.estimate(State(13, 25, 13, 12, Window(10, 7, at(reset2))))
    assert estimate == (reset2 - clock.now) + 5 * (9 / 13)
    assert estimate < 3610  # not 1h23m, as when the hour counted as time spent sending


def test_a_wait_announced_again_for_a_later_reset_is_one_wait_shown_again() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = BulkProgressDisplay(stream, bar=False, clock=clock)
    progress(State(0, 100, 0, 10))
    clock.now += 1
    progress(State(10, 100, 1, 9, None, at(NOW + 60)))  # a wait begins: a line
    clock.now += 1
    progress(State(10, 100, 1, 9, None))  # an answer during it: no line
    progress(State(10, 100, 1, 9, None, at(NOW + 90)))  # a later end: a line
    clock.now = NOW + 90
    progress(State(10, 100, 2, 8, None))  # over
    assert stream.getvalue().splitlines() == [
        "  0%  0/100 texts  0/10 requests",
        f" 10%  10/100 texts  1/10 requests  waiting for the reset at {local(NOW + 60)}  ETA 9s",
        f" 10%  10/100 texts  1/10 requests  waiting for the reset at {local(NOW + 90)}  ETA 9s",
    ]
    assert progress.waited == 89  # from 1 s to 90 s: one wait
    assert progress.wait_until is None


def test_a_wait_is_over_at_its_end_though_that_was_rounded_up_to_the_microsecond() -> None:
    clock = Clock()
    progress = BulkProgressDisplay(io.StringIO(), bar=False, clock=clock)
    end = NOW + 10.0000006  # as the call computes it; reported as a datetime, to the µs
    progress(State(0, 100, 0, 10, None, at(end)))
    assert at(end).timestamp() > end
    clock.now = end  # where the call's wait ended: the next answer comes after
    progress(State(10, 100, 1, 9))
    assert progress.wait_until is None


def test_progress_lines_on_stderr_when_it_is_not_a_terminal(cli: RunCLI) -> None:
    lines = [f"Hello world {i}" for i in range(40)]
    run = cli("batch", "-", "--to", "de", "--batch-size", "10", "--concurrency", "1",
              stdin="\n".join(lines))  # fmt: skip
    assert run.code == 0, run.err
    progress = run.err.splitlines()
    assert progress[0] == "  0%  0/40 texts  0/4 requests"
    assert re.fullmatch(
        r"100%  40/40 texts  4/4 requests  window: 996 left, resets \d\d:\d\d:\d\d", progress[-1]
    )
    assert [line.split()[0] for line in progress] == ["0%", "25%", "50%", "75%", "100%"]
    assert all(" ETA " in line for line in progress[1:-1])


def test_quiet_shows_no_progress(cli: RunCLI) -> None:
    run = cli("batch", "-", "--to", "de", "-q", stdin="Hello\n")
    assert (run.code, run.out, run.err) == (0, "Hallo\n", "")
