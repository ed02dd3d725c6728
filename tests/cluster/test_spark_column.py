"""examples/spark_column.py in Spark's local mode, on a real emulator server and redis-server.

The example's own SparkSession (``local[2]``, on 127.0.0.1) translates a column through its
``translate_column``, against the emulator served over HTTP, with a ``RedisCache`` on a
redis-server the tests start (tests/redis_server.py); its executors run the driver's Python.
Then the example runs as a user runs it, as a script.

Marked ``cluster``, like tests/cluster/test_dask_column.py: ``nox -s cluster`` installs pyspark
(the ``cluster`` group) and runs them; Spark needs Java 17 or newer, which .ci/run installs
(Debian's default-jre-headless). Under ``CI=true``, a missing pyspark, Java or redis-server
fails the tests instead of skipping them.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lingodoc.emulator import Emulator, EmulatorServer, translate_text
from tests.redis_server import RedisServer, require_redis_server, running_redis

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "spark_column.py"
NEEDED = ("pyspark", "pandas", "pyarrow")  # the `cluster` dependency group
TIMEOUT = 180  # seconds for the script to finish; starting Spark alone takes some 15
NAMESPACE = "spark-test"
TEXTS = 2_000
PARTITIONS = 4  # more than the two executor threads; each partition makes its own client
BATCH = 100  # translate_many's default batch size


def java() -> str | None:
    """The java that Spark starts: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which(str(Path(home, "bin", "java")) if home else "java")


def require_spark() -> ModuleType:
    """The example as a module; skip without pyspark or Java, but fail under CI."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        reason = f"{', '.join(missing)} not installed: nox -s cluster installs them"
    elif java() is None:
        reason = "no java (Spark runs on Java 17 or newer): apt-get install default-jre-headless"
    else:
        return importlib.import_module("examples.spark_column")
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; under CI the cluster tests must run, not be skipped")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    require_redis_server("the cluster tests")
    with running_redis() as server:
        yield server


@pytest.fixture
def served() -> Iterator[EmulatorServer]:
    """A fresh emulator over HTTP on loopback, which the environment points at.

    Spark's JVM is started after it: the executors' Python processes inherit that environment.
    """
    with Emulator().serve() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LINGODOC_API_KEY", server.api_key)
        patch.setenv("LINGODOC_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def spark(served: EmulatorServer) -> Iterator[Any]:
    """The example's local SparkSession; the variables it sets are restored after it."""
    recipe = require_spark()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PYSPARK_PYTHON", "SPARK_LOCAL_IP"):
            patch.setenv(name, "")  # local_spark() sets it; undone (or unset) after
        with recipe.local_spark() as session:
            yield session


def column() -> list[str | None]:
    """2,000 texts drawn from 800 (so most are repeated, across partitions too), some missing."""
    phrases = ["Good morning", "Thank you", "Hello my friend", "Good night", "Hello Bob"]
    pool = [f"{phrase} {n}" for n in range(160) for phrase in phrases]
    rng = random.Random(8)
    texts: list[str | None] = [rng.choice(pool) for _ in range(TEXTS)]
    for index in range(0, TEXTS, 250):
        texts[index] = None
    return texts


def test_a_column_is_translated_on_the_executors_then_wholly_from_the_cache(
    spark: Any, served: EmulatorServer, redis_server: RedisServer
) -> None:
    recipe = require_spark()
    texts = column()
    distinct = {text for text in texts if text is not None}
    rows = spark.sparkContext.parallelize([(text,) for text in texts], PARTITIONS)
    frame = spark.createDataFrame(rows, "text string")
    translated = recipe.translate_column(frame, "text", "de", redis_server.url, NAMESPACE)
    requests = served.emulator.requests

    first = translated.collect()
    sent = served.emulator.requests[len(requests) :]

    expected = [None if text is None else translate_text(text, "en", "de") for text in texts]
    assert [row.text for row in first] == texts
    assert [row.text_de for row in first] == expected
    # The executors ran the driver's Python (which has lingodoc), not the system's.
    pythons = spark.sparkContext.parallelize(range(2), 2).map(lambda _: sys.executable)
    assert set(pythons.collect()) == {sys.executable}
    # Over HTTP, in batches: each distinct text sent at least once, none sent twice by one
    # partition; every one of them stored in Redis, under the namespace.
    assert {(record.method, record.path, record.status) for record in sent} == {
        ("POST", "/v1/translate/batch", 200)
    }
    partitions = [{row.text for row in part} - {None} for part in frame.rdd.glom().collect()]
    assert len(partitions) == PARTITIONS
    most = sum(math.ceil(len(partition) / BATCH) for partition in partitions)
    assert math.ceil(len(distinct) / BATCH) <= len(sent) <= most
    stored = list(redis_server.admin.scan_iter(match=f"lingodoc:{NAMESPACE}:*", count=1000))
    assert len(stored) == len(distinct)

    # The same column again: every text found in the cache, not one request.
    before = len(served.emulator.requests)
    second = translated.collect()
    assert len(served.emulator.requests) == before
    assert second == first


def test_the_example_runs_as_a_script(redis_server: RedisServer) -> None:
    require_spark()
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("LINGODOC_", "PYTEST_", "PYSPARK_", "SPARK_"))
    }
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=ROOT,
        env={**environment, "REDIS_URL": redis_server.url},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    runs = re.findall(r"^run (\d): (\d+) texts in [\d.]+ s, (\d+) requests$", out, re.M)
    [(_, texts_1, requests_1), (_, texts_2, requests_2)] = runs
    assert (texts_1, texts_2) == ("2000", "2000")
    assert int(requests_1) >= 5  # 500 distinct texts, 100 a request
    assert requests_2 == "0"
    assert out.startswith("No LINGODOC_API_KEY / LINGODOC_BASE_URL: using the emulator\n")
    assert out.endswith("'Thank you 1' -> 'Danke du 1'\n")
    assert len(out.splitlines()) == 4
    # No warning from Python, no progress bar; Spark's JVM logs a few lines as it starts,
    # before the session sets the log level, and none after.
    assert not re.search(r"Traceback|Warning: |\[Stage", result.stderr), result.stderr
    _, level_set, after = result.stderr.partition('Setting Spark log level to "ERROR".')
    assert level_set, result.stderr
    assert after.strip() == "", result.stderr
