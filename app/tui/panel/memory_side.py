"""The memory side of the app: the side panel, and all that follows the memory's news.

The App routes the memory's messages here (``handle``) — a memory event, a store changed from
outside, a panel state read, the panel's two ways into the memory screens — with the chat's
news the memory follows (a turn started or ended, another session shown) and start-up's. This
object composes what reacts to them: the panel's host (app.tui.panel.panel_host), the memory
screens, the consolidation (/consolidate, the automatic one), the user store's sharing, and the
grounding watch (stale marks that follow the cited files while the app runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from app.tui.flows.scale_flow import ScaleFlow
from app.tui.flows.sharing_flow import SharingFlow
from app.tui.messages import (
    MemoryEventMessage,
    PanelStateReady,
    RuntimeBuilt,
    RuntimeReady,
    SessionSwitched,
    StoresChangedMessage,
    TurnDone,
    TurnStarted,
)
from app.tui.panel.grounding_watch import GroundingWatch
from app.tui.panel.panel_host import PanelHost
from app.tui.phase import Phase
from app.tui.screens.memory import MemoryScreens
from widgets.panel.memory_panel import MemoryPanel

if TYPE_CHECKING:
    from textual.app import App

    from app.tui.app_state import AppState

__all__ = ["MemorySide"]


class MemorySide:
    """For ``app``, over the app-wide ``state``: ``panel`` is the chat screen's memory panel;
    ``busy`` says whether a turn runs or something is queued (the automatic consolidation waits
    for both), ``turn_running`` whether a turn runs (the grounding watch's timer waits for it)."""

    def __init__(
        self,
        app: App[Any],
        state: AppState,
        panel: MemoryPanel,
        *,
        busy: Callable[[], bool],
        turn_running: Callable[[], bool],
    ) -> None:
        post, services, bridge = app.post_message, state.built_services, state.bridge
        self._state = state
        self.panel = PanelHost(
            app,
            bridge,
            state.workspace,
            panel,
            state.status,
            built=lambda: state.built,
            quitting=lambda: state.phase is Phase.QUITTING,
        )
        self.screens = MemoryScreens(app, post=post, services=services, refresh_panel=self.refresh_panel)
        self.scale = ScaleFlow(
            app,
            post=post,
            services=services,
            credentials=lambda: bridge.credentials,
            settings=lambda: bridge.settings,
            busy=busy,
        )
        self.sharing = SharingFlow(
            app, services=services, phase=lambda: state.phase, refresh_panel=self.refresh_panel
        )
        self.grounding = GroundingWatch(app, services=services, busy=turn_running, changed=self.changed)
        self._routes: dict[type[Message], Callable[[Any], None]] = {
            PanelStateReady: self.panel.show,
            MemoryEventMessage: self._memory_event,
            StoresChangedMessage: self._stores_changed,
            MemoryPanel.OpenPending: self._open_pending,
            MemoryPanel.OpenBrowser: self._open_browser,
            TurnStarted: lambda m: self.panel.turn_started(),
            TurnDone: self._turn_done,
            SessionSwitched: lambda m: self.panel.session_switched(),
            RuntimeBuilt: self._built_now,
            RuntimeReady: self._ready,
        }

    def handle(self, message: Message) -> None:
        """One of the messages the App routes here (the others are not the memory's)."""
        route = self._routes.get(type(message))
        if route is not None:
            route(message)

    def refresh_panel(self) -> None:
        """The panel reads every card again (a change no memory event named)."""
        self.panel.refresh()

    def changed(self) -> None:
        """Memory changed here (batches undone, stale marks): the panel and the open screens."""
        self.panel.refresh()
        self.screens.refresh()

    # -- the routes ----------------------------------------------------------------------------------

    def _memory_event(self, message: MemoryEventMessage) -> None:
        self.screens.record(message.event)
        self.panel.heard(message.event)  # the cards it names are read again, not every card
        self.screens.refresh()
        self.scale.memory_event(message.event)
        self.sharing.memory_event(message.event)

    def _stores_changed(self, message: StoresChangedMessage) -> None:
        self.sharing.stores_changed()  # MEMORY.md rebuilt from the cards, then the panel
        self.screens.refresh()
        self.scale.stores_changed()

    def _open_pending(self, message: MemoryPanel.OpenPending) -> None:
        if self._state.built:
            self.screens.open_pending()

    def _open_browser(self, message: MemoryPanel.OpenBrowser) -> None:
        if self._state.built:
            self.screens.open_browser(message.card)

    def _turn_done(self, message: TurnDone) -> None:
        self.panel.update()
        self.grounding.recheck()  # the turn's tools may have changed cited files
        self.scale.when_idle()  # an automatic consolidation that waited for the turn

    def _built_now(self, message: RuntimeBuilt) -> None:
        self.panel.refresh()
        self.grounding.start()

    def _ready(self, message: RuntimeReady) -> None:
        self.panel.refresh()
        self.scale.started()
        self.sharing.start()
