"""list_documents: GET /documents, in either listing shape the service sends."""

from __future__ import annotations

import typing
from datetime import datetime, timedelta, timezone

import pytest
import respx

import lingodoc
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock
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
    assert [d.name for d in documents] == ["a.docx", "b.pdf"]
    assert all(isinstance(d, lingodoc.Document) for d in documents)


async def test_list_documents_of_another_shape_is_an_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/documents").respond(json=envelope({"items": []}))
    with pytest.raises(lingodoc.UnexpectedResponse, match="documents"):
        await call(client, "list_documents")


# The fields the service is known to send are typed; the spec does not give the listing's.


def test_the_known_fields_of_a_document_are_typed() -> None:
    hints = typing.get_type_hints(lingodoc.Document)
    assert hints["document_id"] is str
    assert hints["name"] == str | None
    assert hints["created_at"] == datetime | None
    assert hints["language"] == str | None


@pytest.fixture
def emulator(clock: FakeClock) -> Emulator:
    emulator = Emulator(clock=clock, seed_documents=False)
    clock.advance(60)
    emulator.add_document("doc_1", name="Contract.docx", language="de", pages=12)
    return emulator


async def test_a_document_listed_by_the_emulator_has_its_fields_typed(
    emulated: lingodoc.Client, clock: FakeClock
) -> None:
    [document] = await call(emulated, "list_documents")
    assert (document.document_id, document.name, document.language) == (
        "doc_1", "Contract.docx", "de"
    )  # fmt: skip
    # The emulator sends whole seconds, with a Z: an aware datetime in UTC.
    added = datetime.fromtimestamp(int(clock.time()), tz=timezone.utc)
    assert isinstance(document.created_at, datetime)
    assert document.created_at == added
    assert document.created_at.utcoffset() == timedelta(0)
    assert document.pages == 12  # a field the SDK does not know stays reachable
    assert document.model_extra == {"pages": 12}


async def test_the_fields_a_listing_leaves_out_are_none(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/documents").respond(json=envelope([{"id": "doc_1"}]))
    [document] = await call(client, "list_documents")
    assert document.document_id == "doc_1"
    assert (document.name, document.created_at, document.language) == (None, None, None)
    assert document.model_extra == {}


async def test_a_timestamp_without_an_offset_is_read_as_utc(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    listed = {"id": "doc_1", "created_at": "2026-11-27T23:56:20", "owner": {"team": "legal"}}
    api.get("/documents").respond(json=envelope([listed]))
    [document] = await call(client, "list_documents")
    assert document.created_at == datetime(2026, 11, 27, 23, 56, 20, tzinfo=timezone.utc)
    assert document.owner == {"team": "legal"}


@pytest.mark.parametrize(
    "field", [{"created_at": "last tuesday"}, {"name": ["a", "b"]}], ids=["created_at", "name"]
)
async def test_a_known_field_of_the_wrong_type_is_an_unexpected_response(
    client: lingodoc.Client, api: respx.MockRouter, field: dict[str, object]
) -> None:
    api.get("/documents").respond(json=envelope([{"id": "doc_1", **field}]))
    with pytest.raises(lingodoc.UnexpectedResponse, match="not a Document"):
        await call(client, "list_documents")
