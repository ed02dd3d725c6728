"""`DefaultAioHttpClient`: an ``httpx.AsyncClient`` on aiohttp's pool, as in the openai SDK.

Its errors are raised as the httpx errors that say what happened, so that the retry policy
tells a connection never made (retried even when it starts a job) from one dropped after
sending (not retried then): ``httpx-aiohttp`` makes both ``ConnectTimeout``.
"""

from __future__ import annotations

import functools
import urllib.request
import weakref
from typing import Any, NoReturn

import httpx

from lingodoc import _tracing
from lingodoc._constants import AIOHTTP_MAX_IN_FLIGHT, DEFAULT_TIMEOUT
from lingodoc._environment import ssl_context
from lingodoc._exceptions import ConfigurationError


def _raise_as_httpx(exc: Exception) -> NoReturn:
    """Raise the httpx error that an error of aiohttp (or httpx-aiohttp's from it) stands for."""
    import aiohttp

    cause = exc.__cause__ if isinstance(exc, httpx.HTTPError) and exc.__cause__ else exc
    kinds: list[tuple[Any, type[httpx.TransportError]]] = [  # the first that matches
        (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
        (aiohttp.ClientConnectorError, httpx.ConnectError),  # nothing was sent
        (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
        ((aiohttp.ClientOSError, aiohttp.ServerDisconnectedError), httpx.ReadError),
        ((aiohttp.ClientPayloadError, aiohttp.ClientResponseError), httpx.RemoteProtocolError),
    ]
    kind = next((kind for errors, kind in kinds if isinstance(cause, errors)), None)
    if kind is None and isinstance(exc, httpx.TransportError) and exc.__cause__ is None:
        raise exc  # httpx's own
    # An error of no kind above: a TransportError, which may have been sent.
    raise (kind or httpx.TransportError)(str(cause) or type(cause).__name__) from exc


class _Transport(_tracing.Traced, httpx.AsyncBaseTransport):
    """``httpx_aiohttp.AiohttpTransport``, its errors raised as the httpx errors they are.

    And what an ``AsyncClient`` handed its client may do: send through it (``direct``), and
    let its session take a proxy from the environment (``proxied``).
    """

    def __init__(self, transport: httpx.AsyncBaseTransport, *, direct: bool, proxied: bool):
        import aiohttp

        from lingodoc._async_transport import ResponseStream  # here: it imports httpcore

        self.transport = transport
        self.errors = (httpx.TransportError, aiohttp.ClientError)
        self.body = functools.partial(ResponseStream, errors=self.errors, raises=_raise_as_httpx)
        self.direct, self.proxied, self.session_made = direct, proxied, False
        self.headers: list[tuple[bytes, bytes]] = []  # its client's, as made

    async def send(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.transport.handle_async_request(request)
        except self.errors as exc:
            _raise_as_httpx(exc)
        response.stream = self.body(response.stream)
        return response

    async def aclose(self) -> None:
        await self.transport.aclose()


_handed: weakref.WeakKeyDictionary[DefaultAioHttpClient, _Transport] = weakref.WeakKeyDictionary()


class DefaultAioHttpClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` on aiohttp: ``AsyncClient(http_client=DefaultAioHttpClient())``.

    Unlike another ``http_client``, it is handed over: the ``AsyncClient`` closes it, and
    lets up to 100 calls in flight by default (as many as its pool holds). It belongs to
    the event loop it is first used in (asyncio only: aiohttp does not run on trio). As
    with the SDK's own clients, a proxy of the environment is used only for ``https://``:
    an ``http://`` ``base_url`` would hand it the key in clear text. If it has client
    settings (headers, cookies, query parameters, auth, event hooks) when it is handed
    over, requests go through its ``send()``, which applies them; if not, through its
    transport, as the SDK's own do, and settings made on it afterwards are not applied.

    Args:
        **kwargs: What ``httpx.AsyncClient`` takes; ``limits`` sizes aiohttp's pool (100
            connections by default), ``verify`` and ``trust_env`` its TLS settings.

    Raises:
        ConfigurationError: If ``httpx-aiohttp`` is not installed.
    """

    def __init__(self, **kwargs: Any) -> None:
        try:
            from httpx_aiohttp import AiohttpTransport
        except ImportError:
            raise ConfigurationError(
                'DefaultAioHttpClient needs aiohttp: pip install "lingodoc[aiohttp]"'
            ) from None
        # Only settings of the transport: the SDK may send through it (else through send()).
        plain = set(kwargs) <= {"limits", "timeout", "trust_env", "verify"}
        kwargs.setdefault("timeout", DEFAULT_TIMEOUT)
        limits = kwargs.setdefault("limits", httpx.Limits(max_connections=AIOHTTP_MAX_IN_FLIGHT))
        trust_env = kwargs.setdefault("trust_env", True)
        # The SDK's shared SSL context, unless told otherwise: httpx would build one each.
        verify = kwargs.setdefault("verify", ssl_context(trust_env))
        proxied = trust_env and any(
            urllib.request.getproxies_environment().get(s) for s in ("http", "https", "all")
        )

        def session() -> Any:  # made in the event loop of the first request
            import aiohttp

            transport.session_made = True
            connector = aiohttp.TCPConnector(
                limit=limits.max_connections or 0,
                keepalive_timeout=limits.keepalive_expiry,
                ssl=verify,
            )
            # httpx reads no proxy variable for a transport: aiohttp reads them, where set
            # (it then looks for each request's proxy, and .netrc, in a thread).
            return aiohttp.ClientSession(connector=connector, trust_env=transport.proxied)

        sender = AiohttpTransport(verify=verify, client=session)
        transport = _Transport(sender, direct=plain, proxied=proxied)
        kwargs.setdefault("transport", transport)
        super().__init__(**kwargs)
        transport.headers = self.headers.raw
        _handed[self] = transport


def hand_over(
    http_client: DefaultAioHttpClient, *, proxy_allowed: bool
) -> httpx.AsyncBaseTransport | None:
    """Take ``http_client`` for an ``AsyncClient``: the transport to send through, or ``None``.

    ``None``: through its ``send()``. Its proxies follow the SDK's rule: none for ``http://``.
    """
    handed = _handed[http_client]
    if (  # settings made after it was made: its send() applies them
        http_client.headers.raw != handed.headers
        or http_client.cookies
        or http_client.params
        or http_client.auth is not None
        or any(http_client.event_hooks.values())
    ):
        handed.direct = False
    if handed.proxied and not proxy_allowed:
        if handed.session_made:
            raise ConfigurationError(
                "this DefaultAioHttpClient already sent requests through a proxy of the "
                "environment, which an http:// base_url must not use (the proxy would get "
                "the API key in clear text): pass a new DefaultAioHttpClient"
            )
        handed.proxied = False
    return handed if handed.direct else None
