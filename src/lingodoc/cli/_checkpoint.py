"""The checkpoint of `lingodoc batch`: the finished translations, kept as they come.

The file is JSON Lines, in ASCII (so a line cut short can never split a character):

```text
{"lingodoc_checkpoint": 1, "input_sha256": "...", "source": "en", "target": "de", ...}
{"i": 0, "t": "Hallo Welt"}
{"i": 3, "t": "Danke du"}
```

The first line says which run it belongs to; each further line is one finished translation
(``i``: the text's index in the file, from 0), appended and flushed as its batch completes.
A process killed while appending leaves at most a torn last line, which reading ignores
(and resuming cuts off before it appends). An append that fails (a full disk) is undone,
so the file holds whole lines only, and what it did not take stays queued; Ctrl-C waits
until an append is whole and off the queue. The file is
created with its header whole (written aside, then renamed), so an existing checkpoint
always says whose it is. One run at a time uses it: a run holds ``PATH.lock`` (see `locked`),
and the file itself while it is open.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterator, MutableMapping
from dataclasses import asdict, dataclass
from typing import IO, Any

from lingodoc._signals import ctrl_c_held
from lingodoc.cli._errors import NO_SPACE, CheckpointError, UsageError

try:
    import fcntl
except ImportError:  # Windows: no flock; runs there are not kept off each other's checkpoint
    fcntl = None  # type: ignore[assignment]

VERSION = 1
_MAGIC = "lingodoc_checkpoint"
# What json.loads raises for a line it cannot read: RecursionError for one nested too deeply.
_UNREADABLE = (ValueError, RecursionError)


@dataclass(frozen=True)
class Header:
    """What a checkpoint is of: a run's input and the options that shape its translations."""

    input_sha256: str
    source: str
    target: str
    format: str
    field: str | None
    total: int

    def line(self) -> str:
        """Return the header as the checkpoint's first line (without its line ending)."""
        return json.dumps({_MAGIC: VERSION, **asdict(self)})

    def mismatch(self, other: Header) -> str | None:
        """Say how ``other`` (this run's) differs from this one (the checkpoint's), if it does."""
        if other.input_sha256 != self.input_sha256 or other.total != self.total:
            return "it is of another input (the file changed since, or it is another file)"
        for name, option in (
            ("source", "--from"),
            ("target", "--to"),
            ("format", "--format"),
            ("field", "--field"),
        ):
            theirs, ours = getattr(self, name), getattr(other, name)
            if theirs != ours:
                return f"it was made with {option} {theirs}, not {ours}"
        return None


def _not_regular(name: str, path: str, mode: int) -> UsageError:
    kind = "a directory" if stat.S_ISDIR(mode) else "a named pipe" if stat.S_ISFIFO(mode) else ""
    return UsageError(
        f"{name} {path} is {kind or 'a special file'}, not a regular file: give another path"
    )


def refuse_special(name: str, path: str) -> None:
    """Refuse ``path`` if it is there and is not a regular file (a directory, a named pipe).

    Checked with stat, before anything opens it: opening a named pipe to read waits for a
    writer, forever if none comes; a directory or a device would fail (or be replaced) only
    at the end of the run.

    Args:
        name: What it is to the user, such as ``the checkpoint`` or ``--output``.
        path: The path.

    Raises:
        UsageError: If it is not a regular file.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:  # not there (yet), or out of reach: what uses it says so
        return
    if not stat.S_ISREG(mode):
        raise _not_regular(name, path, mode)


def lock_path(path: str) -> str:
    """Return the lock file of the checkpoint ``path`` (see `locked`): by its real path.

    Named after the file the path leads to, not the path as typed: a second run that names
    the checkpoint through a symlink (to it or to its directory) takes the same lock.
    """
    return f"{os.path.realpath(path)}.lock"


def _flock(fd: int, path: str) -> None:
    """Lock the open file ``fd`` for the run on the checkpoint ``path``, without waiting.

    Raises:
        UsageError: If another run holds it, or the file system has no locks (ENOLCK on
            NFS, EOPNOTSUPP on some SMB or FUSE mounts).
    """
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise UsageError(
            f"another `lingodoc batch` is running with the checkpoint {path}: wait for it "
            "to end, or give this one other files"
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot lock the checkpoint {path}: {exc.strerror or exc}; put it on a local "
            "disk with --checkpoint PATH"
        ) from exc


def _appending(path: str) -> IO[bytes]:
    """Open the checkpoint ``path`` to append, flocked while it is open.

    The lock file (`locked`) keeps out a run that names the checkpoint by the same real
    path; a hard link is another name of the same file, with a real path of its own, so
    the file itself is locked too. Only an existing checkpoint can have such a name, and
    it is locked before anything in it is cut off.

    Raises:
        UsageError: If another run holds it.
        OSError: If it cannot be opened.
    """
    stream = open(path, "ab", buffering=0)  # noqa: SIM115  # closed by the Checkpoint
    try:
        _flock(stream.fileno(), path)
    except BaseException:
        stream.close()
        raise
    return stream


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the lock of the checkpoint ``path`` while the block runs: `lock_path`, flocked.

    Taken without waiting: a second run on the same checkpoint is refused, rather than mix
    its lines with the first's or delete the file under it. The system lets go of the lock
    when the process ends, however it ends, so the file that a killed run leaves behind
    keeps no one out; a run that ends removes it. Without ``fcntl`` (Windows) there is no
    lock.

    Raises:
        UsageError: If another run holds it, or it cannot be made or locked.
    """
    if fcntl is None:
        yield
        return
    lock = lock_path(path)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise UsageError(f"cannot lock the checkpoint {path}: {exc.strerror or exc}") from exc
        try:
            _flock(fd, path)
        except BaseException:
            os.close(fd)
            raise
        # The run that held it may have removed the file between our open and flock: a lock
        # on a file no longer there keeps no one out. Then again, with the file there now.
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # before letting go: a run that opened it meanwhile tries again
        os.close(fd)


def _damaged(path: str, line: int, why: str) -> UsageError:
    return UsageError(
        f"the checkpoint {path} is damaged at line {line} ({why}): delete it to start afresh"
    )


def read(path: str, total: int) -> tuple[dict[str, Any], dict[int, str], int]:
    """Read a checkpoint file.

    Args:
        path: The file.
        total: The number of texts of this run, which every index must be below.

    Returns:
        The header's fields, the translations by index, and the length in bytes of what
        was read whole (a torn last line, if any, starts there).

    Raises:
        UsageError: If it cannot be read, or is not a regular file, or is not a checkpoint,
            or is damaged before its last line.
        FileNotFoundError: If there is no such file.
    """
    try:
        # Not blocking: a named pipe put there since it was checked must not hang the run.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(fd, "rb") as stream:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise _not_regular("the checkpoint", path, mode)
            data = stream.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read the checkpoint {path}: {exc.strerror or exc}") from exc
    whole = data.rfind(b"\n") + 1  # after the last line ending; a torn line follows it
    lines = data[:whole].split(b"\n")[:-1]
    if not lines:
        raise _damaged(path, 1, "no header")
    try:
        header = json.loads(lines[0])
    except _UNREADABLE:
        header = None
    if not isinstance(header, dict) or _MAGIC not in header:
        raise UsageError(f"{path} is not a checkpoint of `lingodoc batch`: move it out of the way")
    if header[_MAGIC] != VERSION:
        raise UsageError(
            f"the checkpoint {path} was written by another version of lingodoc "
            f"(format {header[_MAGIC]!r}): delete it to start afresh"
        )
    done: dict[int, str] = {}
    for number, line in enumerate(lines[1:], 2):
        try:
            entry = json.loads(line)
            index, translation = entry["i"], entry["t"]
        except (*_UNREADABLE, TypeError, KeyError):
            raise _damaged(path, number, "not a translation") from None
        if not (type(index) is int and 0 <= index < total and isinstance(translation, str)):
            raise _damaged(path, number, "not a translation of this input")
        done[index] = translation
    return header, done, whole


class Checkpoint:
    """An open checkpoint file, appended to as translations finish."""

    def __init__(self, path: str, stream: IO[bytes]) -> None:
        self.path = path
        self._stream = stream  # unbuffered: a write that fails leaves nothing to retry at close
        self._torn: OSError | None = None  # why a failed append could not be cut off

    @classmethod
    def create(cls, path: str, header: Header) -> Checkpoint:
        """Create the file with its header (whole, or not at all) and open it to append.

        Raises:
            CheckpointError: If the disk is full.
            UsageError: If it cannot be written otherwise.
        """
        temporary = None
        try:
            # A new file of a name no one can guess (O_EXCL), never one planted there.
            fd, temporary = tempfile.mkstemp(
                dir=os.path.dirname(os.path.abspath(path)),
                prefix=f".{os.path.basename(path)}.",
                suffix=".tmp",
            )
            with open(fd, "w", encoding="ascii", newline="") as stream:
                stream.write(header.line() + "\n")
            os.replace(temporary, path)
            return cls(path, _appending(path))
        except OSError as exc:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            if exc.errno in NO_SPACE:
                raise CheckpointError(f"the checkpoint {path}", exc) from exc
            raise UsageError(f"cannot write the checkpoint {path}: {exc.strerror or exc}") from exc

    @classmethod
    def resume(cls, path: str, header: Header) -> tuple[Checkpoint, dict[int, str]]:
        """Open an existing checkpoint of this run to go on with it.

        Returns:
            The checkpoint, and the translations it holds, by index.

        Raises:
            UsageError: If it is of another run, damaged or unreadable.
            FileNotFoundError: If there is none.
        """
        found, done, whole = read(path, header.total)
        theirs = Header(
            input_sha256=found.get("input_sha256"),  # type: ignore[arg-type]  # compared only
            source=found.get("source"),  # type: ignore[arg-type]
            target=found.get("target"),  # type: ignore[arg-type]
            format=found.get("format"),  # type: ignore[arg-type]
            field=found.get("field"),
            total=found.get("total"),  # type: ignore[arg-type]
        )
        why = theirs.mismatch(header)
        if why:
            raise UsageError(
                f"the checkpoint {path} is not of this run: {why}; run the command it was "
                "made for, or delete it to start afresh"
            )
        stream = None
        try:
            stream = _appending(path)
            stream.truncate(whole)  # a torn last line, cut off before appending
        except OSError as exc:
            if stream is not None:
                stream.close()
            raise UsageError(f"cannot write the checkpoint {path}: {exc.strerror or exc}") from exc
        return cls(path, stream), done

    def append(self, items: list[tuple[int, str]]) -> None:
        """Append finished translations, and hand them to the system at once.

        Flushed, not synced: what is written survives the process being killed (SIGKILL
        included), which is what a checkpoint is for; a crash of the machine may lose the
        last lines, and syncing after every batch would cost more than resending them.

        If the system refuses them (a full disk, a file size limit, an I/O error), what was
        written of them is cut off again, so the file ends with a whole line as before.

        Raises:
            CheckpointError: If they could not be written; none of them is in the file then
                (or, if cutting them off failed too, nothing more is appended after them).
        """
        if not items:
            return
        if self._torn is not None:
            raise self._error(self._torn)
        lines = "".join(f'{{"i": {i}, "t": {json.dumps(t)}}}\n' for i, t in items)
        data = memoryview(lines.encode("ascii"))
        fd = self._stream.fileno()
        try:
            size = os.fstat(fd).st_size
        except OSError as exc:
            raise self._error(exc) from exc
        try:
            while data:  # a write may take part of it only
                data = data[os.write(fd, data) :]
        except BaseException as exc:  # a refusal, or Ctrl-C where it cannot be held back
            try:
                os.ftruncate(fd, size)  # a torn line would make the appends after it damage
            except OSError as cut:
                self._torn = cut
            if isinstance(exc, OSError):
                raise self._error(exc) from exc
            raise

    def _error(self, exc: OSError) -> CheckpointError:
        return CheckpointError(f"the checkpoint {self.path}", exc)

    def close(self) -> None:
        """Close the file (kept)."""
        self._stream.close()

    def delete(self) -> None:
        """Close and remove the file: its run is over."""
        self._stream.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class Finished(MutableMapping[int, str]):
    """The ``done`` mapping given to ``translate_many``: it also queues what is new for the file.

    The SDK stores each translation as its batch completes (``done[i] = t``, from worker
    threads, one batch at a time) and then reports progress; the command's progress callback
    calls `flush`, so each batch is written in one append. Writing from ``__setitem__``
    itself would cost a write per text.

    Args:
        checkpoint: Where to write, or ``None`` to keep them in memory only.
        earlier: The translations of an earlier run (already in the file).
    """

    def __init__(self, checkpoint: Checkpoint | None, earlier: dict[int, str]) -> None:
        self._checkpoint = checkpoint
        self._done = dict(earlier)
        self._new: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def __getitem__(self, index: int) -> str:
        return self._done[index]

    def __setitem__(self, index: int, translation: str) -> None:
        with self._lock:
            if self._done.get(index) == translation:
                return  # stored again (a batch recorded twice): already queued or written
            self._done[index] = translation
            self._new.append((index, translation))

    def __delitem__(self, index: int) -> None:
        with self._lock:
            del self._done[index]

    def __iter__(self) -> Iterator[int]:
        with self._lock:  # a copy: a worker thread may store a translation meanwhile
            return iter(list(self._done))

    def __len__(self) -> int:
        return len(self._done)

    def flush(self) -> None:
        """Write the translations stored since the last flush to the checkpoint, if any.

        Raises:
            CheckpointError: If they could not be written: they stay queued, for the next.
        """
        # Ctrl-C waits until the file and the queue agree: an append cut short would lose
        # its translations from both (the run's end flushes again, so they would be missing).
        with ctrl_c_held():
            with self._lock:
                new = self._new[:]
            if self._checkpoint is not None:
                self._checkpoint.append(new)  # if this raises, they stay queued
            with self._lock:  # written: only now off the queue (more may be queued behind)
                del self._new[: len(new)]

    def kept(self) -> int:
        """Return how many translations the checkpoint holds: all stored but those queued."""
        with self._lock:
            return len(self._done) - len({index for index, _ in self._new})
