"""The tiny app's tests, with the fixtures lingodoc installs for pytest.

Each test gets a fresh in-process emulator (``lingodoc_emulator``), clients bound to it
(``lingodoc_client``, ``lingodoc_async_client``) and a fake clock (``lingodoc_clock``), so
retries, rate-limit waits and polling are instant and recorded.
"""

import app
import pytest

import lingodoc


def test_greets_in_the_visitors_language(lingodoc_client):
    assert app.greeting(lingodoc_client, "de") == "Willkommen, mein Freund"
    assert app.greeting(lingodoc_client, "FR") == "Bienvenue, mon ami"


def test_english_needs_no_request(lingodoc_emulator, lingodoc_client):
    assert app.greeting(lingodoc_client, "en") == app.GREETING
    assert lingodoc_emulator.requests == []


def test_a_language_that_does_not_exist_is_reported(lingodoc_client):
    with pytest.raises(app.UnknownLanguage):
        app.greeting(lingodoc_client, "xx")


def test_a_short_outage_is_retried_by_the_sdk(lingodoc_emulator, lingodoc_client, lingodoc_clock):
    lingodoc_emulator.inject("server_error", times=2)
    assert app.greeting(lingodoc_client, "es") == "Bienvenido, mi amigo"
    assert [request.status for request in lingodoc_emulator.requests] == [500, 500, 200]
    assert len(lingodoc_clock.sleeps) == 2  # two backoffs, on the fake clock


def test_a_long_outage_falls_back_to_english(lingodoc_emulator, lingodoc_client):
    lingodoc_emulator.inject("server_error", times=3)  # more than the 2 retries
    assert app.greeting(lingodoc_client, "de") == app.GREETING


def test_a_dropped_connection_falls_back_to_english(lingodoc_emulator, lingodoc_client):
    lingodoc_emulator.inject("disconnect", times=3)
    assert app.greeting(lingodoc_client, "de") == app.GREETING


def test_a_spent_rate_limit_falls_back_without_waiting(
    lingodoc_emulator, lingodoc_client, lingodoc_clock
):
    lingodoc_emulator.inject("rate_limit", retry_after=3600)  # too far off to wait for
    assert app.greeting(lingodoc_client, "de") == app.GREETING
    assert lingodoc_clock.sleeps == []


def test_a_rate_limit_that_resets_soon_is_waited_out(
    lingodoc_emulator, lingodoc_client, lingodoc_clock
):
    lingodoc_emulator.inject("rate_limit", retry_after=20)
    assert app.greeting(lingodoc_client, "de") == "Willkommen, mein Freund"
    assert lingodoc_clock.sleeps == [20.0]


async def test_greetings_in_several_languages_at_once(lingodoc_emulator, lingodoc_async_client):
    lingodoc_emulator.inject("server_error", times=2)  # whichever requests meet them retry
    result = await app.greetings(lingodoc_async_client, ["de", "fr", "es"])
    assert result == {
        "de": "Willkommen, mein Freund",
        "fr": "Bienvenue, mon ami",
        "es": "Bienvenido, mi amigo",
    }


async def test_greetings_fall_back_to_english_when_the_service_is_down(
    lingodoc_emulator, lingodoc_async_client
):
    lingodoc_emulator.inject("server_error", times=9)  # 3 requests x 3 attempts each
    result = await app.greetings(lingodoc_async_client, ["de", "fr", "es"])
    assert result == dict.fromkeys(["de", "fr", "es"], app.GREETING)


def test_translates_the_handbook_showing_progress(lingodoc_client, lingodoc_clock):
    seen = []
    status = app.translate_handbook(
        lingodoc_client, "de", on_progress=lambda s: seen.append(s.progress)
    )
    assert status.status == lingodoc.TranslationState.COMPLETED
    assert seen[-1] == 100
    assert seen == sorted(seen)
    assert set(lingodoc_clock.sleeps) == {5.0}  # polled every 5 s of fake time


def test_a_failed_handbook_translation_says_so(lingodoc_emulator, lingodoc_client):
    lingodoc_emulator.fail_next_job("The file is corrupt.")
    with pytest.raises(app.HandbookError, match="failed; start it again"):
        app.translate_handbook(lingodoc_client, "fr")


def test_a_slow_handbook_translation_can_be_resumed(lingodoc_emulator, lingodoc_client):
    lingodoc_emulator.job_duration = 3600
    with pytest.raises(app.HandbookError, match=r"resume with tr_\w+") as raised:
        app.translate_handbook(lingodoc_client, "de", timeout=60)
    translation_id = str(raised.value).rsplit(" ", 1)[-1]
    # The hour the job takes, on the fake clock: past the default 600 s, so no limit.
    status = lingodoc_client.wait_for_translation(translation_id, timeout=None)
    assert status.status == lingodoc.TranslationState.COMPLETED
