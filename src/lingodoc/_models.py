"""Typed results of the service, and the rate-limit state.

Results accept fields they do not know (``extra="allow"``) and status values
they do not know, so a newer server never breaks an older SDK. Timestamps are
timezone-aware; one sent without an offset is read as UTC.

What the SDK reads is checked, though: a text (a translation, a language code,
a status) must be a JSON string, never a number turned into one (``NaN`` would
become the translation ``'nan'``); an id may be a string or an integer; a
progress is a number from 0 to 100.

``import lingodoc`` does not import this module (nor pydantic's model
machinery, which costs about as much as httpx to import): ``lingodoc._lazy``
imports it when a model is first needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, ClassVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictStr,
)

__all__ = [
    "BatchTranslation",
    "Document",
    "RateLimit",
    "TextTranslation",
    "TranslationJob",
    "TranslationState",
    "TranslationStatus",
]

# X-RateLimit-Reset is only "an integer indicating when the limit resets": a
# value this large can only be a Unix time; anything smaller is a delay.
_UNIX_TIME_THRESHOLD = 10**9


def _as_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


class TranslationState(str, Enum):
    """The states of a document translation job.

    A ``str`` enum: each member compares equal to its plain string.

    Attributes:
        PENDING: ``"pending"``: accepted, not started yet.
        PROCESSING: ``"processing"``: being translated; ``progress`` says how far.
        COMPLETED: ``"completed"``: done; ``completed_at`` says when.
        FAILED: ``"failed"``: ended without a translation; start a new one.
    """

    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


def _fold_case(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _whole_percent(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a percentage is a number, not a {type(value).__name__}")
    if not 0 <= value <= 100:  # also refuses NaN
        raise ValueError("a percentage is from 0 to 100")
    return round(value)


def _integer_id(value: object) -> object:
    # Some servers send numeric ids: an integer reads as the same id; a float (NaN,
    # 1e+20) or a boolean does not, and is left to the strict str validation to refuse.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# Known states become TranslationState members (whatever their case); unknown
# ones stay plain strings.
State = Annotated[
    TranslationState | StrictStr, Field(union_mode="left_to_right"), BeforeValidator(_fold_case)
]
# A number from 0 to 100 (a float is rounded); a missing one (null) reads as 0.
Percent = Annotated[int, BeforeValidator(_whole_percent)]
Id = Annotated[StrictStr, BeforeValidator(_integer_id)]


class RateLimit(BaseModel):
    """The rate-limit state a response reported in its ``X-RateLimit-*`` headers.

    Attributes:
        limit: Requests allowed in the period.
        remaining: Requests left in the period.
        reset: The raw ``X-RateLimit-Reset`` value.
        reset_at: When the period resets: ``reset`` read as a Unix time if
            above 10^9, else as seconds from when the response arrived.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

    limit: int
    remaining: int
    reset: int
    reset_at: datetime


def reset_delay(reset: int, now: float) -> float:
    """Return the seconds from ``now`` until the reset an ``X-RateLimit-Reset`` value names."""
    return max(0.0, reset - now) if reset > _UNIX_TIME_THRESHOLD else float(max(reset, 0))


_RATE_LIMIT_HEADERS = {
    b"x-ratelimit-limit": 0,
    b"x-ratelimit-remaining": 1,
    b"x-ratelimit-reset": 2,
}


def parse_rate_limit(headers: Iterable[tuple[bytes, bytes]], now: float) -> RateLimit | None:
    """Read the ``X-RateLimit-*`` headers; ``None`` unless all three are integers.

    Args:
        headers: The raw header list (``httpx.Headers.raw``): one pass over it
            costs half as much as three look-ups by name.
        now: The time the response arrived, for a reset given in seconds.
    """
    values: list[bytes | None] = [None, None, None]
    for name, value in headers:
        index = _RATE_LIMIT_HEADERS.get(name.lower())
        if index is not None:
            # A header sent twice is as unreadable as a malformed one.
            values[index] = value if values[index] is None else b"?"
    try:
        limit, remaining, reset = (int(value) for value in values)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    at = reset if reset > _UNIX_TIME_THRESHOLD else now + max(reset, 0)
    try:
        reset_at = datetime.fromtimestamp(at, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    # Validating four plain values is cheaper than model_construct (~0.9 us against ~2 us).
    return RateLimit(limit=limit, remaining=remaining, reset=reset, reset_at=reset_at)


class _Result(BaseModel):
    """A result of the service, which carries the rate limit of its response."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow")

    _rate_limit: RateLimit | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # Two results are equal when the service said the same thing; the
        # rate limit of the response that carried it does not count.
        if not isinstance(other, _Result):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state reported by the response this result came from."""
        return self._rate_limit


class TextTranslation(_Result):
    """The translation of one text.

    Attributes:
        translated_text: The translation.
        source_language: The ISO 639-1 code of the text.
        target_language: The ISO 639-1 code of the translation.
    """

    translated_text: StrictStr
    source_language: StrictStr
    target_language: StrictStr


class BatchTranslation(_Result):
    """The translations of a batch.

    Attributes:
        translations: One translation per input text, in input order.
    """

    translations: list[StrictStr]


class TranslationJob(_Result):
    """A document translation job, as returned when it is started.

    Pass it to ``wait_for_translation`` to wait for the result.

    Attributes:
        document_id: The document being translated.
        translation_id: The job's id: all it takes to find the translation
            again, with ``get_translation`` or ``wait_for_translation``.
        status: Its state when started, usually ``processing``: a
            [`TranslationState`][lingodoc.TranslationState], or the plain string
            of a state this SDK does not know.
        estimated_completion: When the service expects it to complete, if it said.
    """

    document_id: Id
    translation_id: Id
    status: State = TranslationState.PROCESSING
    estimated_completion: UTCDateTime | None = None


class TranslationStatus(_Result):
    """The state of a document translation job.

    Attributes:
        translation_id: The job's id.
        status: A [`TranslationState`][lingodoc.TranslationState], or the plain
            string of a state this SDK does not know.
        progress: How far it is, in percent (0 to 100; a fraction sent is
            rounded, none sent reads as 0).
        document_id: The document being translated, if the service said.
        target_language: The language it is translated into, if the service said.
        completed_at: When it completed; ``None`` until then.
    """

    translation_id: Id
    status: State
    progress: Percent = 0
    document_id: Id | None = None
    target_language: StrictStr | None = None
    completed_at: UTCDateTime | None = None


class Document(_Result):
    """A stored document: its id, and whatever else the service sends about it.

    The other fields (a ``name``, say) are attributes too.

    Attributes:
        document_id: The document's id (also read from a field named ``id``;
            an integer id is read as its string).
    """

    document_id: Id = Field(validation_alias=AliasChoices("document_id", "id"))
