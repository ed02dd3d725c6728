"""The emulator's endpoints, auth, errors, rate limits and jobs, in-process with plain httpx."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc import _clock
from lingodoc.emulator import MAX_BATCH_ITEMS, SUPPORTED_LANGUAGES, Emulator
from lingodoc.testing import FakeClock, fake_clock
from tests.emulator.conftest import START, http

TRANSLATE = {"text": "Hello world", "source_language": "en", "target_language": "de"}


def error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert body["success"] is False
    return response.status_code, body["error"]["code"], body["error"]["message"]


def start_job(client: httpx.Client, document_id: str = "doc_welcome") -> dict[str, Any]:
    response = client.post(f"/documents/{document_id}/translate", json={"target_language": "fr"})
    assert response.status_code == 200
    data: dict[str, Any] = response.json()["data"]
    return data


# -- translation --------------------------------------------------------------------------


def test_translate_answers_in_the_envelope_with_every_header(client: httpx.Client) -> None:
    response = client.post("/translate", json=TRANSLATE)

    assert response.status_code == 200
    assert response.json() == {
        "success": True,
        "data": {"translated_text": "Hallo Welt", "source_language": "en", "target_language": "de"},
    }
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"].startswith("req_")
    assert response.headers["x-ratelimit-limit"] == "1000"
    assert response.headers["x-ratelimit-remaining"] == "999"
    assert response.headers["x-ratelimit-reset"] == "3600"


@pytest.mark.parametrize(
    ("text", "target", "style", "expected"),
    [
        ("Hello world", "de", None, "Hallo Welt"),
        ("The cat is my friend.", "de", None, "Die Katze ist mein Freund."),
        ("HELLO, good morning!", "fr", None, "BONJOUR, bon matin!"),
        ("Thank you", "es", None, "Gracias tú"),
        ("Thank you", "es", "formal", "Gracias usted"),
        ("Thank you", "de", "formal", "Danke Sie"),
        ("Thank you", "fr", "marketing", "Merci tu"),
        ("Hello Bob", "de", None, "[de] Hallo Bob"),
        ("I have 3 cats", "es", None, "[es] I have 3 cats"),
        ("Hello", "ja", None, "[ja] Hello"),
        ("Hello world", "en", None, "Hello world"),
        ("", "de", None, ""),
    ],
)
def test_translation_follows_the_word_table(
    client: httpx.Client, text: str, target: str, style: str | None, expected: str
) -> None:
    body: dict[str, Any] = {"text": text, "source_language": "en", "target_language": target}
    if style is not None:
        body["style"] = style
    data = client.post("/translate", json=body).json()["data"]
    assert data["translated_text"] == expected


def test_text_of_exactly_the_limit_passes_and_one_more_is_too_long(client: httpx.Client) -> None:
    ok = client.post("/translate", json={**TRANSLATE, "text": "a" * 10_000})
    too_long = client.post("/translate", json={**TRANSLATE, "text": "a" * 10_001})

    assert ok.status_code == 200
    status, code, message = error(too_long)
    assert (status, code) == (400, "TEXT_TOO_LONG")
    assert "'text'" in message
    assert "10,001" in message


def test_batch_keeps_input_order(client: httpx.Client) -> None:
    body = {"texts": ["Good night", "Bob", "Yes"], "source_language": "en", "target_language": "es"}
    response = client.post("/translate/batch", json=body)
    assert response.json() == {
        "success": True,
        "data": {"translations": ["Bueno noche", "[es] Bob", "Sí"]},
    }


@pytest.mark.parametrize(
    ("texts", "code", "field"),
    [
        ([], "VALIDATION_ERROR", "'texts'"),
        (["x"] * (MAX_BATCH_ITEMS + 1), "VALIDATION_ERROR", "'texts'"),
        (["ok", 7], "VALIDATION_ERROR", "'texts[1]'"),
        (["ok", "ok", "a" * 10_001], "TEXT_TOO_LONG", "'texts[2]'"),
        ("not a list", "VALIDATION_ERROR", "'texts'"),
    ],
)
def test_batch_refuses_bad_items(client: httpx.Client, texts: Any, code: str, field: str) -> None:
    body = {"texts": texts, "source_language": "en", "target_language": "de"}
    status, actual_code, message = error(client.post("/translate/batch", json=body))
    assert (status, actual_code) == (400, code)
    assert field in message


def test_batch_of_the_maximum_size_passes(client: httpx.Client) -> None:
    body = {"texts": ["cat"] * MAX_BATCH_ITEMS, "source_language": "en", "target_language": "fr"}
    response = client.post("/translate/batch", json=body)
    assert response.json()["data"]["translations"] == ["chat"] * MAX_BATCH_ITEMS


@pytest.mark.parametrize("code", ["xx", "EN", "eng", "e", "", "d3"])
@pytest.mark.parametrize("field", ["source_language", "target_language"])
def test_unsupported_or_malformed_language_is_invalid_language(
    client: httpx.Client, field: str, code: str
) -> None:
    status, error_code, message = error(client.post("/translate", json={**TRANSLATE, field: code}))
    assert (status, error_code) == (400, "INVALID_LANGUAGE")
    # Its reason, and no advice: what to do depends on the client (the SDK folds case).
    assert message == f"Field '{field}': {code!r} is not a supported language."


def test_supported_languages_are_a_few_dozen_lower_case_codes() -> None:
    assert 30 <= len(SUPPORTED_LANGUAGES) <= 60
    assert all(len(code) == 2 and code.isascii() and code.islower() for code in SUPPORTED_LANGUAGES)
    assert {"en", "de", "fr", "es", "ja", "zh"} <= SUPPORTED_LANGUAGES


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/translate", {"source_language": "en", "target_language": "de"}, "'text'"),
        ("/translate", {**TRANSLATE, "text": 5}, "'text' must be a string"),
        ("/translate", {**TRANSLATE, "source_language": None}, "'source_language' is required"),
        ("/translate", {"text": "x", "source_language": "en"}, "'target_language'"),
        ("/translate", {**TRANSLATE, "style": 1}, "'style'"),
        ("/translate/batch", {"source_language": "en", "target_language": "de"}, "'texts'"),
        ("/documents/doc_welcome/translate", {}, "'target_language'"),
        (
            "/documents/doc_welcome/translate",
            {"target_language": "de", "use_translation_memory": "yes"},
            "'use_translation_memory' must be a boolean",
        ),
    ],
)
def test_missing_or_ill_typed_field_is_named(
    client: httpx.Client, path: str, body: dict[str, Any], field: str
) -> None:
    status, code, message = error(client.post(path, json=body))
    assert (status, code) == (400, "VALIDATION_ERROR")
    assert field in message


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        (b'{"text": ', "application/json", "not valid JSON"),
        (b'["Hello"]', "application/json", "JSON object"),
        (b"", "application/json", "not valid JSON"),
        (b"\xff\xfe", "application/json", "not valid JSON"),
        (b"text=Hello", "application/x-www-form-urlencoded", "Content-Type"),
        (b'{"text": "Hello"}', "text/plain", "Content-Type"),
    ],
)
def test_body_that_is_not_a_json_object_is_refused(
    client: httpx.Client, content: bytes, content_type: str, expected: str
) -> None:
    response = client.post("/translate", content=content, headers={"Content-Type": content_type})
    status, code, message = error(response)
    assert (status, code) == (400, "VALIDATION_ERROR")
    assert expected in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[" * 100_000, "not valid JSON: maximum recursion depth"),
        # Over Python's limit on integer digits (or, in a Python without one, not a string).
        (b'{"text": 1' + b"0" * 5000 + b"}", ""),
    ],
    ids=["too deep", "number too long"],
)
def test_body_too_deep_or_with_a_huge_number_is_refused(
    client: httpx.Client, content: bytes, expected: str
) -> None:
    response = client.post(
        "/translate", content=content, headers={"Content-Type": "application/json"}
    )
    status, code, message = error(response)
    assert (status, code) == (400, "VALIDATION_ERROR")
    assert expected in message
    assert len(message) < 300


def test_a_lone_surrogate_is_echoed_without_breaking_the_reply(client: httpx.Client) -> None:
    body = b'{"text": "\\ud800 hi", "source_language": "en", "target_language": "de"}'
    response = client.post("/translate", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert response.content.isascii()
    assert response.json()["data"]["translated_text"] == "[de] \ud800 hi"


def test_json_content_type_with_charset_is_accepted(client: httpx.Client) -> None:
    response = client.post(
        "/translate",
        content=b'{"text": "dog", "source_language": "en", "target_language": "de"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.json()["data"]["translated_text"] == "Hund"


# -- routing ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/nothing", "/translate/other", "/documents/doc_welcome", ""])
def test_unknown_path_is_not_found(client: httpx.Client, path: str) -> None:
    status, code, message = error(client.get(path))
    assert (status, code) == (404, "NOT_FOUND")
    assert message


def test_path_outside_v1_is_not_found(em: Emulator, client: httpx.Client) -> None:
    status, code, message = error(client.get("https://emulator.lingodoc.test/documents"))
    assert (status, code) == (404, "NOT_FOUND")
    assert "/v1" in message


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/translate", "POST"),
        ("PUT", "/translate/batch", "POST"),
        ("DELETE", "/documents", "GET"),
        ("GET", "/documents/doc_welcome/translate", "POST"),
        ("POST", "/translations/tr_1", "GET"),
    ],
)
def test_wrong_method_is_405_with_allow(
    client: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert error(response)[:2] == (405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == allow


def test_path_segments_are_percent_decoded(em: Emulator, client: httpx.Client) -> None:
    em.add_document("team/a b?c", name="Odd id")
    response = client.post("/documents/team%2Fa%20b%3Fc/translate", json={"target_language": "de"})
    assert response.json()["data"]["document_id"] == "team/a b?c"

    status, code, message = error(client.get("/translations/tr%2F..%2Fx"))
    assert (status, code) == (404, "NOT_FOUND")
    assert "tr/../x" in message


def test_trailing_slash_and_query_are_ignored(client: httpx.Client) -> None:
    assert client.get("/documents/?page=2").status_code == 200


def test_head_is_answered_as_get_without_a_body(em: Emulator, client: httpx.Client) -> None:
    head = client.head("/documents")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["x-ratelimit-remaining"] == "999"
    not_allowed = client.head("/translate")
    assert (not_allowed.status_code, not_allowed.headers["allow"]) == (405, "POST")
    assert [r.method for r in em.requests] == ["HEAD", "HEAD"]


def test_handle_takes_any_header_case_and_an_absolute_form_target(em: Emulator) -> None:
    headers = {"AUTHORIZATION": f"Bearer {em.api_key}"}
    absolute = em.handle("GET", "http://127.0.0.1:8787/v1/documents?page=2", headers, b"")
    origin = em.handle(
        "get", "/v1/translations/tr_x", {"Authorization": f"Bearer {em.api_key}"}, b""
    )
    assert absolute.status == 200
    assert origin.status == 404
    assert [tuple(r) for r in em.requests] == [
        ("GET", "/v1/documents", 200),
        ("GET", "/v1/translations/tr_x", 404),
    ]


# -- authentication -----------------------------------------------------------------------


def test_each_unauthorized_case_has_its_own_message_and_never_the_key(em: Emulator) -> None:
    read_only = em.create_key("reader", "read_only")
    revoked = em.create_key("old", "full_access")
    em.revoke_key(revoked)
    expired = em.create_key("temp", "read_write", expires_at=START - 1)
    unknown = "ld_" + "0" * 28 + "WXYZ"
    short = "ld_WXYZ"  # too short to show its last 4 characters: they would be most of it
    transport = em.transport()
    cases = {
        "missing": ({}, "/documents"),
        "malformed": ({"Authorization": f"Basic {em.api_key}"}, "/documents"),
        "unknown": ({"Authorization": f"Bearer {unknown}"}, "/documents"),
        "short": ({"Authorization": f"Bearer {short}"}, "/documents"),
        "revoked": ({"Authorization": f"Bearer {revoked}"}, "/documents"),
        "permission": ({"Authorization": f"Bearer {read_only}"}, "/translate"),
        "expired": ({"Authorization": f"Bearer {expired}"}, "/documents"),
    }
    messages = {}
    with httpx.Client(transport=transport, base_url=em.base_url) as client:
        for case, (headers, path) in cases.items():
            method = "POST" if path == "/translate" else "GET"
            response = client.request(method, path, headers=headers, json=TRANSLATE)
            status, code, messages[case] = error(response)
            assert (status, code) == (401, "UNAUTHORIZED"), case

    assert "Authorization header" in messages["missing"]
    # One reason each, the true one: an unknown key, short or not, is not said to be revoked.
    assert messages["unknown"] == "Invalid API key ending in 'WXYZ': it does not exist."
    assert messages["short"] == "Invalid API key: it does not exist."
    assert messages["revoked"] == "API key 'old' has been revoked."
    assert "Read Only" in messages["permission"]
    assert "expired" in messages["expired"]
    for message in messages.values():
        for key in (em.api_key, read_only, revoked, expired, unknown, short):
            assert key not in message
        assert "WXYZ" not in message or message == messages["unknown"]


@pytest.mark.parametrize("permission", ["read_only", "read_write", "full_access"])
def test_every_permission_reads_and_only_read_only_cannot_translate(
    em: Emulator, permission: Any
) -> None:
    with http(em) as owner:
        job = start_job(owner)
    with http(em, em.create_key("k", permission)) as client:
        reads = [
            client.get("/documents").status_code,
            client.get(f"/translations/{job['translation_id']}").status_code,
        ]
        writes = [
            client.post("/translate", json=TRANSLATE).status_code,
            client.post("/translate/batch", json={**TRANSLATE, "texts": ["x"]}).status_code,
            client.post(
                "/documents/doc_welcome/translate", json={"target_language": "de"}
            ).status_code,
        ]
    assert reads == [200, 200]
    assert writes == ([401] * 3 if permission == "read_only" else [200] * 3)


@pytest.mark.parametrize(
    "expires_at",
    [
        START + 60,
        datetime.fromtimestamp(START + 60, timezone.utc),
        datetime.fromtimestamp(START + 60, timezone.utc).replace(tzinfo=None),  # naive: UTC
        datetime.fromtimestamp(START + 60, timezone(timedelta(hours=2))),
    ],
)
def test_key_works_until_it_expires(em: Emulator, expires_at: Any) -> None:
    key = em.create_key("temporary", expires_at=expires_at)
    with http(em, key) as client:
        before = client.get("/documents").status_code
        em.advance(59.5)
        just_before = client.get("/documents").status_code
        em.advance(0.5)
        status, code, message = error(client.get("/documents"))
    assert (before, just_before) == (200, 200)
    assert (status, code) == (401, "UNAUTHORIZED")
    assert message == "API key 'temporary' expired at 2023-11-14T22:14:20Z."


def test_revocation_takes_effect_on_the_next_request(em: Emulator) -> None:
    key = em.create_key("doomed", "full_access")
    with http(em, key) as client:
        first = client.post("/translate", json=TRANSLATE).status_code
        em.revoke_key(key)
        second = client.post("/translate", json=TRANSLATE)
    assert first == 200
    assert error(second)[:2] == (401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("expires_at", "exception"),
    [
        ("2030-01-01T00:00:00Z", TypeError),
        (date(2030, 1, 1), TypeError),
        (True, TypeError),
        (math.nan, ValueError),
        (math.inf, ValueError),
    ],
)
def test_expiry_that_is_not_a_datetime_or_a_unix_time_is_refused(
    em: Emulator, expires_at: Any, exception: type[Exception]
) -> None:
    with pytest.raises(exception, match="expires_at"):
        em.create_key("bad", expires_at=expires_at)
    with http(em) as client:
        assert client.get("/documents").status_code == 200  # nothing half-made


def test_key_management_refuses_bad_input(em: Emulator) -> None:
    with pytest.raises(ValueError, match="permission"):
        em.create_key("k", "admin")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already exists"):
        em.create_key("k", key=em.api_key)
    with pytest.raises(KeyError):
        em.revoke_key("ld_unknown_key_value")
    assert em.create_key("fixed", key="ld_my_fixed_key_1234") == "ld_my_fixed_key_1234"


@pytest.mark.parametrize("bad", ["", "ld key", "ld_key\n", "ld_clé", 123])
def test_a_key_that_cannot_be_sent_in_a_header_is_refused_where_it_is_given(bad: Any) -> None:
    with pytest.raises(ValueError, match="a key must be a non-empty str") as info:
        Emulator(api_key=bad)
    assert str(bad) not in str(info.value) or bad == ""
    em = Emulator()
    with pytest.raises(ValueError, match="a key must be a non-empty str"):
        em.create_key("k", key=bad)
    assert len(em._state.keys) == 1  # the ready-made one only


def test_ready_made_key_is_random_full_access_and_settable() -> None:
    first, second = Emulator(), Emulator()
    assert first.api_key.startswith("ld_")
    assert len(first.api_key) == 35
    assert first.api_key != second.api_key
    assert Emulator(api_key="ld_chosen_key_0000").api_key == "ld_chosen_key_0000"
    assert first.api_key not in repr(first)


# -- rate limits --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "seats", "override", "limit"),
    [
        ("pro", 1, None, 1_000),
        ("pro", 5, None, 1_000),
        ("ultra", 1, None, 10_000),
        ("team", 3, None, 15_000),
        ("business", 2, None, 40_000),
        ("business", 2, 7, 7),
    ],
)
def test_rate_limit_follows_the_plan(
    plan: str, seats: int, override: int | None, limit: int
) -> None:
    em = Emulator(plan=plan, seats=seats, rate_limit=override)
    with http(em) as client:
        response = client.get("/documents")
    assert em.rate_limit == limit
    assert response.headers["x-ratelimit-limit"] == str(limit)
    assert response.headers["x-ratelimit-remaining"] == str(limit - 1)


@pytest.mark.parametrize(
    ("kwargs", "exception", "match"),
    [
        ({"plan": "free"}, ValueError, "plan"),
        ({"reset_style": "http-date"}, ValueError, "reset_style"),
        ({"seats": 0}, ValueError, "seats must be a finite number of at least 1"),
        ({"plan": "team", "seats": 1.5}, TypeError, "seats must be an int"),
        ({"job_duration": -1}, ValueError, "job_duration must be a finite number of at least 0"),
        ({"job_duration": math.nan}, ValueError, "job_duration"),
        ({"job_duration": math.inf}, ValueError, "job_duration"),
        ({"queue_time": math.nan}, ValueError, "queue_time"),
        ({"job_duration": "6"}, TypeError, "job_duration must be a number"),
        ({"rate_limit": 2.5}, TypeError, "rate_limit must be an int"),
        ({"rate_limit": -1}, ValueError, "rate_limit"),
    ],
)
def test_bad_settings_are_refused(kwargs: Any, exception: type[Exception], match: str) -> None:
    with pytest.raises(exception, match=match):
        Emulator(**kwargs)


@pytest.mark.parametrize(
    ("name", "value", "exception"),
    [
        ("rate_limit", 2.5, TypeError),
        ("rate_limit", -1, ValueError),
        ("rate_limit", None, TypeError),
        ("job_duration", math.nan, ValueError),
        ("queue_time", -1, ValueError),
        ("reset_style", "http-date", ValueError),
    ],
)
def test_settings_changed_later_are_checked_too(
    em: Emulator, client: httpx.Client, name: str, value: Any, exception: type[Exception]
) -> None:
    with pytest.raises(exception, match=name):
        setattr(em, name, value)
    assert client.get("/documents").status_code == 200
    assert em.rate_limit == 1000


def test_spent_window_answers_429_until_it_resets() -> None:
    em = Emulator(rate_limit=3, clock=FakeClock(start=START))
    other = em.create_key("other")
    with http(em) as client, http(em, other) as other_client:
        remaining = [client.get("/documents").headers["x-ratelimit-remaining"] for _ in range(3)]
        em.advance(100)
        spent = client.get("/documents")
        other_ok = other_client.get("/documents")
        em.advance(3500)
        renewed = client.get("/documents")

    assert remaining == ["2", "1", "0"]
    status, code, message = error(spent)
    assert (status, code) == (429, "RATE_LIMITED")
    assert message == "Rate limit of 3 requests per hour reached; retry in 3500 s."
    assert spent.headers["retry-after"] == "3500"
    assert spent.headers["x-ratelimit-remaining"] == "0"
    assert spent.headers["x-ratelimit-reset"] == "3500"
    assert other_ok.status_code == 200
    assert other_ok.headers["x-ratelimit-remaining"] == "2"
    assert renewed.status_code == 200
    assert renewed.headers["x-ratelimit-remaining"] == "2"
    assert renewed.headers["x-ratelimit-reset"] == "3600"


@pytest.mark.parametrize(("limit", "words"), [(1, "1 request"), (1000, "1,000 requests")])
def test_the_429_message_counts_the_limit_in_words(limit: int, words: str) -> None:
    em = Emulator(rate_limit=limit, clock=FakeClock(start=START))
    headers = {"Authorization": f"Bearer {em.api_key}"}
    statuses = {em.handle("GET", "/v1/documents", headers, b"").status for _ in range(limit)}
    with http(em) as client:
        spent = client.get("/documents")
    assert statuses == {200}
    assert error(spent) == (
        429,
        "RATE_LIMITED",
        f"Rate limit of {words} per hour reached; retry in 3600 s.",
    )


def test_reset_can_be_sent_as_a_unix_time() -> None:
    em = Emulator(rate_limit=1, reset_style="unix", clock=FakeClock(start=START + 0.25))
    with http(em) as client:
        first = client.get("/documents")
        em.advance(10)
        spent = client.get("/documents")
    assert first.headers["x-ratelimit-reset"] == str(math.ceil(START + 0.25) + 3600)
    assert int(spent.headers["x-ratelimit-reset"]) == int(START) + 3601
    assert spent.headers["retry-after"] == "3590"


def test_rate_limit_can_be_changed_while_running(em: Emulator, client: httpx.Client) -> None:
    client.get("/documents")
    em.rate_limit = 1
    assert error(client.get("/documents"))[:2] == (429, "RATE_LIMITED")


def test_every_response_carries_rate_limit_headers_and_a_fresh_request_id(em: Emulator) -> None:
    responses = []
    with http(em) as client:
        responses.append(client.get("/documents"))
        responses.append(client.get("/documents", headers={"Authorization": ""}))
        responses.append(client.get("/missing"))
        responses.append(client.delete("/documents"))
        responses.append(client.post("/translate", json={}))
        em.rate_limit = 0
        responses.append(client.get("/documents"))
    assert [r.status_code for r in responses] == [200, 401, 404, 405, 400, 429]
    for response in responses:
        assert response.headers["x-ratelimit-limit"].isdigit()
        assert response.headers["x-ratelimit-remaining"].isdigit()
        assert response.headers["x-ratelimit-reset"].isdigit()
    assert len({r.headers["x-request-id"] for r in responses}) == len(responses)


@pytest.fixture
def real_clock() -> Iterator[None]:
    """The real clock in force (the suite's autouse fake clock set aside), as in a user's app."""
    previous = _clock.install(_clock.SystemClock())
    yield
    _clock.install(previous)


@pytest.mark.usefixtures("real_clock")
def test_a_job_survives_a_switch_between_the_real_and_a_fake_clock() -> None:
    with Emulator().client() as client:
        job = client.translate_document("doc_welcome", target_language="fr")  # real clock
        with fake_clock() as clock:
            done = client.wait_for_translation(job)
            fake_job = client.translate_document("doc_welcome", target_language="de")
        fake_job_now = client.get_translation(fake_job.translation_id)  # real clock again
    assert done.status == "completed"
    assert clock.sleeps == [5.0, 5.0]  # not the host's uptime worth of polls
    assert fake_job_now.status == "processing"  # started 10 fake seconds ahead: not done


@pytest.mark.usefixtures("real_clock")
def test_a_rate_limit_window_survives_a_switch_between_the_real_and_a_fake_clock() -> None:
    em = Emulator(rate_limit=2)
    with em.client(max_retries=0) as client:
        client.list_documents()
        client.list_documents()
        with fake_clock(), pytest.raises(lingodoc.RateLimited) as on_fake:
            client.list_documents()
        with pytest.raises(lingodoc.RateLimited) as back_on_real:
            client.list_documents()
    for limited in (on_fake.value, back_on_real.value):
        assert limited.retry_after is not None
        assert 3590 < limited.retry_after <= 3600


@pytest.mark.usefixtures("real_clock")
def test_time_never_goes_back_when_a_fake_clock_that_ran_ahead_is_left() -> None:
    em = Emulator(rate_limit=100)
    with em.client() as client:
        with fake_clock() as clock:
            clock.advance(60)  # a 429 waited out, say: the fake clock is now ahead
            client.list_documents()  # opens the key's one-hour window, on fake time
            job = client.translate_document("doc_welcome", target_language="fr")
            done = client.wait_for_translation(job)
            ahead = clock.time() - time.time()
        back = client.get_translation(job.translation_id)  # real clock again
        client.list_documents()
        rate_limit = client.rate_limit
    assert ahead > 60
    assert (done.status, back.status) == ("completed", "completed")
    assert back.completed_at == done.completed_at
    assert rate_limit is not None
    assert 3500 < rate_limit.reset <= 3600  # the window is an hour, not more


# -- documents and jobs -------------------------------------------------------------------


def test_documents_are_listed_with_id_name_and_creation_time(em: Emulator) -> None:
    added = em.add_document(name="Quarterly report", pages=12)
    with http(em) as client:
        listing = client.get("/documents").json()["data"]["documents"]
    assert [doc["document_id"] for doc in listing] == [
        "doc_welcome",
        "doc_handbook",
        added["document_id"],
    ]
    assert added["document_id"].startswith("doc_")
    assert listing[2] == {
        "document_id": added["document_id"],
        "name": "Quarterly report",
        "created_at": "2023-11-14T22:13:20Z",
        "pages": 12,
    }
    assert em.documents[added["document_id"]]["pages"] == 12
    assert Emulator(seed_documents=False).documents == {}


@pytest.mark.parametrize("value", [date(2024, 1, 1), math.nan, {1, 2}, b"bytes"])
def test_document_fields_must_be_json_values(em: Emulator, value: Any) -> None:
    with pytest.raises(TypeError, match="document fields must be JSON values"):
        em.add_document("doc_bad", name="Bad", extra=value)
    assert "doc_bad" not in em.documents
    with http(em) as client:
        assert client.get("/documents").status_code == 200


def test_translation_job_moves_to_completed_as_the_fake_clock_advances() -> None:
    with fake_clock(FakeClock(start=START)) as clock:
        em = Emulator()  # reads the clock in force, like the SDK
        with http(em) as client:
            started = start_job(client)
            url = f"/translations/{started['translation_id']}"
            seen = [client.get(url).json()["data"]]
            for step in (3.0, 2.5, 0.5):
                clock.advance(step)
                seen.append(client.get(url).json()["data"])

    assert started == {
        "document_id": "doc_welcome",
        "translation_id": started["translation_id"],
        "status": "processing",
        "estimated_completion": "2023-11-14T22:13:26Z",
    }
    assert started["translation_id"].startswith("tr_")
    assert [(s["status"], s["progress"]) for s in seen] == [
        ("processing", 0),
        ("processing", 50),
        ("processing", 90),
        ("completed", 100),
    ]
    assert ["completed_at" in s for s in seen] == [False, False, False, True]
    assert seen[-1] == {
        "translation_id": started["translation_id"],
        "status": "completed",
        "progress": 100,
        "document_id": "doc_welcome",
        "target_language": "fr",
        "completed_at": "2023-11-14T22:13:26Z",
    }


def test_queued_job_is_pending_first(em: Emulator) -> None:
    em.queue_time, em.job_duration = 2.0, 4.0
    with http(em) as client:
        started = start_job(client)
        url = f"/translations/{started['translation_id']}"
        states = []
        for _ in range(4):
            data = client.get(url).json()["data"]
            states.append((data["status"], data["progress"]))
            em.advance(2)
    assert started["status"] == "pending"
    assert started["estimated_completion"] == "2023-11-14T22:13:26Z"
    assert states == [("pending", 0), ("processing", 0), ("processing", 50), ("completed", 100)]


def test_next_job_can_be_made_to_fail(em: Emulator) -> None:
    em.fail_next_job("The file is corrupt.")
    with http(em) as client:
        failing = start_job(client)["translation_id"]
        fine = start_job(client)["translation_id"]
        em.advance(2.9)
        early = client.get(f"/translations/{failing}").json()["data"]
        em.advance(10)
        failed = client.get(f"/translations/{failing}").json()["data"]
        completed = client.get(f"/translations/{fine}").json()["data"]
    assert (early["status"], early["progress"]) == ("processing", 40)
    assert failed["status"] == "failed"
    assert failed["progress"] == 50
    assert failed["error"] == {"code": "TRANSLATION_FAILED", "message": "The file is corrupt."}
    assert "completed_at" not in failed
    assert completed["status"] == "completed"


def test_job_failure_can_target_one_document(em: Emulator) -> None:
    em.fail_next_job(document_id="doc_handbook")
    with http(em) as client:
        welcome = start_job(client, "doc_welcome")["translation_id"]
        handbook = start_job(client, "doc_handbook")["translation_id"]
        em.advance(6)
    states = {tid: view["status"] for tid, view in em.translations.items()}
    assert states == {welcome: "completed", handbook: "failed"}


def test_unknown_document_or_translation_is_not_found(client: httpx.Client) -> None:
    missing_doc = client.post("/documents/doc_nope/translate", json={"target_language": "de"})
    missing_job = client.get("/translations/tr_nope")
    assert error(missing_doc)[:2] == (404, "NOT_FOUND")
    assert "doc_nope" in error(missing_doc)[2]
    assert error(missing_job)[:2] == (404, "NOT_FOUND")
    assert "tr_nope" in error(missing_job)[2]


def test_zero_duration_job_is_done_when_first_read(em: Emulator, client: httpx.Client) -> None:
    em.job_duration = 0
    started = start_job(client)
    assert started["status"] == "processing"
    assert em.translations[started["translation_id"]]["status"] == "completed"


def test_settings_changed_later_leave_started_jobs_alone(
    em: Emulator, client: httpx.Client
) -> None:
    started = start_job(client)
    em.job_duration, em.queue_time = 100, 50
    em.advance(6)
    assert em.translations[started["translation_id"]]["status"] == "completed"


@pytest.mark.parametrize("seconds", [-1, math.nan, math.inf])
def test_advance_refuses_to_go_back_or_to_infinity(em: Emulator, seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds must be a finite number"):
        em.advance(seconds)
    with http(em) as client:
        assert start_job(client)["estimated_completion"] == "2023-11-14T22:13:26Z"


def test_requests_are_recorded(em: Emulator, client: httpx.Client) -> None:
    client.get("/documents?x=1")
    client.post("/translate", json={})
    assert [tuple(r) for r in em.requests] == [
        ("GET", "/v1/documents", 200),
        ("POST", "/v1/translate", 400),
    ]


# -- async transport and the SDK ----------------------------------------------------------


async def test_async_transport_serves_the_same_core(em: Emulator) -> None:
    headers = {"Authorization": f"Bearer {em.api_key}"}
    async with httpx.AsyncClient(
        transport=em.transport(), base_url=em.base_url, headers=headers
    ) as client:
        translated = await client.post("/translate", json=TRANSLATE)
        started = await client.post(
            "/documents/doc_handbook/translate", json={"target_language": "es"}
        )
        em.advance(6)
        status = await client.get(f"/translations/{started.json()['data']['translation_id']}")
        unauthorized = await client.get("/documents", headers={"Authorization": "Bearer nope"})
    assert translated.json()["data"]["translated_text"] == "Hallo Welt"
    assert status.json()["data"]["status"] == "completed"
    assert error(unauthorized)[:2] == (401, "UNAUTHORIZED")


def test_sdk_client_waits_for_a_job_on_the_fake_clock() -> None:
    with fake_clock(FakeClock(start=START)) as clock:
        em = Emulator()
        with em.client() as client:
            translated = client.translate("good day", source_language="en", target_language="de")
            job = client.translate_document("doc_welcome", target_language="de")
            progress: list[int] = []
            done = client.wait_for_translation(
                job, on_progress=lambda s: progress.append(s.progress)
            )
            documents = client.list_documents()
    assert translated.translated_text == "gut Tag"
    assert translated.rate_limit is not None
    assert translated.rate_limit.remaining == 999
    assert progress == [0, 80, 100]
    assert clock.sleeps == [5.0, 5.0]
    assert done.completed_at == datetime.fromtimestamp(START + 6, timezone.utc)
    assert [doc.document_id for doc in documents] == ["doc_welcome", "doc_handbook"]


def test_sdk_client_maps_emulator_errors(em: Emulator) -> None:
    with em.client(api_key=em.create_key("reader", "read_only")) as reader:
        with pytest.raises(lingodoc.Unauthorized) as unauthorized:
            reader.translate("Hello", source_language="en", target_language="de")
        with pytest.raises(lingodoc.NotFound):
            reader.get_translation("tr_missing")
    with em.client() as writer, pytest.raises(lingodoc.InvalidLanguage):
        writer.translate("Hello", source_language="en", target_language="xx")
    assert unauthorized.value.status_code == 401
    assert unauthorized.value.request_id is not None
    assert unauthorized.value.request_id.startswith("req_")


async def test_sdk_async_client_translates(em: Emulator) -> None:
    async with em.async_client(max_retries=0) as client:
        result = await client.translate_batch(
            ["hello", "dog"], source_language="en", target_language="fr"
        )
    assert result.translations == ["bonjour", "chien"]
