"""How the pending screen says a job: its state in words, its age and retry countdown, the
refused operations, and the colours of states and statuses.

Ages and countdowns are computed from the ``now`` passed in (the screen's clock) at draw time.
Everything that came from a turn, a model or a card goes through ``one_line``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from memory.text.lines import one_line
from widgets.pending.state import PendingJob, PendingJobState, PendingOp

__all__ = [
    "DOCTOR_HINT",
    "OP_STATUS_STYLES",
    "STATE_STYLES",
    "age",
    "content_style",
    "format_age",
    "not_written",
    "op_label",
    "plural",
    "refused",
    "state_text",
]

DOCTOR_HINT = "a damaged job file: run `pseudoclaude memory doctor --fix` to move it aside"

S = PendingJobState
# (marker, rich style) per job state; an unknown state is drawn plain.
STATE_STYLES: dict[PendingJobState, tuple[str, str]] = {
    S.QUEUED: ("·", "dim"),
    S.EXTRACTING: ("●", "cyan"),
    S.APPLYING: ("●", "cyan"),
    S.RETRYING: ("↻", "yellow"),
    S.FAILED: ("✗", "bold red"),
    S.HELD: ("◆", "magenta"),
    S.APPLIED: ("✓", "green"),
    S.REJECTED: ("⊘", "red"),
    S.ORPHANED: ("○", "dim yellow"),
    S.DAMAGED: ("!", "bold red"),
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


def content_style(rich_style: str) -> str:
    """The Textual Content style of one of the rich styles above."""
    return _CONTENT_STYLES.get(rich_style, "")


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


def age(job: PendingJob, now: datetime) -> str:
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


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def refused(job: PendingJob) -> tuple[int, int, str]:
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
        first = first or one_line(op.reason)
    return rejected, conflicts, first


def not_written(rejected: int, conflicts: int) -> str:
    """The refused ops in words, e.g. "1 rejected, 2 conflicts" (only the parts that are not zero)."""
    parts = [f"{rejected} rejected"] if rejected else []
    if conflicts:
        parts.append(plural(conflicts, "conflict"))
    return ", ".join(parts)


def state_text(job: PendingJob, now: datetime) -> str:
    """The state as a job row says it, e.g. "retrying 2/3 · next try in 4s"."""
    state = job.state
    reason = one_line(job.reason or "")
    if state == S.RETRYING:
        text = f"retrying {job.attempt}/{job.max_attempts}"
        countdown = _countdown(job, now)
        return f"{text} · {countdown}" if countdown else text
    if state in (S.FAILED, S.DAMAGED):
        return f"{state}: {reason}" if reason else str(state)
    if state == S.HELD:
        held = _held_count(job) or len(job.ops)
        return f"held · {plural(held, 'op')}"
    if state == S.APPLIED:
        created, updated, deleted = job.counts
        text = f"applied +{created} ~{updated} −{deleted}"
        refusals = not_written(*refused(job)[:2])
        return f"{text}, {refusals}" if refusals else text
    if state == S.REJECTED:
        rejected, conflicts, first = refused(job)
        text = f"rejected: {plural(rejected + conflicts, 'op')}" if rejected + conflicts else "rejected"
        return f"{text} · {first}" if first else text
    return one_line(state) or "?"


def op_label(op: PendingOp) -> str:
    return one_line(op.title) or one_line(op.filename) or "(untitled)"
