"""`RedisCache`: the translation cache in a Redis server, shared by processes and machines.

redis-py (the ``redis`` extra) is imported when a cache is made, never on ``import lingodoc``.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus

from lingodoc._exceptions import ConfigurationError, InvalidArgument, shown
from lingodoc._validation import LONGEST_WAIT, seconds

if TYPE_CHECKING:
    import asyncio

    import redis
    import redis.asyncio
    from typing_extensions import Self

_MASK = "****"
_TTL = 9_223_372_036  # seconds (292 years): Redis refuses a PX past its 64-bit clock
# A URL's password: after the first ":" of its user info, from "//" to the last "@" before
# the query or fragment. Wider than urllib.parse.urlsplit's (to the first "/"): a password
# with a "/" not percent-encoded (base64 has them) is still masked, though redis-py refuses it.
_PASSWORD = re.compile(r"^(?:[^:/?#]*:)?//[^?#:]*:(?P<password>[^?#]*)@")


def _masked(url: str) -> tuple[str, list[str]]:
    """A Redis URL as it may be shown, every password in it masked; and those passwords."""
    secrets: set[str] = set()
    found = _PASSWORD.match(url)
    if found is not None and (password := found["password"]):
        # Before a "/", the password is what urllib takes for the port, and quotes.
        secrets.update((password, unquote(password), password.partition("/")[0]))
        url = url[: found.start("password")] + _MASK + url[found.end("password") :]
    base, mark, query = url.partition("?")
    query, sharp, fragment = query.partition("#")
    parameters = query.split("&")
    for index, parameter in enumerate(parameters):
        name, equals, value = parameter.partition("=")
        # A password in the query is a secret too: redis-py passes it on.
        if equals and value and "password" in unquote_plus(name).lower():
            secrets.update((value, unquote_plus(value)))
            parameters[index] = f"{name}={_MASK}"
    url = f"{base}{mark}{'&'.join(parameters)}{sharp}{fragment}"
    # The longest first: a password may hold another (its decoded form, say).
    return url, sorted(filter(None, secrets), key=len, reverse=True)


class RedisCache:
    """A translation cache in Redis, for ``Client(cache=...)`` and ``AsyncClient(cache=...)``.

    Each value is a Redis string, UTF-8, under ``lingodoc:<namespace>:<key>``
    (``lingodoc:<key>`` without a namespace), ``<key>`` the client's 64-hex digest of a text.

    Redis never fails a translation: down, refusing, or silent past ``socket_timeout``, it
    makes a lookup or store raise ``ConnectionError``, every password masked; a client logs
    it (one warning an outage), goes on without the cache, and leaves Redis alone for
    ``retry_after`` seconds.

    The async methods use ``redis.asyncio`` on asyncio, a client for each event loop, and the
    sync ones in a worker thread on trio. One cache may be shared by threads and tasks, and
    across ``os.fork()``: a child opens connections of its own.

    Args:
        url: The Redis server: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://``
            for TLS, or ``unix://path?db=0``. Options in its query are redis-py's, and win
            over this class's (``socket_timeout=`` in it, say).
        namespace: Folded into every stored key, to keep apart the caches of accounts or
            workspaces sharing a Redis, or to start afresh after a change (a new version
            number); ``None``: no namespace.
        ttl: Seconds an entry is kept (stored with ``PX``, to the millisecond); ``None``: as
            long as Redis keeps it (its ``maxmemory-policy`` decides).
        socket_timeout: The longest wait in seconds, for a connection and for each answer
            (redis-py would wait forever by default).
        retry_after: Seconds after a failure during which a client does not ask Redis.

    Raises:
        ConfigurationError: If redis-py is not installed (``pip install "lingodoc[redis]"``),
            the URL is not one redis-py takes, or an option is out of range.
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        namespace: str | None = None,
        ttl: float | None = None,
        socket_timeout: float = 1.0,
        retry_after: float = 30.0,
    ) -> None:
        if not isinstance(url, str):
            raise ConfigurationError(f"url must be a str, not {type(url).__name__}")
        self._shown, self._secrets = _masked(url)
        if namespace is not None and not isinstance(namespace, str):
            raise ConfigurationError(f"namespace must be a str or None, not {shown(namespace)}")
        if namespace == "":
            raise ConfigurationError("namespace must not be empty: give None for no namespace")
        self._namespace = namespace
        self._prefix = "lingodoc:" if namespace is None else f"lingodoc:{namespace}:"
        checked = functools.partial(seconds, error=ConfigurationError)
        self._ttl = None if ttl is None else checked(ttl, "ttl", most=_TTL)
        if self._ttl is not None and self._ttl < 0.001:
            raise ConfigurationError(f"ttl must be at least 0.001 seconds (1 ms): {ttl!r}")
        wait = checked(socket_timeout, "socket_timeout", most=LONGEST_WAIT)
        self.retry_after: float = checked(retry_after, "retry_after", zero=True)
        """Seconds after a failure during which a client does not ask Redis."""
        import asyncio  # here: ``import lingodoc`` does not import it (redis-py does)

        try:
            import redis
            from redis.retry import Retry
        except ImportError as exc:
            raise ConfigurationError(
                'RedisCache needs redis-py: pip install "lingodoc[redis]"'
            ) from exc
        # asyncio's own timeout is no OSError before Python 3.11 (redis-py imports asyncio).
        self._errors = (redis.RedisError, OSError, asyncio.TimeoutError)
        self._raw_url = url
        self._options = {"socket_timeout": wait, "socket_connect_timeout": wait}
        self._client: redis.Redis = self._connect(redis.Redis, Retry)
        self._lock = threading.Lock()
        # The asyncio clients, one an event loop: redis.asyncio's connections belong to the
        # loop they were made in. A loop that is gone takes its entry with it.
        self._async_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, redis.asyncio.Redis
        ] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"RedisCache(url={self._shown!r}, namespace={self._namespace!r}, ttl={self._ttl!r})"

    def _connect(self, kind: Any, retry: Any) -> Any:
        from redis.backoff import NoBackoff

        try:
            # No retries of redis-py's own (with their sleeps): a failure backs off here instead.
            return kind.from_url(self._raw_url, retry=retry(NoBackoff(), 0), **self._options)
        except Exception as exc:
            raise ConfigurationError(
                f"RedisCache: redis-py refuses the URL {self._shown!r}: {self._scrubbed(exc)}"
            ) from None

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except self._errors as error:
            reason = self._scrubbed(error)
            raise ConnectionError(f"Redis at {self._shown} failed ({reason})") from None

    def _scrubbed(self, error: Exception) -> str:
        text = f"{type(error).__name__}: {error}"
        for secret in self._secrets:
            text = text.replace(secret, _MASK)
        return text

    def _names(self, keys: Sequence[str]) -> list[str]:
        """The Redis keys of ``keys``, checked: of fixed length, no namespace can blur them."""
        if not _all_keys(keys):
            wrong = next(key for key in keys if not _all_keys([key]))
            raise InvalidArgument(
                f"a cache key must be 64 lowercase hex characters, not {shown(wrong)}"
            )
        return [self._prefix + key for key in keys]

    def _entries(self, items: Mapping[str, str]) -> dict[str, bytes]:
        for key, value in items.items():
            if not isinstance(value, str):
                raise InvalidArgument(f"the translation of {key} must be a str, not {shown(value)}")
        # surrogatepass: any str the service's JSON can give comes back exactly.
        values = [value.encode("utf-8", "surrogatepass") for value in items.values()]
        return dict(zip(self._names(list(items)), values, strict=True))

    @staticmethod
    def _found(keys: Sequence[str], values: Sequence[object]) -> dict[str, str]:
        """The translations of an ``MGET``'s answer; a value not UTF-8 (not ours) is a miss."""
        found: dict[str, str] = {}
        for key, value in zip(keys, values, strict=True):
            if isinstance(value, bytes):
                with contextlib.suppress(UnicodeDecodeError):
                    found[key] = value.decode("utf-8", "surrogatepass")
        return found

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """Return the translations stored for ``keys``: one ``MGET``.

        Args:
            keys: Cache keys, each 64 lowercase hex characters.

        Returns:
            The translations found, by key; a key not found is left out.

        Raises:
            InvalidArgument: If a key is not 64 lowercase hex characters.
            ConnectionError: If Redis fails (its message masks the password).
        """
        names = self._names(keys)
        with self._failing():  # MGET of no key is an error of Redis
            return self._found(keys, self._client.mget(names) if names else [])

    def set_many(self, items: Mapping[str, str]) -> None:
        """Store translations: one ``MSET``, or with ``ttl`` a pipeline of ``SET ... PX``, no MULTI.

        Args:
            items: The translations, by cache key.

        Raises:
            InvalidArgument: If a key is not 64 lowercase hex characters, or a value not a str.
            ConnectionError: If Redis fails (its message masks the password).
        """
        if entries := self._entries(items):
            with self._failing():
                self._store(self._client, entries)

    def _store(self, client: Any, entries: dict[str, bytes]) -> Any:
        """``MSET``, or with ``ttl`` a pipeline of ``SET ... PX`` (awaitable on redis.asyncio)."""
        if self._ttl is None:
            return client.mset(entries)
        pipe = client.pipeline(transaction=False)  # reset by execute, failed or not
        for name, value in entries.items():
            pipe.set(name, value, px=round(self._ttl * 1000))  # 1 or more
        return pipe.execute()

    def _async_client(self) -> redis.asyncio.Redis | None:
        loop = _running_loop()
        if loop is None:  # not asyncio, so trio: anyio runs on nothing else
            return None
        with self._lock:
            client = self._async_clients.get(loop)
            if client is None:
                import redis.asyncio
                from redis.asyncio.retry import Retry

                client = self._async_clients[loop] = self._connect(redis.asyncio.Redis, Retry)
        return client

    async def aget_many(self, keys: Sequence[str]) -> dict[str, str]:
        """`get_many`, awaited: through ``redis.asyncio`` on asyncio, a worker thread on trio.

        Args:
            keys: Cache keys, each 64 lowercase hex characters.

        Returns:
            The translations found, by key; a key not found is left out.

        Raises:
            InvalidArgument: If a key is not 64 lowercase hex characters.
            ConnectionError: If Redis fails (its message masks the password).
        """
        client = self._async_client()
        if client is None:
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.get_many, keys)
        names = self._names(keys)
        with self._failing():
            return self._found(keys, await client.mget(names) if names else [])

    async def aset_many(self, items: Mapping[str, str]) -> None:
        """`set_many`, awaited: through ``redis.asyncio`` on asyncio, a worker thread on trio.

        Args:
            items: The translations, by cache key.

        Raises:
            InvalidArgument: If a key is not 64 lowercase hex characters, or a value not a str.
            ConnectionError: If Redis fails (its message masks the password).
        """
        client = self._async_client()
        if client is None:
            import anyio.to_thread

            await anyio.to_thread.run_sync(self.set_many, items)
        elif entries := self._entries(items):
            with self._failing():
                await self._store(client, entries)

    def close(self) -> None:
        """Release the sync connections (the async ones on trio); a later call connects again."""
        self._client.close()

    async def aclose(self) -> None:
        """Release the connections of the running event loop's client, then `close`.

        Call it (or use ``async with``) in each event loop that used the cache, before it ends.
        """
        loop = _running_loop()
        with self._lock:
            client = None if loop is None else self._async_clients.pop(loop, None)
        if client is not None:
            await client.aclose()
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _all_keys(keys: Sequence[str]) -> bool:
    """Whether every key is a SHA-256 digest in lowercase hex, all checked at once (fast)."""
    try:
        joined = "".join(keys)
        # Each 64 long, and hex that comes back the same (fromhex takes upper case, whitespace).
        return set(map(len, keys)) <= {64} and bytes.fromhex(joined).hex() == joined
    except (TypeError, ValueError):  # not str, or not hex
        return False
