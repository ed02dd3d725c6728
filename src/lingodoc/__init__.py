"""lingodoc: the Python SDK of the lingodoc translation and document service.

>>> import lingodoc
>>> with lingodoc.Client() as client:                       # doctest: +SKIP
...     client.translate("Hello", source_language="en", target_language="de")

``Client`` blocks, ``AsyncClient`` awaits; both read
``LINGODOC_API_KEY`` and ``LINGODOC_BASE_URL``. Errors are subclasses of
``LingodocError``. ``lingodoc.testing`` makes waits instant in tests, and
``lingodoc.emulator`` runs a local stand-in for the service.
"""

import importlib as _importlib
import typing as _typing

from lingodoc import _lazy
from lingodoc._aiohttp import DefaultAioHttpClient
from lingodoc._async_client import AsyncClient
from lingodoc._bulk import BulkProgress
from lingodoc._cache import AsyncCache, Cache
from lingodoc._exceptions import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequest,
    ConfigurationError,
    InvalidArgument,
    InvalidArgumentType,
    InvalidLanguage,
    LingodocError,
    NotFound,
    PartialTranslations,
    RateLimited,
    ServerError,
    TextTooLong,
    TranslationFailed,
    Unauthorized,
    UnexpectedResponse,
    WaitTimeout,
)
from lingodoc._sync_client import Client
from lingodoc._version import __version__

if _typing.TYPE_CHECKING:
    from lingodoc._models import (
        BatchTranslation,
        Document,
        RateLimit,
        TextTranslation,
        TranslationJob,
        TranslationState,
        TranslationStatus,
    )
    from lingodoc._redis_cache import RedisCache
    from lingodoc._sqlite_cache import SQLiteCache

__all__ = [
    "APIConnectionError", "APIError", "APITimeoutError", "AsyncCache", "AsyncClient",
    "BadRequest", "BatchTranslation", "BulkProgress", "Cache", "Client", "ConfigurationError",
    "DefaultAioHttpClient", "Document", "InvalidArgument", "InvalidArgumentType",
    "InvalidLanguage", "LingodocError", "NotFound", "PartialTranslations", "RateLimit",
    "RateLimited", "RedisCache", "SQLiteCache", "ServerError", "TextTooLong",
    "TextTranslation", "TranslationFailed", "TranslationJob", "TranslationState",
    "TranslationStatus", "Unauthorized", "UnexpectedResponse", "WaitTimeout", "__version__",
]  # fmt: skip

# Exceptions and clients show as lingodoc.X in reprs and tracebacks, not as the private
# module that defines them. The models, not imported yet, keep theirs: pydantic resolves
# their annotations through it.
for _name in __all__:
    _obj = globals().get(_name)
    if isinstance(_obj, type):
        _obj.__module__ = __name__
del _name, _obj


# The caches, imported on first use: sqlite3 (or redis) is not loaded by a program without one.
_CACHES = {"RedisCache": "lingodoc._redis_cache", "SQLiteCache": "lingodoc._sqlite_cache"}


def __getattr__(name: str) -> object:
    """Import the models on first use: ``import lingodoc`` does not load pydantic's machinery."""
    if name in _CACHES:
        value = getattr(_importlib.import_module(_CACHES[name]), name)
        value.__module__ = __name__
    elif name in __all__:  # a model: the other public names are imported above
        value = getattr(_lazy, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
