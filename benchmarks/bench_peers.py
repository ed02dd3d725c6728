"""Peers: each SDK's per-call cost against its own tuned raw call, in-process, sync.

Each SDK makes the call its users make most, and its floor is the same request made by
hand on the HTTP library it is built on, built once and sent again each call, its answer
read with ``json.loads``:

- ``lingodoc``: ``Client.translate()`` on ``http_client=httpx.Client(transport=T)``; the
  floor ``httpx.Client(transport=T).send(request)``;
- ``openai``: ``OpenAI.chat.completions.create()``, ``anthropic``: ``Anthropic.messages.create()``,
  each on ``http_client=httpx2.Client(transport=T)`` (both are built on httpx2); the floor
  ``httpx2.Client(transport=T).send(request)``;
- ``deepl``: ``Translator.translate_text()`` (built on requests); the floor a
  ``requests.Session`` sending a ``PreparedRequest``. Both go through requests'
  ``HTTPAdapter``, whose ``send`` is patched to build its response from the answer's bytes
  as the real one does from the socket's.

``T`` is the library's ``MockTransport``. Each answer is a small success of that service's
API, with a request id header. A peer that is not installed, or whose call fails (a new
release's change), is left out, saying so. Per
round: each side's time per call and the ratio floor / SDK. Prints JSON.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from importlib import metadata
from typing import Any
from unittest import mock

import bench_sendpath
import httpx
from _common import BASE_URL, KEY, TEXT, TRANSLATION, emit, interleaved, paired, summary, timed

import lingodoc

Call = Callable[[], str]
PROMPT = [{"role": "user", "content": f"Translate into German: {TEXT}"}]
OPENAI_ANSWER = {
    "id": "chatcmpl-0123456789",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": TRANSLATION, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 14, "completion_tokens": 3, "total_tokens": 17},
}
ANTHROPIC_ANSWER = {
    "id": "msg_0123456789",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": TRANSLATION}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 14, "output_tokens": 3},
}
DEEPL_ANSWER = {
    "translations": [
        {"detected_source_language": "EN", "text": TRANSLATION, "billed_characters": len(TEXT)}
    ]
}


def lingodoc_pair(stack: ExitStack) -> tuple[Call, Call]:
    """The `caller` pair of bench_sendpath.py, sync."""
    transport = httpx.MockTransport(bench_sendpath.answer)
    sdk = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=transport))
    stack.callback(sdk.close)
    return bench_sendpath.raw_call(httpx.Client(transport=transport)), bench_sendpath.sdk_call(sdk)


def httpx2_floor(
    url: str, headers: dict[str, str], payload: Any, answer: Any, read: Callable[[Any], str]
) -> tuple[Any, Call]:
    """An ``httpx2.Client`` on a ``MockTransport`` answering ``answer``, and the tuned call."""
    import httpx2

    body = json.dumps(answer).encode()
    answer_headers = [("Content-Type", "application/json"), ("X-Request-Id", "req_0123456789")]
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers=answer_headers, content=body)
    )
    raw = httpx2.Client(transport=transport)
    content = json.dumps(payload).encode()
    request = httpx2.Request(
        "POST", url, headers={**headers, "Content-Type": "application/json"}, content=content
    )

    def floor() -> str:
        return read(json.loads(raw.send(request).content))

    return httpx2.Client(transport=transport), floor


def openai_pair(stack: ExitStack) -> tuple[Call, Call]:
    import openai

    base_url = "https://api.openai.test/v1"
    key = "sk-bench-0123456789"
    http, floor = httpx2_floor(
        base_url + "/chat/completions",
        {"Authorization": f"Bearer {key}"},
        {"model": "gpt-4o-mini", "messages": PROMPT},
        OPENAI_ANSWER,
        lambda answer: answer["choices"][0]["message"]["content"],
    )
    sdk = openai.OpenAI(api_key=key, base_url=base_url, http_client=http)
    stack.callback(sdk.close)

    def call() -> str:
        completion = sdk.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)  # type: ignore[arg-type]
        return completion.choices[0].message.content or ""

    return floor, call


def anthropic_pair(stack: ExitStack) -> tuple[Call, Call]:
    import anthropic

    base_url = "https://api.anthropic.test"
    key = "sk-ant-bench-0123456789"
    http, floor = httpx2_floor(
        base_url + "/v1/messages",
        {"X-Api-Key": key, "Anthropic-Version": "2023-06-01"},
        {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": PROMPT},
        ANTHROPIC_ANSWER,
        lambda answer: answer["content"][0]["text"],
    )
    sdk = anthropic.Anthropic(api_key=key, base_url=base_url, http_client=http)
    stack.callback(sdk.close)

    def call() -> str:
        message = sdk.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=PROMPT)  # type: ignore[arg-type]
        return message.content[0].text  # type: ignore[union-attr,no-any-return]

    return floor, call


@contextmanager
def requests_answering(answer: Any) -> Iterator[None]:
    """requests' ``HTTPAdapter.send`` patched to answer ``answer``, the socket left out."""
    import requests
    import urllib3

    body = json.dumps(answer).encode()

    def send(self: requests.adapters.HTTPAdapter, request: Any, **kwargs: Any) -> Any:
        raw = urllib3.HTTPResponse(
            body=io.BytesIO(body),
            headers={"Content-Type": "application/json", "X-Trace-Id": "0123456789"},
            status=200,
            preload_content=False,
        )
        return self.build_response(request, raw)

    with mock.patch.object(requests.adapters.HTTPAdapter, "send", send):
        yield


def deepl_pair(stack: ExitStack) -> tuple[Call, Call]:
    import deepl
    import requests

    server_url = "https://api.deepl.test"
    key = "0123456789abcdef:fx"
    stack.enter_context(requests_answering(DEEPL_ANSWER))
    sdk = deepl.Translator(key, server_url=server_url)
    stack.callback(sdk.close)
    session = requests.Session()
    stack.callback(session.close)
    request = session.prepare_request(
        requests.Request(
            "POST",
            server_url + "/v2/translate",
            headers={"Authorization": f"DeepL-Auth-Key {key}"},
            json={"text": [TEXT], "source_lang": "EN", "target_lang": "DE"},
        )
    )

    def floor() -> str:
        return json.loads(session.send(request).content)["translations"][0]["text"]  # type: ignore[no-any-return]

    def call() -> str:
        result = sdk.translate_text(TEXT, source_lang="EN", target_lang="DE")
        return result.text  # type: ignore[union-attr]

    return floor, call


PEERS: dict[str, tuple[str, Callable[[ExitStack], tuple[Call, Call]]]] = {
    # name: (its distribution, what makes its floor and its call)
    "lingodoc": ("lingodoc", lingodoc_pair),
    "openai": ("openai", openai_pair),
    "anthropic": ("anthropic", anthropic_pair),
    "deepl": ("deepl", deepl_pair),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    result: dict[str, Any] = {
        "calls_per_round": args.calls,
        "cases": {},
        "missing": [],
        "failed": {},
    }
    cases: dict[str, Callable[[], float]] = {}
    with ExitStack() as stack:
        for name, (distribution, make) in PEERS.items():
            try:
                floor, call = make(stack)
                assert floor() == call() == TRANSLATION, f"{floor()!r}, {call()!r}"
            except ImportError:
                result["missing"].append(name)
                continue
            except Exception as exc:  # a peer's new release: say so, measure the others
                if name == "lingodoc":
                    raise
                first_line = (str(exc).splitlines() or [""])[0][:200]
                result["failed"][name] = f"{type(exc).__name__}: {first_line}"
                continue
            result["cases"][name] = {"version": metadata.version(distribution)}
            cases[f"{name} floor"] = timed(floor, args.calls)
            cases[name] = timed(call, args.calls)
        for case in cases.values():
            case()  # warm up: lazy imports, validators, caches
        samples = interleaved(cases, args.rounds)
    for name, row in result["cases"].items():
        floor_s, sdk_s = samples[f"{name} floor"], samples[name]
        row["floor_us"] = summary([s * 1e6 for s in floor_s])
        row["sdk_us"] = summary([s * 1e6 for s in sdk_s])
        row["overhead_us"] = paired(sdk_s, floor_s, lambda a, b: (a - b) * 1e6)
        row["ratio"] = paired(floor_s, sdk_s, lambda a, b: a / b)
    emit(result)


if __name__ == "__main__":
    main()
