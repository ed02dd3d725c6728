"""Reading one response: from its status, headers and body to a ``TextTranslation``.

What lingodoc does after the body has arrived (the rate-limit headers, the envelope, the
model's validation, the origin the result keeps) against the floor, ``json.loads(body)``
and its ``["data"]``: what any client does to get at the answer. Each round reads
``--calls`` responses made before the clock starts (a fresh ``httpx.Response`` each, as the
network gives, so nothing cached on a response helps), through
``BaseClient._read_response``, the step both clients end a call with. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import httpx
from _common import (
    BASE_URL,
    ENVELOPE,
    KEY,
    RESPONSE_HEADERS,
    TEXT,
    TRANSLATION,
    emit,
    interleaved,
    summary,
)

import lingodoc

BODY = json.dumps(ENVELOPE).encode()


def responses(count: int) -> list[httpx.Response]:
    """``count`` responses as the SDK gets them: headers parsed, body not yet attached."""
    return [httpx.Response(200, headers=RESPONSE_HEADERS) for _ in range(count)]


def case(read: Callable[[httpx.Response], object], count: int) -> Callable[[], float]:
    """A round: read ``count`` fresh responses; seconds per response."""

    def run() -> float:
        batch = responses(count)
        started = time.perf_counter()
        for response in batch:
            read(response)
        return (time.perf_counter() - started) / count

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=BODY))
    client = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=transport))
    call = client._translate_call(TEXT, "en", "de", None)

    def sdk_read(response: httpx.Response) -> object:
        return client._read_response(call, response, BODY, 1, 0.0)

    def floor_read(response: httpx.Response) -> object:
        return json.loads(BODY)["data"]

    result = sdk_read(responses(1)[0])
    assert isinstance(result, lingodoc.TextTranslation), result
    assert result.translated_text == TRANSLATION
    assert result.rate_limit is not None
    assert result.rate_limit.remaining == 999999
    # Masked where it shares 8 characters in a row with the key, as the benchmark's does.
    assert result.request_id is not None
    assert result.request_id.startswith("req")
    assert floor_read(responses(1)[0])["translated_text"] == TRANSLATION  # type: ignore[index]
    for _ in range(3):  # warm up: caches, pydantic's validators
        case(sdk_read, 500)()
        case(floor_read, 500)()

    samples = interleaved(
        {"lingodoc": case(sdk_read, args.calls), "json.loads": case(floor_read, args.calls)},
        args.rounds,
    )
    emit(
        {
            "read": {name: summary(values) for name, values in samples.items()},
            "calls_per_round": args.calls,
        }
    )


if __name__ == "__main__":
    main()
