"""Rewind for the app: the open session's turns with what each changed, a rewind's preview, the
rewind itself, and the memory batches of the rewound turns (memory is never rewound; the person
may undo those batches too). Plain data in and out; every read and write runs off the event loop
over app/agent/undo/rewind.py and app/agent/undo/checkpoints.py.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from app.agent.conversation.session_log import SessionError, open_nofollow, read_all
from app.agent.undo.checkpoints import CheckpointError, FileChange, SessionCheckpoints
from app.agent.undo.rewind import (
    RewindError,
    RewindPlan,
    RewindResult,
    TurnLine,
    apply_rewind,
    display_path,
    list_turns,
    plan_rewind,
)
from memory.store.history import UndoError, undoable
from memory.store.transaction import TransactionError
from memory.text.lines import one_line

if TYPE_CHECKING:
    from app.agent.conversation.blocks import Message
    from app.agent.conversation.session import Session
    from app.agent.runtime import Runtime
    from app.agent.turn.runner import Runner
    from app.services.cards import CardsService
    from memory.model import HistoryEntry

__all__ = [
    "FileAction",
    "FileStat",
    "MemoryBatch",
    "RewindDone",
    "RewindPreview",
    "RewindProblem",
    "RewindService",
    "TurnRow",
    "typed_prompt",
]

COUNT_MAX_BYTES = 1 << 20  # a file's +/- lines are counted up to this size (difflib is quadratic at worst)
ATTACHED = '\n\n<attached-file path="'  # what the app appends to a prompt for each @path
T = TypeVar("T")
_PROBLEMS = (RewindError, CheckpointError, SessionError, UndoError, TransactionError, OSError, ValueError)


class RewindProblem(Exception):
    """Why the view cannot list, plan, rewind or undo, in one line (nothing was changed unless said)."""


@dataclass(frozen=True)
class FileStat:
    """A file a turn changed, with its lines added and removed (None: not counted: binary, large,
    or its checkpoint is gone)."""

    path: str
    added: int | None = None
    removed: int | None = None


@dataclass(frozen=True)
class TurnRow:
    """One turn (or rewind entry) of the session as the view lists it."""

    turn: int
    time: str
    text: str
    kind: Literal["turn", "rewind"]
    files: tuple[FileStat, ...]
    bash: bool
    in_conversation: bool
    rewound: bool
    status: str


@dataclass(frozen=True)
class FileAction:
    """What a rewind does to one file: restore, delete or nothing (same); a conflict's reason and diff."""

    path: str
    action: Literal["restore", "delete", "same"]
    conflict: str | None
    diff: str


@dataclass(frozen=True)
class MemoryBatch:
    """A memory batch a rewound turn's job produced: its txid, the turn, whether it was undone
    already and how many card changes it made (0: nothing an undo could revert)."""

    txid: str
    turn: int
    undone: bool
    changes: int


@dataclass(frozen=True)
class RewindPreview:
    """What rewinding to before ``to_turn`` would do (files, conversation and memory), for the view."""

    to_turn: int
    kind: Literal["turn", "rewind"]
    text: str  # the turn's first line
    prompt: str  # its prompt as typed: back into the input after a conversation rewind
    files: tuple[FileAction, ...]
    rewound: tuple[int, ...]
    bash_turns: tuple[int, ...]
    batches: tuple[MemoryBatch, ...]
    unapplied: tuple[int, ...]  # rewound turns whose memory job has no batch yet
    plan: RewindPlan = field(repr=False, compare=False)

    @property
    def conflicts(self) -> tuple[FileAction, ...]:
        return tuple(f for f in self.files if f.conflict is not None)

    @property
    def changes(self) -> tuple[FileAction, ...]:
        return tuple(f for f in self.files if f.action != "same")

    @property
    def undoable(self) -> tuple[str, ...]:
        """The txids the memory key would undo, oldest first."""
        return tuple(b.txid for b in self.batches if not b.undone and b.changes)


@dataclass(frozen=True)
class RewindDone:
    """What a rewind did, and the lines that say it."""

    entry: int
    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    conversation: bool
    lines: tuple[str, ...]


def typed_prompt(text: str) -> str:
    """A turn's prompt as the person typed it: the files ``@path`` attached are cut off."""
    at = text.find(ATTACHED)
    return text[:at] if at >= 0 else text


def span(turns: Iterable[int]) -> str:
    """``turn 3`` or ``turns 3–5`` (or ``turns 1, 4``)."""
    ns = sorted(set(turns))
    if len(ns) == 1:
        return f"turn {ns[0]}"
    if ns == list(range(ns[0], ns[-1] + 1)):
        return f"turns {ns[0]}–{ns[-1]}"
    return "turns " + ", ".join(str(n) for n in ns)


class RewindService:
    """The open session's rewind, over ``rt`` (its session, checkpoints and stores) and ``cards``
    (the memory undo the card browser and ``/undo`` use)."""

    def __init__(self, rt: Runtime, cards: CardsService) -> None:
        self._rt = rt
        self._cards = cards

    def _session(self) -> Session:
        session = self._rt.session
        if session is None:
            raise RewindProblem("no session is open yet")
        return session

    def _checkpoints(self, session: Session) -> SessionCheckpoints:
        return self._rt.checkpoints.session(session.id, session.workspace)

    # -- the list ----------------------------------------------------------------------------

    async def turns(self) -> list[TurnRow]:
        """The session's turns, newest first, each with the files it changed (+/- lines)."""
        session = self._session()
        return await _off_loop(lambda: self._rows(session))

    def _rows(self, session: Session) -> list[TurnRow]:
        cp = self._checkpoints(session)
        lines = list_turns(session.path, cp)
        try:
            manifest = cp.manifest()
        except CheckpointError:
            manifest = None  # list_turns said it already, or it went bad since: no counts
        rows = []
        for t in reversed(lines):
            entry = manifest.entry(t.turn) if manifest is not None else None
            changed = [f for f in entry.files if f.before != f.after] if entry is not None else []
            stats = tuple(_stat(cp, f) for f in changed) if changed else tuple(FileStat(p) for p in t.files)
            rows.append(_row(t, stats))
        return rows

    # -- a preview, then the rewind ---------------------------------------------------------------

    async def preview(self, turn: int) -> RewindPreview:
        """What rewinding files and conversation to before ``turn`` would do (nothing is changed)."""
        session = self._session()
        return await _off_loop(lambda: self._preview(session, turn))

    def _preview(self, session: Session, turn: int) -> RewindPreview:
        plan = plan_rewind(session, self._rt.checkpoints, turn, files=True, conversation=True)
        line = next((t for t in list_turns(session.path, None) if t.turn == turn), None)
        jobs = dict(plan.jobs)
        batches, applied = self._batches(jobs)
        files = tuple(FileAction(f.path, f.action, f.conflict, f.diff) for f in plan.files)
        return RewindPreview(
            to_turn=turn,
            kind=line.kind if line is not None else "turn",
            text=line.text if line is not None else "",
            prompt=typed_prompt(_prompt_of(session.path, turn)),
            files=files,
            rewound=plan.rewound,
            bash_turns=plan.bash_turns,
            batches=batches,
            unapplied=tuple(n for n in jobs if n not in applied),
            plan=plan,
        )

    def _batches(self, jobs: dict[int, str]) -> tuple[tuple[MemoryBatch, ...], set[int]]:
        """The memory batches that applied ``jobs`` (turn -> job id), oldest first, and the turns
        whose job one of them applied (itself, or coalesced into another's)."""
        if not jobs:
            return (), set()
        turn_of = {job: n for n, job in jobs.items()}
        out, applied = [], set()
        for e in self._rt.stores.history():
            if e.kind == "undo":
                continue
            turns = [turn_of[j] for j in (*e.jobs, *e.took_over) if j in turn_of]
            if turns and e.txid:
                out.append(MemoryBatch(e.txid, min(turns), bool(e.undone_by), len(e.changes)))
                applied.update(turns)
        return tuple(out), applied

    async def rewind(
        self, preview: RewindPreview, *, files: bool, conversation: bool, force: bool = False
    ) -> RewindDone:
        """Rewind as previewed: the files (``force``: over the conflicts the preview showed, never
        over one it did not), the conversation, or both. The conversation's rewind is in the open
        session at once; the caller then rebuilds the Runner (:meth:`reopen`)."""
        if not files and not conversation:
            raise RewindProblem("nothing to rewind: choose the files, the conversation, or both")
        session = self._session()
        plan = replace(
            preview.plan,
            restore_files=files,
            conversation=conversation,
            files=preview.plan.files if files else (),
        )
        result = await _off_loop(lambda: apply_rewind(session, self._rt.checkpoints, plan, force=force))
        return RewindDone(
            entry=result.entry,
            restored=result.restored,
            deleted=result.deleted,
            conversation=result.conversation,
            lines=tuple(report(preview, result, files)),
        )

    async def reopen(self) -> list[Message]:
        """The Runner rebuilt from the open session (its conversation as the log now says, the
        rewound turns left out), as ``/resume`` opens one; returns the messages to draw."""
        session = self._session()
        runner: Runner | None = self._rt.runner  # None before the first session
        if runner is not None and runner.running:
            raise RewindProblem("a turn is running: the conversation was rewound; it takes effect after it")
        try:
            await self._rt.open_session(resume=session.id)
        except (ValueError, RuntimeError) as e:
            raise RewindProblem(one_line(e, 400)) from None
        reopened = self._rt.session
        return list(reopened.messages) if reopened is not None else []

    # -- memory: never rewound, but undoable here ------------------------------------------------

    async def undo_batches(self, txids: tuple[str, ...]) -> str:
        """Undo exactly ``txids`` (oldest first as given), newest first; refused, with nothing
        undone, when another batch came after them. The line that says what happened."""
        if not txids:
            raise RewindProblem("no memory batch of these turns is left to undo")
        entries: list[HistoryEntry] = await _off_loop(self._rt.stores.history)
        live = [e.txid for e in undoable(entries)]
        wanted = [t for t in live if t in set(txids)]
        if not wanted:
            raise RewindProblem("their memory batches were undone already")
        after = [t for t in live[live.index(wanted[0]) :] if t not in set(wanted)]
        if after:
            raise RewindProblem(
                f"memory not undone: batch {after[-1]} came after them "
                f"(undo it first with /undo, or keep memory as it is)"
            )
        done: list[str] = []
        for txid in reversed(wanted):
            try:
                await self._cards.undo(expect=txid)
            except _PROBLEMS as e:
                said = f" (undone: {', '.join(done)})" if done else ""
                raise RewindProblem(one_line(f"memory batch {txid} not undone: {e}{said}", 400)) from None
            done.append(txid)
        return f"undid memory batch{'es' if len(done) != 1 else ''} {', '.join(done)}"


def report(preview: RewindPreview, result: RewindResult, files: bool) -> list[str]:
    """What a rewind did, a line each: files, conversation, bash, memory, how to undo it."""
    out = [f"restored {p}" for p in result.restored] + [f"deleted {p}" for p in result.deleted]
    if files and not result.restored and not result.deleted:
        out.append("files: nothing to restore")
    if result.conversation:
        out.append(
            f"conversation: back to before turn {preview.to_turn} ({span(preview.rewound)} "
            "left out of the next request)"
        )
    if files:
        out += [f"turn {n} ran bash: files it changed are not restored" for n in preview.bash_turns]
    live = preview.undoable
    if live:
        out.append(
            f"memory is not rewound: batch{'es' if len(live) != 1 else ''} {', '.join(live)} stay "
            f"(/rewind, turn {preview.to_turn}: m undoes them)"
        )
    out.append(f"recorded as turn {result.entry}: /rewind of it undoes this rewind")
    return out


async def _off_loop(fn: Callable[[], T]) -> T:
    try:
        return await asyncio.to_thread(fn)
    except RewindProblem:
        raise
    except _PROBLEMS as e:
        raise RewindProblem(one_line(e, 400)) from None


def _row(t: TurnLine, stats: tuple[FileStat, ...]) -> TurnRow:
    return TurnRow(
        turn=t.turn,
        time=t.time,
        text=t.text,
        kind=t.kind,
        files=stats,
        bash=t.bash,
        in_conversation=t.in_conversation,
        rewound=t.rewound,
        status=t.status,
    )


def _stat(cp: SessionCheckpoints, f: FileChange) -> FileStat:
    """The file's lines added and removed by the entry (from its checkpoints, before -> after)."""
    path = display_path(f.path)
    try:
        before = cp.blob(f.before) if f.before is not None else b""
        after = cp.blob(f.after) if f.after is not None else b""
    except CheckpointError:
        return FileStat(path)
    if len(before) + len(after) > COUNT_MAX_BYTES or b"\x00" in before[:8192] or b"\x00" in after[:8192]:
        return FileStat(path)
    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return FileStat(path, added, removed)


def _prompt_of(path: Path, turn: int) -> str:
    """The whole text of turn ``turn``'s turn_start record ("" when there is none)."""
    fd = open_nofollow(path, os.O_RDONLY)
    try:
        data = read_all(fd)
    finally:
        os.close(fd)
    seen = 0
    for raw in data.split(b"\n"):
        if not raw.startswith(b'{"type":"turn_start"'):
            continue
        seen += 1
        if seen == turn:
            try:
                rec = json.loads(raw)
            except ValueError:
                return ""
            text = rec.get("text") if isinstance(rec, dict) else None
            return text if isinstance(text, str) and rec.get("kind") != "rewind" else ""
    return ""
