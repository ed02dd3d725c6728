"""Typed results of the service, and the rate-limit state.

Results accept fields they do not know (``extra="allow"``) and status values
they do not know, so a newer server never breaks an older SDK. Timestamps are
timezone-aware; one sent without an offset is read as UTC.

What the SDK reads is checked, though: a text (a translation, a language code,
a status) must be a JSON string, never a number turned into one (``NaN`` would
become the translation ``'nan'``); an id may be a string or an integer; a
progress is a number from 0 to 100.

``import lingodoc`` does not import this module (nor pydantic, which costs about as much
as httpx to import): ``lingodoc._lazy`` imports it when a model is first needed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
)

if TYPE_CHECKING:
    import httpx
    from typing_extensions import Self


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


def parse_rate_limit(headers: httpx.Headers, now: float) -> RateLimit | None:
    """Read the ``X-RateLimit-*`` headers; ``None`` unless each is sent once, as an integer.

    Args:
        headers: The response's headers.
        now: The Unix time the response arrived, for a reset given in seconds.
    """
    values = [
        headers.get_list(name)
        for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")
    ]
    # A header missing, or sent twice (as unreadable as a malformed one): no rate limit.
    if any(len(value) != 1 for value in values):
        return None
    try:
        limit, remaining, reset = (int(value[0]) for value in values)
        at = reset if reset > _UNIX_TIME_THRESHOLD else now + max(reset, 0)
        reset_at = datetime.fromtimestamp(at, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):  # not an int, or a time no datetime holds
        return None
    # Four values checked here: validating them again would cost more than reading them.
    return RateLimit.model_construct(
        limit=limit, remaining=remaining, reset=reset, reset_at=reset_at
    )


class Origin:
    """The response a result was read from: its rate limit, request id and ``httpx.Response``.

    One per response, shared by every result read from it (all the documents of a
    listing). The response's request holds the API key (its ``Authorization`` header), so
    only the origin the SDK attached holds the response: a copy (``copy.copy``,
    ``copy.deepcopy``) or a pickle keeps the rate limit and the request id only.
    """

    __slots__ = ("_response", "rate_limit", "request_id")

    def __init__(
        self,
        rate_limit: RateLimit | None,
        request_id: str | None,
        response: httpx.Response | Callable[[], httpx.Response] | None = None,
    ) -> None:
        self.rate_limit = rate_limit
        self.request_id = request_id
        self._response = response  # or what makes it, when first asked for: few ask

    @property
    def response(self) -> httpx.Response | None:
        """The response, its body read."""
        if callable(self._response):
            self._response = self._response()
        return self._response

    def __reduce__(self) -> tuple[type[Origin], tuple[RateLimit | None, str | None]]:
        # What pickle, copy.copy and copy.deepcopy (so pydantic's deep copy) all use.
        return (Origin, (self.rate_limit, self.request_id))

    def __repr__(self) -> str:
        return f"Origin(request_id={self.request_id!r}, response={self.response!r})"


class _Result(BaseModel):
    """A result of the service, which carries the rate limit, request id and response it came in.

    Those three are properties, not fields: they are not part of ``==``,
    ``model_dump()``, ``model_dump_json()`` or the ``repr``.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow")

    # The Origin, in a slot of its own rather than a pydantic private attribute, which
    # pydantic would set up on every validation. Unset on a result built by hand.
    __slots__ = ("_origin",)
    if TYPE_CHECKING:
        _origin: Origin

    @property
    def _origin_or_none(self) -> Origin | None:
        try:
            return _get_origin(self)
        except AttributeError:  # built by hand, not read from a response
            return None

    def __eq__(self, other: object) -> bool:
        # Two results are equal when the service said the same thing; the
        # response that carried it does not count.
        if not isinstance(other, _Result):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]

    # A copy (copy.copy, model_copy()), a deep copy or a pickle keeps the rate limit and
    # request id, not the response (see Origin): pydantic copies none of the slot.

    def __copy__(self) -> Self:
        copied = super().__copy__()
        origin = self._origin_or_none
        if origin is not None:
            set_origin(copied, Origin(origin.rate_limit, origin.request_id))
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        origin = self._origin_or_none
        if origin is not None:
            set_origin(copied, Origin(origin.rate_limit, origin.request_id))
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        origin = self._origin_or_none
        if origin is not None:
            state["_origin"] = origin  # pickled without the response: see Origin.__reduce__
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        origin = state.pop("_origin", None)
        super().__setstate__(state)
        if origin is not None:
            set_origin(self, origin)

    @property
    def rate_limit(self) -> RateLimit | None:
        """The rate-limit state reported by the response this result came from.

        ``None`` if the response sent no readable ``X-RateLimit-*`` headers, or for a
        result you built yourself.
        """
        origin = self._origin_or_none
        return None if origin is None else origin.rate_limit

    @property
    def request_id(self) -> str | None:
        """The ``X-Request-Id`` of the response this result came from.

        The id to quote to the service's support, as an ``APIError``'s ``request_id``
        (and, like it, with any echo of the API key masked). Copies and pickles of the
        result keep it. ``None`` if the response sent none, or for a result you built
        yourself.
        """
        origin = self._origin_or_none
        return None if origin is None else origin.request_id

    @property
    def http_response(self) -> httpx.Response | None:
        """The ``httpx.Response`` this result was read from, for its status and headers.

        Its body is read: ``.content``, ``.text`` and ``.json()`` give what the
        service sent (decompressed) without another request; ``.status_code``,
        ``.headers``, ``.elapsed``, ``.http_version`` and ``.request`` (method, URL)
        are there too. The result keeps the response, body included, alive as
        long as it lives. The response's ``.request`` holds the API key, in its
        ``Authorization`` header: do not log its headers.

        ``None`` for a result you built, and for a copy (``copy.copy``,
        ``copy.deepcopy``, ``model_copy()``) or an unpickled result, which keep
        ``request_id`` and ``rate_limit`` but never the response, and with it the key.
        Also ``None`` for the status an exception carries
        (``TranslationFailed.status``, ``WaitTimeout.status``).
        """
        origin = self._origin_or_none
        return None if origin is None else origin.response


# The slot's own accessors: pydantic's __setattr__ takes only fields.
_get_origin: Callable[[_Result], Origin] = _Result.__dict__["_origin"].__get__
set_origin: Callable[[_Result, Origin], None] = _Result.__dict__["_origin"].__set__


class TextTranslation(_Result):
    """The translation of one text.

    Like every result, it also has ``rate_limit``, ``request_id`` and ``http_response``:
    the rate-limit state, the ``X-Request-Id`` and the ``httpx.Response`` it came in.

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

    Like every result, it also has ``rate_limit``, ``request_id`` and ``http_response``:
    the rate-limit state, the ``X-Request-Id`` and the ``httpx.Response`` it came in.

    Attributes:
        translations: One translation per input text, in input order.
    """

    translations: list[StrictStr]


class TranslationJob(_Result):
    """A document translation job, as returned when it is started.

    Pass it to ``wait_for_translation`` to wait for the result.

    Like every result, it also has ``rate_limit``, ``request_id`` and ``http_response``:
    the rate-limit state, the ``X-Request-Id`` and the ``httpx.Response`` it came in.

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

    Like every result, it also has ``rate_limit``, ``request_id`` and ``http_response``:
    the rate-limit state, the ``X-Request-Id`` and the ``httpx.Response`` it came in.

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

    The other fields (a ``name``, say) are attributes too. Like every result, it also has
    ``rate_limit``, ``request_id`` and ``http_response``, from the listing's response,
    which all the documents of one listing share.

    Attributes:
        document_id: The document's id (also read from a field named ``id``;
            an integer id is read as its string).
    """

    document_id: Id = Field(validation_alias=AliasChoices("document_id", "id"))
