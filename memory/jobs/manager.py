"""The memory manager: the app's one call after a turn (``submit``), made durable. The public face.

A turn's way, by names: ``Runner.run`` → ``Manager.submit`` (the job is spooled, fsynced) →
``Spool`` → ``Worker`` (memory/jobs/worker.py: election, loop, coalescing) → ``Pipeline``
(memory/jobs/pipeline.py: extract → parse → merge → commit) → ``MemoryStores.apply`` (the
transaction) → ``MEMORY.md``. Review mode's approve/reject live in memory/jobs/review.py (a
person's actions on the spooled jobs: memory/jobs/review_actions.py); what other processes do
with this workspace's jobs is seen by memory/jobs/jobwatch.py; events and wake-ups go through
memory/jobs/event_bus.py.

Everything here that touches a file or a lock runs in a thread: the app calls these
coroutines on its own event loop. Subscribers get events for this workspace's jobs, including
jobs that another process runs, so a second window stays live. A job's outcome is announced
once: by the worker that ran it (this process's, or the worker child's line: ``announce``), else
by the look at the spool (``tick``: a child killed before its line, another window's worker).
The store writes those events announce are kept in ``announced_writes``: the store watcher
(memory/store/watch.py) reports only the others, after ``settle``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memory.constants import MEMORY_MODES, Level, MemoryMode
from memory.events import (
    JobQueued,
    MemoryEvent,
)
from memory.extract.completion import Completion
from memory.extract.prompt import turn_text
from memory.jobs.consolidation import Baselines, ConsolidateOutcome, due_levels, spool_consolidations
from memory.jobs.event_bus import EventBus, Subscriber
from memory.jobs.jobwatch import JobWatch
from memory.jobs.pipeline import (
    FALLBACK_SOURCE,
    MAX_ATTEMPTS,
    REQUEST_TIMEOUT,
    Pipeline,
)
from memory.jobs.review import ReviewError, requeue
from memory.jobs.review_actions import ReviewActions
from memory.jobs.spool import Job, JobMode, Spool, SpoolEntry, SpoolError, make_job
from memory.jobs.views import FlushResult, JobOutcome, JobView, job_views
from memory.jobs.worker import MAX_BATCH_BYTES, MAX_BATCH_TURNS, Worker
from memory.model import BatchResult, Turn
from memory.search.engine import MemorySearch
from memory.store.fs import DEFAULT_FS, FS
from memory.store.journal import OWN_WRITES, OwnWrites
from memory.store.paths import workspace_key
from memory.store.stores import MemoryStores

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.5  # seconds between looks at the spool / the worker lock when idle
SETTLE_S = 2.0  # at most this long, the store watcher waits for a batch another process applies
SETTLE_STEP = 0.05

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


class Manager:
    """One workspace's memory jobs: spool on submit, run them in the elected worker, review."""

    def __init__(
        self,
        stores: MemoryStores,
        completion: Completion | None,
        *,
        mode: MemoryMode = MemoryMode.AUTO,
        fs: FS = DEFAULT_FS,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        session: str = "",
        poll_interval: float = POLL_INTERVAL,
        max_attempts: int = MAX_ATTEMPTS,
        max_batch_turns: int = MAX_BATCH_TURNS,
        max_batch_bytes: int = MAX_BATCH_BYTES,
        request_timeout: float | None = REQUEST_TIMEOUT,
        backoff_base: float | None = None,
        consolidate_after: int = 50,
        consolidate_review: bool = True,
        search: MemorySearch | None = None,
        runs_jobs: bool = True,
    ) -> None:
        self._mode: MemoryMode = self._valid_mode(mode)
        self._init_consolidation(stores, fs, consolidate_after, consolidate_review, search)
        self.stores = stores
        self.completion = completion
        self.fs = fs
        self.session = session
        self.paths = stores.paths
        self.workspace = Path(stores.paths.workspace)
        self._real_workspace = os.path.realpath(self.workspace)
        self.spool = Spool(self.paths, fs)
        self._poll = poll_interval
        self.bus = EventBus(poll_interval)
        # Each outcome of a job this process runs, after the subscribers (a worker child's report).
        self.on_outcome: Subscriber | None = None
        self._task: asyncio.Task[None] | None = None
        self._threads: set[asyncio.Future[Any]] = set()
        self._started = self.closing = self._closed = False
        # Every store write this manager's events announce (this process's commits, its worker
        # child's ``wrote`` lines, the batches the spool's listing read from the history): the
        # store watcher reports only the others.
        self.announced_writes = OwnWrites(OWN_WRITES)
        # This workspace's jobs as last seen: other processes' changes become events.
        self.watch = JobWatch(stores, self.spool, self._real_workspace, self.announced_writes)
        self._ticking = asyncio.Lock()  # one look at the spool at a time (the worker's, the watcher's)
        self.pipeline = self._make_pipeline(sleep, clock, max_attempts, request_timeout, backoff_base)
        self.worker = self._make_worker(fs, max_batch_turns, max_batch_bytes, may_elect=runs_jobs)
        self.actions = ReviewActions(self)

    def _make_pipeline(
        self,
        sleep: Sleep,
        clock: Callable[[], float],
        max_attempts: int,
        request_timeout: float | None,
        backoff_base: float | None,
    ) -> Pipeline:
        """What runs one job, from the request to the commit, on this manager's spool and events."""
        return Pipeline(
            stores=self.stores,
            spool=self.spool,
            emit=self._emit_outcome,
            in_thread=self.in_thread,
            save=self.save,
            gone=lambda job_id: self.touch(job_id, None),
            source=self._source,
            sleep=sleep,
            clock=clock,
            max_attempts=max_attempts,
            request_timeout=request_timeout,
            backoff_base=backoff_base,
        )

    def _make_worker(self, fs: FS, max_batch_turns: int, max_batch_bytes: int, *, may_elect: bool) -> Worker:
        """The workspace's worker, elected by a lock under ``$PSEUDOCLAUDE_HOME/locks`` (a manager
        that may not elect, the app's beside its worker child, only watches)."""
        return Worker(
            self,
            spool=self.spool,
            fs=fs,
            lock_path=self.paths.locks_dir / f"worker-{workspace_key(self.workspace)}.lock",
            run_job=self.pipeline.run,
            max_batch_turns=max_batch_turns,
            max_batch_bytes=max_batch_bytes,
            may_elect=may_elect,
        )

    def _init_consolidation(
        self, stores: MemoryStores, fs: FS, after: int, review: bool, search: MemorySearch | None
    ) -> None:
        # Consolidation: automatic after ``after`` new cards in a store (0: never); its ops held
        # for review whatever the mode, unless ``review`` is off.
        self.consolidate_after, self.consolidate_review = max(0, int(after)), review
        self._own_search, self.search = search is None, search or MemorySearch(stores)
        self.baselines = Baselines(stores.paths.home, fs)

    # -- identity and mode -----------------------------------------------------------------------

    @staticmethod
    def _valid_mode(mode: str) -> MemoryMode:
        if mode not in MEMORY_MODES:
            raise ValueError(f"memory mode must be one of {', '.join(MEMORY_MODES)}, not {mode!r}")
        return MemoryMode(mode)

    @property
    def mode(self) -> MemoryMode:
        return self._mode

    @mode.setter
    def mode(self, mode: MemoryMode) -> None:
        self.set_mode(mode)

    def set_mode(self, mode: MemoryMode) -> None:
        """Switch auto/review/off at run time. ``off``: no request is made from now on (a
        request in flight finishes); jobs stay spooled. Back on: the worker runs them."""
        self._mode = self._valid_mode(mode)
        self.signal(wake=True)

    @property
    def is_worker(self) -> bool:
        """True while this manager holds the workspace's worker lock (it runs the jobs)."""
        return self.worker.elected

    def _source(self, job: Job) -> str:
        return job.session or self.session or FALLBACK_SOURCE

    # -- events ----------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (on the manager's loop once started).
        Returns an unsubscribe."""
        return self.bus.subscribe(callback)

    def emit(self, event: MemoryEvent) -> None:
        self.bus.emit(event)

    def _emit_outcome(self, event: MemoryEvent) -> None:
        self.emit(event)
        if self.on_outcome is not None:
            try:
                self.on_outcome(event)
            except Exception:
                log.exception("reporting the outcome of memory job failed (%s)", type(event).__name__)

    def announce(self, event: MemoryEvent) -> None:
        """An outcome of a job another process ran, as that process reported it (the worker
        child's line): emitted to the subscribers unless the spool's listing already announced
        it, and never announced by the listing after. Safe from any thread."""
        self.bus.call_in_loop(self._announce_in_loop, event)

    def _announce_in_loop(self, event: MemoryEvent) -> None:
        if self.watch.announce(event):
            self.emit(event)

    def signal(self, wake: bool = False) -> None:
        """Wake the worker and/or the waiters; safe from any thread."""
        self.bus.signal(wake)

    # -- submit ----------------------------------------------------------------------------------

    async def submit(self, turn: Turn) -> Job | None:
        """Spool ``turn`` durably (in a thread) and return; the worker does the rest.

        Never calls the model. Returns None (and spools nothing) with memory mode ``off`` or
        for a turn without any text.
        """
        if self._mode == "off":
            return None
        if not any(m.text.strip() for m in turn.messages):
            return None
        session = turn.session or self.session
        if session != turn.session:
            turn = turn.model_copy(update={"session": session})
        job = make_job(
            self.workspace,
            [turn],
            session=session,
            mode="review" if self._mode is MemoryMode.REVIEW else "auto",
        )

        def spool_it() -> None:
            self.spool.submit(job)
            self.touch(job.id, job)

        await self.in_thread(spool_it)
        self.emit(JobQueued(job_id=job.id, workspace=job.workspace))
        self.signal(wake=True)
        return job

    # -- consolidation ----------------------------------------------------------------

    async def consolidate(self, level: Level | str | None = None) -> list[ConsolidateOutcome]:
        """Spool one consolidation job per store (``level``, or every store search may look at)
        that has likely duplicates, found locally off the loop; the worker asks the model."""
        mode: JobMode = "review" if self.consolidate_review or self._mode is MemoryMode.REVIEW else "auto"
        outcomes = await self.in_thread(
            spool_consolidations,
            self.search,
            self.spool,
            self.baselines,
            level,
            session=self.session,
            mode=mode,
            touch=self.touch,
        )
        for o in outcomes:
            if o.job_id is not None:
                self.emit(JobQueued(job_id=o.job_id, workspace=str(self.workspace)))
        self.signal(wake=True)
        return outcomes

    async def maybe_consolidate(self) -> list[ConsolidateOutcome]:
        """Consolidate each store grown by ``consolidate_after`` cards since its last
        consolidation and with no consolidation job spooled. The caller makes sure no turn runs."""
        if self.consolidate_after <= 0 or self._mode == "off":
            return []

        out: list[ConsolidateOutcome] = []
        for lv in await self.in_thread(
            due_levels, self.search, self.spool, self.baselines, self.consolidate_after
        ):
            out += await self.consolidate(lv)
        return out

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover interrupted transactions (in a thread), then run the loop: the worker's when
        elected, else a watcher of what other processes do."""
        if self._started:
            return
        self._started = True
        self.bus.bind()
        try:
            for line in await asyncio.to_thread(self.stores.recover):
                log.info("memory recovery: %s", line)
        except Exception:
            log.exception("memory recovery failed; the worker will retry through each transaction")
        if self._mode != "off" and self.completion is not None:
            await asyncio.to_thread(self.worker.try_elect)  # a caller may rely on is_worker at once
        self._task = asyncio.create_task(self.worker.main(), name=f"memory-worker {self.workspace}")

    async def close(self, timeout: float | None = 5.0) -> None:
        """Drain this workspace's runnable jobs for up to ``timeout`` seconds, then stop.

        A job cut off mid-request stays spooled as it was (queued, or with its raw answer
        kept) and the next process on this workspace runs it exactly once.
        """
        if self._closed:
            return
        self.closing = True
        self.signal(wake=True)
        task = self._task
        # A worker an earlier, abandoned close already cancelled has nothing left to drain
        # (awaiting it would raise its CancelledError here, as if this close were cancelled).
        if task is not None and not task.cancelled():
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            except Exception:
                log.exception("memory worker ended with an error")
        if self._threads:
            # A transaction cannot be interrupted halfway: let the one in flight finish.
            await asyncio.wait(set(self._threads), timeout=60.0)
        await asyncio.to_thread(self.worker.release)
        if self._own_search:
            await asyncio.to_thread(self.search.close)
        self._closed = True
        self.signal()

    # -- services for the worker and the pipeline ---------------------------------------------------

    async def in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Blocking file work off the loop; shielded so a cancel never abandons it halfway."""
        fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._threads.add(fut)
        fut.add_done_callback(self._threads.discard)
        return await asyncio.shield(fut)

    async def save(self, job: Job) -> None:
        def save_it() -> None:
            self.spool.save(job)
            self.touch(job.id, job)

        await self.in_thread(save_it)

    def clear_wake(self) -> None:
        self.bus.clear_wake()

    async def idle(self) -> bool:
        """Wait for a wake-up or one poll interval. True when woken."""
        return await self.bus.idle()

    # -- watching the spool (every tick) ----------------------------------------------------------

    def touch(self, job_id: str, job: Job | None) -> None:
        """Record this manager's own change of a job (None: it is gone) so it is not echoed."""
        self.watch.touch(job_id, job)

    async def tick(self) -> list[SpoolEntry]:
        """List the spool (cached: only changed files are parsed), turn other processes' changes
        into events, and return this workspace's live entries. The fallback for what no report
        said: a job's end its worker announced (``announce``) is never announced here again."""
        async with self._ticking:  # a listing compared after a later one's would undo its news
            gen0 = self.watch.gen
            entries, mine = await self.in_thread(self.watch.scan)
            events, gone = self.watch.observe(entries, mine, gen0)
            if gone:
                events += await self.in_thread(self.watch.report_gone, gone)
        for event in events:
            if self.watch.claim(event):  # a job's end the worker child announced: not twice
                self.emit(event)
        return mine

    async def settle(self, timeout: float = SETTLE_S) -> None:
        """Look at the spool until no job of this workspace is being applied by another process
        (at most ``timeout``): the store watcher calls it before it decides, so that a batch
        in flight is announced as its job's end and never as an outside change as well."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            mine = await self.tick()
            applying = [
                e.id
                for e in mine
                if e.job is not None and e.job.phase == "applying" and e.id not in self.worker.active
            ]
            # A phase its worker left behind when it died is no batch in flight.
            if not applying or loop.time() >= deadline or not await self.in_thread(self.worker.someone_works):
                return
            await asyncio.sleep(SETTLE_STEP)

    # -- waiting ---------------------------------------------------------------------------------

    def _outcomes(self, job_ids: Sequence[str]) -> dict[str, JobOutcome]:
        return self.watch.outcomes(job_ids, self.worker.active)

    async def wait_for(self, job_id: str, timeout: float | None) -> JobOutcome:
        """Wait until the job is done, held or failed (also when another process runs it, or
        when its turns went into another job: ``taken_over_by`` names it). Truthy when finished."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            outcome = (await asyncio.to_thread(self._outcomes, [job_id]))[job_id]
            if outcome.finished:
                return outcome
            remaining = self._poll if deadline is None else deadline - loop.time()
            if remaining <= 0:
                return outcome
            await self.bus.wait_change(remaining)

    async def flush(self, timeout: float | None = None, include_failed: bool = True) -> FlushResult:
        """Run this workspace's spooled jobs now (failed ones again too); held jobs are left alone.

        Starts this manager if needed. A damaged job file is named in ``failed`` and never
        holds the others back. When another process is the worker, the failed jobs are
        re-queued for it and this waits for it to run them.
        """
        result = FlushResult()
        if not self._started:
            await self.start()
        entries = await asyncio.to_thread(self.spool.list, self.workspace, include_orphans=False)
        targets: list[str] = []
        for e in entries:
            if e.job is None:
                problem = e.problem or f"job {e.id}: unreadable job file"
                result.failed[e.id] = f"{problem} (memory doctor --fix moves it aside)"
            elif e.job.state == "held":
                result.held.append(e.id)
            elif e.job.state == "failed" and not include_failed:
                result.failed[e.id] = e.job.error or "failed"
            else:
                if e.job.state == "failed":
                    await asyncio.to_thread(self._requeue, e.id)
                targets.append(e.id)
        if not targets:
            return result
        if self._mode == "off" or self.completion is None:
            result.unfinished += targets
            return result
        self.signal(wake=True)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            outcomes = await asyncio.to_thread(self._outcomes, targets)
            if all(o.finished for o in outcomes.values()):
                break
            remaining = self._poll if deadline is None else deadline - loop.time()
            if remaining <= 0:
                break
            await self.bus.wait_change(remaining)
        for job_id, o in outcomes.items():
            if o.status == "done":
                result.done.append(job_id)
            elif o.status == "held":
                result.held.append(job_id)
            elif o.status == "failed":
                result.failed[job_id] = o.reason or "failed"
            else:
                result.unfinished.append(job_id)
        return result

    def _requeue(self, job_id: str) -> bool:
        try:
            job = self.spool.load(job_id)
        except SpoolError:
            return False
        if job.state != "failed":
            return False
        requeue(job)
        self.spool.save(job)
        self.touch(job.id, job)
        self.pipeline.reset_budget(job_id)
        self.worker.unskip(job_id)
        return True

    # -- listing -----------------------------------------------------------------------------------

    def entries(self, all_workspaces: bool = False) -> list[SpoolEntry]:
        """Spool entries for listings: this workspace's (or all, orphans and unreadable files included)."""
        return self.spool.list(None if all_workspaces else self.workspace, include_orphans=all_workspaces)

    def pending(self, all_workspaces: bool = False) -> list[Job]:
        """Spooled jobs (queued, failed, held), oldest first."""
        return [e.job for e in self.entries(all_workspaces) if e.job is not None]

    async def jobs(self, all_workspaces: bool = False) -> list[JobView]:
        """This workspace's spooled jobs (``all_workspaces``: every workspace's, orphans included)
        as frozen views, oldest first: state, reason, attempts, next try, held ops, excerpt."""
        return await asyncio.to_thread(self._views, all_workspaces)

    def _views(self, all_workspaces: bool) -> list[JobView]:
        # A phase written by a worker that died is stale: only a live worker's phase is shown.
        alive = self.worker.someone_works()
        return job_views(self.entries(all_workspaces), alive=alive, max_attempts=self.pipeline.max_attempts)

    async def turn_text(self, job_id: str) -> str:
        """The job's turns as text (redacted), for a person to read before dismissing it."""

        def run() -> str:
            try:
                job = self.spool.peek(self.spool.resolve(job_id))
            except SpoolError as e:
                raise ReviewError(str(e)) from None
            return turn_text(job.turns)

        return await asyncio.to_thread(run)

    # -- review and the pending screen's actions (memory/jobs/review_actions.py) ---------------------

    async def approve(self, job_id: str, op_indexes: Sequence[int] | None = None) -> BatchResult:
        """Write exactly the approved held ops (all when ``op_indexes`` is None). Never calls a model.

        Each op is validated again and checked against the note hashes the model saw (a note
        changed since is a conflict). The ops not approved stay held in a new job. The result's
        rejections are those of the approved ops only.
        """
        return await self.actions.approve(job_id, op_indexes)

    async def reject(self, job_id: str, op_indexes: Sequence[int] | None = None) -> Job | None:
        """Drop held ops (all when None) without writing them. Returns the job still held, if any."""
        return await self.actions.reject(job_id, op_indexes)

    async def retry(self, job_id: str) -> Job:
        """Run a failed job again now, with a fresh retry budget (the pending screen's ``t``)."""
        return await self.actions.retry(job_id)

    async def dismiss(self, job_id: str) -> None:
        """Remove a failed or orphaned job for good; the history records it (the pending screen's ``x``)."""
        await self.actions.dismiss(job_id)


__all__ = ["Manager"]
