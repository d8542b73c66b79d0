"""What the memory manager tells its subscribers (the side panel, print mode, the CLI).

Events are small frozen values: a subscriber may keep them, pass them to another thread or
post them as UI messages without copying. An event that changed cards says which ones
(``JobApplied.cards_changed``, ``StoresChanged.cards``): a reader of the cards (the side panel)
reads those again and keeps the rest; one that cannot say (None) has every card read again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.constants import Action, Level
from memory.model import AppliedOp, Conflict, DroppedCite, Operation, Rejection


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class CardsChanged(_Event):
    """Cards of one store written (created or replaced) or deleted, by filename."""

    kind: Literal["cards"] = "cards"
    level: Level
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


class JobQueued(_Event):
    """A turn was spooled durably; nothing has been asked of the model yet."""

    kind: Literal["queued"] = "queued"
    job_id: str
    workspace: str = ""


class JobStarted(_Event):
    """The worker picked the job up. ``merged_from``: the queued jobs it coalesced."""

    kind: Literal["started"] = "started"
    job_id: str
    turns: int = 1
    merged_from: tuple[str, ...] = ()


class JobApplied(_Event):
    """The job's batch was committed (its job file is gone). Nothing applied is still an outcome.

    ``created``: when the job was spooled (RFC 3339 UTC), kept through retries, coalescing and
    review; empty when the job was never seen by this process. ``dropped_cites``: the
    citations of applied ops that were not kept, each with its reason. ``writes_known``: False
    when the job was seen gone from the spool without the batch that completed it (its history
    entry not found): what it wrote is not known."""

    kind: Literal["applied"] = "applied"
    job_id: str
    applied: tuple[AppliedOp, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    dropped_cites: tuple[DroppedCite, ...] = ()
    txid: str | None = None
    created: str = ""
    writes_known: bool = True

    @property
    def all_refused(self) -> bool:
        """True when the job's ops were all refused (rejected or in conflict): nothing written."""
        return not self.applied and bool(self.rejected or self.conflicts)

    def cards_changed(self) -> tuple[CardsChanged, ...] | None:
        """The cards the batch wrote and deleted, per store; None when that is not known."""
        if not self.writes_known:
            return None
        changed: dict[Level, tuple[list[str], list[str]]] = {}
        for op in self.applied:
            written, deleted = changed.setdefault(op.level, ([], []))
            (deleted if op.action is Action.DELETE else written).append(op.filename)
        return tuple(
            CardsChanged(level=level, written=tuple(w), deleted=tuple(d)) for level, (w, d) in changed.items()
        )


class JobRetrying(_Event):
    """A request of the job failed; the worker tries again at ``next_try_at`` (RFC 3339 UTC)."""

    kind: Literal["retrying"] = "retrying"
    job_id: str
    attempt: int
    max_attempts: int
    next_try_at: str
    reason: str


class JobTakenOver(_Event):
    """The job's turns went into another job (coalesced, maybe by another process): follow ``successor``."""

    kind: Literal["taken_over"] = "taken_over"
    job_id: str
    successor: str


class JobOrphaned(_Event):
    """A spooled job whose workspace folder no longer exists: listed, never applied."""

    kind: Literal["orphaned"] = "orphaned"
    job_id: str
    workspace: str


class JobDismissed(_Event):
    """A failed or orphaned job was removed by a person (recorded in the history)."""

    kind: Literal["dismissed"] = "dismissed"
    job_id: str


class JobFailed(_Event):
    """The job stays spooled as ``failed``. ``retryable``: a later ``flush`` may succeed."""

    kind: Literal["failed"] = "failed"
    job_id: str
    reason: str
    retryable: bool = True


class HeldOpView(_Event):
    index: int
    op: Operation


class JobHeld(_Event):
    """Review mode: the job's validated ops wait for ``approve``/``reject``."""

    kind: Literal["held"] = "held"
    job_id: str
    ops: tuple[HeldOpView, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    purpose: Literal["extract", "consolidate"] = "extract"  # a consolidation's ops


# A plain union: usable in annotations and in ``isinstance`` checks alike.
MemoryEvent = (
    JobQueued
    | JobStarted
    | JobRetrying
    | JobTakenOver
    | JobOrphaned
    | JobDismissed
    | JobApplied
    | JobFailed
    | JobHeld
)

__all__ = [
    "HeldOpView",
    "JobApplied",
    "JobDismissed",
    "JobFailed",
    "JobHeld",
    "JobOrphaned",
    "JobQueued",
    "JobRetrying",
    "JobStarted",
    "JobTakenOver",
    "MemoryEvent",
]


class StoresChanged(_Event):
    """A store folder changed from outside this process (an editor, ``git pull``, another
    window): the app reloads those levels. Never sent for a change an event already announced
    (this process's commits, its worker child's, a job's end seen in the spool). ``cards``: the
    cards changed, per level of ``levels``; None when the watcher cannot say (a folder that
    appeared, vanished or was replaced)."""

    kind: Literal["stores"] = "stores"
    levels: tuple[Level, ...] = ()
    cards: tuple[CardsChanged, ...] | None = None


def changed_cards(event: MemoryEvent | StoresChanged) -> tuple[CardsChanged, ...] | None:
    """The cards an event says it changed: () for an event that changed none (a job queued,
    held, failed...), None for one that changed cards it cannot name."""
    if isinstance(event, JobApplied):
        return event.cards_changed()
    if isinstance(event, StoresChanged):
        return event.cards
    return ()


__all__ += ["CardsChanged", "StoresChanged", "changed_cards"]
