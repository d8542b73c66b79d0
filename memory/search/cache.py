"""The search cache of one store folder: SQLite FTS5 under ``$PSEUDOCLAUDE_HOME/cache/``.

Derived and disposable. It holds, per card, its stat key (to notice a change), the sha256 of
its bytes (recall's "changed since recalled"), its index line, and the words of its title,
summary, body and filename. ``sync`` brings it up to date with the folder incrementally: only
cards whose stat key changed are read again. A cache that cannot be opened or read (damaged
bytes, a schema of another version, another store's file, a folder or symlink in its place) is
deleted and rebuilt from the cards; one that cannot be made at all (no writable folder) is kept in
memory for the process. Either way one one-line notice is kept in ``notices``. The file is 0600
in a 0700 folder; WAL lets two processes share it. It is never the source of truth: a card's
line comes from its file through ``Store.index_cards``, exactly as the prompt's index gets it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from memory.search.terms import spaced
from memory.store.store import Store, StoreError

__all__ = ["BODY_INDEX_BYTES", "CACHE_VERSION", "CacheRow", "SearchCache", "cache_path"]

log = logging.getLogger(__name__)

CACHE_VERSION = "1"
# A hand-written card may be large; its first 64 KiB are what search reads.
BODY_INDEX_BYTES = 64 * 1024
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards(
    id INTEGER PRIMARY KEY,
    filename TEXT UNIQUE NOT NULL,
    statkey TEXT NOT NULL,
    sha TEXT NOT NULL,
    line TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, summary, body, filename, tokenize='{_TOKENIZER}');
"""
# Column order of the fts table: the head columns (a match there weighs more).
HEAD_COLUMNS = "{title summary filename}"
# bm25 column weights (title, summary, body, filename), tuned on the eval's dev questions.
BM25_WEIGHTS = "3.0, 2.0, 1.0, 2.0"

CacheRow = tuple[int, str, str, str]  # id, filename, sha, line
_T = TypeVar("_T")
_BUSY_S = 5.0


def _busy(e: sqlite3.DatabaseError) -> bool:
    return getattr(e, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED")


def cache_path(home: Path | str, store_dir: Path | str) -> Path:
    """Where the cache of ``store_dir`` lives: one file per store folder (its real path)."""
    digest = hashlib.sha256(os.path.realpath(store_dir).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Path(home) / "cache" / f"search-{digest}.sqlite3"


class SearchCache:
    """One store folder's FTS5 cache. Thread-safe: one connection, one lock."""

    def __init__(self, home: Path | str, store: Store) -> None:
        self.store = store
        self.path = cache_path(home, store.dir)
        self.notices: list[str] = []
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        # The folder's (inode, mtime_ns) at the last sync, when it could be trusted: every write
        # of the app (and of git) renames into the folder, which changes its mtime.
        self._token: tuple[int, int] | None = None
        self._dirty = True
        self._synced = False  # a sync went through in this process (a search now is no first build)
        # True once no file could be used: this process keeps the cache in memory.
        self.in_memory = False

    # -- the connection ------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        target = ":memory:" if self.in_memory else self._prepare_file()
        db = sqlite3.connect(target, timeout=5.0, check_same_thread=False, isolation_level=None)
        try:
            if not self.in_memory:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            want = {"version": CACHE_VERSION, "store": os.path.realpath(self.store.dir)}
            # OR IGNORE: another process may be making the same file at this moment.
            db.executemany("INSERT OR IGNORE INTO meta(k, v) VALUES (?, ?)", list(want.items()))
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            if meta != want:
                raise sqlite3.DatabaseError(
                    f"made for {meta.get('store', '?')} (version {meta.get('version', '?')})"
                )
            # Read every page of the cards once: damaged bytes show here rather than mid-search
            # (a damaged page of the words shows on first use; ``_run`` rebuilds then too).
            db.execute("SELECT count(*), max(length(line)) FROM cards").fetchone()
            db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'pseudoclaude'").fetchone()
        except BaseException:
            db.close()
            raise
        self._db = db
        return db

    def _prepare_file(self) -> str:
        """The cache file, made private (0600 in a 0700 folder) before SQLite opens it; a
        symlink, folder or other non-file in its place is reported as damage (then deleted)."""
        folder = self.path.parent
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with contextlib.suppress(OSError):
            if stat.S_IMODE(os.lstat(folder).st_mode) != 0o700 and not os.path.islink(folder):
                os.chmod(folder, 0o700)
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise sqlite3.DatabaseError("not a regular file")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
                os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._token = None
            self._dirty = True
            self._synced = False

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = f"{self.path}{suffix}"
            with contextlib.suppress(OSError):
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)

    def _discard(self, why: str) -> None:
        """Delete a cache that cannot be used; the next use rebuilds it from the cards."""
        self.close()
        self._remove_files()
        self._notice(f"the memory search cache {self.path} was unreadable ({why}); rebuilt from the cards")

    def _fall_back(self, why: str) -> None:
        """No usable file at all (a read-only folder, a full disk): keep the cache in memory
        for this process; search still works, rebuilt once per process."""
        self.close()
        self.in_memory = True
        self._notice(
            f"the memory search cache {self.path} cannot be used ({why}); searching from memory instead"
        )

    def _notice(self, note: str) -> None:
        note = " ".join(note.split())
        log.warning("%s", note)
        self.notices.append(note)

    def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn`` on the up-to-date connection. A damaged cache is deleted and rebuilt once; one
        that still cannot be used moves to memory. SQLite busy (another process writing; WAL
        gives up at once in some cases, such as two first opens switching the journal mode) is
        tried again for up to ``_BUSY_S``, then raised as it is: nothing is damaged."""
        with self._lock:
            damaged = 0
            deadline = time.monotonic() + _BUSY_S
            while True:
                try:
                    db = self._connect()
                    self._sync(db)
                    return fn(db)
                except sqlite3.DatabaseError as e:
                    if _busy(e) and not self.in_memory and time.monotonic() < deadline:
                        time.sleep(0.01)
                        continue
                    damaged += 1
                    if self.in_memory or _busy(e) or damaged == 3:
                        raise
                    why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
                    if damaged == 1:
                        self._discard(why)
                    else:
                        self._fall_back(why)
                except OSError as e:
                    if self.in_memory:
                        raise
                    self._fall_back(e.strerror or type(e).__name__)

    # -- keeping it up to date -----------------------------------------------------------------

    def mark_changed(self) -> None:
        """A card of this folder may have changed in place (the watcher saw it): look again."""
        self._dirty = True

    def _folder_token(self) -> tuple[tuple[int, int] | None, bool]:
        """(the folder's token, whether it can be trusted). The kernel stamps mtimes from a
        coarse clock: a write in the same tick as this look could leave the mtime as it is, so
        an mtime within 50 ms of now is looked at again next time."""
        now = time.time_ns()
        try:
            st = os.lstat(self.store.dir)
        except (FileNotFoundError, NotADirectoryError):
            return None, True
        return (st.st_ino, st.st_mtime_ns), st.st_mtime_ns < now - 50_000_000

    def _sync(self, db: sqlite3.Connection) -> None:
        token, settled = self._folder_token()
        if not self._dirty and token is not None and token == self._token:
            return
        # Cleared before the listing: a mark_changed() meanwhile still counts. The token is
        # taken only once the update is through, so a failed build is tried again.
        self._dirty = False
        self._update(db, self._listing())
        self._dirty = self._dirty or not settled
        self._token = token
        self._synced = True

    def _listing(self) -> dict[str, tuple[str, str, object]]:
        """filename -> (stat key, index line, front matter) of every card a prompt could get."""
        return {
            name: (":".join(map(str, key)), line, meta)
            for name, line, _, meta, key in self.store.keyed_cards()
            if line is not None and meta is not None
        }

    def _update(self, db: sqlite3.Connection, listing: dict[str, tuple[str, str, object]]) -> None:
        # Compared inside the write transaction: another process may have indexed the same
        # cards since this one last looked (its rows are then kept, not inserted twice).
        db.execute("BEGIN IMMEDIATE")
        try:
            have = {
                name: (rid, key) for rid, name, key in db.execute("SELECT id, filename, statkey FROM cards")
            }
            gone = [have[name][0] for name in have if name not in listing]
            changed = [name for name, (key, _, _) in listing.items() if have.get(name, (0, ""))[1] != key]
            for rid in gone:
                db.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
                db.execute("DELETE FROM cards WHERE id = ?", (rid,))
            for name in changed:
                self._index_card(db, name, listing[name], have.get(name, (None, ""))[0])
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    def _index_card(
        self, db: sqlite3.Connection, name: str, entry: tuple[str, str, object], rid: int | None
    ) -> None:
        key, line, _ = entry
        try:
            note = self.store.read_note(name)
        except (StoreError, FileNotFoundError, OSError):
            if rid is not None:
                db.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
                db.execute("DELETE FROM cards WHERE id = ?", (rid,))
            return
        body = note.body[:BODY_INDEX_BYTES]
        words = (
            spaced(note.meta.title),
            spaced(note.meta.summary),
            spaced(body),
            spaced(name.removesuffix(".md").replace("_", " ").replace("-", " ")),
        )
        if rid is None:
            cur = db.execute(
                "INSERT INTO cards(filename, statkey, sha, line) VALUES (?, ?, ?, ?)",
                (name, key, note.sha256, line),
            )
            rid = int(cur.lastrowid or 0)
        else:
            db.execute(
                "UPDATE cards SET statkey = ?, sha = ?, line = ? WHERE id = ?", (key, note.sha256, line, rid)
            )
            db.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
        db.execute(
            "INSERT INTO fts(rowid, title, summary, body, filename) VALUES (?, ?, ?, ?, ?)", (rid, *words)
        )

    def ready_within(self, wait: float) -> bool:
        """Whether a search now would be quick: this process has synced the cache before (no
        first build to wait for) and nobody holds it for more than ``wait`` seconds."""
        if not self._lock.acquire(timeout=max(0.0, wait)):
            return False
        try:
            return self._synced
        finally:
            self._lock.release()

    def rebuild(self) -> int:
        """Drop the cache and index every card again; returns the number of cards indexed."""
        with self._lock:
            self.close()
            if not self.in_memory:
                self._remove_files()
            return self.count()

    # -- reading -------------------------------------------------------------------------------

    def count(self) -> int:
        return self._run(lambda db: int(db.execute("SELECT count(*) FROM cards").fetchone()[0]))

    def rows_matching(self, match: str, limit: int) -> list[int]:
        """The ids of the cards an FTS5 expression matches (at most ``limit``)."""
        sql = "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?"
        return self._run(lambda db: [r for (r,) in db.execute(sql, (match, limit))])

    def term_rows(self, terms: Iterable[str], limit: int) -> tuple[int, list[tuple[list[int], list[int]]]]:
        """The card count, and per FTS5 term expression: (ids of cards holding it anywhere, up
        to ``limit`` + 1; ids holding it in the title, summary or filename). One lock, one sync."""
        wanted = list(terms)

        def run(db: sqlite3.Connection) -> tuple[int, list[tuple[list[int], list[int]]]]:
            out: list[tuple[list[int], list[int]]] = []
            n = int(db.execute("SELECT count(*) FROM cards").fetchone()[0])
            for term in wanted:
                rows = [
                    r
                    for (r,) in db.execute(
                        "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?", (term, limit + 1)
                    )
                ]
                head: list[int] = []
                if rows and len(rows) <= limit:
                    sql = "SELECT rowid FROM fts WHERE fts MATCH ?"
                    head = [r for (r,) in db.execute(sql, (f"{HEAD_COLUMNS} : {term}",))]
                out.append((rows, head))
            return n, out

        return self._run(run)

    def bm25(self, match: str, limit: int) -> list[tuple[int, float]]:
        """(id, score) best first by FTS5's bm25 (term frequency, card length), a match in the
        title weighing three times one in the body, in the summary or filename twice; the score
        is bm25's negated (higher is better)."""
        sql = f"SELECT rowid, -bm25(fts, {BM25_WEIGHTS}) FROM fts WHERE fts MATCH ? ORDER BY 2 DESC LIMIT ?"
        return self._run(lambda db: [(int(r), float(s)) for r, s in db.execute(sql, (match, limit))])

    def _chunked(self, sql: str, keys: Iterable[object]) -> list[tuple[Any, ...]]:
        """``sql`` (with one ``{marks}``) over ``keys`` 500 at a time, in one sync."""
        wanted = list(dict.fromkeys(keys))

        def run(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
            out: list[tuple[Any, ...]] = []
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                out.extend(db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk).fetchall())
            return out

        return self._run(run)

    def rows(self, ids: Iterable[int]) -> dict[int, CacheRow]:
        """id -> (id, filename, sha, index line) of the given cards."""
        got = self._chunked("SELECT id, filename, sha, line FROM cards WHERE id IN ({marks})", ids)
        return {int(r[0]): (int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in got}

    def ids_of(self, filenames: Iterable[str]) -> dict[str, int]:
        got = self._chunked("SELECT id, filename FROM cards WHERE filename IN ({marks})", filenames)
        return {str(r[1]): int(r[0]) for r in got}

    def texts(self, ids: Iterable[int]) -> dict[int, tuple[str, str, str]]:
        """id -> (title, summary, body) as indexed (CJK spaced), for consolidation's clusters."""
        got = self._chunked("SELECT rowid, title, summary, body FROM fts WHERE rowid IN ({marks})", ids)
        return {int(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in got}
