"""What the index and the listing need of each card of a store folder (its ``CardHead``: the
parsed note but its body), kept across processes: ``$PSEUDOCLAUDE_HOME/cache/cards-<digest>.json``.

Why: every ``memory`` command is a new process, and without this it parses every card's front
matter again (seconds at 10,000 cards) although none changed since the last command. Bodies stay
out: the file is a third of the size, and what needs a body (a batch) parses its cards. Derived
and disposable, like the search cache, and never trusted over the cards:

- an entry is served only for a file whose ``lstat`` key — (inode, size, mtime_ns, ctime_ns,
  mode) — is exactly the one it was parsed at. ctime cannot be set from user space, so a card
  rewritten to its old size with its old mtime restored still misses;
- an entry is written only for a file whose mtime and ctime were more than ``RACY_NS`` old when
  it was read ("racy git"): a change within the same clock tick could keep the key;
- a missing, truncated, damaged (its checksum), foreign (another folder or level), other-version
  or oversized file is ignored and rewritten; one that cannot be written (a read-only home) is
  no error, the next process parses again.

The store decides when it may be used at all (an untrusted project store never is).
"""

from __future__ import annotations

import gc
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, TypeAdapter

from memory.constants import MAX_SUMMARY, MAX_TITLE, Level
from memory.model import Note, NoteMeta
from memory.store.fs import FS
from memory.store.stamp import RACY_NS
from memory.text.names import sanitize_summary, sanitize_title
from memory.text.terminal import BIDI, ZERO_WIDTH

__all__ = [
    "CACHE_VERSION",
    "RACY_NS",
    "CardCache",
    "CardHead",
    "Cards",
    "StatKey",
    "card_cache_path",
    "durable",
    "head_of",
    "no_gc",
    "stat_key",
]

CACHE_VERSION = 1
_MAGIC = b"pseudoclaude-cards"
# Past this the file is not read at all (a 10,000-card store's is about 3 MB).
MAX_CACHE_BYTES = 256 * 1024 * 1024
# A larger (hand-written) card is parsed each time rather than copied into the cache.
MAX_CACHED_CARD_BYTES = 64 * 1024

# The file is rewritten once one card in this many is not in it (or a quarter of it is gone).
REWRITE_EVERY = 64

StatKey = tuple[int, int, int, int, int]
_NONE: tuple[None, None] = (None, None)


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def durable(st: os.stat_result, before_read_ns: int) -> bool:
    """Whether a card read after ``before_read_ns`` (``time.time_ns()``) may be written to the
    cache under ``st``'s key: changed long enough before the read that no later change can
    carry the same timestamps."""
    return (
        st.st_size <= MAX_CACHED_CARD_BYTES and max(st.st_mtime_ns, st.st_ctime_ns) < before_read_ns - RACY_NS
    )


def card_cache_path(home: Path | str, folder: Path | str) -> Path:
    """One file per store folder (its real path), next to the search cache and the stamps."""
    digest = hashlib.sha256(os.path.realpath(folder).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return Path(home) / "cache" / f"cards-{digest}.json"


# The bidi and zero-width characters the sanitizer removes are all non-printable: were one ever
# printable, the quick test would always say no and the sanitizer decides.
_PRINTABLE_IS_SAFE = not any(c.isprintable() for c in BIDI | ZERO_WIDTH)


class CardHead(NamedTuple):
    """A parsed card without its body (or its hash): its front matter, sanitized as
    ``parse_note`` leaves it, and whether it parsed (see ``Note``)."""

    filename: str
    meta: NoteMeta
    broken: str | None = None
    unparsed: bool = False
    conflicted: bool = False  # git left conflict markers in it (``Note.conflict``)

    def plausible(self, filename: str) -> bool:
        """Whether ``parse_note`` could have made this head of ``filename``: a damaged or forged
        file must not bring a raw title (a line break, an escape sequence) into an index line
        that no card could."""
        title, summary = self.meta.title, self.meta.summary
        if self.filename != filename or not title or (self.conflicted and not self.unparsed):
            return False
        # What store._is_sanitized checks, inlined (ten thousand cards a new process); then the
        # sanitizer itself, which a title it leaves unchanged passes.
        if (
            not (
                _PRINTABLE_IS_SAFE
                and len(title) <= MAX_TITLE
                and title.isprintable()
                and "  " not in title
                and title[0] not in "# "
                and title[-1] != " "
            )
            and title != filename
            and sanitize_title(title) != title
        ):
            return False
        return (
            not summary
            or (
                _PRINTABLE_IS_SAFE
                and len(summary) <= MAX_SUMMARY
                and summary.isprintable()
                and "  " not in summary
                and summary[0] not in "# "
                and summary[-1] != " "
            )
            or sanitize_summary(summary) == summary
        )


def head_of(note: Note) -> CardHead:
    return CardHead(note.filename, note.meta, note.broken, note.unparsed, note.conflict is not None)


_UNPARSED, _CONFLICTED = 1, 2


class _File(BaseModel):
    """The file, by columns: one model per card (its front matter) rather than three."""

    store: str
    level: Level
    names: list[str]
    keys: list[tuple[int, int, int, int, int]]
    metas: list[NoteMeta]
    broken: list[str | None]
    flags: list[int]


# Validated in one pass (pydantic's core): a hostile file gets the same type checks as a card.
_FILE = TypeAdapter(_File)
Cards = dict[str, tuple[StatKey, CardHead]]


class CardCache:
    """One store folder's cache file: read once per object, rewritten when what it should hold
    changed. Thread-safe."""

    def __init__(self, fs: FS, home: Path | str, folder: Path | str, level: Level) -> None:
        self.fs = fs
        self.home = Path(home)
        self.folder = Path(folder)
        self.level = level
        # When the store may use the cache now (the project store: while trusted); None: always.
        self.gate: Callable[[], bool] | None = None
        self._lock = threading.Lock()
        self._cards: Cards | None = None  # None: not read yet
        self._real = ""

    def enabled(self) -> bool:
        return self.gate is None or self.gate()

    def cards(self) -> Cards:
        """filename -> (the stat key it was parsed at, its head), as read from the file once.
        A caller serves a head only for a file whose key is exactly this one."""
        cards = self._cards
        if cards is not None:
            return cards  # (replaced whole, never changed in place: no lock needed to read)
        with self._lock:
            if self._cards is None:
                self._real = os.path.realpath(self.folder)
                with no_gc():
                    self._cards = self._read()
            return self._cards

    def _read(self) -> Cards:
        try:
            data = self.fs.read_bytes(card_cache_path(self.home, self._real), max_bytes=MAX_CACHE_BYTES)
        except (OSError, ValueError):
            return {}  # absent, a symlink, a folder, unreadable: rebuilt
        head, _, payload = data.partition(b"\n")
        if len(data) > MAX_CACHE_BYTES or head != _header(payload):
            return {}  # truncated, damaged, another version
        try:
            f = _FILE.validate_json(payload)
        except ValueError:  # pydantic's ValidationError included
            return {}
        if f.store != self._real or f.level is not self.level:
            return {}  # another folder's file (a digest collision, a copied home)
        try:
            return {
                name: (key, CardHead(name, meta, broken, bool(flags & _UNPARSED), bool(flags & _CONFLICTED)))
                for name, key, meta, broken, flags in zip(
                    f.names, f.keys, f.metas, f.broken, f.flags, strict=True
                )
            }
        except ValueError:  # columns of different lengths: not a file this code wrote
            return {}

    @staticmethod
    def worth_saving(listed: int, new: int, current: int, dropped: int | None = None) -> bool:
        """Whether a file of ``current`` cards is rewritten for ``listed`` cards of which ``new``
        are not in it (at most: a caller may pass a bound) and ``dropped`` of it are gone
        (default: what ``new`` leaves)."""
        gone = current - (listed - new) if dropped is None else dropped
        if not new and not gone:
            return False
        # A rewrite costs about what parsing one card in REWRITE_EVERY does: a few new cards
        # are parsed again by the next processes until more have come.
        return not current or new * REWRITE_EVERY >= listed or gone * 4 >= current

    def save(self, cards: Cards) -> None:
        """Make the file hold exactly ``cards`` (each parsed by this process or served from the
        file at its key, and durable), when it differs enough to be worth it. Best effort."""
        current = self.cards()
        with self._lock:
            new = sum(1 for n, c in cards.items() if current.get(n, _NONE)[0] != c[0])
            if not self.worth_saving(len(cards), new, len(current), len(current) - (len(cards) - new)):
                return
            heads = [h for _, h in cards.values()]
            with no_gc():
                body = _FILE.dump_json(
                    _File.model_construct(
                        store=self._real,
                        level=self.level,
                        names=[h.filename for h in heads],
                        keys=[k for k, _ in cards.values()],
                        metas=[h.meta for h in heads],
                        broken=[h.broken for h in heads],
                        flags=[_UNPARSED * h.unparsed | _CONFLICTED * h.conflicted for h in heads],
                    ),
                    exclude_defaults=True,
                )  # a default is filled in again when read: a smaller file
            path = card_cache_path(self.home, self._real)
            try:
                self.fs.makedirs(path.parent, 0o700)
                # Not fsynced: a file torn by a crash fails its checksum and is rebuilt.
                self.fs.atomic_write(path, _header(body) + b"\n" + body, 0o600, sync=False)
            except OSError:
                return  # a read-only home: the next process parses again
            self._cards = dict(cards)


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector off while ten thousand acyclic objects are made (reading this file,
    a pass over a store's cards): its passes over them were half the time of reading the file."""
    if threading.current_thread() is not threading.main_thread():
        # The switch is the whole process's: a pass in a thread of the app must not turn the
        # collector off (or back on) under its screen's interpreter.
        yield
        return
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _header(payload: bytes) -> bytes:
    return b"%s %d %s" % (_MAGIC, CACHE_VERSION, hashlib.sha256(payload).hexdigest().encode("ascii"))
