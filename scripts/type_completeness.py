"""Fail if ``pyright --verifytypes lingodoc --ignoreexternal`` scores below a minimum.

Usage: ``python scripts/type_completeness.py [--min 0.98]``, with pyright (the ``lint``
dependency group pins it) and lingodoc installed in the running environment. Prints the
score and every symbol pyright finds fault with; exits 1 below the minimum, 2 if pyright
itself failed. CI (.ci/run) and ``nox -s typecheck`` run it.

The score is the share of the public symbols whose type pyright knows without guessing (an
attribute without an annotation, a ``model_config`` without ``ClassVar``, a return type that
mentions such a class). Symbols without a docstring are listed but do not lower it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def main(argv: list[str] | None = None) -> int:
    """Run pyright's verifytypes on lingodoc and compare its score with ``--min``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=float, default=0.98, help="lowest passing score, 0 to 1")
    parser.add_argument("--package", default="lingodoc")
    args = parser.parse_args(argv)

    command = ["pyright", "--verifytypes", args.package, "--ignoreexternal", "--outputjson"]
    # pyright exits 1 whenever a symbol has a finding, even at a passing score: read the JSON.
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        report = json.loads(run.stdout)
        completeness = report["typeCompleteness"]
        score = float(completeness["completenessScore"])
    except (ValueError, KeyError, TypeError):
        print(f"{' '.join(command)} failed (exit {run.returncode}):", file=sys.stderr)
        print(run.stdout[-2000:], run.stderr[-2000:], sep="\n", file=sys.stderr)
        return 2

    for symbol in completeness.get("symbols", []):
        for diagnostic in symbol.get("diagnostics", []):
            if diagnostic.get("severity") == "error":
                message = diagnostic["message"].replace("\n", " / ")
                print(f"  {symbol['name']}: {message}")
    exported = completeness.get("exportedSymbolCounts", {})
    print(
        f"pyright {report.get('version', '?')}: type completeness of {args.package} "
        f"{score:.1%} (minimum {args.min:.0%}); exported symbols: "
        f"{exported.get('withKnownType', '?')} known, "
        f"{exported.get('withAmbiguousType', '?')} ambiguous, "
        f"{exported.get('withUnknownType', '?')} unknown"
    )
    if score < args.min:
        print(f"type completeness {score:.1%} is below {args.min:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
