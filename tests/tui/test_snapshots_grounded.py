"""Snapshots of grounded cards: the card browser with a stale card selected — its
mark and reason in the list, its citations with their states and its use in the detail (the
README's picture, copied to assets/stale.svg) — and the side panel with a stale card, wide and
at 80 columns.

Fixed data, no disk, no clock: a frame depends on nothing but the code. Regenerate after a
deliberate visual change with
``.venv/bin/python -m pytest tests/tui/test_snapshots_grounded.py --snapshot-update``, look at the
SVGs, and copy the browser's to assets/stale.svg.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.conftest import wait_until
from tests.tui.snapshot_apps import memory_hosts as mh
from tests.tui.snapshot_apps.hosts import PanelHost
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow, CiteLine
from widgets.panel.memory_panel import PanelCard, PanelState

pytestmark = pytest.mark.timeout(90)

SnapCompare = Callable[..., bool]
WIDE = (120, 34)
SMALL = (80, 24)

MAKEFILE_CHANGED = "Makefile changed since this card was written"
RENAMED = "scripts/release.sh was renamed to tools/release.sh"


def _row(
    type_: str,
    title: str,
    summary: str,
    body: str,
    updated: str,
    *,
    stale: str | None = None,
    cites: tuple[CiteLine, ...] = (),
    reads: int = 0,
    last_read: str = "",
    use: str = "never read",
    level: str = "project",
) -> CardRow:
    slug = title.lower().replace(" ", "-")[:40]
    return CardRow(
        level=level,
        filename=f"{type_}_{slug}.md",
        type=type_,
        title=title,
        summary=summary,
        updated=updated,
        source="model",
        body=body,
        sha256="0" * 64,
        stale=stale,
        cites=cites,
        reads=reads,
        last_read=last_read,
        use=use,
    )


RELEASE = _row(
    "project_knowledge",
    "Release workflow",
    "make release from main; CI tags vX.Y.Z",
    "Cut a release with `make release`, from **main** only.\n\n"
    "- `scripts/release.sh` bumps the version\n- CI tags the commit `vX.Y.Z`\n",
    "2026-11-20T09:00:00Z",
    stale=f"{MAKEFILE_CHANGED}; and 1 more citation",
    cites=(
        CiteLine("Makefile:12-30", "changed", MAKEFILE_CHANGED),
        CiteLine("scripts/release.sh", "renamed", RENAMED),
        CiteLine("docs/RELEASING.md", "fresh"),
    ),
    reads=12,
    last_read="2026-11-27T10:00:00Z",
    use="read 12× · last 3 days ago",
)
ROWS = (
    _row(
        "project_knowledge",
        "Build workflow",
        "make build, then make test",
        "Run `make build` then `make test` from the repository root.",
        "2026-11-30T11:50:00Z",
        cites=(CiteLine("Makefile:1-10", "fresh"),),
        reads=31,
        last_read="2026-11-30T11:00:00Z",
        use="read 31× · last 1 hour ago",
    ),
    RELEASE,
    _row(
        "reference_material",
        "CI dashboard",
        "grafana board ci-main",
        "The CI dashboard is https://grafana.example.com/d/ci-main.",
        "2026-11-29T08:10:00Z",
    ),
    _row(
        "correction_feedback",
        "Config loader moved",
        "settings come from app/config.py",
        "Settings are read by `app/config.py` (load_settings).",
        "2026-11-10T16:00:00Z",
        stale="src/settings.py was deleted",
        cites=(CiteLine("src/settings.py", "deleted", "src/settings.py was deleted"),),
        reads=2,
        last_read="2026-11-12T10:00:00Z",
        use="read 2× · last 18 days ago",
    ),
    _row(
        "user_preference",
        "Short answers, code first",
        "no preamble",
        "Lead with the code.",
        "2026-11-18T10:00:00Z",
        level="user",
        reads=5,
        last_read="2026-11-29T10:00:00Z",
        use="read 5× · last 1 day ago",
    ),
)

PANEL = PanelState(
    project=(
        PanelCard(
            "project_knowledge", "Build workflow", "make build, then make test", "project_knowledge_build.md"
        ),
        PanelCard(
            "project_knowledge",
            "Release workflow",
            "make release from main; CI tags vX.Y.Z",
            "project_knowledge_release.md",
            stale=MAKEFILE_CHANGED,
        ),
        PanelCard(
            "correction_feedback",
            "Config loader moved",
            "settings come from app/config.py",
            "correction_feedback_config.md",
            stale="src/settings.py was deleted",
        ),
    ),
    user=(
        PanelCard("user_preference", "Short answers, code first", "no preamble", "user_preference_short.md"),
    ),
    cut_note=None,
    project_note=None,
    jobs=(),
)


async def _browser_at_release(pilot: Pilot[Any], screen: CardBrowser) -> None:
    await pilot.app.push_screen(screen)
    await wait_until(pilot, lambda: pilot.app.screen is screen, what="the screen")
    for field in screen.query("Input"):
        field.cursor_blink = False  # type: ignore[attr-defined]
    screen.select(RELEASE.level, RELEASE.filename)
    await wait_until(pilot, lambda: screen.preview_row == RELEASE, what="the stale card's preview")
    await pilot.wait_for_scheduled_animations()


def test_card_browser_with_a_stale_card_its_citations_and_its_use(snap_compare: SnapCompare) -> None:
    screen = CardBrowser(ROWS)

    async def shown(pilot: Pilot[Any]) -> None:
        await _browser_at_release(pilot, screen)

    assert snap_compare(mh.ScreenHost(), terminal_size=WIDE, run_before=shown)


def test_card_browser_stale_only_sorted_by_use_at_80x24(snap_compare: SnapCompare) -> None:
    screen = CardBrowser(ROWS)

    async def filtered(pilot: Pilot[Any]) -> None:
        await _browser_at_release(pilot, screen)
        await pilot.press("s", "r")
        await wait_until(
            pilot,
            lambda: (
                [r.title for r in screen.visible_rows] == ["Release workflow", "Config loader moved"]
                and screen.preview_row == screen.selected
            ),
            what="stale only, by use",
        )
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(mh.ScreenHost(), terminal_size=SMALL, run_before=filtered)


def test_side_panel_marks_stale_cards_with_their_reasons(snap_compare: SnapCompare) -> None:
    assert snap_compare(PanelHost(PANEL), terminal_size=(100, 30))


def test_side_panel_marks_stale_cards_at_80x24(snap_compare: SnapCompare) -> None:
    app = PanelHost(PANEL)

    async def narrow(pilot: Pilot[Any]) -> None:
        pilot.app.set_class(True, "-narrow")  # the App's class below 100 columns: a 32-column panel
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=narrow)
