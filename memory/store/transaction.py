"""One transaction over both stores (DESIGN.md §7): validate, plan, stage, journal, apply, recover.

The journal record's rename is the single commit point. Before it, nothing a reader sees has
changed (staged files are hidden temp names, removed by recovery). After it, recovery rolls the
record forward: every step is idempotent (a staged file already moved is skipped, a job file
already removed is skipped), so a crash at any point leaves each store entirely before or entirely
after, and the jobs the record names are completed exactly once.

A create's last step is a hard link, never a rename: a file that appeared at the new name after
the plan (a person's editor, a case-insensitive twin) is never replaced, in the first run as in
the roll-forward. Every function here runs with the stores' lock held by the caller
(``MemoryStores`` in memory/store/stores.py).
"""

from __future__ import annotations

import base64
import logging
import secrets
import stat
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from memory.extract.parser import validate_operations
from memory.model import (
    INDEX_FILE,
    MANUAL_SOURCE,
    Action,
    AppliedOp,
    BatchResult,
    Change,
    Conflict,
    HistoryEntry,
    Level,
    Note,
    NoteMeta,
    Operation,
    Rejection,
    dump_op,
    rfc3339,
)
from memory.store import trust
from memory.store.frontmatter import dump_note
from memory.store.fs import STAGE_PREFIX, TEMP_PREFIX
from memory.store.store import GITIGNORE, TRASH_DIR, Store, StoreError, parse_note, render_index, sha256
from memory.text.sanitize import note_filename, quote, redact, slugify

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

log = logging.getLogger(__name__)


class TransactionError(Exception):
    """The batch could not be committed (nothing changed) or finished (recovery will)."""


class JobAlreadyDone(TransactionError):
    """A job this batch would complete was completed by an earlier commit."""


class OwnWrites:
    """Content this process wrote into the stores, by path (None: it removed the file).

    The store watcher compares a changed file with this to tell the app's own commits from an
    editor's save or a ``git pull``: a file whose content is what we last wrote there is no
    news. Recorded before the commit's files are moved into place, so no event can beat it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, str | None] = {}

    def record(self, path: Path | str, digest: str | None) -> None:
        with self._lock:
            self._last[str(path)] = digest

    def is_own(self, path: Path | str, digest: str | None) -> bool:
        with self._lock:
            key = str(path)
            return key in self._last and self._last[key] == digest


OWN_WRITES = OwnWrites()


class _Action(BaseModel):
    """A step of the roll-forward. ``put``: move a staged file into place (replacing);
    ``create``: link a staged file at a new name, refusing an existing one; ``move``: a note to
    the trash; ``unlink``: a completed job file."""

    kind: Literal["put", "create", "move", "unlink"]
    src: str = ""
    dst: str = ""


class JournalRecord(BaseModel):
    txid: str
    actions: list[_Action]
    jobs: list[str] = Field(default_factory=list)


def key(level: Level, filename: str) -> str:
    return f"{level}/{filename}"


def _dump_op(op: Operation) -> dict[str, object]:
    """An op as kept in a rejection or conflict record: shortened, and redacted (a filename or
    slug the validation let through can still hold a key)."""
    return {k: redact(v) if isinstance(v, str) else v for k, v in dump_op(op).items()}


class Plan:
    """The batch being built: the simulated final state of each store, before staging."""

    def __init__(self, stores: Mapping[Level, Store]) -> None:
        self.stores = stores
        # level -> filename -> new bytes (None: to the trash). Files not named are unchanged.
        self.writes: dict[Level, dict[str, bytes | None]] = {lv: {} for lv in stores}
        # Levels whose MEMORY.md is rewritten even with no note change (doctor --fix).
        self.rebuild: set[Level] = set()
        self.disk: dict[Level, dict[str, Note]] = {}
        # Names taken in each folder, case-folded (a case-insensitive file system sees
        # ``Build.md`` and ``build.md`` as one name); names chosen by this plan are added.
        self.taken: dict[Level, set[str]] = {}
        # (title, body) -> filename per level, for refusing identical creates (built lazily).
        self._same: dict[Level, dict[tuple[str, str], str]] = {}
        for lv, st in stores.items():
            notes, entries = st.listing()  # one listing of a folder that can hold 10,000 notes
            self.disk[lv] = {n.filename: n for n in notes}
            self.taken[lv] = {n.casefold() for n in entries} | {INDEX_FILE.casefold()}

    def current(self, level: Level, filename: str) -> Note | None:
        if filename in self.writes[level]:
            data = self.writes[level][filename]
            return None if data is None else parse_note(level, filename, data)
        return self.disk[level].get(filename)

    def unique_name(self, level: Level, base: str) -> str:
        """``base``, or ``-2``, ``-3``… of it: free even on a case-insensitive file system."""
        stem = base.removesuffix(".md")
        taken = self.taken[level]
        name, n = base, 2
        while name.casefold() in taken:
            name = f"{stem}-{n}.md"
            n += 1
        taken.add(name.casefold())
        return name

    def duplicate_of(self, level: Level, title: str, content: str) -> str | None:
        """The card of ``level`` (on disk or created earlier in this batch) whose title and
        body equal these, or None. Built once per level and batch: a store can hold 10,000."""
        seen = self._same.get(level)
        if seen is None:
            seen = {(n.meta.title, _body_key(n.body)): n.filename for n in self.final_notes(level)}
            self._same[level] = seen
        return seen.get((title, _body_key(content)))

    def remember_created(self, level: Level, title: str, content: str, filename: str) -> None:
        seen = self._same.get(level)
        if seen is not None:
            seen.setdefault((title, _body_key(content)), filename)

    def final_notes(self, level: Level) -> list[Note]:
        out = {n: note for n, note in self.disk[level].items()}
        for name, data in self.writes[level].items():
            if data is None:
                out.pop(name, None)
            else:
                out[name] = parse_note(level, name, data)
        return list(out.values())


def _body_key(body: str) -> str:
    """A body as compared for identical creates: line ends and surrounding blank space aside."""
    return body.replace("\r\n", "\n").strip()


def _validated(index: int, op: Any) -> tuple[Operation | None, Rejection | None]:
    """The op as the parser would have made it: every op ``apply`` takes is re-validated (a
    person's card edit, an approved held op, a test) so none reaches a store unsanitized."""
    item = op.model_dump(mode="json", exclude_none=True) if isinstance(op, Operation) else op
    ops, rejected = validate_operations([item])
    if rejected:
        reason = rejected[0].reason.removeprefix("op 0: ")
        return None, Rejection(index=index, reason=f"op {index}: {reason}", op=rejected[0].op)
    return (ops[0].op if ops else None), None


def apply_locked(
    stores: MemoryStores,
    ops: Sequence[Any],
    *,
    source: str,
    expected: Mapping[str, str] | None,
    jobs: Sequence[Path],
    rejected: Sequence[Rejection],
    label: str,
    all_or_nothing: bool = False,
) -> BatchResult:
    pairs = [(o.index, o.op) if hasattr(o, "op") else (o[0], o[1]) for o in ops]
    for job in jobs:
        if not stores.fs.exists(Path(job)):
            raise JobAlreadyDone(f"job {Path(job).stem} was already completed")
    result = BatchResult(rejected=list(rejected))
    plan = Plan(stores.stores)
    now = rfc3339(stores.clock())
    # DESIGN §11: the model never writes into a project store the person has not trusted (it did
    # not see it either); a person's own edit (card, `memory apply`) may.
    closed = source != MANUAL_SOURCE and not stores.project_trusted
    for index, raw in pairs:
        op, rejection = _validated(index, raw)
        if rejection is not None:
            result.rejected.append(rejection)
        elif op is not None:
            _plan_op(
                stores, plan, index, op, source=source, expected=expected, now=now, result=result, project_closed=closed
            )
    if all_or_nothing and (result.rejected or result.conflicts):
        # A card move is a create and a delete: either both happen or neither.
        result.applied = []
        return result
    entry = HistoryEntry(
        txid="",
        time=now,
        workspace=str(stores.paths.workspace),
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
    txid, refused = commit(stores, plan, entry, jobs)
    result.txid = txid
    for level, name, kept in refused:
        # The name was taken between the plan and the link: the person's file stays, ours is kept.
        index = next((a.index for a in result.applied if a.level == level and a.filename == name), -1)
        result.applied = [a for a in result.applied if not (a.level == level and a.filename == name)]
        result.conflicts.append(
            Conflict(
                index=index,
                level=level,
                filename=name,
                reason=f"a file named {quote(name)} appeared before the create finished; "
                f"it was left alone and the new note kept as {kept}",
            )
        )
    return result


def _plan_op(
    stores: MemoryStores,
    plan: Plan,
    index: int,
    op: Operation,
    *,
    source: str,
    expected: Mapping[str, str] | None,
    now: str,
    result: BatchResult,
    project_closed: bool = False,
) -> None:
    def reject(reason: str) -> None:
        result.rejected.append(Rejection(index=index, reason=f"op {index}: {reason}", op=_dump_op(op)))

    if op.action is Action.NOOP:
        return
    if op.level is None:
        return reject("no level")
    level = op.level
    if level is Level.PROJECT and project_closed:
        return reject(trust.UNTRUSTED_REASON)
    store = stores.store(level)
    problem = store.folder_problem()
    if problem is not None:
        return reject(problem)
    if op.action is Action.CREATE:
        if op.type is None or not op.title or op.content is None:
            return reject("create needs type, title and content")
        # The title was redacted by validation; a proposed slug is redacted here, before it is
        # lowercased out of the patterns' reach, so no name or index line carries a secret.
        same = plan.duplicate_of(level, op.title, op.content)
        if same is not None:
            # Not a second copy under `-2`: the card is already there, say which one.
            return reject(f"a {level} card with this title and content already exists: {quote(same)}")
        slug = slugify(op.title, redact(op.slug) if op.slug else None)
        name = plan.unique_name(level, note_filename(op.type, slug))
        plan.remember_created(level, op.title, op.content, name)
        meta = NoteMeta(title=op.title, summary=op.summary or "", type=op.type, created=now, updated=now, source=source)
        plan.writes[level][name] = dump_note(meta, op.content)
        result.applied.append(AppliedOp(index=index, action=op.action, level=level, filename=name, title=op.title))
        return
    filename = op.filename or ""
    if filename in plan.writes[level]:
        if plan.writes[level][filename] is None:
            return reject(f"{quote(filename)} is deleted earlier in this batch")
        return reject(f"{quote(filename)} is changed earlier in this batch")
    reason = store.target_problem(filename)
    if reason is not None:
        return reject(reason)
    if op.action is Action.DELETE:
        trash = store.trash_problem()
        if trash is not None:
            return reject(f"{trash} (`pseudoclaude memory doctor --fix` repairs it)")
    try:
        note = store.read_note(filename)
    except StoreError as e:
        # Refusals only: an I/O error aborts the whole batch (the job is retried), it never
        # turns into a silently rejected op.
        return reject(str(e))
    if expected is not None:
        seen = expected.get(key(level, filename))
        if seen != note.sha256:
            why = (
                "the note did not exist when the change was proposed"
                if seen is None
                else "the note changed since the change was proposed"
            )
            result.conflicts.append(Conflict(index=index, level=level, filename=filename, reason=why, op=_dump_op(op)))
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


def commit(
    stores: MemoryStores,
    plan: Plan,
    entry: HistoryEntry,
    jobs: Sequence[Path],
    *,
    undone: HistoryEntry | None = None,
) -> tuple[str, list[tuple[Level, str, str]]]:
    """Stage, journal (the commit point) and roll forward. Returns the txid and the creates
    refused at their last step (level, name, where the new note was kept)."""
    fs = stores.fs
    txid = f"{time.time_ns():020d}-{secrets.token_hex(4)}"
    entry.txid = txid
    actions: list[_Action] = []
    staged: list[Path] = []
    n = 0

    def stage(folder: Path, target: Path, data: bytes, mode: int = 0o644, *, new: bool = False) -> None:
        nonlocal n
        n += 1
        tmp = folder / f"{STAGE_PREFIX}{txid}-{n}"
        staged.append(tmp)
        fs.write_new(tmp, data, mode)
        actions.append(_Action(kind="create" if new else "put", src=str(tmp), dst=str(target)))
        OWN_WRITES.record(target, sha256(data))

    try:
        for level, writes in plan.writes.items():
            if not writes and level not in plan.rebuild:
                continue
            store = stores.store(level)
            folder = store.dir
            # A project store with nothing in it yet is ours from here on: trusted from the start
            # (DESIGN §11), recorded before the commit point (an aborted batch leaves only that).
            claim = level is Level.PROJECT and not trust.has_content(store) and not trust.is_recorded(stores.paths, fs)
            fs.makedirs(folder)
            if claim:
                trust.record_trust(stores.paths, fs, how="created by pseudoclaude")
            if level is Level.PROJECT and not fs.exists(folder / ".gitignore"):
                stage(folder, folder / ".gitignore", GITIGNORE)
            for name, data in sorted(writes.items()):
                before = plan.disk[level].get(name)
                before_b64 = None
                if before is not None:
                    raw = fs.read_bytes(folder / name)
                    before_b64 = base64.b64encode(raw).decode()
                if data is None:
                    trash = folder / TRASH_DIR
                    fs.makedirs(trash)
                    actions.append(_Action(kind="move", src=str(folder / name), dst=str(trash / f"{txid}-{name}")))
                    OWN_WRITES.record(folder / name, None)
                    entry.changes.append(Change(level=level, filename=name, before_b64=before_b64))
                else:
                    # A note that was not there when planned is created: it must stay absent.
                    stage(folder, folder / name, data, new=before is None and not fs.exists(folder / name))
                    entry.changes.append(
                        Change(level=level, filename=name, before_b64=before_b64, after_sha=sha256(data))
                    )
            stage(folder, folder / INDEX_FILE, render_index(plan.final_notes(level), fs.pace).encode())
            fs.fsync_dir(folder)
        hdir = stores.paths.history_dir
        fs.makedirs(hdir, 0o700)
        stage(hdir, hdir / f"{txid}.json", entry.model_dump_json().encode(), 0o600)
        if undone is not None:
            marked = undone.model_copy(update={"undone_by": txid})
            stage(hdir, hdir / f"{undone.txid}.json", marked.model_dump_json().encode(), 0o600)
        for job in jobs:
            actions.append(_Action(kind="unlink", dst=str(job)))
        record = JournalRecord(txid=txid, actions=actions, jobs=entry.jobs)
        jdir = stores.paths.journal_dir
        fs.makedirs(jdir, 0o700)
        tmp = jdir / f"{TEMP_PREFIX}{txid}"
        staged.append(tmp)
        fs.write_new(tmp, record.model_dump_json().encode(), 0o600)
        # The commit point: once this rename is durable, recovery finishes the batch.
        fs.replace(tmp, jdir / f"{txid}.json")
    except BaseException:
        for p in staged:
            try:
                fs.unlink(p)
            except OSError:
                pass
        raise
    fs.fsync_dir(jdir)
    return txid, roll_forward(stores, record)


def _levels_by_folder(stores: MemoryStores) -> dict[Path, Store]:
    return {st.dir: st for st in stores.stores.values()}


def roll_forward(stores: MemoryStores, record: JournalRecord) -> list[tuple[Level, str, str]]:
    """Finish a committed record; idempotent. Returns the refused creates (see ``commit``)."""
    fs = stores.fs
    touched: set[Path] = set()
    refused: list[tuple[Level, str, str]] = []
    for a in record.actions:
        src, dst = Path(a.src), Path(a.dst)
        try:
            if a.kind == "put":
                if fs.exists(src):
                    fs.replace(src, dst)
                    touched.add(dst.parent)
            elif a.kind == "create":
                if fs.exists(src):
                    kept = _link_new(stores, record.txid, src, dst)
                    touched.update((src.parent, dst.parent))
                    if kept is not None:
                        store = _levels_by_folder(stores).get(dst.parent)
                        refused.append((store.level if store else Level.USER, dst.name, kept))
            elif a.kind == "move":
                if fs.exists(src) and not fs.exists(dst):
                    fs.replace(src, dst)
                    touched.update((src.parent, dst.parent))
            elif a.kind == "unlink":
                if fs.exists(dst):
                    fs.unlink(dst)
                    touched.add(dst.parent)
        except FileNotFoundError:
            # The folder is gone (a deleted workspace): nothing left to finish there.
            log.warning("transaction %s: %s %s -> %s: folder is gone", record.txid, a.kind, a.src, a.dst)
    if refused:
        # The staged MEMORY.md listed the refused notes: rebuild it from what is really there.
        by_folder = _levels_by_folder(stores)
        for folder in {Path(stores.store(level).dir) for level, _, _ in refused}:
            st = by_folder.get(folder)
            if st is not None:
                data = render_index(st.notes(), fs.pace).encode()
                OWN_WRITES.record(folder / INDEX_FILE, sha256(data))
                fs.atomic_write(folder / INDEX_FILE, data)
    for folder in sorted(touched):
        if fs.exists(folder):
            fs.fsync_dir(folder)
    fs.unlink(stores.paths.journal_dir / f"{record.txid}.json")
    fs.fsync_dir(stores.paths.journal_dir)
    return refused


def _link_new(stores: MemoryStores, txid: str, src: Path, dst: Path) -> str | None:
    """Put a staged new note at ``dst`` without replacing anything; None when done, else where
    the note was kept because ``dst`` was taken by someone else's file."""
    fs = stores.fs
    try:
        fs.link(src, dst)
    except FileExistsError:
        try:
            same = fs.lstat(src).st_ino == fs.lstat(dst).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            # Someone else's file: left alone. Ours goes to the trash (or, if the trash is
            # unusable, the history folder) so nothing is lost.
            store = _levels_by_folder(stores).get(dst.parent)
            if store is not None and store.trash_problem() is None:
                keep = dst.parent / TRASH_DIR / f"{txid}-{dst.name}"
                fs.makedirs(keep.parent)
            else:
                fs.makedirs(stores.paths.history_dir, 0o700)
                keep = stores.paths.history_dir / f"{txid}-{dst.name}"
            fs.replace(src, keep)
            fs.fsync_dir(keep.parent)
            log.warning("transaction %s: %s appeared meanwhile; new note kept as %s", txid, dst, keep)
            return str(keep)
        # A crash between link and unlink: the link is ours, only the staged name is left.
    fs.unlink(src)
    return None


def recover_locked(stores: MemoryStores) -> list[str]:
    """Finish committed transactions and drop uncommitted staging. Idempotent."""
    fs = stores.fs
    done: list[str] = []
    jdir = stores.paths.journal_dir
    try:
        names = fs.listdir(jdir)
    except FileNotFoundError:
        names = []
    for name in names:
        path = jdir / name
        if name.endswith(".json") and not name.startswith("."):
            try:
                record = JournalRecord.model_validate_json(fs.read_bytes(path))
            except (ValueError, OSError) as e:
                # A record is renamed into place whole, so this is damage, not a crash;
                # keep it for a person (doctor reports it) rather than guess.
                done.append(f"journal record {name} is unreadable ({e}); left in place")
                continue
            roll_forward(stores, record)
            done.append(f"completed interrupted transaction {record.txid}")
        elif name.startswith((TEMP_PREFIX, STAGE_PREFIX)):
            fs.unlink(path)
            done.append(f"removed uncommitted journal file {name}")
    if names and fs.exists(jdir):
        fs.fsync_dir(jdir)
    folders: list[Path] = []
    for st in stores.stores.values():
        folders += [st.dir] + ([st.dir / TRASH_DIR] if st.trash_problem() is None else [])
    folders.append(stores.paths.history_dir)
    for folder in dict.fromkeys(folders):
        store_like = Store(Level.USER, folder, fs)
        leftovers = store_like.temp_files()
        for name in leftovers:
            fs.unlink(folder / name)
            done.append(f"removed uncommitted file {folder / name}")
        if leftovers:
            fs.fsync_dir(folder)
    return done


def needs_recovery(stores: MemoryStores) -> bool:
    """Whether a committed record waits to be finished (a cheap listing, no lock)."""
    try:
        names = stores.fs.listdir(stores.paths.journal_dir)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return any(n.endswith(".json") and not n.startswith(".") for n in names)


def rebuild_indexes_locked(stores: MemoryStores) -> list[Level]:
    """Rewrite each ``MEMORY.md`` (and the project ``.gitignore``) that differs from its notes."""
    fs = stores.fs
    plan = Plan(stores.stores)
    for lv, st in stores.stores.items():
        if st.folder_problem() is not None or not fs.exists(st.dir):
            continue
        want = render_index(plan.final_notes(lv))
        missing_ignore = lv is Level.PROJECT and not fs.exists(st.dir / ".gitignore")
        if st.index_file_problem() is not None or st.read_index_file() != want or missing_ignore:
            plan.rebuild.add(lv)
    if plan.rebuild:
        entry = HistoryEntry(
            txid="",
            time=rfc3339(stores.clock()),
            workspace=str(stores.paths.workspace),
            label="index rebuilt by doctor",
            source="manual",
        )
        commit(stores, plan, entry, ())
    return sorted(plan.rebuild)


def repair_trash_locked(stores: MemoryStores) -> list[str]:
    """Replace a ``.trash`` that is a symlink with a real folder (the link's target is untouched)."""
    fs = stores.fs
    fixed: list[str] = []
    for st in stores.stores.values():
        if st.folder_problem() is not None or st.trash_problem() is None:
            continue
        trash = st.dir / TRASH_DIR
        if stat.S_ISLNK(fs.lstat(trash).st_mode):
            fs.unlink(trash)
            fs.makedirs(trash)
            fs.fsync_dir(st.dir)
            fixed.append(f"{st.level} store: replaced the {TRASH_DIR} symlink with a folder")
    return fixed
