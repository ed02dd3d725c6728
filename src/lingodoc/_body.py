"""Reading a response body within bounds: of size, of decompressed size, and of time.

``BodyReader`` holds the rules; ``Client`` and ``AsyncClient`` only feed
it the raw chunks they read. It decompresses the body itself, never producing
more than the limit: httpx would inflate each chunk of the network whole, and
64 KiB of gzip can inflate to 64 MiB. Its failures are httpx exceptions, so the
clients map them, and decide on retries, as they do for httpx's own.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from lingodoc._deadline import Attempt

# What the SDK asks for, and so all it decodes: zlib in the standard library
# does both, with a bound on its output. (httpx would add br and zstd when the
# packages for them are installed.)
ACCEPT_ENCODING = "gzip, deflate"


class BodyReader:
    """Collects one response body up to ``limit`` bytes after decompression.

    Args:
        response: The response whose body is read, its headers received.
        limit: The most bytes of body wanted; reading stops just past it.
        attempt: The attempt the body belongs to: all of it must arrive before
            the attempt's deadline. httpx's read timeout bounds each wait for
            data, so a server that trickles a byte at a time would otherwise
            never time out (whatever transport the http client uses).
    """

    __slots__ = ("_attempt", "_chunks", "_decoder", "_encoding", "_limit", "_size")

    def __init__(self, response: httpx.Response, limit: int, attempt: Attempt) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0
        self._attempt = attempt
        declared = response.headers.get("content-encoding", "").lower().replace(" ", "")
        encodings = [name for name in declared.split(",") if name not in ("", "identity")]
        self._encoding = ",".join(encodings)
        if not encodings:
            self._decoder = None
        elif encodings in (["gzip"], ["x-gzip"]):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encodings == ["deflate"]:
            # RFC 9110's deflate is zlib-wrapped; some servers send it raw.
            self._decoder = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise httpx.DecodingError(
                f"the response is encoded with {self._encoding!r}, which lingodoc does not "
                f"decode (it asks for {ACCEPT_ENCODING})"
            )

    def feed(self, raw: bytes) -> bool:
        """Take the next chunk as received; ``True`` once past the limit (stop reading).

        Raises:
            httpx.ReadTimeout: If the attempt's deadline has passed.
            httpx.DecodingError: If the body is not valid for its encoding.
        """
        if self._attempt.left() == 0:
            raise httpx.ReadTimeout(self._attempt.expired("the response"))
        data = raw if self._decoder is None else self._inflate(raw)
        self._chunks.append(data)
        self._size += len(data)
        return self._size > self._limit

    def body(self) -> bytes:
        """Return the body: all of it, or the first bytes past the limit.

        Raises:
            httpx.DecodingError: If the body is not valid for its encoding.
        """
        if self._decoder is not None and self._size <= self._limit:
            try:
                self._chunks.append(self._decoder.flush())
            except zlib.error as exc:
                raise self._decoding_error(exc) from None
        return b"".join(self._chunks)

    def _inflate(self, raw: bytes) -> bytes:
        assert self._decoder is not None
        try:
            # One byte past what is left: enough to tell that the body is too long.
            return self._decoder.decompress(raw, self._limit - self._size + 1)
        except zlib.error as exc:
            if self._encoding == "deflate" and self._size == 0 and not self._chunks:
                self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                self._encoding = "raw deflate"
                return self._inflate(raw)
            raise self._decoding_error(exc) from None

    def _decoding_error(self, exc: zlib.error) -> httpx.DecodingError:
        return httpx.DecodingError(f"the response body is not valid {self._encoding}: {exc}")
