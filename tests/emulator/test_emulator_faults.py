"""Fault injection: in-process (sync and async transport) and over real HTTP."""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock, fake_clock
from tests.emulator.conftest import START, http

TRANSLATE = {"text": "Hello", "source_language": "en", "target_language": "de"}


def code_of(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


@pytest.mark.parametrize(
    ("fault", "kwargs", "exception", "match"),
    [
        ("flood", {}, ValueError, "fault must be one of"),
        ("server_error", {"times": 0}, ValueError, "times must be a finite number of at least 1"),
        ("server_error", {"times": 1.5}, TypeError, "times must be an int"),
        ("server_error", {"status": 501}, ValueError, "500, 502, 503 or 504"),
        ("slow", {"delay": -1}, ValueError, "delay must be a finite number"),
        ("slow", {"delay": math.nan}, ValueError, "delay"),
        ("slow", {"delay": math.inf}, ValueError, "delay"),
        ("rate_limit", {"retry_after": -5}, ValueError, "retry_after"),
        ("rate_limit", {"retry_after": 2.5}, TypeError, "retry_after must be an int"),
        ("disconnect", {"method": "GET /"}, ValueError, "method must be an HTTP method"),
        ("disconnect", {"method": ""}, ValueError, "method"),
        ("disconnect", {"path": "translate"}, ValueError, "path must start with '/'"),
    ],
)
def test_bad_faults_are_refused(
    em: Emulator, client: httpx.Client, fault: Any, kwargs: Any, exception: Any, match: str
) -> None:
    with pytest.raises(exception, match=match):
        em.inject(fault, **kwargs)
    assert client.get("/documents").status_code == 200  # nothing was queued
    assert em.requests[0].status == 200


def test_status_only_matters_for_a_server_error(em: Emulator, client: httpx.Client) -> None:
    em.inject("rate_limit", status=429)
    assert client.get("/documents").status_code == 429


def test_rate_limit_fault_answers_429_with_retry_headers(
    em: Emulator, client: httpx.Client
) -> None:
    em.inject("rate_limit", retry_after=7)
    limited = client.post("/translate", json=TRANSLATE)
    after = client.post("/translate", json=TRANSLATE)

    assert limited.status_code == 429
    assert code_of(limited) == "RATE_LIMITED"
    assert limited.headers["retry-after"] == "7"
    assert limited.headers["x-ratelimit-reset"] == "7"
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.headers["x-ratelimit-limit"] == "1000"
    assert after.status_code == 200
    assert after.headers["x-ratelimit-remaining"] == "999"  # the fault did not count


def test_rate_limit_fault_follows_the_unix_reset_style() -> None:
    em = Emulator(reset_style="unix", clock=FakeClock(start=START))
    em.inject("rate_limit", retry_after=30)
    with http(em) as client:
        limited = client.get("/documents")
    assert limited.headers["x-ratelimit-reset"] == str(int(START) + 30)
    assert limited.headers["retry-after"] == "30"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (500, "INTERNAL_ERROR"),
        (502, "BAD_GATEWAY"),
        (503, "SERVICE_UNAVAILABLE"),
        (504, "GATEWAY_TIMEOUT"),
    ],
)
def test_server_error_fault_answers_the_chosen_status(
    em: Emulator, client: httpx.Client, status: int, code: str
) -> None:
    em.inject("server_error", status=status)
    response = client.get("/documents")
    assert response.status_code == status
    assert response.json() == {
        "success": False,
        "error": {"code": code, "message": f"Injected server error ({status})."},
    }
    assert response.headers["x-request-id"].startswith("req_")
    assert client.get("/documents").status_code == 200


def test_faults_apply_in_order_and_then_stop(em: Emulator, client: httpx.Client) -> None:
    em.inject("server_error", times=2)
    em.inject("rate_limit")
    statuses = [client.get("/documents").status_code for _ in range(4)]
    assert statuses == [500, 500, 429, 200]


def test_faults_can_be_limited_to_a_path_and_method(em: Emulator, client: httpx.Client) -> None:
    em.inject("server_error", path="/translations/*", status=503)
    em.inject("rate_limit", method="post", path="/v1/translate")
    statuses = [
        client.get("/documents").status_code,
        client.post("/translate/batch", json={**TRANSLATE, "texts": ["x"]}).status_code,
        client.get("/translations/tr_x").status_code,
        client.get("/translations/tr_x").status_code,
        client.post("/translate", json=TRANSLATE).status_code,
        client.post("/translate", json=TRANSLATE).status_code,
    ]
    assert statuses == [200, 200, 503, 404, 429, 200]


def test_fault_skips_authentication(em: Emulator, client: httpx.Client) -> None:
    em.inject("server_error")
    response = client.get("/documents", headers={"Authorization": ""})
    assert response.status_code == 500


def test_clear_faults_drops_pending_faults_and_job_failures(
    em: Emulator, client: httpx.Client
) -> None:
    em.inject("server_error", times=5)
    em.fail_next_job()
    em.clear_faults()
    started = client.post("/documents/doc_welcome/translate", json={"target_language": "de"})
    em.advance(6)
    assert started.status_code == 200
    assert em.translations[started.json()["data"]["translation_id"]]["status"] == "completed"


def test_faults_are_taken_exactly_once_under_concurrency(em: Emulator) -> None:
    em.inject("server_error", times=50)

    def hammer(_: int) -> list[int]:
        with http(em) as client:
            return [client.get("/documents").status_code for _ in range(20)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = [status for batch in pool.map(hammer, range(8)) for status in batch]
    assert statuses.count(500) == 50
    assert statuses.count(200) == 110


def test_disconnect_drops_the_request_before_it_is_handled(
    em: Emulator, client: httpx.Client
) -> None:
    em.inject("disconnect")
    with pytest.raises(httpx.RemoteProtocolError, match="disconnected without sending"):
        client.post("/documents/doc_welcome/translate", json={"target_language": "de"})
    after = client.get("/documents")
    assert em.translations == {}
    assert [r.status for r in em.requests] == [None, 200]
    assert after.headers["x-ratelimit-remaining"] == "999"


async def test_disconnect_in_async_transport(em: Emulator) -> None:
    em.inject("disconnect")
    async with httpx.AsyncClient(transport=em.transport(), base_url=em.base_url) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get("/documents")


def test_slow_answer_sleeps_on_the_clock() -> None:
    em = Emulator()
    em.inject("slow", delay=2.5)
    with fake_clock() as clock, http(em, timeout=10) as client:
        response = client.get("/documents")
    assert response.status_code == 200
    assert clock.sleeps == [2.5]


def test_slow_answer_past_the_read_timeout_times_out_but_was_carried_out() -> None:
    em = Emulator()
    em.inject("slow", delay=5)
    timeout = httpx.Timeout(30, read=1.5)
    with (
        fake_clock() as clock,
        http(em, timeout=timeout) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.post("/documents/doc_welcome/translate", json={"target_language": "de"})
    assert clock.sleeps == [1.5]
    assert len(em.translations) == 1


async def test_slow_answer_in_async_transport() -> None:
    em = Emulator()
    em.inject("slow", times=2, delay=4)
    headers = {"Authorization": f"Bearer {em.api_key}"}
    with fake_clock() as clock:
        async with httpx.AsyncClient(
            transport=em.transport(), base_url=em.base_url, headers=headers, timeout=3
        ) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/documents")
            response = await client.get("/documents", timeout=None)
    assert response.status_code == 200
    assert clock.sleeps == [3.0, 4.0]


def test_sdk_retries_injected_server_errors(em: Emulator) -> None:
    em.inject("server_error", times=2, status=502)
    with em.client() as client:
        result = client.translate("cat", source_language="en", target_language="es")
    assert result.translated_text == "gato"
    assert [r.status for r in em.requests] == [502, 502, 200]


def test_sdk_does_not_restart_a_document_job_after_a_dropped_connection(em: Emulator) -> None:
    em.inject("disconnect", path="/documents/*/translate")
    with em.client() as client, pytest.raises(lingodoc.APIConnectionError):
        client.translate_document("doc_welcome", target_language="de")
    assert [r.status for r in em.requests] == [None]


def test_sdk_job_failure_raises_translation_failed() -> None:
    em = Emulator()  # on the SDK's clock, so that the SDK's polling moves the job
    em.fail_next_job("Unsupported file format.")
    with fake_clock() as clock, em.client() as client:
        job = client.translate_document("doc_handbook", target_language="fr")
        with pytest.raises(lingodoc.TranslationFailed) as failed:
            client.wait_for_translation(job, poll_interval=1, timeout=60)
    assert clock.sleeps == [1.0, 1.0, 1.0]
    assert failed.value.status.status == "failed"
    assert failed.value.status.progress == 50


# -- over real HTTP -----------------------------------------------------------------------


@pytest.fixture
def served(em: Emulator) -> Iterator[httpx.Client]:
    with em.serve() as server, http(em, base_url=server.base_url, timeout=5) as client:
        yield client


def test_served_rate_limit_and_server_error_faults(em: Emulator, served: httpx.Client) -> None:
    em.inject("rate_limit", retry_after=12)
    em.inject("server_error", status=503)
    limited, unavailable, fine = (served.get("/documents") for _ in range(3))
    assert (limited.status_code, code_of(limited)) == (429, "RATE_LIMITED")
    assert limited.headers["retry-after"] == "12"
    assert (unavailable.status_code, code_of(unavailable)) == (503, "SERVICE_UNAVAILABLE")
    assert fine.status_code == 200


def test_served_disconnect_closes_the_connection(em: Emulator, served: httpx.Client) -> None:
    em.inject("disconnect")
    with pytest.raises(httpx.RemoteProtocolError):
        served.post("/translate", json=TRANSLATE)
    assert served.post("/translate", json=TRANSLATE).json()["data"]["translated_text"] == "Hallo"
    assert [r.status for r in em.requests] == [None, 200]


def test_served_slow_answer_times_out_a_short_read_timeout(
    em: Emulator, served: httpx.Client
) -> None:
    em.inject("slow", delay=30)  # cut short when the server stops
    with pytest.raises(httpx.ReadTimeout):
        served.get("/documents", timeout=httpx.Timeout(5, read=0.05))
    assert served.get("/documents").status_code == 200


def test_served_slow_answer_arrives(em: Emulator, served: httpx.Client) -> None:
    em.inject("slow", delay=0.01)
    response = served.get("/documents")
    assert response.status_code == 200
    assert [d["document_id"] for d in response.json()["data"]["documents"]] == [
        "doc_welcome",
        "doc_handbook",
    ]
