"""The ```console transcripts of the docs: their commands run, and print what the page shows.

A transcript is read as a terminal session: a line ``$ COMMAND`` is a command, and the lines
after it, up to the next command, are what it prints (stdout and stderr together; blank
lines at the end do not count). A command that ends with a backslash goes on over the next
line, which starts with ``> ``, as bash shows it; it runs as typed, backslash and newline
included. The commands of a page run in order, in one session: in a
scratch directory, with no ``LINGODOC_*`` variables but those the page exports, and with
``lingodoc`` and ``python`` running this source tree. So:

* a command that starts the emulator (``lingodoc emulator``, ``python -m lingodoc.emulator``)
  starts it in the background, on any free port (``--port 0`` in place of the page's port,
  which may be taken), and what it prints on start must be what the page shows. It serves
  the rest of the page, as the first terminal does for the second in docs/cli.md, and is
  stopped (SIGTERM) after the page, which must end it with exit code 0. A later command
  that starts the emulator restarts it, as Ctrl-C and that command in the first terminal
  would: the running one is stopped (exit code 0) and the new one listens on the same port;
* the line ``<!-- transcript: the emulator's clock moves on N s -->`` between two blocks
  moves the running emulator's clock N seconds on (its rate-limit windows, its jobs), for
  "an hour later" without the hour. The emulator runs with a clock of its own for this:
  the real one, plus the seconds the page has moved it on;
* ``export NAME=VALUE`` sets NAME to the value the page's emulator printed for it (the page
  shows a placeholder, below);
* any other command runs in bash, must exit with 0 and print what the page shows.

What varies from run to run is written in the pages as an example value, and compared as a
placeholder: before comparing, this replaces, in the page and in what was printed alike,

* a loopback address ``http://127.0.0.1:8787/v1`` (any port) with ``http://127.0.0.1:<port>/v1``;
* an API key, shown elided as ``ld_3f0c...`` and printed whole (``ld_`` and 32 hex digits),
  with ``<key>``;
* a translation id (``tr_`` and 16 hex digits) with ``<translation id>``;
* a timestamp (``2026-01-22T05:32:01+00:00``) with ``<time>``;
* a time of day (``15:04:05``, when a rate-limit window resets) with ``<clock>``;
* a duration after ``ETA`` or ``(in`` (``12s``, ``4m05s``, ``1h00m``) with ``<duration>``.

Nothing else may differ. The commands whose output cannot be the same on every run are not
run, and ``NOT_RUN`` says why; it must name only commands the pages show (a trailing
``# comment`` left out).

The README's command-line section is run the same way, after the emulator its prose tells
the reader to start in another terminal: top to bottom, in an empty directory.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import lingodoc
from tests.waiting import PATIENCE, wait_until

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / name for name in ("cli.md", "getting-started.md", "emulator.md")]
SRC = str(Path(lingodoc.__file__).resolve().parents[1])

# Commands shown but not run, and why.
NOT_RUN = {
    "lingodoc document doc_welcome --to de --wait": (
        "its progress bar is drawn for a terminal, with the seconds the wait has taken"
    ),
    "id=$(lingodoc --json document doc_welcome --to fr | jq -r .translation_id)": (
        "it only sets $id, for the next command"
    ),
    'lingodoc wait "$id" --wait-timeout 600': (
        "it waits for a job in real time (6 s) and shows its progress, which the page leaves out"
    ),
}

PLACEHOLDERS = [
    (re.compile(r"http://127\.0\.0\.1:\d+/v1\b"), "http://127.0.0.1:<port>/v1"),
    (re.compile(r"\bld_(?:[0-9a-f]{32}\b|[0-9a-f]{1,31}\.\.\.)"), "<key>"),
    (re.compile(r"\btr_[0-9a-f]{16}\b"), "<translation id>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<clock>"),
    (re.compile(r"(?<!\w)(ETA|\(in) (?:\d+h\d\dm|\d+m\d\ds|\d+s)\b"), r"\1 <duration>"),
]
EMULATOR = re.compile(r"^(lingodoc emulator|python -m lingodoc\.emulator)\b")
PORT = re.compile(r"\s--port[ =]\d+")
EXPORT = re.compile(r"^export (?P<name>\w+)=(?P<value>\S*)$")
ADVANCE = re.compile(r"^<!-- transcript: the emulator's clock moves on (?P<seconds>\d+) s -->$")
# The page's emulator runs through this, with a clock the page can move on (ADVANCE).
EMULATOR_WITH_A_CLOCK = """\
import asyncio, runpy, sys, time
from pathlib import Path
from lingodoc.emulator import _emulator

offset = Path(sys.argv.pop(1))


class Clock:
    def time(self):
        text = offset.read_text(encoding="utf-8") if offset.exists() else ""
        return time.time() + float(text or 0)

    def sleep(self, seconds):
        time.sleep(seconds)

    async def async_sleep(self, seconds):
        await asyncio.sleep(seconds)


class Emulator(_emulator.Emulator):
    def __init__(self, **kwargs):
        super().__init__(clock=Clock(), **kwargs)


_emulator.Emulator = Emulator  # what `lingodoc emulator` and the emulator's main import
sys.argv[0] = sys.argv[1]
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""

# The README's command-line section, run as its prose says: after `lingodoc emulator` in one
# terminal and the two variables it prints exported in another.
README = ROOT / "README.md"
README_SECTION = "### The command line"
COMMENT = re.compile(r"\s+#\s.*$")


def shown_as(command: Command) -> str:
    """The command as NOT_RUN names it: without a trailing ``# comment``."""
    return COMMENT.sub("", command.text)


def readme_commands() -> list[Command]:
    """The commands of the README's command-line section, in order."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(README_SECTION) + 1
    end = next((n for n in range(start, len(lines)) if lines[n].startswith("#")), len(lines))
    return [command for command in read_transcripts(README) if start < command.line <= end]


pytestmark = pytest.mark.skipif(
    os.name == "nt" or shutil.which("bash") is None, reason="the transcripts are bash sessions"
)


@dataclass
class Command:
    """One command of a transcript and what the page shows it printing.

    Or, with ``advance``, not a command: the page moves the emulator's clock on.
    """

    page: Path
    line: int  # of the command, from 1
    text: str
    shown: list[str] = field(default_factory=list)
    advance: float | None = None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_transcripts(page: Path) -> list[Command]:
    """Return the commands of the page's ```console blocks, in order."""
    commands: list[Command] = []
    fence: str | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None:
            opening = re.match(r"^(`{3,})console\s*$", line)
            fence = opening and opening.group(1)
            advance = ADVANCE.match(line.strip())
            if advance:
                seconds = float(advance["seconds"])
                commands.append(Command(page, number, line.strip(), advance=seconds))
        elif line.strip() == fence:
            fence = None
        elif line.startswith("$ "):
            commands.append(Command(page, number, line[2:].strip()))
        elif line.startswith("> ") and commands and commands[-1].text.endswith("\\"):
            commands[-1].text += "\n" + line[2:]  # bash's continuation prompt
        else:
            assert commands, f"{page.name}:{number}: output before any command"
            commands[-1].shown.append(line)
    for command in commands:
        while command.shown and not command.shown[-1].strip():
            command.shown.pop()
    return commands


TRANSCRIPTS = {page: read_transcripts(page) for page in PAGES}


def normalize(lines: list[str]) -> list[str]:
    """Replace what varies from run to run with its placeholder."""
    normalized = []
    for line in lines:
        for pattern, placeholder in PLACEHOLDERS:
            line = pattern.sub(placeholder, line)
        normalized.append(line.rstrip())
    return normalized


@dataclass
class Session:
    """A terminal session: its directory, environment and the emulator it started."""

    cwd: Path
    env: dict[str, str]
    emulator: subprocess.Popen[bytes] | None = None
    printed: dict[str, str] = field(default_factory=dict)  # NAME=VALUE lines it printed
    port: int | None = None  # the emulator's, kept when it restarts
    started: int = 0  # emulators started
    advanced: float = 0.0  # seconds the page moved the emulator's clock on

    @property
    def offset(self) -> Path:
        return self.cwd.parent / "emulator-clock"

    @property
    def launcher(self) -> Path:
        return self.cwd.parent / "emulator_with_a_clock.py"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A session with ``lingodoc`` and ``python`` running this source tree."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, args in (("lingodoc", '-m lingodoc "$@"'), ("python", '"$@"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args}\n', encoding="utf-8")
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LINGODOC_", "PYTEST_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    work = tmp_path / "work"
    work.mkdir()
    running = Session(work, env)
    running.launcher.write_text(EMULATOR_WITH_A_CLOCK, encoding="utf-8")
    try:
        yield running
    finally:
        if running.emulator is not None and running.emulator.poll() is None:
            running.emulator.kill()
            running.emulator.wait(PATIENCE)


def start_emulator(command: Command, session: Session) -> list[str]:
    """Start the emulator in the background (stopping one running); return what it printed."""
    stop_emulator(session)
    text = PORT.sub("", command.text) + f" --port {session.port or 0}"
    # Run through the launcher, for a clock the page can move on: `lingodoc emulator ...`
    # runs the module lingodoc, `python -m lingodoc.emulator ...` the module lingodoc.emulator.
    module = "lingodoc" if text.startswith("lingodoc ") else "lingodoc.emulator"
    arguments = text.split(" ", 1)[1] if module == "lingodoc" else text.split(" ", 3)[3]
    launch = f'"{sys.executable}" "{session.launcher}" "{session.offset}" {module} {arguments}'
    session.started += 1
    log = session.cwd.parent / f"emulator-{session.started}.log"
    with log.open("wb") as out:
        session.emulator = subprocess.Popen(
            ["bash", "-c", f"exec {launch}"],
            cwd=session.cwd,
            env=session.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def banner_printed() -> bool:
        # Its banner is one write, ending with the line that exports the key.
        printed = log.read_text(encoding="utf-8")
        assert session.emulator.poll() is None, f"{command.name}: it exited: {printed}"
        return "LINGODOC_API_KEY=" in printed

    wait_until(banner_printed, f"{command.name}: the emulator's banner")
    printed = log.read_text(encoding="utf-8")
    lines = printed.rstrip("\n").splitlines()
    address = re.search(r"running at http://[^ ]+:(\d+)/v1", printed)
    assert address, f"{command.name}: no address in {printed}"
    session.port = int(address.group(1))
    for line in lines:
        export = EXPORT.match(line.strip())
        if export:
            session.printed[export["name"]] = export["value"]
    return lines


def stop_emulator(session: Session) -> None:
    if session.emulator is None:
        return
    session.emulator.send_signal(signal.SIGTERM)
    assert session.emulator.wait(PATIENCE) == 0, "the emulator did not stop cleanly"
    session.emulator = None


def advance(command: Command, session: Session) -> list[str]:
    """Move the emulator's clock on, as the page says; it prints nothing."""
    assert command.advance is not None
    assert session.emulator is not None, f"{command.name}: no emulator to move the clock of"
    session.advanced += command.advance
    session.offset.write_text(str(session.advanced), encoding="utf-8")
    return []


def run(command: Command, session: Session) -> list[str]:
    """Run one command as the page's terminal does; return what it printed."""
    if command.advance is not None:
        return advance(command, session)
    if EMULATOR.match(command.text):
        return start_emulator(command, session)
    export = EXPORT.match(command.text)
    if export:
        name = export["name"]
        assert name in session.printed, f"{command.name}: the emulator printed no {name}"
        value = session.printed[name]
        assert normalize([export["value"]]) == normalize([value]), (
            f"{command.name}: the page exports {export['value']!r}, the emulator printed {value!r}"
        )
        session.env[name] = value
        return []
    result = subprocess.run(
        ["bash", "-c", command.text],
        cwd=session.cwd,
        env=session.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=PATIENCE,
        check=False,
    )
    printed = result.stdout.decode("utf-8")
    assert result.returncode == 0, f"{command.name} exited with {result.returncode}: {printed}"
    return printed.rstrip("\n").splitlines()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_commands_print_what_the_page_shows(page: Path, session: Session) -> None:
    checked = 0
    for command in TRANSCRIPTS[page]:
        if shown_as(command) in NOT_RUN:
            continue
        printed = run(command, session)
        assert normalize(printed) == normalize(command.shown), (
            f"{command.name}: `{command.text}` printed something else than the page shows"
        )
        checked += 1
    stop_emulator(session)
    assert checked, f"{page.name}: no command was checked"


def test_the_readme_command_line_section_runs_top_to_bottom(session: Session) -> None:
    # As its prose says: `lingodoc emulator` in one terminal, its two variables exported in
    # the other, then its commands in order, in an empty directory: a file a command reads
    # must be made by an earlier one.
    start_emulator(Command(README, 0, "lingodoc emulator"), session)
    session.env.update(session.printed)
    commands = readme_commands()
    checked = 0
    for command in commands:
        if shown_as(command) in NOT_RUN:
            continue
        printed = run(command, session)
        assert normalize(printed) == normalize(command.shown), (
            f"{command.name}: `{command.text}` printed something else than the README shows"
        )
        checked += 1
    stop_emulator(session)
    texts = [command.text for command in commands]
    assert any(text.startswith("printf ") and "> greetings.txt" in text for text in texts)
    assert checked >= 6, texts


def test_the_clock_of_the_page_is_read_between_blocks() -> None:
    advances = [command for command in TRANSCRIPTS[ROOT / "docs" / "cli.md"] if command.advance]
    assert [command.advance for command in advances] == [3600]


def test_the_transcripts_are_read_and_the_exemptions_are_real() -> None:
    every = [command for page in PAGES for command in TRANSCRIPTS[page]] + readme_commands()
    commands = {shown_as(command): command for command in every}
    assert set(NOT_RUN) <= set(commands), "NOT_RUN names a command no page shows"
    batch = commands["lingodoc batch greetings.txt --from en --to fr"]
    # A blank line kept, after the progress on stderr.
    assert batch.shown[-4:] == ["Bonjour monde", "Merci tu", "", "Bon matin"]
    assert batch.shown[-5].startswith("100%  4/4 texts  1/1 request")
    assert commands["lingodoc emulator"].shown[-1].startswith("  export LINGODOC_API_KEY=")
    runnable = [text for text in commands if text not in NOT_RUN]
    assert len(runnable) >= 10


def test_placeholders_cover_only_what_varies() -> None:
    printed = [
        "lingodoc emulator running at http://127.0.0.1:40123/v1 (Ctrl-C to stop)",
        "API key (Full Access): ld_0123456789abcdef0123456789abcdef",
        "tr_d65b71256aa4b187  completed  100%  doc_welcome -> de  completed 2026-03-01T10:00:00Z",
    ]
    shown = [
        "lingodoc emulator running at http://127.0.0.1:8787/v1 (Ctrl-C to stop)",
        "API key (Full Access): ld_3f0c...",
        "tr_0123456789abcdef  completed  100%  doc_welcome -> de  completed 2026-01-22T05:32:01Z",
    ]
    assert normalize(printed) == normalize(shown)
    assert normalize(["Hallo Welt"]) != normalize(["Hallo Welt!"])
    assert normalize(["http://127.0.0.1:8787/v2"]) != normalize(["http://127.0.0.1:1/v1"])
    assert normalize(["ld_3f0c"]) != normalize(["ld_3f0c..."])  # a key is elided or whole
    progress = [" 40%  200/500 texts  window: 1 left, resets 09:15:02  ETA 1h00m"]
    assert normalize(progress) == normalize([progress[0].replace("09:15:02", "15:04:05")])
    assert normalize([progress[0].replace("1h00m", "59m59s")]) == normalize(progress)
    assert normalize(["resets at 09:15:02 (in 4m05s): then"]) == [
        "resets at <clock> (in <duration>): then"
    ]
    assert normalize(["ETA 12s"]) != normalize(["ETA 12 s"])
    assert normalize(["400 of 500 texts"]) != normalize(["300 of 500 texts"])
