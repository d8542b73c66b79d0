"""The permission modes in the app (Pilot, the fake Messages API): Shift+Tab cycles default →
accept-edits → plan → default from the prompt (the focus stays there) and the status line names
the mode (nothing in default); in accept-edits an edit_file inside the workspace runs with no
window; in plan an edit_file is refused with the plan-mode line, no window either; a change while
a turn runs counts from its next call; --permission-mode starts the app in a mode."""

from __future__ import annotations

from pathlib import Path

from app.agent.permissions.modes import PermissionMode
from app.tui.app import PseudoClaudeApp
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.permission import PermissionModal

EDIT = {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}


def _status(app: PseudoClaudeApp) -> str:
    return app.chat_screen.status_line.line(200).plain


def _mode(app: PseudoClaudeApp) -> PermissionMode:
    runtime = app.bridge.runtime
    assert runtime is not None
    return runtime.permission_mode


async def test_shift_tab_cycles_the_three_modes_and_the_status_line_names_them(
    make_app, server: FakeAnthropic
) -> None:
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        default_line = _status(app)
        assert "accept edits" not in default_line and "plan mode" not in default_line
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: "⏵⏵ accept edits" in _status(app), what="accept edits shown")
        assert _mode(app) == PermissionMode.ACCEPT_EDITS
        assert app.focused is app.prompt  # not taken by focus navigation
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: "⏸ plan mode" in _status(app), what="plan mode shown")
        assert "accept edits" not in _status(app) and _mode(app) == PermissionMode.PLAN
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: "plan mode" not in _status(app), what="back to default")
        assert _mode(app) == PermissionMode.DEFAULT and _status(app) == default_line
        assert app.focused is app.prompt


async def test_in_accept_edits_an_edit_runs_without_the_window(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    server.script(MODEL, tool_use("edit_file", EDIT, id="toolu_e"), text("edited"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await pilot.press("shift+tab")
        await wait_until(pilot, lambda: "accept edits" in _status(app), what="accept edits shown")
        await send(pilot, "edit the notes")
        await wait_until(pilot, lambda: "edited" in chat_texts(app), what="the answer after the edit")
        assert (ws / "notes.txt").read_text() == "beta\n"
        assert not any(isinstance(s, PermissionModal) for s in app.screen_stack)
        assert app.chat.tool("toolu_e").status == "done"


async def test_in_plan_an_edit_is_refused_without_the_window(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    server.script(MODEL, tool_use("edit_file", EDIT, id="toolu_e"), text("planned instead"))
    app = make_app(server, memory_mode="off", permission_mode="plan")  # --permission-mode plan
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "⏸ plan mode" in _status(app), what="plan mode shown at start")
        await send(pilot, "edit the notes")
        await wait_until(pilot, lambda: "planned instead" in chat_texts(app), what="the answer")
        assert (ws / "notes.txt").read_text() == "alpha\n"
        assert not any(isinstance(s, PermissionModal) for s in app.screen_stack)
        assert app.chat.tool("toolu_e").status == "denied"
        result = server.requests_for(MODEL)[1].body["messages"][-1]["content"][0]
        assert result["is_error"] and result["content"] == (
            "plan mode: edit_file changes things and does not run while planning; "
            "propose the plan with exit_plan_mode"
        )


async def test_a_mode_changed_while_a_turn_runs_counts_from_its_next_call(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    held = server.gate("edit")
    server.script(MODEL, tool_use("edit_file", EDIT, id="toolu_e", hold_before=held), text("edited"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "edit the notes")
        assert await held.wait_reached_async(15)
        assert app.prompt.disabled_reason is not None  # the turn runs
        await pilot.press("shift+tab")  # the key works while a turn runs
        await wait_until(pilot, lambda: "accept edits" in _status(app), what="accept edits shown")
        held.release()
        await wait_until(pilot, lambda: "edited" in chat_texts(app), what="the answer after the edit")
        assert (ws / "notes.txt").read_text() == "beta\n"
        assert not any(isinstance(s, PermissionModal) for s in app.screen_stack)
