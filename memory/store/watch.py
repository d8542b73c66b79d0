"""Live reload of hand edits: one ``StoresChanged`` per change no event announced.

A write reaches the app as an event of its memory manager: its worker's outcome (the worker
child's ``outcome`` line, or the in-process worker's), or a job's end seen in the spool (another
window's worker, a child killed before its line). ``StoresWatcher`` is the fallback for the
changes none of those announce: an editor saving a card, ``git pull``, a person's ``memory``
command in another terminal. It watches both store folders with watchfiles (debounced) and tells
an announced change from the others by content: the manager records the hash of every store file
its events announce (``own``: this process's commits, its child's ``wrote`` lines, the batches it
read from the history), and a changed file whose content is what was announced there is not
reported again. Before it decides, the watcher lets the manager look at the spool (``settle``): a
batch another process just committed is then announced as its job's end, not as an outside edit.

Each event names the cards changed when it can (``StoresChanged.cards``). A store folder may not
exist yet (a new workspace) or be replaced (``git checkout``): the watcher re-checks the folders
at every poll interval and re-arms itself when they change; such a change names no card.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import stat
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path

from watchfiles import awatch

from memory.constants import INDEX_FILE, Level
from memory.events import CardsChanged, StoresChanged
from memory.store.fs import UnsafePathError
from memory.store.journal import OWN_WRITES, OwnWrites
from memory.store.noteparse import sha256
from memory.store.stores import MemoryStores

__all__ = ["StoresWatcher"]

# A file that is there but cannot be hashed (a FIFO, a symlink): never one of our writes.
_UNREADABLE = "unreadable"


def _import_anyio_backend() -> None:
    with contextlib.suppress(ImportError):
        importlib.import_module("anyio._backends._asyncio")


class StoresWatcher:
    """Watches a workspace's store folders; iterate ``events()`` on the event loop."""

    def __init__(
        self,
        stores: MemoryStores,
        *,
        debounce_ms: int = 300,
        poll_s: float = 1.0,
        own: OwnWrites = OWN_WRITES,
        settle: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.stores = stores
        self.debounce_ms = debounce_ms
        self.poll_s = poll_s
        self.own = own
        self._settle = settle
        self._stop = asyncio.Event()
        # Set once the file system watch is armed: changes made after it are seen.
        self.ready = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    def _folders(self) -> dict[Level, tuple[Path, int]]:
        """The store folders that exist as real folders now, with their inode (to notice a
        folder replaced under us)."""
        out: dict[Level, tuple[Path, int]] = {}
        for level, st in self.stores.stores.items():
            if st.folder_problem() is not None:
                continue
            try:
                s = os.lstat(st.dir)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISDIR(s.st_mode):
                out[level] = (st.dir, s.st_ino)
        return out

    def _digest(self, path: Path) -> str | None:
        try:
            return sha256(self.stores.fs.read_bytes(path))
        except FileNotFoundError:
            return None
        except (UnsafePathError, OSError):
            return _UNREADABLE

    def _news(self, path: Path) -> tuple[bool, str | None]:
        """Whether a changed path is news (a note or ``MEMORY.md`` not as an event announced it),
        and its content's digest (None: it is gone)."""
        name = path.name
        if name.startswith(".") or not name.endswith(".md"):
            return False, None  # staging files, .trash/, .gitignore: never a card change
        digest = self._digest(path)
        return not self.own.is_own(path, digest), digest

    def _described(self, paths: list[str], folders: dict[Level, tuple[Path, int]]) -> StoresChanged | None:
        """The change no event announced among ``paths``, by level and card; None: there is none."""
        by_dir = {folder: level for level, (folder, _) in folders.items()}
        cards: dict[Level, tuple[set[str], set[str]]] = {}
        for raw in set(paths):
            p = Path(raw)
            level = by_dir.get(p.parent)
            if level is None:
                continue
            news, digest = self._news(p)
            if not news:
                continue
            written, deleted = cards.setdefault(level, (set(), set()))
            if p.name != INDEX_FILE:  # the index is derived: its level changed, no card did
                (written if digest is not None else deleted).add(p.name)
        if not cards:
            return None
        levels = tuple(sorted(cards))
        described = tuple(
            CardsChanged(level=lv, written=tuple(sorted(cards[lv][0])), deleted=tuple(sorted(cards[lv][1])))
            for lv in levels
        )
        return StoresChanged(levels=levels, cards=described)

    def _news_in(self, folder: Path) -> set[str]:
        """The names in a folder that appeared (or was replaced) that are news: not as announced."""
        try:
            names = os.listdir(folder)
        except OSError:
            return set()
        return {n for n in names if self._news(folder / n)[0]}

    async def _refolded(
        self, known: dict[Level, tuple[Path, int]], now: dict[Level, tuple[Path, int]]
    ) -> StoresChanged | None:
        """The change of the watched folders themselves: one that appeared names the cards in it
        (unless an event announced them all); one that vanished or was replaced names none."""
        fresh = [lv for lv in now if known.get(lv) != now[lv]]
        gone = [lv for lv in known if lv not in now]
        if fresh and self._settle is not None:
            await self._settle()
        news = {lv: await asyncio.to_thread(self._news_in, now[lv][0]) for lv in fresh}
        news = {lv: names for lv, names in news.items() if names}
        levels = tuple(sorted({*news, *gone}))
        if not levels:
            return None
        if gone or any(lv in known for lv in news):
            return StoresChanged(levels=levels, cards=None)  # replaced: what it lost is not known
        cards = tuple(CardsChanged(level=lv, written=tuple(sorted(news[lv] - {INDEX_FILE}))) for lv in levels)
        return StoresChanged(levels=levels, cards=cards)

    async def _idle(self) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), self.poll_s)
        except TimeoutError:
            pass

    async def events(self) -> AsyncGenerator[StoresChanged, None]:
        """One ``StoresChanged`` per debounced batch of external changes, until ``stop()``."""
        # awatch's first call imports anyio's asyncio backend (sockets, subprocesses…): a tenth
        # of a second that would stall the screen if it happened on the event loop.
        await asyncio.to_thread(_import_anyio_backend)
        known = await asyncio.to_thread(self._folders)
        while not self._stop.is_set():
            if not known:
                self.ready.set()
                await self._idle()
                now = await asyncio.to_thread(self._folders)
                change, known = await self._refolded(known, now), now
                if change is not None:
                    yield change
                continue
            rearm = False
            async for changes in awatch(
                *(str(folder) for folder, _ in known.values()),
                watch_filter=None,
                debounce=self.debounce_ms,
                step=50,
                stop_event=self._stop,
                rust_timeout=max(int(self.poll_s * 1000), 1),
                yield_on_timeout=True,
                recursive=False,
            ):
                self.ready.set()
                if changes:
                    if self._settle is not None:
                        await self._settle()  # what the spool shows is announced first, as a job's end
                    paths = [p for _, p in changes]
                    described = await asyncio.to_thread(self._described, paths, known)
                    if described is not None:
                        yield described
                now = await asyncio.to_thread(self._folders)
                if now != known:
                    # A folder appeared, vanished or was replaced: watch the new set.
                    change, known = await self._refolded(known, now), now
                    if change is not None:
                        yield change
                    rearm = True
                    break
            if not rearm:
                return
