"""The panel's cards read before the runtime: the panel feed's early read, from the trust
question's stores, with the same trust rules as the runtime's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services.index import index_view
from app.tui.bridge import Bridge
from app.tui.panel.feed import PanelFeed
from app.tui.panel.state import UNTRUSTED_NOTE, build_panel_state
from memory.store.stores import MemoryStores
from tests.support.memtools import two_card_workspace


def _ws(tmp_path: Path, *, trusted: bool) -> tuple[Path, MemoryStores]:
    return two_card_workspace(tmp_path, trusted=trusted)


@pytest.mark.parametrize("trusted", [True, False])
async def test_the_early_read_is_the_runtimes_state_without_jobs_trust_included(
    tmp_path: Path, trusted: bool
) -> None:
    ws, stores = _ws(tmp_path, trusted=trusted)
    bridge = Bridge(None, ws, lambda m: None, None)  # type: ignore[arg-type]  # no settings: nothing built
    state = await PanelFeed(None, ws, bridge.card_reads).early(bridge.trust.stores)
    assert state == build_panel_state(index_view(stores), [], None)
    assert state is not None and [c.title for c in state.user] == ["Tabs not spaces"]
    assert [c.title for c in state.project] == ["Deploy on Fridays"]
    assert all(c.untrusted is not trusted for c in state.project)
    assert state.project_note == (None if trusted else UNTRUSTED_NOTE)


async def test_the_trust_questions_stores_are_the_runtimes_once_it_exists(tmp_path: Path) -> None:
    ws, stores = _ws(tmp_path, trusted=True)
    bridge = Bridge(None, ws, lambda m: None, None)  # type: ignore[arg-type]
    early = bridge.trust.stores()
    assert early is not stores and early.layout.paths == stores.layout.paths

    class Built:
        def __init__(self) -> None:
            self.stores = stores

    bridge.runtime = Built()  # type: ignore[assignment]  # built: one set of stores from now on
    assert bridge.trust.stores() is stores
