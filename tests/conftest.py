"""Shared fixtures: every test runs against Client and AsyncClient alike, with a fake clock.

The async tests run under anyio's pytest plugin (``anyio_mode = "auto"``), on asyncio and on
trio: a test taking the ``client`` fixture runs three times, ``[sync]`` (``Client``, called
from an asyncio test), ``[async]`` (``AsyncClient`` on asyncio) and ``[async-trio]``; another
async test runs as ``[asyncio]`` and ``[trio]``. A test marked ``asyncio_only`` (one that
drives asyncio itself: its tasks, events, loops) runs on asyncio alone, and says why.

A module over real sockets marked ``aiohttp`` runs its ``client_class`` tests a fourth time,
``[aiohttp]``: ``AsyncClient(http_client=lingodoc.DefaultAioHttpClient())``, on asyncio
(aiohttp has no trio).
"""

from __future__ import annotations

import compileall
import functools
import inspect
import json
import os
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import respx

import lingodoc
from lingodoc import _deadline
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock, fake_clock

BASE_URL = "https://api.lingodoc.test/v1"
API_KEY = "ld_test_5ecret0key0never0shown0WXYZ"


def envelope(data: Any) -> dict[str, Any]:
    """A success envelope around ``data``."""
    return {"success": True, "data": data}


def failure(code: str, message: str = "it went wrong") -> dict[str, Any]:
    """A failure envelope."""
    return {"success": False, "error": {"code": code, "message": message}}


async def call(
    client: lingodoc.Client | lingodoc.AsyncClient, method: str, *args: Any, **kwargs: Any
) -> Any:
    """Call a client method and await the result if the client is async.

    This lets one test body check the same behaviour on both clients.
    """
    result = getattr(client, method)(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default SSL context, made once: each httpx client would load the CA bundle again."""
    return httpx.create_ssl_context()


def http_client_for(client_class: type[Any], **options: Any) -> httpx.Client | httpx.AsyncClient:
    """An httpx client of the kind ``client_class`` (Client or AsyncClient) takes."""
    kind = httpx.AsyncClient if issubclass(client_class, lingodoc.AsyncClient) else httpx.Client
    return kind(**{"verify": default_ssl_context(), **options})


def sent_json(route: respx.Route) -> Any:
    """The JSON body of the last request that reached ``route``."""
    return json.loads(route.calls.last.request.content)


def pool_of(client: lingodoc.Client | lingodoc.AsyncClient) -> Any:
    """What ``client``'s calls from this thread send through, closed with the client.

    The SDK's own transport (a ``Client``'s calls on the main thread have one of their
    own, built at their first call), or a ``DefaultAioHttpClient``; ``None`` for an
    ``http_client`` of yours, which the client never closes.
    """
    shared = client._shared
    main = threading.current_thread() is threading.main_thread()
    if isinstance(client, lingodoc.Client) and main and shared.new_transport is not None:
        return shared.main
    return shared.owned


async def close(client: lingodoc.Client | lingodoc.AsyncClient) -> None:
    """Close either kind of client."""
    if isinstance(client, lingodoc.AsyncClient):
        await client.aclose()
    else:
        client.close()


TRIO_TOO = ("asyncio", "trio")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject.toml) starts two workers per core, not one.

    Much of the suite waits on sockets, subprocesses and short real timeouts rather than
    computing, so a second worker per core keeps the cores busy meanwhile.
    """
    return 2 * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 4


def pytest_configure(config: pytest.Config) -> None:
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):  # once, not per worker
        # PYTHONDONTWRITEBYTECODE (many containers set it): each of the suite's some 190
        # Python subprocesses would compile lingodoc's sources again (~0.2 s each).
        compileall.compile_dir(Path(lingodoc.__file__).parent, quiet=1)
    config.addinivalue_line(
        "markers", "asyncio_only: the async test drives asyncio itself: not run on trio"
    )
    config.addinivalue_line(
        "markers", "aiohttp: over real sockets: client_class runs on DefaultAioHttpClient too"
    )


class AioHttpClient(lingodoc.AsyncClient):
    """``AsyncClient`` sending through a ``DefaultAioHttpClient`` unless given another."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("http_client") is None:
            kwargs["http_client"] = lingodoc.DefaultAioHttpClient()
        super().__init__(*args, **kwargs)


# Fixtures whose param, "sync" or "async", picks the client flavour under test.
FLAVOURED = ("client_class", "flavour", "emulated")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each async test on asyncio and trio; the sync run of a flavoured test on asyncio only."""
    async_test = "anyio_backend" in metafunc.fixturenames and not any(
        "anyio_backend" in marker.args[0]
        for marker in metafunc.definition.iter_markers("parametrize")
    )
    only_asyncio = metafunc.definition.get_closest_marker("asyncio_only") is not None
    # A plain test taking the (async) client fixture: its setup and teardown on asyncio.
    only_asyncio = only_asyncio or not inspect.iscoroutinefunction(metafunc.function)
    backends = ("asyncio",) if only_asyncio else TRIO_TOO
    flavoured = next((name for name in FLAVOURED if name in metafunc.fixturenames), None)
    if flavoured is not None:
        if not async_test:
            metafunc.parametrize(flavoured, ["sync", "async"], indirect=True)
            return
        runs = [("sync", "asyncio")] + [("async", backend) for backend in backends]
        ids = ["sync"] + [
            "async" if backend == "asyncio" else f"async-{backend}" for backend in backends
        ]
        if flavoured == "client_class" and metafunc.definition.get_closest_marker("aiohttp"):
            runs.append(("aiohttp", "asyncio"))
            ids.append("aiohttp")
        metafunc.parametrize((flavoured, "anyio_backend"), runs, ids=ids, indirect=[flavoured])
    elif async_test:
        metafunc.parametrize("anyio_backend", backends)


@pytest.fixture  # "sync" or "async", on asyncio and trio: pytest_generate_tests
async def emulated(request: pytest.FixtureRequest, emulator: Emulator) -> AsyncIterator[Any]:
    """A Client or AsyncClient in-process on the ``emulator`` fixture of the test's file."""
    if request.param == "sync":
        with emulator.client() as sync_client:
            yield sync_client
    else:
        async with emulator.async_client() as async_client:
            yield async_client


@pytest.fixture
def anyio_backend() -> str:
    """The backend of an async test: parametrised by pytest_generate_tests (this is a default)."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _leaves_the_thread_as_it_found_it() -> Iterator[None]:
    """Fail the test that leaves an attempt's deadline or a handled exception behind.

    Either would fail the tests that run after it in this worker, far from the cause.
    """
    yield
    assert _deadline.left() is None, "the test left the deadline of an attempt set"
    assert sys.exc_info()[1] is None, f"the test left {sys.exc_info()[1]!r} being handled"


@pytest.fixture(autouse=True)
def clock() -> Iterator[FakeClock]:
    """No test really sleeps: every wait of the SDK goes to this fake clock."""
    with fake_clock() as installed:
        yield installed


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "LINGODOC_API_KEY",
        "LINGODOC_BASE_URL",
        "LINGODOC_LOG",
        "LINGODOC_ALLOW_HTTP_HOST",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """A respx router standing in for the service at BASE_URL."""
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture
def client_class(
    request: pytest.FixtureRequest,
) -> type[lingodoc.Client] | type[lingodoc.AsyncClient]:
    """Client for the sync run of a test, AsyncClient for the async runs (pytest_generate_tests)."""
    return {"sync": lingodoc.Client, "async": lingodoc.AsyncClient, "aiohttp": AioHttpClient}[
        request.param
    ]


@pytest.fixture
async def client(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient],
    api: respx.MockRouter,
    anyio_backend: str,
) -> AsyncIterator[lingodoc.Client | lingodoc.AsyncClient]:
    """A client of the kind under test, talking to the respx router.

    It takes ``anyio_backend`` so that anyio's plugin runs it for a plain test too.
    """
    instance = client_class(API_KEY, base_url=BASE_URL)
    yield instance
    await close(instance)


def running_tasks() -> int:
    """The tasks running now, under asyncio or trio (the test's own and its runner's too).

    Compare the count before and after: a call that leaves a task behind raises it.
    Outside an async test, 0.
    """
    try:
        return len(anyio.get_running_tasks())
    except RuntimeError:  # sniffio's AsyncLibraryNotFoundError: not in an event loop
        return 0


async def cancelled_midway(
    run: Callable[[], Awaitable[object]], reached: anyio.Event, *, asyncio_task: bool = False
) -> None:
    """Start ``run()`` in a task and cancel it once ``reached`` is set; check it was cancelled.

    By default from a cancel scope, as anyio does it: a task cancelled (asyncio) or a
    nursery (trio). With ``asyncio_task``, by asyncio's own ``Task.cancel()``, as asyncio
    code cancels (on asyncio only).
    """
    if asyncio_task:
        import asyncio

        task = asyncio.ensure_future(run())
        with anyio.fail_after(10):
            await reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return
    outcome: list[str] = []

    async def running() -> None:
        try:
            await run()
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise
        outcome.append("returned")

    async with anyio.create_task_group() as group:
        group.start_soon(running)
        with anyio.fail_after(10):
            await reached.wait()
        group.cancel_scope.cancel()
    assert outcome == ["cancelled"]


def rate_limit_headers(
    limit: int = 1000, remaining: int = 999, reset: int = 3600
) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset),
    }


def response(status: int = 200, json: Any = None, **kwargs: Any) -> httpx.Response:
    return httpx.Response(status, json=json, **kwargs)
