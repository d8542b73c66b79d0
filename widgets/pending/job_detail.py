"""The pending screen's detail pane: the selected job, or what the selected operation would
change (a diff for an update, the card for a create or a delete), with the keys that apply.

Bounded: difflib is quadratic in the worst case, so a diff sees at most ``DIFF_MAX_LINES`` lines
of each side, and a turn's text at most ``DETAIL_MAX_CHARS`` characters. Everything that came
from a turn, a model or a card is stripped of terminal sequences and never parsed as markup; a
card's text is shown raw, as the model would read it, with what a rendered view hides (comments,
tags, invisible characters) marked (``widgets.marked``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache

from textual.content import Content
from textual.widget import Widget

from memory.text.lines import ELLIPSIS, one_line
from memory.text.terminal import strip_terminal
from widgets.marked import marked_preview
from widgets.pending.job_text import (
    DOCTOR_HINT,
    OP_STATUS_STYLES,
    STATE_STYLES,
    age,
    content_style,
    not_written,
    op_label,
    refused,
    state_text,
)
from widgets.pending.state import PendingJob, PendingJobState, PendingOp

__all__ = ["DETAIL_MAX_CHARS", "DIFF_MAX_LINES", "DetailPane", "job_detail", "op_detail"]

DIFF_MAX_LINES = 2000
DETAIL_MAX_CHARS = 2000
DROPPED_SHOWN = 5  # dropped citations listed in the detail; the rest are counted
S = PendingJobState


def _bounded(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(lines[:DIFF_MAX_LINES])


@lru_cache(maxsize=64)
def op_detail(job_state: str, op: PendingOp) -> Content:
    """What an operation is and what it would change. Cached: the timer repaints every second."""
    parts: list[str | Content | tuple[str, str]] = []
    head = " · ".join(p for p in (one_line(op.action), one_line(op.level), one_line(op.type)) if p)
    parts.append((head + "\n", "bold $text-accent"))
    parts.append((op_label(op) + "\n", "bold"))
    summary = one_line(op.summary)
    if summary:
        parts.append(summary + "\n")
    if op.filename:
        parts.append(("file: ", "$foreground-muted"))
        parts.append(one_line(op.filename) + "\n")
    parts.append(("status: ", "$foreground-muted"))
    parts.append((one_line(op.status), content_style(OP_STATUS_STYLES.get(op.status, ""))))
    reason = one_line(op.reason)
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
        name = one_line(op.filename) or "card"
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
        return [("Change:\n", "bold"), marked_preview(diff, "diff")]
    if op.action == "delete":
        if op.before is None:
            return [gone]
        return [
            ("Would delete: moves to .trash/ (undo restores it)\n", "bold $text-error"),
            marked_preview(op.before),
        ]
    if op.action == "create":
        return [("New card:\n", "bold $text-success"), marked_preview(op.after or "")]
    text = op.after if op.after is not None else op.before
    return [marked_preview(text)] if text else []


def _op_keys(job_state: str, op: PendingOp) -> str:
    if op.status == "held":
        return "a approve this update · r reject it"
    if job_state == S.FAILED:
        return "t retry the job · x dismiss it"
    if job_state == S.ORPHANED:
        return "x dismiss the job"
    return ""


def _job_keys(job: PendingJob, expanded: bool) -> str:
    enter = "Enter hide the operations" if expanded else "Enter show the operations"
    if job.state == S.HELD:
        return f"a approve all held · r reject all held · {enter}"
    if job.state == S.FAILED:
        return f"t retry · x dismiss · {enter}"
    if job.state == S.ORPHANED:
        return f"x dismiss · {enter}"
    if job.state == S.DAMAGED:
        return DOCTOR_HINT
    return f"{enter} · nothing to decide: the worker carries on by itself"


def job_detail(job: PendingJob, now: datetime, expanded: bool) -> Content:
    marker, style = STATE_STYLES.get(job.state, ("•", ""))
    parts: list[str | Content | tuple[str, str]] = [
        (f"{marker} {state_text(job, now)}\n", f"bold {content_style(style)}".strip())
    ]

    def field(label: str, value: str) -> None:
        parts.append((f"{label}: ", "$foreground-muted"))
        parts.append(value + "\n")

    rejected, conflicts, first_refusal = refused(job)
    reason = one_line(job.reason or "") or (first_refusal if job.state == S.REJECTED else "")
    if reason:
        field("reason", reason)
    if job.state == S.RETRYING:
        field("attempt", f"{job.attempt} of {job.max_attempts}")
    excerpt = strip_terminal(job.excerpt or "", keep_newlines=True).strip()
    if len(excerpt) > DETAIL_MAX_CHARS:
        excerpt = excerpt[: DETAIL_MAX_CHARS - 1] + ELLIPSIS
    if job.title:  # a consolidation has no turn: what it cleans instead
        field("consolidation", one_line(job.title))
    else:
        field("turn" if job.turns <= 1 else f"turns ({job.turns}, merged)", excerpt or "(no text)")
    if job.workspace and job.state == S.ORPHANED:
        field("workspace", one_line(job.workspace))
    spooled = age(job, now)
    if spooled:
        field("created", f"{spooled} ago · {one_line(job.created)}")
    if job.state == S.APPLIED:
        created, updated, deleted = job.counts
        field("applied", f"{created} created, {updated} updated, {deleted} deleted")
        if rejected or conflicts:
            words = not_written(rejected, conflicts)
            field("not written", f"{words} · {first_refusal}" if first_refusal else words)
        for line in job.dropped[:DROPPED_SHOWN]:
            field("citation dropped", one_line(line))
        if len(job.dropped) > DROPPED_SHOWN:
            field("citations dropped", f"{len(job.dropped) - DROPPED_SHOWN} more")
    elif job.state == S.REJECTED:
        field("applied", "nothing: every operation was refused")
    if job.ops:
        by_status: dict[str, int] = {}
        for op in job.ops:
            by_status[op.status] = by_status.get(op.status, 0) + 1
        detail = ", ".join(f"{n} {one_line(status)}" for status, n in by_status.items())
        field("operations", f"{len(job.ops)} ({detail})")
    else:
        field("operations", "none")
    field("job", one_line(job.id))
    parts.append(("\n" + _job_keys(job, expanded), "$foreground-muted"))
    return Content.assemble(*parts)


class DetailPane(Widget):
    """The detail pane's text, computed at draw time (the timer's repaint updates the ages)."""

    DEFAULT_CSS = """
    DetailPane { height: auto; }
    """

    def __init__(self, content: Callable[[], Content]) -> None:
        super().__init__()
        self._content = content

    def render(self) -> Content:
        return self._content()
