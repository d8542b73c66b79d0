"""A batch being built: the simulated final state of each store, before anything is staged.

The transaction plans every op of a batch on this, undo plans the reverse of a batch on it, and
the journal stages what it holds. A name chosen here is free even on a case-insensitive file
system, and an identical create is found without reading a 10,000-card store twice.
"""

from __future__ import annotations

from collections.abc import Mapping

from memory.constants import INDEX_FILE, Level
from memory.model import Note
from memory.store.noteparse import parse_note
from memory.store.store import Store

__all__ = ["Plan", "key"]


def key(level: Level, filename: str) -> str:
    return f"{level}/{filename}"


class Plan:
    """The batch being built: the simulated final state of each store, before staging."""

    def __init__(self, stores: Mapping[Level, Store]) -> None:
        self.stores = stores
        # level -> filename -> new bytes (None: to the trash). Files not named are unchanged.
        self.writes: dict[Level, dict[str, bytes | None]] = {lv: {} for lv in stores}
        # Levels whose MEMORY.md is rewritten even with no note change (doctor --fix).
        self.rebuild: set[Level] = set()
        self.disk: dict[Level, dict[str, Note]] = {}
        # Names taken in each folder, case-folded (a case-insensitive file system sees
        # ``Build.md`` and ``build.md`` as one name); names chosen by this plan are added.
        self.taken: dict[Level, set[str]] = {}
        # (title, body) -> filename per level, for refusing identical creates (built lazily).
        self._same: dict[Level, dict[tuple[str, str], str]] = {}
        for lv, st in stores.items():
            notes, entries = st.listing()  # one listing of a folder that can hold 10,000 notes
            self.disk[lv] = {n.filename: n for n in notes}
            self.taken[lv] = {n.casefold() for n in entries} | {INDEX_FILE.casefold()}

    def current(self, level: Level, filename: str) -> Note | None:
        if filename in self.writes[level]:
            data = self.writes[level][filename]
            return None if data is None else parse_note(level, filename, data)
        return self.disk[level].get(filename)

    def unique_name(self, level: Level, base: str) -> str:
        """``base``, or ``-2``, ``-3``… of it: free even on a case-insensitive file system."""
        stem = base.removesuffix(".md")
        taken = self.taken[level]
        name, n = base, 2
        while name.casefold() in taken:
            name = f"{stem}-{n}.md"
            n += 1
        taken.add(name.casefold())
        return name

    def duplicate_of(self, level: Level, title: str, content: str) -> str | None:
        """The card of ``level`` (on disk or created earlier in this batch) whose title and
        body equal these, or None. Built once per level and batch: a store can hold 10,000."""
        seen = self._same.get(level)
        if seen is None:
            seen = {(n.meta.title, _body_key(n.body)): n.filename for n in self.final_notes(level)}
            self._same[level] = seen
        return seen.get((title, _body_key(content)))

    def remember_created(self, level: Level, title: str, content: str, filename: str) -> None:
        seen = self._same.get(level)
        if seen is not None:
            seen.setdefault((title, _body_key(content)), filename)

    def final_notes(self, level: Level) -> list[Note]:
        out = {n: note for n, note in self.disk[level].items()}
        for name, data in self.writes[level].items():
            if data is None:
                out.pop(name, None)
            else:
                out[name] = parse_note(level, name, data)
        return list(out.values())


def _body_key(body: str) -> str:
    """A body as compared for identical creates: line ends and surrounding blank space aside."""
    return body.replace("\r\n", "\n").strip()
