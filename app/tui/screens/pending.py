"""The pending screen with its actions: approve, reject, retry and dismiss a memory job.

``PendingJobsScreen`` is the widget's screen (widgets/pending/screen.py, which only draws and
posts) handling its own messages: each action runs as the App's worker (through the
``MemoryScreens`` controller) and its outcome is one line on this screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import on

from app.tui.messages import DismissAsk, MemoryFlash, PendingLoaded
from widgets.dialogs.confirm import ConfirmModal
from widgets.pending.screen import PendingScreen

if TYPE_CHECKING:
    from app.tui.screens.common import MemoryControl
    from memory.model import Conflict, Rejection

__all__ = ["PendingJobsScreen", "change_counts"]

WHERE = "pending"


def change_counts(applied: Any) -> str:
    """ "+created ~updated −deleted" of a batch's applied ops."""
    c = u = d = 0
    for a in applied:
        action = str(getattr(a.action, "value", a.action))
        c += action == "create"
        u += action == "update"
        d += action == "delete"
    return f"+{c} ~{u} −{d}"


class PendingJobsScreen(PendingScreen):
    def __init__(self, memory: MemoryControl) -> None:
        super().__init__()
        self._memory = memory

    def _outcome(self, text: object, *, error: bool = False) -> None:
        self._memory.flash(text, error=error, where=WHERE)

    # -- what the controller read ----------------------------------------------------------------

    @on(PendingLoaded)
    def _show_state(self, message: PendingLoaded) -> None:
        self.show(message.state)

    @on(MemoryFlash)
    def _show_flash(self, message: MemoryFlash) -> None:
        self.flash(message.text, error=message.error)

    # -- approve ---------------------------------------------------------------------------------

    @on(PendingScreen.Approve)
    def _approve_asked(self, message: PendingScreen.Approve) -> None:
        message.stop()
        self._memory.run(self._approve, message.job_id, message.ops, group="review")

    async def _approve(self, job_id: str, ops: tuple[int, ...] | None) -> None:
        try:
            result = await self._memory.services.jobs.approve(job_id, ops)
        except Exception as e:
            self._outcome(f"not approved: {e}", error=True)
            self._memory.after_change()
            return
        problems: list[Conflict | Rejection] = [*result.conflicts, *result.rejected]
        what = f"wrote {len(result.applied)} change(s) {change_counts(result.applied)}"
        if problems:
            first = problems[0]
            kind = "conflict" if result.conflicts else "rejected"
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            self._outcome(f"{what}; {kind}, not written: {first.reason}{more}", error=True)
        else:
            self._outcome(what)
        self._memory.after_change()

    # -- reject and retry ------------------------------------------------------------------------

    @on(PendingScreen.Reject)
    def _reject_asked(self, message: PendingScreen.Reject) -> None:
        message.stop()
        self._memory.run(self._reject, message.job_id, message.ops, group="review")

    async def _reject(self, job_id: str, ops: tuple[int, ...] | None) -> None:
        try:
            held = await self._memory.services.jobs.reject(job_id, ops)
        except Exception as e:
            self._outcome(f"not rejected: {e}", error=True)
            self._memory.after_change()
            return
        n = "all held ops" if ops is None else f"{len(ops)} op(s)"
        left = f"; {held} still held" if held is not None else ""
        self._outcome(f"rejected {n}: nothing written{left}")
        self._memory.after_change()

    @on(PendingScreen.Retry)
    def _retry_asked(self, message: PendingScreen.Retry) -> None:
        message.stop()
        self._memory.run(self._retry, message.job_id, group="review")

    async def _retry(self, job_id: str) -> None:
        try:
            await self._memory.services.jobs.retry(job_id)
        except Exception as e:
            self._outcome(f"not retried: {e}", error=True)
        else:
            self._outcome("queued again: the worker retries it now")
        self._memory.after_change()

    # -- dismiss: asked first, with the turn's text ----------------------------------------------

    @on(PendingScreen.Dismiss)
    def _dismiss_asked(self, message: PendingScreen.Dismiss) -> None:
        message.stop()
        self._memory.run(self._ask_dismiss, message.job_id, group="review")

    async def _ask_dismiss(self, job_id: str) -> None:
        try:
            text = await self._memory.services.jobs.turn_text(job_id)
        except Exception as e:
            self._outcome(f"cannot dismiss: {e}", error=True)
            return
        self.post_message(DismissAsk(job_id, text))

    @on(DismissAsk)
    def _confirm_dismiss(self, message: DismissAsk) -> None:
        job_id = message.job_id

        def answered(yes: bool | None) -> None:
            if yes:
                self._memory.run(self._dismiss, job_id, group="review")

        modal = ConfirmModal(
            "Dismiss this memory job?",
            "Nothing from this turn will be remembered. The dismissal is kept in the memory history. "
            "The turn it came from:",
            body=message.text or "(the turn has no text)",
            yes="Dismiss",
        )
        self.app.push_screen(modal, callback=answered)

    async def _dismiss(self, job_id: str) -> None:
        try:
            await self._memory.services.jobs.dismiss(job_id)
        except Exception as e:
            self._outcome(f"not dismissed: {e}", error=True)
        else:
            self._outcome(f"dismissed job {job_id}")
        self._memory.after_change()
