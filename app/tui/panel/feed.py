"""The side panel's state, read from the stores off the event loop and kept for the next start.

Three readings: the runtime's (the index the next Run gets, this workspace's jobs, the user store's
sync line), the early one (the cards before the runtime exists, from the trust question's
stores), and a record only for the snapshot the next start shows in its first frame. Every one
is kept as that snapshot (app.tui.panel.snapshot) when the stores can be stamped.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.services.bundle import Services
    from app.services.panel_snapshot import Stamp  # noqa: F401
    from app.tui.panel.state import JobLine
    from widgets.panel.memory_panel import PanelState

Key = tuple[str, str]  # (level, filename)


class PanelFeed:
    """``card_reads``: the lock whole-store card reads take turns on (the trust window's, the
    panel's): side by side on a 10,000-card store each took twice as long."""

    def __init__(self, home: Path | None, workspace: Path, card_reads: threading.Lock) -> None:
        self.home = home
        self.workspace = workspace
        self.card_reads = card_reads

    def _kept(
        self,
        stores: Any,
        jobs: Sequence[JobLine] | None = None,
        files: frozenset[Key] | None = None,
        sync: tuple[str, bool] | None = None,
    ) -> PanelState:
        """A panel state built from ``stores`` (blocking), kept as the next start's snapshot."""
        # Loaded in this thread, not with the App: the stores' modules come with them.
        from app.services.index import IndexService
        from app.tui.panel.snapshot import recorder
        from app.tui.panel.state import build_panel_state

        with self.card_reads:
            return recorder(self.home, self.workspace).record(
                lambda: build_panel_state(IndexService(stores).view(), jobs or [], files, sync=sync)
            )

    async def state(
        self, services: Services, run_start_files: frozenset[Key] | None
    ) -> tuple[PanelState, int]:
        """(PanelState, number of this workspace's spooled jobs: in flight, failed or held)."""
        jobs = await services.jobs.jobs()
        stores = services.index.stores
        sync = services.sharing.sync_status
        return await asyncio.to_thread(self._kept, stores, jobs, run_start_files, sync), len(jobs)

    async def record(self, services: Services) -> None:
        """The panel's cards built again only for the next start's snapshot."""
        await asyncio.to_thread(self._kept, services.index.stores)

    async def early(self, stores: Callable[[], Any]) -> PanelState:
        """The cards before the runtime, from ``stores()`` (the trust question's; no jobs)."""
        return await asyncio.to_thread(lambda: self._kept(stores()))

    def retry_in(self) -> float | None:
        """Seconds until the snapshot can be kept, when cards changed a moment ago (else None)."""
        from app.tui.panel.snapshot import recorder  # loaded by the start-up's snapshot read

        return recorder(self.home, self.workspace).retry_in()
