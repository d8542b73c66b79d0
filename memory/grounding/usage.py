"""How often the model read each card: per user, under ``$PSEUDOCLAUDE_HOME``, never in a card.

The project store is shared through git: a read must not change a card file. The counts live in
one SQLite database of the user's (``usage/usage.sqlite3``), keyed by the store folder's real
path and the card's filename, written by every process of the user (SQLite's own locking; WAL so
readers never wait on a writer). A card renamed by a move starts again at zero.

The counts are a signal, not data a person wrote: a database that cannot be opened or is damaged
is set aside and started afresh, and no failure here ever fails a read or a turn.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from memory.model import rfc3339, utcnow

__all__ = ["CardUse", "UsageLog", "use_text"]

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reads (
    store TEXT NOT NULL,
    filename TEXT NOT NULL,
    count INTEGER NOT NULL,
    last TEXT NOT NULL,
    PRIMARY KEY (store, filename)
) WITHOUT ROWID
"""


class CardUse(BaseModel):
    reads: int = 0
    last_read: str = ""  # RFC 3339 UTC, "" when never read


class UsageLog:
    """The usage counts of one user (``home`` = ``$PSEUDOCLAUDE_HOME``)."""

    def __init__(self, home: Path | str) -> None:
        self.path = Path(home) / "usage" / "usage.sqlite3"
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = not self.path.exists()
        con = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        if fresh:
            os.chmod(self.path, 0o600)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(_SCHEMA)
        return con

    def _run(self, fn_name: str, sql: str, params: Iterable[object] = ()) -> list[tuple[object, ...]]:
        """One statement; a damaged database is set aside once and the statement retried."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    con = self._connect()
                    try:
                        return con.execute(sql, tuple(params)).fetchall()
                    finally:
                        con.close()
                except sqlite3.DatabaseError as e:
                    # Busy, read-only, no space: not damage; the count is skipped, nothing moved.
                    if attempt == 2 or isinstance(e, sqlite3.OperationalError):
                        log.warning("memory usage counts: %s failed: %s", fn_name, e)
                        return []
                    self._set_aside(e)
                except OSError as e:
                    log.warning("memory usage counts: %s failed: %s", fn_name, e)
                    return []
        return []

    def _set_aside(self, error: Exception) -> None:
        log.warning("memory usage counts at %s are damaged (%s); starting afresh", self.path, error)
        for suffix in ("", "-wal", "-shm"):
            p = Path(f"{self.path}{suffix}")
            try:
                if p.exists():
                    os.replace(p, f"{p}.damaged")
            except OSError:
                pass

    def record_read(self, store_dir: Path | str, filename: str, when: _dt.datetime | None = None) -> None:
        stamp = rfc3339(when or utcnow())
        self._run(
            "record_read",
            "INSERT INTO reads (store, filename, count, last) VALUES (?, ?, 1, ?) "
            "ON CONFLICT (store, filename) DO UPDATE SET count = count + 1, last = excluded.last",
            (_key(store_dir), filename, stamp),
        )

    def counts(self, store_dir: Path | str) -> dict[str, CardUse]:
        """filename -> its use, for the cards of one store that were ever read."""
        rows = self._run(
            "counts", "SELECT filename, count, last FROM reads WHERE store = ?", (_key(store_dir),)
        )
        return {str(f): CardUse(reads=int(c), last_read=str(t)) for f, c, t in rows}  # type: ignore[call-overload]


def _key(store_dir: Path | str) -> str:
    return os.path.realpath(store_dir)


def use_text(use: CardUse | None, now: _dt.datetime | None = None) -> str:
    """``read 12× · last 3 days ago``, or ``never read``."""
    if use is None or use.reads <= 0:
        return "never read"
    return f"read {use.reads}× · last {_ago(use.last_read, now or utcnow())}"


def _ago(stamp: str, now: _dt.datetime) -> str:
    try:
        then = _dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    except ValueError:
        return "at an unknown time"
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"
