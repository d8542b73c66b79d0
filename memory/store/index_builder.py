"""The indexes of a workspace's stores, built from their card files (never read from ``MEMORY.md``).

``MemoryStores`` (memory/store/stores.py) owns one ``IndexBuilder`` and adds what a read needs
around it: recovery first, the lock for a snapshot. The builder reads the card files, checks the
project cards' citations (memory.grounding), and ranks the cards when they do not all fit
(memory/store/ranking.py).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from memory.constants import Level
from memory.grounding.staleness import CardCheck
from memory.grounding.usage import UsageLog
from memory.model import Note, NoteMeta
from memory.store import trust
from memory.store.index import (
    MergedIndex,
    SectionLine,
    TrustPreview,
    index_cut,
    index_fits,
    section_entries,
    stale_mark,
    stale_text,
)
from memory.store.layout import StoreLayout
from memory.store.ranking import rank_order
from memory.store.store import Store
from memory.text.markup import card_markup

__all__ = ["IndexBuilder", "PromptIndex"]

# What ``Store.index_cards`` gives of each card: its filename, its index line (None: no prompt
# gets it), why it has none, and its front matter.
IndexCard = tuple[str, str | None, str, NoteMeta | None]


class PromptIndex(BaseModel):
    """The merged index a prompt gets, and its split of the cards (``level/filename``)."""

    model_config = ConfigDict(frozen=True)

    text: str
    shown: frozenset[str]
    left_out: tuple[str, ...]  # in file order, project first
    # (level, filename, why) of each card no prompt gets at all (does not parse, symlink, ...),
    # from the same listing (``memory index`` says them without listing the folder again).
    unindexed: tuple[tuple[Level, str, str], ...] = ()
    # The pinned cards among ``left_out``: more pins than the budget holds (said, never silent).
    pinned_left_out: tuple[str, ...] = ()


def _markup_of(notes: Sequence[Note]) -> dict[str, tuple[str, str]]:
    """``TrustPreview.markup`` of these notes: the first fragment of its body, else of its title
    or summary, of each card a prompt would get."""
    out: dict[str, tuple[str, str]] = {}
    for note in notes:
        if note.unparsed:
            continue  # left out of every prompt: listed with its problem
        found = card_markup(note.body, note.meta.title, note.meta.summary or "")
        if found is not None:
            out[note.filename] = found
    return out


class IndexBuilder:
    """A workspace's index lines, merged index and trust preview, from its card files as they are
    (the caller recovers an interrupted transaction first)."""

    def __init__(self, layout: StoreLayout, usage: UsageLog) -> None:
        self.layout = layout
        # Reads of cards by the model: they order the cards when the index is cut.
        self.usage = usage

    def levels_for_model(self, include_untrusted: bool = False) -> dict[Level, Store]:
        """The levels a prompt may see: an untrusted project store is left out unless
        ``include_untrusted`` (a person's view)."""
        levels = self.layout.stores
        if not include_untrusted and Level.PROJECT in levels and not trust.project_trusted(self.layout):
            levels = {Level.USER: self.layout.user}
        return levels

    def lines(
        self, level: Level, levels: Mapping[Level, Store] | None = None, *, marks: bool = False
    ) -> list[str]:
        """A level's index lines; with ``marks``, a stale card's line ends with its stale mark."""
        return [line for line, _, _ in self.section(level, levels, marks=marks)]

    def index_md(
        self, level: Level, levels: Mapping[Level, Store] | None = None, *, marks: bool = False
    ) -> str:
        """A level's index lines as one text, as ``MEMORY.md`` would hold them."""
        return "".join(line + "\n" for line in self.lines(level, levels, marks=marks))

    def section(
        self,
        level: Level,
        levels: Mapping[Level, Store] | None = None,
        *,
        marks: bool = False,
        unindexed: list[tuple[Level, str, str]] | None = None,
    ) -> list[SectionLine]:
        """A level's index lines with what ranking needs of each card (a ``CardKey``) and its
        stale reason as the mark says it, in file order; the cards without a line are added to
        ``unindexed`` with why."""
        if level not in (self.layout.stores if levels is None else levels):
            return []
        cards = self.layout.store(level).index_cards()
        checks = self.checks(level, cards) if marks and level is Level.PROJECT else {}
        out: list[SectionLine] = []
        for name, line, reason, meta in cards:
            if line is None or meta is None:  # (a card with a line always has its front matter)
                if unindexed is not None:
                    unindexed.append((level, name, reason or "unreadable"))
                continue
            check = checks.get(name)
            if check is not None and check.stale:
                out.append((stale_mark(line, check.reason), (name, meta, True), stale_text(check.reason)))
            else:
                out.append((line, (name, meta, False), None))
        return out

    def checks(self, level: Level, cards: Sequence[IndexCard]) -> dict[str, CardCheck]:
        """Each indexed card's citations checked now, by filename."""
        cited = [
            (level, name, meta) for name, line, _, meta in cards if line is not None and meta is not None
        ]
        return {name: check for (_, name), check in self.layout.grounding.check_many(cited).items()}

    def trust_preview(self) -> TrustPreview:
        """What trusting the project store would give the model: each card's index line, and
        the cards a prompt would leave out with why."""
        project = self.layout.project
        cards = project.index_cards()
        section: list[SectionLine] = [
            (line, (name, meta, False), None)
            for name, line, _, meta in cards
            if line is not None and meta is not None
        ]
        left_out = [(name, reason) for name, line, reason, meta in cards if line is None or meta is None]
        # The bodies were just parsed (an untrusted store has no card cache): no file read again.
        return TrustPreview(
            lines=[line for line, _, _ in section],
            entries=list(section_entries(Level.PROJECT, section, None)),
            left_out=left_out,
            markup=_markup_of(project.notes()),
        )

    def merged_entries(
        self, *, include_untrusted: bool = False, marks: bool = True, keep: Collection[str] = ()
    ) -> MergedIndex:
        """The merged index of both levels as data: one entry per card with an index line, and
        the cards no prompt gets. When the lines do not all fit, the lines kept are chosen by
        rank; ``keep``: the ``level/filename`` of cards the session's index already shows."""
        levels = self.levels_for_model(include_untrusted)
        unindexed: list[tuple[Level, str, str]] = []
        project = self.section(Level.PROJECT, levels, marks=marks, unindexed=unindexed)
        user = self.section(Level.USER, levels, unindexed=unindexed)
        kept = self._kept(project, user, keep)
        entries = (
            *section_entries(Level.PROJECT, project, kept[0]),
            *section_entries(Level.USER, user, kept[1]),
        )
        return MergedIndex(entries=entries, unindexed=tuple(unindexed))

    def prompt_index(
        self, *, include_untrusted: bool = False, marks: bool = True, keep: Collection[str] = ()
    ) -> PromptIndex:
        """``merged_entries`` with which cards it shows and which it leaves out."""
        merged = self.merged_entries(include_untrusted=include_untrusted, marks=marks, keep=keep)
        shown = frozenset(f"{e.level}/{e.filename}" for e in merged.entries if e.in_prompt)
        left_out = tuple(f"{e.level}/{e.filename}" for e in merged.entries if not e.in_prompt)
        pinned = tuple(f"{e.level}/{e.filename}" for e in merged.entries if e.pinned and not e.in_prompt)
        return PromptIndex(
            text=merged.text,
            shown=shown,
            left_out=left_out,
            unindexed=merged.unindexed,
            pinned_left_out=pinned,
        )

    def _kept(
        self, project: list[SectionLine], user: list[SectionLine], keep: Collection[str]
    ) -> tuple[Collection[int] | None, Collection[int] | None]:
        """The lines of each section the budget keeps, by position; None: all of them fit."""
        p_lines, u_lines = [line for line, _, _ in project], [line for line, _, _ in user]
        if index_fits(p_lines, u_lines):
            return (None, None)
        ranks = (self._ranks(Level.PROJECT, project, keep), self._ranks(Level.USER, user, keep))
        pins = (
            [i for i, (_, c, _) in enumerate(project) if c[1].pinned],
            [i for i, (_, c, _) in enumerate(user) if c[1].pinned],
        )
        p_kept, u_kept = index_cut(p_lines, u_lines, ranks, pins)
        return (set(p_kept), set(u_kept))

    def _ranks(self, level: Level, section: Sequence[SectionLine], keep: Collection[str]) -> list[int]:
        if not section:
            return []
        prefix = f"{level}/"
        kept = {k[len(prefix) :] for k in keep if k.startswith(prefix)}
        try:
            use = self.usage.counts(self.layout.store(level).dir)
        except Exception:  # the counts only order the cards: without them, rank without use
            use = {}
        return rank_order([c for _, c, _ in section], use, kept)
