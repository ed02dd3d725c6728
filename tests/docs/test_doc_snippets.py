"""The code blocks of docs/*.md and README.md: every Python block compiles, marked ones run.

Conventions for the Markdown, so that no page goes stale:

* Every ```python block must compile (top-level ``await`` is allowed, for fragments that
  run inside a coroutine). A block showing a call signature with a bare ``*``, such as
  ``Client(api_key=None, *, base_url=None)``, is read as a signature instead: its names,
  defaults and keyword-only markers must match the real callable's.
* ``<!-- run -->`` on the line before a block runs it. The runnable blocks of a page run
  in order in one namespace, like a session: a later block may use what an earlier one
  made. They run against a fresh emulator served on loopback, which
  ``LINGODOC_API_KEY`` and ``LINGODOC_BASE_URL`` point at, on a fake clock (so polling and
  retries do not really sleep).
* ``<!-- output -->`` before a ```text block right after a runnable block: what that block
  must print, exactly.
* ``<!-- run: fail_next_job -->`` runs a block like ``<!-- run -->``, after
  ``fail_next_job("The file is corrupt.")`` on the emulator behind the page: the next
  document translation started fails (at 50 %). It shows a failure path, which a reader's
  service does not produce on demand, without fault injection in the example itself.
* ``<!-- run: pytest -->`` before a block makes it a test module: the page's such blocks
  are run by pytest in a subprocess, as a user would run them, and must all pass. They
  run with pytest-asyncio in auto mode, with ``examples/`` on their path: a test of an
  example's app imports it (``from web_service import app``).
* ``<!-- run: pytest with anyio -->``: the same, in a run of their own, for async tests
  written for anyio's pytest plugin: without pytest-asyncio (``-p no:asyncio``), whose
  auto mode would take them and run them all on asyncio.

Every Python block runs, but two kinds, which only compile:

* a signature, such as ``Client(api_key=None, *, base_url=None)``: not code to run, it is
  checked against the real callable instead (above);
* a whole example file, included with ``--8<-- "examples/....py"`` (docs/examples.md),
  or a section of one, ``--8<-- "examples/....py:name"`` between the file's
  ``# --8<-- [start:name]`` and ``# --8<-- [end:name]`` lines: tests/docs/test_examples_run.py
  runs the examples as a user does, in a subprocess, and checks what they print.

A block that needs the real service, or is a fragment of a larger program, has no place in
the docs: make it runnable (an import, a variable from an earlier block), or show it as an
example file. ``test_every_python_block_runs_or_is_a_signature_or_an_example`` holds the
pages to this. The ``console`` transcripts are checked by test_console_transcripts.py.

A ```toml block of pytest settings (``[tool.pytest.ini_options]``) must run an unmarked
async test, in a project of its own, without a warning.

A ```yaml block is a docker-compose file: it must parse, the emulator command of its
service runs (on loopback, on any free port) and prints the key the app is given, and
the SDK accepts the app's environment.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import io
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import lingodoc
from lingodoc.emulator import Emulator
from tests.waiting import PATIENCE, wait_until

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)")
# pymdownx.snippets, with base_path the repository root (mkdocs.yml): a file, or a section.
SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<path>[^"]+?)(:(?P<section>[a-z][-_0-9a-z]*))?"\s*$')
SECTION_LINE = re.compile(r"^\s*# --8<-- \[(start|end):[a-z][-_0-9a-z]*\]\s*$")
MARKER = re.compile(
    r"^\s*<!--\s*(?P<what>run|run: pytest|run: pytest with anyio|run: fail_next_job|output)"
    r"\s*-->\s*$"
)
# The markers that make a block a test module, and the run of pytest that runs them.
PYTEST_RUNS: dict[str, tuple[str, list[str]]] = {
    "run: pytest": (
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n",
        [],
    ),
    "run: pytest with anyio": ("[pytest]\nfilterwarnings = error\n", ["-p", "no:asyncio"]),
}
# The markers that run a block in the page's namespace, and what each does first.
SETUPS: dict[str, Callable[[Emulator], object]] = {
    "run": lambda emulator: None,
    "run: fail_next_job": lambda emulator: emulator.fail_next_job("The file is corrupt."),
}
# A bare `*` between parameters, replaced by as many spaces: positions stay the same.
BARE_STAR = re.compile(r"(?<=[(,])(\s*)\*(\s*),")
COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # of the opening fence, from 1
    lang: str
    code: str
    marker: str | None  # "run", one of PYTEST_RUNS, "run: fail_next_job", "output" or None
    include: str | None = None  # the file it shows, if it is a single `--8<--` line
    output: str | None = None  # for a runnable block: what it must print

    @property
    def runs(self) -> bool:
        """Whether it runs in the page's namespace (not as a pytest module)."""
        return self.marker in SETUPS

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    """Return the fenced blocks of ``page``, with their markers and expected outputs."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    previous = ""  # the last non-blank line before the current one
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence) and not lines[j].strip().strip(fence[0])
        ):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        marker = MARKER.match(previous)
        code = "\n".join(include_snippets(body)) + "\n"
        include = SNIPPET.match(body[0]) if len(body) == 1 else None
        blocks.append(
            Block(
                page,
                i + 1,
                opening["lang"],
                code,
                marker and marker["what"],
                include and include["path"],
            )
        )
        previous = lines[j] if j < len(lines) else ""
        i = j + 1
    return attach_outputs(blocks)


def include_snippets(lines: list[str]) -> list[str]:
    """Replace each ``--8<-- "path"`` line with the file (or section) it includes, like mkdocs."""
    expanded: list[str] = []
    for line in lines:
        include = SNIPPET.match(line)
        if include is None:
            expanded.append(line)
            continue
        included = (ROOT / include["path"]).read_text(encoding="utf-8").splitlines()
        if include["section"] is not None:
            start = included.index(f"# --8<-- [start:{include['section']}]")
            included = included[start : included.index(f"# --8<-- [end:{include['section']}]")]
        expanded.extend(text for text in included if not SECTION_LINE.match(text))
    return expanded


def attach_outputs(blocks: list[Block]) -> list[Block]:
    kept: list[Block] = []
    for block in blocks:
        if block.marker == "output":
            owner = kept[-1] if kept else None
            if owner is None or not owner.runs:
                message = f"{block.name}: <!-- output --> must follow a <!-- run --> block"
                raise AssertionError(message)
            assert block.lang == "text", f"{block.name}: an output block is ```text"
            owner.output = block.code
        else:
            kept.append(block)
    return kept


ALL_BLOCKS = [block for page in PAGES for block in read_blocks(page)]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.lang == "python"]


def pages_with(marker: str) -> list[Path]:
    return sorted({block.page for block in PYTHON_BLOCKS if block.marker == marker})


RUNNABLE_PAGES = sorted({block.page for block in PYTHON_BLOCKS if block.runs})


# -- every block compiles ------------------------------------------------------------------


def resolve(dotted: str) -> Any:
    """Find a callable shown in a signature block: ``lingodoc.Client``, ``Emulator``..."""
    import lingodoc.emulator
    import lingodoc.testing

    head, *rest = dotted.split(".")
    roots = {"lingodoc": lingodoc} if head == "lingodoc" else {}
    candidates = [roots.get(head)] + [
        getattr(module, head, None) for module in (lingodoc, lingodoc.emulator, lingodoc.testing)
    ]
    for obj in candidates:
        if obj is None:
            continue
        for part in rest:
            obj = getattr(obj, part)
        return obj
    raise AssertionError(f"a signature block shows {dotted}, which lingodoc does not have")


def check_signature_block(block: Block) -> None:
    """Check a block like ``Client(api_key=None, *, timeout=30.0)`` against the real signature."""
    stars = [(match.start(), match.end()) for match in BARE_STAR.finditer(block.code)]
    code = BARE_STAR.sub(lambda match: " " * len(match.group(0)), block.code)
    tree = ast.parse(code, block.name)  # a SyntaxError here fails the test
    offsets = [0]
    for line in code.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        assert isinstance(call, ast.Call), f"{block.name}: a signature block holds only calls"
        if [type(arg) for arg in call.args] == [ast.Constant] and call.args[0].value is ...:
            continue  # `AsyncClient(...)`: "the same as above"
        assert not call.args, f"{block.name}: show parameters as name=default"
        target = resolve(ast.unparse(call.func))
        parameters = inspect.signature(target).parameters
        call_start = offsets[call.lineno - 1] + call.col_offset
        call_end = offsets[call.end_lineno - 1] + call.end_col_offset  # type: ignore[operator]
        star = next((start for start, end in stars if call_start < start < call_end), None)
        for keyword in call.keywords:
            name = keyword.arg
            assert name in parameters, f"{block.name}: {ast.unparse(call.func)} has no {name!r}"
            real = parameters[name]
            position = offsets[keyword.value.lineno - 1] + keyword.value.col_offset
            keyword_only = star is not None and position > star
            assert (real.kind is inspect.Parameter.KEYWORD_ONLY) == keyword_only, (
                f"{block.name}: {name!r} is shown {'' if keyword_only else 'not '}keyword-only"
            )
            shown = ast.literal_eval(keyword.value)
            assert shown == real.default, (
                f"{block.name}: {name}={shown!r}, but the default is {real.default!r}"
            )


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda block: block.name)
def test_python_blocks_compile(block: Block) -> None:
    try:
        compile(block.code, block.name, "exec", flags=COMPILE_FLAGS)
        return
    except SyntaxError:
        if not BARE_STAR.search(block.code):
            raise
    # Outside the except block: the signature check's own message says what is wrong.
    check_signature_block(block)


# -- runnable blocks run -------------------------------------------------------------------


@pytest.fixture
def served_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """A fresh emulator on loopback, which the environment variables point at."""
    emulator = Emulator()
    with emulator.serve() as server:
        monkeypatch.setenv("LINGODOC_API_KEY", server.api_key)
        monkeypatch.setenv("LINGODOC_BASE_URL", server.base_url)
        yield emulator


Clients = list[lingodoc.Client | lingodoc.AsyncClient]


def keep_clients(namespace: dict[str, Any], clients: Clients) -> None:
    """Remember the clients a block left in the namespace, to close them after the page.

    A later block may bind the same name to another client: a reader's script would let
    the first go at exit, a test run must close it (an open socket is a ResourceWarning).
    """
    for value in namespace.values():
        if isinstance(value, (lingodoc.Client, lingodoc.AsyncClient)) and not any(
            value is kept for kept in clients
        ):
            clients.append(value)


def close_clients(clients: Clients, loop: asyncio.AbstractEventLoop) -> None:
    for client in clients:
        if isinstance(client, lingodoc.Client):
            client.close()
        else:
            loop.run_until_complete(client.aclose())


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """A page may set up logging, as a reader's script does; later tests get theirs back."""
    loggers = [logging.getLogger(), logging.getLogger("lingodoc")]
    saved = [(logger.level, logger.handlers[:]) for logger in loggers]
    yield
    for logger, (level, handlers) in zip(loggers, saved, strict=True):
        logger.setLevel(level)
        logger.handlers[:] = handlers


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda page: page.name)
@pytest.mark.usefixtures("logging_restored")
def test_runnable_blocks_run_and_print_what_the_page_shows(
    page: Path, served_emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a page's files go (a cache, a corpus)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    clients: Clients = []
    loop = asyncio.new_event_loop()  # for blocks with a top-level await
    try:
        for block in PYTHON_BLOCKS:
            if block.page != page or not block.runs:
                continue
            assert block.marker is not None
            SETUPS[block.marker](served_emulator)
            code = compile(block.code, block.name, "exec", flags=COMPILE_FLAGS)
            printed = io.StringIO()
            with redirect_stdout(printed):
                if code.co_flags & inspect.CO_COROUTINE:
                    loop.run_until_complete(eval(code, namespace))
                else:
                    exec(code, namespace)
            keep_clients(namespace, clients)
            if block.output is not None:
                assert printed.getvalue().rstrip() == block.output.rstrip(), (
                    f"{block.name} printed something else than the page shows"
                )
    finally:
        keep_clients(namespace, clients)  # those of a block that raised, too
        close_clients(clients, loop)
        loop.close()


@pytest.mark.parametrize(
    ("page", "marker"),
    [(page, marker) for marker in PYTEST_RUNS for page in pages_with(marker)],
    ids=lambda value: value.name if isinstance(value, Path) else value.removeprefix("run: "),
)
def test_pytest_blocks_pass(page: Path, marker: str, tmp_path: Path) -> None:
    modules = [block for block in PYTHON_BLOCKS if block.page == page and block.marker == marker]
    for block in modules:
        name = f"test_{page.stem}_{block.line}.py".replace("-", "_")
        (tmp_path / name).write_text(block.code, encoding="utf-8")
    ini, options = PYTEST_RUNS[marker]
    ini += f"pythonpath = {ROOT / 'examples'}\n"
    (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")
    summary = run_pytest(tmp_path, options)
    assert re.search(r"^\d+ passed in ", summary), summary  # nothing skipped or failed
    assert int(summary.split()[0]) >= len(modules)


def run_pytest(directory: Path, options: list[str]) -> str:
    """Run pytest on ``directory`` in a subprocess, as a user would; return its summary line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LINGODOC_", "PYTEST_"))}
    # Without hypothesis's plugin, which the pages do not use: its import took half the run.
    quiet = ["-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *quiet, *options, str(directory)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1]


# -- pytest settings ------------------------------------------------------------------------

PYTEST_SETTINGS = [
    block
    for block in ALL_BLOCKS
    if block.lang == "toml" and "[tool.pytest.ini_options]" in block.code
]
ASYNC_TESTS = """\
import pytest


@pytest.fixture
async def target():
    return "de"


async def test_unmarked(target, lingodoc_async_client):
    result = await lingodoc_async_client.translate(
        "Hello", source_language="en", target_language=target
    )
    assert result.translated_text == "Hallo"
"""


@pytest.mark.parametrize("block", PYTEST_SETTINGS, ids=lambda block: block.name)
def test_pytest_settings_run_unmarked_async_tests_without_a_warning(
    block: Block, tmp_path: Path
) -> None:
    # As a reader's project: the settings in its pyproject.toml, every warning an error
    # (pytest-asyncio warns at startup about a setting it wants made explicit).
    (tmp_path / "pyproject.toml").write_text(block.code, encoding="utf-8")
    (tmp_path / "test_settings.py").write_text(ASYNC_TESTS, encoding="utf-8")
    summary = run_pytest(tmp_path, ["-W", "error"])
    assert re.search(r"^1 passed in ", summary), summary


def test_the_pages_show_pytest_settings() -> None:
    assert "testing.md" in {block.page.name for block in PYTEST_SETTINGS}


# -- docker-compose files -------------------------------------------------------------------

YAML_BLOCKS = [block for block in ALL_BLOCKS if block.lang == "yaml"]
EMULATOR_COMMAND = re.compile(r"python -m lingodoc\.emulator(?P<args>[^\"&;|]*)")


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda block: block.name)
def test_compose_files_run_the_emulator_the_app_is_given(block: Block, tmp_path: Path) -> None:
    services = yaml.safe_load(block.code)["services"]
    [(host, emulator)] = [
        (name, service)
        for name, service in services.items()
        if EMULATOR_COMMAND.search(service.get("command", ""))
    ]
    command = EMULATOR_COMMAND.search(emulator["command"])
    assert command is not None
    arguments = shlex.split(command["args"])
    port = arguments[arguments.index("--port") + 1]
    [app] = [service for service in services.values() if "environment" in service]
    environment = app["environment"]
    base_url = f"http://{host}:{port}/v1"
    assert environment["LINGODOC_BASE_URL"] == base_url, "the app reaches another address"
    # The SDK takes the app's settings: the key, and http:// to the host it names.
    lingodoc.Client(
        environment["LINGODOC_API_KEY"],
        base_url=base_url,
        allow_http_host=environment["LINGODOC_ALLOW_HTTP_HOST"],
    ).close()
    # The command, with its options, on loopback and any free port here.
    where = {"--host": "127.0.0.1", "--port": "0"}
    arguments = [
        where.get(before, arg) for before, arg in zip(["", *arguments[:-1]], arguments, strict=True)
    ]
    log = tmp_path / "emulator.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lingodoc.emulator", *arguments],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def key_printed() -> bool:
            assert process.poll() is None, log.read_text(encoding="utf-8")
            return "LINGODOC_API_KEY=" in log.read_text(encoding="utf-8")

        wait_until(key_printed, "the emulator's key printed")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(PATIENCE) == 0
    printed = log.read_text(encoding="utf-8")
    assert f"LINGODOC_API_KEY={environment['LINGODOC_API_KEY']}" in printed


# -- the conventions themselves ------------------------------------------------------------


def test_the_pages_that_teach_the_api_run_their_examples() -> None:
    runnable = {page.name for page in RUNNABLE_PAGES}
    assert {"getting-started.md", "text.md", "documents.md", "emulator.md", "README.md"} <= (
        runnable
    )
    assert {"testing.md", "emulator.md", "README.md"} <= {
        page.name for page in pages_with("run: pytest")
    }
    assert "testing.md" in {page.name for page in pages_with("run: pytest with anyio")}


def is_signature(block: Block) -> bool:
    try:
        compile(block.code, block.name, "exec", flags=COMPILE_FLAGS)
    except SyntaxError:
        return BARE_STAR.search(block.code) is not None
    return False


def test_every_python_block_runs_or_is_a_signature_or_an_example() -> None:
    compile_only = [block for block in PYTHON_BLOCKS if block.marker is None]
    for block in compile_only:
        shows_an_example = block.include is not None and block.include.startswith("examples/")
        assert is_signature(block) or shows_an_example, (
            f"{block.name} only compiles: mark it <!-- run --> (or <!-- run: pytest -->), "
            "see the conventions at the top of this file"
        )
    # The reader tells both kinds apart.
    assert {"configuration.md", "emulator.md"} <= {
        block.page.name for block in compile_only if is_signature(block)
    }
    assert any(block.include for block in compile_only)


def test_markers_are_spelled_right_and_sit_on_python_blocks() -> None:
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith("<!--") and re.search(r"\b(run|output)\b", line):
                assert MARKER.match(line), f"{page.name}:{number}: unknown marker {line!r}"
    for block in ALL_BLOCKS:
        if block.runs or block.marker in PYTEST_RUNS:
            assert block.lang == "python", f"{block.name}: only python blocks run"


def test_the_reader_finds_blocks_in_lists_and_includes_the_examples() -> None:
    page = ROOT / "docs" / "configuration.md"
    blocks = read_blocks(page)
    assert any(block.lang == "python" and "with_options" in block.code for block in blocks)
    included = [block for block in PYTHON_BLOCKS if block.page.name == "examples.md"]
    assert included
    assert all("--8<--" not in block.code and "import" in block.code for block in included)
    assert len(PYTHON_BLOCKS) >= 30
