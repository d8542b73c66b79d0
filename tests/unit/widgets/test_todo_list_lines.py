"""The to-do block's lines: the marks carry each item's state (NO_COLOR reads the same), the active
item shows by its active form, a long list shows the active item with a few around it and counts
the rest, the one-line form names the item the list is at, and model text cannot break a line."""

from __future__ import annotations

from widgets.chat.todo_list import MAX_ITEMS, TodoRow, full_lines, summary_line, window


def rows(*states: str) -> list[TodoRow]:
    return [TodoRow(text=f"step {n}", status=s) for n, s in enumerate(states, 1)]  # type: ignore[arg-type]


def plain(lines: list) -> list[str]:
    return [line.plain for line in lines]


def test_a_short_list_is_shown_whole_under_its_count() -> None:
    assert plain(full_lines(rows("completed", "in_progress", "pending"))) == [
        "To-do 1/3 done",
        "✓ step 1",
        "▸ step 2",
        "☐ step 3",
    ]


def test_a_long_list_shows_the_active_item_with_some_around_it() -> None:
    long = rows(*["completed"] * 10, "in_progress", *["pending"] * 9)
    start, end = window(long)
    assert end - start == MAX_ITEMS and start <= 10 < end
    lines = plain(full_lines(long))
    assert lines[0] == "To-do 10/20 done"
    assert lines[1] == "  +8 earlier" and lines[-1] == "  +5 more"
    assert "✓ step 9" in lines and "▸ step 11" in lines and "☐ step 15" in lines
    assert len(lines) == MAX_ITEMS + 3


def test_a_long_list_at_its_start_or_end_counts_only_the_other_side() -> None:
    at_start = plain(full_lines(rows("in_progress", *["pending"] * 11)))
    assert at_start[1] == "▸ step 1" and at_start[-1] == "  +5 more"
    finished = plain(full_lines(rows(*["completed"] * 12)))
    assert finished[1] == "  +5 earlier" and finished[-1] == "✓ step 12"


def test_the_one_line_form_names_the_item_the_list_is_at() -> None:
    assert summary_line(rows("completed", "in_progress", "pending")).plain == "1/3 done · ▸ step 2"
    assert summary_line(rows("completed", "pending")).plain == "1/2 done · ☐ step 2"
    assert summary_line(rows("completed", "completed")).plain == "2/2 done"


def test_model_text_cannot_break_a_line_or_drive_the_terminal() -> None:
    hostile = [TodoRow(text="one\ntwo \x1b[2Jthree", status="in_progress")]
    assert plain(full_lines(hostile))[1] == "▸ one two three"
    assert summary_line(hostile).plain == "0/1 done · ▸ one two three"
