"""`lingodoc demo`: the quickstart's tour, runnable from the installed package.

A wheel has no ``examples/``, so a user who installed lingodoc from PyPI cannot run
``examples/quickstart.py``; this command shows the same steps: a text, a batch, a document
translation waited for, an error, and the rate limit. The quickstart stays the program to
read and copy; this is the short way to see it run.
"""

from __future__ import annotations

import argparse
import os

import lingodoc
from lingodoc._constants import API_KEY_ENV, BASE_URL_ENV, DOCS_URL
from lingodoc.cli._errors import EXIT_OK, UsageError, out
from lingodoc.cli._visible import visible

# The docs page that shows examples/quickstart.py, which a wheel does not hold.
QUICKSTART_PAGE = f"{DOCS_URL}examples/#quickstart"

SUMMARY = "Run the quickstart's steps: on a built-in emulator unless a service is configured."

DESCRIPTION = """\
Run the quickstart's steps and print what each returns: a text and a batch translated,
the stored documents listed, the first one translated into Spanish and waited for, an
error caught, and the rate limit read from the response headers.

With LINGODOC_API_KEY and LINGODOC_BASE_URL both set (or --api-key and --base-url), it runs
against that service: its requests count against your rate limit, and it starts a real
translation of your first stored document. Otherwise it runs against an emulator of the
service, in this process, with no account and no network."""


def unset(args: argparse.Namespace) -> list[str]:
    """Name the settings of a service that are missing (neither flag nor variable given).

    If any is, the demo runs on its emulator and says which: the choice of the client and
    the demo's first line both read it here, so they cannot disagree.
    """
    given = {API_KEY_ENV: args.api_key, BASE_URL_ENV: args.base_url}
    return [name for name, flag in given.items() if not (flag or os.environ.get(name, "").strip())]


def emulated_client(args: argparse.Namespace) -> lingodoc.Client:
    """A client bound to a fresh emulator in this process, with the command's settings."""
    from lingodoc.emulator import Emulator  # only this command needs it

    settings = {"timeout": args.timeout, "max_retries": args.max_retries}
    return Emulator(job_duration=3.0).client(
        **{name: value for name, value in settings.items() if value is not None}
    )


def _show_progress(status: lingodoc.TranslationStatus) -> None:
    out(f"   ... {visible(status.status)} {status.progress}%")


def demo(client: lingodoc.Client, args: argparse.Namespace) -> int:
    """Run the tour with ``client``; print each step as it returns."""
    if args.json:
        raise UsageError("demo prints text for a reader: --json is for the other commands")
    missing = unset(args)
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        out(f"{' and '.join(missing)} {verb} not set: using the built-in emulator")
    else:
        out(f"Using the service at {visible(client.base_url)}")

    text = client.translate("Hello world", source_language="en", target_language="de")
    out(f"\n1. translate: 'Hello world' -> '{visible(text.translated_text)}'")

    batch = client.translate_batch(
        ["Welcome", "My friend", "Thanks"], source_language="en", target_language="fr"
    )
    translations = "', '".join(visible(t) for t in batch.translations)
    out(f"2. translate_batch: ['{translations}']")

    documents = client.list_documents()
    listed = ", ".join(f"{visible(d.document_id)} ({visible(d.name or '?')})" for d in documents)
    out(f"3. list_documents: {listed or 'none stored'}")
    if documents:
        job = client.translate_document(documents[0].document_id, target_language="es")
        out(f"   translate_document: job {visible(job.translation_id)} is {visible(job.status)}")
        done = client.wait_for_translation(
            job, poll_interval=1.0, timeout=60, on_progress=_show_progress
        )
        if done.completed_at is not None:
            out(f"   completed at {done.completed_at:%H:%M:%S} UTC")

    try:
        client.translate("Hello", source_language="en", target_language="xx")
    except lingodoc.InvalidLanguage as error:
        out(f"4. a caught error: {type(error).__name__}: {visible(str(error))}")

    limit = client.rate_limit
    if limit is not None:
        out(
            f"5. rate limit: {limit.remaining} of {limit.limit} requests left, "
            f"resets at {limit.reset_at:%H:%M:%S} UTC"
        )
    out(f"\nThe code of these steps: {QUICKSTART_PAGE}")
    return EXIT_OK
