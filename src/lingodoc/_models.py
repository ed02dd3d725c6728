"""Typed results of the service and the rate-limit state, imported on first use (``_lazy``)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, AliasChoices, BaseModel, BeforeValidator, Field, StrictStr

if TYPE_CHECKING:
    import httpx
    from typing_extensions import Self


# An X-RateLimit-Reset this large can only be a Unix time; a smaller one is a delay.
_UNIX_TIME_THRESHOLD = 10**9


def _as_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


class TranslationState(str, Enum):
    """The states of a document translation job; each compares equal to its plain string.

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

    __str__ = str.__str__  # its value: "pending", not "TranslationState.PENDING"


def _whole_percent(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a percentage is a number, not a {type(value).__name__}")
    if not 0 <= value <= 100:  # also refuses NaN
        raise ValueError("a percentage is from 0 to 100")
    return round(value)


def _integer_id(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# Known states (in any case) become TranslationState members; unknown ones stay strings.
State = Annotated[
    TranslationState | StrictStr,
    Field(union_mode="left_to_right"),
    BeforeValidator(lambda value: value.lower() if isinstance(value, str) else value),
]
Percent = Annotated[int, BeforeValidator(_whole_percent)]
Id = Annotated[StrictStr, BeforeValidator(_integer_id)]


class RateLimit(BaseModel, frozen=True):
    """The rate-limit state a response reported in its ``X-RateLimit-*`` headers.

    Attributes:
        limit: Requests allowed in the period.
        remaining: Requests left in the period.
        reset: The raw ``X-RateLimit-Reset`` value.
        reset_at: When it resets: ``reset`` as a Unix time if above 10^9, else seconds from then.
    """

    limit: int
    remaining: int
    reset: int
    reset_at: datetime

    def __repr__(self) -> str:
        # Summed up, as the repr of an exception that carries it shows it.
        return (
            f"<RateLimit: {self.remaining:,} of {self.limit:,} left, "
            f"resets at {self.reset_at.isoformat()}>"
        )

    __str__ = __repr__


def reset_delay(reset: int, now: float) -> float:
    """Return the seconds from ``now`` until the reset an ``X-RateLimit-Reset`` value names."""
    return max(0.0, reset - now) if reset > _UNIX_TIME_THRESHOLD else float(max(reset, 0))


class Reported:
    """A response's ``X-RateLimit-*`` integers: a `RateLimit` built once if read (most are not)."""

    __slots__ = ("_raw", "_value")

    def __init__(self, limit: int, remaining: int, reset: int, now: float) -> None:
        self._raw: tuple[int, int, int, float] | None = (limit, remaining, reset, now)
        self._value: RateLimit | None = None

    @property
    def value(self) -> RateLimit | None:
        """The rate limit; ``None`` if its reset is a time no ``datetime`` holds."""
        if (raw := self._raw) is not None:  # two threads may both build it: either will do
            limit, remaining, reset, now = raw
            at = reset if reset > _UNIX_TIME_THRESHOLD else now + max(reset, 0)
            with contextlib.suppress(OverflowError, OSError, ValueError):  # else None
                reset_at = datetime.fromtimestamp(at, tz=timezone.utc)
                # Checked: pydantic's validation would cost more than the parsing.
                self._value = RateLimit.model_construct(
                    limit=limit, remaining=remaining, reset=reset, reset_at=reset_at
                )
            self._raw = None
        return self._value


@dataclass(slots=True, eq=False, repr=False)  # no repr: the id as sent may echo the key
class Origin:
    """The response a result came in; a copy or pickle drops it (its request holds the key).

    Each of the first three may be kept as given and made when first read: few ask for them.
    """

    _rate_limit: RateLimit | Reported | None
    _request_id: str | tuple[str, Callable[[str], str]] | None  # or (as sent, what masks it)
    _response: httpx.Response | tuple[Any, ...] | None = None  # or (what makes it, its arguments)
    cache_hits: int = 0  # the translations of the result the cache held (none were sent)

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate limit its response reported."""
        rate_limit = self._rate_limit
        return rate_limit.value if isinstance(rate_limit, Reported) else rate_limit

    @property
    def request_id(self) -> str | None:
        """Its response's ``X-Request-Id``, masked (servers echo headers too)."""
        request_id = self._request_id
        if isinstance(request_id, tuple):
            sent, redact = request_id
            request_id = self._request_id = redact(sent)
        return request_id

    @property
    def response(self) -> httpx.Response | None:
        """The response, its body read."""
        response = self._response
        if isinstance(response, tuple):
            make, *arguments = response
            response = self._response = make(*arguments)
        return response

    def counted(self, cache_hits: int) -> Origin:
        """This origin, its response included, with ``cache_hits`` translations from the cache."""
        return Origin(self._rate_limit, self._request_id, self._response, cache_hits)

    def __reduce__(self) -> tuple[type[Origin], tuple[RateLimit | None, str | None, None, int]]:
        # Used by pickle, copy.copy and copy.deepcopy (so pydantic's deep copy).
        return (Origin, (self.rate_limit, self.request_id, None, self.cache_hits))


class _Result(BaseModel, extra="allow"):
    """A result; the rate limit, request id and response are properties, not fields."""

    # A slot, not a pydantic private attribute (set up on every validation); not annotated,
    # or type checkers would take it for a field the constructor requires.
    __slots__ = ("_origin",)

    # Pydantic copies nothing of the slot: copies and pickles get the Origin without response.
    def _with_origin(self, copied: Self) -> Self:
        set_origin(copied, copy.copy(origin_of(self)))  # without its response: Origin.__reduce__
        return copied

    def __copy__(self) -> Self:
        return self._with_origin(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        return self._with_origin(super().__deepcopy__(memo))

    def __getstate__(self) -> dict[Any, Any]:
        return {**super().__getstate__(), "_origin": origin_of(self)}

    def __setstate__(self, state: dict[Any, Any]) -> None:
        origin = state.pop("_origin", _NO_ORIGIN)
        super().__setstate__(state)
        set_origin(self, origin)

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state the response reported; ``None`` if unreadable or no response."""
        return origin_of(self).rate_limit

    @property
    def request_id(self) -> str | None:
        """The response's ``X-Request-Id``, to quote to support; ``None`` if none or no response."""
        return origin_of(self).request_id

    @property
    def http_response(self) -> httpx.Response | None:
        """The ``httpx.Response`` this result was read from, its body read (decompressed).

        Its ``.request`` holds the API key: never log that request's headers. ``None`` for a
        result built by hand, copied, unpickled, carried by an exception, or from the cache.
        """
        return origin_of(self).response


def origin_of(result: _Result) -> Origin:
    """The origin of ``result``: where it came from (none for one built by hand)."""
    try:
        return _get_origin(result)
    except AttributeError:  # built by hand, not read from a response
        return _NO_ORIGIN


_NO_ORIGIN = Origin(None, None)


# The slot's own accessors: pydantic's __setattr__ takes only fields.
_get_origin: Callable[[_Result], Origin] = _Result.__dict__["_origin"].__get__
set_origin: Callable[[_Result, Origin], None] = _Result.__dict__["_origin"].__set__


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

    @property
    def cached(self) -> bool:
        """Whether the client's cache held it (no request was sent then)."""
        return origin_of(self).cache_hits > 0


class BatchTranslation(_Result):
    """The translations of a batch.

    Attributes:
        translations: One translation per input text, in input order.
    """

    translations: list[StrictStr]

    @property
    def cached(self) -> bool:
        """Whether the client's cache held every translation (no request was sent then)."""
        return origin_of(self).cache_hits == len(self.translations) > 0

    @property
    def cache_hits(self) -> int:
        """How many translations came from the client's cache (0 without one).

        When some but not all did, the rest came in one request for the texts missed:
        ``request_id``, ``rate_limit`` and ``http_response`` are that request's.
        """
        return origin_of(self).cache_hits


class TranslationJob(_Result):
    """A document translation job, as started; pass it to ``wait_for_translation``.

    Attributes:
        document_id: The document being translated.
        translation_id: The job's id, all ``get_translation`` or ``wait_for_translation`` need.
        status: Its state when started, usually ``processing`` (a str if not a known state).
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
        status: A [`TranslationState`][lingodoc.TranslationState], or the string of an unknown one.
        progress: How far it is, in percent from 0 to 100 (rounded; 0 if none was sent).
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
    """A stored document; any field the service sends beyond these is an attribute too.

    Attributes:
        document_id: The document's id (also read from a field ``id``; an integer as its string).
        name: Its name. This field and the two below are ``None`` when the service omits them.
        created_at: When it was stored.
        language: The ISO 639-1 code of its language.
    """

    document_id: Id = Field(validation_alias=AliasChoices("document_id", "id"))
    name: StrictStr | None = None
    created_at: UTCDateTime | None = None
    language: StrictStr | None = None
