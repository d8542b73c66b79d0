"""Long sessions: keep the conversation inside the model's window.

The Runner keeps a **usage anchor** after every response (the input tokens the API
reported and how much conversation they covered); before a request, the request's size is
estimated as the anchor plus what was appended since (characters / 4). When the estimate passes
``compact_at × context_window``, the conversation is made smaller in two stages:

1. **Lossless.** Tool results are moved to files under the session's folder
   (``$PSEUDOCLAUDE_HOME/sessions/<id>/results/``) and replaced by their head, tail, size and a
   reference the model reads back in parts with ``read_result``. A result over ``offload_bytes``
   is moved as soon as it is made; older ones, oldest first, when the estimate passes the
   threshold — before anything is summarised.
2. **Lossy.** If still over, the older turns are summarised by the main model into one text (what
   was asked, decided, changed, and what is open), kept in the system prompt; the recent turns —
   at least the current one with every tool call and result since its user message — stay verbatim.

Everything here is pure or file-only; the summary request itself and the steps' order are the
Runner's (app/agent/turn/compactor.py), and the session log (app/agent/conversation/session.py)
records what was done, so ``--continue`` rebuilds the compacted conversation.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

from app.agent.conversation.blocks import (
    Block,
    CacheControl,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.agent.conversation.images import MAX_EDGE, image_mention, image_tokens, without_labels
from app.agent.conversation.messages import (
    APP_NOTE_PREFIX,
    is_app_note,
    restore_conversation,
    set_result_text,
)
from memory.constants import UPDATE_TAG
from memory.store.fs import FS, UnsafePathError

__all__ = [
    "Anchor",
    "ResultStore",
    "does_not_fit",
    "drop_old_thinking",
    "estimate_tokens",
    "messages_chars",
    "offload_old",
    "result_stub",
    "split_for_summary",
    "summary_block",
    "summary_prompt",
    "too_large",
    "transcript_chunks",
]

CHARS_PER_TOKEN = 4
HEAD_CHARS = 2_000  # of an offloaded result, kept in the conversation
TAIL_CHARS = 1_000
LINE_CHUNK = 4_000  # read_result counts a longer line as several, so any result pages exactly
READ_DEFAULT_LINES = 2_000
READ_MAX_CHARS = 24_000  # one read_result output, so reading back cannot overflow the window again
MIN_OFFLOAD_CHARS = 2_000  # older results smaller than this stay (a stub would save little)
STUB_PREFIX = "[tool result stored on disk: "
RESULT_ID = re.compile(r"^r[0-9a-f]{16}$")
_UPDATE_OPEN = f"<{UPDATE_TAG}>"
# A summary's transcript shows each tool result cut to this (the summary needs what happened,
# not the bytes, which stay on disk or in the session log).
TRANSCRIPT_RESULT_CHARS = 1_500
TRANSCRIPT_TEXT_CHARS = 12_000

SUMMARY_SYSTEM = """\
You write the summary that replaces the earlier part of a long coding session between a user and
PseudoClaude, a coding assistant working in the user's repository. The assistant will continue
the session with only your summary and the most recent turns, so keep everything it needs:
- what the user asked for, their goals, preferences and constraints (quote exact requirements);
- what was decided and why, and what was rejected;
- what was changed: files, functions, commands run and their outcome (exact paths and names);
- errors met and how they were solved;
- what is still open or in progress, and the next steps.
Keep references of the form read_result {"id": "r…"} for tool output that may be needed again.
Write plain Markdown with short sections. Do not invent anything; do not address the user."""


# How to get out of a conversation that no compaction makes fit, in both faces' words.
WAY_OUT = (
    "go back to before the turn that made it this large (/rewind in the app, `pseudoclaude rewind N` "
    "from a shell) or start a new session (/clear in the app; in print mode, leave out --continue "
    "and --resume)"
)


def does_not_fit(tokens: int, window: int, summary_error: str = "") -> str:
    """Why a turn ends when even compacting left the conversation over the window."""
    why = f"; the summary failed: {summary_error}" if summary_error else ""
    return (
        f"the conversation does not fit the model's context window ({tokens:,} of {window:,} tokens) "
        f"even after compacting{why}"
    )


def too_large(reason: str, conversation: list[Message], turn_start: int | None, window: int) -> str:
    """``reason`` (the request cannot be made to fit) with what to do. A turn with no response yet,
    after a conversation that fits, is left out by the turn rules: a shorter prompt goes. Otherwise
    the conversation stays this large for every later prompt, and the way out is named."""
    if (
        turn_start is not None
        and not any(m.role == "assistant" for m in conversation[turn_start:])
        and messages_chars(conversation[:turn_start]) // CHARS_PER_TOKEN < window
    ):
        return f"{reason}; the prompt was left out: send a shorter one"
    return f"{reason}; every later prompt would fail the same way: {WAY_OUT}"


@dataclass(frozen=True)
class Anchor:
    """The input tokens the API reported for a request (with cache reads and writes) and the size,
    in characters of JSON, of the messages that request carried."""

    tokens: int
    chars: int


_MODELS: TypeAdapter[tuple[BaseModel, ...]] = TypeAdapter(tuple[BaseModel, ...])


def messages_chars(value: Sequence[BaseModel]) -> int:
    """The size of messages (or system blocks) as compact JSON characters: what the estimate
    counts. An image counts as its tokens (width·height/750), at the estimate's characters a
    token, not as the length of its base64 data."""
    try:
        chars = len(_MODELS.dump_json(tuple(value), serialize_as_any=True).decode("utf-8"))
    except ValueError:  # a lone surrogate: measured as the JSON escape it becomes
        chars = json_chars([m.model_dump(mode="json") for m in value])
    return chars + sum(_image_excess(m.content) for m in value if isinstance(m, Message))


# An image whose size is not known (a reference read leniently) counts as the largest one sent.
_UNKNOWN_IMAGE_TOKENS = image_tokens(MAX_EDGE, MAX_EDGE)


def image_chars(image: ImageBlock) -> int:
    """What an image counts for in the estimate, in characters (its tokens, four each)."""
    w, h = image.width, image.height
    return (image_tokens(w, h) if w and h else _UNKNOWN_IMAGE_TOKENS) * CHARS_PER_TOKEN


def _image_excess(blocks: Sequence[object]) -> int:
    """What the images among ``blocks`` (and in their tool results) count for beyond their tokens:
    negative, as their base64 data was measured instead."""
    excess = 0
    for b in blocks:
        if isinstance(b, ImageBlock):
            excess += image_chars(b) - len(b.source.data)
        elif isinstance(b, ToolResultBlock) and isinstance(b.content, list):
            excess += _image_excess(b.content)
    return excess


def json_chars(value: object) -> int:
    """The size of ``value`` (JSON, as the tools' definitions) as compact JSON characters."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def estimate_tokens(
    anchor: Anchor | None,
    system: Sequence[BaseModel],
    tools: Sequence[Mapping[str, object]],
    messages: list[Message],
    chars: int | None = None,
) -> int:
    """The next request's input tokens: the anchor plus what was appended since (chars / 4); with
    no usable anchor (none yet, or the conversation shrank since), everything by chars / 4.
    ``chars``: ``messages_chars(messages)`` when the caller has it already."""
    chars = messages_chars(messages) if chars is None else chars
    if anchor is not None and chars >= anchor.chars:
        return anchor.tokens + (chars - anchor.chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    return (messages_chars(system) + json_chars(tools) + chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


# -- offloaded results -------------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    """``text`` as read_result's lines: each line with its newline, a longer one cut in chunks.
    Joined, they are ``text`` exactly."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if len(line) <= LINE_CHUNK:
            out.append(line)
        else:
            out.extend(line[i : i + LINE_CHUNK] for i in range(0, len(line), LINE_CHUNK))
    return out


class ResultStore:
    """Whole tool results of one session, one file each, named by their content's hash."""

    def __init__(self, folder: Path, fs: FS | None = None) -> None:
        self.folder = folder
        self.fs = fs or FS()

    def put(self, text: str) -> str:
        """Store ``text`` (once: the same text is the same file); returns its id."""
        rid = "r" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        path = self._path(rid)
        # First, every time: makedirs refuses a symlinked folder, also when the file is "there".
        self.fs.makedirs(self.folder, 0o700)
        if not self.fs.exists(path):
            try:
                self.fs.create_durable(path, text.encode("utf-8", "replace"), 0o600)
            except FileExistsError:
                pass  # written meanwhile (the same content)
        return rid

    def text(self, rid: str) -> str:
        if not RESULT_ID.fullmatch(rid):  # fullmatch: "$" would let a trailing newline in
            raise ValueError(f"not a stored result id: {rid[:40]!r}")
        try:
            if stat.S_ISLNK(self.fs.lstat(self.folder).st_mode):
                # read_bytes refuses a symlink only at the file itself, not at its folder.
                raise ValueError(f"the results folder {self.folder} is a symlink; refusing to read it")
            return self.fs.read_bytes(self._path(rid)).decode("utf-8", "replace")
        except FileNotFoundError:
            raise ValueError(f"no stored result {rid} in this session") from None
        except UnsafePathError as e:
            raise ValueError(str(e)) from None

    def read(self, rid: str, offset: int | None = None, limit: int | None = None) -> str:
        """Lines ``offset``.. (1-based) of a stored result, at most ``limit`` and about 24,000
        characters, exactly as stored; when more follows, a last line names the offset to read on."""
        pieces = _pieces(self.text(rid))
        total = len(pieces)
        first = max(offset or 1, 1)
        if total == 0:
            return ""
        if first > total:
            raise ValueError(f"offset {first} is past the end: result {rid} has {total} lines")
        want = max(limit or READ_DEFAULT_LINES, 1)
        out: list[str] = []
        used = 0
        for piece in pieces[first - 1 : first - 1 + want]:
            if out and used + len(piece) > READ_MAX_CHARS:
                break
            out.append(piece)
            used += len(piece)
        last = first + len(out) - 1
        body = "".join(out)
        if last >= total:
            return body
        # Always one newline before the note, never part of the result: whether the part ends a
        # line or cuts one, dropping "\n[read_result: …]" gives its exact text back.
        return f"{body}\n[read_result: lines {first}–{last} of {total}; use offset={last + 1} to read on]"

    def _path(self, rid: str) -> Path:
        return self.folder / f"{rid}.txt"


def result_stub(text: str, rid: str) -> str:
    """What stays in the conversation for an offloaded result: its size, how to read it, its head
    and its tail."""
    pieces = _pieces(text)
    size = len(text.encode("utf-8", "replace"))
    head: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) > HEAD_CHARS and head:
            break
        head.append(piece[:HEAD_CHARS])
        used += len(piece)
    tail: list[str] = []
    used = 0
    for piece in reversed(pieces[len(head) :]):
        if used + len(piece) > TAIL_CHARS and tail:
            break
        tail.insert(0, piece[-TAIL_CHARS:])
        used += len(piece)
    hidden_from, hidden_to = len(head) + 1, len(pieces) - len(tail)
    lines = [
        f"{STUB_PREFIX}{size:,} bytes in {len(pieces):,} lines; its head and tail are below. Read any part "
        f'with read_result {{"id": "{rid}", "offset": <first line>, "limit": <lines>}}]',
        "".join(head).rstrip("\n"),
    ]
    if hidden_to >= hidden_from:
        lines.append(f"[… lines {hidden_from:,}–{hidden_to:,} not shown …]")
    if tail:
        lines.append("".join(tail).rstrip("\n"))
    return "\n".join(lines)


def is_stub(content: object) -> bool:
    return isinstance(content, str) and content.startswith(STUB_PREFIX)


def _results(messages: list[Message]) -> list[ToolResultBlock]:
    return [b for m in messages if m.role == "user" for b in m.tool_results()]


def offload_old(
    messages: list[Message], store: ResultStore, needed_chars: int
) -> tuple[list[tuple[str, str]], int]:
    """Move already-sent tool results to the store, oldest first, until ``needed_chars`` are saved.

    Changes ``messages`` in place; returns ``[(tool_use_id, stub)]`` (for the session log) and the
    bytes moved to disk.
    """
    done: list[tuple[str, str]] = []
    saved = 0
    moved = 0
    for block in _results(messages):
        if saved >= needed_chars:
            break
        # Only a result's text moves: its images stay, counted as their tokens.
        content = block.text
        if is_stub(content) or len(content) < MIN_OFFLOAD_CHARS:
            continue
        try:
            rid = store.put(content)
        except OSError:
            # The folder cannot take it (full disk, a symlink): what was moved stays moved,
            # and the summary stage follows; the turn does not fail for this.
            return done, moved
        stub = result_stub(content, rid)
        if len(stub) >= len(content):
            continue
        set_result_text(block, stub)
        saved += len(content) - len(stub)
        moved += len(content.encode("utf-8", "replace"))
        done.append((block.tool_use_id, stub))
    return done, moved


# -- summaries ------------------------------------------------------------------------------------


def _user_words(message: Message) -> bool:
    """Whether a message is a user's turn start (the person's words, not tool results or notes)."""
    if message.role != "user":
        return False
    return any(
        isinstance(b, TextBlock)
        and not is_app_note(b)
        and not b.text.startswith(_UPDATE_OPEN)
        and b.text.strip()
        for b in message.content
    )


def _turn_starts(messages: list[Message]) -> list[int]:
    # A turn start that also answers the tool calls of the message before it (an interrupted
    # turn's results, merged with the next user message) is no place to cut: the call would be
    # summarised and its result dropped from the verbatim part.
    return [i for i, m in enumerate(messages) if _user_words(m) and not m.tool_results()]


def drop_old_thinking(messages: list[Message], keep_from: int | None) -> int:
    """Take the thinking (and redacted thinking) out of the assistant messages of earlier turns,
    in place, as the API allows: only the current tool-use loop's must go back, and those of a
    message before a turn start (the person's words, no tool results) at or before ``keep_from``
    (the current turn's first message; None between turns) are earlier turns'. A message left
    with nothing else keeps them. Returns the characters saved."""
    starts = [s for s in _turn_starts(messages) if keep_from is None or s <= keep_from]
    saved = 0
    for m in messages[: starts[-1] if starts else 0]:
        if m.role != "assistant":
            continue
        thinking = [b for b in m.content if isinstance(b, ThinkingBlock | RedactedThinkingBlock)]
        if not thinking or len(thinking) == len(m.content):
            continue
        saved += sum(json_chars(b.model_dump(mode="json")) for b in thinking)
        m.content = [b for b in m.content if not isinstance(b, ThinkingBlock | RedactedThinkingBlock)]
    return saved


def split_for_summary(messages: list[Message], keep_chars: int, must_keep_from: int | None) -> int:
    """Where the verbatim part begins: the start of the most recent turns that fit ``keep_chars``,
    and never after ``must_keep_from`` (the current turn's first message) or the last turn start.
    0 means there is nothing older to summarise."""
    starts = _turn_starts(messages)
    if not starts:
        return 0
    limit = starts[-1] if must_keep_from is None else min(must_keep_from, starts[-1])
    chosen = max((s for s in starts if s <= limit), default=0)
    for s in reversed([s for s in starts if s < chosen]):
        if messages_chars(messages[s:]) > keep_chars:
            break
        chosen = s
    return chosen


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit:,} characters not shown …]\n{text[-half:]}"


def _result_body(content: str | Sequence[Block | object]) -> str:
    """A tool result's content for the transcript: its text, each image as ``[image: NAME]``."""
    if isinstance(content, str):
        return content
    parts = []
    for c in without_labels(content):
        if isinstance(c, TextBlock):
            parts.append(c.text)
        elif isinstance(c, ImageBlock):
            parts.append(image_mention(c))
        elif isinstance(c, BaseModel):
            parts.append(json.dumps(c.model_dump(mode="json"), ensure_ascii=False))
    return "\n".join(parts)


def _render(message: Message) -> list[str]:
    """A message's lines in the summary's transcript: its words, calls, results and images. Its
    thinking is no part of it: a summary keeps what was said and done, not the model's drafts."""
    role = message.role.upper()
    out: list[str] = []
    for b in without_labels(message.content):
        if isinstance(b, TextBlock):
            text = b.text
            if text.startswith(_UPDATE_OPEN):
                out.append(f"[memory update given to the assistant]\n{_cut(text, 2_000)}")
            elif text.startswith(APP_NOTE_PREFIX):
                out.append(f"[note by the app] {_cut(text, 500)}")
            else:
                out.append(f"{role}: {_cut(text, TRANSCRIPT_TEXT_CHARS)}")
        elif isinstance(b, ToolUseBlock):
            args = json.dumps(b.input, ensure_ascii=False)
            out.append(f"TOOL CALL {b.name}: {_cut(args, 1_000)}")
        elif isinstance(b, ImageBlock):
            out.append(f"{role}: {image_mention(b)}")
        elif isinstance(b, ToolResultBlock):
            text = _result_body(b.content)
            err = " (error)" if b.is_error else ""
            out.append(f"TOOL RESULT{err}: {_cut(text, TRANSCRIPT_RESULT_CHARS)}")
    return out


def transcript_chunks(messages: list[Message], max_chars: int) -> list[str]:
    """The messages as a plain transcript, in chunks of at most about ``max_chars``."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for m in messages:
        for line in _render(m):
            line = _cut(line, max(max_chars // 2, 1_000))
            if current and size + len(line) > max_chars:
                chunks.append("\n\n".join(current))
                current, size = [], 0
            current.append(line)
            size += len(line) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def summary_prompt(previous: str | None, chunk: str, focus: str, part: tuple[int, int]) -> str:
    k, n = part
    parts = []
    if previous:
        parts.append(f"<summary-so-far>\n{previous}\n</summary-so-far>")
    what = "the earlier conversation" if n == 1 else f"part {k} of {n} of the earlier conversation"
    parts.append(f'<conversation part="{k}/{n}">\n{chunk}\n</conversation>')
    ask = f"Write the summary of {what}"
    ask += ", merged with the summary so far" if previous else ""
    ask += "."
    if focus.strip():
        ask += f" The user asked to focus on: {focus.strip()}"
    parts.append(ask)
    return "\n\n".join(parts)


def summary_block(summary: str) -> TextBlock:
    """The system block that carries the summary of the compacted part of the conversation."""
    return TextBlock(
        text=(
            "The earlier part of this conversation was compacted to stay within the context window. "
            "This is the assistant's own summary of it (tool output it mentions can be read with "
            "read_result):\n<earlier-conversation-summary>\n"
            f"{summary.replace('</earlier-conversation-summary>', '&lt;/earlier-conversation-summary>')}\n"
            "</earlier-conversation-summary>"
        )
    )


def with_summary(system: list[TextBlock], summary: str | None) -> list[TextBlock]:
    """``system`` with the summary block last (it carries the cache mark then)."""
    if not summary:
        return system
    blocks = [b.model_copy(update={"cache_control": None}) for b in system]
    block = summary_block(summary).model_copy(update={"cache_control": CacheControl()})
    return [*blocks, block]


def rebuilt(messages: list[Message]) -> list[Message]:
    """``messages`` as a valid conversation on their own: a result whose call was summarised away
    is dropped, and the conversation starts with a user message."""
    conv, _ = restore_conversation(messages)
    while conv and conv[0].role != "user":
        conv.pop(0)
    return conv
