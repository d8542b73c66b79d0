"""The rewind view's windows in a tiny host App: the turn list (files with +/- lines, the bash
note, Enter picks, Esc closes) and the plan window (its keys, conflicts first with their diff,
the memory line and its key)."""

from __future__ import annotations

from typing import Any

import pytest
from textual import on
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Button, Static

from tests.tui.conftest import wait_until
from widgets.rewind.plan import RewindPlanScreen, plan_body
from widgets.rewind.state import BASH_NOTE, FileLine, PlanFile, PlanState, RewindChoice, TurnItem
from widgets.rewind.turns import FILES_SHOWN, RewindTurns, turn_prompt

_UNSET = object()

DIFF = "--- a.txt (as the agent left it)\n+++ a.txt (now)\n@@ -1 +1 @@\n-by the agent\n+typed by hand\n"
STATE = PlanState(
    to_turn=2,
    text="rework the parser",
    files=(
        PlanFile("made/new.txt", "delete"),
        PlanFile("a.txt", "restore", "a.txt changed since the agent last wrote it", DIFF),
        PlanFile("same.txt", "same"),
    ),
    bash_turns=(3,),
    conversation="turn 2 and turn 3 leave the conversation",
    memory="memory is not rewound: turns 2–3 produced memory batch tx1 (turn 2); m undoes it",
    memory_undo=True,
)
ITEMS = [
    TurnItem(
        turn=2,
        when="16:12",
        text="add the tests\x1b[31m and run them",
        files=(FileLine("tests/t.py", 12, 0),),
        bash=True,
    ),
    TurnItem(
        turn=1,
        when="16:09",
        text="rework the parser",
        files=tuple(FileLine(f"f{i}.py", i, 1) for i in range(FILES_SHOWN + 2)),
        note="rewound: not in the conversation",
    ),
]


class Host(App[None]):
    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.modal = screen
        self.result: object = _UNSET
        self.undo_asked = 0

    def compose(self) -> ComposeResult:
        yield Static("behind the view")

    def on_mount(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: object) -> None:
        self.result = result

    @on(RewindPlanScreen.UndoMemory)
    def _undo(self, message: RewindPlanScreen.UndoMemory) -> None:
        self.undo_asked += 1


def test_a_turn_shows_its_files_with_their_lines_the_bash_note_and_a_count_of_the_rest() -> None:
    newest = turn_prompt(ITEMS[0]).plain
    assert "tests/t.py  +12 −0" in newest and BASH_NOTE in newest and "\x1b" not in newest
    older = turn_prompt(ITEMS[1]).plain
    assert "f0.py  +0 −1" in older and f"f{FILES_SHOWN - 1}.py" in older and f"f{FILES_SHOWN}.py" not in older
    assert "… and 2 more files" in older and "(rewound: not in the conversation)" in older
    uncounted = turn_prompt(TurnItem(turn=3, when="16:20", text="x", files=(FileLine("blob.bin"),))).plain
    assert "blob.bin" in uncounted and "+" not in uncounted.split("blob.bin")[1]


async def test_enter_picks_the_highlighted_turn_and_esc_closes() -> None:
    app = Host(RewindTurns(ITEMS))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: app.result == 1)
    app = Host(RewindTurns(ITEMS))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.result is None)


@pytest.mark.parametrize(
    ("key", "files", "conversation"), [("b", True, True), ("f", True, False), ("c", False, True)]
)
async def test_the_plan_windows_keys_choose_what_is_rewound(
    key: str, files: bool, conversation: bool
) -> None:
    app = Host(RewindPlanScreen(STATE))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result == RewindChoice(files, conversation))


async def test_esc_goes_back_without_a_choice() -> None:
    app = Host(RewindPlanScreen(STATE))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.result is None)


def test_the_plan_lists_a_conflict_first_with_its_diff_then_bash_and_the_conversation() -> None:
    body = plan_body(STATE).plain
    lines = body.split("\n")
    assert lines[0].startswith("Files") and "1 changed since the agent last wrote it" in lines[0]
    assert "⚠ conflict: a.txt changed since the agent last wrote it" in lines[1]
    assert "-by the agent" in body and "+typed by hand" in body
    assert (
        body.index("+typed by hand") < body.index("delete    made/new.txt") < body.index("unchanged same.txt")
    )
    assert "turn 3 ran bash: files it changed are not restored" in body
    assert lines[-1] == "Conversation: turn 2 and turn 3 leave the conversation"
    none = plan_body(
        PlanState(to_turn=1, text="", files=(), bash_turns=(), conversation="c", memory="m")
    ).plain
    assert "changed none" in none


async def test_m_asks_the_memory_undo_once_and_the_window_shows_what_came_of_it() -> None:
    app = Host(RewindPlanScreen(STATE))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        assert "batch tx1 (turn 2); m undoes it" in str(app.modal.query_one("#memory", Static).content)
        await pilot.press("m")
        await wait_until(pilot, lambda: app.undo_asked == 1)
        assert app.modal.query_one("#m", Button).disabled
        await pilot.press("m")  # once: the App says what came of it
        await pilot.pause()
        assert app.undo_asked == 1 and app.result is _UNSET
        app.modal.show_memory("undid memory batch tx1", can_undo=False)
        await pilot.pause()
        assert str(app.modal.query_one("#memory", Static).content) == "undid memory batch tx1"


async def test_without_batches_to_undo_m_does_nothing() -> None:
    app = Host(
        RewindPlanScreen(
            PlanState(
                to_turn=1,
                text="t",
                files=(),
                bash_turns=(),
                conversation="c",
                memory="memory is not rewound: turn 1 left no memory batch to undo",
            )
        )
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        assert app.modal.query_one("#m", Button).disabled
        await pilot.press("m")
        await pilot.pause()
        assert app.undo_asked == 0 and app.result is _UNSET
