"""The ingest spool's store: a bounded, durable FIFO in a SQLite file of the data folder.

Chat that cannot reach Postgres waits here (``memory.ingest``) until it can. Every put is its own
transaction with ``synchronous=FULL`` (SQLite fsyncs the write-ahead log at each commit), so a
message acknowledged as spooled survives a crash of the process or the machine. Calls are short
and local (well under a millisecond on a warm page cache, plus the fsync), so they run on the event
loop: a spool is only written while Postgres is down.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import errors

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spool (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    received_at REAL NOT NULL,
    payload     TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One spooled item, in arrival order."""

    seq: int
    #: wall-clock time (``time.time()``) it was spooled
    received_at: float
    payload: str


class SqliteSpool:
    """A FIFO of text payloads holding at most ``capacity`` entries.

    Parameters
    ----------
    path:
        The SQLite file (created with its folder when missing).
    capacity:
        Entries it holds at most; :meth:`put` refuses more (returns False).
    """

    def __init__(self, path: Path, *, capacity: int) -> None:
        self.path = path
        self.capacity = capacity
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            # a removed entry's text is overwritten, not left in a free page (forget)
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise errors.StoreUnavailable(f"ingest spool {path} cannot be opened: {exc}") from exc
        self._size = int(self._db.execute("SELECT count(*) FROM spool").fetchone()[0])

    def __len__(self) -> int:
        return self._size

    def put(self, payload: str, *, now: float | None = None) -> bool:
        """Append ``payload`` durably; False (nothing written) when the spool is full."""
        if self._size >= self.capacity:
            return False
        with self._wrap("write"):
            self._db.execute(
                "INSERT INTO spool (received_at, payload) VALUES (?, ?)",
                (time.time() if now is None else now, payload),
            )
        self._size += 1
        return True

    def head(self, limit: int) -> list[Entry]:
        """The oldest ``limit`` entries, oldest first."""
        with self._wrap("read"):
            rows = self._db.execute(
                "SELECT seq, received_at, payload FROM spool ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [Entry(int(seq), float(at), str(payload)) for seq, at, payload in rows]

    def remove(self, seqs: list[int]) -> None:
        """Forget entries that reached their destination."""
        if not seqs:
            return
        with self._wrap("remove"):
            self._db.executemany("DELETE FROM spool WHERE seq = ?", [(s,) for s in seqs])
            self._size = int(self._db.execute("SELECT count(*) FROM spool").fetchone()[0])
            if not self._size:  # drained: the write-ahead log's copies of the texts go too
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def oldest_age(self, now: float | None = None) -> float:
        """Seconds the oldest entry has waited (0 when empty)."""
        with self._wrap("read"):
            row = self._db.execute("SELECT min(received_at) FROM spool").fetchone()
        if row is None or row[0] is None:
            return 0.0
        return max(0.0, (time.time() if now is None else now) - float(row[0]))

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def _wrap(self, action: str) -> Iterator[None]:
        """Translate ``sqlite3`` errors (a full disk, a broken file) at the boundary."""
        try:
            yield
        except sqlite3.Error as exc:
            raise errors.StoreUnavailable(
                f"ingest spool {self.path} failed ({action}): {exc}"
            ) from exc
