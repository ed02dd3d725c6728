"""lingodoc.RedisCache, against a real redis-server that this module starts (never a fake).

The tests that need the server are marked ``redis``: the suite leaves them out by default
(pyproject.toml's addopts), for a machine without Redis; CI runs them apart, with
``python -m pytest -m redis -n 0``, after installing Debian's redis-server. Under ``CI=true``
a missing redis-server fails them rather than skipping them. The tests that need no server
(the URL's masking, the missing extra, a Redis that is down or never answers) run everywhere.

The async tests run ``[sync]``, ``[async]`` (redis.asyncio on asyncio) and ``[async-trio]``
(the sync methods in a worker thread): tests/conftest.py's pytest_generate_tests. A failing
Redis raises; how a client goes on without it (one warning, ``retry_after``, the recovery) is
checked through Client and AsyncClient on the in-process emulator, the backoff on the fake
clock of tests/conftest.py; an entry's expiry with PTTL.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import socket
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lingodoc
from lingodoc._redis_cache import RedisCache
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock
from tests import test_cache_integrity as integrity
from tests.conftest import call
from tests.redis_server import RedisServer, free_port, require_redis_server, running_redis
from tests.reliability.test_environment import in_child  # a forked child, reporting back
from tests.waiting import PATIENCE

PASSWORD = "hunter2-never-shown"
NAMESPACE = "acct:7"
K1, K2, K3 = "1" * 64, "ab" * 32, "f" * 64
LANGS = {"source_language": "en", "target_language": "de"}


# redis-server, started by the tests (tests/redis_server.py) -------------------------------


@pytest.fixture
def redis_installed() -> None:
    """For a test that starts a redis-server of its own (running_redis)."""
    require_redis_server()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    require_redis_server()
    with running_redis() as server:
        yield server


@pytest.fixture
def server(redis_server: RedisServer) -> RedisServer:
    """The module's redis-server, emptied, its command counts reset."""
    redis_server.admin.flushall()
    redis_server.admin.config_resetstat()
    return redis_server


# Servers that do not work -------------------------------------------------------------------


class SilentServer:
    """Accepts connections (the kernel does, into its backlog) and never answers.

    After PATIENCE it closes them all: a client that never gives up then fails (with a
    ConnectionError, not the Timeout expected) instead of hanging the test run.
    """

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._socket.setblocking(False)
        self.port = int(self._socket.getsockname()[1])
        self._accepted: list[socket.socket] = []
        self._closing = threading.Timer(PATIENCE, self.close)
        self._closing.daemon = True
        self._closing.start()

    def connections(self) -> int:
        """The connections made to it so far (each kept open, never answered)."""
        while True:
            try:
                accepted, _ = self._socket.accept()
            except BlockingIOError:
                return len(self._accepted)
            self._accepted.append(accepted)

    def close(self) -> None:
        self._closing.cancel()
        for accepted in self._accepted:
            accepted.close()
        self._socket.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


# Both flavours ------------------------------------------------------------------------------


@pytest.fixture
def flavour(request: pytest.FixtureRequest) -> str:
    """ "sync" or "async", on asyncio and trio (tests/conftest.py: pytest_generate_tests)."""
    return str(request.param)


@pytest.fixture
async def make(anyio_backend: str) -> AsyncIterator[Callable[..., RedisCache]]:
    """Make caches; each is closed after the test, in the test's event loop (aclose)."""
    made: list[RedisCache] = []

    def making(*args: Any, **kwargs: Any) -> RedisCache:
        cache = RedisCache(*args, **kwargs)
        made.append(cache)
        return cache

    yield making
    for cache in made:
        await cache.aclose()


async def get(cache: RedisCache, flavour: str, keys: Sequence[str]) -> Mapping[str, str]:
    if flavour == "sync":
        return cache.get_many(keys)
    return await cache.aget_many(keys)


async def put(cache: RedisCache, flavour: str, items: Mapping[str, str]) -> None:
    if flavour == "sync":
        cache.set_many(items)
    else:
        await cache.aset_many(items)


def records(caplog: pytest.LogCaptureFixture, level: int = logging.DEBUG) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lingodoc" and r.levelno >= level]


# The URL's password is never shown --------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:hunter2-never-shown@host:6379/0", "redis://:****@host:6379/0"),
        ("redis://app:hunter2-never-shown@cache.internal:6380/2", "redis://app:****@cache.internal:6380/2"),
        ("rediss://default:hunter2%2Dnever%2Dshown@host/0", "rediss://default:****@host/0"),
        ("unix:///run/redis.sock?db=1&password=hunter2-never-shown", "unix:///run/redis.sock?db=1&password=****"),
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://app@host/0", "redis://app@host/0"),
        ("redis://host/0?client_name=app@host", "redis://host/0?client_name=app@host"),
    ],
)  # fmt: skip
def test_repr_shows_the_url_with_its_password_masked(url: str, expected: str) -> None:
    cache = RedisCache(url, namespace=NAMESPACE)
    assert repr(cache) == f"RedisCache(url={expected!r}, namespace={NAMESPACE!r}, ttl=None)"
    assert PASSWORD not in str(cache)
    cache.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://:hunter2-never-shown@localhost:6379/0",  # not a Redis scheme
        "redis://:hunter2-never-shown@localhost:99999/0",  # port out of range
        "redis://:hunter2-never-shown@localhost:port/0",  # port not a number
        "redis://:hunter2-never-shown@[::1/0",  # an IPv6 address not closed
        "redis://:hunter2-never-shown@localhost/0?db=first",  # a query value of the wrong type
        "redis://localhost/0?password=hunter2-never-shown&socket_timeout=x",
        "redis://:hunter2%2Dnever%2Dshown@localhost:99999/0",  # the password percent-encoded
        "redis://:hunter2/never-shown@localhost:6379/0",  # a "/" in it not percent-encoded
        "redis://app:hunter2/never-shown@localhost:6379/0",
    ],
)
def test_a_bad_url_is_a_configuration_error_that_never_shows_the_password(url: str) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as raised:
        RedisCache(url)
    error = raised.value
    shown = [str(error), repr(error), "".join(traceback.format_exception(error))]
    for text in shown:
        assert "hunter2" not in text
    assert "****" in str(error)
    assert "redis-py refuses the URL" in str(error)


def test_without_redis_py_the_error_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis: ImportError
    with pytest.raises(lingodoc.ConfigurationError, match=r'pip install "lingodoc\[redis\]"'):
        RedisCache()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ttl": 0}, "ttl must be a finite number of seconds, more than 0"),
        ({"ttl": -5}, "ttl must be a finite number of seconds, more than 0"),
        ({"ttl": float("inf")}, "ttl must be a finite number of seconds"),
        ({"ttl": 0.0001}, "ttl must be at least 0.001 seconds"),
        ({"ttl": "60"}, "ttl must be a finite number of seconds, .*, not '60'"),
        ({"ttl": True}, "ttl must be a finite number of seconds, .*, not True"),
        ({"socket_timeout": 0}, "socket_timeout must be a finite number of seconds, more than 0"),
        ({"socket_timeout": float("nan")}, "socket_timeout must be a finite number"),
        ({"retry_after": -1}, "retry_after must be a finite number of seconds, 0 or more"),
        ({"namespace": ""}, "namespace must not be empty: give None for no namespace"),
        ({"namespace": 7}, "namespace must be a str or None, not 7"),
        ({"url": b"redis://localhost"}, "url must be a str, not bytes"),
    ],
)
def test_options_out_of_range_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match=message.replace("(", r"\(")):
        RedisCache(**options)


@pytest.mark.parametrize(
    "options",
    [
        {"ttl": 10**400},  # float() of it: OverflowError
        {"socket_timeout": 10**400},
        {"retry_after": 10**400},
        {"ttl": 1e300},  # a PX Redis refuses: every store would fail
        {"socket_timeout": 1e300},  # past what a socket waits: every call would fail
    ],
)
def test_seconds_too_large_are_refused_as_configuration_errors(options: dict[str, Any]) -> None:
    name = next(iter(options))
    with pytest.raises(lingodoc.ConfigurationError, match=f"^{name} must be a finite number of"):
        RedisCache(**options)


HEX_KEY = st.text("0123456789abcdef", min_size=64, max_size=64)
# Keys that are nearly digests: each way a fast check of many at once might let one through.
NEAR_KEYS = st.one_of(
    HEX_KEY,
    HEX_KEY.map(str.upper),
    HEX_KEY.map(lambda key: key[:-1]),
    HEX_KEY.map(lambda key: key + "0"),
    st.tuples(HEX_KEY, st.integers(0, 63), st.sampled_from(" \t\nG:\u0663\u00e9A")).map(
        lambda made: made[0][: made[1]] + made[2] + made[0][made[1] + 1 :]
    ),
    st.text(max_size=70),
)


def test_keys_are_refused_exactly_when_one_is_not_64_lowercase_hex_digits() -> None:
    cache = RedisCache(f"redis://127.0.0.1:{free_port()}/0")  # checked before it connects

    @settings(max_examples=100, deadline=None)
    @given(keys=st.lists(NEAR_KEYS, min_size=1, max_size=6))
    def check(keys: list[str]) -> None:
        try:
            cache.get_many(keys)
            refused = False
        except lingodoc.InvalidArgument:
            refused = True
        except ConnectionError:  # checked, then sent: nothing listens there
            refused = False
        assert refused == (not all(re.fullmatch("[0-9a-f]{64}", key) for key in keys))

    try:
        check()
    finally:
        cache.close()


def test_retry_after_may_be_zero() -> None:
    RedisCache(retry_after=0).close()


async def test_a_key_that_is_not_a_digest_is_refused(
    flavour: str, make: Callable[..., RedisCache]
) -> None:
    cache = make(f"redis://127.0.0.1:{free_port()}/0")
    for key in ["1" * 63, "A" * 64, "g" * 64, "1" * 65, f"{'1' * 63}:"]:
        with pytest.raises(lingodoc.InvalidArgument, match="64 lowercase hex characters"):
            await get(cache, flavour, [key])
        with pytest.raises(lingodoc.InvalidArgument, match="64 lowercase hex characters"):
            await put(cache, flavour, {key: "text"})
    with pytest.raises(lingodoc.InvalidArgument, match="must be a str, not b'text'"):
        await put(cache, flavour, {K1: b"text"})  # type: ignore[dict-item]


# A Redis that is down or never answers --------------------------------------------------------


async def test_a_refused_connection_raises_a_connection_error_that_masks_the_password(
    flavour: str, make: Callable[..., RedisCache]
) -> None:
    port = free_port()
    cache = make(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", socket_timeout=0.5)
    for operation in (get(cache, flavour, [K1, K2]), put(cache, flavour, {K1: "Hallo"})):
        with pytest.raises(ConnectionError) as raised:
            await operation
        message = str(raised.value)
        assert message.startswith(
            f"Redis at redis://:****@127.0.0.1:{port}/0 failed (ConnectionError: "
            f"Error {errno.ECONNREFUSED} connecting to 127.0.0.1:{port}"
        )
        shown = "".join(traceback.format_exception(raised.value))
        assert PASSWORD not in shown


async def test_a_server_that_never_answers_is_cut_at_the_socket_timeout(
    flavour: str, make: Callable[..., RedisCache], silent: SilentServer
) -> None:
    cache = make(f"redis://127.0.0.1:{silent.port}/0", socket_timeout=0.25)
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="Timeout"):
        await get(cache, flavour, [K1])
    assert time.monotonic() - started >= 0.2  # it waited for an answer, then gave up
    assert silent.connections() == 1  # no second try


# A client's cache in Redis, while Redis fails: CacheUse logs once, backs off, recovers.


@pytest.fixture
def emulator() -> Emulator:
    return Emulator()


def cache_records(caplog: pytest.LogCaptureFixture, level: int = logging.DEBUG) -> list[str]:
    """What the client logged of its cache (its requests left out)."""
    return [message for message in records(caplog, level) if "the cache" in message]


async def test_a_client_leaves_a_silent_redis_alone_for_retry_after(
    emulated: Any,
    make: Callable[..., RedisCache],
    silent: SilentServer,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = make(f"redis://127.0.0.1:{silent.port}/0", socket_timeout=0.25, retry_after=30)
    client = emulated.with_options(cache=cache)
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        first = await call(client, "translate", "Hello", **LANGS)
        assert silent.connections() == 1  # the lookup; the store is not tried
        warned = cache_records(caplog)
        assert len(warned) == 1
        assert "Timeout" in warned[0]
        assert "it is not asked for 30 s" in warned[0]
        # Within retry_after: no call tries Redis (none connects, none logs).
        clock.advance(29.9)
        again = await call(client, "translate_batch", ["Hello", "World"], **LANGS)
        assert silent.connections() == 1
        assert cache_records(caplog) == warned
        # Then one try, which fails again: the same outage, no second warning.
        clock.advance(0.1)
        await call(client, "translate", "Hello", **LANGS)
        assert silent.connections() == 2
        await call(client, "translate", "Hello", **LANGS)  # and it waits again
        assert silent.connections() == 2
    assert len(cache_records(caplog, logging.WARNING)) == 1
    assert (first.cached, again.translations[0]) == (False, first.translated_text)


async def test_on_trio_the_async_methods_run_the_sync_ones_in_a_worker_thread(
    anyio_backend: str, make: Callable[..., RedisCache], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = make(f"redis://127.0.0.1:{free_port()}/0")
    threads: list[tuple[str, threading.Thread]] = []

    def spy(name: str) -> Callable[..., Any]:
        method = getattr(cache, name)

        def called(*args: Any) -> Any:
            threads.append((name, threading.current_thread()))
            return method(*args)

        return called

    monkeypatch.setattr(cache, "get_many", spy("get_many"))
    monkeypatch.setattr(cache, "set_many", spy("set_many"))
    with pytest.raises(ConnectionError):  # nothing listens
        await cache.aget_many([K1])
    with pytest.raises(ConnectionError):
        await cache.aset_many({K1: "Hallo"})
    if anyio_backend == "trio":
        assert [name for name, _ in threads] == ["get_many", "set_many"]
        assert all(thread is not threading.current_thread() for _, thread in threads)
    else:  # redis.asyncio, in the event loop
        assert threads == []


# Against a real redis-server --------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.parametrize("namespace", [NAMESPACE, None])
async def test_translations_are_stored_under_the_namespaced_key_and_found_again(
    flavour: str, make: Callable[..., RedisCache], server: RedisServer, namespace: str | None
) -> None:
    cache = make(server.url, namespace=namespace)
    texts = {K1: "Hallo Welt", K2: "Grüße, 你好 🎉 and a lone surrogate \ud800"}
    await put(cache, flavour, texts)
    assert await get(cache, flavour, [K1, K2, K3]) == texts
    prefix = "lingodoc:" if namespace is None else f"lingodoc:{namespace}:"
    assert sorted(server.admin.keys("*")) == [f"{prefix}{K1}".encode(), f"{prefix}{K2}".encode()]
    assert server.admin.get(f"{prefix}{K1}") == b"Hallo Welt"
    assert server.admin.get(f"{prefix}{K2}") == texts[K2].encode("utf-8", "surrogatepass")
    assert server.admin.ttl(f"{prefix}{K1}") == -1  # no ttl: no expiry
    # Another namespace is another cache.
    other = make(server.url, namespace="acct:8")
    assert await get(other, flavour, [K1, K2]) == {}


@pytest.mark.redis
@pytest.mark.parametrize(("ttl", "least", "most"), [(60, 59_000, 60_000), (0.25, 1, 250)])
async def test_a_ttl_expires_each_entry_that_long_after_it_is_stored(
    flavour: str,
    make: Callable[..., RedisCache],
    server: RedisServer,
    ttl: float,
    least: int,
    most: int,
) -> None:
    cache = make(server.url, ttl=ttl)
    await put(cache, flavour, {K1: "Hallo", K2: "Welt"})
    for key in (K1, K2):
        assert least <= server.admin.pttl(f"lingodoc:{key}") <= most


@pytest.mark.redis
async def test_a_lookup_is_one_mget_and_a_store_one_mset(
    flavour: str, make: Callable[..., RedisCache], server: RedisServer
) -> None:
    cache = make(server.url)
    await put(cache, flavour, {K1: "a", K2: "b", K3: "c"})
    assert await get(cache, flavour, [K1, K2, K3]) == {K1: "a", K2: "b", K3: "c"}
    assert (server.calls("mset"), server.calls("mget"), server.calls("set")) == (1, 1, 0)
    assert server.calls("get") == server.calls("multi") == server.calls("exec") == 0


@pytest.mark.redis
async def test_with_a_ttl_a_store_is_set_commands_without_a_transaction(
    flavour: str, make: Callable[..., RedisCache], server: RedisServer
) -> None:
    cache = make(server.url, ttl=60)
    await put(cache, flavour, {K1: "a", K2: "b", K3: "c"})
    assert (server.calls("set"), server.calls("mset")) == (3, 0)
    assert server.calls("multi") == server.calls("exec") == 0


@pytest.mark.redis
async def test_nothing_is_sent_for_no_keys(
    flavour: str, make: Callable[..., RedisCache], server: RedisServer
) -> None:
    cache = make(server.url)
    before = server.connections_received()
    assert await get(cache, flavour, []) == {}
    await put(cache, flavour, {})
    assert server.connections_received() == before
    assert server.calls("mget") == server.calls("set") == server.calls("mset") == 0


@pytest.mark.redis
async def test_a_value_that_is_not_utf8_is_a_miss(
    flavour: str, make: Callable[..., RedisCache], server: RedisServer
) -> None:
    server.admin.set(f"lingodoc:{K1}", b"\xff\xfe not ours")
    server.admin.set(f"lingodoc:{K2}", b"ours")
    assert await get(make(server.url), flavour, [K1, K2]) == {K2: "ours"}


@pytest.mark.redis
async def test_values_swapped_under_the_client_are_sent_again_never_served(
    emulated: Any,
    emulator: Emulator,
    make: Callable[..., RedisCache],
    server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = emulated.with_options(cache=make(server.url))

    def swap() -> None:  # each pair of TEXTS given the other's value, by another client
        for first, second in zip(integrity.TEXTS[::2], integrity.TEXTS[1::2], strict=True):
            names = [f"lingodoc:{integrity.key_of(first)}", f"lingodoc:{integrity.key_of(second)}"]
            values = server.admin.mget(names)
            server.admin.mset(dict(zip(names, reversed(values), strict=True)))

    await integrity.served_right_after(client, emulator, caplog, swap)
    before = integrity.sent(emulator)
    assert await integrity.each_method(client) == integrity.EXPECTED
    assert integrity.sent(emulator) == before  # stored anew, each under its own key


@pytest.mark.redis
async def test_a_redis_that_comes_back_is_used_again_after_retry_after(
    emulated: Any,
    make: Callable[..., RedisCache],
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    redis_installed: None,
) -> None:
    port = free_port()
    cache = make(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", retry_after=10)
    client = emulated.with_options(cache=cache)
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        await call(client, "translate", "Hello", **LANGS)  # down: refused
        warned = cache_records(caplog, logging.WARNING)
        assert len(warned) == 1
        assert f"Redis at redis://:****@127.0.0.1:{port}/0 failed" in warned[0]
        with running_redis(port) as server:
            server.admin.config_set("requirepass", PASSWORD)
            server.admin.auth(PASSWORD)
            received = server.connections_received()
            # Up, but within retry_after: not tried.
            await call(client, "translate", "Hello", **LANGS)
            assert server.connections_received() == received
            clock.advance(10)
            await call(client, "translate", "Hello", **LANGS)  # looked up, missed, stored
            assert len(server.admin.keys("lingodoc:*")) == 1
            assert (await call(client, "translate", "Hello", **LANGS)).cached
            back = [m for m in cache_records(caplog, logging.INFO) if "works again" in m]
            assert back == ["the cache works again: translations are looked up and stored"]
        # Down again: a new outage, a new warning.
        clock.advance(10)
        assert not (await call(client, "translate", "Hello", **LANGS)).cached
        await call(client, "translate", "Hello", **LANGS)
    assert len(cache_records(caplog, logging.WARNING)) == 2
    assert not any(PASSWORD in message for message in records(caplog))


@pytest.mark.redis
async def test_a_wrong_password_goes_on_without_the_cache_and_is_never_shown(
    emulated: Any,
    make: Callable[..., RedisCache],
    caplog: pytest.LogCaptureFixture,
    redis_installed: None,
) -> None:
    with running_redis() as server:
        server.admin.config_set("requirepass", "the-right-one")
        cache = make(f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0")
        client = emulated.with_options(cache=cache)
        with caplog.at_level(logging.DEBUG, logger="lingodoc"):
            translated = await call(client, "translate", "Hello", **LANGS)
        with pytest.raises(ConnectionError, match="AuthenticationError") as raised:
            cache.get_many([K1])
    assert translated.translated_text
    warned = cache_records(caplog, logging.WARNING)
    assert len(warned) == 1
    assert "AuthenticationError" in warned[0]
    assert not any(PASSWORD in message for message in records(caplog))
    assert PASSWORD not in "".join(traceback.format_exception(raised.value))


@pytest.mark.redis
async def test_close_releases_the_connections_and_the_cache_connects_again_after(
    flavour: str, server: RedisServer
) -> None:
    alone = server.clients()  # the admin's connection
    async with RedisCache(server.url) as cache:
        await put(cache, flavour, {K1: "Hallo"})
        assert server.clients() == alone + 1
    assert server.wait_clients(alone) == alone
    assert await get(cache, flavour, [K1]) == {K1: "Hallo"}
    await cache.aclose()
    assert server.wait_clients(alone) == alone
    with RedisCache(server.url) as cache:
        assert cache.get_many([K1]) == {K1: "Hallo"}
        assert server.clients() == alone + 1
    assert server.wait_clients(alone) == alone


@pytest.mark.redis
def test_each_event_loop_has_a_client_of_its_own(server: RedisServer) -> None:
    cache = RedisCache(server.url)
    errors: list[BaseException] = []

    async def work(name: str) -> None:
        try:
            for index in range(20):
                key = f"{name}{index:02d}".ljust(64, "0")
                await cache.aset_many({key: f"{name} {index}"})
                assert await cache.aget_many([key]) == {key: f"{name} {index}"}
        finally:
            await cache.aclose()

    def in_a_loop_of_its_own(name: str) -> None:
        try:
            asyncio.run(work(name))
        except BaseException as exc:
            errors.append(exc)

    before = server.connections_received()
    threads = [threading.Thread(target=in_a_loop_of_its_own, args=(n,)) for n in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    asyncio.run(work("d"))  # and a loop after them, in this thread
    assert errors == []
    assert server.connections_received() - before >= 4
    assert len(server.admin.keys("lingodoc:*")) == 80
    cache.close()


@pytest.mark.redis
def test_threads_share_one_cache(server: RedisServer) -> None:
    with RedisCache(server.url) as cache:
        found: dict[str, Mapping[str, str]] = {}

        def work(name: str) -> None:
            keys = [f"{name}{index:02d}".ljust(64, "0") for index in range(50)]
            for key in keys:
                cache.set_many({key: key[:3]})
            found[name] = cache.get_many(keys)

        threads = [threading.Thread(target=work, args=(n,)) for n in "abcdef"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert sorted(found) == list("abcdef")
    for name, translations in found.items():
        assert len(translations) == 50
        assert all(value == key[:3] and key.startswith(name) for key, value in translations.items())


# fork -----------------------------------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.parametrize("child_flavour", ["sync", "async"])
def test_a_forked_child_uses_connections_of_its_own(
    server: RedisServer, child_flavour: str
) -> None:
    with RedisCache(server.url, namespace=NAMESPACE) as cache:
        cache.set_many({K1: "parent"})
        assert cache.get_many([K1]) == {K1: "parent"}  # the parent's connection, pooled
        before = server.connections_received()

        def child() -> dict[str, str]:
            # Celery prefork, gunicorn: the child goes on with the parent's cache object.
            if child_flavour == "sync":
                with cache:  # closed in the child too: the parent's connection stays open
                    cache.set_many({K2: "child"})
                    return dict(cache.get_many([K1, K2]))

            async def work() -> dict[str, str]:
                async with cache:
                    await cache.aset_many({K2: "child"})
                    return dict(await cache.aget_many([K1, K2]))

            return asyncio.run(work())

        assert in_child(child) == {K1: "parent", K2: "child"}
        # The child opened one connection; the parent's still works, and was not replaced.
        assert server.connections_received() == before + 1
        assert cache.get_many([K1, K2]) == {K1: "parent", K2: "child"}
        assert server.connections_received() == before + 1
