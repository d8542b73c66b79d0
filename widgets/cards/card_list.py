"""The card browser's list: one line per card, a virtualised Line API ``ScrollView``.

Only the lines on screen are rendered (and cached per width and selection), so 10,000 cards
scroll as fast as ten. Card text comes from repositories anyone could write: every string drawn
goes through ``one_line`` and is drawn as plain text (``Text`` spans, never markup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from memory.text.lines import one_line
from widgets.cards.draft import CardConflict
from widgets.panel.memory_panel import TYPE_TAGS
from widgets.segments import styled

__all__ = ["CONFLICT_TAG", "CardList", "CardRow", "CiteLine", "FilterAnswer", "card_date", "conflict_line"]

STALE_TAG = "stale"
PIN_TAG = "pin"
CONFLICT_TAG = "conflicted"


# The search index's answer for the browser's filter words: per level, "level/filename" -> score
# of the matching cards, best first; None for a level it cannot search (untrusted).
FilterAnswer = dict[str, dict[str, float] | None]


@dataclass(frozen=True)
class CiteLine:
    """One citation of a card as checked when the rows were read."""

    spec: str  # "path" or "path:10-40"
    state: str  # fresh | changed | renamed | deleted | unreadable; "" when not checked
    reason: str = ""  # one line; "" when fresh


@dataclass(frozen=True)
class CardRow:
    level: str  # "project" | "user"
    filename: str
    type: str  # one of CARD_TYPES, or "" when the card's front matter is broken
    title: str
    summary: str
    updated: str  # RFC 3339 UTC, e.g. "2026-11-30T04:32:46Z"
    source: str  # "manual" or "model"
    body: str
    sha256: str
    untrusted: bool = False  # a project card not used until the person trusts the store
    broken: str | None = None  # why the card's front matter is unreadable (still listed)
    stale: str | None = None  # why the card is stale (one line); None when fresh or uncited
    cites: tuple[CiteLine, ...] = ()
    reads: int = 0  # how often the model read it (read_memory), for this user
    last_read: str = ""  # RFC 3339 UTC, "" when never read
    use: str = ""  # "read 12× · last 3 days ago" / "never read", as of the read
    pinned: bool = False  # ``pinned: true``: ranked first into the prompt's index
    in_prompt: bool = True  # in the index a new Run's prompt gets (False: cut by the budget)
    # Both versions of a card git left with conflict markers (``broken`` says why it is in no
    # prompt); None for every other card.
    conflict: CardConflict | None = None
    haystack: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.haystack:
            # Once per row, so a filter keystroke over 10,000 cards is only substring tests.
            text = f"{self.title}\n{self.summary}\n{self.filename}\n{self.type}\n{self.body}"
            object.__setattr__(self, "haystack", text.casefold())


def conflict_line(conflict: CardConflict) -> str:
    """ "changed on two branches: HEAD and feature" (the list's and the preview's words)."""
    labels = [one_line(side.label, 40) for side in (conflict.ours, conflict.theirs) if side.label]
    return "changed on two branches" + (f": {' and '.join(labels)}" if labels else "")


def card_date(updated: str) -> str:
    """The day of an RFC 3339 time, as the list and the preview show it."""
    return one_line(updated)[:10]


def _row_text(row: CardRow, width: int) -> Text:
    """The row's one line, exactly ``width`` cells: level, tag, title — summary, date, source."""
    level = {"project": "P", "user": "U"}.get(row.level, "?")
    text = Text(no_wrap=True, end="")
    text.append(level, "bold")
    text.append(" ")
    if row.conflict is not None:
        # Before anything else on the line: a narrow row still says it is in no prompt.
        text.append(CONFLICT_TAG, "bold red")
        title = one_line(row.title) or one_line(row.filename)
        summary = conflict_line(row.conflict) + " · Enter resolves"
    elif row.broken is not None:
        text.append("broken", "bold red")
        title = one_line(row.filename)
        summary = one_line(row.broken)
    else:
        tag, colour = TYPE_TAGS.get(row.type, (one_line(row.type)[:6] or "?", "white"))
        text.append(f"{tag:<4}", colour)
        title = one_line(row.title) or one_line(row.filename)
        summary = one_line(row.summary)
    text.append(" ")
    start = len(text)
    if row.pinned:
        text.append(PIN_TAG, "bold magenta")
        text.append(" ")
        start = len(text)
    if row.untrusted:
        text.append("untrusted", "bold yellow")
        text.append(" ")
    if row.stale is not None:
        text.append(STALE_TAG, "bold yellow")
        text.append(" ")
    text.append(title, "bold")
    if row.stale is not None:
        # Before the summary: a narrow row cuts the summary, not why the card is stale.
        text.append(" · " + (one_line(row.stale) or "a cited file changed"), "yellow")
    if summary:
        text.append(" — " + summary, "dim")
    if row.untrusted:
        # The whole card reads as inactive, the tag stays legible.
        text.stylize(
            "dim", start + len("untrusted ") + (len(STALE_TAG) + 1 if row.stale is not None else 0), len(text)
        )
    right = Text(f" {card_date(row.updated)} {one_line(row.source)[:6]:<6}", "dim", no_wrap=True, end="")
    if width >= cell_len(right.plain) + 24:
        text.truncate(width - cell_len(right.plain), overflow="ellipsis", pad=True)
        text.append_text(right)
    else:
        # Too narrow for the date: the title matters more.
        text.truncate(width, overflow="ellipsis", pad=True)
    return text


class CardList(ScrollView, can_focus=True):
    """The virtualised list: one line per row, only the visible lines rendered."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"card-list--cursor", "card-list--cursor-blurred"}

    DEFAULT_CSS = """
    CardList {
        height: 1fr;
        width: 1fr;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        background: $surface;
        & > .card-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
        }
        & > .card-list--cursor-blurred {
            background: $block-cursor-blurred-background;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    @dataclass
    class CursorMoved(Message):
        """The selected index changed (the screen refreshes the preview)."""

        index: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Sequence[CardRow] = ()
        self.cursor: int = -1
        # Bumped on every set_rows so cached lines of the old rows are never reused.
        self._generation = 0
        self._cache: LRUCache[tuple[int, int, int, bool, bool], Strip] = LRUCache(256)

    def set_rows(self, rows: Sequence[CardRow], cursor: int) -> None:
        self.rows = rows
        self._generation += 1
        self._cache.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, len(rows))
        self._scroll_update(self.virtual_size)
        self.set_cursor(cursor, force=True)
        self.refresh()

    def set_cursor(self, index: int, *, force: bool = False) -> None:
        index = min(max(index, 0), len(self.rows) - 1) if self.rows else -1
        if index == self.cursor and not force:
            return
        old = self.cursor
        self.cursor = index
        if 0 <= old < len(self.rows):
            self.refresh_line(old)
        if index >= 0:
            self.refresh_line(index)
        self.scroll_cursor_into_view()
        self.post_message(self.CursorMoved(index))

    def scroll_cursor_into_view(self) -> None:
        if self.cursor < 0:
            return
        height = self.scrollable_content_region.height
        if height <= 0:
            # Not laid out yet: once it is, the cursor must still end up on screen.
            self.call_after_refresh(self.scroll_cursor_into_view)
            return
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, force=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, force=True)

    def action_move(self, delta: int) -> None:
        self.set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.set_cursor(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_jump(self, where: int) -> None:
        self.set_cursor(len(self.rows) - 1 if where < 0 else where)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = offset.y + round(self.scroll_y)
        if 0 <= index < len(self.rows):
            self.focus()
            self.set_cursor(index)

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.rows))
        self.call_after_refresh(self.scroll_cursor_into_view)

    def notify_style_update(self) -> None:
        # A theme change restyles every line: cached strips hold the old colours.
        super().notify_style_update()
        self._cache.clear()

    def on_focus(self, event: events.Focus) -> None:
        self.refresh()

    def on_blur(self, event: events.Blur) -> None:
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        index = round(self.scroll_y) + y
        if width <= 0 or not 0 <= index < len(self.rows):
            return Strip.blank(max(width, 0), base)
        selected = index == self.cursor
        focused = self.has_focus
        key = (self._generation, index, width, selected, focused)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        style: Style = base
        if selected:
            component = "card-list--cursor" if focused else "card-list--cursor-blurred"
            style = base + self.get_component_rich_style(component)
        text = _row_text(self.rows[index], width)
        text.stylize_before(style, 0, len(text))
        strip = Strip(styled(text.render(self.app.console), style), cell_len(text.plain))
        strip = strip.adjust_cell_length(width, style)
        self._cache[key] = strip
        return strip
