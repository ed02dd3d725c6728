"""examples/web_service.py in-process: its HTTP answers for each failure of the service.

The example's own run (a subprocess, end to end) is in test_examples_run.py. Here the
service is started in the test's event loop on a client from the ``lingodoc_async_client``
fixture, so the emulator's fault injection reaches it, and the fake clock keeps the SDK's
retries instant: this is also how an application's web service can be tested.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

import lingodoc
from lingodoc.emulator import Emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_service.py"

# The example is an asyncio web service (asyncio.start_server): asyncio only.
pytestmark = pytest.mark.asyncio_only


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
    server = await web_service.start(lingodoc_async_client, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    try:
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}", timeout=10) as client:
            yield client
    finally:
        server.close()
        await server.wait_closed()


async def test_translates(http: httpx.AsyncClient) -> None:
    response = await http.post("/translate", json={"text": "Good night", "to": "fr"})
    assert response.status_code == 200
    assert response.json()["translated_text"] == "Bon nuit"


async def test_a_short_outage_is_retried_by_the_sdk(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("server_error", times=2)
    response = await http.post("/translate", json={"text": "Hello", "to": "de"})
    assert response.status_code == 200
    assert response.json()["translated_text"] == "Hallo"


async def test_a_lasting_outage_is_a_502_naming_the_request(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("server_error", times=3)
    response = await http.post("/translate", json={"text": "Hello", "to": "de"})
    assert response.status_code == 502
    assert response.json()["request_id"].startswith("req_")


async def test_a_dropped_connection_is_a_502(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("disconnect", times=3)
    response = await http.post("/translate", json={"text": "Hello", "to": "de"})
    assert response.status_code == 502
    assert response.json() == {"error": "the translation service failed", "request_id": None}


async def test_a_spent_rate_limit_is_a_503_with_retry_after(
    http: httpx.AsyncClient, lingodoc_emulator: Emulator
) -> None:
    lingodoc_emulator.inject("rate_limit", retry_after=3600)
    response = await http.post("/translate", json={"text": "Hello", "to": "de"})
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "3600"


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"text": "Hello", "to": "xx"}, "INVALID_LANGUAGE"),
        ({"text": "x" * 10_001, "to": "de"}, "TEXT_TOO_LONG"),
    ],
)
async def test_the_callers_mistakes_are_400s(
    http: httpx.AsyncClient, payload: dict[str, str], code: str
) -> None:
    response = await http.post("/translate", json=payload)
    assert response.status_code == 400
    assert response.json()["code"] == code


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/translate", b"not json", 400),
        ("POST", "/translate", b'{"text": 1, "to": "de"}', 400),
        ("GET", "/translate", b"", 405),
        ("GET", "/elsewhere", b"", 404),
        ("POST", "/translate", b"x" * (64 * 1024 + 1), 413),
    ],
)
async def test_requests_it_cannot_read(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int
) -> None:
    response = await http.request(method, path, content=body)
    assert response.status_code == status
    assert "error" in response.json()
