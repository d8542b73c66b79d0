"""The memory screens' controller, held by the App: which screens are open, keeping them live,
the outcome line of an action, the one undo, and the jobs applied while the app runs.

The screens (app/tui/screens/cards.py, pending.py) handle their own messages; their slow work runs
as the App's workers started here, so an action started on a screen finishes even when the
screen is closed meanwhile. Workers never touch widgets: what they read is posted to the screen it
is for (dropped when that screen has closed), or to the chat when no screen is open. Every screen
is live: a memory event or a change on disk refreshes what is open.

Imported with the App, before its first frame: the screens themselves are imported when first
opened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from app.tui.messages import CardsLoaded, ChatNote, MemoryFlash, PendingLoaded
from app.tui.screens.common import FLASH_WIDTH
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from app.services.bundle import Services
    from app.tui.screens.applied_record import AppliedRecord
    from app.tui.screens.cards import CardsScreen
    from app.tui.screens.external import ExternalEdits
    from app.tui.screens.pending import PendingJobsScreen
    from memory.model import Conflict, Rejection
    from widgets.cards.card_list import CardRow
    from widgets.cards.draft import CardDraft

__all__ = ["FLASH_WIDTH", "MAX_APPLIED_SHOWN", "MemoryScreens"]

MAX_APPLIED_SHOWN = 200  # jobs applied this session kept for the pending screen


class MemoryScreens:
    """The memory screens' shared state and actions. ``app`` runs the workers and opens the
    screens; ``post`` takes an outcome for the chat (when no screen is open); ``services``: the
    runtime's, None before it is built; ``refresh_panel`` redraws the side panel after a change."""

    def __init__(
        self,
        app: App[Any],
        *,
        post: Callable[[Message], object],
        services: Callable[[], Services | None],
        refresh_panel: Callable[[], object],
    ) -> None:
        self.app = app
        self.post = post
        self._services = services
        self._refresh_panel = refresh_panel
        self.browser: CardsScreen | None = None
        self.pending: PendingJobsScreen | None = None
        self.applied: dict[str, AppliedRecord] = {}  # job id -> the job applied this session
        self._external: ExternalEdits | None = None

    @property
    def services(self) -> Services:
        """The runtime's feature services (RuntimeError before the runtime is built)."""
        services = self._services()
        if services is None:
            raise RuntimeError("the runtime is not built yet")
        return services

    @property
    def external(self) -> ExternalEdits:
        """Cards out in ``$EDITOR`` (one at a time)."""
        if self._external is None:
            # First use, after the first frame: the editor round brings the card services (pydantic, YAML).
            from app.tui.screens.external import ExternalEdits

            self._external = ExternalEdits(self)
        return self._external

    def run(
        self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str, exclusive: bool = False
    ) -> Worker[Any]:
        """``work(*args)`` as the App's worker: a failure is one line in the chat, never a crash.
        Called when the worker starts (an exclusive one may be cancelled before that)."""
        return self.app.run_worker(
            partial(work, *args), group=group, exclusive=exclusive, exit_on_error=False
        )

    # -- opening ---------------------------------------------------------------------------------

    def open_pending(self) -> None:
        if self.pending is not None:
            return
        # The screens load when first opened, not with this module before the app's first frame.
        from app.tui.screens.pending import PendingJobsScreen

        screen = PendingJobsScreen(self)
        self.pending = screen
        self.app.push_screen(screen, callback=self._pending_closed)
        self.refresh_pending()

    def _pending_closed(self, _: object = None) -> None:
        self.pending = None

    def open_browser(self, select: tuple[str, str] | None = None) -> None:
        if self.browser is not None:
            return
        # The screens load when first opened, not with this module before the app's first frame.
        from app.tui.screens.cards import CardsScreen

        screen = CardsScreen(self, levels=self.services.cards.levels)
        self.browser = screen
        self.app.push_screen(screen, callback=self._browser_closed)
        self.refresh_cards(select)

    def _browser_closed(self, _: object = None) -> None:
        self.browser = None

    def open_editor(
        self,
        draft: CardDraft,
        *,
        filename: str | None = None,
        sha256: str | None = None,
        resolving: CardRow | None = None,
    ) -> None:
        """The card editor on ``draft``; ``resolving``: the conflicted card whose merge it is."""
        # The screens load when first opened, not with this module before the app's first frame.
        from app.tui.screens.cards import EditorScreen

        self.app.push_screen(
            EditorScreen(
                self,
                draft,
                filename=filename,
                sha256=sha256,
                levels=self.services.cards.levels,
                resolving=resolving,
            )
        )

    def remember(self, text: str) -> None:
        """/remember TEXT: the editor, prefilled; Ctrl+S saves (nothing is written before)."""
        # memory_views brings pydantic (memory.model): not before the app's first frame.
        from app.tui.screens.memory_views import draft_from

        self.open_editor(draft_from(self.services.cards.remember_draft(text)))

    # -- keeping them live -----------------------------------------------------------------------

    def refresh(self) -> None:
        """Whatever screen is open reads again what it shows."""
        if self.browser is not None:
            self.refresh_cards()
        if self.pending is not None:
            self.refresh_pending()

    def record(self, event: object) -> None:
        """Keep the jobs applied while the app runs (the pending screen lists them for the session)."""
        # Both bring pydantic (memory.model): not with this module before the app's first frame.
        from app.tui.screens.applied_record import applied_record
        from memory.events import JobApplied, JobDismissed

        if isinstance(event, JobApplied):
            excerpt = self.services.jobs.excerpt(event.job_id)
            self.applied[event.job_id] = applied_record(event, excerpt)
            while len(self.applied) > MAX_APPLIED_SHOWN:
                self.applied.pop(next(iter(self.applied)))
        elif isinstance(event, JobDismissed):
            self.applied.pop(event.job_id, None)

    def refresh_cards(self, select: tuple[str, str] | None = None) -> None:
        self.run(self._load_cards, select, group="cards-view", exclusive=True)

    async def _load_cards(self, select: tuple[str, str] | None) -> None:
        # memory_views brings pydantic (memory.model): not before the app's first frame.
        from app.tui.screens.memory_views import card_rows

        try:
            listing = await self.services.cards.list_cards()
            # Each row folds its text for the filter: thousands of them are built off the loop.
            rows, note = await asyncio.to_thread(card_rows, listing)
        except Exception as e:
            self.flash(f"could not read the cards: {e}", error=True)
            return
        if self.browser is not None:
            self.browser.post_message(CardsLoaded(rows, note, select))

    def refresh_pending(self) -> None:
        self.run(self._load_pending, group="pending-view", exclusive=True)

    async def _load_pending(self) -> None:
        # memory_views brings pydantic (memory.model): not before the app's first frame.
        from app.tui.screens.memory_views import pending_state

        try:
            state = pending_state(await self.services.jobs.pending(), list(self.applied.values()))
        except Exception as e:
            self.flash(f"could not read the pending jobs: {e}", error=True, where="pending")
            return
        if self.pending is not None:
            self.pending.post_message(PendingLoaded(state))

    def flash(self, text: object, *, error: bool = False, where: str = "cards") -> None:
        """An action's outcome (one line) for the screen it came from, or the chat when that
        screen is closed. Posted: workers call it."""
        line = one_line(text, FLASH_WIDTH)
        screen = self.pending if where == "pending" else self.browser
        if screen is not None:
            screen.post_message(MemoryFlash(line, error, where))
        else:
            self.post(ChatNote(line, error=error))

    def say(self, text: str) -> None:
        """A finished edit's line: on the card browser if it is open, else in the chat."""
        self.flash(text)

    def after_change(self, select: tuple[str, str] | None = None) -> None:
        """A change was written: the panel, and whatever screen is open, show it at once."""
        self._refresh_panel()
        if self.browser is not None:
            self.refresh_cards(select)
        if self.pending is not None:
            self.refresh_pending()

    # -- undo (the card browser's u and /undo) ---------------------------------------------------

    def undo(self) -> None:
        self.run(self._undo, group="cards-edit")

    async def _undo(self) -> None:
        try:
            result = await self.services.cards.undo()
        except Exception as e:  # nothing to undo, or a note changed since
            self.flash(e, error=True)
            return
        problems: list[Conflict | Rejection] = [*result.conflicts, *result.rejected]
        if problems:
            self.flash(f"not undone: {problems[0].reason}", error=True)
        else:
            self.flash(f"undid the last memory batch ({len(result.applied)} change(s))")
        self.after_change()
