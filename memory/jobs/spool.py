"""The durable job spool: one JSON file per memory job under ``$PSEUDOCLAUDE_HOME/spool``.

A job is written (and fsynced, name included) before ``Manager.submit`` returns, so quitting
right after an answer never loses the turn. Like a store file, it is written under a temp name,
fsynced and only then given its name (a no-clobber link), so a crash never leaves a torn job
file. Every later change is an atomic replace. A file that is damaged anyway (written by hand,
an old version, a disk fault) is listed with its reason and never blocks the other jobs;
``memory doctor --fix`` moves it, bytes kept, to ``spool/damaged/``.

Reading is cheap when nothing changed: a parsed job is cached under its file's identity
(inode, size, mtime, ctime), so the worker's and the waiters' ticks only ``lstat`` the files. A job file
disappears in exactly two ways: the store transaction that completes it removes it as part of
its commit, or it is superseded by a coalesced job that already holds its turns.

Ids sort by creation time (zero-padded ``time_ns`` + random hex), so a directory listing is
the queue order: oldest first.
"""

from __future__ import annotations

import builtins  # the class defines a method named ``list``: its annotations name the builtin
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.constants import Level
from memory.extract.prompt import turn_excerpt
from memory.model import Operation, Rejection, Turn, rfc3339, utcnow
from memory.store.fs import DEFAULT_FS, FS, TEMP_PREFIX
from memory.store.paths import Paths

JOB_SUFFIX = ".json"
DAMAGED_DIR = "damaged"
# A job file holds raw turns (which can be long) and the model's answers; past this it is
# reported as damaged rather than read into memory.
MAX_JOB_FILE_BYTES = 32 * 1024 * 1024
# Temp files of an interrupted atomic write older than this are removed by a listing.
STALE_TEMP_SECONDS = 3600.0

_ID_RE = re.compile(r"^\d{20}-[0-9a-f]{8}$")

JobState = Literal["queued", "failed", "held"]
# What the worker is doing with a queued job right now (written so that other windows see it).
JobPhase = Literal["extracting", "applying", "retrying"]
# A spooled job as listings show it: its state or phase, or what its file's place says of it.
JobViewState = Literal[
    "queued", "extracting", "applying", "retrying", "failed", "held", "orphaned", "damaged"
]
JobMode = Literal["auto", "review"]
# What a job asks the memory model: to learn from turns, or to clean one store.
JobPurpose = Literal["extract", "consolidate"]
ErrorKind = Literal["provider", "unparseable", "merge", "apply", "internal"]


class SpoolError(Exception):
    """A one-line reason a job could not be read or written."""


class JobNotFound(SpoolError, LookupError):
    pass


class CorruptJob(SpoolError):
    pass


class HeldOp(BaseModel):
    """A validated op of a review-mode job, waiting for approve/reject. ``index``: its place in the batch."""

    index: int
    op: Operation
    # Where this op's card comes from when that is not the job's own source (an import names each
    # card's file and section): written as the created card's ``source``.
    source: str | None = None


class RetryInfo(BaseModel):
    """The provider failed; the worker tries again at ``next_try_at`` (RFC 3339 UTC)."""

    model_config = ConfigDict(frozen=True)

    attempt: int  # failed requests of the job's budget so far
    max_attempts: int
    next_try_at: str
    reason: str

    @property
    def next_attempt(self) -> int:
        """The attempt the worker waits to make ("retrying 2/3" after one failure): the one count
        every view of a retrying job shows."""
        return min(self.attempt + 1, self.max_attempts)


class MergePart(BaseModel):
    """One merge request's raw answer and the keys (``op<index>``) it was asked to merge."""

    keys: list[str]
    answer: str


class Job(BaseModel):
    version: int = 1
    id: str
    workspace: str
    created: str
    session: str = ""
    mode: JobMode = "auto"
    turns: list[Turn]
    purpose: JobPurpose = "extract"
    # A consolidation: the store it cleans, and the clusters of likely duplicates or
    # contradictions (filenames) found locally when it was made.
    level: Level | None = None
    clusters: list[list[str]] = Field(default_factory=list)
    # Ids of the queued jobs this coalesced job replaces: while it exists they are never run.
    merged_from: list[str] = Field(default_factory=list)
    # Review mode: the job the not-yet-approved ops were split from. Live only once that job's
    # approval transaction has removed it (until then the parent still holds these ops).
    split_from: str | None = None
    state: JobState = "queued"
    phase: JobPhase | None = None
    updated: str = ""
    # Failed requests over the job's life, all processes (the per-process budget is the worker's).
    attempts: int = 0
    retry: RetryInfo | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    retryable: bool = True
    # The model's extraction answer, stored before it is parsed: a replay re-parses it.
    raw_answer: str | None = None
    reasked: bool = False
    # The merge answers, each stored before use: a replay asks only for the keys not asked yet.
    merge_raw: list[MergePart] | None = None
    # The note hashes of the snapshot the model saw (stored with raw_answer): the CAS tokens.
    snapshot_hashes: dict[str, str] | None = None
    held_ops: list[HeldOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)

    @field_validator("merge_raw", mode="before")
    @classmethod
    def _legacy_merge_raw(cls, value: Any) -> Any:
        # Job files of the first version kept one answer for all updates.
        if isinstance(value, str):
            return [{"keys": ["*"], "answer": value}]
        return value

    def turn_bytes(self) -> int:
        return sum(len(m.text.encode("utf-8", "surrogatepass")) for t in self.turns for m in t.messages)

    def excerpt(self, width: int = 80) -> str:
        """One line for listings: the first turn's first user message, redacted and sanitized;
        for a consolidation, what it cleans."""
        if self.purpose == "consolidate":
            return consolidation_excerpt(self.level, self.clusters)
        return turn_excerpt(self.turns[0], width) if self.turns else ""


def consolidation_excerpt(level: Level | None, clusters: list[list[str]]) -> str:
    """``consolidate the project store: 3 clusters, 8 cards``."""
    where = f"the {level.value} store" if level is not None else "a store"
    n, cards = len(clusters), len({name for c in clusters for name in c})
    return f"consolidate {where}: {n} cluster{'s' if n != 1 else ''}, {cards} card{'s' if cards != 1 else ''}"


_id_lock = threading.Lock()
_last_ns = 0


def new_job_id() -> str:
    """A fresh id, strictly increasing within this process, time-ordered across processes."""
    global _last_ns
    with _id_lock:
        ns = max(time.time_ns(), _last_ns + 1)
        _last_ns = ns
    return f"{ns:020d}-{secrets.token_hex(4)}"


def successor_id(first: str) -> str:
    """An id for a job replacing ``first`` (a coalesced or split job): it keeps ``first``'s place in
    the queue."""
    return f"{first[:20]}-{secrets.token_hex(4)}"


def is_job_id(value: str) -> bool:
    return bool(_ID_RE.match(value))


def make_job(workspace: Path | str, turns: list[Turn], *, session: str = "", mode: JobMode = "auto") -> Job:
    now = rfc3339(utcnow())
    return Job(
        id=new_job_id(),
        workspace=str(workspace),
        created=now,
        updated=now,
        session=session,
        mode=mode,
        turns=list(turns),
    )


def make_consolidation_job(
    workspace: Path | str,
    level: Level,
    clusters: list[list[str]],
    *,
    session: str = "",
    mode: JobMode = "review",
) -> Job:
    """A job that asks the memory model to clean the ``level`` store's ``clusters``."""
    job = make_job(workspace, [], session=session, mode=mode)
    job.purpose = "consolidate"
    job.level = level
    job.clusters = [list(c) for c in clusters]
    return job


@dataclass(frozen=True)
class SpoolEntry:
    """One job file as a listing sees it: a job, or why it could not be read."""

    id: str
    path: Path
    job: Job | None = None
    problem: str | None = None
    workspace: str | None = None
    orphaned: bool = False

    @property
    def damaged(self) -> bool:
        return self.job is None

    @property
    def status(self) -> str:
        if self.job is None:
            return "corrupt"
        if self.orphaned:
            return "orphaned"
        return self.job.state


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


# A job file's identity: a rewrite (always a new inode by rename) or a change in place shows here.
_FileKey = tuple[int, int, int, int, int]


def _file_key(st: os.stat_result) -> _FileKey:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class _Cached:
    key: _FileKey
    job: Job | None
    problem: str | None
    workspace: str | None


class Spool:
    def __init__(self, paths: Paths, fs: FS = DEFAULT_FS) -> None:
        self.dir = paths.spool_dir
        self.damaged_dir = paths.spool_dir / DAMAGED_DIR
        self.fs = fs
        self._cache: dict[str, _Cached] = {}
        self._cache_lock = threading.Lock()
        self._read_lock = threading.Lock()
        # Real paths of workspaces named by jobs: listing compares them on every tick.
        self._real: dict[str, str] = {}

    # -- names ---------------------------------------------------------------------------------

    def path(self, job_id: str) -> Path:
        if not is_job_id(job_id):
            raise JobNotFound(f"not a job id: {job_id!r}")
        return self.dir / f"{job_id}{JOB_SUFFIX}"

    def ids(self) -> list[str]:
        """Job ids present, oldest first (the file names; nothing is parsed)."""
        try:
            names = self.fs.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(
            n[: -len(JOB_SUFFIX)]
            for n in names
            if n.endswith(JOB_SUFFIX) and is_job_id(n[: -len(JOB_SUFFIX)])
        )

    def resolve(self, ref: str) -> str:
        """A job id from a full id or an unambiguous prefix/suffix (what a person types)."""
        ref = ref.strip().removesuffix(JOB_SUFFIX)
        ids = self.ids()
        if ref in ids:
            return ref
        hits = [i for i in ids if ref and (i.startswith(ref) or i.endswith(ref))]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise JobNotFound(f"no spooled job {ref!r}")
        raise JobNotFound(f"job reference {ref!r} is ambiguous: {', '.join(hits[:5])}")

    # -- one job -------------------------------------------------------------------------------

    def _encode(self, job: Job) -> bytes:
        return job.model_dump_json(indent=1).encode("utf-8", "surrogatepass")

    def submit(self, job: Job) -> Path:
        """Create the job's file durably; never overwrites (``FileExistsError``).

        Temp name, data fsynced, then a hard link to the final name (refused if the name
        exists), the temp name removed and the folder fsynced: the job's name appears only
        with its whole content, and is durable when this returns.
        """
        self.fs.makedirs(self.dir, 0o700)
        path = self.path(job.id)
        tmp = self.fs.temp_path(self.dir)
        self.fs.write_new(tmp, self._encode(job), 0o600)
        try:
            self.fs.link(tmp, path)
        finally:
            self.fs.unlink(tmp)
        self.fs.fsync_dir(self.dir)
        return path

    def save(self, job: Job) -> None:
        """Replace the job's file atomically. A job that is gone (completed) is never recreated."""
        path = self.path(job.id)
        if not self.fs.exists(path):
            raise JobNotFound(f"job {job.id} is no longer spooled")
        job.updated = rfc3339(utcnow())
        self.fs.atomic_write(path, self._encode(job), 0o600)

    def load(self, job_id: str) -> Job:
        """The job, as a private copy the caller may change and ``save``."""
        return self.peek(job_id).model_copy(deep=True)

    def peek(self, job_id: str) -> Job:
        """The job as cached: read it, never change it (``load`` gives a private copy)."""
        path = self.path(job_id)
        cached = self._read(path.name, path)
        if cached is None:
            raise JobNotFound(f"job {job_id} is not spooled")
        if cached.job is None:
            raise CorruptJob(cached.problem or f"job {job_id}: unreadable")
        return cached.job

    def _read(self, name: str, path: Path) -> _Cached | None:
        """The parsed file (from the cache when unchanged); None when it is gone."""
        try:
            st = self.fs.lstat(path)
        except FileNotFoundError:
            with self._cache_lock:
                self._cache.pop(name, None)
            return None
        except OSError as e:
            return _Cached((0, 0, 0, 0, 0), None, f"{name}: cannot read: {e.strerror or e}", None)
        job_id = name[: -len(JOB_SUFFIX)]
        if not stat.S_ISREG(st.st_mode):
            # A FIFO or device named like a job: never opened, so nothing can hang on it.
            return _Cached(_file_key(st), None, f"job {job_id}: not a regular file", None)
        key = _file_key(st)
        with self._cache_lock:
            hit = self._cache.get(name)
        if hit is not None and hit.key == key:
            return hit
        with self._read_lock:  # two threads missing at once (a tick and a waiter) parse it once
            with self._cache_lock:
                hit = self._cache.get(name)
            if hit is not None and hit.key == key:
                return hit
            return self._parse_file(name, path, key)

    def _parse_file(self, name: str, path: Path, key: _FileKey) -> _Cached | None:
        job_id = name[: -len(JOB_SUFFIX)]
        try:
            data = self.fs.read_bytes(path, max_bytes=MAX_JOB_FILE_BYTES)
        except FileNotFoundError:
            return None
        except OSError as e:
            return _Cached(key, None, f"job {job_id}: cannot read: {e.strerror or e}", None)
        try:
            job = self._parse(job_id, data)
            entry = _Cached(key, job, None, job.workspace)
        except CorruptJob as e:
            entry = _Cached(key, None, str(e), _guess_workspace(data))
        with self._cache_lock:
            self._cache[name] = entry
        return entry

    def _parse(self, job_id: str, data: bytes) -> Job:
        if len(data) > MAX_JOB_FILE_BYTES:
            raise CorruptJob(f"job {job_id}: file larger than {MAX_JOB_FILE_BYTES} bytes")
        if not data:
            raise CorruptJob(f"job {job_id}: empty file (torn write)")
        try:
            job = Job.model_validate_json(data)
        except ValidationError as e:
            errors = e.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            msg = errors[0]["msg"] if errors else str(e)
            raise CorruptJob(f"job {job_id}: not a valid job file ({where}: {msg})") from None
        if job.id != job_id:
            raise CorruptJob(f"job {job_id}: file names job {job.id!r}")
        return job

    def exists(self, job_id: str) -> bool:
        return self.fs.exists(self.path(job_id))

    def delete(self, job_id: str) -> None:
        self.delete_many([job_id])

    def delete_many(self, job_ids: Iterable[str]) -> None:
        ids = list(job_ids)
        for job_id in ids:
            self.fs.unlink(self.path(job_id))
        if ids and self.fs.exists(self.dir):
            self.fs.fsync_dir(self.dir)

    def quarantine(self, name: str) -> Path:
        """Move a damaged job file, bytes kept, to ``spool/damaged/`` (never over another file)."""
        if "/" in name or name.startswith(".") or not name.endswith(JOB_SUFFIX):
            raise SpoolError(f"not a job file name: {name!r}")
        src = self.dir / name
        self.fs.makedirs(self.damaged_dir, 0o700)
        dst = self.damaged_dir / name
        n = 1
        while self.fs.exists(dst):
            n += 1
            dst = self.damaged_dir / f"{name[: -len(JOB_SUFFIX)]}-{n}{JOB_SUFFIX}"
        self.fs.link(src, dst)
        self.fs.fsync_dir(self.damaged_dir)
        self.fs.unlink(src)
        self.fs.fsync_dir(self.dir)
        return dst

    # -- listing -------------------------------------------------------------------------------

    def same_workspace(self, workspace: str, want: str) -> bool:
        """Whether a job's workspace is ``want`` (a real path); real paths are cached."""
        if workspace == want:
            return True
        real = self._real.get(workspace)
        if real is None:
            real = self._real[workspace] = _real(workspace)
        return real == want

    def list(
        self,
        workspace: Path | str | None = None,
        *,
        include_orphans: bool = True,
        include_split: bool = False,
    ) -> builtins.list[SpoolEntry]:
        """Every job file, oldest first; ``workspace`` limits it to that workspace's jobs.

        Unreadable files are listed with a reason (and never deleted). A job whose workspace
        folder is gone is ``orphaned``. Jobs superseded by a coalesced job are removed (their
        turns are in that job). A split job whose parent still exists is not live yet and is
        hidden unless ``include_split``. The jobs listed are shared with the cache: read them,
        and ``load`` a job to change it.
        """
        want = _real(workspace) if workspace is not None else None
        try:
            names = self.fs.listdir(self.dir)
        except FileNotFoundError:
            return []
        self._drop_stale_temps(names)
        entries = self._entries(names)
        live = {e.id for e in entries}
        superseded = {old for e in entries if e.job is not None for old in e.job.merged_from if old in live}
        if superseded:
            # Safe at any time: the coalesced job was durably written, turns included, before
            # its originals were removed.
            self.delete_many(sorted(superseded))
        out: list[SpoolEntry] = []
        for e in entries:
            if e.id in superseded:
                continue
            if not include_split and e.job is not None and e.job.split_from in live:
                continue
            if want is not None and e.workspace is not None and not self.same_workspace(e.workspace, want):
                continue
            if not include_orphans and e.orphaned:
                continue
            out.append(e)
        return out

    def _entries(self, names: Iterable[str]) -> builtins.list[SpoolEntry]:
        """The spool folder's job files as entries (the cache keeps the parsed ones; a file
        gone from the folder leaves the cache)."""
        entries: list[SpoolEntry] = []
        present: set[str] = set()
        for name in names:
            if not name.endswith(JOB_SUFFIX) or name.startswith("."):
                continue
            job_id = name[: -len(JOB_SUFFIX)]
            path = self.dir / name
            if not is_job_id(job_id):
                entries.append(SpoolEntry(id=job_id, path=path, problem=f"{name}: not a job file name"))
                continue
            present.add(name)
            cached = self._read(name, path)
            if cached is None:
                continue  # completed while we listed
            if cached.job is None:
                entries.append(
                    SpoolEntry(id=job_id, path=path, problem=cached.problem, workspace=cached.workspace)
                )
                continue
            job = cached.job
            entries.append(
                SpoolEntry(
                    id=job_id,
                    path=path,
                    job=job,
                    workspace=job.workspace,
                    orphaned=not os.path.isdir(job.workspace),
                )
            )
        with self._cache_lock:
            for gone in [n for n in self._cache if n not in present]:
                del self._cache[gone]
        return entries

    def successors(self) -> dict[str, str]:
        """old id -> id of the existing job that replaced it (coalesced)."""
        out: dict[str, str] = {}
        for e in self.list(None, include_split=True):
            if e.job is not None:
                for old in e.job.merged_from:
                    out[old] = e.job.id
        return out

    def _drop_stale_temps(self, names: builtins.list[str]) -> None:
        now = time.time()
        for name in names:
            if not name.startswith(TEMP_PREFIX):
                continue
            path = self.dir / name
            try:
                if now - self.fs.lstat(path).st_mtime > STALE_TEMP_SECONDS:
                    self.fs.unlink(path)
            except OSError:
                pass


def _guess_workspace(data: bytes) -> str | None:
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    ws = raw.get("workspace") if isinstance(raw, dict) else None
    return ws if isinstance(ws, str) else None


__all__ = [
    "DAMAGED_DIR",
    "CorruptJob",
    "HeldOp",
    "Job",
    "JobMode",
    "JobNotFound",
    "JobPhase",
    "JobState",
    "JobViewState",
    "MergePart",
    "RetryInfo",
    "Spool",
    "SpoolEntry",
    "SpoolError",
    "consolidation_excerpt",
    "is_job_id",
    "make_consolidation_job",
    "make_job",
    "new_job_id",
    "successor_id",
]
