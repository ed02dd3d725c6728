"""`lingodoc batch` on Parquet files: the text column read, the rows written back with one more.

As a real process against the recording emulator of test_cli_batch.py, as the other formats
are tested there: the round trip, --resume, an input changed during the run (by the
emulator, as the first request arrives), the files refused. In process: what pyarrow holds
in memory while a file is read and written back (its own accounting, not timing), a change
while it is written back, and the command without pyarrow.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from lingodoc.cli import _commands, _corpus, main
from lingodoc.cli._corpus import read_parquet
from lingodoc.cli._errors import UsageError
from lingodoc.emulator import EmulatorServer, translate_text
from tests.cli import test_cli_batch
from tests.cli.conftest import RunCLI
from tests.cli.test_cli_batch import (
    Recorder,
    batch_in_process,
    checkpoint_lines,
    de,
    filling_open,
    on_first_request,
    phrases,
    upper,
)

# Run apart (pyarrow's import and files cost seconds): .ci/run runs them after the suite.
pytestmark = pytest.mark.parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# The emulator that records what each batch request sent (the same fixture as there).
emulator = test_cli_batch.emulator


def write_table(path: Path, columns: dict[str, Any], **options: Any) -> None:
    """Write a table of these columns to ``path`` as Parquet."""
    pq.write_table(pa.table(columns), path, **options)


def group_sizes(path: Path) -> list[int]:
    metadata = pq.ParquetFile(path).metadata
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


# -- reading and writing -----------------------------------------------------------------------


def test_parquet_round_trips_with_a_column_added_and_every_other_kept(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    texts = ["Hello world", "Grüße, the cat", "", "   ", "Hello world"]
    table = pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int32()),
        "text": texts,
        "score": [0.5, None, 1.5, 2.0, 3.25],
        "tags": [["a"], [], None, ["b", "c"], ["d"]],
        "at": pa.array([datetime(2026, 1, day, tzinfo=timezone.utc) for day in range(1, 6)],
                       pa.timestamp("ms", tz="UTC")),
    }).replace_schema_metadata({"origin": "a test"})  # fmt: skip
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, source, row_group_size=2)
    run = cli("batch", str(source), "--to", "de", "-o", str(out))
    assert (run.code, run.out) == (0, ""), run.err
    result = pq.read_table(out)
    assert result.schema.equals(table.schema.append(pa.field("text_de", pa.string())))
    assert result.schema.metadata == {b"origin": b"a test"}
    assert result.select(table.column_names).equals(table)  # every value and type kept
    assert result.column("text_de").to_pylist() == [de(text) for text in texts]
    assert group_sizes(out) == group_sizes(source) == [2, 2, 1]  # one group out per group in
    # Blank texts are not sent; a text found twice is sent once.
    assert emulator.sent() == ["Hello world", "Grüße, the cat"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


@pytest.mark.parametrize(
    ("options", "columns"),
    [
        ((), ["k", "body", "fr", "body_fr"]),
        (("--into", "fr"), ["k", "body", "fr"]),  # an existing column: replaced where it is
        (("--into", "body"), ["k", "body", "fr"]),
    ],
)
def test_column_names_the_text_and_into_the_column_it_goes_to(
    cli: RunCLI, tmp_path: Path, options: tuple[str, ...], columns: list[str]
) -> None:
    source, out = tmp_path / "strings.data", tmp_path / "out.parquet"  # the format chosen
    write_table(source, {"k": [1, 2], "body": ["Thank you", "Good night"], "fr": ["x", "y"]})
    run = cli("batch", str(source), "--format", "parquet", "--column", "body", *options,
              "--to", "fr", "-o", str(out))  # fmt: skip
    assert run.code == 0, run.err
    result = pq.read_table(out)
    assert result.column_names == columns
    into = options[1] if options else "body_fr"
    translated = ["Thank you", "Good night"]
    assert result.column(into).to_pylist() == [translate_text(t, "en", "fr") for t in translated]
    assert result.column("k").to_pylist() == [1, 2]


def test_a_file_without_rows_is_written_back_with_the_new_column(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    write_table(source, {"text": pa.array([], pa.string())})
    run = cli("batch", str(source), "--to", "de", "-o", str(out))
    assert run.code == 0, run.err
    assert pq.read_table(out).column_names == ["text", "text_de"]
    assert pq.read_table(out).num_rows == 0
    assert emulator.requests == []


# -- what is held in memory --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "batch_rows", "written"),
    [
        (32, _corpus.BATCH_ROWS, [32] * 32),  # groups of 32 rows: each written back as it was
        (1, 64, [64] * 16),  # one group of 1,024 rows, held 64 rows at a time
    ],
)
def test_a_file_is_held_a_row_group_or_a_batch_at_a_time_never_whole(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    groups: int,
    batch_rows: int,
    written: list[int],
) -> None:
    rows, size = 1024, 16 * 1024  # 16 MiB in a column other than the text's
    monkeypatch.setattr(_corpus, "BATCH_ROWS", batch_rows)
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    texts = phrases(rows)
    blobs = [os.urandom(size) for _ in range(rows)]  # random: compression cannot shrink them
    # Pages of 64 rows (1 MiB), as a writer makes them of smaller rows; no dictionary of
    # the blobs, which would be one page of them all.
    write_table(source, {"text": texts, "blob": blobs}, row_group_size=rows // groups,
                write_batch_size=64, use_dictionary=["text"])  # fmt: skip
    # The writer is watched: the rows of each batch it is given, and what pyarrow's memory
    # pool holds then (its own count). Had the table been read whole, it would hold 16 MiB.
    given: list[int] = []
    held: list[int] = []
    writer = pq.ParquetWriter

    class Watched(writer):
        def write_batch(self, batch: Any, *args: Any, **kwargs: Any) -> None:
            given.append(batch.num_rows)
            held.append(pa.total_allocated_bytes())
            super().write_batch(batch, *args, **kwargs)
            held.append(pa.total_allocated_bytes())

    monkeypatch.setattr(pq, "ParquetWriter", Watched)
    before = pa.total_allocated_bytes()
    corpus = read_parquet(str(source), None)
    try:
        with out.open("wb") as stream:
            corpus.write(stream, upper(corpus.texts), into="text_de")
    finally:
        corpus.close()
    assert given == written
    assert group_sizes(out) == written
    peak = max(held) - before
    assert peak < rows * size / 4, f"held {peak:,} bytes at once, of {rows * size:,}"
    result = pq.read_table(out)
    assert result.column("text_de").to_pylist() == upper(texts)
    assert result.column("blob").to_pylist() == blobs


# -- checkpoint and resume ---------------------------------------------------------------------


def test_a_rate_limit_stop_keeps_a_checkpoint_and_resume_sends_only_what_is_left(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    texts = phrases(30)
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    write_table(source, {"id": list(range(30)), "text": texts}, row_group_size=7)
    emulator.rate_limit = 2  # 3 batches of 10 needed
    command = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    run = cli(*command, "--concurrency", "1")
    assert (run.code, run.out) == (5, ""), run.err
    checkpoint = tmp_path / "out.parquet.checkpoint"
    assert f"20 of 30 texts are done, kept in {checkpoint}" in run.error
    header = json.loads(checkpoint.read_text(encoding="ascii").splitlines()[0])
    assert header["input_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert (header["format"], header["field"], header["total"]) == ("parquet", "text", 30)
    assert checkpoint_lines(checkpoint) == {i: de(text) for i, text in enumerate(texts[:20])}
    assert not out.exists()

    emulator.advance(3600)  # the window resets
    emulator.forget()
    # --column text is the column read when none is given: the same run.
    resumed = cli(*command, "--column", "text", "--resume", "-q")
    assert resumed.code == 0, resumed.err
    assert resumed.err == "lingodoc: resuming: 20 of 30 texts were done before\n"
    assert emulator.sent() == texts[20:]
    result = pq.read_table(out)
    assert result.column("text_de").to_pylist() == [de(text) for text in texts]
    assert result.column("id").to_pylist() == list(range(30))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


def test_a_full_disk_writing_the_output_exits_6_and_resume_writes_it_exactly(
    server: EmulatorServer,
    emulator: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    write_table(source, {"id": list(range(30)), "text": phrases(30)}, row_group_size=7)
    command = (str(source), "--to", "de", "-o", str(out), "--batch-size", "10", "-q")
    assert batch_in_process(server, *command) == 0  # without the fault: what it must write
    expected = out.read_bytes()
    out.unlink()
    emulator.forget()

    # pyarrow's writes go through the file object, whose refusal it raises as it is.
    monkeypatch.setattr(_commands, "open", filling_open(100, errno.ENOSPC), raising=False)
    assert batch_in_process(server, *command) == 6
    checkpoint = tmp_path / "out.parquet.checkpoint"
    assert capsys.readouterr().err == (
        f"lingodoc: error: cannot write {out}: No space left on device; 30 of 30 texts are "
        f"done, kept in {checkpoint}: once space is freed, add --resume to the same command "
        "to go on without sending them again\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", checkpoint.name]

    monkeypatch.undo()  # space freed
    emulator.forget()
    assert batch_in_process(server, *command, "--resume") == 0
    assert out.read_bytes() == expected
    assert emulator.sent() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


def test_resume_refuses_the_checkpoint_of_another_column(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    write_table(source, {"text": phrases(20), "other": phrases(20)})
    emulator.rate_limit = 1
    command = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    assert cli(*command, "--concurrency", "1").code == 5
    emulator.advance(3600)
    emulator.forget()
    run = cli(*command, "--column", "other", "--resume")
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: the checkpoint {out}.checkpoint is not of this run: it was made "
        "with --field text, not other; run the command it was made for, or delete it to "
        "start afresh"
    )
    assert emulator.received == []


# -- the input changed during the run ---------------------------------------------------------

# Texts of one length, in groups of 7 rows, stored plain: in another order, the file is
# byte for byte as long, each page where it was.
SAME_LENGTH = [f"Hello world {i:02d}" for i in range(30)]


def parquet_bytes(texts: list[str]) -> bytes:
    stream = io.BytesIO()
    table = pa.table({"id": list(range(len(texts))), "text": texts})
    pq.write_table(table, stream, row_group_size=7, compression="none", use_dictionary=False)
    return stream.getvalue()


def rewritten_same_size(source: Path) -> None:
    before = source.stat()
    source.write_bytes(parquet_bytes(SAME_LENGTH[::-1]))  # in place: the same inode
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))  # its mtime put back


def rewritten_shorter(source: Path) -> None:
    source.write_bytes(parquet_bytes(SAME_LENGTH[:20]))


def replaced_by_rename(source: Path) -> None:
    other = source.with_name("other.parquet")
    other.write_bytes(parquet_bytes(SAME_LENGTH[::-1]))
    os.replace(other, source)


@pytest.mark.parametrize("change", [rewritten_same_size, rewritten_shorter, replaced_by_rename])
def test_an_input_changed_during_the_run_exits_2_writing_no_row_and_resume_sends_nothing(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, change: Callable[[Path], None]
) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    original = parquet_bytes(SAME_LENGTH)
    source.write_bytes(original)
    before = source.stat()
    out.write_bytes(b"the previous output")
    on_first_request(emulator, lambda: change(source))
    command = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    run = cli(*command)
    assert (run.code, run.out) == (2, ""), run.err
    checkpoint = tmp_path / "out.parquet.checkpoint"
    assert run.error == (
        f"lingodoc: error: the input {source} changed during the run (written to, or "
        "replaced), so no row was written: its rows may no longer be those translated; run "
        f"the command again; 30 of 30 texts are done, kept in {checkpoint}: add --resume to "
        "the same command to go on without sending them again"
    )
    after = source.stat()
    assert source.read_bytes() != original
    if change is rewritten_same_size:  # what stat data cannot tell from the file read
        assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
            before.st_ino, before.st_size, before.st_mtime_ns
        )  # fmt: skip
    assert out.read_bytes() == b"the previous output"
    assert checkpoint_lines(checkpoint) == {i: de(text) for i, text in enumerate(SAME_LENGTH)}
    names = ["in.parquet", "out.parquet", checkpoint.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # no temporary file left

    source.write_bytes(original)  # the input as it was
    emulator.forget()
    resumed = cli(*command, "--resume", "-q")
    assert resumed.code == 0, resumed.err
    assert emulator.received == []  # all paid for, kept
    result = pq.read_table(out)
    assert result.column("text_de").to_pylist() == [de(text) for text in SAME_LENGTH]
    assert result.column("id").to_pylist() == list(range(30))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


@pytest.mark.parametrize(
    "texts", [SAME_LENGTH[::-1], SAME_LENGTH[::-1][:20]], ids=["same size", "shorter"]
)
def test_an_input_changed_while_it_is_written_back_is_caught_as_its_texts_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, texts: list[str]
) -> None:
    # Rewritten after the first batch is written: past the check of its stat data.
    source = tmp_path / "in.parquet"
    source.write_bytes(parquet_bytes(SAME_LENGTH))
    writer = pq.ParquetWriter
    given: list[int] = []

    class Changing(writer):
        def write_batch(self, batch: Any, *args: Any, **kwargs: Any) -> None:
            if not given:
                source.write_bytes(parquet_bytes(texts))
            given.append(batch.num_rows)
            super().write_batch(batch, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetWriter", Changing)
    corpus = read_parquet(str(source), None)
    try:
        with pytest.raises(UsageError, match=r"the input .* changed during the run"):
            corpus.write(io.BytesIO(), upper(corpus.texts), into="text_de")
    finally:
        corpus.close()
    assert given == [7]  # the next batch read was not the one read first


# -- refused before any request ----------------------------------------------------------------


def test_files_that_are_one_file_or_not_a_file_are_refused(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source = tmp_path / "in.parquet"
    write_table(source, {"text": ["Hello"]})
    directory = tmp_path / "dir.parquet"
    directory.mkdir()
    before = source.read_bytes()
    for given, message in [
        (("-o", str(source)),
         f"the input {source} and --output {source} are the same file: give each a path of "
         "its own"),
        (("-o", str(tmp_path / "out.parquet"), "--checkpoint", str(tmp_path / "out.parquet")),
         f"--output {tmp_path / 'out.parquet'} and the checkpoint {tmp_path / 'out.parquet'} "
         "are the same file: give each a path of its own"),
        (("-o", str(directory)),
         f"--output {directory} is a directory, not a regular file: give another path"),
        (("-o", str(tmp_path / "out.parquet"), "--checkpoint", str(directory)),
         f"the checkpoint {directory} is a directory, not a regular file: give another path"),
    ]:  # fmt: skip
        run = cli("batch", str(source), "--to", "de", *given)
        assert (run.code, run.out) == (2, ""), given
        assert run.error == f"lingodoc: error: {message}"
    assert emulator.requests == []
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.parquet", "in.parquet"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_an_input_that_is_a_named_pipe_is_refused_without_opening_it(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    # Parquet is read from its end, and twice: a pipe cannot be; opening it would wait.
    source = tmp_path / "in.parquet"
    os.mkfifo(source)
    run = cli("batch", str(source), "--to", "de", "-o", str(tmp_path / "out.parquet"), timeout=10)
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: the input {source} is a named pipe, not a regular file: give "
        "another path"
    )
    assert emulator.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-", "--format", "parquet", "-o", "out.parquet"),
         "Parquet is read from a file, not from stdin: give its path"),
        (("in.parquet",), "Parquet is written to a file, not to stdout: give -o OUT"),
        (("in.parquet", "-o", "-"), "Parquet is written to a file, not to stdout: give -o OUT"),
        (("in.parquet", "-o", "out.parquet", "--json"),
         "--json is for plain lines; parquet output is the input's format, with the "
         "translations added"),
    ],
)  # fmt: skip
def test_parquet_from_stdin_or_to_stdout_is_refused(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    write_table(tmp_path / "in.parquet", {"text": ["Hello"]})
    given = [str(tmp_path / arg) if arg.endswith(".parquet") else arg for arg in args]
    run = cli("batch", *given, "--to", "de")
    assert run.code == 2
    assert run.error == f"lingodoc: error: {message}"
    assert emulator.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


@pytest.mark.parametrize(
    ("columns", "options", "why"),
    [
        ({"id": [1, 2], "body": ["a", "b"]}, (),
         "{path} has no column 'text' (it has 'id', 'body'); --column names the one with "
         "the text"),
        ({"text": ["a", None, "b", None]}, (),
         "row 2: the column 'text' is null (and 1 more record refused); nothing was sent"),
        ({"text": ["a", "b", "c"], "n": [1, 2, 3]}, ("--column", "n"),
         "row 1: the column 'n' is int64, not a string (and 2 more records refused); "
         "nothing was sent"),
        ({"text": [b"a", b"b"]}, (),
         "row 1: the column 'text' is binary, not a string (and 1 more record refused); "
         "nothing was sent"),
        ({"text": ["ok", "x" * 10_001]}, (),
         "row 2: the column 'text' has 10,001 characters; the limit is 10,000: split it; "
         "nothing was sent"),
    ],
)  # fmt: skip
def test_a_column_without_usable_texts_is_refused_naming_the_row(
    cli: RunCLI,
    emulator: Recorder,
    tmp_path: Path,
    columns: dict[str, Any],
    options: tuple[str, ...],
    why: str,
) -> None:
    source = tmp_path / "in.parquet"
    write_table(source, columns)
    run = cli("batch", str(source), *options, "--to", "de", "-o", str(tmp_path / "out.parquet"))
    assert (run.code, run.out) == (2, "")
    assert run.error == f"lingodoc: error: {why.format(path=source)}"
    assert emulator.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"id,text\n1,Hello\n", id="CSV"),
        pytest.param(b"", id="empty"),
        pytest.param(None, id="cut short"),
    ],
)
def test_a_file_that_is_not_parquet_is_a_usage_error_not_a_traceback(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, content: bytes | None
) -> None:
    source = tmp_path / "in.parquet"
    if content is None:  # a real Parquet file, its second half lost
        write_table(source, {"text": phrases(100)})
        content = source.read_bytes()[: source.stat().st_size // 2]
    source.write_bytes(content)
    run = cli("batch", str(source), "--to", "de", "-o", str(tmp_path / "out.parquet"))
    assert (run.code, run.out) == (2, "")
    assert run.error.startswith(f"lingodoc: error: cannot read {source} as Parquet (")  # no trace
    assert run.error.endswith("); nothing was sent")
    assert emulator.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_without_pyarrow_parquet_is_a_usage_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.parquet"
    write_table(source, {"text": ["Hello"]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` fails, as uninstalled
    code = main([
        "batch", str(source), "--to", "de", "-o", str(tmp_path / "out.parquet"),
        "--api-key", "ld_unused", "--base-url", "http://127.0.0.1:9/v1",
    ])  # fmt: skip
    printed = capsys.readouterr()
    assert (code, printed.out) == (2, "")
    assert printed.err == (
        "lingodoc: error: reading and writing Parquet needs pyarrow: "
        'pip install "lingodoc[parquet]"\n'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]
