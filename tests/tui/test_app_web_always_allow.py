"""In the app, against the fake Messages API and a local web site: a web_fetch call asks, the
window shows its URL and the exact host's rule, "always allow" saves ``web_fetch(domain:HOST)``
into the personal settings file, and that rule, naming the host exactly, lets this very call
reach the host even though it resolves to a loopback address; the next call to the host does not
ask. ``web.test`` resolves to 127.0.0.1 through a resolver given to the tool (no DNS query)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.tools import BUILTIN_TOOLS
from app.agent.tools.web.client import Limits
from app.tui.permission import window as permission_window
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.websites import Site
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.permission import PermissionModal

pytestmark = pytest.mark.timeout(120)


def _lookup(host: str, port: int) -> list[str]:
    if host != "web.test":
        raise OSError(f"no such host in this test: {host}")
    return ["127.0.0.1"]


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    fetch = BUILTIN_TOOLS.get("web_fetch")
    assert fetch is not None
    monkeypatch.setattr(fetch, "limits", Limits(timeout=20.0, lookup=_lookup))
    with Site() as s:
        s.route("/first", "<html><body><p>the first page</p></body></html>")
        s.route("/second", "<html><body><p>the second page</p></body></html>")
        yield s


def _result(server: FakeAnthropic, n: int) -> str:
    content = server.requests_for(MODEL)[n].body["messages"][-1]["content"]
    block = next(b for b in content if b.get("type") == "tool_result")
    return json.dumps(block["content"])


async def test_always_allow_saves_the_hosts_rule_which_lets_it_reach_the_host(
    make_app: Any, server: FakeAnthropic, ws: Path, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real_ask = permission_window.ask

    async def counting(app: Any, request: Any) -> Any:
        asked.append(request.name)
        return await real_ask(app, request)

    monkeypatch.setattr(permission_window, "ask", counting)
    first, second = site.url("/first", host="web.test"), site.url("/second", host="Web.Test")
    server.script(MODEL, tool_use("web_fetch", {"url": first}, id="toolu_1"), text("read the first"))
    server.script(MODEL, tool_use("web_fetch", {"url": second}, id="toolu_2"), text("read the second"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "read the first page")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission window")
        modal = app.screen
        assert modal.request.name == "web_fetch" and first in modal.request.preview
        assert modal.request.rule == "web_fetch(domain:web.test)"  # the host, never the bare tool
        assert site.paths() == []  # nothing fetched while the person decides
        await pilot.press("4")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "read the first" in chat_texts(app), timeout=30)
        saved = (ws / ".PseudoClaude" / "settings.local.toml").read_text()
        assert 'allow = ["web_fetch(domain:web.test)"]' in saved
        assert "the first page" in _result(server, 1)  # loopback, reached: the rule names the host
        await send(pilot, "and the second")
        await wait_until(pilot, lambda: "read the second" in chat_texts(app), timeout=30)
        assert asked == ["web_fetch"]  # the saved rule decided the second call
        assert "the second page" in _result(server, 3)
        assert site.paths() == ["/first", "/second"]
