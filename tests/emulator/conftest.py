"""Fixtures of the emulator's tests: an emulator on a fake clock, and plain httpx to call it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lingodoc.emulator import Emulator
from lingodoc.testing import FakeClock

START = 1_700_000_000.0


def http(
    em: Emulator, key: str | None = None, *, base_url: str | None = None, **kwargs: Any
) -> httpx.Client:
    """Plain httpx with ``key`` (the emulator's own by default), in process or to ``base_url``."""
    headers = {"Authorization": f"Bearer {key if key is not None else em.api_key}"}
    if base_url is None:
        kwargs["transport"] = em.transport()
    return httpx.Client(base_url=base_url or em.base_url, headers=headers, **kwargs)


@pytest.fixture
def em() -> Emulator:
    return Emulator(clock=FakeClock(start=START))


@pytest.fixture
def client(em: Emulator) -> Iterator[httpx.Client]:
    """Plain httpx to ``em``, in process (this folder's ``client``: not an SDK client)."""
    with http(em) as instance:
        yield instance
