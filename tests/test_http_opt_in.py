"""``http://`` to a named host (the emulator in docker-compose): refused unless opted in.

Issue 15: ``allow_http_host=`` or ``LINGODOC_ALLOW_HTTP_HOST`` names the one host an
``http://`` base URL may use besides loopback ones; the client then logs a warning, and
never lets a proxy carry the key in clear text. Each for Client and AsyncClient.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from lingodoc._config import environment_proxy
from tests.conftest import API_KEY, call, close, envelope

URL = "http://emulator:8787/v1"
ENV = "LINGODOC_ALLOW_HTTP_HOST"
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]
RESULT = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.fixture
def emulator_host() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_called=False) as router:
        router.post("/translate").respond(200, json=envelope(RESULT))
        yield router


def http_client_for(client_class: type[Any], **options: Any) -> httpx.Client | httpx.AsyncClient:
    return (httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient)(**options)


def refusal(client_class: type[Any], **kwargs: Any) -> lingodoc.ConfigurationError:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(API_KEY, **kwargs)
    return caught.value


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "lingodoc" and record.levelno == logging.WARNING
    ]


def test_http_to_a_named_host_is_refused_by_default_pointing_at_the_opt_in(
    client_class: type[lingodoc.Client],
) -> None:
    error = refusal(client_class, base_url=URL)
    assert "clear text" in str(error)
    assert "allow_http_host" in str(error)
    assert ENV in str(error)


@pytest.mark.parametrize("how", ["argument", "variable"])
async def test_http_to_the_named_host_is_allowed_and_sends_there(
    client_class: type[lingodoc.Client],
    emulator_host: respx.MockRouter,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    if how == "argument":
        client = client_class(API_KEY, base_url=URL, allow_http_host="Emulator")
    else:
        monkeypatch.setenv(ENV, " emulator ")
        client = client_class(API_KEY, base_url=URL)
    result = await call(client, "translate", "Hello", source_language="en", target_language="de")
    assert result.translated_text == "Hallo"
    assert str(emulator_host.calls.last.request.url) == f"{URL}/translate"
    await close(client)


@pytest.mark.parametrize("how", ["argument", "variable"])
def test_an_opt_in_naming_another_host_keeps_the_refusal_and_names_it(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "argument":
        error = refusal(client_class, base_url=URL, allow_http_host="other-host")
    else:
        monkeypatch.setenv(ENV, "other-host")
        error = refusal(client_class, base_url=URL)
    assert "'other-host'" in str(error)
    assert "'emulator'" in str(error)


def test_the_argument_wins_over_the_variable(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "emulator")
    error = refusal(client_class, base_url=URL, allow_http_host="other-host")
    assert "'other-host'" in str(error)


def test_an_empty_variable_is_unset_and_an_empty_or_non_str_argument_is_refused(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "  ")
    assert "allow_http_host=" in str(refusal(client_class, base_url=URL))
    assert "empty" in str(refusal(client_class, base_url=URL, allow_http_host=""))
    assert "not bool" in str(refusal(client_class, base_url=URL, allow_http_host=True))


async def test_the_opt_in_logs_one_warning_per_client_without_the_key(
    client_class: type[lingodoc.Client], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lingodoc")
    client = client_class(API_KEY, base_url=URL, allow_http_host="emulator")
    messages = warnings_of(caplog)
    assert len(messages) == 1
    assert "clear text" in messages[0]
    assert "emulator" in messages[0]
    assert API_KEY[-4:] in messages[0]
    assert API_KEY[:-4] not in caplog.text
    copy = client.with_options(max_retries=0)  # a copy is not a new construction
    assert len(warnings_of(caplog)) == 1
    await close(copy)
    await close(client)


async def test_loopback_and_https_stay_without_a_warning(
    client_class: type[lingodoc.Client], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lingodoc")
    for base_url in ("http://127.0.0.1:8787/v1", "https://emulator/v1"):
        await close(client_class(API_KEY, base_url=base_url, allow_http_host="emulator"))
    await close(client_class(API_KEY, base_url="http://localhost:8787/v1"))
    assert warnings_of(caplog) == []


async def test_the_sdks_own_client_reads_no_proxy_for_the_named_host(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    no_proxies.setenv("HTTP_PROXY", "http://proxy.example:3128")
    no_proxies.setenv("ALL_PROXY", "http://proxy.example:3128")
    client = client_class(API_KEY, base_url=URL, allow_http_host="emulator")
    http = client._shared.http
    assert http.trust_env is False
    assert environment_proxy(http, URL) is None
    # The same httpx client trusting the environment would go through the proxy.
    trusting = http_client_for(client_class)
    assert environment_proxy(trusting, URL) == "ALL_PROXY or HTTP_PROXY"
    await close(client)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
def test_an_http_client_trusting_an_environment_proxy_is_refused(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch, variable: str
) -> None:
    no_proxies.setenv(variable, "http://proxy.example:3128")
    http_client = http_client_for(client_class)  # trust_env=True, the default
    error = refusal(client_class, base_url=URL, allow_http_host="emulator", http_client=http_client)
    assert "proxy" in str(error)
    assert "clear text" in str(error)
    assert variable in str(error)  # named as it is spelled
    assert "NO_PROXY" in str(error)


async def test_an_http_client_that_goes_straight_to_the_host_is_accepted(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    no_proxies.setenv("HTTP_PROXY", "http://proxy.example:3128")
    http_client = http_client_for(client_class, trust_env=False)
    client = client_class(
        API_KEY, base_url=URL, allow_http_host="emulator", http_client=http_client
    )
    await close(client)
    no_proxies.setenv("NO_PROXY", "emulator")
    client = client_class(
        API_KEY, base_url=URL, allow_http_host="emulator", http_client=http_client_for(client_class)
    )
    await close(client)


async def test_a_loopback_http_client_is_left_as_set_up(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    # Loopback needs no opt-in, and a passed-in client is sent through as it is (a local
    # debugging proxy keeps working), as before.
    http_client = http_client_for(client_class, proxy="http://127.0.0.1:8080")
    client = client_class(API_KEY, base_url="http://127.0.0.1:8787/v1", http_client=http_client)
    await close(client)


@pytest.mark.parametrize("named", ["FD00::1", "fd00::1", "[fd00::1]"])
@pytest.mark.parametrize("written", ["FD00::1", "fd00::1"])
def test_an_ipv6_host_is_named_in_any_case(
    client_class: type[lingodoc.Client], named: str, written: str
) -> None:
    # httpx folds a DNS name to lower case, but keeps an IPv6 address as written.
    client = client_class(API_KEY, base_url=f"http://[{written}]:8787/v1", allow_http_host=named)
    assert client.base_url == f"http://[{written}]:8787/v1"
    if isinstance(client, lingodoc.Client):
        client.close()
