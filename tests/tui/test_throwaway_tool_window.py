"""The permission window for a tool no product file knows (the throwaway ``shout`` of
tests/integration/agent/test_throwaway_tool.py): the gate asks through the app's side of it
(ModalAsk and the App's window), and the PermissionModal shows that tool's own preview and the rule
"always" would save; the person's answer decides the call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Static

from app.agent.permissions.gate import Gate
from app.agent.permissions.rules import PermissionRules
from app.agent.tools import ToolContext
from app.tui.permission import window
from app.tui.permission.modal_ask import ModalAsk
from tests.integration.agent.test_throwaway_tool import Shout
from tests.tui.conftest import wait_until
from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("behind the window")


def _ready(app: App[None]) -> bool:
    """The window is up, its preview composed and a widget of it focused (a key reaches it)."""
    modal, focused = app.screen, app.focused
    return (
        isinstance(modal, PermissionModal)
        and bool(modal.query("#preview-text"))
        and focused is not None
        and focused.screen is modal
    )


def _shown(modal: PermissionModal, selector: str) -> str:
    return str(modal.query_one(selector, Static).render())


async def test_the_window_shows_a_registered_tools_own_preview_and_its_answer_decides(ws: Path) -> None:
    app = Host()

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        return await window.ask(app, request)

    shout = Shout()
    gate = Gate(PermissionRules(workspace=ws), ask=ModalAsk(ask))
    args = shout.parse({"text": "hello there"})
    async with app.run_test(size=(80, 24)) as pilot:
        decided: asyncio.Task[Any] = asyncio.create_task(
            gate.decide(shout, args, ctx=ToolContext(workspace=ws), call_id="toolu_s")
        )
        await wait_until(pilot, lambda: _ready(app), what="the permission window, drawn and focused")
        modal = app.screen
        assert isinstance(modal, PermissionModal)
        assert modal.request.name == "shout"
        assert _shown(modal, "#summary") == "shout 11 characters"
        assert _shown(modal, "#preview-text") == "HELLO THERE"
        assert modal.request.rule == "shout"
        await pilot.press("n")
        await wait_until(pilot, decided.done, what="the answer")
    decision = decided.result()
    assert not decision.allowed and decision.reason == "shout was denied by the user"
