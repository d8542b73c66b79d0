"""The plan window in the app (Pilot, the real SDK, the fake Messages API): in plan mode a scripted
exit_plan_mode shows the plan rendered as Markdown in a deciding window; ``1`` approves with
accept-edits and the next edit_file runs without a permission window; ``3`` (and Esc) keep
planning, a note typed after Tab reaching the model, the mode staying plan; ``2``/``y`` approve
asking, so the next edit asks. At 80×24 the plan and every key fit; a key typed as the window
opens is not an answer (the deciding windows' rule)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from app.agent.permissions.modes import PermissionMode
from app.agent.tools.builtin.exit_plan_mode import APPROVED_ASKING, APPROVED_EDITS, KEPT_PLANNING
from app.tui.app import PseudoClaudeApp
from app.tui.permission import window as permission_window
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.decision import QUIET_S, SETTLE_S
from widgets.dialogs.permission import PermissionModal
from widgets.dialogs.plan_review import PlanReview

PLAN = (
    "## Rename the build\n\n"
    "1. Change **make build** to `make all` in README.md\n"
    "2. Run the tests\n\n"
    "- keep the \x1b[31mold\x1b[0m name in the changelog\n"
)
EDIT = {"path": "README.md", "old_string": "make build", "new_string": "make all"}
README = "# demo\nThe build command is `make build`.\n"


def _script(server: FakeAnthropic, after: str) -> None:
    server.script(
        MODEL,
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p", text_before="My plan:"),
        tool_use("edit_file", EDIT, id="toolu_e"),
        text(after),
    )


def _mode(app: PseudoClaudeApp) -> PermissionMode:
    runtime = app.bridge.runtime
    assert runtime is not None
    return runtime.permission_mode


def _status(app: PseudoClaudeApp) -> str:
    return app.chat_screen.status_line.line(200).plain


async def _window(pilot: Pilot[Any]) -> PlanReview:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, PlanReview), what="the plan window")
    window = app.screen
    assert isinstance(window, PlanReview)
    await wait_until(pilot, lambda: "Rename the build" in window.shown_plan, what="the plan drawn")
    return window


def _last_result(server: FakeAnthropic, index: int) -> str:
    result = server.requests_for(MODEL)[index].body["messages"][-1]["content"][0]
    return str(result["content"])


async def test_approving_with_accept_edits_lets_the_next_edit_run_without_a_window(
    make_app: Any, server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(server, "Renamed.")
    app = make_app(server, memory_mode="off", permission_mode="plan")
    asked: list[object] = []
    real_ask = permission_window.ask

    async def counting(app: Any, request: Any) -> Any:
        asked.append(request)
        return await real_ask(app, request)

    monkeypatch.setattr(permission_window, "ask", counting)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert _mode(app) == PermissionMode.PLAN and "plan mode" in _status(app)
        await send(pilot, "rename the build")
        window = await _window(pilot)
        shown = window.shown_plan
        # Rendered, not raw: no heading marks, no emphasis stars, no escape sequence.
        assert "Rename the build" in shown and "##" not in shown
        assert "Change make build to make all in README.md" in shown and "**" not in shown
        assert "old name in the changelog" in shown and "\x1b" not in shown
        assert "exit_plan_mode" not in (ws / "README.md").read_text()
        await pilot.press("1")
        await wait_until(pilot, lambda: "Renamed." in chat_texts(app), what="the answer after the edit")
        assert asked == []  # no permission window opened for the edit
        assert (ws / "README.md").read_text() == README.replace("make build", "make all")
        assert _mode(app) == PermissionMode.ACCEPT_EDITS
        await wait_until(pilot, lambda: "accept edits" in _status(app), what="the status line to say it")
        assert _last_result(server, 1) == APPROVED_EDITS
        assert app.chat.tool("toolu_e").status == "done"
        # The approved plan stays in the chat, under what became of it.
        block = app.chat.tool("toolu_p")
        assert "approved: edits run without asking" in block.header_text
        assert "plan: 6 lines" in block.header_text and "Rename" not in block.header_text  # its size only
        assert "Rename the build" in (block.excerpt or "")


async def test_keep_planning_with_a_note_tells_the_model_and_stays_in_plan_mode(
    make_app: Any, server: FakeAnthropic, ws: Path
) -> None:
    _script(server, "Planning on.")
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "rename the build")
        window = await _window(pilot)
        await pilot.press("tab", *"keep the old target too", "enter")
        await wait_until(pilot, lambda: app.screen is not window, what="the window to close")
        await wait_until(pilot, lambda: "Planning on." in chat_texts(app), what="the answer")
        assert _last_result(server, 1) == f"{KEPT_PLANNING} The user said: keep the old target too"
        assert _mode(app) == PermissionMode.PLAN and "plan mode" in _status(app)
        # The edit that followed was refused by plan mode, without a window.
        assert _last_result(server, 2).startswith("plan mode: edit_file")
        assert (ws / "README.md").read_text() == README


@pytest.mark.parametrize("key", ["3", "n", "escape"])
async def test_three_n_and_escape_keep_planning(
    make_app: Any, server: FakeAnthropic, ws: Path, key: str
) -> None:
    _script(server, "Planning on.")
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "rename the build")
        await _window(pilot)
        await pilot.press(key)
        await wait_until(pilot, lambda: "Planning on." in chat_texts(app), what="the answer")
        assert _last_result(server, 1) == KEPT_PLANNING
        assert _mode(app) == PermissionMode.PLAN
        assert (ws / "README.md").read_text() == README


@pytest.mark.parametrize("key", ["2", "y"])
async def test_two_and_y_approve_and_the_next_edit_asks(
    make_app: Any, server: FakeAnthropic, ws: Path, key: str
) -> None:
    _script(server, "Not edited.")
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "rename the build")
        await _window(pilot)
        await pilot.press(key)
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the edit's window")
        assert _mode(app) == PermissionMode.DEFAULT
        await pilot.press("n")
        await wait_until(pilot, lambda: "Not edited." in chat_texts(app), what="the answer")
        assert _last_result(server, 1) == APPROVED_ASKING
        assert (ws / "README.md").read_text() == README


async def test_at_80_by_24_the_plan_and_every_key_fit(make_app: Any, server: FakeAnthropic) -> None:
    long_plan = PLAN + "".join(f"{i}. step {i}\n" for i in range(3, 40))
    server.script(MODEL, tool_use("exit_plan_mode", {"plan": long_plan}, id="toolu_p"), text("ok"))
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "plan")
        window = await _window(pilot)
        screen = app.screen.region
        for key in ("#accept-edits", "#default", "#keep-planning", "#note", "#summary"):
            widget = window.query_one(key)
            assert screen.contains_region(widget.region) and widget.region.height >= 1, key
        preview = window.query_one("#preview")
        assert preview.region.height >= 5 and preview.max_scroll_y > 0  # long: it scrolls
        await pilot.press("end")
        await wait_until(pilot, lambda: preview.scroll_y == preview.max_scroll_y, what="scrolled to the end")
        await pilot.press("1")
        await wait_until(pilot, lambda: "ok" in chat_texts(app), what="the answer")


@pytest.mark.typed_ahead
async def test_a_key_typed_as_the_window_opens_is_not_an_answer(make_app: Any, server: FakeAnthropic) -> None:
    server.script(MODEL, tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"), text("ok"))
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "plan")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanReview), what="the plan window")
        window = app.screen
        await pilot.press("y")  # typed for something else: the window has only just opened
        await wait_until(
            pilot, lambda: "not answers" in str(window.query_one("#typed-ahead").render()), what="the line"
        )
        assert app.screen is window and _mode(app) == PermissionMode.PLAN
        # The person reads it, then answers on purpose.
        deadline = time.monotonic() + SETTLE_S + QUIET_S + 0.2
        await wait_until(pilot, lambda: time.monotonic() > deadline, what="a pause")
        await pilot.press("1")
        await wait_until(pilot, lambda: "ok" in chat_texts(app), what="the answer")
        assert _mode(app) == PermissionMode.ACCEPT_EDITS


async def test_cancelling_the_turn_takes_the_window_away_and_planning_goes_on(
    make_app: Any, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"), text("again"))
    app = make_app(server, memory_mode="off", permission_mode="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "plan")
        window = await _window(pilot)
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: app.screen is not window, what="the window to go")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the turn to end")
        assert _mode(app) == PermissionMode.PLAN
        assert app.chat.tool("toolu_p").status != "done"
        # The conversation stays valid: the next turn's request carries the call with a result.
        await send(pilot, "go on")
        await wait_until(pilot, lambda: "again" in chat_texts(app), what="the next answer")
        assert len(server.requests_for(MODEL)) == 2
