"""Sessions (DESIGN.md §10): one JSONL file per conversation under ``$PSEUDOCLAUDE_HOME/sessions/``.

File format — one JSON object per line, ASCII only (``\\n`` is the only line separator)::

    {"type":"meta","version":1,"id":...,"workspace":...,"created":...,"model":...}   # always line 1
    {"type":"turn_start","turn":1,"time":...,"text":"<the user's words>"}
    {"type":"message","message":{"role":"user","content":...}}                    # as the turn goes
    {"type":"message","message":{...},"repair":"interrupted"}                     # written by us
    {"type":"turn_end","turn":1,"status":"completed","time":...,...}
    {"type":"turn_end","turn":2,"status":"error","message":...,"dropped":true}   # see below
    {"type":"usage","tokens":N,"chars":C}          # the usage anchor of a request (app/agent/compaction.py)
    {"type":"offload","tool_use_id":...,"content":"<stub>"}   # a result moved to sessions/<id>/results/
    {"type":"compaction","summary":...,"turn_start":k,"messages":[...]}   # a boundary: replay goes on from it

The file is an append-only log written with plain ``os.write`` calls on an ``O_APPEND`` fd
(each line in one call, at once); ``end_turn`` and ``close`` fsync. Files are 0600 in a 0700
folder. A session being written is held with an exclusive ``flock``: a second process (or a
second open in this one) gets a :class:`SessionError` instead of interleaving lines.

``Session.messages`` is always a conversation the Messages API accepts, and is exactly what
replaying the file gives (``push_message`` is used both live and on replay):

- roles alternate: a message with the same role as the previous one is merged into it
  (content lists concatenated; in a user message ``tool_result`` blocks are moved first);
- every ``tool_use`` is answered in the next (user) message: missing results are filled with
  ``{"type":"tool_result","is_error":true,"content":"[interrupted]"}``; results that answer
  nothing, duplicates, empty text blocks and empty messages are dropped;
- a trailing assistant message whose tool calls never got results (a crash or a cancelled
  turn) gets those ``[interrupted]`` results written to the file when the session is opened,
  or by ``end_turn``; a trailing user message of tool results is kept as is;
- text is scrubbed of lone surrogates (undecodable bytes), live and on replay, so one bad byte
  cannot make every later request fail.

How a turn ends is decided here, once, for the Runner and for replay (:func:`turn_closing`):
an error is never stored as the model's words. A failed turn without any complete response is
kept in the log and left out of the conversation (``"dropped": true``); an unfinished turn with
completed tool calls, a cancelled one, or one cut by a crash (closed when the file is next
opened, status ``crashed``) ends with the app's own note, a user-role text block starting
``[PseudoClaude: ``. Files written before these rules (an ``[error: …]`` assistant message)
are repaired the same way on replay.

A compaction boundary replaces the conversation by its compacted form (what the model is sent
from then on); what came before it stays in the log, and a restored session keeps the last
:data:`EARLIER_KEPT` of those messages in ``Session.earlier`` (with a marker per boundary) for the
person to read: ``Session.transcript()`` is what the chat shows, ``messages`` what the model gets.

Because a new user message may be merged into a trailing user message, take a turn's messages
with :meth:`Session.turn_messages` (or ``messages[session.turn_start:]``) rather than from a
length remembered before ``append``.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import fcntl
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memory.store.fs import FS
from memory.store.paths import Paths, pseudoclaude_home

SESSION_VERSION = 1
INTERRUPTED = "[interrupted]"
TITLE_MAX = 80
SUFFIX = ".jsonl"

_ROLES = ("user", "assistant")
_ID_CHARS = re.compile(r"^[0-9A-Za-z_-]+$")
_MEMORY_UPDATE = re.compile(r"<memory-update>.*?</memory-update>", re.DOTALL)
_HEADER_MAX = 1 << 16
# Of the messages before a restored session's compaction boundaries, this many (the most recent)
# are kept for the chat to show; the rest are counted (the log keeps them all).
EARLIER_KEPT = 200
# ``Session.earlier``'s marker of a compaction boundary: {"type": COMPACTION_MARK, "time", "summarised"}.
COMPACTION_MARK = "compaction"


class SessionError(Exception):
    """A session problem; ``str(err)`` is one line saying what and why."""


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


# -- the conversation rules (pure; used live and on replay) ---------------------------------


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    return list(content)


def tool_use_ids(message: dict[str, Any] | None) -> list[str]:
    """The ids of the ``tool_use`` blocks of an assistant message, in order."""
    if not message or message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [b["id"] for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]


def interrupted_result(tool_use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": INTERRUPTED, "is_error": True}


def interrupted_results(ids: list[str]) -> dict[str, Any]:
    """The user message answering ``ids`` with ``[interrupted]`` error results."""
    return {"role": "user", "content": [interrupted_result(i) for i in ids]}


def dangling_tool_use_ids(messages: list[dict[str, Any]]) -> list[str]:
    """Tool calls of a trailing assistant message, which have no result yet."""
    return tool_use_ids(messages[-1]) if messages else []


_SURROGATE = re.compile("[\ud800-\udfff]")
# Statuses whose last response is the model's own complete answer: nothing to repair.
_ANSWERED = frozenset({"completed", "stopped"})
# Unfinished turns kept even without a response: the person stopped it (or the app died), the
# request itself was not at fault, so their words stay in the conversation.
_KEEP_UNANSWERED = frozenset({"cancelled", "crashed"})
CRASHED_REASON = "PseudoClaude stopped before the turn ended"
# The prefix of the app's own note closing an interrupted turn. It is a *user* text block, so
# the model never reads an error as something it said itself.
APP_NOTE_PREFIX = "[PseudoClaude: "


def scrub_text(text: str) -> str:
    """Replace lone surrogates (undecodable bytes smuggled in by ``surrogateescape``) with U+FFFD.

    The SDK cannot encode them, so one such character would fail every later request.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def scrub(value: Any) -> tuple[Any, bool]:
    """``value`` (JSON-like) with every string scrubbed; and whether anything changed."""
    if isinstance(value, str):
        out = scrub_text(value)
        return out, out is not value
    if isinstance(value, list):
        pairs = [scrub(v) for v in value]
        return ([p[0] for p in pairs], True) if any(p[1] for p in pairs) else (value, False)
    if isinstance(value, dict):
        changed = False
        out_d: dict[Any, Any] = {}
        for k, v in value.items():
            k2, ck = scrub(k) if isinstance(k, str) else (k, False)
            v2, cv = scrub(v)
            out_d[k2] = v2
            changed = changed or ck or cv
        return (out_d, True) if changed else (value, False)
    return value, False


def app_note(text: str) -> dict[str, Any]:
    """A user-role text block in which the app (not the model, not the user) says something."""
    return {"type": "text", "text": f"{APP_NOTE_PREFIX}{text}]"}


def is_app_note(block: Any) -> bool:
    return (
        isinstance(block, dict) and block.get("type") == "text"
        and str(block.get("text", "")).startswith(APP_NOTE_PREFIX)
    )


class TurnMark:
    """Where a turn began: enough to take the turn back out of the conversation.

    ``last`` is a copy of a trailing user message the turn's first message may be merged into.
    """

    def __init__(self, conv: list[dict[str, Any]]) -> None:
        self.start = len(conv)
        self.last = copy.deepcopy(conv[-1]) if conv and conv[-1].get("role") == "user" else None


def drop_turn(conv: list[dict[str, Any]], mark: TurnMark) -> None:
    """Take the turn begun at ``mark`` out of ``conv`` (the log keeps it, the next request does not)."""
    del conv[mark.start :]
    if mark.last is not None and conv:
        conv[-1] = copy.deepcopy(mark.last)


def turn_closing(conv: list[dict[str, Any]], mark: TurnMark, status: str, reason: str = "") -> tuple[list[dict[str, Any]], bool]:
    """The rules for ending a turn that did not end on the model's own answer.

    Returns ``(messages to push, drop)``:
    - calls still without a result get ``[interrupted]`` results (always);
    - ``completed``/``stopped``: nothing more (the last response is the model's own);
    - a failed turn (error, max_iterations, ...) with no complete response: ``drop`` — it stays
      in the log as failed and is left out of the next request;
    - otherwise (completed tool calls, or a cancel) the turn is closed by a note in which the
      app says it interrupted the turn — a user-role block, never words put in the model's mouth.
    """
    out: list[dict[str, Any]] = []
    ids = dangling_tool_use_ids(conv)
    if ids:
        out.append(interrupted_results(ids))
    if status in _ANSWERED or (not ids and conv and conv[-1].get("role") == "assistant"):
        return out, False  # the turn ends on the model's own complete answer
    responded = any(m.get("role") == "assistant" for m in conv[mark.start :])
    if not responded and status not in _KEEP_UNANSWERED:
        return [], True
    why = "the user cancelled it" if status == "cancelled" else (reason or status)
    out.append({"role": "user", "content": [app_note(f"this turn was interrupted by the app ({why})")]})
    return out, False


def _clean_blocks(role: str, blocks: list[Any], notes: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type") if isinstance(b, dict) else None
        if not isinstance(kind, str):
            notes.append("dropped a content block that is not an object with a type")
        elif kind == "text" and not (isinstance(b.get("text"), str) and b["text"].strip()):
            continue  # the API refuses empty text blocks; they carry nothing
        elif kind == "tool_use" and (role != "assistant" or not isinstance(b.get("id"), str) or not b["id"]):
            notes.append("dropped a tool_use block outside an assistant message or without an id")
        elif kind == "tool_result" and (role != "user" or not isinstance(b.get("tool_use_id"), str)):
            notes.append("dropped a tool_result block outside a user message or without a tool_use_id")
        else:
            out.append(b)
    return out


def _user_order(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results first (the API requires it), everything else after, each in order."""
    results = [b for b in blocks if b.get("type") == "tool_result"]
    return results + [b for b in blocks if b.get("type") != "tool_result"]


def push_message(conv: list[dict[str, Any]], message: Any) -> tuple[int | None, list[str]]:
    """Add ``message`` to ``conv`` keeping it valid for the Messages API (see the module doc).

    Returns ``(index, notes)``: the index of the message that now holds it (a merge returns an
    earlier index; ``None`` if it was dropped) and one-line notes about anything repaired.
    ``message`` must be a JSON-like dict owned by the caller's ``conv`` from now on.
    """
    notes: list[str] = []
    if not isinstance(message, dict) or message.get("role") not in _ROLES:
        return None, ["dropped a message whose role is not user or assistant"]
    message, scrubbed = scrub(message)
    if scrubbed:
        notes.append("replaced undecodable characters (lone surrogates) with U+FFFD")
    role: str = message["role"]
    content = message.get("content")
    if not isinstance(content, (str, list)):
        return None, ["dropped a message whose content is neither text nor a list of blocks"]
    blocks = _clean_blocks(role, _as_blocks(content), notes)

    if role == "assistant":
        if not blocks:
            return None, [*notes, "dropped an empty assistant message"]
        if not conv:
            return None, [*notes, "dropped an assistant message with no user message before it"]
        last = conv[-1]
        pending = tool_use_ids(last) if last["role"] == "assistant" else []
        if pending:  # its results were lost: answer them before the model speaks again
            conv.append(interrupted_results(pending))
            notes.append(f"{len(pending)} tool call(s) without a result marked {INTERRUPTED}")
        elif last["role"] == "assistant":
            last["content"] = _as_blocks(last["content"]) + blocks
            return len(conv) - 1, notes
        conv.append({"role": "assistant", "content": content if isinstance(content, str) else blocks})
        return len(conv) - 1, notes

    # role == "user"
    target = conv[-1] if conv and conv[-1]["role"] == "user" else None
    asst = (conv[-2] if len(conv) >= 2 else None) if target is not None else (conv[-1] if conv else None)
    answered = (
        {b.get("tool_use_id") for b in _as_blocks(target["content"]) if b.get("type") == "tool_result"}
        if target is not None
        else set()
    )
    pending = [i for i in tool_use_ids(asst) if i not in answered]
    found: dict[str, dict[str, Any]] = {}
    others: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") != "tool_result":
            others.append(b)
        elif b["tool_use_id"] in pending and b["tool_use_id"] not in found:
            found[b["tool_use_id"]] = b
        else:
            notes.append(f"dropped a tool_result for {b['tool_use_id']!r}, which answers no pending tool call")
    missing = [i for i in pending if i not in found]
    if target is None and missing:
        notes.append(f"{len(missing)} tool call(s) without a result marked {INTERRUPTED}")
        results = [found.get(i) or interrupted_result(i) for i in pending]
    else:
        results = [found[i] for i in pending if i in found]
    if not results and not others:
        return None, [*notes, "dropped an empty user message"]
    if target is not None:
        target["content"] = _user_order(_as_blocks(target["content"]) + results + others)
        return len(conv) - 1, notes
    if isinstance(content, str) and not results:
        conv.append({"role": "user", "content": content})
    else:
        conv.append({"role": "user", "content": results + others})
    return len(conv) - 1, notes


def _replace_result(conv: list[dict[str, Any]], tool_use_id: str, content: str) -> bool:
    """Set the content of the tool_result answering ``tool_use_id`` (a replayed offload)."""
    for m in conv:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        for block in m["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                block["content"] = content
                return True
    return False


def restore_conversation(messages: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Replay ``messages`` through :func:`push_message` and answer a trailing dangling tool call."""
    conv: list[dict[str, Any]] = []
    notes: list[str] = []
    for m in messages:
        notes += push_message(conv, copy.deepcopy(m))[1]
    ids = dangling_tool_use_ids(conv)
    if ids:
        conv.append(interrupted_results(ids))
        notes.append(f"{len(ids)} tool call(s) without a result marked {INTERRUPTED}")
    return conv, notes


# -- helpers -------------------------------------------------------------------------------


def _json_default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)  # SDK content blocks, pydantic models
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    raise TypeError(f"{type(obj).__name__} is not JSON-serializable")


def _dumps(record: dict[str, Any]) -> str:
    # ASCII only: a lone surrogate in a tool's output must not make the line unencodable.
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), default=_json_default)


def _one_line(text: str, limit: int = TITLE_MAX) -> str:
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _title_from_message(message: Any) -> str:
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    content = message.get("content")
    if isinstance(content, str):
        texts: list[Any] = [content]
    elif isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    else:
        return ""
    for t in texts:
        if isinstance(t, str):
            title = _one_line(_MEMORY_UPDATE.sub(" ", t))
            if title:
                return title
    return ""


def _open_nofollow(path: Path, flags: int) -> int:
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


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _read_header(path: Path) -> tuple[dict[str, Any] | None, os.stat_result | None]:
    """The meta record of a session file (None if unreadable) and the file's stat."""
    try:
        fd = _open_nofollow(path, os.O_RDONLY)
    except (OSError, SessionError):
        return None, None
    try:
        st = os.fstat(fd)
        head = os.pread(fd, _HEADER_MAX, 0).split(b"\n", 1)[0]
    except OSError:
        return None, None
    finally:
        os.close(fd)
    try:
        meta = json.loads(head)
    except ValueError:
        return None, st
    if not isinstance(meta, dict) or meta.get("type") != "meta" or not isinstance(meta.get("workspace"), str):
        return None, st
    return meta, st


def _same_workspace(stored: str, want: str) -> bool:
    return stored == want or os.path.realpath(stored) == want


def _mtime_rfc3339(st: os.stat_result) -> str:
    return datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# What versions before the turn rules wrote as the *assistant's* last words of a failed turn.
_LEGACY_MARKER = re.compile(r"^\[(?:error|max_iterations|cancelled|stopped|interrupted)(?::.*)?\]$", re.DOTALL)


def _replay_turn_end(conv: list[dict[str, Any]], mark: TurnMark, rec: dict[str, Any]) -> list[str]:
    """Apply a turn_end record on replay: a dropped turn leaves; an old-format error marker goes."""
    if rec.get("dropped") is True:
        drop_turn(conv, mark)
        return []
    status = rec.get("status")
    if not isinstance(status, str) or status in _ANSWERED or not conv or len(conv) <= mark.start:
        return []
    last = conv[-1]
    blocks = _as_blocks(last.get("content"))
    if last.get("role") != "assistant" or len(blocks) != 1 or blocks[0].get("type") != "text":
        return []
    if not _LEGACY_MARKER.match(str(blocks[0].get("text", ""))):
        return []
    # An old session stored the error as the model's own answer: take it back out and close the
    # turn by today's rules instead.
    conv.pop()
    closing, drop = turn_closing(conv, mark, status, str(rec.get("message") or ""))
    if drop:
        drop_turn(conv, mark)
        return ["left a failed turn out of the conversation (it stays in the file)"]
    for m in closing:
        push_message(conv, m)
    return ["an error stored as the model's answer was replaced by the app's note"]


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
        # Long sessions (app/agent/compaction.py): the last usage anchor (input tokens reported for a
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

    def append(self, message: dict[str, Any]) -> None:
        """Add a Messages API message (a snapshot of it) and write it as one line at once.

        Raises ``ValueError`` if it is not a user/assistant message with text or block content
        or cannot be serialized, and :class:`SessionError` if the file cannot be written (the
        message is then kept in ``messages`` all the same, so the conversation goes on).
        """
        self._append(message)

    def _append(self, message: dict[str, Any], **extra: Any) -> None:
        with self._lock:
            self._check_open()
            if not isinstance(message, dict) or message.get("role") not in _ROLES:
                raise ValueError("a session message needs role 'user' or 'assistant'")
            if not isinstance(message.get("content"), (str, list)):
                raise ValueError("a session message needs str or list content")
            message, _ = scrub(message)  # the file holds what can be sent again
            try:
                line = _dumps({"type": "message", "message": message, **extra})
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
                self.title = _one_line(user_text)
            self._lines += 1
            self._write(_dumps({"type": "turn_start", "turn": self.turns, "time": now_rfc3339(), "text": user_text}))
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
            record: dict[str, Any] = {"type": "turn_end", "turn": self.turns, "status": status, "time": now_rfc3339()}
            if drop:
                drop_turn(self.messages, mark)
                self.turn_start = len(self.messages)
                record["dropped"] = True
            self._mark = None
            for k, v in info.items():
                record.setdefault(k, v)
            try:
                line = _dumps(record)
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
            self._write(_dumps({"type": "usage", "tokens": int(tokens), "chars": int(chars)}))

    def record_offloads(self, replaced: list[tuple[str, str]]) -> None:
        """Tool results already in ``messages`` that were moved to disk: each is replaced by its stub
        (the caller changed ``messages`` already; this records it so a replay does the same)."""
        with self._lock:
            self._check_open()
            for tool_use_id, stub in replaced:
                self._lines += 1
                self._write(_dumps({"type": "offload", "tool_use_id": tool_use_id, "content": scrub_text(stub)}))

    def compact(self, summary: str, messages: list[dict[str, Any]], turn_start: int | None, **info: Any) -> None:
        """Replace the conversation by its compacted form: ``summary`` (for the system prompt) and
        the verbatim ``messages`` that follow it. ``turn_start``: where the turn in progress begins in
        ``messages`` (None between turns). The log keeps everything before; this record is the
        boundary a replay starts again from. Synced."""
        with self._lock:
            self._check_open()
            messages, _ = scrub(copy.deepcopy(messages))
            record = {"type": "compaction", "time": now_rfc3339(), "summary": scrub_text(summary),
                      "turn_start": turn_start, "messages": messages, **info}
            line = _dumps(record)
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

    def transcript(self) -> list[dict[str, Any]]:
        """What the person reads of this session: ``earlier`` (the part before the compaction
        boundaries, with their markers), then the conversation the model is sent."""
        return [*self.earlier, *self.messages]

    def turn_messages(self) -> list[dict[str, Any]]:
        """The messages of the current turn (from ``turn_start``), for the memory job."""
        return self.messages[self.turn_start :]

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

    def __init__(self, home: Path | None = None) -> None:
        self.home = Path(home) if home is not None else pseudoclaude_home()
        self.dir = Paths.for_workspace(self.home, self.home).sessions_dir

    def create(self, workspace: Path, *, model: str = "") -> Session:
        """A new session of ``workspace`` (stored as its real path), its header written and synced."""
        ws = os.path.realpath(workspace)
        self._ensure_dir()
        for _ in range(100):
            sid = new_session_id()
            path = self.dir / f"{sid}{SUFFIX}"
            try:
                fd = _open_nofollow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL)
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
            session = Session(id=sid, path=path, workspace=Path(ws), fd=fd, created=created, model=model, lines=1)
            meta = {"type": "meta", "version": SESSION_VERSION, "id": sid, "workspace": ws, "created": created,
                    "model": model}
            session._write(_dumps(meta))
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
            meta, st = _read_header(path)
            if meta is None or st is None or not _same_workspace(meta["workspace"], want):
                continue
            found.append((st.st_mtime_ns, path.stem, path))
        for _, _, path in sorted(found, reverse=True):
            title, turns = self._scan(path)
            if turns > 0 or title:
                return self._restore(path)
        return None

    def open(self, session_id: str) -> Session:
        """Restore a session by full id or unambiguous prefix (of any workspace: see ``.workspace``)."""
        sid = session_id.strip()
        if sid.endswith(SUFFIX):
            sid = sid[: -len(SUFFIX)]
        if not sid or not _ID_CHARS.match(sid):
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
            meta, st = _read_header(path)
            if meta is None or st is None or (want is not None and not _same_workspace(meta["workspace"], want)):
                continue
            title, turns = self._scan(path)
            info = SessionInfo(
                id=path.stem,
                workspace=meta["workspace"],
                created=str(meta.get("created", "")),
                updated=_mtime_rfc3339(st),
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
            if name.endswith(SUFFIX) and not name.startswith(".") and _ID_CHARS.match(name[: -len(SUFFIX)]):
                yield self.dir / name

    def _scan(self, path: Path) -> tuple[str, int]:
        """Title and number of turns, parsing only the lines needed."""
        try:
            fd = _open_nofollow(path, os.O_RDONLY)
        except (OSError, SessionError):
            return "", 0
        try:
            data = _read_all(fd)
        except OSError:
            return "", 0
        finally:
            os.close(fd)
        title, fallback, turns = "", "", 0
        for raw in data.split(b"\n"):
            if raw.startswith(b'{"type":"turn_start"'):
                turns += 1
                if not title:
                    with contextlib.suppress(ValueError, AttributeError, TypeError):
                        title = _one_line(json.loads(raw).get("text") or "")
            elif not title and not fallback and raw.startswith(b'{"type":"message"'):
                with contextlib.suppress(ValueError, AttributeError, TypeError):
                    fallback = _title_from_message(json.loads(raw).get("message"))
        return title or fallback, turns

    def _restore(self, path: Path) -> Session:
        try:
            fd = _open_nofollow(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SessionError(f"session {path.stem} no longer exists") from None
        except OSError as e:
            raise SessionError(f"cannot open session file {path}: {e.strerror or e}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionError(f"session {path.stem} is in use by another PseudoClaude process") from None
            data = _read_all(fd)
            session = self._replay(path, fd, data)
        except OSError as e:
            os.close(fd)
            raise SessionError(f"cannot read session file {path}: {e.strerror or e}") from None
        except BaseException:
            os.close(fd)
            raise
        return session

    def _replay(self, path: Path, fd: int, data: bytes) -> Session:
        name = path.name
        warnings: list[str] = []
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        partial = False
        cut_tail = False
        if tail:
            try:
                json.loads(tail)
                lines.append(tail)
                partial = True  # complete but unterminated: terminate it before appending
            except ValueError:
                warnings.append(f"{name}:{len(lines) + 1}: dropped an incomplete last line (interrupted write)")
                cut_tail = True
        meta: dict[str, Any] | None = None
        turns, title, fallback = 0, "", ""
        conv: list[dict[str, Any]] = []
        mark: TurnMark | None = None
        anchor: tuple[int, int] | None = None
        summary: str | None = None
        compactions = 0
        earlier: list[dict[str, Any]] = []
        earlier_left_out = 0
        for lineno, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                warnings.append(f"{name}:{lineno}: skipped a line that is not valid JSON")
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                warnings.append(f"{name}:{lineno}: skipped a line that is not a session record")
                continue
            kind = rec["type"]
            if lineno == 1 and kind == "meta":
                meta = rec
            elif kind == "turn_start":
                turns += 1
                if mark is not None:  # the turn before never ended (a crash, in an old file)
                    warnings += [f"{name}:{lineno}: {n}" for n in _replay_turn_end(conv, mark, {"status": "crashed"})]
                mark = TurnMark(conv)
                if not title and isinstance(rec.get("text"), str):
                    title = _one_line(scrub_text(rec["text"]))
            elif kind == "turn_end":
                if mark is not None:
                    warnings += [f"{name}:{lineno}: {n}" for n in _replay_turn_end(conv, mark, rec)]
                mark = None
            elif kind == "message":
                msg = rec.get("message")
                if not fallback:
                    fallback = _title_from_message(msg)
                _, notes = push_message(conv, msg)
                warnings += [f"{name}:{lineno}: {n}" for n in notes]
            elif kind == "usage":
                if isinstance(rec.get("tokens"), int) and isinstance(rec.get("chars"), int):
                    anchor = (rec["tokens"], rec["chars"])
            elif kind == "offload":
                if isinstance(rec.get("tool_use_id"), str) and isinstance(rec.get("content"), str):
                    _replace_result(conv, rec["tool_use_id"], scrub_text(rec["content"]))
            elif kind == "compaction" and isinstance(rec.get("messages"), list):
                # The boundary: the conversation goes on from the compacted form it records.
                before, conv = conv, []
                for m in rec["messages"]:
                    push_message(conv, m)
                # The summarised part leaves the conversation but stays readable on screen.
                k = rec.get("summarised")
                if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= len(before)):
                    k = max(0, len(before) - len(conv))
                earlier += before[:k]
                earlier.append({"type": COMPACTION_MARK, "time": str(rec.get("time") or ""), "summarised": k})
                if len(earlier) > EARLIER_KEPT:
                    cut = len(earlier) - EARLIER_KEPT
                    earlier_left_out += sum(1 for m in earlier[:cut] if m.get("type") != COMPACTION_MARK)
                    del earlier[:cut]
                summary = scrub_text(str(rec.get("summary") or "")) or None
                anchor = None
                compactions += 1
                turn_at = rec.get("turn_start")
                if mark is not None and isinstance(turn_at, int) and 0 <= turn_at <= len(conv):
                    mark = TurnMark(conv[:turn_at])  # the turn in progress is the tail of it
            # meta elsewhere and unknown record types carry no conversation
        if meta is None or not isinstance(meta.get("workspace"), str):
            raise SessionError(f"{path}: not a session file (no readable header line)")
        if cut_tail:
            # An interrupted write: the line is unrecoverable; cut it so the next line starts clean.
            os.ftruncate(fd, len(data) - len(tail))
        if meta.get("version") != SESSION_VERSION:
            warnings.append(f"{name}:1: session format version {meta.get('version')!r}; reading it as version 1")
        session = Session(
            id=path.stem,
            path=path,
            workspace=Path(meta["workspace"]),
            fd=fd,
            created=str(meta.get("created", "")),
            model=str(meta.get("model", "") or ""),
            messages=conv,
            warnings=warnings,
            turns=turns,
            lines=len(lines),
            title=title or fallback,
        )
        session._needs_newline = partial
        session.anchor, session.summary, session.compactions = anchor, summary, compactions
        session.earlier, session.earlier_left_out = earlier, earlier_left_out
        ids = dangling_tool_use_ids(conv)
        if ids:
            warnings.append(f"{name}: {len(ids)} tool call(s) without a result marked {INTERRUPTED}")
        if mark is not None:
            # The process died mid-turn: close that turn by the rules, in the file too, so the
            # file replays to exactly `messages`.
            warnings.append(f"{name}: turn {turns} was cut short ({CRASHED_REASON}); closed it")
            session._mark = mark
            session.end_turn("crashed", message=CRASHED_REASON)
        elif ids:  # answer them in the file too, so the file replays to exactly `messages`
            session._append(interrupted_results(ids), repair="interrupted")
        session.turn_start = len(session.messages)
        return session
