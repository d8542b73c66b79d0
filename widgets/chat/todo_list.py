"""The model's to-do list, live between the chat and the prompt: one compact block updated in place.

Each item is a line: ``✓`` done (dim), ``▸`` the active item by its active form (bold), ``☐``
pending; the marks carry the state, so NO_COLOR reads the same. A list longer than
``MAX_ITEMS`` shows the active item with a few around it and counts the rest ("+4 more"). When
the screen is short (fewer than ``SHORT_SCREEN`` rows) or the block would take more than a third
of the column it sits in, it is one line: "3/7 done · ▸ Running the tests".

It only draws what it is given (``show``): whether there is a list to show is the chat's call.
Item text is model output: terminal sequences and line breaks are stripped, and each line is cut
to the width, never wrapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget

from memory.text.lines import one_line

__all__ = ["MAX_ITEMS", "SHORT_SCREEN", "TodoListView", "TodoRow"]

Status = Literal["pending", "in_progress", "completed"]
MARKS: dict[str, str] = {"completed": "✓", "in_progress": "▸", "pending": "☐"}
STYLES: dict[str, str] = {"completed": "dim", "in_progress": "bold", "pending": ""}
MAX_ITEMS = 7  # items shown at most; the rest are counted
BEFORE_ACTIVE = 2  # of them, how many come before the active item in a long list
SHORT_SCREEN = 30  # rows: below this the block is one line


@dataclass(frozen=True)
class TodoRow:
    """One item as shown: its ``text`` (the active item's active form) and its status."""

    text: str
    status: Status


def progress(rows: Sequence[TodoRow]) -> str:
    done = sum(1 for r in rows if r.status == "completed")
    return f"{done}/{len(rows)} done"


def current(rows: Sequence[TodoRow]) -> int | None:
    """The item the list is at: the active one, else the first pending one."""
    for wanted in ("in_progress", "pending"):
        found = next((i for i, r in enumerate(rows) if r.status == wanted), None)
        if found is not None:
            return found
    return None


def window(rows: Sequence[TodoRow], limit: int = MAX_ITEMS) -> tuple[int, int]:
    """Which items a long list shows: ``limit`` of them around the current one."""
    if len(rows) <= limit:
        return 0, len(rows)
    at = current(rows)
    focus = at if at is not None else len(rows) - 1
    start = max(0, min(focus - BEFORE_ACTIVE, len(rows) - limit))
    return start, start + limit


def summary_line(rows: Sequence[TodoRow]) -> Content:
    """The one-line form: "3/7 done · ▸ Running the tests"."""
    at = current(rows)
    if at is None:
        return Content.assemble((progress(rows), "bold"))
    row = rows[at]
    return Content.assemble(
        (progress(rows), "bold"), " · ", (f"{MARKS[row.status]} {one_line(row.text)}", STYLES[row.status])
    )


def full_lines(rows: Sequence[TodoRow]) -> list[Content]:
    """The block: a heading with the count, then the items (a long list's window of them)."""
    start, end = window(rows)
    lines = [Content.assemble(("To-do", "bold"), " ", (progress(rows), "dim"))]
    if start:
        lines.append(Content.styled(f"  +{start} earlier", "dim"))
    for row in rows[start:end]:
        lines.append(Content.styled(f"{MARKS[row.status]} {one_line(row.text)}", STYLES[row.status]))
    if end < len(rows):
        lines.append(Content.styled(f"  +{len(rows) - end} more", "dim"))
    return lines


class TodoListView(Widget):
    """The list's block. ``show(rows)`` replaces what it shows (the same widget, redrawn in
    place); ``collapsed`` says whether it is drawn as one line now."""

    DEFAULT_CSS = """
    TodoListView {
        height: auto;
        padding: 0 1;
        margin: 0 1;
        display: none;
        &.-shown {
            display: block;
        }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows: tuple[TodoRow, ...] = ()

    def show(self, rows: Sequence[TodoRow]) -> None:
        """Draw ``rows`` (none: the block is hidden)."""
        rows = tuple(rows)
        if rows == self.rows:
            return
        self.rows = rows
        self.set_class(bool(rows), "-shown")
        self.refresh(layout=True)

    def short(self, viewport: Size, room: int) -> bool:
        """One line: the screen is short, or the block would take over a third of ``room`` rows."""
        return viewport.height < SHORT_SCREEN or len(full_lines(self.rows)) > room // 3

    @property
    def collapsed(self) -> bool:
        parent = self.parent
        room = parent.size.height if isinstance(parent, Widget) else self.app.size.height
        return self.short(self.app.size, room)

    def lines(self) -> list[Content]:
        """What is drawn now, a line each (public so tests can read it)."""
        if not self.rows:
            return []
        return [summary_line(self.rows)] if self.collapsed else full_lines(self.rows)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not self.rows:
            return 0
        return 1 if self.short(viewport, container.height) else len(full_lines(self.rows))

    def render(self) -> Content:
        width = max(self.content_size.width, 1)
        return Content("\n").join(line.truncate(width, ellipsis=True) for line in self.lines())
