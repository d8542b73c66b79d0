"""widgets/chat/answer_lines.py: an answer's Markdown as lines, block by block."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment

from widgets.chat.answer_lines import AnswerLines, block_starts


def _console(width: int) -> Console:
    return Console(width=width, force_terminal=True, color_system="truecolor", file=open("/dev/null", "w"))


def _shown(source: str, width: int = 50, *, complete: bool = True) -> list[str]:
    console = _console(width)
    lines = AnswerLines(width=width)
    lines.write(console, console.options, source, complete=complete)
    return [line.text.rstrip() for line in lines.lines]


def test_blocks_start_where_markdown_starts_them() -> None:
    text = "# T\n\npara\nmore\n\n- a\n- b\n\n```\ncode\n\nstill code\n```\nafter\n"
    assert block_starts(text) == [0, 2, 5, 8, 13]


def test_one_blank_row_between_blocks_whatever_rich_puts_around_them() -> None:
    shown = _shown("Para.\n\n- a\n- b\n\n> q\n\n| k | v |\n|---|---|\n| 1 | 2 |\n\nEnd.")
    assert shown[0] == "Para."
    assert shown[-1] == "End."
    blanks = [i for i, line in enumerate(shown) if not line]
    assert all(b + 1 not in blanks for b in blanks)  # never two blank rows in a row


def test_an_ordered_list_is_numbered_with_a_dot_and_wraps_under_its_text() -> None:
    shown = _shown("1. one\n2. two that is long enough to wrap around the narrow width here\n")
    assert shown[0] == " 1. one"
    assert shown[1].startswith(" 2. two")
    assert shown[2].startswith("    ") and shown[2].strip()


def test_a_long_line_of_code_wraps_and_nothing_is_cut_off() -> None:
    code = "x = '" + "abcdefghij" * 8 + "'"
    shown = _shown(f"```py\n{code}\n```\n", width=40)
    # Wrapped where a space is (the space goes with the break), every character kept.
    assert "".join(shown).replace(" ", "") == code.replace(" ", "")
    assert all(len(line) <= 40 for line in shown)


def test_a_growing_fence_has_the_height_it_will_have_once_highlighted() -> None:
    source = "```python\ndef f(x):\n    return x * 2\n```\n"
    growing = _shown(source, complete=False)
    finished = _shown(source, complete=True)
    assert growing == finished


def test_a_write_draws_again_only_the_last_block() -> None:
    console = _console(60)
    lines = AnswerLines(width=60)
    lines.write(console, console.options, "First paragraph.\n\nSecond ")
    kept = list(lines.finished)
    assert [line.text.rstrip() for line in kept] == ["First paragraph."]
    lines.write(console, console.options, "paragraph grows.")
    assert lines.finished[: len(kept)] == kept and all(
        a is b for a, b in zip(lines.finished, kept, strict=False)
    )
    assert lines.tail[-1].text.rstrip() == "Second paragraph grows."


def test_characters_other_tools_take_for_line_breaks_do_not_shift_the_blocks() -> None:
    """U+2028, FF and RS are line breaks to ``str.splitlines``, not to markdown-it: streamed in
    small writes, the answer is drawn exactly as in one."""
    source = "First\u2028still first.\x0c\n\n- item\x1e one\n\nMiddle\x1c para.\n\nLast."
    console = _console(50)
    streamed = AnswerLines(width=50)
    for k in range(0, len(source), 3):
        streamed.write(console, console.options, source[k : k + 3])
    streamed.write(console, console.options, "", complete=True)
    words = " ".join(line.text for line in streamed.lines).split()
    assert words == ["First", "still", "first.", "•", "item", "one", "Middle", "para.", "Last."]
    assert [line.text for line in streamed.lines] == [line.text for line in _lines(source)]


def _lines(source: str) -> list:  # type: ignore[type-arg]
    console = _console(50)
    lines = AnswerLines(width=50)
    lines.write(console, console.options, source, complete=True)
    return lines.lines


def _reference_fence(
    console: Console, options: object, code: str, language: str, *, plain: bool
) -> list[list[object]]:
    """A fence as Rich itself draws the look the answer keeps: ``Padding(text, 1)`` on the theme's
    background, the text highlighted by ``Syntax`` (or plain), a long line folded."""
    from pygments.token import Token
    from rich.padding import Padding
    from rich.syntax import Syntax
    from rich.text import Text

    theme = Syntax.get_theme("monokai")
    style = theme.get_background_style() + theme.get_style_for_token(Token.Text)
    if plain:
        text = Text(code, style=style)
    else:
        text = Syntax(code, language, theme=theme).highlight(code)
        text.rstrip()
    text.no_wrap, text.overflow = False, "fold"
    return [
        list(Segment.simplify(row))
        for row in console.render_lines(Padding(text, 1, style=style, expand=True), options)
    ]


def test_a_fence_is_drawn_from_its_tokens_exactly_as_rich_draws_it() -> None:
    # The fence is drawn from the lexer's tokens (no Padding restyling every segment, no Text wrap
    # for a line that fits): the same segments as Rich's, tabs, wide characters, control
    # characters, long and empty lines, unknown languages, plain and highlighted.
    import random

    from rich.markdown import Markdown
    from rich.text import Text

    from widgets.chat.answer_lines import _CodeBlock

    rng = random.Random(11)
    alphabet = "ab \t中é\n=(){}:#'\"`\x07"  # no CR: markdown-it ends every line with a LF
    cases = [
        ("python", "def f(x):\n\treturn x  # é 中文"),
        ("python", ""),
        ("zzz", "abc\x07def\n  x"),
        ("python", "y = " + "1 + " * 60 + "1"),
        ("js", "const a = `" + "中文" * 30 + "`;"),
        ("python", "x = 1   \n\n\ny=2"),
    ]
    cases += [
        (
            rng.choice(["python", "", "rust", "zzz"]),
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120))),
        )
        for _ in range(150)
    ]
    for width in (80, 30, 7, 3):
        console = _console(width)
        options = console.options.update(width=width, max_width=width, height=None, highlight=False)
        for language, code in cases:
            for plain in (False, True):
                markdown = Markdown("")
                markdown.plain_code = plain  # type: ignore[attr-defined]
                block = _CodeBlock.create(markdown, type("T", (), {"info": language, "content": code})())
                block.text = Text(code)
                ours = [list(Segment.simplify(row)) for row in console.render_lines(block, options)]
                # (the block's text is a Rich Text, as the Markdown parser makes it: control codes gone)
                reference = _reference_fence(
                    console, options, str(block.text).rstrip(), language or "text", plain=plain
                )
                assert ours == reference, (width, plain, code)
