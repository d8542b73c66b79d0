"""The memory manager (DESIGN.md §2, §7): the seed's ``UpdateAsync``, made durable.

``submit`` only spools the turn (fsynced) and returns; a background worker — one per
workspace, elected by a held OS lock — takes the index snapshot when the job runs, asks the
memory model, stores the raw answer on the job *before* parsing it, merges proposed updates
with the current bodies, and commits the batch through one transaction over both stores that
also removes the job file. Extraction is at-least-once; the effect is exactly-once: a replay
re-parses the stored answer and the transaction refuses a job it already completed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import filelock
from pydantic import BaseModel, Field

from .completion import Completion, CompletionError, CompletionRequest
from .events import (
    HeldOpView,
    IndexChanged,
    JobApplied,
    JobFailed,
    JobHeld,
    JobQueued,
    JobStarted,
    MemoryEvent,
)
from .fs import DEFAULT_FS, FS
from .model import Action, BatchResult, Operation, Rejection, Turn
from .parser import parse_and_validate, validate_operations
from .paths import workspace_key
from .prompt import MergeItem, build_extraction_request, build_merge_request, parse_merge_answer
from .spool import (
    ErrorKind,
    HeldOp,
    Job,
    JobNotFound,
    Spool,
    SpoolEntry,
    SpoolError,
    make_job,
    successor_id,
)
from .transaction import JobAlreadyDone, MemoryStores, TransactionError

log = logging.getLogger(__name__)

Mode = Literal["auto", "review", "off"]
MODES: tuple[str, ...] = ("auto", "review", "off")

MAX_ATTEMPTS = 3  # per request, per job, per process
BACKOFF_BASE = 1.0  # seconds: 1, 2, 4 …
MAX_BATCH_TURNS = 8  # DESIGN §6: a coalesced request holds at most 8 turns …
MAX_BATCH_BYTES = 64 * 1024  # … and at most 64 KiB of turn text
POLL_INTERVAL = 0.5  # seconds between looks at the spool / the worker lock when idle
REQUEST_TIMEOUT = 300.0  # one model request; a hung provider must not hold the worker forever
REVIEW_LOCK_TIMEOUT = 30.0
FALLBACK_SOURCE = "memory"

REASK_NOTE = (
    "\n\nYour previous answer contained no JSON. Answer again with only the JSON array of "
    "operations (or [] if nothing is worth keeping), no prose."
)

T = TypeVar("T")
Subscriber = Callable[[MemoryEvent], None]
Sleep = Callable[[float], Awaitable[None]]

_OP_PREFIX = re.compile(r"^op \d+: ")


class ReviewError(Exception):
    """Why an approve/reject could not be done, in one line."""


class FlushResult(BaseModel):
    """What ``flush`` left behind: by job id (as listed when the flush started)."""

    done: list[str] = Field(default_factory=list)
    held: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    unfinished: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unfinished


class _JobFailure(Exception):
    def __init__(self, reason: str, *, kind: ErrorKind, retryable: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.retryable = retryable


def _pairs(ops: Sequence[Any]) -> list[tuple[int, Operation]]:
    """Parser output (``IndexedOp`` or ``(index, op)``) as ``(index, op)`` pairs."""
    return [(o.index, o.op) if hasattr(o, "op") else (o[0], o[1]) for o in ops]


def _dump(op: Operation) -> dict[str, object]:
    return op.model_dump(mode="json", exclude_none=True)


def _reason(index: int, reason: str) -> str:
    return f"op {index}: {_OP_PREFIX.sub('', reason)}"


def revalidate(index: int, op: Operation) -> tuple[Operation | None, Rejection | None]:
    """Run one op through the parser's validation again (a merged body, an approval)."""
    ops, rejected = validate_operations([_dump(op)])
    pairs = _pairs(ops)
    if pairs:
        return pairs[0][1], None
    if not rejected:  # a noop stays a noop
        return op, None
    return None, Rejection(index=index, reason=_reason(index, rejected[0].reason), op=_dump(op))


class Manager:
    """One workspace's memory jobs: spool on submit, run them in the elected worker, review."""

    def __init__(
        self,
        stores: MemoryStores,
        completion: Completion | None,
        *,
        mode: Mode = "auto",
        fs: FS = DEFAULT_FS,
        sleep: Sleep = asyncio.sleep,
        session: str = "",
        poll_interval: float = POLL_INTERVAL,
        max_attempts: int = MAX_ATTEMPTS,
        max_batch_turns: int = MAX_BATCH_TURNS,
        max_batch_bytes: int = MAX_BATCH_BYTES,
        request_timeout: float | None = REQUEST_TIMEOUT,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"memory mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.stores = stores
        self.completion = completion
        self.mode: Mode = mode
        self.fs = fs
        self.session = session
        self.paths = stores.paths
        self.workspace = Path(stores.paths.workspace)
        self.spool = Spool(self.paths, fs)
        self._sleep = sleep
        self._poll = poll_interval
        self._max_attempts = max(1, max_attempts)
        self._max_turns = max(1, max_batch_turns)
        self._max_bytes = max_batch_bytes
        self._request_timeout = request_timeout
        self._subscribers: list[Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._wake: asyncio.Event | None = None
        self._changed: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._threads: set[asyncio.Future[Any]] = set()
        self._worker_lock: filelock.BaseFileLock | None = None
        self._elected = False
        self._started = False
        self._closing = False
        self._closed = False
        # Jobs whose failure could not even be written down: not retried for a while.
        self._skip: dict[str, float] = {}
        self._last_signature: tuple[tuple[str, int, int], ...] | None = None
        self.current_job: str | None = None
        self._active: frozenset[str] = frozenset()
        self._reported: set[str] = set()

    # -- identity ------------------------------------------------------------------------------

    @property
    def is_worker(self) -> bool:
        """True while this manager holds the workspace's worker lock (it runs the jobs)."""
        return self._elected

    @property
    def worker_lock_path(self) -> Path:
        return self.paths.locks_dir / f"worker-{workspace_key(self.workspace)}.lock"

    # -- events --------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (in the thread that caused it). Returns an unsubscribe."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def _emit(self, event: MemoryEvent) -> None:
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                log.exception("memory event subscriber %r failed on %s", cb, type(event).__name__)
        self._signal()

    def _in_loop(self) -> bool:
        return self._loop is not None and threading.get_ident() == self._loop_thread

    def _signal(self, wake: bool = False) -> None:
        """Wake the worker and/or the waiters; safe from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if self._in_loop():
            self._signal_in_loop(wake)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._signal_in_loop, wake)

    def _signal_in_loop(self, wake: bool) -> None:
        if wake and self._wake is not None:
            self._wake.set()
        if self._changed is not None:
            # Every waiter holds the event it saw: setting it and starting a fresh one is a broadcast.
            self._changed.set()
            self._changed = asyncio.Event()

    # -- submit --------------------------------------------------------------------------------

    def submit(self, turn: Turn) -> Job | None:
        """Spool ``turn`` durably and return at once; the worker does the rest.

        Never calls the model. Returns None (and spools nothing) with memory mode ``off`` or
        for a turn without any text.
        """
        if self.mode == "off":
            return None
        if not any(m.text.strip() for m in turn.messages):
            return None
        session = turn.session or self.session
        if session != turn.session:
            turn = turn.model_copy(update={"session": session})
        job = make_job(self.workspace, [turn], session=session, mode=self.mode)
        self.spool.submit(job)
        self._emit(JobQueued(job_id=job.id, workspace=job.workspace))
        self._signal(wake=True)
        return job

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover interrupted transactions, then run (or wait to become) this workspace's worker."""
        if self._started:
            return
        self._started = True
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        try:
            for line in await asyncio.to_thread(self.stores.recover):
                log.info("memory recovery: %s", line)
        except Exception:
            log.exception("memory recovery failed; the worker will retry through each transaction")
        if self.mode == "off" or self.completion is None:
            return  # nothing here may call a model: spool only
        self._try_elect()
        self._task = asyncio.create_task(self._worker_main(), name=f"memory-worker {self.workspace}")

    def _try_elect(self) -> bool:
        if self._elected:
            return True
        try:
            if self._worker_lock is None:
                self.fs.makedirs(self.paths.locks_dir, 0o700)
                # A fresh, non-singleton, non-thread-local lock object: it owns its descriptor, so
                # two managers in one process exclude each other exactly as two processes do.
                self._worker_lock = filelock.FileLock(
                    str(self.worker_lock_path), is_singleton=False, thread_local=False
                )
            self._worker_lock.acquire(blocking=False)
        except filelock.Timeout:
            return False
        except OSError:
            log.exception("cannot take the memory worker lock %s", self.worker_lock_path)
            return False
        self._elected = True
        log.info("memory worker elected for %s", self.workspace)
        return True

    def _release_worker_lock(self) -> None:
        if self._worker_lock is not None and self._elected:
            try:
                self._worker_lock.release(force=True)
            except Exception:
                log.exception("releasing the memory worker lock failed")
        self._elected = False

    async def close(self, timeout: float | None = 5.0) -> None:
        """Drain this workspace's runnable jobs for up to ``timeout`` seconds, then stop.

        A job cut off mid-request stays spooled as it was (queued, or with its raw answer
        kept) and the next process on this workspace runs it exactly once.
        """
        if self._closed:
            return
        self._closing = True
        self._signal(wake=True)
        task = self._task
        if task is not None:
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
        self._release_worker_lock()
        self._closed = True
        self._signal()

    # -- the worker ----------------------------------------------------------------------------

    async def _in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Blocking file work off the loop; shielded so a cancel never abandons it halfway."""
        fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._threads.add(fut)
        fut.add_done_callback(self._threads.discard)
        return await asyncio.shield(fut)

    async def _idle(self, timeout: float) -> bool:
        """Wait for a wake-up or ``timeout``. True when woken."""
        assert self._wake is not None
        if self._wake.is_set():
            return True
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _signature(self) -> tuple[tuple[str, int, int], ...]:
        out = []
        for job_id in self.spool.ids():
            try:
                st = self.fs.lstat(self.spool.path(job_id))
            except OSError:
                continue
            out.append((job_id, st.st_mtime_ns, st.st_size))
        return tuple(out)

    async def _worker_main(self) -> None:
        # The worker must outlive any bug in one pass: log, pause, go on.
        while True:
            try:
                await self._worker_loop()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory worker failed; restarting it")
                if self._closing:
                    return
                await self._idle(self._poll)

    async def _worker_loop(self) -> None:
        assert self._wake is not None
        while not self._elected:
            if self._closing:
                return
            await self._idle(self._poll)
            self._wake.clear()
            if not self._closing:
                self._try_elect()
        woken = True
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            if self._skip:
                self._skip = {k: until for k, until in self._skip.items() if until > loop.time()}
            job: Job | None = None
            try:
                if self.mode == "off":
                    pass  # switched off at runtime: no request is made, jobs stay spooled
                elif woken or self._skip or self._last_signature != await self._in_thread(self._signature):
                    job = await self._in_thread(self._pick)
                    if self.mode == "off":
                        job = None  # switched off while we looked: it stays spooled
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("memory worker: cannot read the spool")
            if job is None:
                if self._closing:
                    return
                woken = await self._idle(self._poll)
                continue
            woken = True
            await self._run(job)

    def _runnable(self) -> list[Job]:
        entries = self.spool.list(self.workspace, include_orphans=False)
        now = self._loop.time() if self._loop is not None else 0.0
        skip = {k for k, until in list(self._skip.items()) if until > now}
        for e in entries:
            if e.job is None and e.id not in self._reported:
                self._reported.add(e.id)
                log.warning("memory spool: %s (left in place for a person to look at)", e.problem)
        return [e.job for e in entries if e.job is not None and e.job.state == "queued" and e.job.id not in skip]

    def _pick(self) -> Job | None:
        """The oldest runnable job, coalesced with the queued jobs right after it (DESIGN §6)."""
        self._last_signature = self._signature()
        queue = self._runnable()
        if not queue:
            return None
        first = queue[0]
        if not self._coalescable(first):
            return first
        group = [first]
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
            return first
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
            session=",".join(sessions),
            mode=first.mode,
            turns=[t for job in group for t in job.turns],
            merged_from=merged,
        )
        # The combined job is durable before any original goes: a crash in between leaves the
        # originals superseded (removed by the next listing), never run twice.
        self.spool.submit(combined)
        self.spool.delete_many(job.id for job in group)
        log.info("memory: coalesced %d queued jobs into %s", len(group), combined.id)
        return combined

    @staticmethod
    def _coalescable(job: Job) -> bool:
        return job.raw_answer is None and not job.held_ops and job.split_from is None

    async def _save(self, job: Job) -> None:
        await self._in_thread(self.spool.save, job)

    async def _run(self, job: Job) -> None:
        self.current_job = job.id
        # Ids a waiter may know this job by: not finished until its events are out.
        self._active = frozenset({job.id, *job.merged_from})
        self._emit(JobStarted(job_id=job.id, turns=len(job.turns), merged_from=tuple(job.merged_from)))
        try:
            await self._process(job)
        except asyncio.CancelledError:
            raise  # stays spooled as it is: the next worker picks it up
        except _JobFailure as f:
            await self._fail(job, f.reason, f.kind, f.retryable)
        except JobNotFound:
            log.info("memory job %s left the spool while it ran", job.id)
        except Exception as e:
            log.exception("memory job %s failed", job.id)
            await self._fail(job, f"internal error: {type(e).__name__}: {e}", "internal", True)
        finally:
            self.current_job = None
            self._active = frozenset()
            self._signal()

    async def _fail(self, job: Job, reason: str, kind: ErrorKind, retryable: bool) -> None:
        job.state = "failed"
        job.error = reason
        job.error_kind = kind
        try:
            await self._save(job)
        except JobNotFound:
            return
        except Exception:
            log.exception("memory job %s: cannot record its failure", job.id)
            if self._loop is not None:
                self._skip[job.id] = self._loop.time() + 60.0
        log.warning("memory job %s failed: %s", job.id, reason)
        self._emit(JobFailed(job_id=job.id, reason=reason, retryable=retryable))

    async def _process(self, job: Job) -> None:
        if job.raw_answer is None:
            await self._extract(job, reask=False)
        assert job.raw_answer is not None
        # Parsing an untrusted answer is bounded but not free: off the loop, like file work.
        parsed = await asyncio.to_thread(parse_and_validate, job.raw_answer)
        if not parsed.found and not job.reasked:
            await self._extract(job, reask=True)
            parsed = await asyncio.to_thread(parse_and_validate, job.raw_answer)
        if not parsed.found:
            raise _JobFailure(
                "the model's answer held no JSON operations, also when asked again (its raw answer is kept on the job)",
                kind="unparseable",
                retryable=True,
            )
        pairs = _pairs(parsed.ops)
        rejected = list(parsed.rejected)
        pairs, merge_rejected = await self._merge_updates(job, pairs)
        rejected += merge_rejected
        effective = [(i, op) for i, op in pairs if op.action is not Action.NOOP]
        if job.mode == "review" and effective:
            job.held_ops = [HeldOp(index=i, op=op) for i, op in effective]
            job.rejected = rejected
            job.state = "held"
            job.error = None
            job.error_kind = None
            await self._save(job)
            self._emit(
                JobHeld(
                    job_id=job.id,
                    ops=tuple(HeldOpView(index=h.index, op=h.op) for h in job.held_ops),
                    rejected=tuple(rejected),
                )
            )
            return
        job.rejected = rejected  # kept on the job if the commit fails
        await self._commit(job, effective, rejected)

    async def _extract(self, job: Job, *, reask: bool) -> None:
        # The snapshot is taken now, when the job runs: it sees every batch committed before.
        snap = await self._in_thread(self.stores.snapshot)
        request = build_extraction_request(list(job.turns), snap.project_md, snap.user_md)
        if reask:
            request = request.model_copy(update={"prompt": request.prompt + REASK_NOTE})
        answer = await self._ask(job, request)
        # Kept before parsing, with the hashes the model saw: a replay re-parses, never re-asks.
        job.raw_answer = answer
        job.snapshot_hashes = dict(snap.hashes)
        job.reasked = job.reasked or reask
        job.merge_raw = None
        await self._save(job)

    async def _ask(self, job: Job, request: CompletionRequest) -> str:
        """One request with retries: exponential backoff, at most ``max_attempts`` tries."""
        assert self.completion is not None
        delay = BACKOFF_BASE
        reason = ""
        for attempt in range(1, self._max_attempts + 1):
            retryable = True
            try:
                async with asyncio.timeout(self._request_timeout):
                    answer = await self.completion(request)
                if not isinstance(answer, str):
                    raise TypeError(f"the completion returned {type(answer).__name__}, not text")
                return answer
            except CompletionError as e:
                retryable = e.retryable
                reason = str(e) or type(e).__name__
            except TimeoutError:
                reason = f"no answer within {self._request_timeout:g} s"
            except Exception as e:
                reason = f"{type(e).__name__}: {e}"
            job.attempts += 1
            job.error = f"{request.purpose} request failed (attempt {attempt} of {self._max_attempts}): {reason}"
            job.error_kind = "provider"
            with contextlib.suppress(SpoolError, OSError):
                await self._save(job)
            if not retryable:
                raise _JobFailure(f"{request.purpose} request failed: {reason}", kind="provider", retryable=False)
            if attempt < self._max_attempts:
                await self._sleep(delay)
                delay *= 2
        raise _JobFailure(
            f"{request.purpose} request failed {self._max_attempts} times; last: {reason}",
            kind="provider",
            retryable=True,
        )

    async def _merge_updates(
        self, job: Job, pairs: list[tuple[int, Operation]]
    ) -> tuple[list[tuple[int, Operation]], list[Rejection]]:
        """Merge every proposed update with the note's current body: one request per job (DESIGN §5)."""
        updates = [(i, op) for i, op in pairs if op.action is Action.UPDATE]
        if not updates:
            return pairs, []
        keys = {i: f"op{i}" for i, _ in updates}
        unreadable: dict[int, str] = {}
        if job.merge_raw is None:
            items: list[MergeItem] = []
            for i, op in updates:
                try:
                    note = await self._in_thread(self.stores.read_note, op.level, op.filename)
                except Exception as e:
                    unreadable[i] = f"cannot read {op.level} note {op.filename!r}: {e}"
                    continue
                items.append(
                    MergeItem(
                        key=keys[i],
                        filename=op.filename,
                        level=op.level,
                        title=note.meta.title,
                        current_body=note.body,
                        proposed=op.content or "",
                    )
                )
            if items:
                answer = await self._ask(job, build_merge_request(items))
                job.merge_raw = answer  # kept before use, like the extraction answer
                await self._save(job)
        merged: dict[str, str] = {}
        if job.merge_raw is not None:
            try:
                merged = parse_merge_answer(job.merge_raw, [keys[i] for i, _ in updates])
            except Exception as e:
                log.warning("memory job %s: unreadable merge answer: %s", job.id, e)
        out: list[tuple[int, Operation]] = []
        rejected: list[Rejection] = []
        for i, op in pairs:
            if op.action is not Action.UPDATE:
                out.append((i, op))
                continue
            body = merged.get(keys[i])
            if body is None:
                why = unreadable.get(i) or f"the merge answer has no merged body for {op.level} note {op.filename}"
                rejected.append(Rejection(index=i, reason=_reason(i, why), op=_dump(op)))
                continue
            new_op, rejection = revalidate(i, op.model_copy(update={"content": body}))
            if rejection is not None:
                rejected.append(rejection)
            elif new_op is not None:
                out.append((i, new_op))
        return out, rejected

    async def _commit(self, job: Job, ops: list[tuple[int, Operation]], rejected: list[Rejection]) -> None:
        path = self.spool.path(job.id)
        if not ops and not rejected:
            # Nothing to keep and nothing to record: no transaction, no history entry.
            await self._in_thread(self.spool.delete, job.id)
            self._emit(JobApplied(job_id=job.id))
            return
        try:
            result = await self._in_thread(
                self.stores.apply,
                ops,
                source=job.session or self.session or FALLBACK_SOURCE,
                expected=job.snapshot_hashes or {},
                jobs=[path],
                rejected=rejected,
                label=f"memory job {job.id}",
            )
        except JobAlreadyDone:
            log.info("memory job %s was committed before; dropped", job.id)
            return
        except (TransactionError, OSError) as e:
            raise _JobFailure(f"could not commit the batch: {e}", kind="apply", retryable=True) from None
        index = await self._in_thread(self._merged_index) if result.applied else None
        self._emit_result(job.id, result, index)

    def _merged_index(self) -> str | None:
        try:
            return self.stores.merged_index()
        except Exception:
            log.exception("memory: cannot read the merged index")
            return None

    def _emit_result(self, job_id: str, result: BatchResult, index: str | None) -> None:
        self._emit(
            JobApplied(
                job_id=job_id,
                applied=tuple(result.applied),
                rejected=tuple(result.rejected),
                conflicts=tuple(result.conflicts),
                txid=result.txid,
            )
        )
        if result.applied and index is not None:
            self._emit(IndexChanged(index=index))

    # -- waiting -------------------------------------------------------------------------------

    def _status(self, job_id: str, successors: dict[str, str]) -> tuple[str, str]:
        """(status, reason) of a job, following coalesced successors: done/held/failed/queued."""
        if job_id in self._active:
            return "queued", ""
        seen: set[str] = set()
        cur = job_id
        while True:
            nxt = successors.get(cur)
            if nxt is not None and nxt not in seen and self.spool.exists(nxt):
                seen.add(cur)
                cur = nxt
                continue
            try:
                job = self.spool.load(cur)
            except JobNotFound:
                return "done", ""
            except SpoolError as e:
                return "failed", str(e)
            return job.state, job.error or ""

    def _statuses(self, job_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        successors = self.spool.successors()
        return {job_id: self._status(job_id, successors) for job_id in job_ids}

    async def _wait_change(self, timeout: float) -> None:
        if timeout <= 0:
            return
        if self._changed is None or not self._in_loop():
            await asyncio.sleep(min(timeout, self._poll))
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), min(timeout, self._poll))

    async def wait_for(self, job_id: str, timeout: float | None) -> bool:
        """True once the job is done, held or failed (a job run by another process counts too)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            status, _ = (await asyncio.to_thread(self._statuses, [job_id]))[job_id]
            if status != "queued":
                return True
            remaining = self._poll if deadline is None else deadline - loop.time()
            if remaining <= 0:
                return False
            await self._wait_change(remaining)

    async def flush(self, timeout: float | None = None, include_failed: bool = True) -> FlushResult:
        """Run this workspace's spooled jobs now (failed ones again too); held jobs are left alone.

        Starts this manager if needed. When another process is the worker, the failed jobs are
        re-queued for it and this waits for it to run them.
        """
        result = FlushResult()
        if not self._started:
            await self.start()
        entries = await asyncio.to_thread(self.spool.list, self.workspace, include_orphans=False)
        targets: list[str] = []
        for e in entries:
            if e.job is None:
                result.failed[e.id] = e.problem or "unreadable job file"
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
        if self.mode == "off" or self.completion is None:
            result.unfinished += targets
            return result
        self._signal(wake=True)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            statuses = await asyncio.to_thread(self._statuses, targets)
            if all(s != "queued" for s, _ in statuses.values()):
                break
            remaining = self._poll if deadline is None else deadline - loop.time()
            if remaining <= 0:
                break
            await self._wait_change(remaining)
        for job_id, (status, reason) in statuses.items():
            if status == "done":
                result.done.append(job_id)
            elif status == "held":
                result.held.append(job_id)
            elif status == "failed":
                result.failed[job_id] = reason or "failed"
            else:
                result.unfinished.append(job_id)
        return result

    def _requeue(self, job_id: str) -> None:
        try:
            job = self.spool.load(job_id)
        except SpoolError:
            return
        if job.state != "failed":
            return
        job.state = "queued"
        if job.error_kind == "unparseable":
            # Re-parsing the same answer cannot succeed: ask afresh.
            job.raw_answer = None
            job.reasked = False
            job.snapshot_hashes = None
            job.merge_raw = None
        self.spool.save(job)
        self._skip.pop(job_id, None)

    # -- listing -------------------------------------------------------------------------------

    def entries(self, all_workspaces: bool = False) -> list[SpoolEntry]:
        """Spool entries for listings: this workspace's (or all, orphans and unreadable files included)."""
        return self.spool.list(None if all_workspaces else self.workspace, include_orphans=all_workspaces)

    def pending(self, all_workspaces: bool = False) -> list[Job]:
        """Spooled jobs (queued, failed, held), oldest first."""
        return [e.job for e in self.entries(all_workspaces) if e.job is not None]

    # -- review --------------------------------------------------------------------------------

    @contextmanager
    def _review_lock(self) -> Iterator[None]:
        self.fs.makedirs(self.paths.locks_dir, 0o700)
        lock = filelock.FileLock(
            str(self.paths.locks_dir / f"review-{workspace_key(self.workspace)}.lock"),
            timeout=REVIEW_LOCK_TIMEOUT,
            is_singleton=False,
            thread_local=False,
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

    def _held(self, job_ref: str) -> Job:
        try:
            job = self.spool.load(self.spool.resolve(job_ref))
        except SpoolError as e:
            raise ReviewError(str(e)) from None
        if job.state != "held":
            raise ReviewError(f"job {job.id} is {job.state}, not held for review")
        if Path(job.workspace) != self.workspace and Path(job.workspace).resolve() != self.workspace.resolve():
            raise ReviewError(f"job {job.id} belongs to workspace {job.workspace}")
        return job

    @staticmethod
    def _choose(job: Job, op_indexes: Sequence[int] | None) -> tuple[list[HeldOp], list[HeldOp]]:
        if op_indexes is None:
            return list(job.held_ops), []
        held = {h.index for h in job.held_ops}
        unknown = sorted({i for i in op_indexes if i not in held})
        if unknown:
            raise ReviewError(
                f"job {job.id} holds no op {', '.join(map(str, unknown))} (held: {', '.join(map(str, sorted(held)))})"
            )
        chosen = set(op_indexes)
        return [h for h in job.held_ops if h.index in chosen], [h for h in job.held_ops if h.index not in chosen]

    def approve(self, job_id: str, op_indexes: Sequence[int] | None = None) -> BatchResult:
        """Write exactly the approved held ops (all when ``op_indexes`` is None). Never calls a model.

        Each op is validated again and checked against the note hashes the model saw, so a
        note changed since shows up as a conflict. The ops not approved move to a new held job
        that becomes live in the same commit that completes this one.
        """
        with self._review_lock():
            job = self._held(job_id)
            chosen, remaining = self._choose(job, op_indexes)
            ops: list[tuple[int, Operation]] = []
            rejected: list[Rejection] = [] if remaining else list(job.rejected)
            for h in chosen:
                op, rejection = revalidate(h.index, h.op)
                if rejection is not None:
                    rejected.append(rejection)
                elif op is not None:
                    ops.append((h.index, op))
            child: Job | None = None
            if remaining:
                child = job.model_copy(
                    deep=True,
                    update={"id": successor_id(job.id), "held_ops": remaining, "split_from": job.id, "merged_from": []},
                )
                self.spool.submit(child)
            try:
                result = self.stores.apply(
                    ops,
                    source=job.session or self.session or FALLBACK_SOURCE,
                    expected=job.snapshot_hashes or {},
                    jobs=[self.spool.path(job.id)],
                    rejected=rejected,
                    label=f"approve {job.id}",
                )
            except JobAlreadyDone:
                if child is not None:
                    self.spool.delete(child.id)
                raise ReviewError(f"job {job.id} was already completed") from None
            # Any other failure leaves the child alone: it is live exactly when the parent is gone.
        self._emit_result(job.id, result, self._merged_index() if result.applied else None)
        if child is not None:
            self._emit(
                JobHeld(job_id=child.id, ops=tuple(HeldOpView(index=h.index, op=h.op) for h in child.held_ops))
            )
        return result

    def reject(self, job_id: str, op_indexes: Sequence[int] | None = None) -> Job | None:
        """Drop held ops (all when None) without writing them. Returns the job still held, if any."""
        with self._review_lock():
            job = self._held(job_id)
            chosen, remaining = self._choose(job, op_indexes)
            refused = [
                Rejection(index=h.index, reason=f"op {h.index}: rejected in review", op=_dump(h.op)) for h in chosen
            ]
            if remaining:
                job.held_ops = remaining
                job.rejected = [*job.rejected, *refused]
                self.spool.save(job)
            else:
                # The last ops: the job's rejections go to the history in the commit that removes it.
                try:
                    result = self.stores.apply(
                        [],
                        source=job.session or self.session or FALLBACK_SOURCE,
                        jobs=[self.spool.path(job.id)],
                        rejected=[*job.rejected, *refused],
                        label=f"reject {job.id}",
                    )
                except JobAlreadyDone:
                    raise ReviewError(f"job {job.id} was already completed") from None
        if remaining:
            self._emit(JobHeld(job_id=job.id, ops=tuple(HeldOpView(index=h.index, op=h.op) for h in remaining)))
            return job
        self._emit_result(job.id, result, None)
        return None


__all__ = ["FlushResult", "Manager", "Mode", "ReviewError", "revalidate"]
