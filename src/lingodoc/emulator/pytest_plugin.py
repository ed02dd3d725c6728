"""pytest fixtures that bind lingodoc clients to a fresh in-process emulator for each test.

Installed with lingodoc as a ``pytest11`` plugin, so the fixtures are simply there. They run on
a fake clock (``lingodoc_clock``), so the SDK's waits (polling, retries, 429s) are instant and
recorded, and translation jobs move on as the SDK polls:

```python
def test_greets(lingodoc_client):
    result = lingodoc_client.translate("Hello", source_language="en", target_language="de")
    assert result.translated_text == "Hallo"

def test_survives_outage(lingodoc_emulator, lingodoc_client, lingodoc_clock):
    lingodoc_emulator.inject("rate_limit", retry_after=30)
    job = lingodoc_client.translate_document("doc_welcome", target_language="de")
    lingodoc_client.wait_for_translation(job)
    assert lingodoc_clock.sleeps == [30.0, 5.0, 5.0]
```

To configure the emulator, override ``lingodoc_emulator`` in a ``conftest.py``; the client
fixtures use whatever it returns. ``lingodoc_clock`` installs ``lingodoc.testing.fake_clock()``
for the test (or yields the fake clock a fixture of yours installed first); to run on the real
clock instead, override it to install nothing:

```python
@pytest.fixture
def lingodoc_clock():
    return None
```

``lingodoc_async_client`` is a plain (sync) fixture, so it works with pytest-asyncio in auto and
strict mode alike and with other async plugins (anyio's, on asyncio or trio): the in-process
client holds no sockets, and it is closed at teardown on a private event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import lingodoc
    from lingodoc.emulator import Emulator
    from lingodoc.testing import FakeClock


@pytest.fixture
def lingodoc_clock() -> Iterator[FakeClock]:
    """The fake clock in force during the test: ``lingodoc.testing.fake_clock()``.

    If a fake clock is already installed (by a fixture that ran first), that one is yielded.
    """
    from lingodoc import _clock
    from lingodoc.testing import FakeClock, fake_clock

    installed = _clock.current()
    with fake_clock(installed if isinstance(installed, FakeClock) else None) as clock:
        yield clock


@pytest.fixture
def lingodoc_emulator(lingodoc_clock: FakeClock | None) -> Emulator:
    """A fresh [`lingodoc.emulator.Emulator`][lingodoc.emulator.Emulator] with default settings."""
    from lingodoc.emulator import Emulator

    return Emulator()


@pytest.fixture
def lingodoc_client(
    lingodoc_emulator: Emulator, lingodoc_clock: FakeClock | None
) -> Iterator[lingodoc.Client]:
    """A ``lingodoc.Client`` using the emulator's Full Access key, closed after the test."""
    client = lingodoc_emulator.client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def lingodoc_async_client(
    lingodoc_emulator: Emulator, lingodoc_clock: FakeClock | None
) -> Iterator[lingodoc.AsyncClient]:
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
