"""Settings that would leak the key, hang or fail every call are refused at construction.

Issue 13: userinfo and backslashes in ``base_url``, the timeout of a passed-in
``http_client`` and the spelling of "no limit", header injection and framing
headers in ``default_headers``, and unusable proxy or certificate variables of
the environment. Each for Client and AsyncClient.
"""

from __future__ import annotations

import importlib.util
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, BASE_URL, call, close, envelope

STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}
PASSWORD = "s3cretPassw0rd"


def http_client_for(client_class: type[Any], **options: Any) -> httpx.Client | httpx.AsyncClient:
    return (httpx.Client if client_class is lingodoc.Client else httpx.AsyncClient)(**options)


def refusal(client_class: type[Any], *args: Any, **kwargs: Any) -> lingodoc.ConfigurationError:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(*args, **kwargs)
    return caught.value


def shown(error: BaseException) -> str:
    """What a traceback shown with its locals prints of ``error`` and the SDK's frames.

    The test's own frames, which hold the URL it passed, are left out.
    """
    text = ""
    exc: traceback.TracebackException | None = traceback.TracebackException.from_exception(
        error, capture_locals=True
    )
    while exc is not None:
        frames = [frame for frame in exc.stack if "tests" not in Path(frame.filename).parts]
        text += "".join(traceback.StackSummary.from_list(frames).format())
        text += "".join(exc.format_exception_only())
        exc = exc.__cause__ or exc.__context__
    return text


# userinfo and backslashes in base_url -------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"http://alice:{PASSWORD}@127.0.0.1/v1",
        f"https://alice:{PASSWORD}@api.lingodoc.test/v1",
        f"https://:{PASSWORD}@api.lingodoc.test/v1",
        f"https://alice:{PASSWORD}@@api.lingodoc.test/v1",
        "https://token@api.lingodoc.test/v1",
        "https://@api.lingodoc.test/v1",
    ],
)
def test_userinfo_in_base_url_is_refused_and_the_password_never_shown(
    client_class: type[lingodoc.Client], url: str
) -> None:
    error = refusal(client_class, API_KEY, base_url=url)
    assert "base_url" in str(error)
    assert "user name or password" in str(error)
    assert PASSWORD not in shown(error)


def test_userinfo_in_the_base_url_variable_is_refused_naming_it(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINGODOC_BASE_URL", f"http://alice:{PASSWORD}@localhost:8787/v1")
    error = refusal(client_class, API_KEY)
    assert "LINGODOC_BASE_URL" in str(error)
    assert "'http://alice:****@localhost:8787/v1'" in str(error)
    assert PASSWORD not in shown(error)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.lingodoc.test\\@evil.example/v1",
        "https://api.lingodoc.test\\evil.example/v1",
        "https://api.lingodoc.test/v1\\..\\x",
        "https://api.lingodoc.test /v1",
        "https://api.lingodoc.test/v1\x00",
        "https://api.lingodoc.test/\u2028v1",
    ],
)
def test_backslash_space_or_control_character_in_base_url_is_refused(
    client_class: type[lingodoc.Client], url: str
) -> None:
    error = refusal(client_class, API_KEY, base_url=url)
    assert "backslash, a space or a control character" in str(error)


def test_a_refused_http_base_url_masks_its_password(client_class: type[lingodoc.Client]) -> None:
    # The userinfo check comes first; whatever the reason, the password never shows.
    error = refusal(client_class, API_KEY, base_url=f"ftp://bob:{PASSWORD}@files.example/v1")
    assert PASSWORD not in shown(error)
    assert "bob:****@" in str(error)


# The timeout: "not set", a number, "no limit" -------------------------------------------


async def sent_timeout(
    client: lingodoc.Client | lingodoc.AsyncClient, api: respx.MockRouter
) -> Any:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    await call(client, "get_translation", "tr_1")
    return route.calls.last.request.extensions["timeout"]


async def test_a_passed_in_http_clients_timeout_is_kept_when_none_is_given(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    http = http_client_for(client_class, timeout=0.5)
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    assert client.timeout == httpx.Timeout(0.5)
    assert await sent_timeout(client, api) == httpx.Timeout(0.5).as_dict()
    await close(client)


async def test_a_timeout_given_to_the_client_wins_over_the_http_clients(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    http = http_client_for(client_class, timeout=0.5)
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http, timeout=12)
    assert await sent_timeout(client, api) == httpx.Timeout(12).as_dict()
    await close(client)


async def test_an_http_client_left_at_httpx_default_gets_the_sdk_default(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http_client_for(client_class))
    assert await sent_timeout(client, api) == httpx.Timeout(30.0).as_dict()
    await close(client)


async def test_timeout_none_means_not_set_and_httpx_timeout_none_means_no_limit(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    unset = client_class(API_KEY, base_url=BASE_URL, timeout=None)
    assert unset.timeout == httpx.Timeout(30.0)
    assert await sent_timeout(unset, api) == httpx.Timeout(30.0).as_dict()
    unlimited = client_class(API_KEY, base_url=BASE_URL, timeout=httpx.Timeout(None))
    assert await sent_timeout(unlimited, api) == httpx.Timeout(None).as_dict()
    await close(unset)
    await close(unlimited)


async def test_with_options_keeps_the_timeout_for_none_and_lifts_it_for_httpx_timeout_none(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, timeout=7)
    assert client.with_options(timeout=None).timeout == httpx.Timeout(7)
    unlimited = client.with_options(timeout=httpx.Timeout(None))
    assert await sent_timeout(unlimited, api) == httpx.Timeout(None).as_dict()
    assert await sent_timeout(client, api) == httpx.Timeout(7).as_dict()
    await close(client)


@pytest.mark.parametrize("timeout", [float("inf"), 0, -1])
def test_a_timeout_that_is_not_a_limit_is_refused_pointing_at_httpx_timeout_none(
    client_class: type[lingodoc.Client], timeout: float
) -> None:
    error = refusal(client_class, API_KEY, base_url=BASE_URL, timeout=timeout)
    assert "httpx.Timeout(None)" in str(error)
    client = client_class(API_KEY, base_url=BASE_URL)
    with pytest.raises(lingodoc.ConfigurationError, match=r"httpx\.Timeout\(None\)"):
        client.with_options(timeout=timeout)


# default_headers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Trace": "abc\r\nX-Injected: 1"},
        {"X-Trace": "abc\nmore"},
        {"X-Trace": "abc\rmore"},
        {"X-Trace": "a\x00b"},
        {"X-Trace": "a\x7fb"},
        {"X-Trace": " leading"},
        {"X-Trace": "trailing "},
        {"X Trace": "v"},
        {"X-Trace:": "v"},
        {"": "v"},
        {"X-Trace\r\nX-Injected": "v"},
    ],
)
def test_headers_that_cannot_be_sent_are_refused_without_quoting_the_value(
    client_class: type[lingodoc.Client], headers: dict[str, str]
) -> None:
    error = refusal(client_class, API_KEY, base_url=BASE_URL, default_headers=headers)
    assert "default_headers" in str(error)
    for value in headers.values():
        if len(value) > 3:
            assert value not in str(error)


@pytest.mark.parametrize(
    "name",
    [
        "Content-Length",
        "transfer-encoding",
        "Connection",
        "Keep-Alive",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Upgrade",
    ],
)
def test_headers_that_frame_the_body_or_manage_the_connection_are_refused(
    client_class: type[lingodoc.Client], name: str
) -> None:
    value = "chunked" if name.lower() in ("transfer-encoding", "te") else "5"
    error = refusal(client_class, API_KEY, base_url=BASE_URL, default_headers={name: value})
    assert repr(name) in str(error)


async def test_usable_default_headers_are_sent_as_given(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class(
        API_KEY,
        base_url=BASE_URL,
        default_headers={"X-Trace": "a\tb c", "X-Empty": "", "Host": "api.lingodoc.test"},
    )
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert (headers["X-Trace"], headers["X-Empty"]) == ("a\tb c", "")
    assert headers.get_list("Host") == ["api.lingodoc.test"]
    await close(client)


# The environment httpx reads when the SDK builds its client ---------------------------

PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("SSL_CERT_FILE", "/nonexistent/lingodoc/ca.pem", "FileNotFoundError"),
        ("ALL_PROXY", f"ftp://proxy:{PASSWORD}@proxy.example:21", "ValueError"),
        ("HTTPS_PROXY", f"http://proxy:{PASSWORD}@proxy.example:port", "InvalidURL"),
        ("http_proxy", "http://proxy.example:80a", "InvalidURL"),
        pytest.param(
            "HTTPS_PROXY",
            f"socks5://proxy:{PASSWORD}@proxy.example:1080",
            "ImportError",
            marks=pytest.mark.skipif(
                importlib.util.find_spec("socksio") is not None, reason="socksio is installed"
            ),
        ),
    ],
)
def test_an_unusable_environment_variable_is_a_configuration_error_naming_it(
    client_class: type[lingodoc.Client],
    no_proxies: pytest.MonkeyPatch,
    variable: str,
    value: str,
    problem: str,
) -> None:
    no_proxies.setenv(variable, value)
    error = refusal(client_class, API_KEY, base_url=BASE_URL)
    assert variable in str(error)
    assert problem in str(error)
    assert PASSWORD not in shown(error)
    assert error.__cause__ is None
    assert error.__suppress_context__ or error.__context__ is None


async def test_a_loopback_http_client_reads_no_proxy_or_certificate_variable(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    # With http:// (loopback only) the SDK's own client takes nothing from the environment:
    # a proxy would get the key in clear text, and there is no TLS to configure.
    no_proxies.setenv("ALL_PROXY", "ftp://proxy.example:21")
    no_proxies.setenv("SSL_CERT_FILE", "/nonexistent/lingodoc/ca.pem")
    client = client_class(API_KEY, base_url="http://127.0.0.1:8787/v1")
    assert client._shared.http.trust_env is False
    await close(client)


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("timeout", "x" * 100_000),
        ("timeout", 10**5000),  # past the largest float, and too long to print
        ("timeout", -(10**5000)),
        ("max_retries", "x" * 100_000),
        ("base_url", "ftp://" + "a" * 100_000),
        ("base_url", "https://" + "a" * 100_000 + ":pw@host/v1"),
    ],
    ids=[
        "long-timeout",
        "huge-timeout",
        "huge-negative-timeout",
        "long-max-retries",
        "long-base-url",
        "long-base-url-with-password",
    ],
)
def test_a_huge_setting_is_refused_with_a_short_message(
    client_class: type[Any], argument: str, value: object
) -> None:
    settings: dict[str, Any] = {"base_url": BASE_URL, argument: value}
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(API_KEY, **settings)
    assert type(caught.value) is lingodoc.ConfigurationError
    assert len(str(caught.value)) < 500, str(caught.value)[:600]
    assert ":pw@" not in str(caught.value)
