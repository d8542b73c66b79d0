"""A resumed session's conversation drawn in the chat pane.

What the session's log holds before its compaction boundaries is drawn first (one line marks
each boundary): a compacted session reads as it was lived, though the model is sent only the
compacted part. The memory model's update messages and the app's own notes are not drawn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from app.tui.chat.turn_view import display_keys, widget_view
from memory.constants import UPDATE_TAG
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal, strip_terminal_deep
from widgets.chat.prompt import is_large_paste, paste_label

if TYPE_CHECKING:
    from widgets.chat.answer_block import AnswerBlock
    from widgets.chat.log import ChatPane

HISTORY_SHOWN = 200  # messages of a resumed session drawn (the pane prunes beyond its bound anyway)

Message = dict[str, Any]
# Runs a coroutine later, on the App's loop (``App.call_later``).
Later = Callable[[Callable[..., Coroutine[Any, Any, None]], Any, Any], object]


class SessionLike(Protocol):
    """What is read of the open session: the messages before its compaction boundaries."""

    @property
    def earlier(self) -> list[Message]: ...

    @property
    def earlier_left_out(self) -> int: ...


def _tool_results(items: list[Message]) -> dict[str, Message]:
    results: dict[str, Message] = {}
    for m in items:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    results[str(b.get("tool_use_id", ""))] = b
    return results


async def _write_answer(answer: AnswerBlock, text: str) -> None:
    await answer.append(text)
    await answer.finish()


class HistoryView:
    """Draws earlier messages; ``later`` schedules an answer's writing (a coroutine)."""

    def __init__(self, chat: Callable[[], ChatPane], later: Later) -> None:
        self._chat = chat
        self._later = later

    def show(self, messages: list[Message], session: SessionLike | None) -> None:
        """Draw the session's ``messages``, preceded by its ``earlier`` ones."""
        # The app loads this module before its first frame: the session log's modules only for a resume.
        from app.agent.conversation.session_log import COMPACTION_MARK

        chat = self._chat()
        earlier: list[Message] = list(getattr(session, "earlier", None) or [])
        items = [*earlier, *messages]
        results = _tool_results(items)
        shown = items[-HISTORY_SHOWN:]
        hidden = int(getattr(session, "earlier_left_out", 0) or 0) if earlier else 0
        hidden += sum(1 for m in items[: len(items) - len(shown)] if m.get("type") != COMPACTION_MARK)
        if hidden:
            chat.add_note(f"{hidden} earlier message(s) not shown")
        for m in shown:
            if m.get("type") == COMPACTION_MARK:
                when = one_line(str(m.get("time") or "")[:16].replace("T", " "), 16)
                chat.add_note(
                    f"── compacted{' ' + when if when else ''}: the model has a summary of the "
                    f"{one_line(m.get('summarised', 0), 12)} message(s) before this line, not the messages ──"
                )
            else:
                self._message(m, results)

    def _message(self, m: Message, results: dict[str, Message]) -> None:
        # The app loads this module before its first frame: the conversation's modules only for a resume.
        from app.agent.conversation.messages import is_app_note

        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        for b in blocks:
            if not isinstance(b, dict) or is_app_note(b):
                continue
            if b.get("type") == "text":
                text = str(b.get("text", ""))
                if not text.strip() or text.startswith(f"<{UPDATE_TAG}>"):
                    continue
                if m.get("role") == "user":
                    self._user_text(strip_terminal(text))
                else:
                    answer = self._chat().start_answer()
                    # The block's own stream coalesces; a finished answer is written once.
                    self._later(_write_answer, answer, strip_terminal(text))
            elif b.get("type") == "tool_use":
                self._tool_use(b, results.get(str(b.get("id", ""))))

    def _tool_use(self, use: Message, result: Message | None) -> None:
        call_id = str(use.get("id", ""))
        name = str(use.get("name", ""))
        block = self._chat().add_tool(call_id, one_line(name, 60), display_keys=display_keys(name))
        args = strip_terminal_deep(use.get("input") or {})
        block.set_running(args if isinstance(args, dict) else {})
        if result is not None:
            content = result.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            # The log keeps only the model's text: the bash tool reads its own status back from it.
            from app.agent.tools.shell import view_of_content

            view = widget_view(view_of_content(text)) if name == "bash" else None
            block.set_result(
                strip_terminal(text), is_error=bool(result.get("is_error")), denied=False, view=view
            )

    def _user_text(self, text: str) -> None:
        """An earlier user message; a large one collapsed as a paste would be (its typed form
        is not in the log, so the whole message is the paste)."""
        chat = self._chat()
        if is_large_paste(text):
            label = paste_label(text)
            chat.add_user(label, {label: text})
        else:
            chat.add_user(text)
