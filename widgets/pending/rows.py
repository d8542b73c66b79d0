"""The pending list's rows: jobs grouped in sections, a job's operations under it when expanded.

A row is one line, laid out for a width at draw time (cut with "…"; a job's age keeps its
column). Everything that came from a turn, a model or a card goes through ``one_line``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from rich.text import Text

from memory.text.lines import one_line
from widgets.pending.job_text import OP_STATUS_STYLES, STATE_STYLES, age, op_label, state_text
from widgets.pending.state import PendingJob, PendingJobState, PendingOp, PendingState

__all__ = [
    "EMPTY_HINTS",
    "EMPTY_LINE",
    "SECTIONS",
    "Row",
    "build_rows",
    "index_of",
    "nearest_selectable",
    "row_text",
    "section_counts",
]

EMPTY_LINE = "No pending memory updates."
EMPTY_HINTS = (
    "Each chat turn's memory update is listed here while it is",
    "queued, retrying, failed or held for your review.",
)

S = PendingJobState
SECTIONS: tuple[tuple[str, Callable[[PendingJob], bool]], ...] = (
    ("Pending", lambda job: job.state not in (S.APPLIED, S.REJECTED, S.ORPHANED)),
    ("Applied this session", lambda job: job.state == S.APPLIED),
    ("Rejected this session", lambda job: job.state == S.REJECTED),
    ("Orphaned (workspace gone)", lambda job: job.state == S.ORPHANED),
)


@dataclass(frozen=True)
class Row:
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


def build_rows(state: PendingState, expanded: frozenset[str]) -> list[Row]:
    rows: list[Row] = []
    for name, belongs in SECTIONS:
        jobs = [job for job in state.jobs if belongs(job)]
        if not jobs:
            continue
        if rows:
            rows.append(Row("blank"))
        rows.append(Row("heading", name, job=None))
        for job in jobs:
            rows.append(Row("job", job=job))
            if job.id in expanded:
                if job.ops:
                    rows.extend(Row("op", job=job, op=op) for op in job.ops)
                else:
                    rows.append(Row("none", "  (no operations)", job=job))
    if not rows:
        rows.append(Row("empty", EMPTY_LINE))
        rows.extend(Row("hint", line) for line in EMPTY_HINTS)
    return rows


def _fit(text: Text, width: int) -> Text:
    text.no_wrap = True
    text.truncate(max(width, 1), overflow="ellipsis")
    return text


def row_text(row: Row, width: int, now: datetime, expanded: frozenset[str], counts: dict[str, int]) -> Text:
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
        line.append(f"[{one_line(op.status)}]", OP_STATUS_STYLES.get(op.status, ""))
        line.append(f" {one_line(op.action)} · {one_line(op.level)} · ")
        line.append(op_label(op))
        return _fit(line, width)
    if row.kind == "job" and row.job is not None:
        job = row.job
        marker, style = STATE_STYLES.get(job.state, ("•", ""))
        line = Text("▾ " if job.id in expanded else "▸ ", "dim")
        line.append(f"{marker} {state_text(job, now)}", style)
        excerpt = one_line(job.title or job.excerpt)
        if excerpt:
            line.append("  " + excerpt)
        age_text = age(job, now)
        if age_text:
            # The age keeps its column: the state and excerpt are cut first.
            left = max(width - len(age_text) - 1, 1)
            line.truncate(left, overflow="ellipsis", pad=True)
            line.append(" " + age_text, "dim")
        return _fit(line, width)
    return Text("")


def section_counts(state: PendingState) -> dict[str, int]:
    return {name: sum(1 for job in state.jobs if belongs(job)) for name, belongs in SECTIONS}


def index_of(rows: list[Row], key: tuple[str, int | None] | None) -> int | None:
    if key is None:
        return None
    return next((i for i, row in enumerate(rows) if row.key == key), None)


def nearest_selectable(rows: list[Row], position: int) -> int | None:
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
