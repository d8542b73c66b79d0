"""Memory at scale in the App: ``/consolidate``, the automatic consolidation after a
job applied while nothing else runs, and the search caches following watched changes.

The App holds one :class:`ScaleFlow`; its slow parts are the App's workers calling the memory
services, and what they learn comes back as chat notes or notifications (posted or called on the loop).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from app.tui.messages import ChatNote
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from app.agent.config.settings import Settings
    from app.services.bundle import Services
    from app.services.jobs import Consolidation

__all__ = ["NEEDS_MODEL", "ScaleFlow", "outcome_line"]

NEEDS_MODEL = "consolidating needs a configured model (see the note above)"
LEVELS = ("project", "user")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def outcome_line(outcome: Consolidation, review: bool) -> str:
    """One consolidation as the chat says it: the job queued, or why there is none."""
    level = outcome.level
    job_id = outcome.job_id
    if not job_id:
        reason = one_line(outcome.reason or "nothing to consolidate", 200)
        return f"{level} store: {reason}" if level and level not in reason else reason
    then = (
        "its changes wait for your review (/pending)"
        if review
        else "its changes apply when the memory model answers"
    )
    counts = f"{_plural(outcome.clusters, 'cluster')}, {_plural(outcome.cards, 'card')}"
    where = f" ({level} store)" if level else ""
    return f"consolidation job {one_line(job_id, 40)}{where} queued: {counts}; {then}"


class ScaleFlow:
    """``app`` runs the workers and says the search caches' warnings; ``post`` takes what the
    chat says; ``services``: the runtime's, None before it is built; ``credentials``: a model is
    configured; ``settings``: the loaded settings (None before); ``busy``: a turn runs or prompts
    wait (a consolidation must not compete with the person's work)."""

    def __init__(
        self,
        app: App[Any],
        *,
        post: Callable[[Message], object],
        services: Callable[[], Services | None],
        credentials: Callable[[], bool],
        settings: Callable[[], Settings | None],
        busy: Callable[[], bool],
    ) -> None:
        self._app = app
        self._post = post
        self._services = services
        self._credentials = credentials
        self._settings = settings
        self._busy = busy
        self.auto_due = False  # a job applied while a turn ran or waited: check once it is idle
        self.auto_checks = 0  # how often the automatic consolidation was asked (tests wait on it)

    @property
    def services(self) -> Services:
        services = self._services()
        if services is None:
            raise RuntimeError("the runtime is not built yet")
        return services

    def _run(self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str) -> Worker[Any]:
        return self._app.run_worker(partial(work, *args), group=group, exclusive=True, exit_on_error=False)

    def _review(self) -> bool:
        return bool(getattr(self._settings(), "consolidate_review", True))

    # -- /consolidate [project|user] --------------------------------------------------------------

    def command(self, arg: str) -> str | None:
        """Start ``/consolidate``; the one-line reason it cannot run, or None once started."""
        wanted = arg.strip().lower() or None
        if wanted is not None and wanted not in LEVELS:
            return "usage: /consolidate [project|user]"
        if not self._credentials():
            return NEEDS_MODEL
        if wanted is not None and wanted not in self.services.cards.levels:
            return "this workspace has no project level: /consolidate user cleans the user store"
        self._run(self._consolidate, wanted, group="consolidate")
        return None

    async def _consolidate(self, level: str | None) -> None:
        try:
            outcomes = await self.services.jobs.consolidate(level)
        except Exception as e:
            self._post(ChatNote(one_line(f"not consolidated: {e}", 300), error=True))
            return
        review = self._review()
        for outcome in outcomes or []:
            self._post(ChatNote(outcome_line(outcome, review)))
        if not outcomes:
            self._post(ChatNote("nothing to consolidate"))

    # -- the automatic consolidation --------------------------------------------------------------

    def memory_event(self, event: object) -> None:
        from memory.events import JobApplied  # loaded with the runtime, before any event

        if isinstance(event, JobApplied):
            self.job_applied()

    def started(self) -> None:
        """The runtime is ready: a first look at each store (the growth while the app was closed
        counts, and a store never looked at is counted from now), once no turn runs."""
        self.auto_due = True
        self.when_idle()

    def job_applied(self) -> None:
        """A job applied: the Manager may consolidate a grown store, but only while no turn runs
        and none waits (a consolidation must not compete with the person's work)."""
        self.auto_due = True
        self.when_idle()

    def when_idle(self) -> None:
        """After a turn ends, or a job applied: ask the Manager if something waits for it."""
        if not self.auto_due or self._services() is None or not self._credentials():
            return
        if self._busy():
            return
        self.auto_due = False
        self.auto_checks += 1
        self._run(self._maybe, group="consolidate-auto")

    async def _maybe(self) -> None:
        try:
            outcomes = await self.services.jobs.maybe_consolidate()
        except Exception as e:
            self._post(ChatNote(one_line(f"automatic consolidation failed: {e}", 300), error=True))
            return
        review = self._review()
        for outcome in outcomes or []:
            if outcome.job_id:  # a store that needs nothing stays quiet
                self._post(ChatNote(outcome_line(outcome, review)))

    # -- the search caches follow watched changes ---------------------------------------------------

    def stores_changed(self) -> None:
        if self._services() is not None:
            self._run(self._search_changed, group="search-changed")

    async def _search_changed(self) -> None:
        for line in await self.services.cards.search_changed():
            self._app.notify(one_line(line, 200), severity="warning", markup=False)
