"""The commands: each takes the client and the parsed arguments, prints, returns the exit code."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

import lingodoc
from lingodoc._constants import MAX_BATCH_ITEMS, MAX_TEXT_LENGTH
from lingodoc.cli._errors import EXIT_OK, EXIT_USAGE, UsageError
from lingodoc.cli._progress import Progress
from lingodoc.cli._visible import visible

Handler = Callable[[lingodoc.Client, argparse.Namespace], int]


def emit(args: argparse.Namespace, result: Any, text: str) -> None:
    # ``text``: the human output, what the server sent in it already through visible().
    # JSON in ASCII (non-ASCII as \u escapes): valid whatever the console's encoding, and
    # no control character of the server's reaches the terminal (ESC is \u001b).
    if not args.json:
        print(text)
    elif isinstance(result, list):
        print(json.dumps([item.model_dump(mode="json") for item in result], indent=2))
    else:
        print(json.dumps(result.model_dump(mode="json"), indent=2))


def status_line(status: lingodoc.TranslationStatus) -> str:
    line = f"{visible(status.translation_id)}  {visible(status.status)}  {status.progress}%"
    if status.document_id:
        line += f"  {visible(status.document_id)} -> {visible(status.target_language or '?')}"
    if status.completed_at:
        line += f"  completed {status.completed_at.isoformat()}"
    return line


def note(message: str) -> None:
    print(f"lingodoc: {message}", file=sys.stderr, flush=True)


def translate(client: lingodoc.Client, args: argparse.Namespace) -> int:
    # A pipe's text ends with a newline that is not part of it (`echo Hello | ...`).
    text = sys.stdin.read().removesuffix("\n") if args.text == "-" else args.text
    result = client.translate(
        text, source_language=args.source, target_language=args.target, style=args.style
    )
    emit(args, result, visible(result.translated_text, layout=True))
    return EXIT_OK


@contextlib.contextmanager
def open_input(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdin
        return
    try:
        stream = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with stream:
        yield stream


def translate_lines(
    client: lingodoc.Client, args: argparse.Namespace, lines: list[str], first: int
) -> list[str]:
    # Blank lines are not sent: the translation of nothing is nothing, and a service may
    # refuse empty texts. They come back unchanged, so line N out still matches line N in.
    todo = [i for i, line in enumerate(lines) if line.strip()]
    for i in todo:
        if len(lines[i]) > MAX_TEXT_LENGTH:  # checked here to name the line, not texts[i]
            raise lingodoc.TextTooLong(
                f"line {first + i} has {len(lines[i]):,} characters; the limit is "
                f"{MAX_TEXT_LENGTH:,}: split it",
                code="TEXT_TOO_LONG",
            )
    out = list(lines)
    if todo:
        texts = [lines[i] for i in todo]
        result = client.translate_batch(
            texts, source_language=args.source, target_language=args.target
        )
        for i, translation in zip(todo, result.translations, strict=True):
            out[i] = translation
    return out


def batch(client: lingodoc.Client, args: argparse.Namespace) -> int:
    out, count = sys.stdout, 0
    with open_input(args.file) as stream:
        lines = (line.removesuffix("\n") for line in stream)
        out.write("[" if args.json else "")
        # Chunk by chunk, printed as it comes: a large file never sits in memory whole.
        while chunk := list(itertools.islice(lines, MAX_BATCH_ITEMS)):
            for translation in translate_lines(client, args, chunk, count + 1):
                if args.json:
                    out.write((",\n  " if count else "\n  ") + json.dumps(translation))
                else:  # one line out per line in, whatever the service sends back
                    out.write(visible(" ".join(translation.splitlines()), layout=True) + "\n")
                count += 1
            out.flush()
    out.write(("\n]\n" if count else "]\n") if args.json else "")
    return EXIT_OK


def wait(client: lingodoc.Client, args: argparse.Namespace, job: Any = None) -> int:
    # A bar on a terminal, unless requests are logged there (--verbose, LINGODOC_LOG):
    # the log lines would break it.
    logged = logging.getLogger("lingodoc").isEnabledFor(logging.INFO)
    progress = Progress(sys.stderr, bar=sys.stderr.isatty() and not logged)
    try:
        result = client.wait_for_translation(
            job if job is not None else args.translation_id,
            poll_interval=args.interval,
            timeout=args.wait_timeout,
            on_progress=progress,
        )
    finally:
        progress.close()
    emit(args, result, status_line(result))
    return EXIT_OK


def document(client: lingodoc.Client, args: argparse.Namespace) -> int:
    job = client.translate_document(
        args.document_id,
        target_language=args.target,
        style=args.style,
        use_translation_memory=args.memory,
    )
    args.translation_id = job.translation_id  # from here on, errors are about the job
    job_id, document_id = visible(job.translation_id), visible(job.document_id)
    if not args.wait:
        emit(args, job, f"{job_id}  {visible(job.status)}  {document_id}")
        note(f"started; follow it with `lingodoc wait {job_id}`")
        return EXIT_OK
    note(f"translation {job_id} of {document_id} started")
    return wait(client, args, job)


def status(client: lingodoc.Client, args: argparse.Namespace) -> int:
    result = client.get_translation(args.translation_id)
    emit(args, result, status_line(result))
    return EXIT_OK


def documents(client: lingodoc.Client, args: argparse.Namespace) -> int:
    found = client.list_documents()
    if not found and not args.json:
        return EXIT_OK
    ids = [visible(d.document_id) for d in found]
    names = [visible((d.model_extra or {}).get("name", "")) for d in found]
    width = max(map(len, ids), default=0)
    lines = (f"{doc.ljust(width)}  {name}".rstrip() for doc, name in zip(ids, names, strict=True))
    emit(args, found, "\n".join(lines))
    return EXIT_OK


def run_emulator(args: argparse.Namespace, extra: list[str]) -> int:
    # Imported here: only this command needs the emulator (and http.server).
    from lingodoc.emulator.__main__ import main as emulator_main

    try:
        return emulator_main(["--host", args.host, "--port", str(args.port), *extra])
    except SystemExit as exc:  # its own parser refused an option, and said why
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
