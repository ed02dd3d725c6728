"""Translate a column of a Spark dataframe, with a cache in Redis.

The Spark equivalent of examples/dask_column.py, with mapInPandas. Each
partition makes one lingodoc.Client and sends its Arrow batches through
translate_many, which looks every text up in the shared RedisCache first and
sends only those that no executor has translated yet.

The executors share one API key: each reads LINGODOC_API_KEY and
LINGODOC_BASE_URL from its own environment (the key never travels with the
tasks), and paces itself on the X-RateLimit-* headers of the answers it gets.

    pip install "lingodoc[redis]" "pyspark[sql]>=4.0"  # and Java 17 or newer
    REDIS_URL=redis://localhost:6379/0 python examples/spark_column.py

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are
set, and otherwise starts the emulator on a free loopback port; in Spark's local
mode, on two executor threads (on yours: its master URL, and lingodoc installed
in the Python that PYSPARK_PYTHON names on every executor).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType

import lingodoc
from lingodoc.emulator import Emulator

Batches = Iterator[pd.DataFrame]


def translate_column(
    frame: DataFrame,
    column: str,
    target_language: str,
    redis_url: str,
    namespace: str,
) -> DataFrame:
    """The frame with `{column}_{target_language}` added, on the executors."""
    translated = f"{column}_{target_language}"

    def translate_partition(batches: Batches) -> Batches:
        """Each Arrow batch of one partition; a missing text stays missing."""
        cache = lingodoc.RedisCache(
            redis_url,
            namespace=namespace,
            ttl=30 * 86_400,  # seconds an entry is kept: a month
        )
        # The key and the service: from the executor's environment.
        with cache, lingodoc.Client(cache=cache) as client:
            for batch in batches:
                present = batch[column].dropna()
                translations: list[str] = []
                if not present.empty:
                    translations = client.translate_many(
                        present.tolist(),
                        source_language="en",
                        target_language=target_language,
                        # A spent rate-limit window: wait for its reset.
                        wait_for_rate_limit=True,
                    )
                texts = pd.Series(translations, present.index, dtype=object)
                yield batch.assign(**{translated: texts.reindex(batch.index)})

    added = StructField(translated, StringType())
    schema = StructType([*frame.schema.fields, added])
    return frame.mapInPandas(translate_partition, schema=schema)


@contextmanager
def service() -> Iterator[Emulator | None]:
    """Point the executors at the service; yield the emulator, if it is one."""
    configured = ("LINGODOC_API_KEY", "LINGODOC_BASE_URL")
    if all(os.environ.get(name) for name in configured):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        yield None
        return

    emulator = Emulator()
    with emulator.serve() as server:
        print("No LINGODOC_API_KEY / LINGODOC_BASE_URL: using the emulator")
        # The executors, started after this, inherit the environment.
        os.environ["LINGODOC_API_KEY"] = server.api_key
        os.environ["LINGODOC_BASE_URL"] = server.base_url
        yield emulator


def local_spark() -> SparkSession:
    """Spark in local mode: two executor threads, on loopback only, quiet."""
    # The executors' Python: the driver's, with lingodoc (not the system's).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    return (
        SparkSession.builder.master("local[2]")
        .appName("translate a column")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .getOrCreate()
    )


def main() -> None:
    redis_url = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
    phrases = ["Good morning", "Thank you", "Hello my friend", "Good night"]
    texts = [f"{phrases[n % 4]} {n % 500}" for n in range(2_000)]

    with service() as emulator, local_spark() as spark:
        frame = spark.createDataFrame(pd.DataFrame({"text": texts}))
        german = translate_column(frame, "text", "de", redis_url, "example")
        for run in (1, 2):
            seen = len(emulator.requests) if emulator else 0
            started = time.perf_counter()
            rows = german.collect()
            seconds = time.perf_counter() - started
            # Requests are counted on the emulator only.
            sent = len(emulator.requests) - seen if emulator else None
            counted = "" if sent is None else f", {sent} requests"
            print(f"run {run}: {len(rows)} texts in {seconds:.1f} s{counted}")
        print(f"{texts[1]!r} -> {rows[1].text_de!r}")


if __name__ == "__main__":
    main()
