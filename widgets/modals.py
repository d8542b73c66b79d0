"""The two questions the app asks: may this tool call run (DESIGN §12), and may this project's
memory be used (DESIGN §11).

Keys are a contract: permission ``1``/``y`` once, ``2``/``a`` for the session, ``3``/``n``/Esc
deny; trust ``y`` / ``n`` or Esc. Enter alone never allows anything (the preview has the focus,
not a button), so a stray keypress cannot approve a command. What the model or a cloned
repository wrote is shown stripped of terminal escapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from memory.sanitize import strip_terminal

__all__ = ["ConfirmModal", "PermissionModal", "PermissionRequest", "TrustCard", "TrustModal", "render_preview"]

PREVIEW_MAX_LINES = 400
PREVIEW_MAX_LINE_CHARS = 400


@dataclass(frozen=True)
class PermissionRequest:
    call_id: str
    name: str
    summary: str
    preview: str
    preview_kind: Literal["diff", "text", "command"]


@dataclass(frozen=True)
class TrustCard:
    type: str
    title: str
    summary: str
    filename: str


def _line(text: str) -> str:
    return " ".join(strip_terminal(text, keep_newlines=False).split())


def render_preview(preview: str, kind: str) -> Content:
    """The preview as shown: a diff coloured by line, a command after ``$``, text as is;
    bounded so a huge file write cannot stall the modal."""
    lines = strip_terminal(preview).expandtabs(4).split("\n")
    hidden = max(len(lines) - PREVIEW_MAX_LINES, 0)
    lines = [
        line if len(line) <= PREVIEW_MAX_LINE_CHARS else line[: PREVIEW_MAX_LINE_CHARS - 1] + "…"
        for line in lines[:PREVIEW_MAX_LINES]
    ]
    parts: list[str | tuple[str, str]] = []
    for i, line in enumerate(lines):
        end = "\n" if i < len(lines) - 1 else ""
        if kind == "diff":
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("+"):
                style = "$text-success"
            elif line.startswith("-"):
                style = "$text-error"
            elif line.startswith("@@"):
                style = "$text-accent"
            else:
                style = ""
            parts.append((line + end, style))
        elif kind == "command":
            prefix = "$ " if i == 0 else "  "
            parts.append((prefix, "$foreground-muted"))
            parts.append((line + end, "bold"))
        else:
            parts.append(line + end)
    if hidden:
        parts.append((f"\n… {hidden} more line{'s' if hidden != 1 else ''} not shown", "italic $foreground-muted"))
    return Content.assemble(*parts)


_DIALOG_CSS = """
    align: center middle;
    background: $background 60%;
    & > #dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 95%;
        padding: 0 1;
        border: round $primary;
        border-title-style: bold;
        background: $surface;
    }
    #summary {
        margin: 0 0 1 0;
    }
    #preview {
        height: auto;
        max-height: 60vh;
        border: solid $foreground 20%;
        background: $background;
        padding: 0 1;
        scrollbar-size-vertical: 1;
        &:focus {
            border: solid $foreground 40%;
        }
    }
    #keys {
        height: auto;
        margin: 1 0 0 0;
    }
    #keys > Button {
        margin: 0 2 0 0;
    }
"""


class PermissionModal(ModalScreen[str]):
    """Dismisses with "once", "session" or "deny"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "choose('once')", "Allow once"),
        Binding("2,a", "choose('session')", "Allow for the session"),
        Binding("3,n,escape", "choose('deny')", "Deny"),
    ]

    DEFAULT_CSS = "PermissionModal {" + _DIALOG_CSS + "}"

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        name = _line(request.name)
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(f"Allow {name}?")
            yield Static(Content(_line(request.summary)), id="summary")
            with VerticalScroll(id="preview"):
                yield Static(render_preview(request.preview, request.preview_kind), id="preview-text")
            with Horizontal(id="keys"):
                yield Button(Content("Allow once [1/y]"), id="once", variant="success", compact=True)
                yield Button(Content("Allow for this session [2/a]"), id="session", compact=True)
                yield Button(Content("Deny [3/n/Esc]"), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("once", "session", "deny"):
            self.dismiss(event.button.id)


class TrustModal(ModalScreen[bool]):
    """Lists a project store's cards; ``y`` trusts it (True), ``n``/Esc is "not now" (False)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose(True)", "Trust"),
        Binding("n,escape", "choose(False)", "Not now"),
    ]

    DEFAULT_CSS = "TrustModal {" + _DIALOG_CSS + """
        .card {
            margin: 0 0 1 0;
        }
        .card:last-child {
            margin: 0;
        }
    }"""

    def __init__(self, cards: Sequence[TrustCard], *, where: str = "") -> None:
        super().__init__()
        self.cards = tuple(cards)
        self.where = where

    def compose(self) -> ComposeResult:
        count = len(self.cards)
        place = f" in {_line(self.where)}" if self.where else ""
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Trust this project's memory?")
            yield Static(
                Content(
                    f"This workspace{place} has a project memory store that PseudoClaude did not "
                    f"create here: it may have come with the repository. Its {count} card"
                    f"{'s are' if count != 1 else ' is'} not put into any prompt or memory update "
                    "until you trust it."
                ),
                id="summary",
            )
            with VerticalScroll(id="preview"):
                for card in self.cards:
                    yield Static(_card_line(card), classes="card")
                if not self.cards:
                    yield Static(Content("(no cards)"), classes="card")
            with Horizontal(id="keys"):
                yield Button(Content("Trust and use it [y]"), id="trust", variant="warning", compact=True)
                yield Button(Content("Not now, ask next start [n/Esc]"), id="not-now", compact=True)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def action_choose(self, trusted: bool) -> None:
        self.dismiss(trusted)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "trust")


def _card_line(card: TrustCard) -> Content:
    parts: list[str | tuple[str, str]] = [
        (f"[{_line(card.type)}] ", "$text-accent"),
        (_line(card.title), "bold"),
    ]
    summary = _line(card.summary)
    details = f"{summary} · {_line(card.filename)}" if summary else _line(card.filename)
    parts.append(("\n  " + details, "$foreground-muted"))
    return Content.assemble(*parts)


class ConfirmModal(ModalScreen[bool]):
    """A yes/no question (delete a card, dismiss a job, drop unsaved changes): ``y`` confirms
    (True); ``n`` or Esc declines (False). ``body`` is shown in a scrolling preview first — what
    would be lost is seen before it goes (``kind`` as for :func:`render_preview`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose(True)", "Yes"),
        Binding("n,escape", "choose(False)", "No"),
    ]

    DEFAULT_CSS = "ConfirmModal {" + _DIALOG_CSS + "}"

    def __init__(
        self,
        title: str,
        summary: str,
        body: str | None = None,
        *,
        kind: Literal["diff", "text", "command"] = "text",
        yes: str = "Yes",
        no: str = "Cancel",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.summary = summary
        self.body = body
        self.kind = kind
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(_line(self.title_text))
            yield Static(Content(strip_terminal(self.summary)), id="summary")
            if self.body is not None:
                with VerticalScroll(id="preview"):
                    yield Static(render_preview(self.body, self.kind), id="preview-text")
            with Horizontal(id="keys"):
                yield Button(Content(f"{self.yes} [y]"), id="yes", variant="warning", compact=True)
                yield Button(Content(f"{self.no} [n/Esc]"), id="no", compact=True)

    def on_mount(self) -> None:
        if self.body is not None:
            self.query_one("#preview").focus()

    def action_choose(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
