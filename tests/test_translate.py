"""translate: one text, POST /translate, a TextTranslation; on both clients."""

from __future__ import annotations

import respx

import lingodoc
from tests.conftest import call, envelope, sent_json

TRANSLATION = {"translated_text": "Hallo Welt", "source_language": "en", "target_language": "de"}


async def test_translate_posts_the_text_and_returns_a_text_translation(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    result = await call(
        client, "translate", "Hello world", source_language="en", target_language="de"
    )
    assert isinstance(result, lingodoc.TextTranslation)
    assert (result.translated_text, result.source_language, result.target_language) == (
        "Hallo Welt", "en", "de",
    )  # fmt: skip
    request = route.calls.last.request
    assert request.headers["Content-Type"] == "application/json"
    assert sent_json(route) == {
        "text": "Hello world", "source_language": "en", "target_language": "de",
    }  # fmt: skip


async def test_translate_sends_style_only_when_given(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    await call(
        client, "translate", "Hi", source_language="en", target_language="de", style="formal"
    )
    assert sent_json(route) == {
        "text": "Hi", "source_language": "en", "target_language": "de", "style": "formal",
    }  # fmt: skip
    await call(client, "translate", "Hi", source_language="en", target_language="de", style=None)
    assert "style" not in sent_json(route)  # type: ignore[operator]


async def test_translate_keeps_unicode_text_intact(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(TRANSLATION))
    text = "Grüße 👋 \u200b 日本語"
    await call(client, "translate", text, source_language="de", target_language="ja")
    assert sent_json(route)["text"] == text  # type: ignore[index]
