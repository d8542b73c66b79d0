"""The plan the model proposes in plan mode, for the person to approve before anything changes.

Keys are a contract: ``1``/``a`` approve and let edits run without asking, ``2``/``y`` approve and
be asked for each edit, ``3``/``n``/Esc keep planning. Tab reaches a one-line note box for the
model; Enter there keeps planning with the note. Enter alone never approves (the plan has the
focus, not a button). The plan is drawn as Markdown, as the chat draws an answer, scrollable;
it is the model's text, so it is stripped of terminal escapes first (the answer block does
that). A key typed before or while the window opens is not an answer (``DecisionGate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from widgets.chat.answer_block import AnswerBlock
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS
from widgets.dialogs.permission import NOTE_MAX_CHARS, clean_note

__all__ = ["PLAN_SHOWN_CHARS", "PlanChoice", "PlanReview", "PlanVerdict"]

# The most of a plan the window draws (the tool takes at most 50,000 characters): past it, a cut.
PLAN_SHOWN_CHARS = 60_000

PlanChoice = Literal["accept-edits", "default", "keep-planning"]
_CHOICES: tuple[PlanChoice, ...] = ("accept-edits", "default", "keep-planning")  # the buttons' ids


@dataclass(frozen=True)
class PlanVerdict:
    """The person's answer: approve with ``accept-edits`` or ``default`` (each edit asks), or
    ``keep-planning`` with an optional ``note`` for the model (one clean line)."""

    choice: PlanChoice
    note: str = ""


class PlanReview(DecisionGate, ModalScreen[PlanVerdict]):
    """Dismisses with a ``PlanVerdict``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,a", "choose('accept-edits')", "Approve, accept edits"),
        Binding("2,y", "choose('default')", "Approve, ask for each edit"),
        Binding("3,n,escape", "choose('keep-planning')", "Keep planning"),
    ]

    DEFAULT_CSS = (
        "PlanReview {"
        + DIALOG_CSS
        + """
        #preview {
            max-height: 50vh;
        }
        #preview > AnswerBlock {
            margin: 0;
            padding: 0;
        }
        #keys > Button {
            margin: 0 1 0 0;  /* all three keys on one row of an 80-column terminal */
        }
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
    }"""
    )

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan
        self._block = AnswerBlock()

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Plan ready: approve it?")
            yield Static(
                Content("Nothing has changed yet. Approve the plan, or keep planning."),
                id="summary",
            )
            with VerticalScroll(id="preview"):
                yield self._block
            yield Input(
                placeholder="Tab: a note for the model, Enter: keep planning with it",
                max_length=NOTE_MAX_CHARS,
                id="note",
                compact=True,
            )
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(
                    Content("Accept edits [1/a]"), id="accept-edits", variant="success", compact=True
                )
                yield Button(Content("Ask per edit [2/y]"), id="default", compact=True)
                yield Button(Content("Keep planning [3/n/Esc]"), id="keep-planning", compact=True)

    async def on_mount(self) -> None:
        plan = self.plan
        if len(plan) > PLAN_SHOWN_CHARS:
            plan = (
                plan[:PLAN_SHOWN_CHARS]
                + f"\n\n… ({len(self.plan) - PLAN_SHOWN_CHARS:,} characters not shown)"
            )
        self._block.append(plan)
        await self._block.finish()  # drawn whole at its first width
        self.query_one("#preview").focus()

    @property
    def shown_plan(self) -> str:
        """The plan's lines as drawn, one per row (tests read what the person sees)."""
        return "\n".join(self._block.shown_lines)

    def action_choose(self, choice: PlanChoice) -> None:
        self.dismiss(PlanVerdict(choice))

    @on(Input.Submitted, "#note")
    def _keep_planning_with_note(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PlanVerdict("keep-planning", clean_note(event.value)))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice = next((c for c in _CHOICES if c == event.button.id), None)
        if choice is not None:
            self.dismiss(PlanVerdict(choice))
