"""The side panel reads again only the cards an event named (app/tui/panel/feed.py): after one
card written in a store of many, its state is built from a stat and a read of that card, not of
every card; a change that names no card (a folder replaced, a card edited here) reads them all.

Reads are counted through the stores' file layer (``FS(record=True)``): every operation on a path
inside the project store's folder that names a card."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.tui.panel.feed import PanelFeed
from memory.constants import Level
from memory.events import CardsChanged, JobApplied, JobQueued, StoresChanged
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.support.memtools import create, make_env, write_note

N = 40


class _Jobs:
    async def jobs(self) -> list[Any]:
        return []


def _services(stores: MemoryStores) -> Any:
    return SimpleNamespace(
        jobs=_Jobs(), index=SimpleNamespace(stores=stores), sharing=SimpleNamespace(sync_status=None)
    )


def _cards_touched(fs: FS, stores: MemoryStores) -> set[str]:
    assert fs.log is not None
    folder = stores.project.dir
    names = {Path(path).name for _, path, _ in fs.log if Path(path).parent == folder}
    return {n for n in names if n.endswith(".md") and n != "MEMORY.md"}


class _Panel:
    """A store of N project cards, its panel read once (every card), and a second set of stores on
    the same folders that writes as another process would (the worker child)."""

    def __init__(self, tmp_path: Path) -> None:
        self.fs = FS(record=True)
        self.stores = make_env(tmp_path, self.fs)
        self.writer = make_env(tmp_path)
        self.names = [
            write_note(self.stores, Level.PROJECT, f"project_knowledge_c{i:03}.md", f"Card {i}", "b").name
            for i in range(N)
        ]
        self.feed = PanelFeed(self.stores.paths.home, Path(self.stores.paths.workspace), threading.Lock())

    async def read(self) -> tuple[list[str], set[str]]:
        """The panel's project cards (filenames) and the cards read for them."""
        assert self.fs.log is not None
        self.fs.log.clear()
        state, _ = await self.feed.state(_services(self.stores), None)
        return [c.filename for c in state.project], _cards_touched(self.fs, self.stores)


async def test_after_one_cards_write_the_panel_reads_that_card_not_every_card(tmp_path: Path) -> None:
    p = _Panel(tmp_path)
    shown, read = await p.read()
    assert len(shown) == N and len(read) == N  # the first reading: every card
    result = await asyncio.to_thread(p.writer.apply, [(0, create("project", "New card"))], source="s")
    [written] = result.applied
    p.feed.heard(JobApplied(job_id="j", applied=tuple(result.applied), txid=result.txid))
    shown, read = await p.read()
    assert written.filename in shown and len(shown) == N + 1
    assert read == {written.filename}
    # A job's other news names no card: nothing is read again.
    p.feed.heard(JobQueued(job_id="k"))
    shown, read = await p.read()
    assert len(shown) == N + 1 and read == set()


async def test_a_deleted_card_named_by_the_watcher_is_the_only_one_looked_at(tmp_path: Path) -> None:
    p = _Panel(tmp_path)
    await p.read()
    gone = p.names[7]
    (p.stores.project.dir / gone).unlink()
    p.feed.heard(
        StoresChanged(levels=(Level.PROJECT,), cards=(CardsChanged(level=Level.PROJECT, deleted=(gone,)),))
    )
    shown, read = await p.read()
    assert gone not in shown and len(shown) == N - 1
    assert read == {gone}


async def test_a_change_that_names_no_card_has_every_card_read_again(tmp_path: Path) -> None:
    p = _Panel(tmp_path)
    await p.read()
    edited = write_note(p.writer, Level.PROJECT, p.names[3], "Edited by hand", "b").name
    p.feed.heard(StoresChanged(levels=(Level.PROJECT,), cards=None))  # a folder replaced, say
    _, read = await p.read()
    assert len(read) == N
    # A job's batch whose writes are not known (its history entry not found), and a refresh
    # that no event explains (a card edited here): every card again too.
    p.feed.heard(JobApplied(job_id="j", writes_known=False))
    _, read = await p.read()
    assert len(read) == N
    p.feed.whole()
    shown_titles, read = await p.read()
    assert len(read) == N and edited in shown_titles


async def test_a_reading_with_nothing_heard_reads_every_card(tmp_path: Path) -> None:
    p = _Panel(tmp_path)
    await p.read()
    _, read = await p.read()  # a refresh for another reason (a Run started, the sync line)
    assert len(read) == N
