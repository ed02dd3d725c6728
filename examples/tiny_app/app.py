"""A tiny application built on lingodoc: it greets visitors and translates the handbook.

What matters here is how it treats the service: the caller's mistakes (a language that
does not exist) are reported, while the failures that come and go (an outage, a spent
rate limit, a dropped connection) fall back to English instead of failing the page. Its
tests, in tests/test_app.py, check both with the pytest fixtures that lingodoc installs.

    python app.py          # against the emulator, or the service if LINGODOC_* are set
    python -m pytest       # its tests
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable

import lingodoc

log = logging.getLogger("tiny_app")

GREETING = "Welcome, my friend"
HANDBOOK = "doc_handbook"


class UnknownLanguage(ValueError):
    """The visitor asked for a language the service does not know."""


class HandbookError(RuntimeError):
    """The handbook could not be translated; the message says what to do."""


def greeting(client: lingodoc.Client, language: str) -> str:
    """Return the greeting in ``language``, or in English while the service is unavailable.

    Raises:
        UnknownLanguage: If ``language`` is not a language the service translates into.
    """
    if language.lower() == "en":
        return GREETING
    try:
        result = client.translate(GREETING, source_language="en", target_language=language)
    except lingodoc.InvalidLanguage as error:
        raise UnknownLanguage(language) from error
    except (lingodoc.RateLimited, lingodoc.ServerError, lingodoc.APIConnectionError) as error:
        # The SDK has already retried what was worth retrying.
        log.warning("greeting in %s unavailable, falling back to English: %s", language, error)
        return GREETING
    return result.translated_text


async def greetings(client: lingodoc.AsyncClient, languages: Iterable[str]) -> dict[str, str]:
    """Return the greeting in each language, translated concurrently; English where it failed."""
    languages = list(languages)
    results = await asyncio.gather(
        *(
            client.translate(GREETING, source_language="en", target_language=language)
            for language in languages
        ),
        return_exceptions=True,
    )
    return {
        language: result.translated_text
        if isinstance(result, lingodoc.TextTranslation)
        else GREETING
        for language, result in zip(languages, results, strict=True)
    }


def translate_handbook(
    client: lingodoc.Client,
    language: str,
    *,
    timeout: float = 600.0,
    poll_interval: float = 5.0,
    on_progress: Callable[[lingodoc.TranslationStatus], object] | None = None,
) -> lingodoc.TranslationStatus:
    """Translate the handbook into ``language`` and wait until it is done.

    Raises:
        HandbookError: If the translation failed, or is still running after ``timeout``
            seconds (the message then names the translation id to resume the wait with).
    """
    job = client.translate_document(HANDBOOK, target_language=language)
    try:
        return client.wait_for_translation(
            job, poll_interval=poll_interval, timeout=timeout, on_progress=on_progress
        )
    except lingodoc.TranslationFailed as error:
        raise HandbookError(f"the translation into {language} failed; start it again") from error
    except lingodoc.WaitTimeout as error:
        raise HandbookError(
            f"still translating after {timeout:g} s; resume with {job.translation_id}"
        ) from error


def main() -> None:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        client, poll_interval = lingodoc.Client(), 5.0
    else:
        from lingodoc.emulator import Emulator

        print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process")
        client, poll_interval = Emulator(job_duration=1.0).client(), 0.2
    with client:
        for language in ("en", "de", "fr", "es"):
            print(f"{language}: {greeting(client, language)}")
        status = translate_handbook(client, "de", poll_interval=poll_interval)
        print(f"handbook in German: {status.status} at {status.completed_at:%H:%M:%S} UTC")


if __name__ == "__main__":
    main()
