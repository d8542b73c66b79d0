"""What the pending-updates screen shows, as the App hands it over: jobs and their operations.

The App builds a :class:`PendingState` (reading the spool is its job); the widgets only draw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["EMPTY_STATE", "PendingJob", "PendingJobState", "PendingOp", "PendingState"]


class PendingJobState(StrEnum):
    """A spooled job's state (or phase, or what its file's place says of it), or the outcome of
    one finished this session: applied (something was written) or rejected (it had operations
    and every one was refused)."""

    QUEUED = "queued"
    EXTRACTING = "extracting"
    APPLYING = "applying"
    RETRYING = "retrying"
    FAILED = "failed"
    HELD = "held"
    ORPHANED = "orphaned"
    DAMAGED = "damaged"
    APPLIED = "applied"
    REJECTED = "rejected"


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
    # applied: each citation the transaction did not keep, one line with its reason
    dropped: tuple[str, ...] = ()
    # a consolidation: "Consolidation · project store · 3 clusters" ("" for a turn's job)
    title: str = ""


@dataclass(frozen=True)
class PendingState:
    jobs: tuple[PendingJob, ...]
    mode: str = "auto"  # memory mode: "auto" | "review" | "off"
    note: str | None = None  # e.g. "could not read the spool: …" (shown in yellow)


EMPTY_STATE = PendingState(jobs=())
