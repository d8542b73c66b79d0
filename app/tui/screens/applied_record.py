"""A memory job that finished while this app ran, as the pending screen lists it for the session:
the ``JobApplied`` event's ops (applied, in conflict, refused) as the pending widget's rows.

Pure: built from the event the Manager sent, nothing read from a store.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memory.constants import Action
from memory.model import rfc3339
from widgets.pending.state import PendingOp

if TYPE_CHECKING:
    from memory.events import JobApplied
    from memory.model import AppliedOp, Conflict, DroppedCite, Rejection

__all__ = ["AppliedRecord", "applied_record"]

# The slot of the "+created ~updated −deleted" counts an applied action adds to.
_COUNT_SLOT = {Action.CREATE: 0, Action.UPDATE: 1, Action.DELETE: 2}


def _value(x: object) -> str:
    return str(getattr(x, "value", x) if x is not None else "")


@dataclass(frozen=True)
class AppliedRecord:
    """A job finished while this app ran (by this window or another on the workspace): applied,
    or ``rejected`` when it had ops and every one was refused (nothing written)."""

    job_id: str
    seen: str  # RFC 3339 UTC: when the app heard of it (the order of the session's rows)
    excerpt: str
    ops: tuple[PendingOp, ...]
    counts: tuple[int, int, int]
    created: str = ""  # RFC 3339 UTC: when the job was spooled (the row's age); "" unknown
    state: Literal["applied", "rejected"] = "applied"
    dropped: tuple[str, ...] = ()  # "op N: 'x' leaves the workspace…", one per dropped citation


def _applied(a: AppliedOp) -> PendingOp:
    return PendingOp(
        index=a.index,
        action=_value(a.action),
        level=_value(a.level),
        type="",
        title=a.title,
        summary="",
        filename=a.filename,
        status="applied",
    )


def _conflicted(c: Conflict) -> PendingOp:
    """An update or delete whose card changed since the model saw it (the op as the model gave it)."""
    op = c.op or {}
    return PendingOp(
        index=c.index,
        action=str(op.get("action", "update")),
        level=_value(c.level),
        type=str(op.get("type", "")),
        title=str(op.get("title", "")),
        summary="",
        filename=c.filename,
        status="conflict",
        reason=c.reason,
    )


def _refused(r: Rejection) -> PendingOp:
    """An op the store refused (the op as the model gave it, whatever of it there is)."""
    op = r.op or {}
    return PendingOp(
        index=r.index,
        action=str(op.get("action", "")),
        level=str(op.get("level", "")),
        type=str(op.get("type", "")),
        title=str(op.get("title", "")),
        summary="",
        filename=str(op.get("filename", "")),
        status="rejected",
        reason=r.reason,
    )


def _dropped_line(d: DroppedCite) -> str:
    """One dropped citation; its reason names it already, or the citation is said first."""
    if repr(d.cite) in d.reason:
        return f"op {d.index}: {d.reason}"
    return f"op {d.index}: {d.cite!r}: {d.reason}"


def applied_record(event: JobApplied, excerpt: str, *, now: _dt.datetime | None = None) -> AppliedRecord:
    counts = [0, 0, 0]
    for a in event.applied:
        counts[_COUNT_SLOT.get(a.action, 1)] += 1
    ops = [
        *(_applied(a) for a in event.applied),
        *(_conflicted(c) for c in event.conflicts),
        *(_refused(r) for r in event.rejected),
    ]
    ops.sort(key=lambda o: o.index)
    return AppliedRecord(
        job_id=event.job_id,
        seen=rfc3339(now or _dt.datetime.now(_dt.UTC)),
        excerpt=excerpt,
        ops=tuple(ops),
        counts=(counts[0], counts[1], counts[2]),
        created=event.created,
        state="rejected" if event.all_refused else "applied",
        dropped=tuple(_dropped_line(d) for d in event.dropped_cites),
    )
