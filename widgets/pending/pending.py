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

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.content import Content
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from memory.text.sanitize import strip_terminal
from widgets.dialogs.modals import render_preview

if TYPE_CHECKING:
    from memory.jobs.spool import JobViewState

    # A spooled job's state, or the outcome of one finished this session: "applied" (something
    # was written) or "rejected" (it had ops and every one was refused).
    PendingJobState = Literal[JobViewState, "applied", "rejected"]

__all__ = ["PendingJob", "PendingOp", "PendingScreen", "PendingState", "format_age"]


@dataclass(frozen=True)
class PendingOp:
    index: int  # the op's index in its job: what Approve/Reject carry
    action: str  # "create" | "update" | "delete"
    level: str  # "project" | "user"
    type: str  # card type, may be "" (a delete, an update that keeps the type)
    title: str
    summary: str
    filename: str  # "" for a create not written yet
    status: str  # "held" | "applied" | "rejected" | "conflict"
    reason: str = ""  # rejected/conflict: why (one line)
    before: str | None = None  # update/delete: the card's current text (None: not there any more)
    after: str | None = None  # create/update: the proposed text


@dataclass(frozen=True)
class PendingJob:
    id: str
    state: PendingJobState
    excerpt: str  # one line of the turn (the user's words)
    created: str  # RFC 3339 UTC, when the job was spooled; the age shown is computed from it, live
    attempt: int = 0  # retrying: the attempt being waited for ("attempt 2/3")
    max_attempts: int = 3
    next_try_at: str | None = None  # retrying: RFC 3339 UTC, shown as a countdown
    reason: str | None = None  # failed/damaged/orphaned: why
    counts: tuple[int, int, int] = (0, 0, 0)  # applied: created, updated, deleted
    # held/applied/rejected: the ops, those refused ("rejected", "conflict") with their reasons
    ops: tuple[PendingOp, ...] = ()
    workspace: str = ""
    split_from: str | None = None  # the job whose remaining ops moved here
    turns: int = 1  # several turns coalesced into one job


@dataclass(frozen=True)
class PendingState:
    jobs: tuple[PendingJob, ...]
    mode: str = "auto"  # memory mode: "auto" | "review" | "off"
    note: str | None = None  # e.g. "could not read the spool: …" (shown in yellow)


EMPTY_STATE = PendingState(jobs=())

KEY_HINTS = "↑↓ select · Enter expand · a approve · r reject · t retry · x dismiss · Esc back"
DOCTOR_HINT = "a damaged job file: run `pseudoclaude memory doctor --fix` to move it aside"
EMPTY_LINE = "No pending memory updates."
EMPTY_HINTS = (
    "Each chat turn's memory update is listed here while it is",
    "queued, retrying, failed or held for your review.",
)
# Bounds on what one operation's detail may cost: difflib is quadratic in the worst case.
DIFF_MAX_LINES = 2000
DETAIL_MAX_CHARS = 2000

# (marker, rich style) per job state; an unknown state is drawn plain.
STATE_STYLES: dict[PendingJobState, tuple[str, str]] = {
    "queued": ("·", "dim"),
    "extracting": ("●", "cyan"),
    "applying": ("●", "cyan"),
    "retrying": ("↻", "yellow"),
    "failed": ("✗", "bold red"),
    "held": ("◆", "magenta"),
    "applied": ("✓", "green"),
    "rejected": ("⊘", "red"),
    "orphaned": ("○", "dim yellow"),
    "damaged": ("!", "bold red"),
}
OP_STATUS_STYLES: dict[str, str] = {
    "held": "magenta",
    "applied": "green",
    "rejected": "red",
    "conflict": "yellow",
}
# The same colours for the detail pane, which is a Textual Content (theme variables).
_CONTENT_STYLES: dict[str, str] = {
    "magenta": "$text-secondary",
    "green": "$text-success",
    "red": "$text-error",
    "bold red": "bold $text-error",
    "yellow": "$text-warning",
    "dim yellow": "$text-warning",
    "cyan": "$text-accent",
    "dim": "$foreground-muted",
}
MODE_STYLES: dict[str, str] = {"auto": "$text-success", "review": "$text-warning", "off": "$text-error"}

SECTIONS: tuple[tuple[str, Callable[[PendingJob], bool]], ...] = (
    ("Pending", lambda job: job.state not in ("applied", "rejected", "orphaned")),
    ("Applied this session", lambda job: job.state == "applied"),
    ("Rejected this session", lambda job: job.state == "rejected"),
    ("Orphaned (workspace gone)", lambda job: job.state == "orphaned"),
)


def _clean(text: str | None) -> str:
    """One line of hostile text, safe for the terminal."""
    return " ".join(strip_terminal(text or "", keep_newlines=False).split())


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_age(seconds: float) -> str:
    """``12s``, ``3m``, ``2h``, ``4d``: whole units, rounded down."""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _age(job: PendingJob, now: datetime) -> str:
    created = _parse_time(job.created)
    return format_age((now - created).total_seconds()) if created is not None else ""


def _countdown(job: PendingJob, now: datetime) -> str | None:
    """The countdown, e.g. "next try in 4s" (rounded up: never "0s" while still waiting), or None."""
    at = _parse_time(job.next_try_at)
    if at is None:
        return None
    left = math.ceil((at - now).total_seconds())
    return f"next try in {format_age(left)}" if left > 0 else "next try now"


def _held_count(job: PendingJob) -> int:
    return sum(1 for op in job.ops if op.status == "held")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _refused(job: PendingJob) -> tuple[int, int, str]:
    """(rejected, conflicts, the first refused op's reason) among the job's ops, in index order."""
    rejected = conflicts = 0
    first = ""
    for op in job.ops:
        if op.status == "rejected":
            rejected += 1
        elif op.status == "conflict":
            conflicts += 1
        else:
            continue
        first = first or _clean(op.reason)
    return rejected, conflicts, first


def _not_written(rejected: int, conflicts: int) -> str:
    """The refused ops in words, e.g. "1 rejected, 2 conflicts" (only the parts that are not zero)."""
    parts = [f"{rejected} rejected"] if rejected else []
    if conflicts:
        parts.append(_plural(conflicts, "conflict"))
    return ", ".join(parts)


def state_text(job: PendingJob, now: datetime) -> str:
    """The state as a job row says it, e.g. "retrying 2/3 · next try in 4s"."""
    state = job.state
    reason = _clean(job.reason)
    if state == "retrying":
        text = f"retrying {job.attempt}/{job.max_attempts}"
        countdown = _countdown(job, now)
        return f"{text} · {countdown}" if countdown else text
    if state in ("failed", "damaged"):
        return f"{state}: {reason}" if reason else state
    if state == "held":
        held = _held_count(job) or len(job.ops)
        return f"held · {_plural(held, 'op')}"
    if state == "applied":
        created, updated, deleted = job.counts
        text = f"applied +{created} ~{updated} −{deleted}"
        refused = _not_written(*_refused(job)[:2])
        return f"{text}, {refused}" if refused else text
    if state == "rejected":
        rejected, conflicts, first = _refused(job)
        text = f"rejected: {_plural(rejected + conflicts, 'op')}" if rejected + conflicts else "rejected"
        return f"{text} · {first}" if first else text
    return _clean(state) or "?"


def _op_label(op: PendingOp) -> str:
    return _clean(op.title) or _clean(op.filename) or "(untitled)"


@dataclass(frozen=True)
class _Row:
    """One line of the list. Only job and op rows can be selected."""

    kind: Literal["heading", "blank", "job", "op", "none", "empty", "hint"]
    text: str = ""
    job: PendingJob | None = None
    op: PendingOp | None = None

    @property
    def selectable(self) -> bool:
        return self.kind in ("job", "op")

    @property
    def key(self) -> tuple[str, int | None] | None:
        """The row's identity across show(): (job id, op index or None for the job row)."""
        if self.kind == "job" and self.job is not None:
            return (self.job.id, None)
        if self.kind == "op" and self.job is not None and self.op is not None:
            return (self.job.id, self.op.index)
        return None


def build_rows(state: PendingState, expanded: frozenset[str]) -> list[_Row]:
    rows: list[_Row] = []
    for name, belongs in SECTIONS:
        jobs = [job for job in state.jobs if belongs(job)]
        if not jobs:
            continue
        if rows:
            rows.append(_Row("blank"))
        rows.append(_Row("heading", name, job=None))
        for job in jobs:
            rows.append(_Row("job", job=job))
            if job.id in expanded:
                if job.ops:
                    rows.extend(_Row("op", job=job, op=op) for op in job.ops)
                else:
                    rows.append(_Row("none", "  (no operations)", job=job))
    if not rows:
        rows.append(_Row("empty", EMPTY_LINE))
        rows.extend(_Row("hint", line) for line in EMPTY_HINTS)
    return rows


def _fit(text: Text, width: int) -> Text:
    text.no_wrap = True
    text.truncate(max(width, 1), overflow="ellipsis")
    return text


def row_text(row: _Row, width: int, now: datetime, expanded: frozenset[str], counts: dict[str, int]) -> Text:
    """One list row laid out for ``width`` cells (one line, cut with "…")."""
    width = max(width, 10)
    if row.kind == "heading":
        head = Text(row.text, "bold underline")
        count = counts.get(row.text)
        if count is not None:
            head.append(f" {count}", "dim")
        return _fit(head, width)
    if row.kind == "empty":
        return _fit(Text(row.text, "bold"), width)
    if row.kind in ("hint", "none"):
        return _fit(Text(row.text, "dim italic"), width)
    if row.kind == "op" and row.op is not None:
        op = row.op
        line = Text("  ")
        line.append(f"[{_clean(op.status)}]", OP_STATUS_STYLES.get(op.status, ""))
        line.append(f" {_clean(op.action)} · {_clean(op.level)} · ")
        line.append(_op_label(op))
        return _fit(line, width)
    if row.kind == "job" and row.job is not None:
        job = row.job
        marker, style = STATE_STYLES.get(job.state, ("•", ""))
        line = Text("▾ " if job.id in expanded else "▸ ", "dim")
        line.append(f"{marker} {state_text(job, now)}", style)
        excerpt = _clean(job.excerpt)
        if excerpt:
            line.append("  " + excerpt)
        age = _age(job, now)
        if age:
            # The age keeps its column: the state and excerpt are cut first.
            left = max(width - len(age) - 1, 1)
            line.truncate(left, overflow="ellipsis", pad=True)
            line.append(" " + age, "dim")
        return _fit(line, width)
    return Text("")


# -- the detail pane --------------------------------------------------------------------------


def _cstyle(rich_style: str) -> str:
    return _CONTENT_STYLES.get(rich_style, "")


def _bounded(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(lines[:DIFF_MAX_LINES])


@lru_cache(maxsize=64)
def _op_detail(job_state: str, op: PendingOp) -> Content:
    """What an operation is and what it would change. Cached: the timer repaints every second."""
    parts: list[str | Content | tuple[str, str]] = []
    head = " · ".join(p for p in (_clean(op.action), _clean(op.level), _clean(op.type)) if p)
    parts.append((head + "\n", "bold $text-accent"))
    parts.append((_op_label(op) + "\n", "bold"))
    summary = _clean(op.summary)
    if summary:
        parts.append(summary + "\n")
    if op.filename:
        parts.append(("file: ", "$foreground-muted"))
        parts.append(_clean(op.filename) + "\n")
    parts.append(("status: ", "$foreground-muted"))
    parts.append((_clean(op.status), _cstyle(OP_STATUS_STYLES.get(op.status, ""))))
    reason = _clean(op.reason)
    if reason:
        parts.append(f" · {reason}")
    parts.append("\n\n")
    parts.extend(_change(op))
    keys = _op_keys(job_state, op)
    if keys:
        parts.append(("\n\n" + keys, "$foreground-muted"))
    return Content.assemble(*parts)


def _change(op: PendingOp) -> list[str | Content | tuple[str, str]]:
    if op.status in ("applied", "rejected", "conflict") and op.before is None and op.after is None:
        return []  # written or refused already: the status line above says it, there is no change to show
    gone: tuple[str, str] = ("the card is not there any more", "italic $text-warning")
    if op.action == "update":
        if op.before is None:
            return [gone]
        if op.after is None:
            return [("(no proposed text)", "italic $foreground-muted")]
        name = _clean(op.filename) or "card"
        diff = "\n".join(
            difflib.unified_diff(
                _bounded(op.before).splitlines(),
                _bounded(op.after).splitlines(),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
                lineterm="",
            )
        )
        if not diff:
            return [("(the text is unchanged)", "italic $foreground-muted")]
        return [("Change:\n", "bold"), render_preview(diff, "diff")]
    if op.action == "delete":
        if op.before is None:
            return [gone]
        return [("Would delete:\n", "bold $text-error"), render_preview(op.before, "text")]
    if op.action == "create":
        return [("New card:\n", "bold $text-success"), render_preview(op.after or "", "text")]
    text = op.after if op.after is not None else op.before
    return [render_preview(text, "text")] if text else []


def _op_keys(job_state: str, op: PendingOp) -> str:
    if op.status == "held":
        return "a approve this update · r reject it"
    if job_state == "failed":
        return "t retry the job · x dismiss it"
    if job_state == "orphaned":
        return "x dismiss the job"
    return ""


def _job_keys(job: PendingJob, expanded: bool) -> str:
    enter = "Enter hide the operations" if expanded else "Enter show the operations"
    if job.state == "held":
        return f"a approve all held · r reject all held · {enter}"
    if job.state == "failed":
        return f"t retry · x dismiss · {enter}"
    if job.state == "orphaned":
        return f"x dismiss · {enter}"
    if job.state == "damaged":
        return DOCTOR_HINT
    return f"{enter} · nothing to decide: the worker carries on by itself"


def job_detail(job: PendingJob, now: datetime, expanded: bool) -> Content:
    marker, style = STATE_STYLES.get(job.state, ("•", ""))
    parts: list[str | Content | tuple[str, str]] = [
        (f"{marker} {state_text(job, now)}\n", f"bold {_cstyle(style)}".strip())
    ]

    def field(label: str, value: str) -> None:
        parts.append((f"{label}: ", "$foreground-muted"))
        parts.append(value + "\n")

    rejected, conflicts, first_refusal = _refused(job)
    reason = _clean(job.reason) or (first_refusal if job.state == "rejected" else "")
    if reason:
        field("reason", reason)
    if job.state == "retrying":
        field("attempt", f"{job.attempt} of {job.max_attempts}")
    excerpt = strip_terminal(job.excerpt or "", keep_newlines=True).strip()
    if len(excerpt) > DETAIL_MAX_CHARS:
        excerpt = excerpt[: DETAIL_MAX_CHARS - 1] + "…"
    field("turn" if job.turns <= 1 else f"turns ({job.turns}, merged)", excerpt or "(no text)")
    if job.workspace and job.state == "orphaned":
        field("workspace", _clean(job.workspace))
    age = _age(job, now)
    if age:
        field("created", f"{age} ago · {_clean(job.created)}")
    if job.state == "applied":
        created, updated, deleted = job.counts
        field("applied", f"{created} created, {updated} updated, {deleted} deleted")
        if rejected or conflicts:
            words = _not_written(rejected, conflicts)
            field("not written", f"{words} · {first_refusal}" if first_refusal else words)
    elif job.state == "rejected":
        field("applied", "nothing: every operation was refused")
    if job.ops:
        by_status: dict[str, int] = {}
        for op in job.ops:
            by_status[op.status] = by_status.get(op.status, 0) + 1
        detail = ", ".join(f"{n} {_clean(status)}" for status, n in by_status.items())
        field("operations", f"{len(job.ops)} ({detail})")
    else:
        field("operations", "none")
    field("job", _clean(job.id))
    parts.append(("\n" + _job_keys(job, expanded), "$foreground-muted"))
    return Content.assemble(*parts)


class _Detail(Widget):
    """The detail pane's text, computed at draw time (the timer's repaint updates the ages)."""

    DEFAULT_CSS = """
    _Detail { height: auto; }
    """

    def __init__(self, content: Callable[[], Content]) -> None:
        super().__init__()
        self._content = content

    def render(self) -> Content:
        return self._content()


# -- the list ---------------------------------------------------------------------------------


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
        draw: Callable[[_Row, int], Text],
        moved: Callable[[], None],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._moved = moved
        self.rows: list[_Row] = []
        self.cursor: int | None = None

    @property
    def row_width(self) -> int:
        width = self.scrollable_content_region.width
        return width if width > 0 else 80

    def set_rows(self, rows: list[_Row], cursor: int | None) -> None:
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
        strip = Strip(text.render(self.app.console), text.cell_len)
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


# -- the screen -------------------------------------------------------------------------------


class PendingScreen(Screen[None]):
    """The memory jobs of this workspace. ``show(state)`` replaces them, keeping the selection."""

    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (100, "-wide")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle", "Expand", show=False),
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
        self._counts = _section_counts(self._state)
        self._list = PendingList(self._draw_row, self._moved, id="list")
        self._detail = _Detail(self._detail_content)
        self._header = Static(self._header_content(), id="header")
        self._note = Static("", id="note")
        self._flash = Static("", id="flash", classes="-empty")
        rows = build_rows(self._state, frozenset())
        self._list.set_rows(rows, _nearest_selectable(rows, 0))
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
            return (old is None or old.state == "held") and (new is None or new.state != "held")

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
        cursor = _index_of(rows, target) if target is not None else None
        if cursor is None:
            cursor = _nearest_selectable(rows, old_cursor or 0)
        self._list.set_rows(rows, cursor)
        self._counts = _section_counts(state)
        self._header.update(self._header_content())
        self._update_note()
        new_key = rows[cursor].key if cursor is not None else None
        self._refresh_detail(scroll_home=new_key != old_key)

    def flash(self, text: str, *, error: bool = False) -> None:
        """Show one outcome line above the key hints (an empty text hides it)."""
        line = _clean(text)
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

    def _selected_row(self) -> _Row | None:
        cursor = self._list.cursor
        rows = self._list.rows
        return rows[cursor] if cursor is not None and 0 <= cursor < len(rows) else None

    def _draw_row(self, row: _Row, width: int) -> Text:
        return row_text(row, width, self._clock(), frozenset(self._expanded), self._counts)

    def _header_content(self) -> Content:
        state = self._state
        mode = _clean(state.mode) or "?"
        parts: list[str | tuple[str, str]] = [
            ("Pending memory updates", "bold"),
            f" · {_plural(len(state.jobs), 'job')} · mode: ",
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
            return _op_detail(row.job.state, row.op)
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

    def action_toggle(self) -> None:
        row = self._selected_row()
        if row is None or row.kind != "job" or row.job is None:
            return
        job_id = row.job.id
        if job_id in self._expanded:
            self._expanded.discard(job_id)
        else:
            self._expanded.add(job_id)
        rows = build_rows(self._state, frozenset(self._expanded))
        self._list.set_rows(rows, _index_of(rows, (job_id, None)))
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
                    f"only held updates can be {done}: this update is {_clean(row.op.status)}", error=True
                )
            return
        if job.state == "held":
            self.post_message(message(job.id, None))
        else:
            self.flash(f"only held updates can be {done}: this job is {_clean(job.state)}", error=True)

    def action_approve(self) -> None:
        self._decide("approve", self.Approve)

    def action_reject(self) -> None:
        self._decide("reject", self.Reject)

    def action_retry(self) -> None:
        job = self.selected_job
        if job is not None and job.state == "failed":
            self.post_message(self.Retry(job.id))
        else:
            self.flash("only a failed job can be retried", error=True)

    def action_dismiss_job(self) -> None:
        job = self.selected_job
        if job is not None and job.state in ("failed", "orphaned"):
            self.post_message(self.Dismiss(job.id))
        elif job is not None and job.state == "damaged":
            self.flash(DOCTOR_HINT, error=True)
        else:
            self.flash("only a failed or orphaned job can be dismissed", error=True)

    def action_back(self) -> None:
        self.dismiss()


def _section_counts(state: PendingState) -> dict[str, int]:
    return {name: sum(1 for job in state.jobs if belongs(job)) for name, belongs in SECTIONS}


def _index_of(rows: list[_Row], key: tuple[str, int | None] | None) -> int | None:
    if key is None:
        return None
    return next((i for i, row in enumerate(rows) if row.key == key), None)


def _nearest_selectable(rows: list[_Row], position: int) -> int | None:
    """The selectable row at ``position`` (clamped), else the next one down, else up."""
    if not rows:
        return None
    position = min(max(position, 0), len(rows) - 1)
    for i in range(position, len(rows)):
        if rows[i].selectable:
            return i
    for i in range(position - 1, -1, -1):
        if rows[i].selectable:
            return i
    return None
