"""Sessions: one JSONL file per conversation under ``$PSEUDOCLAUDE_HOME/sessions/``.

The file's format and its replay are in app/agent/conversation/session_log.py; the rules that keep the
conversation valid in app/agent/conversation/messages.py. This module is the live side: a session being
written, and the store that creates, lists and restores them.

The file is an append-only log written with plain ``os.write`` calls on an ``O_APPEND`` fd
(each line in one call, at once); ``end_turn`` and ``close`` fsync. Files are 0600 in a 0700
folder. A session being written is held with an exclusive ``flock``: a second process (or a
second open in this one) gets a :class:`SessionError` instead of interleaving lines.

``Session.messages`` is always a conversation the Messages API accepts, and is exactly what
replaying the file gives (``push_message`` is used both live and on replay). A trailing assistant
message whose tool calls never got results (a crash or a cancelled turn) gets ``[interrupted]``
results written to the file when the session is opened, or by ``end_turn``; a trailing user
message of tool results is kept as is. A turn cut by a crash is closed when the file is next
opened, with status ``crashed``.

A compaction boundary replaces the conversation by its compacted form (what the model is sent
from then on); what came before it stays in the log, and a restored session keeps the last
``EARLIER_KEPT`` of those messages in ``Session.earlier`` (with a marker per boundary) for the
person to read: ``Session.transcript()`` is what the chat shows, ``messages`` what the model gets.

Because a new user message may be merged into a trailing user message, take a turn's messages
as ``messages[session.turn_start:]`` rather than from a length remembered before ``append``.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from app.agent.conversation.messages import (
    CRASHED_REASON,
    INTERRUPTED,
    ROLES,
    TurnMark,
    dangling_tool_use_ids,
    drop_turn,
    interrupted_results,
    push_message,
    scrub,
    scrub_text,
    turn_closing,
)
from app.agent.conversation.session_log import (
    HEADER_MAX,
    ID_CHARS,
    SESSION_VERSION,
    SUFFIX,
    Replayed,
    SessionError,
    dumps,
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
    title_of,
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


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_session_id() -> str:
    """Sortable by creation time: ``20261130T043246Z-1a2b3c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


# -- a session -----------------------------------------------------------------------------


class Session:
    """One open, locked session file and its conversation. Use as a context manager or ``close()``."""

    def __init__(
        self,
        *,
        id: str,
        path: Path,
        workspace: Path,
        fd: int,
        created: str,
        model: str = "",
        messages: list[dict[str, Any]] | None = None,
        warnings: list[str] | None = None,
        turns: int = 0,
        lines: int = 1,
        title: str = "",
    ) -> None:
        self.id = id
        self.path = path
        self.workspace = workspace
        self.created = created
        self.model = model
        self.messages: list[dict[str, Any]] = messages if messages is not None else []
        self.warnings: list[str] = warnings if warnings is not None else []
        self.turns = turns  # turns begun so far (the last begin_turn's number)
        self.title = title
        self.turn_start = len(self.messages)  # where the current turn's messages begin
        self._fd: int | None = fd
        self._lines = lines
        self._lock = threading.RLock()
        self._needs_newline = False
        self._mark: TurnMark | None = None
        # Long sessions (app/agent/conversation/compaction.py): the last usage anchor (input tokens reported for a
        # request, and the characters of the messages it carried) and the summary of the part of
        # the conversation that was compacted (it goes in the system prompt).
        self.anchor: tuple[int, int] | None = None
        self.summary: str | None = None
        self.compactions = 0
        # Restored from a log with compaction boundaries: the most recent messages before them,
        # each boundary followed by its marker (display only; never sent), and how many older ones
        # were left out of it.
        self.earlier: list[dict[str, Any]] = []
        self.earlier_left_out = 0

    @property
    def results_dir(self) -> Path:
        """Where this session's offloaded tool results are kept: ``sessions/<id>/results/``."""
        return self.path.with_suffix("") / "results"

    # -- writing ---------------------------------------------------------------------------

    def append(self, message: object) -> None:
        """Add a Messages API message (a snapshot of it) and write it as one line at once.

        Raises ``ValueError`` if it is not a user/assistant message with text or block content
        or cannot be serialized, and :class:`SessionError` if the file cannot be written (the
        message is then kept in ``messages`` all the same, so the conversation goes on).
        """
        self._append(message)

    def append_at(self, message: object) -> int:
        """``append``, and where the message landed: the index of the message holding it (a user
        message may join a trailing user message, before the turn's start)."""
        before = self.turn_start
        self._append(message)
        index = len(self.messages) - 1
        return min(index, self.turn_start) if self.turn_start < before else index

    def open_turn(self, user_text: str, message: object) -> int:
        """``begin_turn`` and the turn's user message (``append_at``), in one call: one trip to
        the thread the session's file is written from, before the answer's request can go out."""
        self.begin_turn(user_text)
        return self.append_at(message)

    def _append(self, message: object, **extra: Any) -> None:
        with self._lock:
            self._check_open()
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                raise ValueError("a session message needs role 'user' or 'assistant'")
            if not isinstance(message.get("content"), (str, list)):
                raise ValueError("a session message needs str or list content")
            message, _ = scrub(message)  # the file holds what can be sent again
            try:
                line = dumps({"type": "message", "message": message, **extra})
            except (TypeError, ValueError) as e:
                raise ValueError(f"message cannot be written as JSON: {e}") from None
            snapshot = json.loads(line)["message"]
            self._lines += 1
            index, notes = push_message(self.messages, snapshot)
            self.warnings += [f"{self.path.name}:{self._lines}: {n}" for n in notes]
            if index is not None and index < self.turn_start:
                self.turn_start = index  # merged into the message before the turn began
            self._write(line)

    def begin_turn(self, user_text: str) -> int:
        """Mark the start of a turn; returns its number (1, 2, …, continuing a resumed session)."""
        with self._lock:
            self._check_open()
            user_text = scrub_text(user_text)
            self.turns += 1
            self.turn_start = len(self.messages)
            self._mark = TurnMark(self.messages)
            if not self.title:
                self.title = title_of(user_text)
            self._lines += 1
            self._write(
                dumps({"type": "turn_start", "turn": self.turns, "time": now_rfc3339(), "text": user_text})
            )
            return self.turns

    def end_turn(self, status: str, **info: Any) -> bool:
        """Mark the end of the current turn (``completed``, ``error``, ``cancelled``,
        ``max_iterations``, …) with optional JSON-able ``info``, and fsync the file.

        The turn is closed by :func:`turn_closing`'s rules (``info["message"]`` is the reason):
        calls without a result get ``[interrupted]`` results; a failed turn without any complete
        response is dropped from ``messages`` (``"dropped": true`` in the log, which keeps it);
        any other unfinished turn gets the app's note that it was interrupted. Returns whether
        the turn was dropped.
        """
        with self._lock:
            self._check_open()
            mark = self._mark or TurnMark(self.messages[: self.turn_start])
            closing, drop = turn_closing(self.messages, mark, status, str(info.get("message") or ""))
            for m in closing:
                self._append(m, repair="interrupted")
            record: dict[str, Any] = {
                "type": "turn_end",
                "turn": self.turns,
                "status": status,
                "time": now_rfc3339(),
            }
            if drop:
                drop_turn(self.messages, mark)
                self.turn_start = len(self.messages)
                record["dropped"] = True
            self._mark = None
            for k, v in info.items():
                record.setdefault(k, v)
            try:
                line = dumps(record)
            except (TypeError, ValueError):
                line = json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=str)
            self._lines += 1
            self._write(line)
            self._fsync()
            return drop

    def record_usage(self, tokens: int, chars: int) -> None:
        """Keep the usage anchor of the request just answered (in the log too: a ``--continue`` in a
        new process decides from it)."""
        with self._lock:
            self._check_open()
            self.anchor = (int(tokens), int(chars))
            self._lines += 1
            self._write(dumps({"type": "usage", "tokens": int(tokens), "chars": int(chars)}))

    def record_offloads(self, replaced: list[tuple[str, str]]) -> None:
        """Tool results already in ``messages`` that were moved to disk: each is replaced by its stub
        (the caller changed ``messages`` already; this records it so a replay does the same)."""
        with self._lock:
            self._check_open()
            for tool_use_id, stub in replaced:
                self._lines += 1
                self._write(
                    dumps({"type": "offload", "tool_use_id": tool_use_id, "content": scrub_text(stub)})
                )

    def compact(
        self, summary: str, messages: list[dict[str, Any]], turn_start: int | None, **info: Any
    ) -> None:
        """Replace the conversation by its compacted form: ``summary`` (for the system prompt) and
        the verbatim ``messages`` that follow it. ``turn_start``: where the turn in progress begins in
        ``messages`` (None between turns). The log keeps everything before; this record is the
        boundary a replay starts again from. Synced."""
        with self._lock:
            self._check_open()
            messages, _ = scrub(copy.deepcopy(messages))
            # ``at``: what the lines before this one add up to, so a replay without history
            # (session_log.replay_tail) reads the file from here on only.
            at = {
                "line": self._lines + 1,
                "turns": self.turns,
                "compactions": self.compactions,
                "open": self._mark is not None,
            }
            record = {
                "type": "compaction",
                "time": now_rfc3339(),
                "summary": scrub_text(summary),
                "turn_start": turn_start,
                "messages": messages,
                **info,
                "at": at,
            }
            line = dumps(record)
            self.messages[:] = json.loads(line)["messages"]
            self.summary = record["summary"]
            self.anchor = None
            self.compactions += 1
            if turn_start is None or self._mark is None:
                self.turn_start = len(self.messages)
            else:
                self.turn_start = turn_start
                self._mark = TurnMark(self.messages[:turn_start])
            self._lines += 1
            self._write(line)
            self._fsync()

    def record_rewind(
        self, text: str, to_turn: int, state: tuple[list[dict[str, Any]], str | None] | None, **info: Any
    ) -> int:
        """A rewind (app/agent/undo/rewind.py), written as a turn-like entry with the next number (so
        rewinding it undoes it) and, with ``state`` (the messages and summary of the conversation
        when ``to_turn`` began), a ``rewind`` record replay honours. One write, synced; returns its number."""
        with self._lock:
            self._check_open()
            if self._mark is not None:
                raise SessionError("a turn is in progress: rewind between turns")
            n, now = self.turns + 1, now_rfc3339()
            lines = [
                dumps(
                    {"type": "turn_start", "turn": n, "time": now, "text": scrub_text(text), "kind": "rewind"}
                ),
                dumps({"type": "turn_end", "turn": n, "status": "rewind", "time": now, **info}),
            ]
            if state is not None:
                lines.append(
                    dumps(
                        {
                            "type": "rewind",
                            "turn": n,
                            "to": to_turn,
                            "time": now,
                            "summary": scrub_text(state[1]) if state[1] else None,
                            "messages": scrub(copy.deepcopy(state[0]))[0],
                        }
                    )
                )
            self._write("\n".join(lines))
            self.turns, self._lines = n, self._lines + len(lines)
            if state is not None:
                rec = json.loads(lines[-1])
                self.messages[:] = []
                for m in rec["messages"]:
                    push_message(self.messages, m)
                self.summary, self.anchor = rec["summary"], None
            self.turn_start = len(self.messages)
            self._fsync()
            return n

    def transcript(self) -> list[dict[str, Any]]:
        """What the person reads of this session: ``earlier`` (the part before the compaction
        boundaries, with their markers), then the conversation the model is sent."""
        return [*self.earlier, *self.messages]

    def close(self) -> None:
        """fsync, release the lock and close the file. Idempotent."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten session must not keep its fd (and lock) forever
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(Exception):
                os.close(fd)

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, workspace={str(self.workspace)!r}, messages={len(self.messages)})"

    # -- internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._fd is None:
            raise SessionError(f"session {self.id} is closed")

    def _write(self, line: str) -> None:
        assert self._fd is not None
        data = (b"\n" if self._needs_newline else b"") + line.encode("ascii") + b"\n"
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            self._needs_newline = False
        except OSError as e:
            self._needs_newline = True  # a partial line must not swallow the next one
            raise SessionError(f"cannot write session file {self.path}: {e.strerror or e}") from None

    def _fsync(self) -> None:
        assert self._fd is not None
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise SessionError(f"cannot sync session file {self.path}: {e.strerror or e}") from None


# -- the store -----------------------------------------------------------------------------


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
            meta = {
                "type": "meta",
                "version": SESSION_VERSION,
                "id": sid,
                "workspace": ws,
                "created": created,
                "model": model,
            }
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
            if meta is None or st is None or not same_workspace(meta["workspace"], want):
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
            if (
                meta is None
                or st is None
                or (want is not None and not same_workspace(meta["workspace"], want))
            ):
                continue
            title, turns = scan(path)
            info = SessionInfo(
                id=path.stem,
                workspace=meta["workspace"],
                created=str(meta.get("created", "")),
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
        assert r.meta is not None  # replay raises without a header
        if r.cut:
            # An interrupted write: the line is unrecoverable; cut it so the next line starts clean.
            os.ftruncate(fd, size - r.cut)
        session = Session(
            id=path.stem,
            path=path,
            workspace=Path(r.meta["workspace"]),
            fd=fd,
            created=str(r.meta.get("created", "")),
            model=str(r.meta.get("model", "") or ""),
            messages=r.conv,
            warnings=r.warnings,
            turns=r.turns,
            lines=r.lines,
            title=r.title or r.fallback,
        )
        session._needs_newline = r.partial
        session.anchor, session.summary, session.compactions = r.anchor, r.summary, r.compactions
        session.earlier, session.earlier_left_out = r.earlier, r.earlier_left_out
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
