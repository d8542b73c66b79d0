"""The pending-updates screen (``/pending``): this workspace's memory jobs and what they would change.

One row per memory job (the background worker's update of the memory cards from one chat turn),
grouped as "Pending", "Applied this session", "Rejected this session" (jobs whose every op was
refused: nothing written) and "Orphaned (workspace gone)". Enter expands a
job into its operations; the detail pane shows the selected job, or what the selected operation
would change (a diff for an update, the card for a create or a delete). In review mode ``a`` and
``r`` approve or reject held operations, ``t`` retries a failed job, ``x`` dismisses a failed or
orphaned one.

Pure drawing: the App builds a :class:`PendingState` (reading the spool is its job), calls
:meth:`PendingScreen.show` on every memory event and handles the messages this screen posts.
Ages and the retry countdown are computed at draw time from an injectable clock, so a
one-second timer only repaints. Everything shown that came from a turn, a model or a card is
stripped of terminal sequences and never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from memory.text.lines import one_line
from memory.text.terminal import strip_terminal
from widgets.dialogs.decision import DecisionGate
from widgets.pending.job_detail import DetailPane, job_detail, op_detail
from widgets.pending.job_list import PendingList
from widgets.pending.job_text import DOCTOR_HINT, plural
from widgets.pending.rows import (
    EMPTY_HINTS,
    EMPTY_LINE,
    Row,
    build_rows,
    index_of,
    nearest_selectable,
    row_text,
    section_counts,
)
from widgets.pending.state import EMPTY_STATE, PendingJob, PendingJobState, PendingOp, PendingState

__all__ = ["KEY_HINTS", "PendingScreen"]

KEY_HINTS = "↑↓ select · Enter expand · a approve · r reject · t retry · x dismiss · Esc back"
MODE_STYLES: dict[str, str] = {"auto": "$text-success", "review": "$text-warning", "off": "$text-error"}
S = PendingJobState


class PendingScreen(DecisionGate, Screen[None]):
    """The memory jobs of this workspace. ``show(state)`` replaces them, keeping the selection."""

    # Textual declares it on Screen as a plain attribute, not a ClassVar (mypy), yet it is one.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012

    # Approving, rejecting, retrying and dismissing are decisions: not by keys typed ahead.
    DECISION_KEYS: ClassVar[frozenset[str] | None] = frozenset({"a", "r", "t", "x"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_job", "Expand", show=False),
        Binding("a", "approve", "Approve", show=False),
        Binding("r", "reject", "Reject", show=False),
        Binding("t", "retry", "Retry", show=False),
        Binding("x", "dismiss_job", "Dismiss", show=False),
        Binding("escape", "back", "Back", show=False),
    ]

    DEFAULT_CSS = """
    PendingScreen {
        layout: vertical;
        & > #header {
            height: 1;
            padding: 0 1;
            background: $panel;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > #note {
            height: auto;
            max-height: 3;
            padding: 0 1;
            color: $text-warning;
        }
        & > #body {
            height: 1fr;
            layout: horizontal;
        }
        #list {
            width: 1fr;
            height: 1fr;
        }
        #detail-scroll {
            width: 1fr;
            height: 1fr;
            border-left: vkey $secondary;
            padding: 0 1;
            scrollbar-size-vertical: 1;
        }
        & > #flash {
            height: 1;
            padding: 0 1;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > #keys {
            height: 1;
            padding: 0 1;
            color: $foreground-muted;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > .-empty {
            display: none;
        }
        &.-narrow > #keys {
            /* The hints are 80 cells: at 80 columns they need the padding. */
            padding: 0;
        }
        &.-narrow #body {
            layout: vertical;
        }
        &.-narrow #list {
            width: 1fr;
            height: 1fr;
        }
        &.-narrow #detail-scroll {
            width: 1fr;
            height: 1fr;
            border-left: none;
            border-top: hkey $secondary;
        }
    }
    """

    @dataclass
    class Approve(Message):
        """Approve held operations: ``ops`` are op indexes, None for every held op of the job."""

        job_id: str
        ops: tuple[int, ...] | None

    @dataclass
    class Reject(Message):
        """Reject held operations: ``ops`` are op indexes, None for every held op of the job."""

        job_id: str
        ops: tuple[int, ...] | None

    @dataclass
    class Retry(Message):
        """Retry a failed job now."""

        job_id: str

    @dataclass
    class Dismiss(Message):
        """Drop a failed or orphaned job (the App asks for confirmation first)."""

        job_id: str

    def __init__(
        self, state: PendingState | None = None, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        super().__init__()
        self._clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self._state = state or EMPTY_STATE
        self._expanded: set[str] = set()
        self._counts = section_counts(self._state)
        self._list = PendingList(self._draw_row, self._moved, id="list")
        self._detail = DetailPane(self._detail_content)
        self._header = Static(self._header_content(), id="header")
        self._note = Static("", id="note")
        self._flash = Static("", id="flash", classes="-empty")
        rows = build_rows(self._state, frozenset())
        self._list.set_rows(rows, nearest_selectable(rows, 0))
        self._update_note()

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._note
        with Container(id="body"):
            yield self._list
            with VerticalScroll(id="detail-scroll"):
                yield self._detail
        yield self._flash
        yield Static(KEY_HINTS, id="keys")

    def on_mount(self) -> None:
        self._list.focus()
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        # Ages and the countdown are computed at draw time: a repaint is enough.
        self._list.refresh()
        self._detail.refresh()

    # -- public API ----------------------------------------------------------------------------

    def show(self, state: PendingState) -> None:
        """Replace the state; keep the selected row and the expanded jobs (see the module doc)."""
        old_rows, old_cursor = self._list.rows, self._list.cursor
        old_key = old_rows[old_cursor].key if old_cursor is not None else None
        new_ids = {job.id for job in state.jobs}
        by_id = {job.id: job for job in state.jobs}
        before = {job.id: job for job in self._state.jobs}

        def replaced(job_id: str) -> bool:
            # Approving part of a held job moves the rest to a new job, and the old one is gone or
            # listed as applied: the new job takes its place (expansion, selection).
            old, new = before.get(job_id), by_id.get(job_id)
            return (old is None or old.state == S.HELD) and (new is None or new.state != S.HELD)

        heirs = {job.split_from: job for job in state.jobs if job.split_from and replaced(job.split_from)}
        expanded = {job_id for job_id in self._expanded if job_id in new_ids and job_id not in heirs}
        expanded |= {heir.id for parent, heir in heirs.items() if parent in self._expanded}
        self._state = state
        self._expanded = expanded
        target: tuple[str, int | None] | None = None
        if old_key is not None:
            job_id, op_index = old_key
            heir = heirs.get(job_id)
            if heir is not None:
                first_op = heir.ops[0].index if heir.ops and heir.id in expanded else None
                target = (heir.id, first_op)
            elif job_id in by_id:
                job = by_id[job_id]
                if op_index is not None and all(op.index != op_index for op in job.ops):
                    op_index = None
                target = (job_id, op_index)
        rows = build_rows(state, frozenset(expanded))
        cursor = index_of(rows, target) if target is not None else None
        if cursor is None:
            cursor = nearest_selectable(rows, old_cursor or 0)
        self._list.set_rows(rows, cursor)
        self._counts = section_counts(state)
        self._header.update(self._header_content())
        self._update_note()
        new_key = rows[cursor].key if cursor is not None else None
        self._refresh_detail(scroll_home=new_key != old_key)

    def flash(self, text: str, *, error: bool = False) -> None:
        """Show one outcome line above the key hints (an empty text hides it)."""
        line = one_line(text)
        self._flash.update(Content.assemble((line, "bold $text-error" if error else "$text-success")))
        self._flash.set_class(not line, "-empty")

    @property
    def state(self) -> PendingState:
        return self._state

    @property
    def selected_job(self) -> PendingJob | None:
        row = self._selected_row()
        return row.job if row is not None else None

    @property
    def selected_op(self) -> PendingOp | None:
        row = self._selected_row()
        return row.op if row is not None and row.kind == "op" else None

    @property
    def expanded(self) -> frozenset[str]:
        return frozenset(self._expanded)

    def row_texts(self) -> list[str]:
        """The list's rows as plain text, in order, laid out for the list's current width."""
        width = self._list.row_width
        return [self._draw_row(row, width).plain.rstrip() for row in self._list.rows]

    def detail_text(self) -> str:
        return self._detail_content().plain

    # -- drawing -------------------------------------------------------------------------------

    def _selected_row(self) -> Row | None:
        cursor = self._list.cursor
        rows = self._list.rows
        return rows[cursor] if cursor is not None and 0 <= cursor < len(rows) else None

    def _draw_row(self, row: Row, width: int) -> Text:
        return row_text(row, width, self._clock(), frozenset(self._expanded), self._counts)

    def _header_content(self) -> Content:
        state = self._state
        mode = one_line(state.mode) or "?"
        parts: list[str | tuple[str, str]] = [
            ("Pending memory updates", "bold"),
            f" · {plural(len(state.jobs), 'job')} · mode: ",
            (mode, f"bold {MODE_STYLES.get(state.mode, '')}".strip()),
        ]
        if state.mode == "auto":
            parts.append((" · /mode review holds updates for approval", "$foreground-muted"))
        return Content.assemble(*parts)

    def _update_note(self) -> None:
        note = strip_terminal(self._state.note or "", keep_newlines=False).strip()
        self._note.update(Content(note))
        self._note.set_class(not note, "-empty")

    def _detail_content(self) -> Content:
        row = self._selected_row()
        if row is None or row.job is None:
            if not self._state.jobs:
                return Content.assemble(
                    (EMPTY_LINE + "\n", "bold"), (" ".join(EMPTY_HINTS), "$foreground-muted")
                )
            return Content("")
        if row.kind == "op" and row.op is not None:
            return op_detail(row.job.state, row.op)
        return job_detail(row.job, self._clock(), row.job.id in self._expanded)

    def _refresh_detail(self, *, scroll_home: bool = False) -> None:
        self._detail.refresh(layout=True)
        if scroll_home and self.is_mounted:
            self.query_one("#detail-scroll", VerticalScroll).scroll_home(animate=False)

    def _moved(self) -> None:
        # A refusal is about the row it was said on.
        self.flash("")
        self._refresh_detail(scroll_home=True)

    # -- keys ----------------------------------------------------------------------------------

    def action_toggle_job(self) -> None:
        row = self._selected_row()
        if row is None or row.kind != "job" or row.job is None:
            return
        job_id = row.job.id
        if job_id in self._expanded:
            self._expanded.discard(job_id)
        else:
            self._expanded.add(job_id)
        rows = build_rows(self._state, frozenset(self._expanded))
        self._list.set_rows(rows, index_of(rows, (job_id, None)))
        self._refresh_detail()

    def _decide(self, verb: str, message: Callable[[str, tuple[int, ...] | None], Message]) -> None:
        done = {"approve": "approved", "reject": "rejected"}.get(verb, verb)
        row = self._selected_row()
        if row is None or row.job is None:
            self.flash(f"nothing selected to {verb}", error=True)
            return
        job = row.job
        if row.kind == "op" and row.op is not None:
            if row.op.status == "held":
                self.post_message(message(job.id, (row.op.index,)))
            else:
                self.flash(
                    f"only held updates can be {done}: this update is {one_line(row.op.status)}", error=True
                )
            return
        if job.state == S.HELD:
            self.post_message(message(job.id, None))
        else:
            self.flash(f"only held updates can be {done}: this job is {one_line(job.state)}", error=True)

    def action_approve(self) -> None:
        self._decide("approve", self.Approve)

    def action_reject(self) -> None:
        self._decide("reject", self.Reject)

    def action_retry(self) -> None:
        job = self.selected_job
        if job is not None and job.state == S.FAILED:
            self.post_message(self.Retry(job.id))
        else:
            self.flash("only a failed job can be retried", error=True)

    def action_dismiss_job(self) -> None:
        job = self.selected_job
        if job is not None and job.state in (S.FAILED, S.ORPHANED):
            self.post_message(self.Dismiss(job.id))
        elif job is not None and job.state == S.DAMAGED:
            self.flash(DOCTOR_HINT, error=True)
        else:
            self.flash("only a failed or orphaned job can be dismissed", error=True)

    def action_back(self) -> None:
        self.dismiss()
