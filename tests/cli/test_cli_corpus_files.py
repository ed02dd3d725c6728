"""`lingodoc batch`'s files, in process: reading and writing each format, and the checkpoint."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from lingodoc.cli import _checkpoint
from lingodoc.cli._checkpoint import Checkpoint, Finished, Header, read
from lingodoc.cli._corpus import (
    CsvCorpus,
    JsonLinesCorpus,
    format_of,
    json_text,
    read_corpus,
)
from lingodoc.cli._errors import CheckpointError, UsageError


def upper(texts: list[str]) -> list[str]:
    """A stand-in translation, visibly different and keeping blanks."""
    return [text.upper() for text in texts]


def written(text: str, format: str, *, field: str | None = None, into: str = "text_de") -> str:
    corpus = read_corpus(text, format, field)
    stream = io.StringIO(newline="")
    corpus.write(stream, upper(corpus.texts), into=into, as_json=False, terminal=False)
    return stream.getvalue()


# -- which format ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "format"),
    [
        ("corpus.jsonl", "jsonl"),
        ("dir.v2/corpus.NDJSON", "jsonl"),
        ("strings.csv", "csv"),
        ("notes.txt", "lines"),
        ("README", "lines"),
        ("data.json", "lines"),
    ],
)
def test_the_format_follows_the_extension(name: str, format: str) -> None:
    assert format_of(name) == format


# -- plain lines -------------------------------------------------------------------------------


def test_lines_keep_blank_lines_and_every_line_ending_kind_ends_a_line() -> None:
    corpus = read_corpus("Hello\r\n\r\n  \rGood day\nlast", "lines", None)
    assert corpus.texts == ["Hello", "", "  ", "Good day", "last"]
    translations = ["Hallo", "", "  ", "Guten\r\nTag", "x\x1by\ud800"]
    out = io.StringIO()
    corpus.write(out, translations, into="", as_json=False, terminal=True)
    # A translation's line break becomes a space; on a terminal, a control character an escape.
    assert out.getvalue() == "Hallo\n\n  \nGuten Tag\nx\\x1by\\ud800\n"
    out = io.StringIO()
    corpus.write(out, translations, into="", as_json=False, terminal=False)
    # To a file or a pipe: exact, but for the line breaks and what cannot be encoded.
    assert out.getvalue() == "Hallo\n\n  \nGuten Tag\nx\x1by\\ud800\n"


def test_lines_as_json_are_an_ascii_array_exactly() -> None:
    corpus = read_corpus("a\nb\n", "lines", None)
    out = io.StringIO()
    corpus.write(out, ["Grüße\n", "\x1b"], into="", as_json=True, terminal=True)
    assert out.getvalue() == '[\n  "Gr\\u00fc\\u00dfe\\n",\n  "\\u001b"\n]\n'
    assert json.loads(out.getvalue()) == ["Grüße\n", "\x1b"]


def test_a_byte_order_mark_is_no_part_of_the_first_text_and_is_written_back() -> None:
    corpus = read_corpus("\ufeffHello\n", "lines", None)
    assert corpus.texts == ["Hello"]
    assert written("\ufeffHello\n", "lines") == "\ufeffHELLO\n"


def test_a_line_over_the_limit_is_refused_naming_its_number_and_the_others() -> None:
    text = "ok\n" + "x" * 10_001 + "\n" + "y" * 20_000 + "\n"
    with pytest.raises(UsageError) as refused:
        read_corpus(text, "lines", None)
    assert str(refused.value) == (
        "line 2: the line has 10,001 characters; the limit is 10,000: split it "
        "(and 1 more record refused); nothing was sent"
    )


# -- JSON Lines --------------------------------------------------------------------------------


def test_jsonl_adds_the_translation_and_keeps_every_byte_of_the_rest() -> None:
    text = (
        '{"id": 1, "text": "Hello", "n": 1.50, "tags": ["a"]}\n'
        "\n"  # a blank line: kept, no record
        '{"text":"Grüße \\u00e9","id":2}\n'
        '{ "text": "", "z": null }\n'
    )
    assert written(text, "jsonl").splitlines() == [
        '{"id": 1, "text": "Hello", "n": 1.50, "tags": ["a"], "text_de": "HELLO"}',
        "",
        '{"text":"Grüße \\u00e9","id":2, "text_de": "GRÜSSE É"}',
        '{ "text": "", "z": null , "text_de": ""}',
    ]


def test_jsonl_field_and_into_are_chosen_and_an_existing_into_is_replaced_in_place() -> None:
    text = '{"src": "hi", "de": "old", "id": 7}\n'
    out = written(text, "jsonl", field="src", into="de")
    assert out == '{"src": "hi", "de": "HI", "id": 7}\n'
    assert list(json.loads(out)) == ["src", "de", "id"]  # the key order kept


@pytest.mark.parametrize(
    ("line", "out"),
    [
        (  # numbers, escapes and a number beyond a float stay as written
            '{"id": 1.0e3, "text": "a", "text_de": "old", "x": "\\u00e9", "n": 1e400}',
            '{"id": 1.0e3, "text": "a", "text_de": "A", "x": "\\u00e9", "n": 1e400}',
        ),
        (  # any spacing; a value of any kind; the key written with an escape
            '{ "text" : "a" ,"text\\u005fde"  :  {"k": [1, "}"]} , "z":null }  ',
            '{ "text" : "a" ,"text\\u005fde"  :  "A" , "z":null }  ',
        ),
        (  # twice: the one json.loads reads (the last) is replaced
            '{"text_de": 1, "text": "a", "text_de": 2}',
            '{"text_de": 1, "text": "a", "text_de": "A"}',
        ),
        (  # the name in a nested object, or as a value, is not the field
            '{"m": {"text_de": "x"}, "k": "text_de", "text": "a"}',
            '{"m": {"text_de": "x"}, "k": "text_de", "text": "a", "text_de": "A"}',
        ),
        ('{"text": "a"}\t ', '{"text": "a", "text_de": "A"}\t '),  # spaces after it, kept
    ],
)
def test_jsonl_writes_the_translation_into_the_line_keeping_every_other_byte(
    line: str, out: str
) -> None:
    assert written(line + "\r\n", "jsonl") == out + "\r\n"
    expected = json.loads(line)
    expected["text_de"] = "A"
    assert json.loads(out) == expected


def test_jsonl_keeps_each_line_ending() -> None:
    text = '{"text": "a"}\r\n\r\n{"text": "b"}\n{"text": "c"}\r{"text": "d"}'
    assert written(text, "jsonl") == (
        '{"text": "a", "text_de": "A"}\r\n'
        "\r\n"
        '{"text": "b", "text_de": "B"}\n'
        '{"text": "c", "text_de": "C"}\r'
        '{"text": "d", "text_de": "D"}\r\n'  # none: the first line's
    )


def test_jsonl_translations_are_escaped_where_a_terminal_would_act_on_them() -> None:
    corpus = read_corpus('{"text": "a"}\n', "jsonl", None)
    out = io.StringIO()
    hostile = "\x1b[2J\x9b6n\u2028\ud800é\n"
    corpus.write(out, [hostile], into="t", as_json=False, terminal=False)
    line = out.getvalue()
    assert line == '{"text": "a", "t": "\\u001b[2J\\u009b6n\\u2028\\ud800é\\n"}\n'
    assert json.loads(line)["t"] == hostile  # exact, once decoded
    assert json_text("\x85") == '"\\u0085"'


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"text": 3}', "line 2: the field 'text' is a number, not a string"),
        ('{"text": null}', "line 2: the field 'text' is null, not a string"),
        ('{"text": ["a"]}', "line 2: the field 'text' is an array, not a string"),
        ('{"body": "a"}', "line 2: no field 'text' (--field names the one with the text)"),
        ('["text"]', "line 2: an array, not a JSON object"),
        ("17", "line 2: a number, not a JSON object"),
        ('"text"', "line 2: a string, not a JSON object"),
        ('{"text": {"en": "a"}}', "line 2: the field 'text' is an object, not a string"),
        ('{"text": "a"', "line 2: not JSON (Expecting ',' delimiter at column 13)"),
        ('{"text": "' + "x" * 10_001 + '"}', "line 2: the field 'text' has 10,001 characters"),
    ],
)
def test_jsonl_records_without_a_usable_text_are_refused(line: str, why: str) -> None:
    with pytest.raises(UsageError) as refused:
        read_corpus('{"text": "ok"}\n' + line + "\n", "jsonl", None)
    assert str(refused.value).startswith(why)
    assert str(refused.value).endswith("; nothing was sent")


# -- CSV ---------------------------------------------------------------------------------------


def test_csv_appends_a_column_and_keeps_every_cell() -> None:
    text = (
        "id,text,note\r\n"
        '1,"Hello, world","say ""hi"""\r\n'
        '2,"two\nlines",\r\n'
        "\r\n"  # a blank line, kept
        "3,Grüße\r\n"  # a short row: padded to the header
        "4,,empty\r\n"
    )
    out = written(text, "csv")
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows == [
        ["id", "text", "note", "text_de"],
        ["1", "Hello, world", 'say "hi"', "HELLO, WORLD"],
        ["2", "two\nlines", "", "TWO\nLINES"],
        [],
        ["3", "Grüße", "", "GRÜSSE"],
        ["4", "", "empty", ""],
    ]
    assert out.startswith('id,text,note,text_de\r\n1,"Hello, world","say ""hi""",')


def test_csv_keeps_the_delimiter_and_line_ending_it_read() -> None:
    text = "id;text\n1;Bonjour; le monde\n"  # a semicolon in the cell would mislead a sniffer
    corpus = read_corpus('id;text\n1;"a;b"\n', "csv", None)
    assert isinstance(corpus, CsvCorpus)
    assert (corpus.dialect.delimiter, corpus.line_ending, corpus.texts) == (";", "\n", ["a;b"])
    assert written('id;text\n1;"a;b"\n', "csv") == 'id;text;text_de\n1;"a;b";"A;B"\n'
    with pytest.raises(UsageError, match="line 2: 3 cells, more than the header's 2"):
        read_corpus(text, "csv", None)


def test_csv_of_one_column_and_a_chosen_column_and_into() -> None:
    assert written("text\nHello\n", "csv") == "text,text_de\nHello,HELLO\n"
    out = written("src,de\nHi,old\n", "csv", field="src", into="de")
    assert out == "src,de\nHi,HI\n"  # an existing column of that name: replaced


def test_csv_translation_cells_show_control_characters_as_escapes_on_a_terminal() -> None:
    corpus = read_corpus("text\na\n", "csv", None)
    out = io.StringIO(newline="")
    corpus.write(out, ["x\x1b]0;t\x07\ty\nz"], into="t", as_json=False, terminal=True)
    assert out.getvalue() == 'text,t\na,"x\\x1b]0;t\\x07\ty\nz"\n'


def test_csv_cells_are_written_exactly_to_a_file_carriage_returns_and_all() -> None:
    # A multi-line cell with CRLF line breaks, in the input and in its translation.
    text = 'id,text\r\n1,"two\r\nlines"\r\n2,"x\x1by"\r\n'
    out = written(text, "csv")
    assert out == 'id,text,text_de\r\n1,"two\r\nlines","TWO\r\nLINES"\r\n2,x\x1by,X\x1bY\r\n'
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[1:] == [["1", "two\r\nlines", "TWO\r\nLINES"], ["2", "x\x1by", "X\x1bY"]]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("id,body\n1,a\n", "line 1: the header row has no column 'text' (it has 'id', 'body')"),
        ("", "the file is empty: CSV needs a header row with a column 'text'"),
        ("id,text\n1\n", "line 2: no cell in the column 'text' (1 cells)"),
        ("text\nok\n" + "x" * 10_001 + "\n", "line 3: the cell 'text' has 10,001 characters"),
    ],
)
def test_csv_without_a_usable_text_is_refused(text: str, why: str) -> None:
    with pytest.raises(UsageError) as refused:
        read_corpus(text, "csv", None)
    assert str(refused.value).startswith(why)


def test_csv_names_the_line_a_multiline_record_starts_on() -> None:
    text = 'id,text\n1,"a\nb\nc"\n2\n'
    with pytest.raises(UsageError, match=r"^line 5: no cell"):
        read_corpus(text, "csv", None)


def test_jsonl_keeps_its_lines_not_parsed_objects() -> None:
    corpus = read_corpus('{"text": "a", "big": [1, 2, 3]}\n', "jsonl", None)
    assert isinstance(corpus, JsonLinesCorpus)
    assert corpus.lines == ['{"text": "a", "big": [1, 2, 3]}\n']  # with its line ending
    assert corpus.texts == ["a"]


# -- the checkpoint ----------------------------------------------------------------------------

HEADER = Header("ab" * 32, "en", "de", "jsonl", None, 5)


def test_a_checkpoint_is_written_batch_by_batch_and_read_back(tmp_path: Path) -> None:
    path = str(tmp_path / "out.checkpoint")
    checkpoint = Checkpoint.create(path, HEADER)
    finished = Finished(checkpoint, {})
    finished[0], finished[2] = "Hallo", 'a "quoted"\nline\x1b é'
    assert Path(path).read_text().count("\n") == 1  # the header: nothing written per text
    finished.flush()  # as the progress callback does after each batch
    finished[4] = "Welt"
    finished.flush()
    finished.flush()  # nothing new: nothing written
    checkpoint.close()
    lines = Path(path).read_text(encoding="ascii").splitlines()
    assert json.loads(lines[0]) == {
        "lingodoc_checkpoint": 1,
        "input_sha256": "ab" * 32,
        "source": "en",
        "target": "de",
        "format": "jsonl",
        "field": None,
        "total": 5,
    }
    assert lines[1:] == [
        '{"i": 0, "t": "Hallo"}',
        '{"i": 2, "t": "a \\"quoted\\"\\nline\\u001b \\u00e9"}',
        '{"i": 4, "t": "Welt"}',
    ]
    header, done, _ = read(path, 5)
    assert header["target"] == "de"
    assert done == {0: "Hallo", 2: 'a "quoted"\nline\x1b é', 4: "Welt"}


def test_a_torn_last_line_is_ignored_and_cut_off_before_resuming(tmp_path: Path) -> None:
    path = tmp_path / "c.checkpoint"
    Checkpoint.create(str(path), HEADER).close()
    with path.open("a", encoding="ascii") as stream:
        stream.write('{"i": 1, "t": "eins"}\n{"i": 3, "t": "dr')  # killed mid-write
    checkpoint, done = Checkpoint.resume(str(path), HEADER)
    assert done == {1: "eins"}
    finished = Finished(checkpoint, done)
    finished[3] = "drei"
    finished.flush()
    checkpoint.close()
    assert read(str(path), 5)[1] == {1: "eins", 3: "drei"}
    assert path.read_text().endswith('"eins"}\n{"i": 3, "t": "drei"}\n')


class FillingDisk:
    """``os`` for the checkpoint, on a disk that takes ``room`` more bytes, then no more."""

    def __init__(self, room: int) -> None:
        self.room = room

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: memoryview) -> int:
        if not self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = os.write(fd, data[: self.room])  # as the system does: what fits
        self.room -= written
        return written


def test_an_append_the_disk_refuses_is_cut_off_and_stays_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.checkpoint"
    checkpoint = Checkpoint.create(str(path), HEADER)
    finished = Finished(checkpoint, {})
    finished[0] = "Hallo"
    finished.flush()
    disk = FillingDisk(room=30)  # the next line, and part of the one after
    monkeypatch.setattr(_checkpoint, "os", disk)
    finished[1], finished[2] = "eins", "zwei"
    with pytest.raises(CheckpointError) as refused:
        finished.flush()
    assert str(refused.value) == f"cannot write the checkpoint {path}: No space left on device"
    assert read(str(path), 5)[1:] == ({0: "Hallo"}, path.stat().st_size)  # whole lines only
    assert finished.kept() == 1
    finished[3] = "drei"  # stored after the failure: queued after what failed
    disk.room = 10_000  # room again
    finished.flush()
    checkpoint.close()
    assert read(str(path), 5)[1] == {0: "Hallo", 1: "eins", 2: "zwei", 3: "drei"}
    assert finished.kept() == 4


class Interrupted:
    """``os`` for the checkpoint, where Ctrl-C comes as the next write has taken ``room`` bytes.

    ``signal`` sends a real SIGINT (the command is stopped by one); otherwise the write
    raises KeyboardInterrupt itself, as it would where Ctrl-C cannot be held back.
    """

    def __init__(self, room: int, *, signal: bool) -> None:
        self.room, self.signal = room, signal

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: memoryview) -> int:
        written = os.write(fd, data[: self.room])
        if self.signal:
            signal.raise_signal(signal.SIGINT)
        else:
            raise KeyboardInterrupt
        return written


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_ctrl_c_during_an_append_waits_until_it_is_whole_and_off_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python's own Ctrl-C handler, even where this runs with SIGINT ignored (`pytest &`).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    path = tmp_path / "c.checkpoint"
    checkpoint = Checkpoint.create(str(path), HEADER)
    finished = Finished(checkpoint, {})
    monkeypatch.setattr(_checkpoint, "os", Interrupted(room=30, signal=True))
    finished[0], finished[1] = "Hallo", "eins"
    try:
        with pytest.raises(KeyboardInterrupt):
            finished.flush()
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.undo()
    assert finished.kept() == 2
    finished.flush()  # as the command does after the interruption: nothing more to write
    checkpoint.close()
    assert read(str(path), 5)[1] == {0: "Hallo", 1: "eins"}
    assert path.read_text().count("\n") == 3  # the header and two lines, each once


def test_ctrl_c_that_cuts_an_append_short_leaves_whole_lines_and_keeps_it_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.checkpoint"
    checkpoint = Checkpoint.create(str(path), HEADER)
    finished = Finished(checkpoint, {})
    finished[0] = "Hallo"
    finished.flush()
    monkeypatch.setattr(_checkpoint, "os", Interrupted(room=30, signal=False))
    finished[1], finished[2] = "eins", "zwei"
    with pytest.raises(KeyboardInterrupt):
        finished.flush()
    monkeypatch.undo()
    assert read(str(path), 5)[1:] == ({0: "Hallo"}, path.stat().st_size)  # whole lines only
    assert finished.kept() == 1
    finished.flush()
    checkpoint.close()
    assert read(str(path), 5)[1] == {0: "Hallo", 1: "eins", 2: "zwei"}


def test_a_translation_stored_twice_is_written_once(tmp_path: Path) -> None:
    path = tmp_path / "c.checkpoint"
    checkpoint = Checkpoint.create(str(path), HEADER)
    finished = Finished(checkpoint, {})
    finished[0] = "Hallo"
    finished[0] = "Hallo"  # a batch recorded again (Ctrl-C between storing and reporting)
    finished.flush()
    finished[0] = "Hallo"
    finished.flush()
    checkpoint.close()
    assert path.read_text().count("\n") == 2
    assert finished.kept() == 1


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            {"input_sha256": "cd" * 32},
            "it is of another input (the file changed since, or it is another file)",
        ),
        ({"total": 6}, "it is of another input (the file changed since, or it is another file)"),
        ({"target": "fr"}, "it was made with --to de, not fr"),
        ({"source": "es"}, "it was made with --from en, not es"),
        ({"format": "csv"}, "it was made with --format jsonl, not csv"),
        ({"field": "body"}, "it was made with --field None, not body"),
    ],
)
def test_a_checkpoint_of_another_run_is_refused(
    tmp_path: Path, change: dict[str, object], why: str
) -> None:
    path = str(tmp_path / "c.checkpoint")
    Checkpoint.create(path, HEADER).close()
    other = Header(**{**HEADER.__dict__, **change})  # type: ignore[arg-type]
    with pytest.raises(UsageError) as refused:
        Checkpoint.resume(path, other)
    assert str(refused.value) == (
        f"the checkpoint {path} is not of this run: {why}; run the command it was made "
        "for, or delete it to start afresh"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"i": 0, "t": "a"}\nnonsense\n{"i": 1, "t": "b"}\n', "damaged at line 3"),
        ('{"i": 9, "t": "a"}\n', "damaged at line 2 (not a translation of this input)"),
        ('{"i": true, "t": "a"}\n', "damaged at line 2 (not a translation of this input)"),
        ('{"i": 0}\n', "damaged at line 2 (not a translation)"),
    ],
)
def test_a_damaged_checkpoint_is_refused(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "c.checkpoint"
    path.write_text(HEADER.line() + "\n" + content, encoding="ascii")
    with pytest.raises(UsageError, match=re.escape(why)):
        Checkpoint.resume(str(path), HEADER)


def test_a_file_that_is_not_a_checkpoint_is_not_taken_for_one(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a checkpoint of `lingodoc batch`"):
        Checkpoint.resume(str(path), HEADER)


def test_finished_is_a_mapping_of_earlier_and_new_translations(tmp_path: Path) -> None:
    finished = Finished(None, {0: "a"})
    finished[1] = "b"
    assert dict(finished) == {0: "a", 1: "b"}
    assert (len(finished), 1 in finished, finished.get(2)) == (2, True, None)
    finished.flush()  # no checkpoint: nothing to write, nothing fails
    del finished[0]
    assert list(finished) == [1]
