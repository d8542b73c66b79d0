"""One store folder: its notes and its ``MEMORY.md``, read side.

Writes never happen here directly: the transaction plans them with the helpers below and
applies them through the filesystem layer, so both stores change together or not at all.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from memory.constants import INDEX_FILE, MAX_CONTENT_BYTES, Level
from memory.model import Note, NoteMeta
from memory.store.cardcache import CardCache, CardHead, Cards, StatKey, durable, head_of, no_gc, stat_key
from memory.store.fs import FS, STAGE_PREFIX, TEMP_PREFIX, UnsafePathError
from memory.store.index import format_index_line
from memory.store.noteparse import parse_note
from memory.store.told import told_about
from memory.text.names import check_filename, quote

# A hand-written note can be larger than a model's (16 KiB), but a store is no place for
# megabytes: past this a file is listed as broken rather than read into memory.
MAX_NOTE_FILE_BYTES = 1024 * 1024 + MAX_CONTENT_BYTES

GITIGNORE = b"# Written by PseudoClaude: deleted notes and temporary files stay out of git.\n.trash/\n.pc-*\n"
TRASH_DIR = ".trash"
# MEMORY.md is rebuilt from the cards: two branches that both add a card each add a
# line, and a union merge keeps both instead of conflicting; order and duplicates never matter.
GITATTRIBUTES = (
    b"# Written by PseudoClaude: MEMORY.md is rebuilt from the cards, so a merge keeps both sides' lines.\n"
    b"MEMORY.md merge=union\n"
)
# What a project store (and a user store kept in git) holds besides its cards and MEMORY.md.
GIT_FILES = {".gitignore": GITIGNORE, ".gitattributes": GITATTRIBUTES}


class StoreError(Exception):
    """A one-line reason why a store (or a note in it) cannot be used."""


# Parsed notes by (folder, filename), valid while the file's stat key (cardcache.stat_key) is
# unchanged, and whether the note may go to the card cache on disk (read well after its file last
# changed). Shared by every Store object of this process, so a warm process applies a batch (and
# rebuilds the index after it) without re-parsing. Notes are frozen: readers may share them.
_CACHE: dict[tuple[str, str], tuple[StatKey, Note, bool]] = {}
_CACHE_MAX = 100_000
# Heads by (folder, filename) (CardHead: a note without its body, what the index and the card
# cache on disk hold), valid while the stat key is unchanged; and whether it may go to disk.
_HEADS: dict[tuple[str, str], tuple[StatKey, CardHead, bool]] = {}
# A card as keyed_cards gives it: (filename, index line or None, why not, front matter, stat key).
Keyed = tuple[str, str | None, str, NoteMeta | None, tuple[int, ...]]
_NO_ENTRY: tuple[None, None] = (None, None)
_Pass = tuple[list[str], list[tuple[str, StatKey]], list[tuple[int, ...]], list[Keyed], int]
# Index lines by (folder, filename), valid while the file's stat key is unchanged.
_LINES: dict[tuple[str, str], tuple[tuple[int, ...], str | None, str, NoteMeta | None]] = {}


# check_filename's verdict on names already listed: a warm process lists the same folder at
# every batch, and the check is lexical (a name's verdict never changes).
_NAME_OK: dict[str, bool] = {}


def _safe_name(name: str) -> bool:
    ok = _NAME_OK.get(name)
    if ok is None:
        ok = check_filename(name) is None
        if len(_NAME_OK) >= _CACHE_MAX:
            _NAME_OK.clear()
        _NAME_OK[name] = ok
    return ok


def _is_card_name(name: str) -> bool:
    return name != INDEX_FILE and name.endswith(".md") and not name.startswith(".")


def filename_problem(name: str) -> str | None:
    """``check_filename``'s reason with the name quoted only redacted and shortened (a reason
    reaches stderr, the history and the job)."""
    reason = check_filename(name)
    if reason is None or not isinstance(name, str):
        return reason
    return reason.replace(repr(name), quote(name))


class Store:
    def __init__(
        self,
        level: Level,
        folder: Path,
        fs: FS,
        *,
        guard: Path | None = None,
        unavailable: str | None = None,
        card_cache: CardCache | None = None,
    ) -> None:
        self.level = level
        self.dir = Path(folder)
        self.fs = fs
        # The parsed cards a new process finds on disk (memory/store/cardcache.py), or None.
        self.card_cache = card_cache
        # The last keyed_cards pass (names, cards stat'ed, keys, result, ``fs.changes_in`` the folder),
        # given again while all are the same: an index after the derived-index check is a listing
        # and a stat per card.
        self._last: _Pass | None = None
        # A short command's one look (``MemoryStores.pin_listings``): the last pass is given again
        # as it is while this process changed nothing, not listed and stat'ed a second time.
        self.pinned = False
        # Folders between ``guard`` and the store that must not be symlinks either (a cloned
        # repository could point ``.PseudoClaude`` anywhere).
        self._guard = guard
        # Why this level does not exist at all in the workspace (its folder is the other
        # store's): every read and write of it is refused with this reason.
        self.unavailable = unavailable

    def __repr__(self) -> str:
        return f"Store({self.level}, {self.dir})"

    # -- folder checks -------------------------------------------------------------------------

    def folder_problem(self) -> str | None:
        """A reason the folder must not be read or written, or None (a missing folder is fine)."""
        if self.unavailable is not None:
            return self.unavailable
        chain = [self.dir]
        if self._guard is not None:
            cur = self.dir.parent
            while cur != self._guard and self._guard in cur.parents:
                chain.append(cur)
                cur = cur.parent
        for p in chain:
            try:
                st = self.fs.lstat(p)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                return f"{self.level} store folder {p} is a symlink; refusing to use it"
            if not stat.S_ISDIR(st.st_mode):
                return f"{self.level} store path {p} is not a folder"
        return None

    def trash_problem(self) -> str | None:
        """Why deleted notes cannot be moved to ``.trash/`` (a committed symlink, a file), or None."""
        try:
            st = self.fs.lstat(self.dir / TRASH_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            return f"{self.level} store: {TRASH_DIR} is a symlink; refusing to move notes through it"
        if not stat.S_ISDIR(st.st_mode):
            return f"{self.level} store: {TRASH_DIR} is not a folder"
        return None

    def exists(self) -> bool:
        return self.folder_problem() is None and self.fs.exists(self.dir)

    # -- listing and reading ---------------------------------------------------------------------

    def entries(self) -> list[str]:
        """Every name in the folder (for doctor and unique-name checks); [] if absent or unsafe."""
        if self.folder_problem() is not None:
            return []
        try:
            return self.fs.listdir(self.dir)
        except FileNotFoundError:
            return []

    def note_names(self) -> list[str]:
        """Names of the notes: ``*.md`` regular files with safe names, sorted."""
        return [name for name, _ in self._note_stats(self.entries())]

    def _note_stats(self, entries: list[str]) -> list[tuple[str, os.stat_result]]:
        """The notes among ``entries`` with each file's ``lstat``, taken once (``notes`` reuses it)."""
        out = []
        # A str path, not a Path: FS passes it to os.lstat as is, and joining ten thousand
        # Paths was a tenth of the time of listing a large store.
        base = str(self.dir)
        for name in entries:
            if name == INDEX_FILE or not name.endswith(".md") or not _safe_name(name):
                continue
            try:
                st = self.fs.lstat(f"{base}/{name}")
            except FileNotFoundError:
                continue
            if self._stat_problem(name, st) is None:
                out.append((name, st))
        return out

    def regular_file_problem(self, filename: str) -> str | None:
        """Why ``filename`` cannot be read or targeted (not there, symlink, hard-linked), or None."""
        try:
            st = self.fs.lstat(self.dir / filename)
        except FileNotFoundError:
            return f"no note named {quote(filename)} in the {self.level} store"
        return self._stat_problem(filename, st)

    def _stat_problem(self, filename: str, st: os.stat_result) -> str | None:
        if _plain_file(st):
            return None  # the common case, in one test
        if stat.S_ISLNK(st.st_mode):
            return f"{quote(filename)} is a symlink; refusing to follow it"
        if not stat.S_ISREG(st.st_mode):
            return f"{quote(filename)} is not a regular file"
        if st.st_nlink > 1:
            return f"{quote(filename)} has {st.st_nlink} hard links; refusing to touch it"
        if st.st_size > MAX_NOTE_FILE_BYTES:
            return f"{quote(filename)} is larger than {MAX_NOTE_FILE_BYTES} bytes"
        return None

    def target_problem(self, filename: str) -> str | None:
        """Full check of a name an operation targets: lexical, then the file itself."""
        reason = filename_problem(filename)
        if reason is not None:
            return reason
        if filename == INDEX_FILE:
            return f"{INDEX_FILE} is not a note"
        return self.folder_problem() or self.regular_file_problem(filename)

    def read_note(self, filename: str) -> Note:
        reason = self.target_problem(filename)
        if reason is not None:
            raise StoreError(reason)
        return self._load(filename)

    def _load(self, filename: str, st: os.stat_result | None = None) -> Note:
        """A note whose name and folder were checked: from the cache while its file is unchanged.
        ``st``: the file's ``lstat`` when the caller just took it."""
        if st is None:
            try:
                st = self.fs.lstat(self.dir / filename)
            except FileNotFoundError:
                raise StoreError(f"no note named {quote(filename)} in the {self.level} store") from None
        key = stat_key(st)
        ck = (str(self.dir), filename)
        hit = _CACHE.get(ck)
        if hit is not None and hit[0] == key:
            return hit[1]
        # Taken before the read: the file must have changed well before it to be cached on disk.
        before = time.time_ns()
        try:
            data = self.fs.read_bytes(self.dir / filename)
        except UnsafePathError as e:
            raise StoreError(f"{quote(filename)}: {e.strerror}") from None
        except FileNotFoundError:
            raise StoreError(f"no note named {quote(filename)} in the {self.level} store") from None
        note = parse_note(self.level, filename, data)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[ck] = (key, note, durable(st, before))
        return note

    def _head(self, name: str, st: os.stat_result, key: StatKey, disk: Cards | None) -> CardHead:
        """A checked card's head: from this process's caches, the card cache on disk (``disk``:
        its cards, when the caller may use it) or a parse, all at exactly ``key``."""
        ck = (str(self.dir), name)
        hit = _HEADS.get(ck)
        if hit is not None and hit[0] == key:
            return hit[1]
        parsed = _CACHE.get(ck)
        cached = disk.get(name) if disk is not None and (parsed is None or parsed[0] != key) else None
        if cached is not None and cached[0] == key and cached[1].plausible(name):
            entry = (key, cached[1], True)
        else:
            self._load(name, st)
            parsed = _CACHE[ck]
            entry = (parsed[0], head_of(parsed[1]), parsed[2])
        if len(_HEADS) >= _CACHE_MAX:
            _HEADS.clear()
        _HEADS[ck] = entry
        return entry[1]

    def _disk_cache(self) -> CardCache | None:
        """The card cache on disk when this store may use it now (asked once per listing)."""
        cache = self.card_cache
        return cache if cache is not None and cache.enabled() else None

    def _persist(self, disk: CardCache, cards: Cards, listed: list[tuple[str, StatKey]]) -> None:
        """Write to ``disk`` (which holds ``cards``) the durable notes of this process for the
        cards just listed at exactly these keys: a card changed since, or too recently, is left
        out. Whether a rewrite is due is asked first, from the keys alone (a batch's few new
        cards in a large store are no rewrite: its heads are not collected for nothing)."""
        fresh = sum(1 for name, key in listed if cards.get(name, _NO_ENTRY)[0] != key)
        if not disk.worth_saving(len(listed), fresh, len(cards)):
            return
        base = str(self.dir)
        keep: dict[str, tuple[StatKey, CardHead]] = {}
        for name, key in listed:
            hit = _HEADS.get((base, name))
            if hit is not None and hit[0] == key and hit[2]:
                keep[name] = (key, hit[1])
        disk.save(keep)

    def notes(self) -> list[Note]:
        return self.listing()[0]

    def listing(self) -> tuple[list[Note], list[str]]:
        """``notes()`` and ``entries()`` from one listing of the folder."""
        # _note_stats() checked each name and file; the folder is checked once, not per note.
        if self.folder_problem() is not None:
            return [], []
        entries = self.entries()
        out = []
        for name, st in self._note_stats(entries):
            try:
                out.append(self._load(name, st))
            except (StoreError, FileNotFoundError):
                continue
        return out, entries

    def heads(self) -> list[CardHead]:
        """``notes()`` without their bodies (what ``MEMORY.md`` and ``memory list`` show), through
        the card cache on disk: a new process reads it instead of parsing every card."""
        if self.folder_problem() is not None:
            return []
        with no_gc():
            return self._heads()

    def _heads(self) -> list[CardHead]:
        disk = self._disk_cache()
        base = str(self.dir)
        out = []
        listed = []
        missed = False
        cards = disk.cards() if disk is not None else None
        for name, st in self._note_stats(self.entries()):
            key = stat_key(st)
            hit = _HEADS.get((base, name))
            if hit is None or hit[0] != key:
                missed = True
                try:
                    self._head(name, st, key, cards)
                except (StoreError, FileNotFoundError):
                    continue
                hit = _HEADS[(base, name)]
            out.append(hit[1])
            listed.append((name, key))
        # (A pass with nothing new has nothing to write.)
        if disk is not None and cards is not None and missed:
            self._persist(disk, cards, listed)
        return out

    def derived_index(self) -> str:
        """What ``MEMORY.md`` must hold: ``render_index`` of the cards, from a ``keyed_cards``
        pass (so the index a command shows after this check lists the folder warm).

        The cards ``render_index`` lists are those read at exactly their present key: the ones
        with a line, and the ones that do not parse (listed under their fallback front matter).
        """
        base = str(self.dir)
        lines = []
        for name, line, _, _, key in self.keyed_cards():
            if line is None:
                hit = _HEADS.get((base, name)) if key else None
                if hit is None or hit[0] != key[:5]:
                    continue  # never read at this key: unsafe name, symlink, hard links, too large
                meta = hit[1].meta
                line = format_index_line(meta.type, meta.title or name, meta.summary, name)
            lines.append(line + "\n")
        return "".join(lines)

    def index_entries(self) -> tuple[list[str], list[tuple[str, str]]]:
        """The index lines of this store's cards, sorted by filename, built from the card files
        themselves (front matter through the parse cache), and the cards left out with a
        one-line reason each.

        ``MEMORY.md`` plays no part: it is derived, and a committed or hand-edited one (forged
        lines, an old copy, conflict markers) must never decide what a prompt gets. A card is
        left out when it cannot be read safely (symlink, hard links, too large, unsafe name) or
        its front matter does not parse (not UTF-8, bad YAML): the model would get
        a guess, so it gets nothing and the person is told why.
        """
        lines: list[str] = []
        left_out: list[tuple[str, str]] = []
        for name, line, reason, _meta in self.index_cards():
            if line is not None:
                lines.append(line)
            else:
                left_out.append((name, reason))
        return lines, left_out

    def index_cards(self) -> list[tuple[str, str | None, str, NoteMeta | None]]:
        """``(filename, index line or None, why it is left out, front matter)`` of every card,
        sorted by filename (``index_entries``, with each card's front matter for its citations)."""
        return [(name, line, reason, meta) for name, line, reason, meta, _ in self.keyed_cards()]

    def keyed_cards(self) -> list[Keyed]:
        """``index_cards`` with each card's stat key (``cardcache.stat_key`` and its links), from
        the same listing: what the search cache compares to notice a change."""
        if self.folder_problem() is not None:
            return []
        with no_gc():
            told = told_about(self.dir)  # a reader told what changed (memory/store/told.py)
            patched = self._told_pass(told) if told is not None else None
            return patched if patched is not None else self._keyed_cards()

    def _told_pass(self, told: frozenset[str]) -> list[Keyed] | None:
        """The last pass with only the ``told`` cards stat'ed and read again (the caller was told
        nothing else changed since: an announced write); None without a last pass to start from."""
        last = self._last
        told = frozenset(filter(_is_card_name, told))
        if last is None or not all(map(_safe_name, told)):
            return None
        base = str(self.dir)
        cards = dict(zip(filter(_is_card_name, last[0]), last[3], strict=True))
        skeys = dict(last[1])
        for name in told:
            cards.pop(name, None)
            skeys.pop(name, None)
            try:
                st = self.fs.lstat(f"{base}/{name}")
            except FileNotFoundError:
                continue  # deleted
            skeys[name] = stat_key(st)
            hit, _ = self._line_of(base, name, st, skeys[name], None)
            cards[name] = (name, hit[1], hit[2], hit[3], hit[0])
        names = sorted({*(n for n in last[0] if n not in told), *cards})
        listed = [(n, skeys[n]) for n in names if n in skeys]
        out = [cards[n] for n in names if n in cards]
        self._last = (names, listed, [cards[n][4] for n, _ in listed], out, self.fs.changes_in(base))
        return list(out)

    def _keyed_cards(self) -> list[Keyed]:
        last = self._last
        if self.pinned and last is not None and last[4] == self.fs.changes_in(str(self.dir)):
            return list(last[3])
        names = sorted(self.entries())
        again = self._last_pass_again(names)
        if again is not None:
            return again
        base = str(self.dir)
        out: list[Keyed] = []
        keys: list[tuple[int, ...]] = []
        vanished = False
        disk = self._disk_cache()
        cards = disk.cards() if disk is not None else None
        listed: list[tuple[str, StatKey]] = []
        missed = False
        for name in names:
            if name == INDEX_FILE or not name.endswith(".md") or name.startswith("."):
                continue  # the index itself, and our temporary and hidden files
            if not _safe_name(name):
                out.append((quote(name), None, filename_problem(name) or "unsafe filename", None, ()))
                continue
            try:
                st = self.fs.lstat(f"{base}/{name}")
            except FileNotFoundError:
                vanished = True
                continue
            skey = stat_key(st)
            hit, worked_out = self._line_of(base, name, st, skey, cards)
            missed = missed or worked_out
            out.append((name, hit[1], hit[2], hit[3], hit[0]))
            listed.append((name, skey))  # (a card never read is not in _HEADS: not kept)
            keys.append(hit[0])
        # (A pass with nothing new has nothing to write.)
        if disk is not None and cards is not None and missed:
            self._persist(disk, cards, listed)
        # (Not kept when a listed name was gone by its stat.)
        self._last = None if vanished else (names, listed, keys, out, self.fs.changes_in(base))
        return list(out)

    def _last_pass_again(self, names: list[str]) -> list[Keyed] | None:
        """The last pass's answer when the folder lists the same names and each card stats as it
        did then (the folder's change count noted again); None when anything differs."""
        last = self._last
        if last is None or last[0] != names:
            return None
        base = str(self.dir)
        lstat = self.fs.lstat
        try:
            now = [
                (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_nlink)
                for st in (lstat(f"{base}/{name}") for name, _ in last[1])
            ]
        except FileNotFoundError:
            return None
        if now != last[2]:
            return None
        self._last = (last[0], last[1], last[2], last[3], self.fs.changes_in(base))
        return list(last[3])

    def _line_of(
        self, base: str, name: str, st: os.stat_result, skey: StatKey, cards: Cards | None
    ) -> tuple[tuple[tuple[int, ...], str | None, str, NoteMeta | None], bool]:
        """A card's (key, index line, why none, front matter), and whether it was worked out
        again: a card's line while its file is unchanged is kept, so a warm 10,000-card index is
        a listing and a stat per card, not a parse or a format."""
        key = (*skey, st.st_nlink)
        hit = _LINES.get((base, name))
        if hit is not None and hit[0] == key:
            return hit, False
        got = cards.get(name) if cards is not None else None
        if got is not None and got[0] == skey and _plain_file(st) and got[1].plausible(name):
            # A new process's usual card: _index_entry's answer from the card cache on disk.
            hit = (key, *_disk_line(base, name, skey, got[1]))
        else:
            hit = (key, *self._index_entry(name, st, skey, cards))
        if len(_LINES) >= _CACHE_MAX:
            _LINES.clear()
        _LINES[(base, name)] = hit
        return hit, True

    def _index_entry(
        self, name: str, st: os.stat_result, key: StatKey, disk: Cards | None
    ) -> tuple[str | None, str, NoteMeta | None]:
        """A card's index line, or None and why a prompt leaves it out; and its front matter."""
        problem = self._stat_problem(name, st)
        if problem is not None:
            return None, problem, None
        try:
            head = self._head(name, st, key, disk)
        except (StoreError, FileNotFoundError) as e:
            return None, str(e) or "unreadable", None
        return _head_line(name, head)

    def index_file_problem(self) -> str | None:
        """Why ``MEMORY.md`` cannot be read (symlink, FIFO, folder), or None (absent is fine)."""
        try:
            st = self.fs.lstat(self.dir / INDEX_FILE)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            return f"{self.level} store: {INDEX_FILE} is {kind}"
        return None

    def read_index_file(self) -> str:
        """``MEMORY.md`` as on disk, whole ('' when absent or unsafe). Callers filter its lines.

        Read whole, whatever its size: the overflow count, ``read_memory("MEMORY.md")`` and
        doctor's comparison with the notes all need every line.
        """
        if self.folder_problem() is not None:
            return ""
        try:
            data = self.fs.read_bytes(self.dir / INDEX_FILE)
        except (FileNotFoundError, UnsafePathError, NotADirectoryError):
            return ""
        return data.decode("utf-8", "replace")

    def hashes(self) -> dict[str, str]:
        return {n.filename: n.sha256 for n in self.notes()}

    def temp_files(self) -> list[str]:
        return [n for n in self.entries() if n.startswith((TEMP_PREFIX, STAGE_PREFIX))]


def _plain_file(st: os.stat_result) -> bool:
    """``Store._stat_problem``'s common case: a regular file, one link, not too large."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink <= 1 and st.st_size <= MAX_NOTE_FILE_BYTES


def _disk_line(base: str, name: str, key: StatKey, head: CardHead) -> tuple[str | None, str, NoteMeta | None]:
    """``_index_entry`` of a card whose checked head came from the card cache on disk."""
    ck = (base, name)
    if len(_HEADS) >= _CACHE_MAX:
        _HEADS.clear()
    _HEADS[ck] = (key, head, True)
    return _head_line(name, head)


def _head_line(name: str, head: CardHead) -> tuple[str | None, str, NoteMeta | None]:
    """A checked head's index line and front matter, or None and why a prompt leaves it out."""
    if head.unparsed:
        return None, head.broken or "does not parse", None
    meta = head.meta
    return format_index_line(meta.type, meta.title or name, meta.summary, name), "", meta


def render_index(notes: list[Note], pace: Callable[[], None] | None = None) -> str:
    """``MEMORY.md``: exactly one line per note, sorted by filename, rebuilt, never patched.
    ``pace`` (``FS.pace``) is a checkpoint every few hundred notes (memory.jobs.pace)."""
    # Notes come from parse_note, which sanitized title and summary already: a large store's
    # rebuild after each batch need not sanitize ten thousand titles again.
    lines = []
    for i, n in enumerate(sorted(notes, key=lambda n: n.filename)):
        if pace is not None and not i % 256:
            pace()
        lines.append(format_index_line(n.meta.type, n.meta.title or n.filename, n.meta.summary, n.filename))
    return "".join(line + "\n" for line in lines)
