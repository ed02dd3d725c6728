"""The API key never shows: not in reprs, results, exceptions, pickles, tracebacks or logs.

"Shows" means any 8 characters in a row of the key, in any case, as sent, JSON-escaped,
URL-quoted or quoted by ``repr``: servers echo keys truncated, escaped or changed in case,
and the SDK masks all of those forms (only the last four characters may show, as
``****QZ7X``). Every check runs for ``Client`` and ``AsyncClient``; the failures come from
a server that echoes the key everywhere it can (error message, body, headers), from network
errors whose message holds it, and, over real sockets, from the emulator.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import logging
import pickle
import socket
import subprocess
import sys
import textwrap
import traceback
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import lingodoc
from lingodoc import _redaction
from lingodoc.emulator import Emulator
from lingodoc.testing import fake_clock
from tests.conftest import call, close, http_client_for
from tests.reliability.fault_server import FaultServer, status
from tests.waiting import PATIENCE

BASE_URL = "https://api.lingodoc.test/v1"
# Distinctive, and with characters that JSON and URLs escape.
API_KEY = "ld_S3cr3t/K3y+n0t_f0r_y0ur_3y3s_QZ7X"
# A key the emulator does not know, for 401s over real sockets.
OTHER_KEY = "ld_0ther/S3cr3t+nev3r_sh0wn_either_WV5Y"
# Keys may hold quotes and backslashes, which repr and JSON escape: with both quotes, repr
# quotes the key with ', with only ' it quotes with ".
QUOTES_KEY = "ld_1t's\"K3y\\w1th'qu0\"t3s\\QZ7X"
SINGLE_QUOTES_KEY = QUOTES_KEY.replace('"', "")

AnyClient = lingodoc.Client | lingodoc.AsyncClient
ClientClass = type[lingodoc.Client] | type[lingodoc.AsyncClient]

WINDOW = 8


def repr_forms(key: str) -> set[str]:
    """The key as ``repr`` of a str or bytes shows it, quoted with ' and (if it can be) with ".

    repr quotes with " a text holding ' and no ", and with ' (escaped) one holding both.
    """
    forms = {repr(key + "'\"")[1:-4], repr(key.encode() + b"'\"")[2:-4]}
    if '"' not in key:
        forms |= {repr(key + "'")[1:-2], repr(key.encode() + b"'")[2:-2]}
    return forms


def fragments(key: str) -> frozenset[str]:
    """Every 8-character window, lowercased, of each form of the key a message may show.

    The forms: as sent, JSON-escaped (slashes too or not), slash-escaped, URL-quoted, repr.
    """
    escaped = json.dumps(key)[1:-1]
    forms = {key, escaped, escaped.replace("/", "\\/"), key.replace("/", "\\/")}
    forms |= {quote(key, safe=""), *repr_forms(key)}
    return frozenset(
        form[start : start + WINDOW].lower()
        for form in forms
        for start in range(len(form) - WINDOW + 1)
    )


FRAGMENTS = frozenset(
    f for key in (API_KEY, OTHER_KEY, QUOTES_KEY, SINGLE_QUOTES_KEY) for f in fragments(key)
)


def assert_hidden(shown: str | bytes, where: str) -> None:
    """Fail if ``shown`` holds any window of any of the keys, in any case."""
    text = (shown.decode("latin-1") if isinstance(shown, bytes) else shown).lower()
    leaked = sorted(f for f in FRAGMENTS if f in text)
    assert not leaked, f"the key shows in {where}: {leaked[:3]} in ...{text[:2000]!r}"


def chain(error: BaseException) -> list[BaseException]:
    """The exception and every exception linked to it as cause or context."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__]
    return seen


def assert_exception_hides_key(error: BaseException) -> None:
    """Everything one can print, pickle or format of ``error`` and its chain is free of the key."""
    for link in chain(error):
        name = type(link).__name__
        assert_hidden(str(link), f"str({name})")
        assert_hidden(repr(link), f"repr({name})")
        assert_hidden(repr(link.args), f"{name}.args")
        assert_hidden(repr(vars(link)), f"vars({name})")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(error, protocol=protocol)
        assert_hidden(data, f"pickle.dumps(protocol={protocol})")
        copy = pickle.loads(data)
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        for shown in (str(copy), repr(copy), repr(copy.args), repr(vars(copy))):
            assert_hidden(shown, "the unpickled exception")
    assert_hidden("".join(traceback.format_exception(error)), "traceback.format_exception")
    with_locals = traceback.TracebackException.from_exception(error, capture_locals=True)
    assert_hidden("".join(with_locals.format()), "a traceback with capture_locals=True")


async def close_http(http_client: httpx.Client | httpx.AsyncClient) -> None:
    if isinstance(http_client, httpx.AsyncClient):
        await http_client.aclose()
    else:
        http_client.close()


async def failure_of(client: AnyClient, method: str, *args: Any, **kwargs: Any) -> Exception:
    """Call ``method`` (awaiting it on an AsyncClient) and return the LingodocError it raises.

    Caught here, so the traceback's frames are the SDK's and this one, whose locals hold no
    key: what an application's error handler would see.
    """
    try:
        outcome = getattr(client, method)(*args, **kwargs)
        if inspect.isawaitable(outcome):
            await outcome
    except lingodoc.LingodocError as error:
        return error
    raise AssertionError(f"{method} did not fail")


# --- a server that echoes the key --------------------------------------------------------

ECHO = (
    f"invalid key {API_KEY}; starts {API_KEY[:14]}..., ends {API_KEY[-12:]}, "
    f"escaped {json.dumps(API_KEY)[1:-1]}, quoted {quote(API_KEY, safe='')}, "
    f"header 'Authorization: Bearer {API_KEY}'"
)


def echo_headers(request: httpx.Request) -> dict[str, str]:
    """Headers that echo the key, as a careless server or proxy might."""
    return {
        "X-Request-Id": f"req-{API_KEY}",
        "X-Echo-Authorization": request.headers["authorization"],
        "Retry-After": "1",
    }


def envelope_error(status: int, code: str) -> Callable[[httpx.Request], httpx.Response]:
    def answer(request: httpx.Request) -> httpx.Response:
        body = {"success": False, "error": {"code": code, "message": ECHO, "key": API_KEY}}
        return httpx.Response(status, json=body, headers=echo_headers(request))

    return answer


def html_error(request: httpx.Request) -> httpx.Response:
    body = f"<html><body><h1>502</h1><pre>{ECHO}</pre></body></html>"
    return httpx.Response(502, text=body, headers=echo_headers(request))


def not_json(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, text=f"OK {ECHO}", headers=echo_headers(request))


def wrong_shape(request: httpx.Request) -> httpx.Response:
    data = {"echo": ECHO, "authorization": request.headers["authorization"], "progress": "x"}
    return httpx.Response(200, json={"success": True, "data": data}, headers=echo_headers(request))


class Unread(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body httpx leaves for the SDK to read, on either client (so it checks its encoding)."""

    def __iter__(self) -> Iterator[bytes]:
        yield b"x"

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"x"


def encoding_echo(request: httpx.Request) -> httpx.Response:
    """An encoding the SDK does not decode: its error quotes it, lowercased."""
    return httpx.Response(200, headers={"Content-Encoding": f"br, {API_KEY}"}, stream=Unread())


def raising(error_type: type[httpx.TransportError]) -> Callable[[httpx.Request], httpx.Response]:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error_type(f"failed for {request.headers['authorization']}: {ECHO}", request=request)

    return answer


def code_echo(request: httpx.Request) -> httpx.Response:
    """An error whose code, not only its message, echoes the Authorization header."""
    error = {"code": request.headers["authorization"], "message": "bad key"}
    return httpx.Response(401, json={"success": False, "error": error})


def job_echo(state: str) -> Callable[[httpx.Request], httpx.Response]:
    """A translation in ``state`` whose id and fields echo the key."""

    def answer(request: httpx.Request) -> httpx.Response:
        data = {
            "translation_id": f"tr_1 for {request.headers['authorization']}",
            "document_id": f"doc_{API_KEY}",
            "status": state,
            "progress": 10,
            "target_language": "de",
            "note": ECHO,
        }
        return httpx.Response(200, json={"success": True, "data": data})

    return answer


def reason_echo(status: int) -> Callable[[httpx.Request], httpx.Response]:
    """An error whose reason phrase (``HTTP/1.1 400 Bad <key>``) echoes the key.

    An ``httpx.Response`` shows its reason phrase in its repr, so any frame holding the
    response would show the key in a traceback printed with its locals.
    """

    def answer(request: httpx.Request) -> httpx.Response:
        body = {"success": False, "error": {"code": "BAD_REQUEST", "message": "no"}}
        reason = f"Bad {request.headers['authorization']}".encode()
        return httpx.Response(status, json=body, extensions={"reason_phrase": reason})

    return answer


ECHOING_SERVERS: dict[str, Callable[[httpx.Request], httpx.Response]] = {
    "400-reason-phrase-echo": reason_echo(400),
    "503-reason-phrase-echo": reason_echo(503),
    "401-code-echo": code_echo,
    "200-failed-job-echo": job_echo("failed"),
    "200-unfinished-job-echo": job_echo("processing"),
    "400-invalid-language": envelope_error(400, "INVALID_LANGUAGE"),
    "401-unauthorized": envelope_error(401, "UNAUTHORIZED"),
    "404-not-found": envelope_error(404, "NOT_FOUND"),
    "429-rate-limited": envelope_error(429, "RATE_LIMITED"),
    "503-retried": envelope_error(503, "SERVICE_UNAVAILABLE"),
    "502-html": html_error,
    "200-not-json": not_json,
    "200-wrong-shape": wrong_shape,
    "200-content-encoding-echo": encoding_echo,
    "connect-error": raising(httpx.ConnectError),
    "read-timeout": raising(httpx.ReadTimeout),
    "dropped-connection": raising(httpx.RemoteProtocolError),
}

# Every public method that sends, with arguments that pass the local checks.
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "translate": (("Hello",), {"source_language": "en", "target_language": "de"}),
    "translate_batch": ((["a", "b"],), {"source_language": "en", "target_language": "de"}),
    "translate_many": (
        (["a", "b", "c"],),
        {"source_language": "en", "target_language": "de", "batch_size": 1},
    ),
    "translate_document": (("doc_1",), {"target_language": "de"}),
    "get_translation": (("tr_1",), {}),
    "wait_for_translation": (("tr_1",), {"timeout": 30.0}),
    "list_documents": ((), {}),
    "request": (("POST", "/webhooks"), {"json": {"url": "https://example.test/hook"}}),
}


def mock_client(
    client_class: ClientClass,
    answer: Callable[[httpx.Request], httpx.Response],
    max_retries: int = 2,
) -> AnyClient:
    transport = httpx.MockTransport(answer)
    if client_class is lingodoc.Client:
        return lingodoc.Client(
            API_KEY,
            base_url=BASE_URL,
            max_retries=max_retries,
            http_client=httpx.Client(transport=transport),
        )
    return lingodoc.AsyncClient(
        API_KEY,
        base_url=BASE_URL,
        max_retries=max_retries,
        http_client=httpx.AsyncClient(transport=transport),
    )


# --- clients and results -------------------------------------------------------------------


async def test_client_reprs_show_only_the_last_four_characters(client_class: ClientClass) -> None:
    client = client_class(API_KEY, base_url=BASE_URL)
    copies = [
        client,
        client.with_options(timeout=5),
        client.with_options(max_retries=0),
        client.with_options(timeout=httpx.Timeout(3.0), max_retries=1).with_options(timeout=9),
    ]
    for copy in copies:
        shown = f"{client_class.__name__}(base_url={BASE_URL!r}, api_key='****QZ7X', timeout="
        assert repr(copy).startswith(shown)  # then its timeout and max_retries
        assert_hidden(repr(copy), "repr(client)")
        assert_hidden(str(copy), "str(client)")
        assert_hidden(f"{copy!r:>200}", "a formatted client")
    await close(client)
    assert_hidden(repr(client), "repr(closed client)")
    assert_hidden(repr(client._headers), "repr(client headers)")  # httpx masks Authorization


@pytest.mark.parametrize(
    "settings",
    [
        {"base_url": "http://api.lingodoc.test/v1"},  # clear text to a remote host
        {"base_url": "ftp://api.lingodoc.test/v1"},
        {"base_url": "https://api.lingodoc.test/v1?key=1"},
        {"base_url": "https://[::1/v1"},  # httpx.InvalidURL
        {"timeout": -1},
        {"max_retries": -1},
        {"default_headers": {"X-Name": "caf\u00e9"}},
        {"http_client": object()},
        {"base_url": None},  # the key given, no base URL: the error for what is missing
    ],
    ids=["http", "ftp", "query", "invalid", "timeout", "max_retries", "headers", "http_client",
         "no-base-url"],
)  # fmt: skip
def test_configuration_errors_do_not_show_the_key(
    client_class: ClientClass, settings: dict[str, Any]
) -> None:
    arguments: dict[str, Any] = {"base_url": BASE_URL, **settings}
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(API_KEY, **arguments)
    assert_exception_hides_key(caught.value)


def test_a_malformed_key_is_refused_without_being_shown(client_class: ClientClass) -> None:
    with pytest.raises(lingodoc.ConfigurationError) as caught:
        client_class(f" {API_KEY} \n{API_KEY}", base_url=BASE_URL)
    assert_exception_hides_key(caught.value)


async def call_every_method(client: AnyClient) -> list[Any]:
    """Call every method that sends, on a client of an emulator; return the results."""

    async def run(method: str, *args: Any, **kwargs: Any) -> Any:
        outcome = getattr(client, method)(*args, **kwargs)
        return await outcome if inspect.isawaitable(outcome) else outcome

    job = await run("translate_document", "doc_welcome", target_language="de")
    return [
        await run("translate", "Hello", source_language="en", target_language="de"),
        await run("translate_batch", ["Hello", "a"], source_language="en", target_language="de"),
        await run(
            "translate_many", ["a", "b", "c"], source_language="en", target_language="de",
            batch_size=1, max_concurrency=2,
        ),
        job,
        await run("get_translation", job.translation_id),
        await run("wait_for_translation", job, timeout=60.0),
        await run("list_documents"),
        await run("request", "GET", "/documents"),
        client.rate_limit,
    ]  # fmt: skip


async def test_results_do_not_show_the_key(client_class: ClientClass) -> None:
    emulator = Emulator(api_key=API_KEY)
    client = emulator.client() if client_class is lingodoc.Client else emulator.async_client()
    for result in await call_every_method(client):
        assert result is not None
        assert_hidden(repr(result), f"repr of {type(result).__name__}")
        assert_hidden(str(result), f"str of {type(result).__name__}")
        assert_hidden(pickle.dumps(result), f"pickled {type(result).__name__}")
    await close(client)


# --- exceptions ----------------------------------------------------------------------------


JOB_ECHO_IS_DATA = ("request", "get_translation", "translate_document")


@pytest.mark.parametrize(
    ("server", "method"),
    [
        pytest.param(server, method, id=f"{name}-{method}")
        for name, server in ECHOING_SERVERS.items()
        for method in CALLS
        # request() returns the data of a success envelope as it is, whatever its shape.
        if not (server is wrong_shape and method == "request")
        # A translation's status is an error only for wait_for_translation (failed, or not
        # finished within its timeout); to other methods it is data, or the wrong shape.
        if not (name.endswith("job-echo") and method in JOB_ECHO_IS_DATA)
    ],
)
async def test_no_exception_shows_the_key_that_a_server_echoes(
    client_class: ClientClass,
    server: Callable[[httpx.Request], httpx.Response],
    method: str,
) -> None:
    client = mock_client(client_class, server)
    args, kwargs = CALLS[method]
    error = await failure_of(client, method, *args, **kwargs)
    assert_exception_hides_key(error)
    await close(client)


@pytest.mark.parametrize("server", ECHOING_SERVERS.values(), ids=ECHOING_SERVERS.keys())
async def test_an_exception_raised_inside_the_callers_frames_hides_the_key(
    client_class: ClientClass, server: Callable[[httpx.Request], httpx.Response]
) -> None:
    """Tracebacks include the caller's frames: with pytest.raises, this test's."""
    client = mock_client(client_class, server, max_retries=0)
    call = functools.partial(client.translate, "Hi", source_language="en", target_language="de")

    async def translate() -> None:
        outcome = call()
        if inspect.isawaitable(outcome):
            await outcome

    with pytest.raises(lingodoc.LingodocError) as caught:
        await translate()
    assert_exception_hides_key(caught.value)
    assert_hidden(str(caught.getrepr(showlocals=True)), "pytest's report with locals")
    await close(client)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def server() -> Iterator[Any]:
    """The emulator over real sockets, knowing API_KEY (and not OTHER_KEY)."""
    with Emulator(api_key=API_KEY).serve() as running:
        yield running


@pytest.mark.aiohttp  # over real sockets: on DefaultAioHttpClient too
async def test_a_refused_connection_hides_the_key(
    client_class: ClientClass, closed_port: int
) -> None:
    client = client_class(API_KEY, base_url=f"http://127.0.0.1:{closed_port}/v1", max_retries=1)
    error = await failure_of(client, "translate", "Hi", source_language="en", target_language="de")
    assert isinstance(error, lingodoc.APIConnectionError)
    assert_exception_hides_key(error)
    await close(client)


@pytest.mark.aiohttp  # over real sockets: on DefaultAioHttpClient too
@pytest.mark.parametrize("fault", ["slow", "disconnect", "server_error", "rate_limit"])
async def test_real_network_failures_hide_the_key(
    client_class: ClientClass, server: Any, fault: str
) -> None:
    # A slow answer comes only as the server stops: the short timeout always ends it first.
    # Every other fault is answered at once, within a timeout no crowded machine reaches.
    server.emulator.inject(fault, times=5, delay=PATIENCE)
    timeout = 0.25 if fault == "slow" else PATIENCE
    client = client_class(API_KEY, base_url=server.base_url, timeout=timeout, max_retries=1)
    error = await failure_of(client, "list_documents")
    expected = {
        "slow": lingodoc.APITimeoutError,
        "disconnect": lingodoc.APIConnectionError,
        "server_error": lingodoc.ServerError,
        "rate_limit": lingodoc.RateLimited,
    }[fault]
    assert isinstance(error, expected)
    assert_exception_hides_key(error)
    await close(client)


@pytest.mark.aiohttp  # over real sockets: on DefaultAioHttpClient too
async def test_an_unknown_key_is_refused_without_being_shown(
    client_class: ClientClass, server: Any
) -> None:
    client = client_class(OTHER_KEY, base_url=server.base_url)
    error = await failure_of(client, "translate", "Hi", source_language="en", target_language="de")
    assert isinstance(error, lingodoc.Unauthorized)
    assert "WV5Y" in str(error)  # the emulator names the key by its last four characters
    assert_exception_hides_key(error)
    await close(client)


# --- logs ----------------------------------------------------------------------------------

# The loggers that log a call of the SDK's own client (httpx's client, which logs its
# request lines, is not in its path: an http_client of yours adds httpx's).
LOGGERS = ("lingodoc", "httpcore")


@pytest.fixture
def debug_logs(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[pytest.LogCaptureFixture]:
    """Every logger at DEBUG, LINGODOC_LOG=debug, and the lingodoc logger restored afterwards."""
    monkeypatch.setenv("LINGODOC_LOG", "debug")
    sdk_logger = logging.getLogger("lingodoc")
    handlers = list(sdk_logger.handlers)
    caplog.set_level(logging.DEBUG)
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog
    sdk_logger.handlers[:] = handlers


def assert_logs_hide_key(caplog: pytest.LogCaptureFixture) -> None:
    records = caplog.records
    for name in LOGGERS:
        assert any(r.name.split(".")[0] == name for r in records), f"nothing logged by {name}"
    for record in records:
        where = f"a log record of {record.name}"
        assert_hidden(record.getMessage(), where)
        assert_hidden(str(record.msg), where)
        assert_hidden(repr(record.args), where)
        if record.exc_info:
            assert_hidden("".join(traceback.format_exception(*record.exc_info)), where)
    assert_hidden(caplog.text, "the captured log")


async def test_debug_logs_of_every_logger_hide_the_key(
    client_class: ClientClass,
    server: Any,
    debug_logs: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = client_class(API_KEY, base_url=server.base_url)
    await call_every_method(client)
    # Failures that are retried, waited out and raised.
    server.emulator.inject("server_error", times=1)
    server.emulator.inject("rate_limit", times=1)
    server.emulator.inject("disconnect", times=1)
    await failure_of(client.with_options(max_retries=0), "list_documents")  # 500
    await failure_of(client.with_options(max_retries=0), "list_documents")  # 429
    await failure_of(client.with_options(max_retries=0), "list_documents")  # dropped
    server.emulator.inject("slow", times=1, delay=PATIENCE)  # answered as the server stops
    await failure_of(client.with_options(timeout=0.25, max_retries=0), "list_documents")
    server.emulator.inject("server_error", times=1, status=503)
    outcome = client.list_documents()  # retried after a 503
    await outcome if inspect.isawaitable(outcome) else outcome
    await close(client)
    stranger = client_class(OTHER_KEY, base_url=server.base_url)
    await failure_of(stranger, "translate", "Hi", source_language="en", target_language="de")
    await close(stranger)

    messages = [r.getMessage() for r in debug_logs.records]
    assert any("retrying GET /documents" in m for m in messages)
    assert any(m.startswith("POST /translate -> 401") for m in messages)
    assert_logs_hide_key(debug_logs)
    printed = capsys.readouterr()
    assert_hidden(printed.out + printed.err, "stdout and stderr")


def test_the_lingodoc_log_handler_output_hides_the_key() -> None:
    """LINGODOC_LOG=debug in a script without logging set up: what reaches stderr."""
    script = textwrap.dedent(
        f"""
        import lingodoc
        from lingodoc.emulator import Emulator

        with Emulator(api_key={API_KEY!r}).serve() as server:
            server.emulator.inject("server_error", times=1)
            with lingodoc.Client({API_KEY!r}, base_url=server.base_url) as client:
                client.translate("Hello", source_language="en", target_language="de")
            with lingodoc.Client({OTHER_KEY!r}, base_url=server.base_url) as client:
                try:
                    client.list_documents()
                except lingodoc.Unauthorized as error:
                    print(repr(error), error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"LINGODOC_LOG": "debug", "PATH": "", "PYTHONPATH": ":".join(sys.path)},
        timeout=60,
    )
    assert "POST /translate -> 500" in result.stderr
    assert "retrying POST /translate" in result.stderr
    assert "GET /documents -> 401" in result.stderr
    assert_hidden(result.stdout + result.stderr, "the output of a script")


# --- long keys -----------------------------------------------------------------------------

# As long as a JWT: masking must cost no more than for a short key.
LONG_KEY = "eyJhbGciOiJSUzI1NiJ9." + "".join(f"{i:03d}/seg+" for i in range(60)) + "QZ7X"


async def test_a_long_key_is_masked_in_every_echo(client_class: ClientClass) -> None:
    truncated, quoted = LONG_KEY[100:160], quote(LONG_KEY, safe="")

    def answer(request: httpx.Request) -> httpx.Response:
        message = f"bad key {LONG_KEY}, part {truncated}, quoted {quoted}"
        return httpx.Response(
            401, json={"success": False, "error": {"code": "X", "message": message}}
        )

    transport = httpx.MockTransport(answer)
    http = httpx.Client(transport=transport) if client_class is lingodoc.Client else (
        httpx.AsyncClient(transport=transport))  # fmt: skip
    client = client_class(LONG_KEY, base_url=BASE_URL, http_client=http)  # type: ignore[arg-type]
    error = await failure_of(client, "list_documents")
    assert str(error) == "X (401): bad key ****QZ7X, part ****QZ7X, quoted ****QZ7X"
    await close(client)


def test_building_the_mask_of_a_long_key_takes_little_memory() -> None:
    # Counted by tracemalloc, deterministic: the mask holds each 8-character window of
    # the key in 4 forms, linear in its length. (Every substring would be cubic: 250 MB
    # for a key of 400 characters.)
    key = LONG_KEY * 2  # 1,000 characters
    tracemalloc.start()
    try:
        client = lingodoc.Client(key, base_url=BASE_URL)
        masked = client._key_mask(f"echo {key[300:700]}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    client.close()
    assert masked == "echo ****QZ7X"
    assert peak < 2_000_000


# --- echoes in another case, keys with quotes and backslashes ------------------------------


def test_an_echo_of_the_key_in_another_case_is_masked() -> None:
    key_mask = _redaction.KeyMask(API_KEY)
    for echo in (API_KEY.lower(), API_KEY.upper(), API_KEY.swapcase(), API_KEY.upper()[4:16]):
        assert key_mask(f"encoded with 'br,{echo}'") == "encoded with 'br,****QZ7X'", echo
    assert key_mask(f"url {quote(API_KEY, safe='').lower()}") == "url ****QZ7X"  # %2f, %2b
    # Around letters whose lower case is two characters long: still masked where it is.
    assert key_mask(f"İ {API_KEY.lower()} İİ") == "İ ****QZ7X İİ"


@pytest.mark.parametrize("key", [QUOTES_KEY, SINGLE_QUOTES_KEY], ids=["both-quotes", "single"])
def test_a_key_with_quotes_and_backslashes_is_masked_as_repr_and_json_show_it(key: str) -> None:
    key_mask = _redaction.KeyMask(key)
    q = "'" if '"' in key else '"'  # the quote repr picks
    assert key_mask(f"str {key!r}.") == f"str {q}****QZ7X{q}."
    assert key_mask(f"bytes {key.encode()!r}.") == f"bytes b{q}****QZ7X{q}."
    forced = repr(key + "'\"")  # a text holding both quotes: repr quotes with ' and escapes it
    assert key_mask(f"forced {forced}") == "forced '****QZ7X\\'\"'"
    assert key_mask(f"json {json.dumps({'key': key})}") == 'json {"key": "****QZ7X"}'
    for echo in (repr(key), repr(key.encode()), forced, json.dumps(key), key.upper()):
        masked = key_mask(f"echo {echo[:20]}, {echo[10:]}, {echo.lower()}")
        assert masked.count("****QZ7X") == 3
        assert_hidden(masked, f"the masked echo {echo}")


async def test_an_h11_error_quoting_the_key_with_repr_hides_it(client_class: ClientClass) -> None:
    """h11 refuses a status line holding a NUL and quotes it: repr escapes the key's quotes."""
    server = FaultServer([status(500, b"{}", reason=f"Bad {QUOTES_KEY}\x00")])
    try:
        client = client_class(QUOTES_KEY, base_url=server.base_url(), max_retries=0, timeout=5.0)
        error = await failure_of(client, "list_documents")
        await close(client)
    finally:
        server.stop()
    assert isinstance(error, lingodoc.APIConnectionError)
    assert "illegal status line: bytearray(b'HTTP/1.1 500 Bad ****QZ7X\\x00')" in str(error)
    assert_exception_hides_key(error)


# --- what httpx and httpcore log of what a server sent -----------------------------------


@pytest.mark.parametrize("through", ["own transport", "http_client"])
async def test_httpx_and_httpcore_logs_mask_a_key_the_server_echoes(
    client_class: ClientClass, debug_logs: pytest.LogCaptureFixture, through: str
) -> None:
    """httpx logs the reason phrase, httpcore the response headers: a server can echo the
    key in either, and the SDK masks it in their records too.

    The SDK's own client sends through its transport, not httpx's client, which is what
    logs the ``HTTP Request:`` line: that line is there only with an http_client of yours.
    """
    body = json.dumps({"success": False, "error": {"code": "X", "message": "m"}}).encode()
    server = FaultServer(
        [status(500, body, {"X-Echo": f"Bearer {API_KEY}"}, reason=f"Bearer {API_KEY}")]
    )
    base_url = server.base_url()
    http_client = http_client_for(client_class) if through == "http_client" else None
    try:
        client = client_class(
            API_KEY, base_url=base_url, max_retries=0, timeout=5.0, http_client=http_client
        )
        error = await failure_of(client, "list_documents")
        await close(client)
        if http_client is not None:
            await close_http(http_client)
    finally:
        server.stop()
    assert type(error) is lingodoc.ServerError
    messages = [(r.name, r.getMessage()) for r in debug_logs.records]
    httpx_lines = [m for name, m in messages if name == "httpx"]
    line = f'HTTP Request: GET {base_url}/documents "HTTP/1.1 500 Bearer ****QZ7X"'
    assert httpx_lines == ([line] if http_client is not None else [])
    headers = [m for name, m in messages if "receive_response_headers.complete" in m]
    assert len(headers) == 1
    assert "b'Bearer ****QZ7X', [" in headers[0]  # the reason phrase
    assert "(b'X-Echo', b'Bearer ****QZ7X')" in headers[0]
    assert_logs_hide_key(debug_logs)


def test_every_httpx_and_httpcore_logger_masks_keys() -> None:
    client = lingodoc.Client(API_KEY, base_url=BASE_URL)
    names = [
        name
        for name in logging.root.manager.loggerDict
        if name.split(".")[0] in ("httpx", "httpcore")
    ]
    assert {"httpx", "httpcore.connection", "httpcore.http11"} <= set(names)
    for name in names:
        logger = logging.getLogger(name)
        record = logger.makeRecord(name, logging.INFO, __file__, 1, "got %s", (API_KEY,), None)
        assert logger.filter(record)
        assert record.getMessage() == "got ****QZ7X", name
    client.close()


# --- httpx and httpcore loggers, whenever they were made -----------------------------------

# The key is masked in what httpx and httpcore log, whenever their loggers were made.
#
# httpx 0.28 imports httpcore (and httpcore makes its loggers) only when it builds its first
# transport, and httpcore imports its HTTP/2, proxy and SOCKS modules only when a request
# needs them: a filter put on the loggers that exist when the client is made would miss
# those. So the first check runs in a fresh process, as an application would: logging set
# up at DEBUG before lingodoc is imported, one client, and a loopback server (real sockets,
# through httpcore) that echoes the key in its reason phrase and in a header.

SRC = str(Path(lingodoc.__file__).resolve().parents[1])
ROOT = str(Path(__file__).resolve().parents[2])

SYNC_SCRIPT = """
    import logging, sys
    logging.basicConfig(level=logging.DEBUG)  # before lingodoc, httpx or httpcore is imported
    import lingodoc

    key, base_url = sys.argv[1:]
    client = lingodoc.Client(key, base_url=base_url, max_retries=0, timeout=5.0)
    try:
        client.list_documents()
    except lingodoc.ServerError as error:
        print("raised", type(error).__name__)
    client.close()
"""

ASYNC_SCRIPT = """
    import asyncio, logging, sys
    logging.basicConfig(level=logging.DEBUG)  # before lingodoc, httpx or httpcore is imported
    import lingodoc

    async def main(key, base_url):
        client = lingodoc.AsyncClient(key, base_url=base_url, max_retries=0, timeout=5.0)
        try:
            await client.list_documents()
        except lingodoc.ServerError as error:
            print("raised", type(error).__name__)
        await client.aclose()

    asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.parametrize("script", [SYNC_SCRIPT, ASYNC_SCRIPT], ids=["sync", "async"])
def test_a_fresh_process_logging_at_debug_never_prints_a_key_the_server_echoes(
    script: str,
) -> None:
    body = json.dumps({"success": False, "error": {"code": "X", "message": "m"}}).encode()
    echo = f"Bearer {API_KEY}"
    server = FaultServer([status(500, body, {"X-Echo": echo}, reason=echo)])
    base_url = server.base_url()
    try:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script), API_KEY, base_url],
            capture_output=True,
            text=True,
            env={"PATH": "", "PYTHONPATH": SRC},
            cwd=ROOT,
            timeout=60,
        )
    finally:
        server.stop()
    assert (result.returncode, result.stdout) == (0, "raised ServerError\n"), result.stderr
    lines = result.stderr.splitlines()
    # The lines that quote what the server sent are there, each with the key masked.
    assert any(line.startswith("DEBUG:httpcore.connection:connect_tcp.started") for line in lines)
    headers = [
        line
        for line in lines
        if line.startswith("DEBUG:httpcore.http11:receive_response_headers.complete")
    ]
    assert len(headers) == 1, result.stderr
    assert "b'Bearer ****QZ7X'" in headers[0]  # the reason phrase
    assert "(b'X-Echo', b'Bearer ****QZ7X')" in headers[0]
    lingodoc_line = "DEBUG:lingodoc:GET /documents -> 500 in "
    assert any(line.startswith(lingodoc_line) for line in lines), result.stderr
    assert_hidden(result.stdout + result.stderr, "the output of a process logging at DEBUG")


def empty_listing(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"success": True, "data": []})


def masks(name: str) -> bool:
    """Whether the logger ``name`` masks the key in its records."""
    logger = logging.getLogger(name)
    record = logger.makeRecord(name, logging.INFO, __file__, 1, "got %s", (API_KEY,), None)
    return bool(logger.filter(record)) and record.getMessage() == "got ****QZ7X"


_names = itertools.count()


async def test_an_http_logger_made_after_the_client_masks_the_key_from_the_next_request(
    client_class: ClientClass,
) -> None:
    client = mock_client(client_class, empty_listing)
    n = next(_names)
    later, child = f"httpcore.later{n}", f"httpx.parent{n}.child"
    logging.getLogger(later)
    logging.getLogger(child)  # and its parent, a placeholder until someone asks for it
    await call(client, "list_documents")
    assert masks(later)
    assert masks(child)
    assert masks(f"httpx.parent{n}")
    assert not masks(f"elsewhere{n}")  # the application's other loggers are left alone
    await close(client)


async def test_the_check_for_new_http_loggers_looks_at_names_only_when_a_logger_was_made(
    client_class: ClientClass, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = mock_client(client_class, empty_listing)
    looks: list[None] = []
    get_logger = logging.getLogger

    def counted(name: str | None = None) -> logging.Logger:
        if name == "httpx":  # a look filters it; nothing else gets it during a call
            looks.append(None)
        return get_logger(name)

    monkeypatch.setattr(logging, "getLogger", counted)
    for _ in range(3):
        await call(client, "list_documents")
    assert looks == []
    logging.getLogger(f"unrelated{next(_names)}")
    await call(client, "list_documents")
    assert looks  # the names were looked at once a logger was made
    looks.clear()
    await call(client, "list_documents")
    assert looks == []
    await close(client)


def test_only_http_loggers_get_the_filter() -> None:
    client = lingodoc.Client(API_KEY, base_url=BASE_URL)
    filtered = {
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and _redaction._filter in logger.filters
    }
    client.close()
    assert {"httpx", "httpcore", "httpcore.http11", "httpcore.http2", "hpack.hpack"} <= filtered
    assert {name.split(".")[0] for name in filtered} == {"httpx", "httpcore", "hpack"}


def status_then_503(request: httpx.Request, polls: list[int]) -> httpx.Response:
    """Our translation's status echoing the key on the first poll, then 503s."""
    polls.append(1)
    if len(polls) == 1:
        data = {"translation_id": "tr_1", "status": "processing", "progress": 10, "note": ECHO}
        return httpx.Response(200, json={"success": True, "data": data})
    return httpx.Response(503, json={"success": False, "error": {"code": "DOWN", "message": "x"}})


async def test_a_wait_that_times_out_hides_a_key_echoed_by_an_earlier_status(
    client_class: ClientClass,
) -> None:
    """The WaitTimeout is caused by the last 503, which passed the frame of that status."""
    polls: list[int] = []
    client = mock_client(client_class, lambda r: status_then_503(r, polls), max_retries=0)
    with fake_clock():
        error = await failure_of(client, "wait_for_translation", "tr_1", timeout=20)
    assert isinstance(error, lingodoc.WaitTimeout)
    assert isinstance(error.__cause__, lingodoc.ServerError)
    assert len(polls) > 2
    assert_exception_hides_key(error)
    await close(client)


async def test_a_wait_ended_by_closing_the_client_hides_a_key_echoed_by_a_status(
    client_class: ClientClass,
) -> None:
    """Closed during the wait (here by on_progress, as another thread might)."""
    polls: list[int] = []
    client = mock_client(client_class, lambda r: status_then_503(r, polls))

    def close_it(status: Any) -> Any:  # AsyncClient awaits the coroutine of aclose()
        return client.close() if isinstance(client, lingodoc.Client) else client.aclose()

    with fake_clock():
        error = await failure_of(client, "wait_for_translation", "tr_1", on_progress=close_it)
    assert "has been closed" in str(error)
    assert len(polls) == 1
    assert_exception_hides_key(error)
    await close(client)
