"""Snapshots of the side panel with shared cards: a card pulled from a teammate with
its author, a card conflicted by a merge listed apart with how to resolve it, an untrusted
conflicted card, and a failed sync of the user store as one line; wide and at 80×24.

Fixed data, no disk, no clock: a frame depends on nothing but the code. Regenerate after a
deliberate visual change with
``.venv/bin/python -m pytest tests/tui/test_snapshots_sharing.py --snapshot-update`` and look at
the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.snapshot_apps.hosts import PanelHost
from widgets.panel.memory_panel import PanelCard, PanelState

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]

PANEL = PanelState(
    project=(
        PanelCard(
            "project_knowledge", "Build command", "run make build, not npm", "project_knowledge_build.md"
        ),
        PanelCard(
            "project_knowledge",
            "Deploy",
            "ship with make deploy from a tag",
            "project_knowledge_deploy.md",
            new=True,
            author="Bea",
        ),
        PanelCard(
            "reference_material",
            "CI dashboard",
            "grafana board ci-main",
            "reference_material_ci.md",
            author="Carlos Quintana",
        ),
    ),
    user=(PanelCard("user_preference", "Answers in English", "even when asked in French", "u.md"),),
    cut_note=None,
    project_note=None,
    jobs=(),
    conflicted=(
        PanelCard(
            "project_knowledge", "Release steps", "", "project_knowledge_release-steps.md", level="project"
        ),
        PanelCard("user_preference", "Indentation", "", "user_preference_indentation.md", level="user"),
    ),
    sync_note="memory sync: cannot reach git@example.invalid:me/memory.git",
    sync_failed=True,
)


def test_side_panel_with_authors_conflicted_cards_and_a_failed_sync(snap_compare: SnapCompare) -> None:
    assert snap_compare(PanelHost(PANEL), terminal_size=(100, 34))


def test_side_panel_with_authors_conflicted_cards_and_a_failed_sync_at_80x24(
    snap_compare: SnapCompare,
) -> None:
    app = PanelHost(PANEL)

    async def narrow(pilot: Pilot[Any]) -> None:
        pilot.app.set_class(True, "-narrow")  # the App's class below 100 columns: a 32-column panel
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=narrow)
