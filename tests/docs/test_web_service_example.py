"""examples/web_service.py in-process: its HTTP answers for each failure of the service.

The example's own run (a subprocess, end to end over uvicorn) is in test_examples_run.py.
Here the FastAPI app is called through ``httpx.ASGITransport``, which runs no lifespan: the
app's client is the ``lingodoc_async_client`` fixture's, put in for the app's dependency
``get_translator`` with FastAPI's ``app.dependency_overrides``, so the emulator's fault
injection reaches it and the fake clock keeps the SDK's retries instant. This is also how an
application's web service can be tested.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_service.py"
FAILED = {"detail": "the translation service failed"}


@pytest.fixture(scope="module")
def web_service() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_service_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
async def http(
    web_service: ModuleType, lingodoc_async_client: lingodoc.AsyncClient
) -> AsyncIterator[httpx.AsyncClient]:
    app = web_service.app
    app.dependency_overrides[web_service.get_translator] = lambda: lingodoc_async_client
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
            yield client
    finally:
        app.dependency_overrides.clear()


async def translate(
    http: httpx.AsyncClient, text: str = "Hello", target: str = "de"
) -> httpx.Response:
    return await http.post("/translate", json={"text": text, "source": "en", "target": target})


async def test_translates(http: httpx.AsyncClient) -> None:
    response = await translate(http, "Good night", "fr")
    assert response.status_code == 200
    assert response.json() == {"translation": "Bon nuit"}


async def test_a_short_outage_is_retried_by_the_sdk(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator, lingodoc_clock: FakeClock
) -> None:
    lingodoc_emulator.inject("server_error", times=2)
    response = await translate(http)
    assert response.status_code == 200
    assert response.json() == {"translation": "Hallo"}
    assert [request.status for request in lingodoc_emulator.requests] == [500, 500, 200]
    assert len(lingodoc_clock.sleeps) == 2  # the SDK's backoff, on the fake clock


@pytest.mark.parametrize(
    ("text", "target", "detail"),
    [
        ("Hello", "xx", "'xx' is not a supported language"),
        ("x" * 10_001, "de", "text has 10,001 characters; the limit is 10,000"),
    ],
)
async def test_the_callers_mistakes_are_422s_with_the_message(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, text: str, target: str, detail: str
) -> None:
    response = await translate(http, text, target)
    assert response.status_code == 422
    assert detail in response.json()["detail"]
    assert caplog.records == []  # the caller's mistake: nothing for the operator


@pytest.mark.parametrize(
    "body", [{"text": "Hello", "source": "en"}, {"text": 1, "source": "en", "target": "de"}]
)
async def test_a_malformed_body_is_a_422_and_never_sent(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator, body: dict[str, object]
) -> None:
    response = await http.post("/translate", json=body)
    assert response.status_code == 422
    assert lingodoc_emulator.requests == []


async def test_a_spent_rate_limit_is_a_503_with_retry_after(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("rate_limit", retry_after=3600)
    response = await translate(http)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "3600"
    assert response.json() == {"detail": "too busy, try again later"}


async def test_a_lasting_outage_is_a_502_and_the_request_id_is_logged(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    lingodoc_emulator.inject("server_error", times=3)
    with caplog.at_level(logging.WARNING):
        response = await translate(http)
    assert response.status_code == 502
    assert response.json() == FAILED
    [record] = caplog.records
    assert "ServerError" in record.getMessage()
    assert "request_id='req_" in record.getMessage()


async def test_a_dropped_connection_is_a_502(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("disconnect", times=3)
    response = await translate(http)
    assert response.status_code == 502
    assert response.json() == FAILED


async def test_a_timeout_is_a_504(http: httpx.AsyncClient, lingodoc_emulator: Emulator) -> None:
    lingodoc_emulator.inject("slow", delay=600, times=3)  # past the client's 30 s timeout
    response = await translate(http)
    assert response.status_code == 504
    assert response.json() == {"detail": "the translation service timed out"}


async def test_a_translation_past_the_time_limit_is_cancelled_and_a_504(
    http: httpx.AsyncClient, web_service: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    cancelled = []

    class Stuck:
        async def translate(self, *args: object, **kwargs: object) -> None:
            try:
                await anyio.sleep_forever()
            finally:
                cancelled.append(True)

    monkeypatch.setitem(web_service.app.dependency_overrides, web_service.get_translator, Stuck)
    monkeypatch.setattr(web_service, "TIME_LIMIT", 0)  # past at once: no real waiting
    response = await translate(http)
    assert response.status_code == 504
    assert response.json() == {"detail": "the translation service timed out"}
    assert cancelled == [True]


async def test_a_refused_api_key_is_a_500_that_does_not_show_it(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    lingodoc_emulator.revoke_key(lingodoc_emulator.api_key)
    with caplog.at_level(logging.WARNING):
        response = await translate(http)
    assert response.status_code == 500
    assert response.json() == {"detail": "the service is misconfigured"}
    assert "Unauthorized" in caplog.text  # the operator learns why
    assert lingodoc_emulator.api_key not in caplog.text


async def test_the_lifespan_makes_the_client_and_closes_it(
    web_service: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LINGODOC_API_KEY", raising=False)
    app = web_service.app
    async with web_service.lifespan(app):
        client = app.state.lingodoc
        assert isinstance(client, lingodoc.AsyncClient)
        assert not client.is_closed
    assert client.is_closed
    assert "using the emulator" in capsys.readouterr().out
