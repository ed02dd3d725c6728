"""bench_corpus.py on a tiny corpus: the counts it reports, and issue 14's done-criterion.

Run by ``nox -s bench`` (``pytest benchmarks/test_bench_corpus.py``); not part of ``tests/``,
which may not import from ``benchmarks/``. No assertion here is about time.
"""

from __future__ import annotations

import argparse
import math

import bench_corpus

TEXTS = 3_000  # 2,100 unique: 21 requests
LINES = 4_000  # 2,800 unique: 28 requests, stopped after 14


def test_corpus_is_deterministic_with_the_share_of_duplicates_asked() -> None:
    texts = bench_corpus.make_corpus(TEXTS)
    assert texts == bench_corpus.make_corpus(TEXTS)
    assert len(set(texts)) == TEXTS - round(TEXTS * bench_corpus.DUPLICATES)
    assert all(0 < len(text) <= 80 for text in texts)
    # A repeat is another object with the same characters, as lines read from a file are.
    assert len({id(text) for text in texts}) == TEXTS


def test_the_emulator_counts_requests_texts_and_repeats() -> None:
    emulator = bench_corpus.CountingEmulator(plan="business", seed_documents=False)
    with emulator.serve("127.0.0.1", 0) as server:
        http = bench_corpus.raw_http(server.base_url, server.api_key)
        with http:
            texts = ["Good night", "Hello world", "Good night"]
            assert bench_corpus.raw_sync(http, texts) == ["Gut Nacht", "Hallo Welt", "Gut Nacht"]
            http.post("/translate/batch", json={"texts": ["Good night"], **bench_corpus.LANGS})
    counts = emulator.counts()
    assert counts["requests"] == counts["answered"] == 2
    assert counts["texts_received"] == counts["texts_translated"] == 3
    assert counts["distinct_translated"] == 2
    assert counts["texts_repeated"] == 1
    assert emulator.rate_limit == 20_000


def test_volume_sends_the_floor_of_requests_and_texts() -> None:
    args = argparse.Namespace(texts=TEXTS, rounds=1, max_seconds=300)
    result = bench_corpus.volume(args)
    unique = TEXTS - round(TEXTS * bench_corpus.DUPLICATES)
    assert result["unique"] == unique
    assert result["min_requests"] == math.ceil(unique / bench_corpus.BATCH)
    for name, case in result["cases"].items():
        assert case["errors"] == [], name
        assert case["correct"], name
        assert case["requests"] == [result["min_requests"]], name
        assert case["texts_sent"] == [unique], name
        assert case["texts_repeated"] == [0], name
        assert case["rate_limited"] == [0], name
        assert "error" not in case["memory"], (name, case["memory"])
        assert case["memory"]["peak_bytes"] > 0, name


def test_cli_resumes_without_resending_finished_work() -> None:
    result = bench_corpus.fault(argparse.Namespace(lines=LINES))
    scenarios = result["scenarios"]
    reference = scenarios["reference"]
    assert reference["exit"] == 0, reference
    assert reference["matches_emulator"]
    assert reference["texts_received"] == result["unique"]

    interrupted = scenarios["SIGINT"]
    assert interrupted["run1"]["exit"] == 130, interrupted["run1"]
    assert interrupted["run2"]["exit"] == 0, interrupted["run2"]
    assert interrupted["checkpointed_sent_again"] == 0
    assert interrupted["answered_not_checkpointed"] == 0  # Ctrl-C keeps the batches in flight
    assert interrupted["texts_sent_twice"] == 0
    assert interrupted["texts_sent"] == result["unique"]
    assert interrupted["output_matches_reference"]

    killed = scenarios["SIGKILL"]
    assert killed["run2"]["exit"] == 0, killed["run2"]
    assert killed["checkpointed_sent_again"] == 0  # what was kept is never sent again
    assert killed["distinct_translated"] == result["unique"]
    assert killed["output_matches_reference"]
