"""The side panel's state, read from the stores off the event loop and kept for the next start.

Three readings: the runtime's (the index the next Run gets, this workspace's jobs, the user store's
sync line), the early one (the cards before the runtime exists, from the trust question's
stores), and a record only for the snapshot the next start shows in its first frame. Every one
is kept as that snapshot (app.tui.panel.snapshot) when the stores can be stamped.

The runtime's reading reads again only the cards the memory events since the last one named
(``heard``: a job's batch names what it wrote and deleted), and takes the others from the
stores' last look (memory/store/told.py): after one card written in a store of 10,000, one card
is stat'ed and read, not 10,000. A reading with nothing heard, or after an event or a change that
cannot name its cards (``whole``: a card edited here, an outside change, a trust decision), reads
every card.
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
    from memory.events import MemoryEvent, StoresChanged
    from widgets.panel.memory_panel import PanelState

Key = tuple[str, str]  # (level, filename)


class PanelFeed:
    """``card_reads``: the lock whole-store card reads take turns on (the trust window's, the
    panel's): side by side on a 10,000-card store each took twice as long."""

    def __init__(self, home: Path | None, workspace: Path, card_reads: threading.Lock) -> None:
        self.home = home
        self.workspace = workspace
        self.card_reads = card_reads
        # The cards named changed since the runtime's last reading, by level: None when nothing
        # was heard (the next reading reads every card), like after ``whole``.
        self._news = threading.Lock()
        self._heard: dict[str, set[str]] | None = None
        self._whole = False

    # -- what changed since the last reading (on the event loop) -----------------------------------

    def heard(self, event: MemoryEvent | StoresChanged) -> None:
        """An event the panel is read again for: the cards it names changed (none for a job's
        other news); one that changed cards it cannot name has every card read again."""
        # memory.events is loaded by now: the event came from it.
        from memory.events import changed_cards

        changed = changed_cards(event)
        with self._news:
            if changed is None:
                self._whole = True
                return
            heard = self._heard if self._heard is not None else {}
            for c in changed:
                heard.setdefault(str(c.level), set()).update(c.written, c.deleted)
            self._heard = heard

    def whole(self) -> None:
        """The next reading reads every card: something changed that no event named."""
        with self._news:
            self._whole = True

    def _take(self) -> dict[str, set[str]] | None:
        """The cards the reading about to start was told of, per level (None: read every card);
        from now on, what is heard is for the next reading."""
        with self._news:
            heard, whole = self._heard, self._whole
            self._heard, self._whole = None, False
        return None if whole else heard

    def _kept(
        self,
        stores: Any,
        jobs: Sequence[JobLine] | None = None,
        files: frozenset[Key] | None = None,
        sync: tuple[str, bool] | None = None,
        *,
        told: bool = False,
    ) -> PanelState:
        """A panel state built from ``stores`` (blocking), kept as the next start's snapshot.
        ``told``: read again only the cards heard of since the last such reading."""
        # Loaded in this thread, not with the App: the stores' modules come with them.
        from app.services.index import IndexService
        from app.tui.panel.snapshot import recorder
        from app.tui.panel.state import build_panel_state

        with self.card_reads:
            # Taken in the reading's own thread: a reading cancelled before it started leaves
            # what was heard to the next one.
            changed = self._take() if told else None
            return recorder(self.home, self.workspace).record(
                lambda: build_panel_state(IndexService(stores).view(changed), jobs or [], files, sync=sync)
            )

    async def state(
        self, services: Services, run_start_files: frozenset[Key] | None
    ) -> tuple[PanelState, int]:
        """(PanelState, number of this workspace's spooled jobs: in flight, failed or held)."""
        jobs = await services.jobs.jobs()
        stores = services.index.stores
        sync = services.sharing.sync_status
        state = await asyncio.to_thread(self._kept, stores, jobs, run_start_files, sync, told=True)
        return state, len(jobs)

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
