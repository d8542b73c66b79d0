"""Typing reaches the prompt: keys and pastes that land where no text is taken, and keys that a
deciding window did not take as answers (widgets.dialogs.decision), go to the chat's prompt."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual import events
from textual.widgets import Input, TextArea

from widgets.chat.prompt import TYPEAHEAD_ENTER_KEYS
from widgets.dialogs import decision

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

    from widgets.chat.prompt import PromptInput

__all__ = ["PromptTyping", "selection_to_copy"]


def selection_to_copy(app: App[Any]) -> bool:
    """Whether text is selected: in the prompt or an input (they say what of their text is), or
    on the screen with the mouse. Ctrl+C then copies it rather than cancelling the turn."""
    focused = app.focused
    if isinstance(focused, (Input, TextArea)) and focused.selected_text:
        return True
    try:
        return bool(app.screen.get_selected_text())
    except Exception:  # no screen yet, a widget removed mid-selection: nothing to copy
        return False


class PromptTyping:
    """Where typing goes: the App times every key (``saw``: it sees every key, on every screen)
    and hands back what a deciding window did not take (``take_typed_ahead``); the chat screen
    sends the keys and pastes no widget took to its prompt (``stray_key``, ``stray_paste``).
    ``screen`` is the chat's, ``prompt`` its prompt."""

    def __init__(self, screen: Screen[Any], prompt: PromptInput) -> None:
        self._screen = screen
        self._prompt = prompt
        self.last_key_at = float("-inf")  # when the last key arrived (deciding windows read it)

    def saw(self, event: events.Event) -> None:
        """Every event the App gets: a key's time is kept (a deciding window asks when the
        typing paused)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.last_key_at = decision.clock()

    def _stray_input(self, *, key: bool = False) -> bool:
        """On the chat's screen with the focus somewhere that takes no text (the panel, a tool
        block, the chat): typed and pasted text that reached the screen belong to the prompt.

        A printable ``key`` that reaches the screen while the prompt has the focus does too: the
        prompt takes every one it gets, so this one was delivered to the panel before the focus
        moved (a burst typed on the panel, whose first key gave the prompt the focus). A paste
        is not so: the prompt lets a small one go on after inserting it."""
        prompt = self._prompt
        if self._screen.app.screen is not self._screen or not prompt.is_attached:
            return False
        focused = self._screen.app.focused
        if focused is prompt:
            return key and not prompt.read_only
        return not isinstance(focused, (Input, TextArea))

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        """Keys a deciding window did not take as answers: into the prompt, when the window is
        over the chat (the prompt they were typed for); False over another screen."""
        stack = self._screen.app.screen_stack
        prompt = self._prompt
        if len(stack) < 2 or stack[-2] is not self._screen or not prompt.is_attached:
            return False
        for _ in range(backspaces):
            prompt.action_delete_left()
        if text:
            prompt.insert(text)
        return True

    def stray_key(self, event: events.Key) -> None:
        """A key no widget took. Printable ones go to the prompt (focused from now on), so text
        typed after a Tab or a closed screen is never lost and Enter then sends it. An Enter
        typed blind, before the first frame gave the prompt the focus, reaches the screen too:
        it is the prompt's, or the words typed with it would wait unsent."""
        if self._blind_enter(event):
            event.stop()
            event.prevent_default()
            self._screen.set_focus(self._prompt)
            self._prompt._forward_event(events.Key("enter", None))  # once: see below
            return
        if event.is_printable and event.character and self._stray_input(key=True):
            event.stop()
            event.prevent_default()  # not the screen's or the App's bindings as well
            self._screen.set_focus(self._prompt)
            # Forwarded (not posted): were it to bubble back up, the App would not take it for a
            # new key and deliver it a second time.
            self._prompt._forward_event(events.Key(event.key, event.character))

    def _blind_enter(self, event: events.Key) -> bool:
        """An Enter (or what a terminal not yet in raw mode sends for it) that no widget took
        while the prompt still counts keys as typed ahead of the app's start."""
        prompt = self._prompt
        return (
            (event.key == "enter" or event.key in TYPEAHEAD_ENTER_KEYS)
            and time.monotonic() < prompt.typeahead_enter_until
            and self._screen.app.screen is self._screen
            and prompt.is_attached
            and self._screen.app.focused in (None, prompt)
        )

    def stray_paste(self, event: events.Paste) -> None:
        if self._stray_input():
            event.stop()
            self._screen.set_focus(self._prompt)
            self._prompt._forward_event(events.Paste(event.text))  # once: see stray_key
