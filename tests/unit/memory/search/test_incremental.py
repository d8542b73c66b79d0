"""The search cache follows the cards: a transaction's card is found by the next search (the
folder's mtime token), a hand edit in place after the watcher's event (``mark_changed``), a
deleted card is gone, a renamed one found under its new name."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from memory.constants import Level
from memory.search.engine import MemorySearch
from memory.store.watch import StoresWatcher
from tests.support.memtools import create, make_env, write_note

DEADLINE = 20.0


def _names(search: MemorySearch, query: str) -> list[str]:
    return [h.filename for h in search.search(query)]


def test_a_transaction_s_card_is_found_by_the_next_search(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_a.md", "Alpha", "plain words")
    search = MemorySearch(stores)
    assert _names(search, "zorblax") == []
    res = stores.apply([(0, create("project", "Zorblax tuning", "Tune the zorblax weekly."))], source="s")
    assert res.applied
    assert _names(search, "zorblax") == [res.applied[0].filename]
    search.close()


async def test_a_hand_edit_in_place_is_found_after_the_watcher_s_event(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    path = write_note(stores, Level.PROJECT, "project_knowledge_hand.md", "Hand", "old words only")
    os.utime(path.parent, ns=(1_000_000_000, 1_000_000_000))  # settled: only the event says "look"
    search = MemorySearch(stores)
    assert _names(search, "quasarine") == []
    folder_before = os.stat(path.parent).st_mtime_ns
    watcher = StoresWatcher(stores, debounce_ms=50, poll_s=0.1)
    it = watcher.events()
    first = asyncio.ensure_future(it.__anext__())
    try:
        await asyncio.wait_for(watcher.ready.wait(), DEADLINE)
        inode = path.stat().st_ino
        # An editor that writes in place: same inode, the folder's mtime unchanged.
        with open(path, "r+b") as f:
            data = f.read().replace(b"old words only", b"the quasarine leak")
            f.seek(0)
            f.write(data)
            f.truncate()
        assert path.stat().st_ino == inode and os.stat(path.parent).st_mtime_ns == folder_before
        event = await asyncio.wait_for(first, DEADLINE)
        assert Level.PROJECT in event.levels
        assert _names(search, "quasarine") == []  # not before the event is acted on
        for level in event.levels:
            search.mark_changed(level)
        assert _names(search, "quasarine") == ["project_knowledge_hand.md"]
        assert _names(search, "old words") == []
    finally:
        watcher.stop()
        await it.aclose()
        search.close()


def test_in_place_edit_needs_mark_changed_and_is_then_found(tmp_path: Path) -> None:
    """Without the event the folder's token says nothing changed (what the watcher is for)."""
    stores = make_env(tmp_path)
    path = write_note(stores, Level.PROJECT, "project_knowledge_hand.md", "Hand", "old words only")
    search = MemorySearch(stores)
    os.utime(path.parent, ns=(1_000_000_000, 1_000_000_000))  # settled, long ago
    assert _names(search, "old") == ["project_knowledge_hand.md"]
    mtime = os.stat(path.parent).st_mtime_ns
    with open(path, "r+b") as f:
        data = f.read().replace(b"old words only", b"the quasarine leak")
        f.seek(0)
        f.write(data)
        f.truncate()
    assert os.stat(path.parent).st_mtime_ns == mtime
    assert _names(search, "quasarine") == []  # the cache has not looked yet
    search.mark_changed()
    assert _names(search, "quasarine") == ["project_knowledge_hand.md"]
    search.close()


def test_deleted_cards_disappear_and_renamed_ones_are_found_under_the_new_name(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_gone.md", "Gone", "the vexillum card")
    old = write_note(stores, Level.PROJECT, "project_knowledge_old.md", "Moved", "the corvinal card")
    search = MemorySearch(stores)
    assert _names(search, "vexillum") == ["project_knowledge_gone.md"]
    assert _names(search, "corvinal") == ["project_knowledge_old.md"]
    (old.parent / "project_knowledge_gone.md").unlink()
    old.rename(old.parent / "project_knowledge_new.md")  # as `git mv` does
    search.mark_changed()  # the folder's mtime moved too; the event is not needed, but harmless
    assert _names(search, "vexillum") == []
    assert _names(search, "corvinal") == ["project_knowledge_new.md"]
    assert search.cache("project").count() == 1
    search.close()


def test_a_rename_is_seen_through_the_folder_token_alone(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    old = write_note(stores, Level.PROJECT, "project_knowledge_old.md", "Moved", "the corvinal card")
    search = MemorySearch(stores)
    os.utime(old.parent, ns=(1_000_000_000, 1_000_000_000))
    assert _names(search, "corvinal") == ["project_knowledge_old.md"]
    old.rename(old.parent / "project_knowledge_new.md")
    assert _names(search, "corvinal") == ["project_knowledge_new.md"]
    search.close()
