"""`lingodoc batch`: texts from a file or stdin, and the corpus tool with its checkpoint.

As a real process against a served emulator, which records the texts of every batch
request it receives (and can hold requests back, to stop the command in the middle of a
run), so the tests count what was sent: a resumed run must send only the texts the earlier
one did not finish. In process: reading and writing each format, and the checkpoint file.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest

from lingodoc.cli import _checkpoint, _commands, _terminate, main
from lingodoc.cli._checkpoint import Checkpoint, Finished, Header, read
from lingodoc.cli._corpus import (
    CsvCorpus,
    JsonLinesCorpus,
    format_of,
    json_text,
    read_corpus,
)
from lingodoc.cli._errors import CheckpointError, UsageError
from lingodoc.emulator import Emulator, EmulatorServer, Reply, translate_text
from lingodoc.testing import fake_clock
from tests.cli.conftest import RunCLI, run_command
from tests.waiting import PATIENCE, wait_until

WAIT = PATIENCE  # seconds at most for anything a test waits for


class Recorder(Emulator):
    """The emulator, recording each batch request's texts and able to hold requests back."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.lock = threading.Lock()
        self.received: list[list[str]] = []  # the texts of each batch request, as it arrives
        self.answered: list[tuple[list[str], int]] = []  # ... and the status it got
        self.hold_after: int | None = None  # hold the batch requests after this many
        self.release = threading.Event()
        self.arrived = threading.Condition(self.lock)

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if not target.endswith("/translate/batch"):
            return super().handle(method, target, headers, body)
        texts = json.loads(body)["texts"]
        with self.lock:
            self.received.append(texts)
            held = self.hold_after is not None and len(self.received) > self.hold_after
            self.arrived.notify_all()
        if held:
            self.release.wait(WAIT)  # bounded: a test that fails never hangs the server
        reply = super().handle(method, target, headers, body)
        with self.lock:
            self.answered.append((texts, reply.status))
        return reply

    def sent(self) -> list[str]:
        """Every text received, in order (a text sent twice is there twice)."""
        with self.lock:
            return [text for texts in self.received for text in texts]

    def translated(self) -> list[str]:
        """Every text of a batch answered 200."""
        with self.lock:
            return [text for texts, status in self.answered if status == 200 for text in texts]

    def wait_for(self, requests: int) -> None:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.received) >= requests, WAIT)

    def forget(self) -> None:
        with self.lock:
            self.received.clear()
            self.answered.clear()


@pytest.fixture
def emulator() -> Recorder:
    return Recorder()


def de(text: str) -> str:
    return translate_text(text, "en", "de") if text.strip() else text


def phrases(count: int) -> list[str]:
    """Distinct texts the emulator translates word for word."""
    return [f"Hello world {i}" for i in range(count)]


def checkpoint_lines(path: Path) -> dict[int, str]:
    """The translations in a checkpoint (its whole lines: it may be being written)."""
    text = path.read_text(encoding="ascii")
    lines = text[: text.rfind("\n") + 1].splitlines()
    assert json.loads(lines[0])["lingodoc_checkpoint"] == 1
    return {entry["i"]: entry["t"] for entry in map(json.loads, lines[1:])}


def upper(texts: list[str]) -> list[str]:
    """A stand-in translation, visibly different and keeping blanks."""
    return [text.upper() for text in texts]


def written(text: str, format: str, *, field: str | None = None, into: str = "text_de") -> str:
    corpus = read_corpus(text, format, field)
    stream = io.StringIO(newline="")
    corpus.write(stream, upper(corpus.texts), into=into, as_json=False, terminal=False)
    return stream.getvalue()


# A file of each format read whole, named by its extension.
READ_WHOLE = ["in.txt", "in.jsonl", "in.csv"]


def corpus_text(name: str, texts: list[str]) -> str:
    """A file of ``texts`` in the format of ``name``: lines, JSON Lines or CSV."""
    if name.endswith(".jsonl"):
        return "".join(f'{{"id": {i}, "text": "{t}"}}\n' for i, t in enumerate(texts))
    if name.endswith(".csv"):
        return "id,text\r\n" + "".join(f"{i},{t}\r\n" for i, t in enumerate(texts))
    return "".join(f"{text}\n" for text in texts)


def on_first_request(emulator: Recorder, change: Callable[[], None]) -> None:
    """Run ``change`` when the first request arrives, before it is answered.

    By then the command has read its input, and it writes no output until every batch is
    answered: a change made here is one made during the run.
    """
    handle, pending = emulator.handle, [change]

    def changing(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        with emulator.lock:
            due = pending[:]
            pending.clear()
        for step in due:
            step()
        return handle(method, target, headers, body)

    emulator.handle = changing  # type: ignore[method-assign]


# -- lines from a file or stdin, in batches of 100 ---------------------------------------------


def test_batch_translates_a_file_line_by_line_and_keeps_blank_lines(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    lines = ["Hello", "", "Thank you", "   ", "the cat"]
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = cli("batch", str(path), "--from", "en", "--to", "es")
    assert run.code == 0, run.err
    assert run.out.split("\n")[:-1] == [
        translate_text(line, "en", "es") if line.strip() else line for line in lines
    ]
    assert len(emulator.received) == 1


def test_batch_reads_stdin_and_prints_a_json_array(cli: RunCLI) -> None:
    run = cli("batch", "-", "--to", "fr", "--json", stdin="Hello\n\nGood morning")
    assert run.code == 0, run.err
    assert json.loads(run.out) == ["Bonjour", "", translate_text("Good morning", "en", "fr")]


def test_batch_splits_a_large_input_into_requests_of_100_texts(
    cli: RunCLI, emulator: Recorder
) -> None:
    lines = [f"Hello {i}" for i in range(250)]
    run = cli("batch", "-", "--to", "de", stdin="\n".join(lines) + "\n")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [translate_text(line, "en", "de") for line in lines]
    assert len(emulator.received) == 3


def test_batch_of_nothing_sends_nothing(cli: RunCLI, emulator: Recorder) -> None:
    run = cli("batch", "-", "--to", "de", "--json", stdin="")
    assert (run.code, run.out) == (0, "[]\n")
    assert emulator.requests == []


# -- the formats -------------------------------------------------------------------------------


def test_jsonl_round_trips_with_the_translation_added_and_everything_else_kept(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    records = [
        {"id": 1, "text": "Hello world", "meta": {"n": [1, 2]}},
        {"text": "Grüße, the cat", "id": 2},
        {"id": 3, "text": ""},
        {"id": 4, "text": "   "},
        {"id": 5, "text": "Hello world"},
    ]
    source = tmp_path / "corpus.jsonl"
    source.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8"
    )
    run = cli("batch", str(source), "--to", "de", "-o", str(tmp_path / "out.jsonl"))
    assert run.code == 0, run.err
    assert run.out == ""
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text("utf-8").splitlines()]
    assert out == [{**r, "text_de": de(str(r["text"]))} for r in records]
    assert [list(r) for r in out] == [[*r, "text_de"] for r in records]  # the key order
    # Blank texts are not sent; a text found twice is sent once.
    assert emulator.sent() == ["Hello world", "Grüße, the cat"]
    assert not (tmp_path / "out.jsonl.checkpoint").exists()  # deleted once the output is in


def test_jsonl_with_a_chosen_field_and_into_from_stdin(cli: RunCLI) -> None:
    lines = '{"en": "Thank you", "k": "a"}\n\n{"en": "Good night", "k": "b"}\n'
    run = cli(
        "batch", "-", "--format", "jsonl", "--field", "en", "--into", "fr",
        "--to", "fr", stdin=lines,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert run.out.split("\n") == [
        f'{{"en": "Thank you", "k": "a", "fr": "{translate_text("Thank you", "en", "fr")}"}}',
        "",
        f'{{"en": "Good night", "k": "b", "fr": "{translate_text("Good night", "en", "fr")}"}}',
        "",
    ]


def test_csv_round_trips_with_a_column_added_and_every_cell_kept(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    rows = [
        ["id", "text", "note"],
        ["1", "Hello, world", 'say "hi"'],
        ["2", "Good\nmorning", "two lines"],
        ["3", "Grüße", ""],
        ["4", "", "blank"],
    ]
    source = tmp_path / "strings.csv"
    with source.open("w", encoding="utf-8", newline="") as stream:
        csv.writer(stream).writerows(rows)
    run = cli("batch", str(source), "--to", "es", "-o", str(tmp_path / "out.csv"))
    assert run.code == 0, run.err
    written = (tmp_path / "out.csv").read_bytes().decode("utf-8")
    back = list(csv.reader(io.StringIO(written, newline="")))
    assert back == [
        [*rows[0], "text_es"],
        *([*row, translate_text(row[1], "en", "es") if row[1] else ""] for row in rows[1:]),
    ]
    assert written.startswith("id,text,note,text_es\r\n")  # the line ending read, kept
    assert emulator.sent() == ["Hello, world", "Good\nmorning", "Grüße"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "strings.csv"]


def test_lines_to_an_output_file_replace_it_whole(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("Hello\n\nthe dog\n", encoding="utf-8")
    target.write_text("old content\n", encoding="utf-8")
    target.chmod(0o640)
    run = cli("batch", str(source), "--to", "de", "--output", str(target))
    assert (run.code, run.out) == (0, ""), run.err
    assert target.read_text(encoding="utf-8") == f"{de('Hello')}\n\n{de('the dog')}\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]  # no temp file


def test_duplicates_cost_one_request(cli: RunCLI, emulator: Recorder) -> None:
    lines = ["Hello", "Thank you", "Good night"] * 100  # 300 texts, 3 distinct
    run = cli("batch", "-", "--to", "de", stdin="\n".join(lines) + "\n")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [de(line) for line in lines]
    assert len(emulator.received) == 1


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


# A first JSON Lines record that is fine, then the one refused.
FIRST = '{"text": "ok"}\n'


@pytest.mark.parametrize(
    ("format", "text", "why"),
    [
        ("jsonl", FIRST + '{"text": 3}\n',
         "line 2: the field 'text' is a number, not a string"),
        ("jsonl", FIRST + '{"text": null}\n',
         "line 2: the field 'text' is null, not a string"),
        ("jsonl", FIRST + '{"text": ["a"]}\n',
         "line 2: the field 'text' is an array, not a string"),
        ("jsonl", FIRST + '{"body": "a"}\n',
         "line 2: no field 'text' (--field names the one with the text)"),
        ("jsonl", FIRST + '["text"]\n', "line 2: an array, not a JSON object"),
        ("jsonl", FIRST + "17\n", "line 2: a number, not a JSON object"),
        ("jsonl", FIRST + '"text"\n', "line 2: a string, not a JSON object"),
        ("jsonl", FIRST + '{"text": {"en": "a"}}\n',
         "line 2: the field 'text' is an object, not a string"),
        ("jsonl", FIRST + '{"text": "a"\n',
         "line 2: not valid JSON (Expecting ',' delimiter at column 13)"),
        ("jsonl", FIRST + "[" * 100_000 + "\n", "line 2: not valid JSON (nested too deeply)"),
        ("jsonl", FIRST + '{"text": "a", "x": ' + "[" * 100_000 + "\n",
         "line 2: not valid JSON (nested too deeply)"),
        ("jsonl", FIRST + '{"text": "' + "x" * 10_001 + '"}\n',
         "line 2: the field 'text' has 10,001 characters"),
        ("csv", "id,body\n1,a\n",
         "line 1: the header row has no column 'text' (it has 'id', 'body')"),
        ("csv", "", "the file is empty: CSV needs a header row with a column 'text'"),
        ("csv", "id,text\n1\n", "line 2: no cell in the column 'text' (1 cells)"),
        ("csv", "text\nok\n" + "x" * 10_001 + "\n",
         "line 3: the cell 'text' has 10,001 characters"),
    ],
)  # fmt: skip
def test_records_without_a_usable_text_are_refused_naming_the_line(
    format: str, text: str, why: str
) -> None:
    with pytest.raises(UsageError) as refused:
        read_corpus(text, format, None)
    assert str(refused.value).startswith(why)
    if format == "jsonl":
        assert str(refused.value).endswith("; nothing was sent")


def test_csv_names_the_line_a_multiline_record_starts_on() -> None:
    text = 'id,text\n1,"a\nb\nc"\n2\n'
    with pytest.raises(UsageError, match=r"^line 5: no cell"):
        read_corpus(text, "csv", None)


def test_jsonl_keeps_its_lines_not_parsed_objects() -> None:
    corpus = read_corpus('{"text": "a", "big": [1, 2, 3]}\n', "jsonl", None)
    assert isinstance(corpus, JsonLinesCorpus)
    assert corpus.lines == ['{"text": "a", "big": [1, 2, 3]}\n']  # with its line ending
    assert corpus.texts == ["a"]


# -- refused before any request ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "args", "message"),
    [
        ("c.jsonl", '{"text": "a"}\n{"txt": "b"}\n', (),
         "line 2: no field 'text' (--field names the one with the text); nothing was sent"),
        ("c.jsonl", '{"text": "a"}\n\n{"text": 5}\n', (),
         "line 3: the field 'text' is a number, not a string; nothing was sent"),
        ("c.jsonl", '{"text": "a"}\nnot json\n{"text": null}\n', (),
         "line 2: not valid JSON (Expecting value at column 1) (and 1 more record refused); "
         "nothing was sent"),
        ("c.csv", "id,text\n1,ok\n2," + "x" * 10_001 + "\n", (),
         "line 3: the cell 'text' has 10,001 characters; the limit is 10,000: split it; "
         "nothing was sent"),
        ("c.csv", "id,body\n1,a\n", (),
         "line 1: the header row has no column 'text' (it has 'id', 'body'); --field names "
         "the one with the text (CSV needs a header)"),
        ("c.txt", "a\n", ("--field", "x"),
         "--field name a JSON field or a CSV or Parquet column, and the input is read as "
         "plain lines: give --format jsonl, csv or parquet (or a .jsonl, .csv or .parquet "
         "file)"),
        ("c.csv", "text\na\n", ("--json",),
         "--json is for plain lines; csv output is the input's format, with the "
         "translations added"),
        ("c.txt", "a\n", ("--to", "deu"),
         "--to must be a two-letter ISO 639-1 code such as 'en', not 'deu'"),
    ],
)  # fmt: skip
def test_a_file_it_cannot_translate_is_refused_before_any_request(
    cli: RunCLI,
    emulator: Recorder,
    tmp_path: Path,
    name: str,
    content: str,
    args: tuple[str, ...],
    message: str,
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    run = cli("batch", str(tmp_path / name), "--to", "de", *args)
    assert run.code == 2
    assert run.error.startswith(f"lingodoc: error: {message}"), run.error
    if "--json" in args:  # the error on stdout too
        assert json.loads(run.out)["message"] == run.error.removeprefix("lingodoc: error: ")
    else:
        assert run.out == ""
    assert emulator.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no checkpoint left behind


# -- checkpoint and resume ---------------------------------------------------------------------


def test_the_checkpoint_is_written_batch_by_batch(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(phrases(7)), encoding="utf-8")
    checkpoint = tmp_path / "in.txt.de.checkpoint"
    seen: list[int] = []
    handle = emulator.handle

    def looking(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        # Request n is held until the n - 1 batches answered are in the checkpoint: one at
        # a time, nothing else is answered meanwhile, so each must be written on its own
        # (the next request may be sent before the last batch is written: that is allowed).
        expected, pause = 2 * len(seen), threading.Event()
        for _ in range(int(WAIT / 0.01)):
            if checkpoint.exists() and len(checkpoint_lines(checkpoint)) >= expected:
                break
            pause.wait(0.01)
        seen.append(len(checkpoint_lines(checkpoint)))
        return handle(method, target, headers, body)

    emulator.handle = looking  # type: ignore[method-assign]
    run = cli("batch", str(source), "--to", "de", "--batch-size", "2", "--concurrency", "1")
    assert run.code == 0, run.err
    assert seen == [0, 2, 4, 6]  # each batch on disk as it came back
    assert run.out.splitlines() == [de(text) for text in phrases(7)]
    assert not checkpoint.exists()


def test_a_rate_limit_stop_exits_5_and_resume_sends_only_what_is_left(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    texts = phrases(50)
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    emulator.rate_limit = 3  # 5 batches of 10 needed
    command = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    run = cli(*command)
    assert (run.code, run.out) == (5, "")
    checkpoint = tmp_path / "out.txt.checkpoint"
    assert re.fullmatch(
        r"lingodoc: error: the rate limit stopped the batch: 30 of 50 texts are done, kept in "
        + re.escape(str(checkpoint))
        + r"; the window resets at \d\d:\d\d:\d\d \(in (59m\d\ds|1h00m)\): then add --resume "
        r"to the same command \(or --wait-for-rate-limit to wait for the reset\)",
        run.error,
    )
    done = checkpoint_lines(checkpoint)
    first = emulator.translated()
    assert sorted(texts[i] for i in done) == sorted(first)
    assert len(first) == 30
    assert not out.exists()

    emulator.advance(3600)  # the window resets
    emulator.forget()
    resumed = cli(*command, "--resume")
    assert resumed.code == 0, resumed.err
    assert resumed.err.startswith("lingodoc: resuming: 30 of 50 texts were done before\n")
    assert sorted(emulator.sent()) == sorted(set(texts) - set(first))  # each unfinished once
    assert out.read_text(encoding="utf-8").splitlines() == [de(text) for text in texts]
    assert not checkpoint.exists()


def test_an_earlier_checkpoint_without_resume_is_refused(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")
    checkpoint = tmp_path / "in.txt.de.checkpoint"
    checkpoint.write_text("work of an earlier run\n", encoding="utf-8")
    run = cli("batch", str(source), "--to", "de")
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: a checkpoint of an earlier run exists at {checkpoint}: "
        "add --resume to continue it, or delete it"
    )
    assert emulator.requests == []
    assert checkpoint.read_text(encoding="utf-8") == "work of an earlier run\n"


# The pairs of files of a run that are one file, and how they are made one.
ONE_FILE = [
    ("--output", "the checkpoint", "path"),  # which left no output at all, and exit code 0
    ("--output", "the checkpoint", "symlink"),
    ("--output", "the checkpoint", "hard link"),
    ("the input", "--output", "path"),
    ("the input", "the checkpoint", "symlink"),
    ("the input", "the checkpoint", "hard link"),
]


@pytest.mark.parametrize(("first", "second", "how"), ONE_FILE)
def test_input_output_or_checkpoint_that_are_one_file_are_refused_before_any_request(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, first: str, second: str, how: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")
    paths = {"the input": source, "--output": tmp_path / "out.txt"}
    target = paths[first]
    if how == "hard link":
        if not target.exists():
            target.write_text("an earlier output\n", encoding="utf-8")
        paths[second] = tmp_path / "linked"
        os.link(target, paths[second])
    elif how == "symlink":
        paths[second] = tmp_path / "linked"
        paths[second].symlink_to(target)  # dangling, for a file not made yet
    else:
        paths[second] = target
    before = {path: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()}
    options = {"--output": "-o", "the checkpoint": "--checkpoint"}
    given = [arg for name in options if name in paths for arg in (options[name], str(paths[name]))]
    run = cli("batch", str(source), "--to", "de", *given)
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: {first} {paths[first]} and {second} {paths[second]} are the same "
        "file: give each a path of its own"
    )
    assert emulator.requests == []
    assert {path: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()} == before


@pytest.mark.parametrize(
    ("given", "first", "lock"),
    [
        # The lock of the checkpoint `notes` is the input: it was deleted as the run ended.
        (("notes.lock", "--checkpoint", "notes", "-o", "out.txt"), "the input", "notes.lock"),
        # The output was renamed over the lock, then deleted with it: exit code 0, no output.
        (("in.txt", "--checkpoint", "res", "-o", "res.lock"), "--output", "res.lock"),
        # The default checkpoint's (OUT.checkpoint) lock.
        (("x.checkpoint.lock", "-o", "x"), "the input", "x.checkpoint.lock"),
    ],
)
def test_an_input_or_output_that_is_the_checkpoints_lock_file_is_refused(
    cli: RunCLI,
    emulator: Recorder,
    tmp_path: Path,
    given: tuple[str, ...],
    first: str,
    lock: str,
) -> None:
    args = [str(tmp_path / arg) if not arg.startswith("-") else arg for arg in given]
    Path(args[0]).write_text("Hello\n", encoding="utf-8")
    run = cli("batch", *args, "--to", "de")
    assert (run.code, run.out) == (2, "")
    shown = os.path.realpath(tmp_path / lock)  # the lock is named after the real path
    assert run.error == (
        f"lingodoc: error: {first} {tmp_path / lock} and the checkpoint's lock file {shown} "
        "are the same file: give each a path of its own"
    )
    assert emulator.requests == []
    assert [path.name for path in tmp_path.iterdir()] == [Path(args[0]).name]
    assert Path(args[0]).read_text(encoding="utf-8") == "Hello\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_lock_file_path_that_is_not_a_regular_file_is_refused(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    # It would be taken for the lock, then deleted as the run ends.
    source, lock = tmp_path / "in.txt", tmp_path / "in.txt.de.checkpoint.lock"
    source.write_text("Hello\n", encoding="utf-8")
    os.mkfifo(lock)
    run = cli("batch", str(source), "--to", "de", timeout=10)
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: the checkpoint's lock file {lock} is a named pipe, not a regular "
        "file: give another path"
    )
    assert emulator.requests == []
    assert lock.is_fifo()


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("kind", ["a directory", "a named pipe"])
def test_a_checkpoint_that_is_not_a_regular_file_is_refused_without_opening_it(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, kind: str, resume: bool
) -> None:
    if kind == "a named pipe" and not hasattr(os, "mkfifo"):
        pytest.skip("named pipes are POSIX")
    source, checkpoint = tmp_path / "in.txt", tmp_path / "run.checkpoint"
    source.write_text("Hello\n", encoding="utf-8")
    if kind == "a directory":
        checkpoint.mkdir()
    else:
        os.mkfifo(checkpoint)  # opened to read, it would wait for a writer: forever
    args = ("batch", str(source), "--to", "de", "--checkpoint", str(checkpoint))
    run = cli(*args, *(["--resume"] if resume else []), timeout=10)
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: the checkpoint {checkpoint} is {kind}, not a regular file: "
        "give another path"
    )
    assert emulator.requests == []


def test_an_output_that_is_not_a_regular_file_is_refused_before_any_request(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    # Renamed over at the end, a directory would fail only then; a device would be replaced.
    source, out = tmp_path / "in.txt", tmp_path / "out"
    source.write_text("Hello\n", encoding="utf-8")
    out.mkdir()
    run = cli("batch", str(source), "--to", "de", "-o", str(out))
    assert (run.code, run.out) == (2, "")
    assert run.error == (
        f"lingodoc: error: --output {out} is a directory, not a regular file: give another path"
    )
    assert emulator.requests == []


def test_a_second_run_on_a_checkpoint_in_use_is_refused_until_the_first_ends(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    fcntl = pytest.importorskip("fcntl")
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("Hello\n", encoding="utf-8")
    checkpoint = tmp_path / "out.txt.checkpoint"
    args = ("batch", str(source), "--to", "de", "-o", str(out), "-q")
    with open(f"{checkpoint}.lock", "w") as lock:  # held, as a run still going holds it
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run = cli(*args)
        refused = cli(*args, "--resume")
    for stopped in (run, refused):
        assert (stopped.code, stopped.out) == (2, "")
        assert stopped.error == (
            f"lingodoc: error: another `lingodoc batch` is running with the checkpoint "
            f"{checkpoint}: wait for it to end, or give this one other files"
        )
    assert emulator.requests == []
    # The lock file left behind, held by no process (as after a kill), keeps no one out;
    # the run removes it as it ends.
    run = cli(*args)
    assert run.code == 0, run.err
    assert out.read_text(encoding="utf-8") == "Hallo\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "out.txt"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("input", "it is of another input (the file changed since, or it is another file)"),
        ("target", "it was made with --to de, not fr"),
    ],
)
def test_resume_refuses_a_checkpoint_of_another_run(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, change: str, why: str
) -> None:
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(phrases(30)), encoding="utf-8")
    emulator.rate_limit = 1
    run = cli("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10",
              "--concurrency", "1")  # fmt: skip
    assert run.code == 5, run.err
    emulator.advance(3600)
    emulator.forget()
    target = "de"
    if change == "input":
        source.write_text("\n".join(phrases(31)), encoding="utf-8")
    else:
        target = "fr"
    run = cli("batch", str(source), "--to", target, "-o", str(out), "--resume")
    assert (run.code, run.out) == (2, "")
    checkpoint = tmp_path / "out.txt.checkpoint"
    assert run.error == (
        f"lingodoc: error: the checkpoint {checkpoint} is not of this run: {why}; run the "
        "command it was made for, or delete it to start afresh"
    )
    assert emulator.received == []
    assert len(checkpoint_lines(checkpoint)) == 10  # left as it was


@pytest.mark.parametrize(
    ("name", "first", "then"),
    [
        ("in.jsonl", ["--field", "text"], []),
        ("in.jsonl", [], ["--field", "text"]),
        ("in.csv", ["--field", "text"], []),
    ],
)
def test_resume_takes_the_default_field_spelled_out_or_left_out_as_the_same(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, name: str, first: list[str], then: list[str]
) -> None:
    source, out = tmp_path / name, tmp_path / f"out-{name}"
    if name.endswith(".jsonl"):
        source.write_text("".join(json.dumps({"text": t}) + "\n" for t in phrases(20)))
    else:
        source.write_text("text\n" + "\n".join(phrases(20)) + "\n")
    emulator.rate_limit = 1
    args = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    run = cli(*args, *first, "--concurrency", "1")
    assert run.code == 5, run.err
    checkpoint = Path(f"{out}.checkpoint")
    header = json.loads(checkpoint.read_text().splitlines()[0])
    assert header["field"] == "text"  # the field used, whether given or not
    emulator.advance(3600)
    emulator.forget()
    run = cli(*args, *then, "--resume", "-q")
    assert run.code == 0, run.err
    assert emulator.sent() == phrases(20)[10:]


def test_a_run_stopped_before_any_text_is_translated_leaves_no_checkpoint(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Hello\n\n \nWorld\n", encoding="utf-8")  # blank lines: done at once
    for _ in range(2):  # the same mistake again: the same error, not "add --resume"
        run = cli("batch", str(source), "--to", "xx", "-q")
        assert run.code == 1
        assert run.err.startswith("lingodoc: error: Field 'target_language': 'xx' is not a ")
        assert "checkpoint" not in run.err
        assert "--resume" not in run.err
        assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]
    run = cli("batch", str(source), "--to", "de", "-q")
    assert (run.code, run.out, run.err) == (0, "Hallo\n\n \nWelt\n", "")


def test_resume_without_a_checkpoint_starts_afresh_with_a_note(cli: RunCLI, tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")
    run = cli("batch", str(source), "--to", "de", "--resume", "-q")
    assert (run.code, run.out) == (0, "Hallo\n"), run.err
    assert run.err == f"lingodoc: no checkpoint at {source}.de.checkpoint: starting afresh\n"


def test_an_output_it_cannot_make_is_refused_before_the_checkpoint_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process, so a file left open would fail the test (a ResourceWarning, an error here).
    source, checkpoint = tmp_path / "r.txt", tmp_path / "r.ck"
    source.write_text("Hello\n", encoding="utf-8")
    header = Header(hashlib.sha256(b"Hello\n").hexdigest(), "en", "de", "lines", None, 1)
    Checkpoint.create(str(checkpoint), header).close()
    out = tmp_path / "nodir" / "out.txt"
    code = main([
        "batch", str(source), "--to", "de", "--checkpoint", str(checkpoint), "--resume",
        "-o", str(out), "--api-key", "ld_unused", "--base-url", "http://127.0.0.1:9/v1",
    ])  # fmt: skip
    printed = capsys.readouterr()
    assert (code, printed.out) == (2, "")
    assert printed.err == (
        f"lingodoc: error: --output {out} is in a folder that does not exist: make {out.parent}\n"
    )
    assert read(str(checkpoint), 1)[0]["input_sha256"] == header.input_sha256  # kept as it was


def test_resume_reading_stdin_needs_a_checkpoint_path(cli: RunCLI, emulator: Recorder) -> None:
    run = cli("batch", "-", "--to", "de", "--resume", stdin="Hello\n")
    assert run.code == 2
    assert "--resume needs a checkpoint" in run.error
    assert emulator.requests == []


def test_stdin_with_a_checkpoint_path_resumes_too(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    text = "\n".join(phrases(20)) + "\n"
    checkpoint = tmp_path / "run.checkpoint"
    emulator.rate_limit = 1
    args = ("batch", "-", "--to", "de", "--checkpoint", str(checkpoint), "--batch-size", "10")
    run = cli(*args, "--concurrency", "1", stdin=text)
    assert run.code == 5, run.err
    emulator.advance(3600)
    emulator.forget()
    run = cli(*args, "--resume", stdin=text)
    assert run.code == 0, run.err
    assert run.out.splitlines() == [de(t) for t in phrases(20)]
    assert emulator.sent() == phrases(20)[10:]


def test_a_rate_limit_stop_reading_stdin_without_a_checkpoint_says_nothing_is_kept(
    cli: RunCLI, emulator: Recorder
) -> None:
    emulator.rate_limit = 1
    run = cli("batch", "-", "--to", "de", "--batch-size", "10", "--concurrency", "1",
              stdin="\n".join(phrases(20)))  # fmt: skip
    assert run.code == 5
    assert "10 of 20 texts were translated but are not kept" in run.error


def test_with_json_a_stopped_batch_has_the_services_message_and_what_is_kept_apart(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "run.checkpoint"
    emulator.rate_limit = 1
    run = cli("--json", "batch", "-", "--to", "de", "--checkpoint", str(checkpoint),
              "--batch-size", "10", "--concurrency", "1", stdin="\n".join(phrases(20)))  # fmt: skip
    assert (run.code, run.out.startswith("{")) == (5, True), run.err
    error = json.loads(run.out)
    assert re.fullmatch(r"req_[0-9a-f]{24}", error.pop("request_id"))
    message = r"Rate limit of 1 request per hour reached; retry in \d+ s\."  # the service's
    assert re.fullmatch(message, error.pop("message"))
    assert error == {
        "code": "RATE_LIMITED",
        "hint": run.error.removeprefix("lingodoc: error: the rate limit stopped the batch: "),
        "status": 429,
    }
    assert error["hint"].startswith(f"10 of 20 texts are done, kept in {checkpoint}; ")


def _file_size_limit(size: int) -> None:
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG) instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="file size limits are POSIX")
def test_a_checkpoint_it_cannot_write_to_stops_the_run_saying_what_is_kept(
    emulator: Recorder, env: dict[str, str], tmp_path: Path
) -> None:
    # A full disk, as a file size limit: the header and two batches fit, the third does not.
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(phrases(50)), encoding="utf-8")
    args = [sys.executable, "-m", "lingodoc", "batch", str(source), "--to", "de", "-o", str(out),
            "--batch-size", "10", "--concurrency", "1", "-q"]  # fmt: skip
    result = subprocess.run(
        args, capture_output=True, text=True, env=env, timeout=WAIT, check=False,
        preexec_fn=lambda: _file_size_limit(1000),
    )  # fmt: skip
    checkpoint = tmp_path / "out.txt.checkpoint"
    kept = checkpoint_lines(checkpoint)
    assert len(kept) == 20
    assert checkpoint.read_text().endswith("\n")  # the batch it could not take: cut off
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"lingodoc: error: cannot write the checkpoint {checkpoint}: File too large; "
        f"20 of 50 texts are done, kept in {checkpoint}: add --resume to the same command "
        "to go on without sending them again"
    )
    assert not out.exists()
    emulator.forget()
    run = run_command([*args, "--resume"], env=env)
    assert run.code == 0, run.err
    assert out.read_text(encoding="utf-8").splitlines() == [de(t) for t in phrases(50)]
    assert emulator.sent() == phrases(50)[20:]


def test_another_error_exits_1_and_says_the_checkpoint_keeps_the_finished_texts(
    cli: RunCLI, emulator: Recorder, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(phrases(30)), encoding="utf-8")
    (tmp_path / "out.txt").write_text("the previous output\n", encoding="utf-8")
    handle = emulator.handle

    def failing_third(method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if len(emulator.received) == 2:  # the third batch request
            emulator.inject("server_error", times=3)
        return handle(method, target, headers, body)

    emulator.handle = failing_third  # type: ignore[method-assign]
    run = cli("batch", str(source), "--to", "de", "-o", str(tmp_path / "out.txt"),
              "--batch-size", "10", "--concurrency", "1", "--max-retries", "0")  # fmt: skip
    assert (run.code, run.out) == (1, "")
    checkpoint = tmp_path / "out.txt.checkpoint"
    assert run.error.endswith(
        f"; 20 of 30 texts are done, kept in {checkpoint}: add --resume to the same command "
        "to go on without sending them again"
    )
    assert len(checkpoint_lines(checkpoint)) == 20
    # The output is untouched, and no temporary file is left.
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "the previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt", checkpoint.name]


# -- the input changed during the run ---------------------------------------------------------


@pytest.mark.parametrize("name", READ_WHOLE)
def test_a_file_read_whole_is_written_back_as_read_whatever_happens_to_it_meanwhile(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, name: str
) -> None:
    source, out = tmp_path / name, tmp_path / f"out{Path(name).suffix}"
    source.write_text(corpus_text(name, phrases(30)), encoding="utf-8")
    command = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10")
    assert cli(*command).code == 0  # unchanged: what it must write
    expected = out.read_bytes()
    out.unlink()
    emulator.forget()

    other = corpus_text(name, phrases(40)[::-1])  # other texts, other lines, another size
    on_first_request(emulator, lambda: source.write_text(other, encoding="utf-8"))
    run = cli(*command)
    assert run.code == 0, run.err
    assert source.read_bytes() == other.encode()  # changed during the run
    assert out.read_bytes() == expected
    assert sorted(emulator.sent()) == sorted(phrases(30))


# -- a full disk: exit code 6, the work kept, --resume finishes it ------------------------------


def filling_open(room: int, code: int) -> Callable[..., IO[Any]]:
    """``open`` for the output (a descriptor): a disk that takes ``room`` bytes, then ``code``."""
    left = [room]

    class Filling(io.FileIO):
        def write(self, data: Any) -> int:
            if not left[0]:
                raise OSError(code, os.strerror(code))
            written = super().write(bytes(data)[: left[0]])  # as the system does: what fits
            left[0] -= written
            return written

    def opener(fd: int | str, mode: str, *, closefd: bool = True, **text: Any) -> IO[Any]:
        if isinstance(fd, str):  # the input, read
            return open(fd, mode, closefd=closefd, **text)
        stream = io.BufferedWriter(Filling(fd, "w", closefd=closefd))
        return stream if "b" in mode else io.TextIOWrapper(stream, **text)

    return opener


def batch_in_process(server: EmulatorServer, *args: str) -> int:
    return main(["batch", *args, "--api-key", server.api_key, "--base-url", server.base_url])


@pytest.mark.parametrize("name", READ_WHOLE)
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])  # the disk, or the quota on it
def test_a_full_disk_writing_the_output_exits_6_and_resume_writes_it_exactly(
    server: EmulatorServer,
    emulator: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    code: int,
) -> None:
    source, out = tmp_path / name, tmp_path / f"out{Path(name).suffix}"
    source.write_text(corpus_text(name, phrases(30)), encoding="utf-8")
    command = (str(source), "--to", "de", "-o", str(out), "--batch-size", "10", "-q")
    assert batch_in_process(server, *command) == 0  # without the fault: what it must write
    expected = out.read_bytes()
    out.write_text("the previous output\n", encoding="utf-8")
    emulator.forget()
    capsys.readouterr()

    monkeypatch.setattr(_commands, "open", filling_open(100, code), raising=False)
    assert batch_in_process(server, *command) == 6
    checkpoint = tmp_path / "out.txt.checkpoint".replace(".txt", Path(name).suffix)
    assert capsys.readouterr().err == (
        f"lingodoc: error: cannot write {out}: {os.strerror(code)}; 30 of 30 texts are done, kept "
        f"in {checkpoint}: once space is freed, add --resume to the same command to go on "
        "without sending them again\n"
    )
    assert len(checkpoint_lines(checkpoint)) == 30
    assert out.read_text(encoding="utf-8") == "the previous output\n"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(  # no temporary file left
        [name, out.name, checkpoint.name]
    )

    monkeypatch.undo()  # space freed
    emulator.forget()
    assert batch_in_process(server, *command, "--resume") == 0
    assert out.read_bytes() == expected
    assert emulator.sent() == []  # every text came from the checkpoint
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, out.name])


@pytest.mark.parametrize("option", ["-o", "--checkpoint", "--cache"])
def test_a_file_in_a_folder_that_is_not_there_is_refused_before_sending(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, option: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Hello\n", encoding="utf-8")
    where = tmp_path / "nodir" / "file"
    run = cli("batch", str(source), "--to", "de", option, str(where))
    name = {"-o": "--output", "--checkpoint": "the checkpoint", "--cache": "the cache"}[option]
    assert (run.code, run.error) == (
        2,
        f"lingodoc: error: {name} {where} is in a folder that does not exist: make {where.parent}",
    )
    assert emulator.sent() == []
    assert sorted(tmp_path.iterdir()) == [source]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full: a disk always full")
def test_a_full_disk_on_stdout_exits_6_and_resume_prints_it_all(
    cli: RunCLI, emulator: Recorder, env: dict[str, str], tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(phrases(30)), encoding="utf-8")
    args = [sys.executable, "-m", "lingodoc", "batch", str(source), "--to", "de", "-q"]
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            args, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=WAIT, check=False
        )
    checkpoint = tmp_path / "in.txt.de.checkpoint"
    assert (result.returncode, result.stderr) == (  # nothing more, such as Python at exit
        6,
        "lingodoc: error: cannot write stdout: No space left on device; 30 of 30 texts are "
        f"done, kept in {checkpoint}: once space is freed, add --resume to the same command "
        "to go on without sending them again\n",
    )
    emulator.forget()
    run = cli(*args[3:], "--resume")
    assert run.code == 0, run.err
    assert run.out.splitlines() == [de(text) for text in phrases(30)]
    assert emulator.sent() == []
    assert not checkpoint.exists()


@pytest.mark.parametrize(("room", "kept"), [(700, 20), (0, 0)])
def test_a_full_disk_writing_the_checkpoint_exits_6_keeping_whole_batches(
    server: EmulatorServer,
    emulator: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    room: int,
    kept: int,
) -> None:
    # Two batches of 10 lines take 620 bytes: the third fits in part, and is cut off again.
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(phrases(50)), encoding="utf-8")
    command = (str(source), "--to", "de", "-o", str(out), "--batch-size", "10",
               "--concurrency", "1", "-q")  # fmt: skip
    monkeypatch.setattr(_checkpoint, "os", FillingDisk(room))
    assert batch_in_process(server, *command) == 6
    checkpoint = tmp_path / "out.txt.checkpoint"
    what = (
        f"{kept} of 50 texts are done, kept in {checkpoint}: once space is freed, add --resume "
        "to the same command to go on without sending them again"
        if kept
        else "free some space, then run the same command again"  # nothing kept: no file
    )
    assert capsys.readouterr().err == (
        f"lingodoc: error: cannot write the checkpoint {checkpoint}: No space left on device; "
        f"{what}\n"
    )
    if kept:
        assert checkpoint_lines(checkpoint) == {i: de(t) for i, t in enumerate(phrases(kept))}
    else:
        assert not checkpoint.exists()
    assert not out.exists()

    monkeypatch.undo()  # space freed
    emulator.forget()
    assert batch_in_process(server, *command, "--resume") == 0
    assert out.read_text(encoding="utf-8").splitlines() == [de(t) for t in phrases(50)]
    assert emulator.sent() == phrases(50)[kept:]  # what was kept is not sent again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def test_a_full_disk_before_anything_is_sent_exits_6(
    server: EmulatorServer,
    emulator: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("Hello\n", encoding="utf-8")
    monkeypatch.setattr(_commands.tempfile, "mkstemp", full)  # the output's temporary file
    assert batch_in_process(server, str(source), "--to", "de", "-o", str(out)) == 6
    assert capsys.readouterr().err == (
        f"lingodoc: error: cannot write {out}: No space left on device; free some space, then "
        "run the same command again\n"
    )
    assert emulator.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_waiting_for_the_rate_limit_goes_on_after_the_reset(
    server: EmulatorServer, emulator: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process, on the fake clock: the wait for the hourly reset takes no time, and the
    # served emulator's window follows the same clock.
    source = tmp_path / "in.txt"
    source.write_text("\n".join(phrases(30)), encoding="utf-8")
    emulator.rate_limit = 2
    with fake_clock() as clock:
        code = main([
            "batch", str(source), "--to", "de", "--batch-size", "10", "--concurrency", "1",
            "--wait-for-rate-limit", "--api-key", server.api_key, "--base-url", server.base_url,
        ])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert printed.out.splitlines() == [de(text) for text in phrases(30)]
    assert any(3500 < sleep <= 3601 for sleep in clock.sleeps), clock.sleeps
    waits = [line for line in printed.err.splitlines() if "waiting for the reset at" in line]
    assert len(waits) == 1, printed.err
    assert waits[0].startswith(" 66%  20/30 texts  2/3 requests  window: 0 left, resets ")
    assert emulator.sent() == phrases(30)  # nothing sent twice, not even the one refused


# -- the checkpoint file, in process -----------------------------------------------------------


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


def new_checkpoint(tmp_path: Path, *written: str) -> tuple[Path, Checkpoint, Finished]:
    """A new checkpoint, with the translations ``written`` (of texts 0, 1...) on disk."""
    path = tmp_path / "c.checkpoint"
    checkpoint = Checkpoint.create(str(path), HEADER)
    finished = Finished(checkpoint, {})
    for index, translation in enumerate(written):
        finished[index] = translation
    finished.flush()
    return path, checkpoint, finished


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
    path, checkpoint, finished = new_checkpoint(tmp_path, "Hallo")
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

    ``stop`` sends that real signal (the command is stopped by one); otherwise the write
    raises KeyboardInterrupt itself, as it would where Ctrl-C cannot be held back.
    """

    def __init__(self, room: int, *, stop: signal.Signals | None) -> None:
        self.room, self.stop = room, stop

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: memoryview) -> int:
        written = os.write(fd, data[: self.room])
        if self.stop is not None:
            signal.raise_signal(self.stop)
        else:
            raise KeyboardInterrupt
        return written


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_during_an_append_waits_until_it_is_whole_and_off_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    # A handler that raises, as the command's are, even where this runs with SIGINT ignored
    # (`pytest &`): Python's own for Ctrl-C, and the command's for SIGTERM.
    handler = signal.default_int_handler if stop == signal.SIGINT else _terminate
    previous = signal.signal(stop, handler)
    path, checkpoint, finished = new_checkpoint(tmp_path)
    monkeypatch.setattr(_checkpoint, "os", Interrupted(room=30, stop=stop))
    finished[0], finished[1] = "Hallo", "eins"
    try:
        with pytest.raises(KeyboardInterrupt):
            finished.flush()
    finally:
        signal.signal(stop, previous)
        monkeypatch.undo()
    assert finished.kept() == 2
    finished.flush()  # as the command does after the interruption: nothing more to write
    checkpoint.close()
    assert read(str(path), 5)[1] == {0: "Hallo", 1: "eins"}
    assert path.read_text().count("\n") == 3  # the header and two lines, each once


def test_ctrl_c_that_cuts_an_append_short_leaves_whole_lines_and_keeps_it_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, checkpoint, finished = new_checkpoint(tmp_path, "Hallo")
    monkeypatch.setattr(_checkpoint, "os", Interrupted(room=30, stop=None))
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
    path, checkpoint, finished = new_checkpoint(tmp_path)
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
        ("[" * 100_000 + "\n", "damaged at line 2 (not a translation)"),
        ('{"i": 0, "t": "a"}\n' + '{"i": ' * 100_000 + "\n", "damaged at line 3"),
    ],
)
def test_a_damaged_checkpoint_is_refused(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "c.checkpoint"
    path.write_text(HEADER.line() + "\n" + content, encoding="ascii")
    with pytest.raises(UsageError, match=re.escape(why)):
        Checkpoint.resume(str(path), HEADER)


@pytest.mark.parametrize("first_line", ["my notes", "[" * 100_000])
def test_a_file_that_is_not_a_checkpoint_is_not_taken_for_one(
    tmp_path: Path, first_line: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(first_line + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a checkpoint of `lingodoc batch`"):
        Checkpoint.resume(str(path), HEADER)


def test_the_checkpoint_is_made_aside_without_following_a_planted_symlink(
    tmp_path: Path,
) -> None:
    path, victim = tmp_path / "c.checkpoint", tmp_path / "victim"
    victim.write_text("precious\n", encoding="utf-8")
    planted = Path(f"{path}.{os.getpid()}.tmp")  # the name earlier versions wrote the header to
    planted.symlink_to(victim)
    Checkpoint.create(str(path), HEADER).close()
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert not path.is_symlink()
    assert read(str(path), HEADER.total)[0]["target"] == "de"
    assert planted.is_symlink()  # left as it was, and no temporary file left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [path.name, victim.name, planted.name]
    )


def lowest_free_fd() -> int:
    """The descriptor the next open gets: higher after a call that leaked one."""
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    return fd


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP])
def test_a_checkpoint_that_cannot_be_locked_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    # As on a network file system without locks (NFS, SMB, some FUSE ones).
    fcntl = pytest.importorskip("fcntl")

    def refused(fd: int, operation: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", refused)
    path = str(tmp_path / "c.checkpoint")
    free = lowest_free_fd()
    with pytest.raises(UsageError) as error, _checkpoint.locked(path):
        pass
    assert str(error.value) == (
        f"cannot lock the checkpoint {path}: {os.strerror(code)}; put it on a local disk "
        "with --checkpoint PATH"
    )
    assert lowest_free_fd() == free  # the lock file's descriptor closed


def test_finished_is_a_mapping_of_earlier_and_new_translations(tmp_path: Path) -> None:
    finished = Finished(None, {0: "a"})
    finished[1] = "b"
    assert dict(finished) == {0: "a", 1: "b"}
    assert (len(finished), 1 in finished, finished.get(2)) == (2, True, None)
    finished.flush()  # no checkpoint: nothing to write, nothing fails
    del finished[0]
    assert list(finished) == [1]


# -- stopped in the middle ---------------------------------------------------------------------


Start = Callable[..., "subprocess.Popen[str]"]


# `lingodoc ARGS` as `python -c TOLD_STOPPED TOLD ARGS` runs it: the file TOLD is made once
# translate_many hands out no further batch (its one run has ended, or is interrupted).
TOLD_STOPPED = """
import sys
from pathlib import Path
from lingodoc import _bulk
from lingodoc.cli import main

told = Path(sys.argv.pop(1))
stop = _bulk.Bulk.stop


def stopped(bulk):
    stop(bulk)
    told.touch()


_bulk.Bulk.stop = stopped
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def start(env: dict[str, str]) -> Iterator[Start]:
    """Start `python -m lingodoc ARGS` against the emulator, killed at the end if still running.

    With ``told=PATH``, the file PATH is made once translate_many has stopped (TOLD_STOPPED).
    """
    processes: list[subprocess.Popen[str]] = []

    def started(*args: str, told: Path | None = None) -> subprocess.Popen[str]:
        command = ["-m", "lingodoc"] if told is None else ["-c", TOLD_STOPPED, str(told)]
        process = subprocess.Popen(
            [sys.executable, *command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
        )
        processes.append(process)
        return process

    yield started
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(WAIT)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.skipif(os.name != "posix", reason="flock")
@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_second_run_on_the_checkpoint_by_another_name_is_refused(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, start: Start, how: str
) -> None:
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    checkpoint, other = tmp_path / "run.checkpoint", tmp_path / "other.checkpoint"
    source.write_text("Hello\n", encoding="utf-8")
    args = ("batch", str(source), "--to", "de", "-o", str(out), "-q")
    emulator.hold_after = 0  # the first run's request is held: it runs until released
    first = start(*args, "--checkpoint", str(checkpoint))
    try:
        emulator.wait_for(1)  # its checkpoint is made, and locked
        if how == "symlink":
            other.symlink_to(checkpoint)
        else:
            os.link(checkpoint, other)
        second = cli(*args, "--checkpoint", str(other), "--resume", timeout=10)
    finally:
        emulator.release.set()
    assert (second.code, second.out) == (2, "")
    assert second.error == (
        f"lingodoc: error: another `lingodoc batch` is running with the checkpoint {other}: "
        "wait for it to end, or give this one other files"
    )
    _, err = first.communicate(timeout=WAIT)
    assert first.returncode == 0, err
    assert out.read_text(encoding="utf-8") == "Hallo\n"
    assert emulator.sent() == ["Hello"]  # the second run sent nothing


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [
        (signal.SIGINT, 130, "interrupted"),  # Ctrl-C
        (signal.SIGTERM, 143, "stopped by SIGTERM"),  # docker stop, systemd
    ],
    ids=["SIGINT", "SIGTERM"],
)
def test_ctrl_c_or_sigterm_keeps_the_finished_texts_and_resume_sends_none_twice(
    cli: RunCLI,
    emulator: Recorder,
    tmp_path: Path,
    start: Start,
    stop: signal.Signals,
    code: int,
    said: str,
) -> None:
    if signal.getsignal(stop) == signal.SIG_IGN:
        pytest.skip(f"{stop.name} is ignored in this process, and so would be in the command")
    texts = phrases(100)
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(texts), encoding="utf-8")
    emulator.hold_after = 3  # the 4th batch request on is held back until released
    args = ("batch", str(source), "--to", "de", "-o", str(out), "--batch-size", "10", "-q")
    stopped = tmp_path / "stopped"
    process = start(*args, "--concurrency", "2", told=stopped)
    emulator.wait_for(5)  # 3 answered, 2 in flight and held
    process.send_signal(stop)
    # The command takes the signal while both requests are still held (it hands out no
    # further batch), then they finish, as a slow answer would after Ctrl-C.
    wait_until(stopped.exists, f"the command took the {stop.name}")
    assert process.poll() is None
    emulator.release.set()
    _, err = process.communicate(timeout=WAIT)
    assert process.returncode == code, err
    checkpoint = tmp_path / "out.txt.checkpoint"
    first = emulator.sent()
    done = checkpoint_lines(checkpoint)
    # The ones in flight kept too. (On failure: the texts of each request, as they came.)
    assert sorted(texts[i] for i in done) == sorted(first), emulator.received
    assert len(first) == 50, emulator.received
    assert err == (
        f"lingodoc: {said}; 50 of 100 texts are done, kept in {checkpoint}: add "
        "--resume to the same command to go on without sending them again\n"
    )

    emulator.forget()
    resumed = cli(*args, "--resume")
    assert resumed.code == 0, resumed.err
    again = emulator.sent()
    assert not set(again) & set(first)  # no text sent twice
    assert sorted(again + first) == sorted(texts)
    assert out.read_text(encoding="utf-8").splitlines() == [de(text) for text in texts]


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_killed_run_loses_at_most_the_batches_in_flight(
    cli: RunCLI, emulator: Recorder, tmp_path: Path, start: Start
) -> None:
    texts = phrases(100)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    emulator.hold_after = 4
    args = ("batch", str(source), "--to", "de", "--batch-size", "10", "-q")
    process = start(*args, "--concurrency", "3")
    emulator.wait_for(7)  # 4 answered, 3 in flight and held
    checkpoint = tmp_path / "in.jsonl.de.checkpoint"
    wait_until(
        lambda: checkpoint.exists() and len(checkpoint_lines(checkpoint)) >= 40,
        "the 4 answered batches on disk",
    )
    process.kill()  # SIGKILL: no clean-up of any kind
    process.wait(WAIT)
    emulator.release.set()
    first = emulator.translated()
    done = checkpoint_lines(checkpoint)
    assert len(done) == 40
    assert {texts[i]: t for i, t in done.items()} == {text: de(text) for text in first}

    emulator.forget()
    emulator.hold_after = None
    resumed = cli(*args, "--resume")
    assert resumed.code == 0, resumed.err
    assert sorted(emulator.sent()) == sorted(set(texts) - set(first))  # only the 60 left
    assert [json.loads(line)["text_de"] for line in resumed.out.splitlines()] == [
        de(text) for text in texts
    ]
    assert not checkpoint.exists()
