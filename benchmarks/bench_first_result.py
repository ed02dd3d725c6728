"""Time to the first result: a fresh process imports, builds a client and makes one call.

Each sample is a fresh interpreter timing itself from before its first import to its first
result, against ``_fast_server.py`` on loopback (started once, here; it answers at once):

- ``lingodoc``: ``import lingodoc``, ``lingodoc.Client(...)``, ``translate()``;
- ``httpx + pydantic``, the typed floor: the least a hand-written typed client does,
  ``import httpx``, a three-field ``pydantic.BaseModel`` defined, ``httpx.Client()``, one
  POST, the answer validated into the model;
- ``httpx``, for reference: the same without pydantic (``.json()``).

Each child runs as where trio is not installed (``pip install lingodoc`` does not install it,
the benchmark environment does): httpcore imports trio at the first client whenever it can.
Interpreter start-up, the same for all, is left out. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from functools import partial
from operator import truediv

from _common import KEY, TEXT, TRANSLATION, emit, fast_server_process, interleaved, paired, summary

START = """
import sys, time
sys.modules["trio"] = None
started = time.perf_counter()
"""
RAW = """
import httpx
MODEL
client = httpx.Client()
answer = client.post(
    BASE_URL + "/translate",
    json={"text": TEXT, "source_language": "en", "target_language": "de"},
    headers={"Authorization": "Bearer " + KEY},
).json()["data"]
"""
MODEL = """
from pydantic import BaseModel
class Translation(BaseModel):
    translated_text: str
    source_language: str
    target_language: str
"""
CASES = {
    "lingodoc": """
import lingodoc
client = lingodoc.Client(KEY, base_url=BASE_URL)
text = client.translate(TEXT, source_language="en", target_language="de").translated_text
""",
    "httpx + pydantic": RAW.replace("MODEL", MODEL)
    + "text = Translation.model_validate(answer).translated_text\n",
    "httpx": RAW.replace("MODEL", "") + "text = answer['translated_text']\n",
}
REPORT = """
elapsed = time.perf_counter() - started
import json
print(json.dumps([elapsed, text]))
"""


def fresh(code: str, server: dict[str, str]) -> float:
    """Run ``code`` in a fresh interpreter; return the seconds it took to its first result."""
    prelude = f"BASE_URL = {server['base_url']!r}; KEY = {KEY!r}; TEXT = {TEXT!r}\n"
    env = {**os.environ}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time the imports, not the compiler
    out = subprocess.run(
        [sys.executable, "-c", prelude + START + code + REPORT],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    ).stdout
    seconds, text = json.loads(out.strip().splitlines()[-1])
    assert text == TRANSLATION, text
    return float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with fast_server_process() as server:
        runs = {name: partial(fresh, code, server) for name, code in CASES.items()}
        for run in runs.values():  # warm the file system cache and the byte-code
            run()
        samples = interleaved(runs, args.rounds)
    emit(
        {
            "ms": {name: summary([s * 1000 for s in values]) for name, values in samples.items()},
            "ratio_typed": paired(samples["httpx + pydantic"], samples["lingodoc"], truediv),
            "ratio_httpx": paired(samples["httpx"], samples["lingodoc"], truediv),
        }
    )


if __name__ == "__main__":
    main()
