"""The store watcher (memory/store/watch.py): one StoresChanged per external change, no self-echo."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

from memory.constants import Level
from memory.events import CardsChanged, StoresChanged
from memory.store.watch import StoresWatcher
from tests.support.memtools import create, make_env, write_note

DEADLINE = 20.0


async def _started(
    watcher: StoresWatcher,
) -> tuple[AsyncGenerator[StoresChanged, None], asyncio.Future[StoresChanged]]:
    """The watcher's event stream, its first event pending, once the watch is armed."""
    it = watcher.events()
    first = asyncio.ensure_future(it.__anext__())
    await asyncio.wait_for(watcher.ready.wait(), DEADLINE)
    return it, first


async def test_external_write_gives_one_event_and_own_apply_gives_none(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.apply(
        [(0, create("project", "Seed")), (1, create("user", "Seed", type_="user_preference"))], source="s"
    )
    watcher = StoresWatcher(make_env(tmp_path), debounce_ms=100, poll_s=0.2)
    it, first = await _started(watcher)
    try:
        # An editor saves a card: one event, for that level only.
        await asyncio.to_thread(write_note, env, Level.PROJECT, "project_knowledge_hand.md", "Hand", "typed")
        event = await asyncio.wait_for(first, DEADLINE)
        hand = CardsChanged(level=Level.PROJECT, written=("project_knowledge_hand.md",))
        assert event == StoresChanged(levels=(Level.PROJECT,), cards=(hand,))
        # The app's own batch (both levels) is not echoed; the next event is the user-level
        # edit that follows it, alone.
        await asyncio.to_thread(
            env.apply, [(0, create("project", "Own")), (1, create("user", "Own"))], source="s"
        )
        await asyncio.to_thread(write_note, env, Level.USER, "user_preference_hand.md", "Hand", "typed")
        event = await asyncio.wait_for(it.__anext__(), DEADLINE)
        hand = CardsChanged(level=Level.USER, written=("user_preference_hand.md",))
        assert event == StoresChanged(levels=(Level.USER,), cards=(hand,))
    finally:
        watcher.stop()
        await it.aclose()


async def test_a_store_folder_that_appears_later_is_watched(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    watcher = StoresWatcher(make_env(tmp_path), debounce_ms=50, poll_s=0.1)
    it, first = await _started(watcher)
    try:
        await asyncio.to_thread(write_note, env, Level.USER, "user_preference_x.md", "X", "pulled")
        # A folder that appeared: the cards in it are named.
        pulled = CardsChanged(level=Level.USER, written=("user_preference_x.md",))
        assert await asyncio.wait_for(first, DEADLINE) == StoresChanged(levels=(Level.USER,), cards=(pulled,))
    finally:
        watcher.stop()
        await it.aclose()
