"""Run lingodoc's benchmarks and write docs/performance.md (``nox -s bench`` runs this).

Usage::

    python benchmarks/run.py [all] [--quick] [--before REV] [--output PATH] [--json PATH]
    python benchmarks/run.py inprocess|read|loopback|import|coldstart|gather
    python benchmarks/run.py bulk|memory|corpus|peers|profile

``all`` (the default) runs every benchmark, each in a fresh interpreter, and writes the
report; a single name runs that benchmark and prints its JSON. ``--before REV`` also measures
the per-call and import benchmarks on the package as it was at git revision REV (its ``src/``
put first on ``PYTHONPATH``), for the before/after table. ``--quick`` is a smoke run with few
rounds and 10,000 texts (20,000 for ``corpus``): its figures are not worth publishing.

Every benchmark compares lingodoc with its baseline in the same process and the same run, in
interleaved rounds, and reports medians. Servers listen on 127.0.0.1 only, every loop is
bounded, and every child process has a time limit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHILD_TIMEOUT = 600  # seconds; no benchmark comes near it
# Those that may take longer: corpus makes 12 timed runs and 4 traced ones of 1,000,000 texts;
# gather 35 gathers of 10,000 calls (~15 s each here) before its distant part.
CHILD_TIMEOUTS = {"corpus": 1800, "gather": 1500}

# name: (script, arguments, arguments with --quick)
BENCHMARKS: dict[str, tuple[str, list[str], list[str]]] = {
    "inprocess": ("bench_inprocess.py", [], ["--rounds", "3", "--calls", "300"]),
    "read": ("bench_read.py", [], ["--rounds", "3", "--calls", "500"]),
    "loopback": (
        "bench_loopback.py",
        [],
        ["--rounds", "3", "--seq-rounds", "3", "--calls", "50", "--per-worker", "2"],
    ),
    "import": ("bench_import.py", [], ["--rounds", "5"]),
    "coldstart": (
        "bench_coldstart.py",
        [],
        ["--rounds", "3", "--clients", "50", "--construct-rounds", "1"],
    ),
    "bulk": (
        "bench_bulk.py",
        ["throughput", "--rounds", "9"],
        ["throughput", "--texts", "10000", "--rounds", "1"],
    ),
    "memory": ("bench_bulk.py", ["memory"], ["memory", "--texts", "10000"]),
    "corpus": (
        "bench_corpus.py",
        ["all"],
        ["all", "--texts", "20000", "--lines", "20000", "--rounds", "1"],
    ),
    "peers": ("bench_peers.py", [], ["--rounds", "3", "--calls", "200"]),
    "profile": ("bench_profile.py", [], ["--calls", "2000"]),
    "gather": (
        "bench_gather.py",
        [],
        ["--calls", "1000", "--rounds", "1", "--distant-calls", "300", "--distant-rounds", "1"],
    ),
}
BEFORE_BENCHMARKS = ("inprocess", "read", "loopback", "import")


def run(name: str, *, quick: bool, pythonpath: str | None = None) -> dict[str, Any]:
    """Run one benchmark in a fresh interpreter and return its JSON result."""
    script, arguments, quick_arguments = BENCHMARKS[name]
    env = dict(os.environ)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    print(f"  {name}{' (before)' if pythonpath else ''} ...", file=sys.stderr, flush=True)
    result = subprocess.run(
        [sys.executable, str(HERE / script), *(quick_arguments if quick else arguments)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=CHILD_TIMEOUTS.get(name, CHILD_TIMEOUT),
    )
    if result.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{result.stderr}")
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def checkout_src(revision: str, into: Path) -> Path | None:
    """Extract ``src/`` at ``revision`` into ``into``; ``None`` if git cannot."""
    try:
        archive = subprocess.run(
            ["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return into / "src"


# The report ------------------------------------------------------------------------------


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def verdict(ok: bool) -> str:
    return "**pass**" if ok else "**FAIL**"


def paired(pair: dict[str, Any], numerator: str, denominator: str) -> float:
    """The median over rounds of ``numerator / denominator`` measured in the same round.

    Rounds are interleaved, so the two cases of a round ran within seconds of each other;
    their ratio is steadier than the ratio of the two medians when something else loads
    the machine for a while.
    """
    pairs = zip(pair[numerator]["samples"], pair[denominator]["samples"], strict=True)
    return statistics.median(a / b for a, b in pairs)


SEQUENTIAL_FAST = ("loopback", "servers", "fast", "sequential")
CONCURRENT_FAST = ("loopback", "servers", "fast", "concurrent")
SEQUENTIAL_EMULATOR = ("loopback", "servers", "emulator", "sequential")


def dig(results: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The part of the results at ``path``."""
    for key in path:
        results = results[key]
    return results


def spread(pair: dict[str, Any], numerator: str, denominator: str) -> str:
    """``median (min-max)`` of the round-by-round ratios, for a table cell."""
    pairs = zip(pair[numerator]["samples"], pair[denominator]["samples"], strict=True)
    ratios = [a / b for a, b in pairs]
    return f"{statistics.median(ratios):.2f} x ({min(ratios):.2f}-{max(ratios):.2f})"


def throughput_row(
    number: str, what: str, pair: dict[str, Any], sdk: str, base: str, goal: float, unit: Any
) -> tuple[str, float]:
    """A target row where lingodoc's throughput must reach ``goal`` x the baseline's.

    The ratio cell is the median of the rounds' ratios, with their range.
    """
    ratio = paired(pair, base, sdk)
    row = (
        f"| {number} | {what} | {unit(pair[sdk]['median'])} | {unit(pair[base]['median'])} "
        f"| {spread(pair, base, sdk)} | >= {goal} x | {verdict(ratio >= goal)} |"
    )
    return row, ratio


def mib(size: float) -> str:
    return f"{size / 2**20:,.1f} MiB"


def listed(values: list[int]) -> str:
    """One figure, or every figure the rounds gave when they differ."""
    return " / ".join(f"{value:,}" for value in values) if values else "-"


def corpus_section(corpus: dict[str, Any]) -> list[str]:
    """The section of ``bench_corpus.py`` (issue 14): dedup, the rate limit, resume."""
    lines: list[str] = []
    add = lines.append
    volume, fault = corpus["volume"], corpus["fault"]
    cases = volume["cases"]
    add("## A corpus with duplicates, and resuming (issue 14)")
    add("")
    add(
        f"`benchmarks/bench_corpus.py`: {volume['texts']:,} short catalogue lines (made by a "
        f"seeded generator), {volume['duplicates']:,} of them repeats of earlier ones, so "
        f"{volume['unique']:,} unique, translated against the emulator on the `{volume['plan']}` "
        f"plan with {volume['seats']} seat ({volume['rate_limit']:,} requests an hour), served "
        "on 127.0.0.1 by a process of its own that counts the batch requests and the texts "
        f"that reach it. Batches of {volume['batch_size']}, {volume['concurrency']} at once."
    )
    add("")
    add(
        f"The floors. Requests: ceil(unique / batch size) = **{volume['min_requests']:,}** "
        f"(without removing duplicates it would be {volume['without_dedup_requests']:,}); "
        f"texts sent: the {volume['unique']:,} unique ones, each once. Memory: the inputs "
        "and the outputs themselves (`sys.getsizeof` of the two lists and of their strings, "
        "each string object counted once: the translations of repeated texts may be one "
        "object), which the caller holds whatever the SDK does; the peak is tracemalloc's "
        "during one call, in a process of its own per case, counted from before the inputs "
        "were made. The baseline is a hand-written httpx loop doing what a careful user "
        "would: duplicates removed with a dict, batches of 100 from 4 threads (or 4 tasks), "
        "one `httpx.Client` made with the base URL and the key. Time ratio: baseline time "
        "/ lingodoc time, round by round (above 1: lingodoc is faster); "
        f"interleaved rounds: {cases['sync lingodoc']['rounds']}, with a fresh rate-limit "
        "window for every run."
    )
    add("")
    add(
        "| case | requests (floor) | 429s | texts sent (floor) | sent twice | wall time "
        "| time ratio | peak memory | inputs + outputs | peak / floor | result |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    labels = {
        "sync lingodoc": "`Client.translate_many()`",
        "sync raw": "hand-written httpx, 4 threads",
        "async lingodoc": "`AsyncClient.translate_many()`",
        "async raw": "hand-written httpx, 4 tasks",
    }
    for name, label in labels.items():
        case = cases[name]
        kind = name.split()[0]
        ratio = f"{paired(cases, f'{kind} raw', name):.2f} x" if name.endswith("lingodoc") else "1"
        memory = case["memory"]
        if "error" in memory:
            peak = size = share = "failed"
        else:
            floor = memory["inputs_bytes"] + memory["outputs_bytes"]
            peak, size, share = mib(memory["peak_bytes"]), mib(floor), f"{memory['ratio']:.2f} x"
        ok = case["at_minimum"] and case["correct"] and case["rate_limited"] == [0]
        ok = ok and case["texts_repeated"] == [0] and not case["errors"]
        add(
            f"| {label} | {listed(case['requests'])} ({volume['min_requests']:,}) "
            f"| {listed(case['rate_limited'])} | {listed(case['texts_sent'])} "
            f"({volume['unique']:,}) | {listed(case['texts_repeated'])} "
            f"| {case['median']:.2f} s | {ratio} | {peak} "
            f"| {size} | {share} | {verdict(ok)} |"
        )
    add("")
    add(
        "Where the rounds of a case gave different counts, each is shown (a / b). "
        "Result: **pass** when every round sent exactly the floor of requests and of texts, "
        "met no 429 and returned the emulator's translation of every text, in order. The "
        "memory and time columns have no goal here; the baseline rows give their scale."
    )
    add("")
    scenarios = fault["scenarios"]
    reference = scenarios["reference"]
    add(
        f"Resuming: `lingodoc batch corpus.txt --to de -o out.txt --checkpoint ck` (a child "
        f"process) on {fault['lines']:,} such lines ({fault['unique']:,} unique: a floor of "
        f"{fault['min_requests']:,} requests), against an emulator served by the benchmark "
        "that records every text each request carries. An uninterrupted run gives the "
        "reference output. Then a run is stopped once the emulator has answered "
        f"{fault['halfway_requests']:,} requests (half the floor), its checkpoint is read, "
        "and the same command is run again with `--resume`. Finished work is what the "
        "checkpoint holds: the resumed run must send none of it (the column *kept, sent "
        "again*). Ctrl-C (SIGINT) lets the batches in flight finish and keeps them, so "
        "every text answered must be kept and nothing sent twice. SIGKILL gives the process "
        "no chance: what was answered but not yet written to the checkpoint is lost and "
        "sent again by the resumed run; the batches in flight alone are "
        f"{fault['concurrency']} x {fault['batch_size']} = {fault['in_flight_texts']} texts, "
        "and answers that reached the process but still waited to be stored add to that."
    )
    add("")
    add(
        "| stop | stopped after | run 1: requests, texts, exit | kept in the checkpoint "
        "| answered, not kept | run 2 (`--resume`): requests, texts, exit "
        "| kept, sent again | texts sent (floor) | sent twice | output = reference | result |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = (
        reference["exit"] == 0
        and reference["matches_emulator"]
        and reference["texts_received"] == fault["unique"]
        and reference["requests"] == fault["min_requests"]
    )
    add(
        f"| none (the reference) | - | {reference['requests']:,}, "
        f"{reference['texts_received']:,}, {reference['exit']} | - | - | - | - "
        f"| {reference['texts_received']:,} ({fault['unique']:,}) "
        f"| {reference['texts_repeated']:,} "
        f"| {'is' if reference['matches_emulator'] else '**is not**'} the emulator's "
        f"translation | {verdict(ok)} |"
    )
    for name in ("SIGINT", "SIGKILL"):
        scenario = scenarios[name]
        first, second = scenario["run1"], scenario["run2"]
        ok = (
            scenario["checkpointed_sent_again"] == 0
            and scenario["output_matches_reference"]
            and scenario["distinct_translated"] == fault["unique"]
            and first["exit"] == (130 if name == "SIGINT" else -9)
            and second["exit"] == 0
        )
        if name == "SIGINT":  # nothing answered may be lost
            ok = ok and scenario["answered_not_checkpointed"] == 0
            ok = ok and scenario["texts_sent_twice"] == 0
        stopped = first.get("signalled_after_requests")
        add(
            f"| {name} | {'-' if stopped is None else f'{stopped:,} requests'} "
            f"| {first['requests']:,}, {first['texts_received']:,}, {first['exit']} "
            f"| {scenario['checkpointed']:,} | {scenario['answered_not_checkpointed']:,} "
            f"| {second['requests']:,}, {second['texts_received']:,}, {second['exit']} "
            f"| {scenario['checkpointed_sent_again']:,} "
            f"| {scenario['texts_sent']:,} ({fault['unique']:,}) "
            f"| {scenario['texts_sent_twice']:,} "
            f"| {'yes' if scenario['output_matches_reference'] else '**no**'} | {verdict(ok)} |"
        )
    add("")
    add(
        "Result: **pass** when the resumed run sent nothing the checkpoint held, exited 0 "
        "and wrote the reference output, every text was translated, and the stopped run "
        "exited as it should (130 for Ctrl-C; -9 is the kill); for SIGINT also when every "
        "text answered was kept and none was sent twice. The texts sent twice after SIGKILL "
        "are reported, not judged."
    )
    add("")
    return lines


def loopback_section(loopback: dict[str, Any]) -> list[str]:
    """Every case of ``bench_loopback.py``, with the floor: the same bytes over a plain socket."""
    lines = [
        "## Over loopback (target 2)",
        "",
        "Each server runs in a process of its own on 127.0.0.1. The fast server "
        "(`benchmarks/_fast_server.py`) answers every request with the spec's envelope and "
        "headers at once, so its rows show what the clients cost; the emulator is what a "
        "user's tests run against. The floor is a plain socket: the same request bytes "
        "written to one keep-alive connection, the answer split on `Content-Length` by hand "
        "and decoded with `json.loads`, no HTTP library. Tuned raw httpx builds the URL and "
        "headers once and calls `send()`; naive raw httpx calls `post(json=...)` and "
        "`.json()`. Ratios are baseline time / lingodoc time, round by round: the median, "
        "and the range over the rounds.",
        "",
        "| server | case | median per call | fastest round | slowest round | lingodoc vs this |",
        "|---|---|---|---|---|---|",
    ]
    names = {
        "socket": "plain socket (the floor)",
        "tuned": "tuned raw httpx",
        "naive": "naive raw httpx",
        "lingodoc": "lingodoc `Client.translate()`",
    }
    for server, rows in loopback["servers"].items():
        for kind, cases in rows.items():
            for name, case in cases.items():
                label = names[name]
                if kind == "concurrent":
                    label = label.replace("`Client.", "`AsyncClient.")
                    label += f", {loopback['concurrency']} async workers"
                versus = "" if name == "lingodoc" else spread(cases, name, "lingodoc")
                lines.append(
                    f"| {server} | {label} | {us(case['median'])} | {us(case['min'])} "
                    f"| {us(case['max'])} | {versus} |"
                )
    lines.append("")
    return lines


def range_cell(ratio: dict[str, float]) -> str:
    """A ``{min, median, max}`` ratio as a table cell."""
    return f"{ratio['median']:.2f} x ({ratio['min']:.2f}-{ratio['max']:.2f})"


def coldstart_section(cold: dict[str, Any]) -> list[str]:
    """The rows of ``bench_coldstart.py``: first result, first model, building clients."""
    first, models, built = cold["first_result"], cold["import_first_model"], cold["construction"]
    lines = [
        "## Cold start and building clients (issue 16)",
        "",
        "Time to the first result: fresh interpreters, each timing itself from before its "
        "first import to its first result against the fast server (`import httpx`, "
        "`httpx.Client()`, one POST, `.json()` against `import lingodoc`, `lingodoc.Client()`, "
        "`translate()`), interleaved. Ratios are lingodoc / baseline (below 1: lingodoc is "
        "faster), round by round: median (min-max). The processes run as where trio is not "
        "installed, as after `pip install lingodoc`: httpcore imports trio whenever it can, at "
        "the first client, and an environment that has it (the test dependencies install it) "
        "adds that to every process, which brings every ratio closer to 1; the rows *trio "
        "installed* show it. The fast server speaks `http://`: raw httpx loads certifi's "
        "authorities in `httpx.Client()` all the same, lingodoc only at its first TLS "
        "handshake (over `https://` both pay it); the row against raw httpx with "
        "`verify=False`, which loads none, takes that out of the baseline.",
        "",
        "| measurement | lingodoc | baseline | ratio |",
        "|---|---|---|---|",
        f"| time to the first result, vs raw httpx | {ms(first['cases']['lingodoc']['median'])} "
        f"| {ms(first['cases']['httpx']['median'])} | {range_cell(first['ratio'])} |",
        f"| time to the first result, vs raw httpx with a pydantic result "
        f"| {ms(first['cases']['lingodoc']['median'])} "
        f"| {ms(first['cases']['httpx+pydantic']['median'])} "
        f"| {range_cell(first['ratio_typed'])} |",
        f"| (the floor: raw httpx with a pydantic result, vs raw httpx) "
        f"| | | {range_cell(first['floor'])} |",
        f"| time to the first result, vs raw httpx loading no certificates (`verify=False`) "
        f"| {ms(first['cases']['lingodoc']['median'])} "
        f"| {ms(first['cases']['httpx, no certificates']['median'])} "
        f"| {range_cell(first['ratio_no_certificates'])} |",
        f"| time to the first result, trio installed, vs raw httpx there "
        f"| {ms(first['cases']['lingodoc, trio installed']['median'])} "
        f"| {ms(first['cases']['httpx, trio installed']['median'])} "
        f"| {range_cell(first['ratio_trio_installed'])} |",
        f"| import + first model, vs `import httpx, pydantic` + a one-field model "
        f"| {ms(models['cases']['lingodoc']['median'])} "
        f"| {ms(models['cases']['httpx+pydantic']['median'])} | {range_cell(models['ratio'])} |",
        f"| building a client (median of {built['clients']:,}), vs `httpx.Client()` "
        f"| {ms(built['cases']['lingodoc']['median'])} | {ms(built['cases']['httpx']['median'])} "
        f"| {range_cell(built['ratio'])} |",
    ]
    memory = built["memory_kib_per_client"]
    for kind, label in (("rss", "process memory (RSS)"), ("tracemalloc", "Python memory")):
        lines.append(
            f"| memory kept per client, {label} | {memory['lingodoc'][kind]['median']:,.1f} KiB "
            f"| {memory['httpx'][kind]['median']:,.1f} KiB | |"
        )
    lines += [
        "",
        "Median split of the first result (import / client / first call): "
        + "; ".join(
            f"{name}: " + " / ".join(ms(seconds) for seconds in split.values())
            for name, split in first["split_median_s"].items()
        )
        + ".",
        "",
    ]
    return lines


def gather_section(gather: dict[str, Any]) -> list[str]:
    """The rows of ``bench_gather.py``: a naive gather against each pool setting."""
    lines = [
        "## A naive gather (issue 16)",
        "",
        f"`asyncio.gather` of {gather['calls']:,} `AsyncClient.translate()` calls at once, a fresh "
        "client per round, against the fast server; the SDK with its defaults (`default`: "
        "the adaptive limit on calls in flight) and with an `http_client` whose pool holds "
        "the given number of connections; raw httpx with the best hand-written set-up (URL "
        "and headers built once, `send()`), with a pool of 4 and a semaphore of 4 (`raw "
        "httpx`) and one call at a time (a pool of 1 and a semaphore of 1). Then against "
        f"the same server answering after {gather['distant']['delay'] * 1000:.0f} ms, as a "
        f"distant one does ({gather['distant']['calls']:,} calls). Requests per second: "
        "median (slowest-fastest round). The best setting is the one with the best median; "
        "default / best is the median over the rounds of the default's rate over that "
        "setting's in the same round. On loopback the default also runs a second time "
        "under another name (`default, again`), as an A/A control: the same setting, so "
        "its ratios are what the noise of this machine gives alone. The ratio against the "
        "best of each round (whichever setting was fastest in it) is shown too; it is "
        "biased low, as the control shows, because the fastest of four noisy figures "
        "beats any one setting's.",
        "",
        "| server | setting | requests per second |",
        "|---|---|---|",
    ]
    for part, label in (("loopback", "loopback"), ("distant", "distant")):
        for name, rate in gather[part]["req_per_s"].items():
            low, median, high = rate["min"], rate["median"], rate["max"]
            lines.append(f"| {label} | {name} | {median:,.0f} ({low:,.0f}-{high:,.0f}) |")
    lines.append("")
    bursts = gather.get("bursts")
    if bursts is not None:
        lines.append(
            f"Small bursts to a server answering after {bursts['delay'] * 1000:.0f} ms, a fresh "
            "client each (wall time, median over rounds): "
            + "; ".join(
                f"{size} calls: default {ms(part['seconds']['default']['median'])}, no limit "
                f"(`max_in_flight=100`) {ms(part['seconds']['max_in_flight 100']['median'])}"
                for size, part in bursts.items()
                if size != "delay"
            )
            + "."
        )
        lines.append("")
    for part in ("loopback", "distant"):
        measured = gather[part]
        best = measured["best_setting"]
        lines.append(
            f"- {part}: default / best ({best}) {range_cell(measured['default_over_best'])}; "
            f"default / the best of each round {range_cell(measured['default_over_round_best'])}."
        )
        control = measured.get("control")
        if control is not None:
            lines.append(
                f"- {part}, the A/A control (`default, again`): over the default "
                f"{range_cell(control['over_default'])}; over {best} "
                f"{range_cell(control['over_best'])}; over the best of each round "
                f"{range_cell(control['over_round_best'])}."
            )
    lines.append("")
    return lines


def report(results: dict[str, Any], before: dict[str, Any] | None, args: argparse.Namespace) -> str:
    lines: list[str] = []
    add = lines.append
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("httpx", "pydantic", "tenacity")
    )
    add("# Performance")
    add("")
    add(
        "Generated by `nox -s bench` (`python benchmarks/run.py`); do not edit by hand, "
        "except `benchmarks/changes.md`, which is copied in below."
    )
    add("")
    add(
        f"Measured {datetime.date.today().isoformat()} on {platform.platform()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; lingodoc "
        f"{metadata.version('lingodoc')} with {versions}."
        + (" **Quick run: too few rounds to be worth publishing.**" if args.quick else "")
    )
    add("")
    add(
        "Every figure is a median over interleaved rounds, lingodoc and its baseline measured "
        "side by side in the same process of the same run. Throughput ratios are "
        "baseline time / lingodoc time (above 1: lingodoc is faster), taken round by round "
        "and then the median of those, so that a burst of other work on the machine, which "
        "slows both sides of a round alike, does not tip the result."
    )
    add("")
    load = results.get("load")
    if load is not None:
        add(
            f"Load average (1 min) when the run started: {load['start']:.2f}, when it ended: "
            f"{load['end']:.2f}, on {os.cpu_count()} cores. Anything else running on the "
            "machine widens the spread of every figure; the bulk and loopback rows, which "
            "keep both cores busy, suffer most."
        )
        add("")

    # Targets ---------------------------------------------------------------------------
    add("## Targets")
    add("")
    add("| # | measurement | lingodoc | baseline | ratio | goal | result |")
    add("|---|---|---|---|---|---|---|")
    inprocess = results["inprocess"]
    for kind, client, raw in (
        ("sync", "Client", "Client"),
        ("async", "AsyncClient", "AsyncClient"),
    ):
        add(
            throughput_row(
                "1", f"in-process `{client}.translate()` vs tuned raw `httpx.{raw}` (per call)",
                inprocess[kind], "lingodoc", "tuned", 0.9, us,
            )[0]
        )  # fmt: skip
        add(
            throughput_row(
                "1", f"in-process `{client}.translate()` vs naive raw `httpx.{raw}` (per call)",
                inprocess[kind], "lingodoc", "naive", 0.9, us,
            )[0]
        )  # fmt: skip
    read = results["read"]["read"]
    read_ratio = paired(read, "lingodoc", "json.loads")
    add(
        f"| 1 | reading a response into a `TextTranslation` vs `json.loads(body)['data']` "
        f"(time ratio; issue 16: halve 4.2 x) | {us(read['lingodoc']['median'])} "
        f"| {us(read['json.loads']['median'])} | {spread(read, 'lingodoc', 'json.loads')} "
        f"| <= 2.1 x | {verdict(read_ratio <= 2.1)} |"
    )
    cold = results["coldstart"]
    first = cold["first_result"]["ratio"]
    add(
        f"| 3 | time to the first result (import + client + first call, whole processes, "
        f"trio not installed) "
        f"vs raw httpx (time ratio) | {ms(cold['first_result']['cases']['lingodoc']['median'])} "
        f"| {ms(cold['first_result']['cases']['httpx']['median'])} | {range_cell(first)} "
        f"| <= 1.15 x | {verdict(first['median'] <= 1.15)} |"
    )
    typed, floor = cold["first_result"]["ratio_typed"], cold["first_result"]["floor"]
    add(
        f"| 3 | the same vs raw httpx with a pydantic result (the least a typed client "
        f"imports; raw httpx with it is {range_cell(floor)} raw httpx: the floor of the row "
        f"above) | {ms(cold['first_result']['cases']['lingodoc']['median'])} "
        f"| {ms(cold['first_result']['cases']['httpx+pydantic']['median'])} "
        f"| {range_cell(typed)} | <= 1.15 x | {verdict(typed['median'] <= 1.15)} |"
    )
    built = cold["construction"]
    per_client = built["cases"]["lingodoc"]["median"]
    kib = built["memory_kib_per_client"]["lingodoc"]["rss"]["median"]
    add(
        f"| 3 | building a `Client` (median of {built['clients']:,}): time, and process memory "
        f"kept | {ms(per_client)}, {kib:,.0f} KiB "
        f"| `httpx.Client()`: {ms(built['cases']['httpx']['median'])}, "
        f"{built['memory_kib_per_client']['httpx']['rss']['median']:,.0f} KiB "
        f"| {range_cell(built['ratio'])} | <= 1 ms, <= 50 KiB "
        f"| {verdict(per_client <= 0.001 and kib <= 50)} |"
    )
    gather = results["gather"]["loopback"]
    gathered, best = gather["default_over_best"], gather["best_setting"]
    add(
        f"| 2 | a naive `asyncio.gather` of {results['gather']['calls']:,} calls, default "
        f"`AsyncClient`, vs the best pool setting (req/s, loopback, fast server) "
        f"| {gather['req_per_s']['default']['median']:,.0f}/s "
        f"| {best}: {gather['req_per_s'][best]['median']:,.0f}/s "
        f"| {range_cell(gathered)} | >= 0.9 x "
        f"| {verdict(gathered['median'] >= 0.9)} |"
    )
    loopback = results["loopback"]
    for server, label in (("fast", "a fast server"), ("emulator", "the emulator")):
        rows = loopback["servers"][server]
        add(
            throughput_row(
                "2", f"loopback, {label}: sequential `translate()` vs tuned raw httpx (per call)",
                rows["sequential"], "lingodoc", "tuned", 0.9, us,
            )[0]
        )  # fmt: skip
        add(
            throughput_row(
                "2",
                f"loopback, {label}: `AsyncClient`, {loopback['concurrency']} workers vs tuned "
                "raw httpx (wall time per call)",
                rows["concurrent"], "lingodoc", "tuned", 0.9, us,
            )[0]
        )  # fmt: skip
    imports = results["import"]["cases"]
    import_ratio = paired(imports, "lingodoc", "httpx+pydantic")
    add(
        f"| 3 | cold `import lingodoc` vs `import httpx, pydantic` "
        f"| {ms(imports['lingodoc']['median'])} | {ms(imports['httpx+pydantic']['median'])} "
        f"| {import_ratio:.2f} x | <= 1.2 x | {verdict(import_ratio <= 1.2)} |"
    )
    bulk = results["bulk"]
    texts = f"{bulk['texts']:,}"
    for kind in ("sync", "async"):
        client = "Client" if kind == "sync" else "AsyncClient"
        add(
            throughput_row(
                "4",
                f"`{client}.translate_many()`, {texts} texts, batches of {bulk['batch_size']}, "
                f"{bulk['concurrency']} at once, vs a hand-written httpx loop (wall time)",
                bulk["cases"], f"{kind} lingodoc", f"{kind} raw", 0.9,
                lambda seconds: f"{seconds:.2f} s",
            )[0]
        )  # fmt: skip
    memory = results["memory"]
    for name in ("sync lingodoc", "async lingodoc"):
        case = memory["cases"][name]
        client = "Client" if name.startswith("sync") else "AsyncClient"
        size = case["inputs_bytes"] + case["outputs_bytes"]
        add(
            f"| 4 | `{client}.translate_many()`, {memory['texts']:,} texts: peak memory "
            f"(tracemalloc) vs inputs + outputs | {case['peak_bytes'] / 2**20:.1f} MiB "
            f"| {size / 2**20:.1f} MiB | {case['ratio']:.2f} x | <= 2 x "
            f"| {verdict(case['ratio'] <= 2)} |"
        )
    add("")
    raw_memory = memory["cases"]["sync raw"]
    add(
        f"For scale, the hand-written httpx loop peaks at {raw_memory['ratio']:.2f} x its "
        "inputs + outputs in the same measurement."
    )
    add("")

    lines.extend(loopback_section(loopback))
    lines.extend(coldstart_section(results["coldstart"]))
    lines.extend(gather_section(results["gather"]))

    # Corpus ---------------------------------------------------------------------------
    if "corpus" in results:
        lines.extend(corpus_section(results["corpus"]))

    # Peers ----------------------------------------------------------------------------
    add("## Peers (target 5)")
    add("")
    add(
        "The in-process measurement of target 1 for other SDKs, each against a like-for-like "
        "mock and the raw use of the HTTP library it sends through, in one process: "
        "openai-python's `chat.completions.create()` through the same `httpx.MockTransport` "
        "set-up (a canned chat completion), deepl-python's `Translator.translate_text()` "
        "through a mounted `requests` adapter (a canned translation). Installed only in the "
        "`bench` session."
    )
    add("")
    add(
        "| SDK | version | sends through | raw, per call | SDK, per call | added by the SDK "
        "| throughput vs raw |"
    )
    add("|---|---|---|---|---|---|---|")
    libraries = {"lingodoc": "httpx", "openai": "httpx", "deepl": "requests"}
    for name, row in results["peers"].items():
        if "skipped" in row:
            add(f"| {name} | - | {libraries[name]} | - | - | - | {row['skipped']} |")
            continue
        raw, sdk = row["raw"]["median"], row["sdk"]["median"]
        add(
            f"| {name} | {row['version']} | {libraries[name]} | {us(raw)} | {us(sdk)} "
            f"| {us(sdk - raw)} | {paired(row, 'raw', 'sdk'):.2f} x |"
        )
    add("")

    # Imports --------------------------------------------------------------------------
    add("## Import time (target 3)")
    add("")
    add(
        "Each sample is a fresh interpreter timing its own import statement (start-up left "
        "out); the statements take turns, "
        f"{results['import']['cases']['lingodoc']['rounds']} rounds, medians."
    )
    add("")
    add("| statement | median | fastest | slowest |")
    add("|---|---|---|---|")
    for name, case in imports.items():
        statement = results["import"]["statements"][name]
        add(f"| `{statement}` | {ms(case['median'])} | {ms(case['min'])} | {ms(case['max'])} |")
    add("")
    add(
        "`import lingodoc` does not import pydantic's model machinery: the models are built "
        "when first used (the first response parsed, or the first access to a model class), "
        "which is what the `lingodoc.TextTranslation` row costs. `import pydantic` alone is "
        "lazy too, hence the `from pydantic import BaseModel` row for comparison."
    )
    add("")
    add('Top entries of `python -X importtime -c "import lingodoc"` (one run, cumulative):')
    add("")
    add("| module | cumulative | self |")
    add("|---|---|---|")
    for entry in results["import"]["importtime"]:
        depth = (len(entry["module"]) - len(entry["module"].lstrip())) // 2
        name = "&nbsp;&nbsp;" * depth + entry["module"].strip()
        add(
            f"| {name} | {entry['cumulative_us'] / 1000:.1f} ms "
            f"| {entry['self_us'] / 1000:.1f} ms |"
        )
    add("")

    # Before and after -----------------------------------------------------------------
    if before is not None:
        add("## Before and after")
        add("")
        if "error" in before:
            add(f"Not measured: {before['error']}.")
        else:
            add(
                f"The same benchmarks on lingodoc as it was at `{args.before}` (before this "
                "work), run in this same session; each ratio is against the baseline measured "
                "in that process."
            )
            add("")
            add("| measurement | before | before, ratio | after | after, ratio |")
            add("|---|---|---|---|---|")
            # (label, the path to the pair in a benchmark's JSON, the baseline's name)
            pairs = [
                ("in-process `Client.translate()`", ("inprocess", "sync"), "tuned"),
                ("in-process `AsyncClient.translate()`", ("inprocess", "async"), "tuned"),
                ("loopback, fast server, sequential", SEQUENTIAL_FAST, "tuned"),
                ("loopback, fast server, workers", CONCURRENT_FAST, "tuned"),
                ("loopback, emulator, sequential", SEQUENTIAL_EMULATOR, "tuned"),
            ]
            for label, path, base in pairs:
                old, new = dig(before, path), dig(results, path)
                add(
                    f"| {label} | {us(old['lingodoc']['median'])} "
                    f"| {spread(old, base, 'lingodoc')} "
                    f"| {us(new['lingodoc']['median'])} "
                    f"| {spread(new, base, 'lingodoc')} |"
                )
            old_imports = before["import"]["cases"]
            add(
                f"| cold `import lingodoc` | {ms(old_imports['lingodoc']['median'])} "
                f"| {paired(old_imports, 'lingodoc', 'httpx+pydantic'):.2f} x "
                f"| {ms(imports['lingodoc']['median'])} | {import_ratio:.2f} x |"
            )
        add("")

    # Profile --------------------------------------------------------------------------
    profile = results.get("profile")
    if profile is not None and "text" in profile:
        add("## Where a call's time goes now")
        add("")
        add(
            f"pyinstrument over {profile['calls']:,} in-process `Client.translate()` calls "
            "(`python benchmarks/run.py profile`); seconds are under the profiler, which slows "
            "everything down, so read the shares, not the totals."
        )
        add("")
        add("```text")
        add(profile["text"])
        add("```")
        add("")

    changes = HERE / "changes.md"
    if changes.exists():
        add(changes.read_text(encoding="utf-8").rstrip())
        add("")
    add("## Method")
    add("")
    add(
        "- Per call, in-process (`benchmarks/bench_inprocess.py`): an `httpx.MockTransport` "
        "answering the spec's envelope with the emulator's headers (`X-Request-Id`, "
        "`X-RateLimit-*`); the baseline posts the same JSON through the same transport with "
        "raw httpx, then `.json()` and dict access. lingodoc gets an `http_client` on that "
        "transport."
    )
    add(
        "- Over loopback (`bench_loopback.py`): see its section above. Each server runs in a "
        "child process so that server and client do not share a GIL; raw httpx uses "
        "lingodoc's default connection-pool limits (keep-alive for every connection)."
    )
    add(
        "- Bulk (`bench_bulk.py`): the same emulator process; the hand-written loops use 4 "
        "threads or 4 tasks pulling batches of 100 from a shared iterator, as "
        "`translate_many` does. Memory: tracemalloc's peak during one call, in a process of "
        "its own, from before the inputs were made, against `sys.getsizeof` of the input and "
        "output lists and their strings."
    )
    add(
        "- Corpus (`bench_corpus.py`): see its section above; the emulator runs in a process "
        "of its own for the volume rows, in the benchmark's process for the resume rows "
        "(where the CLI is the child process)."
    )
    add("- Imports (`bench_import.py`): fresh interpreters, statements interleaved.")
    add("- Peers (`bench_peers.py`): see above.")
    add("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", nargs="?", default="all", choices=["all", *BENCHMARKS])
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    parser.add_argument("--before", metavar="REV", help="also measure lingodoc at git REV")
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--json", metavar="PATH", help="also write the raw results here")
    args = parser.parse_args()

    if args.benchmark != "all":
        print(json.dumps(run(args.benchmark, quick=args.quick), indent=2))
        return

    print("benchmarks:", file=sys.stderr)
    load_at_start = os.getloadavg()[0]
    results: dict[str, Any] = {name: run(name, quick=args.quick) for name in BENCHMARKS}
    results["load"] = {"start": load_at_start, "end": os.getloadavg()[0]}
    before: dict[str, Any] | None = None
    if args.before:
        with tempfile.TemporaryDirectory() as scratch:
            src = checkout_src(args.before, Path(scratch))
            if src is None:
                before = {"error": f"git could not extract src/ at {args.before}"}
            else:
                before = {
                    name: run(name, quick=args.quick, pythonpath=str(src))
                    for name in BEFORE_BENCHMARKS
                }
    if args.json:
        Path(args.json).write_text(json.dumps({"after": results, "before": before}, indent=2))
    Path(args.output).write_text(report(results, before, args) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
