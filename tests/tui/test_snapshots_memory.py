"""Snapshots of the memory screens: the pending screen with a held job and its diff, a
failed job, the card browser with both levels, the editor with a validation error, the conflict view.

Each screen is shown by a host (tests/tui/snapshot_apps/memory_hosts.py) in a fixed state with a
fixed clock: a frame depends on nothing but the code. Regenerate after a deliberate visual change with
``.venv/bin/python -m pytest tests/tui/test_snapshots_memory.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Label

from tests.tui.conftest import wait_until
from tests.tui.snapshot_apps import memory_hosts as mh

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]
WIDE = (120, 34)
DEFAULT = (100, 30)
SMALL = (80, 24)


async def _push(pilot: Pilot[Any], screen: Any) -> None:
    await pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen, what="the screen")
    for field in screen.query("Input, TextArea"):
        field.cursor_blink = False  # a still frame: the cursor drawn, never half-way through a blink


def test_pending_screen_with_a_held_job_and_the_diff_of_its_update(snap_compare: SnapCompare) -> None:
    screen = mh.pending_screen()

    async def expand(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("enter", "down")
        await wait_until(
            pilot, lambda: screen.selected_op is not None and screen.selected_op.action == "update"
        )
        await wait_until(pilot, lambda: "+Releases: `make release`" in screen.detail_text(), what="the diff")

    assert snap_compare(mh.ScreenHost(), terminal_size=WIDE, run_before=expand)


def test_pending_screen_with_a_failed_job_selected_at_80x24(snap_compare: SnapCompare) -> None:
    screen = mh.pending_screen()

    async def select_failed(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("down", "down")
        await wait_until(pilot, lambda: screen.selected_job == mh.FAILED, what="the failed job")
        await wait_until(pilot, lambda: "401 invalid" in screen.detail_text())

    assert snap_compare(mh.ScreenHost(), terminal_size=SMALL, run_before=select_failed)


def test_card_browser_with_both_levels_and_the_selected_cards_preview(snap_compare: SnapCompare) -> None:
    screen = mh.card_browser()

    async def shown(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await wait_until(
            pilot,
            lambda: screen.selected is not None and screen.preview_row == screen.selected,
            what="the preview",
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(mh.ScreenHost(), terminal_size=WIDE, run_before=shown)


def test_card_browser_at_80x24_filtered_to_user_preferences(snap_compare: SnapCompare) -> None:
    screen = mh.card_browser()

    async def filtered(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        await pilot.press("1")
        await wait_until(
            pilot,
            lambda: screen.type_filter == "user_preference" and screen.preview_row == screen.selected,
            what="the filter and the preview",
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(mh.ScreenHost(), terminal_size=SMALL, run_before=filtered)


def test_card_editor_with_a_validation_error_next_to_its_field(snap_compare: SnapCompare) -> None:
    screen = mh.editor_with_error()

    async def invalid(pilot: Pilot[Any]) -> None:
        await _push(pilot, screen)
        screen.show_errors({"title": "a title is needed"})
        await wait_until(pilot, lambda: screen.query_one("#title-error", Label).display, what="the error")

    assert snap_compare(mh.ScreenHost(), terminal_size=DEFAULT, run_before=invalid)


def test_conflict_view_shows_yours_and_the_disks_version(snap_compare: SnapCompare) -> None:
    editor = mh.editor_for_conflict()
    modal = mh.conflict_modal()

    async def conflict(pilot: Pilot[Any]) -> None:
        await _push(pilot, editor)
        await _push(pilot, modal)

    assert snap_compare(mh.ScreenHost(), terminal_size=WIDE, run_before=conflict)
