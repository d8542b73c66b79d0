"""The rewind view's second step: what rewinding to before a turn would do, and the choice.

``b`` rewinds the files and the conversation, ``f`` the files only, ``c`` the conversation only;
Esc goes back to the list. The window lists each file it would restore or delete, each conflict
(a file changed since the agent last wrote it: a hand edit, a ``git checkout``) with its diff, the
turns that ran ``bash`` (what they changed is not restored), and a line about memory, which is
never rewound: ``m`` undoes the rewound turns' memory batches (posted as :class:`UndoMemory`; the
App answers with :meth:`RewindPlanScreen.show_memory`).

It is a deciding window: a key typed while it opened is not an answer (``DecisionGate``). A
conflict is never overwritten from here: the App asks again, in its own window, first.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from memory.text.lines import one_line
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS, render_preview
from widgets.rewind.state import PlanFile, PlanState, RewindChoice

__all__ = ["CHOICES", "RewindPlanScreen", "plan_body"]

# Key -> what it rewinds (also the buttons' ids).
CHOICES: dict[str, RewindChoice] = {
    "b": RewindChoice(files=True, conversation=True),
    "f": RewindChoice(files=True, conversation=False),
    "c": RewindChoice(files=False, conversation=True),
}
_ACTION = {"restore": "restore", "delete": "delete", "same": "unchanged"}


def _file(f: PlanFile) -> Content:
    if f.conflict is not None:
        return Content.assemble(
            ("  ⚠ conflict: ", "bold $text-warning"),
            one_line(f.conflict, 300),
            ("\n", ""),
            render_preview(f.diff.rstrip("\n"), "diff"),
        )
    muted = "$foreground-muted" if f.action == "same" else ""
    return Content.assemble((f"  {_ACTION[f.action]:<9} ", muted or "bold"), (one_line(f.path, 200), muted))


def plan_body(state: PlanState) -> Content:
    """The window's scrolling part: the files (conflicts with their diffs), bash, the conversation."""
    parts: list[Content] = []
    if state.files:
        head = "Files (to their bytes before the turn)"
        if state.conflicts:
            n = len(state.conflicts)
            them = "them" if n != 1 else "it"
            head += f": {n} changed since the agent last wrote {them}, shown with the change"
        parts.append(Content.styled(head, "bold"))
        # Conflicts first: they are what a person must look at.
        parts += [_file(f) for f in sorted(state.files, key=lambda f: f.conflict is None)]
    else:
        parts.append(Content.styled("Files: these turns changed none with write_file or edit_file", "bold"))
    for n in state.bash_turns:
        parts.append(Content.styled(f"turn {n} ran bash: files it changed are not restored", "$text-warning"))
    parts.append(Content.assemble(("Conversation: ", "bold"), one_line(state.conversation, 400)))
    return Content("\n").join(parts)


class RewindPlanScreen(DecisionGate, ModalScreen[RewindChoice | None]):
    """Dismisses with the :class:`RewindChoice` (``b``/``f``/``c``), or None (Esc: back)."""

    DECISION_KEYS: ClassVar[frozenset[str] | None] = frozenset({"b", "f", "c", "m"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "choose('b')", "Files and conversation"),
        Binding("f", "choose('f')", "Files only"),
        Binding("c", "choose('c')", "Conversation only"),
        Binding("m", "undo_memory", "Undo the memory batches"),
        Binding("escape", "back", "Back"),
    ]
    DEFAULT_CSS = (
        "RewindPlanScreen {"
        + DIALOG_CSS
        + """
        #memory {
            margin: 1 0 0 0;
        }
        #memory-keys {
            height: auto;
            margin: 1 0 0 0;
        }
    }"""
    )

    class UndoMemory(Message):
        """``m``: undo the rewound turns' memory batches (newest first)."""

    def __init__(self, state: PlanState) -> None:
        super().__init__()
        self.state = state
        self.memory_undo = state.memory_undo
        self.memory_line = state.memory

    def compose(self) -> ComposeResult:
        state = self.state
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(f"Rewind to before turn {state.to_turn}?")
            yield Static(
                Content(f"turn {state.to_turn}: {one_line(state.text, 200) or '(no prompt)'}"), id="summary"
            )
            with VerticalScroll(id="preview"):
                yield Static(plan_body(state), id="plan")
            yield Static(Content(one_line(self.memory_line, 600)), id="memory")
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Files and conversation [b]"), id="b", variant="warning", compact=True)
                yield Button(Content("Files only [f]"), id="f", compact=True)
                yield Button(Content("Conversation only [c]"), id="c", compact=True)
                yield Button(Content("Back [Esc]"), id="back", compact=True)
            with Horizontal(id="memory-keys"):
                yield Button(
                    Content("Undo these memory batches too [m]"),
                    id="m",
                    compact=True,
                    disabled=not self.memory_undo,
                )

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def show_memory(self, line: str, *, can_undo: bool) -> None:
        """The memory line again (after ``m``: what the undo did, or why not)."""
        self.memory_line, self.memory_undo = line, can_undo
        try:
            self.query_one("#memory", Static).update(Content(one_line(line, 600)))
            self.query_one("#m", Button).disabled = not can_undo
        except NoMatches:
            return  # answered and taken down meanwhile

    def action_choose(self, key: str) -> None:
        self.dismiss(CHOICES[key])

    def action_undo_memory(self) -> None:
        if self.memory_undo:
            self.memory_undo = False  # once: the App says what came of it
            self.query_one("#m", Button).disabled = True
            self.post_message(self.UndoMemory())

    def action_back(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        key = event.button.id or ""
        if key in CHOICES:
            self.action_choose(key)
        elif key == "m":
            self.action_undo_memory()
        else:
            self.action_back()
