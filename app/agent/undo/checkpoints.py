"""Checkpoints of the agent's own file edits: what ``write_file``/``edit_file`` changed, per turn.

Layout, one folder per session under ``$PSEUDOCLAUDE_HOME/checkpoints/``::

    <session>/manifest.jsonl    # events: a file's sha256 before a turn's first write, after each write
    <session>/blobs/<sha256>    # the bytes, content-addressed: a version is stored once

Before a turn's first write to a file its bytes (or its absence) are kept; after every write the
bytes the agent left are kept too (only the last of a turn stays: an earlier one of the same turn
is removed when nothing else names it), so a rewind can tell a file someone changed since (a hand
edit, ``git checkout``) from one only the agent touched. A hundred edits of one big file in a turn
keep two blobs; the next turn's "before" is the same blob as this turn's "after".

Nothing here follows a symlink (the memory store's filesystem layer, ``O_NOFOLLOW``), and nothing is
fsynced: a checkpoint costs about a millisecond per edit that way, the manifest is append-only
(a line a crash cut is the last one, and left out) and a blob is checked against its name when
read, so a torn one is refused, never restored. A manifest that does not parse (a hand edit,
another version) is a one-line :class:`CheckpointError` to a reader; a writer sets it aside
(renamed, never deleted) and begins a new one, so nothing is lost and an edit never fails for its
checkpoint.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memory.store.fs import FS, UnsafePathError
from memory.store.paths import pseudoclaude_home
from memory.text.lines import one_line

log = logging.getLogger(__name__)

CHECKPOINTS_DIR = "checkpoints"
MANIFEST = "manifest.jsonl"
BLOBS = "blobs"
MANIFEST_MAX = 64 << 20  # a manifest past this is not ours
_SHA = re.compile(r"^[0-9a-f]{64}$")
_SESSION_ID = re.compile(r"^[0-9A-Za-z_-]+$")


class CheckpointError(Exception):
    """A checkpoint problem; ``str(err)`` is one line (a hostile manifest, a missing blob, ...)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FileChange(BaseModel):
    """One file an entry changed: its workspace-relative path, sha256 before (None: absent) and
    after (None: the entry deleted it), and its permission bits before (None: absent)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str
    before: str | None
    after: str | None
    mode: int | None = None

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        # A manifest is read back as untrusted: a path that could leave the workspace is refused.
        parts = v.split(os.sep)
        if not v or "\x00" in v or os.path.isabs(v) or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"not a workspace-relative path: {v!r}")
        return v

    @field_validator("before", "after")
    @classmethod
    def _sha(cls, v: str | None) -> str | None:
        if v is not None and not _SHA.match(v):
            raise ValueError("not a sha256")
        return v

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: int | None) -> int | None:
        return None if v is None else v & 0o7777


class Entry(BaseModel):
    """What one turn (or rewind entry) did to files: its number, time, changes, whether it ran
    bash, and for a rewind entry the turn it went back to before (``restore_of``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    turn: int
    time: str = ""
    files: tuple[FileChange, ...] = ()
    bash: bool = False
    restore_of: int | None = None

    def change(self, path: str) -> FileChange | None:
        return next((f for f in self.files if f.path == path), None)


class Manifest(BaseModel):
    """A session's checkpoints: version 1, the session id, the workspace (real path), entries by turn."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: Literal[1] = 1
    session: str
    workspace: str
    entries: tuple[Entry, ...] = ()

    def entry(self, turn: int) -> Entry | None:
        return next((e for e in self.entries if e.turn == turn), None)

    def last_after(self, path: str) -> tuple[bool, str | None]:
        """Whether an entry changed ``path``, and the sha the last one left it at (None: absent)."""
        for e in reversed(self.entries):
            f = e.change(path)
            if f is not None:
                return True, f.after
        return False, None


@dataclass(frozen=True)
class StoreSize:
    """The checkpoints' footprint: bytes on disk and number of sessions."""

    bytes: int
    sessions: int


class CheckpointStore:
    """``$PSEUDOCLAUDE_HOME/checkpoints/``: one folder per session; its size and its pruning."""

    def __init__(self, home: Path | None = None, fs: FS | None = None) -> None:
        self.home = Path(home) if home is not None else pseudoclaude_home()
        self.root = self.home / CHECKPOINTS_DIR
        self.fs = fs if fs is not None else FS()

    def session(self, session_id: str, workspace: Path | str) -> SessionCheckpoints:
        """The checkpoints of one session of ``workspace`` (nothing is read or written yet)."""
        if not _SESSION_ID.match(session_id):
            raise CheckpointError(f"not a session id: {session_id!r}")
        return SessionCheckpoints(self, session_id, os.path.realpath(workspace))

    def _sessions(self) -> list[tuple[str, Path, os.stat_result]]:
        """(id, folder, the manifest's or else the folder's stat) of each session folder."""
        try:
            names = self.fs.listdir(self.root)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            folder = self.root / name
            if not _SESSION_ID.match(name):
                continue
            try:
                st = self.fs.lstat(folder)
                if not stat.S_ISDIR(st.st_mode):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    st = self.fs.lstat(folder / MANIFEST)
            except OSError:
                continue
            out.append((name, folder, st))
        return out

    def _folder_bytes(self, folder: Path) -> int:
        total = 0
        for sub in (folder, folder / BLOBS):
            try:
                names = self.fs.listdir(sub)
            except OSError:
                continue
            for name in names:
                with contextlib.suppress(OSError):
                    st = self.fs.lstat(sub / name)
                    if stat.S_ISREG(st.st_mode):
                        total += st.st_blocks * 512 if st.st_blocks else st.st_size
        return total

    def size(self) -> StoreSize:
        """The checkpoints' bytes on disk and how many sessions have some."""
        sessions = self._sessions()
        return StoreSize(sum(self._folder_bytes(f) for _, f, _ in sessions), len(sessions))

    def prune(self, max_bytes: int, max_days: float, *, keep: Iterable[str] = ()) -> list[str]:
        """Remove whole sessions, oldest first: those older than ``max_days`` (by their last
        checkpoint), then more until the rest fit ``max_bytes``; returns their ids. A session whose
        log another process holds (it may be writing checkpoints now) and ``keep`` are never removed."""
        kept = set(keep)
        found = sorted(self._sessions(), key=lambda s: (s[2].st_mtime, s[0]))
        sizes = {sid: self._folder_bytes(folder) for sid, folder, _ in found}
        total = sum(sizes.values())
        cutoff = time.time() - max_days * 86400
        removed: list[str] = []
        for sid, folder, st in found:
            if st.st_mtime >= cutoff and total <= max_bytes:
                break
            if sid in kept or self._in_use(sid):
                continue
            try:
                self._remove(folder)
            except OSError as e:
                log.warning("could not remove the checkpoints of session %s: %s", sid, e)
                continue
            total -= sizes[sid]
            removed.append(sid)
        return removed

    def _in_use(self, sid: str) -> bool:
        """Whether another process (or another open here) holds the session's log."""
        path = self.home / "sessions" / f"{sid}.jsonl"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return False  # no log left: the checkpoints are an orphan's
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
        return False

    def _remove(self, folder: Path) -> None:
        if stat.S_ISLNK(self.fs.lstat(folder).st_mode):
            raise UnsafePathError(errno.ELOOP, "is a symlink", str(folder))
        for sub in (folder / BLOBS, folder):
            try:
                names = self.fs.listdir(sub)
            except FileNotFoundError:
                continue
            for name in names:
                p = sub / name
                if not stat.S_ISDIR(self.fs.lstat(p).st_mode):
                    self.fs.unlink(p)
            if sub != folder:
                os.rmdir(sub)  # the fs layer removes files only; an emptied folder goes here
        os.rmdir(folder)


class _Open:
    """A writer's view of one entry (mutable; the manifest on disk is the list of its events)."""

    __slots__ = ("bash", "files", "restore_of", "time")

    def __init__(self, time: str, restore_of: int | None = None) -> None:
        self.time, self.bash, self.restore_of = time, False, restore_of
        self.files: dict[str, list[str | int | None]] = {}  # path -> [before, after, mode]


class SessionCheckpoints:
    """One session's manifest and blobs (content-addressed by sha256). Thread-safe. The manifest
    is append-only JSON lines, one event each (``before``, ``after``, ``bash``), written in one
    ``write`` each: an edit costs one short append, whatever the session's length, and a line cut
    by a crash is the last one and is left out. A manifest another process appended to (its size
    is not what this one left) is read again before the next change."""

    def __init__(self, store: CheckpointStore, session_id: str, workspace: str) -> None:
        self.store, self.fs = store, store.fs
        self.session_id, self.workspace = session_id, workspace
        self.dir = store.root / session_id
        self.manifest_path = self.dir / MANIFEST
        self.blobs = self.dir / BLOBS
        self._lock = threading.RLock()
        self._cache: Manifest | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._ready = False
        # The writer's state: entries by turn, references per blob, the (inode, size) it left.
        self._entries: dict[int, _Open] | None = None
        self._refs: dict[str, int] = {}
        self._left: tuple[int, int] | None = None

    # -- reading ---------------------------------------------------------------------------

    def manifest(self) -> Manifest:
        """The manifest as on disk (empty when there is none); CheckpointError when it is hostile."""
        with self._lock:
            try:
                st = self.fs.lstat(self.manifest_path)
            except FileNotFoundError:
                return Manifest(session=self.session_id, workspace=self.workspace)
            except OSError as e:
                raise CheckpointError(self._bad(e.strerror or str(e))) from None
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self._cache is not None and stamp == self._stamp:
                return self._cache
            if not stat.S_ISREG(st.st_mode) or st.st_size > MANIFEST_MAX:
                raise CheckpointError(self._bad("not a regular file of a sane size"))
            try:
                raw = self.fs.read_bytes(self.manifest_path, max_bytes=MANIFEST_MAX)
            except OSError as e:
                raise CheckpointError(self._bad(e.strerror or str(e))) from None
            m = self._fold(raw)
            self._cache, self._stamp = m, stamp
            return m

    def _fold(self, raw: bytes) -> Manifest:
        """The events of a manifest file, folded into entries; CheckpointError at the first bad one."""
        lines = raw.split(b"\n")
        torn = lines.pop()  # "" after a final newline; else a line a crash cut: left out
        if torn and not lines:
            raise CheckpointError(self._bad("line 1: not a checkpoint manifest header"))
        entries: dict[int, _Open] = {}
        for lineno, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
                if lineno == 1:
                    if rec.get("type") != "meta" or rec.get("version") != 1:
                        raise ValueError("not a version 1 checkpoint manifest")
                    if rec.get("session") != self.session_id:
                        raise ValueError(f"it names session {rec.get('session')!r}")
                    continue
                _event(entries, rec)
            except (ValueError, TypeError, KeyError) as e:
                raise CheckpointError(self._bad(f"line {lineno}: {one_line(e, 120)}")) from None
        if torn:
            log.warning("checkpoints of session %s: a cut last line left out", self.session_id)
        try:
            return Manifest(
                session=self.session_id,
                workspace=self.workspace,
                entries=tuple(
                    Entry(
                        turn=n,
                        time=e.time,
                        bash=e.bash,
                        restore_of=e.restore_of,
                        files=tuple(
                            FileChange(path=p, before=b, after=a, mode=md)  # type: ignore[arg-type]
                            for p, (b, a, md) in e.files.items()
                        ),
                    )
                    for n, e in sorted(entries.items())
                ),
            )
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            raise CheckpointError(self._bad(one_line(first["msg"], 160))) from None

    def _bad(self, why: str) -> str:
        return one_line(
            f"the checkpoints of session {self.session_id} cannot be read "
            f"({self.manifest_path}: {why}); nothing was changed",
            400,
        )

    def blob(self, sha: str) -> bytes:
        """A blob's bytes, checked against its name; CheckpointError when missing or damaged."""
        if not _SHA.match(sha):
            raise CheckpointError(f"not a checkpoint id: {sha!r}")
        try:
            data = self.fs.read_bytes(self.blobs / sha)
        except FileNotFoundError:
            raise CheckpointError(f"checkpoint {sha[:12]} of session {self.session_id} is missing") from None
        except OSError as e:
            raise CheckpointError(f"checkpoint {sha[:12]} cannot be read: {e.strerror or e}") from None
        if sha256(data) != sha:
            raise CheckpointError(f"checkpoint {sha[:12]} of session {self.session_id} is damaged")
        return data

    def relative(self, real: str) -> str:
        """``real`` (a real path) relative to the workspace; CheckpointError if outside it."""
        rel = os.path.relpath(real, self.workspace)
        if rel == "." or rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            raise CheckpointError(f"{real!r} is outside the workspace {self.workspace!r}")
        return rel

    # -- writing ---------------------------------------------------------------------------

    def record_before(self, turn: int, real: str, *, restore_of: int | None = None) -> None:
        """Keep ``real``'s bytes (or its absence) before ``turn`` first writes it; once per file per turn."""
        rel = self.relative(real)
        with self._lock:
            entries = self._state()
            entry = entries.get(turn)
            if entry is not None and rel in entry.files:
                return
            try:
                st = self.fs.lstat(real)
            except FileNotFoundError:
                sha, mode = None, None
            else:
                if not stat.S_ISREG(st.st_mode):
                    raise CheckpointError(f"{rel!r} is not a regular file")
                sha, mode = self.put(self.fs.read_bytes(Path(real))), stat.S_IMODE(st.st_mode)
            rec: dict[str, object] = {"type": "before", "turn": turn, "path": rel, "sha": sha, "mode": mode}
            if entry is None:
                rec["time"] = now_rfc3339()
                if restore_of is not None:
                    rec["restore_of"] = restore_of
            self._append(rec)

    def record_after(self, turn: int, real: str, data: bytes | None) -> None:
        """Keep what ``turn`` left at ``real`` (None: it removed the file); its earlier "after" in
        this turn goes unless something else names it."""
        rel = self.relative(real)
        with self._lock:
            entry = self._state().get(turn)
            if entry is None or rel not in entry.files:
                raise CheckpointError(f"{rel!r} was written without its checkpoint")
            old = entry.files[rel][1]
            sha = self.put(data) if data is not None else None
            if sha == old:
                return
            self._append({"type": "after", "turn": turn, "path": rel, "sha": sha})
            if isinstance(old, str) and not self._refs.get(old):
                self.fs.unlink(self.blobs / old)

    def record_bash(self, turn: int) -> None:
        """Say that ``turn`` ran bash (what it changed is not restored by a rewind)."""
        with self._lock:
            entry = self._state().get(turn)
            if entry is None or not entry.bash:
                self._append({"type": "bash", "turn": turn, "time": now_rfc3339()})

    def put(self, data: bytes) -> str:
        """Store ``data`` once by its sha256 (a blob already there is not written again). Created
        under its final name: a blob cut by a crash is refused when read (its sha differs)."""
        sha = sha256(data)
        path = self.blobs / sha
        self._prepare()
        try:
            st = self.fs.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISREG(st.st_mode) and st.st_size == len(data):
                return sha
            self.fs.unlink(path)  # a cut one: written again
        with contextlib.suppress(FileExistsError):  # another writer of the same bytes
            self.fs.write_new(path, data, 0o600, sync=False)
        return sha

    def _prepare(self) -> None:
        if not self._ready:
            self.fs.makedirs(self.blobs, mode=0o700)
            self._ready = True

    def _state(self) -> dict[int, _Open]:
        """The writer's entries, read again when the file is not as this writer left it; a hostile
        manifest is set aside (renamed, never deleted) and a new one begun."""
        try:
            st = self.fs.lstat(self.manifest_path)
            now: tuple[int, int] | None = (st.st_ino, st.st_size)
        except FileNotFoundError:
            now = None
        if self._entries is not None and now == self._left:
            return self._entries
        entries: dict[int, _Open] = {}
        if now is not None:
            try:
                m = self.manifest()
            except CheckpointError as bad:
                aside = (
                    self.dir / f"manifest.bad-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}.jsonl"
                )
                log.warning("%s; set aside as %s", bad, aside.name)
                self.fs.replace(self.manifest_path, aside)
                now = None
            else:
                for got in m.entries:
                    o = entries[got.turn] = _Open(got.time, got.restore_of)
                    o.bash = got.bash
                    o.files = {f.path: [f.before, f.after, f.mode] for f in got.files}
        self._entries, self._left = entries, now
        self._refs = {}
        for o in entries.values():
            for b, a, _ in o.files.values():
                for s in (b, a):
                    if isinstance(s, str):
                        self._refs[s] = self._refs.get(s, 0) + 1
        return entries

    def _append(self, rec: dict[str, object]) -> None:
        """One event: into the writer's state, then onto the file in one ``write``."""
        assert self._entries is not None
        for sha, delta in _event(self._entries, rec):
            self._refs[sha] = self._refs.get(sha, 0) + delta
        self._prepare()
        line = (json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
        if self._left is None:  # a new manifest: its header first, in the same write
            head = {"type": "meta", "version": 1, "session": self.session_id, "workspace": self.workspace}
            line = (json.dumps(head, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii") + line
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(self.manifest_path, flags, 0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(errno.EINVAL, "not a regular file", str(self.manifest_path))
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            self._left = (st.st_ino, st.st_size + len(line))
        finally:
            os.close(fd)


def _event(entries: dict[int, _Open], rec: dict[str, object]) -> list[tuple[str, int]]:
    """Apply one manifest event to ``entries``; returns how the references to blobs changed
    (blob, +n/-n). ValueError/TypeError/KeyError for an event that is not one."""
    kind, turn = rec["type"], rec["turn"]
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
        raise ValueError("turn must be a positive integer")
    entry = entries.get(turn)
    if entry is None:
        restore_of = rec.get("restore_of")
        if restore_of is not None and not isinstance(restore_of, int):
            raise ValueError("restore_of must be an integer")
        entry = entries[turn] = _Open(str(rec.get("time") or ""), restore_of)
    if kind == "bash":
        entry.bash = True
        return []
    path, sha = rec["path"], rec["sha"]
    if not isinstance(path, str) or (sha is not None and not (isinstance(sha, str) and _SHA.match(sha))):
        raise ValueError("path must be a string and sha a sha256 or null")
    if kind == "before":
        mode = rec.get("mode")
        if mode is not None and not isinstance(mode, int):
            raise ValueError("mode must be an integer")
        if path in entry.files:
            return []
        entry.files[path] = [sha, sha, mode]  # after = before until a write says otherwise
        return [(sha, 2)] if sha is not None else []
    if kind == "after":
        if path not in entry.files:
            raise ValueError(f"an after without its before: {path!r}")
        old = entry.files[path][1]
        entry.files[path][1] = sha
        return [(s, d) for s, d in ((old, -1), (sha, 1)) if isinstance(s, str)]
    raise ValueError(f"unknown event {kind!r}")


class Recorder:
    """The file tools' hook (``ToolContext.checkpoints``): the turn is read from the live session
    when a tool writes. A checkpoint that cannot be kept is logged; the edit goes on."""

    def __init__(
        self,
        checkpoints: SessionCheckpoints,
        turn: Callable[[], int],
        prune: Callable[[], object] | None = None,
    ) -> None:
        self.checkpoints, self.turn = checkpoints, turn
        self._prune = prune  # the bounds, applied once, at the session's first checkpoint

    def before_write(self, real: str) -> None:
        self._guard(lambda t: self.checkpoints.record_before(t, real))

    def after_write(self, real: str, data: bytes) -> None:
        self._guard(lambda t: self.checkpoints.record_after(t, real, data))

    def ran_bash(self) -> None:
        self._guard(self.checkpoints.record_bash)

    def _guard(self, fn: Callable[[int], None]) -> None:
        turn = self.turn()
        if turn < 1:
            return
        prune, self._prune = self._prune, None
        try:
            if prune is not None:
                prune()
            fn(turn)
        except (CheckpointError, OSError, ValueError) as e:
            log.warning("checkpoint not kept: %s", one_line(e, 300))
