"""The SDK's connection pools: every socket read and write cut to the attempt's deadline.

httpcore gives each read the read timeout afresh, so headers or a body sent a
byte at a time never time out. ``install`` wraps the network backend of the
pools of an http client the SDK created: while an attempt is current (see
``_deadline``), each connect, TLS handshake, read and write gets its own timeout
or the time left, whichever is shorter, and none starts once the deadline has
passed. Outside an attempt the wrappers do nothing.

Imported when the SDK creates its http client (which imports httpcore anyway),
so that ``import lingodoc`` stays light.
"""

from __future__ import annotations

import httpcore
import httpx

from lingodoc._async_network import AsyncBackend
from lingodoc._sync_network import Backend


def install(http: httpx.Client | httpx.AsyncClient) -> None:
    """Make the pools of ``http`` (direct and through proxies) keep to the attempt's deadline.

    Only httpx's own transports are changed; any other is left as it is.
    """
    transports = [getattr(http, "_transport", None), *getattr(http, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, (Backend, AsyncBackend)):
            continue
        if isinstance(backend, httpcore.NetworkBackend):
            pool._network_backend = Backend(backend)  # type: ignore[union-attr]
        elif isinstance(backend, httpcore.AsyncNetworkBackend):
            pool._network_backend = AsyncBackend(backend)  # type: ignore[union-attr]
