"""The conversation rules: what makes a list of messages one the Messages API accepts.

They are pure, and used both live (the Runner, a session being written) and when a session log
is replayed, so a restored conversation is exactly the one that was sent:

- roles alternate: a message with the same role as the previous one is merged into it
  (content lists concatenated; in a user message ``tool_result`` blocks are moved first);
- every ``tool_use`` is answered in the next (user) message: missing results are filled with
  ``{"type":"tool_result","is_error":true,"content":"[interrupted]"}``; results that answer
  nothing, duplicates, empty text blocks and empty messages are dropped;
- text is scrubbed of lone surrogates (undecodable bytes), so one bad byte cannot make every
  later request fail.

How a turn ends is decided here, once (:func:`turn_closing`): an error is never stored as the
model's words. A failed turn without any complete response is left out of the conversation; an
unfinished turn with completed tool calls, a cancelled one, or one cut by a crash ends with the
app's own note, a user-role text block starting ``[PseudoClaude: ``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

INTERRUPTED = "[interrupted]"
ROLES = ("user", "assistant")


def as_blocks(content: Any) -> list[dict[str, Any]]:
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
ANSWERED = frozenset({"completed", "stopped"})
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
        isinstance(block, dict)
        and block.get("type") == "text"
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


def turn_closing(
    conv: list[dict[str, Any]], mark: TurnMark, status: str, reason: str = ""
) -> tuple[list[dict[str, Any]], bool]:
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
    if status in ANSWERED or (not ids and conv and conv[-1].get("role") == "assistant"):
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
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None, ["dropped a message whose role is not user or assistant"]
    message, scrubbed = scrub(message)
    if scrubbed:
        notes.append("replaced undecodable characters (lone surrogates) with U+FFFD")
    role: str = message["role"]
    content = message.get("content")
    if not isinstance(content, (str, list)):
        return None, ["dropped a message whose content is neither text nor a list of blocks"]
    blocks = _clean_blocks(role, as_blocks(content), notes)
    if role == "assistant":
        return _push_assistant(conv, content, blocks, notes)
    return _push_user(conv, content, blocks, notes)


def _push_assistant(
    conv: list[dict[str, Any]], content: str | list[Any], blocks: list[dict[str, Any]], notes: list[str]
) -> tuple[int | None, list[str]]:
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
        last["content"] = as_blocks(last["content"]) + blocks
        return len(conv) - 1, notes
    conv.append({"role": "assistant", "content": content if isinstance(content, str) else blocks})
    return len(conv) - 1, notes


def _push_user(
    conv: list[dict[str, Any]], content: str | list[Any], blocks: list[dict[str, Any]], notes: list[str]
) -> tuple[int | None, list[str]]:
    target = conv[-1] if conv and conv[-1]["role"] == "user" else None
    asst = (conv[-2] if len(conv) >= 2 else None) if target is not None else (conv[-1] if conv else None)
    answered = (
        {b.get("tool_use_id") for b in as_blocks(target["content"]) if b.get("type") == "tool_result"}
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
            notes.append(
                f"dropped a tool_result for {b['tool_use_id']!r}, which answers no pending tool call"
            )
    missing = [i for i in pending if i not in found]
    if target is None and missing:
        notes.append(f"{len(missing)} tool call(s) without a result marked {INTERRUPTED}")
        results = [found.get(i) or interrupted_result(i) for i in pending]
    else:
        results = [found[i] for i in pending if i in found]
    if not results and not others:
        return None, [*notes, "dropped an empty user message"]
    if target is not None:
        target["content"] = _user_order(as_blocks(target["content"]) + results + others)
        return len(conv) - 1, notes
    if isinstance(content, str) and not results:
        conv.append({"role": "user", "content": content})
    else:
        conv.append({"role": "user", "content": results + others})
    return len(conv) - 1, notes


def replace_result(conv: list[dict[str, Any]], tool_use_id: str, content: str) -> bool:
    """Set the content of the tool_result answering ``tool_use_id`` (a replayed offload)."""
    for m in conv:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        for block in m["content"]:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") == tool_use_id
            ):
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
