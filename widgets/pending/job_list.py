"""The pending screen's list: the jobs and their operations, one line each, with a keyboard cursor."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from widgets.pending.rows import Row
from widgets.segments import styled

__all__ = ["PendingList"]


class PendingList(ScrollView, can_focus=True):
    """The jobs and their operations, one line each; a keyboard cursor on the selectable rows.

    Rows are drawn on demand (Line API), so the one-second repaint costs only the visible lines
    and never rebuilds anything."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"pending-list--cursor"}

    DEFAULT_CSS = """
    PendingList {
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        & > .pending-list--cursor {
            color: $block-cursor-blurred-foreground;
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .pending-list--cursor {
            color: $block-cursor-foreground;
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("home", "edge(False)", "First", show=False),
        Binding("end", "edge(True)", "Last", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
    ]

    def __init__(
        self,
        draw: Callable[[Row, int], Text],
        moved: Callable[[], None],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._moved = moved
        self.rows: list[Row] = []
        self.cursor: int | None = None

    @property
    def row_width(self) -> int:
        width = self.scrollable_content_region.width
        return width if width > 0 else 80

    def set_rows(self, rows: list[Row], cursor: int | None) -> None:
        self.rows = rows
        self.cursor = cursor
        if self.is_mounted:
            self.virtual_size = Size(self.scrollable_content_region.width, len(rows))
            self.refresh()
            self.scroll_to_cursor()

    def on_mount(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.rows))

    def on_resize(self, event: Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.rows))
        self.scroll_to_cursor()

    def scroll_to_cursor(self) -> None:
        if self.cursor is None or not self.is_mounted:
            return
        top = self.cursor
        if top > 0 and self.rows[top - 1].kind == "heading":
            # A section's first job brings its heading into view with it.
            top -= 1
        self.scroll_to_region(
            Region(0, top, max(self.scrollable_content_region.width, 1), self.cursor - top + 1),
            animate=False,
            force=True,
            immediate=True,
        )

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if not 0 <= index < len(self.rows):
            return Strip.blank(width, base)
        text = self._draw(self.rows[index], width)
        text.style = base
        if index == self.cursor:
            text.stylize(self.get_component_rich_style("pending-list--cursor"))
            # The highlight spans the whole line, not just the text.
            text.truncate(width, overflow="ellipsis", pad=True)
        # Rich leaves a text without spans unstyled (``text.style`` ignored): given it here.
        strip = Strip(styled(text.render(self.app.console), base), text.cell_len)
        return strip.crop_extend(0, width, base)

    # -- moving the cursor ---------------------------------------------------------------------

    def _selectable(self) -> list[int]:
        return [i for i, row in enumerate(self.rows) if row.selectable]

    def select(self, index: int | None) -> None:
        """Move the cursor (a user's move: the key, a click)."""
        if index == self.cursor:
            return
        self.cursor = index
        self.refresh()
        self.scroll_to_cursor()
        self._moved()

    def action_move(self, step: int) -> None:
        choices = self._selectable()
        if not choices:
            return
        if self.cursor is None:
            self.select(choices[0])
            return
        after = [i for i in choices if (i > self.cursor if step > 0 else i < self.cursor)]
        if after:
            self.select(after[0] if step > 0 else after[-1])

    def action_edge(self, last: bool) -> None:
        choices = self._selectable()
        if choices:
            self.select(choices[-1] if last else choices[0])

    def action_page(self, direction: int) -> None:
        choices = self._selectable()
        if not choices:
            return
        page = max(self.scrollable_content_region.height - 1, 1)
        target = (self.cursor if self.cursor is not None else choices[0]) + direction * page
        if direction > 0:
            ahead = [i for i in choices if i >= target]
            self.select(ahead[0] if ahead else choices[-1])
        else:
            behind = [i for i in choices if i <= target]
            self.select(behind[-1] if behind else choices[0])

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = offset.y + self.scroll_offset.y
        if 0 <= index < len(self.rows) and self.rows[index].selectable:
            event.stop()
            self.select(index)
