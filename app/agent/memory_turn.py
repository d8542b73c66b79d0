"""What a completed turn gives memory: who said what, in words.

Tool calls, tool results, the index-update blocks and the app's own notes are left out:
extraction learns from what was said, not from tool output or from what memory itself sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.agent.conversation import is_app_note
from memory.constants import UPDATE_TAG
from memory.model import Turn, TurnMessage

_UPDATE_OPEN = f"<{UPDATE_TAG}>"


def text_of(content: Any) -> str:
    """The words of a message's content: its text blocks but the app's notes and update blocks."""
    if isinstance(content, str):
        return content
    parts = []
    for b in content or []:
        if (
            isinstance(b, dict) and b.get("type") == "text" and not is_app_note(b)
            and not str(b.get("text", "")).startswith(_UPDATE_OPEN)
        ):
            parts.append(str(b["text"]))
    return "\n".join(parts)


def turn_for_memory(messages: Iterable[dict[str, Any]], session: str = "") -> Turn:
    """``messages`` as a memory Turn: role and text only (see the module doc)."""
    out = []
    for m in messages:
        text = text_of(m.get("content"))
        if text.strip() and m.get("role") in ("user", "assistant"):
            out.append(TurnMessage(role=m["role"], text=text))
    return Turn(messages=out, session=session)
