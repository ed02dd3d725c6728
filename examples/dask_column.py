"""Translate a column of a Dask dataframe on a cluster, with a cache in Redis.

Each worker process makes one lingodoc.Client when it starts (a Dask worker
plugin) and closes it when it stops. Each partition of the column goes through
that client's translate_many, which looks every text up in the shared
RedisCache first and sends only those that no worker has translated yet.

The workers share one API key: each reads LINGODOC_API_KEY and
LINGODOC_BASE_URL from its own environment (the key never travels with the
tasks), and paces itself on the X-RateLimit-* headers of the answers it gets.

    pip install "lingodoc[redis]" "dask[dataframe,distributed]"
    REDIS_URL=redis://localhost:6379/0 python examples/dask_column.py

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are
set, and otherwise starts the emulator on a free loopback port; on a local
cluster of two worker processes (on yours: distributed.Client(its address)).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import dask.dataframe as dd
import pandas as pd
from distributed import Client, LocalCluster, Worker, WorkerPlugin, get_worker

import lingodoc
from lingodoc.emulator import Emulator

PLUGIN = "lingodoc"  # the name the workers know the plugin by


class LingodocClient(WorkerPlugin):
    """One lingodoc.Client per worker process, on a cache that all share."""

    def __init__(self, redis_url: str, namespace: str | None = None) -> None:
        self.redis_url = redis_url
        self.namespace = namespace
        # Made on each worker as it starts (setup), closed as it stops.
        self.cache: lingodoc.RedisCache | None = None
        self.client: lingodoc.Client | None = None

    def setup(self, worker: Worker) -> None:
        self.cache = lingodoc.RedisCache(
            self.redis_url,
            namespace=self.namespace,
            ttl=30 * 86_400,  # seconds an entry is kept: a month
        )
        # The key and the service: from the worker's environment.
        self.client = lingodoc.Client(cache=self.cache)

    def teardown(self, worker: Worker) -> None:
        if self.client is not None:
            self.client.close()
        if self.cache is not None:
            self.cache.close()


def worker_client() -> lingodoc.Client:
    """The lingodoc client of the worker process this runs in."""
    plugin = get_worker().plugins.get(PLUGIN)
    if not isinstance(plugin, LingodocClient) or plugin.client is None:
        raise RuntimeError("register the LingodocClient plugin first")
    return plugin.client


def translate_partition(texts: pd.Series, target_language: str) -> pd.Series:
    """Translate one partition of a column; a missing value stays missing."""
    present = texts.dropna()
    if present.empty:
        return texts
    translations = worker_client().translate_many(
        present.tolist(),
        source_language="en",
        target_language=target_language,
        # A spent rate-limit window: wait for its reset, however long.
        wait_for_rate_limit=True,
    )
    translated = pd.Series(translations, index=present.index, name=texts.name)
    return translated.reindex(texts.index).astype(texts.dtype)


def translate_column(column: dd.Series, target_language: str) -> dd.Series:
    """The column translated, partition by partition, on the workers."""
    return column.map_partitions(
        translate_partition,
        target_language,
        meta=(column.name, column.dtype),  # strings in, strings out
    )


@contextmanager
def service() -> Iterator[Emulator | None]:
    """Point the workers at the service; yield the emulator, if it is one."""
    configured = ("LINGODOC_API_KEY", "LINGODOC_BASE_URL")
    if all(os.environ.get(name) for name in configured):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        yield None
        return

    emulator = Emulator()
    with emulator.serve() as server:
        print("No LINGODOC_API_KEY / LINGODOC_BASE_URL: using the emulator")
        # The workers, started after this, inherit the environment.
        os.environ["LINGODOC_API_KEY"] = server.api_key
        os.environ["LINGODOC_BASE_URL"] = server.base_url
        yield emulator


def main() -> None:
    redis_url = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
    phrases = ["Good morning", "Thank you", "Hello my friend", "Good night"]
    texts = [f"{phrases[n % 4]} {n % 500}" for n in range(2_000)]
    frame = dd.from_pandas(pd.DataFrame({"text": texts}), npartitions=8)

    with (
        service() as emulator,
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as dask,
    ):
        plugin = LingodocClient(redis_url, namespace="example")
        dask.register_plugin(plugin, name=PLUGIN)
        for run in (1, 2):
            seen = len(emulator.requests) if emulator else 0
            started = time.perf_counter()
            german = translate_column(frame["text"], "de").compute()
            seconds = time.perf_counter() - started
            # Requests are counted on the emulator only.
            sent = len(emulator.requests) - seen if emulator else None
            counted = "" if sent is None else f", {sent} requests"
            print(f"run {run}: {len(german)} texts in {seconds:.1f} s{counted}")
        print(f"{texts[1]!r} -> {german[1]!r}")


if __name__ == "__main__":
    main()
