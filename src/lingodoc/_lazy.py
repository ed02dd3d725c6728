"""The pydantic models, imported on first access (``_lazy.TextTranslation``), not on import.

pydantic costs about as much to import as httpx: a ``--help`` or an unused client skips it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lingodoc._models import BatchTranslation as BatchTranslation
    from lingodoc._models import Document as Document
    from lingodoc._models import Origin as Origin
    from lingodoc._models import RateLimit as RateLimit
    from lingodoc._models import Reported as Reported
    from lingodoc._models import TextTranslation as TextTranslation
    from lingodoc._models import TranslationJob as TranslationJob
    from lingodoc._models import TranslationState as TranslationState
    from lingodoc._models import TranslationStatus as TranslationStatus
    from lingodoc._models import origin_of as origin_of
    from lingodoc._models import set_origin as set_origin

NAMES = frozenset({
    "BatchTranslation", "Document", "Origin", "RateLimit", "Reported", "TextTranslation",
    "TranslationJob", "TranslationState", "TranslationStatus", "origin_of", "set_origin",
})  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from lingodoc import _models

    value = globals()[name] = getattr(_models, name)  # read once: later reads skip this
    return value
