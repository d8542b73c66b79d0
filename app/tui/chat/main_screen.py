"""Typing reaches the prompt: keys and pastes that land where no text is taken, and keys that a
deciding window did not take as answers (widgets.dialogs.decision), go to the prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import events
from textual.screen import Screen
from textual.widgets import Input, TextArea

from widgets.chat.log import ChatPane
from widgets.chat.prompt import PromptInput
from widgets.dialogs import decision

if TYPE_CHECKING:
    from textual.app import App

__all__ = ["MainScreen", "PromptTyping", "selection_to_copy"]


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


class MainScreen(Screen[None]):
    """The chat's screen. Whenever it is on top again — a modal answered, a screen closed,
    however it was opened — the focus goes back to the prompt."""

    AUTO_FOCUS = "#prompt"  # from its first compose: keys typed before the first frame go there

    def on_screen_resume(self) -> None:
        prompt = getattr(self.app, "_prompt", None)
        if isinstance(prompt, PromptInput) and prompt.is_attached:
            self.set_focus(prompt)

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        """What the person sends is answered at the chat's end: a chat scrolled up to read goes
        back to it and follows again. Not stopped: the App sends the prompt."""
        for chat in self.query(ChatPane):
            chat.scroll_end(animate=False)

    def on_prompt_input_scroll_chat(self, event: PromptInput.ScrollChat) -> None:
        """PageUp/PageDown, Ctrl+Home/Ctrl+End in the prompt scroll the chat a page, to its top or
        its bottom (following it again there); at once, so a key held down is a page per key."""
        event.stop()
        for chat in self.query(ChatPane):
            if event.where == "page_up":
                chat.scroll_page_up(animate=False)
            elif event.where == "page_down":
                chat.scroll_page_down(animate=False)
            elif event.where == "top":
                chat.scroll_home(animate=False)
            else:
                chat.scroll_end(animate=False)


class PromptTyping:
    """Where typing that reached the App goes (the App calls it from its key, paste and event
    handlers); ``prompt()`` is the App's prompt, composed after this is made."""

    def __init__(self, app: App[Any], prompt: Callable[[], PromptInput]) -> None:
        self._app = app
        self._prompt = prompt
        self.last_key_at = float("-inf")  # when the last key arrived (deciding windows read it)

    def saw(self, event: events.Event) -> None:
        """Every event the App gets: a key's time is kept (a deciding window asks when the
        typing paused)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.last_key_at = decision.clock()

    def _stray_input(self, *, key: bool = False) -> bool:
        """On the chat's screen with the focus somewhere that takes no text (the panel, a tool
        block, the chat): typed and pasted text that reached the App belong to the prompt.

        A printable ``key`` that reaches the App while the prompt has the focus does too: the
        prompt takes every one it gets, so this one was delivered to the panel before the focus
        moved (a burst typed on the panel, whose first key gave the prompt the focus). A paste
        is not so: the prompt lets a small one go on after inserting it."""
        prompt = self._prompt()
        if not isinstance(self._app.screen, MainScreen) or not prompt.is_attached:
            return False
        focused = self._app.focused
        if focused is prompt:
            return key and not prompt.read_only
        return not isinstance(focused, (Input, TextArea))

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        """Keys a deciding window did not take as answers: into the prompt, when the window is
        over the chat (the prompt they were typed for); False over another screen."""
        stack = self._app.screen_stack
        prompt = self._prompt()
        if len(stack) < 2 or not isinstance(stack[-2], MainScreen) or not prompt.is_attached:
            return False
        for _ in range(backspaces):
            prompt.action_delete_left()
        if text:
            prompt.insert(text)
        return True

    def stray_key(self, event: events.Key) -> None:
        """A key no widget took. Printable ones go to the prompt (focused from now on), so text
        typed after a Tab or a closed screen is never lost and Enter then sends it."""
        if event.is_printable and event.character and self._stray_input(key=True):
            event.stop()
            event.prevent_default()  # not the App's bindings as well
            prompt = self._prompt()
            self._app.screen.set_focus(prompt)
            # Forwarded (not posted): were it to bubble back up, the App would not take it for a
            # new key and deliver it a second time.
            prompt._forward_event(events.Key(event.key, event.character))

    def stray_paste(self, event: events.Paste) -> None:
        if self._stray_input():
            event.stop()
            prompt = self._prompt()
            self._app.screen.set_focus(prompt)
            prompt._forward_event(events.Paste(event.text))  # once: see stray_key
