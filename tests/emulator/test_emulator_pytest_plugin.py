"""The emulator's pytest plugin: the lingodoc_emulator and lingodoc_client fixtures."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

PLUGIN_TESTS = """
    import pytest
    from lingodoc.emulator import Emulator

    USED = []

    def test_emulator(lingodoc_emulator):
        assert isinstance(lingodoc_emulator, Emulator)
        assert lingodoc_emulator.translations == {}

    def test_client(lingodoc_emulator, lingodoc_client):
        USED.append(lingodoc_client)
        lingodoc_emulator.inject("server_error")
        result = lingodoc_client.translate("Hello", source_language="en", target_language="de")
        assert result.translated_text == "Hallo"
        assert [r.status for r in lingodoc_emulator.requests] == [500, 200]

    @pytest.mark.asyncio
    async def test_async_client(lingodoc_async_client):
        USED.append(lingodoc_async_client)
        result = await lingodoc_async_client.translate(
            "Hello", source_language="en", target_language="fr"
        )
        assert result.translated_text == "Bonjour"

    def test_clients_were_closed_after_their_tests():
        assert [client.is_closed for client in USED] == [True, True]

    def test_the_fake_clock_installed_first_is_the_one_used(_clock, lingodoc_clock):
        assert lingodoc_clock is _clock
"""

# Imported rather than registered with -p, so this works whether or not the pytest11 entry
# point is installed.
PLUGIN_CONFTEST = """
    import pytest
    from lingodoc.emulator.pytest_plugin import (
        lingodoc_async_client, lingodoc_client, lingodoc_emulator,
    )
    from lingodoc.testing import fake_clock

    @pytest.fixture(autouse=True)
    def _clock():
        with fake_clock() as clock:
            yield clock
"""


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_pytest_fixtures_in_auto_and_strict_mode(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
    )
    pytester.makeconftest(textwrap.dedent(PLUGIN_CONFTEST))
    pytester.makepyfile(textwrap.dedent(PLUGIN_TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}")
    result.assert_outcomes(passed=5)


ANYIO_TESTS = """
    import pytest

    pytestmark = pytest.mark.anyio

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(request):
        return request.param

    async def test_async_client(
        lingodoc_emulator, lingodoc_async_client, lingodoc_clock, anyio_backend
    ):
        import sniffio

        assert sniffio.current_async_library() == anyio_backend  # really on trio, too
        lingodoc_emulator.inject("server_error", status=503)
        result = await lingodoc_async_client.translate(
            "Hello", source_language="en", target_language="fr"
        )
        assert result.translated_text == "Bonjour"
        job = await lingodoc_async_client.translate_document("doc_welcome", target_language="de")
        await lingodoc_async_client.wait_for_translation(job)
        many = await lingodoc_async_client.translate_many(
            ["Hello", "Good night", "Hello"], source_language="en", target_language="de",
            batch_size=1,
        )
        assert many == ["Hallo", "Gut Nacht", "Hallo"]  # the emulator translates word by word
        assert lingodoc_clock.sleeps[-2:] == [5.0, 5.0]
"""


@pytest.mark.parametrize(
    "asyncio_plugin",
    [["-p", "no:asyncio"], ["-o", "asyncio_mode=strict"]],
    ids=["without-pytest-asyncio", "beside-pytest-asyncio-in-strict-mode"],
)
def test_pytest_fixtures_under_anyio_on_asyncio_and_trio(
    pytester: pytest.Pytester, asyncio_plugin: list[str]
) -> None:
    # As docs/testing.md says: anyio's plugin alone, or beside pytest-asyncio in strict mode
    # (in auto mode, pytest-asyncio would run the trio test on asyncio).
    pytester.makeini(
        "[pytest]\nfilterwarnings = error\n"
        + ("asyncio_default_fixture_loop_scope = function\n" if "-o" in asyncio_plugin else "")
    )
    pytester.makeconftest(textwrap.dedent(PLUGIN_CONFTEST))
    pytester.makepyfile(textwrap.dedent(ANYIO_TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider", *asyncio_plugin, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_async_client?trio? PASSED*"])


FAKE_CLOCK_TESTS = """
    def test_waits_and_429s_go_by_the_fake_clock_and_are_recorded(
        lingodoc_emulator, lingodoc_client, lingodoc_clock
    ):
        lingodoc_emulator.inject("rate_limit", retry_after=30)
        job = lingodoc_client.translate_document("doc_welcome", target_language="de")
        done = lingodoc_client.wait_for_translation(job)
        assert done.status == "completed"
        assert lingodoc_clock.sleeps == [30.0, 5.0, 5.0]
        assert [r.status for r in lingodoc_emulator.requests][:2] == [429, 200]
        assert lingodoc_clock.monotonic() == 40.0  # the emulator's job moved on the fake clock

    async def test_async_too(lingodoc_async_client, lingodoc_clock):
        job = await lingodoc_async_client.translate_document("doc_welcome", target_language="fr")
        await lingodoc_async_client.wait_for_translation(job)
        assert lingodoc_clock.sleeps == [5.0, 5.0]
"""

REAL_CLOCK_CONFTEST = """
    import pytest

    @pytest.fixture
    def lingodoc_clock():
        return None
"""

REAL_CLOCK_TESTS = """
    from lingodoc import _clock
    from lingodoc.testing import FakeClock

    def test_opted_out(lingodoc_clock, lingodoc_client):
        assert lingodoc_clock is None
        assert not isinstance(_clock.current(), FakeClock)
        assert lingodoc_client.list_documents()
"""


def test_pytest_fixtures_run_on_a_fake_clock_unless_told_not_to(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makeconftest(
        "from lingodoc.emulator.pytest_plugin import (\n"
        "    lingodoc_async_client, lingodoc_client, lingodoc_clock, lingodoc_emulator,\n"
        ")\n"
    )
    pytester.makepyfile(test_fake=textwrap.dedent(FAKE_CLOCK_TESTS))
    real = pytester.mkpydir("real")
    (real / "conftest.py").write_text(textwrap.dedent(REAL_CLOCK_CONFTEST))
    (real / "test_real.py").write_text(textwrap.dedent(REAL_CLOCK_TESTS))
    # In a subprocess: this test's own fake clock must not be the one the fixtures find.
    # A whole pytest run (test_doc_snippets gives its runs 120 s too); without hypothesis's
    # plugin, which these tests do not use: its import took half the run.
    plugins = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result = pytester.runpytest_subprocess(*plugins, timeout=120)
    result.assert_outcomes(passed=3)
