"""Keeping the stale marks fresh while the app runs.

Cited files change under a running app: the agent edits them, the person does, a ``git pull``
does. After each turn ends and every ``interval`` seconds while no turn runs, the project cards'
citations are checked again in a thread by the cards service — a stat per cited file while
nothing changed (the checker caches by stat key), never on the event loop and never before the
first frame (the timer starts once the runtime object exists). When the set of stale cards or
any reason changed, the side panel and an open card browser read again what they show.

A check that fails is logged, never shown: the marks are a hint, and the next check tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.tui.workers import start

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from app.services.bundle import Services

__all__ = ["RECHECK_S", "GroundingWatch"]

log = logging.getLogger(__name__)

RECHECK_S = 10.0  # seconds between checks while idle: a stat per cited file each time

Stale = frozenset[tuple[str, str]]  # (filename, reason) of each stale project card


class GroundingWatch:
    """``start()`` once the runtime is built; ``recheck()`` after a turn (and from the timer).
    ``app`` runs the timer and the checks; ``services``: the runtime's, None before it is built;
    ``busy()``: whether a turn runs now (the timer's check waits for the turn's end);
    ``changed()`` has the panel and the open memory screens read again."""

    def __init__(
        self,
        app: App[Any],
        *,
        services: Callable[[], Services | None],
        busy: Callable[[], bool],
        changed: Callable[[], None],
        interval: float = RECHECK_S,
    ) -> None:
        self._app = app
        self._services = services
        self._busy = busy
        self._changed = changed
        self.interval = interval  # tests shorten it before the app starts
        self.last: Stale | None = None  # what the last check found (None: no check yet)
        self.checks = 0  # finished checks (tests wait on it)
        self.changes = 0  # checks that refreshed the panel
        self._timer: Timer | None = None

    def start(self) -> None:
        if self._timer is None:
            self._timer = self._app.set_interval(self.interval, self._tick, name="grounding-recheck")

    def _tick(self) -> None:
        if not self._busy():
            self.recheck()

    def recheck(self) -> None:
        """Check now (in a thread); a check already running is replaced."""
        if self._services() is not None:
            start(self._app, self._check, group="grounding", exclusive=True)

    async def _check(self) -> None:
        services = self._services()
        if services is None:
            return
        try:
            stale = await services.cards.stale_cards()
        except Exception as e:  # a store that cannot be read now: the next check tries again
            log.warning("re-checking the cards' citations failed: %s: %s", type(e).__name__, e)
            return
        changed = stale != self.last
        self.last = stale
        self.checks += 1
        if changed:
            self.changes += 1
            self._changed()
