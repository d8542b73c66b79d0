"""One store folder: its notes and its ``MEMORY.md``, read side.

Writes never happen here directly: the transaction plans them with the helpers below and
applies them through the filesystem layer, so both stores change together or not at all.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from memory.constants import INDEX_FILE, MAX_CONTENT_BYTES, MAX_SUMMARY, MAX_TITLE, Level, NoteType
from memory.model import ConflictSides, Note, NoteMeta
from memory.store.cardcache import CardCache, CardHead, Cards, StatKey, durable, head_of, no_gc, stat_key
from memory.store.conflict import split_conflict
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.store.fs import FS, STAGE_PREFIX, TEMP_PREFIX, UnsafePathError
from memory.store.index import format_index_line
from memory.text.names import check_filename, quote, sanitize_summary, sanitize_title
from memory.text.terminal import BIDI, ZERO_WIDTH

# A hand-written note can be larger than a model's (16 KiB), but a store is no place for
# megabytes: past this a file is listed as broken rather than read into memory.
MAX_NOTE_FILE_BYTES = 1024 * 1024 + MAX_CONTENT_BYTES

GITIGNORE = b"# Written by PseudoClaude: deleted notes and temporary files stay out of git.\n.trash/\n.pc-*\n"
TRASH_DIR = ".trash"
# MEMORY.md is rebuilt from the cards (DESIGN §16): two branches that both add a card each add a
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


def filename_problem(name: str) -> str | None:
    """``check_filename``'s reason with the name quoted only redacted and shortened (a reason
    reaches stderr, the history and the job)."""
    reason = check_filename(name)
    if reason is None or not isinstance(name, str):
        return reason
    return reason.replace(repr(name), quote(name))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fallback_type(filename: str) -> NoteType:
    for t in NoteType:
        if filename.startswith(f"{t}_"):
            return t
    return NoteType.PROJECT_KNOWLEDGE


def conflict_reason(sides: ConflictSides) -> str:
    """Why a conflicted card is in no prompt, in one line (doctor, ``memory index``, the panel)."""
    where = " and ".join(quote(x, 40) for x in (sides.ours_label, sides.theirs_label) if x)
    return (
        f"conflicted: changed on two branches{f' ({where})' if where else ''}; "
        "resolve it in the card editor or with `memory apply` of an update"
    )


def parse_note(level: Level, filename: str, data: bytes) -> Note:
    """Parse a note file; a broken one still yields a Note (flagged) so nothing is lost from view."""
    digest = sha256(data)
    broken: str | None = None
    unparsed = False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        broken = "not valid UTF-8"
        unparsed = True
    sides = split_conflict(text) if "<<<<<<<" in text else None
    if sides is not None:
        return _conflicted_note(level, filename, text, digest, sides)
    fallback = _fallback_type(filename)
    try:
        fm, body = split_note(text)
        meta = parse_meta(fm, fallback_type=fallback)
        raw_type = fm.get("type")
        if str(raw_type if raw_type is not None else "").strip() not in _TYPE_VALUES:
            # Listed under a fallback type, but said: a silent replacement would hide the typo.
            what = "no type" if raw_type is None else f"unknown type {quote(raw_type)}"
            broken = broken or f"{what} in the front matter (listed as {fallback})"
    except FrontMatterError as e:
        broken = broken or str(e)
        unparsed = True
        body = text
        meta = NoteMeta(title=filename.removesuffix(".md"), type=fallback, created="", updated="")
    # Hand edits are not trusted to keep the index one line per note.
    title = meta.title if _is_sanitized(meta.title, MAX_TITLE) else sanitize_title(meta.title)
    summary = meta.summary if _is_sanitized(meta.summary, MAX_SUMMARY) else sanitize_summary(meta.summary)
    if title != meta.title or summary != meta.summary or not title:
        meta = meta.model_copy(
            update={"title": title or sanitize_title(filename.removesuffix(".md")) or filename, "summary": summary}
        )
    return Note(level=level, filename=filename, meta=meta, body=body, sha256=digest, broken=broken, unparsed=unparsed)


def _conflicted_note(level: Level, filename: str, text: str, digest: str, sides: ConflictSides) -> Note:
    """A card git left with conflict markers: listed (by our side's title when it parses),
    never parsed into a prompt."""
    fallback = _fallback_type(filename)
    try:
        meta = parse_meta(split_note(sides.ours)[0], fallback_type=fallback)
        meta = meta.model_copy(update={"title": sanitize_title(meta.title) or filename,
                                       "summary": sanitize_summary(meta.summary)})
    except FrontMatterError:
        meta = NoteMeta(title=filename.removesuffix(".md"), type=fallback, created="", updated="")
    return Note(level=level, filename=filename, meta=meta, body=text, sha256=digest,
                broken=conflict_reason(sides), unparsed=True, conflict=sides)


def _is_sanitized(text: str, max_chars: int) -> bool:
    """True when ``sanitize_line(text, max_chars)`` would return ``text`` unchanged, decided
    without its per-character loop (most of the time of reading a large store).

    A printable string holds no escape sequence, control, format, surrogate or line/paragraph
    separator character, and no whitespace but the space (str.isprintable is False for every
    Cc, Cf, Cs, Zs but U+0020, Zl and Zp character); then sanitizing only collapses double
    spaces, strips leading ``#``/spaces and trailing spaces, and cuts at ``max_chars``. Anything
    else takes the full sanitizer.
    """
    return (
        _PRINTABLE_IS_SAFE
        and len(text) <= max_chars
        and text.isprintable()
        and "  " not in text
        and not text.startswith(("#", " "))
        and not text.endswith(" ")
    )


_TYPE_VALUES = frozenset(t.value for t in NoteType)
# The bidi and zero-width characters sanitize removes by name are all non-printable (category
# Cf); were one ever printable, ``_is_sanitized`` would always say no and the full path runs.
_PRINTABLE_IS_SAFE = not any(c.isprintable() for c in BIDI | ZERO_WIDTH)


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
        # The last keyed_cards pass (names, cards stat'ed, keys, result), given again while all are
        # the same: a command's index after its derived-index check is a listing and a stat per card.
        self._last: tuple[list[str], list[tuple[str, StatKey]], list[tuple[int, ...]], list[Keyed]] | None = None
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
        if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1 and st.st_size <= MAX_NOTE_FILE_BYTES:
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

    def _persist(self, disk: CardCache, listed: Iterable[tuple[str, StatKey]]) -> None:
        """Write to ``disk`` the durable notes of this process for the cards just listed at
        exactly these keys: a card changed since, or too recently, is left out."""
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
        if disk is not None and missed:  # (a pass with nothing new has nothing to write)
            self._persist(disk, listed)
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
            return self._keyed_cards()

    def _keyed_cards(self) -> list[Keyed]:
        names = sorted(self.entries())
        base = str(self.dir)
        lstat = self.fs.lstat
        last = self._last
        if last is not None and last[0] == names:
            try:
                now: list[tuple[int, ...]] | None = [
                    (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_nlink)
                    for st in (lstat(f"{base}/{name}") for name, _ in last[1])
                ]
            except FileNotFoundError:
                now = None
            if now == last[2]:
                return list(last[3])
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
                st = lstat(f"{base}/{name}")
            except FileNotFoundError:
                vanished = True
                continue
            # A card's line while its file is unchanged: a warm 10,000-card index is a listing
            # and a stat per card, not a parse or a format.
            skey = stat_key(st)
            key = (*skey, st.st_nlink)
            hit = _LINES.get((base, name))
            if hit is None or hit[0] != key:
                missed = True
                hit = (key, *self._index_entry(name, st, skey, cards))
                if len(_LINES) >= _CACHE_MAX:
                    _LINES.clear()
                _LINES[(base, name)] = hit
            out.append((name, hit[1], hit[2], hit[3], key))
            listed.append((name, skey))  # (a card never read is not in _HEADS: not kept)
            keys.append(key)
        if disk is not None and missed:  # (a pass with nothing new has nothing to write)
            self._persist(disk, listed)
        self._last = None if vanished else (names, listed, keys, out)  # (a listed name not stat'ed)
        return list(out)

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
        if head.unparsed:
            return None, head.broken or "does not parse", None
        line = format_index_line(head.meta.type, head.meta.title or name, head.meta.summary, name)
        return line, "", head.meta

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


def render_index(notes: list[Note], pace: Callable[[], None] | None = None) -> str:
    """``MEMORY.md``: exactly one line per note, sorted by filename, rebuilt, never patched.
    ``pace`` (``FS.pace``) is a checkpoint every few hundred notes (memory.pace)."""
    # Notes come from parse_note, which sanitized title and summary already: a large store's
    # rebuild after each batch need not sanitize ten thousand titles again.
    lines = []
    for i, n in enumerate(sorted(notes, key=lambda n: n.filename)):
        if pace is not None and not i % 256:
            pace()
        lines.append(format_index_line(n.meta.type, n.meta.title or n.filename, n.meta.summary, n.filename))
    return "".join(line + "\n" for line in lines)
