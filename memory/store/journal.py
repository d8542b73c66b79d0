"""The journal: stage a planned batch, commit it with one rename, roll it forward, recover.

The journal record's rename is the single commit point. Before it, nothing a reader sees has
changed (staged files are hidden temp names, removed by recovery). After it, recovery rolls the
record forward: every step is idempotent (a staged file already moved is skipped, a job file
already removed is skipped), so a crash at any point leaves each store entirely before or entirely
after, and the jobs the record names are completed exactly once.

A create's last step is a hard link, never a rename: a file that appeared at the new name after
the plan (a person's editor, a case-insensitive twin) is never replaced, in the first run as in
the roll-forward. Every function here runs with the stores' lock held by the caller.
"""

from __future__ import annotations

import base64
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memory.constants import INDEX_FILE, Level
from memory.model import Change, HistoryEntry
from memory.store import trust
from memory.store.fs import FS, STAGE_PREFIX, TEMP_PREFIX
from memory.store.layout import StoreLayout
from memory.store.noteparse import sha256
from memory.store.plan import Plan
from memory.store.store import GIT_FILES, TRASH_DIR, Store, render_index

__all__ = [
    "OWN_WRITES",
    "JournalRecord",
    "OwnWrites",
    "commit",
    "needs_recovery",
    "recover_locked",
    "roll_forward",
]

log = logging.getLogger(__name__)


class OwnWrites:
    """Content this process wrote into the stores, by path (None: it removed the file).

    The store watcher compares a changed file with this to tell the app's own commits from an
    editor's save or a ``git pull``: a file whose content is what we last wrote there is no
    news. Recorded before the commit's files are moved into place, so no event can beat it.
    """

    def __init__(self, *also: OwnWrites) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, str | None] = {}
        self._also = also  # what these record and what any of ``also`` recorded count as own
        # Told of each record: the memory worker process passes its writes on to the app that
        # started it, whose watcher must not take them for someone else's.
        self.listeners: list[Callable[[str, str | None], None]] = []

    def record(self, path: Path | str, digest: str | None) -> None:
        with self._lock:
            self._last[str(path)] = digest
        for listener in list(self.listeners):
            listener(str(path), digest)

    def is_own(self, path: Path | str, digest: str | None) -> bool:
        with self._lock:
            key = str(path)
            if key in self._last and self._last[key] == digest:
                return True
        return any(other.is_own(path, digest) for other in self._also)


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


class _Staging:
    """The files a commit staged so far and the roll-forward steps that will put them in place."""

    def __init__(self, fs: FS, txid: str) -> None:
        self.fs = fs
        self.txid = txid
        self.actions: list[_Action] = []
        self.staged: list[Path] = []

    def stage(self, folder: Path, target: Path, data: bytes, mode: int = 0o644, *, new: bool = False) -> None:
        tmp = folder / f"{STAGE_PREFIX}{self.txid}-{len(self.staged) + 1}"
        self.staged.append(tmp)
        self.fs.write_new(tmp, data, mode)
        self.actions.append(_Action(kind="create" if new else "put", src=str(tmp), dst=str(target)))
        OWN_WRITES.record(target, sha256(data))

    def discard(self) -> None:
        for p in self.staged:
            try:
                self.fs.unlink(p)
            except OSError:
                pass


def _stage_level(layout: StoreLayout, plan: Plan, level: Level, st: _Staging, entry: HistoryEntry) -> None:
    """Stage one store's writes, trash moves and new ``MEMORY.md``, recording each change."""
    fs = layout.fs
    folder = layout.store(level).dir
    # A project store with nothing in it yet is ours from here on: trusted from the start,
    # recorded before the commit point (an aborted batch leaves only that).
    claim = (
        level is Level.PROJECT
        and not trust.has_content(layout.store(level))
        and not trust.is_recorded(layout.paths, fs)
    )
    fs.makedirs(folder)
    if claim:
        trust.record_trust(layout.paths, fs, how="created by pseudoclaude")
    if level is Level.PROJECT or layout.user_in_git:
        for git_name, git_data in GIT_FILES.items():
            if not fs.exists(folder / git_name):
                st.stage(folder, folder / git_name, git_data)
    for name, data in sorted(plan.writes[level].items()):
        before = plan.disk[level].get(name)
        before_b64 = None if before is None else base64.b64encode(fs.read_bytes(folder / name)).decode()
        if data is None:
            trash = folder / TRASH_DIR
            fs.makedirs(trash)
            st.actions.append(
                _Action(kind="move", src=str(folder / name), dst=str(trash / f"{st.txid}-{name}"))
            )
            OWN_WRITES.record(folder / name, None)
            entry.changes.append(Change(level=level, filename=name, before_b64=before_b64))
        else:
            # A note that was not there when planned is created: it must stay absent.
            st.stage(folder, folder / name, data, new=before is None and not fs.exists(folder / name))
            entry.changes.append(
                Change(level=level, filename=name, before_b64=before_b64, after_sha=sha256(data))
            )
    st.stage(folder, folder / INDEX_FILE, render_index(plan.final_notes(level), fs.pace).encode())
    fs.fsync_dir(folder)


def commit(
    layout: StoreLayout,
    plan: Plan,
    entry: HistoryEntry,
    jobs: Sequence[Path],
    *,
    undone: HistoryEntry | None = None,
    history: bool = True,
) -> tuple[str, list[tuple[Level, str, str]]]:
    """Stage, journal (the commit point) and roll forward. Returns the txid and the creates
    refused at their last step (level, name, where the new note was kept). ``history=False``:
    no history entry (a derived index rebuilt is no batch of anyone's)."""
    fs = layout.fs
    txid = f"{time.time_ns():020d}-{secrets.token_hex(4)}"
    entry.txid = txid
    st = _Staging(fs, txid)
    try:
        for level, writes in plan.writes.items():
            if writes or level in plan.rebuild:
                _stage_level(layout, plan, level, st, entry)
        hdir = layout.paths.history_dir
        if history:
            fs.makedirs(hdir, 0o700)
            st.stage(hdir, hdir / f"{txid}.json", entry.model_dump_json().encode(), 0o600)
        if undone is not None:
            marked = undone.model_copy(update={"undone_by": txid})
            st.stage(hdir, hdir / f"{undone.txid}.json", marked.model_dump_json().encode(), 0o600)
        for job in jobs:
            st.actions.append(_Action(kind="unlink", dst=str(job)))
        record = JournalRecord(txid=txid, actions=st.actions, jobs=entry.jobs)
        jdir = layout.paths.journal_dir
        fs.makedirs(jdir, 0o700)
        tmp = jdir / f"{TEMP_PREFIX}{txid}"
        st.staged.append(tmp)
        fs.write_new(tmp, record.model_dump_json().encode(), 0o600)
        # The commit point: once this rename is durable, recovery finishes the batch.
        fs.replace(tmp, jdir / f"{txid}.json")
    except BaseException:
        st.discard()
        raise
    fs.fsync_dir(jdir)
    return txid, roll_forward(layout, record)


def _levels_by_folder(layout: StoreLayout) -> dict[Path, Store]:
    return {st.dir: st for st in layout.stores.values()}


def roll_forward(layout: StoreLayout, record: JournalRecord) -> list[tuple[Level, str, str]]:
    """Finish a committed record; idempotent. Returns the refused creates (see ``commit``)."""
    fs = layout.fs
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
                    kept = _link_new(layout, record.txid, src, dst)
                    touched.update((src.parent, dst.parent))
                    if kept is not None:
                        store = _levels_by_folder(layout).get(dst.parent)
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
        by_folder = _levels_by_folder(layout)
        for folder in {Path(layout.store(level).dir) for level, _, _ in refused}:
            st = by_folder.get(folder)
            if st is not None:
                data = render_index(st.notes(), fs.pace).encode()
                OWN_WRITES.record(folder / INDEX_FILE, sha256(data))
                fs.atomic_write(folder / INDEX_FILE, data)
    for folder in sorted(touched):
        if fs.exists(folder):
            fs.fsync_dir(folder)
    fs.unlink(layout.paths.journal_dir / f"{record.txid}.json")
    fs.fsync_dir(layout.paths.journal_dir)
    return refused


def _link_new(layout: StoreLayout, txid: str, src: Path, dst: Path) -> str | None:
    """Put a staged new note at ``dst`` without replacing anything; None when done, else where
    the note was kept because ``dst`` was taken by someone else's file."""
    fs = layout.fs
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
            store = _levels_by_folder(layout).get(dst.parent)
            if store is not None and store.trash_problem() is None:
                keep = dst.parent / TRASH_DIR / f"{txid}-{dst.name}"
                fs.makedirs(keep.parent)
            else:
                fs.makedirs(layout.paths.history_dir, 0o700)
                keep = layout.paths.history_dir / f"{txid}-{dst.name}"
            fs.replace(src, keep)
            fs.fsync_dir(keep.parent)
            log.warning("transaction %s: %s appeared meanwhile; new note kept as %s", txid, dst, keep)
            return str(keep)
        # A crash between link and unlink: the link is ours, only the staged name is left.
    fs.unlink(src)
    return None


def recover_locked(layout: StoreLayout) -> list[str]:
    """Finish committed transactions and drop uncommitted staging. Idempotent."""
    fs = layout.fs
    done: list[str] = []
    jdir = layout.paths.journal_dir
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
            roll_forward(layout, record)
            done.append(f"completed interrupted transaction {record.txid}")
        elif name.startswith((TEMP_PREFIX, STAGE_PREFIX)):
            fs.unlink(path)
            done.append(f"removed uncommitted journal file {name}")
    if names and fs.exists(jdir):
        fs.fsync_dir(jdir)
    folders: list[Path] = []
    for st in layout.stores.values():
        folders += [st.dir] + ([st.dir / TRASH_DIR] if st.trash_problem() is None else [])
    folders.append(layout.paths.history_dir)
    for folder in dict.fromkeys(folders):
        store_like = Store(Level.USER, folder, fs)
        leftovers = store_like.temp_files()
        for name in leftovers:
            fs.unlink(folder / name)
            done.append(f"removed uncommitted file {folder / name}")
        if leftovers:
            fs.fsync_dir(folder)
    return done


def needs_recovery(layout: StoreLayout) -> bool:
    """Whether a committed record waits to be finished (a cheap listing, no lock)."""
    try:
        names = layout.fs.listdir(layout.paths.journal_dir)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return any(n.endswith(".json") and not n.startswith(".") for n in names)
