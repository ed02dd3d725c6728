"""The SDK, sync and async, against the emulator served over real HTTP on loopback.

The emulator reads lingodoc's clock, which the autouse fake clock replaces, so a
document translation completes as the poller "sleeps", with no real waiting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import lingodoc
from lingodoc.emulator import Emulator, EmulatorServer
from tests.conftest import call, close
from tests.waiting import PATIENCE

pytestmark = pytest.mark.aiohttp  # client_class runs on DefaultAioHttpClient too


@pytest.fixture
def emulator() -> Emulator:
    return Emulator()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[EmulatorServer]:
    with emulator.serve() as running:
        yield running


@pytest.fixture
async def client(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> AsyncIterator[lingodoc.Client | lingodoc.AsyncClient]:
    instance = client_class(server.api_key, base_url=server.base_url)
    yield instance
    await close(instance)


async def client_with(
    client_class: type[lingodoc.Client], server: EmulatorServer, key: str, **options: Any
) -> Any:
    return client_class(key, base_url=server.base_url, **options)


async def client_with_a_new_key(
    client_class: type[lingodoc.Client], server: EmulatorServer, permission: str, **key: Any
) -> tuple[str, Any]:
    """A key the emulator makes with ``permission`` (and ``key``'s options), and a client of it."""
    made = server.emulator.create_key("test", permission, **key)
    return made, await client_with(client_class, server, made)


async def test_translate(client: lingodoc.Client) -> None:
    result = await call(
        client, "translate", "Hello world", source_language="en", target_language="de"
    )
    assert (result.translated_text, result.source_language, result.target_language) == (
        "Hallo Welt", "en", "de",
    )  # fmt: skip
    assert result.rate_limit is not None
    assert (result.rate_limit.limit, result.rate_limit.remaining) == (1000, 999)
    assert client.rate_limit == result.rate_limit


async def test_translate_with_formal_style(client: lingodoc.Client) -> None:
    result = await call(
        client, "translate", "Thank you", source_language="EN", target_language="de", style="formal"
    )
    assert result.translated_text == "Danke Sie"


async def test_translate_batch_keeps_order(client: lingodoc.Client) -> None:
    result = await call(
        client,
        "translate_batch",
        ["Hello", "Goodbye", "Cat"],
        source_language="en",
        target_language="es",
    )
    assert result.translations == ["Hola", "Adiós", "Gato"]


async def test_document_translation_from_start_to_completion(
    client: lingodoc.Client, emulator: Emulator
) -> None:
    emulator.add_document("doc_42", name="contract.docx")
    listed = await call(client, "list_documents")
    assert "doc_42" in [d.document_id for d in listed]

    job = await call(
        client, "translate_document", "doc_42", target_language="fr", use_translation_memory=True
    )
    assert (job.document_id, job.status) == ("doc_42", lingodoc.TranslationState.PROCESSING)
    assert job.estimated_completion.tzinfo is not None

    seen: list[int] = []
    done = await call(
        client, "wait_for_translation", job, on_progress=lambda s: seen.append(s.progress)
    )
    assert done.status is lingodoc.TranslationState.COMPLETED
    assert (done.progress, done.document_id, done.target_language) == (100, "doc_42", "fr")
    assert done.completed_at is not None
    assert seen == sorted(seen)
    assert seen[-1] == 100

    again = await call(client, "get_translation", job.translation_id)
    assert again.status is lingodoc.TranslationState.COMPLETED


async def test_failed_document_translation(client: lingodoc.Client, emulator: Emulator) -> None:
    emulator.fail_next_job("corrupt file")
    job = await call(client, "translate_document", "doc_welcome", target_language="de")
    with pytest.raises(lingodoc.TranslationFailed) as caught:
        await call(client, "wait_for_translation", job.translation_id)
    assert caught.value.status.status is lingodoc.TranslationState.FAILED


async def test_wait_timeout_against_a_slow_job(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    server.emulator.job_duration = 600
    client = await client_with(client_class, server, server.api_key)
    job = await call(client, "translate_document", "doc_welcome", target_language="de")
    with pytest.raises(lingodoc.WaitTimeout) as caught:
        await call(client, "wait_for_translation", job, timeout=30)
    assert caught.value.status is not None
    assert 0 <= caught.value.status.progress < 100
    await close(client)


async def test_request_reaches_other_paths(client: lingodoc.Client) -> None:
    data = await call(client, "request", "GET", "/documents")
    ids = [d["document_id"] for d in (data["documents"] if isinstance(data, dict) else data)]
    assert "doc_welcome" in ids


# The spec's errors, each through the real server.


async def test_unknown_key_is_unauthorized(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    client = await client_with(client_class, server, "ld_not_a_real_key_0000")
    with pytest.raises(lingodoc.Unauthorized) as caught:
        await call(client, "list_documents")
    assert (caught.value.status_code, caught.value.code) == (401, "UNAUTHORIZED")
    assert "ld_not_a_real_key_0000" not in str(caught.value)
    await close(client)


async def test_revoked_key_stops_working_at_once(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    key, client = await client_with_a_new_key(client_class, server, "read_write")
    assert await call(client, "list_documents")
    server.emulator.revoke_key(key)
    with pytest.raises(lingodoc.Unauthorized):
        await call(client, "list_documents")
    await close(client)


async def test_expired_key_is_unauthorized(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    _, client = await client_with_a_new_key(client_class, server, "full_access", expires_at=past)
    with pytest.raises(lingodoc.Unauthorized, match="expired"):
        await call(client, "list_documents")
    await close(client)


async def test_read_only_key_reads_but_cannot_start_translations(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    _, client = await client_with_a_new_key(client_class, server, "read_only")
    assert await call(client, "list_documents")
    with pytest.raises(lingodoc.Unauthorized, match="permission"):
        await call(client, "translate_document", "doc_welcome", target_language="de")
    await close(client)


async def test_unsupported_language_is_invalid_language(client: lingodoc.Client) -> None:
    with pytest.raises(lingodoc.InvalidLanguage) as caught:
        await call(client, "translate", "Hello", source_language="en", target_language="xx")
    assert (caught.value.status_code, caught.value.code) == (400, "INVALID_LANGUAGE")


async def test_server_side_text_too_long(client: lingodoc.Client) -> None:
    # translate() refuses this locally; request() lets the server say it.
    body = {"text": "x" * 10_001, "source_language": "en", "target_language": "de"}
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await call(client, "request", "POST", "/translate", json=body)
    assert (caught.value.status_code, caught.value.code) == (400, "TEXT_TOO_LONG")


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("translate_document", ("doc_missing",)),
        ("get_translation", ("tr_missing",)),
        ("request", ("GET", "/no/such/path")),
    ],
)
async def test_unknown_things_are_not_found(
    client: lingodoc.Client, method: str, args: tuple[str, ...]
) -> None:
    kwargs = {"target_language": "de"} if method == "translate_document" else {}
    with pytest.raises(lingodoc.NotFound) as caught:
        await call(client, method, *args, **kwargs)
    assert caught.value.status_code == 404


async def test_missing_field_is_a_bad_request_naming_it(client: lingodoc.Client) -> None:
    with pytest.raises(lingodoc.BadRequest, match="target_language") as caught:
        await call(
            client, "request", "POST", "/translate", json={"text": "x", "source_language": "en"}
        )
    assert caught.value.code == "VALIDATION_ERROR"


async def test_wrong_method_is_a_bad_request_with_status_405(client: lingodoc.Client) -> None:
    with pytest.raises(lingodoc.BadRequest) as caught:
        await call(client, "request", "DELETE", "/translate")
    assert caught.value.status_code == 405


async def test_spent_rate_limit_raises_rate_limited_at_once(
    client_class: type[lingodoc.Client], clock: Any
) -> None:
    with Emulator(rate_limit=2).serve() as server:
        client = await client_with(client_class, server, server.api_key)
        for _ in range(2):
            await call(client, "list_documents")
        with pytest.raises(lingodoc.RateLimited) as caught:
            await call(client, "list_documents")
        assert caught.value.retry_after is not None
        assert caught.value.retry_after > 60  # the hour's window: not waited out
        assert caught.value.rate_limit is not None
        assert caught.value.rate_limit.remaining == 0
        assert clock.sleeps == []
        await close(client)


# Injected faults, as a user's own tests would use them.


@pytest.mark.parametrize("fault", ["server_error", "disconnect", "rate_limit"])
async def test_one_injected_fault_is_retried_away(
    client: lingodoc.Client, emulator: Emulator, fault: Any
) -> None:
    emulator.inject(fault, times=1, path="/v1/translate")
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.translated_text == "Hallo"


async def test_persistent_server_errors_surface_after_the_retries(
    client: lingodoc.Client, emulator: Emulator
) -> None:
    emulator.inject("server_error", times=3, status=502)
    with pytest.raises(lingodoc.ServerError) as caught:
        await call(client, "list_documents")
    assert caught.value.status_code == 502


async def test_a_dropped_connection_is_not_retried_for_a_document_translation(
    client: lingodoc.Client, emulator: Emulator
) -> None:
    emulator.inject("disconnect", times=1)
    with pytest.raises(lingodoc.APIConnectionError):
        await call(client, "translate_document", "doc_welcome", target_language="de")


async def test_a_slow_answer_times_out(
    client_class: type[lingodoc.Client], server: EmulatorServer
) -> None:
    # Answered only as the server stops: the 0.1 s timeout ends the call first, however slow.
    server.emulator.inject("slow", times=1, delay=PATIENCE)
    client = await client_with(client_class, server, server.api_key, timeout=0.1, max_retries=0)
    with pytest.raises(lingodoc.APITimeoutError):
        await call(client, "list_documents")
    await close(client)
