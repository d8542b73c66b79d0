"""An answer's Markdown as lines, block by block: a finished block is drawn once and kept.

Textual's ``Markdown`` widget makes a widget per block (paragraph, list item, bullet, fence),
and every one of them is styled, laid out and resized on each write of a stream: drawing the
80,000 characters of a long answer once costs about 8 s of CPU that way. Here an answer is one
widget's lines. The text is cut into top-level blocks where markdown-it starts them; every block
but the last is finished (a block can only end where the next one starts) and drawn once at the
width, by Rich's Markdown; only the last block is drawn again as the stream grows it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import ClassVar

from markdown_it import MarkdownIt
from pygments.lexer import Lexer  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
from pygments.token import Token  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]
from rich.console import Console, ConsoleOptions, RenderResult
from rich.control import strip_control_codes
from rich.markdown import CodeBlock, ListItem, Markdown, MarkdownElement
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax, SyntaxTheme
from rich.text import Text
from textual.strip import Strip

from widgets.segments import styled

__all__ = ["AnswerLines", "block_starts"]

# Rich's Markdown parser (CommonMark with tables and strikethrough): the blocks are cut where
# the drawing will see them, with one parser made once.
_PARSER = MarkdownIt().enable("strikethrough").enable("table")
CODE_THEME = "monokai"


def block_starts(text: str) -> list[int]:
    """The line numbers where the top-level blocks of ``text`` start, in order."""
    starts = {token.map[0] for token in _PARSER.parse(text) if token.level == 0 and token.map is not None}
    return sorted(starts)


class _CodeBlock(CodeBlock):
    """A fence: highlighted once it is finished; while the stream still grows it, plain on the
    same background (highlighting it again at every write is most of a stream's drawing)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Rich's own draws a Syntax, which wraps and renders line by line (slow). The same look
        # (Padding(text, 1) on the theme's background, a long line folded) from the lexer's
        # tokens as segments: a line that fits is used as it is, only a longer one is wrapped.
        code = str(self.text).rstrip()
        theme = Syntax.get_theme(self.theme)
        style = theme.get_background_style() + theme.get_style_for_token(Token.Text)
        rows = _plain_rows(code, style) if self.plain else _code_rows(code, self.lexer_name, theme, style)
        width = options.max_width
        inner = max(1, width - 2)
        blank, new_line, pad = Segment(" " * width, style), Segment.line(), Segment(" ", style)
        yield from (blank, new_line)
        for row in rows:
            lines = [row] if Segment.get_line_length(row) <= inner else _fold(console, options, row, inner)
            for line in lines:
                yield pad
                yield from line
                yield Segment(" " * max(1, width - 1 - Segment.get_line_length(line)), style)
                yield new_line
        yield from (blank, new_line)

    plain = False

    @classmethod
    def create(cls, markdown: Markdown, token: object) -> _CodeBlock:
        block = super().create(markdown, token)  # type: ignore[arg-type]
        assert isinstance(block, _CodeBlock)
        block.plain = getattr(markdown, "plain_code", False)
        return block


@functools.cache
def _lexer(name: str) -> Lexer:
    # As Rich's Syntax makes it (tabs as 4 spaces), once per language: making one is slow.
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=4)
    except ClassNotFound:
        return get_lexer_by_name("text", stripnl=False, ensurenl=True, tabsize=4)


def _code_rows(code: str, language: str, theme: SyntaxTheme, style: Style) -> list[list[Segment]]:
    """The highlighted lines of ``code``: each token's style over the background ``style``."""
    styles: dict[object, Style] = {}
    rows: list[list[Segment]] = [[]]
    for token_type, value in _lexer(language).get_tokens(code):
        token_style = styles.get(token_type)
        if token_style is None:
            token_style = styles[token_type] = style + theme.get_style_for_token(token_type)
        first = True
        for part in value.split("\n"):  # the block's text has no control codes (a Rich Text)
            if not first:
                rows.append([])
            first = False
            if part:
                rows[-1].append(Segment(part, token_style))
    if len(rows) > 1 and not rows[-1]:
        rows.pop()  # the lexer's own final line break
    return rows


def _plain_rows(code: str, style: Style) -> list[list[Segment]]:
    return [[Segment(_tabs(line), style)] if line else [] for line in strip_control_codes(code).split("\n")]


def _tabs(line: str) -> str:
    if "\t" not in line:
        return line
    text = Text(line)
    text.expand_tabs(8)  # to cell columns, as Rich draws a wide character's tab
    return text.plain


def _fold(console: Console, options: ConsoleOptions, row: list[Segment], width: int) -> list[list[Segment]]:
    """A line longer than ``width`` folded onto as many as it needs (nothing is cut off)."""
    text = Text.assemble(*((s.text, s.style or Style()) for s in row), no_wrap=False, overflow="fold")
    return console.render_lines(text, options.update_width(width), pad=False)


class _ListItem(ListItem):
    """A list item; an ordered one numbered "1." (Rich draws a bare "1")."""

    def render_number(
        self, console: Console, options: ConsoleOptions, number: int, last_number: int
    ) -> RenderResult:
        width = len(str(last_number)) + 3
        lines = console.render_lines(
            self.elements, options.update(width=options.max_width - width), style=self.style
        )
        style = console.get_style("markdown.item.number", default="none")
        pad, numeral, new_line = (
            Segment(" " * width, style),
            Segment(f"{number}.".rjust(width - 1) + " ", style),
            Segment("\n"),
        )
        for index, line in enumerate(lines):
            yield pad if index else numeral
            yield from line
            yield new_line


class _Markdown(Markdown):
    """Rich's Markdown with one parser for every block (making one costs about a millisecond)
    and fences drawn by ``_CodeBlock``."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "fence": _CodeBlock,
        "code_block": _CodeBlock,
        "list_item_open": _ListItem,
    }
    _parser: ClassVar[MarkdownIt] = _PARSER

    def __init__(self, markup: str, *, plain_code: bool) -> None:
        # Markdown.__init__'s attributes, without its new parser.
        self.markup = markup
        self.parsed = self._parser.parse(markup)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME
        self.plain_code = plain_code


def _draw(console: Console, options: ConsoleOptions, source: str, *, growing: bool = False) -> list[Strip]:
    width = options.max_width
    markdown = _Markdown(source, plain_code=growing)
    rows = console.render_lines(markdown, options, pad=True)
    # Rich puts a blank row before a list, a quote or a table and after a table or a rule: the
    # gap between blocks is ours (one row). A fence's padding rows have its background: kept.
    first, last = 0, len(rows)
    while first < last and _empty(rows[first]):
        first += 1
    while last > first and _empty(rows[last - 1]):
        last -= 1
    # Rich leaves its padding and plain runs unstyled: every segment gets a style, or NO_COLOR's
    # filter fails on the line wherever it is drawn without the block's style over it.
    return [Strip(styled(Segment.simplify(row)), width) for row in rows[first:last]]


def _empty(row: list[Segment]) -> bool:
    return all(not segment.text.strip() and not (segment.style and segment.style.bgcolor) for segment in row)


@dataclass
class AnswerLines:
    """The lines of one answer at one width: ``finished`` blocks kept, the ``tail`` redrawn."""

    width: int = 0
    source: str = ""  # the whole Markdown text written so far
    done_at: int = 0  # where the unfinished tail starts in ``source``
    finished: list[Strip] = field(default_factory=list)
    tail: list[Strip] = field(default_factory=list)

    @property
    def lines(self) -> list[Strip]:
        return self.finished + self.tail if self.tail else self.finished

    @property
    def height(self) -> int:
        return len(self.finished) + len(self.tail)

    def line(self, y: int) -> Strip | None:
        finished = self.finished
        if y < len(finished):
            return finished[y]
        y -= len(finished)
        return self.tail[y] if y < len(self.tail) else None

    def write(self, console: Console, options: ConsoleOptions, text: str, *, complete: bool = False) -> None:
        """Add ``text`` to the source and draw what changed; with ``complete`` the last block is
        finished too (the answer ended)."""
        self.source += text
        self._draw_tail(console, options, complete)

    def redraw(self, console: Console, options: ConsoleOptions, width: int, *, complete: bool) -> None:
        """Draw everything again at ``width`` (the widget's width changed)."""
        self.width = width
        self.done_at = 0
        self.finished = []
        self.tail = []
        self._draw_tail(console, options, complete)

    def _draw_tail(self, console: Console, options: ConsoleOptions, complete: bool) -> None:
        if self.width <= 0:
            return
        options = options.update(width=self.width, max_width=self.width, height=None, highlight=False)
        tail = self.source[self.done_at :]
        rows = tail.splitlines(keepends=True)
        starts = block_starts(tail)
        ends = [*starts[1:], len(rows)] if starts else []
        last = len(starts) if complete else len(starts) - 1
        consumed = 0  # lines of ``tail`` drawn as finished blocks
        for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
            block = "".join(rows[start:end])
            if index < last:
                self._add_finished(_draw(console, options, block))
                consumed = end
            else:
                drawn = _draw(console, options, block, growing=True)
                self.tail = (
                    [Strip.blank(self.width, Style.null())] if self.finished and drawn else []
                ) + drawn
                break
        else:
            self.tail = []
        if consumed:
            self.done_at += sum(len(row) for row in rows[:consumed])

    def _add_finished(self, lines: list[Strip]) -> None:
        if not lines:
            return
        if self.finished:
            self.finished.append(Strip.blank(self.width, Style.null()))
        self.finished.extend(lines)
