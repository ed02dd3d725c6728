"""Configuration: the key, the base URL, headers, timeouts and with_options copies.

What each setting does and what is refused at construction, for Client and AsyncClient
alike: settings that would leak the key, hang or fail every call (userinfo or a backslash
in ``base_url``, header injection, framing headers, a timeout that is no limit, unusable
proxy or certificate variables of the environment), and ``http://`` to a host other than
loopback unless ``allow_http_host=`` or ``LINGODOC_ALLOW_HTTP_HOST`` names it.
"""

from __future__ import annotations

import importlib.util
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

import lingodoc
import lingodoc.emulator
from lingodoc import _aiohttp
from lingodoc._config import environment_proxy
from tests.conftest import (
    API_KEY,
    BASE_URL,
    call,
    close,
    envelope,
    http_client_for,
)
from tests.reliability.fault_server import FaultServer, envelope_body, status

STATUS = {"translation_id": "tr_1", "status": "processing", "progress": 5}
PASSWORD = "s3cretPassw0rd"
URL = "http://emulator:8787/v1"
ENV = "LINGODOC_ALLOW_HTTP_HOST"
RESULT = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]


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


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "lingodoc" and record.levelno == logging.WARNING
    ]


async def sent_timeout(
    client: lingodoc.Client | lingodoc.AsyncClient, api: respx.MockRouter
) -> Any:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    await call(client, "get_translation", "tr_1")
    return route.calls.last.request.extensions["timeout"]


# The key and the base URL ---------------------------------------------------------


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


TRY_THE_EMULATOR = (
    "to try the SDK without an account, start the emulator: `lingodoc emulator` in another "
    "terminal, then export the two variables it prints; or, in code, use "
    "lingodoc.emulator.Emulator().client()"
)


def test_missing_key_says_where_to_get_one_and_how_to_try_the_emulator(
    client_class: type[lingodoc.Client],
) -> None:
    error = refusal(client_class, base_url=BASE_URL)
    assert str(error) == (
        "no api key given: pass api_key=... or set the LINGODOC_API_KEY environment variable\n"
        f"hint: create a key in your lingodoc account settings; {TRY_THE_EMULATOR}"
    )
    # The code it names works as written.
    with lingodoc.emulator.Emulator().client() as client:
        assert client.translate("Hello", source_language="en", target_language="de")


def test_missing_base_url_says_what_it_is_and_how_to_try_the_emulator(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINGODOC_API_KEY", API_KEY)
    error = refusal(client_class)
    assert str(error) == (
        "no base url given: pass base_url=... or set the LINGODOC_BASE_URL environment "
        "variable\nhint: base_url is the service's address, up to and including /v1; "
        f"{TRY_THE_EMULATOR}"
    )


@pytest.mark.parametrize("blank", [None, "", "  "])
def test_missing_key_and_base_url_are_one_error_naming_both(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch, blank: str | None
) -> None:
    monkeypatch.setenv("LINGODOC_BASE_URL", " ")  # set, but blank: missing all the same
    error = refusal(client_class, blank, base_url=blank)
    assert error.message == (
        "no api key and no base url given: "
        "pass api_key=... or set the LINGODOC_API_KEY environment variable, "
        "and pass base_url=... or set the LINGODOC_BASE_URL environment variable"
    )
    assert error.hint == (
        "create a key in your lingodoc account settings; base_url is the service's address, "
        f"up to and including /v1; {TRY_THE_EMULATOR}"
    )


@pytest.mark.parametrize("key", ["key with space", "key\nnewline", "caf\u00e9key1234567890", 12345])
def test_key_that_cannot_be_sent_is_refused_without_showing_it(
    client_class: type[lingodoc.Client], key: object
) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(key, base_url=BASE_URL)  # type: ignore[arg-type]
    assert str(key) not in str(caught.value)


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


# httpx would send a user name or password as Basic authentication instead of the key, and
# reads a backslash as a slash (`https://api.example.com\@evil.example/v1` is evil.example).
USERINFO = "user name or password"
ODD = "backslash, a space or a control character"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"http://alice:{PASSWORD}@127.0.0.1/v1", USERINFO),
        (f"https://alice:{PASSWORD}@api.lingodoc.test/v1", USERINFO),
        (f"https://:{PASSWORD}@api.lingodoc.test/v1", USERINFO),
        (f"https://alice:{PASSWORD}@@api.lingodoc.test/v1", USERINFO),
        ("https://token@api.lingodoc.test/v1", USERINFO),
        ("https://@api.lingodoc.test/v1", USERINFO),
        ("https://api.lingodoc.test\\@evil.example/v1", ODD),
        ("https://api.lingodoc.test\\evil.example/v1", ODD),
        ("https://api.lingodoc.test/v1\\..\\x", ODD),
        ("https://api.lingodoc.test /v1", ODD),
        ("https://api.lingodoc.test/v1\x00", ODD),
        ("https://api.lingodoc.test/\u2028v1", ODD),
    ],
)
def test_userinfo_a_backslash_space_or_control_character_in_base_url_is_refused(
    client_class: type[lingodoc.Client], url: str, reason: str
) -> None:
    error = refusal(client_class, API_KEY, base_url=url)
    assert "base_url" in str(error)
    assert reason in str(error)
    assert PASSWORD not in shown(error)


def test_userinfo_in_the_base_url_variable_is_refused_naming_it(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINGODOC_BASE_URL", f"http://alice:{PASSWORD}@localhost:8787/v1")
    error = refusal(client_class, API_KEY)
    assert "LINGODOC_BASE_URL" in str(error)
    assert "'http://alice:****@localhost:8787/v1'" in str(error)
    assert PASSWORD not in shown(error)


def test_a_refused_http_base_url_masks_its_password(client_class: type[lingodoc.Client]) -> None:
    # The userinfo check comes first; whatever the reason, the password never shows.
    error = refusal(client_class, API_KEY, base_url=f"ftp://bob:{PASSWORD}@files.example/v1")
    assert PASSWORD not in shown(error)
    assert "bob:****@" in str(error)


# http:// to a named host: refused unless opted in (allow_http_host) ----------------


def test_http_to_a_named_host_is_refused_by_default_pointing_at_the_opt_in(
    client_class: type[lingodoc.Client],
) -> None:
    error = refusal(client_class, API_KEY, base_url=URL)
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
        error = refusal(client_class, API_KEY, base_url=URL, allow_http_host="other-host")
    else:
        monkeypatch.setenv(ENV, "other-host")
        error = refusal(client_class, API_KEY, base_url=URL)
    assert "'other-host'" in str(error)
    assert "'emulator'" in str(error)


def test_the_argument_wins_over_the_variable(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "emulator")
    error = refusal(client_class, API_KEY, base_url=URL, allow_http_host="other-host")
    assert "'other-host'" in str(error)


def test_an_empty_variable_is_unset_and_an_empty_or_non_str_argument_is_refused(
    client_class: type[lingodoc.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "  ")
    assert "allow_http_host=" in str(refusal(client_class, API_KEY, base_url=URL))
    assert "empty" in str(refusal(client_class, API_KEY, base_url=URL, allow_http_host=""))
    assert "not bool" in str(refusal(client_class, API_KEY, base_url=URL, allow_http_host=True))


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
    assert client._shared.transport.proxy is None
    # An httpx client trusting the environment would go through the proxy.
    trusting = http_client_for(client_class)
    assert environment_proxy(trusting, URL) == "ALL_PROXY or HTTP_PROXY"
    await close(client)


async def test_a_default_aiohttp_client_for_the_named_host_takes_no_proxy_and_warns(
    no_proxies: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Like the SDK's own clients, not like an http_client of yours (refused, below): it is
    # the SDK's, so the SDK keeps the proxy out rather than refuse it.
    caplog.set_level(logging.WARNING, logger="lingodoc")
    no_proxies.setenv("HTTP_PROXY", "http://proxy.example:3128")
    http_client = lingodoc.DefaultAioHttpClient()
    client = lingodoc.AsyncClient(
        API_KEY, base_url=URL, allow_http_host="emulator", http_client=http_client
    )
    messages = warnings_of(caplog)
    assert len(messages) == 1
    assert "clear text" in messages[0]
    assert _aiohttp._handed[http_client].proxied is False  # its session will trust no proxy
    await client.aclose()


@pytest.mark.asyncio_only  # aiohttp runs on asyncio only
@pytest.mark.parametrize("when", ["made with them", "set before handing it over"])
async def test_a_default_aiohttp_clients_own_settings_reach_the_service(when: str) -> None:
    # Its headers, cookies, auth and hooks go through its send(); without any, the SDK sends
    # through its transport directly (and so, past the hand-over, none is applied).
    hooked: list[str] = []

    async def hook(request: httpx.Request) -> None:
        hooked.append(request.url.path)

    server = FaultServer([status(200, envelope_body(STATUS), {"Content-Type": "application/json"})])
    try:
        if when == "made with them":
            http_client = lingodoc.DefaultAioHttpClient(
                headers={"X-Team": "t1"}, event_hooks={"request": [hook]}
            )
        else:
            http_client = lingodoc.DefaultAioHttpClient()
            http_client.headers["X-Team"] = "t1"
            http_client.event_hooks = {"request": [hook], "response": []}
        async with lingodoc.AsyncClient(
            API_KEY, base_url=server.base_url(), http_client=http_client, max_retries=0
        ) as client:
            assert (await client.get_translation("tr_1")).progress == 5
    finally:
        server.stop()
    assert server.requests[0].headers["x-team"] == "t1"
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert hooked == ["/v1/translations/tr_1"]


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
def test_an_http_client_trusting_an_environment_proxy_is_refused(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch, variable: str
) -> None:
    no_proxies.setenv(variable, "http://proxy.example:3128")
    http_client = http_client_for(client_class)  # trust_env=True, the default
    error = refusal(
        client_class, API_KEY, base_url=URL, allow_http_host="emulator", http_client=http_client
    )
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


# Other settings refused at construction ----------------------------------------------


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


def test_a_default_header_whose_value_is_not_a_str_is_named(
    client_class: type[lingodoc.Client],
) -> None:
    expected = "default_headers cannot be sent as HTTP headers: the value of 'X-Tenant' must be"
    with pytest.raises(lingodoc.ConfigurationError, match=expected + " a str, not int"):
        client_class(API_KEY, base_url=BASE_URL, default_headers={"X-Tenant": 5})  # type: ignore[dict-item]


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


def test_http_client_of_the_wrong_kind_is_refused() -> None:
    with httpx.Client() as sync_http, pytest.raises(lingodoc.ConfigurationError) as caught:
        lingodoc.AsyncClient(API_KEY, base_url=BASE_URL, http_client=sync_http)  # type: ignore[arg-type]
    assert "httpx.AsyncClient" in str(caught.value)


# Headers ---------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "path"),
    [
        (
            "translate_batch",
            (["a"],),
            {"source_language": "en", "target_language": "de"},
            "/translate/batch",
        ),
        ("translate_document", ("doc_1",), {"target_language": "de"}, "/documents/doc_1/translate"),
        ("request", ("POST", "/webhooks"), {"json": {"url": "https://x"}}, "/webhooks"),
    ],
)
async def test_every_request_with_a_body_says_it_is_json(
    client: lingodoc.Client,
    api: respx.MockRouter,
    method: str,
    args: tuple,
    kwargs: dict,
    path: str,
) -> None:
    route = api.post(path).respond(
        json=envelope(
            {
                "translations": ["x"],
                "document_id": "doc_1",
                "translation_id": "tr_1",
                "status": "processing",
            }
        )
    )
    await call(client, method, *args, **kwargs)
    assert route.calls.last.request.headers["Content-Type"] == "application/json"


async def sent_with_default_headers(
    client_class: type[lingodoc.Client], api: respx.MockRouter, default_headers: dict[str, str]
) -> httpx.Headers:
    """The headers of a request of a client made with ``default_headers``."""
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    client = client_class(API_KEY, base_url=BASE_URL, default_headers=default_headers)
    await call(client, "get_translation", "tr_1")
    await close(client)
    return route.calls.last.request.headers


async def test_default_headers_are_sent_but_cannot_replace_the_key(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    default_headers = {"X-Team": "docs", "Authorization": "Bearer other"}
    headers = await sent_with_default_headers(client_class, api, default_headers)
    assert headers["X-Team"] == "docs"
    assert headers["Authorization"] == f"Bearer {API_KEY}"


async def test_default_authorization_in_any_case_cannot_replace_the_key(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    default_headers = {"authorization": "Bearer x", "accept": "*/*"}
    headers = await sent_with_default_headers(client_class, api, default_headers)
    assert headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    assert headers.get_list("Accept") == ["*/*"]


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
    default_headers = {"X-Trace": "a\tb c", "X-Empty": "", "Host": "api.lingodoc.test"}
    headers = await sent_with_default_headers(client_class, api, default_headers)
    assert (headers["X-Trace"], headers["X-Empty"]) == ("a\tb c", "")
    assert headers.get_list("Host") == ["api.lingodoc.test"]


async def test_the_http_clients_own_headers_are_sent_and_changes_to_them_count(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(STATUS))
    http = http_client_for(client_class, headers={"X-Proxy-Token": "one"})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    await call(client, "get_translation", "tr_1")
    assert route.calls.last.request.headers["X-Proxy-Token"] == "one"
    http.headers["X-Proxy-Token"] = "two"
    http.headers["Authorization"] = "Bearer not-the-key"
    await call(client, "get_translation", "tr_1")
    headers = route.calls.last.request.headers
    assert headers["X-Proxy-Token"] == "two"
    assert headers.get_list("Authorization") == [f"Bearer {API_KEY}"]
    await close(client)


async def test_cookies_and_query_parameters_of_the_http_client_are_sent(
    client_class: type[Any], api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(
        json=envelope(STATUS), headers={"Set-Cookie": "lb=node-7; Path=/"}
    )
    http = http_client_for(client_class, params={"tenant": "acme"})
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http)
    await call(client, "get_translation", "tr_1")
    first = route.calls.last.request
    assert first.url.params["tenant"] == "acme"
    assert "cookie" not in first.headers
    await call(client, "get_translation", "tr_1")  # the cookie the service set goes back
    assert route.calls.last.request.headers["Cookie"] == "lb=node-7"
    await close(client)


# Cookies: the SDK's own transport keeps none; an httpx client of yours keeps its own ------


@pytest.mark.parametrize("own", [True, False], ids=["own transport", "http_client"])
async def test_cookies_are_kept_only_by_an_http_client_of_yours(
    client_class: type[lingodoc.Client], api: respx.MockRouter, own: bool
) -> None:
    answer = {"translation_id": "tr_1", "status": "processing", "progress": 5}
    route = api.get("/translations/tr_1").respond(
        json={"success": True, "data": answer}, headers={"Set-Cookie": "session=abc; Path=/"}
    )
    http_client = None if own else http_client_for(client_class)
    client = client_class(API_KEY, base_url=BASE_URL, http_client=http_client)
    for _ in range(2):
        await call(client, "get_translation", "tr_1")
    sent = [request.headers.get("cookie") for request, _ in route.calls]
    assert sent == ([None, None] if own else [None, "session=abc"])
    await close(client)


# The timeout: "not set", a number, "no limit" -------------------------------------------


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


@pytest.mark.parametrize("timeout", [float("inf"), 0, -1])
def test_a_timeout_that_is_not_a_limit_is_refused_pointing_at_httpx_timeout_none(
    client_class: type[lingodoc.Client], timeout: float
) -> None:
    error = refusal(client_class, API_KEY, base_url=BASE_URL, timeout=timeout)
    assert "httpx.Timeout(None)" in str(error)
    client = client_class(API_KEY, base_url=BASE_URL)
    with pytest.raises(lingodoc.ConfigurationError, match=r"httpx\.Timeout\(None\)"):
        client.with_options(timeout=timeout)


# Past it a socket raises OverflowError: each call of a Client did, not at its construction.
def test_a_timeout_longer_than_python_can_wait_is_refused_at_once(
    client_class: type[lingodoc.Client],
) -> None:
    timeout = 1e300
    message = "^timeout must be a finite number of seconds, more than 0 and at most 9,223"
    with pytest.raises(lingodoc.ConfigurationError, match=message):
        client_class(API_KEY, base_url=BASE_URL, timeout=timeout)
    client = client_class(API_KEY, base_url=BASE_URL)
    with pytest.raises(lingodoc.ConfigurationError, match=message):
        client.with_options(timeout=timeout)


# with_options: copies with other settings, one pool ----------------------------------


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


async def test_with_options_sends_its_own_timeout(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.post("/translate").respond(json=envelope(RESULT))
    await call(client, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 30
    slow = client.with_options(timeout=120)
    await call(slow, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 120
    await call(client, "translate", "Hi", source_language="en", target_language="de")
    assert route.calls.last.request.extensions["timeout"]["read"] == 30


async def test_with_options_keeps_the_timeout_for_none_and_lifts_it_for_httpx_timeout_none(
    client_class: type[lingodoc.Client], api: respx.MockRouter
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, timeout=7)
    assert client.with_options(timeout=None).timeout == httpx.Timeout(7)
    unlimited = client.with_options(timeout=httpx.Timeout(None))
    assert await sent_timeout(unlimited, api) == httpx.Timeout(None).as_dict()
    assert await sent_timeout(client, api) == httpx.Timeout(7).as_dict()
    await close(client)


def test_with_options_validates_its_arguments(client_class: type[lingodoc.Client]) -> None:
    client = client_class(API_KEY, base_url=BASE_URL)
    with pytest.raises(lingodoc.ConfigurationError):
        client.with_options(max_retries=-3)
    with pytest.raises(TypeError):
        client.with_options(5)  # type: ignore[misc]


async def test_repr_shows_the_settings_and_only_the_last_four_characters_of_the_key(
    client_class: type[lingodoc.Client],
) -> None:
    # Only the key's last four characters show, for the client and each of its copies.
    client = client_class(API_KEY, base_url=BASE_URL)
    copy = client.with_options(timeout=5, max_retries=0)
    name = client_class.__name__
    start = f"{name}(base_url={BASE_URL!r}, api_key='****{API_KEY[-4:]}'"
    assert repr(client) == f"{start}, timeout=30.0, max_retries=2)"
    assert repr(copy) == f"{start}, timeout=5.0, max_retries=0)"
    unlimited = client.with_options(timeout=httpx.Timeout(None))
    assert repr(unlimited) == f"{start}, timeout=Timeout(timeout=None), max_retries=2)"
    await close(client)


# The environment httpx reads when the SDK builds its client ---------------------------


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("SSL_CERT_FILE", "/nonexistent/lingodoc/ca.pem", "FileNotFoundError"),
        ("ALL_PROXY", f"ftp://proxy:{PASSWORD}@proxy.example:21", "ValueError"),
        ("HTTPS_PROXY", f"http://proxy:{PASSWORD}@proxy.example:port", "InvalidURL"),
        ("https_proxy", "http://proxy.example:80a", "InvalidURL"),
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


def test_a_proxy_password_holding_an_at_sign_is_masked_whole(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    no_proxies.setenv("ALL_PROXY", "ftp://proxy:s3cret@half-of-it@proxy.example:21")
    error = refusal(client_class, API_KEY, base_url=BASE_URL)
    assert "proxy:****@proxy.example" in str(error)
    assert "s3cret" not in shown(error)
    assert "half-of-it" not in shown(error)


async def test_a_loopback_http_client_reads_no_proxy_or_certificate_variable(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    # With http:// (loopback only) the SDK's own client takes nothing from the environment:
    # a proxy would get the key in clear text, and there is no TLS to configure.
    no_proxies.setenv("ALL_PROXY", "ftp://proxy.example:21")
    no_proxies.setenv("SSL_CERT_FILE", "/nonexistent/lingodoc/ca.pem")
    client = client_class(API_KEY, base_url="http://127.0.0.1:8787/v1")
    assert client._shared.transport.proxy is None
    await close(client)


async def test_an_https_client_sends_through_the_proxy_the_environment_names(
    client_class: type[lingodoc.Client], no_proxies: pytest.MonkeyPatch
) -> None:
    no_proxies.setenv("HTTP_PROXY", "http://wrong.example:3128")  # not for https://
    no_proxies.setenv("https_proxy", f"http://user:{PASSWORD}@proxy.example:3128")
    client = client_class(API_KEY, base_url=BASE_URL)
    proxy = client._shared.transport.proxy
    assert (proxy.url.host, proxy.url.port) == (b"proxy.example", 3128)
    assert proxy.auth == (b"user", PASSWORD.encode())
    no_proxies.setenv("NO_PROXY", "api.lingodoc.test")
    assert client_class(API_KEY, base_url=BASE_URL)._shared.transport.proxy is None
    await close(client)
