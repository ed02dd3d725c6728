"""Reading a response: its body within bounds, then the envelope, or the error it stands for."""

from __future__ import annotations

import contextlib
import json
import math
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from lingodoc import _deadline, _lazy
from lingodoc._constants import NOT_THE_SERVICE
from lingodoc._endpoints import ShapeError
from lingodoc._exceptions import (
    APIError,
    RateLimited,
    UnexpectedResponse,
    cut,
    error_class,
)

if TYPE_CHECKING:
    from lingodoc._endpoints import Call
    from lingodoc._models import Reported

T = TypeVar("T")

MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024  # enough to show its start: no megabytes of a proxy's HTML
BODY_EXCERPT_CHARS = 500
# All the SDK decodes, with zlib's output bounded: httpx would inflate each chunk whole.
ACCEPT_ENCODING = "gzip, deflate"
_LIMIT_HEADERS = (b"x-ratelimit-limit", b"x-ratelimit-remaining", b"x-ratelimit-reset")
_READ_HEADERS = frozenset({b"content-encoding", b"retry-after", b"x-request-id", *_LIMIT_HEADERS})


def _read_headers(headers: httpx.Headers) -> dict[bytes, list[str]]:
    """The values of the headers the SDK reads, by lower-case name, in the order sent."""
    found: dict[bytes, list[str]] = {}
    for name, value in headers.raw:
        name = name.lower()
        if name in _READ_HEADERS:
            try:
                text = value.decode("utf-8")
            except UnicodeDecodeError:
                text = value.decode("latin-1")
            found.setdefault(name, []).append(text)
    return found


class BodyReader:
    """Collects one response body, up to a limit after decompression and before the deadline.

    It raises httpx's errors: ``ReadTimeout`` past the deadline, ``DecodingError`` (bad encoding).
    """

    def __init__(self, response: httpx.Response) -> None:
        self.headers = _read_headers(response.headers)
        self.limit = MAX_BODY_BYTES if response.is_success else MAX_ERROR_BODY_BYTES
        self.raw: list[bytes] = []  # as received, for the response a result carries
        self.chunks: list[bytes] = []
        self.size = 0
        self.decoder: Any = None
        # Built in memory and read (a mock transport's): its body is decoded.
        self.in_memory = response.is_stream_consumed
        if self.in_memory:
            self.chunks.append(response.content)
            self.encoding = ""
            return
        declared = ",".join(self.headers.get(b"content-encoding", ())).lower().replace(" ", "")
        encodings = [name for name in declared.split(",") if name not in ("", "identity")]
        self.encoding = ",".join(encodings)
        if encodings in (["gzip"], ["x-gzip"]):
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encodings == ["deflate"]:
            # RFC 9110's deflate is zlib-wrapped; some servers send it raw (see _inflate).
            self.decoder = zlib.decompressobj(zlib.MAX_WBITS)
        elif encodings:
            raise httpx.DecodingError(
                f"the response is encoded with {self.encoding!r}, which lingodoc does not "
                f"decode (it asks for {ACCEPT_ENCODING})"
            )

    def feed(self, raw: bytes) -> bool:
        """Take the next chunk as received; ``True`` once past the limit (stop reading)."""
        if _deadline.left() == 0:
            raise httpx.ReadTimeout("the response took longer than the timeout of the attempt")
        self.raw.append(raw)
        data = raw if self.decoder is None else self._inflate(raw)
        self.chunks.append(data)
        self.size += len(data)
        return self.size > self.limit

    def body(self) -> bytes:
        """Return the body: all of it, or the first bytes past the limit."""
        if self.decoder is not None and self.size <= self.limit:
            try:
                self.chunks.append(self.decoder.flush())
            except zlib.error as exc:
                raise self._decoding_error(exc) from None
        return b"".join(self.chunks)

    def _inflate(self, raw: bytes) -> bytes:
        try:
            # One byte past what is left: enough to tell that the body is too long.
            return bytes(self.decoder.decompress(raw, self.limit - self.size + 1))
        except zlib.error as exc:
            if self.encoding == "deflate" and not self.chunks:
                self.decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                self.encoding = "raw deflate"
                return self._inflate(raw)
            raise self._decoding_error(exc) from None

    def _decoding_error(self, exc: zlib.error) -> httpx.DecodingError:
        return httpx.DecodingError(f"the response body is not valid {self.encoding}: {exc}")


def rate_limit_of(headers: dict[bytes, list[str]], now: float) -> Reported | None:
    """The rate limit the headers report, lazily; ``None`` if missing, twice or not ints."""
    try:
        (limit,), (remaining,), (reset,) = map(headers.__getitem__, _LIMIT_HEADERS)
        return _lazy.Reported(int(limit), int(remaining), int(reset), now)
    except (KeyError, ValueError):  # ValueError: a header sent twice, or not an int
        return None


def read(
    call: Call[T],
    response: httpx.Response,
    reader: BodyReader,
    request: httpx.Request,
    rate_limit: Reported | None,
    *,
    now: float,
    elapsed: float,
    redact: Callable[[str], str],
) -> T:
    """The call's result from its response, else the `APIError` it stands for (the key masked)."""
    headers, status_code = reader.headers, response.status_code
    request_id = ", ".join(headers[b"x-request-id"]) if b"x-request-id" in headers else None
    body = reader.body()
    if len(body) <= MAX_BODY_BYTES:
        data = unwrap(
            status_code, headers, body, rate_limit, request_id,
            now=now, redact=redact, request=request,
        )  # fmt: skip
        # Masked when first read: servers echo headers too.
        sent_id = None if request_id is None else (request_id, redact)
        try:
            kept = _kept(response, reader, request, elapsed)
            return call.parse(data, _lazy.Origin(rate_limit, sent_id, kept))
        except ShapeError as exc:
            shape_error = exc
        # Raised outside the except block: the shape error holds the data as sent.
        problem = redact(str(shape_error))
        shown = excerpt(json.dumps(shape_error.data, default=str), redact)
    else:
        problem, shown = f"the response body is larger than {MAX_BODY_BYTES:,} bytes", None
    raise _unexpected(
        problem, request, redact, body=shown,
        **_error_fields(status_code, rate_limit, request_id, redact),
    )  # fmt: skip


def _error_fields(
    status_code: int,
    rate_limit: Reported | None,
    request_id: str | None,
    redact: Callable[[str], str],
) -> dict[str, Any]:
    """The fields every `APIError` of a response holds: its rate limit and masked id."""
    return {
        "status_code": status_code,
        "rate_limit": None if rate_limit is None else rate_limit.value,
        "request_id": None if request_id is None else redact(request_id),
    }


def _unexpected(
    problem: str, request: httpx.Request, redact: Callable[[str], str], **fields: Any
) -> UnexpectedResponse:
    """The error for an answer that is not the service's, naming the request it answered."""
    url = request.url.copy_with(query=None, fragment=None)  # a query may hold secrets
    asked = cut(redact(f"{request.method} {url}"))
    return UnexpectedResponse(f"{problem}, in answer to {asked}", hint=NOT_THE_SERVICE, **fields)


def _kept(
    response: httpx.Response, reader: BodyReader, request: httpx.Request, elapsed: float
) -> httpx.Response | tuple[Any, ...]:
    """What makes a result's ``http_response``: the body read, and no connection."""
    if reader.in_memory:  # built in memory (a mock transport's): the response itself
        return response
    extensions = {k: v for k, v in response.extensions.items() if k != "network_stream"}
    # Rebuilt on first use from a tuple: results may be kept by the thousand, and a closure is
    # seven objects for the GC.
    return (_rebuilt, response.status_code, response.headers, b"".join(reader.raw), request,
            extensions, elapsed)  # fmt: skip


def _rebuilt(
    status_code: int,
    headers: httpx.Headers,
    raw: bytes,
    request: httpx.Request,
    extensions: dict[str, Any],
    elapsed: float,
) -> httpx.Response:
    import datetime

    kept = httpx.Response(status_code, headers=headers, content=raw, request=request)
    kept.extensions, kept.elapsed = extensions, datetime.timedelta(seconds=elapsed)
    return kept


def unwrap(
    status_code: int,
    headers: dict[bytes, list[str]],
    body: bytes,
    rate_limit: Reported | None,
    request_id: str | None,
    *,
    now: float,
    redact: Callable[[str], str],
    request: httpx.Request,
) -> Any:
    """Return the ``data`` of a success envelope (``None`` for a bodiless 204).

    Raises:
        APIError: What the code, else the status, stands for; ``UnexpectedResponse`` if no envelope.
    """
    if status_code == 204 and not body:
        return None
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError):
        envelope = _NOT_JSON
    is_2xx = 200 <= status_code < 300
    if is_2xx and type(envelope) is dict and envelope.get("success") is True:
        data = envelope.get("data")
        if data is not None:
            return data
    code = None
    # Without an error envelope, a 429 still means "slow down".
    cls: type[APIError] = RateLimited if status_code == 429 else UnexpectedResponse
    if envelope is _NOT_JSON:
        problem = "the response body is not JSON"
    elif not isinstance(envelope, dict) or not isinstance(envelope.get("success"), bool):
        problem = "the response body is not the service's envelope"
    elif envelope["success"]:
        problem = "the success envelope " + ("holds no data" if is_2xx else "has an error status")
    elif not isinstance(error := envelope.get("error"), dict):
        problem = "the failure envelope holds no error object"
    else:
        code = error.get("code") if isinstance(error.get("code"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
        chosen = error_class(code, status_code)
        # The class follows the code as sent; what the error keeps is masked (echoed keys).
        code = None if code is None else redact(code)
        if chosen is not APIError or not is_2xx:
            cls, problem = chosen, redact(message or "no message given")
        else:
            problem = f"a failure envelope came with status {status_code}"
    fields = _error_fields(status_code, rate_limit, request_id, redact)
    fields.update(code=code, retry_after=_retry_after(headers, now, cls))
    if cls is UnexpectedResponse:
        text = body[: BODY_EXCERPT_CHARS * 32].decode("utf-8", "replace")
        raise _unexpected(problem, request, redact, body=excerpt(text, redact), **fields)
    raise cls(problem, **fields)  # outside any except block: no chained exception keeps the body


_NOT_JSON = object()


def excerpt(text: str, redact: Callable[[str], str]) -> str:
    """Return the start of a body for an error, masked before it is cut (a key cut is missed)."""
    return redact(text[: BODY_EXCERPT_CHARS * 8])[:BODY_EXCERPT_CHARS]


def _retry_after(headers: dict[bytes, list[str]], now: float, cls: type[APIError]) -> float | None:
    """Seconds to wait: ``Retry-After`` (seconds or an HTTP date), else a 429's reset."""
    retry_after = ", ".join(headers.get(b"retry-after", ()))
    try:
        seconds = float(retry_after)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(retry_after).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):  # none sent, or not a date
            seconds = math.nan
    if math.isfinite(seconds):
        return max(0.0, seconds)
    if cls is RateLimited:
        from lingodoc._models import reset_delay

        # The raw header, not reset_at: rounded, a wait a hair short would be refused again.
        with contextlib.suppress(KeyError, ValueError, OverflowError):  # Overflow: no float
            return reset_delay(int(", ".join(headers[b"x-ratelimit-reset"])), now)
    return None
