"""NO_COLOR (https://no-color.org): every widget that draws its own strips, drawn under Textual's
monochrome filter, which reads the colours of each segment (a segment without a style crashed
the frame). Textual reads NO_COLOR when the App is created: it is set before."""

from __future__ import annotations

from typing import Any

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.app import App
from textual.strip import Strip

from tests.tui.conftest import wait_until
from widgets.segments import styled


@pytest.fixture(autouse=True)
def no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


def screen_text(app: App[Any]) -> str:
    """The frame as the terminal would get it: every strip through the App's filters."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def unstyled(strips: list[Strip]) -> list[Segment]:
    return [segment for strip in strips for segment in strip if segment.style is None]


def test_styled_gives_each_unstyled_segment_the_style_and_keeps_the_others() -> None:
    bold = Style(bold=True)
    out = styled([Segment("a"), Segment("b", bold)], Style(italic=True))
    assert out == [Segment("a", Style(italic=True)), Segment("b", bold)]
    assert styled([Segment("a")]) == [Segment("a", Style.null())]


async def test_the_pending_list_draws_every_row_in_monochrome() -> None:
    from tests.tui.test_widgets_pending import host, ready, select_job
    from widgets.pending.job_list import PendingList

    app = host()
    assert app.no_color
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        listing = screen.query_one(PendingList)
        await wait_until(
            pilot, lambda: "remember how we build" in screen_text(app), what="the held job's row"
        )
        assert unstyled([listing.render_line(y) for y in range(len(listing.rows))]) == []
        await select_job(pilot, screen, "j-held")
        await pilot.press("enter")  # the cursor row and the expanded operations
        await wait_until(pilot, lambda: "Stale preference" in screen_text(app), what="the operations")
        assert unstyled([listing.render_line(y) for y in range(len(listing.rows))]) == []


async def test_an_empty_pending_list_says_so_in_monochrome() -> None:
    from tests.tui.test_widgets_pending import host, ready
    from widgets.pending.state import PendingState

    app = host(PendingState(jobs=(), mode="auto"))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: "No pending memory updates." in screen_text(app))


async def test_the_card_list_draws_every_row_in_monochrome() -> None:
    from tests.tui.test_widgets_card_browser import ROWS, Host, row, start
    from widgets.cards.browser import CardBrowser
    from widgets.cards.card_list import CardList

    browser = CardBrowser([*ROWS, row("user", "bare", title="", summary="")])
    app = Host(browser)
    assert app.no_color
    async with app.run_test(size=(160, 48)) as pilot:
        await start(pilot, browser)
        cards = browser.query_one(CardList)
        await wait_until(pilot, lambda: "Tabs please" in screen_text(app), what="the rows")
        assert unstyled([cards.render_line(y) for y in range(len(cards.rows))]) == []
        await pilot.press("down", "tab")  # the cursor moved, the list blurred: its other look
        await wait_until(pilot, lambda: not cards.has_focus)
        screen_text(app)


async def test_an_answer_with_code_lists_and_a_table_draws_in_monochrome() -> None:
    from tests.tui.test_widgets_chat import ChatHost

    source = (
        "# Build\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "```python\nx = 1  # " + "long " * 40 + "\n```\n\nplain `code` and **bold**\n"
    )
    app = ChatHost()
    assert app.no_color
    async with app.run_test(size=(100, 40)) as pilot:
        answer = app.pane.start_answer()
        await answer.append(source)
        await wait_until(pilot, lambda: "x = 1" in screen_text(app), what="the growing fence")
        await answer.finish()
        await wait_until(pilot, lambda: answer.finished and "second" in screen_text(app), what="the answer")
        # Its lines carry a style of their own, not only the one the block puts over them.
        assert unstyled(answer.lines) == []


async def test_the_memory_panel_draws_in_monochrome() -> None:
    from tests.tui.test_widgets_panel import PanelApp, _state
    from widgets.panel.memory_panel import MemoryPanel, PanelJob

    app = PanelApp()
    assert app.no_color
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(
            _state(
                cut_note="index cut at 50 cards",
                project_note="untrusted store",
                jobs=(PanelJob("j1", "held · remember the build"), PanelJob("j2", "failed", failed=True)),
            )
        )
        await wait_until(pilot, lambda: "Answers in English" in screen_text(app), what="the cards")
