"""Reading a response: its body within bounds, then the envelope, or the error it stands for.

The service answers ``{"success": true, "data": ...}`` or
``{"success": false, "error": {"code": ..., "message": ...}}``. `unwrap` is the one place
that turns a response into its ``data`` or the typed exception it stands for; `BodyReader`
reads the body first, with a cap on its size (after decompression) and on its time.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from lingodoc import _deadline
from lingodoc._exceptions import APIError, RateLimited, UnexpectedResponse, error_class

if TYPE_CHECKING:
    from lingodoc._models import RateLimit

# A success body is read whole; an error body only far enough to show its start, so a
# broken proxy cannot make a client load megabytes of HTML.
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024
BODY_EXCERPT_CHARS = 500
# What the SDK asks for, and so all it decodes: zlib does both with a bound on its output
# (httpx would inflate each chunk whole: 64 KiB of gzip can inflate to 64 MiB).
ACCEPT_ENCODING = "gzip, deflate"


class BodyReader:
    """Collects one response body, up to a limit after decompression and before the deadline.

    Its failures are httpx exceptions, so the clients map them, and decide on retries, as
    they do for httpx's own.

    Args:
        response: The response whose body is read, its headers received.

    Raises:
        httpx.DecodingError: If the body is encoded otherwise than the SDK asks for.
    """

    def __init__(self, response: httpx.Response) -> None:
        self.limit = MAX_BODY_BYTES if response.is_success else MAX_ERROR_BODY_BYTES
        self.raw: list[bytes] = []  # as received, for the response a result carries
        self.chunks: list[bytes] = []
        self.size = 0
        self.decoder: Any = None
        # A response built in memory and read (a mock transport's): its body is decoded.
        self.in_memory = response.is_stream_consumed
        if self.in_memory:
            self.chunks.append(response.content)
            self.encoding = ""
            return
        declared = response.headers.get("content-encoding", "").lower().replace(" ", "")
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
        """Take the next chunk as received; ``True`` once past the limit (stop reading).

        Raises:
            httpx.ReadTimeout: If the attempt's deadline has passed.
            httpx.DecodingError: If the body is not valid for its encoding.
        """
        if _deadline.left() == 0:
            raise httpx.ReadTimeout("the response took longer than the timeout of the attempt")
        if self.decoder is None:
            data = raw
        else:
            self.raw.append(raw)
            data = self._inflate(raw)
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

    def raw_body(self) -> bytes:
        """Return the body as received (compressed, if it was)."""
        return b"".join(self.chunks if self.decoder is None else self.raw)

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


def unwrap(
    status_code: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    rate_limit: RateLimit | None,
    now: float,
    redact: Callable[[str], str],
) -> Any:
    """Return the ``data`` of a success envelope (``None`` for a bodiless 204).

    Raises:
        APIError: The subclass the error code, else the status, stands for; a 429 is
            always ``RateLimited``, whatever its body.
        UnexpectedResponse: If the body is not the envelope.
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
    fields: dict[str, Any] = {
        "status_code": status_code,
        "rate_limit": rate_limit,
        "request_id": request_id(headers, redact),
    }
    code = None
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
        cls = error_class(code, status_code)
        # The class follows the code as sent; what the error keeps is masked, as a server
        # may echo the key in any field.
        code = None if code is None else redact(code)
        if cls is not APIError or not is_2xx:
            retry_after = _retry_after(headers, now, cls)
            raise cls(
                redact(message or "no message given"), code=code, retry_after=retry_after, **fields
            )
        problem = f"a failure envelope came with status {status_code}"
    # Raised here, outside any except block, so no chained exception keeps the raw body.
    if status_code == 429:
        # The spec does not show the 429 body; whatever it is, it means "slow down".
        raise RateLimited(
            problem, code=code, retry_after=_retry_after(headers, now, RateLimited), **fields
        )
    raise UnexpectedResponse(
        problem,
        code=code,
        body=excerpt(body[: BODY_EXCERPT_CHARS * 32].decode("utf-8", "replace"), redact),
        retry_after=_retry_after(headers, now, UnexpectedResponse),
        **fields,
    )


_NOT_JSON = object()


def request_id(headers: Mapping[str, str], redact: Callable[[str], str]) -> str | None:
    """Return the ``X-Request-Id``, with the key masked: servers echo headers too."""
    value = headers.get("x-request-id")
    return None if value is None else redact(value)


def excerpt(text: str, redact: Callable[[str], str]) -> str:
    """Return the start of a body for an error, with the key masked before it is cut."""
    # Masking first: a key cut in two by the excerpt would no longer be found.
    return redact(text[: BODY_EXCERPT_CHARS * 8])[:BODY_EXCERPT_CHARS]


def _retry_after(headers: Mapping[str, str], now: float, cls: type[APIError]) -> float | None:
    """Seconds the response asks to wait: ``Retry-After``, else (429 only) the reset."""
    value = headers.get("retry-after")
    if value is not None:
        seconds = _seconds(value, now)
        if seconds is not None:
            return seconds
    if cls is RateLimited:
        from lingodoc._models import reset_delay

        try:
            # The raw header, not RateLimit.reset_at: that is rounded to the
            # microsecond, and a wait a hair short of the reset is refused again.
            return reset_delay(int(headers["x-ratelimit-reset"]), now)
        except (KeyError, ValueError, OverflowError):  # OverflowError: beyond any float
            pass
    return None


def _seconds(retry_after: str, now: float) -> float | None:
    """Read ``Retry-After`` (seconds or an HTTP date); ``None`` if it is neither or not finite."""
    try:
        seconds = float(retry_after)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(retry_after).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
