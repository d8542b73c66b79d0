"""The windows of what a workspace adds: the permission window's "always allow" (the rule shown,
editable, checked before it is answered) and the trust window for a project's servers, commands,
hooks and rules; neither takes keys typed while it opened as answers."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Static

from app.services.extensions import check_rules
from tests.tui.conftest import wait_until
from tests.tui.test_typed_ahead import _UNSET as NO_ANSWER
from tests.tui.test_typed_ahead import FakeClock, Host, opened, prompt_text
from widgets.dialogs import decision
from widgets.dialogs.decision import QUIET_S
from widgets.dialogs.extension_trust import ExtensionTrustModal, WaitingKind
from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest

_UNSET = object()
GIT = PermissionRequest(
    call_id="c1",
    name="bash",
    summary="run a shell command",
    preview="git status -s",
    preview_kind="command",
    rule="bash(git status -s)",
)
KINDS = [
    WaitingKind("MCP servers (.mcp.json): these commands would run", "demo: python3 server.py --port 1"),
    WaitingKind("hooks", "PreToolUse bash: ./check.sh"),
]


class ModalHost(App[None]):
    def __init__(self, modal: Screen[Any]) -> None:
        super().__init__()
        self.modal = modal
        self.result: object = _UNSET

    def compose(self) -> ComposeResult:
        yield Static("behind the modal")

    def on_mount(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: object) -> None:
        self.result = result


def _error(modal: Screen[Any]) -> str:
    line = modal.query_one("#rule-error", Static)
    return str(line.render()) if line.display else ""


@pytest.mark.parametrize("key", ["4", "r"])
async def test_always_shows_the_rule_editable_and_enter_answers_with_it(key: str) -> None:
    modal = PermissionModal(GIT, check_rule=check_rules)
    app = ModalHost(modal)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        assert not modal.editing_rule
        await pilot.press(key)
        rule = modal.query_one("#rule", Input)
        assert modal.editing_rule and rule.has_focus and rule.value == "bash(git status -s)"
        assert app.result is _UNSET  # nothing is answered (or saved) before Enter
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("always", rule="bash(git status -s)")


async def test_a_bad_rule_is_one_line_and_nothing_is_answered_then_esc_backs_out_without_denying() -> None:
    modal = PermissionModal(GIT, check_rule=check_rules)
    app = ModalHost(modal)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        await pilot.press("4")
        modal.query_one("#rule", Input).value = "bash(git status && rm -rf x)"
        await pilot.press("enter")
        await pilot.pause()
        assert app.result is _UNSET and app.screen is modal
        error = _error(modal)
        assert error.startswith("not saved:") and "\n" not in error
        await pilot.press("escape")  # in the rule line: back to the question, not a denial
        await pilot.pause()
        assert app.result is _UNSET and not modal.editing_rule
        await pilot.press("1")
        await wait_until(pilot, lambda: app.result == PermissionAnswer("once"))


async def test_no_rule_no_fourth_answer() -> None:
    plain = PermissionRequest(
        call_id="c1", name="bash", summary="run", preview="echo $(date)", preview_kind="command"
    )
    modal = PermissionModal(plain)
    app = ModalHost(modal)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        assert not modal.query("#always")
        await pilot.press("4")
        await pilot.pause()
        assert app.result is _UNSET and app.screen is modal


@pytest.mark.parametrize(("key", "expected"), [("y", True), ("n", False), ("escape", False)])
async def test_the_extension_trust_window_lists_what_would_run_and_answers_y_or_n(
    key: str, expected: bool
) -> None:
    modal = ExtensionTrustModal(KINDS)
    app = ModalHost(modal)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal)
        listing = str(modal.query_one("#listing", Static).render())
        assert "python3 server.py --port 1" in listing and "./check.sh" in listing
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result is expected


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(decision, "clock", fake)
    return fake


async def _typed_ahead(pilot: Pilot[Any], app: Host, clock: FakeClock, keys: tuple[str, ...]) -> None:
    await opened(pilot, app)
    await pilot.press(*keys)  # as it opens: typed for the prompt
    await pilot.pause()
    assert app.result is NO_ANSWER and app.screen is app.modal
    clock.advance(QUIET_S + 0.01)


@pytest.mark.typed_ahead
async def test_typed_ahead_keys_do_not_open_or_save_always_allow(clock: FakeClock) -> None:
    modal = PermissionModal(GIT, check_rule=check_rules)
    app = Host(modal)
    async with app.run_test() as pilot:
        await _typed_ahead(pilot, app, clock, ("4", "r"))
        assert not modal.editing_rule and prompt_text(app) == "4r"
        await pilot.press("4")  # seen, paused: now an answer
        assert modal.editing_rule
        clock.advance(0.1)
        await pilot.press("enter")  # right after a key: not taken as the answer
        await pilot.pause()
        assert app.result is NO_ANSWER
        clock.advance(QUIET_S + 0.01)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.result == PermissionAnswer("always", rule="bash(git status -s)"))


@pytest.mark.typed_ahead
async def test_typed_ahead_y_does_not_trust_what_the_project_brings(clock: FakeClock) -> None:
    app = Host(ExtensionTrustModal(KINDS))
    async with app.run_test() as pilot:
        await _typed_ahead(pilot, app, clock, ("y",))
        assert prompt_text(app) == "y"
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is True)
