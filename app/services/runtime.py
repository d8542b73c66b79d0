"""Building one workspace's runtime for a face, and watching its stores for outside changes.

The app builds its runtime in a thread after the first frame: everything the event loop uses
later is imported here, in that thread (a first import on the loop would stall the screen).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from memory.jobs.pace import Pacer  # stdlib only: the app makes its pacer before the first frame

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.agent.model.provider import Provider
    from app.agent.permissions.question import Ask
    from app.agent.runtime import Runtime
    from app.agent.tools.base import PlanApproval
    from memory.extract.completion import Completion
    from memory.store.fs import FS
    from memory.store.watch import StoresWatcher

__all__ = ["Pacer", "StoreChanges", "build_runtime"]


def build_runtime(
    settings: Settings,
    workspace: Path,
    *,
    ask: Ask,
    provider: Provider,
    completion: Completion | None,
    home: Path | None,
    fs: FS | None,
    pacer: Pacer,
    worker_process: bool,
    plan_approval: PlanApproval | None = None,
) -> Runtime:
    """The Runtime, its stores' file layer paced by ``pacer``: the memory worker's threads make
    room for the screen while the face says it is busy (a turn streams, a key was just pressed).
    Blocking imports, no file read or written."""
    import memory.store.watch  # noqa: F401  # the store watcher (watchfiles), started later on the loop
    from app.agent.runtime import Runtime
    from memory.store.fs import FS

    fs = fs if fs is not None else FS()
    fs.pace = pacer
    return Runtime(
        settings,
        workspace,
        ask=ask,
        provider=provider,
        completion=completion,
        home=home,
        fs=fs,
        worker_process=worker_process,
        plan_approval=plan_approval,
    )


class StoreChanges:
    """The levels of each change of a store folder made outside this process and its worker child
    (an editor, ``git pull``, another window), debounced."""

    def __init__(self, rt: Runtime, *, debounce_ms: int) -> None:
        self._rt = rt
        self._debounce_ms = debounce_ms
        self._watcher: StoresWatcher | None = None

    async def changes(self) -> AsyncIterator[tuple[str, ...]]:
        # Not at the top: the app loads this module before its first frame, and the watcher brings
        # watchfiles and the stores (build_runtime already loaded it, in its thread).
        from memory.store.watch import StoresWatcher

        # What the manager's events announce is not reported again: before deciding, the watcher
        # has the manager look at the spool (another window's batch is then its job's end).
        self._watcher = StoresWatcher(
            self._rt.stores,
            debounce_ms=self._debounce_ms,
            own=self._rt.own_writes,
            settle=self._rt.manager.settle,
        )
        async for ev in self._watcher.events():
            yield tuple(str(getattr(lv, "value", lv)) for lv in ev.levels)

    @property
    def ready(self) -> bool:
        return self._watcher is not None and self._watcher.ready.is_set()

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
