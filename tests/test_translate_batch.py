"""translate_batch: a list of texts, POST /translate/batch, translations in input order."""

from __future__ import annotations

import respx

import lingodoc
from tests.conftest import call, envelope, sent_json

LANGS = {"source_language": "en", "target_language": "de"}


async def test_translate_batch_returns_translations_in_input_order(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch").respond(
        json=envelope({"translations": ["eins", "zwei", "drei"]})
    )
    result = await call(client, "translate_batch", ["one", "two", "three"], **LANGS)
    assert isinstance(result, lingodoc.BatchTranslation)
    assert result.translations == ["eins", "zwei", "drei"]
    assert sent_json(route) == {
        "texts": ["one", "two", "three"], "source_language": "en", "target_language": "de",
    }  # fmt: skip


async def test_translate_batch_accepts_a_tuple(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate/batch").respond(json=envelope({"translations": ["a"]}))
    await call(client, "translate_batch", ("x",), **LANGS)
    assert sent_json(route)["texts"] == ["x"]
