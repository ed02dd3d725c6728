"""Where each response on an HTTP/1.1 connection ends, as h11 reads it: bytes past it close.

h11 reads the bytes a server (or proxy) sent past a response's framing as the answer to the
next request on the connection. httpcore's h11 connection is private, so the SDK's streams
feed each connection's bytes to one of their own (`Framing`), which ends each response where
httpcore's does. Once it holds bytes past that end, or cannot follow the connection, the
connection says it is readable, and httpcore closes it instead of reusing it.
"""

from __future__ import annotations

import functools

import h11
import httpcore

_END = h11.EndOfMessage()


@functools.lru_cache(maxsize=16)
def _request(method: bytes) -> h11.Request:
    """A request with ``method``: enough for h11 to await the response (HEAD has no body)."""
    return h11.Request(method=method, target="/", headers=[("Host", "lingodoc")])


class Framing:
    """Follows one connection's responses with h11; ``closing`` once it must not be reused."""

    __slots__ = ("_h11", "closing")

    def __init__(self) -> None:
        # httpcore's limit on a head, so that a head it reads is followed here too.
        limit = httpcore.HTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=limit)
        # Bytes past a response's end, the peer's close, or anything h11 cannot follow.
        self.closing = False

    def wrote(self, data: bytes) -> None:
        """Note bytes written: the first write after a response starts the next request."""
        connection = self._h11
        if self.closing or connection.their_state is h11.SEND_RESPONSE:
            return  # nothing more to follow, or the rest of the request being written
        try:
            if connection.our_state is h11.DONE:
                connection.start_next_cycle()
            # httpcore writes a request's head at once: its first word is the method.
            connection.send(_request(data.partition(b" ")[0]))
            connection.send(_END)
        except h11.ProtocolError:
            self.closing = True

    def read(self, data: bytes) -> None:
        """Follow bytes read; set ``closing`` once h11 holds any past the end of a response."""
        if self.closing or not data:  # b"": the peer closed the connection
            self.closing = True
            return
        connection = self._h11
        try:
            connection.receive_data(data)
            while (event := connection.next_event()) is not h11.NEED_DATA:
                if type(event) is h11.EndOfMessage or event is h11.PAUSED:
                    # The response has ended (or the protocol switched): reuse only a
                    # connection h11 keeps open, holding no byte past that end.
                    left, _ = connection.trailing_data
                    self.closing = bool(left) or connection.their_state is not h11.DONE
                    return
        except h11.ProtocolError:
            self.closing = True
