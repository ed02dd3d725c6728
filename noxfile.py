"""Developer tasks: `nox -s tests`, `nox -s lint`, `nox -s typecheck` (`nox -l` lists them).

`nox -s bench` runs the benchmarks and rewrites docs/performance.md; it is not a default
session and CI does not run it.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.error_on_missing_interpreters = False
nox.options.reuse_existing_virtualenvs = True

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# The last commit before the speed work of issue 5: `nox -s bench` measures it as well, for
# the before/after table of docs/performance.md.
BENCH_BEFORE = "21c3620"
# Only the bench session installs these: the peers measured against, and the profiler.
BENCH_DEPS = ["openai", "deepl", "pyinstrument"]


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the test suite (arguments after -- go to pytest)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint rules and formatting."""
    session.install(".[lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    session.install("-e", ".[lint]")
    session.run("mypy", "--strict")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against raw httpx and peer SDKs; writes docs/performance.md.

    Arguments after -- go to benchmarks/run.py, such as `--quick` for a smoke run or a
    single benchmark's name (`inprocess`, `loopback`, `import`, `bulk`, `memory`, `peers`,
    `profile`) to print its JSON.
    """
    session.install(".", *BENCH_DEPS)
    session.run("python", "benchmarks/run.py", "--before", BENCH_BEFORE, *session.posargs)
