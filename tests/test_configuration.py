"""Configuration, headers, lifecycle and with_options, for Client and AsyncClient alike."""

from __future__ import annotations

import httpx
import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, BASE_URL, call, close, envelope

STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}


async def test_key_and_base_url_come_from_the_environment(
    client_class: type[lingodoc.Client], api: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINGODOC_API_KEY", "ld_from_env_0000111122223333")
    monkeypatch.setenv("LINGODOC_BASE_URL", "https://api.lingodoc.test/v1/")
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class()
    assert client.base_url == BASE_URL
    await call(client, "get_translation", "tr_1")
    assert route.calls.last.request.headers["Authorization"] == (
        "Bearer ld_from_env_0000111122223333"
    )
    await close(client)


async def test_arguments_win_over_the_environment(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINGODOC_BASE_URL", "https://env.example.com/v1")
    client = client_class(API_KEY, base_url="https://arg.example.com/v1")
    assert client.base_url == "https://arg.example.com/v1"
    await close(client)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"base_url": BASE_URL}, ["api_key", "LINGODOC_API_KEY"]),
        ({"api_key": API_KEY}, ["base_url", "LINGODOC_BASE_URL"]),
        ({"api_key": "  ", "base_url": BASE_URL}, ["api_key", "LINGODOC_API_KEY"]),
        ({"api_key": "", "base_url": BASE_URL}, ["api_key", "LINGODOC_API_KEY"]),
    ],
)
def test_missing_setting_names_the_argument_and_the_variable(
    client_class: type[lingodoc.Client], kwargs: dict[str, str], named: list[str]
) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(**kwargs)
    for word in named:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://api.lingodoc.com/v1",
        "http://10.0.0.5/v1",
        "ftp://api.lingodoc.com/v1",
        "api.lingodoc.com/v1",
        "https:///v1",
        "https://api.lingodoc.com/v1?x=1",
        "https://api.lingodoc.com/v1/#",
        "https://api.lingodoc.com/v1?",
        "http://evil.localhost/v1",
    ],
)
def test_unusable_base_url_is_refused(client_class: type[lingodoc.Client], url: str) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="base_url"):
        client_class(API_KEY, base_url=url)


def test_clear_text_http_is_refused_with_the_reason(client_class: type[lingodoc.Client]) -> None:
    with pytest.raises(lingodoc.ConfigurationError, match="clear text"):
        client_class(API_KEY, base_url="http://api.lingodoc.com/v1")


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8787/v1",
        "http://127.0.0.1:8787/v1",
        "http://127.1.2.3/v1",
        "http://[::1]:8787/v1",
    ],
)
async def test_http_is_allowed_for_loopback(client_class: type[lingodoc.Client], url: str) -> None:
    client = client_class(API_KEY, base_url=url)
    assert client.base_url == url
    await close(client)


@pytest.mark.parametrize("key", ["key with space", "key\nnewline", "caf\u00e9key1234567890", 12345])
def test_key_that_cannot_be_sent_is_refused_without_showing_it(
    client_class: type[lingodoc.Client], key: object
) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(key, base_url=BASE_URL)  # type: ignore[arg-type]
    assert str(key) not in str(caught.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": "30"},
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"timeout": True},
        {"max_retries": -1},
        {"max_retries": 1.5},
        {"default_headers": {"X-Name": "Zoë"}},
        {"default_headers": ["not", "a", "mapping"]},
    ],
)
def test_invalid_settings_are_refused(
    client_class: type[lingodoc.Client], kwargs: dict[str, object]
) -> None:
    with pytest.raises(lingodoc.ConfigurationError):
        client_class(API_KEY, base_url=BASE_URL, **kwargs)  # type: ignore[arg-type]


def test_http_client_of_the_wrong_kind_is_refused() -> None:
    with httpx.Client() as sync_http, pytest.raises(lingodoc.ConfigurationError) as caught:
        lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=sync_http)  # type: ignore[arg-type]
    assert "httpx.AsyncClient" in str(caught.value)


async def test_every_request_carries_auth_accept_and_user_agent(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert headers["Authorization"] == f"Bearer {API_KEY}"
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"].startswith(f"lingodoc-python/{lingodoc.__version__} ")
    assert "content-type" not in headers  # a GET has no body


async def test_default_headers_are_sent_but_cannot_replace_the_key(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class(
        API_KEY,
        base_url=BASE_URL,
        default_headers={"X-Team": "docs", "Authorization": "Bearer other"},
    )
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert headers["X-Team"] == "docs"
    assert headers["Authorization"] == f"Bearer {API_KEY}"
    await close(client)


async def test_default_authorization_in_any_case_cannot_replace_the_key(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class(
        API_KEY, base_url=BASE_URL, default_headers={"authorization": "Bearer x", "accept": "*/*"}
    )
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    assert headers.get_list("Accept") == ["*/*"]
    await close(client)


async def test_timeout_is_applied_to_each_request(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class(API_KEY, base_url=BASE_URL, timeout=7.5)
    await call(client, "get_translation", "tr_1")
    assert route.calls.last.request.extensions["timeout"]["read"] == 7.5
    await call(
        client.with_options(timeout=httpx.Timeout(2.0, connect=1.0)), "get_translation", "tr_1"
    )
    assert route.calls.last.request.extensions["timeout"] == {
        "connect": 1.0, "read": 2.0, "write": 2.0, "pool": 2.0,
    }  # fmt: skip
    assert client.timeout == httpx.Timeout(7.5)
    await close(client)


def test_repr_shows_only_the_last_four_characters_of_the_key(
    client_class: type[lingodoc.Client],
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL)
    text = repr(client)
    assert API_KEY not in text
    assert "****WXYZ" in text
    assert BASE_URL in text


async def test_closed_client_refuses_to_send(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    await close(client)
    assert client.is_closed
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(client, "get_translation", "tr_1")
    assert not route.called


def test_sync_context_manager_closes_its_own_pool() -> None:
    with lingodoc.Client(API_KEY, base_url=BASE_URL) as client:
        http = client._shared.http
        assert not http.is_closed
    assert client.is_closed
    assert http.is_closed


async def test_async_context_manager_closes_its_own_pool() -> None:
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        http = client._shared.http
        assert not http.is_closed
    assert client.is_closed
    assert http.is_closed


async def test_a_passed_in_http_client_is_never_closed(api: respx.MockRouter) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    with httpx.Client() as sync_http:
        with lingodoc.Client(API_KEY, base_url=BASE_URL, http_client=sync_http) as client:
            assert client.get_translation("tr_1").progress == 5
        assert client.is_closed
        assert not sync_http.is_closed
    async with httpx.AsyncClient() as async_http:
        async with lingodoc.AsyncClient(
            API_KEY, base_url=BASE_URL, http_client=async_http
        ) as aclient:
            assert (await aclient.get_translation("tr_1")).progress == 5
        assert not async_http.is_closed


async def test_sending_through_a_closed_passed_in_http_client_is_a_clear_error(
    api: respx.MockRouter,
) -> None:
    http = httpx.Client()
    http.close()
    client = lingodoc.Client(API_KEY, base_url=BASE_URL, http_client=http)
    with pytest.raises(lingodoc.LingodocError, match="http_client") as caught:
        client.get_translation("tr_1")
    assert not isinstance(caught.value, lingodoc.APIConnectionError)


async def test_with_options_copies_settings_and_shares_the_pool(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(
        json=envelope(STATUS),
        headers={
            "X-RateLimit-Limit": "10",
            "X-RateLimit-Remaining": "4",
            "X-RateLimit-Reset": "60",
        },
    )
    patient = client.with_options(timeout=120, max_retries=0)
    assert type(patient) is type(client)
    assert (patient.max_retries, patient.timeout) == (0, httpx.Timeout(120))
    assert (client.max_retries, client.timeout) == (2, httpx.Timeout(30))
    assert patient._shared is client._shared
    # The copy shows its own settings, the key still masked.
    assert repr(patient).endswith("api_key='****WXYZ', timeout=120.0, max_retries=0)")
    assert repr(client).endswith("api_key='****WXYZ', timeout=30.0, max_retries=2)")
    await call(patient, "get_translation", "tr_1")
    assert client.rate_limit is not None
    assert client.rate_limit.remaining == 4


async def test_closing_a_copy_leaves_the_original_open(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(json=envelope(STATUS))
    copy = client.with_options(max_retries=0)
    await close(copy)
    assert copy.is_closed
    assert not client.is_closed
    assert (await call(client, "get_translation", "tr_1")).progress == 5


async def test_closing_the_original_closes_its_copies(client: lingodoc.Client) -> None:
    copy = client.with_options(max_retries=0)
    await close(client)
    assert copy.is_closed
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(copy, "get_translation", "tr_1")


async def test_a_copy_of_a_closed_client_stays_closed(client: lingodoc.Client) -> None:
    await close(client)
    assert client.with_options(timeout=5).is_closed
    copy = client.with_options(max_retries=1)
    with pytest.raises(lingodoc.LingodocError, match="closed"):
        await call(copy, "list_documents")


def test_with_options_validates_its_arguments(client_class: type[lingodoc.Client]) -> None:
    client = client_class(API_KEY, base_url=BASE_URL)
    with pytest.raises(lingodoc.ConfigurationError):
        client.with_options(max_retries=-3)
    with pytest.raises(TypeError):
        client.with_options(5)  # type: ignore[misc]
