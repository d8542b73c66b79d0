"""What fills the memory side panel, and when.

The panel shows, each replacing the one before and never the other way: the last start's cards
from the snapshot cache (app.tui.panel.snapshot) when the stores did not change since — in the
first frame when the read is done by then, before even the stores' modules are loaded; the
cards read before the runtime exists (``early``: the settings, the runtime's imports and the
session take a second after the first frame, the cards need none of it); then the runtime's
states, read again (``refresh``, in a worker) after a memory event, a turn's end or a session
switch. Each is posted as ``PanelStateReady`` and shown by ``show`` (the App routes it here),
which keeps the status line's pending and new-card counts too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.tui.messages import PanelStateReady
from app.tui.panel.feed import PanelFeed
from app.tui.workers import start
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App

    from app.tui.bridge import Bridge
    from app.tui.status_model import StatusModel
    from memory.events import MemoryEvent
    from widgets.panel.memory_panel import MemoryPanel, PanelState

__all__ = ["PanelHost"]

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (level, filename)


class PanelHost:
    """The ``panel`` of ``app`` over the runtime ``bridge``: ``built`` says whether the runtime
    object exists, ``quitting`` whether the app is leaving (no snapshot is written then)."""

    def __init__(
        self,
        app: App[Any],
        bridge: Bridge,
        workspace: Path,
        panel: MemoryPanel,
        status: StatusModel,
        *,
        built: Callable[[], bool],
        quitting: Callable[[], bool],
    ) -> None:
        self._app = app
        self._bridge = bridge
        self._workspace = workspace
        self._panel = panel
        self._status = status
        self._built = built
        self._quitting = quitting
        self._feed: PanelFeed | None = None
        self.shows = 0  # how many of the runtime's states were shown (tests wait on it)
        self.start_files: frozenset[Key] | None = None  # the cards as they were at the turn's start
        self._snapshot_state: PanelState | None = None  # the last start's cards, from the cache
        # Read at once, while Textual sets up its first frame (most of the time to it): the frame
        # can then show the cards itself.
        self._snapshot_read = threading.Event()
        self._snapshot_found: PanelState | None = None
        threading.Thread(target=self._read_snapshot, name="panel-snapshot", daemon=True).start()
        self._early_state: PanelState | None = None  # the panel's cards read before the runtime
        self._early_shown = False
        self._runtime_shown = False  # a panel state from the runtime was shown

    @property
    def feed(self) -> PanelFeed:
        """The panel's reads, over the bridge's home and lock (made at the first read, once a test
        handed the bridge its adapters)."""
        if self._feed is None:
            self._feed = PanelFeed(self._bridge.home, self._workspace, self._bridge.card_reads)
        return self._feed

    # -- before the runtime --------------------------------------------------------------------------

    def _read_snapshot(self) -> None:
        try:
            from app.tui.panel.snapshot import read_snapshot  # stdlib, the stat stamp: no pydantic

            self._snapshot_found = read_snapshot(self._bridge.home, self._workspace)
        finally:
            self._snapshot_read.set()

    def snapshot(self) -> None:
        """The cards of the last panel state when the stores did not change since: at once when
        the read is done (the chat screen's mount: the first frame), else as soon as it is."""
        if self._snapshot_read.is_set():
            self._show_snapshot()
        else:
            start(self._app, self._snapshot_later, group="panel-snapshot", exclusive=True)

    async def _snapshot_later(self) -> None:
        await asyncio.to_thread(self._snapshot_read.wait, 30)
        self._show_snapshot()

    def _show_snapshot(self) -> None:
        state = self._snapshot_found
        if state is not None and not (self._early_shown or self._runtime_shown):
            self._snapshot_state = state
            self._panel.show(state)  # nothing new, no jobs: the status line stays as it is

    def early(self) -> None:
        """The panel's cards without waiting for the runtime. Read after the trust check, whose
        imports (the stores) it shares."""
        start(self._app, self._early, group="panel-early", exclusive=True)

    async def _early(self) -> None:
        bridge = self._bridge
        try:
            state = None if bridge.runtime else await self.feed.early(bridge.trust.stores)
        except Exception as e:  # a store that cannot be read: the runtime's start-up says why, once
            log.warning("panel cards not read early: %s", one_line(e, 300))
            return
        if state is not None and not self._runtime_shown:
            self._early_state = state
            self._app.post_message(PanelStateReady(state, self._status.info.pending))

    # -- showing a state -----------------------------------------------------------------------------

    def _kind(self, state: PanelState) -> str | None:
        """ "snapshot" (the cache's), "early" (the cards read before the runtime) or "runtime" for
        a panel state about to be shown; None: it is not current, the snapshot once a read of the
        stores was shown, the early one once the runtime's was (the later replaces the earlier,
        never the other way)."""
        if state is self._snapshot_state:
            return None if self._early_shown or self._runtime_shown else "snapshot"
        if state is self._early_state:
            if self._runtime_shown:
                return None
            self._early_shown = True
            return "early"
        self._runtime_shown = True
        return "runtime"

    def show(self, message: PanelStateReady) -> None:
        if (kind := self._kind(message.state)) is None:
            return  # the cards read before the runtime, arriving after its own state
        state = message.state
        self._panel.show(state)
        self.shows += kind == "runtime"
        self._status.update(
            pending=message.pending, new_cards=sum(1 for c in (*state.project, *state.user) if c.new)
        )

    # -- the runtime's states ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the panel's state again, every card (a worker; the panel shows it when it comes):
        something changed that no memory event named."""
        self.feed.whole()
        self.update()

    def heard(self, event: MemoryEvent) -> None:
        """A memory event: the cards it names are read again, not every card."""
        self.feed.heard(event)
        self.update()

    def update(self) -> None:
        """Read the panel's state again: the cards heard of since the last reading (a turn's end
        and its job's news, a session switch)."""
        start(self._app, self._read, group="panel", exclusive=True)

    async def _read(self) -> None:
        if not self._built():
            return
        feed = self.feed
        state, pending = await feed.state(self._bridge.services, self.start_files)
        self._app.post_message(PanelStateReady(state, pending))
        # Cards changed a moment ago cannot be stamped yet: the snapshot the next start shows
        # is written once they can (one try per refresh).
        if (delay := feed.retry_in()) is not None:
            self._app.set_timer(delay, self._record_later)

    def _record_later(self) -> None:
        start(self._app, self._record, group="panel-snapshot-retry", exclusive=True)

    async def _record(self) -> None:
        if self._built() and not self._quitting():
            await self.feed.record(self._bridge.services)

    def turn_started(self) -> None:
        """A turn runs: the cards as they are now, beside it (the cards cannot change until its
        job is applied), mark the ones its job writes as new."""
        notes = asyncio.to_thread(self._bridge.services.index.note_files)
        asyncio.ensure_future(notes).add_done_callback(self._noted_start_files)

    def _noted_start_files(self, task: asyncio.Future[frozenset[Key]]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.start_files = task.result()

    def session_switched(self) -> None:
        """Another session is shown: nothing is new to it yet."""
        self.start_files = None
        self.update()
