"""The prompt: a multi-line input that sends on Enter, recalls history and completes ``/`` and ``@``.

Keys are a contract (the README's key map lists them): Enter sends; Shift+Enter and Ctrl+J
insert a newline (many terminals send Shift+Enter as plain Enter; Ctrl+J always works); Up on
the first line and Down on the last line walk the history. While a completion dropdown is
open, Up/Down move in it, Tab or Enter accept, Esc closes it. PageUp/PageDown (Shift too) and
Ctrl+Home/Ctrl+End scroll the chat, not the prompt (a few lines, where Up/Down and Home/End
move): the prompt says so with ``ScrollChat`` and keeps the focus. The widget only reacts: the
App supplies the history and the completer and decides what a submitted text means.

A large paste (more than ``LARGE_PASTE_LINES`` lines or ``LARGE_PASTE_CHARS`` characters) shows as
one placeholder such as ``[pasted 3,000 lines, 195.3 KiB]``; the pasted text is kept and put back in
place of its placeholder when the prompt is sent, so ``Submitted.text`` is the whole message.
Every paste, of any size, has its line ends made LF first (terminals and ``tmux paste-buffer``
send CR): the placeholder counts those lines and the model gets them. The App may claim a paste
first (``set_paste_claim``: a pasted path to an image file becomes the image's label), and
Ctrl+V asks its clipboard hook (an image on the system clipboard) before TextArea's own paste.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option
from textual.widgets.text_area import Document

from memory.text.terminal import line_count, strip_terminal
from widgets.chat.sizes import size_label

__all__ = [
    "LARGE_PASTE_CHARS",
    "LARGE_PASTE_LINES",
    "CompletionDropdown",
    "PromptInput",
    "Suggestion",
    "expand_pastes",
    "is_large_paste",
    "lf_line_ends",
    "paste_label",
]

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "newline", "alt+enter", "ctrl+enter"})
# What Enter typed before the app put the terminal in raw mode arrives as: the terminal's line
# discipline (ICRNL) had already turned its CR into a LF, which reads as Ctrl+J.
TYPEAHEAD_ENTER_KEYS = frozenset({"ctrl+j", "newline"})
# A paste above either bound is collapsed to a placeholder: a few lines stay editable in place,
# a log or a file would fill the prompt (and the transcript) with what nobody reads there.
LARGE_PASTE_LINES = 10
LARGE_PASTE_CHARS = 1_000


def lf_line_ends(text: str) -> str:
    """``text`` with each CR LF and lone CR made a LF: a terminal's paste ends its lines in CR
    (``tmux paste-buffer -p`` turns every LF into one), which no model reads as a line break."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def is_large_paste(text: str) -> bool:
    """More than ``LARGE_PASTE_LINES`` lines or ``LARGE_PASTE_CHARS`` characters."""
    return len(text) > LARGE_PASTE_CHARS or line_count(text) > LARGE_PASTE_LINES


def paste_label(text: str, taken: Mapping[str, str] | None = None) -> str:
    """The placeholder of a collapsed paste, e.g. ``[pasted 3,000 lines, 195.3 KiB]``; numbered
    (``[pasted #2 · …]``) when that label is in ``taken`` already."""
    lines = max(1, line_count(text))  # a line break at the very end starts no further line
    size = size_label(len(text.encode("utf-8", "surrogatepass")))
    what = f"{lines:,} line{'s' if lines != 1 else ''}, {size}"
    label = f"[pasted {what}]"
    n = 1
    while taken is not None and label in taken:
        n += 1
        label = f"[pasted #{n} · {what}]"
    return label


def expand_pastes(text: str, pastes: Mapping[str, str]) -> str:
    """``text`` with each placeholder of ``pastes`` replaced by its pasted text (in one pass: a
    pasted text that contains a placeholder is not expanded again)."""
    if not pastes:
        return text
    pattern = re.compile("|".join(re.escape(label) for label in sorted(pastes, key=len, reverse=True)))
    return pattern.sub(lambda m: pastes[m.group(0)], text)


@dataclass(frozen=True)
class Suggestion:
    label: str
    insert: str
    kind: Literal["command", "file"]
    detail: str = ""


Completer = Callable[[str, int], list[Suggestion]]


class CompletionDropdown(OptionList, can_focus=False):
    """The suggestions, drawn over the screen just above the prompt (focus stays in the prompt)."""

    MAX_ROWS: ClassVar[int] = 8

    DEFAULT_CSS = """
    CompletionDropdown {
        overlay: screen;
        position: absolute;
        display: none;
        width: auto;
        min-width: 24;
        max-width: 90;
        border: round $primary;
        background: $surface;
        padding: 0;
        scrollbar-size-vertical: 1;
        & > .option-list--option {
            padding: 0 1;
        }
    }
    """

    def __init__(self, owner: PromptInput) -> None:
        super().__init__()
        self._owner = owner

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._owner.accept_suggestion(event.option_index)


class PromptInput(TextArea):
    """Enter posts ``PromptInput.Submitted(text)`` and clears the input."""

    @dataclass
    class Submitted(Message):
        text: str
        """The message as sent: every paste placeholder replaced by its text."""
        typed: str = ""
        """As the prompt showed it (placeholders kept); "" when the same as ``text``."""
        pastes: dict[str, str] = field(default_factory=dict)
        """placeholder -> pasted text, for the placeholders in ``typed``."""

    @dataclass
    class ScrollChat(Message):
        """A key that scrolls the chat was pressed in the prompt (the focus stays here)."""

        where: Literal["page_up", "page_down", "top", "bottom"]

    # In place of TextArea's PageUp/PageDown, which move the cursor within the prompt.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup,shift+pageup", "scroll_chat('page_up')", "Scroll the chat up", show=False),
        Binding("pagedown,shift+pagedown", "scroll_chat('page_down')", "Scroll the chat down", show=False),
        Binding("ctrl+home", "scroll_chat('top')", "The chat's top", show=False),
        Binding("ctrl+end", "scroll_chat('bottom')", "The chat's bottom", show=False),
    ]

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: round $border-blurred;
        padding: 0 1;
        &:focus {
            border: round $primary;
        }
        &.-disabled-reason {
            border: round $warning 60%;
        }
        & .text-area--cursor-line {
            background: transparent;
        }
    }
    """

    disabled_reason: reactive[str | None] = reactive(None, init=False)
    """While set (e.g. "a turn is running"), Enter does not submit; the reason shows on the border."""

    notice: reactive[str | None] = reactive(None, init=False)
    """A remark on the border that does not stop Enter (e.g. "connecting… Enter queues");
    ``disabled_reason`` is shown instead while it is set."""

    def __init__(
        self,
        text: str = "",
        *,
        placeholder: str = "Ask anything · / commands · @ files · Ctrl+J new line",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(
            text,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=placeholder,
            id=id,
            classes=classes,
        )
        self._history: list[str] = []
        # Until this time.monotonic(), a Ctrl+J is an Enter typed ahead of the app's start (set
        # by the App: nobody means a literal Ctrl+J before the screen is even up).
        self.typeahead_enter_until = 0.0
        self._history_index: int | None = None  # None: editing the draft, not a recalled entry
        self._draft = ""
        self._completer: Completer | None = None
        self._dropdown: CompletionDropdown | None = None
        self._suggestions: list[Suggestion] = []
        self._span = (0, 0)  # the word being completed, as text offsets
        self._dismissed_text: str | None = None  # Esc closed the dropdown for this text
        self._loaded_text: str | None = None  # set by recall or clearing: not a reason to complete
        self._on_key_hook: Callable[[], None] | None = None
        self._paste_claim: Callable[[str], bool] | None = None
        self._clipboard_paste: Callable[[], None] | None = None
        self._completed_for: tuple[str, tuple[int, int]] | None = None  # what the list was made for
        # placeholder -> pasted text, kept for the widget's life: a recalled prompt still has them.
        self._pastes: dict[str, str] = {}

    # -- public API --

    def set_history(self, items: list[str]) -> None:
        """Past prompts, oldest first (the App loads them from disk)."""
        self._history = list(items)
        self._history_index = None

    def set_completer(self, fn: Completer | None) -> None:
        self._completer = fn
        if fn is None:
            self._close_dropdown()

    def set_paste_claim(self, fn: Callable[[str], bool] | None) -> None:
        """``fn(text)`` is asked first about each paste (line ends made LF): True, it takes the
        paste and puts what it stands for in later (``insert_paste``); False, it is text."""
        self._paste_claim = fn

    def set_clipboard_paste(self, fn: Callable[[], None] | None) -> None:
        """``fn()`` does Ctrl+V's paste instead of TextArea's (None: TextArea's)."""
        self._clipboard_paste = fn

    def set_on_key(self, fn: Callable[[], None] | None) -> None:
        """``fn()`` is called as each key reaches the prompt, before it is handled (the App
        lets a streaming answer write right after the keystroke's frame, not before it)."""
        self._on_key_hook = fn

    @property
    def suggestions(self) -> tuple[Suggestion, ...]:
        """What the dropdown offers now (empty when it is closed)."""
        return tuple(self._suggestions) if self.completion_visible else ()

    @property
    def completion_visible(self) -> bool:
        return self._dropdown is not None and self._dropdown.display and bool(self._suggestions)

    @property
    def pastes(self) -> dict[str, str]:
        """placeholder -> pasted text, for the placeholders in the prompt now."""
        text = self.text
        return {label: pasted for label, pasted in self._pastes.items() if label in text}

    def expanded_text(self) -> str:
        """The prompt's text with every paste placeholder replaced by its pasted text."""
        return lf_line_ends(expand_pastes(self.text, self.pastes))

    def submit(self) -> bool:
        """Send the text (as Enter does); False when empty or ``disabled_reason`` is set."""
        typed = self.text.strip()
        if not typed or self.disabled_reason is not None:
            if self.disabled_reason is not None:
                self.app.bell()
            return False
        self._close_dropdown()
        # History keeps the placeholders: a recalled prompt is as short as it was typed.
        if not self._history or self._history[-1] != typed:
            self._history.append(typed)
        self._history_index = None
        self._draft = ""
        self._loaded_text = ""
        pastes = {label: pasted for label, pasted in self._pastes.items() if label in typed}
        # LF line ends (a recalled prompt may hold CRs: the document keeps the line ends it was
        # loaded with); no trailing blank lines a paste brought, as the typed text has none.
        text = lf_line_ends(expand_pastes(typed, pastes)).rstrip()
        self.clear()
        self.post_message(self.Submitted(text, typed if pastes else "", pastes))
        return True

    async def _on_paste(self, event: events.Paste) -> None:
        if self.read_only:
            return
        event.prevent_default()  # not TextArea's insert as well
        event.stop()
        text = lf_line_ends(event.text)  # before the lines are counted, whatever the size
        if self._paste_claim is not None and self._paste_claim(text):
            self.focus()
            return  # the claimant puts in what it stands for (an image's label), or the text
        self.insert_paste(text)

    def insert_paste(self, text: str) -> None:
        """``text`` at the cursor as a paste puts it (a large one as its placeholder)."""
        text = lf_line_ends(text)
        if is_large_paste(text):
            label = paste_label(text, self._pastes)
            self._pastes[label] = text
            text = label
        if result := self._replace_via_keyboard(text, *self.selection):
            self.move_cursor(result.end_location)
        self.focus()

    def action_paste(self) -> None:
        """Ctrl+V: the clipboard hook's (an image from the system clipboard), else TextArea's
        paste of the app's own clipboard."""
        if self.read_only:
            return
        if self._clipboard_paste is not None:
            self._clipboard_paste()
        else:
            super().action_paste()

    def accept_suggestion(self, index: int | None = None) -> None:
        """Replace the word being completed by the highlighted (or given) suggestion."""
        if not self._suggestions:
            return
        if index is None:
            highlighted = self._dropdown.highlighted if self._dropdown is not None else None
            index = highlighted if highlighted is not None else 0
        if not 0 <= index < len(self._suggestions):
            return
        suggestion = self._suggestions[index]
        insert = suggestion.insert
        start, end = self._span
        after = self.text[end : end + 1]
        # A finished word gets a space; a directory ("@src/") keeps completing.
        if insert and not insert[-1].isspace() and not insert.endswith("/") and not after.isspace():
            insert += " "
        elif insert.endswith(" ") and after == " ":
            insert = insert[:-1]
        doc = self._text_document
        result = self.replace(insert, doc.get_location_from_index(start), doc.get_location_from_index(end))
        self.move_cursor(result.end_location)
        self._close_dropdown()

    def _typed_in_full(self) -> bool:
        """The word being completed is already the highlighted suggestion."""
        if self._dropdown is None or self._dropdown.highlighted is None:
            return False
        suggestion = self._suggestions[self._dropdown.highlighted]
        start, end = self._span
        return self.text[start:end] == suggestion.insert.strip()

    # -- keys --

    def action_scroll_chat(self, where: Literal["page_up", "page_down", "top", "bottom"]) -> None:
        self.post_message(self.ScrollChat(where))

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key in TYPEAHEAD_ENTER_KEYS and time.monotonic() < self.typeahead_enter_until:
            key = "enter"
        if self._on_key_hook is not None:
            self._on_key_hook()
        if self.completion_visible and self._completed_for != (self.text, self.cursor_location):
            # Keys that arrive in one burst (a fast typist, a paste, a slow machine) are handled
            # before the Changed messages they cause: the list must be for this text, not the
            # text of the last Changed, or Enter would replace a stale span.
            self._update_completion()
        if self.completion_visible:
            handled = True
            dropdown = self._dropdown
            assert dropdown is not None
            if key == "up":
                dropdown.action_cursor_up()
            elif key == "down":
                dropdown.action_cursor_down()
            elif key == "enter" and self._typed_in_full():
                handled = False  # "/help" typed out: Enter sends it, as it would without the list
                self._close_dropdown()
            elif key in ("tab", "enter"):
                self.accept_suggestion()
            elif key == "escape":
                self._dismissed_text = self.text
                self._close_dropdown()
            else:
                handled = False
            if handled:
                event.stop()
                event.prevent_default()
                return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
        elif key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
        elif key == "up" and self._history and self.navigator.is_first_wrapped_line(self.cursor_location):
            event.stop()
            event.prevent_default()
            self._recall(-1)
        elif (
            key == "down"
            and self._history_index is not None
            and self.navigator.is_last_wrapped_line(self.cursor_location)
        ):
            event.stop()
            event.prevent_default()
            self._recall(+1)
        # Everything else: TextArea's own handling (printable keys, then its bindings).

    def _recall(self, step: int) -> None:
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self._history) - 1
        else:
            index = self._history_index + step
        if index < 0:
            return  # already at the oldest entry
        if index >= len(self._history):
            self._history_index = None
            self._load(self._draft)
            return
        self._history_index = index
        self._load(self._history[index])

    def _load(self, text: str) -> None:
        self._loaded_text = text
        self.load_text(text)
        self.move_cursor(self.document.end)
        self._close_dropdown()

    # -- completion --

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is not self:
            return
        loaded, self._loaded_text = self._loaded_text, None
        if loaded is not None and self.text == loaded:
            return
        self._update_completion()

    def _update_completion(self) -> None:
        text = self.text
        self._completed_for = (text, self.cursor_location)
        if self._completer is None or text == self._dismissed_text:
            self._close_dropdown()
            return
        self._dismissed_text = None
        offset = self._text_document.get_index_from_location(self.cursor_location)
        start = offset
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        end = offset
        while end < len(text) and not text[end].isspace():
            end += 1
        word = text[start:end]
        wanted = word.startswith("@") or (word.startswith("/") and not text[:start].strip())
        suggestions: list[Suggestion] = []
        if wanted:
            try:
                suggestions = list(self._completer(text, offset))
            except Exception as error:  # a broken completer must not break typing
                self.log.error("completer failed", error)
                suggestions = []
        if not suggestions:
            self._close_dropdown()
            return
        self._span = (start, end)
        self._show_dropdown(suggestions)

    def _show_dropdown(self, suggestions: list[Suggestion]) -> None:
        self._suggestions = suggestions
        dropdown = self._dropdown
        if dropdown is None or not dropdown.is_attached:
            dropdown = self._dropdown = CompletionDropdown(self)
            self.screen.mount(dropdown)
        dropdown.set_options(_option(s) for s in suggestions)
        # An exact match is highlighted, so Enter after "/mode" sends it rather than "/model".
        start, end = self._span
        word = self.text[start:end]
        dropdown.highlighted = next((i for i, s in enumerate(suggestions) if s.insert.strip() == word), 0)
        rows = min(len(suggestions), CompletionDropdown.MAX_ROWS)
        height = rows + 2  # the border
        region = self.region
        # Above the prompt (it sits at the bottom); below it when there is no room above.
        y = region.y - height if region.y >= height else region.bottom
        dropdown.styles.height = height
        dropdown.styles.offset = (region.x + 1, y)
        dropdown.display = True

    @property
    def _text_document(self) -> Document:
        # TextArea types its document as DocumentBase; without a language it is a Document,
        # the class with the index <-> location conversions.
        doc = self.document
        assert isinstance(doc, Document)
        return doc

    def _close_dropdown(self) -> None:
        self._suggestions = []
        if self._dropdown is not None:
            self._dropdown.display = False

    def on_resize(self) -> None:
        if self.completion_visible:  # the prompt grew or the terminal changed: follow it
            self._show_dropdown(self._suggestions)

    def on_blur(self) -> None:
        self._close_dropdown()

    def on_unmount(self) -> None:
        if self._dropdown is not None:
            self._dropdown.remove()
            self._dropdown = None

    # -- disabled reason --

    def watch_disabled_reason(self, reason: str | None) -> None:
        self.set_class(reason is not None, "-disabled-reason")
        self._show_border_note()

    def watch_notice(self, notice: str | None) -> None:
        self._show_border_note()

    def _show_border_note(self) -> None:
        note = self.disabled_reason if self.disabled_reason is not None else self.notice
        self.border_subtitle = Content(strip_terminal(note, keep_newlines=False)) if note else None


def _option(suggestion: Suggestion) -> Option:
    label = strip_terminal(suggestion.label, keep_newlines=False)
    detail = strip_terminal(suggestion.detail, keep_newlines=False)
    parts: list[Any] = [(label, "bold" if suggestion.kind == "command" else "")]
    if detail:
        parts.append(("  " + detail, "$foreground-muted"))
    return Option(Content.assemble(*parts))
