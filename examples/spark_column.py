"""Translate a column of a Spark dataframe, with a cache in Redis: UNTESTED.

The Spark equivalent of examples/dask_column.py, with mapInPandas. lingodoc's
tests install neither Spark nor the Java it runs on: they only compile this
file, and have never run it.

Each partition makes one lingodoc.Client and sends its Arrow batches through
translate_many, which looks every text up in the shared RedisCache first and
sends only those that no executor has translated yet. The executors share one
API key: each reads LINGODOC_API_KEY and LINGODOC_BASE_URL from its own
environment (spark.executorEnv.LINGODOC_API_KEY, say), and paces itself on the
X-RateLimit-* headers of the answers it gets.

    pip install "lingodoc[redis]" pyspark pandas pyarrow
    REDIS_URL=redis://cache:6379/0 spark-submit examples/spark_column.py
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

import lingodoc

REDIS_URL = os.environ.get("REDIS_URL", "redis://localhost:6379/0")


def translate_partition(
    batches: Iterator[pd.DataFrame],
) -> Iterator[pd.DataFrame]:
    """Add text_de to each batch of one partition; a missing text stays so."""
    cache = lingodoc.RedisCache(
        REDIS_URL,
        namespace="example",
        ttl=30 * 86_400,  # seconds an entry is kept: a month
    )
    with cache, lingodoc.Client(cache=cache) as client:
        for batch in batches:
            present = batch["text"].dropna()
            translations: list[str] = []
            if len(present):
                translations = client.translate_many(
                    present.tolist(),
                    source_language="en",
                    target_language="de",
                    # A spent rate-limit window: wait for its reset.
                    wait_for_rate_limit=True,
                )
            german = pd.Series(translations, index=present.index, dtype=object)
            yield batch.assign(text_de=german.reindex(batch.index))


def main() -> None:
    spark = SparkSession.builder.appName("translate a column").getOrCreate()
    phrases = ["Good morning", "Thank you", "Hello my friend", "Good night"]
    texts = [f"{phrases[n % 4]} {n % 500}" for n in range(2_000)]
    frame = spark.createDataFrame(pd.DataFrame({"text": texts}))

    fields = [*frame.schema.fields, StructField("text_de", StringType())]
    german = frame.mapInPandas(translate_partition, schema=StructType(fields))
    german.show(5, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
