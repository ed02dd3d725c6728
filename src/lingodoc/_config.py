"""The client's settings; a check that sees a secret *returns* its error: no traceback shows it."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

import httpx

from lingodoc import _validation
from lingodoc._constants import (
    ALLOW_HTTP_HOST_ENV,
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_TIMEOUT,
    GET_A_KEY,
    PROXY_UNREACHABLE,
    SERVICE_UNREACHABLE,
    TRY_THE_EMULATOR,
    WHAT_BASE_URL_IS,
    is_loopback,
)
from lingodoc._environment import named_proxy
from lingodoc._exceptions import ConfigurationError, cut, shown
from lingodoc._redaction import mask_password
from lingodoc._response import ACCEPT_ENCODING

# The environment variable each setting falls back to.
_VARIABLES = {
    "api_key": API_KEY_ENV,
    "base_url": BASE_URL_ENV,
    "allow_http_host": ALLOW_HTTP_HOST_ENV,
}
_WHERE_FROM = {"api_key": GET_A_KEY, "base_url": WHAT_BASE_URL_IS}  # hints for a missing one


def _setting(value: object, argument: str) -> str | ConfigurationError | None:
    """The argument, else its variable, stripped (``None``: neither); the error if not a str."""
    if value is not None and not isinstance(value, str):
        return ConfigurationError(f"{argument} must be a str, not {type(value).__name__}")
    text = (os.environ.get(_VARIABLES[argument]) if value is None else value) or ""
    return text.strip() or None


def credentials(
    api_key: object, base_url: object, allow_http_host: object
) -> tuple[str, str] | ConfigurationError:
    """The key and the base URL, checked; or the error, returned (raised where no local has it)."""
    key, raw = _setting(api_key, "api_key"), _setting(base_url, "base_url")
    if isinstance(key, ConfigurationError):
        return key
    if isinstance(raw, ConfigurationError):
        return raw
    if key is None or raw is None:
        absent = [name for name, value in (("api_key", key), ("base_url", raw)) if value is None]
        nouns = " and no ".join(argument.replace("_", " ") for argument in absent)
        where = ", and ".join(
            f"pass {argument}=... or set the {_VARIABLES[argument]} environment variable"
            for argument in absent
        )
        hint = "; ".join([*(_WHERE_FROM[argument] for argument in absent), TRY_THE_EMULATOR])
        return ConfigurationError(f"no {nouns} given: {where}", hint=hint)
    if not _validation.sendable_key(key):
        return ConfigurationError(
            f"api_key (or {API_KEY_ENV}) holds spaces or characters that cannot be "
            "sent in a header; check it was copied whole"
        )
    if isinstance(allow_http_host, str) and not allow_http_host.strip():
        return ConfigurationError(
            "allow_http_host must name a host, such as 'emulator', not an empty string "
            "(None leaves it unset)"
        )
    allowed = _setting(allow_http_host, "allow_http_host")
    if isinstance(allowed, ConfigurationError):
        return allowed
    allowed = allowed and _host_key(allowed)
    url = _base_url(raw, from_variable=base_url is None, allowed_http_host=allowed)
    return url if isinstance(url, ConfigurationError) else (key, url)


def _host_key(host: str) -> str:
    """``host`` folded to compare: lower case, an IPv6 address without brackets."""
    return host.lower().strip("[]")


def _base_url(
    raw: str, *, from_variable: bool, allowed_http_host: str | None
) -> str | ConfigurationError:
    """The base URL ``raw`` checked and normalised, or the error."""
    address = cut(mask_password(raw))
    where = f"base_url {address!r}" + (f" (from {BASE_URL_ENV})" if from_variable else "")
    if "\\" in raw or not raw.isprintable() or any(c.isspace() for c in raw):
        # "https://api.example.com\\@evil.com" is evil.com to httpx, another host to others.
        return ConfigurationError(
            f"{where} holds a backslash, a space or a control character; "
            "write the address as a plain URL such as 'https://api.example.com/v1'"
        )
    if "@" in raw.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]:
        # httpx would send it as Basic authentication, instead of the key.
        return ConfigurationError(
            f"{where} holds a user name or password (before '@'); remove it: "
            "the SDK authenticates with the API key only"
        )
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        # Returned, not raised: it is raised later, outside any except block (no chain).
        return ConfigurationError(f"{where} is not a valid URL: {exc}")
    if url.scheme not in ("http", "https") or not url.host or url.userinfo:
        return ConfigurationError(
            f"base_url must be an absolute https:// URL such as 'https://api.example.com/v1', "
            f"not {address!r} (from base_url or {BASE_URL_ENV})"
        )
    if url.scheme == "http" and not is_loopback(url.host):
        clear = (
            f"{where} uses http://, which would send the API key in clear text; use "
            f"https:// (http:// is allowed only for localhost and loopback addresses"
        )
        if allowed_http_host is None:
            return ConfigurationError(
                f"{clear} and, for a host on a network you trust (a docker-compose service), "
                f"the host named by allow_http_host= or {ALLOW_HTTP_HOST_ENV})"
            )
        if allowed_http_host != _host_key(url.host):
            return ConfigurationError(
                f"{clear}, but the opt-in (allow_http_host or {ALLOW_HTTP_HOST_ENV}) names "
                f"the host {shown(allowed_http_host)}, not {shown(url.host)})"
            )
    if "?" in raw or "#" in raw:
        return ConfigurationError(f"{where} must not have a query or fragment")
    return str(url).rstrip("/")


def _origin(url: httpx.URL) -> str:
    """``scheme://host:port`` of ``url``, the port written even where it is the default."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return f"{url.scheme}://{host}" + (f":{port}" if port else "")


def destination(
    url: str, http_client: httpx.Client | httpx.AsyncClient | None, *, aiohttp: bool
) -> tuple[str, str]:
    """Where requests to ``url`` go (``scheme://host:port``, then any proxy), and the hint.

    The SDK's own clients and a ``DefaultAioHttpClient`` take the environment's proxy for
    ``https://`` only; another ``http_client`` that trusts the environment, "if it uses it"
    (httpx does not show its own transport or proxy). The hint is about the service, or the
    proxy if one is named (never its user or password).
    """
    target = httpx.URL(url)
    where = _origin(target)
    own = http_client is None or aiohttp
    if (http_client is not None and not http_client.trust_env) or (own and target.scheme == "http"):
        return where, SERVICE_UNREACHABLE
    if (named := named_proxy(target, all_proxy=not aiohttp)) is None:
        return where, SERVICE_UNREACHABLE
    try:
        proxy = _origin(httpx.URL(named if "://" in named else f"http://{named}"))  # as httpx
    except httpx.InvalidURL:  # no proxy the http client could have sent through
        return where, SERVICE_UNREACHABLE
    if own:
        return f"{where} through the proxy {proxy}", PROXY_UNREACHABLE
    where += f" through the environment's proxy {proxy} if the http_client uses it"
    return where, PROXY_UNREACHABLE


def environment_proxy(http_client: httpx.Client | httpx.AsyncClient, url: str) -> str | None:
    """The proxy variables that would send ``http_client``'s requests for ``url`` to a proxy."""
    # An http_client's own proxy= or mounts= is its maker's choice, and not publicly visible.
    if not http_client.trust_env or named_proxy(httpx.URL(url)) is None:
        return None
    names = sorted(
        name
        for name, value in os.environ.items()
        if value.strip() and name.upper() in ("HTTP_PROXY", "ALL_PROXY")
    )
    return " or ".join(names)


def timeout(value: object, http_client: httpx.Client | httpx.AsyncClient | None) -> httpx.Timeout:
    """Return the timeout of each attempt; ``None``: the ``http_client``'s if set, else 30 s."""
    if value is not None:
        return _validation.timeout(value, ConfigurationError)
    if http_client is not None:
        # What httpx gives a client made without a timeout (5 s in httpx 0.28), sync or async.
        httpx_default = inspect.signature(httpx.Client).parameters["timeout"].default
        if http_client.timeout != httpx_default:
            return http_client.timeout
    return httpx.Timeout(DEFAULT_TIMEOUT)


def max_retries(value: object) -> int:
    """Return ``max_retries`` if an int of at least 0, else raise ``ConfigurationError``."""
    return _validation.count(value, "max_retries", least=0, error=ConfigurationError)


def max_in_flight(value: object) -> int | None:
    """Return ``max_in_flight`` if ``None`` or an int of at least 1; else ``ConfigurationError``."""
    if value is None:
        return None
    hint = "None for the default"
    return _validation.count(value, "max_in_flight", error=ConfigurationError, hint=hint)


def headers(default_headers: Mapping[str, str] | None, user_agent: str) -> httpx.Headers:
    """Return the headers of every request but the key, ``default_headers`` included."""
    sent = httpx.Headers(
        {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING, "User-Agent": user_agent}
    )
    sent.update(_validation.headers(default_headers or {}, "default_headers", ConfigurationError))
    return sent


def http_client_kind(http_client: Any, expected: type[Any]) -> None:
    """Refuse (``ConfigurationError``) an ``http_client`` that is not an ``expected``."""
    if http_client is not None and not isinstance(http_client, expected):
        raise ConfigurationError(
            f"http_client must be an {expected.__module__}.{expected.__qualname__}, "
            f"not {type(http_client).__name__}"
        )
