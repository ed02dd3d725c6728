"""Where each response on a connection ends, so that bytes sent past it are caught.

The rule behind ``reliability/test_faults.py``'s test of a second response sent right after
the first: the SDK's own transports feed each connection's bytes to a ``Framing``, and a
connection whose ``surplus`` is set is closed, not reused. A response read in any pieces
must not look like surplus (it would cost a reconnection each time), and any byte past its
end must.
"""

from __future__ import annotations

import pytest

from lingodoc._framing import Framing

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


def surplus_after(request: bytes, *pieces: bytes) -> bool:
    framing = Framing()
    framing.wrote(request)
    for piece in pieces:
        framing.read(piece)
    return framing.surplus


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_a_response_read_in_any_two_pieces_leaves_no_surplus(response: bytes) -> None:
    for cut in range(1, len(response)):
        assert not surplus_after(POST, response[:cut], response[cut:]), cut


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_a_response_read_byte_by_byte_leaves_no_surplus(response: bytes) -> None:
    assert not surplus_after(POST, *(response[i : i + 1] for i in range(len(response))))


@pytest.mark.parametrize("response", RESPONSES.values(), ids=RESPONSES.keys())
def test_any_byte_past_the_end_of_a_response_is_surplus(response: bytes) -> None:
    for cut in range(1, len(response)):
        assert surplus_after(POST, response[:cut], response[cut:] + INJECTED), cut
    assert surplus_after(POST, response, b"X")


def test_the_answer_to_head_has_no_body_whatever_its_length_says() -> None:
    head_request = b"HEAD /v1/documents HTTP/1.1\r\n\r\n"
    assert not surplus_after(head_request, LENGTH[: -len(b"hello")])
    assert surplus_after(head_request, LENGTH)  # "hello" is past its end


def test_each_request_on_a_connection_starts_a_response_of_its_own() -> None:
    framing = Framing()
    for _ in range(3):
        framing.wrote(POST)
        framing.read(LENGTH[:20])
        framing.read(LENGTH[20:])
    assert not framing.surplus


def test_surplus_stays_once_seen_whatever_follows() -> None:
    framing = Framing()
    framing.wrote(POST)
    framing.read(LENGTH + b"X")
    framing.wrote(POST)
    framing.read(LENGTH)
    assert framing.surplus


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.0 200 OK\r\n\r\nread until the connection closes" + INJECTED,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + INJECTED,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + INJECTED,
    ],
    ids=["close-delimited", "not-chunked", "malformed-chunk"],
)
def test_a_framing_it_cannot_follow_is_left_to_h11(response: bytes) -> None:
    # h11 closes the connection after such a response, or fails on it: nothing to catch.
    assert not surplus_after(POST, response)
