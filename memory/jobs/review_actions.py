"""What a person does with this workspace's spooled jobs: approve or reject held ops, run a failed
job again, dismiss a failed or orphaned one (the pending screen, ``memory approve`` and the other
commands). Never calls a model.

The file work is memory/jobs/review.py's (``Review``), run in a thread; this adds what the
manager owes its subscribers around it: each job file changed here is recorded as the manager's
own (``touch``: never echoed back as another process's news), and the outcome is an event, as
when the worker applies a job. It sees its manager only through ``ActionsHost``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from memory.events import HeldOpView, JobDismissed, JobHeld, JobQueued, MemoryEvent
from memory.jobs.pipeline import FALLBACK_SOURCE, Pipeline, emit_result
from memory.jobs.review import Approval, Rejected, Review, ReviewError
from memory.jobs.spool import Job, Spool, SpoolError
from memory.jobs.worker import Worker
from memory.model import BatchResult
from memory.store.stores import MemoryStores

__all__ = ["ActionsHost", "ReviewActions"]


class ActionsHost(Protocol):
    """What the actions need of their manager (the ``Manager`` implements it)."""

    stores: MemoryStores
    spool: Spool
    workspace: Path
    session: str
    pipeline: Pipeline
    worker: Worker

    def touch(self, job_id: str, job: Job | None) -> None: ...

    def emit(self, event: MemoryEvent) -> None: ...

    def signal(self, wake: bool = False) -> None: ...


class ReviewActions:
    def __init__(self, host: ActionsHost) -> None:
        self.m = host

    def _review(self) -> Review:
        m = self.m
        return Review(m.stores, m.spool, m.workspace, m.session or FALLBACK_SOURCE)

    async def approve(self, job_id: str, op_indexes: Sequence[int] | None = None) -> BatchResult:
        """Write exactly the approved held ops (all when ``op_indexes`` is None); the others stay
        held in a new job (see ``Manager.approve``)."""

        def run() -> Approval:
            done = self._review().approve(job_id, op_indexes)
            self.m.touch(done.job_id, None)
            if done.child is not None:
                self.m.touch(done.child.id, done.child)
            return done

        done = await asyncio.to_thread(run)
        emit_result(self.m.emit, done.job_id, done.result, created=done.created)
        if done.child is not None:
            ops = tuple(HeldOpView(index=h.index, op=h.op) for h in done.child.held_ops)
            self.m.emit(JobHeld(job_id=done.child.id, ops=ops, purpose=done.child.purpose))
        return done.result

    async def reject(self, job_id: str, op_indexes: Sequence[int] | None = None) -> Job | None:
        """Drop held ops (all when None) without writing them. Returns the job still held, if any."""

        def run() -> Rejected:
            done = self._review().reject(job_id, op_indexes)
            self.m.touch(done.job_id, done.remaining)
            return done

        done = await asyncio.to_thread(run)
        if done.remaining is not None:
            ops = tuple(HeldOpView(index=h.index, op=h.op) for h in done.remaining.held_ops)
            self.m.emit(JobHeld(job_id=done.job_id, ops=ops, purpose=done.remaining.purpose))
            return done.remaining
        if done.result is not None:
            emit_result(self.m.emit, done.job_id, done.result, created=done.created)
        return None

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again now, with a fresh retry budget."""

        def run() -> Job:
            job = self._review().retry(job_id)
            self.m.touch(job.id, job)
            return job

        job = await asyncio.to_thread(run)
        self.m.pipeline.reset_budget(job.id)
        self.m.worker.unskip(job.id)
        self.m.emit(JobQueued(job_id=job.id, workspace=job.workspace))
        self.m.signal(wake=True)
        return job

    async def dismiss(self, job_id: str) -> None:
        """Remove a failed or orphaned job for good; the history records it."""

        def run() -> str:
            job_ref = self.m.spool.resolve(job_id)
            self._review().dismiss(job_ref)
            self.m.touch(job_ref, None)
            return job_ref

        try:
            gone = await asyncio.to_thread(run)
        except SpoolError as e:
            raise ReviewError(str(e)) from None
        self.m.emit(JobDismissed(job_id=gone))
