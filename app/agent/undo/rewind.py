"""Rewind: files and/or the conversation back to before a turn, from the session log and its
checkpoints (app/agent/undo/checkpoints.py). Headless: the CLI (``pseudoclaude rewind``) and the app's
rewind view both stand on :func:`list_turns`, :func:`plan_rewind` and :func:`apply_rewind`.

- A turn N is the session's N-th ``turn_start`` record. A rewind is itself written to the log as
  a turn-like entry with the next number (``"kind":"rewind"``), and its file changes are
  checkpointed like a turn's, so rewinding that entry undoes it.
- Files: each file a turn from N on changed goes back to its bytes before the first of them
  (a file they created is deleted). A file whose bytes are not what the agent left after its last
  write in the session was changed by someone else: a conflict, never overwritten unless forced.
  What ``bash`` changed is not restored (the rewound turns that ran it are named).
- Conversation: a ``rewind`` record holding the conversation as it was when turn N began (the
  messages and the compaction summary); replay honours it, the log keeps everything before it.
- Memory is never rewound: the rewound turns' memory jobs are named instead.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import JsonValue

from app.agent.conversation.blocks import Message
from app.agent.conversation.messages import dangling_tool_use_ids, interrupted_results, push_message
from app.agent.conversation.records import RewindRecord, TurnEndRecord, TurnStartRecord, parse_record
from app.agent.conversation.session_images import SessionImages
from app.agent.conversation.session_log import Replayed, SessionError, open_nofollow, read_all
from app.agent.undo.checkpoints import (
    CheckpointError,
    CheckpointStore,
    Entry,
    Manifest,
    SessionCheckpoints,
    sha256,
)
from memory.store.paths import PROJECT_STORE_REL
from memory.text.lines import one_line

if TYPE_CHECKING:
    from app.agent.conversation.session import Session

DIFF_LINES = 400  # a conflict's diff is cut here (the view scrolls; the CLI names the file only)
_PROTECTED = (".git",)
_STORE_PARTS = tuple(p.casefold() for p in PROJECT_STORE_REL.parts)


class RewindError(Exception):
    """Why a rewind cannot be planned or applied, in one line (nothing was changed)."""


def display_path(rel: str) -> str:
    """A workspace-relative path for people: POSIX separators, undecodable bytes as U+FFFD."""
    text = os.fsencode(rel).decode("utf-8", "replace")
    return text.replace(os.sep, "/") if os.sep != "/" else text


# -- the session log's turns ---------------------------------------------------------------------


@dataclass(frozen=True)
class TurnLine:
    """One turn of a session as ``rewind --list`` and the view show it."""

    turn: int
    time: str  # RFC 3339 UTC, from the turn_start record
    text: str  # the prompt's first line (a rewind entry: what it did)
    kind: Literal["turn", "rewind"]
    files: tuple[str, ...]  # workspace-relative display paths it changed
    bash: bool  # it ran bash: what that changed is not restored
    in_conversation: bool  # whether the next request holds it
    rewound: bool  # a conversation rewind left it out (not a failed turn dropped by the rules)
    job: str | None  # the memory job its completion submitted
    status: str  # its turn_end status ("" while open or cut by a crash)


@dataclass
class _Turn:
    time: str = ""
    text: str = ""
    kind: Literal["turn", "rewind"] = "turn"
    status: str = ""
    job: str | None = None
    dropped: bool = False


def _read_log(path: Path) -> bytes:
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except FileNotFoundError:
        raise RewindError(f"session {path.stem} no longer exists") from None
    except OSError as e:
        raise RewindError(f"cannot read session file {path}: {e.strerror or e}") from None
    except SessionError as e:
        raise RewindError(str(e)) from None
    try:
        return read_all(fd)
    finally:
        os.close(fd)


_Marker = TurnStartRecord | TurnEndRecord | RewindRecord


def _records(data: bytes) -> Iterable[_Marker]:
    """The turn_start, turn_end and rewind records of a log, in order (others are not parsed)."""
    for raw in data.split(b"\n"):
        if not raw.startswith((b'{"type":"turn_', b'{"type":"rewind"')):
            continue
        try:
            rec = parse_record(json.loads(raw))
        except ValueError:
            continue  # a torn last line
        if isinstance(rec, _Marker):
            yield rec


def _first_line(text: object) -> str:
    lines = [ln for ln in str(text or "").splitlines() if ln.strip()]
    return one_line(lines[0], 200) if lines else ""


def _turns(data: bytes) -> tuple[list[_Turn], set[int]]:
    """The log's turns (index = number - 1) and the numbers of those the conversation still holds."""
    turns: list[_Turn] = []
    held: set[int] = set()
    at_start: dict[int, frozenset[int]] = {}
    for rec in _records(data):
        if isinstance(rec, TurnStartRecord):
            n = len(turns) + 1
            rewind = rec.kind == "rewind"
            turns.append(
                _Turn(time=rec.time or "", text=_first_line(rec.text), kind="rewind" if rewind else "turn")
            )
            at_start[n] = frozenset(held)
            if not rewind:
                held.add(n)
        elif isinstance(rec, TurnEndRecord) and turns:
            t = turns[-1]
            t.status = rec.status or ""
            t.job = rec.job or None
            if rec.dropped is True:
                t.dropped = True
                held.discard(len(turns))
        elif isinstance(rec, RewindRecord) and rec.to is not None and rec.to in at_start:
            held = set(at_start[rec.to])
    return turns, held


def list_turns(session_path: Path, checkpoints: SessionCheckpoints | None) -> list[TurnLine]:
    """Every turn of a session log (read only, no lock), with what its checkpoints say it changed.
    RewindError (one line) when the log or the manifest cannot be read."""
    turns, held = _turns(_read_log(session_path))
    manifest = _manifest(checkpoints) if checkpoints is not None else None
    out = []
    for n, t in enumerate(turns, 1):
        e = manifest.entry(n) if manifest is not None else None
        changed = tuple(display_path(f.path) for f in e.files if f.before != f.after) if e is not None else ()
        out.append(
            TurnLine(
                turn=n,
                time=t.time,
                text=t.text,
                kind=t.kind,
                files=changed,
                bash=bool(e and e.bash),
                in_conversation=n in held,
                rewound=t.kind == "turn" and n not in held and not t.dropped,
                job=t.job,
                status=t.status,
            )
        )
    return out


def turn_prompt(session_path: Path, turn: int) -> str:
    """The whole text of turn ``turn``'s prompt ("" for a rewind entry or no such turn)."""
    n = 0
    for rec in _records(_read_log(session_path)):
        if isinstance(rec, TurnStartRecord):
            n += 1
            if n == turn:
                return rec.text if rec.text is not None and rec.kind != "rewind" else ""
    return ""


def _manifest(checkpoints: SessionCheckpoints) -> Manifest:
    try:
        return checkpoints.manifest()
    except CheckpointError as e:
        raise RewindError(str(e)) from None


# -- the conversation ------------------------------------------------------------------------------


def conversation_before(path: Path, turn: int) -> tuple[list[Message], str | None]:
    """The conversation (messages, compaction summary) as it was when ``turn`` began: the log
    replayed up to that turn's ``turn_start`` (earlier rewinds honoured), valid for the API."""
    data = _read_log(path)
    out = Replayed(name=path.name, images=SessionImages.beside(path))
    seen = 0
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if raw.startswith(b'{"type":"turn_start"'):
            seen += 1
            if seen == turn:
                break
        if not raw.strip():
            continue
        try:
            rec = parse_record(json.loads(raw))
        except ValueError:
            continue
        if rec is not None:
            out.record(lineno, rec)
    else:
        raise RewindError(f"session {path.stem} has no turn {turn}")
    ids = dangling_tool_use_ids(out.conv)
    if ids:  # a turn cut by a crash in an old log: its calls are answered, as on any replay
        push_message(out.conv, interrupted_results(ids))
    return out.conv, out.summary


# -- a plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilePlan:
    """What a rewind does to one file: ``restore`` its bytes, ``delete`` it (a turn created it), or
    nothing (``same``: it is already so). ``conflict``: a one-line reason it changed since the
    agent's last write (``diff``: unified, the agent's bytes to the file's now)."""

    path: str  # display path
    rel: str  # workspace-relative, as the manifest has it
    action: Literal["restore", "delete", "same"]
    target: str | None  # sha256 of the bytes it goes back to (None: absent)
    current: str | None  # sha256 of its bytes now (None: absent)
    conflict: str | None = None
    diff: str = ""


@dataclass(frozen=True)
class RewindPlan:
    """What rewinding to before ``to_turn`` does. ``jobs``: (turn, memory job) of the rewound
    turns, whose memory stays (it is never rewound); ``bash_turns``: rewound turns that ran bash."""

    session: str
    to_turn: int
    files: tuple[FilePlan, ...]
    conversation: bool
    rewound: tuple[int, ...]
    bash_turns: tuple[int, ...]
    jobs: tuple[tuple[int, str], ...]
    restore_files: bool = True
    state: tuple[list[Message], str | None] | None = field(default=None, repr=False, compare=False)

    @property
    def conflicts(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.conflict is not None)

    @property
    def changes(self) -> tuple[FilePlan, ...]:
        return tuple(f for f in self.files if f.action != "same")


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did: its own entry's number (rewind it to undo), the files it wrote back and
    deleted, whether the conversation went back."""

    entry: int
    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    conversation: bool


def describe(to_turn: int, files: bool, conversation: bool) -> str:
    """The rewind entry's text (its line in the list)."""
    what = "files and conversation" if files and conversation else "files" if files else "conversation"
    return f"[rewind to before turn {to_turn}: {what}]"


def plan_rewind(
    session: Session, store: CheckpointStore, turn: int, *, files: bool = True, conversation: bool = True
) -> RewindPlan:
    """What rewinding ``session`` to before ``turn`` would do (nothing is changed). RewindError
    when there is no such turn, the checkpoints cannot be read, or a needed checkpoint is lost."""
    if not files and not conversation:
        raise RewindError("nothing to rewind: choose files, the conversation, or both")
    if not 1 <= turn <= session.turns:
        raise RewindError(f"session {session.id} has no turn {turn} (it has {session.turns})")
    cp = store.session(session.id, session.workspace)
    manifest = _manifest(cp)
    later = [e for e in manifest.entries if e.turn >= turn]
    turns, _ = _turns(_read_log(session.path))
    rewound = tuple(range(turn, len(turns) + 1))
    jobs = tuple((n, t.job) for n, t in enumerate(turns, 1) if n >= turn and t.job)
    plans = tuple(_file_plan(cp, manifest, later, rel) for rel in _paths(later)) if files else ()
    state = conversation_before(session.path, turn) if conversation else None
    return RewindPlan(
        session=session.id,
        to_turn=turn,
        files=plans,
        conversation=conversation,
        rewound=rewound,
        bash_turns=tuple(e.turn for e in later if e.bash),
        jobs=jobs,
        restore_files=files,
        state=state,
    )


def _paths(entries: list[Entry]) -> list[str]:
    seen: dict[str, None] = {}
    for e in entries:
        for f in e.files:
            seen.setdefault(f.path, None)
    return list(seen)


def _file_plan(cp: SessionCheckpoints, manifest: Manifest, later: list[Entry], rel: str) -> FilePlan:
    first = next(f for e in later for f in e.files if f.path == rel)
    target = first.before
    _, left = manifest.last_after(rel)
    shown = display_path(rel)
    real = _confined(cp.workspace, rel)
    current, now = _current(real, shown)
    if target is not None:
        _check_blob(cp, target, shown)
    conflict, diff = None, ""
    if current != left:
        conflict = (
            f"{shown} was deleted since the agent last wrote it"
            if current is None
            else f"{shown} was created since the agent deleted it"
            if left is None
            else f"{shown} changed since the agent last wrote it"
        )
        diff = _diff(shown, _blob_or_empty(cp, left), now or b"")
    action: Literal["restore", "delete", "same"] = (
        "same" if current == target else "delete" if target is None else "restore"
    )
    return FilePlan(
        path=shown,
        rel=rel,
        action=action,
        target=target,
        current=current,
        conflict=conflict if action != "same" else None,
        diff=diff if action != "same" else "",
    )


def _check_blob(cp: SessionCheckpoints, sha: str, shown: str) -> None:
    try:
        cp.blob(sha)
    except CheckpointError as e:
        raise RewindError(f"cannot restore {shown}: {e}; nothing was changed") from None


def _blob_or_empty(cp: SessionCheckpoints, sha: str | None) -> bytes:
    if sha is None:
        return b""
    try:
        return cp.blob(sha)
    except CheckpointError:
        return b""


def _confined(workspace: str, rel: str) -> str:
    """The real path of ``rel`` in the workspace: its folder must be where it was (no symlink on
    the way) and it must not be in .git or a memory store (a manifest is untrusted)."""
    parts = [p.casefold() for p in rel.split(os.sep)]
    if any(p in _PROTECTED for p in parts) or tuple(parts[: len(_STORE_PARTS)]) == _STORE_PARTS:
        raise RewindError(f"{display_path(rel)} is not a file a rewind may write; nothing was changed")
    path = os.path.join(workspace, rel)
    parent = os.path.dirname(path)
    deepest = parent
    while not os.path.lexists(deepest) and deepest != workspace:
        deepest = os.path.dirname(deepest)
    if os.path.realpath(deepest) != deepest:
        raise RewindError(f"the folder of {display_path(rel)} is a symlink now; nothing was changed")
    return path


def _current(real: str, shown: str) -> tuple[str | None, bytes | None]:
    """The file's sha256 and bytes now (None: absent); a symlink or a non-file is refused."""
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        raise RewindError(f"{shown} is not a regular file now (a symlink, a folder?); nothing was changed")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = read_all(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise RewindError(f"cannot read {shown}: {e.strerror or e}; nothing was changed") from None
    return sha256(data), data


def _diff(shown: str, before: bytes, after: bytes) -> str:
    if b"\x00" in before[:8192] or b"\x00" in after[:8192]:
        return f"binary file {shown} differs\n"
    a = before.decode("utf-8", "replace").splitlines(keepends=True)
    b = after.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"{shown} (as the agent left it)", f"{shown} (now)"))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def conflict_line(plan: RewindPlan) -> str:
    """The one line a refused rewind says."""
    names = [f.path for f in plan.conflicts]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    what = (
        plan.conflicts[0].conflict
        if len(names) == 1
        else f"{len(names)} files changed since the agent last wrote them ({shown})"
    )
    return one_line(f"{what}; nothing was rewound (--force overwrites)", 400)


# -- applying it -----------------------------------------------------------------------------------


def apply_rewind(
    session: Session, store: CheckpointStore, plan: RewindPlan, *, force: bool = False
) -> RewindResult:
    """Do ``plan`` (planned again now: a file that changed since is caught). RewindError, and
    nothing changed, on a conflict unless ``force`` (a conflict the plan did not show is refused
    even then). The rewind is recorded as the session's next turn-like entry; the app then
    rebuilds its Runner from the session (``runtime.open_session(resume=session.id)``)."""
    fresh = plan_rewind(
        session, store, plan.to_turn, files=plan.restore_files, conversation=plan.conversation
    )
    shown = {(f.path, f.current) for f in plan.conflicts}
    if fresh.conflicts and (not force or any((f.path, f.current) not in shown for f in fresh.conflicts)):
        raise RewindError(conflict_line(fresh))
    cp = store.session(session.id, session.workspace)
    changes = fresh.changes
    data = {f.rel: cp.blob(f.target) for f in changes if f.target is not None}
    files: list[JsonValue] = [f.path for f in changes]
    forced: list[JsonValue] = [f.path for f in fresh.conflicts]
    what: JsonValue = {
        "to": fresh.to_turn,
        "files": files,
        "forced": forced,
        "conversation": fresh.conversation,
    }
    try:
        entry = session.record_rewind(
            describe(fresh.to_turn, fresh.restore_files, fresh.conversation),
            fresh.to_turn,
            fresh.state,
            rewind=what,
        )
    except SessionError as e:
        raise RewindError(str(e)) from None
    restored: list[str] = []
    deleted: list[str] = []
    for f in changes:
        real = os.path.join(cp.workspace, f.rel)
        try:
            cp.record_before(entry, real, restore_of=fresh.to_turn)
            _write_back(cp, real, data.get(f.rel), _mode_of(cp.manifest(), f))
            cp.record_after(entry, real, data.get(f.rel))
        except (OSError, CheckpointError) as e:
            raise RewindError(
                one_line(
                    f"{f.path}: {e}; the files before it in the list were rewound "
                    f"(rewind turn {entry} to undo them)",
                    400,
                )
            ) from None
        (restored if f.target is not None else deleted).append(f.path)
    return RewindResult(
        entry=entry, restored=tuple(restored), deleted=tuple(deleted), conversation=fresh.conversation
    )


def _mode_of(manifest: Manifest, f: FilePlan) -> int:
    """The permission bits to give a restored file: the checkpoint's, else a plain file's."""
    for e in manifest.entries:
        c = e.change(f.rel)
        if c is not None and c.before == f.target and c.mode is not None:
            return c.mode
    return 0o644


def _write_back(cp: SessionCheckpoints, real: str, data: bytes | None, mode: int) -> None:
    """Put ``data`` at ``real`` (None: remove it) atomically, never through a symlink."""
    path = Path(real)
    if data is None:
        cp.fs.unlink(path)
        with contextlib.suppress(OSError):
            cp.fs.fsync_dir(path.parent)
        return
    cp.fs.makedirs(path.parent)
    with contextlib.suppress(FileNotFoundError):
        st = cp.fs.lstat(path)
        if stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode)  # a mode changed by hand since stays
    cp.fs.atomic_write(path, data, mode)
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, mode)  # the umask masked the create's mode
    finally:
        os.close(fd)


# -- memory: said, never rewound ---------------------------------------------------------------------


def memory_batches(workspace: Path, job_ids: Iterable[str], home: Path | None = None) -> dict[str, list[str]]:
    """job id -> the txids of the memory batches that applied it (memory is never rewound: the
    person can undo those with ``memory undo``); a job not applied yet has none."""
    wanted = set(job_ids)
    if not wanted:
        return {}
    # The stores only for a rewind that names jobs: listing turns never needs them.
    from memory.store.stores import MemoryStores

    out: dict[str, list[str]] = {j: [] for j in wanted}
    with contextlib.suppress(OSError, ValueError):
        for entry in MemoryStores(workspace, home).history():
            for j in {*entry.jobs, *entry.took_over}:  # a coalescing job's batch names the ones it took over
                if j in out and entry.txid:
                    out[j].append(entry.txid)
    return out
