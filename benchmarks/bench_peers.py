"""Target 5: the in-process per-call measurement for peer SDKs, against like-for-like mocks.

openai-python's ``chat.completions.create`` through the same ``httpx.MockTransport`` set-up as
lingodoc's (a canned chat completion), against raw httpx posting the same body; deepl-python's
``Translator.translate_text``, which sends through ``requests``, through a mounted
``requests`` adapter returning a canned translation, against raw ``requests`` through the same
adapter. Each peer is compared with the raw use of its own HTTP library, as lingodoc is with
httpx, and lingodoc's row is measured again in the same process for reference. Peers that are
not installed are reported as skipped. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from importlib import metadata
from typing import Any

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
    per_op,
    summary,
)

import lingodoc

CHAT_COMPLETION = {
    "id": "chatcmpl-0123456789",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": TRANSLATION, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}
DEEPL_TRANSLATION = {
    "translations": [
        {"detected_source_language": "EN", "text": TRANSLATION, "billed_characters": len(TEXT)}
    ]
}


def measure(
    raw: Callable[[], str], sdk: Callable[[], str], rounds: int, calls: int
) -> dict[str, Any]:
    assert raw() == sdk() == TRANSLATION
    for _ in range(200):
        raw()
        sdk()
    samples = interleaved({"raw": per_op(raw, calls), "sdk": per_op(sdk, calls)}, rounds)
    return {name: summary(values) for name, values in samples.items()}


def lingodoc_row(rounds: int, calls: int) -> dict[str, Any]:
    body = json.dumps(ENVELOPE).encode()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=RESPONSE_HEADERS, content=body)
    )
    raw_http = httpx.Client(transport=transport, headers={"Authorization": f"Bearer {KEY}"})
    sdk = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=transport))
    url = BASE_URL + "/translate"

    def raw() -> str:
        payload = {"text": TEXT, "source_language": "en", "target_language": "de"}
        return raw_http.post(url, json=payload).json()["data"]["translated_text"]  # type: ignore[no-any-return]

    def call() -> str:
        return sdk.translate(TEXT, source_language="en", target_language="de").translated_text

    return {"version": lingodoc.__version__, **measure(raw, call, rounds, calls)}


def openai_row(rounds: int, calls: int) -> dict[str, Any]:
    import openai

    body = json.dumps(CHAT_COMPLETION).encode()
    headers = [("Content-Type", "application/json"), ("X-Request-Id", "req_0123456789abcdef")]
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, content=body)
    )
    base_url = "https://api.openai.test/v1"
    raw_http = httpx.Client(transport=transport, headers={"Authorization": "Bearer sk-test"})
    sdk = openai.OpenAI(
        api_key="sk-test", base_url=base_url, http_client=httpx.Client(transport=transport)
    )
    messages = [{"role": "user", "content": f"Translate to German: {TEXT}"}]

    def raw() -> str:
        payload = {"model": "gpt-4o-mini", "messages": messages}
        response = raw_http.post(base_url + "/chat/completions", json=payload)
        return response.json()["choices"][0]["message"]["content"]  # type: ignore[no-any-return]

    def call() -> str:
        completion = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
        return completion.choices[0].message.content  # type: ignore[return-value]

    return {"version": metadata.version("openai"), **measure(raw, call, rounds, calls)}


def deepl_row(rounds: int, calls: int) -> dict[str, Any]:
    import deepl
    import requests
    from requests.adapters import BaseAdapter

    body = json.dumps(DEEPL_TRANSLATION).encode()

    class MockAdapter(BaseAdapter):  # type: ignore[misc]
        """Answers every request with the canned translation, like httpx.MockTransport."""

        def send(self, request: Any, **kwargs: Any) -> Any:
            response = requests.Response()
            response.status_code = 200
            response.headers.update(
                {"Content-Type": "application/json", "X-Trace-Id": "0123456789abcdef"}
            )
            response._content = body
            response.encoding = "utf-8"
            response.url = request.url
            response.request = request
            return response

        def close(self) -> None:
            pass

    server_url = "https://api.deepl.test"
    raw_http = requests.Session()
    raw_http.mount("https://", MockAdapter())
    raw_http.headers["Authorization"] = "DeepL-Auth-Key test:fx"
    sdk = deepl.Translator("test:fx", server_url=server_url, send_platform_info=False)
    sdk._client._session.mount("https://", MockAdapter())

    def raw() -> str:
        payload = {"text": [TEXT], "source_lang": "EN", "target_lang": "DE"}
        response = raw_http.post(server_url + "/v2/translate", json=payload)
        return response.json()["translations"][0]["text"]  # type: ignore[no-any-return]

    def call() -> str:
        return sdk.translate_text(TEXT, source_lang="EN", target_lang="DE").text  # type: ignore[union-attr]

    return {"version": metadata.version("deepl"), **measure(raw, call, rounds, calls)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    rows: dict[str, Any] = {"lingodoc": lingodoc_row(args.rounds, args.calls)}
    for name, row in (("openai", openai_row), ("deepl", deepl_row)):
        try:
            rows[name] = row(args.rounds, args.calls)
        except ImportError as exc:
            rows[name] = {"skipped": f"not installed ({exc.name})"}
    emit(rows)


if __name__ == "__main__":
    main()
