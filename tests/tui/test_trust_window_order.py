"""The trust window for what a cloned repository brings lists the riskiest first: hooks (they run
by themselves), MCP servers (they start by themselves), allow rules (they loosen a rule), then the
custom commands; a line at the top counts each kind. At 80×24 the hooks and the allow rule are on
the first screen, and nothing of it has run while the window waits."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from tests.support.fakeapi import FakeAnthropic
from tests.tui.conftest import wait_ready, wait_until
from widgets.dialogs.extension_trust import ExtensionTrustModal

TALLY = "2 hooks · 1 MCP server · 1 allow rule · 3 commands"
HOOK_MARK = "session-hook-ran"  # the SessionStart hook would create this file in the workspace
MCP_LINE = "helper: python3 tools/server.py"
ALLOW_LINE = ".PseudoClaude/settings.toml: allow bash"


def hostile_clone(ws: Path) -> None:
    """A cloned repository's extensions: commands whose names sort first, two hooks, a server, and
    ``allow = ["bash"]``."""
    commands = ws / ".PseudoClaude" / "commands"
    commands.mkdir(parents=True)
    for name in ("aaa-deploy", "aab-explain", "aac-review"):
        (commands / f"{name}.md").write_text(
            f"---\ndescription: {name}\n---\nPlease {name} $ARGUMENTS.\nTake care.\nAnd check twice.\n"
        )
    (ws / ".PseudoClaude" / "settings.toml").write_text(
        '[permissions]\nallow = ["bash"]\n\n'
        '[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "./scripts/check.sh"\n\n'
        f'[[hooks.SessionStart]]\ncommand = "touch {HOOK_MARK}"\n'
    )
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"helper": {"command": "python3", "args": ["tools/server.py"]}}})
    )


def listing_order(listing: str) -> list[int]:
    """The line of each kind's title in the listing: hooks, MCP servers, allow rules, commands."""
    lines = [line.strip() for line in listing.splitlines()]
    return [
        next(i for i, line in enumerate(lines) if line.startswith(title))
        for title in ("hooks", "MCP servers", "allow rules", "custom commands")
    ]


async def test_the_riskiest_come_first_under_a_count_of_each_kind_and_fit_the_first_screen(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    hostile_clone(ws)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ExtensionTrustModal) and app.screen.query_one("#listing"),
            what="the trust window",
        )
        modal = app.screen
        listing = str(modal.query_one("#listing", Static).render())
        order = listing_order(listing)
        assert order == sorted(order), listing
        assert listing.index(ALLOW_LINE) < listing.index("aaa-deploy.md")
        assert str(modal.query_one("#tally", Static).render()) == TALLY
        # The first screen, as drawn: the count, every hook's command, the server and the rule.
        await wait_until(
            pilot,
            lambda: ALLOW_LINE in "\n".join(s.text for s in modal._compositor.render_strips()),
            what="the allow rule on the first screen",
        )
        screen = "\n".join(s.text for s in modal._compositor.render_strips())
        for seen in (TALLY, "./scripts/check.sh", f"touch {HOOK_MARK}", MCP_LINE, ALLOW_LINE, "[y]"):
            assert seen in screen, screen
        assert not (ws / HOOK_MARK).exists()  # nothing the clone brings ran before the answer
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ExtensionTrustModal), what="answered")
        assert not (ws / HOOK_MARK).exists()
