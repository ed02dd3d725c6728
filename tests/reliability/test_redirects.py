"""Redirects are never followed: the key goes to the configured base URL and nowhere else.

The SDK sends every request with ``follow_redirects=False``, also through an
``http_client`` of the caller's that follows redirects. A 3xx is then a body
that is not the envelope: an ``UnexpectedResponse`` carrying the status, not
retried.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import lingodoc
from tests.conftest import API_KEY, call, close, default_ssl_context
from tests.reliability.fault_server import FaultServers, envelope_body, status

pytestmark = pytest.mark.aiohttp  # client_class runs on DefaultAioHttpClient too

TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
REDIRECTS = [301, 302, 303, 307, 308]
ClientClass = type[lingodoc.Client] | type[lingodoc.AsyncClient]


@pytest.fixture
def servers() -> Iterator[FaultServers]:
    started = FaultServers()
    yield started
    started.stop_all()


def http_client_for(
    client_class: ClientClass,
    *,
    follow_redirects: bool,
    transport: httpx.MockTransport | None = None,
) -> httpx.Client | httpx.AsyncClient:
    """A caller's own http client for ``client_class``, following redirects or not."""
    kind = httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient
    return kind(
        follow_redirects=follow_redirects,
        timeout=5.0,
        transport=transport,
        verify=default_ssl_context(),
    )


async def close_http(http: httpx.Client | httpx.AsyncClient) -> None:
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


@pytest.mark.parametrize("code", REDIRECTS)
@pytest.mark.parametrize("target_host", ["localhost", "127.0.0.1"])
@pytest.mark.parametrize("own_http", [False, True], ids=["sdk-http", "own-http-following"])
async def test_a_redirect_to_another_server_is_not_followed(
    client_class: ClientClass,
    servers: FaultServers,
    code: int,
    target_host: str,
    own_http: bool,
) -> None:
    target = servers(status(200, envelope_body(TRANSLATION)))
    location = target.base_url(target_host) + "/translate"
    origin = servers(status(code, b"", {"Location": location}))
    http = http_client_for(client_class, follow_redirects=True) if own_http else None
    client = client_class(API_KEY, base_url=origin.base_url(), timeout=5.0, http_client=http)  # type: ignore[arg-type]
    with pytest.raises(lingodoc.LingodocError) as caught:
        await call(client, "translate", "Hello", source_language="en", target_language="de")
    error = caught.value
    assert type(error) is lingodoc.UnexpectedResponse
    assert (error.status_code, error.code, error.body) == (code, None, "")
    assert len(origin.requests) == 1  # not retried
    assert origin.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert target.requests == []  # the key never reached the other server
    await close(client)
    if http is not None:
        assert not http.is_closed  # still the caller's
        await close_http(http)


@pytest.mark.parametrize("own_http", [False, True], ids=["sdk-http", "own-http-following"])
async def test_an_https_to_http_redirect_is_not_followed(
    client_class: ClientClass, own_http: bool
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.scheme == "https":
            location = str(request.url.copy_with(scheme="http"))
            return httpx.Response(301, headers={"Location": location})
        return httpx.Response(200, json={"success": True, "data": TRANSLATION})

    transport = httpx.MockTransport(handler)
    http = http_client_for(client_class, follow_redirects=own_http, transport=transport)
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1", http_client=http)  # type: ignore[arg-type]
    with pytest.raises(lingodoc.LingodocError) as caught:
        await call(client, "translate", "Hello", source_language="en", target_language="de")
    error = caught.value
    assert type(error) is lingodoc.UnexpectedResponse
    assert error.status_code == 301
    assert [str(request.url) for request in seen] == ["https://api.lingodoc.test/v1/translate"]
    await close(client)
    await close_http(http)
