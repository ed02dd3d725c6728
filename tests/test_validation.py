"""Arguments the service would certainly refuse are refused before any request is sent."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
import respx

import lingodoc
from lingodoc import InvalidArgument, InvalidArgumentType, LingodocError
from tests.conftest import call, envelope

TRANSLATION = {"translated_text": "x", "source_language": "en", "target_language": "de"}


@pytest.fixture
def any_route(api: respx.MockRouter) -> respx.Route:
    return api.route().respond(json=envelope(TRANSLATION))


async def test_upper_case_language_codes_are_folded(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    await call(client, "translate", "Hi", source_language="EN", target_language="De")
    sent = json.loads(any_route.calls.last.request.content)
    assert (sent["source_language"], sent["target_language"]) == ("en", "de")


@pytest.mark.parametrize("code", ["eng", "e", "", "e1", "en-US", "zh_CN", "ü1", "éé", None, 12])
@pytest.mark.parametrize("argument", ["source_language", "target_language"])
async def test_malformed_language_code_raises_invalid_language_locally(
    client: lingodoc.Client, any_route: respx.Route, code: object, argument: str
) -> None:
    languages = {"source_language": "en", "target_language": "de", argument: code}
    with pytest.raises(lingodoc.InvalidLanguage) as caught:
        await call(client, "translate", "Hi", **languages)
    error = caught.value
    assert (error.status_code, error.code) == (None, "INVALID_LANGUAGE")
    assert argument in error.message
    assert not any_route.called


@pytest.mark.parametrize(
    ("method", "args", "kwargs"),
    [
        ("translate_batch", (["a"],), {"source_language": "english", "target_language": "de"}),
        ("translate_document", ("doc_1",), {"target_language": "deu"}),
    ],
)
async def test_other_methods_check_language_codes_too(
    client: lingodoc.Client, any_route: respx.Route, method: str, args: tuple, kwargs: dict
) -> None:
    with pytest.raises(lingodoc.InvalidLanguage):
        await call(client, method, *args, **kwargs)
    assert not any_route.called


async def test_text_of_exactly_10000_characters_is_sent(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    await call(client, "translate", "x" * 10_000, source_language="en", target_language="de")
    assert any_route.call_count == 1


async def test_text_over_10000_characters_raises_text_too_long_locally(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    with pytest.raises(lingodoc.TextTooLong) as caught:
        await call(client, "translate", "é" * 10_001, source_language="fr", target_language="de")
    assert (caught.value.status_code, caught.value.code) == (None, "TEXT_TOO_LONG")
    assert str(caught.value) == "TEXT_TOO_LONG: text has 10,001 characters; the limit is 10,000"
    assert not any_route.called


@pytest.mark.parametrize("text", [None, b"bytes", 42, ["a"]])
async def test_text_that_is_not_a_string_is_a_type_error(
    client: lingodoc.Client, any_route: respx.Route, text: object
) -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        await call(client, "translate", text, source_language="en", target_language="de")
    assert not any_route.called


async def test_empty_batch_is_refused_locally(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    with pytest.raises(ValueError, match="empty"):
        await call(client, "translate_batch", [], source_language="en", target_language="de")
    assert not any_route.called


@pytest.mark.parametrize(
    ("texts", "message"),
    [("one text", "list of str, not str"), (["a", 2], r"texts\[1\]"), (None, "list of str")],
)
async def test_batch_that_is_not_a_list_of_strings_is_a_type_error(
    client: lingodoc.Client, any_route: respx.Route, texts: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        await call(client, "translate_batch", texts, source_language="en", target_language="de")
    assert not any_route.called


@pytest.mark.parametrize(
    ("method", "kwargs", "message"),
    [
        ("translate", {"style": 1}, "style must be a str"),
        ("translate_document", {"use_translation_memory": "yes"}, "use_translation_memory"),
    ],
)
async def test_optional_arguments_of_the_wrong_type_are_type_errors(
    client: lingodoc.Client, any_route: respx.Route, method: str, kwargs: dict, message: str
) -> None:
    first = "Hi" if method == "translate" else "doc_1"
    languages = {"target_language": "de"} | (
        {"source_language": "en"} if method == "translate" else {}
    )
    with pytest.raises(TypeError, match=message):
        await call(client, method, first, **languages, **kwargs)
    assert not any_route.called


@pytest.mark.parametrize(
    ("identifier", "error"), [("", ValueError), (None, TypeError), (7, TypeError)]
)
async def test_bad_ids_are_refused_locally(
    client: lingodoc.Client, any_route: respx.Route, identifier: object, error: type
) -> None:
    with pytest.raises(error):
        await call(client, "get_translation", identifier)
    with pytest.raises(error):
        await call(client, "translate_document", identifier, target_language="de")
    assert not any_route.called


async def test_a_result_in_place_of_its_id_is_refused_with_which_field_to_pass(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    job = lingodoc.TranslationJob(translation_id="tr_1", document_id="doc_1", status="processing")
    with pytest.raises(lingodoc.InvalidArgumentType) as refused:
        await call(client, "get_translation", job)
    assert (refused.value.message, refused.value.hint) == (
        "translation_id must be a str, not TranslationJob",
        "pass its .translation_id",
    )
    document = lingodoc.Document(document_id="doc_1")
    for result in (job, document):
        with pytest.raises(lingodoc.InvalidArgumentType) as refused:
            await call(client, "translate_document", result, target_language="de")
        assert refused.value.hint == "pass its .document_id"
    assert not any_route.called


@pytest.mark.parametrize(
    "identifier", [".", "..", "../admin", "a/..", "a/../b", "./x", "..\\x", "a\\.", "..;x"]
)
async def test_ids_that_a_server_would_read_as_dot_segments_are_refused_locally(
    client: lingodoc.Client, any_route: respx.Route, identifier: str
) -> None:
    for method, argument, kwargs in [
        ("get_translation", "translation_id", {}),
        ("wait_for_translation", "translation_id", {}),
        ("translate_document", "document_id", {"target_language": "de"}),
    ]:
        with pytest.raises(ValueError, match=rf"^{argument} must not be '\.' or '\.\.'"):
            await call(client, method, identifier, **kwargs)
    job = lingodoc.TranslationJob(document_id="doc_1", translation_id=identifier)
    with pytest.raises(ValueError, match=r"^translation_id must not be '\.' or '\.\.'"):
        await call(client, "wait_for_translation", job)
    assert not any_route.called


LONG = "x" * 100_000


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "error"),
    [
        ("translate_document", (LONG + "/",), {"target_language": "de"}, ValueError),
        ("translate_document", (LONG + "/..",), {"target_language": "de"}, ValueError),
        ("get_translation", (LONG,), {}, ValueError),
        ("wait_for_translation", (LONG + "/..",), {}, ValueError),
        ("request", ("GET", f"/documents/{LONG}/../x"), {}, ValueError),
        ("request", ("GET", f"/documents/{LONG}"), {}, ValueError),
        ("request", (f"GET /{LONG}", "/documents"), {}, ValueError),
        ("translate", ("Hi",), {"source_language": LONG, "target_language": "de"},
         lingodoc.InvalidLanguage),
        ("translate_many", (["Hi"],), {"source_language": "en", "target_language": "de",
                                       "batch_size": -(10**5000)}, ValueError),
    ],
)  # fmt: skip
async def test_errors_quote_at_most_about_100_characters_of_an_argument(
    client: lingodoc.Client,
    any_route: respx.Route,
    method: str,
    args: tuple,
    kwargs: dict,
    error: type[Exception],
) -> None:
    with pytest.raises(error) as caught:
        await call(client, method, *args, **kwargs)
    assert len(str(caught.value)) < 400
    assert "x" * 101 not in str(caught.value)
    assert not any_route.called


async def test_a_size_too_large_to_print_is_refused_with_a_readable_message(
    client: lingodoc.Client, any_route: respx.Route
) -> None:
    with pytest.raises(ValueError, match=r"^batch_size must be an int, 1 or more, not <int"):
        await call(
            client, "translate_many", ["Hi"], source_language="en", target_language="de",
            batch_size=-(10**5000),
        )  # fmt: skip
    assert not any_route.called


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
