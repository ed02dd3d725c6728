"""examples/dask_column.py on a real cluster, a real emulator server and a real redis-server.

A ``dask.distributed.LocalCluster`` of two worker processes (one thread each), listening on
127.0.0.1, translates a column through the example's worker plugin and ``translate_column``,
against the emulator served over HTTP, with a ``RedisCache`` on a redis-server the tests
start (tests/redis_server.py). Then the example runs as a user runs it, as a script.

The module is marked ``cluster``: the suite leaves it out by default (pyproject.toml's
addopts), as Dask is a test dependency of its own (the ``cluster`` group); ``nox -s cluster``
installs it and runs ``pytest -m cluster -n 0``, and .ci/run runs that session. Under
``CI=true``, a missing Dask or redis-server fails the tests instead of skipping them.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import os
import random
import re
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
EXAMPLE = ROOT / "examples" / "dask_column.py"
NEEDED = ("dask", "distributed", "pandas")  # the `cluster` dependency group
TIMEOUT = 120  # seconds for one computation on the cluster, or for the script to finish
NAMESPACE = "cluster-test"
TEXTS = 2_000
BATCH = 100  # translate_many's default batch size


def require_dask() -> ModuleType:
    """The example as a module; skip without Dask, but fail under CI, where it must run."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        reason = f"{', '.join(missing)} not installed: nox -s cluster installs them"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; under CI the cluster tests must run, not be skipped")
        pytest.skip(reason)
    # Imported by name, not run from its path: the workers unpickle its functions by it.
    return importlib.import_module("examples.dask_column")


@pytest.fixture(scope="module")
def recipe() -> ModuleType:
    return require_dask()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    require_redis_server("the cluster tests")
    with running_redis() as server:
        yield server


@pytest.fixture
def served() -> Iterator[EmulatorServer]:
    """A fresh emulator over HTTP on loopback, which the environment points at.

    The cluster's worker processes are started after it: they inherit that environment.
    """
    with Emulator().serve() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LINGODOC_API_KEY", server.api_key)
        patch.setenv("LINGODOC_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def dask_client(recipe: ModuleType, redis_server: RedisServer, served: EmulatorServer) -> Any:
    """A client of a LocalCluster of two worker processes, each with the example's plugin."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster, timeout=TIMEOUT) as client,
    ):
        client.wait_for_workers(2, timeout=TIMEOUT)
        workers = client.scheduler_info()["workers"]
        addresses = [cluster.scheduler_address, *workers]
        assert all(address.startswith("tcp://127.0.0.1:") for address in addresses), addresses
        plugin = recipe.LingodocClient(redis_server.url, namespace=NAMESPACE)
        client.register_plugin(plugin, name=recipe.PLUGIN)
        yield client


def column() -> list[str | None]:
    """2,000 texts drawn from 800 (so most are repeated, across partitions too), some missing."""
    rng = random.Random(8)
    phrases = ["Good morning", "Thank you", "Hello my friend", "Good night", "Hello Bob"]
    pool = [f"{phrase} {n}" for n in range(160) for phrase in phrases]
    texts: list[str | None] = [rng.choice(pool) for _ in range(TEXTS)]
    for index in range(0, TEXTS, 250):
        texts[index] = None
    return texts


def test_a_column_is_translated_on_the_workers_then_wholly_from_the_cache(
    recipe: ModuleType, dask_client: Any, served: EmulatorServer, redis_server: RedisServer
) -> None:
    import dask.dataframe as dd
    import distributed
    import pandas as pd

    texts = column()
    distinct = {text for text in texts if text is not None}
    frame = dd.from_pandas(pd.DataFrame({"text": texts}), npartitions=10)
    translated = recipe.translate_column(frame["text"], "de")
    requests = served.emulator.requests

    with distributed.get_task_stream(client=dask_client) as tasks:
        first = dask_client.compute(translated).result(timeout=TIMEOUT)
    sent = served.emulator.requests[len(requests) :]

    expected = [None if text is None else translate_text(text, "en", "de") for text in texts]
    assert [None if pd.isna(value) else value for value in first.tolist()] == expected
    assert first.index.tolist() == list(range(TEXTS))
    # Both worker processes translated partitions, each through its own client.
    workers = {task["worker"] for task in tasks.data if "translate_partition" in str(task["key"])}
    assert len(workers) == 2, tasks.data
    # Over HTTP, in batches: each distinct text sent at least once, none sent twice by one
    # partition; every one of them stored in Redis, under the namespace.
    assert {(record.method, record.path, record.status) for record in sent} == {
        ("POST", "/v1/translate/batch", 200)
    }
    bounds = [*frame.divisions[:-1], TEXTS]  # the first index of each partition, and the end
    partitions = [set(texts[start:end]) - {None} for start, end in itertools.pairwise(bounds)]
    most = sum(math.ceil(len(partition) / BATCH) for partition in partitions)
    assert math.ceil(len(distinct) / BATCH) <= len(sent) <= most
    stored = list(redis_server.admin.scan_iter(match=f"lingodoc:{NAMESPACE}:*", count=1000))
    assert len(stored) == len(distinct)

    # The same column again: every text found in the cache, not one request.
    before = len(served.emulator.requests)
    second = dask_client.compute(translated).result(timeout=TIMEOUT)
    assert len(served.emulator.requests) == before
    pd.testing.assert_series_equal(second, first)


def test_the_example_runs_as_a_script(redis_server: RedisServer) -> None:
    require_dask()
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("LINGODOC_", "PYTEST_"))
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
    assert result.stderr == ""
    out = result.stdout
    assert out.startswith("No LINGODOC_API_KEY / LINGODOC_BASE_URL: using the emulator\n")
    runs = re.findall(r"^run (\d): (\d+) texts in [\d.]+ s, (\d+) requests$", out, re.M)
    [(_, texts_1, requests_1), (_, texts_2, requests_2)] = runs
    assert (texts_1, texts_2) == ("2000", "2000")
    assert int(requests_1) >= 5  # 500 distinct texts, 100 a request
    assert requests_2 == "0"
    assert out.endswith("'Thank you 1' -> 'Danke du 1'\n")
