"""The model's thinking in the chat, and the keys that act on it.

A turn's thinking streams into one collapsed block per thinking block of a response ("Thinking…"),
which ends — "Thought for N s", the time the person waited on it — when anything else of the turn
arrives (its answer, a tool call, the response's usage, a retry, the turn's end). A redacted block
is one line of its own. A sub-agent does not think (app.agent.turn.deps), so only the top-level
agent's thinking is drawn. Print mode never prints thinking (app.cli.print_mode has no case for
it).

Keys: **Ctrl+O** expands or collapses every thinking block of the chat (the opposite of the
newest one's state) and new ones follow that choice; **Tab on an empty prompt** turns extended
thinking on or off for the next turns (a running turn keeps the configuration it started with),
shown in the status line. Tab on a prompt with text keeps its meaning: the memory panel (or the
completion's choice, which the prompt takes first).

This module is loaded before the app's first frame: the widgets' and the agent's modules only
when a thinking block is first drawn or a key is pressed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events

if TYPE_CHECKING:
    from app.agent.model.provider import ThinkingDelta
    from app.tui.app_state import AppState
    from widgets.chat.log import ChatPane
    from widgets.chat.prompt import PromptInput
    from widgets.chat.thinking_block import ThinkingBlock

__all__ = ["ThinkingView"]


class ThinkingView:
    """The open thinking block of the turn (``block``), Ctrl+O's choice (``expanded``) and the
    toggle of thinking itself."""

    def __init__(self, chat: Callable[[], ChatPane]) -> None:
        self._chat = chat
        self.block: ThinkingBlock | None = None
        self._started = 0.0
        self.expanded = False  # Ctrl+O's last choice: a new block opens like this

    # -- a turn's thinking ----------------------------------------------------------------------

    def delta(self, ev: ThinkingDelta) -> None:
        if ev.depth:
            return
        if ev.redacted:
            self.close()
            self._chat().add_thinking(redacted=True, expanded=self.expanded)
            return
        if self.block is None:
            self.block = self._chat().add_thinking(expanded=self.expanded)
            self._started = time.monotonic()
        if ev.text:
            self.block.append(ev.text)

    def close(self) -> None:
        """The open block's thinking ended now (nothing open: nothing to do)."""
        block, self.block = self.block, None
        if block is not None:
            block.finish(time.monotonic() - self._started)

    # -- keys -------------------------------------------------------------------------------------

    def toggle_blocks(self) -> None:
        """Ctrl+O: every thinking block of the chat expanded, or all collapsed."""
        blocks = self._chat().thinking_blocks()
        self.expanded = not blocks[-1].expanded if blocks else not self.expanded
        for block in blocks:
            block.expanded = self.expanded


def tab_toggles_thinking(event: events.Key, prompt: PromptInput, focused: object) -> bool:
    """Whether ``event`` is a Tab on the empty prompt (with the focus, no completion open)."""
    return (
        event.key == "tab"
        and focused is prompt
        and not prompt.text.strip()
        and not prompt.completion_visible
        and not prompt.read_only
    )


def toggle_thinking(state: AppState) -> str:
    """Turn extended thinking on or off for the next turns; "" when done, else why not (one
    line: the settings are not loaded yet, the budget does not fit ``max_tokens``)."""
    settings = state.bridge.settings
    if settings is None:
        return "thinking can be turned on once the settings are loaded (a moment after the start)"
    on = not settings.thinking
    services = state.built_services()
    try:
        if services is not None:
            services.session.set_thinking(on)  # the runtime's settings and its Runner
        else:
            settings.turn_thinking(on)  # the runtime built later reads it
    except ValueError as e:
        return str(e)
    state.status.update(thinking=on)
    return ""
