"""The conversation rules: what makes a list of messages one the Messages API accepts.

They are pure, and used both live (the Runner, a session being written) and when a session log
is replayed, so a restored conversation is exactly the one that was sent:

- roles alternate: a message with the same role as the previous one is merged into it
  (content lists concatenated; in a user message ``tool_result`` blocks are moved first);
- every ``tool_use`` is answered in the next (user) message: missing results are filled with
  ``[interrupted]`` error results; results that answer
  nothing, duplicates, empty text blocks and empty messages are dropped;
- text was scrubbed of lone surrogates (undecodable bytes) where it entered (app/agent/
  conversation/blocks.py), so one bad byte cannot make every later request fail.

How a turn ends is decided here, once (:func:`turn_closing`): an error is never stored as the
model's words. A failed turn without any complete response is left out of the conversation; an
unfinished turn with completed tool calls, a cancelled one, or one cut by a crash ends with the
app's own note, a user-role text block starting ``[PseudoClaude: ``.
"""

from __future__ import annotations

from app.agent.conversation.blocks import Block, ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

INTERRUPTED = "[interrupted]"


def tool_use_ids(message: Message | None) -> list[str]:
    """The ids of the ``tool_use`` blocks of an assistant message, in order."""
    return [b.id for b in message.tool_uses()] if message is not None else []


def interrupted_result(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content=INTERRUPTED, is_error=True)


def interrupted_results(ids: list[str]) -> Message:
    """The user message answering ``ids`` with ``[interrupted]`` error results."""
    return Message(role="user", content=[interrupted_result(i) for i in ids])


def dangling_tool_use_ids(messages: list[Message]) -> list[str]:
    """Tool calls of a trailing assistant message, which have no result yet."""
    return tool_use_ids(messages[-1]) if messages else []


# Statuses whose last response is the model's own complete answer: nothing to repair.
ANSWERED = frozenset({"completed", "stopped"})
# Unfinished turns kept even without a response: the person stopped it (or the app died), the
# request itself was not at fault, so their words stay in the conversation.
_KEEP_UNANSWERED = frozenset({"cancelled", "crashed"})
CRASHED_REASON = "PseudoClaude stopped before the turn ended"
# The prefix of the app's own note closing an interrupted turn. It is a *user* text block, so
# the model never reads an error as something it said itself.
APP_NOTE_PREFIX = "[PseudoClaude: "


def app_note(text: str) -> TextBlock:
    """A user-role text block in which the app (not the model, not the user) says something."""
    return TextBlock(text=f"{APP_NOTE_PREFIX}{text}]")


def is_app_note(block: Block) -> bool:
    return isinstance(block, TextBlock) and block.text.startswith(APP_NOTE_PREFIX)


class TurnMark:
    """Where a turn began: enough to take the turn back out of the conversation.

    ``last`` is a copy of a trailing user message the turn's first message may be merged into.
    """

    def __init__(self, conv: list[Message]) -> None:
        self.start = len(conv)
        self.last = conv[-1].model_copy(deep=True) if conv and conv[-1].role == "user" else None


def drop_turn(conv: list[Message], mark: TurnMark) -> None:
    """Take the turn begun at ``mark`` out of ``conv`` (the log keeps it, the next request does not)."""
    del conv[mark.start :]
    if mark.last is not None and conv:
        conv[-1] = mark.last.model_copy(deep=True)


def turn_closing(
    conv: list[Message], mark: TurnMark, status: str, reason: str = ""
) -> tuple[list[Message], bool]:
    """The rules for ending a turn that did not end on the model's own answer.

    Returns ``(messages to push, drop)``:
    - calls still without a result get ``[interrupted]`` results (always);
    - ``completed``/``stopped``: nothing more (the last response is the model's own);
    - a failed turn (error, max_iterations, ...) with no complete response: ``drop`` — it stays
      in the log as failed and is left out of the next request;
    - otherwise (completed tool calls, or a cancel) the turn is closed by a note in which the
      app says it interrupted the turn — a user-role block, never words put in the model's mouth.
    """
    out: list[Message] = []
    ids = dangling_tool_use_ids(conv)
    if ids:
        out.append(interrupted_results(ids))
    if status in ANSWERED or (not ids and conv and conv[-1].role == "assistant"):
        return out, False  # the turn ends on the model's own complete answer
    responded = any(m.role == "assistant" for m in conv[mark.start :])
    if not responded and status not in _KEEP_UNANSWERED:
        return [], True
    why = "the user cancelled it" if status == "cancelled" else (reason or status)
    out.append(Message(role="user", content=[app_note(f"this turn was interrupted by the app ({why})")]))
    return out, False


def _clean_blocks(role: str, blocks: list[Block], notes: list[str]) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        if isinstance(b, TextBlock) and not b.text.strip():
            continue  # the API refuses empty text blocks; they carry nothing
        if isinstance(b, ToolUseBlock) and (role != "assistant" or not b.id):
            notes.append("dropped a tool_use block outside an assistant message or without an id")
        elif isinstance(b, ToolResultBlock) and role != "user":
            notes.append("dropped a tool_result block outside a user message or without a tool_use_id")
        else:
            out.append(b)
    return out


def _user_order(blocks: list[Block]) -> list[Block]:
    """Tool results first (the API requires it), everything else after, each in order."""
    results: list[Block] = [b for b in blocks if isinstance(b, ToolResultBlock)]
    return results + [b for b in blocks if not isinstance(b, ToolResultBlock)]


def push_message(conv: list[Message], message: Message) -> tuple[int | None, list[str]]:
    """Add ``message`` to ``conv`` keeping it valid for the Messages API (see the module doc).

    Returns ``(index, notes)``: the index of the message that now holds it (a merge returns an
    earlier index; ``None`` if it was dropped) and one-line notes about anything repaired.
    ``message`` is owned by ``conv`` from now on (the caller passes a copy it keeps no hold of).
    """
    notes: list[str] = []
    blocks = _clean_blocks(message.role, message.content, notes)
    if message.role == "assistant":
        return _push_assistant(conv, blocks, notes)
    return _push_user(conv, blocks, notes)


def _push_assistant(
    conv: list[Message], blocks: list[Block], notes: list[str]
) -> tuple[int | None, list[str]]:
    if not blocks:
        return None, [*notes, "dropped an empty assistant message"]
    if not conv:
        return None, [*notes, "dropped an assistant message with no user message before it"]
    last = conv[-1]
    pending = tool_use_ids(last)
    if pending:  # its results were lost: answer them before the model speaks again
        conv.append(interrupted_results(pending))
        notes.append(f"{len(pending)} tool call(s) without a result marked {INTERRUPTED}")
    elif last.role == "assistant":
        last.content = last.content + blocks
        return len(conv) - 1, notes
    conv.append(Message(role="assistant", content=blocks))
    return len(conv) - 1, notes


def _push_user(conv: list[Message], blocks: list[Block], notes: list[str]) -> tuple[int | None, list[str]]:
    target = conv[-1] if conv and conv[-1].role == "user" else None
    asst = (conv[-2] if len(conv) >= 2 else None) if target is not None else (conv[-1] if conv else None)
    answered = {b.tool_use_id for b in target.tool_results()} if target is not None else set()
    pending = [i for i in tool_use_ids(asst) if i not in answered]
    found: dict[str, ToolResultBlock] = {}
    others: list[Block] = []
    for b in blocks:
        if not isinstance(b, ToolResultBlock):
            others.append(b)
        elif b.tool_use_id in pending and b.tool_use_id not in found:
            found[b.tool_use_id] = b
        else:
            notes.append(f"dropped a tool_result for {b.tool_use_id!r}, which answers no pending tool call")
    missing = [i for i in pending if i not in found]
    results: list[Block]
    if target is None and missing:
        notes.append(f"{len(missing)} tool call(s) without a result marked {INTERRUPTED}")
        results = [found.get(i) or interrupted_result(i) for i in pending]
    else:
        results = [found[i] for i in pending if i in found]
    if not results and not others:
        return None, [*notes, "dropped an empty user message"]
    if target is not None:
        target.content = _user_order(target.content + results + others)
        return len(conv) - 1, notes
    conv.append(Message(role="user", content=results + others))
    return len(conv) - 1, notes


def set_result_text(block: ToolResultBlock, text: str) -> None:
    """Set a tool result's text (an offloaded result's stub): its images stay, after it."""
    images = (
        [c for c in block.content if isinstance(c, ImageBlock)] if isinstance(block.content, list) else []
    )
    block.content = [TextBlock(text=text), *images] if images else text


def replace_result(conv: list[Message], tool_use_id: str, content: str) -> bool:
    """Set the text of the tool_result answering ``tool_use_id`` (a replayed offload); its images
    stay."""
    for m in conv:
        for block in m.tool_results() if m.role == "user" else ():
            if block.tool_use_id == tool_use_id:
                set_result_text(block, content)
                return True
    return False


def restore_conversation(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """Replay ``messages`` through :func:`push_message` and answer a trailing dangling tool call."""
    conv: list[Message] = []
    notes: list[str] = []
    for m in messages:
        notes += push_message(conv, m.model_copy(deep=True))[1]
    ids = dangling_tool_use_ids(conv)
    if ids:
        conv.append(interrupted_results(ids))
        notes.append(f"{len(ids)} tool call(s) without a result marked {INTERRUPTED}")
    return conv, notes
