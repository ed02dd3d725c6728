"""pytest fixtures that bind lingodoc clients to a fresh in-process emulator for each test.

Installed with lingodoc as a ``pytest11`` plugin, so the fixtures are simply there::

    def test_greets(lingodoc_client):
        result = lingodoc_client.translate("Hello", source_language="en", target_language="de")
        assert result.translated_text == "Hallo"

    async def test_greets_async(lingodoc_async_client):
        result = await lingodoc_async_client.translate(
            "Hello", source_language="en", target_language="fr"
        )
        assert result.translated_text == "Bonjour"

    def test_survives_outage(lingodoc_emulator, lingodoc_client):
        lingodoc_emulator.inject("server_error", times=2)
        ...

To configure the emulator, override ``lingodoc_emulator`` in a ``conftest.py``; the client
fixtures use whatever it returns.

``lingodoc_async_client`` is a plain (sync) fixture, so it works with pytest-asyncio in auto and
strict mode alike and with other async plugins: the in-process client holds no sockets, and it
is closed at teardown on a private event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import lingodoc
    from lingodoc.emulator import Emulator


@pytest.fixture
def lingodoc_emulator() -> Emulator:
    """A fresh :class:`lingodoc.emulator.Emulator` with default settings."""
    from lingodoc.emulator import Emulator

    return Emulator()


@pytest.fixture
def lingodoc_client(lingodoc_emulator: Emulator) -> Iterator[lingodoc.Client]:
    """A ``lingodoc.Client`` using the emulator's Full Access key, closed after the test."""
    client = lingodoc_emulator.client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def lingodoc_async_client(lingodoc_emulator: Emulator) -> Iterator[lingodoc.AsyncClient]:
    """A ``lingodoc.AsyncClient`` using the emulator's Full Access key, closed after the test."""
    client = lingodoc_emulator.async_client()
    try:
        yield client
    finally:
        # Teardown runs outside any event loop; a private one leaves the test's loop alone.
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(client.aclose())
        finally:
            loop.close()
