"""The commands: each takes the client and the parsed arguments, prints, returns the exit code."""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from math import isinf
from typing import IO, Any

import lingodoc
from lingodoc._validation import language
from lingodoc.cli._cache import cache_path
from lingodoc.cli._cache import summary as cache_summary
from lingodoc.cli._checkpoint import (
    Checkpoint,
    Finished,
    Header,
    lock_path,
    locked,
    refuse_special,
)
from lingodoc.cli._corpus import (
    DEFAULT_FIELD,
    Corpus,
    ParquetCorpus,
    format_of,
    read_corpus,
    read_parquet,
)
from lingodoc.cli._errors import (
    EXIT_OK,
    EXIT_USAGE,
    NO_SPACE,
    STDOUT,
    CheckpointError,
    Kept,
    UsageError,
    WriteError,
    cache_errors,
    out,
)
from lingodoc.cli._progress import BulkProgressDisplay, Progress
from lingodoc.cli._visible import visible

Handler = Callable[[lingodoc.Client, argparse.Namespace], int]


def emit(args: argparse.Namespace, result: Any, text: str) -> None:
    # ``text``: the human output, what the server sent in it already through visible().
    # JSON in ASCII (non-ASCII as \u escapes): valid whatever the console's encoding, and
    # no control character of the server's reaches the terminal (ESC is \u001b).
    if not args.json:
        out(text)
    elif isinstance(result, list):  # the documents: as listed, no null for a field left out
        items = [item.model_dump(mode="json", exclude_unset=True) for item in result]
        out(json.dumps(items, indent=2))
    else:
        out(json.dumps(result.model_dump(mode="json"), indent=2))


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
    text = args.text
    if text == "-":  # decoded strictly, as `batch` reads it: no byte of another encoding slips in
        data, encoding = read_input("-")
        # A pipe's text ends with a newline that is not part of it (`echo Hello | ...`).
        text = data.decode(encoding).removesuffix("\n")
    result = client.translate(
        text, source_language=args.source, target_language=args.target, style=args.style
    )
    emit(args, result, visible(result.translated_text, layout=True))
    return EXIT_OK


def read_input(path: str) -> tuple[bytes, str]:
    """Return the bytes of the file (``-``: stdin) and the encoding to read them in."""
    if path == "-":
        # Bytes, for the checkpoint's hash; decoded in stdin's encoding, as before.
        binary = getattr(sys.stdin, "buffer", None)
        if binary is None:  # a text stream put in place of stdin (tests, embedding)
            return sys.stdin.read().encode("utf-8"), "utf-8"
        return binary.read(), sys.stdin.encoding or "utf-8"
    try:
        with open(path, "rb") as stream:
            return stream.read(), "utf-8"
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc


class Output:
    """Where the result goes: stdout, or a file replaced whole once everything is written.

    The file is written aside (a temporary file in the same directory, so it can be renamed
    over the target) and renamed at the end: a reader never sees half an output, and an
    interrupted run leaves the previous file as it was. The temporary file is made before
    anything is sent, so an output that cannot be written is refused at once.

    Raises:
        WriteError: If the disk is full, making the file or writing it (or stdout).
        UsageError: If the file cannot be made otherwise.
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._temporary: str | None = None
        self._fd: int | None = None  # the temporary file's, written through: never reopened
        if path is None:
            return
        directory = os.path.dirname(os.path.abspath(path))
        try:
            self._fd, self._temporary = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
            )
        except OSError as exc:
            if exc.errno in NO_SPACE:
                raise WriteError(path, exc) from exc
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def write(self, write: Callable[[IO[str]], None]) -> None:
        """Write the output with ``write``, then put the file in place."""
        with self._no_space():
            if self.path is None or self._temporary is None or self._fd is None:
                write(sys.stdout)
                sys.stdout.flush()
                return
            with (
                self._replacing() as fd,
                open(fd, "w", encoding="utf-8", newline="", closefd=False) as stream,
            ):
                write(stream)

    def write_binary(self, write: Callable[[IO[bytes]], None]) -> None:
        """Write a binary output (Parquet, to a file only) with ``write``, then put it in place."""
        with self._no_space(), self._replacing() as fd, open(fd, "wb", closefd=False) as stream:
            write(stream)

    @contextlib.contextmanager
    def _no_space(self) -> Iterator[None]:
        """Raise a full disk met writing the output as a `WriteError` that names the output."""
        try:
            yield
        except OSError as exc:  # a write, a flush, the sync (pyarrow's too: it raises them as is)
            if exc.errno not in NO_SPACE:
                raise
            raise WriteError(self.path or STDOUT, exc) from exc

    @contextlib.contextmanager
    def _replacing(self) -> Iterator[int]:
        """Give the temporary file to write (its descriptor); once written, put it in place."""
        if self.path is None or self._temporary is None or self._fd is None:
            raise RuntimeError("no output file to write")  # stdout: the caller's to write
        try:
            mode = os.stat(self.path).st_mode & 0o7777  # a file replaced keeps its mode
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # a new file gets what open() would have given it
        fd, self._fd = self._fd, None
        try:
            yield fd  # written and closed (so flushed) by the caller's stream
            os.chmod(fd if os.chmod in os.supports_fd else self._temporary, mode)
            os.fsync(fd)  # on disk before it replaces the old file
        finally:
            os.close(fd)
        os.replace(self._temporary, self.path)
        self._temporary = None

    def discard(self) -> None:
        """Remove the temporary file, if the output was not written."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temporary)
            self._temporary = None


def checkpoint_path(args: argparse.Namespace, output: str | None, target: str) -> str | None:
    """Return where `batch` keeps its checkpoint, or ``None`` when it keeps none (stdin)."""
    if args.checkpoint:
        return str(args.checkpoint)
    if output is not None:
        return f"{output}.checkpoint"
    if args.file != "-":
        return f"{args.file}.{target}.checkpoint"
    return None


def _same_file(first: str, second: str) -> bool:
    """Whether two paths are one file: by name, symlink or hard link, or once made."""
    try:
        return os.path.samefile(first, second)
    except OSError:  # one is not there yet: where it would be made, symlinks followed
        return os.path.normcase(os.path.realpath(first)) == os.path.normcase(
            os.path.realpath(second)
        )


def _check_files(
    args: argparse.Namespace, output: str | None, checkpoint: str | None, cache: str | None
) -> None:
    """Refuse files of a run that are one file, or not a file, or in a folder that is not there.

    The output is renamed over its path at the end, then the checkpoint and its lock file
    deleted: were they one file, the run would end with exit code 0 and no output (or no
    input).
    """
    named = [
        (name, path)
        for name, path in (
            ("the input", None if args.file == "-" else args.file),
            ("--output", output),
            ("the checkpoint", checkpoint),
            ("the checkpoint's lock file", None if checkpoint is None else lock_path(checkpoint)),
            ("the cache", cache),
            # SQLite deletes them as the cache closes: an output there would go with them.
            ("the cache's -wal file", None if cache is None else f"{cache}-wal"),
            ("the cache's -shm file", None if cache is None else f"{cache}-shm"),
        )
        if path is not None
    ]
    for index, (name, path) in enumerate(named):
        for other, other_path in named[index + 1 :]:
            if _same_file(path, other_path):
                raise UsageError(
                    f"{name} {path} and {other} {other_path} are the same file: give each "
                    "a path of its own"
                )
    for name, path in named:
        if name != "the input":  # which may be a pipe: `lingodoc batch <(zcat corpus.gz)`
            refuse_special(name, path)
            folder = os.path.dirname(path)
            try:
                os.stat(folder or ".")
            except (FileNotFoundError, NotADirectoryError):  # else the open says what it is
                raise UsageError(
                    f"{name} {path} is in a folder that does not exist: make {folder}"
                ) from None
            except OSError:
                pass


def _check_options(args: argparse.Namespace, format: str) -> None:
    if format == "lines":
        given = [flag for flag, value in (("--field", args.field), ("--into", args.into)) if value]
        if given:
            raise UsageError(
                f"{' and '.join(given)} name a JSON field or a CSV or Parquet column, and the "
                "input is read as plain lines: give --format jsonl, csv or parquet (or a "
                ".jsonl, .csv or .parquet file)"
            )
    elif args.json:
        raise UsageError(
            f"--json is for plain lines; {format} output is the input's format, "
            "with the translations added"
        )
    if format == "parquet" and args.file == "-":
        raise UsageError("Parquet is read from a file, not from stdin: give its path")
    if format == "parquet" and args.output in (None, "-"):
        raise UsageError("Parquet is written to a file, not to stdout: give -o OUT")


def _open_checkpoint(
    args: argparse.Namespace, path: str | None, header: Header
) -> tuple[Checkpoint | None, dict[int, str]]:
    """Resume the checkpoint at ``path``, or make sure none is there to be overwritten."""
    if path is None:
        if args.resume:
            raise UsageError(
                "--resume needs a checkpoint, and reading stdin there is none unless "
                "--checkpoint PATH or --output OUT is given"
            )
        return None, {}
    refuse_special("the checkpoint", path)  # again, now that it is locked
    if args.resume:
        try:
            checkpoint, earlier = Checkpoint.resume(path, header)
        except FileNotFoundError:
            note(f"no checkpoint at {path}: starting afresh")
            return None, {}
        note(f"resuming: {len(earlier):,} of {header.total:,} texts were done before")
        return checkpoint, earlier
    if os.path.lexists(path):
        raise UsageError(
            f"a checkpoint of an earlier run exists at {path}: add --resume to continue "
            "it, or delete it"
        )
    return None, {}


def batch(client: lingodoc.Client, args: argparse.Namespace) -> int:
    """Translate a corpus file: read it whole, translate every text, write it back."""
    format = args.format or ("lines" if args.file == "-" else format_of(args.file))
    _check_options(args, format)
    output = args.output if args.output not in (None, "-") else None
    # The SDK's rule (two ASCII letters, folded to lower case), for the checkpoint's header.
    source, target = language(args.source, "--from"), language(args.target, "--to")
    path = checkpoint_path(args, output, target)
    cache = cache_path(args)
    _check_files(args, output, path, cache)
    corpus: Corpus | ParquetCorpus
    if format == "parquet":
        corpus = read_parquet(args.file, args.field)  # its text column; the file kept open
        digest = corpus.sha256
    else:
        data, encoding = read_input(args.file)
        digest = hashlib.sha256(data).hexdigest()
        corpus = read_corpus(data.decode(encoding), format, args.field)
        del data  # only the texts (and what writing back needs) are kept from here on
    # The field read, not the option: `--field text` and no --field are the same run.
    field = None if format == "lines" else args.field or DEFAULT_FIELD
    header = Header(digest, source, target, format, field, len(corpus.texts))
    held = (
        contextlib.closing(corpus)
        if isinstance(corpus, ParquetCorpus)
        else contextlib.nullcontext()
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(held)
        if path is not None:
            stack.enter_context(locked(path))
        if cache is not None:  # opened before anything is sent: refused, it costs nothing
            with cache_errors(cache):
                opened = lingodoc.SQLiteCache(cache, max_entries=args.cache_max_entries)
            client = client.with_options(cache=stack.enter_context(opened))
        return _batch(client, args, corpus, header, output, path)


def _batch(
    client: lingodoc.Client,
    args: argparse.Namespace,
    corpus: Corpus | ParquetCorpus,
    header: Header,
    output: str | None,
    path: str | None,
) -> int:
    """Translate the corpus read and write it out: `batch`, once its checkpoint is locked."""
    field, target = header.field, header.target
    out = Output(output)  # first: the checkpoint opened next is closed only by _translate
    try:
        checkpoint, earlier = _open_checkpoint(args, path, header)
        translations = _translate(client, args, corpus.texts, header, path, checkpoint, earlier)
        if path is not None:  # from here until the output is written, all is in the checkpoint
            args.kept = Kept(len(corpus.texts), len(corpus.texts), path)
        into = args.into or f"{field or DEFAULT_FIELD}_{target}"
        # The translations are data, written exactly, unless a terminal shows them.
        terminal = output is None and sys.stdout.isatty()
        if isinstance(corpus, ParquetCorpus):
            parquet = corpus
            out.write_binary(lambda stream: parquet.write(stream, translations, into=into))
        else:
            out.write(
                lambda stream: corpus.write(
                    stream, translations, into=into, as_json=args.json, terminal=terminal
                )
            )
    finally:
        out.discard()
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)  # the output holds it all now
    args.kept = None
    return EXIT_OK


def _translate(
    client: lingodoc.Client,
    args: argparse.Namespace,
    texts: list[str],
    header: Header,
    path: str | None,
    checkpoint: Checkpoint | None,
    earlier: dict[int, str],
) -> list[str]:
    """Translate ``texts`` in one ``translate_many``, keeping each finished batch."""
    if not texts:
        return []
    if path is not None and checkpoint is None:
        checkpoint = Checkpoint.create(path, header)
    finished = Finished(checkpoint, earlier)
    # A bar on a terminal, unless requests are logged there (--verbose, LINGODOC_LOG).
    logged = logging.getLogger("lingodoc").isEnabledFor(logging.INFO)
    width = shutil.get_terminal_size().columns
    progress = BulkProgressDisplay(sys.stderr, bar=sys.stderr.isatty() and not logged, width=width)

    last: list[lingodoc.BulkProgress] = []

    def on_progress(state: lingodoc.BulkProgress) -> None:
        finished.flush()  # each batch is on disk before it is reported
        last[:] = [state]
        if not args.quiet:
            progress(state)

    try:
        translations = client.translate_many(
            texts,
            source_language=header.source,
            target_language=header.target,
            batch_size=args.batch_size,
            max_concurrency=args.concurrency,
            wait_for_rate_limit=args.wait_for_rate_limit,
            on_progress=on_progress,
            done=finished,
        )
    except BaseException:
        # What finished after the last report (Ctrl-C lets the batches in flight finish);
        # if the checkpoint cannot take it (the error may be that), it is not kept.
        with contextlib.suppress(CheckpointError):
            finished.flush()
        kept_at, kept = None, len(finished)
        if checkpoint is not None:
            kept = finished.kept()
            # Nothing in it but blank texts (never sent): kept, it would only make the next
            # run refuse to start, and a wrong --to leave it behind for good.
            if kept and any(texts[index].strip() for index in finished):
                kept_at = checkpoint.path
            else:
                checkpoint.delete()
                kept = 0
        args.kept = Kept(kept, len(texts), kept_at)
        raise
    finally:
        progress.close()
        if checkpoint is not None:
            checkpoint.close()
    cache = cache_path(args)
    if cache is not None and last and not args.quiet:
        cache_summary(cache, last[0])
    return translations


def wait(client: lingodoc.Client, args: argparse.Namespace, job: Any = None) -> int:
    # A bar on a terminal, unless requests are logged there (--verbose, LINGODOC_LOG):
    # the log lines would break it.
    logged = logging.getLogger("lingodoc").isEnabledFor(logging.INFO)
    progress = Progress(sys.stderr, bar=sys.stderr.isatty() and not logged)
    waiting = functools.partial(
        client.wait_for_translation,
        job if job is not None else args.translation_id,
        poll_interval=args.interval,
        on_progress=progress,
    )
    limit: float | None = args.wait_timeout
    try:
        # Without --wait-timeout, the SDK's default limit: a script that forgets the
        # option must not hang for good either. `never` (math.inf) is its None.
        result = waiting() if limit is None else waiting(timeout=None if isinf(limit) else limit)
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
    names = [visible(d.name or "") for d in found]
    width = max(map(len, ids), default=0)
    lines = (f"{doc.ljust(width)}  {name}".rstrip() for doc, name in zip(ids, names, strict=True))
    emit(args, found, "\n".join(lines))
    return EXIT_OK


def run_emulator(extra: list[str]) -> int:
    # Imported here: only this command needs the emulator (and http.server).
    from lingodoc.emulator.__main__ import main as emulator_main

    try:
        return emulator_main(extra, prog="lingodoc emulator")
    except SystemExit as exc:  # its own parser refused an option, and said why
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
