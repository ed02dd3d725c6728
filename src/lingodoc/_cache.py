"""The translation cache: its protocol, the key of a text, and how a client consults it.

A key is a SHA-256 digest of all that changes a translation: the service (its base URL as
httpx normalises it, port included), the JSON body sent without the text (languages, style
and every ``extra_body`` field), the ``extra_query`` parameters and the text, exactly.
Headers are left out: they carry tracing ids. The namespace is the store's own
(`SQLiteCache`, `RedisCache`), folded into what it stores.

A value stored is its key's first `SEAL` hex digits, then the translation; other digits (a
desynced Redis reply, rows swapped) make it a miss. A slice of a SHA-256 digest is enough:
another key of ours shares it with a chance of 2**-64.

Stores raise; `CacheUse` alone logs a failure, backs off and sees the recovery, and the call
goes on: a paid translation is never lost for the cache's sake. Neither counts in ``timeout``.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from lingodoc import _callbacks, _clock, _endpoints, _lazy, _validation
from lingodoc._exceptions import ConfigurationError
from lingodoc._logging import logger

if TYPE_CHECKING:
    from lingodoc._endpoints import Call
    from lingodoc._models import BatchTranslation, TextTranslation


# Changed when what goes into a key changes: old entries are then misses, never wrong.
_KEY_VERSION = "lingodoc-cache-2"
SEAL = 16  # hex digits of its key at the start of each value stored
PLAIN = ("get_many", "set_many")  # a Cache's methods, which a client calls (not awaits)
# Fields of the body that are the text itself, not its context.
_TEXT_FIELDS = ("text", "texts")


class Cache(Protocol):
    """What `Client` and `AsyncClient` take as ``cache=``: two methods, each for many keys.

    A key is a 64-character hex digest; a value the translation after the key's first 16
    digits, which the client adds and checks. `SQLiteCache` and `RedisCache` are two; a dict
    is enough for a third (see the text guide).

    A store that fails raises: the client logs it (a warning, then quietly until the store
    works again) and goes on without it. A store with a ``retry_after`` attribute (seconds,
    as `RedisCache` has) is not asked again for that long after a failure.
    """

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        """Return the translations stored for ``keys``.

        Args:
            keys: Cache keys, a request's worth.

        Returns:
            The translations found, by key; a key not found is left out.

        Raises:
            Exception: Any: the client logs it and sends the texts.
        """
        ...

    def set_many(self, items: Mapping[str, str]) -> None:
        """Store new translations.

        Args:
            items: Translations by cache key, a request's worth.

        Raises:
            Exception: Any: the client logs it and returns the translations.
        """
        ...


class AsyncCache(Protocol):
    """The async twins of `Cache`'s methods, which an `AsyncClient` awaits when a cache has them.

    Without them, an `AsyncClient` calls ``get_many`` and ``set_many`` in a worker thread.
    """

    async def aget_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        """Return the translations stored for ``keys``.

        Args:
            keys: Cache keys, a request's worth.

        Returns:
            The translations found, by key; a key not found is left out.

        Raises:
            Exception: Any: the client logs it and sends the texts.
        """
        ...

    async def aset_many(self, items: Mapping[str, str]) -> None:
        """Store new translations.

        Args:
            items: Translations by cache key, a request's worth.

        Raises:
            Exception: Any: the client logs it and returns the translations.
        """
        ...


def service_of(base_url: str) -> str:
    """The service in a key: the base URL as httpx normalises it, its port always written."""
    url = httpx.URL(base_url)
    port = url.port or {"http": 80, "https": 443}.get(url.scheme, 0)
    return f"{url.scheme}://{url.host}:{port}{url.path}"


# The key of each text of a call: the digest of the call's context, continued with the text.
Keys = Callable[[str], str]


def keys_of(service: str, call: Call[Any], params: httpx.QueryParams | None) -> Keys | None:
    """The keys of ``call``'s texts (``params``: the http client's); ``None``: sent uncached."""
    body = {name: value for name, value in call.json.items() if name not in _TEXT_FIELDS}
    query = list(params.multi_items()) if params else []
    if (options := call.options) is not None:
        if options.body is not None:
            if any(name in options.body for name in _TEXT_FIELDS):
                return None  # what is translated is not the text asked for
            body.update(options.body)
        if options.query is not None:
            query += options.query.multi_items()
    # By name only: the values of a repeated name keep their order, which the service sees.
    query.sort(key=lambda item: item[0])
    try:
        # JSON escapes every control character: the NUL after it cannot be in it.
        context = json.dumps(
            [_KEY_VERSION, service, body, query],
            ensure_ascii=False, sort_keys=True, separators=(",", ":"),
        )  # fmt: skip
    except TypeError:  # an extra_body mapping with keys of mixed types: httpx sends it as is
        return None
    digest = hashlib.sha256(context.encode("utf-8", "surrogatepass") + b"\0")

    def key(text: str) -> str:
        continued = digest.copy()
        continued.update(text.encode("utf-8", "surrogatepass"))  # as exact as the text
        return continued.hexdigest()

    return key


def check_use(value: object) -> bool:
    """A call's ``cache=``, which must be a bool: whether it consults the client's cache."""
    if not isinstance(value, bool):
        raise _validation.wrong_type("cache", "a bool", value)
    return value


class CacheUse:
    """A client's cache: a failure is logged, and the store left alone for its ``retry_after``."""

    def __init__(self, cache: object, *, awaits: bool) -> None:
        def has(*methods: str) -> bool:
            return all(callable(getattr(cache, method, None)) for method in methods)

        asynchronous = awaits and has("aget_many", "aset_many")
        # A class, not one made of it: its get_many is a function still to be given the cache.
        a_class = isinstance(cache, type) and inspect.isfunction(getattr(cache, "get_many", None))
        if a_class or not (asynchronous or has(*PLAIN)):
            needs = "get_many and set_many" + (" (or aget_many and aset_many)" if awaits else "")
            given = (
                f"the class {getattr(cache, '__name__', '')}" if a_class else type(cache).__name__
            )
            raise ConfigurationError(
                f"cache must be an object with the methods {needs}, such as "
                f'lingodoc.SQLiteCache("translations.db"), not {given}'
            )
        if not asynchronous and any(_callbacks.is_async(getattr(cache, m)) for m in PLAIN):
            raise ConfigurationError(  # they would hand the client a coroutine, not translations
                f"the get_many and set_many of {type(cache).__name__} must not be async: name "
                "async ones aget_many and aset_many, which an AsyncClient awaits"
            )
        self.cache: Any = cache
        self._async = asynchronous
        retry_after = getattr(cache, "retry_after", None)  # seconds added to a clock: checked
        self._retry_after = _validation.seconds(
            retry_after or 0, "the cache's retry_after", zero=True, error=ConfigurationError
        )
        self._lock = threading.Lock()  # a client's threads share it
        # What failed ("lookup" or "store"), warned: quiet until that works again (a lookup
        # that works says nothing of a store that keeps failing on a full disk).
        self._failing: str | None = None
        self._retry_at = -math.inf  # monotonic: no call asks the cache before it
        self._strays_told = False  # values of other keys found: logged once

    def look_up(self, keys: Sequence[str]) -> dict[str, str]:
        """Return the translations the cache holds for ``keys``; none if it fails."""
        if self._may_try():
            with self._guard("lookup"):
                return self._checked(keys, self.cache.get_many(keys))
        return {}

    async def async_look_up(self, keys: Sequence[str]) -> dict[str, str]:
        """`look_up`, awaited."""
        if self._may_try():
            with self._guard("lookup"):
                return self._checked(keys, await self._awaited("get_many", keys))
        return {}

    def keep(self, items: Mapping[str, str]) -> None:
        """Store ``items``; a failure is logged."""
        if self._may_try():
            with self._guard("store"):
                self.cache.set_many(_sealed(items))

    async def async_keep(self, items: Mapping[str, str]) -> None:
        """`keep`, awaited."""
        if self._may_try():
            with self._guard("store"):
                await self._awaited("set_many", _sealed(items))

    def _checked(self, keys: Sequence[str], found: Mapping[str, Any]) -> dict[str, str]:
        if not isinstance(found, Mapping):  # said in the log, not as a missing .get
            raise TypeError(f"get_many returned {type(found).__name__}, not a mapping of keys")
        # Only the keys asked for, with a str sealed with the key's digits: all else is a miss.
        hits = {
            key: value[SEAL:]
            for key in keys
            if isinstance(value := found.get(key), str) and value[:SEAL] == key[:SEAL]
        }
        if len(hits) < len(found) and not self._strays_told:
            with self._lock:
                told, self._strays_told = self._strays_told, True
            if not told:
                logger.warning(
                    "the cache returned values that are not those of the keys asked for (a "
                    "store out of step, or its entries changed): none is served, their texts "
                    "are sent and stored anew"
                )
        return hits

    async def _awaited(self, method: str, argument: object) -> Any:
        if self._async:
            return await getattr(self.cache, f"a{method}")(argument)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(getattr(self.cache, method), argument)

    def _may_try(self) -> bool:
        # Once a failure's wait is over, the first call tries alone: the others wait on.
        now = _clock.current().monotonic()
        with self._lock:
            if now < self._retry_at:
                return False
            if self._failing:
                self._retry_at = now + self._retry_after
            return True

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            with self._lock:
                self._retry_at = _clock.current().monotonic() + self._retry_after
                starts, self._failing = self._failing is None, what
            (logger.warning if starts else logger.debug)(
                "the cache's %s failed (%s: %s); the translations are sent and returned "
                "without it%s",
                what, type(exc).__name__, exc,
                f", and it is not asked for {self._retry_after:g} s" if self._retry_after else "",
            )  # fmt: skip
        else:
            with self._lock:
                ends = self._failing == what
                self._retry_at = -math.inf  # the rest of the call may use it (its store)
                if ends:
                    self._failing = None
            if ends:
                logger.info("the cache works again: translations are looked up and stored")


def _sealed(items: Mapping[str, str]) -> dict[str, str]:
    return {key: key[:SEAL] + translation for key, translation in items.items()}


class Consulted:
    """A ``translate(_batch)`` call once the cache was asked: ``call`` is what is left to send."""

    __slots__ = ("_found", "_keys", "call", "template")

    def __init__(
        self, template: Call[Any], texts: list[str], keys: list[str], found: dict[str, str]
    ) -> None:
        self.template, self._keys, self._found = template, keys, found
        missing = [text for text, key in zip(texts, keys, strict=True) if key not in found]
        # found holds the keys asked for alone (CacheUse._checked): none found, all sent.
        self.call: Call[Any] | None = None if found else template
        if found and missing:
            body = template.json
            self.call = _endpoints.batch(
                missing, body["source_language"], body["target_language"], template.options
            )

    def entries(self, result: TextTranslation | BatchTranslation) -> dict[str, str]:
        """The translations of the texts sent, by key, to store."""
        sent = [key for key in self._keys if key not in self._found]
        if isinstance(result, _lazy.BatchTranslation):
            return dict(zip(sent, result.translations, strict=True))
        return {sent[0]: result.translated_text}  # the one text, sent alone

    def result(self, result: Any) -> Any:
        """The call's result: the service's, the cache's, or the two merged (a batch)."""
        found = self._found
        if not found:
            return result  # every text sent
        body = self.template.json
        if "text" in body:  # the one text, found: nothing was sent
            merged: TextTranslation | BatchTranslation = _lazy.TextTranslation.model_construct(
                translated_text=found[self._keys[0]],
                source_language=body["source_language"],
                target_language=body["target_language"],
            )
        else:  # in input order, found or sent
            sent = iter(() if result is None else result.translations)
            translations = [found[key] if key in found else next(sent) for key in self._keys]
            merged = _lazy.BatchTranslation.model_construct(translations=translations)
        # The request's, for the texts missed; none if every text was found.
        origin = _lazy.Origin(None, None) if result is None else _lazy.origin_of(result)
        _lazy.set_origin(merged, origin.counted(sum(key in found for key in self._keys)))
        return merged
