"""The status line: one row with the workspace, model, memory mode, last turn, context fill, cost, jobs and,
while the memory panel is hidden, an "F2 memory" hint (with the count of cards new this Run, so
a hidden panel still tells the user that memory changed). A permission mode other than
``default`` is named right after the note ("⏵⏵ accept edits", "⏸ plan mode"): what runs without
asking is never the part that is cut; in ``default`` nothing is shown.

The App formats the values (app/agent/model/pricing.py has the token and cost strings); this widget only
fits them into one row of the current width. When the row is too narrow it gives up, in order:
the last turn's tokens, then the workspace's leading folders ("…/tail"), then the row's end.
The note (e.g. "connecting…") comes first so it is never the part that is cut; on a very
narrow row the hint shrinks to "F2 · N new", then the model loses its "claude-" prefix and the
mode its label.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from memory.text.lines import one_line

__all__ = ["PERMISSION_MODES", "StatusInfo", "StatusLine", "shorten_left"]

SEP = " │ "
MIN_WORKSPACE = 10


@dataclass(frozen=True)
class StatusInfo:
    workspace: str
    model: str
    memory_mode: str
    last_turn: str
    cost: str
    pending: int
    note: str = ""
    panel_hidden: bool = False
    new_cards: int = 0  # cards that arrived since the current Run started
    context_pct: int | None = None  # how full the model's window is (the last request, or after a compaction)
    compact_pct: int = 80  # where a compaction starts: the fill is shown in yellow from there
    permission_mode: str = ""  # "accept-edits" or "plan" is shown; "default" (or "") is not
    thinking: bool = False  # extended thinking for the next turns: "✻ thinking" shown only while on


# How the status line names a permission mode, and its style ("default" is not shown).
PERMISSION_MODES: dict[str, tuple[str, str]] = {
    "accept-edits": ("⏵⏵ accept edits", "bold magenta"),
    "plan": ("⏸ plan mode", "bold cyan"),
}


def shorten_left(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, keeping its end ("…/projects/app")."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = text
    while tail and cell_len(tail) > width - 1:
        tail = tail[1:]
    # Prefer a cut at a folder boundary when that still leaves something to read.
    slash = tail.find("/")
    if 0 <= slash < len(tail) - 1:
        tail = tail[slash:]
    return "…" + tail


class StatusLine(Static):
    """One row at the bottom of the screen; ``show(info)`` replaces what it shows."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        width: 1fr;
        background: $panel;
        color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(
        self, info: StatusInfo | None = None, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.info: StatusInfo | None = info

    def show(self, info: StatusInfo) -> None:
        self.info = info
        self.refresh()

    def line(self, width: int) -> Text:
        """The row for ``width`` cells (public so tests can check it at any size)."""
        info = self.info
        if info is None:
            return Text("")
        lead = _lead(info)
        workspace = one_line(info.workspace)
        model, mode = one_line(info.model), one_line(info.memory_mode)
        fixed: list[tuple[str, str]] = [(model, "bold"), (f"memory {mode}", "")]
        last = one_line(info.last_turn)
        tail = _tail(info)
        new = f" · {info.new_cards} new" if info.new_cards > 0 else ""

        def build(ws: str, with_last: bool) -> list[tuple[str, str]]:
            parts = list(lead)
            if ws:
                parts.append((ws, ""))
            parts += fixed
            if info.thinking:
                parts.append(("✻ thinking", "bold"))
            if with_last and last:
                parts.append((last, ""))
            return parts + tail

        def size(parts: list[tuple[str, str]]) -> int:
            return sum(cell_len(p) for p, _ in parts) + cell_len(SEP) * (len(parts) - 1)

        parts = build(workspace, True)
        if size(parts) > width:
            parts = build(workspace, False)
        if size(parts) > width and workspace:
            room = width - size(build("", False)) - cell_len(SEP)
            # Too little room for a readable tail: the workspace goes before the cost does.
            parts = build(shorten_left(workspace, room) if room >= MIN_WORKSPACE else "", False)
        if size(parts) > width and info.panel_hidden:
            tail[-1] = (f"F2{new}", tail[-1][1])
            parts = build("", False)
        if size(parts) > width:
            # Last resort before cutting the row's end: shorter spellings of model and mode.
            fixed[:] = [(model.removeprefix("claude-"), "bold"), (mode, "")]
            parts = build("", False)
        text = Text(no_wrap=True, overflow="ellipsis")
        for k, (part, style) in enumerate(parts):
            if k:
                text.append(SEP, "dim")
            text.append(part, style)
        text.truncate(width, overflow="ellipsis")
        return text

    def render(self) -> Text:
        return self.line(self.size.width)


def _lead(info: StatusInfo) -> list[tuple[str, str]]:
    """What the row starts with and never cuts: the note, then the permission mode (not default)."""
    note = one_line(info.note)
    lead = [(note, "bold yellow")] if note else []
    shown_mode = PERMISSION_MODES.get(info.permission_mode)
    if shown_mode is not None:
        lead.append(shown_mode)
    return lead


def _tail(info: StatusInfo) -> list[tuple[str, str]]:
    """What the row ends with: the context's fill, the cost, the pending jobs, the F2 hint."""
    tail: list[tuple[str, str]] = []
    if info.context_pct:  # shown from 1 %: a fresh session's fill says nothing
        pct = max(0, info.context_pct)
        style = "bold red" if pct >= 100 else "bold yellow" if pct >= info.compact_pct else ""
        tail.append((f"context {pct}%", style))
    if info.cost:
        tail.append((one_line(info.cost), "bold"))
    if info.pending:
        tail.append((f"{info.pending} pending", "bold yellow"))
    if info.panel_hidden:
        new = f" · {info.new_cards} new" if info.new_cards > 0 else ""
        tail.append((f"F2 memory{new}", "bold cyan" if new else ""))
    return tail
