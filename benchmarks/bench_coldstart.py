"""Cold start (issue 16): time to the first result, import + first model, and building clients.

Time to the first result: each sample is a fresh interpreter that times itself from before
its first import to the first result, against ``fast_server_process()`` (started once, here):

- ``httpx``: ``import httpx``, ``httpx.Client()``, one POST to the server, ``.json()``;
- ``httpx+pydantic``: the same with a typed result, the least a hand-written typed client
  does: ``pydantic.BaseModel`` imported, a three-field model defined and the answer validated
  into it (the floor for the SDK, whose results are pydantic models);
- ``lingodoc``: ``import lingodoc``, ``lingodoc.Client(base_url=server)``, ``translate``.

These three run as where trio is not installed (``pip install lingodoc`` does not install
it): each child sets ``sys.modules["trio"] = None`` before its clock starts. httpcore imports
trio whenever it can, at the first ``httpx.Client()`` (about 60 ms here), so in an
environment that has it (the test dependencies install it) every process pays it and the
ratios shrink toward 1. Two context cases show what that hides:

- ``httpx, trio installed`` and ``lingodoc, trio installed``: the same code with trio
  importable, as it is in this benchmark's own environment;
- ``httpx, no certificates``: raw httpx with ``verify=False``, which loads no certificate
  authorities. The fast server speaks ``http://``: raw httpx loads certifi's authorities
  in ``httpx.Client()`` all the same, the SDK only at its first TLS handshake, so against
  this server the SDK skips a cost that raw httpx pays (over ``https://`` both pay it).
  This case takes that cost out of the baseline: the strictest comparison.

Each reports its own split (import, client, first call). "Import + first model":
fresh interpreters timing ``import lingodoc`` plus one ``TextTranslation`` validated, against
``import httpx, pydantic`` plus a one-field model defined and validated (the least a
hand-written typed client does). Interpreter start-up, the same for all, is left out.

Building clients: in one process, 1,000 ``lingodoc.Client(base_url="https://...")`` (the
default settings) against 1,000 ``httpx.Client()``, in interleaved rounds: the time per
client, the Python memory each keeps (tracemalloc) and the process memory each adds (RSS,
which sees OpenSSL's allocations: tracemalloc does not). The certificate variables of the
environment are left as they are; the SDK reads them as httpx does.

Every case runs in interleaved rounds (``_common.interleaved``); ratios are lingodoc / baseline,
round by round: min / median / max. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from _common import KEY, TEXT, emit, fast_server_process, interleaved, summary

FIRST_RESULT = {
    "httpx": """
import time
started = time.perf_counter()
import httpx
imported = time.perf_counter()
client = httpx.Client()
built = time.perf_counter()
response = client.post(
    BASE_URL + "/translate",
    json={"text": TEXT, "source_language": "en", "target_language": "de"},
    headers={"Authorization": "Bearer " + KEY},
)
text = response.json()["data"]["translated_text"]
done = time.perf_counter()
""",
    "httpx+pydantic": """
import time
started = time.perf_counter()
import httpx
from pydantic import BaseModel
class Translation(BaseModel):
    translated_text: str
    source_language: str
    target_language: str
imported = time.perf_counter()
client = httpx.Client()
built = time.perf_counter()
response = client.post(
    BASE_URL + "/translate",
    json={"text": TEXT, "source_language": "en", "target_language": "de"},
    headers={"Authorization": "Bearer " + KEY},
)
text = Translation.model_validate(response.json()["data"]).translated_text
done = time.perf_counter()
""",
    "lingodoc": """
import time
started = time.perf_counter()
import lingodoc
imported = time.perf_counter()
client = lingodoc.Client(KEY, base_url=BASE_URL)
built = time.perf_counter()
text = client.translate(TEXT, source_language="en", target_language="de").translated_text
done = time.perf_counter()
""",
}
# As where trio is not installed: httpcore's ``import trio`` then fails at once.
WITHOUT_TRIO = "import sys\nsys.modules['trio'] = None\n"
# The cases timed: the goal's three without trio, then the context cases (see above).
FIRST_RESULT_CASES = {
    **{name: WITHOUT_TRIO + code for name, code in FIRST_RESULT.items()},
    "httpx, no certificates": WITHOUT_TRIO
    + FIRST_RESULT["httpx"].replace("httpx.Client()", "httpx.Client(verify=False)"),
    "httpx, trio installed": FIRST_RESULT["httpx"],
    "lingodoc, trio installed": FIRST_RESULT["lingodoc"],
}
REPORT = """
import json
print(json.dumps({"total": done - started, "import": imported - started,
                  "client": built - imported, "first call": done - built, "text": text}))
"""

FIRST_MODEL = {
    "httpx+pydantic": """
import time
started = time.perf_counter()
import httpx
from pydantic import BaseModel
class Translation(BaseModel):
    translated_text: str
Translation.model_validate({"translated_text": "Hallo Welt"})
done = time.perf_counter()
""",
    "lingodoc": """
import time
started = time.perf_counter()
import lingodoc
lingodoc.TextTranslation.model_validate(
    {"translated_text": "Hallo Welt", "source_language": "en", "target_language": "de"})
done = time.perf_counter()
""",
}


def _env() -> dict[str, str]:
    env = {**os.environ}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time the imports, not the compiler
    return env


def fresh(code: str, server: dict[str, str]) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; return the JSON it prints."""
    prelude = f"BASE_URL = {server['base_url']!r}; KEY = {KEY!r}; TEXT = {TEXT!r}\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
        timeout=120,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def first_results(server: dict[str, str], rounds: int) -> dict[str, Any]:
    splits: dict[str, list[dict[str, Any]]] = {name: [] for name in FIRST_RESULT_CASES}

    def case(name: str) -> Any:
        def run() -> float:
            result = fresh(FIRST_RESULT_CASES[name] + REPORT, server)
            assert result["text"] == "Hallo Welt", result
            splits[name].append(result)
            return float(result["total"])

        return run

    samples = interleaved({name: case(name) for name in FIRST_RESULT_CASES}, rounds)
    parts = ("import", "client", "first call")
    return {
        "cases": {name: summary(values) for name, values in samples.items()},
        "ratio": ratios(samples["lingodoc"], samples["httpx"]),
        "ratio_typed": ratios(samples["lingodoc"], samples["httpx+pydantic"]),
        "floor": ratios(samples["httpx+pydantic"], samples["httpx"]),
        "ratio_no_certificates": ratios(samples["lingodoc"], samples["httpx, no certificates"]),
        "ratio_trio_installed": ratios(
            samples["lingodoc, trio installed"], samples["httpx, trio installed"]
        ),
        "split_median_s": {
            name: {part: statistics.median(run[part] for run in runs) for part in parts}
            for name, runs in splits.items()
        },
    }


def first_models(server: dict[str, str], rounds: int) -> dict[str, Any]:
    report = '\nprint(__import__("json").dumps({"total": done - started}))\n'
    samples = interleaved(
        {
            name: (lambda code=code: float(fresh(code + report, server)["total"]))
            for name, code in FIRST_MODEL.items()
        },
        rounds,
    )
    return {
        "cases": {name: summary(values) for name, values in samples.items()},
        "ratio": ratios(samples["lingodoc"], samples["httpx+pydantic"]),
    }


MEMORY = """
import gc, json, os, sys, tracemalloc
import httpx
import lingodoc
make = {"httpx": httpx.Client,
        "lingodoc": lambda: lingodoc.Client(KEY, base_url="https://api.lingodoc.test/v1")}[NAME]
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
make().close()  # what every client shares (imports, a shared context) is not per client
gc.collect()
before = rss()
tracemalloc.start()
clients = [make() for _ in range(COUNT)]
traced = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
print(json.dumps({"tracemalloc": traced / COUNT / 1024, "rss": (rss() - before) / COUNT / 1024}))
"""


def construction(count: int, rounds: int) -> dict[str, Any]:
    """Building ``count`` clients: time here, memory in a fresh interpreter per sample.

    RSS only grows, and memory freed by a previous round is reused: so each memory
    sample is a process of its own.
    """
    import httpx

    import lingodoc

    makers = {
        "httpx": httpx.Client,
        "lingodoc": lambda: lingodoc.Client(KEY, base_url="https://api.lingodoc.test/v1"),
    }
    for make in makers.values():
        make().close()  # the imports, and a shared context, are not per client
    memory: dict[str, dict[str, list[float]]] = {
        name: {"tracemalloc": [], "rss": []} for name in makers
    }

    def case(name: str) -> Any:
        def run() -> float:
            started = time.perf_counter()
            clients = [makers[name]() for _ in range(count)]
            elapsed = (time.perf_counter() - started) / count
            for client in clients:
                client.close()
            del clients
            prelude = f"NAME = {name!r}; COUNT = {count}; KEY = {KEY!r}\n"
            out = subprocess.run(
                [sys.executable, "-c", prelude + MEMORY],
                capture_output=True,
                text=True,
                check=True,
                env=_env(),
                timeout=600,
            ).stdout
            measured = json.loads(out)
            for kind in ("tracemalloc", "rss"):
                memory[name][kind].append(measured[kind])
            return elapsed

        return run

    samples = interleaved({name: case(name) for name in makers}, rounds)
    return {
        "clients": count,
        "cases": {name: summary(values) for name, values in samples.items()},
        "ratio": ratios(samples["lingodoc"], samples["httpx"]),
        "memory_kib_per_client": {
            name: {kind: summary(values) for kind, values in kinds.items()}
            for name, kinds in memory.items()
        },
    }


def ratios(numerator: list[float], denominator: list[float]) -> dict[str, float]:
    """lingodoc / baseline, round by round (interleaved rounds ran side by side)."""
    each = [a / b for a, b in zip(numerator, denominator, strict=True)]
    return {"min": min(each), "median": statistics.median(each), "max": max(each)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--construct-rounds", type=int, default=3)
    args = parser.parse_args()
    with fast_server_process() as server:
        for code in FIRST_RESULT_CASES.values():  # warm the file system cache
            fresh(code + REPORT, server)
        first = first_results(server, args.rounds)
        models = first_models(server, args.rounds)
    built = construction(args.clients, args.construct_rounds)
    emit({"first_result": first, "import_first_model": models, "construction": built})


if __name__ == "__main__":
    main()
