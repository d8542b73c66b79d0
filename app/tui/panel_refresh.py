"""The side panel's refreshes: one build at a time, the requests made meanwhile served by one more.

A panel state is built in a thread (the merged index, the jobs, the stores' stamps): at 10,000
cards over a second of CPU. A turn's job sends several memory events in a row (queued, started,
applied) and each asked for a refresh; cancelling a worker does not stop its thread, so a build
per request ran several such builds at once, all competing with a streaming answer for the
interpreter. Here a request during a build only marks the panel stale, and the one build that
follows reads the stores once for all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.tui.messages import PanelStateReady

if TYPE_CHECKING:
    from app.tui.app import PseudoClaudeApp

__all__ = ["PanelRefresh"]


class PanelRefresh:
    """``request()`` from the App's loop; the build runs in a worker of the App's."""

    def __init__(self, app: PseudoClaudeApp) -> None:
        self._app = app
        self._running = False
        self._again = False
        self.builds = 0  # how many builds ran (tests)

    @property
    def running(self) -> bool:
        return self._running

    def request(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        self._app.run_worker(self._run(), group="panel", exit_on_error=False)

    async def _run(self) -> None:
        try:
            again = True
            while again:
                self._again = False
                await self._build()
                again = self._again
        finally:
            self._running = False

    async def _build(self) -> None:
        app = self._app
        if not app.built:
            return
        self.builds += 1
        state, pending = await app.bridge.panel_state(app._run_start_files)
        if not self._again:  # a newer build follows: this state would only repaint the panel twice
            app.post_message(PanelStateReady(state, pending))
