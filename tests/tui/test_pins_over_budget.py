"""More pinned cards than the prompt's index holds, in the app: the side panel and the card
browser's header say how many pinned cards did not fit (never dropped silently)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.store.stores import MemoryStores
from tests.integration.cli.test_pins_over_budget import pin_cards
from tests.support.memtools import trust_workspace
from tests.tui.conftest import wait_ready, wait_until
from tests.tui.test_app_card_screens import open_cards
from tests.tui.test_widgets_panel import panel_lines

pytestmark = pytest.mark.timeout(180)

SIZE = (140, 40)


def seed_pins(ws: Path, n: int) -> int:
    """``n`` pinned project cards; how many of them the prompt's index leaves out."""
    trust_workspace(ws)
    stores = MemoryStores(os.path.realpath(ws))
    pin_cards(stores, n)
    left = len(stores.prompt_index().pinned_left_out)
    assert 0 < left < n
    return left


async def test_the_panel_says_how_many_pinned_cards_did_not_fit(make_app, ws: Path) -> None:
    left = seed_pins(ws, 250)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        said = f"{left} pinned cards did not fit"
        await wait_until(
            pilot,
            lambda: app.panel.state.cut_note is not None and said in app.panel.state.cut_note,
            what="the pins in the panel's cut line",
        )
        assert app.panel.state.cut_note == f"{left} cards not in the prompt; {said}"
        # Drawn (wrapped to the panel's width) at its top.
        drawn = lambda: " ".join(line.strip() for line in panel_lines(app)[:6])  # noqa: E731
        await wait_until(pilot, lambda: said in drawn(), what="drawn")


async def test_the_card_browser_header_says_how_many_pinned_cards_did_not_fit(make_app, ws: Path) -> None:
    left = seed_pins(ws, 250)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 250, timeout=30)
        header = lambda: str(browser.query_one("#cb-header").render())  # noqa: E731
        await wait_until(
            pilot, lambda: f"{left} pinned cards did not fit" in header(), what="the pins in the header"
        )
        await pilot.press("i")  # the prompt filter replaces the split, never the pins' warning
        await wait_until(pilot, lambda: browser.prompt_filter == "in")
        assert f"{left} pinned cards did not fit" in header()


async def test_nothing_is_said_of_pins_when_they_all_fit(make_app, ws: Path) -> None:
    trust_workspace(ws)
    pin_cards(MemoryStores(os.path.realpath(ws)), 5)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: len(app.panel.state.project) == 5, what="the cards in the panel")
        assert app.panel.state.cut_note is None
        browser = await open_cards(pilot, app, 5)
        assert "pinned" not in str(browser.query_one("#cb-header").render())
