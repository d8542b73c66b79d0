"""The question before a project's memory store is used: may its cards go into prompts.

Keys are a contract: ``y`` trusts, ``n`` or Esc is "not now". What a cloned repository wrote is
shown stripped of terminal escapes, and however many cards the store holds the window lists at
most ``TRUST_SHOWN`` of them in one widget (a clone can bring ten thousand). Cards whose text
holds what the model reads but a rendered view hides (an HTML comment, a hidden element, a tag,
invisible characters) are counted and listed right after those that do not parse, each with
that text raw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.visual import Visual, VisualType
from textual.widgets import Button, Static

from memory.text.lines import one_line
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS
from widgets.marked import LABEL_STYLE, MARK_STYLE

__all__ = ["TRUST_SHOWN", "TrustCard", "TrustModal"]

# Cards the trust window lists; the rest are counted (a clone can bring ten thousand).
TRUST_SHOWN = 200


@dataclass(frozen=True)
class TrustCard:
    """One card of a project store waiting for trust; ``problem``: why a prompt would leave it
    out even once trusted (it does not parse), "" when the model would get its line.
    ``markup``: what its text holds that a rendered view hides (an HTML comment, a hidden
    element, a tag, invisible characters…), with ``fragment``, the first of them raw on one
    printable line; "" for none."""

    type: str
    title: str
    summary: str
    filename: str
    problem: str = ""
    markup: str = ""
    fragment: str = ""


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
            rows = self._rows = (
                width,
                visual.wrap(width) if isinstance(visual, Content) and width > 0 else [],
            )
        return rows[1] if isinstance(self.visual, Content) else None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._wrapped(width)
        if lines is None or self.text_selection is not None:
            return super().render_line(y)  # whole: a selection's offsets span the whole text
        if not 0 <= y < len(lines):
            return Strip.blank(width, self.visual_style.rich_style)
        return Visual.to_strips(self, lines[y], width, 1, self.visual_style)[0]


class TrustModal(DecisionGate, ModalScreen[bool]):
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
    DEFAULT_CSS = (
        "TrustModal {"
        + DIALOG_CSS
        + """
        #preview {
            max-height: 40vh;
        }
    }"""
    )

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
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(
                    Content("Trust and use it [y]"),
                    id="trust",
                    variant="warning",
                    compact=True,
                    disabled=self.cards is None,
                )
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
            self.restart_gate()  # what is to be decided is on the screen from now on

    def show_error(self, reason: str) -> None:
        """The cards could not be read: said in place of the list; ``y`` stays off (``n`` answers)."""
        self.error = one_line(reason)
        if self._drawn:
            self._draw()
            self.restart_gate()

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
        place = f" in {one_line(self.where)}" if self.where else ""
        head = (
            f"This workspace{place} has a project memory store that PseudoClaude did not "
            "create here: it may have come with the repository. "
        )
        cards = self.cards
        if cards is None:
            return Content(
                head + "Its cards are not put into any prompt or memory update until you trust it."
            )
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
        hiding = sum(1 for c in cards if c.markup and not c.problem)
        if not hiding:
            return Content(text)
        return Content.assemble(
            text,
            (
                f" {hiding:,} card{'s hold' if hiding != 1 else ' holds'} HTML comments, hidden markup or "
                "tag-like text that the model reads and a rendered view hides "
                f"(listed {'next' if left else 'first'}, with the text).",
                "bold $text-warning",
            ),
        )

    def _listing(self) -> Content:
        cards = self.cards
        if cards is None and self.error is not None:
            return Content.styled(self.error, "$text-error")
        if cards is None:
            return Content.styled("reading the cards…", "italic $foreground-muted")
        if not cards:
            return Content("(no cards)")
        # The ones a prompt would leave out first, then those hiding text from a rendered view:
        # they are what a person should look at.
        ordered = sorted(cards, key=lambda c: (not c.problem, not c.markup))
        shown = ordered[:TRUST_SHOWN]
        parts: list[Content] = [_card_line(c) for c in shown]
        rest = len(cards) - len(shown)
        if rest:
            parts.append(
                Content.styled(
                    f"… and {rest:,} more card{'s' if rest != 1 else ''}"
                    " (the card browser, /memory, lists them all)",
                    "italic $foreground-muted",
                )
            )
        return Content("\n\n").join(parts)

    def gate_open(self, now: float | None = None) -> bool:
        # While the cards are read no key answers, "not now" included: they are typed ahead.
        if self.cards is None and self.error is None:
            return False
        return super().gate_open(now)

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
            (one_line(card.filename), "bold"),
            ("\n  " + one_line(card.problem), "$foreground-muted"),
        )
    parts: list[str | tuple[str, str]] = [
        (f"[{one_line(card.type)}] ", "$text-accent"),
        (one_line(card.title), "bold"),
    ]
    summary = one_line(card.summary)
    details = f"{summary} · {one_line(card.filename)}" if summary else one_line(card.filename)
    parts.append(("\n  " + details, "$foreground-muted"))
    if card.markup:
        # The fragment came printable (invisible characters named) and cut to one line.
        parts += [
            "\n  ",
            (f"⚠ {one_line(card.markup)}", LABEL_STYLE),
            " ",
            (one_line(card.fragment) or "(no text)", MARK_STYLE),
        ]
    return Content.assemble(*parts)
