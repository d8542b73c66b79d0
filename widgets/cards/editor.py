"""The card editor screen: create or edit one memory card (title, summary, type, level, body).

The App pushes it. It never touches the disk: Ctrl+S posts ``CardEditor.Save`` with the current
fields and the file's identity as loaded (name, hash, level); the App validates and saves, then
dismisses the editor, shows field errors on it (``show_errors``) or, when the file changed on
disk since it was read, pushes ``ConflictModal`` with both versions and reloads the editor
(``load``) if the person takes the disk's.

Keys are a contract: Ctrl+S saves from any field (a priority binding: Input and TextArea must not
swallow it); Esc cancels, asking first when there are unsaved changes (a normal binding, so an open
Select dropdown closes on Esc instead); Tab moves to the next field (the body keeps Textual's
``tab_behavior="focus"``). Card text may come from a cloned repository: everything shown is
passed through ``strip_terminal`` and drawn as plain text, never as markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import EllipsisType
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from widgets.cards.draft import (
    CARD_TYPES,
    FIELDS,
    LEVELS,
    CardDraft,
    as_typed,
    clean_draft,
    format_cites,
    parse_cites,
)
from widgets.dialogs.confirm import ConfirmModal

__all__ = ["WIDE", "CardEditor"]

KEY_HINTS = "Ctrl+S save · Ctrl+T still true · Esc cancel · Tab next field"
PINNED_LABEL = "Pinned: always first into the prompt's index"
CITES_PLACEHOLDER = "files it rests on, comma-separated: Makefile, src/app.py:10-40"
# Below this width Type and Level are stacked; at or above it they share a row.
WIDE = 100


def _line_field(value: str, id: str, placeholder: str) -> Input:
    """A one-line field. It opens with the cursor at the end of its text, nothing selected
    (Input's default selects it all: the first key typed would replace the card's title)."""
    return Input(value, id=id, compact=True, placeholder=placeholder, select_on_focus=False)


def _options(values: Iterable[str]) -> list[tuple[Text, str]]:
    # Text, not str: a Select prompt given as str would be parsed as markup.
    return [(Text(as_typed(v)), v) for v in values]


class CardEditor(Screen[str | None]):
    """Create or edit one card; dismisses with None (the App dismisses it after a save)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        # "Still true" for the card as it is on disk: its citations are taken again.
        Binding("ctrl+t", "still_true", "Still true", priority=True),
        # Not priority: the focused widget (an open Select dropdown) gets Esc first.
        Binding("escape", "cancel", "Cancel"),
    ]

    # Textual declares it on Screen as a plain attribute, not a ClassVar (mypy), yet it is one.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (WIDE, "-wide")]  # noqa: RUF012

    DEFAULT_CSS = """
    CardEditor {
        layout: vertical;
        padding: 0 1;
        #heading { height: 1; }
        #general-error {
            height: auto;
            color: $text-error;
            display: none;
            &.-shown { display: block; }
        }
        .field { height: auto; }
        .row { height: auto; }
        .field-label {
            width: 9;
            color: $text-muted;
        }
        .row > Input, .row > Select { width: 1fr; }
        .error {
            height: auto;
            padding: 0 0 0 9;
            color: $text-error;
            display: none;
            &.-shown { display: block; }
        }
        #meta {
            height: auto;
            layout: vertical;
        }
        &.-wide #meta { layout: horizontal; }
        &.-wide #meta > .field { width: 1fr; }
        &.-wide #level-field { padding: 0 0 0 2; }
        #pinned { margin: 0 0 0 9; }
        #body-field {
            height: 1fr;
            min-height: 6;
        }
        #body-label {
            height: 1;
            color: $text-muted;
        }
        #body {
            height: 1fr;
            min-height: 5;
        }
        #body-error { padding: 0; }
        #footer {
            dock: bottom;
            height: 1;
        }
        #status {
            width: 1fr;
            color: $text-warning;
        }
        #hints {
            width: auto;
            color: $text-muted;
        }
    }
    """

    @dataclass
    class Save(Message):
        """Ctrl+S: the App validates and saves ``draft`` (off the event loop).

        ``filename``/``sha256``/``original_level`` identify the file as it was loaded (None for a
        new card) so the App can notice a change on disk since then. ``cites``: the citations
        when the person changed them, None when left alone (the card keeps its own)."""

        editor: CardEditor
        draft: CardDraft
        filename: str | None
        sha256: str | None
        original_level: str | None
        cites: tuple[str, ...] | None = None
        pinned: bool | None = None  # the Pinned box when the person changed it (None: left alone)

        @property
        def control(self) -> CardEditor:
            return self.editor

    @dataclass
    class StillTrue(Message):
        """Ctrl+T on a card left as loaded: the App confirms it (its citations' content ids taken
        again, off the event loop) and closes the editor."""

        editor: CardEditor
        level: str
        filename: str
        sha256: str | None

        @property
        def control(self) -> CardEditor:
            return self.editor

    def __init__(
        self,
        draft: CardDraft,
        *,
        filename: str | None = None,
        sha256: str | None = None,
        levels: tuple[str, ...] = LEVELS,
        heading: str | None = None,
    ) -> None:
        super().__init__()
        self.filename: str | None = filename
        self.sha256: str | None = sha256
        self._levels = tuple(levels)
        self._heading = heading
        self._loaded = self._normalise(draft)
        self.original_level: str = self._loaded.level
        self._level_options = self._level_values(self._loaded.level)
        self._saving = False
        self._errors: dict[str, str] = {}

    # -- building -------------------------------------------------------------------------

    def _level_values(self, level: str) -> tuple[str, ...]:
        # A card at a level not offered (its store is unavailable) still shows where it is.
        if level and level not in self._levels:
            return (*self._levels, level)
        return self._levels or ((level,) if level else ("project",))

    def _normalise(self, draft: CardDraft) -> CardDraft:
        clean = clean_draft(draft)
        values = self._level_values(clean.level)
        return replace(clean, level=clean.level if clean.level in values else values[0])

    def _heading_content(self) -> Content:
        if self._heading is not None:
            heading = as_typed(self._heading)
        elif self.filename is None:
            heading = "New card"
        else:
            heading = f"Edit {as_typed(self.original_level)}/{as_typed(self.filename)}"
        return Content.assemble((heading, "bold"), (" · Ctrl+S save · Esc cancel", "dim"))

    def compose(self) -> ComposeResult:
        draft = self._loaded
        yield Static(self._heading_content(), id="heading")
        yield Label(Content(""), id="general-error")
        with Vertical(classes="field", id="title-field"):
            with Horizontal(classes="row"):
                yield Label("Title", classes="field-label")
                yield _line_field(draft.title, "title", "one line: what this card is")
            yield Label(Content(""), id="title-error", classes="error")
        with Vertical(classes="field", id="summary-field"):
            with Horizontal(classes="row"):
                yield Label("Summary", classes="field-label")
                yield _line_field(draft.summary, "summary", "one line: when it matters")
            yield Label(Content(""), id="summary-error", classes="error")
        with Horizontal(id="meta"):
            with Vertical(classes="field", id="type-field"):
                with Horizontal(classes="row"):
                    yield Label("Type", classes="field-label")
                    yield Select(
                        _options(CARD_TYPES),
                        id="type",
                        compact=True,
                        allow_blank=not draft.type,
                        value=draft.type or Select.NULL,
                        prompt="(choose a type)",
                    )
                yield Label(Content(""), id="type-error", classes="error")
            with Vertical(classes="field", id="level-field"):
                with Horizontal(classes="row"):
                    yield Label("Level", classes="field-label")
                    yield Select(
                        _options(self._level_options),
                        id="level",
                        compact=True,
                        allow_blank=False,
                        value=draft.level,
                    )
                yield Label(Content(""), id="level-error", classes="error")
        with Vertical(classes="field", id="cites-field"):
            with Horizontal(classes="row"):
                yield Label("Cites", classes="field-label")
                yield _line_field(format_cites(draft.cites), "cites", CITES_PLACEHOLDER)
            yield Label(Content(""), id="cites-error", classes="error")
        yield Checkbox(PINNED_LABEL, draft.pinned, id="pinned", compact=True)
        with Vertical(id="body-field"):
            yield Label("Body", id="body-label")
            yield TextArea(
                draft.body,
                id="body",
                language=None,
                soft_wrap=True,
                show_line_numbers=False,
                tab_behavior="focus",
            )
            yield Label(Content(""), id="body-error", classes="error")
        with Horizontal(id="footer"):
            yield Label(Content(""), id="status")
            yield Label(Content(KEY_HINTS), id="hints")

    def on_mount(self) -> None:
        self.query_one("#title", Input).focus()
        self._refresh_status()

    # -- public API -----------------------------------------------------------------------

    def draft(self) -> CardDraft:
        """The current field values."""
        type_value = self.query_one("#type", Select).value
        level_value = self.query_one("#level", Select).value
        return CardDraft(
            level=level_value if isinstance(level_value, str) else "",
            type=type_value if isinstance(type_value, str) else "",
            title=self.query_one("#title", Input).value,
            summary=self.query_one("#summary", Input).value,
            body=self.query_one("#body", TextArea).text,
            cites=parse_cites(self.query_one("#cites", Input).value),
            pinned=self.query_one("#pinned", Checkbox).value,
        )

    def changed_cites(self) -> tuple[str, ...] | None:
        """The citations if the person changed them since the card was loaded, else None."""
        cites = self.draft().cites
        return None if cites == self._loaded.cites else cites

    def changed_pinned(self) -> bool | None:
        """The Pinned box if the person changed it since the card was loaded, else None."""
        pinned = self.draft().pinned
        return None if pinned == self._loaded.pinned else pinned

    @property
    def dirty(self) -> bool:
        """The fields differ from the last loaded (or saved) draft."""
        return self.draft() != self._loaded

    @property
    def saving(self) -> bool:
        return self._saving

    def load(
        self, draft: CardDraft, *, sha256: str | None, filename: str | EllipsisType | None = ...
    ) -> None:
        """Replace every field (e.g. the person took the disk's version in a conflict): clean
        again, errors cleared, saving ended. ``filename`` left out keeps the current one."""
        if not isinstance(filename, EllipsisType):
            self.filename = filename
        self.sha256 = sha256
        clean = self._normalise(draft)
        self._loaded = clean
        self.original_level = clean.level
        self._fill(clean)
        self._saving = False
        self._show_errors({}, None)
        self.query_one("#heading", Static).update(self._heading_content())
        self._refresh_status()

    def show_errors(self, fields: Mapping[str, str], general: str | None = None) -> None:
        """Each message under its field, ``general`` on top; earlier errors cleared. Focuses the
        first field (in FIELDS order) with an error; ends the saving state."""
        self._saving = False
        self._show_errors(fields, general)
        for name in FIELDS:
            if self._errors.get(name):
                self.query_one(f"#{name}").focus()
                break
        self._refresh_status()

    def set_saving(self, saving: bool) -> None:
        """While saving, the status says so and Ctrl+S is ignored."""
        self._saving = saving
        self._refresh_status()

    def mark_saved(self, *, filename: str, sha256: str | None, level: str) -> None:
        """After a save that keeps the editor open: the saved file is now what is loaded."""
        self.filename = filename
        self.sha256 = sha256
        level_select = self.query_one("#level", Select)
        if level_select.value != level:
            self._set_level(level)
        self._loaded = replace(self.draft(), level=level)
        self.original_level = level
        self._saving = False
        self._show_errors({}, None)
        self.query_one("#heading", Static).update(self._heading_content())
        self._refresh_status()

    # -- internals ------------------------------------------------------------------------

    def _fill(self, draft: CardDraft) -> None:
        self.query_one("#title", Input).value = draft.title
        self.query_one("#summary", Input).value = draft.summary
        self.query_one("#cites", Input).value = format_cites(draft.cites)
        self.query_one("#pinned", Checkbox).value = draft.pinned
        self.query_one("#body", TextArea).load_text(draft.body)
        type_select: Select[str] = self.query_one("#type", Select)
        blank = not draft.type
        if blank != type_select._allow_blank:
            # Whether "no choice" is offered depends on the loaded card; Select has no public
            # setter for it (Textual is pinned, so this private attribute is stable).
            type_select._allow_blank = blank
            type_select.set_options(_options(CARD_TYPES))
        type_select.value = draft.type or Select.NULL
        self._set_level(draft.level)

    def _set_level(self, level: str) -> None:
        level_select: Select[str] = self.query_one("#level", Select)
        values = self._level_values(level)
        if values != self._level_options:
            self._level_options = values
            level_select.set_options(_options(values))
        level_select.value = level if level in values else values[0]

    def _show_errors(self, fields: Mapping[str, str], general: str | None) -> None:
        errors = {name: as_typed(text) for name, text in fields.items() if text}
        self._errors = {name: text for name, text in errors.items() if name in FIELDS}
        # A message for a field the editor does not have still reaches the person, on top.
        extra = [f"{as_typed(name)}: {text}" for name, text in errors.items() if name not in FIELDS]
        top = " · ".join(([as_typed(general)] if general else []) + extra)
        self._set_error(self.query_one("#general-error", Label), top)
        for name in FIELDS:
            self._set_error(self.query_one(f"#{name}-error", Label), self._errors.get(name, ""))

    @staticmethod
    def _set_error(label: Label, text: str) -> None:
        label.update(Content(text))
        label.set_class(bool(text), "-shown")

    def _refresh_status(self) -> None:
        if self._saving:
            status = "saving…"
        elif self.dirty:
            status = "unsaved changes"
        else:
            status = ""
        self.query_one("#status", Label).update(Content(status))

    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event: Message) -> None:
        event.stop()
        if self.is_mounted:
            self._refresh_status()

    def action_save(self) -> None:
        if self._saving:
            return
        original = self.original_level if self.filename is not None else None
        self.post_message(
            self.Save(
                self,
                self.draft(),
                self.filename,
                self.sha256,
                original,
                self.changed_cites(),
                self.changed_pinned(),
            )
        )

    def action_still_true(self) -> None:
        if self._saving:
            return
        if self.filename is None:
            self.show_errors({}, "a new card has nothing to confirm yet: save it first")
        elif self.dirty:
            self.show_errors(
                {}, "save your changes first (or Esc): “still true” confirms the card as it is on disk"
            )
        else:
            self.set_saving(True)
            self.post_message(self.StillTrue(self, self.original_level, self.filename, self.sha256))

    def action_cancel(self) -> None:
        if not self.dirty:
            self.dismiss(None)
            return
        focused = self.focused

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)
            elif focused is not None and focused.is_attached:
                focused.focus()

        self.app.push_screen(
            ConfirmModal(
                "Discard your changes?", "The card has unsaved changes.", yes="Discard", no="Keep editing"
            ),
            answered,
        )
