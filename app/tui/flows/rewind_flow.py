"""``/rewind`` (and Esc Esc on an empty prompt): the session's turns, what a rewind to before one
would do, the rewind, and the undo of the rewound turns' memory batches.

The steps run in one worker of the ``session`` group (queued prompts wait for it): the list
(widgets/rewind/turns.py), the plan window (widgets/rewind/plan.py), a conflict's own yes/no
window (a file changed since the agent last wrote it is never overwritten without a yes), then
the rewind through the rewind service (app/services/rewind.py) under the session-switch lock. A
rewind of the conversation rebuilds the Runner from the session and redraws the chat from it,
as ``/resume`` does, and puts the turn's prompt back into the input.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual import on
from textual.message import Message

from app.tui.flows.rewind_views import conflict_question, plan_state, turn_items
from app.tui.messages import ChatNote, PromptBack, SessionSwitched
from app.tui.workers import start
from memory.text.lines import one_line
from widgets.dialogs.confirm import ConfirmModal
from widgets.rewind.plan import RewindPlanScreen
from widgets.rewind.turns import RewindTurns

if TYPE_CHECKING:
    from textual.app import App

    from app.services.bundle import Services
    from app.services.rewind import RewindPreview, RewindService
    from widgets.rewind.state import RewindChoice

__all__ = ["ESC_ESC_S", "MemoryUndone", "RewindFlow"]

ESC_ESC_S = 0.8  # two Esc presses this close on an empty prompt open the view
NOTE_WIDTH = 400


@dataclass
class MemoryUndone(Message):
    """What ``m`` in the plan window came to (one line), for that window to show."""

    line: str


class _PlanScreen(RewindPlanScreen):
    """The plan window, its ``m`` handled by the flow."""

    def __init__(self, flow: RewindFlow, preview: RewindPreview) -> None:
        super().__init__(plan_state(preview))
        self._flow, self._preview = flow, preview

    @on(RewindPlanScreen.UndoMemory)
    def _undo_memory(self, message: RewindPlanScreen.UndoMemory) -> None:
        message.stop()
        self._flow.undo_memory(self, self._preview)

    @on(MemoryUndone)
    def _memory_undone(self, message: MemoryUndone) -> None:
        self.show_memory(message.line, can_undo=False)


class RewindFlow:
    """The rewind view. ``app`` runs its worker and windows; ``post`` takes what the chat says
    (and the session drawn again, the prompt put back); ``services``: the runtime's, None before
    it is built; ``turn_running``: a turn (or /compact) runs; ``switching``: the lock a session
    switch holds (a rewind rebuilds the Runner as one does); ``start_notes`` says the session's
    start notes again after that; ``memory_changed`` shows an undo of memory batches (the panel,
    the open memory screens)."""

    def __init__(
        self,
        app: App[Any],
        *,
        post: Callable[[Message], object],
        services: Callable[[], Services | None],
        turn_running: Callable[[], bool],
        switching: asyncio.Lock,
        start_notes: Callable[[], None],
        memory_changed: Callable[[], None],
    ) -> None:
        self._app = app
        self._post = post
        self._services = services
        self._turn_running = turn_running
        self._switching = switching
        self._start_notes = start_notes
        self._memory_changed = memory_changed
        self._esc_at = float("-inf")

    @property
    def service(self) -> RewindService:
        services = self._services()
        if services is None:
            raise RuntimeError("the runtime is not built yet")
        return services.rewind

    def _say(self, line: str, *, error: bool = False) -> None:
        self._post(ChatNote(one_line(line, NOTE_WIDTH), error=error))

    def _busy(self) -> str | None:
        """Why the view cannot open now, or None."""
        if self._services() is None:
            return "/rewind is not available yet: the session is not open (see the note above)"
        if self._turn_running():
            return "a turn is running: wait for it, or press Esc to cancel it first"
        if any(w.group == "session" and not w.is_finished for w in self._app.workers):
            return "a session switch (or the rewind view) is under way"
        return None

    def escape(self, *, idle: bool) -> None:
        """Esc (called before its other meanings act): twice quickly while the chat is ``idle``
        (no turn running, nothing queued, an empty prompt, no window up) opens the view."""
        if not idle:
            self._esc_at = float("-inf")
            return
        now = time.monotonic()
        if now - self._esc_at <= ESC_ESC_S:
            self._esc_at = float("-inf")
            self.open()
        else:
            self._esc_at = now

    def open(self) -> None:
        """``/rewind``: the turns, newest first."""
        problem = self._busy()
        if problem is not None:
            self._say(problem)
            return
        start(self._app, self._view, group="session")

    async def _view(self) -> None:
        try:
            rows = await self.service.turns()
        except Exception as e:  # RewindProblem: one line (a session log or checkpoints unreadable)
            self._say(f"rewind: {e}", error=True)
            return
        if not rows:
            self._say("no turn to rewind in this session yet")
            return
        items = turn_items(rows)
        while True:
            turn = await self._app.push_screen_wait(RewindTurns(items))
            if turn is None:
                return
            try:
                preview = await self.service.preview(turn)
            except Exception as e:  # RewindProblem: no such turn, a checkpoint lost, …
                self._say(f"rewind: {e}", error=True)
                return
            choice = await self._app.push_screen_wait(_PlanScreen(self, preview))
            if choice is not None:
                await self._rewind(preview, choice)
                return

    async def _overwrite(self, preview: RewindPreview, choice: RewindChoice) -> bool | None:
        """Whether the files changed since may be overwritten (False when there is none to ask
        about); None when the person said no: nothing is rewound then."""
        if not (choice.files and preview.conflicts):
            return False
        title, summary, body = conflict_question(preview)
        yes = await self._app.push_screen_wait(
            ConfirmModal(title, summary, body, kind="diff", yes="Overwrite them", no="Rewind nothing")
        )
        if yes:
            return True
        kept = ", ".join(f.path for f in preview.conflicts)
        self._say(f"nothing was rewound: {kept} kept as it is")
        return None

    async def _rewind(self, preview: RewindPreview, choice: RewindChoice) -> None:
        force = await self._overwrite(preview, choice)
        if force is None:
            return
        async with self._switching:
            try:
                done = await self.service.rewind(
                    preview, files=choice.files, conversation=choice.conversation, force=force
                )
                messages = await self.service.reopen() if done.conversation else None
            except Exception as e:  # RewindProblem: one line, and what was done is said in it
                self._say(f"rewind: {e}", error=True)
                return
        if messages is not None:
            self._post(SessionSwitched(None, messages))  # the chat drawn again, as /resume does
            self._start_notes()
            if preview.prompt.strip():
                self._post(PromptBack(preview.prompt))  # before what was typed there meanwhile
        for line in done.lines:
            self._say(line)

    # -- memory ---------------------------------------------------------------------------------

    def undo_memory(self, screen: RewindPlanScreen, preview: RewindPreview) -> None:
        """``m`` in the plan window: undo the rewound turns' memory batches, newest first."""
        start(self._app, partial(self._undo_memory, screen, preview), group="cards-edit")

    async def _undo_memory(self, screen: RewindPlanScreen, preview: RewindPreview) -> None:
        try:
            line = await self.service.undo_batches(preview.undoable)
        except Exception as e:  # RewindProblem: another batch came after, a card changed since, …
            line, error = one_line(e, NOTE_WIDTH), True
        else:
            error = False
            self._memory_changed()
        self._post(ChatNote(line, error=error))
        screen.post_message(MemoryUndone(line))
