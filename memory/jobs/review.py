"""Review mode: approve or reject the held ops of a job, dismiss a failed one.

Synchronous and thread-safe: the manager runs these in a thread and emits the events. One
review at a time per workspace (an OS lock), so two windows cannot approve the same op twice.
Never calls a model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import filelock

from memory.jobs.consolidation import consolidation_label
from memory.jobs.pipeline import revalidate
from memory.jobs.spool import HeldOp, Job, Spool, SpoolError, successor_id
from memory.model import BatchResult, Operation, Rejection, dump_op
from memory.store.locks import file_lock
from memory.store.paths import workspace_key
from memory.store.stores import MemoryStores
from memory.store.transaction import JobAlreadyDone

REVIEW_LOCK_TIMEOUT = 30.0


class ReviewError(Exception):
    """Why an approve/reject/retry/dismiss could not be done, in one line."""


@dataclass(frozen=True)
class Approval:
    """What an approval did: the batch (its rejections only those of the approved ops), and
    the job that still holds the ops not approved, if any."""

    job_id: str
    result: BatchResult
    child: Job | None
    created: str = ""  # when the approved job was spooled


@dataclass(frozen=True)
class Rejected:
    job_id: str
    remaining: Job | None  # still held (the same job, fewer ops), or None when it is gone
    result: BatchResult | None  # the commit that removed the job, when it is gone
    created: str = ""  # when the job was spooled


class Review:
    def __init__(self, stores: MemoryStores, spool: Spool, workspace: Path, source: str) -> None:
        self.stores = stores
        self.spool = spool
        self.workspace = workspace
        self.source = source

    @contextmanager
    def _lock(self) -> Iterator[None]:
        paths = self.stores.paths
        self.stores.fs.makedirs(paths.locks_dir, 0o700)
        lock = file_lock(
            paths.locks_dir / f"review-{workspace_key(self.workspace)}.lock", REVIEW_LOCK_TIMEOUT
        )
        try:
            lock.acquire()
        except filelock.Timeout:
            raise ReviewError("another approve/reject on this workspace is still running") from None
        try:
            # Finish any interrupted commit first: an approval that committed but was not rolled
            # forward still shows its parent job, which must not make its split child look stale.
            self.stores.recover()
            self._drop_stale_splits()
            yield
        finally:
            lock.release()

    def _drop_stale_splits(self) -> None:
        """Split jobs of an approval that never committed (its parent still holds the ops)."""
        ids = set(self.spool.ids())
        stale = [
            e.id
            for e in self.spool.list(self.workspace, include_split=True)
            if e.job is not None and e.job.split_from in ids
        ]
        if stale:
            self.spool.delete_many(stale)

    def _mine(self, job: Job) -> bool:
        return (
            Path(job.workspace) == self.workspace or Path(job.workspace).resolve() == self.workspace.resolve()
        )

    def _load(self, job_ref: str) -> Job:
        try:
            return self.spool.load(self.spool.resolve(job_ref))
        except SpoolError as e:
            raise ReviewError(str(e)) from None

    def _held(self, job_ref: str) -> Job:
        job = self._load(job_ref)
        if job.state != "held":
            raise ReviewError(f"job {job.id} is {job.state}, not held for review")
        if not self._mine(job):
            raise ReviewError(f"job {job.id} belongs to workspace {job.workspace}")
        return job

    @staticmethod
    def _choose(job: Job, op_indexes: Sequence[int] | None) -> tuple[list[HeldOp], list[HeldOp]]:
        if op_indexes is None:
            return list(job.held_ops), []
        held = {h.index for h in job.held_ops}
        unknown = sorted({i for i in op_indexes if i not in held})
        if unknown:
            listed = ", ".join(map(str, unknown))
            raise ReviewError(
                f"job {job.id} holds no op {listed} (held: {', '.join(map(str, sorted(held)))})"
            )
        chosen = set(op_indexes)
        return [h for h in job.held_ops if h.index in chosen], [
            h for h in job.held_ops if h.index not in chosen
        ]

    def _source(self, job: Job) -> str:
        return job.session or self.source

    def approve(self, job_ref: str, op_indexes: Sequence[int] | None = None) -> Approval:
        """Write exactly the approved held ops (all when ``op_indexes`` is None).

        Each op is validated again and checked against the note hashes the model saw, so a
        note changed since shows up as a conflict. The ops not approved move to a new held job
        that becomes live in the same commit that completes this one. The history gets every
        rejection of the job once it is gone; the result names only those of the approved ops
        (an op rejected earlier in review is not this approval's failure).
        """
        with self._lock():
            job = self._held(job_ref)
            chosen, remaining = self._choose(job, op_indexes)
            ops: list[tuple[int, Operation]] = []
            mine: list[Rejection] = []
            for h in chosen:
                op, rejection = revalidate(h.index, h.op)
                if rejection is not None:
                    mine.append(rejection)
                elif op is not None:
                    ops.append((h.index, op))
            child: Job | None = None
            if remaining:
                child = job.model_copy(
                    deep=True,
                    update={
                        "id": successor_id(job.id),
                        "held_ops": remaining,
                        "split_from": job.id,
                        "merged_from": [],
                    },
                )
                self.spool.submit(child)
            earlier = [] if remaining else list(job.rejected)
            try:
                result = self.stores.apply(
                    ops,
                    source=self._source(job),
                    expected=job.snapshot_hashes or {},
                    jobs=[self.spool.path(job.id)],
                    rejected=[*earlier, *mine],
                    label=f"approve {job.id}{consolidation_label(job)}",
                    kind="approve",
                    sources={h.index: h.source for h in chosen if h.source},
                )
            except JobAlreadyDone:
                if child is not None:
                    self.spool.delete(child.id)
                raise ReviewError(f"job {job.id} was already completed") from None
            # Any other failure leaves the child alone: it is live exactly when the parent is gone.
        chosen_ix = {h.index for h in chosen}
        result = result.model_copy(update={"rejected": [r for r in result.rejected if r.index in chosen_ix]})
        return Approval(job_id=job.id, result=result, child=child, created=job.created)

    def reject(self, job_ref: str, op_indexes: Sequence[int] | None = None) -> Rejected:
        """Drop held ops (all when None) without writing them."""
        with self._lock():
            job = self._held(job_ref)
            chosen, remaining = self._choose(job, op_indexes)
            refused = [
                Rejection(index=h.index, reason=f"op {h.index}: rejected in review", op=dump_op(h.op))
                for h in chosen
            ]
            if remaining:
                job.held_ops = remaining
                job.rejected = [*job.rejected, *refused]
                self.spool.save(job)
                return Rejected(job_id=job.id, remaining=job, result=None, created=job.created)
            # The last ops: the job's rejections go to the history in the commit that removes it.
            try:
                result = self.stores.apply(
                    [],
                    source=self._source(job),
                    jobs=[self.spool.path(job.id)],
                    rejected=[*job.rejected, *refused],
                    label=f"reject {job.id}",
                    kind="reject",
                )
            except JobAlreadyDone:
                raise ReviewError(f"job {job.id} was already completed") from None
        return Rejected(job_id=job.id, remaining=None, result=result, created=job.created)

    def dismiss(self, job_ref: str) -> BatchResult:
        """Remove a failed or orphaned job for good; the history records it (kind ``dismiss``)."""
        with self._lock():
            job = self._load(job_ref)
            orphaned = not Path(job.workspace).is_dir()
            if job.state != "failed" and not orphaned:
                raise ReviewError(
                    f"job {job.id} is {job.state}: only a failed or orphaned job can be dismissed"
                )
            if not orphaned and not self._mine(job):
                raise ReviewError(f"job {job.id} belongs to workspace {job.workspace}")
            try:
                return self.stores.apply(
                    [],
                    source=self._source(job),
                    jobs=[self.spool.path(job.id)],
                    label=f"dismiss {job.id}",
                    kind="dismiss",
                )
            except JobAlreadyDone:
                raise ReviewError(f"job {job.id} was already completed") from None

    def retry(self, job_ref: str) -> Job:
        """Queue a failed job again now; an answer that could not be parsed is asked afresh."""
        job = self._load(job_ref)
        if not self._mine(job):
            raise ReviewError(f"job {job.id} belongs to workspace {job.workspace}")
        if job.state != "failed":
            raise ReviewError(f"job {job.id} is {job.state}, not failed")
        requeue(job)
        self.spool.save(job)
        return job


def requeue(job: Job) -> None:
    """A failed job made runnable again (in memory; the caller saves it)."""
    job.state = "queued"
    job.phase = None
    job.retry = None
    if job.error_kind == "unparseable":
        # Re-parsing the same answer cannot succeed: ask afresh.
        job.raw_answer = None
        job.reasked = False
        job.snapshot_hashes = None
        job.merge_raw = None


__all__ = ["Approval", "Rejected", "Review", "ReviewError", "requeue"]
