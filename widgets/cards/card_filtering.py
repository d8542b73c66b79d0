"""The card browser's filters: the filter box (through the search index's answer when it came),
the type, level, stale and in-the-prompt filters, the sort, and the header that says them.

A mixin of :class:`~widgets.cards.browser.CardBrowser`, which holds the rows, the list and the
header these methods read and redraw; the screen's own work (layout, preview, the card actions)
is there. Filtering is a list comprehension over a haystack each row computes once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Static

from memory.text.lines import one_line
from widgets.cards.card_list import CardList, CardRow, FilterAnswer
from widgets.cards.draft import CARD_TYPES

__all__ = ["PROMPT_FILTERS", "PROMPT_FILTER_LABELS", "SORTS", "CardFiltering"]

SORTS = ("name", "use")
# The "in the prompt" filter (i cycles it): every card, those a new Run's index shows, the rest.
PROMPT_FILTERS = ("all", "in", "out")
PROMPT_FILTER_LABELS = {"in": "in the prompt", "out": "not in the prompt"}


class CardFiltering:
    """The filters' state and the rows they leave (``_visible``), for the card browser."""

    levels: tuple[str, ...]
    filter_text: str
    type_filter: str | None
    level_filter: str  # "both" or a level
    stale_only: bool
    sort_by: str  # one of SORTS
    prompt_filter: str  # one of PROMPT_FILTERS
    # The search index's answer for a filter text (see CardBrowser.set_search).
    search: tuple[str, FilterAnswer] | None
    last_filter_ms: float
    _rows: tuple[CardRow, ...]
    _visible: list[CardRow]
    _list: CardList
    _header: Static

    if TYPE_CHECKING:
        # The browser's own, declared here for the checker only: the row under the cursor, and
        # the preview that follows the selection.
        @property
        def selected(self) -> CardRow | None: ...

        def _schedule_preview(self) -> None: ...

    def _matcher(self) -> Callable[[CardRow], bool]:
        """Whether a row passes the filter box: the search index's answer for this text when
        it came, else (meanwhile, or for a level it cannot search) every word as a substring.
        The index matches words by their start ("rob" finds "robot", not "frobnicate"); the
        words it skips (one letter, stop words) must still appear, as before."""
        terms = self.filter_text.casefold().split()
        found = self.search[1] if self.search is not None and self.search[0] == self.filter_text else None

        def substring(row: CardRow) -> bool:
            return all(term in row.haystack for term in terms)

        if not terms or found is None:
            return substring

        def indexed(row: CardRow) -> bool:
            keys = found.get(row.level)
            # A conflicted card is in no prompt, so in no search index: its words, both versions'.
            return (
                keys is None or row.conflict is not None or f"{row.level}/{row.filename}" in keys
            ) and substring(row)

        return indexed

    def _ranked(self) -> FilterAnswer | None:
        """The index's answer for the filter box's words now (None: no words, or not in yet)."""
        if not self.filter_text.strip() or self.search is None or self.search[0] != self.filter_text:
            return None
        return self.search[1]

    def _relevance(self) -> Callable[[CardRow], tuple[object, ...]]:
        """The filtered rows as search ranks them: best score first; equal scores fresh before
        stale, then the most read, then the newest, then the project's, then by filename. A
        row the index could not score (a level it cannot search, a conflicted card) follows,
        in the App's order."""
        scores: dict[str, float] = {}
        for found in (self._ranked() or {}).values():
            scores.update(found or {})
        order = {id(row): i for i, row in enumerate(self._visible)}

        def key(row: CardRow) -> tuple[object, ...]:
            score = scores.get(f"{row.level}/{row.filename}")
            if score is None:
                return (1, order[id(row)])
            newest = tuple(-ord(c) for c in row.updated) or (1,)  # newest first, undated last
            return (
                0,
                -round(score, 9),
                row.stale is not None,
                -row.reads,
                newest,
                row.level != "project",
                row.filename,
            )

        return key

    def _apply_filters(self, *, keep: tuple[str, str] | None, fallback: int) -> None:
        started = time.perf_counter()
        kind = self.type_filter
        level = None if self.level_filter == "both" else self.level_filter
        stale_only = self.stale_only
        prompt = None if self.prompt_filter == "all" else self.prompt_filter == "in"
        matches = self._matcher()
        self._visible = [
            row
            for row in self._rows
            if (kind is None or row.type == kind)
            and (level is None or row.level == level)
            and (not stale_only or row.stale is not None)
            and (prompt is None or row.in_prompt == prompt)
            and matches(row)
        ]
        if self.sort_by == "use":
            # Stable: cards read as often and as lately keep the App's order.
            self._visible.sort(key=lambda r: (r.reads, r.last_read), reverse=True)
        elif self._ranked() is not None:
            self._visible.sort(key=self._relevance())
        self.last_filter_ms = (time.perf_counter() - started) * 1000
        cursor = fallback
        if keep is not None:
            for index, row in enumerate(self._visible):
                if (row.level, row.filename) == keep:
                    cursor = index
                    break
        self._list.set_rows(self._visible, cursor)
        self._update_header()
        self._schedule_preview()

    def _refilter(self) -> None:
        """After a filter change: keep the selected card if it still matches, else the first."""
        current = self.selected
        keep = (current.level, current.filename) if current is not None else None
        self._apply_filters(keep=keep, fallback=0)

    def _update_header(self) -> None:
        parts: list[str | tuple[str, str]] = [
            ("Memory cards", "bold"),
            f" · {len(self._visible):,} of {len(self._rows):,}",
            f" · level: {self.level_filter}",
            f" · type: {self.type_filter or 'all'}",
        ]
        if self.stale_only:
            parts.append((" · stale only", "bold $text-warning"))
        if self.prompt_filter in PROMPT_FILTER_LABELS:
            parts.append((f" · {PROMPT_FILTER_LABELS[self.prompt_filter]}", "bold $text-accent"))
        else:
            out = sum(1 for row in self._rows if not row.in_prompt)
            if out:
                parts.append(f" · {out:,} not in the prompt")
        # More pins than the prompt's budget holds: said, never dropped silently.
        pins = sum(
            1 for r in self._rows if r.pinned and not r.in_prompt and not r.untrusted and r.broken is None
        )
        if pins:
            parts.append(
                (f" · {pins:,} pinned {'card' if pins == 1 else 'cards'} did not fit", "bold $text-warning")
            )
        if self.sort_by != SORTS[0]:
            parts.append(f" · sort: {self.sort_by}")
        if self.filter_text.strip():
            parts.append(" · filter: ")
            parts.append((one_line(self.filter_text), "italic"))
        if self.sort_by == SORTS[0] and self._ranked() is not None:
            parts.append(" · best match first")
        self._header.update(Content.assemble(*parts))

    # -- the filter keys ---------------------------------------------------------------------

    def action_type_filter(self, index: int) -> None:
        self.type_filter = CARD_TYPES[index] if 0 <= index < len(CARD_TYPES) else None
        self._refilter()

    def action_cycle_level(self) -> None:
        cycle = ("both", *self.levels)
        position = cycle.index(self.level_filter) if self.level_filter in cycle else 0
        self.level_filter = cycle[(position + 1) % len(cycle)]
        self._refilter()

    def action_toggle_stale(self) -> None:
        self.stale_only = not self.stale_only
        self._refilter()

    def action_cycle_sort(self) -> None:
        self.sort_by = (
            SORTS[(SORTS.index(self.sort_by) + 1) % len(SORTS)] if self.sort_by in SORTS else SORTS[0]
        )
        self._refilter()

    def action_cycle_prompt_filter(self) -> None:
        at = PROMPT_FILTERS.index(self.prompt_filter) if self.prompt_filter in PROMPT_FILTERS else 0
        self.prompt_filter = PROMPT_FILTERS[(at + 1) % len(PROMPT_FILTERS)]
        self._refilter()
