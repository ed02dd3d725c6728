"""list_documents: GET /documents, in either listing shape the service sends."""

from __future__ import annotations

import pytest
import respx

import lingodoc
from tests.conftest import call, envelope


@pytest.mark.parametrize(
    "listing",
    [
        [{"document_id": "doc_1", "name": "a.docx"}, {"id": "doc_2", "name": "b.pdf"}],
        {
            "documents": [
                {"document_id": "doc_1", "name": "a.docx"},
                {"id": "doc_2", "name": "b.pdf"},
            ],
            "total": 2,
        },
    ],
    ids=["bare-list", "object"],
)
async def test_list_documents_accepts_both_listing_shapes(
    client: lingodoc.Client, api: respx.MockRouter, listing: object
) -> None:
    api.get("/documents").respond(json=envelope(listing))
    documents = await call(client, "list_documents")
    assert [d.document_id for d in documents] == ["doc_1", "doc_2"]
    assert [d.model_extra["name"] for d in documents] == ["a.docx", "b.pdf"]
    assert all(isinstance(d, lingodoc.Document) for d in documents)


async def test_list_documents_of_another_shape_is_an_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/documents").respond(json=envelope({"items": []}))
    with pytest.raises(lingodoc.UnexpectedResponse, match="documents"):
        await call(client, "list_documents")
