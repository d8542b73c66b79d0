"""The permission window for a web_fetch call at 80×24: the URL (the tool's preview) is wrapped
whole inside the dialog, never past its border; "always allow" shows the exact host's rule, cut
with "…" when the button cannot hold it, and ``r`` shows it whole, editable, before Enter saves
it. The request is the one the App's gate hands the window."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from app.agent.permissions.gate import Gate
from app.agent.permissions.rules import PermissionRules
from app.agent.tools import ToolContext
from app.tui.permission.modal_ask import ModalAsk
from tests.tui.conftest import wait_until
from tests.tui.test_extension_windows import _UNSET, ModalHost
from tests.unit.agent.test_web_permission_rules import web_tools
from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest

HOST = "a-rather-long-mirror-name.downloads.docs.python.org"
URL = f"https://{HOST.upper()}/3/library/" + "very-long-segment-" * 8 + "end.html?q=" + "x" * 60
RULE = f"web_fetch(domain:{HOST})"


async def _request(ws: Path, url: str) -> PermissionRequest:
    """What the App's gate hands the window for this web_fetch call."""
    seen: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        seen.append(request)
        return "deny"

    fetch = web_tools().get("web_fetch")
    assert fetch is not None
    gate = Gate(PermissionRules(workspace=ws), ask=ModalAsk(ask))
    await gate.decide(fetch, fetch.parse({"url": url}), ctx=ToolContext(workspace=ws), call_id="c1")
    return seen[0]


def _rows(app: ModalHost) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _inside(rows: list[str]) -> list[str]:
    """The dialog's rows, between its side borders (each row must have both)."""
    framed = [r for r in rows if r.strip().startswith("│")]
    left = framed[0].index("│")
    right = framed[0].rindex("│")
    for row in framed:
        assert row[left] == "│" and row[right] == "│", row  # nothing ran over the border
    return [row[left + 1 : right] for row in framed]


async def test_the_window_wraps_the_url_whole_and_cuts_the_rule_with_an_ellipsis(ws: Path) -> None:
    request = await _request(ws, URL)
    assert request.rule == RULE
    modal = PermissionModal(request)
    app = ModalHost(modal)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal and modal.query_one("#always").region.height)
        inner = _inside(_rows(app))
        preview = [r.strip(" │┌┐└┘─") for r in inner if r.strip().startswith("│")]
        assert URL.lower() in "".join(preview).lower()  # every character, wrapped inside the frame
        [always] = [r for r in inner if "Always allow in this project [4/r]" in r]
        shown = always.split("[4/r]: ", 1)[1].rstrip()
        assert shown.endswith("…") and RULE.startswith(shown[:-1])  # cut, and said to be cut
        await pilot.press("r")
        await wait_until(pilot, lambda: modal.editing_rule)
        assert modal.query_one("#rule", Input).value == RULE  # the whole rule before it is saved
        _inside(_rows(app))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("always", rule=RULE)


async def test_a_short_rule_is_shown_whole_on_the_button(ws: Path) -> None:
    request = await _request(ws, "https://docs.python.org/3/")
    assert request.rule == "web_fetch(domain:docs.python.org)"
    modal = PermissionModal(request)
    app = ModalHost(modal)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is modal and modal.query_one("#always").region.height)
        [always] = [r for r in _inside(_rows(app)) if "[4/r]" in r]
        assert always.split("[4/r]: ", 1)[1].rstrip() == "web_fetch(domain:docs.python.org)"
