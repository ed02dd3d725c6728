"""One answer per request: a connection carries another only where h11 left no byte over.

h11, the parser httpcore uses, keeps what it read past a response's end and reads it as the
answer to the next request on the connection. The SDK's own transports feed each
connection's bytes to an h11 connection of their own (``_framing.Framing``); once it holds a
byte past a response's end, or cannot follow the connection, ``closing`` is set, the stream
says it is readable, and httpcore closes the connection instead of reusing it.

The cases of ``Framing`` first. Then the proof, on httpcore itself: a pool whose network is
in memory, its streams the SDK's own (``_Stream``), answers a first request with a response
(hypothesis-generated, or one of the framings h11 and a hand-written parser once read
apart), cut into reads, and a second request with ``answer-2``. Whenever the pool reuses the
connection, the second answer must be ``answer-2``, and h11, fed the first response alone,
must have ended it with no byte left over; where it did, the pool must reuse it.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import h11
import httpcore
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lingodoc._framing import Framing
from lingodoc._sync_transport import _Backend

POST = b"POST /v1/translate HTTP/1.1\r\nHost: api\r\n\r\n"
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Request-Id: r1\r\n\r\nhello"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n3;name=value\r\nabc\r\n0\r\n\r\n"
)
TRAILERS = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"
INTERIM = b"HTTP/1.1 100 Continue\r\n\r\n" + LENGTH
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"
RESPONSES = {
    "content-length": LENGTH,
    "chunked": CHUNKED,
    "chunked-trailers": TRAILERS,
    "interim-response": INTERIM,
    "no-content": NO_CONTENT,
}
INJECTED = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED"
ANSWER_2 = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nanswer-2"

# The framings a hand-written parser once read apart from h11, each followed in the same
# write by a whole second answer: reused, the connection hands it to the next request.
BARE_LF = b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello"
HALF_CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5"
BARE_LF_INJECTED = INJECTED.replace(b"\r", b"")
DISAGREED = {
    "bare-lf-head": BARE_LF + INJECTED,
    "comma-joined-length": LENGTH.replace(b": 5", b": 5, 5") + INJECTED,
    "folded-length": LENGTH.replace(b": 5", b":\r\n 5") + INJECTED,
    "chunk-extension-with-cr": HALF_CHUNKED + b';x="a\rb"\r\nhello\r\n0\r\n\r\n' + INJECTED,
    "bare-lf-trailer": HALF_CHUNKED + b"\r\nhello\r\n0\r\nX-T: 1\n\n" + BARE_LF_INJECTED,
    "bare-lf-both-answers": BARE_LF + BARE_LF_INJECTED,
}


def closing_after(request: bytes, *pieces: bytes) -> bool:
    framing = Framing()
    framing.wrote(request)
    for piece in pieces:
        framing.read(piece)
    return framing.closing


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_a_response_read_in_any_two_pieces_leaves_the_connection_open(response: bytes) -> None:
    for cut in range(1, len(response)):
        assert not closing_after(POST, response[:cut], response[cut:]), cut


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_a_response_read_byte_by_byte_leaves_the_connection_open(response: bytes) -> None:
    assert not closing_after(POST, *(response[i : i + 1] for i in range(len(response))))


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_any_byte_past_the_end_of_a_response_closes_the_connection(response: bytes) -> None:
    for cut in range(1, len(response)):
        assert closing_after(POST, response[:cut], response[cut:] + INJECTED), cut
    assert closing_after(POST, response, b"X")


def test_the_answer_to_head_has_no_body_whatever_its_length_says() -> None:
    head_request = b"HEAD /v1/documents HTTP/1.1\r\n\r\n"
    assert not closing_after(head_request, LENGTH[: -len(b"hello")])
    assert closing_after(head_request, LENGTH)  # "hello" is past its end


def test_each_request_on_a_connection_starts_a_response_of_its_own() -> None:
    framing = Framing()
    for _ in range(3):
        framing.wrote(POST)
        framing.wrote(b"")  # httpcore ends a request without a body with an empty write
        framing.read(LENGTH[:20])
        framing.read(LENGTH[20:])
    assert not framing.closing


def test_closing_stays_once_seen_whatever_follows() -> None:
    framing = Framing()
    framing.wrote(POST)
    framing.read(LENGTH + b"X")
    framing.wrote(POST)
    framing.read(LENGTH)
    assert framing.closing


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + INJECTED,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + INJECTED,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello" + INJECTED,
    ],
    ids=["not-chunked", "malformed-chunk", "two-lengths"],
)
def test_a_framing_h11_cannot_follow_closes_the_connection(response: bytes) -> None:
    assert closing_after(POST, response)


def test_a_response_read_until_the_connection_closes_takes_every_byte_as_its_body() -> None:
    # h11 leaves nothing over: the bytes are the body, and the connection closes at its end.
    response = b"HTTP/1.0 200 OK\r\n\r\nread until the connection closes" + INJECTED
    assert not closing_after(POST, response)
    assert closing_after(POST, response, b"")


@pytest.mark.parametrize("response", DISAGREED.values(), ids=DISAGREED.keys())
def test_h11s_end_of_a_response_is_the_end_whatever_the_framing(response: bytes) -> None:
    for cut in range(1, len(response)):
        assert closing_after(POST, response[:cut], response[cut:]), cut


# The proof on httpcore: an in-memory network under the SDK's own streams ------------------


class Server(httpcore.NetworkBackend):
    """Answers each request, on whichever connection it comes, with the next prepared answer.

    An answer is a list of reads. Once they run out, a read returns b"": the server closed
    the connection. Unread bytes, or the close, make it readable, as they make a socket.
    """

    def __init__(self, answers: Iterable[Sequence[bytes]]) -> None:
        self.answers = collections.deque(answers)
        self.connections = 0

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        self.connections += 1
        return Connection(self)


class Connection(httpcore.NetworkStream):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.unread: collections.deque[bytes] = collections.deque()
        self.closed = False

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer and self.server.answers:  # httpcore writes a request's head at once
            self.unread.extend(self.server.answers.popleft())

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.closed = not self.unread
        return b"" if self.closed else self.unread.popleft()

    def close(self) -> None:
        self.unread.clear()

    def get_extra_info(self, info: str) -> Any:
        return bool(self.unread) or self.closed if info == "is_readable" else None


def exchange(method: bytes, reads: Sequence[bytes]) -> tuple[int, bytes]:
    """Send two requests through httpcore's pool over the SDK's streams: the first is answered
    with ``reads``, the second with ``ANSWER_2``; the connections opened, the second body."""
    server = Server([reads, [ANSWER_2]])
    backend = _Backend()
    backend.backend = server  # type: ignore[assignment]
    with httpcore.ConnectionPool(network_backend=backend) as pool:
        with contextlib.suppress(httpcore.RemoteProtocolError):  # h11 refused it: closed
            pool.request(method, "http://api.test/first")
        second = pool.request("GET", "http://api.test/second")
    return server.connections, second.content


def left_over(method: bytes, response: bytes) -> bytes | None:
    """What h11, fed ``response`` to a ``method`` request, holds past its end; None if it
    does not end it on a connection open for another request."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method=method, target="/", headers=[("Host", "api.test")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(response)
    try:
        while connection.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
    except h11.RemoteProtocolError:
        return None
    return connection.trailing_data[0] if connection.their_state is h11.DONE else None


def assert_one_answer_per_request(method: bytes, response: bytes, cuts: Iterable[int]) -> None:
    bounds = [0, *sorted(set(cuts)), len(response)]
    reads = [response[start:end] for start, end in itertools.pairwise(bounds) if end > start]
    connections, second = exchange(method, reads)
    assert second == b"answer-2"
    # Reused exactly where h11 ended the first response with nothing left over.
    assert (connections == 1) == (left_over(method, response) == b"")


def test_httpcore_reuses_a_connection_after_a_response_that_ended_cleanly() -> None:
    assert exchange(b"POST", [LENGTH]) == (1, b"answer-2")


@pytest.mark.parametrize("response", DISAGREED.values(), ids=DISAGREED.keys())
def test_httpcore_never_hands_the_next_request_bytes_past_a_responses_end(
    response: bytes,
) -> None:
    for cut in range(1, len(response) + 1):
        reads = [piece for piece in (response[:cut], response[cut:]) if piece]
        assert exchange(b"POST", reads) == (2, b"answer-2"), cut


# Hypothesis: responses in any framing, with or without bytes past their end, cut anywhere.

EOL = st.sampled_from([b"\r\n", b"\n"])
CHUNK_EXTENSIONS = [b"", b";a=b", b'; a="x\ry"', b";\r", b";a=b;c"]
CONNECTION = [[], [], [], [b"Connection: close"], [b"Connection: keep-alive"]]
SURPLUS = [b"", b"", b"", b"", b"", INJECTED, b"X", b"\r\n", b"\n", b"0\r\n\r\n"]


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A request's method and a response to it: framing, line endings, folding, 1xx, surplus."""
    method = draw(st.sampled_from([b"GET", b"POST", b"HEAD"]))
    version = draw(st.sampled_from([b"1.1", b"1.1", b"1.1", b"1.0"]))
    status = draw(st.sampled_from([200, 201, 204, 304, 404]))
    framing = draw(st.sampled_from(["length", "length", "chunked", "chunked", "close"]))
    body = draw(st.binary(max_size=24))
    lines: list[bytes] = []
    if framing == "length":
        length = b"%d" % max(0, len(body) + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
        fold = draw(EOL) + draw(st.sampled_from([b" ", b"\t"]))
        lines += draw(
            st.sampled_from(
                [
                    [b"Content-Length: " + length],
                    [b"Content-Length:  " + length + b" \t"],
                    [b"Content-Length: " + length + b", " + length],
                    [b"Content-Length: " + length + b"," + length],
                    [b"Content-Length: " + length] * 2,
                    [b"Content-Length:" + fold + length],
                ]
            )
        )
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: chunked")
        chunks = draw(st.lists(st.binary(min_size=1, max_size=8), max_size=3))
        body = b"".join(
            b"%x%s\r\n%s%s" % (len(chunk), draw(st.sampled_from(CHUNK_EXTENSIONS)), chunk, end)
            for chunk in chunks
            for end in [draw(st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n"]))]
        )
        trailers = draw(st.lists(st.sampled_from([b"X-T: 1", b"X-U:\r\n 2"]), max_size=2))
        ending = draw(EOL)
        body += b"0" + draw(st.sampled_from(CHUNK_EXTENSIONS)) + b"\r\n"
        body += b"".join(trailer + ending for trailer in trailers) + ending
    if draw(st.booleans()):
        lines.append(b"X-Folded: a" + draw(EOL) + b"\tb")
    lines += draw(st.sampled_from(CONNECTION))
    eol = draw(EOL)
    interim = b"".join(
        b"HTTP/1.1 %d Interim%s%s" % (code, eol, eol)
        for code in draw(st.lists(st.sampled_from([100, 102, 103]), max_size=2))
    )
    head = eol.join([b"HTTP/%s %d Status" % (version, status), *lines]) + eol + eol
    return method, interim + head + body + draw(st.sampled_from(SURPLUS))


@settings(
    max_examples=200,  # as the other property tests; 6,000 pass too
    deadline=None,
    database=None,  # no .hypothesis/ in the tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(responses(), st.data())
def test_a_connection_is_reused_only_where_h11_left_no_byte_over(
    answer: tuple[bytes, bytes], data: st.DataObject
) -> None:
    method, response = answer
    cuts = data.draw(st.lists(st.integers(1, max(1, len(response) - 1)), max_size=4))
    assert_one_answer_per_request(method, response, cuts)
