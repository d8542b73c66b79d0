"""Sessions: one JSONL file per conversation under ``$PSEUDOCLAUDE_HOME/sessions/``.

The file's format and its replay are in app/agent/conversation/session_log.py; the rules that keep
the conversation valid in app/agent/conversation/messages.py; the store that creates, lists and
restores sessions in app/agent/conversation/session_store.py. This module is the live side: a
session being written.

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
import os
import secrets
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import JsonValue

from app.agent.conversation.blocks import Message, encodable, parse_message, scrub_text
from app.agent.conversation.messages import TurnMark, drop_turn, push_message, turn_closing
from app.agent.conversation.records import (
    CompactionAt,
    CompactionRecord,
    MessageRecord,
    OffloadRecord,
    RewindRecord,
    TodosRecord,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    dumps,
)
from app.agent.conversation.session_images import SessionImages, referenced, relabel
from app.agent.conversation.session_log import CompactionMark, SessionError, read_all, title_of, todos_before
from app.agent.conversation.todos import TodoList


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_session_id() -> str:
    """Sortable by creation time: ``20261130T043246Z-1a2b3c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


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
        messages: list[Message] | None = None,
        warnings: list[str] | None = None,
        turns: int = 0,
        lines: int = 1,
        title: str = "",
        images: SessionImages | None = None,
    ) -> None:
        self.id = id
        self.path = path
        self.workspace = workspace
        self.created = created
        self.model = model
        self.messages: list[Message] = messages if messages is not None else []
        self.warnings: list[str] = warnings if warnings is not None else []
        self.turns = turns  # turns begun so far (the last begin_turn's number)
        self.title = title
        self.turn_start = len(self.messages)  # where the current turn's messages begin
        # Its images, kept once each beside the file (the file holds references to them).
        self.images = images if images is not None else SessionImages.beside(path)
        self._fd: int | None = fd
        self._lines = lines
        self._lock = threading.RLock()
        self._needs_newline = False
        self._mark: TurnMark | None = None
        # Long sessions (compaction.py): the last usage anchor (input tokens reported for a request,
        # and the characters of the messages it carried) and the summary of the part of the
        # conversation that was compacted (it goes in the system prompt).
        self.anchor: tuple[int, int] | None = None
        self.summary: str | None = None
        self.compactions = 0
        # Restored from a log with compaction boundaries: the most recent messages before them,
        # each boundary followed by its marker (display only; never sent), and how many older ones
        # were left out of it.
        self.earlier: list[Message | CompactionMark] = []
        self.earlier_left_out = 0
        # The to-do list (``todo_write``): session state, written as it changes, restored on replay.
        self.todos = TodoList()

    @property
    def results_dir(self) -> Path:
        """Where this session's offloaded tool results are kept: ``sessions/<id>/results/``."""
        return self.path.with_suffix("") / "results"

    # -- writing ---------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add a message (a copy of it, scrubbed) and write it as one line at once.

        Raises :class:`SessionError` if the file cannot be written (the message is then kept in
        ``messages`` all the same, so the conversation goes on).
        """
        self._append(message)

    def append_at(self, message: Message) -> int:
        """``append``, and where the message landed: the index of the message holding it (a user
        message may join a trailing user message, before the turn's start)."""
        before = self.turn_start
        self._append(message)
        index = len(self.messages) - 1
        return min(index, self.turn_start) if self.turn_start < before else index

    def open_turn(self, text: str, message: Message) -> int:
        """``begin_turn`` and the turn's user message (``append_at``), in one call: one trip to
        the thread the session's file is written from, before the answer's request can go out."""
        self.begin_turn(text)
        return self.append_at(message)

    def _append(self, message: Message, repair: str | None = None) -> None:
        with self._lock:
            self._check_open()
            # The conversation keeps a copy. The file holds what can be sent again: a lone surrogate
            # that got past where text entered is scrubbed here, as a replay of the file would.
            snapshot: Message | None = message.model_copy(deep=True)
            notes: list[str] = []
            if not encodable(message):
                snapshot, notes = parse_message(message.model_dump(mode="json"))
                if snapshot is not None:
                    relabel(message, snapshot)  # read back from JSON: its images' names and sizes
            if snapshot is None:  # pragma: no cover - a Message always reads back
                raise ValueError("a session message needs role 'user' or 'assistant'")
            line = dumps(MessageRecord(message=self.images.dump(snapshot), repair=repair))
            self._lines += 1
            index, pushed = push_message(self.messages, snapshot)
            self.warnings += [f"{self.path.name}:{self._lines}: {n}" for n in notes + pushed]
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
            self._write(dumps(TurnStartRecord(turn=self.turns, time=now_rfc3339(), text=user_text)))
            return self.turns

    def end_turn(self, status: str, memory: dict[str, list[str]] | None = None, **info: JsonValue) -> bool:
        """Mark the end of the current turn (``completed``, ``error``, ``cancelled``,
        ``max_iterations``, …) with optional JSON ``info`` and the turn's memory receipt, and fsync
        the file.

        The turn is closed by :func:`turn_closing`'s rules (``info["message"]`` is the reason):
        calls without a result get ``[interrupted]`` results; a failed turn without any complete
        response is dropped from ``messages`` (``"dropped": true`` in the log, which keeps it);
        any other unfinished turn gets the app's note that it was interrupted. Returns whether
        the turn was dropped.
        """
        with self._lock:
            self._check_open()
            mark = self._mark or TurnMark(self.messages[: self.turn_start])
            reason = info.get("message")
            closing, drop = turn_closing(
                self.messages, mark, status, reason if isinstance(reason, str) else ""
            )
            for m in closing:
                self._append(m, repair="interrupted")
            record = TurnEndRecord.model_validate(
                {
                    **info,
                    "turn": self.turns,
                    "status": status,
                    "time": now_rfc3339(),
                    "dropped": drop or None,
                    "memory": memory,
                }
            )
            if drop:
                drop_turn(self.messages, mark)
                self.turn_start = len(self.messages)
            self._mark = None
            self._lines += 1
            self._write(dumps(record))
            self._fsync()
            return drop

    def record_usage(self, tokens: int, chars: int) -> None:
        """Keep the usage anchor of the request just answered (in the log too: a ``--continue`` in a
        new process decides from it)."""
        with self._lock:
            self._check_open()
            self.anchor = (int(tokens), int(chars))
            self._lines += 1
            self._write(dumps(UsageRecord(tokens=int(tokens), chars=int(chars))))

    def record_offloads(self, replaced: list[tuple[str, str]]) -> None:
        """Tool results already in ``messages`` that were moved to disk: each is replaced by its stub
        (the caller changed ``messages`` already; this records it so a replay does the same)."""
        with self._lock:
            self._check_open()
            for tool_use_id, stub in replaced:
                self._lines += 1
                self._write(dumps(OffloadRecord(tool_use_id=tool_use_id, content=scrub_text(stub))))

    def record_todos(self, todos: TodoList) -> None:
        """The to-do list replaced (``todo_write``), in the log at once: a restored session has it."""
        with self._lock:
            self._check_open()
            self._lines += 1
            self._write(dumps(TodosRecord(todos=todos.dump())))
            self.todos = todos

    def compact(self, summary: str, messages: list[Message], turn_start: int | None, **info: int) -> None:
        """Replace the conversation by its compacted form: ``summary`` (for the system prompt) and
        the verbatim ``messages`` that follow it. ``turn_start``: where the turn in progress begins in
        ``messages`` (None between turns). The log keeps everything before; this record is the
        boundary a replay starts again from. Synced."""
        with self._lock:
            self._check_open()
            raw: list[JsonValue] = [self.images.dump(m) for m in messages]
            # ``at``: what the lines before this one add up to, so a replay without history
            # (session_log.replay_tail) reads the file from here on only.
            at = CompactionAt(
                line=self._lines + 1,
                turns=self.turns,
                compactions=self.compactions,
                open=self._mark is not None,
            )
            record = CompactionRecord.model_validate(
                {
                    "time": now_rfc3339(),
                    "summary": scrub_text(summary),
                    "turn_start": turn_start,
                    "messages": raw,
                    **info,
                    "at": at,
                    "todos": self.todos.dump() or None,
                }
            )
            line = dumps(record)
            self.messages[:] = _copied(messages)
            self.summary = record.summary
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
        self, text: str, to_turn: int, state: tuple[list[Message], str | None] | None, **info: JsonValue
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
                dumps(TurnStartRecord(turn=n, time=now, text=scrub_text(text), kind="rewind")),
                dumps(TurnEndRecord.model_validate({"turn": n, "status": "rewind", "time": now, **info})),
            ]
            raw: list[JsonValue] = []
            todos = self._todos_before(to_turn) if state is not None else self.todos
            if state is not None:
                raw = [self.images.dump(m) for m in state[0]]
                summary = scrub_text(state[1]) if state[1] else None
                record = RewindRecord(
                    turn=n, to=to_turn, time=now, summary=summary, messages=raw, todos=todos.dump()
                )
                lines.append(dumps(record))
            self._write("\n".join(lines))
            self.turns, self._lines = n, self._lines + len(lines)
            if state is not None:
                self.messages[:] = _copied(state[0])
                self.summary, self.anchor = (scrub_text(state[1]) if state[1] else None), None
                self.todos = todos
            self.turn_start = len(self.messages)
            self._fsync()
            if state is not None:
                self._drop_rewound_images(to_turn, lines[-1])
            return n

    def _todos_before(self, turn: int) -> TodoList:
        """The to-do list as it was when ``turn`` began, read from the log (a conversation rewound
        to before the turn that set a list has the list of then)."""
        assert self._fd is not None
        try:
            return todos_before(read_all(self._fd), turn)
        except OSError as e:
            raise SessionError(f"cannot read session file {self.path}: {e.strerror or e}") from None

    def _drop_rewound_images(self, turn: int, rewind_line: str) -> None:
        """After the conversation went back to before ``turn``: the images only that turn and
        those after it referred to are deleted (the lines before it, and the rewind's own, keep
        theirs). A rewind never fails for this."""
        assert self._fd is not None
        if not self.images.kept():
            return
        try:
            data = read_all(self._fd)
        except OSError:
            return
        at = _turn_start_at(data, turn)
        if at is None:
            return
        keep = referenced(data[:at]) | referenced(rewind_line.encode("ascii"))
        self.images.prune(keep)

    def transcript(self) -> list[Message | CompactionMark]:
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


def _turn_start_at(data: bytes, turn: int) -> int | None:
    """Where the ``turn``-th turn_start line of a log begins (None: it has fewer turns)."""
    pos = 0
    for _ in range(turn):
        pos = data.find(b'\n{"type":"turn_start"', pos) + 1
        if pos == 0:
            return None
    return pos


def _copied(messages: list[Message]) -> list[Message]:
    """A copy of ``messages`` by the rules a replay applies, so the file replays to exactly it."""
    conv: list[Message] = []
    for m in messages:
        push_message(conv, m.model_copy(deep=True))
    return conv
