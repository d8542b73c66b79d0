"""The resolution view of a conflicted card: git left the card with conflict markers
(both branches changed it); both versions side by side (stacked on a narrow screen), what
differs, and the person's choice: take one version, or edit the merge in the card editor. The
versions of a conflict ``memory sync`` left are "this machine" and "the remote" (keys m and r),
named from git's labels whichever side of the markers each is on; any other is git's "ours" and
"theirs" (o and t).

Pure drawing: it dismisses with the choice and the App saves it (one ``source: manual`` update).
Both versions come from a repository anyone could write: already sanitized by the App, and drawn
here as plain text (``Content`` spans, never markup).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from memory.text.conflict_sides import SideName, by_machine
from memory.text.terminal import strip_terminal
from widgets.cards.draft import CardConflict, ConflictSide, as_typed
from widgets.cards.editor import WIDE
from widgets.dialogs.decision import DecisionGate, typed_ahead_line

__all__ = ["CHOICES", "ResolveChoice", "ResolveModal", "side_title"]

# The person's answer: one version taken whole, the card editor on the merge, or nothing.
ResolveChoice = Literal["ours", "theirs", "edit", "cancel"]
CHOICES: tuple[ResolveChoice, ...] = ("ours", "theirs", "edit", "cancel")
COMPARED = ("title", "summary", "type", "cites", "pinned", "body")


def side_title(name: str | SideName, side: ConflictSide) -> str:
    """ "ours · HEAD", "this machine · laptop": the version's name and the rest of git's label."""
    if isinstance(name, SideName):
        return f"{name.name} · {as_typed(name.detail)}" if name.detail else name.name
    return f"{name} · {as_typed(side.label)}" if side.label else name


def _version(side: ConflictSide, extra: tuple[str, ...]) -> Content:
    """One version, every field labelled (``extra``: cites/pinned, when either side has them: a
    narrow screen keeps its lines for the bodies); a side that does not parse is all body."""
    muted = "$text-muted"
    draft = side.draft
    parts: list[str | tuple[str, str]] = []
    if side.problem:
        parts += [
            (
                f"front matter does not parse ({as_typed(side.problem)}): taken as body text only, "
                f"titled {as_typed(draft.title)!r}",
                "$text-warning",
            ),
            "\n",
        ]
    else:
        for label, value in (
            ("title   ", draft.title),
            ("summary ", draft.summary),
            ("type    ", draft.type or "(none)"),
            *((("cites   ", ", ".join(draft.cites) or "(none)"),) if "cites" in extra else ()),
            *((("pinned  ", "yes" if draft.pinned else "no"),) if "pinned" in extra else ()),
        ):
            parts += [(label, muted), (as_typed(value), "bold" if label.startswith("title") else ""), "\n"]
    parts.append(("body", muted))
    parts.append("\n" + strip_terminal(draft.body).expandtabs(4))
    return Content.assemble(*parts)


def differing(conflict: CardConflict) -> list[str]:
    """The fields the two versions disagree on (a side that does not parse: only its body)."""
    a, b = conflict.ours.draft, conflict.theirs.draft
    if conflict.ours.problem or conflict.theirs.problem:
        return ["body"] if a.body != b.body else []
    return [name for name in COMPARED if getattr(a, name) != getattr(b, name)]


class ResolveModal(DecisionGate, ModalScreen[ResolveChoice]):
    """Dismisses with "ours" or "theirs" (the version above or below git's ``=======``, whatever
    it is called), "edit" (the card editor on the merge) or "cancel"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Each key takes the version it names (a conflict has either o/t or m/r).
        Binding("o", "take('o')", "Take ours"),
        Binding("t", "take('t')", "Take theirs"),
        Binding("m", "take('m')", "Take this machine's", show=False),
        Binding("r", "take('r')", "Take the remote's", show=False),
        Binding("e", "choose('edit')", "Edit the merge"),
        Binding("c,escape", "choose('cancel')", "Cancel"),
    ]

    # Textual declares it on Screen as a plain attribute, not a ClassVar (mypy), yet it is one.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (WIDE, "-wide")]  # noqa: RUF012

    DEFAULT_CSS = """
    ResolveModal {
        align: center middle;
        background: $background 60%;
        & > #dialog {
            width: 96%;
            max-width: 180;
            height: 96%;
            padding: 0 1;
            border: round $error;
            background: $surface;
        }
        #resolve-title { height: auto; }
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
        /* Narrow: two stacked panes need every line, so only a top rule carries the title. */
        &.-narrow .pane {
            border: none;
            border-top: solid $foreground 25%;
            &:focus { border: none; border-top: solid $foreground 60%; }
        }
        #keys { height: auto; }
        #keys > Button { margin: 0 2 0 0; }
        &.-narrow #keys > Button { margin: 0 1 0 0; }
    }
    """

    def __init__(self, conflict: CardConflict, *, where: str) -> None:
        super().__init__()
        self.conflict = conflict
        self.where = where

    def compose(self) -> ComposeResult:
        conflict = self.conflict
        names = conflict.names()
        where = f"on {names[0].name} and on {names[1].name}" if by_machine(names) else "on two branches"
        with Vertical(id="dialog"):
            yield Static(
                Content.styled(f"This card was changed {where}: choose what it says", "bold"),
                id="resolve-title",
            )
            yield Static(Content(f"{as_typed(self.where)} · in no prompt until resolved"), id="where")
            differs = differing(conflict)
            yield Static(
                Content(f"Different: {', '.join(differs) if differs else 'nothing but git markers'}"),
                id="differs",
            )
            drafts = (conflict.ours.draft, conflict.theirs.draft)
            extra = tuple(name for name in ("cites", "pinned") if any(getattr(d, name) for d in drafts))
            with Horizontal(id="panes"):
                yield self._pane(
                    "ours-pane", side_title(names[0], conflict.ours), _version(conflict.ours, extra)
                )
                yield self._pane(
                    "theirs-pane", side_title(names[1], conflict.theirs), _version(conflict.theirs, extra)
                )
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                for side_id, name in zip(("ours", "theirs"), names, strict=True):
                    yield Button(Content(f"Take {name.possessive} [{name.key}]"), id=side_id, compact=True)
                yield Button(Content("Edit the merge [e]"), id="edit", variant="primary", compact=True)
                yield Button(Content("Cancel [Esc]"), id="cancel", compact=True)

    @staticmethod
    def _pane(pane_id: str, title: str, version: Content) -> VerticalScroll:
        pane = VerticalScroll(Static(version, id=f"{pane_id}-text"), id=pane_id, classes="pane")
        pane.border_title = Content(title)
        return pane

    def on_mount(self) -> None:
        # A pane, not a button, has the focus: Enter alone decides nothing.
        self.query_one("#ours-pane").focus()

    def action_choose(self, choice: str) -> None:
        for known in CHOICES:
            if choice == known:
                self.dismiss(known)

    def action_take(self, key: str) -> None:
        """The version named by ``key``; a key that names neither does nothing."""
        for side_id, name in zip(CHOICES[:2], self.conflict.names(), strict=True):
            if name.key == key:
                self.dismiss(side_id)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "")
