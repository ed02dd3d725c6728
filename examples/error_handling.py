"""Handle lingodoc's errors: what each one means and what to do about it.

Every exception the SDK raises is a ``lingodoc.LingodocError``; errors the service answers
with are ``lingodoc.APIError`` (with ``status_code``, ``code``, ``message``, ``request_id``).
The first part provokes errors any service gives; the second uses the emulator's fault
injection to show the failures that come and go (5xx, 429, dropped connections, a failed
document), which the SDK retries where that is safe.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set (the
second part then needs the emulator and is skipped), and otherwise against the local
emulator, in-process.

    python examples/error_handling.py
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import lingodoc

if TYPE_CHECKING:
    from lingodoc.emulator import Emulator


def translate(client: lingodoc.Client, text: str, target: str) -> str:
    """Translate ``text``, turning each kind of failure into what the application does next."""
    try:
        return client.translate(text, source_language="en", target_language=target).translated_text
    except lingodoc.TextTooLong:
        # Refused before anything was sent: split the text and translate the parts.
        middle = len(text) // 2
        return translate(client, text[:middle], target) + translate(client, text[middle:], target)
    except lingodoc.InvalidLanguage as error:
        return f"(not translated: {error})"  # the caller's mistake; nothing to retry
    except lingodoc.RateLimited as error:
        # The SDK already waited when the reset was within 60 s; this one is further off
        # (or the service did not say when: retry_after is None).
        when = f"in {error.retry_after:.0f} s" if error.retry_after is not None else "later"
        return f"(not translated: rate limited, try again {when})"
    except lingodoc.APIError as error:
        # Anything else the service refused, or a 5xx that outlasted the retries.
        return f"(not translated: {error.code} {error.status_code}, request {error.request_id})"
    except lingodoc.APIConnectionError as error:
        return f"(not translated: the service cannot be reached: {error})"


def attempt(label: str, call: Callable[[], Any]) -> None:
    """Run ``call`` and print what it returned or raised."""
    print(label)
    try:
        result = call()
    except lingodoc.LingodocError as error:
        print(f"   -> {type(error).__name__}: {error}")
    else:
        print(f"   -> {result!r}")


def errors_any_service_gives(
    client: lingodoc.Client, make_client: Callable[[str], lingodoc.Client]
) -> None:
    print("Errors any service gives:")

    def long_text() -> str:
        text = "Hello world. " * 1000
        translated = translate(client, text, "de")
        return f"{len(text):,} characters sent in two parts: {translated[:23]}..."

    attempt("a. a text over 10,000 characters, split by translate()", long_text)
    attempt("b. a language that does not exist", lambda: translate(client, "Hello", "xx"))
    attempt(
        "c. a document that does not exist",
        lambda: client.translate_document("doc_does_not_exist", target_language="de"),
    )

    def wrong_key() -> Any:
        with make_client("ld_this_key_does_not_exist_0000") as stranger:
            return stranger.list_documents()

    attempt("d. a wrong API key (never shown beyond its last 4 characters)", wrong_key)
    attempt(
        "e. a plain-http address to another host: refused before any request",
        lambda: lingodoc.Client("any-key", base_url="http://api.example.com/v1"),
    )


def failures_that_come_and_go(client: lingodoc.Client, emulator: Emulator) -> None:
    print("\nFailures that come and go (the emulator's fault injection):")
    emulator.inject("server_error", times=2)
    attempt("f. two 500s, then an answer: retried", lambda: translate(client, "Good day", "fr"))
    print(f"   the emulator saw: {[r.status for r in emulator.requests[-3:]]}")

    emulator.inject("server_error", times=1, status=503)
    no_retries = client.with_options(max_retries=0)  # for a script that must fail fast
    attempt("g. a 503 with retries switched off", lambda: translate(no_retries, "Hello", "de"))

    emulator.inject("rate_limit", retry_after=1)
    attempt("h. a 429 that resets in 1 s: waited out", lambda: translate(client, "Thanks", "es"))

    emulator.inject("rate_limit", retry_after=600)
    attempt("i. a 429 that resets in 10 min: raised", lambda: translate(client, "Thanks", "es"))

    emulator.inject("disconnect", times=1)
    attempt(
        "j. a dropped connection, no retries",
        lambda: no_retries.translate("Hello", source_language="en", target_language="de"),
    )

    emulator.fail_next_job("The file is corrupt.")

    def failed_document() -> Any:
        job = client.translate_document("doc_welcome", target_language="de")
        try:
            return client.wait_for_translation(job, poll_interval=0.2, timeout=60)
        except lingodoc.TranslationFailed as failure:
            print(f"   ({failure.status.translation_id} stopped at {failure.status.progress}%)")
            raise

    attempt("k. a document translation that fails", failed_document)


def main() -> None:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}\n")
        base_url = os.environ["LINGODOC_BASE_URL"]
        with lingodoc.Client() as client:
            errors_any_service_gives(client, lambda key: lingodoc.Client(key, base_url=base_url))
        print("\n(The failures that come and go need the emulator's fault injection: skipped.)")
        return

    from lingodoc.emulator import Emulator

    print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process\n")
    emulator = Emulator(job_duration=1.0)
    with emulator.client() as client:
        errors_any_service_gives(client, lambda key: emulator.client(key))
        failures_that_come_and_go(client, emulator)


if __name__ == "__main__":
    main()
