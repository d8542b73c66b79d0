"""The sessions of ``$PSEUDOCLAUDE_HOME/sessions/``: creating one, finding and restoring one, and
listing them (app/agent/conversation/session.py is the session being written)."""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from app.agent.conversation.messages import (
    CRASHED_REASON,
    INTERRUPTED,
    dangling_tool_use_ids,
    interrupted_results,
)
from app.agent.conversation.records import MetaRecord, dumps
from app.agent.conversation.session import Session, new_session_id, now_rfc3339
from app.agent.conversation.session_log import (
    HEADER_MAX,
    ID_CHARS,
    SESSION_VERSION,
    SUFFIX,
    Replayed,
    SessionError,
    mtime_rfc3339,
    open_nofollow,
    prompted,
    read_all,
    read_from_boundary,
    read_header,
    replay,
    replay_tail,
    same_workspace,
    scan,
)
from memory.store.fs import FS
from memory.store.paths import Paths, pseudoclaude_home


class SessionInfo(BaseModel):
    id: str
    workspace: str
    created: str
    updated: str  # the file's last modification, RFC 3339 UTC
    title: str  # the first user text, one line, at most 80 characters
    turns: int
    path: Path

    @property
    def has_prompt(self) -> bool:
        """Whether the person ever sent anything in it (a session opened and closed has not)."""
        return self.turns > 0 or bool(self.title)


class SessionStore:
    """Sessions under ``$PSEUDOCLAUDE_HOME/sessions/`` (``home`` read once, at construction)."""

    def __init__(self, home: Path | None = None, *, history: bool = True) -> None:
        self.home = Path(home) if home is not None else pseudoclaude_home()
        # False (print mode): a restored session has no ``earlier`` and is replayed from its last
        # compaction boundary only, so a ``--continue`` costs the same at turn 300 as at turn 10.
        self.history = history
        self.dir = Paths.for_workspace(self.home, self.home).sessions_dir

    def create(self, workspace: Path, *, model: str = "") -> Session:
        """A new session of ``workspace`` (stored as its real path), its header written and synced."""
        ws = os.path.realpath(workspace)
        self._ensure_dir()
        for _ in range(100):
            sid = new_session_id()
            path = self.dir / f"{sid}{SUFFIX}"
            try:
                fd = open_nofollow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue
            except OSError as e:
                raise SessionError(f"cannot create session file {path}: {e.strerror or e}") from None
            break
        else:  # pragma: no cover - 100 collisions of 24 random bits within one second
            raise SessionError(f"cannot find a free session id in {self.dir}")
        created = now_rfc3339()
        try:
            os.fchmod(fd, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            session = Session(
                id=sid, path=path, workspace=Path(ws), fd=fd, created=created, model=model, lines=1
            )
            meta = MetaRecord(version=SESSION_VERSION, id=sid, workspace=ws, created=created, model=model)
            session._write(dumps(meta))
            os.fsync(fd)
            FS().fsync_dir(self.dir)
        except OSError as e:
            os.close(fd)
            raise SessionError(f"cannot create session file {path}: {e.strerror or e}") from None
        except BaseException:
            os.close(fd)
            raise
        return session

    def latest(self, workspace: Path) -> Session | None:
        """The most recently active session of ``workspace`` (real paths compared) in which the
        person sent something, restored: an app opened and closed leaves nothing to continue."""
        want = os.path.realpath(workspace)
        found: list[tuple[int, str, Path]] = []
        for path in self._files():
            meta, st = read_header(path)
            if (
                meta is None
                or meta.workspace is None
                or st is None
                or not same_workspace(meta.workspace, want)
            ):
                continue
            found.append((st.st_mtime_ns, path.stem, path))
        for _, _, path in sorted(found, reverse=True):
            if prompted(path):
                return self._restore(path)
        return None

    def open(self, session_id: str) -> Session:
        """Restore a session by full id or unambiguous prefix (of any workspace: see ``.workspace``)."""
        sid = session_id.strip()
        if sid.endswith(SUFFIX):
            sid = sid[: -len(SUFFIX)]
        if not sid or not ID_CHARS.match(sid):
            raise SessionError(f"not a session id: {session_id!r}")
        names = [p.stem for p in self._files()]
        if sid in names:
            return self._restore(self.dir / f"{sid}{SUFFIX}")
        matches = sorted(n for n in names if n.startswith(sid))
        if not matches:
            raise SessionError(f"no session matches {sid!r}")
        if len(matches) > 1:
            shown = ", ".join(matches[:3]) + (f" and {len(matches) - 3} more" if len(matches) > 3 else "")
            raise SessionError(f"session id {sid!r} is ambiguous: it matches {shown}")
        return self._restore(self.dir / f"{matches[0]}{SUFFIX}")

    def list(self, workspace: Path | None = None) -> list[SessionInfo]:
        """Sessions (of ``workspace``, or all), most recently active first; unreadable files skipped."""
        want = os.path.realpath(workspace) if workspace is not None else None
        found: list[tuple[int, str, SessionInfo]] = []
        for path in self._files():
            meta, st = read_header(path)
            if meta is None or meta.workspace is None or st is None:
                continue
            if want is not None and not same_workspace(meta.workspace, want):
                continue
            title, turns = scan(path)
            info = SessionInfo(
                id=path.stem,
                workspace=meta.workspace,
                created=meta.created or "",
                updated=mtime_rfc3339(st),
                title=title,
                turns=turns,
                path=path,
            )
            found.append((st.st_mtime_ns, path.stem, info))
        found.sort(key=lambda t: (t[0], t[1]), reverse=True)
        return [t[2] for t in found]

    # -- internals -------------------------------------------------------------------------

    def _ensure_dir(self) -> None:
        try:
            FS().makedirs(self.dir, mode=0o700)
            if stat.S_IMODE(os.lstat(self.dir).st_mode) != 0o700:
                os.chmod(self.dir, 0o700)
        except OSError as e:
            raise SessionError(f"cannot create {self.dir}: {e.strerror or e}") from None

    def _files(self) -> Iterator[Path]:
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return
        except OSError as e:
            raise SessionError(f"cannot list {self.dir}: {e.strerror or e}") from None
        for name in names:
            if name.endswith(SUFFIX) and not name.startswith(".") and ID_CHARS.match(name[: -len(SUFFIX)]):
                yield self.dir / name

    def _restore(self, path: Path) -> Session:
        try:
            fd = open_nofollow(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SessionError(f"session {path.stem} no longer exists") from None
        except OSError as e:
            raise SessionError(f"cannot open session file {path}: {e.strerror or e}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionError(f"session {path.stem} is in use by another PseudoClaude process") from None
            session = self._replay(path, fd, *self._read(path, fd))
        except OSError as e:
            os.close(fd)
            raise SessionError(f"cannot read session file {path}: {e.strerror or e}") from None
        except BaseException:
            os.close(fd)
            raise
        return session

    def _read(self, path: Path, fd: int) -> tuple[Replayed, int]:
        """The file replayed, and its size. Without history, from its last compaction boundary on
        when it can (a long session costs what its last part does)."""
        if not self.history:
            offset, tail = read_from_boundary(fd)
            if offset:
                r = replay_tail(path, tail, offset, os.pread(fd, HEADER_MAX, 0))
                if r is not None:
                    return r, offset + len(tail)
        data = read_all(fd)
        return replay(path, data, history=self.history), len(data)

    def _replay(self, path: Path, fd: int, r: Replayed, size: int) -> Session:
        assert r.meta is not None and r.meta.workspace is not None  # replay raises without a header
        if r.cut:
            # An interrupted write: the line is unrecoverable; cut it so the next line starts clean.
            os.ftruncate(fd, size - r.cut)
        session = Session(
            id=path.stem,
            path=path,
            workspace=Path(r.meta.workspace),
            fd=fd,
            created=r.meta.created or "",
            model=r.meta.model or "",
            messages=r.conv,
            warnings=r.warnings,
            turns=r.turns,
            lines=r.lines,
            title=r.title or r.fallback,
            images=r.images,
        )
        session._needs_newline = r.partial
        session.anchor, session.summary, session.compactions = r.anchor, r.summary, r.compactions
        session.earlier, session.earlier_left_out = r.earlier, r.earlier_left_out
        session.todos = r.todos
        ids = dangling_tool_use_ids(r.conv)
        if ids:
            r.warnings.append(f"{path.name}: {len(ids)} tool call(s) without a result marked {INTERRUPTED}")
        if r.mark is not None:
            # The process died mid-turn: close that turn by the rules, in the file too, so the
            # file replays to exactly `messages`.
            r.warnings.append(f"{path.name}: turn {r.turns} was cut short ({CRASHED_REASON}); closed it")
            session._mark = r.mark
            session.end_turn("crashed", message=CRASHED_REASON)
        elif ids:  # answer them in the file too, so the file replays to exactly `messages`
            session._append(interrupted_results(ids), repair="interrupted")
        session.turn_start = len(session.messages)
        return session
