"""The files `lingodoc batch` reads and writes: plain lines, JSON Lines, CSV and Parquet.

A file is read and checked before anything is sent: every text it holds is found, and a
record that has none (a field missing or not a string) or one over the service's limit is
refused with its line (or row) number. It is written back in the same format with the
translations added: a line per line, each JSON object with one more key, each CSV row
with one more cell, each Parquet row with one more column. A text file is held whole, so
whatever happens to it during the run, its output is of what was read; of a Parquet file
only the text column is, and the rest is read again, a batch at a time, to write it back
(`ParquetCorpus`), once it is checked to be the file read. pyarrow, an optional extra, is
imported for Parquet only.

The translations are data, written exactly, but where a terminal reads them (``terminal``:
stdout is one): there, a control character a server sent is shown as its escape, as in
every other output of the command. Whatever the destination, a plain line's line breaks
become spaces (one line out per line in), JSON Lines use JSON's escapes, and a lone
surrogate, which no encoding can write, is written as its escape.
"""

from __future__ import annotations

import abc
import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from typing import IO, Any

from lingodoc._constants import MAX_TEXT_LENGTH
from lingodoc.cli._checkpoint import refuse_special
from lingodoc.cli._errors import UsageError
from lingodoc.cli._visible import visible

FORMATS = ("lines", "jsonl", "csv", "parquet")
DEFAULT_FIELD = "text"
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
# The most rows of a Parquet file held at once to write it back: a row group, or a part of one.
BATCH_ROWS = 65_536
_BOM = "\ufeff"
# Characters JSON allows raw in a string that should not reach a terminal raw (C1 controls
# such as CSI, the Unicode line separators) or cannot be encoded (lone surrogates).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def format_of(path: str) -> str:
    """Return the format a file's name implies: ``jsonl``, ``csv``, ``parquet``, else ``lines``."""
    return _EXTENSIONS.get(os.path.splitext(path)[1].lower(), "lines")


def json_text(value: object) -> str:
    r"""Return ``value`` as JSON in UTF-8 text, with what a terminal would act on escaped.

    ``json.dumps`` escapes the C0 controls already; C1 controls, U+2028/U+2029 and lone
    surrogates become ``\uXXXX`` too, so the line stays one inert line and encodable.
    """
    dumped = json.dumps(value, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", dumped)


def _cell(translation: str, terminal: bool) -> str:
    """Return a translation as written in text: exact, or for a terminal with escapes."""
    if terminal:
        return visible(translation, layout=True)  # its line breaks and tabs kept
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", translation)


class _Problems:
    """The records refused, reported as one usage error naming the first (its line or row)."""

    def __init__(self, unit: str = "line") -> None:
        self.unit = unit
        self.first: str | None = None
        self.count = 0

    def add(self, line: int, why: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = f"{self.unit} {line}: {why}"

    def check_text(self, line: int, text: str, what: str) -> None:
        if len(text) > MAX_TEXT_LENGTH:  # checked here, to name the line rather than texts[i]
            self.add(
                line,
                f"{what} has {len(text):,} characters; the limit is {MAX_TEXT_LENGTH:,}: split it",
            )

    def raise_any(self) -> None:
        if self.first is not None:
            more = self.count - 1
            others = f" (and {more:,} more record{'s' * (more != 1)} refused)" if more else ""
            raise UsageError(f"{self.first}{others}; nothing was sent")


# As _split_lines, each line with its line ending (the last one may have none).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_DECODER = json.JSONDecoder()


def _skip_space(line: str, index: int) -> int:
    while index < len(line) and line[index] in " \t\r\n":  # JSON's whitespace
        index += 1
    return index


def _members(line: str) -> tuple[int, list[tuple[str, int, int]]]:
    """Find the members of the JSON object ``line``, which ``json.loads`` took.

    Returns:
        Where the object ends (after its ``}``), and each member's key with where the
        text of its value starts and ends, in the order of the line.
    """
    index = _skip_space(line, _skip_space(line, 0) + 1)  # after the "{"
    members: list[tuple[str, int, int]] = []
    if line[index] != "}":
        while True:
            key, index = _DECODER.raw_decode(line, index)
            start = _skip_space(line, _skip_space(line, index) + 1)  # after the ":"
            _, index = _DECODER.raw_decode(line, start)
            members.append((key, start, index))
            index = _skip_space(line, index)
            if line[index] == "}":
                break
            index = _skip_space(line, index + 1)  # after the ","
    return index + 1, members


def _split_lines(text: str) -> list[str]:
    # As a file opened in text mode reads them: \r\n, \r and \n all end a line, and the
    # last line may have no ending.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class Corpus(abc.ABC):
    """The texts of a file, and what is needed to write it back with their translations.

    Attributes:
        format: ``lines``, ``jsonl`` or ``csv``.
        texts: Every text, in file order, blank ones included (the SDK passes those through).
        bom: Whether the file began with a byte order mark, written back if so.
    """

    format = "lines"

    def __init__(self, texts: list[str], bom: bool) -> None:
        self.texts = texts
        self.bom = bom

    @abc.abstractmethod
    def write(
        self, stream: IO[str], translations: list[str], *, into: str, as_json: bool, terminal: bool
    ) -> None:
        """Write the file back with ``translations`` (one per text) to ``stream``.

        Args:
            stream: Where to write.
            translations: A translation per text.
            into: The JSON field or CSV column to add the translations as.
            as_json: Plain lines only: write a JSON array of the translations.
            terminal: ``stream`` is a terminal: show the control characters of the
                translations as escapes, rather than write them.
        """


class LinesCorpus(Corpus):
    """A text per line; written back a translation per line."""

    format = "lines"

    def write(
        self, stream: IO[str], translations: list[str], *, into: str, as_json: bool, terminal: bool
    ) -> None:
        """Write a translation per line, or with ``as_json`` a JSON array (ASCII, exact)."""
        if as_json:
            stream.write(json.dumps(list(translations), indent=2) + "\n")
            return
        stream.write(_BOM if self.bom else "")
        for translation in translations:
            # One line out per line in, whatever the service sends back: its line breaks
            # become spaces (on a terminal, its other control characters escapes).
            stream.write(_cell(" ".join(translation.splitlines()), terminal) + "\n")


class JsonLinesCorpus(Corpus):
    """A JSON object per line, its text in a field; written back with the translation added.

    The lines are kept as read (with their line endings), not as parsed objects (a dict
    costs several times the line it came from), and the translation is written into each
    line's text: added before its closing brace, or in place of the value of the field
    ``into`` if it has one. The rest of the line, its keys, their order, spacing, number
    formats and escapes, and its line ending, stays byte for byte.
    """

    format = "jsonl"

    def __init__(self, texts: list[str], bom: bool, lines: list[str]) -> None:
        super().__init__(texts, bom)
        self.lines = lines

    def write(
        self, stream: IO[str], translations: list[str], *, into: str, as_json: bool, terminal: bool
    ) -> None:
        """Write each line back, the translation added under ``into``; blank lines as they were.

        A line keeps its line ending; the last line, if it had none, gets the first line's.
        """
        stream.write(_BOM if self.bom else "")
        first = self.lines[0] if self.lines else ""
        default_ending = first[len(first.rstrip("\r\n")) :] or "\n"
        texts = iter(translations)
        for line in self.lines:
            text = line.rstrip("\r\n")
            ending = line[len(text) :] or default_ending
            if not text.strip():
                stream.write(text + ending)
                continue
            translation = json_text(next(texts))
            end, members = _members(text)
            # The field's value if it has one (the last, if twice: the one json.loads reads).
            found = [(begin, stop) for key, begin, stop in members if key == into]
            if found:
                begin, stop = found[-1]
                stream.write(f"{text[:begin]}{translation}{text[stop:]}{ending}")
                continue
            comma = ", " if members else ""
            member = f"{comma}{json_text(into)}: {translation}"
            stream.write(f"{text[: end - 1]}{member}{text[end - 1 :]}{ending}")


class CsvCorpus(Corpus):
    """A CSV file with a header row, its texts in a column; written back with one more column.

    The rows are written by the csv module in the dialect read (delimiter, quote character,
    line ending): every cell keeps its value; quoting is the module's, only where needed.
    """

    format = "csv"

    def __init__(
        self,
        texts: list[str],
        bom: bool,
        rows: list[list[str]],
        column: int,
        dialect: type[csv.Dialect],
        line_ending: str,
    ) -> None:
        super().__init__(texts, bom)
        self.rows = rows  # the header first; an empty list is a blank line
        self.column = column
        self.dialect = dialect
        self.line_ending = line_ending

    def write(
        self, stream: IO[str], translations: list[str], *, into: str, as_json: bool, terminal: bool
    ) -> None:
        """Write the rows back, with the translation under ``into`` (a new last column)."""
        stream.write(_BOM if self.bom else "")
        writer = csv.writer(stream, self.dialect, lineterminator=self.line_ending)
        header = self.rows[0]
        width = len(header)
        # A column of that name already there (a file translated before) is replaced.
        target = header.index(into) if into in header else width
        writer.writerow(header if target < width else [*header, into])
        texts = iter(translations)
        for row in self.rows[1:]:
            if not row:
                writer.writerow(row)
                continue
            # Short rows are padded to the header, so the translation lands under its name.
            cells = row + [""] * (max(width, target + 1) - len(row))
            # Exact (a carriage return in a cell is data), but on a terminal, where the
            # control characters of the service's show as escapes, as in every output.
            cells[target] = _cell(next(texts), terminal)
            writer.writerow(cells)


def read_corpus(text: str, format: str, field: str | None) -> Corpus:
    """Read a file's content in ``format``; refuse it if any record has no usable text.

    Args:
        text: The file's content, decoded.
        format: ``lines``, ``jsonl`` or ``csv``.
        field: The JSON field or CSV column holding the texts (default ``text``).

    Returns:
        The corpus, to translate and write back.

    Raises:
        UsageError: Naming the line of the first record refused, and why.
    """
    bom = text.startswith(_BOM)
    text = text[1:] if bom else text
    name = field or DEFAULT_FIELD
    if format == "jsonl":
        return _read_jsonl(text, bom, name)
    if format == "csv":
        return _read_csv(text, bom, name)
    problems = _Problems()
    lines = _split_lines(text)
    for number, line in enumerate(lines, 1):
        problems.check_text(number, line, "the line")
    problems.raise_any()
    return LinesCorpus(lines, bom)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _read_jsonl(text: str, bom: bool, field: str) -> JsonLinesCorpus:
    problems = _Problems()
    lines = _LINE.findall(text)
    texts: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue  # kept as it is, as JSON Lines readers skip it
        try:
            record = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            problems.add(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:  # thousands of [ or {: past what the parser goes into
            problems.add(number, "not valid JSON (nested too deeply)")
            continue
        if not isinstance(record, dict):
            problems.add(number, f"{_kind(record)}, not a JSON object")
            continue
        value = record.get(field)
        if field not in record:
            problems.add(number, f"no field {field!r} (--field names the one with the text)")
        elif not isinstance(value, str):
            problems.add(number, f"the field {field!r} is {_kind(value)}, not a string")
        else:
            problems.check_text(number, value, f"the field {field!r}")
            texts.append(value)
    problems.raise_any()
    return JsonLinesCorpus(texts, bom, lines)


def _sniff(first_line: str) -> type[csv.Dialect]:
    # Only the delimiter is guessed, from the header row: prose in the cells below would
    # mislead the sniffer (a semicolon in a sentence is no delimiter), and its other guesses
    # (no doubled quotes, spaces skipped) would change cells. Quoting is Excel's.
    try:
        sniffed = csv.Sniffer().sniff(first_line, delimiters=",;\t|").delimiter
    except csv.Error:  # one column, or nothing to go by
        return csv.excel

    class Dialect(csv.excel):
        delimiter = sniffed

    return Dialect


def _read_csv(text: str, bom: bool, field: str) -> CsvCorpus:
    first_line = text.split("\n", 1)[0]
    line_ending = "\r\n" if first_line.endswith("\r") else "\n"
    dialect = _sniff(first_line.removesuffix("\r"))
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    problems = _Problems()
    rows: list[list[str]] = []
    texts: list[str] = []
    column = -1
    line = 1  # where the next record starts
    try:
        for row in reader:
            start, line = line, reader.line_num + 1
            if not rows:
                rows.append(row)
                if field not in row:
                    found = ", ".join(repr(name) for name in row) or "none"
                    raise UsageError(
                        f"line {start}: the header row has no column {field!r} (it has "
                        f"{found}); --field names the one with the text (CSV needs a header)"
                    )
                column = row.index(field)
                continue
            rows.append(row)
            if not row:
                continue  # a blank line: no record, kept as it is
            if len(row) > len(rows[0]):
                problems.add(start, f"{len(row)} cells, more than the header's {len(rows[0])}")
            elif column >= len(row):
                problems.add(start, f"no cell in the column {field!r} ({len(row)} cells)")
            else:
                problems.check_text(start, row[column], f"the cell {field!r}")
                texts.append(row[column])
    except csv.Error as exc:
        raise UsageError(f"line {line}: not valid CSV ({exc}); nothing was sent") from exc
    if not rows:
        raise UsageError(f"the file is empty: CSV needs a header row with a column {field!r}")
    problems.raise_any()
    return CsvCorpus(texts, bom, rows, column, dialect, line_ending)


def _pyarrow() -> tuple[Any, Any]:
    """Import pyarrow and pyarrow.parquet, only for a Parquet file: an optional extra."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError(
            'reading and writing Parquet needs pyarrow: pip install "lingodoc[parquet]"'
        ) from None
    return pyarrow, pyarrow.parquet


class ParquetCorpus:
    """A Parquet file, its texts in a column; written back with one more column.

    Only the text column is kept from reading it, and the file stays open: it is read again
    to write it back, a row group at a time (a group of more than `BATCH_ROWS` rows in parts
    of that many), every column with the translations added. What is held in memory is the
    texts, their translations and one such batch, never the whole table; a group of up to
    `BATCH_ROWS` rows is written back as one group.

    The rows written back must be those translated, so the file must not have changed in
    between: rewritten in place, a file of the same size would give each row another text's
    translation. Before anything is written, the path must still lead to the file read,
    with the same size and modification time; as it is read back, the text column must hold
    the texts read, row for row (which stat data cannot vouch for: an mtime can be put back).

    Attributes:
        format: ``parquet``.
        path: The file.
        column: The column of the texts.
        texts: Every text, in row order.
        sha256: The SHA-256 of the file, in hex.
    """

    format = "parquet"

    def __init__(
        self,
        path: str,
        column: str,
        texts: list[str],
        sha256: str,
        file: Any,
        stream: IO[bytes],
        read: os.stat_result,
    ) -> None:
        self.path = path
        self.column = column
        self.texts = texts
        self.sha256 = sha256
        self._file = file  # a pyarrow.parquet.ParquetFile reading stream
        self._stream = stream
        self._read = _identity(read)  # the file as it was opened

    def write(self, stream: IO[bytes], translations: list[str], *, into: str) -> None:
        """Write the rows back to ``stream``, with the translation under ``into``.

        ``into`` is a new last column, or replaces the column of that name (a file
        translated before). The other columns keep their types and the file's metadata.

        Raises:
            UsageError: If the file changed since it was read (or is gone): what was
                written to ``stream`` is not to be used.
        """
        pyarrow, parquet = _pyarrow()
        try:
            now = _identity(os.stat(self.path))
        except OSError:  # removed, or moved away
            now = None
        if now != self._read:
            raise self._changed()
        schema = self._file.schema_arrow
        column = pyarrow.field(into, pyarrow.string())
        names = schema.names
        target = names.index(into) if into in names else len(names)
        schema = schema.set(target, column) if target < len(names) else schema.append(column)
        start = 0
        with parquet.ParquetWriter(stream, schema) as writer:
            for batch in self._read_back(names.index(self.column)):
                end = start + batch.num_rows
                arrays = batch.columns
                arrays[target : target + 1] = [
                    pyarrow.array(translations[start:end], type=pyarrow.string())
                ]
                writer.write_batch(pyarrow.RecordBatch.from_arrays(arrays, schema=schema))
                start = end

    def _read_back(self, text_column: int) -> Iterator[Any]:
        """Yield the file's batches, each checked to hold the texts read in its text column."""
        pyarrow, _ = _pyarrow()
        start = 0
        try:
            for group in range(self._file.num_row_groups):
                for batch in self._file.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
                    end = start + batch.num_rows
                    if batch.column(text_column).to_pylist() != self.texts[start:end]:
                        raise self._changed()
                    yield batch
                    start = end
        except (pyarrow.ArrowException, OSError) as exc:  # pages not where the footer read said
            raise self._changed() from exc

    def _changed(self) -> UsageError:
        return UsageError(
            f"the input {self.path} changed during the run (written to, or replaced), so no "
            "row was written: its rows may no longer be those translated; run the command again"
        )

    def close(self) -> None:
        """Close the file read."""
        self._stream.close()


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    """What tells a file apart, and a change to it: its device and inode, size and mtime."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _sha256(stream: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    stream.seek(0)
    return digest.hexdigest()


def read_parquet(path: str, field: str | None) -> ParquetCorpus:
    """Read the texts of a Parquet file (`ParquetCorpus` says how); refuse it if a row has none.

    Args:
        path: The file: a regular one, which Parquet readers seek in.
        field: The column holding the texts (default ``text``).

    Returns:
        The corpus, to translate and write back; close it when done.

    Raises:
        UsageError: If pyarrow is missing, the file cannot be read or is not Parquet, it
            has no such column, or a row's value there is null, not a string or too long.
    """
    pyarrow, parquet = _pyarrow()
    name = field or DEFAULT_FIELD
    refuse_special("the input", path)  # a pipe cannot be read from its end, nor twice
    try:
        # Unbuffered: read back, the file is read as it is then, not from a buffer of it.
        stream = open(path, "rb", buffering=0)  # noqa: SIM115  # closed by the ParquetCorpus
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        read = os.fstat(stream.fileno())  # before reading: a change meanwhile is one too
        sha256 = _sha256(stream)
        file = parquet.ParquetFile(stream)
        names = file.schema_arrow.names
        if name not in names:
            found = ", ".join(repr(column) for column in names) or "none"
            raise UsageError(
                f"{path} has no column {name!r} (it has {found}); --column names the one "
                "with the text"
            )
        problems = _Problems("row")
        texts: list[str] = []
        row = 0
        for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=[name]):
            kind = batch.schema.field(0).type
            for value in batch.column(0).to_pylist():
                row += 1
                if value is None:
                    problems.add(row, f"the column {name!r} is null")
                elif not isinstance(value, str):
                    problems.add(row, f"the column {name!r} is {kind}, not a string")
                else:
                    problems.check_text(row, value, f"the column {name!r}")
                    texts.append(value)
        problems.raise_any()
    except (pyarrow.ArrowException, OSError) as exc:  # not Parquet, or damaged
        stream.close()
        reason = str(exc).rstrip(".") or type(exc).__name__
        raise UsageError(f"cannot read {path} as Parquet ({reason}); nothing was sent") from exc
    except BaseException:
        stream.close()
        raise
    return ParquetCorpus(path, name, texts, sha256, file, stream, read)
