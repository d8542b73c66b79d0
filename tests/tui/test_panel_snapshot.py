"""The side panel's cards in the first frames: the last start's panel snapshot, shown
before the runtime and before the early read of the stores while its stamp matches; the early read
and the runtime's state replace it; a changed store or a hostile file shows nothing."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import app.tui.panel.snapshot as panel_snapshot
from app.services.index import index_view
from app.services.panel_snapshot import snapshot_path
from app.tui.app import PseudoClaudeApp
from app.tui.messages import PanelStateReady
from app.tui.panel.snapshot import PanelSnapshot
from app.tui.panel.state import build_panel_state
from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic
from tests.support.memtools import trust_workspace, write_note
from tests.tui.conftest import wait_ready, wait_until
from tests.unit.tui.test_panel_snapshot import settle
from widgets.panel.memory_panel import PanelCard, PanelState


def _titles(cards: Iterable[PanelCard]) -> list[str]:
    return [c.title for c in cards]


def _hold(app: PseudoClaudeApp) -> threading.Event:
    """The runtime's construction and the early read of the stores wait for the returned event."""
    release = threading.Event()
    build: Callable[[], None] = app.bridge.build
    early = app.memory.panel.feed.early

    def held_build() -> None:
        assert release.wait(30), "the test never released the build"
        build()

    async def held_early(stores: Callable[[], Any]) -> PanelState:
        await asyncio.to_thread(release.wait, 30)
        return await early(stores)

    app.bridge.build = held_build  # type: ignore[method-assign]
    app.memory.panel.feed.early = held_early  # type: ignore[method-assign]
    return release


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[PanelState | None]:
    """What each start-up read of the snapshot gave (so a test knows it is done)."""
    seen: list[PanelState | None] = []
    read = panel_snapshot.read_snapshot

    def recording(*args: Any, **kwargs: Any) -> PanelState | None:
        state = read(*args, **kwargs)
        seen.append(state)
        return state

    monkeypatch.setattr(panel_snapshot, "read_snapshot", recording)
    return seen


def _setup(ws: Path, home: Path) -> MemoryStores:
    stores = MemoryStores(os.path.realpath(ws))
    write_note(stores, Level.PROJECT, "project_knowledge_build.md", "Build with make", "make build")
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "always tabs")
    trust_workspace(ws)
    settle(ws, home)
    PanelSnapshot(home, ws).record(
        lambda: build_panel_state(index_view(stores), [], None)
    )  # the last start's
    assert snapshot_path(home, ws).exists()
    return stores


async def test_the_snapshot_is_the_first_panel_state_before_the_stores_are_read(
    make_app: Callable[..., PseudoClaudeApp],
    server: FakeAnthropic,
    ws: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(ws, isolated_home)
    app = make_app(server)
    release = _hold(app)
    shown: list[PanelState] = []
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(
                pilot,
                lambda: (
                    _titles(app.panel.state.project) == ["Build with make"]
                    and _titles(app.panel.state.user) == ["Tabs not spaces"]
                ),
                what="the snapshot's cards",
            )
            show = app.panel.show

            def recording(state: PanelState) -> None:
                shown.append(state)
                show(state)

            app.panel.show = recording  # type: ignore[method-assign]
            assert app.bridge.runtime is None and not app.state.built  # nothing read the stores yet
            assert app.panel.state.jobs == () and not any(c.new for c in app.panel.state.user)
            snap = app.panel.state
            assert snap is app.memory.panel._snapshot_state  # the first state shown: the snapshot
            release.set()
            await wait_ready(pilot)
            # Replaced by the reads of the stores (the early one, the runtime's), never shown again:
            # not even when it arrives late (messages are handled in order).
            app.post_message(PanelStateReady(snap, 0))
            marker = replace(app.panel.state, cut_note="the runtime's next state")
            app.post_message(PanelStateReady(marker, 0))
            await wait_until(pilot, lambda: any(s is marker for s in shown), what="the next runtime state")
            assert all(s is not snap for s in shown)
    finally:
        release.set()


async def _nothing_shown(
    make_app: Callable[..., PseudoClaudeApp], server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _reads(monkeypatch)
    app = make_app(server)
    release = _hold(app)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: seen, what="the snapshot's read")
            await pilot.pause()
            await pilot.pause()
            assert seen == [None]
            assert app.panel.state.user == () and app.panel.state.project == ()
            assert not app.chat.query(".-error")  # never an error on screen
            release.set()
            await wait_ready(pilot)
            await wait_until(
                pilot, lambda: _titles(app.panel.state.user) == ["Tabs not spaces"], what="the cards"
            )
    finally:
        release.set()


async def test_a_card_changed_since_the_snapshot_shows_no_snapshot(
    make_app: Callable[..., PseudoClaudeApp],
    server: FakeAnthropic,
    ws: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(ws, isolated_home)
    card = Path(os.path.realpath(ws)) / ".PseudoClaude" / "memory" / "project_knowledge_build.md"
    card.write_text(card.read_text().replace("Build with make", "Build with ninja"))
    settle(ws, isolated_home)
    await _nothing_shown(make_app, server, monkeypatch)


async def test_a_trust_record_changed_since_the_snapshot_shows_no_snapshot(
    make_app: Callable[..., PseudoClaudeApp],
    server: FakeAnthropic,
    ws: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(ws, isolated_home)
    (record,) = (isolated_home / "trust").iterdir()
    record.write_text(json.dumps({"id": "0" * 32}))  # damaged: the project store is untrusted now
    settle(ws, isolated_home)
    await _nothing_shown(make_app, server, monkeypatch)


async def test_a_hostile_snapshot_shows_nothing_and_the_app_starts(
    make_app: Callable[..., PseudoClaudeApp],
    server: FakeAnthropic,
    ws: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(ws, isolated_home)
    body = json.loads(snapshot_path(isolated_home, ws).read_bytes())
    body["user"][0]["untrusted"] = "maybe"
    snapshot_path(isolated_home, ws).write_text(json.dumps(body))
    await _nothing_shown(make_app, server, monkeypatch)


async def test_the_snapshot_is_written_after_a_runtime_state_and_rewritten_when_it_changes(
    make_app: Callable[..., PseudoClaudeApp], server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    stores = MemoryStores(os.path.realpath(ws))
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "always tabs")
    path = snapshot_path(isolated_home, ws)

    def kept() -> list[str]:
        try:
            return _titles(panel_snapshot.read_snapshot(None, ws).user)  # type: ignore[union-attr]
        except AttributeError:
            return []

    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        settle(ws, isolated_home)  # the start's own writes (MEMORY.md) are seconds old now
        app.memory.panel.update()
        await wait_until(pilot, lambda: kept() == ["Tabs not spaces"], what="the snapshot written")
        write_note(stores, Level.USER, "project_knowledge_uv.md", "Use uv", "not pip")
        settle(ws, isolated_home)
        app.memory.panel.update()
        await wait_until(
            pilot, lambda: sorted(kept()) == ["Tabs not spaces", "Use uv"], what="the snapshot rewritten"
        )
    assert path.stat().st_mode & 0o777 == 0o600


async def test_cards_changed_just_before_the_start_are_kept_for_the_next_one(
    make_app: Any, server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    # A person's start right after a change (a card written by the last session's batch, a git
    # pull): the first panel build cannot stamp the cards, so the snapshot is written once the
    # racy window has passed, not never (the next start would have drawn the panel late).
    stores = MemoryStores(os.path.realpath(ws))
    write_note(stores, Level.PROJECT, "project_knowledge_build.md", "Build with make", "make build")
    trust_workspace(ws)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.memory.panel.shows > 0, what="the runtime's panel")
        assert panel_snapshot.read_snapshot(isolated_home, ws) is None  # too fresh to stamp at first
        await wait_until(
            pilot,
            lambda: panel_snapshot.read_snapshot(isolated_home, ws) is not None,
            timeout=6,
            what="the snapshot written once the racy window has passed",
        )
        state = panel_snapshot.read_snapshot(isolated_home, ws)
        assert state is not None and _titles(state.project) == ["Build with make"]
