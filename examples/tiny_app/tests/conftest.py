"""Configure the emulator behind the lingodoc_* fixtures for every test of the app."""

import pytest

from lingodoc.emulator import Emulator


@pytest.fixture
def lingodoc_emulator(lingodoc_clock):
    # Overriding this fixture configures the emulator that lingodoc_client and
    # lingodoc_async_client are bound to. Asking for lingodoc_clock first makes the
    # emulator follow the fake clock: jobs advance as the SDK polls, without real waits.
    return Emulator(job_duration=30)
