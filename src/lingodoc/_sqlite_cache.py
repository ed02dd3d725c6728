"""`SQLiteCache`: the built-in translation cache, one SQLite file (the standard library's).

Each process has one connection, which its threads take in turn (a lookup or a store is
short); the file is in WAL mode with a busy timeout, so the processes' readers never wait
and their writers wait their turn. A connection made before a ``fork`` is never used nor
closed in the child: SQLite forbids it.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import sqlite3
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, TypeVar

from lingodoc import _clock, _validation
from lingodoc._constants import CACHE_APPLICATION_ID
from lingodoc._exceptions import ConfigurationError
from lingodoc._logging import logger

T = TypeVar("T")

_TABLE = "lingodoc_translations"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (namespace TEXT NOT NULL, key TEXT NOT NULL, "
    "translation TEXT NOT NULL, stored REAL NOT NULL, PRIMARY KEY (namespace, key)) "
    "WITHOUT ROWID"
)
# Keys per query: below the 999 variables of SQLite before 3.32.
_CHUNK = 500
_SWEEP_OLDEST = (
    f"DELETE FROM {_TABLE} WHERE (namespace, key) IN (SELECT namespace, key FROM {_TABLE} "
    "{} ORDER BY stored LIMIT ?)"
)
# Made by a file's first sweep (none without limits): its oldest rows, the others left unread.
# max_age is a namespace's own: its sweep deletes no other namespace's entries.
_AGE_INDEX = f"CREATE INDEX IF NOT EXISTS lingodoc_aged ON {_TABLE} (namespace, stored)"
_EXPIRED = _SWEEP_OLDEST.format("WHERE namespace = ? AND stored < ?")
_INDEX = f"CREATE INDEX IF NOT EXISTS lingodoc_stored ON {_TABLE} (stored)"
_OLDEST = _SWEEP_OLDEST.format("")
# Rows a sweep deletes at most, beyond as many as the store brings: bounded work per store.
_SWEEP = 200
_BUSY_WAIT = 2_147_483  # seconds, 24 days: SQLite's int of ms; past it, no wait at all


class CacheStats(NamedTuple):
    """What an `SQLiteCache` file holds, every namespace included.

    Attributes:
        entries: Translations stored.
        namespaces: Distinct namespaces among them (``""``, no namespace, counts as one).
        oldest: When the oldest was stored (timezone-aware); ``None`` if empty.
        newest: When the newest was stored; ``None`` if empty.
        size: Bytes on disk, its ``-wal`` file included.
    """

    entries: int
    namespaces: int
    oldest: datetime | None
    newest: datetime | None
    size: int


class _File:
    """The cache's file and this process's connection to it, used by one thread at a time."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path, self._timeout = path, timeout
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None  # of the file connected to
        self._size = 0  # its size when last seen
        self._logs: tuple[tuple[int, int] | None, ...] = (None, None)  # its -wal and -shm
        with _FILES_LOCK:
            _FILES.add(self)

    def forked(self) -> None:
        self._lock = threading.Lock()  # the parent's may have been held at the fork
        if self._connection is not None:
            _INHERITED.append(self._connection)  # never used nor closed: SQLite forbids it
            self._connection = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def run(self, step: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``step`` on the connection; a damaged file is moved aside and ``step`` rerun."""
        with self._lock:
            try:
                return step(self._connected())
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:  # locked, busy, full disk...
                    raise
                self._move_aside(exc)
            return step(self._connected())

    def rows(self, query: str, values: list[Any]) -> list[Any]:
        return self.run(lambda connection: connection.execute(query, values).fetchall())

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _connected(self) -> sqlite3.Connection:
        # Never a descriptor of our own on the file: closing one would drop the locks
        # SQLite holds on it (POSIX locks are the process's), so os.stat only.
        if self._connection is not None:
            status = _status(self.path)  # None: deleted since
            if status is not None and (status.st_dev, status.st_ino) == self._identity:
                seen, self._size = self._size, status.st_size
                if status.st_size >= seen:
                    return self._connection
                # Cut short, or VACUUMed by `clear` (in any process): checked as it is opened
                # again, SQLite's cache of its pages dropped.
                self._drop()
            else:
                self._drop()  # the file was deleted or replaced since
                # SQLite finds a log by its name: ours, left at the path, holds the gone file's
                # pages, which a new file would take for its own (unless others made new ones).
                for suffix, identity in zip(("-wal", "-shm"), self._logs, strict=True):
                    if identity is not None and _identity(self.path + suffix) == identity:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(self.path + suffix)
        self._connection = self._open()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        """Connect to the file, made if missing; refuse any but a lingodoc cache of this user."""
        try:
            try:
                self.check()
            except FileNotFoundError:
                self._make()
                self.check()  # what is at the path now, ours or put there meanwhile
        except (OSError, sqlite3.Error, ValueError) as exc:  # ValueError: a NUL, a surrogate
            # An OSError's reason only: its file may be _make's temporary one, not the user's.
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            missing = isinstance(exc, FileNotFoundError)
            raise ConfigurationError(
                f"cannot open the cache {self.path!r}: {reason}",
                hint=f"make its folder {os.path.dirname(self.path)!r} first" if missing else None,
            ) from exc
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        """Connect to the file, checked already: a lingodoc cache, or an empty file made one."""
        # Used by one thread at a time (the lock), whichever it is.
        connection = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            status = os.stat(self.path)
            self._identity, self._size = (status.st_dev, status.st_ino), status.st_size
            # Read before anything is written: another program's file is left as it was.
            application_id = connection.execute("PRAGMA application_id").fetchone()[0]
            ours = application_id == CACHE_APPLICATION_ID
            if not ours:  # a view, an index, a user_version: another program's too
                names = connection.execute("SELECT name FROM sqlite_master").fetchall()
                (version,) = connection.execute("PRAGMA user_version").fetchone()
                if application_id or version or any(name != _TABLE for (name,) in names):
                    raise _refused(self.path, "another program's database")
            elif (checked := connection.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
                # Damage SQLite would meet only on the pages it reads: looked for once a
                # connection (some 40 ms for 200,000 entries), so no run goes on with it.
                raise sqlite3.DatabaseError(f"the file is damaged: {checked}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")  # WAL: a crash loses no commit
            # Keys are digests, spread over the whole file: a connection that lives long
            # keeps up to 32 MiB of its pages (some 200,000 entries) rather than 2 MiB.
            connection.execute("PRAGMA cache_size = -32768")
            # A store of 1,000 spread keys writes most pages: folded back after each (at 1,000
            # pages) it doubled a first run's cost. 10,000 (~40 MiB of -wal), then 16 MiB.
            connection.execute("PRAGMA wal_autocheckpoint = 10000")
            connection.execute(f"PRAGMA journal_size_limit = {16 << 20}")
            if not ours:
                with _transaction(connection):
                    connection.execute(_SCHEMA)
                    connection.execute(f"PRAGMA application_id = {CACHE_APPLICATION_ID}")
            self._logs = _identity(self.path + "-wal"), _identity(self.path + "-shm")
        except BaseException:
            connection.close()
            raise
        return connection

    def check(self, *, change: bool = True) -> None:
        """Refuse a file that is not this user's SQLite file; ``change``: make a cache private."""
        status = os.lstat(self.path)
        if not stat.S_ISREG(status.st_mode):  # /dev/null, a pipe: never read
            link = stat.S_ISLNK(status.st_mode)  # dangling or not: private, as ssh's keys are
            raise _refused(self.path, "a symbolic link" if link else "not a regular file")
        if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
            raise _refused(self.path, f"a file of another user, uid {status.st_uid}")
        # Its header not read under a connection of ours, a cache then: see _connected.
        identity = status.st_dev, status.st_ino
        with _FILES_LOCK:
            shared = any(file._connection and file._identity == identity for file in _FILES)
        if status.st_size and not shared:
            descriptor = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(descriptor, "rb") as file:
                header = file.read(100)  # SQLite's header
            if not header.startswith(b"SQLite format 3\x00"):  # a CSV, a text: never moved
                raise _refused(self.path, "not an SQLite file")
            if header[68:72] != CACHE_APPLICATION_ID.to_bytes(4, "big"):
                return  # another program's or a damaged one, as SQLite finds: not touched here
        if change:
            effective = os.access in os.supports_effective_ids  # the ids the owner check uses
            if not os.access(self.path, os.W_OK, effective_ids=effective):  # else read-only, unsaid
                raise PermissionError(errno.EACCES, "the file may not be written", self.path)
            _private(self.path)

    def _make(self) -> None:
        """Make a new cache at the path, set up under a temporary name first: never half-made.

        Processes setting up one file cannot wait for each other's switch to WAL ("database is
        locked"). An empty file at the path is set up in place: to replace a file others may
        have opened could pair their log files with another database.
        """
        # A -wal with pages (past its 32-byte header) left by a deleted database: SQLite would
        # read them into the new one. A -shm is rebuilt; an empty -wal holds nothing.
        wal, log = self.path + "-wal", _status(self.path + "-wal")
        if log and log.st_size > 32 and not os.path.lexists(self.path):  # else made meanwhile
            raise ConfigurationError(
                f"cannot make the cache {self.path!r}: {wal!r} is there without its database, "
                "and SQLite would read it into the new one",
                hint=f"remove {wal!r} if a cache there was deleted, or give the cache another path",
            )
        folder, name = os.path.split(self.path)
        descriptor, temporary = tempfile.mkstemp(prefix=f"{name}.", suffix=".new", dir=folder)
        os.close(descriptor)  # made 0600, which its -wal and -shm files take
        try:
            _File(temporary, self._timeout)._connect().close()  # set up as any cache is
            try:
                os.link(temporary, self.path)
            except FileExistsError:
                pass  # made meanwhile by another process: theirs is used
            except OSError:  # no hard links on this file system (FAT): set up in place
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        finally:  # an interrupt included: no temporary file is left behind
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary + suffix)

    def _move_aside(self, error: sqlite3.DatabaseError) -> None:
        """Move the damaged file aside, unless another process did, for a new one to start."""
        self._drop()
        if _identity(self.path) != self._identity:
            return  # moved or replaced already
        aside = f"{self.path}.damaged-{time.time_ns()}-{os.getpid()}"  # never one there
        # Its log files first: a process opening the path in between must not pair a new
        # file with the damaged one's log.
        for suffix in ("-wal", "-shm", ""):
            with contextlib.suppress(FileNotFoundError):
                os.replace(self.path + suffix, aside + suffix)
        logger.warning(
            "the translation cache %s is damaged (%s): moved aside to %s; a new cache is started",
            self.path, error, aside,
        )  # fmt: skip


# Every _File of this process, told when it forks; the connections of a parent, kept.
_FILES: weakref.WeakSet[_File] = weakref.WeakSet()
_FILES_LOCK = threading.Lock()  # a thread adding to _FILES would fail another's reading it
_INHERITED: list[sqlite3.Connection] = []


def _forked() -> None:
    global _FILES_LOCK
    _FILES_LOCK = threading.Lock()  # the parent's may have been held at the fork
    for file in list(_FILES):
        file.forked()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def _stats(connection: sqlite3.Connection, path: str) -> CacheStats:
    counts = "count(*), count(DISTINCT namespace), min(stored), max(stored)"
    entries, namespaces, *stored = connection.execute(f"SELECT {counts} FROM {_TABLE}").fetchone()
    oldest, newest = map(_moment, stored)
    size = sum(status.st_size for status in map(_status, (path, path + "-wal")) if status)
    return CacheStats(entries, namespaces, oldest, newest, size)


def _moment(stored: object) -> datetime | None:
    """When an entry was stored; ``None`` if no entry, or not a time (a row edited by hand)."""
    try:
        return datetime.fromtimestamp(stored, timezone.utc)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _refused(path: str, what: str) -> ConfigurationError:
    return ConfigurationError(
        f"{path!r} cannot be the cache ({what}, left as it is); give the cache a path of its own"
    )


def _private(path: str) -> None:
    """Make the cache and its -wal and -shm files readable and writable by their owner alone."""
    loose = []
    for name in (path, path + "-wal", path + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            status = os.lstat(name)
            if stat.S_ISREG(status.st_mode) and status.st_mode & 0o077:
                os.chmod(name, 0o600)
                loose.append(f"{name} ({stat.S_IMODE(status.st_mode):04o})")
    if loose:  # a warning: the user's own files changed, said where it is seen by default
        logger.warning("the translation cache was open to others, made 0600: %s", ", ".join(loose))


def _status(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:  # none there
        return None


def _identity(path: str) -> tuple[int, int] | None:
    status = _status(path)
    return None if status is None else (status.st_dev, status.st_ino)


class SQLiteCache(contextlib.AbstractContextManager["SQLiteCache", None]):
    """A translation cache in one SQLite file, for one machine: pass it as ``cache=``.

    Many threads and processes may use one file at once; a crash, even mid-write, leaves it
    usable. The file, its ``-wal`` and ``-shm`` are the owner's alone (``0600``; made so, with
    a warning, if not): translations can be private. A damaged lingodoc cache is moved aside,
    one warning naming both paths, and a new one started; any other file is refused, untouched.

    With a limit, the file stays its size: opening it and each store delete up to a few
    hundred of the oldest entries past it, whose space SQLite reuses.

    Args:
        path: The file; created if missing.
        namespace: Kept apart from the other namespaces of the file: an account, a
            workspace (its glossaries may differ), or a version to start afresh.
        max_age: Seconds after which an entry of this namespace is a miss (sent, then
            stored again), then deleted; ``None``: entries never expire.
        max_entries: Entries the file keeps at most, every namespace's, the oldest
            stored deleted first; ``None``: no limit.
        timeout: Seconds a write waits for another's to end before it gives up (the
            call then goes on without storing).

    Raises:
        ConfigurationError: If ``path`` is not an SQLite file (a CSV, a text), another
            program's database, a symbolic link, another user's file, not a regular file,
            or cannot be opened or created (then its ``__cause__``, an ``OSError`` or
            ``sqlite3.Error``, says why: a full disk, a lock held too long...).
        InvalidArgumentType: If an argument has the wrong type.
        InvalidArgument: If ``max_age``, ``max_entries`` or ``timeout`` is not positive, or
            is infinite (``timeout``: longer than 2,147,483 seconds, SQLite's longest wait).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str | None = None,
        max_age: float | None = None,
        max_entries: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise _validation.wrong_type("path", "a str or os.PathLike", path)
        if os.fspath(path) == ":memory:":  # SQLite's name for a database in memory
            raise ConfigurationError(
                "SQLiteCache keeps its translations in a file: give it a path, not ':memory:'",
                hint="for a cache in memory, pass a store of your own (DictCache, caching guide)",
            )
        try:
            # Absolute: a process that changes its directory later (a daemon, a forked worker)
            # opens the same file again, not another one. Joined, not normalised: "link/.."
            # stays where the file system leads it.
            self.path: str = (
                os.fspath(path) if os.path.isabs(path) else os.path.join(os.getcwd(), path)
            )
            """The file, as an absolute path."""
        except FileNotFoundError:  # os.getcwd(): the working directory was deleted
            raise ConfigurationError(
                f"cannot open the cache {os.fspath(path)!r}: the working directory is gone",
                hint="give the cache an absolute path",
            ) from None
        self.namespace = _validation.optional(namespace, "namespace", str) or ""
        """The namespace of this cache's entries (``""``: none)."""
        self.max_age: float | None = (
            None if max_age is None else _validation.seconds(max_age, "max_age")
        )
        """Seconds after which an entry is a miss; ``None``: never."""
        self.max_entries: int | None = (
            None if max_entries is None else _validation.count(max_entries, "max_entries")
        )
        """Entries the file keeps at most; ``None``: no limit."""
        # The entries when this process last stored, with its connection and PRAGMA
        # data_version then: while they hold, no other connection has written since.
        self._counted: tuple[sqlite3.Connection, int, int] | None = None
        self._file = _File(self.path, _validation.seconds(timeout, "timeout", most=_BUSY_WAIT))
        weakref.finalize(self, self._file.close)
        try:
            self._file.run(lambda connection: self._store(connection, []))  # and sweep
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open the cache {self.path!r}: {exc}") from exc

    def __repr__(self) -> str:
        return (
            f"SQLiteCache({self.path!r}, namespace={self.namespace or None!r}, "
            f"max_age={self.max_age!r}, max_entries={self.max_entries!r})"
        )

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; a later lookup or store opens it again."""
        self._file.close()

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]:
        """Return the translations stored for ``keys`` (one query per 500 keys).

        Args:
            keys: Cache keys.

        Returns:
            The translations found, by key; a key not found, or older than
            ``max_age``, is left out.

        Raises:
            sqlite3.Error: If the file cannot be read (the client logs it and sends).
        """
        found: dict[str, str] = {}
        since = -math.inf if self.max_age is None else _clock.current().time() - self.max_age
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            query = (
                f"SELECT key, translation FROM {_TABLE} WHERE namespace = ? AND stored >= ? "
                f"AND key IN ({','.join('?' * len(chunk))})"
            )
            found.update(self._file.rows(query, [self.namespace, since, *chunk]))
        return found

    def set_many(self, items: Mapping[str, str]) -> None:
        """Store ``items`` in one transaction, replacing what the keys held.

        Args:
            items: Translations by cache key.

        Raises:
            sqlite3.Error: If the file cannot be written (the client logs it).
        """
        if not items:
            return
        now = _clock.current().time()
        rows = [(self.namespace, key, text, now) for key, text in items.items()]
        self._file.run(lambda connection: self._store(connection, rows))

    def _store(self, connection: sqlite3.Connection, rows: list[Any]) -> None:
        """Store ``rows``, and delete up to a few hundred of the oldest entries past a limit."""
        if not rows and self.max_age is None and self.max_entries is None:
            return  # opening, with nothing to write
        counted = None
        with _transaction(connection):
            insert = f"INSERT OR IGNORE INTO {_TABLE} VALUES (?, ?, ?, ?)"
            entries = connection.executemany(insert, rows).rowcount  # the new rows
            if entries < len(rows):  # some keys were there: their rows replaced
                connection.executemany(insert.replace("IGNORE", "REPLACE"), rows)
            most = len(rows) + _SWEEP  # bounded work per store
            if self.max_age is not None:
                connection.execute(_AGE_INDEX)
                since = _clock.current().time() - self.max_age
                entries -= connection.execute(_EXPIRED, [self.namespace, since, most]).rowcount
            if self.max_entries is not None:
                connection.execute(_INDEX)
                (version,) = connection.execute("PRAGMA data_version").fetchone()
                if self._counted is not None and self._counted[:2] == (connection, version):
                    entries += self._counted[2]
                else:  # opened since, or another connection wrote: counted (25 ms a million)
                    (entries,) = connection.execute(f"SELECT count(*) FROM {_TABLE}").fetchone()
                if (excess := min(entries - self.max_entries, most)) > 0:
                    entries -= connection.execute(_OLDEST, [excess]).rowcount
                counted = connection, version, entries
        self._counted = counted  # once committed

    @staticmethod
    def read_stats(path: str | os.PathLike[str]) -> CacheStats:
        """Return what the cache file at ``path`` holds, only reading it (``cache stats``).

        Unlike opening an `SQLiteCache`, this never changes the file: a damaged cache is
        not moved aside, nor is the file made private.

        Args:
            path: The cache file.

        Returns:
            Its entries, namespaces, oldest and newest entries, and size on disk.

        Raises:
            ConfigurationError: If there is no file, or it is a symbolic link, another
                user's file or not a regular file.
            sqlite3.Error: If it cannot be read: damaged, not a cache, or locked too long.
        """
        path = os.fspath(path)
        try:
            _File(path, 0).check(change=False)
        except (OSError, ValueError) as exc:  # none there, a NUL: as opening says them
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigurationError(f"cannot read the cache {path!r}: {reason}") from exc
        # Not mode=ro, which leaves the -wal and -shm it makes: the last connection closed
        # removes them. query_only: nothing of ours is written.
        with contextlib.closing(sqlite3.connect(path, timeout=10.0)) as connection:
            connection.execute("PRAGMA query_only = 1")
            return _stats(connection, path)

    def stats(self) -> CacheStats:
        """Return what the file holds, every namespace included.

        Returns:
            Its entries, namespaces, oldest and newest entries, and size on disk.

        Raises:
            sqlite3.Error: If the file cannot be read.
        """
        return self._file.run(lambda connection: _stats(connection, self.path))

    def clear(self, *, older_than: float | None = None) -> int:
        """Delete entries of every namespace, and give their space back to the disk.

        Args:
            older_than: Only those stored more than this many seconds ago; ``None``: all.

        Returns:
            How many were deleted.

        Raises:
            InvalidArgumentType: If ``older_than`` is not a number.
            InvalidArgument: If ``older_than`` is negative or infinite.
            sqlite3.Error: If the file cannot be written.
        """
        since = math.inf
        if older_than is not None:
            age = _validation.seconds(older_than, "older_than", zero=True)
            since = _clock.current().time() - age

        def delete(connection: sqlite3.Connection) -> int:
            self._counted = None  # a write of its own, which data_version does not show
            with _transaction(connection):
                query = f"DELETE FROM {_TABLE} WHERE stored < ?"
                deleted: int = connection.execute(query, [since]).rowcount
            connection.execute("VACUUM")
            return deleted

        return self._file.run(delete)


@contextlib.contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[None]:
    # BEGIN IMMEDIATE: the write lock at once, waited for under the busy timeout.
    connection.execute("BEGIN IMMEDIATE")
    with connection:  # COMMIT, or ROLLBACK on any exception, an interrupt included
        yield
