"""The SDK's connection pools: small ones, and every socket read and write cut to the deadline.

httpcore gives each read the read timeout afresh, so headers or a body sent a
byte at a time never time out. ``install`` wraps the network backend of the
pools of an http client the SDK created: while an attempt is current (see
``_deadline``), each connect, TLS handshake, read and write gets its own timeout
or the time left, whichever is shorter, and none starts once the deadline has
passed. Outside an attempt the wrappers do nothing. It also splits the client's
direct pool into small ones (``AsyncShardedTransport``: httpcore's pool costs more
per call with every connection it holds).

Imported when the SDK creates its http client (which imports httpcore anyway),
so that ``import lingodoc`` stays light.
"""

from __future__ import annotations

import ssl

import httpcore
import httpx

from lingodoc._async_network import AsyncBackend, AsyncShardedTransport
from lingodoc._sync_network import Backend, ShardedTransport


def install(
    http: httpx.Client | httpx.AsyncClient, *, verify: ssl.SSLContext, trust_env: bool
) -> None:
    """Make the pools of ``http`` (direct and through proxies) small and keep to the deadline.

    The direct pool becomes a ``ShardedTransport`` (or ``AsyncShardedTransport``) of
    as many connections, each pool built as httpx builds its own, with ``verify`` and
    ``trust_env``. Only httpx's own transports are changed; any other is left as it is.
    """
    for transport in getattr(http, "_mounts", {}).values():  # through proxies
        keep_to_deadline(transport)
    transport = getattr(http, "_transport", None)
    pool = getattr(transport, "_pool", None)
    size = getattr(pool, "_max_connections", None)
    if not isinstance(size, int):
        keep_to_deadline(transport)
        return
    if isinstance(http, httpx.Client):

        def make(connections: int) -> httpx.HTTPTransport:
            limits = httpx.Limits(
                max_connections=connections, max_keepalive_connections=connections
            )
            shard = httpx.HTTPTransport(verify=verify, trust_env=trust_env, limits=limits)
            keep_to_deadline(shard)
            return shard

        http._transport = ShardedTransport(make, size)
    else:

        def make_async(connections: int) -> httpx.AsyncHTTPTransport:
            limits = httpx.Limits(
                max_connections=connections, max_keepalive_connections=connections
            )
            shard = httpx.AsyncHTTPTransport(verify=verify, trust_env=trust_env, limits=limits)
            keep_to_deadline(shard)
            return shard

        http._transport = AsyncShardedTransport(make_async, size)


def keep_to_deadline(transport: object) -> None:
    """Wrap the network backend of ``transport``'s pool, if it is one of httpx's own."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, (Backend, AsyncBackend)):
        return
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = Backend(backend)  # type: ignore[union-attr]
    elif isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = AsyncBackend(backend)  # type: ignore[union-attr]
