"""Where a workspace's memory lives: its two stores, its paths, the file system and the clock.

The transaction, the history and trust work on this and nothing else: they never see the
``MemoryStores`` facade that calls them (which holds one layout and adds the lock, the reads and
the card edits). Frozen: the levels a workspace has are decided once, when it is opened.
"""

from __future__ import annotations

import datetime as _dt
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory.constants import Level
from memory.grounding.staleness import Grounding
from memory.model import utcnow
from memory.store.author import git_user_name
from memory.store.cardcache import CardCache
from memory.store.fs import DEFAULT_FS, FS
from memory.store.paths import Paths
from memory.store.store import Store

__all__ = ["StoreLayout"]


@dataclass(frozen=True)
class StoreLayout:
    paths: Paths
    fs: FS
    clock: Callable[[], _dt.datetime]
    project: Store
    user: Store
    # False for a workspace at ~ with the default home: its project store IS the user store,
    # and one folder must not be two levels.
    has_project_level: bool
    # The citation checker of this workspace (memory.grounding): the stores and the app's home
    # are never citable.
    grounding: Grounding

    @classmethod
    def for_workspace(
        cls,
        workspace: Path | str,
        home: Path | None = None,
        *,
        fs: FS = DEFAULT_FS,
        clock: Callable[[], _dt.datetime] = utcnow,
    ) -> StoreLayout:
        paths = Paths.for_workspace(workspace, home)
        project_real = os.path.realpath(paths.project_store)
        has_project_level = project_real != os.path.realpath(paths.user_store)
        unavailable = (
            None
            if has_project_level
            else f"this workspace has no project level: its project store is the user store ({project_real})"
        )
        # Each store's parsed cards, kept for the next process. The project store's stays shut
        # until the facade, which knows trust, opens it (MemoryStores).
        project_cache = CardCache(fs, paths.home, paths.project_store, Level.PROJECT)
        project_cache.gate = _shut
        project = Store(
            Level.PROJECT,
            paths.project_store,
            fs,
            guard=paths.workspace,
            unavailable=unavailable,
            card_cache=project_cache,
        )
        user = Store(
            Level.USER,
            paths.user_store,
            fs,
            card_cache=CardCache(fs, paths.home, paths.user_store, Level.USER),
        )
        grounding = Grounding(paths.workspace, (paths.project_store, paths.user_store, paths.home))
        return cls(
            paths=paths,
            fs=fs,
            clock=clock,
            project=project,
            user=user,
            has_project_level=has_project_level,
            grounding=grounding,
        )

    def store(self, level: Level | str) -> Store:
        return self.project if Level(level) is Level.PROJECT else self.user

    @property
    def user_in_git(self) -> bool:
        """Whether the user store is a git repository (``user_memory_remote``): it
        then carries the same ``.gitignore`` and ``.gitattributes`` as a project store."""
        try:
            return stat.S_ISDIR(self.fs.lstat(self.paths.user_store / ".git").st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False  # an I/O error is no answer: it aborts the batch like any other

    def author(self, level: Level | str) -> str:
        """The git ``user.name`` a card of ``level`` is written by, or "": the
        workspace's for a project card, the user store's home's for a user card."""
        if Level(level) is Level.PROJECT:
            return git_user_name(self.paths.workspace)
        return git_user_name(self.paths.home if self.paths.home.is_dir() else Path.home())

    @property
    def stores(self) -> dict[Level, Store]:
        """The levels this workspace has (the user level only when the two are one folder)."""
        if not self.has_project_level:
            return {Level.USER: self.user}
        return {Level.PROJECT: self.project, Level.USER: self.user}


def _shut() -> bool:
    return False
