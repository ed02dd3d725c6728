"""Shared fixtures: every test runs against Client and AsyncClient alike, with a fake clock."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc.testing import FakeClock, fake_clock

BASE_URL = "https://api.lingodoc.test/v1"
API_KEY = "ld_test_5ecret0key0never0shown0WXYZ"


def envelope(data: Any) -> dict[str, Any]:
    """A success envelope around ``data``."""
    return {"success": True, "data": data}


def failure(code: str, message: str = "it went wrong") -> dict[str, Any]:
    """A failure envelope."""
    return {"success": False, "error": {"code": code, "message": message}}


async def call(
    client: lingodoc.Client | lingodoc.AsyncClient, method: str, *args: Any, **kwargs: Any
) -> Any:
    """Call a client method and await the result if the client is async.

    This lets one test body check the same behaviour on both clients.
    """
    result = getattr(client, method)(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def close(client: lingodoc.Client | lingodoc.AsyncClient) -> None:
    """Close either kind of client."""
    if isinstance(client, lingodoc.AsyncClient):
        await client.aclose()
    else:
        client.close()


@pytest.fixture(autouse=True)
def clock() -> Iterator[FakeClock]:
    """No test really sleeps: every wait of the SDK goes to this fake clock."""
    with fake_clock() as installed:
        yield installed


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LINGODOC_API_KEY", "LINGODOC_BASE_URL", "LINGODOC_LOG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """A respx router standing in for the service at BASE_URL."""
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture(params=["sync", "async"])
def client_class(
    request: pytest.FixtureRequest,
) -> type[lingodoc.Client] | type[lingodoc.AsyncClient]:
    """Client for the sync run of a test, AsyncClient for the async run."""
    return lingodoc.Client if request.param == "sync" else lingodoc.AsyncClient


@pytest.fixture
async def client(
    client_class: type[lingodoc.Client] | type[lingodoc.AsyncClient], api: respx.MockRouter
) -> AsyncIterator[lingodoc.Client | lingodoc.AsyncClient]:
    """A client of the kind under test, talking to the respx router."""
    instance = client_class(API_KEY, base_url=BASE_URL)
    yield instance
    await close(instance)


def rate_limit_headers(
    limit: int = 1000, remaining: int = 999, reset: int = 3600
) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset),
    }


def response(status: int = 200, json: Any = None, **kwargs: Any) -> httpx.Response:
    return httpx.Response(status, json=json, **kwargs)
