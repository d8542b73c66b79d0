"""A later part of a long answer: its own Markdown document (see ``AnswerPart`` for why)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Markdown

__all__ = ["AnswerPart"]


class AnswerPart(Markdown):
    """A later part of a long answer: its own Markdown document, laid out on its own.

    Textual re-arranges a list or a fence whenever the height of the Markdown widget holding
    it changes, so while one widget grows with the stream every list and fence above is laid
    out again on each write. A part stops growing once the next one starts, and the blocks in
    it are left alone. Parts start only before a paragraph, a list or a rule (blocks without a
    top margin), so the gap between two parts is the one a single document would have.
    """

    DEFAULT_CSS = """
    AnswerPart {
        padding: 0;
        margin: 0;
        & > .answer-part--pin {
            height: 0;
        }
    }
    AnswerBlock.-nested > AnswerPart {
        color: $text-muted;
    }
    """

    def __init__(self, markdown: str | None = None, *, height: int | None = None,
                 on_filled: Callable[[AnswerPart], None] | None = None) -> None:
        super().__init__(markdown)
        # A part made again from its text (scrolled back into view) keeps its old height
        # until its blocks are there, so that nothing below it moves meanwhile.
        if height is not None:
            self.styles.min_height = height
        self._on_filled = on_filled

    def compose(self) -> ComposeResult:
        # A child of fixed height: Textual measures a container whose children all have a
        # dynamic height against its parent's height, which grows with every write, and so
        # re-arranges all of it each time; with this pin the part is measured on its own.
        yield Widget(classes="answer-part--pin")

    def on_mount(self) -> None:
        # Runs before Markdown._on_mount (which renders the initial text); call_later after it.
        if self._on_filled is not None:
            self.call_later(self._filled)

    def _filled(self) -> None:
        self.styles.min_height = None
        if self._on_filled is not None:
            self._on_filled(self)

