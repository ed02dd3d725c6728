"""Run lingodoc's benchmarks and write docs/performance.md (``nox -s bench`` runs this).

Usage::

    python benchmarks/run.py [--quick] [--output PATH] [--json PATH] [--from-json PATH]
    python benchmarks/run.py NAME [--quick] [--json PATH] [--write] [--output PATH]

With no name it runs every benchmark, each in a fresh interpreter, and writes the page;
``--json`` keeps the results, and ``--from-json`` writes the page from kept results without
measuring again. A NAME (sendpath, peers, first_result, gather, many, cache, cache_size,
memory, waits) runs that benchmark alone and prints its sections of the page; ``--write``
puts them in the page in place of the same sections, saying when and where they were measured.
``--quick`` is a smoke run with few rounds, whose figures are not worth publishing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# name: (script, arguments with --quick, the child's time limit in seconds)
BENCHMARKS: dict[str, tuple[str, list[str], int]] = {
    "sendpath": ("bench_sendpath.py", ["--rounds", "3", "--calls", "300"], 600),
    "peers": ("bench_peers.py", ["--rounds", "3", "--calls", "100"], 900),
    "first_result": ("bench_first_result.py", ["--rounds", "3"], 600),
    "gather": ("bench_gather.py", ["--calls", "3000,300", "--rounds", "1,1"], 1800),
    "many": ("bench_many.py", ["--rounds", "2", "--texts", "2000"], 600),
    "cache": ("bench_cache.py", ["--rounds", "2", "--texts", "5000", "--first-texts", "2000"], 900),
    "cache_size": ("bench_cache_size.py", ["--rounds", "2", "--entries", "20000"], 1800),
    "memory": ("bench_memory.py", ["--rounds", "1", "--clients", "20"], 900),
    "waits": ("bench_waits.py", ["--rounds", "2", "--calls", "5"], 300),
}
VERSIONS = (
    "httpx", "httpcore", "h11", "aiohttp", "httpx-aiohttp", "pydantic", "tenacity", "anyio",
    "redis",
)  # fmt: skip
# The call each peer of bench_peers.py makes, for the page.
PEER_CALLS = {
    "lingodoc": "`Client.translate()`",
    "openai": "`OpenAI.chat.completions.create()`",
    "anthropic": "`Anthropic.messages.create()`",
    "deepl": "`Translator.translate_text()`",
}


def run(name: str, *, quick: bool) -> dict[str, Any]:
    """Run one benchmark in a fresh interpreter and return its JSON result."""
    script, quick_arguments, limit = BENCHMARKS[name]
    print(f"  {name} ...", file=sys.stderr, flush=True)
    result = subprocess.run(
        [sys.executable, str(HERE / script), *(quick_arguments if quick else [])],
        capture_output=True,
        text=True,
        cwd=HERE,
        timeout=limit,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{result.stderr}")
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def git(*arguments: str) -> str:
    try:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True).stdout
    except OSError:
        return ""


def version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return {
        "commit": commit + (" with changes in src/" if git("status", "--porcelain", "src") else ""),
        "date": datetime.date.today().isoformat(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "versions": {name: version(name) for name in ("lingodoc", *VERSIONS) if version(name)},
        "load": os.getloadavg()[0],
    }


def cell(stats: dict[str, float], fmt: str = ",.1f", unit: str = "") -> str:
    """``median (min-max)`` of a case's rounds, for a table cell."""
    low, mid, high = (format(stats[key], fmt) for key in ("min", "median", "max"))
    return f"{mid}{unit} ({low}-{high})"


def ratio(stats: dict[str, float]) -> str:
    return cell(stats, ".2f", " x")


def per_call_table(add: Callable[[str], None], rows: dict[str, dict[str, Any]]) -> None:
    """A table of per-call times, ``Client``'s and ``AsyncClient``'s, against raw httpx."""
    add(
        "| client | raw httpx, per call | lingodoc, per call | lingodoc adds, per call"
        " | raw httpx / lingodoc | raw httpx / floor |"
    )
    add("|---|---|---|---|---|---|")
    for kind, name in (("sync", "Client"), ("async", "AsyncClient")):
        row = rows[kind]
        add(
            f"| `{name}` | {cell(row['raw_us'], unit=' µs')} | {cell(row['sdk_us'], unit=' µs')}"
            f" | {cell(row['overhead_us'], unit=' µs')} | {ratio(row['ratio'])}"
            f" | {ratio(row['floor_ratio'])} |"
        )


def complete(gather: dict[str, Any]) -> bool:
    """Whether every case of a gather got every answer, with no error, in every round."""
    return all(
        case["answers"]["min"] == gather["calls"] and not case["errors"]
        for case in gather["cases"].values()
    )


def sendpath_section(add: Callable[[str], None], send: dict[str, Any]) -> None:
    """The send path's cost per call: what the SDK adds, and the whole stack over a fake socket."""
    add("## Cost per call, in-process")
    add("")
    add(
        f"One `translate()` at a time, {send['calls_per_round']:,} calls a round, against the"
        " fastest raw httpx call. The floor adds what the SDK may not skip, in the same rounds:"
        " on `AsyncClient`, the attempt's deadline (`asyncio.timeout`); over a socket, h11's"
        " reading of each response, so that no answer is taken from bytes past another. Raw"
        " httpx / floor is the best ratio that leaves the SDK."
    )
    add("")
    add("### What the SDK adds, on your `http_client`")
    add("")
    add(
        "`Client(..., http_client=httpx.Client(transport=T))` against"
        " `httpx.Client(transport=T)`, one `httpx.MockTransport` under both."
    )
    add("")
    per_call_table(add, send["caller"])
    add("")
    add("### The whole stack, over a fake socket")
    add("")
    add(
        "The SDK's own transport against httpx's default, both down to httpcore and h11, over"
        " an in-memory stream that answers the response's bytes."
    )
    add("")
    per_call_table(add, send["socket"])
    add("")


def peers_section(add: Callable[[str], None], peers: dict[str, Any]) -> None:
    """Other SDKs, each against its own floor."""
    add("## Other SDKs, in-process")
    add("")
    add(
        "Each SDK's most common call against the same request made by hand on the HTTP"
        f" library it is built on (the floor). Sync clients, {peers['calls_per_round']:,}"
        " calls a round."
    )
    add("")
    add("| SDK | call | floor, per call | SDK, per call | overhead per call | floor / SDK |")
    add("|---|---|---|---|---|---|")
    for name, row in peers["cases"].items():
        add(
            f"| {name} {row['version']} | {PEER_CALLS.get(name, '')}"
            f" | {cell(row['floor_us'], unit=' µs')} | {cell(row['sdk_us'], unit=' µs')}"
            f" | {cell(row['overhead_us'], unit=' µs')} | {ratio(row['ratio'])} |"
        )
    if peers.get("missing"):
        add("")
        add(f"Not installed, so not measured: {', '.join(peers['missing'])}.")
    for name, error in peers.get("failed", {}).items():
        add("")
        add(f"{name} could not be measured: `{error}`.")
    add("")


def first_result_section(add: Callable[[str], None], first: dict[str, Any]) -> None:
    """A fresh process's first call."""
    add("## Time to the first result")
    add("")
    add(
        "A fresh process imports, builds a client and makes one call to a loopback server. The"
        " floor is raw httpx with the answer validated by pydantic."
    )
    add("")
    add("| case | time to the first result | baseline / lingodoc |")
    add("|---|---|---|")
    add(f"| lingodoc `Client` | {cell(first['ms']['lingodoc'], unit=' ms')} | |")
    add(
        f"| raw httpx + pydantic (the floor) | {cell(first['ms']['httpx + pydantic'], unit=' ms')}"
        f" | {ratio(first['ratio_typed'])} |"
    )
    add(f"| raw httpx | {cell(first['ms']['httpx'], unit=' ms')} | {ratio(first['ratio_httpx'])} |")
    add("")


def gather_section(add: Callable[[str], None], gather: dict[str, Any]) -> None:
    """An AsyncClient's gather against raw httpx and raw aiohttp."""
    best = gather["gathers"][0]["best_pool"]
    add(f"## A naive gather, {gather['delay'] * 1000:.0f} ms away")
    add("")
    add(
        "`asyncio.gather` of N `translate()` calls on one `AsyncClient`, to a server"
        f" {gather['delay'] * 1000:.0f} ms away on loopback: `lingodoc` on its default transport"
        " (16 in flight), `lingodoc + aiohttp` on `DefaultAioHttpClient` (100 in flight). The"
        f" floors: raw httpx with the best pool size of the first table (**{best}** this run:"
        " httpcore's pool slows past about 16 in flight), and raw aiohttp. *vs*: requests per"
        " second over the floor's."
        + (
            ""
            if all(map(complete, gather["gathers"]))
            else " Answers: in the worst round; errors: in all."
        )
    )
    for row in gather["gathers"]:
        add("")
        add(
            f"{row['calls']:,} calls, {row['rounds']} round{'s' if row['rounds'] > 1 else ''}"
            + (
                ": every case got every answer, with no error, in every round."
                if complete(row)
                else ":"
            )
        )
        add("")
        columns = "" if complete(row) else " answers | errors |"
        head = "| case | requests per second | CPU per call |"
        add(f"{head}{columns} vs raw httpx | vs raw aiohttp |")
        add("|---|---|---|---|---|" + ("" if complete(row) else "---|---|"))
        for name, case in row["cases"].items():
            errors = ", ".join(f"{kind}: {count}" for kind, count in case["errors"].items())
            floor = " (the floor)" if name in (f"raw httpx, pool {best}", "raw aiohttp") else ""
            cpu = cell(case["cpu_us_per_call"], ",.0f", " µs") if "cpu_us_per_call" in case else ""
            lost = (
                ""
                if complete(row)
                else f" {case['answers']['min']:,.0f} of {row['calls']:,} | {errors or 'none'} |"
            )
            add(
                f"| {name}{floor} | {cell(case['req_per_s'], ',.0f')} | {cpu} |{lost}"
                f" {ratio(case['vs raw httpx'])} | {ratio(case['vs raw aiohttp'])} |"
            )
    add("")


def many_section(add: Callable[[str], None], many: dict[str, Any]) -> None:
    """`translate_many`'s requests against the fewest that would do."""
    add("## `translate_many`: requests against the minimum")
    add("")
    add(
        f"{many['texts']:,} short texts ({many['repeats']:.0%} repeats of earlier ones,"
        f" {many['blanks']:.0%} blank), batches of {many['batch_size']}, against the in-process"
        " emulator. The minimum is ceil(distinct non-blank texts / batch size) requests."
    )
    add("")
    add("| client | requests | minimum | requests / minimum | texts sent / distinct | results |")
    add("|---|---|---|---|---|---|")
    for name, case in many["cases"].items():
        add(
            f"| `{name}` | {cell(case['requests'], ',.0f')} | {cell(case['minimum'], ',.0f')}"
            f" | {ratio(case['over_minimum'])} | {ratio(case['texts_over_distinct'])}"
            f" | {'all correct' if case['all_correct'] else '**wrong**'} |"
        )
    add("")


def memory_section(add: Callable[[str], None], memory: dict[str, Any]) -> None:
    """What a client keeps in memory and takes to build."""
    add("## Memory per client")
    add("")
    add(
        f"A fresh process builds one client, then {memory['clients']:,} more: the memory each"
        " keeps and the time to build one. httpx builds an SSL context per client; the SDK"
        " shares one."
    )
    add("")
    add("| client | Python memory (tracemalloc) | process memory (RSS) | time to build |")
    add("|---|---|---|---|")
    for name, case in memory["cases"].items():
        add(
            f"| `{name}()` | {cell(case['kib'], unit=' KiB')}"
            f" | {cell(case['rss_kib'], unit=' KiB')} | {cell(case['build_us'], unit=' µs')} |"
        )
    add("")


def waits_section(add: Callable[[str], None], waits: dict[str, Any]) -> None:
    """Waits that should cost nothing."""
    add("## Waits that should cost nothing")
    add("")
    add(
        f"Median of {waits['rounds']} rounds: leaving `with Emulator().serve():` with a"
        " keep-alive connection open; a client's lookup in a `RedisCache` with nothing"
        " listening, its first and those within `retry_after`; a first one in a Redis that"
        " never answers,"
        f" over its `socket_timeout` of {waits['socket_timeout']:g} s."
    )
    add("")
    add("| case | time |")
    add("|---|---|")
    add(f"| emulator stop | {cell(waits['emulator_stop_ms'], ',.2f', ' ms')} |")
    add(f"| Redis refused, first call | {cell(waits['refused_first_ms'], ',.2f', ' ms')} |")
    add(f"| Redis refused, later calls | {cell(waits['refused_later_us'], unit=' µs')} |")
    silent = cell(waits["silent_over_timeout"], ".2f", " times `socket_timeout`")
    add(f"| Redis silent, first call | {silent} |")
    add("")


def cache_section(add: Callable[[str], None], cache: dict[str, Any]) -> None:
    """The translation cache: fully cached runs against a dict, first runs against none."""
    cached, first = cache["cached"], cache["first_run"]
    redis_server = (
        f"a `redis-server` {cache['redis_server']} on 127.0.0.1, without persistence, through"
        f" redis-py {cache['redis_py']}"
        if "redis_server" in cache
        else "a `redis-server` on 127.0.0.1"
    )
    add("## The translation cache")
    add("")
    add(
        "`Client.translate_many` with `cache=`, with its"
        f" defaults: batches of {cache['batch_size']}, {cache['max_concurrency']} at once."
        " Here a ratio is a time over its baseline's: above 1, the store is slower."
    )
    add("")
    add(
        f"**Every text cached.** {cache['texts']:,} distinct short texts against the in-process"
        " emulator, all of them already"
        f" in the store, so that nothing is sent ({cached['requests']} requests). The baseline"
        f" is a dict with `get_many` and `set_many`; `RedisCache` on {redis_server}. The floor"
        " of a store is its lookups made by hand, the keys already computed."
    )
    add("")
    add("| store | time per run | texts per second | time / the dict's | the store's floor |")
    add("|---|---|---|---|---|")
    floors = {"SQLiteCache": "sqlite3", "RedisCache": "redis"}
    for name, case in cached["cases"].items():
        floor = cached["floors"].get(floors.get(name, ""))
        add(
            f"| {'a dict (the baseline)' if name == 'dict' else f'`{name}`'}"
            f" | {cell(case['s'], ',.3f', ' s')} | {cell(case['texts_per_s'], ',.0f')}"
            f" | {'' if name == 'dict' else ratio(case['ratio'])}"
            f" | {cell(floor['s'], ',.3f', ' s') if floor else ''} |"
        )
    add("")
    add(
        f"**A first run, the cache empty.** {cache['first_texts']:,} distinct texts"
        f" ({first['requests']:,} requests: every text sent once) against"
        f" `python -m lingodoc.emulator --latency {cache['latency_ms']:g}` in a process of its"
        " own: each answer held that many milliseconds, as over a network. Each store starts"
        " empty: every text missed, then stored. A store's floor is its plainest form, by hand."
    )
    add("")
    add("| cache | time per run | texts per second | time / without a cache |")
    add("|---|---|---|---|")
    labels = {
        "no cache": "none (the baseline)",
        "dict": "a dict",
        "sqlite3 floor": "its floor: sqlite3",
        "redis floor": "its floor: redis-py",
    }
    for name, case in first["cases"].items():
        add(
            f"| {labels.get(name, f'`{name}`')}"
            f" | {cell(case['s'], ',.3f', ' s')} | {cell(case['texts_per_s'], ',.0f')}"
            f" | {'' if name == 'no cache' else ratio(case['ratio'])} |"
        )
    if not (cached["all_correct"] and first["all_correct"]):
        add("")
        add("**Some runs returned wrong translations or sent the wrong requests.**")
    if "redis_missing" in cache:
        add("")
        add(f"`RedisCache` was not measured: {cache['redis_missing']}.")
    add("")


def cache_size_section(add: Callable[[str], None], size: dict[str, Any]) -> None:
    """An SQLiteCache file's size, and what a store that keeps it so costs."""

    def mb(count: int) -> str:
        return f"{count / 1e6:,.0f} MB"

    add("## The translation cache's file")
    add("")
    add(
        f"`SQLiteCache`, {size['entries']:,} entries of"
        f" {size['translation_chars']:.0f}-character translations: **{mb(size['bytes'])}**;"
        f" {mb(size['indexed_bytes'])} with the index a limit adds (made in"
        f" {size['index_s']:.1f} s). Storing {size['store']} more:"
    )
    add("")
    add("| limit | time per store | time / none's |")
    add("|---|---|---|")
    labels = {
        "no limit": "none",
        "no limit, the index made": "none, indexed",
        "max_age": f"`max_age`: {size['store'] + 200} deleted",
        "max_entries": f"`max_entries`: {size['store']} deleted",
    }
    for name, case in size["cases"].items():
        add(
            f"| {labels[name]} | {cell(case['ms'], ',.1f', ' ms')}"
            f" | {'' if name == 'no limit' else ratio(case['ratio'])} |"
        )
    add("")


SECTIONS: dict[str, Callable[[Callable[[str], None], dict[str, Any]], None]] = {
    "sendpath": sendpath_section,
    "peers": peers_section,
    "first_result": first_result_section,
    "gather": gather_section,
    "many": many_section,
    "cache": cache_section,
    "cache_size": cache_size_section,
    "memory": memory_section,
    "waits": waits_section,
}


def section(name: str, data: dict[str, Any]) -> str:
    """The page's sections of one benchmark; if measured apart from the page, when and where."""
    out: list[str] = []
    SECTIONS[name](out.append, data)
    info = data.get("machine")
    if info:
        out.append(
            f"Measured apart: {info['date']}, commit {info['commit']}, load average"
            f" {info['load']:.2f} to {info['load_end']:.2f}."
            + (" **A `--quick` smoke run: not worth quoting.**" if info.get("quick") else "")
        )
        out.append("")
    return "\n".join(out) + "\n"


def report(results: dict[str, Any], quick: bool) -> str:
    info = results["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in info["versions"].items())
    out: list[str] = [
        "# Performance",
        "",
        "Written by `nox -s bench` (`python benchmarks/run.py`); do not edit by hand. How each"
        " benchmark is built, and how to run them: [Contributing](contributing.md#benchmarks)."
        + (" **A `--quick` smoke run: these figures are not worth quoting.**" if quick else ""),
        "",
        f"Measured {info['date']} at commit {info.get('commit', '?')}, on {info['platform']},"
        f" {info['cores']} cores (shared with other work: load average {info['load']:.2f} at"
        f" the start and {results['load_end']:.2f} at the end), Python {info['python']};"
        f" {versions}.",
        "",
        "A cell is `median (min-max)` over rounds interleaved with the baseline's; a ratio is"
        " baseline time / lingodoc time (requests per second: lingodoc / baseline): above 1,"
        " lingodoc is faster.",
        "",
    ]
    page = "\n".join(out) + "\n"
    page += "".join(section(name, results[name]) for name in BENCHMARKS if results.get(name))
    return page.rstrip("\n") + "\n"


def splice(page: str, sections: str) -> str:
    """``page`` with each of ``sections`` in place of the page's under the same ``## `` heading.

    Raises:
        SystemExit: If the page has no such section: write the whole page.
    """
    blocks = re.split(r"(?m)^(?=## )", page)
    new = {block.split("\n", 1)[0]: block for block in re.split(r"(?m)^(?=## )", sections)}
    new.pop("", None)
    missing = set(new) - {block.split("\n", 1)[0] for block in blocks}
    if missing:
        raise SystemExit(
            f"the page has no section {sorted(missing)}: write it whole (nox -s bench)"
        )
    spliced = "".join(new.get(block.split("\n", 1)[0], block) for block in blocks)
    return spliced.rstrip("\n") + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name", nargs="?", choices=sorted(BENCHMARKS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--json", type=Path, help="keep the results here")
    parser.add_argument("--from-json", type=Path, help="write the page from kept results")
    parser.add_argument(
        "--write", action="store_true", help="with a name: put its sections in the page"
    )
    args = parser.parse_args()
    if args.write and not args.name:
        parser.error("--write goes with a benchmark's name (without one, the page is written)")
    if args.name:
        info = machine()
        data = run(args.name, quick=args.quick)
        # Its own date, commit and load, for the page: not those of the rest of it.
        data["machine"] = {**info, "load_end": os.getloadavg()[0], "quick": args.quick}
        if args.json:
            args.json.write_text(json.dumps(data, indent=2))
        text = section(args.name, data)
        print(text, end="")
        if args.write:
            args.output.write_text(splice(args.output.read_text("utf-8"), text), "utf-8")
            print(f"wrote {args.output}", file=sys.stderr)
        return
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = {"machine": machine()}
        for name in BENCHMARKS:
            results[name] = run(name, quick=args.quick)
        results["load_end"] = os.getloadavg()[0]
        results["quick"] = args.quick
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    args.output.write_text(report(results, results["quick"]), encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
