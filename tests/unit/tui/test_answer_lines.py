"""widgets/chat/answer_lines.py: an answer's Markdown as lines, block by block."""

from __future__ import annotations

from rich.console import Console

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
    assert lines.finished[: len(kept)] == kept and all(a is b for a, b in zip(lines.finished, kept, strict=False))
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
