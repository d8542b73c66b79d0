"""What a person sees of the jobs: frozen views for the pending screen, the outcome of a wait,
the result of a flush. Built from spool entries; nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.events import HeldOpView
from memory.jobs.pipeline import MAX_ATTEMPTS
from memory.jobs.spool import JobViewState, SpoolEntry
from memory.model import Rejection

__all__ = ["FlushResult", "JobOutcome", "JobView", "job_views"]


class FlushResult(BaseModel):
    """What ``flush`` left behind: by job id (as listed when the flush started)."""

    done: list[str] = Field(default_factory=list)
    held: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    unfinished: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unfinished


class JobView(BaseModel):
    """One spooled job as the pending screen shows it."""

    model_config = ConfigDict(frozen=True)

    id: str
    state: JobViewState
    workspace: str | None = None
    mode: str = "auto"
    excerpt: str = ""
    turns: int = 0
    created: str = ""
    updated: str = ""
    attempts: int = 0  # failed requests over the job's life, all processes
    attempt: int = 0  # retrying: the attempt the worker waits to make, of ``max_attempts``
    max_attempts: int = MAX_ATTEMPTS
    reason: str | None = None  # failed: why; damaged: what is wrong with the file
    next_try_at: str | None = None  # retrying: when (RFC 3339 UTC)
    held_ops: tuple[HeldOpView, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    merged_from: tuple[str, ...] = ()
    split_from: str | None = None  # the job whose other ops an approval left held here
    # A consolidation: the store it cleans and its clusters' sizes (the pending screen).
    purpose: str = "extract"
    level: str | None = None
    clusters: tuple[int, ...] = ()


class JobOutcome(BaseModel):
    """What ``wait_for`` saw. ``taken_over_by``: the job that took this one's turns over
    (coalesced, maybe by another process); the status is that job's. Truthy once finished."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    status: Literal["done", "held", "failed", "pending"]
    reason: str = ""
    taken_over_by: str | None = None

    @property
    def finished(self) -> bool:
        return self.status != "pending"

    def __bool__(self) -> bool:
        return self.finished


def job_views(entries: Iterable[SpoolEntry], *, alive: bool, max_attempts: int) -> list[JobView]:
    """The entries as views, in order. ``alive``: a worker holds the lock now (a phase written
    by a worker that died is stale: only a live worker's phase is shown); ``max_attempts``: the
    budget shown for a job that is not retrying."""
    out: list[JobView] = []
    for e in entries:
        job = e.job
        if job is None:
            out.append(JobView(id=e.id, state="damaged", workspace=e.workspace, reason=e.problem))
            continue
        state: JobViewState
        if e.orphaned:
            state = "orphaned"
        elif job.state in ("failed", "held"):
            state = job.state
        else:
            state = job.phase if (alive and job.phase) else "queued"
        retry = job.retry if state == "retrying" else None
        out.append(
            JobView(
                id=job.id,
                state=state,
                workspace=job.workspace,
                mode=job.mode,
                excerpt=job.excerpt(),
                turns=len(job.turns),
                created=job.created,
                updated=job.updated or job.created,
                attempts=job.attempts,
                attempt=retry.next_attempt if retry else 0,
                max_attempts=retry.max_attempts if retry else max_attempts,
                reason=job.error if state in ("failed", "retrying") else None,
                next_try_at=job.retry.next_try_at if state == "retrying" and job.retry else None,
                held_ops=tuple(HeldOpView(index=h.index, op=h.op) for h in job.held_ops),
                rejected=tuple(job.rejected),
                merged_from=tuple(job.merged_from),
                split_from=job.split_from,
                purpose=job.purpose,
                level=None if job.level is None else str(job.level),
                clusters=tuple(len(c) for c in job.clusters),
            )
        )
    return out
