"""What a client's own transport takes from the environment: certificates and proxies.

As httpx reads them for a client made with ``trust_env=True``; an unusable setting is a
``ConfigurationError`` naming the variable.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import ssl
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from lingodoc._exceptions import ConfigurationError
from lingodoc._redaction import mask_password

if TYPE_CHECKING:
    import httpcore

# The environment variables httpx reads when it builds a client (trust_env).
_CERTIFICATE_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


# One context per certificate setting: the variables, and the file's identity (a bundle
# replaced in place, even with its size and mtime kept, is read again).
@functools.lru_cache(maxsize=8)  # a process that keeps changing SSL_CERT_FILE: the last few
def _context(key: tuple[object, ...]) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=bool(key))


def ssl_context(trust_env: bool) -> ssl.SSLContext:
    """The SSL context httpx makes by default, shared per certificate setting (httpx: a client)."""
    values = tuple(os.environ.get(name, "") for name in _CERTIFICATE_ENV) if trust_env else ()
    key: tuple[object, ...] = values if any(values) else ()
    if key:
        with contextlib.suppress(OSError):  # building the context says what is wrong
            found = os.stat(values[0] or values[1])
            key += (found.st_dev, found.st_ino, found.st_ctime_ns, found.st_mtime_ns)
    try:  # two threads may both build it: either will do
        return _context(key)
    except OSError as exc:  # missing, or not certificates (ssl.SSLError)
        name = "SSL_CERT_FILE" if values[0] else "SSL_CERT_DIR"  # httpx reads one, in this order
        raise ConfigurationError(
            f"{name} in the environment cannot be used to build the HTTP client "
            f"({type(exc).__name__}: {exc}); fix or unset it, or pass an http_client"
        ) from None


def named_proxy(url: httpx.URL, *, all_proxy: bool = True) -> str | None:
    """The proxy URL the environment names for ``url``, as written; ``None`` if none or bypassed.

    ``all_proxy``: ``ALL_PROXY`` counts too, as for httpx (aiohttp reads no such variable).
    """
    proxies = urllib.request.getproxies_environment()
    named = proxies.get(url.scheme) or (proxies.get("all") if all_proxy else None)
    # Not in typeshed, but in urllib.request since Python 3.2 (what urllib itself uses).
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return None if not named or bypass(url.host, proxies) else named


def proxy_for(url: httpx.URL) -> httpcore.Proxy | ConfigurationError | None:
    """The proxy the environment names for ``url`` (httpx's variables, ``NO_PROXY`` too).

    Or the error, returned: this frame holds the proxy's URL, which may hold a password.
    """
    named = named_proxy(url)
    if named is None:
        return None
    import httpcore

    try:
        proxy = httpx.Proxy(named if "://" in named else f"http://{named}")
        if proxy.url.scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
            # httpcore imports it at the first connection: say so now.
            raise ImportError("a SOCKS proxy needs the socksio package: pip install socksio")
        return httpcore.Proxy(
            url=httpcore.URL(
                scheme=proxy.url.raw_scheme,
                host=proxy.url.raw_host,
                port=proxy.url.port,
                target=proxy.url.raw_path,
            ),
            auth=proxy.raw_auth,  # the Proxy made from a URL has no headers nor SSL context
        )
    except (ImportError, ValueError, httpx.InvalidURL) as exc:
        # A proxy URL that cannot be used (socks5:// without socksio, ftp://, a bad port...).
        problem = f"{type(exc).__name__}: {mask_password(str(exc))}"
    names = [name for name, value in os.environ.items() if value and name.upper() in _PROXY_ENV]
    return ConfigurationError(
        f"{', '.join(sorted(names)) or 'the proxy settings'} in the environment cannot be used "
        f"to build the HTTP client ({problem}); fix or unset it, or pass an http_client"
    )


def transport_maker(is_async: bool, url: str, *, trust_env: bool) -> Callable[..., Any]:
    """What builds the SDK's own `Transport` to ``url``: ``(connections, single=False)``."""
    verify = ssl_context(trust_env)
    proxy = proxy_for(httpx.URL(url)) if trust_env else None
    if isinstance(proxy, ConfigurationError):
        raise proxy
    if is_async:
        from lingodoc._async_transport import Transport
    else:
        from lingodoc._sync_transport import Transport  # type: ignore[assignment]
    return functools.partial(Transport, verify=verify, proxy=proxy)
