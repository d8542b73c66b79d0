"""The card editor screen and the conflict view.

``CardEditor`` is a full screen the App pushes to create or edit one memory card (title,
summary, type, level, body). It never touches the disk: Ctrl+S posts ``CardEditor.Save`` with the
current fields and the file's identity as loaded (name, hash, level); the App validates and saves,
then dismisses the editor, shows field errors on it (``show_errors``) or, when the file changed
on disk since it was read, pushes ``ConflictModal`` with both versions and reloads the editor
(``load``) if the person takes the disk's.

Keys are a contract: Ctrl+S saves from any field (a priority binding: Input and TextArea must not
swallow it); Esc cancels, asking first when there are unsaved changes (a normal binding, so an open
Select dropdown closes on Esc instead); Tab moves to the next field (the body keeps Textual's
``tab_behavior="focus"``). Card text may come from a cloned repository: everything shown is
passed through ``strip_terminal`` and drawn as plain text, never as markup.

``EditProblemModal`` is the answer to a card edited in ``$EDITOR`` that cannot be applied: the
problem in one line and the person's text, with "edit again" (the same text, back in the editor)
or "discard".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import EllipsisType
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from memory.text.sanitize import strip_terminal
from widgets.dialogs.modals import _DIALOG_CSS, ConfirmModal, render_preview

__all__ = ["FIELDS", "TYPES", "CardDraft", "CardEditor", "ConflictModal", "EditProblemModal"]

TYPES = ("user_preference", "correction_feedback", "project_knowledge", "reference_material")
FIELDS = ("title", "summary", "type", "level", "body")

KEY_HINTS = "Ctrl+S save · Esc cancel · Tab next field"
# Below this width Type and Level are stacked; at or above it they share a row.
WIDE = 100


@dataclass(frozen=True)
class CardDraft:
    level: str  # "project" | "user"
    type: str  # one of TYPES ("" for a broken card: the Select then shows no choice)
    title: str
    summary: str
    body: str


def _line(text: str) -> str:
    return strip_terminal(text, keep_newlines=False)


def _clean(draft: CardDraft) -> CardDraft:
    """The draft as the fields will hold it: one-line title and summary, the body's newlines
    and tabs kept, no escapes; an unknown type becomes "" (no choice)."""
    return CardDraft(
        level=_line(draft.level),
        type=draft.type if draft.type in TYPES else "",
        title=_line(draft.title),
        summary=_line(draft.summary),
        body=strip_terminal(draft.body, keep_newlines=True),
    )


def _options(values: Iterable[str]) -> list[tuple[Text, str]]:
    # Text, not str: a Select prompt given as str would be parsed as markup.
    return [(Text(_line(v)), v) for v in values]


class CardEditor(Screen[str | None]):
    """Create or edit one card; dismisses with None (the App dismisses it after a save)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        # Not priority: the focused widget (an open Select dropdown) gets Esc first.
        Binding("escape", "cancel", "Cancel"),
    ]

    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (WIDE, "-wide")]

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
        new card) so the App can notice a change on disk since then."""

        editor: CardEditor
        draft: CardDraft
        filename: str | None
        sha256: str | None
        original_level: str | None

        @property
        def control(self) -> CardEditor:
            return self.editor

    def __init__(
        self,
        draft: CardDraft,
        *,
        filename: str | None = None,
        sha256: str | None = None,
        levels: tuple[str, ...] = ("project", "user"),
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
        clean = _clean(draft)
        values = self._level_values(clean.level)
        return replace(clean, level=clean.level if clean.level in values else values[0])

    def _heading_content(self) -> Content:
        if self._heading is not None:
            heading = _line(self._heading)
        elif self.filename is None:
            heading = "New card"
        else:
            heading = f"Edit {_line(self.original_level)}/{_line(self.filename)}"
        return Content.assemble((heading, "bold"), (" · Ctrl+S save · Esc cancel", "dim"))

    def compose(self) -> ComposeResult:
        draft = self._loaded
        yield Static(self._heading_content(), id="heading")
        yield Label(Content(""), id="general-error")
        with Vertical(classes="field", id="title-field"):
            with Horizontal(classes="row"):
                yield Label("Title", classes="field-label")
                yield Input(draft.title, id="title", compact=True, placeholder="one line: what this card is")
            yield Label(Content(""), id="title-error", classes="error")
        with Vertical(classes="field", id="summary-field"):
            with Horizontal(classes="row"):
                yield Label("Summary", classes="field-label")
                yield Input(draft.summary, id="summary", compact=True, placeholder="one line: when it matters")
            yield Label(Content(""), id="summary-error", classes="error")
        with Horizontal(id="meta"):
            with Vertical(classes="field", id="type-field"):
                with Horizontal(classes="row"):
                    yield Label("Type", classes="field-label")
                    yield Select(
                        _options(TYPES),
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
        )

    @property
    def dirty(self) -> bool:
        """The fields differ from the last loaded (or saved) draft."""
        return self.draft() != self._loaded

    @property
    def saving(self) -> bool:
        return self._saving

    def load(self, draft: CardDraft, *, sha256: str | None, filename: str | EllipsisType | None = ...) -> None:
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
        self.query_one("#body", TextArea).load_text(draft.body)
        type_select: Select[str] = self.query_one("#type", Select)
        blank = not draft.type
        if blank != type_select._allow_blank:
            # Whether "no choice" is offered depends on the loaded card; Select has no public
            # setter for it (Textual is pinned, so this private attribute is stable).
            type_select._allow_blank = blank
            type_select.set_options(_options(TYPES))
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
        errors = {name: _line(text) for name, text in fields.items() if text}
        self._errors = {name: text for name, text in errors.items() if name in FIELDS}
        # A message for a field the editor does not have still reaches the person, on top.
        extra = [f"{_line(name)}: {text}" for name, text in errors.items() if name not in FIELDS]
        top = " · ".join([_line(general)] * bool(general) + extra)
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
    def _changed(self, event: Message) -> None:
        event.stop()
        if self.is_mounted:
            self._refresh_status()

    def action_save(self) -> None:
        if self._saving:
            return
        original = self.original_level if self.filename is not None else None
        self.post_message(self.Save(self, self.draft(), self.filename, self.sha256, original))

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


# -- the conflict view --------------------------------------------------------------------


def _version(draft: CardDraft) -> Content:
    """One version of the card, every field labelled, as plain (sanitized) text."""
    muted = "$text-muted"
    parts: list[str | tuple[str, str]] = []
    for label, value in (
        ("title   ", draft.title),
        ("summary ", draft.summary),
        ("type    ", draft.type or "(none)"),
        ("level   ", draft.level),
    ):
        parts += [(label, muted), (_line(value), "bold" if label.startswith("title") else ""), "\n"]
    parts.append(("body", muted))
    parts.append("\n" + strip_terminal(draft.body).expandtabs(4))
    return Content.assemble(*parts)


def _differing(mine: CardDraft, disk: CardDraft) -> list[str]:
    return [name for name in FIELDS if getattr(mine, name) != getattr(disk, name)]


class ConflictModal(ModalScreen[str]):
    """The card changed on disk since the editor read it: dismisses with "mine" (keep yours,
    overwrite), "disk" (take the disk's, or leave it deleted) or "cancel" (back to editing)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "choose('mine')", "Keep yours"),
        Binding("t", "choose('disk')", "Take the disk's"),
        Binding("c,escape", "choose('cancel')", "Cancel"),
    ]

    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-narrow"), (WIDE, "-wide")]

    DEFAULT_CSS = """
    ConflictModal {
        align: center middle;
        background: $background 60%;
        & > #dialog {
            width: 96%;
            max-width: 180;
            height: 96%;
            padding: 0 1;
            border: round $warning;
            background: $surface;
        }
        #conflict-title { height: auto; }
        #where, #differs {
            height: auto;
            color: $text-muted;
        }
        #panes {
            height: 1fr;
            layout: vertical;
        }
        &.-wide #panes { layout: horizontal; }
        .pane {
            height: 1fr;
            min-height: 3;
            border: round $foreground 25%;
            border-title-color: $text;
            border-title-style: bold;
            padding: 0 1;
            background: $background;
            scrollbar-size-vertical: 1;
            &:focus { border: round $foreground 50%; }
        }
        &.-wide #panes > .pane { width: 1fr; }
        /* Narrow: three stacked panes need every line, so only a top rule carries the title. */
        &.-narrow .pane {
            border: none;
            border-top: solid $foreground 25%;
            &:focus { border: none; border-top: solid $foreground 60%; }
        }
        #diff {
            height: auto;
            max-height: 40%;
        }
        #keys { height: 1; }
        #keys > Button { margin: 0 2 0 0; }
    }
    """

    def __init__(self, mine: CardDraft, disk: CardDraft | None, *, where: str) -> None:
        super().__init__()
        self.mine = mine
        self.disk = disk
        self.where = where

    def compose(self) -> ComposeResult:
        mine, disk = self.mine, self.disk
        with Vertical(id="dialog"):
            yield Static(Content.styled("This card changed on disk since you opened it", "bold"), id="conflict-title")
            yield Static(Content(_line(self.where)), id="where")
            if disk is not None:
                differs = _differing(mine, disk)
                what = ", ".join(differs) if differs else "nothing (the same text was saved)"
                yield Static(Content(f"Different: {what}"), id="differs")
            with Horizontal(id="panes"):
                yield self._pane("mine-pane", "Yours", Static(_version(mine), id="mine-text"))
                if disk is None:
                    gone = Content.styled("deleted on disk since you opened it", "$text-warning italic")
                    yield self._pane("disk-pane", "On disk", Static(gone, id="disk-text"))
                else:
                    yield self._pane("disk-pane", "On disk", Static(_version(disk), id="disk-text"))
            if disk is not None and disk.body != mine.body:
                diff = "\n".join(
                    difflib.unified_diff(
                        disk.body.splitlines(), mine.body.splitlines(), "on disk", "yours", lineterm=""
                    )
                )
                yield self._pane("diff", "Body changes (on disk → yours)", Static(render_preview(diff, "diff")))
            with Horizontal(id="keys"):
                yield Button(Content("Keep yours [k]"), id="mine", variant="warning", compact=True)
                take = "Drop yours (keep it deleted) [t]" if disk is None else "Take the disk's [t]"
                yield Button(Content(take), id="disk", compact=True)
                yield Button(Content("Cancel [c/Esc]"), id="cancel", compact=True)

    @staticmethod
    def _pane(pane_id: str, title: str, content: Widget) -> VerticalScroll:
        pane = VerticalScroll(content, id=pane_id, classes="pane")
        pane.border_title = Content(title)
        return pane

    def on_mount(self) -> None:
        # A pane, not a button, has the focus: Enter alone decides nothing.
        self.query_one("#mine-pane").focus()

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("mine", "disk", "cancel"):
            self.dismiss(event.button.id)


# -- an $EDITOR result that cannot be applied ---------------------------------------------


class EditProblemModal(ModalScreen[str]):
    """A card edited in ``$EDITOR`` was not applied (``problem``, one line); the card is as it
    was. Dismisses with "edit" (open the editor again on the same text) or "discard" (drop the
    person's text; Esc asks first). ``text`` is what the editor left, as far as it could be read."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "choose('edit')", "Edit again"),
        Binding("d", "choose('discard')", "Discard"),
        Binding("escape", "ask_discard", "Discard"),
    ]

    # The dialogs' frame (widgets/dialogs/modals.py), with an error border and the person's text below.
    DEFAULT_CSS = "EditProblemModal {" + _DIALOG_CSS + """
        & > #dialog { border: round $error; }
        #problem { height: auto; color: $text-error; }
        #where { height: auto; color: $text-muted; margin: 0 0 1 0; }
        #edited {
            height: auto;
            max-height: 60vh;
            border: solid $foreground 20%;
            background: $background;
            padding: 0 1;
            scrollbar-size-vertical: 1;
            &:focus { border: solid $foreground 40%; }
        }
    }"""

    def __init__(self, problem: str, text: str, *, where: str) -> None:
        super().__init__()
        self.problem = problem
        self.text = text
        self.where = where

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Your edit was not applied")
            yield Static(Content(_line(self.problem)), id="problem")
            yield Static(Content(f"{_line(self.where)} is unchanged · your text is kept until you discard it"),
                         id="where")
            shown = self.text if self.text.strip() else "(nothing could be read)"
            with VerticalScroll(id="edited"):
                yield Static(render_preview(shown, "text"), id="edited-text")
            with Horizontal(id="keys"):
                yield Button(Content("Edit again [e]"), id="edit", variant="primary", compact=True)
                yield Button(Content("Discard [d]"), id="discard", compact=True)

    def on_mount(self) -> None:
        # The text, not a button, has the focus: Enter alone decides nothing.
        self.query_one("#edited").focus()

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def action_ask_discard(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss("discard")

        self.app.push_screen(
            ConfirmModal("Discard your edit?", "Your text is dropped; the card stays as it is.",
                         yes="Discard", no="Keep it"),
            answered,
        )

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("edit", "discard"):
            self.dismiss(event.button.id)
