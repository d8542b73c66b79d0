"""The question before a tool call runs: may it run once, for the session, always in this project,
or not at all.

Keys are a contract: ``1``/``y`` once, ``2``/``a`` for the session, ``3``/``n``/Esc deny, ``4``/``r``
always in this project (when a rule can cover the call): the rule it would save is shown in an
editable line first, with the parts of the call no rule will cover ("still asks: …"), Enter there
saves it, Esc backs out to the question. When no rule can cover any part, the window says why
instead of offering ``4``/``r``. Enter alone never allows anything (the preview has the focus, not
a button), so a stray keypress cannot approve a command. A denial may carry the person's reason
for the model: Tab reaches a one-line note box, Enter there denies with the note. What the model
wrote is shown stripped of terminal escapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from memory.text.lines import ELLIPSIS, one_line
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS, render_preview

__all__ = ["NOTE_MAX_CHARS", "PermissionAnswer", "PermissionModal", "PermissionRequest", "clean_note"]

NOTE_MAX_CHARS = 300
RULE_MAX_CHARS = 1000
RULE_SHOWN_CHARS = 50  # the rule on the "always" button; the editable line shows it whole
ALWAYS_LABEL = "Always allow in this project [4/r]: "
STILL_ASKS_SHOWN_CHARS = 400  # the parts that still ask: one line, wrapped by the dialog

Choice = Literal["once", "session", "deny", "always"]
_CHOICES: tuple[Choice, ...] = ("once", "session", "deny")  # also the buttons' ids
# A rule as typed -> why it cannot be saved (one line), or None when it can.
CheckRule = Callable[[str], str | None]


@dataclass(frozen=True)
class PermissionRequest:
    call_id: str
    name: str
    summary: str
    preview: str
    preview_kind: Literal["diff", "text", "command"]
    rule: str = ""  # the rule(s) "always allow" would save, comma-separated; "" when none can
    still_asks: str = ""  # the parts of the call no such rule covers, with why; "" when none


@dataclass(frozen=True)
class PermissionAnswer:
    """The person's answer; ``note``: why a call was denied (one clean line, maybe empty);
    ``rule``: for "always", the rule(s) as the person confirmed them."""

    choice: Choice
    note: str = ""
    rule: str = ""


class _RuleInput(Input):
    """The editable rule: Esc backs out to the question (it never denies from here)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", show=False)]

    def action_back(self) -> None:
        screen = self.screen
        if isinstance(screen, PermissionModal):
            screen.close_rule()


def clean_note(text: str, limit: int = NOTE_MAX_CHARS) -> str:
    """A typed or pasted note as the model may get it: one line (line breaks and whitespace runs
    become one space), no escape sequences or control, bidi or invisible characters, at most
    ``limit`` characters (a cut drops the spaces before its "…")."""
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + ELLIPSIS


class PermissionModal(DecisionGate, ModalScreen[PermissionAnswer]):
    """Dismisses with a ``PermissionAnswer``: "once", "session", "always" or "deny" (``3``/``n``/Esc
    and the button deny without a note; Enter in the note box denies with what it holds).
    ``check_rule``: validates the edited rule before "always" is answered (None: any rule)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "choose('once')", "Allow once"),
        Binding("2,a", "choose('session')", "Allow for the session"),
        Binding("3,n,escape", "choose('deny')", "Deny"),
        Binding("4,r", "edit_rule", "Always allow in this project"),
    ]

    DEFAULT_CSS = (
        "PermissionModal {"
        + DIALOG_CSS
        + """
        #note {
            margin: 1 0 0 0;
            border: none;
            height: 1;
            padding: 0 1;
            background: $background;
            &:focus {
                background: $boost;
            }
        }
        #rule-keys {
            height: auto;
            margin: 1 0 0 0;
        }
        #rule-edit {
            height: auto;
            margin: 1 0 0 0;
            display: none;
        }
        #rule {
            border: none;
            height: 1;
            padding: 0 1;
            background: $boost;
        }
        #rule-error {
            color: $text-error;
            display: none;
        }
        #rule-still-asks, #rule-none {
            color: $text-warning;
        }
        #rule-none {
            margin: 1 0 0 0;
        }
    }"""
    )

    def __init__(self, request: PermissionRequest, check_rule: CheckRule | None = None) -> None:
        super().__init__()
        self.request = request
        self.check_rule = check_rule

    def compose(self) -> ComposeResult:
        request = self.request
        name = one_line(request.name)
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(f"Allow {name}?")
            yield Static(Content(one_line(request.summary)), id="summary")
            with VerticalScroll(id="preview"):
                yield Static(render_preview(request.preview, request.preview_kind), id="preview-text")
            yield Input(
                placeholder="Tab: say why you deny it (optional), Enter: deny with that note",
                max_length=NOTE_MAX_CHARS,
                id="note",
                compact=True,
            )
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Allow once [1/y]"), id="once", variant="success", compact=True)
                yield Button(Content("Allow for this session [2/a]"), id="session", compact=True)
                yield Button(Content("Deny [3/n/Esc]"), id="deny", variant="error", compact=True)
            if request.rule:
                with Horizontal(id="rule-keys"):
                    # The key first: on a narrow screen the rule is what is cut (see _fit_rule).
                    yield Button(self._always_label(RULE_SHOWN_CHARS), id="always", compact=True)
                with Vertical(id="rule-edit"):
                    yield Static(
                        Content(
                            "The rule to save (.PseudoClaude/settings.local.toml): "
                            "Enter saves it, Esc goes back"
                        )
                    )
                    yield _RuleInput(
                        one_line(request.rule), max_length=RULE_MAX_CHARS, id="rule", compact=True
                    )
                    if request.still_asks:
                        yield Static(
                            Content(one_line(f"still asks: {request.still_asks}", STILL_ASKS_SHOWN_CHARS)),
                            id="rule-still-asks",
                        )
                    yield Static("", id="rule-error")
            elif request.still_asks:
                yield Static(
                    Content(
                        one_line(f"no rule can remember it: {request.still_asks}", STILL_ASKS_SHOWN_CHARS)
                    ),
                    id="rule-none",
                )

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def _always_label(self, room: int) -> Content:
        return Content(ALWAYS_LABEL + one_line(self.request.rule, max(min(room, RULE_SHOWN_CHARS), 8)))

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_rule)

    def _fit_rule(self) -> None:
        """The rule on the "always" button cut with "…" to the dialog's width: an edge cutting it
        silently would show another rule (``docs.python.or`` for ``docs.python.org``)."""
        keys = self.query("#rule-keys")
        if not keys or not keys.first().size.width:
            return
        room = keys.first().size.width - 2 - len(ALWAYS_LABEL)  # the button's padding
        label = self._always_label(room)
        button = self.query_one("#always", Button)
        if str(button.label) != str(label):
            button.label = label

    def action_choose(self, choice: Choice) -> None:
        self.dismiss(PermissionAnswer(choice))

    @property
    def editing_rule(self) -> bool:
        return bool(self.request.rule) and self.query_one("#rule-edit").display

    def action_edit_rule(self) -> None:
        """``4``/``r``: show the rule it would save, editable; nothing is saved yet."""
        if not self.request.rule:
            return  # no rule can cover this call (a substitution, a redirection…)
        self.query_one("#rule-keys").display = False
        self.query_one("#rule-edit").display = True
        self.query_one("#rule", Input).focus()

    def close_rule(self) -> None:
        """Esc in the rule line: back to the question, nothing saved."""
        self.query_one("#rule-edit").display = False
        self.query_one("#rule-error").display = False
        self.query_one("#rule-keys").display = True
        self.query_one("#preview").focus()

    @on(Input.Submitted, "#rule")
    def _save_rule(self, event: Input.Submitted) -> None:
        event.stop()
        rule = one_line(event.value)
        why = (
            "the rule is empty"
            if not rule
            else self.check_rule(rule)
            if self.check_rule is not None
            else None
        )
        if why is not None:
            error = self.query_one("#rule-error", Static)
            error.update(Content(one_line(f"not saved: {why}", 300)))
            error.display = True
            return
        self.dismiss(PermissionAnswer("always", rule=rule))

    @on(Input.Submitted, "#note")
    def _deny_with_note(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PermissionAnswer("deny", clean_note(event.value)))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "always":
            self.action_edit_rule()
            return
        choice = next((c for c in _CHOICES if c == event.button.id), None)
        if choice is not None:
            self.dismiss(PermissionAnswer(choice))
