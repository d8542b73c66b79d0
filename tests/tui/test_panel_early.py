"""The side panel lists the index before the runtime exists: the cards are read from the
trust question's stores right after the first frame; the runtime's own state replaces them."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from app.tui.app import PseudoClaudeApp
from app.tui.messages import PanelStateReady
from app.tui.panel.state import UNTRUSTED_NOTE
from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic
from tests.support.memtools import trust_workspace, write_note
from tests.tui.conftest import wait_ready, wait_until
from widgets.dialogs.trust_modal import TrustModal
from widgets.panel.memory_panel import PanelState


def _titles(cards) -> list[str]:
    return [c.title for c in cards]


def _stores(ws: Path) -> MemoryStores:
    return MemoryStores(os.path.realpath(ws))


def _hold_build(app: PseudoClaudeApp) -> threading.Event:
    """The runtime's construction waits for the returned event (a barrier, not a sleep)."""
    release = threading.Event()
    build: Callable[[], None] = app.bridge.build

    def held() -> None:
        assert release.wait(30), "the test never released the build"
        build()

    app.bridge.build = held
    return release


async def test_the_panel_lists_the_cards_while_the_runtime_is_still_being_built(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    stores = _stores(ws)
    write_note(stores, Level.PROJECT, "project_knowledge_build.md", "Build with make", "make build")
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "always tabs")
    trust_workspace(ws)
    app = make_app(server)
    release = _hold_build(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot,
                lambda: (
                    _titles(app.panel.state.project) == ["Build with make"]
                    and _titles(app.panel.state.user) == ["Tabs not spaces"]
                ),
                what="the early cards",
            )
            assert app.bridge.runtime is None and not app.state.built  # the build is still held
            assert app.panel.state.project_note is None and not any(
                c.untrusted for c in app.panel.state.project
            )
            release.set()
            await wait_ready(pilot)
    finally:
        release.set()


async def test_an_untrusted_project_store_is_never_shown_as_trusted_before_the_runtime(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    # A store that came with a clone: no trust record.
    stores = _stores(ws)
    write_note(stores, Level.PROJECT, "project_knowledge_deploy.md", "Deploy on Fridays", "ok")
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "always tabs")
    app = make_app(server)
    release = _hold_build(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot, lambda: _titles(app.panel.state.user) == ["Tabs not spaces"], what="the early cards"
            )
            assert app.bridge.runtime is None
            state = app.panel.state
            # Listed so the person can judge it, but marked: never as a trusted card.
            assert _titles(state.project) == ["Deploy on Fridays"] and all(c.untrusted for c in state.project)
            assert state.project_note == UNTRUSTED_NOTE
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
                what="the trust question's cards",
            )
            release.set()
            await pilot.press("y")  # settled once the start-up (the SDK's import included) is done
            await wait_until(
                pilot,
                lambda: (
                    app.panel.state.project
                    and app.panel.state.project_note is None
                    and not any(c.untrusted for c in app.panel.state.project)
                ),
                timeout=30,
                what="the trusted cards",
            )
            await wait_ready(pilot)
    finally:
        release.set()


async def test_the_runtimes_state_replaces_the_early_one_and_a_late_early_one_is_dropped(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    stores = _stores(ws)
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "always tabs")
    trust_workspace(ws)
    app = make_app(server)
    release = _hold_build(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot, lambda: _titles(app.panel.state.user) == ["Tabs not spaces"], what="the early cards"
            )
            early = app.panel.state
            # A card written while the runtime is built: only the runtime's state has it.
            write_note(stores, Level.USER, "project_knowledge_uv.md", "Use uv", "not pip")
            release.set()
            await wait_ready(pilot)
            await wait_until(
                pilot, lambda: "Use uv" in _titles(app.panel.state.user), what="the runtime's state"
            )
            shown: list[PanelState] = []
            show = app.panel.show

            def recording(state: PanelState) -> None:
                shown.append(state)
                show(state)

            app.panel.show = recording
            # The early read arriving late (a slow thread) does not take the runtime's state back;
            # a runtime state posted after it still shows (messages are handled in order).
            app.post_message(PanelStateReady(early, 0))
            marker = replace(app.panel.state, cut_note="the runtime's next state")
            app.post_message(PanelStateReady(marker, 0))
            await wait_until(pilot, lambda: any(s is marker for s in shown), what="the next runtime state")
            assert all(s is not early for s in shown)
    finally:
        release.set()
