"""Live reload of hand edits: one ``StoresChanged`` per external change.

``StoresWatcher`` watches both store folders with watchfiles (debounced) and tells an external
change (an editor saving a card, ``git pull``) from the app's own commits by content: every
commit records the hash of each file it writes in ``transaction.OWN_WRITES``, and a changed
file whose content is what this process last wrote there is not echoed back.

A store folder may not exist yet (a new workspace) or be replaced (``git checkout``): the
watcher re-checks the folders at every poll interval and re-arms itself when they change.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import stat
from collections.abc import AsyncGenerator
from pathlib import Path

from watchfiles import awatch

from memory.constants import Level
from memory.events import StoresChanged
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
    ) -> None:
        self.stores = stores
        self.debounce_ms = debounce_ms
        self.poll_s = poll_s
        self.own = own
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

    def _external(self, path: Path) -> bool:
        """Whether a changed path is news: a note or ``MEMORY.md`` not as we last wrote it."""
        name = path.name
        if name.startswith(".") or not name.endswith(".md"):
            return False  # staging files, .trash/, .gitignore: never a card change
        return not self.own.is_own(path, self._digest(path))

    def _changed_levels(self, paths: list[str], folders: dict[Level, tuple[Path, int]]) -> set[Level]:
        by_dir = {folder: level for level, (folder, _) in folders.items()}
        levels: set[Level] = set()
        for raw in paths:
            p = Path(raw)
            level = by_dir.get(p.parent)
            if level is not None and level not in levels and self._external(p):
                levels.add(level)
        return levels

    def _appeared(self, level: Level, folder: Path) -> bool:
        """A folder that appeared: news unless every card in it is one we wrote."""
        try:
            names = os.listdir(folder)
        except OSError:
            return False
        return any(self._external(folder / n) for n in names)

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
                appeared = [lv for lv in now if lv not in known]
                known = now
                levels = [lv for lv in appeared if await asyncio.to_thread(self._appeared, lv, now[lv][0])]
                if levels:
                    yield StoresChanged(levels=tuple(sorted(levels)))
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
                    paths = [p for _, p in changes]
                    changed = await asyncio.to_thread(self._changed_levels, paths, known)
                    if changed:
                        yield StoresChanged(levels=tuple(sorted(changed)))
                now = await asyncio.to_thread(self._folders)
                if now != known:
                    # A folder appeared, vanished or was replaced: watch the new set.
                    fresh = [lv for lv in now if known.get(lv) != now[lv]]
                    gone = [lv for lv in known if lv not in now]
                    moved = {lv for lv in fresh if await asyncio.to_thread(self._appeared, lv, now[lv][0])}
                    moved.update(gone)
                    known = now
                    if moved:
                        yield StoresChanged(levels=tuple(sorted(moved)))
                    rearm = True
                    break
            if not rearm:
                return
