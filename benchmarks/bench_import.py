"""Target 3: the cold import of lingodoc against that of httpx and pydantic together.

Each sample is a fresh interpreter that times its own import statement (interpreter start-up
is the same for all and left out). The statements take turns, round after round; the result
is the median. Also lists the top entries of ``python -X importtime -c "import lingodoc"``.
Prints JSON.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from _common import emit, interleaved, summary

STATEMENTS = {
    # The target's baseline: what ``import httpx, pydantic`` costs a fresh interpreter.
    "httpx+pydantic": "import httpx, pydantic",
    "lingodoc": "import lingodoc",
    # For reference: pydantic's models machinery, which ``import pydantic`` alone defers.
    "httpx+pydantic.BaseModel": "import httpx; from pydantic import BaseModel",
    # lingodoc with its models built (what the first parsed response costs on top of the import).
    "lingodoc+models": "import lingodoc; lingodoc.TextTranslation",
    "httpx": "import httpx",
}


def timed(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    env = dict(os.environ)
    # Bytecode is written (by the warm-up run) and read: time the imports, not the compiler
    # (a --before checkout on PYTHONPATH has no bytecode of its own).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    return float(out)


def importtime(statement: str, top: int) -> list[dict[str, object]]:
    """The modules with the largest cumulative and self import times, in microseconds."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append(
            {
                "module": name.rstrip(),
                "self_us": int(self_us),
                "cumulative_us": int(cumulative_us),
            }
        )
    rows.sort(key=lambda row: -int(row["cumulative_us"]))  # type: ignore[call-overload]
    return rows[:top]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for statement in STATEMENTS.values():  # warm the file system cache
        timed(statement)
    samples = interleaved(
        {name: (lambda s=statement: timed(s)) for name, statement in STATEMENTS.items()},
        args.rounds,
    )
    emit(
        {
            "cases": {name: summary(values) for name, values in samples.items()},
            "statements": STATEMENTS,
            "importtime": importtime("import lingodoc", args.top),
        }
    )


if __name__ == "__main__":
    main()
