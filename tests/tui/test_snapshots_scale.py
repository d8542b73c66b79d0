"""Snapshots of memory at scale: the panel with the split ("312 cards not in the
prompt"), the card browser filtered to the cards not in the prompt (pinned ones marked), and the
pending screen with a consolidation job and the diff of its update — at 80×24 and wide.

Fixed states (tests/tui/snapshot_apps/scale_hosts.py), a fixed clock. Regenerate after a deliberate
visual change with ``.venv/bin/python -m pytest tests/tui/test_snapshots_scale.py --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.conftest import wait_until
from tests.tui.snapshot_apps import memory_hosts as mh
from tests.tui.snapshot_apps import scale_hosts as sh
from tests.tui.snapshot_apps.hosts import PanelHost

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]
SIZES = {"80x24": (80, 24), "wide": (140, 34)}


async def _push(pilot: Pilot[Any], screen: Any) -> None:
    await pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen, what="the screen")
    for field in screen.query("Input, TextArea"):
        field.cursor_blink = False


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_panel_shows_how_many_cards_are_not_in_the_prompt(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    assert snap_compare(PanelHost(sh.SPLIT_PANEL), terminal_size=size)


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_card_browser_filtered_to_the_cards_not_in_the_prompt(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    screen = sh.browser_not_in_prompt()

    async def filtered(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("i", "i")
        await wait_until(pilot, lambda: screen.prompt_filter == "out" and len(screen.visible_rows) == 5)
        await wait_until(
            pilot,
            lambda: screen.selected is not None and screen.preview_row == screen.selected,
            what="the preview",
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(mh.ScreenHost(), terminal_size=size, run_before=filtered)


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_pending_screen_with_a_consolidation_job_and_its_diff(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    screen = sh.consolidation_screen()

    async def expand(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("enter", "down")
        await wait_until(
            pilot, lambda: screen.selected_op is not None and screen.selected_op.action == "update"
        )
        await wait_until(
            pilot, lambda: "+The project installs with pnpm only" in screen.detail_text(), what="the diff"
        )

    assert snap_compare(mh.ScreenHost(), terminal_size=size, run_before=expand)
