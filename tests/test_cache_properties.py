"""Property: a client with a cache never answers with a translation made for another request.

Hypothesis draws a text and near misses of it (case, spaces, NFC and NFD, a NUL: unicode of
any kind, blanks too), a context (the service's base URL, languages, a style, ``extra_body``
and ``extra_query``) and contexts one change away from it (an ``extra_body`` value of another
JSON type, a repeated query name's values in another order...), then a sequence of
``translate``, ``translate_batch`` and ``translate_many`` calls that mix them, each with or
without ``cache=False``. A wrong key is seen only when two calls differ in nothing but what it
leaves out: hence the near misses. The calls go through clients that share one dict store
(four base URLs, three services, share it too), and through the same clients without a
cache; each outcome must be the same.

The service, an ``httpx.MockTransport``, translates each text as a digest of all that
reaches it: the text, the base URL's scheme, host, port and path, the JSON body but the text
(languages, style, every ``extra_body`` field) and the query (each name's values in the
order sent). So any part of the key a cache left out, or any entry handed to another text,
gives a translation that differs from the service's own answer.

The property runs on ``Client`` (120 examples) and on ``AsyncClient`` (60 examples, in one
asyncio event loop of a blocking portal: ``@given`` does not decorate coroutines), about
three seconds in all. Breaking the key in a scratch copy (leaving out the style, the target
language, ``extra_body``, ``extra_query``, the service, the order of a repeated query name's
values; a text stripped or case-folded) makes the ``Client`` property fail within its
examples.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lingodoc

API_KEY = "ld_prop_0123456789abcdefQZ7X"
# Three services, and a fourth spelling of the first (httpx normalises it: the same service).
BASE_URLS = [
    "https://api.lingodoc.test/v1",
    "https://api.lingodoc.test:8443/v1",
    "https://api.lingodoc.test/v2",
    "https://API.lingodoc.test:443/v1",
]

SYNC = settings(
    max_examples=120,
    deadline=None,
    database=None,  # no .hypothesis/ in the tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ASYNC = settings(SYNC, max_examples=60)


# The service --------------------------------------------------------------------------------


def translation(text: str, context: str) -> str:
    digest = hashlib.sha256(f"{context}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:16]}:{text}"


def service(request: httpx.Request) -> httpx.Response:
    """Translate as a function of everything the request carries but its headers."""
    body = json.loads(request.content)
    text, texts = body.pop("text", None), body.pop("texts", None)
    url = request.url
    prefix = url.path.removesuffix("/translate/batch").removesuffix("/translate")
    # Each name's values in the order sent: the service reads them so; names in any order.
    query = sorted(url.params.multi_items(), key=lambda item: item[0])
    context = json.dumps([url.scheme, url.host, url.port, prefix, body, query], sort_keys=True)
    if url.path.endswith("/translate/batch"):
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return refusal()
        data: Any = {"translations": [translation(t, context) for t in texts]}
    else:
        if not isinstance(text, str):
            return refusal()
        languages = {
            name: value if isinstance(value := body.get(name), str) else "en"
            for name in ("source_language", "target_language")
        }
        data = {"translated_text": translation(text, context), **languages}
    return httpx.Response(200, json={"success": True, "data": data})


def refusal() -> httpx.Response:
    error = {"code": "VALIDATION_ERROR", "message": "no text"}
    return httpx.Response(400, json={"success": False, "error": error})


class DictStore:
    """The cache protocol on a dict."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        return {key: self.data[key] for key in keys if key in self.data}

    def set_many(self, items: Mapping[str, str]) -> None:
        self.data.update(items)


# What is drawn ------------------------------------------------------------------------------
#
# A wrong key is seen only when two calls differ in nothing but what it misses: so each
# example draws a text and a context, then near misses of them, each one change away.

# Texts a key must tell apart: case, spaces, NFC and NFD, a NUL and its escape.
SPECIAL_TEXTS = [
    "Hello", "hello", "Hello ", " Hello", "", " ", "\t\n", "caf\u00e9", "cafe\u0301", "ß", "SS",
    "a\x00b", "a\\u0000b", "\U0001f600", "Hello world",
]  # fmt: skip
texts = st.one_of(
    st.sampled_from(SPECIAL_TEXTS),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8),
)
TEXT_CHANGES: list[Callable[[str], str]] = [
    str.upper, str.lower, str.casefold, lambda t: f" {t}", lambda t: f"{t} ", lambda t: t[:-1],
    lambda t: f"{t}\x00", lambda t: unicodedata.normalize("NFD", t),
    lambda t: unicodedata.normalize("NFC", t), lambda t: t.replace("\u00e9", "e\u0301"),
]  # fmt: skip

# Values that JSON tells apart and Python may not: 1, 1.0 and True; 0.0 and -0.0; "1".
json_leaves = st.one_of(
    st.sampled_from([0, 1, 1.0, 0.0, -0.0, True, False, "1", "", None]),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        # int keys too: httpx sends them as strings, as json.dumps does.
        st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 1)), children, max_size=3),
    ),
    max_leaves=6,
)
# Fields of the body the SDK sends too (an extra_body field replaces it), and others; "text"
# and "texts" (which replace the text: never cached) seldom.
BODY_FIELDS = [
    *["glossary", "formality", "model", "style", "source_language", "target_language"] * 4,
    "text", "texts",
]  # fmt: skip
extra_bodies = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(BODY_FIELDS), json_values, max_size=3)
)
query_values = st.one_of(
    st.text("ab1 &=", max_size=3),
    st.integers(0, 2),
    st.lists(st.text("ab", max_size=2), min_size=1, max_size=3),
)
extra_queries = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(["model", "g", "tier"]), query_values, max_size=2)
)
languages = st.sampled_from(["en", "de", "fr", "ja"])
styles = st.one_of(st.none(), st.sampled_from(["formal", "informal", "Formal"]))


@dataclass(frozen=True)
class Context:
    service: int  # index in BASE_URLS
    source: str
    target: str
    style: str | None
    extra_body: dict[Any, Any] | None
    extra_query: dict[str, Any] | None


contexts = st.builds(
    Context,
    service=st.integers(0, len(BASE_URLS) - 1),
    source=languages,
    target=languages,
    style=styles,
    extra_body=extra_bodies,
    extra_query=extra_queries,
)


def retyped(value: Any) -> Any:
    """A value JSON tells apart from ``value``, and Python may not."""
    swaps: dict[Any, Any] = {"1": 1, "": None, None: False}
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return -value if value == 0 else str(value)
    if isinstance(value, list):
        return value[::-1] if len(set(map(repr, value))) > 1 else [value]
    if isinstance(value, dict):
        return {str(key): retyped(item) for key, item in value.items()}
    return swaps.get(value, [value])


def near(draw: st.DrawFn, context: Context) -> list[Context]:
    """Contexts one change away from ``context`` (an ``extra_body`` value retyped, say)."""
    part = draw(st.sampled_from(["service", "source", "target", "style", "body", "query"]))
    if part == "service":
        other = draw(st.integers(0, len(BASE_URLS) - 1).filter(lambda s: s != context.service))
        return [replace(context, service=other)]
    if part in ("source", "target"):
        now = getattr(context, part)
        return [replace(context, **{part: draw(languages.filter(lambda code: code != now))})]
    if part == "style":
        return [replace(context, style=draw(styles.filter(lambda s: s != context.style)))]
    if part == "body":
        body = dict(context.extra_body or {})
        if body and draw(st.booleans()):
            name = draw(st.sampled_from(sorted(body, key=repr)))
            body[name] = retyped(body[name])
        else:
            body[draw(st.sampled_from(BODY_FIELDS))] = draw(json_values)
        return [replace(context, extra_body=body)]
    # A name set anew, repeated: its values in one order, and in the other.
    query = dict(context.extra_query or {})
    name = draw(st.sampled_from(["model", "g", "tier"]))
    values = draw(st.lists(st.text("ab", max_size=2), min_size=2, max_size=3, unique=True))
    return [
        replace(context, extra_query={**query, name: values}),
        replace(context, extra_query={**query, name: values[::-1]}),
    ]


@dataclass(frozen=True)
class Call:
    method: str
    texts: list[str]
    context: Context
    cache: bool

    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        context = self.context
        options: dict[str, Any] = {
            "source_language": context.source,
            "target_language": context.target,
            "extra_body": context.extra_body,
            "extra_query": context.extra_query,
        }
        if self.method == "translate":
            return (self.texts[0],), {**options, "style": context.style}
        if self.method == "translate_many":
            options["batch_size"] = 2  # a few batches
        return (self.texts,), options


@st.composite
def scenarios(draw: st.DrawFn) -> list[Call]:
    """Calls mixing a few texts and contexts, each pool a draw and near misses of it."""
    pool = [draw(texts)]
    for _ in range(draw(st.integers(1, 2))):
        pool.append(draw(st.sampled_from(TEXT_CHANGES))(draw(st.sampled_from(pool))))
    base = draw(contexts)
    context_pool = [base]
    for _ in range(draw(st.integers(1, 2))):
        context_pool += near(draw, base)
    calls = []
    for _ in range(draw(st.integers(4, 8))):
        method = draw(st.sampled_from(["translate", "translate_batch", "translate_many"]))
        count = 1 if method == "translate" else draw(st.integers(1, 4))
        picked = [draw(st.sampled_from(pool)) for _ in range(count)]
        context = draw(st.sampled_from(context_pool))
        calls.append(Call(method, picked, context, draw(st.sampled_from([True, True, False]))))
    return calls


# Running them -------------------------------------------------------------------------------


def outcome_of(result: Any) -> tuple[str, Any]:
    if isinstance(result, lingodoc.TextTranslation):
        return ("translated", [result.translated_text])
    if isinstance(result, lingodoc.BatchTranslation):
        return ("translated", list(result.translations))
    return ("translated", list(result))


def failure(error: Exception) -> tuple[str, Any]:
    assert isinstance(error, lingodoc.LingodocError), repr(error)  # never anything else
    return ("refused", type(error).__name__)


@pytest.fixture(scope="module")
def plain() -> Iterator[list[lingodoc.Client]]:
    """A client without a cache for each service; each example gives them a store of its own."""
    with ExitStack() as stack:
        http = stack.enter_context(httpx.Client(transport=httpx.MockTransport(service)))
        yield [
            stack.enter_context(
                lingodoc.Client(API_KEY, base_url=url, http_client=http, max_retries=0)
            )
            for url in BASE_URLS
        ]


def attempt(client: Any, call: Call, **cache: bool) -> tuple[str, Any]:
    """The outcome of ``call`` on ``client``: its translations, or the error it raised."""
    args, kwargs = call.arguments()
    try:
        return outcome_of(getattr(client, call.method)(*args, **cache, **kwargs))
    except Exception as error:
        return failure(error)


async def async_attempt(client: Any, call: Call, **cache: bool) -> tuple[str, Any]:
    args, kwargs = call.arguments()
    try:
        return outcome_of(await getattr(client, call.method)(*args, **cache, **kwargs))
    except Exception as error:
        return failure(error)


def check(plain: list[lingodoc.Client], calls: list[Call]) -> None:
    store = DictStore()  # shared by the services: the key keeps them apart
    cached = [client.with_options(cache=store) for client in plain]
    for number, call in enumerate(calls):
        expected = attempt(plain[call.context.service], call)
        got = attempt(cached[call.context.service], call, cache=call.cache)
        assert got == expected, f"call {number}: {call}"


async def async_check(plain: list[lingodoc.AsyncClient], calls: list[Call]) -> None:
    store = DictStore()
    cached = [client.with_options(cache=store) for client in plain]
    for number, call in enumerate(calls):
        expected = await async_attempt(plain[call.context.service], call)
        got = await async_attempt(cached[call.context.service], call, cache=call.cache)
        assert got == expected, f"call {number}: {call}"


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """One asyncio event loop, in a thread, for every example of the async property."""
    with start_blocking_portal("asyncio") as running:
        yield running


@pytest.fixture(scope="module")
def async_plain(portal: BlockingPortal) -> Iterator[list[lingodoc.AsyncClient]]:
    """`plain`, for AsyncClient, made and closed in the portal's event loop."""

    http = portal.call(lambda: httpx.AsyncClient(transport=httpx.MockTransport(service)))

    async def make() -> list[lingodoc.AsyncClient]:
        return [
            lingodoc.AsyncClient(API_KEY, base_url=url, http_client=http, max_retries=0)
            for url in BASE_URLS
        ]

    clients = portal.call(make)
    yield clients

    async def close() -> None:
        for client in clients:
            await client.aclose()
        await http.aclose()  # the caller's: the clients leave it open

    portal.call(close)


@SYNC
@given(calls=scenarios())
def test_a_cached_client_answers_every_call_as_the_service_does_for_it(
    plain: list[lingodoc.Client], calls: list[Call]
) -> None:
    check(plain, calls)


@ASYNC
@given(calls=scenarios())
def test_a_cached_async_client_answers_every_call_as_the_service_does_for_it(
    portal: BlockingPortal, async_plain: list[lingodoc.AsyncClient], calls: list[Call]
) -> None:
    portal.call(async_check, async_plain, calls)
