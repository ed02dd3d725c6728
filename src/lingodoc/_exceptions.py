"""The exceptions lingodoc raises; ``LingodocError`` catches all.

The tree (docs/errors.md says when each is raised):
```text
LingodocError
├── ConfigurationError        bad arguments or environment at construction
├── InvalidArgument           an argument refused before sending; a ValueError
├── InvalidArgumentType       an argument of the wrong type; a TypeError
├── APIConnectionError        network failure after retries (cause chained)
│   └── APITimeoutError
├── APIError                  .status_code .code .message .request_id ...
│   ├── BadRequest            400, and any 4xx with no better class
│   │   ├── InvalidLanguage   INVALID_LANGUAGE (or local: status_code None)
│   │   └── TextTooLong       TEXT_TOO_LONG (or local: status_code None)
│   ├── Unauthorized          401 / UNAUTHORIZED
│   ├── NotFound              404
│   ├── RateLimited           429; .retry_after seconds
│   ├── ServerError           5xx
│   └── UnexpectedResponse    not the service's envelope; .body excerpt
├── TranslationFailed         .status (the last TranslationStatus)
└── WaitTimeout               .status (the last one, or None) .timeout
```

Every exception pickles with its fields, and its repr shows those that are set; none holds
the API key (messages arrive redacted, hints are the SDK's own words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from array import array

    from lingodoc._models import RateLimit, TranslationStatus

# A message quotes at most this many characters of a value: a megabyte-long id must not
# become a megabyte-long exception (or log line).
QUOTE_LIMIT = 100
# A repr or a job's failure reason quotes at most this many characters; str() has them all.
_REPR_LIMIT = 200


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Return ``text``, or its first ``limit`` characters, ``...`` and its length."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def shown(value: object) -> str:
    """Return ``repr(value)`` cut to about 100 characters, as every message quotes a value."""
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return f"{value[:QUOTE_LIMIT]!r}... ({len(value):,} characters)"
    try:
        return cut(repr(value))
    except Exception:  # an int past sys.get_int_max_str_digits(), a broken __repr__
        return f"<{type(value).__name__} too long to show>"


class LingodocError(Exception):
    """The base class of every exception lingodoc raises.

    ``str()`` is the message, then any hint on a line of its own (``hint: ...``).

    Attributes:
        hint: What to do about the error, in the SDK's terms (``base_url=``,
            ``LINGODOC_BASE_URL``...); ``None`` if the SDK has no advice. Never the API key.
        partial: From ``translate_many``, the [`PartialTranslations`][lingodoc.PartialTranslations].
    """

    hint: str | None = None
    partial: PartialTranslations | None = None
    _shown: tuple[str, ...] = ("message",)  # the fields repr shows before hint and partial

    def __init__(self, *args: object, hint: str | None = None) -> None:
        super().__init__(*args)
        self.hint = hint

    @property
    def message(self) -> str:
        """The message, without the hint (and, for an ``APIError``, without code and status)."""
        return super().__str__()

    def __str__(self) -> str:
        text = self._without_hint()
        return f"{text}\nhint: {self.hint}" if self.hint else text

    def _without_hint(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Not cls(*self.args), which would drop or refuse keyword-only fields: no __init__.
        return (type(self).__new__, (type(self), *self.args), dict(self.__dict__))

    def __repr__(self) -> str:
        # The fields that are set, cut; a status by its id, state and progress; partial and
        # rate_limit sum themselves up: "<PartialTranslations: ...>", "<RateLimit: ...>".
        fields: dict[str, object] = {}
        for name in (*self._shown, "hint", "partial"):
            value = getattr(self, name)
            if name == "status" and value is not None:
                fields |= {
                    "translation_id": value.translation_id,
                    "state": str(value.status),
                    "progress": value.progress,
                }
            else:
                fields[name] = value
        shown = [
            f"{name}={cut(value, _REPR_LIMIT) if isinstance(value, str) else value!r}"
            for name, value in fields.items()
            if value is not None and value != ""
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


class PartialTranslations:
    """The work a failed ``translate_many`` finished, carried by its error as ``.partial``.

    Resume with ``client.translate_many(texts, ..., done=err.partial.translations)``.

    Attributes:
        total: The number of texts the call was given.
    """

    __slots__ = ("_order", "_results", "total")

    def __init__(self, order: array[int] | None, results: list[str | None]) -> None:
        self._order = order
        self._results = results
        self.total: int = len(order) if order is not None else len(results)

    def _by_input(self) -> list[str | None]:
        if self._order is None:  # every text distinct: the results are in input order
            return self._results
        return list(map(self._results.__getitem__, self._order))

    @property
    def translations(self) -> dict[int, str]:
        """The finished translations, by index in the texts given (a new dict each time)."""
        return {index: text for index, text in enumerate(self._by_input()) if text is not None}

    @property
    def remaining(self) -> list[int]:
        """The indices of the texts that have no translation, in order."""
        return [index for index, text in enumerate(self._by_input()) if text is None]

    def __repr__(self) -> str:
        done = self.total - self._by_input().count(None)
        return f"<PartialTranslations: {done:,} of {self.total:,} texts translated>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartialTranslations, (self._order, self._results))


class ConfigurationError(LingodocError):
    """The client was given, or found in the environment, a setting it cannot use."""


class InvalidArgument(LingodocError, ValueError):
    """A method was given an argument it refuses, before anything is sent; also a ``ValueError``.

    A bad language code or too long a text is ``InvalidLanguage`` or ``TextTooLong`` instead.
    """


class InvalidArgumentType(LingodocError, TypeError):
    """A method was given an argument of the wrong type, before sending; also a ``TypeError``."""


class APIConnectionError(LingodocError):
    """The service could not be reached, after the retries; the ``httpx`` error is the cause.

    Attributes:
        request_sent: ``False`` if the request never left this machine (no connection could
            be made, or the client was closed first), so the service cannot have acted on
            it; ``True`` if it may have.
    """

    _shown = ("message", "request_sent")

    def __init__(self, message: str, *, request_sent: bool = True, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.request_sent = request_sent


class APITimeoutError(APIConnectionError):
    """A connect, read, write or pool timeout, after the retries were spent."""


class APIError(LingodocError):
    """The service answered with an error.

    Attributes:
        message: The human-readable message (the key, if echoed, is masked).
        status_code: The HTTP status; ``None`` for an error raised locally, before sending.
        code: The machine-readable error code, such as ``"TEXT_TOO_LONG"``, if any.
        rate_limit: The rate-limit state the response reported, if any.
        request_id: The ``X-Request-Id`` the service sent, if any; quote it to support.
        retry_after: Seconds the service asked to wait before trying again, if it said.
    """

    _shown: tuple[str, ...]  # declared: UnexpectedResponse's has one more
    _shown = ("code", "status_code", "message", "request_id", "retry_after", "rate_limit")

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        rate_limit: RateLimit | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status_code = status_code
        self.code = code
        self.rate_limit = rate_limit
        self.request_id = request_id
        self.retry_after = retry_after

    def _without_hint(self) -> str:
        if self.status_code is None:
            return f"{self.code or 'error'}: {self.message}"
        if self.code is None:
            return f"HTTP {self.status_code}: {self.message}"
        return f"{self.code} ({self.status_code}): {self.message}"


class BadRequest(APIError):
    """The request was refused as invalid (400, or a 4xx with no better class)."""


class InvalidLanguage(BadRequest):
    """A language code is malformed (raised locally) or not supported by the service."""


class TextTooLong(BadRequest):
    """A text exceeds the service's limit of 10,000 characters."""


class Unauthorized(APIError):
    """The API key is missing, unknown, revoked, expired or lacks the permission (401)."""


class NotFound(APIError):
    """The document, translation or path does not exist (404)."""


class RateLimited(APIError):
    """The rate limit is spent (429); ``retry_after`` says how long to wait, if the response did."""


class ServerError(APIError):
    """The service failed (5xx)."""


class UnexpectedResponse(APIError):
    """The response is not the service's envelope: HTML from a proxy, invalid JSON, a wrong shape.

    Attributes:
        body: The start of the response body, for diagnosis.
    """

    _shown = (*APIError._shown, "body")

    def __init__(self, message: str, *, body: str = "", **fields: Any) -> None:
        super().__init__(message, **fields)
        self.body = body


class TranslationFailed(LingodocError):
    """A document translation ended in the ``failed`` state.

    Attributes:
        status: The last [`TranslationStatus`][lingodoc.TranslationStatus] read.
    """

    _shown = ("status", "message")

    def __init__(self, status: TranslationStatus, *, hint: str | None = None) -> None:
        # The job's ``error`` (``{"code", "message"}`` or a str; not in the spec), on one line:
        # a log line or a message must not be forged.
        error = (status.model_extra or {}).get("error")
        if isinstance(error, dict):
            parts = (error.get("code"), error.get("message"))
            texts = (str(part).strip() for part in parts if isinstance(part, (str, int)))
            error = ": ".join(filter(None, texts))
        reason = cut(" ".join(error.split()), _REPR_LIMIT) if isinstance(error, str) else ""
        message = f"translation {status.translation_id} failed" + (f": {reason}" if reason else "")
        super().__init__(message, hint=hint)
        self.status = status


class WaitTimeout(LingodocError):
    """``wait_for_translation`` gave up before the translation finished.

    Attributes:
        status: The last [`TranslationStatus`][lingodoc.TranslationStatus] read; ``None`` if none.
        timeout: The timeout, in seconds, that ran out.
    """

    _shown = ("status", "timeout")

    def __init__(
        self, status: TranslationStatus | None, timeout: float, *, hint: str | None = None
    ) -> None:
        where = f" (last state {status.status}, {status.progress}%)" if status else ""
        translation = f"translation {status.translation_id}" if status else "the translation"
        super().__init__(f"{translation} did not finish within {timeout:g} s{where}", hint=hint)
        self.status = status
        self.timeout = timeout


_CLASS_BY_CODE: dict[str | None, type[APIError]] = {
    "INVALID_LANGUAGE": InvalidLanguage,
    "TEXT_TOO_LONG": TextTooLong,
    "UNAUTHORIZED": Unauthorized,
    "NOT_FOUND": NotFound,
    "RATE_LIMITED": RateLimited,
}
_CLASS_BY_STATUS = {400: BadRequest, 401: Unauthorized, 404: NotFound, 429: RateLimited}


def error_class(code: str | None, status_code: int) -> type[APIError]:
    """Choose the exception class for an error response: code first, then status."""
    fallback = ServerError if status_code >= 500 else BadRequest if status_code >= 400 else APIError
    return _CLASS_BY_CODE.get(code) or _CLASS_BY_STATUS.get(status_code, fallback)
