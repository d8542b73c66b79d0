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
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual import on

from app.tui.flows.rewind_views import conflict_question, plan_state, turn_items
from app.tui.host import Host
from app.tui.messages import ChatNote, SessionSwitched
from memory.text.lines import one_line
from widgets.dialogs.confirm import ConfirmModal
from widgets.rewind.plan import RewindPlanScreen
from widgets.rewind.turns import RewindTurns

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.worker import Worker

    from app.services.rewind import RewindPreview, RewindService
    from widgets.rewind.state import RewindChoice

__all__ = ["ESC_ESC_S", "RewindFlow", "RewindHost"]

ESC_ESC_S = 0.8  # two Esc presses this close on an empty prompt open the view
NOTE_WIDTH = 400


class RewindHost(Host, Protocol):
    """What the rewind view needs of the App."""

    turn: Worker[Any] | None  # the running turn (or /compact)

    @property
    def waiting(self) -> bool:
        """Something waits before a new command: the trust question's answer, queued prompts."""

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    async def push_screen_wait(self, screen: Any) -> Any: ...


class _PlanScreen(RewindPlanScreen):
    """The plan window, its ``m`` handled by the flow."""

    def __init__(self, flow: RewindFlow, preview: RewindPreview) -> None:
        super().__init__(plan_state(preview))
        self._flow, self._preview = flow, preview

    @on(RewindPlanScreen.UndoMemory)
    def _undo_memory(self, message: RewindPlanScreen.UndoMemory) -> None:
        message.stop()
        self._flow.undo_memory(self, self._preview)


class RewindFlow:
    """The rewind view for the App ``host``; ``switching``: the lock a session switch holds (a
    rewind rebuilds the Runner as one does)."""

    def __init__(self, host: RewindHost, *, switching: asyncio.Lock) -> None:
        self.host = host
        self._switching = switching
        self._esc_at = float("-inf")

    @property
    def service(self) -> RewindService:
        return self.host.services.rewind

    def _busy(self) -> str | None:
        """Why the view cannot open now, or None."""
        host = self.host
        if not host.built:
            return "/rewind is not available yet: the session is not open (see the note above)"
        if host.turn is not None and host.turn.is_running:
            return "a turn is running: wait for it, or press Esc to cancel it first"
        if any(w.group == "session" and not w.is_finished for w in host.workers):
            return "a session switch (or the rewind view) is under way"
        return None

    def escape(self) -> None:
        """Esc (called before its other meanings act): with no turn running and nothing queued,
        twice quickly on an empty prompt, on the main screen, opens the view."""
        host = self.host
        running = host.turn is not None and host.turn.is_running
        if running or host.waiting or host.prompt.text.strip() or len(host.screen_stack) > 1:
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
            self.host.chat.add_note(problem)
            return
        self.host.run_worker(self._view, group="session", exit_on_error=False)

    async def _view(self) -> None:
        host = self.host
        try:
            rows = await self.service.turns()
        except Exception as e:  # RewindProblem: one line (a session log or checkpoints unreadable)
            host.post_message(ChatNote(one_line(f"rewind: {e}", NOTE_WIDTH), error=True))
            return
        if not rows:
            host.post_message(ChatNote("no turn to rewind in this session yet"))
            return
        items = turn_items(rows)
        while True:
            turn = await host.push_screen_wait(RewindTurns(items))
            if turn is None:
                return
            try:
                preview = await self.service.preview(turn)
            except Exception as e:  # RewindProblem: no such turn, a checkpoint lost, …
                host.post_message(ChatNote(one_line(f"rewind: {e}", NOTE_WIDTH), error=True))
                return
            choice = await host.push_screen_wait(_PlanScreen(self, preview))
            if choice is not None:
                await self._rewind(preview, choice)
                return

    async def _rewind(self, preview: RewindPreview, choice: RewindChoice) -> None:
        host = self.host
        force = False
        if choice.files and preview.conflicts:
            title, summary, body = conflict_question(preview)
            yes = await host.push_screen_wait(
                ConfirmModal(title, summary, body, kind="diff", yes="Overwrite them", no="Rewind nothing")
            )
            if not yes:
                kept = ", ".join(f.path for f in preview.conflicts)
                host.post_message(
                    ChatNote(one_line(f"nothing was rewound: {kept} kept as it is", NOTE_WIDTH))
                )
                return
            force = True
        messages: list[dict[str, Any]] | None = None
        async with self._switching:
            try:
                done = await self.service.rewind(
                    preview, files=choice.files, conversation=choice.conversation, force=force
                )
                if done.conversation:
                    messages = await self.service.reopen()
            except Exception as e:  # RewindProblem: one line, and what was done is said in it
                host.post_message(ChatNote(one_line(f"rewind: {e}", NOTE_WIDTH), error=True))
                return
        if messages is not None:
            host.post_message(SessionSwitched(None, messages))  # the chat drawn again, as /resume does
            host.bridge.repeat_start_notes()
            self._prompt_back(preview.prompt)
        for line in done.lines:
            host.post_message(ChatNote(one_line(line, NOTE_WIDTH)))

    def _prompt_back(self, text: str) -> None:
        """The rewound turn's prompt into the input (before what was typed there meanwhile)."""
        if not text.strip():
            return
        prompt = self.host.prompt
        typed = prompt.text
        prompt.text = text + (f"\n\n{typed}" if typed.strip() else "")
        prompt.move_cursor(prompt.document.end)

    # -- memory ---------------------------------------------------------------------------------

    def undo_memory(self, screen: RewindPlanScreen, preview: RewindPreview) -> None:
        """``m`` in the plan window: undo the rewound turns' memory batches, newest first."""
        self.host.run_worker(
            partial(self._undo_memory, screen, preview), group="cards-edit", exit_on_error=False
        )

    async def _undo_memory(self, screen: RewindPlanScreen, preview: RewindPreview) -> None:
        host = self.host
        try:
            line = await self.service.undo_batches(preview.undoable)
        except Exception as e:  # RewindProblem: another batch came after, a card changed since, …
            line, error = one_line(e, NOTE_WIDTH), True
        else:
            error = False
            host.refresh_panel()
            host.refresh_screens()
        host.post_message(ChatNote(line, error=error))
        screen.show_memory(line, can_undo=False)
