"""The two questions the app asks: may this tool call run (DESIGN §12), and may this project's
memory be used (DESIGN §11).

Keys are a contract: permission ``1``/``y`` once, ``2``/``a`` for the session, ``3``/``n``/Esc
deny; trust ``y`` / ``n`` or Esc. Enter alone never allows anything (the preview has the focus,
not a button), so a stray keypress cannot approve a command. A denial may carry the person's
reason for the model: Tab reaches a one-line note box, Enter there denies with the note. What the model or a cloned
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
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.visual import Visual, VisualType
from textual.widgets import Button, Input, Static

from memory.text.sanitize import strip_terminal

__all__ = [
    "ConfirmModal",
    "PermissionAnswer",
    "PermissionModal",
    "PermissionRequest",
    "TrustCard",
    "TrustModal",
    "clean_note",
    "render_preview",
]

PREVIEW_MAX_LINES = 400
PREVIEW_MAX_LINE_CHARS = 400
# Cards the trust window lists; the rest are counted (a clone can bring ten thousand).
TRUST_SHOWN = 200
NOTE_MAX_CHARS = 300


@dataclass(frozen=True)
class PermissionRequest:
    call_id: str
    name: str
    summary: str
    preview: str
    preview_kind: Literal["diff", "text", "command"]


@dataclass(frozen=True)
class PermissionAnswer:
    """The person's answer; ``note``: why a call was denied (one clean line, maybe empty)."""

    choice: Literal["once", "session", "deny"]
    note: str = ""


def clean_note(text: str, limit: int = NOTE_MAX_CHARS) -> str:
    """A typed or pasted note as the model may get it: one line (line breaks and whitespace runs
    become one space), no escape sequences or control, bidi or invisible characters, at most
    ``limit`` characters."""
    line = " ".join(strip_terminal(text, keep_newlines=False).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class TrustCard:
    """One card of a project store waiting for trust; ``problem``: why a prompt would leave it
    out even once trusted (it does not parse), "" when the model would get its line."""

    type: str
    title: str
    summary: str
    filename: str
    problem: str = ""


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


class PermissionModal(ModalScreen[PermissionAnswer]):
    """Dismisses with a ``PermissionAnswer``: "once", "session" or "deny" (``3``/``n``/Esc and
    the button deny without a note; Enter in the note box denies with what it holds)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "choose('once')", "Allow once"),
        Binding("2,a", "choose('session')", "Allow for the session"),
        Binding("3,n,escape", "choose('deny')", "Deny"),
    ]

    DEFAULT_CSS = "PermissionModal {" + _DIALOG_CSS + """
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
            yield Input(
                placeholder="Tab: say why you deny it (optional), Enter: deny with that note",
                max_length=NOTE_MAX_CHARS,
                id="note",
                compact=True,
            )
            with Horizontal(id="keys"):
                yield Button(Content("Allow once [1/y]"), id="once", variant="success", compact=True)
                yield Button(Content("Allow for this session [2/a]"), id="session", compact=True)
                yield Button(Content("Deny [3/n/Esc]"), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def action_choose(self, choice: Literal["once", "session", "deny"]) -> None:
        self.dismiss(PermissionAnswer(choice))

    @on(Input.Submitted, "#note")
    def _deny_with_note(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PermissionAnswer("deny", clean_note(event.value)))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in ("once", "session", "deny"):
            self.dismiss(PermissionAnswer(event.button.id))  # type: ignore[arg-type]


class _Listing(Static):
    """A Static that paints only the rows on the screen. The trust window's list is hundreds of
    lines, and the window is drawn again whenever the screen under it changes."""

    _rows: tuple[int, list[Content]] | None = None  # (width, the content's lines at that width)

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self._rows = None
        super().update(content, layout=layout)

    def _wrapped(self, width: int) -> list[Content] | None:
        rows = self._rows
        if rows is None or rows[0] != width:
            visual = self.visual
            rows = self._rows = (width, visual.wrap(width) if isinstance(visual, Content) and width > 0 else [])
        return rows[1] if isinstance(self.visual, Content) else None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._wrapped(width)
        if lines is None or self.text_selection is not None:
            return super().render_line(y)  # whole: a selection's offsets span the whole text
        if not 0 <= y < len(lines):
            return Strip.blank(width, self.visual_style.rich_style)
        return Visual.to_strips(self, lines[y], width, 1, self.visual_style)[0]


class TrustModal(ModalScreen[bool]):
    """Lists a project store's cards; ``y`` trusts it (True), ``n``/Esc is "not now" (False).

    ``cards`` None: the store is still being read. The window is up at once and says so; the
    list comes with :meth:`show_cards`, and ``y`` does nothing until it is shown (nobody trusts
    what they could not see). However many cards there are, the list is one widget holding at
    most ``TRUST_SHOWN`` of them (those a prompt would leave out first) and a count of the rest:
    a clone with ten thousand cards opens this window as fast as one with two.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose(True)", "Trust"),
        Binding("n,escape", "choose(False)", "Not now"),
    ]

    # Its summary takes four or five lines: a shorter list keeps the y/n keys on an 80×24 screen.
    DEFAULT_CSS = "TrustModal {" + _DIALOG_CSS + """
        #preview {
            max-height: 40vh;
        }
    }"""

    def __init__(self, cards: Sequence[TrustCard] | None, *, where: str = "") -> None:
        super().__init__()
        self.cards: tuple[TrustCard, ...] | None = None if cards is None else tuple(cards)
        self.where = where
        self.error: str | None = None  # why the cards could not be read
        self._drawn = False  # on_mount ran: later news is drawn at once
        self._composed: tuple[object, ...] = ()  # what compose drew (cards, error)

    def compose(self) -> ComposeResult:
        self._composed = (self.cards, self.error)
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Trust this project's memory?")
            yield Static(self._summary(), id="summary")
            with VerticalScroll(id="preview"):
                yield _Listing(self._listing(), id="cards")
            with Horizontal(id="keys"):
                yield Button(Content("Trust and use it [y]"), id="trust", variant="warning", compact=True,
                             disabled=self.cards is None)
                yield Button(Content("Not now, ask next start [n/Esc]"), id="not-now", compact=True)

    def on_mount(self) -> None:
        self._drawn = True
        if (self.cards, self.error) != self._composed:
            self._draw()  # news that came between compose and now
        self.query_one("#preview").focus()

    def show_cards(self, cards: Sequence[TrustCard]) -> None:
        """The store's cards, read: listed now, and ``y`` trusts from now on."""
        self.cards = tuple(cards)
        if self._drawn:
            self._draw()

    def show_error(self, reason: str) -> None:
        """The cards could not be read: said in place of the list; ``y`` stays off (``n`` answers)."""
        self.error = _line(reason)
        if self._drawn:
            self._draw()

    def _draw(self) -> None:
        try:
            summary, listing = self.query_one("#summary", Static), self.query_one("#cards", Static)
            trust = self.query_one("#trust", Button)
        except NoMatches:
            return  # answered and taken down meanwhile
        summary.update(self._summary())
        listing.update(self._listing())
        trust.disabled = self.cards is None
        self.refresh_bindings()

    def _summary(self) -> Content:
        place = f" in {_line(self.where)}" if self.where else ""
        head = (
            f"This workspace{place} has a project memory store that PseudoClaude did not "
            "create here: it may have come with the repository. "
        )
        cards = self.cards
        if cards is None:
            return Content(head + "Its cards are not put into any prompt or memory update until you trust it.")
        count = len(cards)
        text = (
            f"{head}Its {count:,} card{'s are' if count != 1 else ' is'} not put into any prompt or "
            "memory update until you trust it."
        )
        left = sum(1 for c in cards if c.problem)
        if left:
            text += (
                f" {left:,} of them {'do' if left != 1 else 'does'} not parse and would be left out "
                "even then (listed first, with why)."
            )
        return Content(text)

    def _listing(self) -> Content:
        cards = self.cards
        if cards is None and self.error is not None:
            return Content.styled(self.error, "$text-error")
        if cards is None:
            return Content.styled("reading the cards…", "italic $foreground-muted")
        if not cards:
            return Content("(no cards)")
        # The ones a prompt would leave out first: they are what a person should look at.
        ordered = sorted(cards, key=lambda c: not c.problem)
        shown = ordered[:TRUST_SHOWN]
        parts: list[Content] = [_card_line(c) for c in shown]
        rest = len(cards) - len(shown)
        if rest:
            parts.append(Content.styled(
                f"… and {rest:,} more card{'s' if rest != 1 else ''} (the card browser, /memory, lists them all)",
                "italic $foreground-muted",
            ))
        return Content("\n\n").join(parts)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose" and parameters == (True,) and self.cards is None:
            return False  # not before the cards are shown
        return True

    def action_choose(self, trusted: bool) -> None:
        self.dismiss(trusted)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "trust")


def _card_line(card: TrustCard) -> Content:
    if card.problem:
        return Content.assemble(
            ("[left out] ", "$text-warning"),
            (_line(card.filename), "bold"),
            ("\n  " + _line(card.problem), "$foreground-muted"),
        )
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
