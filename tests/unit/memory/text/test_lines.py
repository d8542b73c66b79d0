"""The one-line and size helpers every face uses (widgets, print mode, tools, the memory commands)."""

from memory.text.lines import format_bytes, one_line


def test_one_line_strips_terminal_sequences_collapses_whitespace_and_cuts_with_an_ellipsis() -> None:
    assert one_line("a\x1b]52;c;aGk=\x07 b\n\n\tc") == "a b c"
    assert one_line("x" * 10, 4) == "xxx…"
    assert one_line("short", 40) == "short"
    assert one_line(12) == "12"


def test_format_bytes_has_one_form_for_every_size() -> None:
    assert [format_bytes(n) for n in (0, 48, 1023)] == ["0 B", "48 B", "1023 B"]
    assert format_bytes(1024) == "1.0 KiB"
    assert format_bytes(200_000) == "195.3 KiB"
    assert format_bytes(11 * 1024 * 1024) == "11.0 MiB"
    assert format_bytes(3 * 1024**4) == "3072.0 GiB"
