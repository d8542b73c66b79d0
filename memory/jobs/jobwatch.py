"""Seeing what other processes do with this workspace's jobs (so a second window stays live).

Every manager's loop lists the spool on each tick (cheap: only changed job files are parsed)
and compares it with what it saw last: a job that appeared, started, is retrying, failed, is
held, was taken over by a coalesced job, or is gone (its outcome read from the history)
becomes an event. The manager's own writes are recorded with ``touch`` as they happen, so they
are never echoed back; a generation counter keeps a listing taken before an own write from
being compared with the state after it.

The job's outcome is announced by the process that ran it: the in-process worker's own event,
or the worker child's ``outcome`` line (``announce``). The spool is the fallback for what no
such report said (a child killed between its commit and its line, another window's worker), and
whichever of the two sees an outcome first announces it, the other never. A batch the listing
announces (read from the history) is recorded in ``announced`` file by file, so the store watcher
does not report the same writes again as an outside change.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence, Set
from dataclasses import dataclass

from memory.constants import INDEX_FILE
from memory.events import (
    HeldOpView,
    JobApplied,
    JobDismissed,
    JobFailed,
    JobHeld,
    JobOrphaned,
    JobQueued,
    JobRetrying,
    JobStarted,
    JobTakenOver,
    MemoryEvent,
)
from memory.jobs.spool import Job, JobNotFound, JobViewState, Spool, SpoolEntry, SpoolError
from memory.jobs.views import JobOutcome
from memory.model import HistoryEntry
from memory.store.history import entry_from_json
from memory.store.journal import OwnWrites
from memory.store.noteparse import sha256
from memory.store.stores import MemoryStores

RECENT_HISTORY = 50  # history entries searched for the outcome of a job another process ran
MAX_DONE = 4096  # ids of jobs announced done that are remembered (a job is done once, soon after)


@dataclass(frozen=True)
class _Seen:
    status: JobViewState
    attempt: int
    job: Job | None  # None: known only from an announcement, never listed


def _announced(event: MemoryEvent) -> _Seen | None:
    """The state of a still-spooled job that an outcome announces (None: not such an outcome)."""
    if isinstance(event, JobFailed):
        return _Seen("failed", 0, None)
    if isinstance(event, JobHeld):
        return _Seen("held", 0, None)
    if isinstance(event, JobRetrying):
        return _Seen("retrying", event.attempt, None)
    return None


def status_of(job: Job) -> JobViewState:
    if job.state in ("held", "failed"):
        return job.state
    return job.phase or "queued"


def _seen(job: Job) -> _Seen:
    return _Seen(status_of(job), job.retry.attempt if job.retry else 0, job)


class JobWatch:
    """``announced``: the store writes the manager's events announce (the store watcher's filter)."""

    def __init__(
        self, stores: MemoryStores, spool: Spool, real_workspace: str, announced: OwnWrites | None = None
    ) -> None:
        self.stores = stores
        self.spool = spool
        self.real_workspace = real_workspace
        self.announced = announced if announced is not None else OwnWrites()
        self._lock = threading.Lock()
        self._known: dict[str, _Seen] = {}
        self.gen = 0
        self._touched: dict[str, int] = {}
        self._primed = False
        self._orphans: set[str] = set()
        # job id -> the job that took its turns over (coalesced), as learnt while watching.
        self.taken_over: dict[str, str] = {}
        # job id -> its created time, for a job gone until its outcome is reported.
        self._gone_created: dict[str, str] = {}
        # Jobs whose end (applied or dismissed) was announced, oldest first: never a second time.
        self._done: dict[str, None] = {}

    def touch(self, job_id: str, job: Job | None) -> None:
        """This process changed the job (None: it is gone): not an event for the watch."""
        with self._lock:
            self.gen += 1
            self._touched[job_id] = self.gen
            if job is None:
                self._known.pop(job_id, None)
            else:
                self._known[job_id] = _seen(job)

    def claim(self, event: MemoryEvent) -> bool:
        """False for the end of a job (``JobApplied``, ``JobDismissed``) already announced; any
        other event is the caller's to emit."""
        if not isinstance(event, JobApplied | JobDismissed):
            return True
        with self._lock:
            if event.job_id in self._done:
                return False
            self._done[event.job_id] = None
            if len(self._done) > MAX_DONE:
                del self._done[next(iter(self._done))]
            return True

    def announce(self, event: MemoryEvent) -> bool:
        """An outcome the process that ran the job reported (the worker child's line): True when
        it is news, and from now on the spool's listing does not announce it again."""
        if isinstance(event, JobApplied | JobDismissed):
            if not self.claim(event):
                return False
            self.touch(event.job_id, None)
            return True
        state = _announced(event)
        if state is None:
            return False
        job_id = event.job_id
        with self._lock:
            old = self._known.get(job_id)
            if old is not None and (old.status, old.attempt) == (state.status, state.attempt):
                return False  # the listing saw it first, and said so
            self.gen += 1
            self._touched[job_id] = self.gen
            self._known[job_id] = _Seen(state.status, state.attempt, old.job if old is not None else None)
        return True

    def mine(self, e: SpoolEntry) -> bool:
        return e.workspace is None or self.spool.same_workspace(e.workspace, self.real_workspace)

    def scan(self) -> tuple[list[SpoolEntry], list[SpoolEntry]]:
        """(every entry, this workspace's entries). Blocking: call from a thread."""
        entries = self.spool.list(None)
        return entries, [e for e in entries if self.mine(e)]

    def observe(
        self, entries: list[SpoolEntry], mine: list[SpoolEntry], gen0: int
    ) -> tuple[list[MemoryEvent], list[str]]:
        """Events for what changed since the last look, and the ids gone without a successor."""
        events: list[MemoryEvent] = []
        gone: list[str] = []
        with self._lock:
            touched = {i for i, g in self._touched.items() if g > gen0}
            current = {e.id: e.job for e in mine if e.job is not None}
            primed = self._primed
            for job_id, job in current.items():
                if job_id in touched:
                    continue
                seen = _seen(job)
                old = self._known.get(job_id)
                self._known[job_id] = seen
                if not primed:
                    continue  # the first look only learns what is there
                if old is None:
                    if not job.merged_from and not job.split_from:
                        events.append(JobQueued(job_id=job_id, workspace=job.workspace))
                    old = _Seen("queued", 0, job)
                events += _transition(old, seen, job)
            for job_id in [i for i in self._known if i not in current and i not in touched]:
                last = self._known.pop(job_id)
                successor = next((j.id for j in current.values() if job_id in j.merged_from), None)
                if successor is not None:
                    self.taken_over[job_id] = successor
                    if primed:
                        events.append(JobTakenOver(job_id=job_id, successor=successor))
                elif primed:
                    gone.append(job_id)
                    self._gone_created[job_id] = last.job.created if last.job is not None else ""
            self._touched = {i: g for i, g in self._touched.items() if g > gen0}
            for e in entries:
                if e.orphaned and e.id not in self._orphans:
                    self._orphans.add(e.id)
                    if primed and e.workspace:
                        events.append(JobOrphaned(job_id=e.id, workspace=e.workspace))
            self._primed = True
        return events, gone

    # -- jobs another process completed (blocking: call from a thread) ------------------------------

    def recent_history(self) -> list[HistoryEntry]:
        """The last few batches of this workspace, newest first (only those files are read)."""
        fs = self.stores.fs
        hdir = self.stores.paths.history_dir
        try:
            names = sorted(n for n in fs.listdir(hdir) if n.endswith(".json") and not n.startswith("."))
        except OSError:
            return []
        out: list[HistoryEntry] = []
        for name in reversed(names[-RECENT_HISTORY:]):
            try:
                out.append(entry_from_json(fs.read_bytes(hdir / name)))
            except (ValueError, OSError):
                continue
        return out

    @staticmethod
    def entry_for(history: list[HistoryEntry], job_id: str) -> tuple[HistoryEntry | None, str | None]:
        """The batch that completed ``job_id``, and the job that had taken it over (if one did)."""
        for entry in history:
            if job_id in entry.jobs:
                return entry, None
            if job_id in entry.took_over and entry.jobs:
                return entry, entry.jobs[0]
        return None, None

    def report_gone(self, gone: list[str]) -> list[MemoryEvent]:
        """The outcome of each job gone from the spool, read from the history."""
        history = self.recent_history()
        found = {job_id: self.entry_for(history, job_id) for job_id in gone}
        events: list[MemoryEvent] = []
        reported: set[str] = set()
        for job_id in gone:
            entry, successor = found[job_id]
            # A job that took others over keeps the first one's created time: the oldest's.
            created = self._gone_created.pop(job_id, "")
            if successor is not None:
                self.taken_over[job_id] = successor
                events.append(JobTakenOver(job_id=job_id, successor=successor))
                job_id = successor
                if job_id in reported:
                    continue
            reported.add(job_id)
            if entry is not None and entry.kind == "dismiss":
                events.append(JobDismissed(job_id=job_id))
            elif entry is None:
                events.append(JobApplied(job_id=job_id, created=created, writes_known=False))
            else:
                self._record_writes(entry)
                events.append(
                    JobApplied(
                        job_id=job_id,
                        applied=tuple(entry.applied),
                        rejected=tuple(entry.rejected),
                        conflicts=tuple(entry.conflicts),
                        dropped_cites=tuple(entry.dropped_cites),
                        txid=entry.txid,
                        created=created,
                    )
                )
        return events

    def _record_writes(self, entry: HistoryEntry) -> None:
        """The files a batch another process committed wrote, as announced from here on: its cards
        (the history has their hashes) and each changed store's ``MEMORY.md`` as it is now."""
        folders = {self.stores.store(ch.level).dir for ch in entry.changes}
        for ch in entry.changes:
            self.announced.record(self.stores.store(ch.level).dir / ch.filename, ch.after_sha)
        for folder in folders:
            try:
                self.announced.record(
                    folder / INDEX_FILE, sha256(self.stores.fs.read_bytes(folder / INDEX_FILE))
                )
            except (OSError, ValueError):
                continue  # gone or unsafe: the watcher says so if it is news

    def _outcome(
        self, job_id: str, active: Set[str], successors: dict[str, str], history: list[list[HistoryEntry]]
    ) -> JobOutcome:
        """Where a job is, following the jobs that took it over (``active``: jobs running here)."""
        cur, seen = job_id, {job_id}
        while True:
            nxt = successors.get(cur) or self.taken_over.get(cur)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            cur = nxt
        by = cur if cur != job_id else None
        if by is not None:
            self.taken_over[job_id] = by
        if active & {job_id, cur}:
            return JobOutcome(job_id=job_id, status="pending", taken_over_by=by)
        try:
            job = self.spool.peek(cur)
        except JobNotFound:
            if by is None:
                # Gone before this process saw who took it over: the history entry says.
                if not history:
                    history.append(self.recent_history())  # read once per look, only when needed
                by = self.entry_for(history[0], job_id)[1]
                if by is not None:
                    self.taken_over[job_id] = by
            return JobOutcome(job_id=job_id, status="done", taken_over_by=by)
        except SpoolError as e:
            return JobOutcome(job_id=job_id, status="failed", reason=str(e), taken_over_by=by)
        if job.state == "queued":
            return JobOutcome(job_id=job_id, status="pending", taken_over_by=by)
        return JobOutcome(job_id=job_id, status=job.state, reason=job.error or "", taken_over_by=by)

    def outcomes(self, job_ids: Sequence[str], active: Set[str]) -> dict[str, JobOutcome]:
        """Where each job is now (blocking: reads the spool, and the history when needed)."""
        successors = self.spool.successors()
        history: list[list[HistoryEntry]] = []
        return {job_id: self._outcome(job_id, active, successors, history) for job_id in job_ids}


def _transition(old: _Seen, new: _Seen, job: Job) -> list[MemoryEvent]:
    if new.status == old.status and new.attempt == old.attempt:
        return []
    if new.status in ("extracting", "applying") and old.status == "queued":
        return [JobStarted(job_id=job.id, turns=len(job.turns), merged_from=tuple(job.merged_from))]
    if new.status == "retrying" and job.retry is not None:
        return [JobRetrying(job_id=job.id, **job.retry.model_dump())]
    if new.status == "failed":
        return [JobFailed(job_id=job.id, reason=job.error or "failed", retryable=job.retryable)]
    if new.status == "held":
        return [
            JobHeld(
                job_id=job.id,
                ops=tuple(HeldOpView(index=h.index, op=h.op) for h in job.held_ops),
                rejected=tuple(job.rejected),
            )
        ]
    return []


__all__ = ["JobWatch", "status_of"]
