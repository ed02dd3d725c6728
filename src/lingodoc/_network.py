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
    http: httpx.Client | httpx.AsyncClient,
    *,
    verify: ssl.SSLContext,
    trust_env: bool,
    limits: httpx.Limits,
) -> None:
    """Make the pools of ``http`` (direct and through proxies) small and keep to the deadline.

    ``http`` must be the SDK's own, built with ``verify``, ``trust_env`` and ``limits``:
    its direct transport becomes a ``ShardedTransport`` (or ``AsyncShardedTransport``) of
    ``limits.max_connections`` connections, each of its pools httpx's own transport,
    built with the same settings (each keeps alive as many connections as it may open,
    up to the client's keep-alive limit). Proxy transports are only wrapped.
    """
    for transport in getattr(http, "_mounts", {}).values():  # through proxies
        keep_to_deadline(transport)
    size = limits.max_connections
    if size is None:  # no limit to split: one pool, as httpx made it
        keep_to_deadline(getattr(http, "_transport", None))
        return

    def pool_limits(connections: int) -> httpx.Limits:
        keep_alive = limits.max_keepalive_connections
        if keep_alive is None or keep_alive > connections:
            keep_alive = connections
        return httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=keep_alive,
            keepalive_expiry=limits.keepalive_expiry,
        )

    if isinstance(http, httpx.Client):

        def make(connections: int) -> httpx.HTTPTransport:
            shard = httpx.HTTPTransport(
                verify=verify, trust_env=trust_env, limits=pool_limits(connections)
            )
            keep_to_deadline(shard)
            return shard

        http._transport = ShardedTransport(make, size)
    else:

        def make_async(connections: int) -> httpx.AsyncHTTPTransport:
            shard = httpx.AsyncHTTPTransport(
                verify=verify, trust_env=trust_env, limits=pool_limits(connections)
            )
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
