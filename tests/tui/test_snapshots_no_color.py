"""The snapshot apps under NO_COLOR (https://no-color.org): each one that draws its own strips
(the pending list, the card list, an answer's lines, the memory panel) in the state of its colour
snapshot (tests/tui/snapshot_apps), once in Textual's monochrome. The filter reads every segment's
colours: a segment without a style crashes the frame, which ``run_test`` raises.

No baseline of their own: the colour snapshots hold the look, these that the frame is drawn, its
screenshot taken and its words on it. Textual reads NO_COLOR when the App is created: it is set before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot

from tests.support.fakeapi import FakeAnthropic
from tests.tui import test_snapshots as colour
from tests.tui.conftest import wait_until
from tests.tui.snapshot_apps import memory_hosts as mh
from tests.tui.snapshot_apps.hosts import PANEL_STATE, ChatHost, PanelHost
from tests.tui.test_snapshots import run, settle, streamed_answer_app

pytestmark = pytest.mark.timeout(90)

Step = Callable[[Pilot[Any]], Awaitable[Any]]
WIDE = (120, 34)
DEFAULT = (100, 30)
# The real App's fixtures, as the colour snapshots make it (the workspace shown under a fixed name).
ws, stores, make_app = colour.ws, colour.stores, colour.make_app


@pytest.fixture(autouse=True)
def no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


def screen_text(app: App[Any]) -> str:
    """The frame through the App's filters (the monochrome one among them)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def monochrome(app: App[Any], size: tuple[int, int], run_before: Step | None = None) -> str:
    """Drive ``app`` as its snapshot does and return the words of the frame; the screenshot is
    exported too (what ``snap_compare`` would compare)."""
    assert app.no_color
    async with app.run_test(size=size) as pilot:
        if run_before is not None:
            await run_before(pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        assert "<svg" in app.export_screenshot()
        return screen_text(app)


async def _push(pilot: Pilot[Any], screen: Any) -> None:
    await pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen, what="the screen")


async def test_no_color_pending_screen_with_a_held_job_and_the_diff_of_its_update() -> None:
    screen = mh.pending_screen()

    async def expand(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("enter", "down")
        await wait_until(
            pilot, lambda: screen.selected_op is not None and screen.selected_op.action == "update"
        )
        await wait_until(pilot, lambda: "+Releases: `make release`" in screen.detail_text(), what="the diff")

    shown = await monochrome(mh.ScreenHost(), WIDE, expand)
    assert "Pending memory updates" in shown and "+Releases: `make release`" in shown


async def test_no_color_card_browser_with_both_levels_and_the_selected_cards_preview() -> None:
    screen = mh.card_browser()

    async def shown(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await wait_until(
            pilot,
            lambda: screen.selected is not None and screen.preview_row == screen.selected,
            what="the preview",
        )

    drawn = await monochrome(mh.ScreenHost(), WIDE, shown)
    n = len(mh.CARD_ROWS)
    assert f"Memory cards · {n} of {n}" in drawn and all(row.title[:14] in drawn for row in mh.CARD_ROWS)


async def test_no_color_chat_pane_streamed_answer_with_code_block() -> None:
    app = ChatHost()
    shown = await monochrome(app, DEFAULT, lambda pilot: app.stream_answer())
    assert "def load_config(path: Path) -> dict:" in shown and "only reads" in shown


async def test_no_color_panel_with_new_cards_an_untrusted_note_and_job_lines() -> None:
    shown = await monochrome(PanelHost(PANEL_STATE), DEFAULT)
    assert all(card.title[:20] in shown for card in PANEL_STATE.project[:2])


async def test_no_color_app_streamed_answer_with_code_block_and_the_card_it_created(
    make_app: Any, server: FakeAnthropic, stores: Any
) -> None:
    app, converse = streamed_answer_app(make_app, server, stores)
    shown = await monochrome(app, WIDE, run(converse, settle))
    assert "def load_config(path: Path) -> dict:" in shown and "Config via tomllib" in shown
