"""The card browser: a full screen over every memory card of both levels (``/memory``).

Pure drawing and reacting. The App loads the cards off the event loop, hands them over as
frozen :class:`CardRow` values through :meth:`CardBrowser.show`, and handles the messages the
screen posts (new, edit, delete, move, $EDITOR, undo) before calling ``show`` again with fresh
rows. Nothing here reads a store or a file.

The list is a Line API ``ScrollView`` (:class:`~widgets.cards.card_list.CardList`): one line
per card, only the lines on screen are rendered, so 10,000 cards scroll and filter as fast as
ten. Filtering is a list comprehension over a haystack each row computes once. The preview of
the selected card shows its body raw, as the model reads it, with what a rendered view would hide
marked (``v`` switches to a Textual ``Markdown`` rendering and back); it is re-rendered only for
the latest selection after a short pause so a held arrow key does not queue a render per row passed.

Card text comes from repositories anyone could write: every string drawn passes through
``one_line`` (or ``strip_terminal``) and is drawn as plain text (``Content``/``Text`` spans, never markup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Markdown, Static

from memory.text.lines import one_line
from widgets.cards.browser_style import BROWSER_CSS
from widgets.cards.card_filtering import PROMPT_FILTERS, SORTS, CardFiltering
from widgets.cards.card_list import CardList, CardRow, FilterAnswer
from widgets.cards.draft import LEVELS
from widgets.cards.preview import preview_body, preview_conflict, preview_meta, preview_raw, preview_view_line
from widgets.dialogs.confirm import ConfirmModal

__all__ = ["CONFLICT_KEY_HINTS", "KEY_HINTS", "NO_CARDS", "NO_MATCH", "CardBrowser", "conflict_refusal"]


KEY_HINTS = (
    "/ filter · 1-4 type · 0 all · l level · s stale only · i in/not in prompt · r sort: name/use · "
    "n new · e edit · p pin · c still true · d delete · m move · o $EDITOR · v raw/rendered · u undo"
    " · Esc back"
)
# While a conflicted card is selected: Enter and e open its resolution.
CONFLICT_KEY_HINTS = KEY_HINTS.replace("e edit", "e/Enter resolve (ours, theirs or a merge)")
FILTER_PLACEHOLDER = "/ to filter: title, summary, body…"
NO_MATCH = "No card matches."
NO_CARDS = "No cards yet — n creates one, /remember TEXT saves one from the chat."
# Long enough to skip the rows a held arrow key passes, short enough to feel immediate.
PREVIEW_DELAY = 0.06
WIDE_MIN_COLUMNS = 100


def conflict_refusal(what: str, versions: str = "ours, theirs") -> str:
    """Why a key refuses a conflicted card, in one line (``versions``: "this machine's, the
    remote's" after a sync)."""
    return f"a conflicted card cannot be {what}: resolve it first (Enter: take {versions} or edit the merge)"


class CardBrowser(CardFiltering, Screen[None]):
    """Every memory card, filterable, with a preview. See the module docstring for the split of
    work with the App; keys are a contract (the hint line at the bottom lists them)."""

    DEFAULT_CSS = BROWSER_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter", show=False),
        Binding("1", "type_filter(0)", "Type 1", show=False),
        Binding("2", "type_filter(1)", "Type 2", show=False),
        Binding("3", "type_filter(2)", "Type 3", show=False),
        Binding("4", "type_filter(3)", "Type 4", show=False),
        Binding("0", "type_filter(-1)", "All types", show=False),
        Binding("l", "cycle_level", "Level", show=False),
        Binding("s", "toggle_stale", "Stale only", show=False),
        Binding("r", "cycle_sort", "Sort", show=False),
        Binding("i", "cycle_prompt_filter", "In the prompt", show=False),
        Binding("p", "pin", "Pin", show=False),
        Binding("c", "confirm", "Still true", show=False),
        Binding("n", "new", "New", show=False),
        Binding("e,enter", "edit", "Edit", show=False),
        Binding("d", "delete", "Delete", show=False),
        Binding("m", "move", "Move", show=False),
        Binding("o", "open_external", "$EDITOR", show=False),
        Binding("v", "toggle_view", "Raw / rendered", show=False),
        Binding("u", "undo", "Undo", show=False),
        Binding("escape", "back", "Back", show=False),
    ]

    # Actions that are letters or digits: never while the filter box has the focus (there the
    # key is text). The Input consumes printable keys first anyway; this is the second lock.
    _LIST_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {
            "type_filter",
            "cycle_level",
            "new",
            "edit",
            "delete",
            "move",
            "open_external",
            "undo",
            "focus_filter",
            "toggle_stale",
            "cycle_sort",
            "confirm",
            "cycle_prompt_filter",
            "pin",
            "toggle_view",
        }
    )

    @dataclass
    class NewCard(Message):
        """Create a card; ``level``/``type`` are the current filters as defaults (None: any)."""

        level: str | None
        type: str | None

    @dataclass
    class EditCard(Message):
        row: CardRow

    @dataclass
    class DeleteCard(Message):
        """Posted only after the person confirmed."""

        row: CardRow

    @dataclass
    class MoveCard(Message):
        """Move the card to the other level."""

        row: CardRow

    @dataclass
    class OpenExternal(Message):
        """Edit the card in $EDITOR (the App hands it a private copy and suspends)."""

        row: CardRow

    @dataclass
    class Undo(Message):
        """Undo the last change."""

    @dataclass
    class PinCard(Message):
        """Pin the card (or unpin it: ``pinned`` is the state asked for)."""

        row: CardRow
        pinned: bool

    @dataclass
    class SearchAsked(Message):
        """The filter box's text changed: the App looks it up in the search index and answers
        with :meth:`CardBrowser.set_search` (the latest text wins)."""

        text: str

    @dataclass
    class ConfirmCard(Message):
        """The person says the card is still true: its citations are taken again (undoable)."""

        row: CardRow

    def __init__(self, rows: Sequence[CardRow] = (), *, levels: tuple[str, ...] = LEVELS) -> None:
        super().__init__()
        self.levels = tuple(lv for lv in LEVELS if lv in levels) or LEVELS
        self._rows: tuple[CardRow, ...] = tuple(rows)
        self._visible: list[CardRow] = []
        self.filter_text: str = ""
        self.type_filter: str | None = None
        self.level_filter: str = "both"
        self.stale_only = False
        self.sort_by: str = SORTS[0]  # "name": the App's order; "use": most read first
        self.prompt_filter: str = PROMPT_FILTERS[0]
        # The body as the model reads it (raw, hidden markup marked), or rendered Markdown (v).
        self.raw_view = True
        # The search index's answer for a filter text: per level the matching cards
        # ("level/filename" -> score, best first), None for a level it cannot search (the
        # substring filter then).
        self.search: tuple[str, FilterAnswer] | None = None
        self.last_filter_ms: float = 0.0
        self.note: str | None = None
        self.flash_text: str = ""
        # What the preview shows now (for the App and the tests) and how often it re-rendered.
        self.preview_row: CardRow | None = None
        self.preview_renders = 0
        self._preview_key: object = object()
        self._preview_timer: Timer | None = None
        self._preview_busy = False
        self._preview_again = False
        self._list = CardList(id="cb-list")
        self._header = Static(id="cb-header")
        self._note = Static(id="cb-note", classes="-hidden")
        self._filter = Input(placeholder=FILTER_PLACEHOLDER, id="cb-filter", compact=True)
        self._meta = Static(id="cb-meta")
        self._raw = Static(id="cb-raw")
        # Links in a card are not followed: a click must not open what a repository planted.
        self._markdown = Markdown(id="cb-body", open_links=False, classes="-hidden")
        self._markdown_empty = True
        self._flash = Static(id="cb-flash", classes="-hidden")
        self._keys = Static(Content(KEY_HINTS), id="cb-keys")
        self.key_hints = KEY_HINTS

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._note
        yield self._filter
        with Container(id="cb-main"):
            yield self._list
            with VerticalScroll(id="cb-preview"):
                yield self._meta
                yield self._raw
                yield self._markdown
        yield self._flash
        yield self._keys

    def on_mount(self) -> None:
        self._set_layout(self.app.size.width)
        self._show_note()
        self._apply_filters(keep=None, fallback=0)
        self._list.focus()

    def on_resize(self, event: events.Resize) -> None:
        self._set_layout(event.size.width)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # The terminal may have been resized while another screen was on top.
        self._set_layout(self.app.size.width)

    def _set_layout(self, width: int) -> None:
        self.set_class(width >= WIDE_MIN_COLUMNS, "-wide")

    # -- public API --------------------------------------------------------------------------

    @property
    def visible_rows(self) -> Sequence[CardRow]:
        """The rows after the filters, in display order (the App's order)."""
        return self._visible

    @property
    def selected(self) -> CardRow | None:
        cursor = self._list.cursor
        return self._visible[cursor] if 0 <= cursor < len(self._visible) else None

    def show(self, rows: Sequence[CardRow], *, note: str | None = None) -> None:
        """Replace every row, re-apply the filters, keep the selection by (level, filename), else
        the same position. ``note`` is a warning line under the header (None hides it)."""
        current = self.selected
        position = max(self._list.cursor, 0)
        self._rows = tuple(rows)
        self.note = note
        if self.is_mounted:
            self._show_note()
            keep = (current.level, current.filename) if current is not None else None
            self._apply_filters(keep=keep, fallback=position)

    def _show_note(self) -> None:
        note = self.note
        self._note.update(Content(one_line(note)) if note else Content(""))
        self._note.set_class(not note, "-hidden")

    def select(self, level: str, filename: str) -> None:
        """Select that card if it is visible (after a create or a move)."""
        for index, row in enumerate(self._visible):
            if row.level == level and row.filename == filename:
                self._list.set_cursor(index)
                return

    def flash(self, text: str, *, error: bool = False, more: Sequence[str] = ()) -> None:
        """One outcome line above the key hints (replaces the previous one; "" hides it);
        ``more``: further lines under it (e.g. the citations a save dropped), one line each."""
        text = "\n".join([one_line(text), *(one_line(m) for m in more)]) if more else one_line(text)
        self.flash_text = text
        self._flash.update(Content(text))
        self._flash.set_class(error, "-error")
        self._flash.set_class(not text, "-hidden")

    # -- filtering -----------------------------------------------------------------------------

    def set_search(self, text: str, keys: FilterAnswer) -> None:
        """The search index's answer for the filter text ``text``; dropped when the box says
        something else by now."""
        if text != self.filter_text:
            return
        self.search = (text, keys)
        if self.is_mounted:
            self._refilter()

    @on(Input.Changed, "#cb-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value
        self._refilter()
        if event.value.strip():
            self.post_message(self.SearchAsked(event.value))

    @on(Input.Submitted, "#cb-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._list.focus()

    # -- preview --------------------------------------------------------------------------------

    @on(CardList.CursorMoved)
    def _cursor_moved(self, event: CardList.CursorMoved) -> None:
        event.stop()
        self._schedule_preview()

    def _schedule_preview(self) -> None:
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DELAY, self._preview_due)

    def _preview_due(self) -> None:
        self._preview_timer = None
        if self._preview_busy:
            # Markdown.update must not overlap itself (the blocks of both would stay): the
            # running pass renders once more with whatever is selected when it ends.
            self._preview_again = True
            return
        self._preview_busy = True
        self.run_worker(self._preview_loop(), group="card-preview", exit_on_error=False)

    async def _preview_loop(self) -> None:
        try:
            while True:
                self._preview_again = False
                await self._render_preview()
                if not self._preview_again:
                    break
        finally:
            self._preview_busy = False

    async def _render_preview(self) -> None:
        row = self.selected
        empty = NO_CARDS if not self._rows else NO_MATCH
        raw = self.raw_view
        key = (row, None if row is not None else empty, raw)
        if key == self._preview_key:
            return
        self._preview_key = key
        conflict = row.conflict if row is not None else None
        self._show_keys(
            KEY_HINTS
            if conflict is None
            else KEY_HINTS.replace("e edit", f"e/Enter resolve ({conflict.versions()} or a merge)")
        )
        body = ""
        if row is None:
            self._meta.update(Content.assemble((empty, "italic $foreground-muted")))
        elif row.conflict is not None:
            # Both versions as plain text: git's markers never reach the Markdown renderer.
            self._meta.update(preview_conflict(row))
        else:
            self._meta.update(Content.assemble(preview_meta(row), preview_view_line(row.body, raw=raw)))
            body = row.body
        self._raw.update(preview_raw(body) if raw and body else "")
        self._raw.set_class(not raw or not body, "-hidden")
        self._markdown.set_class(raw, "-hidden")
        if not raw and body:
            self._markdown_empty = False
            await self._markdown.update(preview_body(body))
        elif not self._markdown_empty:
            self._markdown_empty = True
            await self._markdown.update("")
        try:
            self.query_one("#cb-preview", VerticalScroll).scroll_home(animate=False)
        except NoMatches:
            return  # the screen was taken down while the preview rendered
        self.preview_row = row
        self.preview_renders += 1

    def _show_keys(self, hints: str) -> None:
        if hints != self.key_hints:
            self.key_hints = hints
            self._keys.update(Content(hints))

    # -- actions --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self._LIST_ACTIONS and self._filter.has_focus:
            return False
        return True

    def action_focus_filter(self) -> None:
        self._filter.focus()

    def action_toggle_view(self) -> None:
        self.raw_view = not self.raw_view
        self._schedule_preview()

    def action_pin(self) -> None:
        if (row := self._resolved_or_flash("pinned or unpinned")) is not None:
            self.post_message(self.PinCard(row, not row.pinned))

    def action_confirm(self) -> None:
        if (row := self._resolved_or_flash("confirmed")) is not None:
            self.post_message(self.ConfirmCard(row))

    def action_new(self) -> None:
        level = None if self.level_filter == "both" else self.level_filter
        self.post_message(self.NewCard(level=level, type=self.type_filter))

    def _selected_or_flash(self) -> CardRow | None:
        row = self.selected
        if row is None:
            self.flash("no card selected", error=True)
        return row

    def _resolved_or_flash(self, what: str) -> CardRow | None:
        """The selected card unless it is conflicted (then one line says why not)."""
        row = self._selected_or_flash()
        if row is not None and row.conflict is not None:
            self.flash(conflict_refusal(what, row.conflict.versions()), error=True)
            return None
        return row

    def action_edit(self) -> None:
        if (row := self._selected_or_flash()) is not None:
            self.post_message(self.EditCard(row))

    def action_move(self) -> None:
        if (row := self._resolved_or_flash("moved")) is not None:
            self.post_message(self.MoveCard(row))

    def action_open_external(self) -> None:
        if (row := self._selected_or_flash()) is not None:
            self.post_message(self.OpenExternal(row))

    def action_undo(self) -> None:
        self.post_message(self.Undo())

    def action_delete(self) -> None:
        row = self._selected_or_flash()
        if row is None:
            return
        title = one_line(row.title) or one_line(row.filename)

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(self.DeleteCard(row))

        self.app.push_screen(
            ConfirmModal(
                "Delete this card?",
                f"{row.level} card {one_line(row.filename)} goes to the store's .trash/ (u undoes)",
                body=f"{title}\n\n{row.body}",
                yes="Delete",
            ),
            answered,
        )

    def action_back(self) -> None:
        if self._filter.has_focus:
            # Esc in the box leaves the box, not the screen.
            self._list.focus()
            return
        self.dismiss()
