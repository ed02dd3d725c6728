"""The pydantic models, imported when first needed rather than by ``import lingodoc``.

Importing pydantic costs about as much as importing httpx. A script that imports lingodoc
only to show its ``--help``, or a process that builds a client and never calls it, should
not pay for it. So the rest of the SDK reaches the models through this module, as
``_lazy.TextTranslation``: the first access imports ``lingodoc._models`` (under Python's
import lock, so threads that race for it are safe) and keeps the name here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lingodoc._models import BatchTranslation as BatchTranslation
    from lingodoc._models import Document as Document
    from lingodoc._models import Origin as Origin
    from lingodoc._models import RateLimit as RateLimit
    from lingodoc._models import TextTranslation as TextTranslation
    from lingodoc._models import TranslationJob as TranslationJob
    from lingodoc._models import TranslationState as TranslationState
    from lingodoc._models import TranslationStatus as TranslationStatus
    from lingodoc._models import parse_rate_limit as parse_rate_limit
    from lingodoc._models import set_origin as set_origin

# What lingodoc exports from the models at its top level.
PUBLIC = frozenset({
    "BatchTranslation", "Document", "RateLimit", "TextTranslation", "TranslationJob",
    "TranslationState", "TranslationStatus",
})  # fmt: skip
NAMES = PUBLIC | {"Origin", "parse_rate_limit", "set_origin"}


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from lingodoc import _models

    value = getattr(_models, name)
    globals()[name] = value
    return value
