"""The prompt's index as the memory panel shows it: the cards the next Run gets, as data.

The cards are the stores' index entries (``MemoryStores.merged_entries``), the same data the
system prompt's index text is rendered from, so the panel shows what a new Run gets, cut
included, without reading a card again or parsing the text back. An untrusted project store is
in no prompt: its cards are listed from its own index entries, cut as its index would be once
trusted. A card git left with conflict markers is in no index: it is found among the cards the
listing could not index, and listed apart. ``MEMORY.md`` is never read here.

Blocking, reading the disk: call in a thread. Works on any ``MemoryStores``, so the app can show
the cards before its runtime exists (the trust question's stores).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.store.store import StoreError
from memory.store.told import told_cards

if TYPE_CHECKING:
    from memory.model import IndexEntry
    from memory.store.index import MergedIndex
    from memory.store.stores import MemoryStores

__all__ = ["ConflictedCard", "IndexService", "IndexView", "index_view", "note_files"]

Key = tuple[str, str]  # (level, filename)


@dataclass(frozen=True)
class ConflictedCard:
    """A card file git left with conflict markers: in no index until a person resolves it."""

    level: str
    filename: str
    type: str  # our side's front matter's, when it parses
    title: str


@dataclass(frozen=True)
class IndexView:
    """What the memory panel lists: each level's cards in the prompt's index, in file order."""

    project: tuple[IndexEntry, ...]  # an untrusted store's: as its index would be once trusted
    user: tuple[IndexEntry, ...]
    has_project_level: bool  # False: a workspace at ~ whose project store is the user store
    project_trusted: bool  # (True without a project level: nothing waits for trust)
    conflicted: tuple[ConflictedCard, ...] = ()  # project first, each level by filename
    left_out: int = 0  # cards the prompt's budget left out (search and recall still find them)
    pinned_left_out: int = 0  # pinned ones among them: more pins than the budget holds
    # Level -> this person's git ``user.name`` where that level's cards are written ("" unknown).
    me: dict[str, str] = field(default_factory=dict)

    def others_name(self, entry: IndexEntry) -> str:
        """Who wrote the card when it was someone else; "" for one's own or an unknown author."""
        return "" if entry.author == self.me.get(str(entry.level), "") else entry.author


def index_view(stores: MemoryStores) -> IndexView:
    """The panel's cards now. Runs ``git config`` (cached) for this person's name."""
    prompt = stores.merged_entries()
    project_listing = prompt
    trusted = True
    if not stores.has_project_level:
        project: tuple[IndexEntry, ...] = ()
    else:
        trusted = stores.project_trusted
        if not trusted:
            # Not in the prompt's index, still listed so the person can judge it; cut as the
            # index would be once trusted: a 10,000-card clone lists a screenful, not all.
            project_listing = stores.merged_entries(include_untrusted=True)
        project = _in_prompt(project_listing.level(Level.PROJECT))
    conflicted = _conflicted(stores, Level.USER, prompt)
    if stores.has_project_level:
        conflicted = _conflicted(stores, Level.PROJECT, project_listing) + conflicted
    return IndexView(
        project=project,
        user=_in_prompt(prompt.level(Level.USER)),
        has_project_level=stores.has_project_level,
        project_trusted=trusted,
        conflicted=conflicted,
        left_out=prompt.left_out,
        pinned_left_out=prompt.pinned_left_out,
        me={level: _my_name(stores, level) for level in ("project", "user")},
    )


def note_files(stores: MemoryStores) -> frozenset[Key]:
    """(level, filename) of every card in the prompt's index now: what a Run starts with (the
    panel marks the cards not among them new)."""
    return frozenset((str(e.level), e.filename) for e in stores.merged_entries().entries if e.in_prompt)


def _in_prompt(entries: Iterable[IndexEntry]) -> tuple[IndexEntry, ...]:
    return tuple(e for e in entries if e.in_prompt)


def _my_name(stores: MemoryStores, level: str) -> str:
    """This person's git ``user.name`` where a card of ``level`` is written ("" unknown)."""
    try:
        return stores.layout.author(level)
    except (OSError, ValueError):
        return ""


def _conflicted(stores: MemoryStores, level: Level, listing: MergedIndex) -> tuple[ConflictedCard, ...]:
    """The conflicted cards of a level: among the cards the listing could not index (few), the
    ones with conflict markers. No other card is read: 10,000 cards stay cheap."""
    store = stores.store(level)
    out = []
    for lv, name, _ in listing.unindexed:
        if lv != level:
            continue
        try:
            note = store.read_note(name)
        except (StoreError, OSError, ValueError):
            continue  # unsafe or gone: doctor says why; nothing to resolve here
        if note.conflict is not None:
            out.append(
                ConflictedCard(
                    level=str(level), filename=name, type=str(note.meta.type), title=note.meta.title
                )
            )
    return tuple(out)


class IndexService:
    """The prompt's index of one workspace's stores, for the panel and the Run's start."""

    def __init__(self, stores: MemoryStores) -> None:
        self.stores = stores

    def view(self, told: Mapping[str, Collection[str]] | None = None) -> IndexView:
        """``index_view`` of these stores. Blocking: call in a thread. ``told``: the caller heard
        of every card changed since its last view, these filenames per level (none for a level
        not in it): only those are read again, the others are taken from the stores' last look
        (memory/store/told.py). None: every card is read."""
        if told is None:
            return index_view(self.stores)
        folders = {st.dir: told.get(str(level), ()) for level, st in self.stores.stores.items()}
        with told_cards(folders):
            return index_view(self.stores)

    def note_files(self) -> frozenset[Key]:
        """``note_files`` of these stores. Blocking: call in a thread."""
        return note_files(self.stores)
