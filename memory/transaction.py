"""One transaction over both stores (DESIGN.md §7): lock, re-read, stage, journal, apply, recover.

The journal record's rename is the single commit point. Before it, nothing a reader sees has
changed (staged files are hidden temp names, removed by recovery). After it, recovery rolls the
record forward: every step is idempotent (a staged file already moved is skipped, a job file
already removed is skipped), so a crash at any point leaves each store entirely before or entirely
after, and the jobs the record names are completed exactly once.
"""

from __future__ import annotations

import base64
import datetime as _dt
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import filelock
from pydantic import BaseModel, Field

from .frontmatter import dump_note
from .fs import DEFAULT_FS, FS, STAGE_PREFIX, TEMP_PREFIX
from .index import merge_index, parse_index_lines
from .model import (
    INDEX_FILE,
    Action,
    AppliedOp,
    BatchResult,
    Conflict,
    Level,
    Note,
    NoteMeta,
    Operation,
    Rejection,
    rfc3339,
    utcnow,
)
from .paths import Paths
from .sanitize import note_filename, slugify
from .store import GITIGNORE, Store, StoreError, parse_note, render_index, sha256

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 60.0


class TransactionError(Exception):
    """The batch could not be committed (nothing changed) or finished (recovery will)."""


class JobAlreadyDone(TransactionError):
    """A job this batch would complete was completed by an earlier commit."""


class UndoError(Exception):
    """Why ``undo`` refused, in one line."""


class Snapshot(BaseModel):
    """The index a job's model sees, with each note's hash for compare-and-swap."""

    project_md: str
    user_md: str
    hashes: dict[str, str]  # "<level>/<filename>" -> sha256


class Change(BaseModel):
    """One note file changed by a batch: enough to undo it and to see whether it changed since."""

    level: Level
    filename: str
    before_b64: str | None = None  # the file's bytes before (None: it did not exist)
    after_sha: str | None = None  # None: the batch removed it


class HistoryEntry(BaseModel):
    txid: str
    time: str
    workspace: str
    kind: Literal["batch", "undo"] = "batch"
    label: str = ""
    source: str = ""
    jobs: list[str] = Field(default_factory=list)
    applied: list[AppliedOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    undone_by: str | None = None
    undo_of: str | None = None


class _Action(BaseModel):
    """A step of the roll-forward. ``put``: move a staged file into place; ``move``: a note to
    the trash; ``unlink``: a completed job file."""

    kind: Literal["put", "move", "unlink"]
    src: str = ""
    dst: str = ""


class JournalRecord(BaseModel):
    txid: str
    actions: list[_Action]
    jobs: list[str] = Field(default_factory=list)


def _key(level: Level, filename: str) -> str:
    return f"{level}/{filename}"


def _dump_op(op: Operation) -> dict[str, object]:
    d = op.model_dump(mode="json", exclude_none=True)
    if isinstance(d.get("content"), str) and len(d["content"]) > 2000:
        d["content"] = d["content"][:2000] + "…"
    return d


class _Plan:
    """The batch being built: the simulated final state of each store, before staging."""

    def __init__(self, stores: Mapping[Level, Store]) -> None:
        self.stores = stores
        # level -> filename -> new bytes (None: to the trash). Files not named are unchanged.
        self.writes: dict[Level, dict[str, bytes | None]] = {lv: {} for lv in stores}
        # Levels whose MEMORY.md is rewritten even with no note change (doctor --fix).
        self.rebuild: set[Level] = set()
        self.disk: dict[Level, dict[str, Note]] = {}
        self.names: dict[Level, set[str]] = {}
        for lv, st in stores.items():
            self.disk[lv] = {n.filename: n for n in st.notes()}
            self.names[lv] = set(st.entries())

    def current(self, level: Level, filename: str) -> Note | None:
        if filename in self.writes[level]:
            data = self.writes[level][filename]
            return None if data is None else parse_note(level, filename, data)
        return self.disk[level].get(filename)

    def unique_name(self, level: Level, base: str) -> str:
        stem = base.removesuffix(".md")
        taken = self.names[level] | set(self.writes[level])
        name, n = base, 2
        while name in taken or name.lower() == INDEX_FILE.lower():
            name = f"{stem}-{n}.md"
            n += 1
        return name

    def final_notes(self, level: Level) -> list[Note]:
        out = {n: note for n, note in self.disk[level].items()}
        for name, data in self.writes[level].items():
            if data is None:
                out.pop(name, None)
            else:
                out[name] = parse_note(level, name, data)
        return list(out.values())


class MemoryStores:
    """Both stores of a workspace, and every write to them."""

    def __init__(
        self,
        workspace: Path | str,
        home: Path | None = None,
        *,
        fs: FS = DEFAULT_FS,
        clock: Callable[[], _dt.datetime] = utcnow,
    ) -> None:
        self.paths = Paths.for_workspace(workspace, home)
        self.fs = fs
        self.clock = clock
        self.project = Store(Level.PROJECT, self.paths.project_store, fs, guard=self.paths.workspace)
        self.user = Store(Level.USER, self.paths.user_store, fs)

    def store(self, level: Level | str) -> Store:
        return self.project if Level(level) is Level.PROJECT else self.user

    @property
    def stores(self) -> dict[Level, Store]:
        return {Level.PROJECT: self.project, Level.USER: self.user}

    # -- locking -------------------------------------------------------------------------------

    @contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        self.fs.makedirs(self.paths.locks_dir, 0o700)
        # is_singleton=False with a fresh object per use: each holder opens its own descriptor,
        # so two holders in one process exclude each other as two processes do.
        lock = filelock.FileLock(str(self.paths.store_lock), timeout=timeout, is_singleton=False)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise TransactionError(f"memory stores are locked by another process ({self.paths.store_lock})") from None
        try:
            yield
        finally:
            lock.release()

    # -- reading -------------------------------------------------------------------------------

    def _index_md(self, store: Store) -> str:
        return "".join(line + "\n" for line in parse_index_lines(store.read_index_file()))

    def snapshot(self) -> Snapshot:
        with self.locked():
            hashes: dict[str, str] = {}
            for lv, st in self.stores.items():
                for name, digest in st.hashes().items():
                    hashes[_key(lv, name)] = digest
            return Snapshot(project_md=self._index_md(self.project), user_md=self._index_md(self.user), hashes=hashes)

    def merged_index(self) -> str:
        return merge_index(self._index_md(self.project), self._index_md(self.user))

    def read_note(self, level: Level | str, filename: str) -> Note:
        return self.store(level).read_note(filename)

    def read_memory(self, level: Level | str, filename: str) -> str:
        """What the ``read_memory`` tool returns: a body, or the level's full index for MEMORY.md."""
        st = self.store(level)
        if filename == INDEX_FILE:
            return self._index_md(st)
        return self.read_note(level, filename).body

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Finish committed transactions and drop uncommitted staging. Idempotent."""
        with self.locked():
            return self._recover_locked()

    def _recover_locked(self) -> list[str]:
        done: list[str] = []
        jdir = self.paths.journal_dir
        try:
            names = self.fs.listdir(jdir)
        except FileNotFoundError:
            names = []
        for name in names:
            path = jdir / name
            if name.endswith(".json") and not name.startswith("."):
                try:
                    record = JournalRecord.model_validate_json(self.fs.read_bytes(path))
                except (ValueError, OSError) as e:
                    # A record is renamed into place whole, so this is damage, not a crash;
                    # keep it for a person (doctor reports it) rather than guess.
                    done.append(f"journal record {name} is unreadable ({e}); left in place")
                    continue
                self._roll_forward(record)
                done.append(f"completed interrupted transaction {record.txid}")
            elif name.startswith((TEMP_PREFIX, STAGE_PREFIX)):
                self.fs.unlink(path)
                done.append(f"removed uncommitted journal file {name}")
        if names:
            self.fs.fsync_dir(jdir) if self.fs.exists(jdir) else None
        for folder in (self.project.dir, self.user.dir, self.project.dir / ".trash", self.paths.history_dir):
            store_like = Store(Level.USER, folder, self.fs)
            leftovers = store_like.temp_files()
            for name in leftovers:
                self.fs.unlink(folder / name)
                done.append(f"removed uncommitted file {folder / name}")
            if leftovers:
                self.fs.fsync_dir(folder)
        return done

    def _roll_forward(self, record: JournalRecord) -> None:
        touched: set[Path] = set()
        for a in record.actions:
            src, dst = Path(a.src), Path(a.dst)
            try:
                if a.kind == "put":
                    if self.fs.exists(src):
                        self.fs.replace(src, dst)
                        touched.add(dst.parent)
                elif a.kind == "move":
                    if self.fs.exists(src) and not self.fs.exists(dst):
                        self.fs.replace(src, dst)
                        touched.update((src.parent, dst.parent))
                elif a.kind == "unlink":
                    if self.fs.exists(dst):
                        self.fs.unlink(dst)
                        touched.add(dst.parent)
            except FileNotFoundError:
                # The folder is gone (a deleted workspace): nothing left to finish there.
                log.warning("transaction %s: %s %s -> %s: folder is gone", record.txid, a.kind, a.src, a.dst)
        for folder in sorted(touched):
            if self.fs.exists(folder):
                self.fs.fsync_dir(folder)
        self.fs.unlink(self.paths.journal_dir / f"{record.txid}.json")
        self.fs.fsync_dir(self.paths.journal_dir)

    # -- applying ------------------------------------------------------------------------------

    def apply(
        self,
        ops: Sequence[Any],
        *,
        source: str,
        expected: Mapping[str, str] | None = None,
        jobs: Sequence[Path] = (),
        rejected: Sequence[Rejection] = (),
        label: str = "",
    ) -> BatchResult:
        """Apply a validated batch to both stores in one transaction.

        ``ops`` are ``(index, Operation)`` pairs (or objects with ``.index``/``.op``).
        ``expected`` maps ``"<level>/<filename>"`` to the hash the proposer saw: an update or
        delete of a note whose hash differs (or that it never saw) is a recorded conflict.
        ``jobs`` are spool files this commit completes and removes.
        """
        pairs = [(o.index, o.op) if hasattr(o, "op") else (o[0], o[1]) for o in ops]
        with self.locked():
            self._recover_locked()
            for job in jobs:
                if not self.fs.exists(Path(job)):
                    raise JobAlreadyDone(f"job {Path(job).stem} was already completed")
            result = BatchResult(rejected=list(rejected))
            plan = _Plan(self.stores)
            now = rfc3339(self.clock())
            for index, op in pairs:
                self._plan_op(plan, index, op, source=source, expected=expected, now=now, result=result)
            entry = HistoryEntry(
                txid="",
                time=now,
                workspace=str(self.paths.workspace),
                label=label,
                source=source,
                jobs=[Path(j).stem for j in jobs],
                applied=result.applied,
                rejected=result.rejected,
                conflicts=result.conflicts,
            )
            if not result.applied and not jobs:
                # Nothing to write and no job to complete: no transaction, no history line.
                return result
            txid = self._commit(plan, entry, jobs)
            result.txid = txid
            return result

    def _plan_op(
        self,
        plan: _Plan,
        index: int,
        op: Operation,
        *,
        source: str,
        expected: Mapping[str, str] | None,
        now: str,
        result: BatchResult,
    ) -> None:
        def reject(reason: str) -> None:
            result.rejected.append(Rejection(index=index, reason=f"op {index}: {reason}", op=_dump_op(op)))

        if op.action is Action.NOOP:
            return
        if op.level is None:
            return reject("no level")
        level = op.level
        store = self.store(level)
        problem = store.folder_problem()
        if problem is not None:
            return reject(problem)
        if op.action is Action.CREATE:
            if op.type is None or not op.title or op.content is None:
                return reject("create needs type, title and content")
            name = plan.unique_name(level, note_filename(op.type, slugify(op.title, op.slug)))
            meta = NoteMeta(
                title=op.title, summary=op.summary or "", type=op.type, created=now, updated=now, source=source
            )
            plan.writes[level][name] = dump_note(meta, op.content)
            result.applied.append(AppliedOp(index=index, action=op.action, level=level, filename=name, title=op.title))
            return
        filename = op.filename or ""
        if filename in plan.writes[level]:
            if plan.writes[level][filename] is None:
                return reject(f"{filename!r} is deleted earlier in this batch")
            return reject(f"{filename!r} is changed earlier in this batch")
        reason = store.target_problem(filename)
        if reason is not None:
            return reject(reason)
        try:
            note = store.read_note(filename)
        except StoreError as e:
            # Refusals only: an I/O error aborts the whole batch (the job is retried), it never
            # turns into a silently rejected op.
            return reject(str(e))
        if expected is not None:
            seen = expected.get(_key(level, filename))
            if seen != note.sha256:
                why = (
                    "the note did not exist when the change was proposed"
                    if seen is None
                    else "the note changed since the change was proposed"
                )
                result.conflicts.append(
                    Conflict(index=index, level=level, filename=filename, reason=why, op=_dump_op(op))
                )
                return
        if op.action is Action.DELETE:
            plan.writes[level][filename] = None
        else:
            if op.content is None:
                return reject("update needs content")
            meta = note.meta.model_copy(
                update={
                    "title": op.title or note.meta.title,
                    "summary": op.summary if op.summary is not None else note.meta.summary,
                    "type": op.type or note.meta.type,
                    "created": note.meta.created or now,
                    "updated": now,
                    "source": source,
                }
            )
            plan.writes[level][filename] = dump_note(meta, op.content)
        result.applied.append(
            AppliedOp(index=index, action=op.action, level=level, filename=filename, title=op.title or note.meta.title)
        )

    def _commit(
        self, plan: _Plan, entry: HistoryEntry, jobs: Sequence[Path], *, undone: HistoryEntry | None = None
    ) -> str:
        txid = f"{time.time_ns():020d}-{secrets.token_hex(4)}"
        entry.txid = txid
        actions: list[_Action] = []
        staged: list[Path] = []
        n = 0

        def stage(folder: Path, target: Path, data: bytes, mode: int = 0o644) -> None:
            nonlocal n
            n += 1
            tmp = folder / f"{STAGE_PREFIX}{txid}-{n}"
            staged.append(tmp)
            self.fs.write_new(tmp, data, mode)
            actions.append(_Action(kind="put", src=str(tmp), dst=str(target)))

        try:
            for level, writes in plan.writes.items():
                if not writes and level not in plan.rebuild:
                    continue
                store = self.store(level)
                folder = store.dir
                self.fs.makedirs(folder)
                if level is Level.PROJECT and not self.fs.exists(folder / ".gitignore"):
                    stage(folder, folder / ".gitignore", GITIGNORE)
                for name, data in sorted(writes.items()):
                    before = plan.disk[level].get(name)
                    before_b64 = None
                    if before is not None:
                        raw = self.fs.read_bytes(folder / name)
                        before_b64 = base64.b64encode(raw).decode()
                    if data is None:
                        trash = folder / ".trash"
                        self.fs.makedirs(trash)
                        actions.append(
                            _Action(kind="move", src=str(folder / name), dst=str(trash / f"{txid}-{name}"))
                        )
                        entry.changes.append(Change(level=level, filename=name, before_b64=before_b64))
                    else:
                        stage(folder, folder / name, data)
                        entry.changes.append(
                            Change(level=level, filename=name, before_b64=before_b64, after_sha=sha256(data))
                        )
                stage(folder, folder / INDEX_FILE, render_index(plan.final_notes(level)).encode())
                self.fs.fsync_dir(folder)
            hdir = self.paths.history_dir
            self.fs.makedirs(hdir, 0o700)
            stage(hdir, hdir / f"{txid}.json", entry.model_dump_json().encode(), 0o600)
            if undone is not None:
                marked = undone.model_copy(update={"undone_by": txid})
                stage(hdir, hdir / f"{undone.txid}.json", marked.model_dump_json().encode(), 0o600)
            for job in jobs:
                actions.append(_Action(kind="unlink", dst=str(job)))
            record = JournalRecord(txid=txid, actions=actions, jobs=entry.jobs)
            jdir = self.paths.journal_dir
            self.fs.makedirs(jdir, 0o700)
            tmp = jdir / f"{TEMP_PREFIX}{txid}"
            staged.append(tmp)
            self.fs.write_new(tmp, record.model_dump_json().encode(), 0o600)
            # The commit point: once this rename is durable, recovery finishes the batch.
            self.fs.replace(tmp, jdir / f"{txid}.json")
        except BaseException:
            for p in staged:
                try:
                    self.fs.unlink(p)
                except OSError:
                    pass
            raise
        self.fs.fsync_dir(jdir)
        self._roll_forward(record)
        return txid

    def rebuild_indexes(self) -> list[Level]:
        """Rewrite each ``MEMORY.md`` (and the project ``.gitignore``) that differs from its notes."""
        with self.locked():
            self._recover_locked()
            plan = _Plan(self.stores)
            for lv, st in self.stores.items():
                if st.folder_problem() is not None or not self.fs.exists(st.dir):
                    continue
                want = render_index(plan.final_notes(lv))
                missing_ignore = lv is Level.PROJECT and not self.fs.exists(st.dir / ".gitignore")
                if st.read_index_file() != want or missing_ignore:
                    plan.rebuild.add(lv)
            if plan.rebuild:
                entry = HistoryEntry(txid="", time=rfc3339(self.clock()), workspace=str(self.paths.workspace),
                                     label="index rebuilt by doctor", source="manual")
                self._commit(plan, entry, ())
            return sorted(plan.rebuild)

    # -- history and undo ---------------------------------------------------------------------

    def history(self) -> list[HistoryEntry]:
        """This workspace's batches, oldest first (unreadable entries are skipped)."""
        hdir = self.paths.history_dir
        try:
            names = [n for n in self.fs.listdir(hdir) if n.endswith(".json") and not n.startswith(".")]
        except FileNotFoundError:
            return []
        out = []
        for name in sorted(names):
            try:
                out.append(HistoryEntry.model_validate_json(self.fs.read_bytes(hdir / name)))
            except (ValueError, OSError):
                log.warning("unreadable history entry %s", name)
        return out

    def undo(self) -> BatchResult:
        """Revert the last applied batch of this workspace, refusing if a note changed since."""
        with self.locked():
            self._recover_locked()
            candidates = [e for e in self.history() if e.kind == "batch" and e.changes and not e.undone_by]
            if not candidates:
                raise UndoError("nothing to undo: no applied batch in this workspace's history")
            target = candidates[-1]
            plan = _Plan(self.stores)
            for ch in target.changes:
                store = self.store(ch.level)
                problem = store.folder_problem()
                if problem is not None:
                    raise UndoError(problem)
                current = plan.disk[ch.level].get(ch.filename)
                present = self.fs.exists(store.dir / ch.filename)
                if ch.after_sha is None:
                    if present:
                        raise UndoError(f"{ch.level} note {ch.filename} was recreated since; not undoing")
                elif current is None or current.sha256 != ch.after_sha:
                    raise UndoError(f"{ch.level} note {ch.filename} changed since that batch; not undoing")
                plan.writes[ch.level][ch.filename] = (
                    None if ch.before_b64 is None else base64.b64decode(ch.before_b64)
                )
            result = BatchResult(
                applied=[
                    AppliedOp(
                        index=i,
                        action=Action.UPDATE if ch.before_b64 and ch.after_sha else (
                            Action.DELETE if ch.before_b64 is None else Action.CREATE
                        ),
                        level=ch.level,
                        filename=ch.filename,
                    )
                    for i, ch in enumerate(target.changes)
                ]
            )
            entry = HistoryEntry(
                txid="",
                time=rfc3339(self.clock()),
                workspace=str(self.paths.workspace),
                kind="undo",
                label=f"undo of {target.txid}",
                source="manual",
                applied=result.applied,
                undo_of=target.txid,
            )
            # The original entry is rewritten (marked undone) in the same commit, so undo twice
            # never reverts the same batch twice.
            result.txid = self._commit(plan, entry, (), undone=target)
            return result
