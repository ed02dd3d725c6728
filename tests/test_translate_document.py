"""translate_document: POST /documents/{id}/translate starts a job; ids stay one path segment."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import respx

import lingodoc
from tests.conftest import call, envelope, sent_json

JOB = {
    "document_id": "doc_1",
    "translation_id": "tr_1",
    "status": "processing",
    "estimated_completion": "2026-11-22T10:00:00Z",
}


async def test_translate_document_starts_a_job(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/documents/doc_1/translate").respond(json=envelope(JOB))
    job = await call(client, "translate_document", "doc_1", target_language="de")
    assert isinstance(job, lingodoc.TranslationJob)
    assert (job.document_id, job.translation_id) == ("doc_1", "tr_1")
    assert job.status is lingodoc.TranslationState.PROCESSING
    assert job.estimated_completion == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert sent_json(route) == {"target_language": "de"}


async def test_translate_document_sends_optional_fields_only_when_given(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/documents/doc_1/translate").respond(json=envelope(JOB))
    await call(
        client,
        "translate_document",
        "doc_1",
        target_language="FR",
        style="marketing",
        use_translation_memory=False,
    )
    assert sent_json(route) == {
        "target_language": "fr", "style": "marketing", "use_translation_memory": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("identifier", "raw_path"),
    [
        ("a/b", "/v1/translations/a%2Fb"),
        ("x?y=1#z", "/v1/translations/x%3Fy%3D1%23z"),
        ("...", "/v1/translations/..."),
        ("sp ace", "/v1/translations/sp%20ace"),
        ("50%", "/v1/translations/50%25"),
    ],
)
async def test_ids_are_escaped_so_they_cannot_change_the_path(
    client: lingodoc.Client, api: respx.MockRouter, identifier: str, raw_path: str
) -> None:
    status = {"translation_id": identifier, "status": "completed", "progress": 100}
    route = api.route().respond(json=envelope({**status, "document_id": identifier}))
    await call(client, "get_translation", identifier)
    assert route.calls.last.request.url.raw_path.decode() == raw_path
    await call(client, "translate_document", identifier, target_language="de")
    assert (
        route.calls.last.request.url.raw_path.decode()
        == raw_path.replace("/translations/", "/documents/") + "/translate"
    )
