"""Developer tasks: `nox -s tests`, `nox -s lint`, `nox -s typecheck` (`nox -l` lists them).

`nox -s docs` builds the documentation with `mkdocs build --strict`; `nox -s package` builds
the sdist and the wheel, checks them and runs the quickstart and `lingodoc demo` from the
installed wheel. CI (.ci/run) runs both.

`nox -s bench` runs the benchmarks and rewrites docs/performance.md; it is not a default
session and CI does not run it.

`nox -s soak` runs ten minutes of mixed traffic with injected faults against the emulator
over real HTTP, from threads and tasks at once, and fails on any unexpected outcome
(scripts/soak.py; `nox -s soak -- --duration 30` for a short run). It is not a default
session either, and CI does not run it.

`nox -s cluster` runs the cluster recipes' tests (tests/cluster): a column of a Dask dataframe
translated on a LocalCluster of worker processes, and one of a Spark dataframe in Spark's local
mode, against the emulator served over HTTP, with a RedisCache on a redis-server the tests start
(which must be installed, as must Java 17 or newer for Spark). The suite leaves them out by
default; CI (.ci/run) runs this session.

`nox -s tests` runs the suite on every Python that pyproject.toml declares (its
`Programming Language :: Python :: 3.X` classifiers) and skips, saying so, each one this machine
does not have. `nox -s lowest` runs it with the lowest versions the package declares of
httpx, httpcore, h11, pydantic and tenacity (and the examples' fastapi and uvicorn), on the oldest
declared Python found. CI (.ci/run) runs both; see docs/contributing.md for what is tested where.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nox
from packaging.requirements import Requirement  # nox depends on packaging
from packaging.utils import canonicalize_name

# nox.project.dependency_groups() is new in nox 2025.02.09.
nox.needs_version = ">=2025.2.9"
nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.error_on_missing_interpreters = False
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).resolve().parent
# The development tools are PEP 735 dependency groups of pyproject.toml (test, lint, docs),
# not extras: the sessions read them here, so any pip in the session's venv installs them.
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
# The Pythons the package declares, read from its classifiers so the two cannot drift.
PYTHONS = [
    match.group(1)
    for classifier in PYPROJECT["project"]["classifiers"]
    if (match := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", classifier))
]
# The dependencies whose declared floors (`name>=X`) `nox -s lowest` installs exactly.
FLOORED = ("httpx", "httpcore", "h11", "pydantic", "tenacity")
# anyio's floor is proved apart: the suite runs under anyio's pytest plugin, which needs a
# newer anyio (the test group's), so `lowest` then installs the floor and runs the tests
# that drive trio and asyncio themselves (tests/test_trio.py, an async example).
FLOORED_APART = ("anyio",)
# The examples' own dependencies (the `examples` group, which the `test` group includes): their
# floors are installed too, or pip would pick the newest FastAPI that lets pydantic 2.6 in, not
# one that was tested with it.
FLOORED_EXAMPLES = ("fastapi", "uvicorn")


def group(*names: str) -> tuple[str, ...]:
    """The requirements of pyproject.toml's dependency groups of these names."""
    return nox.project.dependency_groups(PYPROJECT, *names)


def floors(names: tuple[str, ...] = FLOORED, requirements: tuple[str, ...] = ()) -> list[str]:
    """``name==X`` for each of ``names``, from its ``>=X`` in pyproject.toml.

    The ``>=X`` is read from ``requirements``, by default the package's dependencies.
    """
    pins = {}
    for line in requirements or PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        for specifier in requirement.specifier:
            if name in names and specifier.operator == ">=":
                pins[name] = f"{name}=={specifier.version}"
    missing = sorted(set(names) - set(pins))
    if missing:
        raise ValueError(f"pyproject.toml declares no >= floor for {missing}")
    return [pins[name] for name in names]


def oldest_python() -> str | None:
    """The oldest declared Python that runs here (None, nox's own, if there is none).

    Run, not just found on PATH: a pyenv shim is there for every version pyenv has, and
    fails for those PYENV_VERSION does not name.
    """
    for version in PYTHONS:
        path = shutil.which(f"python{version}")
        if path and subprocess.run([path, "-c", ""], capture_output=True).returncode == 0:
            return version
    return None


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the test suite (arguments after -- go to pytest).

    One session per declared Python; one whose interpreter is not installed is skipped
    with "python interpreter 3.X not found", not failed (error_on_missing_interpreters).
    """
    session.install("-e", ".", *group("test"))
    session.run("pytest", *session.posargs)


@nox.session(python=oldest_python())
def lowest(session: nox.Session) -> None:
    """Run the suite with the lowest declared httpx, httpcore, h11, pydantic, tenacity, anyio.

    The pins are the ``>=`` floors of pyproject.toml's dependencies (and of the examples'
    fastapi and uvicorn, in its ``examples`` group), so the floors cannot drift from what
    is tested. Their own dependencies (pydantic-core, starlette) are those the floors
    require. It runs on the oldest declared Python found, since old releases
    publish no wheels for the newest Pythons. Arguments after -- go to pytest.
    """
    pins = [*floors(), *floors(FLOORED_EXAMPLES, group("examples"))]
    session.install("-e", ".", *group("test"), *pins)
    names = [*FLOORED, "pydantic-core", *FLOORED_EXAMPLES, "starlette"]
    show = f"import importlib.metadata as m; print(*[n + '==' + m.version(n) for n in {names!r}])"
    session.run("python", "-c", show)
    session.run("python", "-m", "pip", "check")
    session.run("pytest", *session.posargs)
    # anyio's floor, without its pytest plugin (which needs a newer anyio; see FLOORED_APART).
    session.install(*floors(FLOORED_APART))
    session.run("python", "-c", show.replace(repr(names), repr(list(FLOORED_APART))))
    plugin_off = ["-p", "no:anyio", "-W", "ignore:Unknown config option:pytest.PytestConfigWarning"]
    session.run("pytest", *plugin_off, "tests/test_trio.py")
    session.run("python", "examples/async_batch.py")


@nox.session
def cluster(session: nox.Session) -> None:
    """The cluster recipes' tests: Dask worker processes, Spark's local mode, a redis-server.

    Installs the package with the ``test`` and ``cluster`` groups (Dask, pyspark and pandas:
    test dependencies only) and runs the tests marked ``cluster``, one after the other (-n 0:
    the cluster's processes load the machine). redis-server and Java 17 or newer must be on
    PATH (.ci/run installs Debian's); under ``CI=true`` the tests fail without them. Arguments
    after -- go to pytest.
    """
    session.install("-e", ".", *group("test", "cluster"))
    session.run("pytest", "-m", "cluster", "-n", "0", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint rules and formatting; and that the generated sync client is current."""
    session.install(".", *group("lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("python", "scripts/unasync.py", "--check")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package; the typing tests; the type completeness score.

    tests/typing is checked by mypy --strict and by pyright (strict, [tool.pyright] of
    pyproject.toml), and `pyright --verifytypes` must score the public API at least 98%.
    """
    # The test group too: the pytest plugin (lingodoc.emulator.pytest_plugin) imports pytest.
    session.install("-e", ".", *group("lint", "test"))
    session.run("mypy", "--strict")
    session.run("mypy", "--strict", "tests/typing")
    session.run("pyright")
    session.run("pyright", "-p", "scripts/pyright-private-names.json")
    session.run("python", "scripts/type_completeness.py", "--min", "0.98")


@nox.session(python="3.11")  # the figures of docs/performance.md are 3.11's, run to run
def bench(session: nox.Session) -> None:
    """Benchmarks against raw httpx, raw aiohttp and other SDKs; writes docs/performance.md.

    Arguments after -- go to benchmarks/run.py, such as `--quick` for a smoke run, or a
    single benchmark's name (`sendpath`, `peers`, `first_result`, `gather`, `many`, `cache`,
    `cache_size`, `memory`, `waits`) to print its sections of the page, with `--write` to put
    them in it. aiohttp and redis-py come with the package's `aiohttp` and `redis` extras
    (the cache benchmark starts a `redis-server` if there is one); the peers are their newest
    releases.
    """
    session.install(".[aiohttp,redis]", "openai", "anthropic", "deepl")
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def soak(session: nox.Session) -> None:
    """Soak run: 10 minutes of mixed traffic with injected faults; fails on anything unexpected.

    Arguments after -- go to scripts/soak.py, such as `--duration 30` for a short run or
    `--report soak.md` to keep the Markdown summary.
    """
    session.install(".")
    session.run("python", "scripts/soak.py", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with `mkdocs build --strict` (into site/).

    Arguments after -- go to `mkdocs build`, such as `--site-dir /tmp/site`.
    """
    session.install(".", *group("docs"))
    session.run("mkdocs", "build", "--strict", *session.posargs, env={"NO_MKDOCS_2_WARNING": "1"})


# What the sdist must hold: the sources, the tests and everything they read, the docs and
# the examples. The wheel holds the package and its metadata, nothing else.
SDIST_MUST_HOLD = [
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "LICENSE",
    "mkdocs.yml",
    "noxfile.py",
    "src/lingodoc/__init__.py",
    "src/lingodoc/py.typed",
    "tests/conftest.py",
    "tests/docs/test_doc_snippets.py",
    "docs/index.md",
    "docs/reference.md",
    "examples/quickstart.py",
    "examples/tiny_app/tests/test_app.py",
]


def check_archives(session: nox.Session, sdist: Path, wheel: Path) -> None:
    """Fail unless the sdist and the wheel hold what they should, and nothing stray."""
    with tarfile.open(sdist) as archive:
        sdist_names = {name.partition("/")[2] for name in archive.getnames()}
    missing = [name for name in SDIST_MUST_HOLD if name not in sdist_names]
    if missing:
        session.error(f"{sdist.name} lacks {missing}")
    with zipfile.ZipFile(wheel) as archive:
        wheel_names = archive.namelist()
    name, version = wheel.name.split("-")[:2]
    dist_info = f"{name}-{version}.dist-info/"
    stray = [n for n in wheel_names if not n.startswith(("lingodoc/", dist_info))]
    needed = ["lingodoc/py.typed", f"{dist_info}entry_points.txt", f"{dist_info}licenses/LICENSE"]
    missing = [n for n in needed if n not in wheel_names]
    if stray or missing:
        session.error(f"{wheel.name}: stray {stray}, missing {missing}")
    cached = [n for n in [*sdist_names, *wheel_names] if "__pycache__" in n or n.endswith(".pyc")]
    if cached:
        session.error(f"compiled files in the archives: {cached}")
    session.log(f"{sdist.name}: {len(sdist_names)} entries; {wheel.name}: {len(wheel_names)}")


@nox.session
def package(session: nox.Session) -> None:
    """Build the sdist and the wheel, check them, and run the quickstart and the demo.

    The wheel is installed into a fresh virtual environment, and the quickstart runs from
    outside the source tree, with no LINGODOC_* variables: it imports the installed package,
    not src/, and starts the emulator that the wheel ships. `lingodoc demo` then runs what a
    user who installed from PyPI runs, with no examples/ at hand.
    """
    session.install("build", "twine")
    tmp = Path(session.create_tmp()).resolve()
    dist = tmp / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(dist), ".")
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        session.error(f"expected one sdist and one wheel in {dist}")
    session.run("twine", "check", "--strict", str(sdists[0]), str(wheels[0]))
    check_archives(session, sdists[0], wheels[0])

    venv = tmp / "wheel-venv"
    shutil.rmtree(venv, ignore_errors=True)
    session.run("python", "-m", "venv", str(venv))
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    python = str(bin_dir / "python")
    session.run(python, "-m", "pip", "install", "--quiet", str(wheels[0]), external=True)
    session.chdir(tmp)
    no_service = {"LINGODOC_API_KEY": "", "LINGODOC_BASE_URL": ""}
    session.run(
        python,
        "-c",
        "import sys, lingodoc; assert lingodoc.__file__.startswith(sys.prefix), lingodoc.__file__",
        external=True,
    )
    session.run(python, str(ROOT / "examples" / "quickstart.py"), env=no_service, external=True)
    session.run(str(bin_dir / "lingodoc"), "--version", external=True)
    session.run(str(bin_dir / "lingodoc"), "demo", env=no_service, external=True)
