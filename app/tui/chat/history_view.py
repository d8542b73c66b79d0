"""A resumed session's conversation drawn in the chat pane.

What the session's log holds before its compaction boundaries is drawn first (one line marks
each boundary): a compacted session reads as it was lived, though the model is sent only the
compacted part. The memory model's update messages and the app's own notes are not drawn; the
model's thinking is, collapsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from app.tui.chat.turn_view import display_keys, widget_view
from memory.constants import UPDATE_TAG
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal, strip_terminal_deep
from widgets.chat.prompt import is_large_paste, paste_label

if TYPE_CHECKING:
    from app.agent.conversation.blocks import Message, ToolResultBlock, ToolUseBlock
    from app.agent.conversation.session_log import CompactionMark
    from widgets.chat.answer_block import AnswerBlock
    from widgets.chat.log import ChatPane

HISTORY_SHOWN = 200  # messages of a resumed session drawn (the pane prunes beyond its bound anyway)

# Runs a coroutine later, on the chat screen's loop (``call_later``).
Later = Callable[[Callable[..., Coroutine[Any, Any, None]], Any, Any], object]


class SessionLike(Protocol):
    """What is read of the open session: the messages before its compaction boundaries."""

    @property
    def earlier(self) -> Sequence[Message | CompactionMark]: ...

    @property
    def earlier_left_out(self) -> int: ...


def _tool_results(items: Sequence[Message | CompactionMark]) -> dict[str, ToolResultBlock]:
    # The app loads this module before its first frame: the conversation's modules only for a resume.
    from app.agent.conversation.blocks import Message

    return {
        r.tool_use_id: r
        for m in items
        if isinstance(m, Message) and m.role == "user"
        for r in m.tool_results()
    }


def _result_text(result: ToolResultBlock) -> str:
    """A result's content as the log holds it: its text, or its blocks' (an image's label is
    its text: the image itself is the model's, never its base64 on the screen)."""
    content = result.content
    if isinstance(content, str):
        return content
    parts = [
        str(getattr(c, "text", ""))
        if c.type == "text"
        else json.dumps(c.model_dump(mode="json"), ensure_ascii=False)
        for c in content
        if c.type != "image"
    ]
    return "\n".join(parts)


def _is_label(text: str) -> bool:
    """Whether a text block is an image's label (``[Image #1: shot.png 1280×720]``)."""
    return text.startswith("[Image #") and text.endswith("]") and "\n" not in text


async def _write_answer(answer: AnswerBlock, text: str) -> None:
    await answer.append(text)
    await answer.finish()


class HistoryView:
    """Draws earlier messages; ``later`` schedules an answer's writing (a coroutine)."""

    def __init__(self, chat: Callable[[], ChatPane], later: Later) -> None:
        self._chat = chat
        self._later = later

    def show(self, messages: Sequence[Message], session: SessionLike | None) -> None:
        """Draw the session's ``messages``, preceded by its ``earlier`` ones."""
        # The app loads this module before its first frame: the session log's modules only for a resume.
        from app.agent.conversation.session_log import CompactionMark

        chat = self._chat()
        earlier = list(session.earlier) if session is not None else []
        items: list[Message | CompactionMark] = [*earlier, *messages]
        results = _tool_results(items)
        shown = items[-HISTORY_SHOWN:]
        hidden = session.earlier_left_out if session is not None and earlier else 0
        hidden += sum(1 for m in items[: len(items) - len(shown)] if not isinstance(m, CompactionMark))
        if hidden:
            chat.add_note(f"{hidden} earlier message(s) not shown")
        for m in shown:
            if isinstance(m, CompactionMark):
                when = one_line(m.time[:16].replace("T", " "), 16)
                chat.add_note(
                    f"── compacted{' ' + when if when else ''}: the model has a summary of the "
                    f"{one_line(m.summarised, 12)} message(s) before this line, not the messages ──"
                )
            else:
                self._message(m, results)

    def _message(self, m: Message, results: dict[str, ToolResultBlock]) -> None:
        # The app loads this module before its first frame: the conversation's modules only for a resume.
        from app.agent.conversation.blocks import (
            RedactedThinkingBlock,
            TextBlock,
            ThinkingBlock,
            ToolUseBlock,
        )
        from app.agent.conversation.messages import is_app_note

        # A prompt's words and its attached files are blocks of one message: drawn as the one
        # entry the person sent, as the chat drew it then. An image shows as its label (a
        # pasted image's once: its label is in the words too), never as its data.
        said: list[str] = []
        for b in m.content:
            if is_app_note(b):
                continue
            if isinstance(b, TextBlock):
                text = b.text
                if not text.strip() or text.startswith(f"<{UPDATE_TAG}>"):
                    continue
                if m.role == "user" and said and _is_label(text) and text in said[0]:
                    continue
                if m.role == "user":
                    said.append(text)
                else:
                    answer = self._chat().start_answer()
                    # The block's own stream coalesces; a finished answer is written once.
                    self._later(_write_answer, answer, strip_terminal(text))
            elif isinstance(b, ToolUseBlock):
                self._tool_use(b, results.get(b.id))
            elif isinstance(b, ThinkingBlock | RedactedThinkingBlock):
                # Collapsed, as it was drawn once its turn went on (its time is not kept).
                redacted = isinstance(b, RedactedThinkingBlock)
                self._chat().add_thinking(getattr(b, "thinking", ""), redacted=redacted, streaming=False)
        if said:
            self._user_text(strip_terminal("\n\n".join(said)))

    def _tool_use(self, use: ToolUseBlock, result: ToolResultBlock | None) -> None:
        block = self._chat().add_tool(use.id, one_line(use.name, 60), display_keys=display_keys(use.name))
        args = strip_terminal_deep(use.input)
        block.set_running(args if isinstance(args, dict) else {})
        if result is not None:
            text = _result_text(result)
            # The log keeps only the model's text: the bash tool reads its own status back from it.
            from app.agent.tools.shell import view_of_content

            view = widget_view(view_of_content(text)) if use.name == "bash" else None
            block.set_result(strip_terminal(text), is_error=bool(result.is_error), denied=False, view=view)

    def _user_text(self, text: str) -> None:
        """An earlier user message; a large one collapsed as a paste would be (its typed form
        is not in the log, so the whole message is the paste)."""
        chat = self._chat()
        if is_large_paste(text):
            label = paste_label(text)
            chat.add_user(label, {label: text})
        else:
            chat.add_user(text)
