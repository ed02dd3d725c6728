"""The errors a user meets say what happened (issue 15), on both clients.

``str(TranslationFailed)`` carries the service's reason; ``repr`` of an error shows its
code and status, of a client its settings; an argument refused before sending is a
``LingodocError`` as well as the ``ValueError`` or ``TypeError`` it always was.
"""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator
from typing import Any

import pytest
import respx

import lingodoc
from lingodoc import InvalidArgument, InvalidArgumentType, LingodocError, TranslationFailed
from lingodoc.emulator import Emulator
from tests.conftest import API_KEY, BASE_URL, call, close, envelope, failure


def assert_no_key(text: str) -> None:
    """No run of 6 characters of the key shows (its last 4 may)."""
    for i in range(len(API_KEY) - 5):
        assert API_KEY[i : i + 6] not in text, f"the API key leaks in {text!r}"


def failed_status(**extra: Any) -> dict[str, Any]:
    return {"translation_id": "tr_1", "status": "failed", "progress": 50, **extra}


async def wait_error(client: lingodoc.Client, api: respx.MockRouter, status: Any) -> Any:
    api.get("/translations/tr_1").respond(json=envelope(status))
    with pytest.raises(LingodocError) as caught:
        await call(client, "wait_for_translation", "tr_1")
    return caught.value


# str(TranslationFailed) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ({"code": "TRANSLATION_FAILED", "message": "The file is corrupt."},
         "TRANSLATION_FAILED: The file is corrupt."),
        ({"message": "The file is corrupt."}, "The file is corrupt."),
        ({"code": "UNSUPPORTED_FORMAT"}, "UNSUPPORTED_FORMAT"),
        ("Unsupported file\nformat.", "Unsupported file format."),  # one line
    ],
    ids=["code-and-message", "message", "code", "string"],
)  # fmt: skip
async def test_translation_failed_says_the_services_reason(
    client: lingodoc.Client, api: respx.MockRouter, error: Any, reason: str
) -> None:
    caught = await wait_error(client, api, failed_status(error=error))
    assert isinstance(caught, TranslationFailed)
    assert str(caught) == f"translation tr_1 failed: {reason}"
    assert caught.status.error == error  # kept whole on the status


@pytest.mark.parametrize("error", [None, 42, {"detail": "x"}, ""], ids=repr)
async def test_translation_failed_without_a_readable_reason_says_only_that_it_failed(
    client: lingodoc.Client, api: respx.MockRouter, error: Any
) -> None:
    status = failed_status() if error is None else failed_status(error=error)
    caught = await wait_error(client, api, status)
    assert str(caught) == "translation tr_1 failed"


async def test_a_long_reason_is_cut_and_an_echoed_key_masked_in_message_and_status(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    message = f"bad key {API_KEY} " + "x" * 5000
    caught = await wait_error(client, api, failed_status(error={"code": "E", "message": message}))
    assert len(str(caught)) < 300
    assert "characters)" in str(caught)
    assert f"****{API_KEY[-4:]}" in str(caught)
    pickled = pickle.dumps(caught).decode("latin-1")
    for text in (str(caught), repr(caught), repr(caught.status), pickled):
        assert_no_key(text)
    assert caught.status.error["message"].startswith(f"bad key ****{API_KEY[-4:]} xxx")


@pytest.fixture
async def emulated(request: pytest.FixtureRequest) -> AsyncIterator[lingodoc.Client]:
    """A Client or AsyncClient bound to an emulator in-process (its ``.emulator``)."""
    emulator = Emulator()
    emulator.fail_next_job("The file is corrupt.")
    if request.param == "sync":
        with emulator.client() as sync_client:
            yield sync_client
    else:
        async with emulator.async_client() as async_client:
            yield async_client  # type: ignore[misc]


async def test_the_emulators_failed_job_reason_reaches_the_message(
    emulated: lingodoc.Client,
) -> None:
    job = await call(emulated, "translate_document", "doc_handbook", target_language="it")
    with pytest.raises(TranslationFailed) as caught:
        await call(emulated, "wait_for_translation", job, poll_interval=1)
    assert str(caught.value).endswith("failed: TRANSLATION_FAILED: The file is corrupt.")


# repr -----------------------------------------------------------------------------------


async def test_repr_of_a_service_error_shows_code_status_and_request_id_not_the_key(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.post("/translate").respond(
        400, json=failure("TEXT_TOO_LONG", f"key {API_KEY}: too long"),
        headers={"X-Request-Id": "req_42"},
    )  # fmt: skip
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await call(client, "translate", "Hi", source_language="en", target_language="de")
    shown = repr(caught.value)
    assert shown == (
        f"TextTooLong(code='TEXT_TOO_LONG', status_code=400, "
        f"message='key ****{API_KEY[-4:]}: too long', request_id='req_42')"
    )
    assert repr(pickle.loads(pickle.dumps(caught.value))) == shown


def test_repr_of_a_local_error_leaves_out_what_is_not_set() -> None:
    error = lingodoc.InvalidLanguage("bad code", code="INVALID_LANGUAGE")
    assert repr(error) == "InvalidLanguage(code='INVALID_LANGUAGE', message='bad code')"
    assert repr(lingodoc.ServerError("x" * 1000, status_code=503)).endswith(
        "... (1,000 characters)')"
    )


async def test_repr_of_wait_errors_shows_the_translation_and_its_state(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    caught = await wait_error(client, api, failed_status())
    assert repr(caught) == (
        "TranslationFailed(translation_id='tr_1', state='failed', progress=50, "
        "message='translation tr_1 failed')"
    )
    status = lingodoc.TranslationStatus(translation_id="tr_2", status="processing", progress=5)
    assert repr(lingodoc.WaitTimeout(status, 30.0)) == (
        "WaitTimeout(translation_id='tr_2', state='processing', timeout=30.0)"
    )
    assert repr(lingodoc.WaitTimeout(None, 5.0)) == "WaitTimeout(timeout=5.0)"


async def test_repr_of_a_with_options_copy_shows_its_own_settings(
    client_class: type[lingodoc.Client],
) -> None:
    import httpx

    client = client_class(API_KEY, base_url=BASE_URL)
    copy = client.with_options(timeout=5, max_retries=0)
    name = client_class.__name__
    start = f"{name}(base_url={BASE_URL!r}, api_key='****{API_KEY[-4:]}'"
    assert repr(client) == f"{start}, timeout=30.0, max_retries=2)"
    assert repr(copy) == f"{start}, timeout=5.0, max_retries=0)"
    unlimited = client.with_options(timeout=httpx.Timeout(None))
    assert repr(unlimited) == f"{start}, timeout=Timeout(timeout=None), max_retries=2)"
    assert_no_key(repr(copy))
    await close(client)


# Arguments refused before sending ---------------------------------------------------------


REFUSED: list[tuple[str, tuple[Any, ...], dict[str, Any], type[Exception]]] = [
    ("translate_batch", ([],), {"source_language": "en", "target_language": "de"}, ValueError),
    ("translate_batch", ("Hello",), {"source_language": "en", "target_language": "de"},
     TypeError),
    ("translate", (42,), {"source_language": "en", "target_language": "de"}, TypeError),
    ("translate", ("Hi",), {"source_language": "en", "target_language": "de", "style": 1},
     TypeError),
    ("translate_many", ([],), {"source_language": "en", "target_language": "de"}, ValueError),
    ("translate_many", (["a"],), {"source_language": "en", "target_language": "de",
                                  "batch_size": 0}, ValueError),
    ("translate_document", ("",), {"target_language": "de"}, ValueError),
    ("translate_document", ("..",), {"target_language": "de"}, ValueError),
    ("translate_document", (7,), {"target_language": "de"}, TypeError),
    ("get_translation", ("",), {}, ValueError),
    ("wait_for_translation", ("tr_1",), {"poll_interval": 0}, ValueError),
    ("wait_for_translation", ("tr_1",), {"timeout": "soon"}, TypeError),
    ("request", ("GET", "https://evil.example/v1/documents"), {}, ValueError),
    ("request", ("GET", "/../admin"), {}, ValueError),
    ("request", ("GET /x", "/documents"), {}, ValueError),
    ("request", ("GET", 5), {}, TypeError),
    # What no request can carry: a lone surrogate in an id or a text, NaN in JSON.
    ("get_translation", ("tr_\udcff",), {}, ValueError),
    ("translate_document", ("doc_\udcff",), {"target_language": "de"}, ValueError),
    ("wait_for_translation", ("tr_\udcff",), {}, ValueError),
    ("translate", ("Hi \udcff",), {"source_language": "en", "target_language": "de"},
     ValueError),
    ("request", ("POST", "/documents"), {"json": {"n": float("nan")}}, ValueError),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "builtin"),
    REFUSED,
    ids=[f"{m}-{i}" for i, (m, *_) in enumerate(REFUSED)],
)
async def test_a_refused_argument_is_a_lingodoc_error_and_the_builtin_error(
    client: lingodoc.Client,
    api: respx.MockRouter,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    builtin: type[Exception],
) -> None:
    with pytest.raises(LingodocError) as caught:
        await call(client, method, *args, **kwargs)
    error = caught.value
    assert isinstance(error, builtin)
    assert type(error) is (InvalidArgument if builtin is ValueError else InvalidArgumentType)
    assert not api.calls  # refused before sending
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.args) == (type(error), error.args)
