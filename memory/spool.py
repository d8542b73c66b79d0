"""The durable job spool (DESIGN.md §7): one JSON file per memory job under ``$PSEUDOCLAUDE_HOME/spool``.

A job is written (and fsynced, name included) before ``Manager.submit`` returns, so quitting
right after an answer never loses the turn. Every later change is an atomic replace. A job file
disappears in exactly two ways: the store transaction that completes it removes it as part of
its commit, or it is superseded by a coalesced job that already holds its turns.

Ids sort by creation time (zero-padded ``time_ns`` + random hex), so a directory listing is
the queue order: oldest first.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from .fs import DEFAULT_FS, FS, TEMP_PREFIX
from .model import Conflict, Operation, Rejection, Turn, rfc3339, utcnow
from .paths import Paths
from .prompt import turn_excerpt

JOB_SUFFIX = ".json"
# A job file holds raw turns (which can be long) and the model's answers; past this it is
# reported as damaged rather than read into memory.
MAX_JOB_FILE_BYTES = 32 * 1024 * 1024
# Temp files of an interrupted atomic write older than this are removed by a listing.
STALE_TEMP_SECONDS = 3600.0

_ID_RE = re.compile(r"^\d{20}-[0-9a-f]{8}$")

JobState = Literal["queued", "failed", "held"]
JobMode = Literal["auto", "review"]
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
    status: Literal["held"] = "held"


class Job(BaseModel):
    version: int = 1
    id: str
    workspace: str
    created: str
    session: str = ""
    mode: JobMode = "auto"
    turns: list[Turn]
    # Ids of the queued jobs this coalesced job replaces: while it exists they are never run.
    merged_from: list[str] = Field(default_factory=list)
    # Review mode: the job the not-yet-approved ops were split from. Live only once that job's
    # approval transaction has removed it (until then the parent still holds these ops).
    split_from: str | None = None
    state: JobState = "queued"
    attempts: int = 0
    error: str | None = None
    error_kind: ErrorKind | None = None
    # The model's extraction answer, stored before it is parsed: a replay re-parses it.
    raw_answer: str | None = None
    reasked: bool = False
    merge_raw: str | None = None
    # The note hashes of the snapshot the model saw (stored with raw_answer): the CAS tokens.
    snapshot_hashes: dict[str, str] | None = None
    held_ops: list[HeldOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)

    def turn_bytes(self) -> int:
        return sum(len(m.text.encode("utf-8", "surrogatepass")) for t in self.turns for m in t.messages)

    def excerpt(self, width: int = 80) -> str:
        """One line for listings: the first turn's first user message, redacted and sanitized."""
        return turn_excerpt(self.turns[0], width) if self.turns else ""


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
    """An id for a job replacing ``first`` (a coalesced or split job): it keeps ``first``'s place in the queue."""
    return f"{first[:20]}-{secrets.token_hex(4)}"


def is_job_id(value: str) -> bool:
    return bool(_ID_RE.match(value))


def make_job(workspace: Path | str, turns: list[Turn], *, session: str = "", mode: JobMode = "auto") -> Job:
    return Job(
        id=new_job_id(),
        workspace=str(workspace),
        created=rfc3339(utcnow()),
        session=session,
        mode=mode,
        turns=list(turns),
    )


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
    def status(self) -> str:
        if self.job is None:
            return "corrupt"
        if self.orphaned:
            return "orphaned"
        return self.job.state


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


class Spool:
    def __init__(self, paths: Paths, fs: FS = DEFAULT_FS) -> None:
        self.dir = paths.spool_dir
        self.fs = fs

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
        return sorted(n[: -len(JOB_SUFFIX)] for n in names if n.endswith(JOB_SUFFIX) and is_job_id(n[: -len(JOB_SUFFIX)]))

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
        """Create the job's file durably (data and name fsynced); never overwrites."""
        self.fs.makedirs(self.dir, 0o700)
        path = self.path(job.id)
        self.fs.create_durable(path, self._encode(job), 0o600)
        return path

    def save(self, job: Job) -> None:
        """Replace the job's file atomically. A job that is gone (completed) is never recreated."""
        path = self.path(job.id)
        if not self.fs.exists(path):
            raise JobNotFound(f"job {job.id} is no longer spooled")
        self.fs.atomic_write(path, self._encode(job), 0o600)

    def load(self, job_id: str) -> Job:
        path = self.path(job_id)
        try:
            data = self.fs.read_bytes(path, max_bytes=MAX_JOB_FILE_BYTES)
        except FileNotFoundError:
            raise JobNotFound(f"job {job_id} is not spooled") from None
        except OSError as e:
            raise CorruptJob(f"job {job_id}: cannot read: {e}") from None
        return self._parse(job_id, data)

    def _parse(self, job_id: str, data: bytes) -> Job:
        if len(data) > MAX_JOB_FILE_BYTES:
            raise CorruptJob(f"job {job_id}: file larger than {MAX_JOB_FILE_BYTES} bytes")
        try:
            job = Job.model_validate_json(data)
        except ValidationError as e:
            first = e.errors()[0] if e.errors() else {}
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CorruptJob(f"job {job_id}: not a valid job file ({where}: {first.get('msg', e)})") from None
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

    # -- listing -------------------------------------------------------------------------------

    def list(
        self, workspace: Path | str | None = None, *, include_orphans: bool = True, include_split: bool = False
    ) -> list[SpoolEntry]:
        """Every job file, oldest first; ``workspace`` limits it to that workspace's jobs.

        Unreadable files are listed with a reason (and never deleted). A job whose workspace
        folder is gone is ``orphaned``. Jobs superseded by a coalesced job are removed (their
        turns are in that job). A split job whose parent still exists is not live yet and is
        hidden unless ``include_split``.
        """
        want = _real(workspace) if workspace is not None else None
        try:
            names = self.fs.listdir(self.dir)
        except FileNotFoundError:
            return []
        self._drop_stale_temps(names)
        entries: list[SpoolEntry] = []
        for name in names:
            if not name.endswith(JOB_SUFFIX) or name.startswith("."):
                continue
            job_id = name[: -len(JOB_SUFFIX)]
            path = self.dir / name
            if not is_job_id(job_id):
                entries.append(SpoolEntry(id=job_id, path=path, problem=f"{name}: not a job file name"))
                continue
            try:
                data = self.fs.read_bytes(path, max_bytes=MAX_JOB_FILE_BYTES)
            except FileNotFoundError:
                continue  # completed while we listed
            except OSError as e:
                entries.append(SpoolEntry(id=job_id, path=path, problem=f"job {job_id}: cannot read: {e}"))
                continue
            try:
                job = self._parse(job_id, data)
            except CorruptJob as e:
                entries.append(SpoolEntry(id=job_id, path=path, problem=str(e), workspace=_guess_workspace(data)))
                continue
            entries.append(
                SpoolEntry(
                    id=job_id, path=path, job=job, workspace=job.workspace, orphaned=not os.path.isdir(job.workspace)
                )
            )

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
            if want is not None and e.workspace is not None and e.workspace != want and _real(e.workspace) != want:
                continue
            if not include_orphans and e.orphaned:
                continue
            out.append(e)
        return out

    def successors(self) -> dict[str, str]:
        """old id -> id of the existing job that replaced it (coalesced or split)."""
        out: dict[str, str] = {}
        for job_id in self.ids():
            try:
                job = self.load(job_id)
            except SpoolError:
                continue
            for old in job.merged_from:
                out[old] = job.id
        return out

    def _drop_stale_temps(self, names: list[str]) -> None:
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
    "CorruptJob",
    "HeldOp",
    "Job",
    "JobMode",
    "JobNotFound",
    "JobState",
    "Spool",
    "SpoolEntry",
    "SpoolError",
    "is_job_id",
    "make_job",
    "new_job_id",
    "successor_id",
]
