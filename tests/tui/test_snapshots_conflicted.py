"""Snapshots of a conflicted card: the card browser with it selected (its mark, both
versions in the preview, the resolve keys) and the resolution view, wide (side by side) and at
80×24 (stacked). Fixed rows on a bare host: a frame depends on nothing but the code. Regenerate
after a deliberate visual change with ``--snapshot-update`` and look at the SVGs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.conftest import wait_until
from tests.tui.snapshot_apps import memory_hosts as mh
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow
from widgets.cards.draft import CardConflict, CardDraft, ConflictSide
from widgets.cards.resolve import ResolveModal

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]
SIZES = {"80x24": (80, 24), "wide": (120, 34)}

OURS = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build workflow",
    summary="make build, then make test",
    body="Run `make build` then `make test`.\n\nUse `make -j8` on the build machines.\n",
)
THEIRS = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build workflow with ninja",
    summary="ninja replaces make",
    body="Run `ninja` then `ninja test`.\n\nThe build needs Go 1.23.\n",
    pinned=True,
)
CONFLICT = CardConflict(ours=ConflictSide("HEAD", OURS), theirs=ConflictSide("feature/ninja", THEIRS))
CONFLICTED = CardRow(
    level="project",
    filename="project_knowledge_build-workflow.md",
    type="project_knowledge",
    title="Build workflow",
    summary="make build, then make test",
    updated="2026-11-30T11:50:00Z",
    source="manual",
    body="<<<<<<< HEAD\n(the raw file)\n=======\n(the raw file)\n>>>>>>> feature/ninja\n",
    sha256="0" * 64,
    broken="conflicted: changed on two branches (HEAD and feature/ninja)",
    in_prompt=False,
    conflict=CONFLICT,
)
ROWS = (CONFLICTED, *mh.CARD_ROWS[1:4])


@pytest.mark.parametrize("size", list(SIZES))
def test_card_browser_with_a_conflicted_card_selected(snap_compare: SnapCompare, size: str) -> None:
    screen = CardBrowser(ROWS)

    async def shown(pilot: Pilot[Any]) -> None:
        await pilot.app.push_screen(screen)
        await wait_until(
            pilot, lambda: screen.preview_row == CONFLICTED, what="the conflicted card's preview"
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(mh.ScreenHost(), terminal_size=SIZES[size], run_before=shown)


@pytest.mark.parametrize("size", list(SIZES))
def test_resolution_view_of_a_conflicted_card(snap_compare: SnapCompare, size: str) -> None:
    modal = ResolveModal(CONFLICT, where="project/project_knowledge_build-workflow.md")

    async def shown(pilot: Pilot[Any]) -> None:
        await pilot.app.push_screen(modal)
        await wait_until(
            pilot,
            lambda: pilot.app.screen is modal and modal.query_one("#ours-pane").has_focus,
            what="the resolution view",
        )

    assert snap_compare(mh.ScreenHost(), terminal_size=SIZES[size], run_before=shown)
