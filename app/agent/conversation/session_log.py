"""The session log's format, and reading it back.

One JSON object per line, ASCII only (``\\n`` is the only line separator)::

    {"type":"meta","version":1,"id":...,"workspace":...,"created":...,"model":...}   # always line 1
    {"type":"turn_start","turn":1,"time":...,"text":"<the user's words>"}
    {"type":"message","message":{"role":"user","content":...}}                    # as the turn goes
    {"type":"message","message":{...},"repair":"interrupted"}                     # written by us
    {"type":"turn_end","turn":1,"status":"completed","time":...,...,
     "memory":{"shown":["project/a.md",...],"read":[...],"stale":[...]}}      # the turn's receipt
    {"type":"turn_end","turn":2,"status":"error","message":...,"dropped":true}   # left out on replay
    {"type":"usage","tokens":N,"chars":C}          # the usage anchor of a request (compaction.py)
    {"type":"offload","tool_use_id":...,"content":"<stub>"}   # a result moved to sessions/<id>/results/
    {"type":"compaction","summary":...,"turn_start":k,"messages":[...]}   # a boundary: replay goes on from it
    {"type":"turn_start","turn":5,...,"kind":"rewind"} {"type":"turn_end","turn":5,"status":"rewind",...}
    {"type":"rewind","turn":5,"to":2,"summary":...,"messages":[...],"todos":[...]}   # back to before turn 2
    {"type":"todos","todos":[{"content":...,"status":"in_progress","active_form":...},...]}  # todo_write

The records are typed in app/agent/conversation/records.py. Replaying a file pushes every message
through the conversation rules (app/agent/conversation/messages.py), so it gives exactly the
conversation that was sent. Files written before the turn rules (an ``[error: …]`` assistant
message) are repaired the same way; text content (a str) reads as one text block. A compaction
boundary replaces the conversation by its compacted form; of the messages before it the last
:data:`EARLIER_KEPT` are kept for the person to read (with a marker per boundary). An incomplete
last line (a write cut by a crash) is dropped and cut off the file by the caller.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, JsonValue

from app.agent.conversation.blocks import Message, TextBlock, parse_message, scrub_text
from app.agent.conversation.messages import (
    ANSWERED,
    TurnMark,
    drop_turn,
    push_message,
    replace_result,
    turn_closing,
)
from app.agent.conversation.records import (
    CompactionRecord,
    MessageRecord,
    MetaRecord,
    OffloadRecord,
    Record,
    RewindRecord,
    TodosRecord,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    parse_record,
)
from app.agent.conversation.session_images import SessionImages
from app.agent.conversation.todos import TodoList
from memory.constants import UPDATE_TAG
from memory.text.lines import one_line

SESSION_VERSION = 1
_BOUNDARY = b'\n{"type":"compaction"'  # a compaction line's start (``dumps`` writes ``type`` first)
TITLE_MAX = 80
SUFFIX = ".jsonl"
ID_CHARS = re.compile(r"^[0-9A-Za-z_-]+$")
_MEMORY_UPDATE = re.compile(rf"<{UPDATE_TAG}>.*?</{UPDATE_TAG}>", re.DOTALL)
HEADER_MAX = 1 << 16
READ_BACK = 1 << 20  # how much a read from the last compaction boundary steps back at a time
# Of the messages before a restored session's compaction boundaries, this many (the most recent)
# are kept for the chat to show; the rest are counted (the log keeps them all).
EARLIER_KEPT = 200


class CompactionMark(BaseModel):
    """In ``Session.earlier``: a compaction boundary (when, and how many messages it summarised)."""

    time: str
    summarised: int


class SessionError(Exception):
    """A session problem; ``str(err)`` is one line saying what and why."""


def title_of(text: str) -> str:
    """A session's title from the person's words: one line, at most ``TITLE_MAX`` characters."""
    return one_line(text, TITLE_MAX)


def title_from_message(message: Message | None) -> str:
    """A title from a user message's first text (older files without a turn_start)."""
    if message is None or message.role != "user":
        return ""
    for b in message.content:
        if isinstance(b, TextBlock):
            title = title_of(_MEMORY_UPDATE.sub(" ", b.text))
            if title:
                return title
    return ""


def _message_of(value: JsonValue) -> Message | None:
    return parse_message(value)[0]


def open_nofollow(path: Path, flags: int) -> int:
    """Open without following a symlink, without blocking on a FIFO; regular files only."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise SessionError(f"{path}: is a symlink, refusing to open it") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SessionError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _pread(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_from_boundary(fd: int) -> tuple[int, bytes]:
    """The file from the line of its last complete compaction boundary on, with that line's
    offset, read backwards a MiB at a time; ``(0, the whole file)`` without one."""
    pos = os.fstat(fd).st_size
    buf = b""
    while pos > 0:
        step = min(pos, READ_BACK)
        pos -= step
        buf = _pread(fd, step, pos) + buf
        end = buf.rfind(b"\n")  # a boundary counts once its line is whole
        at = buf.rfind(_BOUNDARY, 0, end)
        if at >= 0:
            return pos + at + 1, buf[at + 1 :]
    return 0, buf


def read_header(path: Path) -> tuple[MetaRecord | None, os.stat_result | None]:
    """The meta record of a session file (None if unreadable) and the file's stat."""
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except (OSError, SessionError):
        return None, None
    try:
        st = os.fstat(fd)
        head = os.pread(fd, HEADER_MAX, 0)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    return meta_of(head), st


def meta_of(head: bytes) -> MetaRecord | None:
    """The meta record on the first line of ``head``, if it is one with a workspace."""
    rec = _decode(head.split(b"\n", 1)[0])
    return rec if isinstance(rec, MetaRecord) and rec.workspace is not None else None


def _decode(raw: bytes) -> Record | None:
    try:
        return parse_record(json.loads(raw))
    except ValueError:
        return None


def same_workspace(stored: str, want: str) -> bool:
    return stored == want or os.path.realpath(stored) == want


def mtime_rfc3339(st: os.stat_result) -> str:
    return datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# What versions before the turn rules wrote as the *assistant's* last words of a failed turn.
_LEGACY_MARKER = re.compile(
    r"^\[(?:error|max_iterations|cancelled|stopped|interrupted)(?::.*)?\]$", re.DOTALL
)


def _replay_turn_end(conv: list[Message], mark: TurnMark, rec: TurnEndRecord) -> list[str]:
    """Apply a turn_end record on replay: a dropped turn leaves; an old-format error marker goes."""
    if rec.dropped is True:
        drop_turn(conv, mark)
        return []
    status = rec.status
    if status is None or status in ANSWERED or not conv or len(conv) <= mark.start:
        return []
    last = conv[-1]
    if last.role != "assistant" or len(last.content) != 1 or not isinstance(last.content[0], TextBlock):
        return []
    if not _LEGACY_MARKER.match(last.content[0].text):
        return []
    # An old session stored the error as the model's own answer: take it back out and close the
    # turn by today's rules instead.
    conv.pop()
    closing, drop = turn_closing(conv, mark, status, rec.message or "")
    if drop:
        drop_turn(conv, mark)
        return ["left a failed turn out of the conversation (it stays in the file)"]
    for m in closing:
        push_message(conv, m)
    return ["an error stored as the model's answer was replaced by the app's note"]


def _lines(data: bytes, start: int, end: int) -> Iterator[bytes]:
    """The lines of ``data[start:end]`` (an unterminated last one too), split as they are read."""
    while start < end:
        stop = data.find(b"\n", start, end)
        if stop < 0:
            stop = end
        yield data[start:stop]
        start = stop + 1


def _count_records(data: bytes, kind: bytes) -> int:
    """How many lines begin as a ``kind`` record (``dumps`` writes ``type`` first), at byte-search speed."""
    prefix = b'{"type":"' + kind + b'"'
    return data.count(b"\n" + prefix) + data.startswith(prefix)


def _head_title(data: bytes, end: int, scrub: bool) -> tuple[str, str]:
    """The title (the first turn_start's words) and the fallback (the first user message's) from
    the lines before ``end``, parsing only those lines and stopping at the first title."""
    title, fallback = "", ""
    for raw in _lines(data, 0, end):
        if raw.startswith(b'{"type":"turn_start"'):
            rec = _decode(raw)
            if isinstance(rec, TurnStartRecord) and rec.text is not None:
                title = title_of(scrub_text(rec.text) if scrub else rec.text)
            if title:
                break
        elif not fallback and raw.startswith(b'{"type":"message"'):
            rec = _decode(raw)
            if isinstance(rec, MessageRecord):
                fallback = title_from_message(_message_of(rec.message))
    return title, fallback


def prompted(path: Path) -> bool:
    """Whether the person sent anything in the session (it has a turn or a title): its first
    bytes tell at once (the first turn begins on line 2); only when they do not, all of it."""
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except (OSError, SessionError):
        return False
    try:
        head = os.pread(fd, HEADER_MAX, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    if b'\n{"type":"turn_start"' in head:
        return True
    title, turns = scan(path)
    return turns > 0 or bool(title)


def scan(path: Path) -> tuple[str, int]:
    """A session file's title and number of turns, parsing only the lines the title needs."""
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except (OSError, SessionError):
        return "", 0
    try:
        data = read_all(fd)
    except OSError:
        return "", 0
    finally:
        os.close(fd)
    title, fallback = _head_title(data, len(data), scrub=False)
    return title or fallback, _count_records(data, b"turn_start")


def conversation_of(raw: list[JsonValue], images: SessionImages | None = None) -> list[Message]:
    """A record's messages as a valid conversation (the rules applied as on any replay), their
    images read back from ``images``."""
    conv: list[Message] = []
    for value in raw:
        message = _message_of(value)
        if message is not None:
            push_message(conv, images.resolve(message) if images is not None else message)
    return conv


@dataclass
class Replayed:
    """What a session file replays to. ``mark``: the turn still open at the end (a crash cut it);
    ``partial``: the last line is complete but unterminated; ``cut``: bytes of an incomplete last
    line to cut off the file; ``images``: where the session's images are read back from (None:
    references stay unread)."""

    name: str
    images: SessionImages | None = None
    meta: MetaRecord | None = None
    conv: list[Message] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    turns: int = 0
    title: str = ""
    fallback: str = ""
    mark: TurnMark | None = None
    anchor: tuple[int, int] | None = None
    summary: str | None = None
    compactions: int = 0
    earlier: list[Message | CompactionMark] = field(default_factory=list)
    earlier_left_out: int = 0
    lines: int = 0
    partial: bool = False
    cut: int = 0
    todos: TodoList = field(default_factory=TodoList)  # the to-do list, as last written

    def warn(self, lineno: int, notes: list[str]) -> None:
        self.warnings += [f"{self.name}:{lineno}: {n}" for n in notes]

    def record(self, lineno: int, rec: Record) -> None:
        if isinstance(rec, MetaRecord):
            if lineno == 1:
                self.meta = rec
        elif isinstance(rec, TurnStartRecord):
            self.turns += 1
            if self.mark is not None:  # the turn before never ended (a crash, in an old file)
                self.warn(lineno, _replay_turn_end(self.conv, self.mark, TurnEndRecord(status="crashed")))
            self.mark = TurnMark(self.conv)
            if not self.title and rec.text is not None:
                self.title = title_of(scrub_text(rec.text))
        elif isinstance(rec, TurnEndRecord):
            if self.mark is not None:
                self.warn(lineno, _replay_turn_end(self.conv, self.mark, rec))
            self.mark = None
        elif isinstance(rec, MessageRecord):
            self.message(lineno, rec)
        elif isinstance(rec, UsageRecord):
            if rec.tokens is not None and rec.chars is not None:
                self.anchor = (rec.tokens, rec.chars)
        elif isinstance(rec, OffloadRecord):
            if rec.tool_use_id is not None and rec.content is not None:
                replace_result(self.conv, rec.tool_use_id, scrub_text(rec.content))
        elif isinstance(rec, CompactionRecord) and rec.messages is not None:
            self.compaction(rec, rec.messages)
        elif isinstance(rec, RewindRecord) and rec.messages is not None:
            # A rewind (app/agent/undo/rewind.py): the conversation as it was before an earlier turn.
            self.conv = conversation_of(rec.messages, self.images)
            self.summary = scrub_text(rec.summary) if rec.summary else None
            self.anchor = None
            self.todos = _todos(rec.todos, self.todos)
        elif isinstance(rec, TodosRecord):
            self.todos = _todos(rec.todos, self.todos)
        # meta elsewhere and unknown record types carry no conversation

    def message(self, lineno: int, rec: MessageRecord) -> None:
        message, notes = parse_message(rec.message)
        if not self.fallback:
            self.fallback = title_from_message(message)
        if message is not None:
            if self.images is not None:
                self.images.resolve(message)
            notes += push_message(self.conv, message)[1]
        self.warn(lineno, notes)

    def compaction(self, rec: CompactionRecord, messages: list[JsonValue]) -> None:
        """The boundary: the conversation goes on from the compacted form it records."""
        before, self.conv = self.conv, conversation_of(messages, self.images)
        # The summarised part leaves the conversation but stays readable on screen.
        k = rec.summarised
        if k is None or k > len(before):
            k = max(0, len(before) - len(self.conv))
        self.earlier += before[:k]
        self.earlier.append(CompactionMark(time=rec.time or "", summarised=k))
        if len(self.earlier) > EARLIER_KEPT:
            cut = len(self.earlier) - EARLIER_KEPT
            self.earlier_left_out += sum(1 for m in self.earlier[:cut] if isinstance(m, Message))
            del self.earlier[:cut]
        self.summary = scrub_text(rec.summary or "") or None
        self.anchor = None
        self.todos = _todos(rec.todos, self.todos)
        self.compactions += 1
        turn_at = rec.turn_start
        if self.mark is not None and turn_at is not None and turn_at <= len(self.conv):
            self.mark = TurnMark(self.conv[:turn_at])  # the turn in progress is the tail of it


def _todos(raw: object, current: TodoList) -> TodoList:
    """A record's list, or ``current`` when it carries none (an older record) or a damaged one."""
    read = TodoList.read(raw)
    return read if read is not None else current


def todos_before(data: bytes, turn: int) -> TodoList:
    """The to-do list as it was when turn ``turn`` began (a rewind to before it restores it): the
    log's list records up to that turn's ``turn_start``, earlier rewinds honoured."""
    todos, seen = TodoList(), 0
    kinds = (b'{"type":"todos"', b'{"type":"rewind"', b'{"type":"compaction"')
    for raw in _lines(data, 0, len(data)):
        if raw.startswith(b'{"type":"turn_start"'):
            seen += 1
            if seen == turn:
                break
        elif raw.startswith(kinds):
            rec = _decode(raw)
            if isinstance(rec, TodosRecord | RewindRecord | CompactionRecord):
                todos = _todos(rec.todos, todos)
    return todos


def _resume_point(out: Replayed, data: bytes, end: int) -> int:
    """Where a replay without history starts: the line of the last compaction boundary before
    ``end`` (the conversation goes on from the form it records), ``out`` given what the lines
    before it add up to — the header, the title, the turns and boundaries (counted at byte-search
    speed, not parsed) and whether a turn was open. 0 (replay it all) without a usable boundary."""
    at = data.rfind(_BOUNDARY, 0, end) + 1
    if at <= 0:
        return 0
    stop = data.find(b"\n", at, end)
    rec = _decode(data[at : stop if stop >= 0 else end])
    meta = _decode(data[: data.find(b"\n")])
    if not isinstance(rec, CompactionRecord) or rec.messages is None or not isinstance(meta, MetaRecord):
        return 0
    turn_open = data.rfind(b'\n{"type":"turn_start"', 0, at) > data.rfind(b'\n{"type":"turn_end"', 0, at)
    if turn_open and rec.turn_start is None:
        return 0  # the open turn's start is known only from the lines before: replay them
    out.record(1, meta)
    out.title, out.fallback = _head_title(data, at, scrub=True)
    out.turns = data.count(b'\n{"type":"turn_start"', 0, at)
    out.compactions = data.count(_BOUNDARY, 0, at)
    if turn_open:
        out.mark = TurnMark([])  # the boundary's turn_start places it
    return at


def replay(path: Path, data: bytes, *, history: bool = True) -> Replayed:
    """Read a session file's bytes back; raises :class:`SessionError` without a readable header.

    ``history=False`` (print mode, which never shows the part before the boundaries): the same
    conversation, replayed from the last compaction boundary only, with no ``earlier``; the lines
    before it are counted, not parsed. Notes about those lines are not given again."""
    out = Replayed(name=path.name, images=SessionImages.beside(path))
    end = _ends(out, data, 0)
    start = 0 if history else _resume_point(out, data, end)
    _read_lines(out, data, start, end, data.count(b"\n", 0, start))
    return _done(out, path, history)


def replay_tail(path: Path, tail: bytes, offset: int, head: bytes) -> Replayed | None:
    """``replay(..., history=False)`` reading only the file's first bytes (``head``, for the header
    and the title) and ``tail``, the file from its last compaction boundary on (at ``offset``,
    :func:`read_from_boundary`): what the lines before add up to is in the boundary's ``at``
    (``Session.compact`` writes it). None when it is not (an older file) or the title is further on
    than ``head``: then read the whole file."""
    rec = _decode(tail[: tail.find(b"\n")])
    meta = _decode(head.split(b"\n", 1)[0])
    if not isinstance(rec, CompactionRecord) or rec.at is None or rec.messages is None or meta is None:
        return None
    at = rec.at
    if at.line is None or at.turns is None or at.compactions is None or not at.line:
        return None
    line, turns, compactions = at.line, at.turns, at.compactions
    turn_open = at.open
    if turn_open is None or (turn_open and rec.turn_start is None):
        return None
    out = Replayed(name=path.name, images=SessionImages.beside(path))
    out.record(1, meta)
    seen = min(offset, head.rfind(b"\n") + 1)  # the whole lines of head before the boundary
    out.title, out.fallback = _head_title(head, seen, scrub=True)
    if not out.title and seen < offset:
        return None
    out.turns, out.compactions = turns, compactions
    out.mark = TurnMark([]) if turn_open else None  # the boundary's turn_start places it
    _read_lines(out, tail, 0, _ends(out, tail, line - 1), line - 1)
    return _done(out, path, False)


def _ends(out: Replayed, data: bytes, before: int) -> int:
    """Where the lines to read end (a torn last line is dropped: ``out.cut``); ``out.lines`` set.
    ``before``: the file's lines before ``data``."""
    body = data.rfind(b"\n") + 1  # the end of the newline-terminated lines
    tail = data[body:]
    newlines = before + data.count(b"\n")
    if tail:
        try:
            json.loads(tail)
            out.partial = True  # complete but unterminated: terminate it before appending
        except ValueError:
            out.warn(newlines + 1, ["dropped an incomplete last line (interrupted write)"])
            out.cut = len(tail)
    out.lines = newlines + out.partial
    return len(data) if out.partial else body


def _read_lines(out: Replayed, data: bytes, start: int, end: int, lineno: int) -> None:
    """Replay the lines of ``data[start:end]``; ``lineno``: the file's lines before ``start``."""
    for raw in _lines(data, start, end):
        lineno += 1
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            out.warn(lineno, ["skipped a line that is not valid JSON"])
            continue
        rec = parse_record(value)
        if rec is None:
            out.warn(lineno, ["skipped a line that is not a session record"])
            continue
        out.record(lineno, rec)


def _done(out: Replayed, path: Path, history: bool) -> Replayed:
    if not history:
        out.earlier, out.earlier_left_out = [], 0
    gone = out.images.settle(out.conv) if out.images is not None else []
    if gone:
        names = ", ".join(dict.fromkeys(one_line(n, 60) for n in gone[:3]))
        more = f" and {len(gone) - 3} more" if len(gone) > 3 else ""
        out.warnings.append(
            f"{path.name}: {len(gone)} image(s) no longer kept beside the session ({names}{more}): "
            "the conversation has a note in their place"
        )
    if out.meta is None or out.meta.workspace is None:
        raise SessionError(f"{path}: not a session file (no readable header line)")
    if out.meta.version != SESSION_VERSION:
        out.warn(1, [f"session format version {out.meta.version!r}; reading it as version 1"])
    return out
