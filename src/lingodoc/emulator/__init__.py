"""A local stand-in for the lingodoc service, for demos, tests and benchmarks.

In-process, with no sockets (its translation jobs follow ``lingodoc.testing.fake_clock()``):

```python
from lingodoc.emulator import Emulator

em = Emulator()
with em.client() as client:                      # a lingodoc.Client bound to em
    print(client.translate("Hello world", source_language="en", target_language="de"))
httpx.Client(transport=em.transport())           # or any httpx client, sync or async
```

As a real HTTP server on loopback, in a background thread:

```python
with Emulator().serve() as server:               # port 0: any free port
    client = lingodoc.Client(server.api_key, base_url=server.base_url)
```

Or in the foreground: ``python -m lingodoc.emulator --port 7318``.

What to set up: ``em.api_key`` is a ready-made Full Access key; ``em.create_key(name,
permission, expires_at)`` and ``em.revoke_key(key)`` make others; ``em.add_document(...)`` adds
documents (``doc_welcome`` and ``doc_handbook`` are there already). What to break:
``em.inject("rate_limit" | "server_error" | "disconnect" | "slow", times, path=..., ...)`` and
``em.fail_next_job()``. What happened: ``em.requests`` and ``em.translations``.

"Translation" is a fixed word table (see
[`translate_text`][lingodoc.emulator.translate_text]), so tests can assert exact output. The
guide is ``docs/emulator.md``; pytest fixtures are in ``lingodoc.emulator.pytest_plugin``.
"""

from __future__ import annotations

from lingodoc.emulator._emulator import PLAN_LIMITS, Emulator, EmulatorServer
from lingodoc.emulator._handlers import MAX_BATCH_ITEMS, MAX_TEXT_CHARS
from lingodoc.emulator._routing import MAX_BODY_BYTES, Reply
from lingodoc.emulator._state import Clock, FaultKind, Permission, RequestRecord
from lingodoc.emulator._translate import SUPPORTED_LANGUAGES, WORDS, translate_text
from lingodoc.emulator._transport import EmulatorTransport

__all__ = [
    "MAX_BATCH_ITEMS",
    "MAX_BODY_BYTES",
    "MAX_TEXT_CHARS",
    "PLAN_LIMITS",
    "SUPPORTED_LANGUAGES",
    "WORDS",
    "Clock",
    "Emulator",
    "EmulatorServer",
    "EmulatorTransport",
    "FaultKind",
    "Permission",
    "Reply",
    "RequestRecord",
    "translate_text",
]
