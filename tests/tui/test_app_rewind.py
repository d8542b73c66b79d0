"""/rewind in the app, against the fake Messages API with the real tools and session log: a
turn's edits restored byte for byte (a created file deleted), a hand edit since shown as a
conflict with its diff and never overwritten without a yes (and never by keys typed ahead), the
conversation rewound (its prompt back in the input, no trace in the next request), Esc Esc on
an empty prompt, and the memory batches of the rewound turns with their undo key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.tui.app import PseudoClaudeApp
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from tests.tui.test_typed_ahead import FakeClock
from widgets.dialogs import decision
from widgets.dialogs.confirm import ConfirmModal
from widgets.dialogs.decision import QUIET_S
from widgets.dialogs.permission import PermissionModal
from widgets.rewind.plan import RewindPlanScreen
from widgets.rewind.state import FileLine
from widgets.rewind.turns import RewindTurns

pytestmark = pytest.mark.timeout(60)

ORIGINAL = b"alpha\nbeta\ngamma\n"
PROMPT = "rework a.txt\nand add a file"


def _script_edits(server: FakeAnthropic) -> None:
    server.script(
        MODEL,
        tool_use("edit_file", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"}, id="toolu_e"),
        tool_use("write_file", {"path": "a.txt", "content": "rewritten by the agent\n"}, id="toolu_w"),
        tool_use("write_file", {"path": "made/new.txt", "content": "a new file\n"}, id="toolu_n"),
        text("All three writes are done."),
    )


async def _turn(
    pilot: Pilot[Any], app: PseudoClaudeApp, prompt: str, answer: str, clock: FakeClock | None = None
) -> None:
    """Send ``prompt``; allow each write for the session ("2") until ``answer`` shows (``clock``:
    the deciding windows' own, moved on so that the window was seen first)."""
    await send(pilot, prompt)
    while answer not in chat_texts(app):
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, PermissionModal) or answer in chat_texts(app),
            what="a permission window or the answer",
        )
        modal = app.screen
        if isinstance(modal, PermissionModal):
            if clock is not None:
                await wait_until(pilot, lambda m=modal: m._gate_shown_at is not None, what="the window drawn")
                clock.advance(1.0)
            await pilot.press("2")
            await wait_until(pilot, lambda m=modal: app.screen is not m, what="the window answered")


async def _open_plan(pilot: Pilot[Any], app: PseudoClaudeApp, turn: int) -> RewindPlanScreen:
    await send(pilot, "/rewind")
    # Pushed is not yet composed: wait for its list too.
    await wait_until(
        pilot,
        lambda: isinstance(app.screen, RewindTurns) and bool(app.screen.query("#turns")),
        what="the turn list",
    )
    turns = app.screen
    assert isinstance(turns, RewindTurns)
    listing = turns.query_one("#turns")
    index = next(i for i, item in enumerate(turns.items) if item.turn == turn)
    listing.highlighted = index
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, RewindPlanScreen), what="the plan window")
    assert isinstance(app.screen, RewindPlanScreen)
    return app.screen


async def test_rewinding_a_turns_files_restores_both_bytes_exactly_and_deletes_the_created_file(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "a.txt").write_bytes(ORIGINAL)
    _script_edits(server)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, PROMPT, "All three writes are done.")
        assert (ws / "a.txt").read_bytes() == b"rewritten by the agent\n"
        await send(pilot, "/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindTurns), what="the turn list")
        [item] = app.screen.items
        assert item.files == (FileLine("a.txt", 1, 3), FileLine("made/new.txt", 1, 0))
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the list closed")
        plan = await _open_plan(pilot, app, 1)
        assert [(f.path, f.action) for f in plan.state.files] == [
            ("a.txt", "restore"),
            ("made/new.txt", "delete"),
        ]
        await pilot.press("f")
        await wait_until(
            pilot, lambda: any("recorded as turn 2" in t for t in chat_texts(app)), what="the report"
        )
        assert (ws / "a.txt").read_bytes() == ORIGINAL
        assert not (ws / "made" / "new.txt").exists()
        assert "All three writes are done." in chat_texts(app) and app.prompt.text == ""  # the chat stays
        server.script(MODEL, text("next answer"))
        await _turn(pilot, app, "what next?", "next answer")
        sent = json.dumps(server.requests_for(MODEL)[-1].body["messages"])
        assert "rework a.txt" in sent and "All three writes are done." in sent  # files only: the talk stays


def _titles(app: PseudoClaudeApp) -> list[str]:
    return [c.title for c in app.panel.state.project]


def _plain(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector).content)


async def _press_when(pilot: Pilot[Any], app: PseudoClaudeApp, kind: type, key: str) -> Any:
    await wait_until(pilot, lambda: isinstance(app.screen, kind), what=kind.__name__)
    screen = app.screen
    await pilot.press(key)
    return screen


async def test_a_hand_edit_since_is_a_conflict_shown_with_its_diff_and_kept_unless_confirmed(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "a.txt").write_bytes(ORIGINAL)
    _script_edits(server)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, PROMPT, "All three writes are done.")
        (ws / "a.txt").write_bytes(b"typed by hand\n")
        plan = await _open_plan(pilot, app, 1)
        [conflict] = plan.state.conflicts
        assert conflict.path == "a.txt" and "changed since the agent last wrote it" in (
            conflict.conflict or ""
        )
        shown = _plain(plan, "#plan")
        assert "-rewritten by the agent" in shown and "+typed by hand" in shown
        await pilot.press("f")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ConfirmModal) and app.screen.query("#preview-text"),
            what="the conflict window",
        )
        assert "+typed by hand" in _plain(app.screen, "#preview-text")
        await pilot.press("n")
        await wait_until(pilot, lambda: any("nothing was rewound: a.txt kept" in t for t in chat_texts(app)))
        assert (ws / "a.txt").read_bytes() == b"typed by hand\n" and (ws / "made" / "new.txt").exists()

        await _open_plan(pilot, app, 1)
        await pilot.press("b")
        await _press_when(pilot, app, ConfirmModal, "y")
        await wait_until(
            pilot, lambda: any("recorded as turn 2" in t for t in chat_texts(app)), what="the report"
        )
        assert (ws / "a.txt").read_bytes() == ORIGINAL and not (ws / "made" / "new.txt").exists()
        # The rewind is an entry of the list: rewinding it brings the hand edit back.
        plan = await _open_plan(pilot, app, 2)
        assert isinstance(app.screen, RewindPlanScreen)
        await pilot.press("f")
        await wait_until(pilot, lambda: (ws / "a.txt").read_bytes() == b"typed by hand\n", what="the undo")
        assert (ws / "made" / "new.txt").read_bytes() == b"a new file\n"


async def test_a_conversation_rewind_puts_the_prompt_back_and_leaves_no_trace_in_the_next_request(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("alpha answer"), text("bravo answer"), text("charlie answer"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, "alpha question", "alpha answer")
        await _turn(pilot, app, "bravo question\nwith a second line", "bravo answer")
        plan = await _open_plan(pilot, app, 2)
        assert "turn 2 leaves the conversation" in plan.state.conversation
        await pilot.press("c")
        await wait_until(
            pilot,
            lambda: app.prompt.text == "bravo question\nwith a second line",
            what="the prompt back in the input",
        )
        await wait_until(
            pilot, lambda: any("conversation: back to before turn 2" in t for t in chat_texts(app))
        )
        texts = chat_texts(app)
        assert "alpha answer" in texts and "bravo answer" not in texts  # the chat drawn from the session
        await _turn(pilot, app, "charlie question", "charlie answer")
        sent = json.dumps(server.requests_for(MODEL)[-1].body["messages"])
        assert "alpha question" in sent and "alpha answer" in sent and "bravo" not in sent


async def test_esc_esc_on_an_empty_prompt_opens_the_view_and_not_with_text_in_the_prompt(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("alpha answer"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, "alpha question", "alpha answer")
        app.prompt.text = "half a thought"
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, RewindTurns) and app.prompt.text == "half a thought"
        app.prompt.text = ""
        await pilot.press("escape", "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindTurns), what="the turn list")
        assert [i.turn for i in app.screen.items] == [1]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindTurns), what="the list closed")


async def test_the_rewound_turns_memory_batches_are_named_and_m_undoes_them_unless_another_came_after(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("Use make build."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build.", summary="make build")))
    )
    app = make_app(server)
    stores = MemoryStores(ws)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, "How do I build?", "Use make build.")
        await wait_until(pilot, lambda: _titles(app) == ["Build with make"], what="the turn's card")
        [batch] = stores.history()
        stores.create_card("project", "project_knowledge", "Typed by a person", "kept", "A later batch.")
        plan = await _open_plan(pilot, app, 1)
        assert plan.state.memory_undo and f"memory batch {batch.txid} (turn 1)" in plan.state.memory
        await pilot.press("m")
        await wait_until(pilot, lambda: "came after them" in _plain(plan, "#memory"), what="the refusal")
        assert [e.undone_by for e in stores.history()] == [None, None]  # nothing undone
        await pilot.press("escape", "escape")  # back to the list, then closed
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="the view closed")

        await send(pilot, "/undo")  # the person's batch first: now the turn's is the last one
        await wait_until(
            pilot, lambda: stores.history()[1].undone_by is not None, what="the later batch undone"
        )
        plan = await _open_plan(pilot, app, 1)
        await pilot.press("m")
        await wait_until(pilot, lambda: f"undid memory batch {batch.txid}" in _plain(plan, "#memory"))
        assert stores.history()[0].undone_by is not None
        await wait_until(pilot, lambda: _titles(app) == [], what="the turn's card gone from the panel")
        assert any(f"undid memory batch {batch.txid}" in t for t in chat_texts(app))


@pytest.mark.typed_ahead
async def test_keys_typed_as_the_conflict_window_opens_do_not_overwrite_the_hand_edit(
    make_app, server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(decision, "clock", clock)
    (ws / "a.txt").write_bytes(ORIGINAL)
    _script_edits(server)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await _turn(pilot, app, PROMPT, "All three writes are done.", clock)
        (ws / "a.txt").write_bytes(b"typed by hand\n")
        plan = await _open_plan(pilot, app, 1)
        await wait_until(pilot, lambda: plan._gate_shown_at is not None, what="the plan window drawn")
        clock.advance(1.0)
        await pilot.press("f")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ConfirmModal) and app.screen._gate_shown_at is not None,
            what="the conflict window drawn",
        )
        confirm = app.screen
        await pilot.press("y")  # typed for the prompt as the window opened
        clock.advance(0.2)
        await pilot.press("y")  # still typing
        await pilot.pause()
        assert app.screen is confirm and app.prompt.text == "yy"
        assert (ws / "a.txt").read_bytes() == b"typed by hand\n" and (ws / "made" / "new.txt").exists()
        clock.advance(QUIET_S)  # read, and the typing paused: now y is an answer
        await pilot.press("y")
        await wait_until(pilot, lambda: (ws / "a.txt").read_bytes() == ORIGINAL, what="the overwrite")
