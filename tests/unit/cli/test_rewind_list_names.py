"""``rewind --list`` names the files a turn changed, as many as fit the width, then "+N more"."""

from __future__ import annotations

import pytest

from app.agent.undo.rewind import TurnLine
from app.cli.rewind import files_column, list_lines


def turn(n: int, files: list[str], *, bash: bool = False, text: str = "do it") -> TurnLine:
    return TurnLine(
        turn=n,
        time="2026-01-01T10:00:00Z",
        text=text,
        kind="turn",
        files=tuple(files),
        bash=bash,
        in_conversation=True,
        rewound=False,
        job=None,
        status="ok",
    )


def test_the_names_that_fit_then_how_many_more_and_bash() -> None:
    t = turn(1, ["a.txt", "b.txt", "c.txt", "d.txt"], bash=True)
    assert files_column(t, 40) == "a.txt, b.txt, c.txt, d.txt, bash"
    assert files_column(t, 28) == "a.txt, b.txt +2 more, bash"
    assert files_column(t, 25) == "a.txt +3 more, bash"
    assert files_column(turn(1, []), 40) == "-"


def test_a_name_too_long_for_the_column_keeps_its_end_and_a_narrow_one_counts() -> None:
    long = "very/deeply/nested/path/to/the/component/file.tsx"
    column = files_column(turn(1, [long, "b.txt"]), 30)
    assert column.startswith("…") and column.endswith("component/file.tsx +1 more") and len(column) == 30
    assert files_column(turn(1, [long, "b.txt", "c.txt"], bash=True), 14) == "3 files, bash"


def test_a_hostile_file_name_stays_on_its_line() -> None:
    column = files_column(turn(1, ["x\x1b[2J\x1b]0;title\x07y\nz.txt"]), 40)
    assert "\x1b" not in column and "\n" not in column and "z.txt" in column


@pytest.mark.parametrize("width", [80, 100, 160])
def test_every_line_fits_the_width_and_the_prompts_line_up(width: int) -> None:
    turns = [
        turn(1, ["a.txt", "made/new.txt"]),
        turn(2, [f"src/module_{i}.py" for i in range(12)], bash=True),
        turn(3, []),
    ]
    lines = list_lines(turns, width)
    assert all(len(line) <= width for line in lines), lines
    assert len({line.index("do it") for line in lines}) == 1, lines
    assert "a.txt, made/new.txt" in lines[0]
    assert "src/module_0.py" in lines[1] and lines[1].split("  ")[2].endswith(" more, bash")
