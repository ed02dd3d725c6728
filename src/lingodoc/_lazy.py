"""The pydantic models, imported when first needed rather than by ``import lingodoc``.

Importing pydantic's model machinery and building the models costs about as much
as importing httpx (~40 ms). A script that imports lingodoc only to show its
``--help``, or a process that builds a client and never calls it, should not pay
for them. So the rest of the SDK reaches the models through this module, as
``_lazy.TextTranslation``: the first access imports ``lingodoc._models`` (under
Python's import lock, so threads that race for it are safe) and keeps the name
here, so every later access is a plain attribute read. ``lingodoc.TextTranslation``
and the other public names do the same through the package's ``__getattr__``.

Each model is built (its pydantic schema and validator) when it is first handed
out here, not when ``_models`` is imported: a first ``translate`` builds
``TextTranslation`` and ``RateLimit``, not the five models it does not use.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lingodoc._models import BatchTranslation as BatchTranslation
    from lingodoc._models import Document as Document
    from lingodoc._models import Origin as Origin
    from lingodoc._models import RateLimit as RateLimit
    from lingodoc._models import RateLimitHeaders as RateLimitHeaders
    from lingodoc._models import TextTranslation as TextTranslation
    from lingodoc._models import TranslationJob as TranslationJob
    from lingodoc._models import TranslationState as TranslationState
    from lingodoc._models import TranslationStatus as TranslationStatus
    from lingodoc._models import parse_rate_limit as parse_rate_limit
    from lingodoc._models import rate_limit_model as rate_limit_model
    from lingodoc._models import reset_delay as reset_delay
    from lingodoc._models import set_origin as set_origin

# What lingodoc exports from the models at its top level.
PUBLIC = frozenset(
    {
        "BatchTranslation",
        "Document",
        "RateLimit",
        "TextTranslation",
        "TranslationJob",
        "TranslationState",
        "TranslationStatus",
    }
)
NAMES = PUBLIC | {
    "Origin",
    "RateLimitHeaders",
    "parse_rate_limit",
    "rate_limit_model",
    "reset_delay",
    "set_origin",
}


# Held while a name is first handed out, so that one thread builds its model and the
# others wait for it: pydantic's deferred build is not safe to run twice at once (a
# thread could meanwhile validate with the base class's validator, pydantic#11849).
_lock = threading.RLock()


def _in_a_forked_child() -> None:
    global _lock  # another thread of the parent may have held it at the fork
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # POSIX only, as fork is
    os.register_at_fork(after_in_child=_in_a_forked_child)


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        from lingodoc import _models

        value = _models.ready(name)
        globals()[name] = value
    return value
