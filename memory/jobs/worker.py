"""The worker of one workspace: election, the loop, coalescing at pickup.

One process per workspace runs jobs: the one holding the worker lock under
``$PSEUDOCLAUDE_HOME/locks``. Every manager runs this loop; a manager that is not (or cannot
be) the worker still ticks, so that it sees what other processes do with this workspace's jobs
(the manager turns the changes into events). Lock work runs in threads: nothing here blocks
the event loop. The worker sees its manager only through ``WorkerHost``: the few services the
loop needs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import filelock

from memory.constants import MemoryMode
from memory.events import JobStarted, MemoryEvent
from memory.extract.completion import Completion
from memory.jobs.spool import Job, Spool, SpoolEntry, successor_id
from memory.store.fs import FS
from memory.store.locks import file_lock

T = TypeVar("T")

log = logging.getLogger(__name__)

MAX_BATCH_TURNS = 8  # a coalesced request holds at most 8 turns …
MAX_BATCH_BYTES = 64 * 1024  # … and at most 64 KiB of turn text
SKIP_SECONDS = 60.0  # a job that cannot even be written down is left alone this long


class WorkerHost(Protocol):
    """What the worker's loop needs of its manager (the ``Manager`` implements it)."""

    closing: bool

    @property
    def mode(self) -> MemoryMode: ...

    @property
    def completion(self) -> Completion | None: ...

    def clear_wake(self) -> None: ...

    async def idle(self) -> bool: ...

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    async def tick(self) -> list[SpoolEntry]: ...

    def touch(self, job_id: str, job: Job | None) -> None: ...

    async def save(self, job: Job) -> None: ...

    def emit(self, event: MemoryEvent) -> None: ...

    def signal(self, wake: bool = False) -> None: ...


RunJob = Callable[[Job, Completion], Awaitable[None]]


class Worker:
    def __init__(
        self,
        host: WorkerHost,
        *,
        spool: Spool,
        fs: FS,
        lock_path: Path,
        run_job: RunJob,
        max_batch_turns: int,
        max_batch_bytes: int,
        may_elect: bool = True,
    ) -> None:
        self.m = host
        self._spool = spool
        self._fs = fs
        self.lock_path = lock_path
        self._run_job = run_job
        self._max_turns = max(1, max_batch_turns)
        self._max_bytes = max_batch_bytes
        self._lock: filelock.BaseFileLock | None = None
        # Jobs that could not even be written down: not run again for a while.
        self._skip: dict[str, float] = {}
        self.elected = False
        # False: this process never runs jobs (the app whose worker is a child process, a manager
        # built with runs_jobs=False); it spools, reviews and watches what the worker does.
        self.may_elect = may_elect
        # Ids a waiter may know the running job by: not finished until its events are out.
        self.active: frozenset[str] = frozenset()
        self._reported: set[str] = set()

    # -- election (blocking: call from a thread) ---------------------------------------------------

    def _lock_object(self) -> filelock.BaseFileLock:
        if self._lock is None:
            self._fs.makedirs(self.lock_path.parent, 0o700)
            # Owns its descriptor: two managers in one process exclude each other like two processes.
            self._lock = file_lock(self.lock_path)
        return self._lock

    def try_elect(self) -> bool:
        if self.elected:
            return True
        if not self.may_elect:
            return False
        try:
            self._lock_object().acquire(blocking=False)
        except filelock.Timeout:
            return False
        except OSError:
            log.exception("cannot take the memory worker lock %s", self.lock_path)
            return False
        self.elected = True
        log.info("memory worker elected (%s)", self.lock_path.name)
        return True

    def someone_works(self) -> bool:
        """True when a worker (this one or another process's) holds the lock right now."""
        if self.elected:
            return True
        try:
            lock = self._lock_object()
            lock.acquire(blocking=False)
        except filelock.Timeout:
            return True
        except OSError:
            return False
        lock.release(force=True)
        return False

    def release(self) -> None:
        if self._lock is not None and self.elected:
            try:
                self._lock.release(force=True)
            except Exception:
                log.exception("releasing the memory worker lock failed")
        self.elected = False

    # -- the loop ---------------------------------------------------------------------------------

    async def main(self) -> None:
        # The worker must outlive any bug in one pass: log, pause, go on.
        while True:
            try:
                await self._loop()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory worker failed; restarting it")
                if self.m.closing:
                    return
                await self.m.idle()

    def _may_run(self) -> bool:
        return self.m.mode != "off" and self.m.completion is not None

    async def _loop(self) -> None:
        m = self.m
        while True:
            m.clear_wake()
            job: Job | None = None
            try:
                # Elected first, listed after: a listing taken while another process was the
                # worker may still show jobs that worker has since run or coalesced, and picking
                # from it would ask for (and apply) their turns a second time.
                elected = self._may_run() and not (m.closing and not self.elected)
                elected = elected and await m.in_thread(self.try_elect)
                mine = await m.tick()
                if elected:
                    job = await m.in_thread(self.pick, mine)
                    if not self._may_run():
                        job = None  # switched off while we looked: it stays spooled
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory worker: cannot read the spool")
            if job is None:
                if m.closing:
                    return
                await m.idle()
                continue
            await self.run(job)

    # -- pickup and coalescing (blocking: call from a thread) -----------------------------------

    def _runnable(self, mine: list[SpoolEntry]) -> list[SpoolEntry]:
        for e in mine:
            if e.job is None and e.id not in self._reported:
                self._reported.add(e.id)
                log.warning(
                    "memory spool: %s (left in place; `memory doctor --fix` moves it aside)", e.problem
                )
        skip = self.skipped()
        return [
            e
            for e in mine
            if e.job is not None and not e.orphaned and e.job.state == "queued" and e.id not in skip
        ]

    def pick(self, mine: list[SpoolEntry]) -> Job | None:
        """The oldest runnable job (a private copy), coalesced with the queued jobs right after it
        that fit one request (at most ``max_batch_turns`` turns and ``max_batch_bytes`` of text)."""
        queue = [e.job for e in self._runnable(mine) if e.job is not None]
        if not queue:
            return None
        first = queue[0]
        group = [first]
        if self._coalescable(first):
            turns, size = len(first.turns), first.turn_bytes()
            for job in queue[1:]:
                if not self._coalescable(job) or job.mode != first.mode:
                    break
                if turns + len(job.turns) > self._max_turns or size + job.turn_bytes() > self._max_bytes:
                    break
                group.append(job)
                turns += len(job.turns)
                size += job.turn_bytes()
        if len(group) == 1:
            return self._spool.load(first.id)
        merged: list[str] = []
        sessions: list[str] = []
        for job in group:
            merged += [*job.merged_from, job.id]
            if job.session and job.session not in sessions:
                sessions.append(job.session)
        combined = Job(
            id=successor_id(first.id),
            workspace=first.workspace,
            created=first.created,
            updated=first.updated,
            session=",".join(sessions),
            mode=first.mode,
            turns=[t for job in group for t in job.turns],
            merged_from=merged,
        )
        # The combined job is durable before any original goes: a crash in between leaves the
        # originals superseded (removed by the next listing), never run twice.
        self._spool.submit(combined)
        self.m.touch(combined.id, combined)
        self._spool.delete_many(job.id for job in group)
        for job in group:
            self.m.touch(job.id, None)
        log.info("memory: coalesced %d queued jobs into %s", len(group), combined.id)
        return combined

    @staticmethod
    def _coalescable(job: Job) -> bool:
        # A consolidation asks about one store, not turns: never one request with extraction's.
        return (
            job.purpose == "extract"
            and job.raw_answer is None
            and not job.held_ops
            and job.split_from is None
        )

    # -- running ------------------------------------------------------------------------------------

    async def run(self, job: Job) -> None:
        m = self.m
        completion = m.completion
        if completion is None:
            return
        self.active = frozenset({job.id, *job.merged_from})
        try:
            # Written down so that another window's manager sees the job start.
            job.phase = "extracting" if job.raw_answer is None else "applying"
            await m.save(job)
            m.emit(JobStarted(job_id=job.id, turns=len(job.turns), merged_from=tuple(job.merged_from)))
            await self._run_job(job, completion)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The job could not even be written down (the pipeline records every other failure):
            # leave it alone for a while rather than spin on it.
            log.exception("memory job %s: cannot run it", job.id)
            self.skip(job.id, SKIP_SECONDS)
        finally:
            self.active = frozenset()
            m.signal()

    # -- jobs left alone for a while -----------------------------------------------------------------

    # The monotonic clock (the event loop's own): ``pick`` reads this from a thread.
    def skip(self, job_id: str, seconds: float) -> None:
        self._skip[job_id] = time.monotonic() + seconds

    def unskip(self, job_id: str) -> None:
        self._skip.pop(job_id, None)

    def skipped(self) -> set[str]:
        now = time.monotonic()
        return {k for k, until in list(self._skip.items()) if until > now}


__all__ = ["MAX_BATCH_BYTES", "MAX_BATCH_TURNS", "Worker", "WorkerHost"]
